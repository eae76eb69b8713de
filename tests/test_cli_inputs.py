"""Values a CI job hands the command line by mistake, through the real command line: an empty
variable or flag value (an unset CI variable expands to one), bytes that are not UTF-8, a flag
given twice, a config file nested too deeply or not a regular file, and a `--state` that is no
state file. Each is said (a warning, or exit 2 with one line naming the flag, variable or
file), never an unexpected error and never silently read as something else."""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from auditor.cli.common import parse_at
from auditor.emulator import start_emulator
from auditor.errors import UsageError
from tests.conftest import FIXED_NOW, OWNER_TOKEN, emulator_env, run_cli

REPO = Path(__file__).resolve().parent.parent

POLICY = """rules:
  - id: T-001
    title: sandbox on
    severity: high
    target: settings
    assert: {path: sandbox.enabled, equals: true}
"""


def usage_error(argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """The last line of a usage error (argparse writes it to the process's stderr), exit 2."""
    code, _, _ = run_cli(argv, {}, tmp_path)
    assert code == 2
    return capsys.readouterr().err.splitlines()[-1]


@pytest.fixture
def emu() -> Iterator[Any]:
    with start_emulator(tokens={OWNER_TOKEN: "owner"}, now=FIXED_NOW, revisions=30, repos=4) as e:
        yield e


@pytest.fixture
def env(emu: Any, tmp_path: Path) -> dict[str, str]:
    return emulator_env(emu, tmp_path / "state.db")


def test_an_empty_app_url_is_said_on_stderr_and_in_every_report(
    env: dict[str, str], tmp_path: Path
) -> None:
    assert run_cli(["sync", "--no-usage"], env, tmp_path)[0] == 0
    code, _, err = run_cli(
        ["run", "--no-usage", "--soft-fail", "--out", "r", "-o", "json,md"],
        {**env, "AUDITOR_APP_URL": ""},
        tmp_path,
    )
    assert code == 0, err
    assert "auditor: warning: AUDITOR_APP_URL is set but empty: read as not set" in err
    assert "auditor: warning: readiness reports not synced: no app URL is configured" in err
    quality = json.loads((tmp_path / "r" / "findings.json").read_text())["data_quality"]
    assert [w["path"] for w in quality] == ["readiness reports"]
    assert "stored reports are as an earlier sync left them" in quality[0]["problem"]
    assert "not synced: no app URL is configured" in (tmp_path / "r" / "report.md").read_text()


def test_a_policy_file_name_that_is_not_utf8_is_kept_escaped(
    env: dict[str, str], tmp_path: Path
) -> None:
    assert run_cli(["sync", "--no-usage"], env, tmp_path)[0] == 0
    folder = tmp_path / "pol"
    folder.mkdir()
    (folder / os.fsdecode(b"b\xe9.yaml")).write_text(POLICY.replace("T-001", "T-002"))
    (folder / "ok.yaml").write_text(POLICY)
    code, _, err = run_cli(
        ["run", "--offline", "--no-usage", "--policy", "pol", "--out", "r"], env, tmp_path
    )
    assert code in (0, 1), err
    assert "unexpected" not in err
    with closing(sqlite3.connect(tmp_path / "state.db")) as db, db:
        (hashes,) = db.execute("SELECT policy_hashes FROM runs").fetchone()
    assert sorted(json.loads(hashes)) == ["pol/b\\xe9.yaml", "pol/ok.yaml"]


@pytest.mark.parametrize("flag", ["--at", "--out", "--policy", "--waivers", "--state", "--config"])
def test_an_empty_flag_value_is_a_usage_error_naming_the_flag(
    tmp_path: Path, flag: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (
        usage_error(["run", "--offline", flag, ""], tmp_path, capsys)
        == f"auditor run: error: argument {flag}: expected a value, got an empty one"
    )
    assert not list(tmp_path.iterdir())  # nothing written, in the current folder least of all


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        (["review", "p.yaml", "--offline", "--author", os.fsdecode(b"a\xff@b.c")], "--author"),
        (["run", "--offline", "--org", os.fsdecode(b"org\xff")], "--org"),
    ],
)
def test_a_text_flag_that_is_not_utf8_is_a_usage_error(
    tmp_path: Path, argv: list[str], flag: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert usage_error(argv, tmp_path, capsys).endswith(
        f"argument {flag}: not UTF-8 text (it holds a byte that no UTF-8 character starts with)"
    )


def test_a_variable_that_is_not_utf8_is_an_error_naming_it(tmp_path: Path) -> None:
    env = {"AUDITOR_ORG": os.fsdecode(b"org\xff"), "AUDITOR_STATE": str(tmp_path / "s.db")}
    code, _, err = run_cli(["run", "--offline"], env, tmp_path)
    assert code == 2
    assert err.splitlines()[-1] == (
        "auditor: error: AUDITOR_ORG: not UTF-8 text (it holds a byte that no UTF-8 character "
        "starts with)"
    )


@pytest.mark.parametrize("flag", ["--waivers", "--config", "--at", "--state"])
def test_a_single_valued_flag_given_twice_is_a_usage_error(
    tmp_path: Path, flag: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (
        usage_error(["run", "--offline", flag, "a", flag, "b"], tmp_path, capsys)
        == f"auditor run: error: argument {flag}: given more than once; give it once"
    )


def test_the_pre_commit_hooks_report_flags_can_be_overridden_in_its_args(tmp_path: Path) -> None:
    """The hook's `entry` passes `--output md,json --out .auditor/pre-commit-review`, and
    pre-commit puts the user's `args:` after it: `--output md --out other` there is taken
    (a refusal of the second value blocked every commit of such a setup)."""
    hooks = {h["id"]: h for h in YAML(typ="safe").load(REPO / ".pre-commit-hooks.yaml")}
    entry = hooks["auditor-review"]["entry"].split()[1:]  # after `auditor`
    assert "--output" in entry and "--out" in entry
    examples = REPO / "examples"
    args = [str(examples / "proposed-settings.yaml"), "--against"]
    args += [str(examples / "live-settings.yaml"), "--author", "a@b.c"]
    code, _, err = run_cli([*entry, *args, "--output", "md", "--out", "other"], {}, tmp_path)
    assert code == 1, err  # findings introduced: the gate, not a usage error
    assert sorted(p.name for p in (tmp_path / "other").iterdir()) == ["report.md"]
    assert not (tmp_path / ".auditor").exists()


def test_policy_given_twice_is_still_two_policies(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run_cli(["run", "--offline", "--policy", "a", "--policy", "b"], {}, tmp_path)
    assert code == 2  # the two are read: neither exists
    assert "given more than once" not in err + capsys.readouterr().err
    assert "/a:1:1: " in err and "/b:1:1: " in err, err


def _deep(levels: int) -> str:
    return "diff_keys = " + "[" * levels + "]" * levels + "\n"


def test_a_config_nested_too_deeply_is_an_error_naming_the_file(tmp_path: Path) -> None:
    (tmp_path / "d.toml").write_text(_deep(500))
    code, _, err = run_cli(["run", "--offline", "--config", "d.toml"], {}, tmp_path)
    assert code == 2
    assert err.splitlines()[-1] == (
        "auditor: error: d.toml: invalid TOML: arrays or tables nested too deeply to read"
    )
    (tmp_path / "pyproject.toml").write_text("[tool.auditor]\n" + _deep(500))
    code, _, err = run_cli(["history"], {}, tmp_path)
    assert code == 2
    assert "pyproject.toml: invalid TOML: arrays or tables nested too deeply" in err
    assert "unexpected" not in err


@pytest.mark.parametrize("kind", ["fifo", "folder", "dangling link"])
def test_a_pyproject_that_is_no_regular_file_is_an_error(tmp_path: Path, kind: str) -> None:
    where = tmp_path / "pyproject.toml"
    if kind == "fifo":
        os.mkfifo(where)
    elif kind == "folder":
        where.mkdir()
    else:
        where.symlink_to(tmp_path / "nowhere.toml")
    code, _, err = run_cli(["history", "--state", "s.db"], {}, tmp_path)
    assert code == 2
    assert err.splitlines()[-1].startswith(
        "auditor: error: pyproject.toml: cannot read config file: "
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('out-dir = "x"\nout_dir = "y"\n', "c.toml:2:1: 'out_dir' and 'out-dir' are the same key"),
        ("timeout = true\n", "c.toml:1:1: timeout: expected a positive number, got true"),
        ("timeout = 1979-05-27\n", "c.toml:1:1: timeout: expected a number, got 1979-05-27"),
        ("max_pages = inf\n", "c.toml:1:1: max_pages: expected a positive integer, got inf"),
    ],
)
def test_config_messages_name_both_spellings_and_show_toml_values(
    tmp_path: Path, text: str, expected: str
) -> None:
    (tmp_path / "c.toml").write_text(text)
    code, _, err = run_cli(["run", "--offline", "--config", "c.toml"], {}, tmp_path)
    assert code == 2
    assert err.splitlines()[-1].startswith(f"auditor: error: {expected}"), err


def test_every_date_only_at_means_the_end_of_that_day() -> None:
    now = datetime(2027, 1, 1, tzinfo=UTC)
    end = datetime(2026, 10, 1, 23, 59, 59, 999999, tzinfo=UTC)
    assert parse_at("2026-10-01", now) == parse_at("20261001", now) == end
    for week in ("2026-W40", "2026W40", "2026-W40-3", "2026-W40-1T10:00"):
        with pytest.raises(UsageError, match="a week date is not accepted"):
            parse_at(week, now)


def test_a_state_option_naming_another_file_leaves_no_lock_file(tmp_path: Path) -> None:
    (tmp_path / "live-settings.yaml").write_text("sandbox: {enabled: true}\n")
    for argv in (["history"], ["run", "--offline", "--out", "r"]):
        code, _, err = run_cli([*argv, "--state", "live-settings.yaml"], {}, tmp_path)
        assert code == 2
        assert "is not a usable auditor state file" in err
        assert not (tmp_path / "live-settings.yaml.lock").exists()
