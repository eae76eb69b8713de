"""What a run's reports say about the state file is true: a report that claims a complete run is
left only when the state file holds the run complete (an interrupt just after it was recorded,
a disk that fills while the reports are written)."""

from __future__ import annotations

import io
import json
import os
import signal
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import closing
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

import auditor.store.database
from auditor.cli import Context, main
from auditor.emulator import start_emulator
from auditor.errors import StoreError
from tests.conftest import FIXED_NOW, OWNER_TOKEN, emulator_env

REPORT_FILES = {"report.html", "report.md", "findings.json", "findings.sarif", "junit.xml"}
NIGHT = timedelta(days=1)


@pytest.fixture(autouse=True)
def _sigint_as_in_a_terminal() -> Iterator[None]:
    """A job started in the background (`cmd &`, as a CI script may start the suite) has
    SIGINT ignored, and auditor keeps a signal ignored that it was started with ignored: these
    tests interrupt with SIGINT as Ctrl-C does, so it starts as Python's own handler."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def run_cli(argv: list[str], env: dict[str, str], cwd: Path, now: Any) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    ctx = Context(env=env, stdout=out, stderr=err, clock=lambda: now, cwd=str(cwd))
    return main(argv, ctx), out.getvalue(), err.getvalue()


@pytest.fixture
def emu() -> Iterator[Any]:
    with start_emulator(tokens={OWNER_TOKEN: "owner"}, now=FIXED_NOW, revisions=80, repos=8) as e:
        yield e


@pytest.fixture
def env(emu: Any, tmp_path: Path) -> dict[str, str]:
    return emulator_env(emu, tmp_path / "state.db")


def findings(out: Path) -> dict[str, Any]:
    return json.loads((out / "findings.json").read_text())


def new_findings(out: Path) -> int:
    return sum(f["lifecycle"] == "new" for f in findings(out)["findings"])


def runs(state: Path) -> dict[str, int]:
    with closing(sqlite3.connect(state)) as db, db:
        return dict(db.execute("SELECT run_id, complete FROM runs").fetchall())


def orgs_file(emu: Any, tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """An `--orgs` file of one organization, and its environment."""
    path = tmp_path / "orgs.toml"
    path.write_text(
        f'[[org]]\nname = "acme"\nbase_url = "{emu.base_url}"\n'
        f'app_url = "{emu.app_url}"\ntoken_env = "ACME_TOKEN"\n'
    )
    return path, {"ACME_TOKEN": OWNER_TOKEN, "AUDITOR_STATE": str(tmp_path / "orgs.db")}


def first_night(emu: Any, env: dict[str, str], tmp_path: Path) -> None:
    """Night 1 sets the baseline; revisions added after it open findings night 2 calls new."""
    code, _, stderr = run_cli(["run", "--out", str(tmp_path / "n1")], env, tmp_path, FIXED_NOW)
    assert code == 1, stderr
    emu.add_revisions(30)


def interrupt_once_recorded(monkeypatch: pytest.MonkeyPatch, signum: int) -> None:
    """`signum` sent to the process right after the state file committed the run complete:
    the last instant before `auditor run` returns."""
    real = auditor.store.database.Store.complete_run

    def complete_then_signal(self: Any, run_id: str) -> None:
        real(self, run_id)
        os.kill(os.getpid(), signum)

    monkeypatch.setattr(auditor.store.database.Store, "complete_run", complete_then_signal)


def test_an_interrupt_just_after_the_run_is_recorded_leaves_its_reports_as_they_stand(
    emu: Any, env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A cancel 20-40 ms late rewrote the reports "not recorded in the state file" and removed
    # findings.sarif, while the state held the run complete: the next night compared with it,
    # so that night's new findings were never new in any complete report.
    first_night(emu, env, tmp_path)
    out = tmp_path / "n2"
    with monkeypatch.context() as patch:
        interrupt_once_recorded(patch, signal.SIGINT)
        code, _, stderr = run_cli(["run", "--out", str(out)], env, tmp_path, FIXED_NOW + NIGHT)
    assert code == 130, stderr
    assert runs(tmp_path / "state.db")["20261102T120000Z"] == 1
    assert {p.name for p in out.iterdir()} == REPORT_FILES  # findings.sarif too
    night2 = findings(out)
    assert night2["complete"] is True and not night2["not_evaluated"]
    assert new_findings(out) > 0
    assert "not recorded" not in (out / "report.md").read_text()
    lines = stderr.strip().splitlines()
    assert lines[-2] == (
        "auditor: interrupted after the run was recorded complete in the state file: "
        f"its reports in {out} stand"
    )
    assert lines[-1] == "auditor: exit 130: interrupted"
    assert "findings.sarif not written" not in stderr
    # night 3 compares with night 2, which reported those findings as new, complete
    code, _, stderr = run_cli(
        ["run", "--out", str(tmp_path / "n3")], env, tmp_path, FIXED_NOW + 2 * NIGHT
    )
    assert code == 1, stderr
    assert new_findings(tmp_path / "n3") == 0


def test_a_sigterm_before_the_run_is_recorded_complete_is_held_until_it_is(
    emu: Any, env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A signal while the run is being recorded waits for the record's end, then ends the run:
    # the reports agree with what the state file says, whichever side of the commit it came.
    first_night(emu, env, tmp_path)
    real = auditor.store.database.Store.complete_run

    def signal_then_complete(self: Any, run_id: str) -> None:
        os.kill(os.getpid(), signal.SIGTERM)
        real(self, run_id)

    monkeypatch.setattr(auditor.store.database.Store, "complete_run", signal_then_complete)
    out = tmp_path / "n2"
    code, _, stderr = run_cli(["run", "--out", str(out)], env, tmp_path, FIXED_NOW + NIGHT)
    assert code == 143, stderr
    assert runs(tmp_path / "state.db")["20261102T120000Z"] == 1
    assert findings(out)["complete"] is True
    assert (out / "findings.sarif").is_file()
    assert stderr.strip().splitlines()[-1] == "auditor: exit 143: terminated (SIGTERM)"


def test_orgs_an_interrupt_once_an_organization_is_recorded_leaves_its_reports(
    emu: Any, env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `run --orgs`: the worker records its organization complete while the main thread takes
    # the interrupt; that organization's reports were rewritten "not recorded" all the same.
    orgs, env = orgs_file(emu, tmp_path)
    root = tmp_path / "rep"
    interrupt_once_recorded(monkeypatch, signal.SIGINT)
    code, _, stderr = run_cli(
        ["run", "--orgs", str(orgs), "--out", str(root)], env, tmp_path, FIXED_NOW
    )
    assert code == 130, stderr
    acme = findings(root / "acme")
    assert acme["complete"] is True, acme["not_evaluated"]
    assert (root / "acme" / "findings.sarif").is_file()
    assert set(runs(tmp_path / "orgs-acme.db").values()) == {1}
    summary = json.loads((root / "summary.json").read_text())
    (row,) = summary["organizations"]
    assert "recorded complete" in row["reason"]


def test_orgs_an_organization_written_up_as_interrupted_is_never_recorded_complete(
    emu: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The interrupt came while the organization's worker was about to write its reports; the
    # main thread wrote them up "not recorded", and the worker then wrote them complete and
    # recorded the run complete.
    import auditor.cli.cmd_run

    orgs, env = orgs_file(emu, tmp_path)
    root = tmp_path / "rep"
    real = auditor.cli.cmd_run.with_report_options

    def interrupted_meanwhile(*args: Any) -> Any:
        if threading.current_thread().name.startswith("auditor-org-"):
            os.kill(os.getpid(), signal.SIGTERM)
            deadline = time.monotonic() + 60
            while not (root / "summary.json").exists() and time.monotonic() < deadline:
                time.sleep(0.01)
        return real(*args)

    monkeypatch.setattr(auditor.cli.cmd_run, "with_report_options", interrupted_meanwhile)
    code, _, stderr = run_cli(
        ["run", "--orgs", str(orgs), "--out", str(root)], env, tmp_path, FIXED_NOW
    )
    for thread in threading.enumerate():  # the worker goes on once the summary is written
        if thread.name.startswith("auditor-org-"):
            thread.join(timeout=60)
    assert code == 143, stderr
    assert set(runs(tmp_path / "orgs-acme.db").values()) == {0}
    acme = findings(root / "acme")
    assert acme["complete"] is False
    assert not (root / "acme" / "findings.sarif").exists()


def fill_disk(monkeypatch: pytest.MonkeyPatch, fail: dict[str, set[int]]) -> dict[str, int]:
    """Writes of report `name` that fail with ENOSPC, as on a full disk: on its n-th writing
    for each n in `fail[name]` (1 = its first), the temporary file's descriptor is pointed at
    /dev/full, so the OS refuses the write. Gives how often each was written."""
    real = os.fdopen
    seen: dict[str, int] = {}

    def fdopen(fd: int, *args: Any, **kwargs: Any) -> Any:
        try:
            name = Path(os.readlink(f"/proc/self/fd/{fd}")).name
        except OSError:
            name = ""
        for report, nths in fail.items():
            if name.startswith(f".{report}.") and name.endswith(".tmp"):
                seen[report] = seen.get(report, 0) + 1
                if seen[report] in nths:
                    full = os.open("/dev/full", os.O_WRONLY)
                    os.dup2(full, fd)
                    os.close(full)
        return real(fd, *args, **kwargs)

    monkeypatch.setattr(os, "fdopen", fdopen)
    return seen


def test_a_disk_full_part_way_leaves_no_report_claiming_a_complete_run(
    emu: Any, env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The disk filled at findings.sarif: report.html, report.md and findings.json stayed, saying
    # `complete: true` (the job summary clean) while the state held the run incomplete.
    first_night(emu, env, tmp_path)
    out = tmp_path / "n2"
    with monkeypatch.context() as patch:
        seen = fill_disk(patch, {"findings.sarif": {1}})
        code, stdout, stderr = run_cli(["run", "--out", str(out)], env, tmp_path, FIXED_NOW + NIGHT)
    assert seen["findings.sarif"] == 2
    assert code == 2, stderr
    assert runs(tmp_path / "state.db")["20261102T120000Z"] == 0
    assert {p.name for p in out.iterdir()} == REPORT_FILES  # written again, all of them
    night2 = findings(out)
    assert night2["complete"] is False
    assert night2["not_evaluated"] == []  # every result is there: only the outputs fell short
    (why,) = night2["output_notes"]
    assert why.startswith("the run is not recorded complete in the state file: the reports")
    assert f"(cannot write {out / 'findings.sarif'}: No space left on device)" in why
    assert "not recorded complete in the state file" in (out / "report.md").read_text()
    # every result is there: no "1 item(s) not evaluated" (T73 LOW-1)
    whole = (
        "the run is not recorded complete in the state file (every result of the evaluation "
        "is here)"
    )
    assert f"> **Incomplete:** {whole}." in (out / "report.md").read_text()
    assert f"INCOMPLETE: {whole}" in stdout.splitlines()
    assert "auditor: the run is not recorded complete in the state file: the reports" in stderr
    assert "not evaluated" not in stderr
    assert stderr.strip().splitlines()[-1] == (
        "auditor: exit 2: the audit is incomplete: the run is not recorded complete in the "
        "state file"
    )
    # night 3 compares with night 1: the findings night 2 found are new again, as it said
    code, _, stderr = run_cli(
        ["run", "--out", str(tmp_path / "n3")], env, tmp_path, FIXED_NOW + 2 * NIGHT
    )
    assert code == 1, stderr
    assert new_findings(tmp_path / "n3") == new_findings(out) > 0


def test_a_disk_too_full_to_write_the_reports_again_keeps_those_marked_incomplete(
    emu: Any, env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first_night(emu, env, tmp_path)
    out = tmp_path / "n2"
    with monkeypatch.context() as patch:
        fill_disk(patch, {"findings.sarif": {1, 2}})
        code, _, stderr = run_cli(["run", "--out", str(out)], env, tmp_path, FIXED_NOW + NIGHT)
    assert code == 2, stderr
    assert runs(tmp_path / "state.db")["20261102T120000Z"] == 0
    assert {p.name for p in out.iterdir()} == REPORT_FILES - {"findings.sarif"}
    assert findings(out)["complete"] is False
    assert "not recorded complete in the state file" in (out / "report.md").read_text()
    assert stderr.strip().splitlines()[-1] == (
        "auditor: error: the run is not recorded complete: its reports could not all be "
        f"written: cannot write {out / 'findings.sarif'}: No space left on device; written "
        "again, marked incomplete: report.md, findings.json, junit.xml, report.html; not "
        "written: findings.sarif"
    )


def test_a_disk_too_full_to_write_any_report_again_leaves_none_and_says_so(
    emu: Any, env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first_night(emu, env, tmp_path)
    out = tmp_path / "n2"
    with monkeypatch.context() as patch:
        # the three written before findings.sarif, written again; junit.xml's first writing
        before = {"report.html": {2}, "report.md": {2}, "findings.json": {2}}
        fill_disk(patch, {**before, "findings.sarif": {1, 2}, "junit.xml": {1}})
        code, _, stderr = run_cli(["run", "--out", str(out)], env, tmp_path, FIXED_NOW + NIGHT)
    assert code == 2, stderr
    assert runs(tmp_path / "state.db")["20261102T120000Z"] == 0
    assert not out.exists() or not list(out.iterdir())  # (a folder the run made goes)
    assert stderr.strip().splitlines()[-1] == (
        "auditor: error: the run is not recorded complete: its reports could not be written, "
        f"so none is left in {out} (removed: report.html, report.md, findings.json): "
        f"cannot write {out / 'findings.sarif'}: No space left on device; written again, "
        f"marked incomplete: cannot write {out / 'report.md'}: No space left on device"
    )


def refuse_completion(monkeypatch: pytest.MonkeyPatch) -> None:
    def refused(*_args: Any) -> None:
        raise StoreError("state file state.db: cannot write, nothing was changed: disk full")

    monkeypatch.setattr(auditor.store.database.Store, "complete_run", refused)


def test_the_state_and_the_reports_refused_by_a_full_disk_both_named(
    env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # All five written (complete), the run's completion refused (disk full), then the second
    # writing, which says "could not record", refused at report.html: the only line was
    # `cannot write …/report.html`, and the five earlier reports said complete.
    out = tmp_path / "r"
    refuse_completion(monkeypatch)
    fill_disk(monkeypatch, {"report.html": {2, 3}})
    code, _, stderr = run_cli(["run", "--out", str(out)], env, tmp_path, FIXED_NOW)
    assert code == 2, stderr
    assert {p.name for p in out.iterdir()} == REPORT_FILES - {"report.html"}
    assert findings(out)["complete"] is False
    assert "could not record this run" in (out / "report.md").read_text()
    assert stderr.strip().splitlines()[-1] == (
        "auditor: error: the state file could not record this run, so no later run compares "
        "with it: state file state.db: cannot write, nothing was changed: disk full; and its "
        f"reports could not all be written: cannot write {out / 'report.html'}: No space left "
        "on device; written again, marked incomplete: report.md, findings.json, junit.xml, "
        "findings.sarif; not written: report.html"
    )


def test_the_reports_saying_the_state_could_not_record_the_run_are_written_again(
    env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "r"
    refuse_completion(monkeypatch)
    fill_disk(monkeypatch, {"report.html": {2}})
    code, _, stderr = run_cli(["run", "--out", str(out)], env, tmp_path, FIXED_NOW)
    assert code == 2, stderr
    assert {p.name for p in out.iterdir()} == REPORT_FILES
    for name in ("findings.json", "report.md", "report.html"):
        text = (out / name).read_text()
        assert "could not record this run" in text, name
        assert "the reports could not be written" in text, name
    assert findings(out)["complete"] is False
    assert "auditor: not evaluated: the state file could not record this run" in stderr
    assert "the reports could not be written (cannot write" in stderr


def test_orgs_a_disk_full_part_way_leaves_no_report_claiming_a_complete_run(
    emu: Any, env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    orgs, env = orgs_file(emu, tmp_path)
    root = tmp_path / "rep"
    fill_disk(monkeypatch, {"findings.sarif": {1}})
    code, _, stderr = run_cli(
        ["run", "--orgs", str(orgs), "--out", str(root)], env, tmp_path, FIXED_NOW
    )
    assert code == 2, stderr
    acme = findings(root / "acme")
    assert acme["complete"] is False
    assert "the reports could not be written" in acme["output_notes"][0]


def interrupt_while_the_worker_writes(
    monkeypatch: pytest.MonkeyPatch, report: str, signum: int, root: Path, wait: float = 2.0
) -> None:
    """`signum` sent from an organization's worker as it begins writing `report`; the worker
    then waits for the main thread's write-up (summary.json), at most `wait` s, before it
    writes that report."""
    import auditor.report

    real = auditor.report._write
    sent: list[str] = []

    def write(path: Path, name: str, *args: Any) -> None:
        worker = threading.current_thread().name.startswith("auditor-org-")
        if worker and name == report and not sent:
            sent.append(name)
            os.kill(os.getpid(), signum)
            deadline = time.monotonic() + wait
            while not (root / "summary.json").exists() and time.monotonic() < deadline:
                time.sleep(0.01)
        real(path, name, *args)

    monkeypatch.setattr(auditor.report, "_write", write)


def join_workers() -> None:
    for thread in threading.enumerate():  # a worker goes on once the run has returned
        if thread.name.startswith("auditor-org-"):
            thread.join(timeout=60)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_orgs_an_interrupt_while_the_worker_writes_leaves_no_findings_sarif(
    emu: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, signum: int
) -> None:
    # R21 #1: the main thread wrote the organization up as interrupted ("findings.sarif not
    # written") while its worker went on writing every report of the complete run,
    # findings.sarif among them (`executionSuccessful: true`); the state did not hold the run.
    import auditor.cli.cmd_run

    monkeypatch.setattr(auditor.cli.cmd_run, "_WRITING_WAIT", 30.0, raising=False)
    orgs, env = orgs_file(emu, tmp_path)
    root = tmp_path / "rep"
    interrupt_while_the_worker_writes(monkeypatch, "findings.sarif", signum, root)
    code, _, stderr = run_cli(
        ["run", "--orgs", str(orgs), "--out", str(root)], env, tmp_path, FIXED_NOW
    )
    join_workers()
    assert code == 128 + signum, stderr
    assert set(runs(tmp_path / "orgs-acme.db").values()) == {0}
    assert not (root / "acme" / "findings.sarif").exists()
    assert {p.name for p in (root / "acme").iterdir()} == REPORT_FILES - {"findings.sarif"}
    acme = findings(root / "acme")
    assert acme["complete"] is False
    assert any("findings.sarif not written" in line for line in acme["output_notes"])
    assert any("interrupted while the reports" in line for line in acme["output_notes"])
    assert acme["not_evaluated"] == []
    for name in ("report.md", "report.html", "junit.xml"):  # none says the run is complete
        assert "interrupted while the reports were written" in (root / "acme" / name).read_text()
    (row,) = json.loads((root / "summary.json").read_text())["organizations"]
    assert "before it finished" in row["reason"]


def test_orgs_a_second_signal_during_the_write_up_leaves_no_report_claiming_a_complete_run(
    emu: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # R21 #2: SIGINT while the worker wrote junit.xml, SIGTERM while the main thread wrote
    # the organization up: the worker's complete reports stayed (`"complete": true`, no
    # banner) and the state did not hold the run.
    import auditor.cli.cmd_run

    monkeypatch.setattr(auditor.cli.cmd_run, "_WRITING_WAIT", 30.0, raising=False)
    orgs, env = orgs_file(emu, tmp_path)
    root = tmp_path / "rep"
    interrupt_while_the_worker_writes(monkeypatch, "junit.xml", signal.SIGINT, root)
    real = auditor.cli.cmd_run._write_interrupted

    def terminated_meanwhile(*args: Any, **kwargs: Any) -> None:
        os.kill(os.getpid(), signal.SIGTERM)
        real(*args, **kwargs)

    monkeypatch.setattr(auditor.cli.cmd_run, "_write_interrupted", terminated_meanwhile)
    code, _, stderr = run_cli(
        ["run", "--orgs", str(orgs), "--out", str(root)], env, tmp_path, FIXED_NOW
    )
    join_workers()
    assert code == 143, stderr
    assert stderr.strip().splitlines()[-1] == "auditor: exit 143: terminated (SIGTERM)"
    assert set(runs(tmp_path / "orgs-acme.db").values()) == {0}
    left = {p.name for p in (root / "acme").iterdir()}
    assert "findings.sarif" not in left
    assert "findings.json" not in left or findings(root / "acme")["complete"] is False
    for name in left & {"report.md", "report.html", "junit.xml"}:
        assert "interrupted" in (root / "acme" / name).read_text(), name


def test_orgs_a_worker_still_writing_after_the_wait_is_said(
    emu: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The interrupt waits a few seconds for a worker to finish the report it writes (report.pdf
    # takes minutes), then writes the organization up all the same, and says so.
    import auditor.cli.cmd_run

    monkeypatch.setattr(auditor.cli.cmd_run, "_WRITING_WAIT", 0.2, raising=False)
    orgs, env = orgs_file(emu, tmp_path)
    root = tmp_path / "rep"
    interrupt_while_the_worker_writes(monkeypatch, "junit.xml", signal.SIGINT, root, wait=60)
    code, _, stderr = run_cli(
        ["run", "--orgs", str(orgs), "--out", str(root)], env, tmp_path, FIXED_NOW
    )
    join_workers()
    assert code == 130, stderr
    said = "its worker was still writing junit.xml: its reports were written up without it"
    assert f"auditor: [acme] {said}" in stderr
    # a worker still writing has not ended its store either (its lock's pid is this run's)
    left = auditor.cli.cmd_run.STORE_LEFT.format(seconds="0.2")
    assert f"auditor: [acme] {left}" in stderr
    (row,) = json.loads((root / "summary.json").read_text())["organizations"]
    assert row["reason"] == f"interrupted before it finished ({left}; {said})"
    assert set(runs(tmp_path / "orgs-acme.db").values()) == {0}
    assert not (root / "acme" / "findings.sarif").exists()
    assert findings(root / "acme")["complete"] is False


def test_not_compared_says_an_incomplete_earlier_run_is_never_a_baseline(
    emu: Any, env: dict[str, str], tmp_path: Path
) -> None:
    # R21 #3: two runs without the app URL (each incomplete, exit 2): the second's report.md
    # sent the operator to look for a lost state file or changed rules, never saying that the
    # earlier run, incomplete, could not be compared with.
    env = {k: v for k, v in env.items() if k != "AUDITOR_APP_URL"}
    for night in range(2):
        out = tmp_path / f"n{night}"
        code, _, stderr = run_cli(
            ["run", "--out", str(out)], env, tmp_path, FIXED_NOW + night * NIGHT
        )
        assert code == 2, stderr
    assert set(runs(tmp_path / "state.db").values()) == {0}
    md = " ".join((tmp_path / "n1" / "report.md").read_text().split())
    assert "**Not compared with an earlier run:** the state file holds no earlier complete" in md
    assert "every earlier run of them was incomplete" in md
    assert "an incomplete run is never a baseline" in md


def test_not_compared_in_an_evidence_bundle_says_it_holds_no_earlier_run(
    emu: Any, env: dict[str, str], tmp_path: Path
) -> None:
    # R21 #3: the bundle's report.md gave a lost state file or a CI cache as the reason; the
    # bundle has no earlier run.
    first_night(emu, env, tmp_path)
    code, _, stderr = run_cli(
        ["run", "--out", str(tmp_path / "n2")], env, tmp_path, FIXED_NOW + NIGHT
    )
    assert code == 1, stderr
    assert "Not compared" not in (tmp_path / "n2" / "report.md").read_text()
    bundle = tmp_path / "bundle"
    code, _, stderr = run_cli(["export", "--out", str(bundle)], env, tmp_path, FIXED_NOW + NIGHT)
    assert code == 0, stderr
    for name in ("report.md", "report.html"):
        text = " ".join((bundle / "reports" / name).read_text().split())
        assert "an evidence bundle holds no earlier run" in text, name
        assert "CI cache" not in text and "first run" not in text, name
    code, _, stderr = run_cli(["verify", str(bundle)], env, tmp_path, FIXED_NOW + NIGHT)
    assert code == 0, stderr
