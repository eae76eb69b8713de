"""The evaluation's fast paths give what the plain, slow computation gives: readiness views in
integers, the settings walk's C fetch and byte comparison, short-string reuse keys."""

from __future__ import annotations

import math
from datetime import date
from fractions import Fraction
from itertools import pairwise
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from auditor.diff.table import strict_equal
from auditor.evaluate.history import _Node, affected, trie_of
from auditor.evaluate.projection import NON_FINITE_POSSIBLE, element_key, projection, strict_json
from auditor.evaluate.readiness import (
    Criterion,
    ReadinessModel,
    _criteria,
    _score_and_level,
    compute_level,
    compute_score,
)
from auditor.operators import MISSING

# -- readiness ------------------------------------------------------------------------------

_NUMBERS = st.one_of(
    st.integers(-2, 6),
    st.integers(-(2**80), 2**80),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, -0.0, 1.0, 2.0, 0.5, True, False, None, "1"]),
)
_ENTRIES = st.one_of(
    # mostly whole criteria, passed or not: scores right at a level's unlock threshold
    st.fixed_dictionaries({"numerator": st.integers(0, 1), "denominator": st.just(1)}),
    st.fixed_dictionaries({"numerator": st.integers(0, 1), "denominator": st.just(1)}),
    st.none(),
    st.integers(),
    st.fixed_dictionaries({"numerator": _NUMBERS, "denominator": _NUMBERS}),
    st.dictionaries(st.sampled_from(["numerator", "denominator", "x"]), _NUMBERS),
)
_MODELS = st.builds(
    lambda levels, threshold, count, mode: ReadinessModel(
        {level: f"L{level}" for level in levels},
        threshold,
        {
            f"c{i}": Criterion(f"c{i}", levels[i % len(levels)], "repository", "P")
            for i in range(count)
        },
        mode,
    ),
    st.lists(st.integers(0, 4), min_size=1, max_size=4, unique=True),
    st.sampled_from([0.0, 0.1, 1 / 3, 0.5, 2 / 3, 0.7, 0.75, 0.8, 1.0]),
    st.integers(0, 8),
    st.sampled_from(["all_or_nothing", "fraction"]),
)


def _slow_view(entry: Any, model: ReadinessModel, cid: str) -> dict[str, Any]:
    """A criterion as the model's rules word it, in exact fractions throughout."""
    known = model.criteria.get(cid)
    out: dict[str, Any] = {
        "passed": None, "numerator": None, "denominator": None, "skipped": False,
        "credit": None, "level": known.level if known else None,
        "pillar": known.pillar if known else None,
    }  # fmt: skip
    # A criterion that is not evaluable has no `passed` nor `credit` (a rule on it is unknown).
    not_evaluable = {k: v for k, v in out.items() if k not in ("passed", "credit")}
    if not isinstance(entry, dict):
        return {**not_evaluable, "problem": "criterion entry is not an object"}
    num, den = out["numerator"], out["denominator"] = (
        entry.get("numerator"),
        entry.get("denominator"),
    )
    if num is None:
        return {**out, "skipped": True}

    def exact(value: Any) -> Fraction | None:
        if isinstance(value, bool) or not isinstance(value, int | float):
            return None
        if isinstance(value, float) and not math.isfinite(value):
            return None
        return Fraction(str(value)) if isinstance(value, float) else Fraction(value)

    n, d = exact(num), exact(den)
    if n is None or d is None or d <= 0 or not 0 <= n <= d:
        problem = "numerator/denominator must be numbers with 0 <= numerator <= denominator"
        return {**not_evaluable, "numerator": num, "denominator": den, "problem": problem}
    credit = n / d if model.partial_credit == "fraction" else Fraction(n == d)
    return {**out, "passed": n == d, "credit": float(credit)}


def _same(a: Any, b: Any) -> bool:
    """Equal and of the same types, down to -0.0 and key order."""
    if isinstance(a, dict):
        return type(b) is dict and list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return a == b and math.copysign(1, a) == math.copysign(1, b)
    return type(a) is type(b) and a == b


