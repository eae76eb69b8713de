"""JSON Patch export: applying our RFC 6902 operations with the independent `jsonpatch` library
turns `before` into exactly `after` (type-strict), for hand-picked, emulator and generated pairs."""

from __future__ import annotations

import copy
import itertools
import json
import subprocess
import sys
from typing import Any

import jsonpatch
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from auditor.common.jsonutil import canonical
from auditor.diff.engine import diff_revisions, to_json_patch
from auditor.models import JSON


def assert_round_trip(before: JSON, after: JSON) -> list[dict[str, Any]]:
    original = copy.deepcopy(before)
    ops = to_json_patch(before, after)
    result = jsonpatch.apply_patch(before, ops)
    # Python's == says [True] == [1]; compare canonical bytes so types count.
    assert canonical(result) == canonical(after)
    assert canonical(before) == canonical(original), "the patch must not mutate its input"
    return ops


CASES = [
    pytest.param({"a": 1}, {"a": 1}, [], id="equal-gives-no-ops"),
    pytest.param(
        {"a": 1}, {"b": 1}, [{"op": "move", "from": "/a", "path": "/b"}], id="rename-move"
    ),
    pytest.param(
        {"commandAllowlist": ["b", "c"]},
        {"commandAllowlist": ["a", "b", "c"]},
        [{"op": "add", "path": "/commandAllowlist/0", "value": "a"}],
        id="set-add-front",
    ),
    pytest.param(
        {"commandAllowlist": ["a", "b", "c", "d"]},
        {"commandAllowlist": ["b", "d"]},
        [
            {"op": "remove", "path": "/commandAllowlist/2"},
            {"op": "remove", "path": "/commandAllowlist/0"},
        ],
        id="set-removals-descending",
    ),
    pytest.param(
        {"customModels": [{"id": "x", "u": 1}, {"id": "y", "u": 1}]},
        {"customModels": [{"id": "y", "u": 2}]},
        [
            {"op": "remove", "path": "/customModels/0"},
            {"op": "replace", "path": "/customModels/0/u", "value": 2},
        ],
        id="keyed-remove-then-edit-shifted-index",
    ),
    pytest.param(
        {"hooks": {"SessionEnd": [{"matcher": "", "c": "a"}, {"matcher": "", "c": "b"}]}},
        {"hooks": {"SessionEnd": [{"matcher": "", "c": "b"}, {"matcher": "", "c": "a"}]}},
        [{"op": "move", "from": "/hooks/SessionEnd/1", "path": "/hooks/SessionEnd/0"}],
        id="keyed-repeated-identity-swap-is-a-move",
    ),
    pytest.param(
        {"a/b": {"~": 1}},
        {"a/b": {"~": 2}},
        [{"op": "replace", "path": "/a~1b/~0", "value": 2}],
        id="pointer-escaping",
    ),
    pytest.param([1, 2], {"a": 1}, [{"op": "replace", "path": "", "value": {"a": 1}}], id="root"),
]


@pytest.mark.parametrize(("before", "after", "expected"), CASES)
def test_patch_operations(before: Any, after: Any, expected: list[dict[str, Any]]) -> None:
    assert assert_round_trip(before, after) == expected


REORDER_CASES = [
    pytest.param(
        {"commandAllowlist": ["a", "b", "c"]},
        {"commandAllowlist": ["c", "b", "a", "d"]},
        id="set-reordered-and-added",
    ),
    pytest.param(
        {"commandAllowlist": ["a", "a", "b"]}, {"commandAllowlist": ["b", "a"]}, id="set-duplicates"
    ),
    pytest.param(
        {"customModels": [{"id": "x"}, {"id": "y"}]},
        {"customModels": [{"id": "y"}, {"id": "z"}, {"id": "x", "n": 1}]},
        id="keyed-reordered",
    ),
    pytest.param(
        {"customModels": [{"id": "x"}, {"id": "x"}]},
        {"customModels": [{"id": "x", "n": 1}]},
        id="keyed-duplicate-ids",
    ),
    pytest.param({"x": [True, 1, 1.0]}, {"x": [1, 1.0, True]}, id="bool-int-float-strict"),
    pytest.param({"x": [[1], [2], [3]]}, {"x": [[0], [2], [3, 4]]}, id="nested-lists"),
]


