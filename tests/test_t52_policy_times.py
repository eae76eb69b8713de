"""T52 #7: a date or time written unquoted in a policy, or in a `.tests.yaml` case's settings,
is read as the text written, as the API sends it (as review reads a settings file): it used to
be rewritten to Python's `…+00:00`, which never equals the API's text, and the test case's
settings were rewritten the same way, so `policy test` passed a rule that failed on every
real revision."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import run_cli

POLICY = """\
rules:
  - id: D-TIME
    title: a time as the API sends it
    severity: low
    target: settings
    assert: {path: y, equals: 2026-01-01T10:00:00Z}
  - id: D-DATE
    title: a date
    severity: low
    target: settings
    assert: {path: z, equals: 2026-01-01}
"""


def _write(tmp_path: Path, tests: str) -> None:
    (tmp_path / "d.yaml").write_text(POLICY)
    (tmp_path / "d.tests.yaml").write_text(tests)


def test_an_unquoted_time_in_a_rule_equals_the_apis_text(tmp_path: Path) -> None:
    _write(
        tmp_path,
        """\
tests:
  - name: quoted, as the API sends it
    settings: {y: "2026-01-01T10:00:00Z", z: "2026-01-01"}
    expect: {D-TIME: pass, D-DATE: pass}
  - name: Python's form is another text
    settings: {y: "2026-01-01T10:00:00+00:00", z: "2026-01-01"}
    expect: {D-TIME: fail, D-DATE: pass}
""",
    )
    code, out, err = run_cli(["policy", "test", str(tmp_path)], {}, tmp_path)
    assert code == 0, out + err
    assert "2 passed, 0 failed" in out


def test_an_unquoted_time_in_a_test_case_is_the_text_written(tmp_path: Path) -> None:
    """The case's settings reach the rule as the text written: `y: 2026-01-01T10:00:00Z`
    unquoted is the same value as quoted, and unlike `…+00:00`."""
    _write(
        tmp_path,
        """\
tests:
  - name: unquoted
    settings: {y: 2026-01-01T10:00:00Z, z: 2026-01-01}
    expect: {D-TIME: pass, D-DATE: pass}
""",
    )
    (tmp_path / "other.yaml").write_text(
        "rules:\n  - id: D-PLUS\n    title: t\n    severity: low\n    target: settings\n"
        '    assert: {path: y, equals: "2026-01-01T10:00:00+00:00"}\n'
    )
    (tmp_path / "other.tests.yaml").write_text(
        "tests:\n  - name: unquoted is not Python's form\n"
        "    settings: {y: 2026-01-01T10:00:00Z}\n    expect: {D-PLUS: fail}\n"
    )
    code, out, err = run_cli(["policy", "test", str(tmp_path)], {}, tmp_path)
    assert code == 0, out + err
    assert "2 passed, 0 failed" in out


def test_review_of_the_apis_text_passes_the_unquoted_time_rule(tmp_path: Path) -> None:
    """The user's view: `review --policy` of a file holding the API's text."""
    _write(tmp_path, "tests: []\n")
    (tmp_path / "prop.yaml").write_text("y: 2026-01-01T10:00:00Z\nz: 2026-01-01\n")
    (tmp_path / "live.json").write_text('{"y": "2026-01-01T10:00:00Z", "z": "2026-01-01"}\n')
    files = ["prop.yaml", "--against", "live.json", "--policy", "d.yaml", "--out", "o"]
    argv = [a if a.startswith("-") else str(tmp_path / a) for a in files]
    code, out, err = run_cli(["review", *argv, "-q", "-o", "md"], {}, tmp_path)
    report = (tmp_path / "o" / "report.md").read_text()
    assert "+00:00" not in report, report
    assert code == 0, out + err