@settings(max_examples=400, deadline=None)
@given(_MODELS, st.dictionaries(st.sampled_from([f"c{i}" for i in range(10)]), _ENTRIES))
def test_readiness_views_in_integers_match_the_exact_computation(
    model: ReadinessModel, report: dict[str, Any]
) -> None:
    views = _criteria({"report": report}, model)
    expected = {cid: _slow_view(entry, model, cid) for cid, entry in report.items()}
    assert _same(views, expected)
    score, level = _score_and_level(views, model)
    assert _same(score, compute_score(views, model))
    assert _same(level, compute_level(views, model))


# -- the settings walk ------------------------------------------------------------------------

_KEYS = st.sampled_from(["a", "b", "c"])
_SCALARS = st.one_of(
    st.integers(-2, 2),
    st.sampled_from([1, 1.0, True, 0, 0.0, -0.0, None, "a", "1", math.nan, date(2020, 1, 1)]),
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_KEYS, inner, max_size=3),
    max_leaves=8,
)
_READS = st.lists(st.lists(st.lists(_KEYS, max_size=3).map(tuple), max_size=3), min_size=1)


def _slow_affected(node: _Node, a: Any, b: Any, out: set[int]) -> None:
    """Which rules' values differ, by `strict_equal` alone, key by key (one object is
    unchanged, as a history shares what a revision left unchanged)."""
    if a is b:
        return
    if node.whole or not (isinstance(a, dict) and isinstance(b, dict)):
        if a is MISSING or b is MISSING or not strict_equal(a, b):
            out |= node.below
        return
    for key, child in node.children.items():
        _slow_affected(child, a.get(key, MISSING), b.get(key, MISSING), out)


@settings(max_examples=400, deadline=None)
@given(
    _READS,
    st.lists(st.dictionaries(_KEYS, _VALUES, max_size=3), min_size=2, max_size=6),
    st.lists(st.tuples(st.integers(0, 5), st.integers(0, 5)), max_size=4),
)
def test_the_settings_walk_finds_the_rules_strict_equality_finds(
    reads: list[list[tuple[str, ...]]],
    revisions: list[dict[str, Any]],
    shared: list[tuple[int, int]],
) -> None:
    """Revision by revision with one trie (its cached bytes and key look-ups carried along),
    some revisions the very same object as another, NaN and dates among the values (a YAML
    policy test case can hold them)."""
    for i, j in shared:
        if max(i, j) < len(revisions):
            revisions[i] = revisions[j]
    trie, plain = trie_of(reads), trie_of(reads)
    token = NON_FINITE_POSSIBLE.set(True)
    try:
        for a, b in pairwise(revisions):
            fast: set[int] = set()
            slow: set[int] = set()
            affected(trie, a, b, fast)
            _slow_affected(plain, a, b, slow)
            assert fast == slow
    finally:
        NON_FINITE_POSSIBLE.reset(token)


# -- list-entry reuse keys ---------------------------------------------------------------------


class _Str(str):
    pass


_ITEM_SCALARS = st.sampled_from(
    [
        *(1, 1.0, True, 0, -0.0, 0.0, None, "a", "1", _Str("a"), "x" * 64, "x" * 65, "é" * 40),
        *('[1,"a"]', "[0]", "[1,1]", '["a"]'),  # strings that read as another key's bytes
    ]
)
_ITEMS = st.recursive(
    _ITEM_SCALARS,
    lambda inner: (
        st.lists(inner, max_size=2)
        | st.dictionaries(st.sampled_from(["a", "b", ""]), inner, max_size=2)
    ),
    max_leaves=5,
)


@settings(max_examples=1000, deadline=None)
@given(st.sampled_from(["a", "b", ""]), st.data())
def test_entries_with_one_reuse_key_read_the_same_value(key: str, data: st.DataObject) -> None:
    """Equal keys only for entries whose read value has the same type-strict bytes."""
    # mostly objects holding the key read
    entries = _ITEMS | _ITEM_SCALARS.map(lambda v: {key: v}) | _ITEMS.map(lambda v: {key: v})
    x, y = data.draw(entries), data.draw(entries)
    reads = ((key,),)
    kx, ky = element_key(x, reads), element_key(y, reads)
    if kx is not None and kx == ky:
        assert strict_json(projection(x, reads[0])) == strict_json(projection(y, reads[0]))
