"""Failing change steps share one evidence object per distinct evidence, while a run holds
them (`ChangeRun._kept`) and when an earlier run's tally is read back (`incremental.Shared`):
every result must still carry exactly the evidence it had, down to the type and sign of each
value (1, 1.0 and true are `==` in Python but print differently in every report)."""

from __future__ import annotations

import dataclasses
import enum
import math
from collections import Counter
from datetime import UTC, datetime
from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from auditor.evaluate import incremental
from auditor.evaluate.change import ChangeRun, Tally
from auditor.evaluate.conditions import Env
from auditor.evaluate.incremental import dump_tally, load_tally
from auditor.evaluate.model import RuleResult
from auditor.models import Attribution, Evidence, Subject
from auditor.policy.model import Rule

_RULE = Rule(id="CHG-1", title="t", severity="high", target="change", condition=None)
_WHEN = datetime(2026, 9, 3, 10, 15, tzinfo=UTC)

# Values that are `==` (or print alike) but are not the same value in a report.
_LOOKALIKE = st.sampled_from([0, 0.0, -0.0, False, 1, 1.0, True, -1, -1.0, "1", "True", None, ""])
_JSON = st.recursive(
    _LOOKALIKE
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=3),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from("ab1"), inner, max_size=3)
    ),
    max_leaves=6,
)
_EVIDENCE = st.lists(
    st.builds(
        Evidence, st.sampled_from(["$.a", "$.b"]), _JSON, _JSON, st.sampled_from(["==", "in"])
    ),
    min_size=1,
    max_size=2,
).map(tuple)


def _same(a: Any, b: Any) -> bool:
    """Equal values of equal types, a float's sign and NaN included (not Python's `==`)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return math.copysign(1.0, a) == math.copysign(1.0, b) and (a == b or (a != a and b != b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, Evidence):
        return _same(
            [a.path, a.actual, a.expected, a.operator, a.present, a.note, a.shows_expected],
            [b.path, b.actual, b.expected, b.operator, b.present, b.note, b.shows_expected],
        )
    return bool(a == b)


def _results(evidence: list[tuple[Evidence, ...]]) -> list[RuleResult]:
    out = []
    for n, ev in enumerate(evidence, start=1):
        subject = Subject("change", f"change:{n}..{n + 1}", f"revision {n} -> {n + 1}", n + 1)
        who = Attribution(n + 1, _WHEN, f"user{n % 2}@acme.example", "")
        out.append(RuleResult(_RULE, subject, "fail", "m", ev, since=who))
    return out


@settings(max_examples=300, deadline=None)
@given(st.lists(_EVIDENCE, min_size=2, max_size=8))
def test_a_failing_step_keeps_its_own_evidence_when_equal_looking_evidence_is_shared(
    evidence: list[tuple[Evidence, ...]],
) -> None:
    run = ChangeRun([], Env(_WHEN))
    kept = [run._kept(r, {}) for r in _results(evidence)]
    for result, ev in zip(kept, evidence, strict=True):
        assert _same(result.evidence, ev), (result.evidence, ev)
    # and equal evidence is one object (what the sharing is for)
    by_text = {repr(k.evidence): k.evidence for k in kept}
    assert all(k.evidence is by_text[repr(k.evidence)] for k in kept)


def test_steps_whose_evidence_differs_only_by_1_or_true_or_the_sign_of_zero_keep_theirs() -> None:
    values: list[Any] = [1, 1.0, True, 0.0, -0.0, 0, False, [1], [True], {"a": 1}, {"a": 1.0}]
    evidence = [(Evidence("$.a", v, 1),) for v in values] * 2
    run = ChangeRun([], Env(_WHEN))
    kept = [run._kept(r, {}).evidence[0].actual for r in _results(evidence)]
    assert [orjson.dumps(v) for v in kept] == [orjson.dumps(v) for v in values] * 2
    assert [type(v) for v in kept] == [type(v) for v in values] * 2


@settings(max_examples=300, deadline=None)
@given(st.lists(_EVIDENCE, min_size=2, max_size=8))
def test_a_tally_read_back_gives_each_result_its_own_evidence_exactly(
    evidence: list[tuple[Evidence, ...]],
) -> None:
    results = _results(evidence)
    tally = Tally(len(results), Counter({"fail": len(results)}), 1, len(results) + 1, results)
    data = dump_tally(tally, _RULE)
    assert data is not None  # JSON values only: every one reads back
    back = load_tally(data, _RULE).open
    assert len(back) == len(results)
    for got, want in zip(back, results, strict=True):
        assert _same(got.evidence, want.evidence), (got.evidence, want.evidence)
        assert got == want


def test_a_tally_read_back_keeps_evidence_that_differs_only_by_1_or_true_or_the_sign_of_zero() -> (
    None
):
    values: list[Any] = [1, 1.0, True, 0.0, -0.0, 0, False, [1], [True], {"a": 1}, {"a": 1.0}]
    results = _results([(Evidence("$.a", v, 1),) for v in values] * 2)
    tally = Tally(len(results), Counter({"fail": len(results)}), 1, len(results) + 1, results)
    data = dump_tally(tally, _RULE)
    assert data is not None
    back = [r.evidence[0].actual for r in load_tally(data, _RULE).open]
    assert [orjson.dumps(v) for v in back] == [orjson.dumps(v) for v in values] * 2
    assert [type(v) for v in back] == [type(v) for v in values] * 2


class _Word(enum.StrEnum):
    ON = "on"


@dataclasses.dataclass(frozen=True)
class _Point:
    x: int = 1


class _Text(str):
    pass


_ODD = st.sampled_from(
    [
        (1, 2),
        frozenset({1}),
        datetime(2026, 1, 1, tzinfo=UTC),
        _Word.ON,
        _Point(),
        _Text("on"),
        b"on",
        2**64,
        -(2**63) - 1,
        float("nan"),
        float("inf"),
        {1: "a"},
        {"a": (1,)},
        [_Point()],
        None,
        "on",
        1,
    ]
)


def _old_dump_tally(tally: Tally, rule: Rule) -> bytes | None:
    """`dump_tally` as it was (one dump of the whole, then the whole read back)."""
    try:
        data = orjson.dumps(
            {
                "steps": tally.steps,
                "counts": dict(sorted(tally.counts.items())),
                "first": tally.first,
                "last": tally.last,
                "open": [incremental._result(r) for r in tally.open],
            }
        )
    except TypeError:
        return None
    return data if load_tally(data, rule).open == tally.open else None


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(_ODD | _JSON, min_size=1, max_size=2), min_size=1, max_size=5))
def test_a_tally_with_values_of_any_type_is_dumped_as_it_was_or_not_at_all(
    values: list[list[Any]],
) -> None:
    """A result at a time or the whole at once: the same bytes (but for the line break before
    each result), or None for the same tallies (a value JSON does not have, or one that
    reads back as another)."""
    evidence = [tuple(Evidence("$.a", v, 1) for v in vs) for vs in values]
    results = _results(evidence)
    count = len(results)  # all found by this run (`new_open`): each is checked
    tally = Tally(count, Counter({"fail": count}), 1, count + 1, results, new_open=count)
    dumped, whole = dump_tally(tally, _RULE), _old_dump_tally(tally, _RULE)
    assert (dumped is None) is (whole is None)
    if dumped is not None:
        assert dumped.replace(b"\n", b"") == whole and dumped.count(b"\n") == count
