"""A policy test case's `name: null` (or an empty one) is refused at its `file:line:col`, as a
waiver file refuses an empty field, not run as `case N`; and a readiness or org rule expected of
a case whose `reports:` is empty is refused like one given no `reports:`, never a `got not
evaluated` failure (a status no case can expect) (review T93 #7)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_policy_cli import run

POLICY = (
    "defaults: {severity: high, target: settings}\n"
    "rules:\n"
    "  - id: ACME-SBX-001\n"
    "    title: sandbox on\n"
    "    assert: {path: sandbox.enabled, equals: true}\n"
    "  - id: ACME-RDY-001\n"
    "    title: a report at all\n"
    "    target: readiness\n"
    "    assert: {path: createdAt, exists: true}\n"
    "  - id: ACME-ORG-001\n"
    "    title: org level\n"
    "    target: org\n"
    "    assert: {path: repo_count, gte: 1}\n"
)


@pytest.mark.parametrize("name", ["null", "''", "[a, b]"])
def test_a_case_name_that_holds_nothing_is_refused_at_its_place(tmp_path: Path, name: str) -> None:
    (tmp_path / "p.yaml").write_text(POLICY)
    tests = tmp_path / "p.tests.yaml"
    tests.write_text(
        "tests:\n"
        "  - name: sandbox on\n"
        "    settings: {sandbox: {enabled: true}}\n"
        "    expect: {ACME-SBX-001: pass}\n"
        f"  - name: {name}\n"
        "    settings: {sandbox: {enabled: false}}\n"
        "    expect: {ACME-SBX-001: fail}\n"
    )
    for command in ("lint", "test"):
        code, out, _ = run(tmp_path, command, str(tmp_path / "p.yaml"))
        assert code == 2, out
        (line,) = out.splitlines()
        assert line.startswith(f"{tests}:5:11: error: $.tests[1].name: a test case's `name` ")
        assert "case 2" not in out.replace("`case N`", "")


def test_a_case_without_a_name_is_still_case_n(tmp_path: Path) -> None:
    (tmp_path / "p.yaml").write_text(POLICY)
    (tmp_path / "p.tests.yaml").write_text(
        "tests:\n  - settings: {sandbox: {enabled: false}}\n    expect: {ACME-SBX-001: fail}\n"
    )
    code, out, _ = run(tmp_path, "test", str(tmp_path / "p.yaml"))
    assert code == 0
    assert "p.tests.yaml: case 1\n" in out and out.startswith("PASS ")


@pytest.mark.parametrize("reports", ["[]", "null"])
@pytest.mark.parametrize(
    ("rule", "target"), [("ACME-RDY-001", "readiness"), ("ACME-ORG-001", "org")]
)
def test_an_empty_reports_list_is_refused_like_no_reports(
    tmp_path: Path, reports: str, rule: str, target: str
) -> None:
    (tmp_path / "p.yaml").write_text(POLICY)
    tests = tmp_path / "p.tests.yaml"
    tests.write_text(
        f"tests:\n  - name: none\n    reports: {reports}\n    expect: {{{rule}: not_applicable}}\n"
    )
    for command in ("lint", "test"):
        code, out, _ = run(tmp_path, command, str(tmp_path / "p.yaml"))
        assert code == 2, out
        assert "not evaluated" not in out
        assert out.splitlines() == [
            f"{tests}:4:14: error: $.tests[0].expect.{rule}: rule `{rule}` has `target: "
            f"{target}`, and this case gives an empty `reports:`, no report to judge it by"
        ]


@pytest.mark.parametrize("reports", ["{}", "''", "false", "0"])
def test_a_reports_field_that_is_no_list_is_refused_at_its_place(
    tmp_path: Path, reports: str
) -> None:
    """Review R68 #3: `{}`, `""`, `false` and `0` were read as no reports (`got not evaluated`)."""
    (tmp_path / "p.yaml").write_text(POLICY)
    tests = tmp_path / "p.tests.yaml"
    tests.write_text(
        f"tests:\n  - name: none\n    reports: {reports}\n"
        "    expect: {ACME-RDY-001: not_applicable}\n"
    )
    for command in ("lint", "test"):
        code, out, _ = run(tmp_path, command, str(tmp_path / "p.yaml"))
        assert code == 2, out
        assert "not evaluated" not in out
        assert out.splitlines() == [
            f"{tests}:3:14: error: $.tests[0].reports: `reports:` must be a list of readiness "
            "reports"
        ]
