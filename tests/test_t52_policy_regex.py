"""T52 #6: RE2 patterns have a memory limit each and a budget for one policy set.

RE2 matches in linear time, but compiling a large pattern (`\\pL{150}`: 179,000 instructions)
cost about 1 MB and 70 ms; a 258 KB file of 2,000 such rules kept `policy lint` busy for
minutes at gigabytes. A pattern beyond RE2 1 MB, or beyond what the set's budget has left,
is now an error at its `file:line:col` naming its rule, and refusing one is cheap."""

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
    policy = _policy(tmp_path / "p.yaml", ["^ok$", r"\pL{150}x"])
    code, out, err = run_cli(["policy", "lint", str(policy)], {}, tmp_path)
    assert code == 2, out + err
    assert (
        f"{policy}:3:96: error: $.rules[1].assert.matches: regex /\\pL{{150}}x/ of rule `R-1` "
        "is too large: RE2 needs more than 1,048,576 bytes to compile it, the limit for one "
        "pattern"
    ) in out + err


def test_many_large_patterns_are_refused_quickly(tmp_path: Path) -> None:
    """300 rules of `\\pL{150}` took 21 s and 490 MB to load (and were accepted)."""
    policy = _policy(tmp_path / "p.yaml", [rf"\pL{{150}}x{i}" for i in range(300)])
    with pytest.raises(PolicyError) as caught:  # (about 1 s: figures in the CHANGELOG, T52 #6)
        load_policies([policy])
    problems = caught.value.problems
    assert len(problems) == 300
    assert "of rule `R-0` is too large" in problems[0]
    assert (
        "of rule `R-299` is refused: with it, the regexes of these policy files compile "
        in (problems[-1])
    )


def test_the_set_has_one_budget_each_pattern_within_its_own_limit(tmp_path: Path) -> None:
    """`\\pL{25}` (about 30,000 instructions) is within the limit for one pattern; 30 of
    them are beyond the budget of one set of policies, from the one that crosses it."""
    one = _policy(tmp_path / "one.yaml", [r"\pL{25}x"])
    assert [r.id for r in load_policies([one]).rules] == ["R-0"]
    many = _policy(tmp_path / "many.yaml", [rf"\pL{{25}}x{i}" for i in range(30)])
    with pytest.raises(PolicyError) as caught:
        load_policies([many])
    problems = caught.value.problems
    assert problems, problems
    assert all("more than 500,000 RE2 instructions" in p for p in problems), problems
    assert "$.rules[16].assert.matches" in problems[0]
    # each load has its own budget: the shipped packs load after it
    assert load_policies([one]).rules
