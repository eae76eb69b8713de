"""One report folder, one writer: a `run` or `review` whose `--out` another auditor command is
writing is refused at once (exit 2, one line naming the folder), before it removes or writes a
report there; two overlapping runs left a folder mixing both runs' reports, without a word.
`run --orgs` holds its folder and each organization's worker its own: none waits for another."""

from __future__ import annotations

import fcntl
import hashlib
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FIXED_NOW, run_cli

ROOT = Path(__file__).resolve().parent.parent
POLICY = ROOT / "tests" / "policies" / "valid" / "sample.yaml"
LIVE = ROOT / "examples" / "live-settings.yaml"
PROPOSED = ROOT / "examples" / "proposed-settings.yaml"


@contextmanager
def held(folder: Path) -> Iterator[None]:
    """`folder` held as another auditor command writing its reports holds it."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        yield
    finally:
        os.close(fd)


def _digests(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


def _busy(folder: Path) -> str:
    return (
        f"auditor: error: report folder {folder} is being written by another auditor command: "
        "wait for it to finish, or give this one another --out\n"
    )


COMMANDS = {
    "run": ["run", "--policy", str(POLICY)],
    "run-offline": ["run", "--offline", "--policy", str(POLICY)],
    "review": ["review", "--against", str(LIVE), str(PROPOSED), "--author", "a@example.com"],
}


@pytest.mark.parametrize("command", COMMANDS)
def test_a_folder_another_command_is_writing_is_refused_and_left_as_it_is(
    env: dict[str, str], tmp_path: Path, command: str
) -> None:
    out = tmp_path / "reports"
    code, _, stderr = run_cli(["run", "--policy", str(POLICY), "--out", str(out)], env, tmp_path)
    assert code in (0, 1), stderr
    before = _digests(out)
    assert "findings.sarif" in before
    with held(out):
        code, _, stderr = run_cli([*COMMANDS[command], "--out", str(out)], env, tmp_path)
        assert code == 2, stderr
        assert stderr == _busy(out)
        assert _digests(out) == before  # not one report removed or written
    code, _, stderr = run_cli([*COMMANDS[command], "--out", str(out)], env, tmp_path)
    assert code in (0, 1), stderr  # once the other command is done, the folder is free


def test_a_run_holds_its_folder_until_its_reports_are_written(
    env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A second run (of another state file) and a review started while a run writes its
    reports into the same folder are refused; the folder holds the first run's reports only."""
    import auditor.cli.cmd_run as cmd_run

    out = tmp_path / "reports"
    other = {**env, "AUDITOR_STATE": str(tmp_path / "other.db")}
    second: list[tuple[int, str]] = []
    real = cmd_run.write_reports

    def write_reports(*args: Any, **kwargs: Any) -> Any:
        if not second:  # the first run's reports: the other commands start meanwhile
            for argv in (COMMANDS["run"], COMMANDS["review"]):
                code, _, stderr = run_cli([*argv, "--out", str(out), "-o", "md"], other, tmp_path)
                second.append((code, stderr))
        return real(*args, **kwargs)

    monkeypatch.setattr(cmd_run, "write_reports", write_reports)
    code, _, stderr = run_cli([*COMMANDS["run"], "--out", str(out)], env, tmp_path)
    assert code in (0, 1), stderr
    assert second == [(2, _busy(out)), (2, _busy(out))]
    assert sorted(p.name for p in out.iterdir()) == sorted(
        ["report.html", "report.md", "findings.json", "findings.sarif", "junit.xml"]
    )


def test_a_review_into_a_new_folder_that_fails_leaves_no_folder(
    env: dict[str, str], tmp_path: Path
) -> None:
    """The folder is made when the review starts (to hold it): a review that fails before
    writing a report removes it again, as before."""
    bad = tmp_path / "proposed.yaml"
    bad.write_text("a: [1\n")
    out = tmp_path / "new"
    argv = ["review", "--against", str(LIVE), str(bad), "--out", str(out)]
    code, _, stderr = run_cli(argv, env, tmp_path)
    assert code == 2, stderr
    assert not out.exists()


@pytest.fixture
def emulators() -> Iterator[list[Any]]:
    from auditor.emulator import start_emulator

    started = [start_emulator(seed=s, revisions=30, repos=3, now=FIXED_NOW) for s in (1, 2, 3)]
    try:
        yield started
    finally:
        for emu in started:
            emu.stop()


def _orgs(tmp_path: Path, emulators: list[Any]) -> tuple[Path, dict[str, str]]:
    blocks = [
        f'[[org]]\nname = "{name}"\nbase_url = "{emu.base_url}"\n'
        f'app_url = "{emu.app_url}"\ntoken_env = "TOKEN"\n'
        for name, emu in zip(("acme", "globex", "initech"), emulators, strict=True)
    ]
    path = tmp_path / "orgs.toml"
    path.write_text("\n".join(blocks))
    env = {"TOKEN": "demo-owner-token", "AUDITOR_STATE": str(tmp_path / "st" / "state.db")}
    return path, env


def test_run_orgs_workers_hold_their_own_folders_and_never_wait_for_each_other(
    emulators: list[Any], tmp_path: Path
) -> None:
    orgs, env = _orgs(tmp_path, emulators)
    out = tmp_path / "r"
    argv = ["run", "--orgs", str(orgs), "--out", str(out), "--workers", "3", "-q"]
    code, _, stderr = run_cli([*argv, "--policy", str(POLICY)], env, tmp_path)
    assert code in (0, 1), stderr
    for name in ("acme", "globex", "initech"):
        assert (out / name / "findings.sarif").is_file()
    # an organization's folder another command is writing: that one fails, the others go on,
    # and its reports are not removed (they were cleared before any worker held its folder)
    written = _digests(out / "globex")
    with held(out / "globex"):
        code, _, stderr = run_cli([*argv, "--policy", str(POLICY)], env, tmp_path)
    assert code == 2, stderr
    assert _digests(out / "globex") == written and written
    assert f"[globex] {_busy(out / 'globex').strip()}" in stderr
    assert "[acme] auditor: exit 1: " in stderr and "[initech] auditor: exit 1: " in stderr
    assert stderr.splitlines()[-1] == (
        "auditor: exit 2: 1 of 3 organization(s) could not be audited (globex)"
    )
    # the whole folder held: refused before any organization starts
    before = _digests(out / "acme")
    with held(out):
        code, _, stderr = run_cli([*argv, "--policy", str(POLICY)], env, tmp_path)
    assert code == 2 and stderr == _busy(out)
    assert _digests(out / "acme") == before
