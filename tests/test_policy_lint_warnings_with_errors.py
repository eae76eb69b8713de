"""`policy lint` lists the warnings of the rules that did load beside the errors of those that
did not (tester T91 #8; README: "Every problem of every file is reported at once"): a typo'd
path was seen only in a second round, once every error was fixed."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import run_cli

_RULES = (
    "rules:\n"
    "  - {id: F-1, title: t, severity: low, target: settings,\n"
    "     assert: {path: sandbox.enabeld, equals: true}}\n"
    "  - {id: F-2, title: t, severity: lowest, target: settings,\n"
    "     assert: {path: sandbox.enabled, equals: true}}\n"
    "  - {id: D-1, title: t, severity: low, target: readiness, assert: {path: $levle, gte: 2}}\n"
    "  - {id: E-1, title: t, severity: low, target: settings, assert: {path: x, not_in: []}}\n"
)


def test_lint_lists_the_loaded_rules_warnings_beside_the_errors(
    env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """README: "Every problem of every file is reported at once". With F-2's severity wrong,
    F-1's typo'd path (and the readiness-field and empty-literal warnings) came only in a
    second round, once the error was fixed."""
    code, _, err = run_cli(["sync", "--no-usage"], env, tmp_path)
    assert code == 0, err
    monkeypatch.chdir(tmp_path)  # (the file named as typed)
    (tmp_path / "e.yaml").write_text(_RULES)
    code, out, err = run_cli(["policy", "lint", "e.yaml"], env, tmp_path)
    assert code == 2, err
    lines = out.splitlines()
    assert [line.split(": ")[1] for line in lines] == [
        "warning",  # F-1: `sandbox.enabeld` in none of the stored revisions
        "error",  # F-2: `lowest`
        "warning",  # D-1: `$levle`
        "warning",  # E-1: `x` in none of the stored revisions
        "warning",  # E-1: `not_in: []`
    ]
    assert "e.yaml:3:21: warning: $.rules[0].assert.path: rule F-1: `sandbox.enabeld` " in out
    assert "appears in none of the 30 stored revisions (typo or renamed key?)" in lines[0]
    assert lines[1].startswith('e.yaml:4:35: error: $.rules[1].severity: "lowest" is not one')
    assert "`$levle` is not a field readiness rules see (did you mean `$level`?)" in lines[2]
    assert "`not_in: []` is true of every value" in lines[4]
    assert err.splitlines()[-1] == (
        "auditor: exit 2: 1 error(s) and 4 warning(s) in policy files (listed above)"
    )
    # once the error is fixed: the same warnings, nothing new to learn
    (tmp_path / "e.yaml").write_text(_RULES.replace("lowest", "low"))
    code, again, err = run_cli(["policy", "lint", "e.yaml"], env, tmp_path)
    assert code == 0, err
    assert again.splitlines() == [lines[0], *lines[2:]]


def test_lint_beside_an_error_passes_over_a_state_file_it_cannot_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The policies' errors come first, as a configuration that cannot be read does: a state
    file named but not there is said once they are fixed (as before)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "e.yaml").write_text(_RULES)
    argv = ["policy", "lint", "e.yaml", "--state", "none.db"]
    code, out, err = run_cli(argv, {}, tmp_path)
    assert code == 2 and "no state file" not in err, err
    assert "error: $.rules[1].severity" in out and "`$levle` is not a field" in out
    (tmp_path / "e.yaml").write_text(_RULES.replace("lowest", "low"))
    code, _, err = run_cli(argv, {}, tmp_path)
    assert code == 2 and "no state file at" in err, err
