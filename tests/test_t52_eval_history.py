"""T52 #10: `history --path` takes time linear in the pattern's length.

Every prefix of a pattern was made into a regular expression up front: n expressions of up to
n parts, so a pattern of 5,000 segments (`*.*.….x`) ran for over a minute and took 395 MB.
Now a prefix is made only when a path is deep enough for it to match, and what is selected
is the same."""

from __future__ import annotations

import json
from pathlib import Path

from auditor.cli.cmd_history import PathPattern
from auditor.models import Change
from tests.test_history_scale import _history, _run


def test_history_with_a_pattern_of_5000_segments_answers(tmp_path: Path) -> None:
    state = tmp_path / "state.db"
    _history(state, 1, 40)
    argv = ["history", "--state", str(state), "--format", "json", "--path"]
    code, every, err = _run([*argv, "*"])
    assert code == 0, err
    assert len(json.loads(every)) == 40
    for pattern in ("*." * 5000 + "x", "sandbox" + ".*" * 5000, "*?" * 20000 + "Z"):
        code, out, err = _run([*argv, pattern])
        assert code == 0, err
        assert json.loads(out) == []  # no stored path is 5,000 levels deep


def test_a_long_pattern_makes_only_the_expressions_a_path_can_match() -> None:
    """What made it quadratic: an expression for every prefix of the pattern, up front (300
    expressions of up to 300 parts here). Only those a path is deep enough for are made."""
    pattern = PathPattern("*." * 300 + "x")
    for depth in (1, 3, 8):
        assert not pattern.selects(Change(_deep(depth), "changed", 1, 2))
    assert len(pattern._heads) <= 10, len(pattern._heads)


def _deep(depth: int, leaf: str = "x") -> str:
    return "$." + ".".join(["a"] * (depth - 1) + [leaf])


def test_a_long_pattern_still_selects_a_path_as_deep() -> None:
    change = Change(_deep(80), "changed", 1, 2)
    assert PathPattern("a." * 79 + "x").selects(change)
    assert PathPattern("*." * 79 + "x").selects(change)
    assert PathPattern("*." * 78 + "*").selects(change)  # `a.*`: a path below too
    assert PathPattern("a." * 40 + "*").selects(change)
    assert not PathPattern("*." * 80 + "x").selects(change)
    assert not PathPattern("a." * 79 + "y").selects(change)


def test_a_long_pattern_selects_what_a_removed_value_held() -> None:
    """A pattern deeper than the change's path selects it when the removed value held the
    rest of the pattern (`sandbox.enabled` selects the removal of `sandbox`)."""
    held: object = {"x": 1}
    for _ in range(30):
        held = {"a": held}
    change = Change(_deep(40, "a"), "removed", held, None)
    assert PathPattern("a." * 70 + "x").selects(change)
    assert PathPattern("*." * 70 + "x").selects(change)
    assert not PathPattern("a." * 71 + "x").selects(change)
    assert not PathPattern("a." * 70 + "y").selects(change)
