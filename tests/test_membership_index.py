"""`in`, `not_in` and the membership operators look in a long list by an index kept for one
evaluation of one document: a rule checking each entry of a list against another list read with
`{ref: …}` does work in proportion to the two lists, not their product, and gives exactly the
answers comparing item by item gives; what one evaluation worked out is gone at the next, so a
list changed in place (at the same length) is read afresh."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from auditor.evaluate import rule as rule_module
from auditor.evaluate import status as status_module
from auditor.evaluate.conditions import Env
from auditor.evaluate.rule import run_rule
from auditor.evaluate.status import rule_status
from auditor.operators import BUILTIN_ENUMS, core, fingerprinting, hidden
from auditor.operators.core import canonical, enter_scope, leave_scope, member, same
from auditor.policy.compile import Compiler
from auditor.policy.model import Rule

ENV = Env(datetime(2026, 11, 1, tzinfo=UTC))


def _rule(raw: Any) -> Rule:
    compiler = Compiler("settings", BUILTIN_ENUMS)
    cond = compiler.compile(raw, ("assert",))
    assert not compiler.problems and cond is not None, compiler.problems
    return Rule("R-1", "t", "high", "settings", cond)


# Few distinct scalars, so that equal pairs (1 and 1.0, 0 and -0.0, 2**53 and its float) are
# common, beside pairs `same` keeps apart (true and 1, "1" and 1, NaN and itself).
_SCALARS = st.one_of(
    st.integers(-2, 2),
    st.sampled_from([0.0, -0.0, 1.0, 2.0, 0.5, math.nan, math.inf, -math.inf]),
    st.sampled_from([2**53, 2**53 + 1, float(2**53), 10**30, -(10**30)]),
    st.booleans(),
    st.none(),
    st.sampled_from(["", "a", "A", "1", "true", "null", "[secret fp:1a2b3c4d len:4]"]),
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.sampled_from(["a", "b", "A"]), inner, max_size=3),
    ),
    max_leaves=8,
)


def _linear(value: Any, items: list[Any]) -> bool:
    return any(same(value, item) for item in items)


@settings(max_examples=2000, deadline=None)
@given(_VALUES, _VALUES)
def test_canonical_keys_are_equal_exactly_when_policy_equality_holds(a: Any, b: Any) -> None:
    keys = []
    for value in (a, b):
        try:
            keys.append(canonical(value))
        except core._Unkeyed:
            return  # a value holding a NaN has no key (it equals nothing)
    assert (keys[0] == keys[1]) is same(a, b)
    if keys[0] == keys[1]:
        assert hash(keys[0]) == hash(keys[1])


@settings(max_examples=400, deadline=None)
@given(_VALUES, st.lists(_VALUES, min_size=core.INDEX_FROM, max_size=40), st.lists(_VALUES))
def test_member_by_the_index_is_member_item_by_item(
    value: Any, items: list[Any], probes: list[Any]
) -> None:
    token = enter_scope()
    try:
        for probe in [value, *probes, *items[:5]]:
            # the first look is item by item; the later ones by the index
            assert member(probe, items) is _linear(probe, items)
            assert member(probe, items) is _linear(probe, items)
        assert core.scoped("member")[id(items)][1] is not None  # type: ignore[index]
    finally:
        leave_scope(token)
    assert core.scoped("member") is None  # nothing kept past the evaluation


_RULES = [
    {"each": "a", "assert": {"path": "@", "in": {"ref": "b"}}},
    {"none": "a", "assert": {"path": "@", "not_in": {"ref": "b"}}},
    {"some": "a", "assert": {"path": "@", "not_in": {"ref": "b"}}},
    {"path": "a", "contains_all": {"ref": "b"}},
    {"path": "a", "contains_any": {"ref": "b"}},
    {"path": "a", "excludes": {"ref": "b"}},
    {"path": "a", "subset_of": {"ref": "b"}},
    {"each": "b", "assert": {"path": "@", "in": {"ref": "a"}}},
]


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(_RULES),
    st.lists(_VALUES, max_size=30),
    st.lists(_VALUES, min_size=core.INDEX_FROM, max_size=30),
)
def test_rules_give_what_comparing_item_by_item_gives(
    raw: dict[str, Any], a: list[Any], b: list[Any]
) -> None:
    rule, doc = _rule(raw), {"a": a, "b": b}
    # `_run_rule` / `_rule_status` outside an evaluation's scope: no index, as before
    slow = rule_module._run_rule(rule, doc, ENV)
    assert repr(run_rule(rule, doc, ENV)) == repr(slow)  # repr: NaN is not equal to itself
    assert rule_status(rule, doc, ENV) == status_module._rule_status(rule, doc, ENV, None)
    assert rule_status(rule, doc, ENV) == slow.status


class _TooMuchWork(Exception):
    pass


def _counted(limit: int) -> tuple[list[int], Any]:
    calls = [0]

    def counting(a: Any, b: Any) -> bool:
        calls[0] += 1
        if calls[0] > limit:  # fail at once rather than run for minutes
            raise _TooMuchWork(f"more than {limit} comparisons")
        return same(a, b)

    return calls, counting


@pytest.mark.parametrize(("op", "status"), [("in", "pass"), ("not_in", "fail")])
def test_each_of_40000_texts_against_a_ref_list_of_40000_is_linear_work(
    monkeypatch: pytest.MonkeyPatch, op: str, status: str
) -> None:
    """A proposed settings file with two long lists made `auditor review` hang for minutes:
    each of 40,000 entries was compared with each of the other list's 40,000."""
    n = 40_000
    texts = [f"https://host-{i}.example/" for i in range(n)]
    doc = {"a": texts, "b": texts[::-1]}
    rule = _rule({"each": "a", "assert": {"path": "@", op: {"ref": "b"}}})
    calls, counting = _counted(4 * n)
    monkeypatch.setattr(core, "same", counting)
    verdict = run_rule(rule, doc, ENV)
    assert rule_status(rule, doc, ENV) == status
    assert verdict.status == status
    if op == "in":
        assert verdict.message.startswith('a[0] is "https://host-0.example/" (+39999 more entries)')
    else:
        assert verdict.message.startswith(
            'a[0] is "https://host-0.example/"; expected not to be one of b (['
        )
        assert verdict.count == n
    assert calls[0] <= 4 * n


