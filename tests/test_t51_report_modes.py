"""T51 #1: a report written again, marked incomplete (an interrupt while the reports were
written, a full disk part-way), keeps the mode the earlier report of its name had, as every
report of a run does (README, the nightly job, step 4: "a `chmod 600 report.md` … lasts from
run to run"). The kept modes were forgotten when the first writing stopped, so the files
written again came back 0666 less the umask: private reports readable by every user."""

from __future__ import annotations

import io
import os
import signal
import stat
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import auditor.report
from auditor.cli import Context, main
from tests.conftest import FIXED_NOW, run_cli
from tests.test_reports_vs_state import fill_disk, orgs_file

REPORTS = {"report.html", "report.md", "findings.json", "findings.sarif", "junit.xml"}


@pytest.fixture(autouse=True)
def _sigint_and_umask() -> Iterator[None]:
    """SIGINT as Python's own handler (a suite started in the background has it ignored, and
    auditor keeps it so), and the usual umask 022, under which a new report is 0644."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    mask = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(mask)
        signal.signal(signal.SIGINT, previous)


def _modes(folder: Path) -> dict[str, int]:
    return {p.name: stat.S_IMODE(p.stat().st_mode) for p in folder.iterdir() if p.name in REPORTS}


def _private(folder: Path) -> None:
    """`chmod 600` every report of an earlier run, as a user keeping them private does."""
    for path in folder.iterdir():
        path.chmod(0o600)


def _signal_while_writing(monkeypatch: pytest.MonkeyPatch, report: str, signum: int) -> None:
    """`signum` sent to the process as it begins writing `report` (the first time only), from
    the thread writing it (an organization's worker, with --orgs): Ctrl-C, or a CI cancel."""
    real = auditor.report._write
    sent: list[str] = []

    def write(path: Path, name: str, *args: Any) -> None:
        if name == report and not sent:
            sent.append(name)
            os.kill(os.getpid(), signum)
        real(path, name, *args)

    monkeypatch.setattr(auditor.report, "_write", write)


@pytest.mark.parametrize("report", ["report.html", "findings.json", "junit.xml"])
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_an_interrupt_while_the_reports_are_written_keeps_their_modes(
    env: dict[str, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    report: str,
    signum: int,
) -> None:
    out = tmp_path / "r"
    code, _, stderr = run_cli(["run", "--out", str(out), "-q"], env, tmp_path)
    assert code in (0, 1), stderr
    _private(out)
    _signal_while_writing(monkeypatch, report, signum)
    code, _, stderr = run_cli(["run", "--out", str(out), "-q"], env, tmp_path)
    assert code == 128 + signum, stderr
    assert "partial reports in" in stderr
    assert "interrupted while the reports were written" in (out / "report.md").read_text()
    assert _modes(out) == {name: 0o600 for name in REPORTS - {"findings.sarif"}}


def test_a_full_disk_part_way_writes_the_reports_again_with_their_modes(
    env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the disk full at findings.sarif: report.md, findings.json and report.html kept 0600,
    # junit.xml (not yet written when the disk filled) came back 0644
    out = tmp_path / "r"
    code, _, stderr = run_cli(["run", "--out", str(out), "-q"], env, tmp_path)
    assert code in (0, 1), stderr
    _private(out)
    (out / "junit.xml").chmod(0o640)  # shared with the team's group
    fill_disk(monkeypatch, {"findings.sarif": {1}})
    code, _, stderr = run_cli(["run", "--out", str(out), "-q"], env, tmp_path)
    assert code == 2, stderr
    assert "written again, marked incomplete" in stderr
    modes = _modes(out)
    assert modes.pop("junit.xml") == 0o640
    assert modes == {name: 0o600 for name in modes}
    assert set(modes) >= {"report.md", "findings.json", "report.html"}


def test_an_interrupt_while_the_reports_are_written_again_keeps_their_modes(
    env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the disk full at findings.sarif, then Ctrl-C while junit.xml is written again: the
    # interrupt's write-up gives each report its earlier mode
    out = tmp_path / "r"
    code, _, stderr = run_cli(["run", "--out", str(out), "-q"], env, tmp_path)
    assert code in (0, 1), stderr
    _private(out)
    fill_disk(monkeypatch, {"findings.sarif": {1}})
    real = auditor.report._write
    seen: list[str] = []

    def write(path: Path, name: str, *args: Any) -> None:
        seen.append(name)
        if name == "junit.xml" and "findings.sarif" in seen and seen.count(name) == 1:
            os.kill(os.getpid(), signal.SIGINT)
        real(path, name, *args)

    monkeypatch.setattr(auditor.report, "_write", write)
    code, _, stderr = run_cli(["run", "--out", str(out), "-q"], env, tmp_path)
    assert code == 130, stderr
    modes = _modes(out)
    assert {"report.md", "findings.json", "junit.xml", "report.html"} <= set(modes)
    assert modes == {name: 0o600 for name in modes}


@pytest.mark.parametrize("report", ["report.html", "junit.xml"])
def test_orgs_an_interrupt_while_a_worker_writes_keeps_the_reports_modes(
    emu: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, report: str
) -> None:
    orgs, env = orgs_file(emu, tmp_path)
    root = tmp_path / "rep"
    argv = ["run", "--orgs", str(orgs), "--out", str(root), "-q"]
    code, _, stderr = run_cli(argv, env, tmp_path)
    assert code in (0, 1), stderr
    _private(root / "acme")
    _signal_while_writing(monkeypatch, report, signal.SIGINT)
    code, _, stderr = run_cli(argv, env, tmp_path)
    for thread in threading.enumerate():  # a worker goes on once the run has returned
        if thread.name.startswith("auditor-org-"):
            thread.join(timeout=60)
    assert code == 130, stderr
    if report != "junit.xml":  # the last one: its worker may finish it and the organization
        # with it before the interrupt is seen (then its reports are whole, as the README says)
        shown = (root / "acme" / "report.md").read_text()
        assert "interrupted while the reports were written" in shown
    modes = _modes(root / "acme")  # (findings.sarif too, when its worker finished first)
    assert REPORTS - {"findings.sarif"} <= set(modes) <= REPORTS
    assert modes == {name: 0o600 for name in modes}


def test_a_review_keeps_the_modes_of_the_earlier_review_s_reports(tmp_path: Path) -> None:
    # (a review writes its reports once; an interrupted one keeps what it wrote)
    from auditor.store import Store

    state = tmp_path / "state.db"
    Store.open(state, create=True).close()
    examples = Path(__file__).resolve().parent.parent / "examples"
    proposed = examples / "proposed-settings.yaml"
    out = tmp_path / "review"
    argv = ["review", str(proposed), "--against", str(proposed), "--out", str(out), "-q"]
    argv += ["--state", str(state), "--author", "a@example.com", "--soft-fail"]

    def review() -> str:
        err = io.StringIO()
        ctx = Context(env={}, stdout=io.StringIO(), stderr=err, clock=lambda: FIXED_NOW, cwd="/")
        main(argv, ctx)
        return err.getvalue()

    stderr = review()
    assert (out / "report.md").is_file(), stderr
    _private(out)
    stderr = review()
    assert (out / "report.md").is_file(), stderr
    modes = _modes(out)
    assert modes and modes == {name: 0o600 for name in modes}


def test_reports_written_again_because_the_run_was_not_recorded_keep_their_modes(
    env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """All five written, then the store refuses to record the run complete: they are written
    again, saying so, each with its predecessor's mode (kept till the command ends)."""
    from tests.test_reports_vs_state import refuse_completion

    out = tmp_path / "r"
    code, _, stderr = run_cli(["run", "--out", str(out), "-q"], env, tmp_path)
    assert code in (0, 1), stderr
    _private(out)
    refuse_completion(monkeypatch)
    code, _, stderr = run_cli(["run", "--out", str(out), "-q"], env, tmp_path)
    assert code == 2, stderr
    assert "could not record this run" in (out / "report.md").read_text()
    modes = _modes(out)
    assert {"report.md", "findings.json", "report.html"} <= set(modes)
    assert modes == {name: 0o600 for name in modes}
