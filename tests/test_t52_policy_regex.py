"""T52 #6: RE2 patterns have a memory limit each and a budget for one policy set.

RE2 matches in linear time, but compiling a large pattern (`\\pL{150}`: 179,000 instructions)
cost about 1 MB and 70 ms; a 258 KB file of 2,000 such rules kept `policy lint` busy for
minutes at gigabytes. A pattern beyond RE2's own 8 MB, or beyond what the set's budget of
5,000,000 instructions has left, is now an error at its `file:line:col` naming its rule, and
refusing one once the budget is spent is cheap. A name check of 64 letters of any script
(86,000 instructions) loads (reviewer R29a #4: a 1 MB limit refused it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from auditor.errors import PolicyError
from auditor.policy import load_policies
from tests.conftest import run_cli


def _policy(path: Path, patterns: list[str]) -> Path:
    path.write_text(
        "rules:\n"
        + "".join(
            f"  - {{id: R-{i}, title: t, severity: low, target: settings, "
            f"assert: {{path: sandbox.mode, matches: '{p}', default: ''}}}}\n"
            for i, p in enumerate(patterns)
        )
    )
    return path


def test_lint_refuses_a_pattern_too_large_at_its_place_naming_its_rule(tmp_path: Path) -> None:
    policy = _policy(tmp_path / "p.yaml", ["^ok$", r"\pL{1000}x"])
    code, out, err = run_cli(["policy", "lint", str(policy)], {}, tmp_path)
    assert code == 2, out + err
    assert (
        f"{policy}:3:96: error: $.rules[1].assert.matches: regex /\\pL{{1000}}x/ of rule `R-1` "
        "is too large: RE2 needs more than 8,388,608 bytes to compile it, the limit for one "
        "pattern"
    ) in out + err


def test_a_name_of_64_letters_of_any_script_is_checked(tmp_path: Path) -> None:
    """86,000 instructions: within the limit for one pattern (a 1 MB limit refused it)."""
    policy = _policy(tmp_path / "p.yaml", [r"^[\p{L}\p{N} ._-]{1,64}$"])
    assert [r.id for r in load_policies([policy]).rules] == ["R-0"]


def test_many_large_patterns_are_refused_from_the_one_past_the_budget(tmp_path: Path) -> None:
    """300 rules of `\\pL{150}` (179,405 instructions each) took 21 s and 490 MB to load, and
    were accepted: 27 of them fit in the set's 5,000,000, the 28th and every later one is
    refused, each naming its rule (about 2 s: figures in the CHANGELOG, T52 #6)."""
    policy = _policy(tmp_path / "p.yaml", [rf"\pL{{150}}x{i}" for i in range(300)])
    with pytest.raises(PolicyError) as caught:
        load_policies([policy])
    problems = caught.value.problems
    assert len(problems) == 300 - 27
    assert "$.rules[27].assert.matches" in problems[0]
    assert all("more than 5,000,000 RE2 instructions" in p for p in problems), problems[:2]
    assert (
        "of rule `R-299` is refused: with it, the regexes of these policy files compile "
        in (problems[-1])
    )
    # each load has its own budget: one of them loads after it
    one = _policy(tmp_path / "one.yaml", [r"\pL{150}x"])
    assert [r.id for r in load_policies([one]).rules] == ["R-0"]