@pytest.mark.parametrize(("before", "after"), REORDER_CASES)
def test_patch_reproduces_order_the_diff_ignores(before: Any, after: Any) -> None:
    assert_round_trip(before, after)


def shared_matcher_hooks(n: int) -> list[dict[str, Any]]:
    return [
        {"matcher": "", "hooks": [{"type": "command", "command": f"/opt/h{i}.sh"}]}
        for i in range(n)
    ]


def test_moving_one_of_many_hook_entries_sharing_a_matcher_is_one_move() -> None:
    entries = shared_matcher_hooks(50)
    before = {"hooks": {"SessionEnd": entries}}
    after = {"hooks": {"SessionEnd": [*entries[1:], entries[0]]}}
    ops = assert_round_trip(before, after)
    assert ops == [{"op": "move", "from": "/hooks/SessionEnd/0", "path": "/hooks/SessionEnd/49"}]


def test_moving_one_of_several_equal_entries_is_one_move() -> None:
    """Equal entries are interchangeable: moving one past others equal to it is still one move,
    not one per equal entry it passes (which pairing first-to-first would give)."""
    a, b = ({"matcher": "", "hooks": [{"type": "command", "command": c}]} for c in ("/a", "/b"))
    entries = [a, a, b, a, b, a, a, b]
    before = {"hooks": {"Stop": entries}}
    after = {"hooks": {"Stop": [*entries[1:6], entries[0], *entries[6:]]}}
    ops = assert_round_trip(json.loads(json.dumps(before)), after)
    assert [op["op"] for op in ops] == ["move"]


def test_a_reorder_too_long_to_write_as_moves_replaces_the_list() -> None:
    """Reversing 2,100 entries takes 2,099 moves, each scanning the list (over 4 million steps):
    the list is replaced in one operation, not removed and added again entry by entry."""
    entries = shared_matcher_hooks(2100)
    before = {"hooks": {"Stop": entries}}
    after = {"hooks": {"Stop": entries[::-1]}}
    ops = assert_round_trip(before, after)
    assert ops == [{"op": "replace", "path": "/hooks/Stop", "value": entries[::-1]}]


def test_a_reorder_moves_only_the_entries_out_of_order() -> None:
    e = shared_matcher_hooks(8)
    before = {"hooks": {"Stop": e}}
    after = {"hooks": {"Stop": [e[0], e[5], e[1], e[2], e[7], e[3], e[4], e[6]]}}
    ops = assert_round_trip(before, after)
    assert [op["op"] for op in ops] == ["move", "move"]  # e5 and e7; the other six keep order


def test_every_step_of_the_emulator_history_round_trips() -> None:
    from auditor.emulator.data import generate_dataset

    history = generate_dataset(seed=7, revisions=240, repos=0).history
    steps = list(itertools.pairwise(history))
    assert len(steps) == 239
    for old, new in steps:
        ops = assert_round_trip(old["settings"], new["settings"])
        if diff_revisions(old["settings"], new["settings"]):
            assert ops  # (ops without changes happen: a reordered keyed list is no Change)


