"""`policy lint` and `policy test` as a policy author (or a CI step) runs them in a repository.

With no PATH they checked the shipped packs, whatever `policies` the configuration named, and
said "0 error(s)" / "all passed" while `run` and `review` in the same folder stopped on the
configured files (tester T74): they now check what `run` would load (`--config`, then
`pyproject.toml`'s `[tool.auditor]`, then the shipped packs) and say which. A policy folder
skipped a `c.YAML` (a Windows tool's name for it) without a word, its rules left out.

Each test runs `python -m auditor` in a folder of its own, as a user types the command.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

BROKEN = """\
rules:
  - id: T-1
    title: 3
    severity: low
    target: settings
    assert: {path: sandbox.enabled, equals: true}
"""
GOOD = """\
rules:
  - id: G-1
    title: sandbox on
    severity: high
    target: settings
    assert: {path: sandbox.enabled, equals: true}
"""
GOOD_TESTS = """\
tests:
  - name: sandbox off fails
    settings: {sandbox: {enabled: false}}
    expect: {G-1: fail}
"""
LIVE = {"sandbox": {"enabled": True}}
PROPOSED = {"sandbox": {"enabled": False}}
PROBLEM = "$.rules[0].title: expected a string, got integer"
SHIPPED = "checked the shipped packs (no PATH given, no `policies` configured)"


def auditor(cwd: Path, *argv: str) -> tuple[int, str, str]:
    """`auditor ARGV…` run in `cwd`: (exit code, stdout, stderr)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AUDITOR_")}
    done = subprocess.run(
        [sys.executable, "-m", "auditor", *argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return done.returncode, done.stdout, done.stderr


def _last(err: str) -> str:
    return err.splitlines()[-1]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A settings repository: a broken policy, the live and proposed settings."""
    (tmp_path / "pol").mkdir()
    (tmp_path / "pol" / "types.yaml").write_text(BROKEN)
    (tmp_path / "live.json").write_text(json.dumps(LIVE))
    (tmp_path / "proposed.json").write_text(json.dumps(PROPOSED))
    return tmp_path


@pytest.mark.parametrize("where", ["pyproject", "config"])
@pytest.mark.parametrize("command", ["lint", "test"])
def test_with_no_path_the_configured_broken_policy_stops_lint_and_test_as_it_stops_review(
    repo: Path, where: str, command: str
) -> None:
    if where == "pyproject":
        (repo / "pyproject.toml").write_text('[tool.auditor]\npolicies = ["pol/"]\n')
        flags: list[str] = []
    else:
        (repo / "ci").mkdir()
        (repo / "ci" / "auditor.toml").write_text('policies = ["../pol"]\n')  # from its folder
        flags = ["--config", "ci/auditor.toml"]
    code, out, err = auditor(repo, "policy", command, *flags)
    assert code == 2, out + err
    named = "pol/types.yaml" if where == "pyproject" else "ci/../pol/types.yaml"
    assert out.splitlines() == [f"{named}:3:12: error: {PROBLEM}"]
    assert _last(err) == (
        "auditor: exit 2: 1 error(s) in policy files (listed above); "
        f"checked the configured `policies`: {named.removesuffix('/types.yaml')}"
    )
    # what `review` of the same folder and configuration says of the same file
    argv = ["review", "proposed.json", "--against", "live.json", "--author", "dev@example.com"]
    code, out, err = auditor(repo, *argv, "--out", "o", *flags)
    assert code == 2
    assert f"types.yaml:3:12: error: {PROBLEM}" in err


def test_the_configured_policies_are_tested_and_named(tmp_path: Path) -> None:
    (tmp_path / "pk").mkdir()
    (tmp_path / "pk" / "g.yaml").write_text(GOOD)
    (tmp_path / "pk" / "g.tests.yaml").write_text(GOOD_TESTS)
    (tmp_path / "a.toml").write_text('policies = ["pk"]\n')
    code, out, err = auditor(tmp_path, "policy", "test", "--config", "a.toml")
    assert code == 0, out + err
    assert out.splitlines() == ["PASS pk/g.tests.yaml: sandbox off fails", "1 passed, 0 failed"]
    assert _last(err) == (
        "auditor: exit 0: all 1 test case(s) passed; checked the configured `policies`: pk"
    )
    code, out, err = auditor(tmp_path, "policy", "lint", "--config", "a.toml")
    assert (code, out) == (0, ""), err
    assert _last(err) == (
        "1 file(s), 1 rule(s): 0 error(s), 0 warning(s); checked the configured `policies`: pk"
    )


def test_with_no_configured_policies_the_shipped_packs_are_checked_and_said(
    tmp_path: Path,
) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.auditor]\nfail_on = "high"\n')
    code, out, err = auditor(tmp_path, "policy", "lint")
    assert (code, out) == (0, ""), err
    assert _last(err).endswith(f": 0 error(s), 0 warning(s); {SHIPPED}")


def test_a_path_given_is_checked_whatever_the_configuration_names(repo: Path) -> None:
    (repo / "pyproject.toml").write_text('[tool.auditor]\npolicies = ["pol/"]\n')
    (repo / "good.yaml").write_text(GOOD)
    code, out, err = auditor(repo, "policy", "lint", "good.yaml")
    assert (code, out, err) == (0, "", "1 file(s), 1 rule(s): 0 error(s), 0 warning(s)\n")


def test_policy_test_reads_the_config_file_it_is_given(tmp_path: Path) -> None:
    code, _, err = auditor(tmp_path, "policy", "test", "--config", "nope.toml")
    assert (code, err) == (2, "auditor: error: nope.toml: config file not found\n")


def test_a_policy_folder_reads_a_yaml_file_whose_suffix_is_upper_or_mixed_case(
    repo: Path,
) -> None:
    pack = repo / "pk"
    (pack / "sub").mkdir(parents=True)
    (pack / "a.yaml").write_text(GOOD.replace("G-1", "A-1"))
    (pack / "sub" / "b.Yml").write_text(GOOD.replace("G-1", "B-1"))
    (pack / "c.YAML").write_text(GOOD.replace("G-1", "C-1"))
    (pack / "c.Tests.YAML").write_text(GOOD_TESTS.replace("G-1", "C-1"))
    code, out, err = auditor(repo, "policy", "lint", "pk")
    assert (code, out) == (0, ""), err
    assert _last(err) == "3 file(s), 3 rule(s): 0 error(s), 0 warning(s)"
    code, out, err = auditor(repo, "policy", "test", "pk")
    assert code == 0, out + err
    assert out.splitlines()[0] == "PASS pk/c.Tests.YAML: sandbox off fails"
    argv = ["review", "proposed.json", "--against", "live.json", "--author", "dev@example.com"]
    code, out, err = auditor(repo, *argv, "--policy", "pk", "--out", "o", "-o", "json")
    assert code == 1, out + err
    findings = json.loads((repo / "o" / "findings.json").read_text())["findings"]
    assert sorted(f["rule_id"] for f in findings) == ["A-1", "B-1", "C-1"]
    # named alone, a test file in any case is one, its policy beside it in any case too
    # (review R42 #3: it was read as a policy, `unknown key tests`)
    code, out, err = auditor(repo, "policy", "test", "pk/c.Tests.YAML")
    assert (code, out.splitlines()[0]) == (0, "PASS pk/c.Tests.YAML: sandbox off fails"), err
    code, out, err = auditor(repo, "policy", "test", "pk/c.YAML")
    assert (code, out.splitlines()[0]) == (0, "PASS pk/c.Tests.YAML: sandbox off fails"), err
    code, out, err = auditor(repo, "policy", "lint", "pk/c.Tests.YAML")
    assert (code, out) == (0, ""), err
    # a broken one is named, never passed over
    (pack / "c.YAML").write_text(BROKEN)
    code, out, err = auditor(repo, "policy", "lint", "pk")
    assert code == 2
    assert out.splitlines() == [f"pk/c.YAML:3:12: error: {PROBLEM}"]


def test_a_test_file_named_alone_tests_the_policy_of_its_own_name_first(repo: Path) -> None:
    """Review R45 #4: beside `c.yaml`, a `c.YAML` (another file on a case-sensitive file
    system) was taken as `c.tests.yaml`'s policy: `unknown rule id G-1`."""
    pack = repo / "pk2"
    pack.mkdir()
    (pack / "c.yaml").write_text(GOOD)
    (pack / "c.YAML").write_text(GOOD.replace("G-1", "X-1"))
    (pack / "c.tests.yaml").write_text(GOOD_TESTS)
    code, out, err = auditor(repo, "policy", "test", "pk2/c.tests.yaml")
    assert (code, out.splitlines()[0]) == (0, "PASS pk2/c.tests.yaml: sandbox off fails"), out + err