def test_objects_of_another_shape_than_every_literal_are_checked_once_per_shape(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Entries the other list does not hold are checked for a type that can never be equal:
    by the shape of the entry, once, not against each of the list's entries every time."""
    n = 20_000
    doc = {"a": [{"x": i} for i in range(n)], "b": [{"x": str(i)} for i in range(n)]}
    rule = _rule({"each": "a", "assert": {"path": "@", "in": {"ref": "b"}}})
    from auditor.operators import compare

    nested, calls = compare._nested, [0]

    def counting(actual: Any, literal: Any, where: str) -> Any:
        calls[0] += 1
        if calls[0] > 4 * n:
            raise _TooMuchWork("more than 4n nested checks")
        return nested(actual, literal, where)

    monkeypatch.setattr(compare, "_nested", counting)
    verdict = run_rule(rule, doc, ENV)
    assert verdict.status == "error"
    assert "`x` is a number here, a string in the literal" in verdict.message
    assert calls[0] <= 4 * n


def test_a_list_changed_in_place_is_read_afresh_by_the_next_evaluation() -> None:
    """Nothing one evaluation worked out about a list outlives it: the same document object,
    its list changed in place at the same length, is judged by what it holds now (the types
    the list holds were once kept by the list's `id()`, changes in place or not)."""
    allowed: list[Any] = [f"text-{i}" for i in range(40)]
    doc: dict[str, Any] = {"a": ["text-3", "zzz"], "b": allowed}
    rule = _rule({"each": "a", "assert": {"path": "@", "in": {"ref": "b"}}})
    first = run_rule(rule, doc, ENV)
    assert first.status == "fail"
    assert first.message.startswith('a[1] is "zzz"; expected to be one of b (')
    allowed[0] = 7  # same list, same length: it holds a number now
    allowed[3] = "other"
    doc["a"][1] = 8
    second = run_rule(rule, doc, ENV)
    # text-3 is no longer in it and 8 is not either; 8 is no type error: the list holds numbers
    assert second.status == "fail", second.message
    assert second.message.startswith('a[0] is "text-3"; expected to be one of b ([7,')
    assert second.count == 2
    assert rule_status(rule, doc, ENV) == "fail"
    doc["a"][1] = 7
    assert run_rule(rule, doc, ENV).count == 1
    assert rule_status(rule, doc, ENV) == "fail"


def test_a_ref_list_changed_in_place_is_type_checked_again() -> None:
    """The `{ref: …}` type check is kept for one evaluation only: a list of texts that came to
    hold a number in place (same length) is refused by `starts_with_any` the next time."""
    prefixes: list[Any] = [f"https://h{i}/" for i in range(20)]
    doc = {"a": ["https://h1/x"], "b": prefixes}
    rule = _rule({"each": "a", "assert": {"path": "@", "starts_with_any": {"ref": "b"}}})
    assert run_rule(rule, doc, ENV).status == "pass"
    assert rule_status(rule, doc, ENV) == "pass"
    prefixes[5] = 5
    again = run_rule(rule, doc, ENV)
    assert again.status == "error"
    assert "needs a list of strings" in again.message
    assert rule_status(rule, doc, ENV) == "error"


def _marker(text: str) -> str:
    return f"[secret fp:{sum(map(ord, text)) % 7:08x} len:{len(text)}]"  # collisions on purpose


_HIDDEN = st.one_of(
    st.sampled_from(["ab", "ba", "abc", "1", "10", "", "x y"]).map(_marker),
    st.sampled_from(["[secret fp:00000001 len:2]", "k=[secret fp:00000002 len:2]"]),
)
_LITERALS = st.one_of(
    st.sampled_from(["ab", "ba", "abc", "1", "10", "x y", "zz", "[secret"]),
    st.sampled_from([1, 10, 1.0, 2.5, True, None]),
    st.lists(st.just("ab"), max_size=1),
)


_HIDDEN_RULES = [
    {"each": "a", "assert": {"path": "@", "in": {"ref": "b"}}},
    {"each": "a", "assert": {"path": "@", "not_in": {"ref": "b"}}},
    {"path": "a", "subset_of": {"ref": "b"}},
    {"path": "a", "contains_all": {"ref": "b"}},
    {"path": "a", "contains_any": {"ref": "b"}},
    {"path": "a", "excludes": {"ref": "b"}},
    {"path": "a", "contains": {"ref": "b"}},
]


@settings(max_examples=500, deadline=None)
@given(
    st.lists(st.one_of(_HIDDEN, _HIDDEN, _LITERALS), min_size=1, max_size=10),
    st.lists(_LITERALS, min_size=core.INDEX_FROM, max_size=30),
    st.sampled_from(_HIDDEN_RULES),
    st.booleans(),
)
def test_redacted_values_against_a_long_list_give_what_each_literal_gives(
    a: list[Any], b: list[Any], raw: dict[str, Any], keyed: bool
) -> None:
    """A redacted value is the literal whose marker it is: found by the literals' markers,
    made once per list, as comparing it with each literal finds it (with and without the
    run's key; the test's markers collide, so several literals may have one marker)."""
    rule, doc = _rule(raw), {"a": a, "b": b}
    with fingerprinting(_marker if keyed else None):
        slow = rule_module._run_rule(rule, doc, ENV)
        assert repr(run_rule(rule, doc, ENV)) == repr(slow)
        assert rule_status(rule, doc, ENV) == status_module._rule_status(rule, doc, ENV, None)


def test_4000_redacted_values_against_a_ref_list_of_4000_are_linear_work(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each redacted value was compared with each literal (its marker made, a pattern built
    from the value and matched): 4,000 keys against a list of 4,000 revoked ones took 110 s."""
    n = 4000
    made, compared = [0], [0]

    def counting(text: str) -> str:
        made[0] += 1
        return f"[secret fp:{hash(text) & 0xFFFFFFFF:08x} len:{len(text)}]"

    equal = hidden._equal

    def counting_equal(value: Any, literal: Any, marker_of: Any) -> Any:
        compared[0] += 1
        if compared[0] > 4 * n:
            raise _TooMuchWork("more than 4n comparisons with a literal")
        return equal(value, literal, marker_of)

    monkeypatch.setattr(hidden, "_equal", counting_equal)
    doc = {"a": [counting(f"key-{i}") for i in range(n)], "b": [f"old-{i}" for i in range(n)]}
    doc["a"][7] = counting("old-7")  # a revoked key, redacted
    rule = _rule({"each": "a", "assert": {"path": "@", "not_in": {"ref": "b"}}})
    made[0] = 0
    with fingerprinting(counting):
        verdict = run_rule(rule, doc, ENV)
        assert rule_status(rule, doc, ENV) == "fail"
    assert verdict.status == "fail"
    assert verdict.message.startswith("a[7] is ")
    assert verdict.count == 1
    assert made[0] <= 4 * n
    assert compared[0] <= 4 * n


def test_many_rules_on_one_document_type_check_a_ref_list_once(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`auditor review` of a file with a 5,000-entry list and 30 rules reading it with
    `{ref: …}`: the type check of the list is done once for the document, not once per rule
    (each rule's own scope made 30 checks of the 5,000 entries: review R31)."""
    import json

    from auditor.evaluate import refs
    from tests.conftest import run_cli

    prefixes = [f"https://h{i}.example/" for i in range(5000)]
    proposed = {"prefixes": prefixes, "urls": ["https://h7.example/x", "https://h9.example/"]}
    (tmp_path / "proposed.json").write_text(json.dumps(proposed))
    (tmp_path / "live.json").write_text(json.dumps({"urls": []}))
    rules = [
        {
            "id": f"REF-{i:02d}",
            "title": f"rule {i}",
            "severity": "low",
            "target": "settings",
            "assert": {
                "each": "urls",
                "assert": {"path": "@", "starts_with_any": {"ref": "prefixes"}},
            },
        }
        for i in range(30)
    ]
    (tmp_path / "pol").mkdir()
    (tmp_path / "pol" / "refs.yaml").write_text(json.dumps({"rules": rules}))
    calls = [0]
    real = refs.conforms

    def counting(schema: Any, value: Any) -> bool:
        calls[0] += 1
        return real(schema, value)

    monkeypatch.setattr(refs, "conforms", counting)
    monkeypatch.chdir(tmp_path)
    argv = ["review", "proposed.json", "--against", "live.json", "--policy", "pol"]
    code, _, err = run_cli([*argv, "--author", "a@b.c", "--out", "out", "-o", "json"], {}, tmp_path)
    assert code in (0, 1), err
    findings = json.loads((tmp_path / "out" / "findings.json").read_text())
    assert findings["summary"]["by_status"]["pass"] == 30
    assert 0 < calls[0] <= 4 * 5000
