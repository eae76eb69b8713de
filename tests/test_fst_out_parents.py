"""A command that fails before it writes a report leaves no folder it made for its `--out`, nor
the parent folders it made on the way (review R56 F2: `--out new/x` removed `x` and left
`new/`), as a failed command without `--out` leaves no `reports/<run-id>/` nor `reports/`. A
folder that was there before, or holds a file, stays."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import pytest

from auditor.cli import cmd_run
from auditor.cli.outdir import hold_out_dir
from tests.conftest import run_cli

ROOT = Path(__file__).resolve().parent.parent
POLICY = ROOT / "tests" / "policies" / "valid" / "sample.yaml"
PROPOSED = ROOT / "examples" / "proposed-settings.yaml"

#: A run of a synced state at a time before its first revision: it fails (exit 2) once it holds
#: its report folder, before it writes a report.
BEFORE_ANY = ["run", "--offline", "-q", "--policy", str(POLICY), "--at", "2000-01-01"]


def folders(under: Path) -> list[str]:
    return sorted(str(p.relative_to(under)) for p in under.rglob("*"))


def test_a_run_that_fails_leaves_none_of_the_folders_it_made_for_its_out(
    env: dict[str, str], tmp_path: Path
) -> None:
    code, _, stderr = run_cli(["sync", "-q"], env, tmp_path)
    assert code == 0, stderr
    work = tmp_path / "work"
    work.mkdir()
    code, _, stderr = run_cli([*BEFORE_ANY, "--out", "new/deeper/x"], env, work)
    assert code == 2 and "is before the first stored settings revision" in stderr, stderr
    assert folders(work) == []


def test_a_folder_that_was_there_or_holds_a_file_stays(env: dict[str, str], tmp_path: Path) -> None:
    code, _, stderr = run_cli(["sync", "-q"], env, tmp_path)
    assert code == 0, stderr
    work = tmp_path / "work"
    (work / "had").mkdir(parents=True)
    (work / "had" / "notes.txt").write_text("mine\n")
    (work / "empty").mkdir()
    for out in ("had/made/x", "empty/made/x", "empty"):
        code, _, stderr = run_cli([*BEFORE_ANY, "--out", out], env, work)
        assert code == 2 and "is before the first stored settings revision" in stderr, stderr
    assert folders(work) == ["empty", "had", "had/notes.txt"]
    assert (work / "had" / "notes.txt").read_text() == "mine\n"


def test_a_review_that_fails_leaves_none_of_the_folders_it_made_for_its_out(
    tmp_path: Path,
) -> None:
    """`--against live --offline` with no state file: exit 2 once the folder is held."""
    argv = ["review", "--against", "live", str(PROPOSED), "--offline", "--state", "nothere.db"]
    code, _, stderr = run_cli([*argv, "--out", "new2/deeper/y"], {}, tmp_path)
    assert code == 2 and "no state file at" in stderr, stderr
    assert folders(tmp_path) == []


def test_a_parent_another_command_holds_as_its_out_stays(
    env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A (`--out new/a`) makes `new/`; B (`--out new`) holds it before writing its reports;
    then A fails: `new/` stays, held by B, so a third command C with `--out new` is refused
    (A removed it, and C wrote its reports into a new `new/` that B then wrote into too:
    review R65 MED-2)."""
    code, _, stderr = run_cli(["sync", "-q"], env, tmp_path)
    assert code == 0, stderr
    work = tmp_path / "work"
    work.mkdir()
    b_holds = contextlib.ExitStack()
    real = cmd_run._sync_and_audit

    def b_starts_then_a_fails(*args: Any) -> Any:  # (A holds new/a, which it made, and new/)
        b_holds.enter_context(hold_out_dir(work / "new"))
        return real(*args)

    monkeypatch.setattr(cmd_run, "_sync_and_audit", b_starts_then_a_fails)
    with b_holds:
        code, _, stderr = run_cli([*BEFORE_ANY, "--out", "new/a"], env, work)
        assert code == 2 and "is before the first stored settings revision" in stderr, stderr
        assert folders(work) == ["new"]
        monkeypatch.setattr(cmd_run, "_sync_and_audit", real)
        code, _, stderr = run_cli([*BEFORE_ANY[:-2], "--out", "new"], env, work)
        assert code == 2, stderr
        assert f"report folder {work / 'new'} is being written by another auditor" in stderr
    assert folders(work) == ["new"]


def test_an_out_through_dot_dot_never_removes_the_folder_that_was_there(
    env: dict[str, str], tmp_path: Path
) -> None:
    """`--out new/../had`, `had/` there and empty: the run fails, `had/` stays (it was taken
    for a folder the run made: review R65 LOW-2)."""
    code, _, stderr = run_cli(["sync", "-q"], env, tmp_path)
    assert code == 0, stderr
    work = tmp_path / "work"
    (work / "had").mkdir(parents=True)
    code, _, stderr = run_cli([*BEFORE_ANY, "--out", "new/../had"], env, work)
    assert code == 2 and "is before the first stored settings revision" in stderr, stderr
    assert "had" in folders(work)
