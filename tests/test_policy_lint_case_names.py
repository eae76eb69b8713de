"""`policy lint` reports every problem of a test file at once: a test case name used twice
was not reported while one of the two cases had another problem (an unknown rule id in its
`expect:`); it showed up only once that was fixed."""

from __future__ import annotations

from pathlib import Path

from tests.test_policy_cli import run

POLICY = (
    "defaults: {severity: high, target: settings}\n"
    "rules:\n"
    "  - id: ACME-AUT-001\n"
    "    title: autonomy ceiling\n"
    "    assert: {path: maxAutonomyLevel, at_most: {enum: autonomy, value: medium}}\n"
)


def test_a_duplicate_case_name_is_reported_beside_the_cases_other_problem(
    tmp_path: Path,
) -> None:
    (tmp_path / "p.yaml").write_text(POLICY)
    tests = tmp_path / "p.tests.yaml"
    tests.write_text(
        "tests:\n"
        "  - name: ok\n"
        "    settings: {maxAutonomyLevel: low}\n"
        "    expect: {ACME-AUT-001: pass}\n"
        "  - name: ok\n"
        "    settings: {maxAutonomyLevel: high}\n"
        "    expect: {ACME-AUT-01: fail}\n"
    )
    for command in ("lint", "test"):
        code, out, _ = run(tmp_path, command, str(tmp_path / "p.yaml"))
        assert code == 2
        assert out.splitlines() == [
            f"{tests}:5:11: error: $.tests[1].name: test case name 'ok' is used by case 1 already",
            f"{tests}:7:14: error: $.tests[1].expect.ACME-AUT-01: unknown rule id `ACME-AUT-01` "
            "(did you mean `ACME-AUT-001`?)",
        ]


def test_a_duplicate_name_of_a_case_that_is_no_mapping_is_not_guessed(tmp_path: Path) -> None:
    """A case that is not a mapping has no name to compare: only its own problem."""
    (tmp_path / "p.yaml").write_text(POLICY)
    tests = tmp_path / "p.tests.yaml"
    tests.write_text(
        "tests:\n"
        "  - name: ok\n"
        "    settings: {maxAutonomyLevel: low}\n"
        "    expect: {ACME-AUT-001: pass}\n"
        "  - [name, ok]\n"
    )
    code, out, _ = run(tmp_path, "lint", str(tmp_path / "p.yaml"))
    assert code == 2
    assert out.splitlines() == [
        f"{tests}:5:5: error: $.tests[1]: a test case must be a mapping with an `expect:` mapping"
    ]
