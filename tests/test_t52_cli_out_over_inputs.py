"""T52 #2: `--out` never overwrites the command's own inputs. A proposed `out/findings.json`, a
policy `out/report.md` or `--state out/report.html` was read, then replaced by auditor's
report of that name (the state file's whole history by HTML), and the next run cleared it as
one of its own reports. Every command that writes reports now refuses such an input first:
exit 2, one line naming both paths, nothing read, written or removed."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import run_cli

REPO = Path(__file__).resolve().parents[1]
POLICY = REPO / "tests" / "policies" / "valid" / "sample.yaml"
LIVE = REPO / "examples" / "live-settings.yaml"
PROPOSED = REPO / "examples" / "proposed-settings.yaml"


@pytest.fixture(autouse=True)
def _in_tmp_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Files named as a user names them, from the current folder."""
    monkeypatch.chdir(tmp_path)


def _digests(folder: Path) -> dict[str, str]:
    """Every file under `folder` (a symlink by where it points), with its content's hash."""
    return {
        str(p.relative_to(folder)) + (f" -> {p.readlink()}" if p.is_symlink() else ""): (
            hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else ""
        )
        for p in sorted(folder.rglob("*"))
    }


def _refused(argv: list[str], env: dict[str, str], tmp_path: Path, line: str) -> None:
    """`argv` exits 2 with `line` as its only line, and changes no file under `tmp_path`."""
    before = _digests(tmp_path)
    code, out, err = run_cli(argv, env, tmp_path)
    assert (code, out, err) == (2, "", f"auditor: error: {line}\n")
    assert _digests(tmp_path) == before


def _why(folder: str = "out") -> str:
    return (
        f", a file this command writes in its report folder {folder}: the input would be "
        "replaced by a report; give --out another folder, or move the file"
    )


def test_a_proposed_file_named_as_a_report_is_refused_not_replaced(tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "findings.json").write_text('{"sandbox": {"enabled": true}}\n')
    argv = ["review", "out/findings.json", "--against", str(LIVE), "--out", "out"]
    line = "PROPOSED out/findings.json is findings.json" + _why()
    _refused(argv, {}, tmp_path, line)
    # (the settings are still there: a review into another folder reads them)
    code, _, err = run_cli([*argv[:-1], "elsewhere"], {}, tmp_path)
    assert code in (0, 1), err