scalars = (
    st.none()
    | st.booleans()
    | st.integers(-3, 3)
    | st.sampled_from([0.0, 1.0, 1.5])
    | st.sampled_from(["", "a", "b", "1", "true"])
)
json_values = st.recursive(
    scalars,
    lambda kids: (
        st.lists(kids, max_size=4) | st.dictionaries(st.sampled_from("abcd"), kids, max_size=4)
    ),
    max_leaves=12,
)
models = st.lists(
    st.fixed_dictionaries(
        {"id": st.sampled_from(["x", "y", "z"])},
        optional={"baseUrl": st.sampled_from(["u", "v"]), "n": json_values},
    ),
    max_size=4,
)
settings_like = st.fixed_dictionaries(
    {},
    optional={
        "commandAllowlist": st.lists(st.sampled_from(["a", "b", "c", 1, True, None]), max_size=6),
        "customModels": models,
        "hooks": st.dictionaries(
            st.sampled_from(["Stop", "PreToolUse"]),
            st.lists(
                st.fixed_dictionaries(
                    {"matcher": st.sampled_from(["Bash", "*"])}, optional={"hooks": json_values}
                ),
                max_size=3,
            ),
            max_size=2,
        ),
        "a": json_values,
        "b": json_values,
        "enableDroidShield": st.booleans(),
        "enableAgentShield": st.booleans(),
    },
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(before=settings_like, after=settings_like)
def test_generated_settings_pairs_round_trip(before: Any, after: Any) -> None:
    assert_round_trip(before, after)


@settings(max_examples=200, deadline=None)
@given(before=json_values, after=json_values)
def test_generated_json_pairs_round_trip(before: Any, after: Any) -> None:
    assert_round_trip(before, after)


hook_entries = st.fixed_dictionaries(
    {"matcher": st.sampled_from(["", "Bash", "*"])},
    optional={"hooks": st.sampled_from([[{"command": "a"}], [{"command": "b"}], []])},
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    pair=st.lists(hook_entries, min_size=1, max_size=4).flatmap(
        lambda pool: st.tuples(
            st.lists(st.sampled_from(pool), max_size=6), st.lists(st.sampled_from(pool), max_size=6)
        )
    )
)
def test_hook_lists_with_repeated_matchers_and_equal_entries_round_trip(pair: Any) -> None:
    # Drawn from a small pool, so entries repeat (equal or with the same matcher) and pure
    # reorders, duplicates added or removed, and edits next to moves all come up. Copied
    # through JSON so no two entries are one object (a patch must not edit both).
    before, after = json.loads(json.dumps(pair))
    assert_round_trip({"hooks": {"Stop": before}}, {"hooks": {"Stop": after}})


@settings(max_examples=100, deadline=None)
@given(doc=settings_like)
def test_a_document_has_no_difference_with_itself(doc: Any) -> None:
    assert diff_revisions(doc, copy.deepcopy(doc)) == []
    assert to_json_patch(doc, copy.deepcopy(doc)) == []


def _in_a_child(code: str) -> str:
    """What `code` prints, run in a child process that must finish within a minute (so a hang
    fails the test instead of stalling the suite)."""
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    return done.stdout


# An in-order list (one the list table does not name) of thousands of repeated entries,
# reordered: `difflib` tried every pair of equal entries in every search (2,500 entries of three
# kinds, reversed, took 158 s to diff; 800 with one added, 7 s). Each is diffed, exported and
# round-tripped in a child process well inside a minute, so a slow machine cannot fail it.
_REPEATED_REORDERS = {
    "reversed": "[{'k': i % 3} for i in range(5000)][::-1]",
    "reversed-plus-one": "[{'k': i % 3} for i in range(5000)][::-1] + [{'k': 9}]",
    "rotated-strings": "[f's{i % 4}' for i in range(1, 5001)] + ['s0']",
}


@pytest.mark.parametrize("after", _REPEATED_REORDERS.values(), ids=_REPEATED_REORDERS.keys())
def test_a_reordered_list_of_repeated_entries_is_diffed_without_hanging(after: str) -> None:
    code = (
        "import copy, jsonpatch\n"
        "from auditor.common.jsonutil import canonical\n"
        "from auditor.diff.engine import diff_revisions, to_json_patch\n"
        "before = {'unlisted': [{'k': i % 3} for i in range(5000)]}\n"
        f"after = {{'unlisted': {after}}}\n"
        "if isinstance(after['unlisted'][0], str): before = {'unlisted': [f's{i % 4}' for i in "
        "range(5000)]}\n"
        "changes = diff_revisions(before, after)\n"
        "result = jsonpatch.apply_patch(copy.deepcopy(before), to_json_patch(before, after))\n"
        "assert canonical(result) == canonical(after)\n"
        "print(len(changes))\n"
    )
    assert int(_in_a_child(code)) > 0


def test_thousands_of_keys_of_one_value_renamed_are_paired_without_hanging() -> None:
    # Each removed key was compared by name with every added key of its value: 1,000 took 20 s
    # and it grew with the square; past a budget the rest are paired in name order.
    code = (
        "import copy, jsonpatch\n"
        "from auditor.common.jsonutil import canonical\n"
        "from auditor.diff.engine import diff_revisions, to_json_patch\n"
        "before = {'env': {f'OLD_{i}': '1' for i in range(5000)}}\n"
        "after = {'env': {f'NEW_{i}': '1' for i in range(5000)}}\n"
        "kinds = {c.kind for c in diff_revisions(before, after)}\n"
        "result = jsonpatch.apply_patch(copy.deepcopy(before), to_json_patch(before, after))\n"
        "assert canonical(result) == canonical(after)\n"
        "print(sorted(kinds))\n"
    )
    assert _in_a_child(code).strip() == "['renamed']"
