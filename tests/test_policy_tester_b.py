"""Fixes for what tester B found in the policy language: each test fails without its fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from auditor.errors import PolicyError
from auditor.policy import load_policies


def _problems(path: Path) -> list[str]:
    with pytest.raises(PolicyError) as info:
        load_policies([path])
    return [line.replace(f"{path.parent}/", "") for line in info.value.problems]


@pytest.mark.parametrize(
    ("written", "number"), [("1.10", "1.1"), ("2.50", "2.5"), ("1.0", "1.0"), ("3.", "3.0")]
)
def test_an_unquoted_version_that_yaml_reads_as_a_number_is_refused(
    tmp_path: Path, written: str, number: str
) -> None:
    """`version_at_least: 1.10` unquoted is the float 1.1 to YAML, so `1.9.0` passed."""
    path = tmp_path / "v.yaml"
    path.write_text(
        "defaults: {severity: high, target: settings}\nrules:\n"
        "  - id: VER-001\n    title: t\n"
        f"    assert: {{path: cliVersion, version_at_least: {written}}}\n"
    )
    assert _problems(path) == [
        f"v.yaml:5:50: error: $.rules[0].assert.version_at_least: version_at_least: {written} "
        f"was read as the number {number}; quote the version: '{written}'"
    ]


@pytest.mark.parametrize("operand", ["'1.10'", '"1.10"', "2"])
def test_a_quoted_version_or_a_whole_number_loads(tmp_path: Path, operand: str) -> None:
    path = tmp_path / "v.yaml"
    path.write_text(
        "defaults: {severity: high, target: settings}\nrules:\n"
        f"  - id: VER-001\n    title: t\n    assert: {{path: v, version_at_least: {operand}}}\n"
    )
    assert [r.id for r in load_policies([path]).rules] == ["VER-001"]


def test_a_duplicate_id_is_reported_beside_the_first_rules_own_error(tmp_path: Path) -> None:
    """Every problem at once: the duplicate was only shown once the typo was fixed."""
    path = tmp_path / "dup.yaml"
    path.write_text(
        "defaults: {severity: low, target: settings}\nrules:\n"
        "  - {id: R1, title: t, assert: {path: a, equal: 1}}\n"
        "  - {id: R1, title: t2, assert: {path: a, equals: 2}}\n"
    )
    assert _problems(path) == [
        "dup.yaml:3:42: error: $.rules[0].assert.equal: unknown key `equal` "
        "(did you mean `equals`?)",
        "dup.yaml:4:10: error: $.rules[1].id: duplicate rule id `R1` (first at dup.yaml:3:5)",
    ]