def test_an_against_file_linked_to_a_report_is_refused(tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    shutil.copy(LIVE, tmp_path / "out" / "junit.xml")
    (tmp_path / "live.yaml").symlink_to("out/junit.xml")
    argv = ["review", str(PROPOSED), "--against", "live.yaml", "--out", "out"]
    _refused(argv, {}, tmp_path, "--against live.yaml is a symlink to out/junit.xml" + _why())


@pytest.mark.parametrize("how", ["file", "symlink", "in a folder", "folder linked"])
def test_a_policy_named_as_a_report_is_refused_not_replaced(tmp_path: Path, how: str) -> None:
    """A policy file in the report folder under a report's name, or reached through a
    symlink (itself, or one in a `--policy` folder) to one there."""
    out = tmp_path / "out"
    out.mkdir()
    shutil.copy(POLICY, out / "report.md")
    given, line = {
        "file": ("out/report.md", "--policy out/report.md is report.md"),
        "symlink": ("p.yaml", "--policy p.yaml is a symlink to out/report.md"),
        "in a folder": ("pk", "--policy pk/p.yaml is a symlink to out/report.md"),
        "folder linked": ("pk/linked/report.md", "--policy pk/linked/report.md is report.md"),
    }[how]
    (tmp_path / "p.yaml").symlink_to("out/report.md")
    (tmp_path / "pk").mkdir()
    (tmp_path / "pk" / "p.yaml").symlink_to("../out/report.md")
    (tmp_path / "pk" / "linked").symlink_to("../out")
    argv = ["review", str(PROPOSED), "--against", str(LIVE), "--policy", given, "--out", "out"]
    _refused(argv, {}, tmp_path, line + _why())


@pytest.mark.parametrize("flag", ["--waivers", "--readiness-model", "--config", "--token-file"])
def test_every_other_file_input_named_as_a_report_is_refused(tmp_path: Path, flag: str) -> None:
    (tmp_path / "out").mkdir()
    # (a config file and a token file are read first, to know --out: these are valid)
    (tmp_path / "out" / "findings.sarif").write_text("# kept\n" if flag == "--config" else "kept\n")
    argv = ["run", "--offline", flag, "out/findings.sarif", "--out", "out"]
    _refused(argv, {}, tmp_path, f"{flag} out/findings.sarif is findings.sarif" + _why())


def test_a_state_file_named_as_a_report_keeps_its_history(
    env: dict[str, str], tmp_path: Path
) -> None:
    """`run --state out/report.html --out out`: the stored history was replaced by HTML."""
    assert run_cli(["sync", "--no-usage"], env, tmp_path)[0] == 0
    (tmp_path / "out").mkdir()
    shutil.move(tmp_path / "state.db", tmp_path / "out" / "report.html")
    env = {**env, "AUDITOR_STATE": "out/report.html"}
    line = "the state file out/report.html is report.html" + _why()
    _refused(["run", "--offline", "--out", "out"], env, tmp_path, line)
    _refused(["run", "--out", "out"], env, tmp_path, line)  # (no sync into it either)
    argv = ["review", str(PROPOSED), "--out", "out"]
    _refused(argv, env, tmp_path, line)
    # the history is whole: a run into another folder audits it
    code, _, err = run_cli(["run", "--offline", "--no-usage", "--out", "r"], env, tmp_path)
    assert code in (0, 1), err


def test_run_orgs_refuses_an_input_named_as_an_organizations_report(tmp_path: Path) -> None:
    (tmp_path / "orgs.toml").write_text(
        '[[org]]\nname = "acme"\nbase_url = "http://127.0.0.1:9"\ntoken_env = "ACME_TOKEN"\n'
    )
    (tmp_path / "out" / "acme").mkdir(parents=True)
    shutil.copy(POLICY, tmp_path / "out" / "acme" / "report.md")
    argv = ["run", "--orgs", "orgs.toml", "--policy", "out/acme/report.md", "--out", "out"]
    env = {"ACME_TOKEN": "acme-token-0123456789abcdef"}
    _refused(argv, env, tmp_path, "--policy out/acme/report.md is report.md" + _why("out/acme"))
    shutil.move(tmp_path / "out" / "acme" / "report.md", tmp_path / "out" / "summary.json")
    argv[4] = "out/summary.json"
    _refused(argv, env, tmp_path, "--policy out/summary.json is summary.json" + _why())


def test_demo_refuses_a_state_file_named_as_a_report(tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    argv = ["demo", "--revisions", "5", "--repos", "1", "--out", "out", "--state", "out/report.md"]
    code, _, err = run_cli(argv, {}, tmp_path)
    assert code == 2, err
    assert err.splitlines()[-1] == "auditor: error: the state file out/report.md is report.md" + (
        _why()
    )
    assert list((tmp_path / "out").iterdir()) == []  # no state file made there either


def test_inputs_beside_the_reports_under_other_names_are_read(tmp_path: Path) -> None:
    """The check is about the names auditor writes: a policy and both settings files in the
    report folder under their own names are reviewed, and stay as they were."""
    out = tmp_path / "out"
    out.mkdir()
    for source in (POLICY, LIVE, PROPOSED):
        shutil.copy(source, out / source.name)
    before = _digests(out)
    argv = ["review", "out/proposed-settings.yaml", "--against", "out/live-settings.yaml"]
    code, _, err = run_cli([*argv, "--policy", "out/sample.yaml", "--out", "out"], {}, tmp_path)
    assert code in (0, 1), err
    after: dict[str, Any] = _digests(out)
    assert {k: after[k] for k in before} == before


TOKEN = "tok-0123456789abcdef-not-a-report"


@pytest.mark.parametrize("source", ["--config", "pyproject.toml", "a symlink", "a config folder"])
def test_a_configured_token_file_named_as_a_report_is_refused(tmp_path: Path, source: str) -> None:
    """A `token_file` of the config file (or `[tool.auditor]`) is read as `--token-file` is:
    a report of its name replaced the token, and the next run read the report as one. The
    path is named, never the token."""
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "report.md").write_text(TOKEN + "\n")
    argv = ["run", "--offline", "--out", "out"]
    given, key = "out/report.md", "out/report.md"
    if source == "pyproject.toml":
        (tmp_path / "pyproject.toml").write_text(f'[tool.auditor]\ntoken_file = "{key}"\n')
    else:
        if source == "a symlink":
            (tmp_path / "tok").symlink_to("out/report.md")
            given = key = "tok"
        if source == "a config folder":  # (relative to the config file's folder)
            key, given = "../out/report.md", "ci/../out/report.md"
        (tmp_path / "ci").mkdir()
        (tmp_path / "ci" / "a.toml").write_text(f'token_file = "{key}"\n')
        argv += ["--config", "ci/a.toml"] if source == "a config folder" else []
        if source != "a config folder":
            (tmp_path / "a.toml").write_text(f'token_file = "{key}"\n')
            argv += ["--config", "a.toml"]
    how = "is a symlink to out/report.md" if source == "a symlink" else "is report.md"
    _refused(argv, {}, tmp_path, f"the token file {given} {how}" + _why())


def test_only_the_token_file_read_is_an_input(tmp_path: Path) -> None:
    """`--token-file`, then AUDITOR_TOKEN, come before a config file's `token_file`: the file
    not read is no input (the run goes on to its next check), the one read is named."""
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "report.md").write_text(TOKEN + "\n")
    (tmp_path / "a.toml").write_text('token_file = "out/report.md"\n')
    argv = ["run", "--offline", "--config", "a.toml", "--out", "out"]
    code, out, err = run_cli(argv, {"AUDITOR_TOKEN": TOKEN}, tmp_path)
    assert (code, out) == (2, "")
    assert err.startswith("auditor: error: no state file at "), err
    (tmp_path / "tok").symlink_to("out/junit.xml")
    (tmp_path / "out" / "junit.xml").write_text(TOKEN + "\n")
    line = "--token-file tok is a symlink to out/junit.xml" + _why()
    _refused([*argv, "--token-file", "tok"], {}, tmp_path, line)


@pytest.mark.parametrize("report", ["acme/report.md", "summary.json"])
def test_run_orgs_refuses_an_organizations_token_file_named_as_a_report(
    tmp_path: Path, report: str
) -> None:
    """Each organization's `token_file` (relative to the --orgs file) is an input of the run."""
    (tmp_path / "out" / "acme").mkdir(parents=True)
    (tmp_path / "out" / report).write_text(TOKEN + "\n")
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "orgs.toml").write_text(
        '[[org]]\nname = "globex"\nbase_url = "http://127.0.0.1:9"\ntoken_env = "GLOBEX"\n'
        f'[[org]]\nname = "acme"\nbase_url = "http://127.0.0.1:9"\ntoken_file = "../out/{report}"\n'
    )
    argv = ["run", "--orgs", "conf/orgs.toml", "--policy", str(POLICY), "--out", "out"]
    folder = "out/acme" if report.startswith("acme/") else "out"
    line = f"the token file of organization acme conf/../out/{report} is {report.split('/')[-1]}"
    _refused(argv, {"GLOBEX": "globex-token-0123456789abcdef"}, tmp_path, line + _why(folder))
