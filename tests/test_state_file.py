"""The state file under hostile or unlucky conditions: another program's SQLite file, read-only
commands, a full disk, a read-only or locked file, two runs in one second, reports that cannot
be written. Every failure is exit 2 with the real cause, and the file is unchanged."""

from __future__ import annotations

import hashlib
import io
import json
import os
import resource
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

import auditor.store.database
import auditor.store.file
from auditor.cli import Context, main
from auditor.emulator import start_emulator
from auditor.errors import ReportError
from auditor.store.database import Store
from tests.conftest import FIXED_NOW, OWNER_TOKEN

POLICY = Path(__file__).resolve().parent / "policies" / "valid" / "sample.yaml"


def run_cli(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    ctx = Context(env=env, stdout=out, stderr=err, clock=lambda: FIXED_NOW, cwd=str(cwd))
    return main(argv, ctx), out.getvalue(), err.getvalue()


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def synced(env: dict[str, str], tmp_path: Path) -> Path:
    """A state file filled by a real sync."""
    code, _, stderr = run_cli(["sync"], env, tmp_path)
    assert code == 0, stderr
    return Path(env["AUDITOR_STATE"])


@pytest.fixture
def foreign(tmp_path: Path) -> Path:
    """Another program's SQLite database."""
    path = tmp_path / "contacts.db"
    with closing(sqlite3.connect(path)) as db, db:
        db.execute("CREATE TABLE contacts (name TEXT, email TEXT)")
        db.execute("INSERT INTO contacts VALUES ('Ada', 'ada@example.com')")
    return path


EVERY_COMMAND = {
    "diff": ["diff"],
    "history": ["history"],
    "export": ["export"],
    "policy-lint": ["policy", "lint", str(POLICY)],
    "run-offline": ["run", "--offline", "--policy", str(POLICY)],
    "run": ["run", "--policy", str(POLICY)],
    "sync": ["sync"],
    "review-offline": ["review", "--offline", "--against", str(POLICY), str(POLICY)],
}


@pytest.mark.parametrize("command", EVERY_COMMAND)
def test_another_programs_database_is_refused_and_left_untouched(
    env: dict[str, str], tmp_path: Path, foreign: Path, command: str
) -> None:
    before = digest(foreign)
    argv = [*EVERY_COMMAND[command], "--state", str(foreign)]
    argv += ["--out", str(tmp_path / "r")] if command.startswith("run") else []
    code, _, stderr = run_cli(argv, env, tmp_path)
    if command == "review-offline":  # compares two files; the state file is never opened
        assert digest(foreign) == before
        return
    assert code == 2, stderr
    assert f"{foreign} is not an auditor state file" in stderr, stderr
    assert "tables: contacts" in stderr
    assert stderr.count("\n") == 1 and "Traceback" not in stderr
    assert digest(foreign) == before


READ_ONLY = {
    "diff": ["diff"],
    "history": ["history"],
    "export": ["export", "--out", "bundle"],
    "policy-lint": ["policy", "lint", str(POLICY)],
}


@pytest.mark.parametrize("command", READ_ONLY)
def test_read_only_commands_never_change_a_byte(
    env: dict[str, str], tmp_path: Path, synced: Path, command: str
) -> None:
    before = digest(synced)
    code, _, stderr = run_cli(READ_ONLY[command], env, tmp_path)
    assert code in (0, 1), stderr
    assert digest(synced) == before


def _connect_with(monkeypatch: pytest.MonkeyPatch, after_connect: Any) -> None:
    """Wrap the store's connection so the next write meets a full disk, a read-only file…"""
    real = auditor.store.file.connect

    def connect(path: Path, *, readonly: bool) -> sqlite3.Connection:
        db = real(path, readonly=readonly)
        after_connect(db, path)
        return db

    monkeypatch.setattr("auditor.store.database.connect", connect)


def _disk_full(db: sqlite3.Connection, _path: Path) -> None:
    pages = db.execute("PRAGMA page_count").fetchone()[0]
    db.execute(f"PRAGMA max_page_count = {pages}")


def _read_only(db: sqlite3.Connection, _path: Path) -> None:
    db.execute("PRAGMA query_only = ON")


def _locked_by_another_program(db: sqlite3.Connection, path: Path) -> None:
    db.execute("PRAGMA busy_timeout = 100")
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN EXCLUSIVE")
    _HELD.append(other)


_HELD: list[sqlite3.Connection] = []

FAULTS = {
    "disk-full": (_disk_full, "database or disk is full (SQLITE_FULL: the disk is full)"),
    "read-only": (_read_only, "attempt to write a readonly database"),
    "locked": (_locked_by_another_program, "database is locked (SQLITE_BUSY: another program"),
}


@pytest.mark.parametrize("fault", FAULTS)
def test_a_failed_sync_keeps_the_real_cause_and_the_file(
    env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fault: str
) -> None:
    state = Path(env["AUDITOR_STATE"])
    with Store.open(state) as store, store.transaction():  # synced once, but nothing stored:
        sync_id = store.begin_sync(FIXED_NOW, env["AUDITOR_BASE_URL"])  # this sync must add pages
        store.finish_sync(sync_id, FIXED_NOW, revisions_new=0, reports_new=0, pages=0)
    before = digest(state)
    prepare, cause = FAULTS[fault]
    _connect_with(monkeypatch, prepare)
    try:
        code, _, stderr = run_cli(["sync"], env, tmp_path)
    finally:
        while _HELD:
            _HELD.pop().close()
    assert code == 2, stderr
    assert cause in stderr, stderr
    assert "cannot rollback" not in stderr and "Traceback" not in stderr
    assert stderr.count("\n") == 1
    assert digest(state) == before


def test_a_full_disk_under_a_file_size_limit_names_the_limit(
    env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write cut short at `ulimit -f` is SQLITE_FULL to SQLite: "the disk is full" alone
    sent the user to a disk with room (tester T72). Under a limit both are named."""
    state = Path(env["AUDITOR_STATE"])
    with Store.open(state) as store, store.transaction():  # this sync must add pages
        sync_id = store.begin_sync(FIXED_NOW, env["AUDITOR_BASE_URL"])
        store.finish_sync(sync_id, FIXED_NOW, revisions_new=0, reports_new=0, pages=0)
    _connect_with(monkeypatch, _disk_full)
    monkeypatch.setattr(resource, "getrlimit", lambda _: (1 << 30, 1 << 30))
    code, _, stderr = run_cli(["sync"], env, tmp_path)
    assert code == 2, stderr
    assert (
        "database or disk is full (SQLITE_FULL: a write past this process's file-size limit of "
        "1,073,741,824 bytes (`ulimit -f`: raise it and run again), or the disk is full)"
    ) in stderr, stderr


def test_a_write_the_file_size_limit_refuses_is_put_back(
    tmp_path: Path,
) -> None:
    """`ulimit -f` reached while a sync commits (EFBIG: SQLITE_IOERR_WRITE): the file was left
    with half-written pages and a hot `-journal` (tester T18), though the error said "nothing
    was changed"; a cache step saving `state.db` alone kept a damaged file. It is put back at
    once, byte for byte, with no journal left; and the limit is named (it was "an input/output
    error", tester T72)."""
    import subprocess
    import sys

    from auditor.emulator import generate_dataset

    token = "tok-0123456789abcdef0123"
    with start_emulator(
        dataset=generate_dataset(revisions=200, repos=2), tokens={token: "owner"}
    ) as emu:
        env = {
            **os.environ,
            "AUDITOR_BASE_URL": emu.base_url,
            "AUDITOR_TOKEN": token,
            "AUDITOR_STATE": str(tmp_path / "s.db"),
        }
        argv = [sys.executable, "-m", "auditor", "sync", "--no-usage"]
        assert subprocess.run(argv, env=env, cwd=tmp_path, check=False).returncode == 0
        state = tmp_path / "s.db"
        emu.add_revisions(300)
        limit = state.stat().st_size + 64 * 1024

        def cap() -> None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

        done = subprocess.run(
            argv, env=env, cwd=tmp_path, capture_output=True, text=True, preexec_fn=cap, check=False
        )
    assert done.returncode == 2, done.stderr
    assert "cannot write, nothing was changed" in done.stderr and "Traceback" not in done.stderr
    assert (
        f"(SQLITE_IOERR_WRITE: a write past this process's file-size limit of {limit:,} bytes "
        "(`ulimit -f`: raise it and run again), or an input/output error)"
    ) in done.stderr, done.stderr
    assert not (tmp_path / "s.db-journal").exists()
    # The write refused was put back: the history pages are kept ten at a time (`_History`),
    # and the first batch to be kept (the 3 new pages, once page 4 met the stored history) is
    # the write refused, so nothing is kept and the message says so. The history is as it was.
    assert "sync failed, nothing saved" in done.stderr, done.stderr
    with closing(sqlite3.connect(state)) as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert db.execute("SELECT COUNT(*), MAX(revision) FROM revisions").fetchone() == (200, 200)
        assert db.execute("SELECT COUNT(*) FROM syncs").fetchone() == (1,)


@pytest.fixture(params=["sqlite", "postgres"])
def any_env(request: pytest.FixtureRequest, env: dict[str, str]) -> dict[str, str]:
    """`env` with the store in an SQLite file or in a fresh PostgreSQL database."""
    if request.param == "sqlite":
        return env
    return {**env, "AUDITOR_STATE": str(request.getfixturevalue("pg_url"))}


@pytest.fixture
def any_synced(any_env: dict[str, str], tmp_path: Path) -> str:
    """A store (either backend) filled by a real sync; gives its location."""
    code, _, stderr = run_cli(["sync"], any_env, tmp_path)
    assert code == 0, stderr
    return any_env["AUDITOR_STATE"]


def test_two_runs_in_the_same_second_get_distinct_ids(
    any_env: dict[str, str], tmp_path: Path, any_synced: str
) -> None:
    ids = []
    for out in ("a", "b", "c"):
        code, _, stderr = run_cli(["run", "--offline", "--out", out], any_env, tmp_path)
        assert code in (0, 1), stderr
        assert "UNIQUE" not in stderr
        ids.append(json.loads((tmp_path / out / "findings.json").read_text())["run"]["id"])
    base = FIXED_NOW.strftime("%Y%m%dT%H%M%SZ")
    assert ids == [base, f"{base}-2", f"{base}-3"]


def test_default_report_folders_follow_the_run_ids(
    any_env: dict[str, str], tmp_path: Path, any_synced: str
) -> None:
    for _ in range(2):
        code, _, stderr = run_cli(["run", "--offline"], any_env, tmp_path)
        assert code in (0, 1), stderr
    base = FIXED_NOW.strftime("%Y%m%dT%H%M%SZ")
    folders = sorted(p.name for p in (tmp_path / "reports").iterdir())
    assert folders == [base, f"{base}-2"]
    shown = [json.loads((tmp_path / "reports" / f / "findings.json").read_text()) for f in folders]
    assert [s["run"]["id"] for s in shown] == folders


def _runs(state: str) -> list[tuple[str, int]]:
    with Store.open(state, readonly=True) as store:
        rows = store._db.execute("SELECT run_id, complete FROM runs ORDER BY rowid").fetchall()
    return [(str(r), int(c)) for r, c in rows]


def test_a_run_whose_reports_cannot_be_written_is_not_the_next_baseline(
    any_env: dict[str, str], tmp_path: Path, any_synced: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, _, _ = run_cli(["run", "--offline", "--out", "first"], any_env, tmp_path)
    assert code in (0, 1)

    def disk_full(*_args: Any, **_kwargs: Any) -> None:
        raise ReportError("cannot write report.html: No space left on device")

    with monkeypatch.context() as patch:
        patch.setattr("auditor.cli.cmd_run.write_reports", disk_full)
        code, _, stderr = run_cli(["run", "--offline", "--out", "second"], any_env, tmp_path)
    assert code == 2
    assert stderr.strip().splitlines()[-1].endswith("No space left on device")
    assert [c for _, c in _runs(any_synced)] == [1, 0]
    code, _, _ = run_cli(["run", "--offline", "--out", "third"], any_env, tmp_path)
    third = json.loads((tmp_path / "third" / "findings.json").read_text())
    # compared with the first run (complete), not the second: nothing is new
    assert {f["lifecycle"] for f in third["findings"]} <= {"persisting", None}
    assert [c for _, c in _runs(any_synced)] == [1, 0, 1]


def _damage_table(path: Path, table: str) -> None:
    """Overwrite the first page of `table` with garbage, as a torn or bit-rotten file has."""
    with closing(sqlite3.connect(path)) as db, db:
        (root,) = db.execute(
            "SELECT rootpage FROM sqlite_master WHERE name = ?", (table,)
        ).fetchone()
        (size,) = db.execute("PRAGMA page_size").fetchone()
    with path.open("r+b") as raw:
        raw.seek((root - 1) * size)
        raw.write(b"\xa5" * size)


def test_a_failing_sync_never_deletes_a_state_file_that_was_there(
    env: dict[str, str], tmp_path: Path
) -> None:
    """Only a file the failing sync created itself is removed again; a damaged one the user had
    (say, restored from a CI cache) stays, byte for byte, and the error says what to do."""
    state = Path(env["AUDITOR_STATE"])
    Store.open(state).close()  # never synced, as a first sync cut off leaves it
    _damage_table(state, "revisions")
    before = digest(state)
    code, _, stderr = run_cli(["sync"], env, tmp_path)
    assert code == 2, stderr
    assert f"state file {state} is damaged: database disk image is malformed" in stderr
    assert "move it aside and run `auditor sync` to start a new one" in stderr
    assert stderr.count("\n") == 1 and "Traceback" not in stderr
    assert state.exists() and digest(state) == before


@pytest.mark.parametrize("kind", ["folder", "fifo"])
def test_a_state_path_that_is_no_regular_file_is_refused_at_once(
    env: dict[str, str], tmp_path: Path, kind: str
) -> None:
    """A folder or a named pipe where the state file should be: one line naming it, before
    SQLite touches it (on a FIFO, SQLite's open would wait forever, deaf to SIGTERM). Run as a
    child process so that a regression shows as a failure, not a hung suite."""
    import os
    import subprocess
    import sys

    state = tmp_path / "state.db"
    state.mkdir() if kind == "folder" else os.mkfifo(state)
    for command in (["history"], ["sync"]):
        done = subprocess.run(
            [sys.executable, "-m", "auditor", *command, "--state", str(state)],
            env={**os.environ, **env},
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
        )
        what = "a folder" if kind == "folder" else "a named pipe (FIFO)"
        assert done.returncode == 2, done.stderr
        assert done.stderr == (
            f"auditor: error: {state} is {what}, not a state file: choose another --state\n"
        )


_CUT_OFF_WRITE = """
import os, sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("PRAGMA cache_size = 1")  # pages spill into the file before the commit
db.execute("BEGIN IMMEDIATE")
db.execute("UPDATE revisions SET user_name = 'half-written' || zeroblob(20000)")
db.execute("UPDATE reports SET repo_url = 'half-written' || zeroblob(20000)")
os._exit(9)  # like kill -9, or a CI runner ending the job
"""


def test_a_write_cut_off_by_kill_9_is_rolled_back_by_the_next_writer(
    env: dict[str, str], tmp_path: Path, synced: Path
) -> None:
    """kill -9 mid-write leaves `state.db-journal`: read-only commands say so (they cannot
    finish it without changing the file), the next writing command rolls it back, and the
    file is then exactly as before the cut-off write. The file without its journal (what a CI
    cache of the file alone keeps) is damaged: a cache must carry both."""
    import subprocess
    import sys

    before = digest(synced)
    subprocess.run([sys.executable, "-c", _CUT_OFF_WRITE, str(synced)], check=False)
    journal = Path(f"{synced}-journal")
    assert journal.exists() and digest(synced) != before  # torn: only the journal repairs it
    alone = tmp_path / "alone" / "state.db"
    alone.parent.mkdir()
    alone.write_bytes(synced.read_bytes())

    torn = (digest(synced), digest(journal))
    code, _, stderr = run_cli(["history"], env, tmp_path)
    assert code == 2
    assert "a write to it was cut off (its -journal file is beside it)" in stderr
    assert "any writing command (`auditor sync`) rolls it back" in stderr
    assert (digest(synced), digest(journal)) == torn  # the read-only command changed nothing

    code, _, stderr = run_cli(
        ["run", "--offline", "--policy", str(POLICY), "--out", "r"], env, tmp_path
    )
    assert code in (0, 1), stderr
    assert not journal.exists()
    with closing(sqlite3.connect(synced)) as db, db:
        assert db.execute(
            "SELECT count(*) FROM revisions WHERE user_name LIKE 'half-written%'"
        ).fetchone() == (0,)

    code, _, stderr = run_cli(["history", "--state", str(alone)], env, tmp_path)
    assert code == 2 and "is damaged" in stderr, stderr


def test_a_revision_changed_in_the_state_file_stops_export_naming_it(
    env: dict[str, str], tmp_path: Path, synced: Path
) -> None:
    """An evidence bundle must not cite a content SHA-256 its revision no longer has."""
    with closing(sqlite3.connect(synced)) as db, db:
        (settings,) = db.execute("SELECT settings FROM revisions WHERE revision = 7").fetchone()
        changed = json.loads(settings) | {"quietlyAdded": True}
        db.execute(
            "UPDATE revisions SET settings = ? WHERE revision = 7",
            (json.dumps(changed, sort_keys=True, separators=(",", ":")).encode(),),
        )
    code, _, stderr = run_cli(["export", "--out", "bundle"], env, tmp_path)
    assert code == 2
    assert (
        f"state file {synced} is damaged: the settings of revision 7 do not match their " in stderr
    )
    assert not (tmp_path / "bundle").exists()


def test_a_revision_deleted_from_the_state_file_stops_export(
    env: dict[str, str], tmp_path: Path, synced: Path
) -> None:
    """A deleted row is never fetched again (paging stops at the newest stored revision) and
    the change step across the gap would span two changes: the bundle is refused, saying which
    sync's rows are missing."""
    with closing(sqlite3.connect(synced)) as db, db:
        db.execute("DELETE FROM revisions WHERE revision = 7")
        (finished,) = db.execute("SELECT finished FROM syncs WHERE id = 1").fetchone()
    code, _, stderr = run_cli(["export", "--out", "bundle"], env, tmp_path)
    assert code == 2
    assert (
        f"state file {synced} is damaged: the sync finished {finished[:19]} stored 30 "
        "revisions; 29 are left (1 deleted since)"
    ) in stderr
    assert not (tmp_path / "bundle").exists()


NOT_UTF8_COMMANDS = {
    "history": ["history"],
    "diff": ["diff"],
    "export": ["export", "--out", "bundle"],
    "run-offline": ["run", "--offline", "--policy", str(POLICY), "--out", "r"],
    "sync": ["sync"],
}


@pytest.mark.parametrize("command", NOT_UTF8_COMMANDS)
def test_a_text_cell_that_is_not_utf8_is_damage_with_the_advice_never_its_bytes(
    env: dict[str, str], tmp_path: Path, synced: Path, command: str
) -> None:
    """Bit rot inside a text cell: Python's sqlite3 reports it with the cell's bytes and no
    SQLite error name. Every command calls it damage, with the advice, and never quotes the
    bytes; `sync` does not call it a failed write."""
    with closing(sqlite3.connect(synced)) as db, db:
        db.execute(
            "UPDATE revisions SET content_hash = CAST(X'ff' || 'cellbytes' || X'fe' AS TEXT) "
            "WHERE revision = (SELECT MAX(revision) FROM revisions)"
        )
    code, _, stderr = run_cli(NOT_UTF8_COMMANDS[command], env, tmp_path)
    assert code == 2, stderr
    assert (
        f"state file {synced} is damaged: column 'content_hash' holds bytes that are not "
        "UTF-8 text (SQLITE_CORRUPT: the file is damaged); restore a copy saved before it was "
        "damaged, or move it aside and run `auditor sync`"
    ) in stderr
    assert "cellbytes" not in stderr and "\ufffd" not in stderr and "Could not decode" not in stderr
    assert "cannot write" not in stderr and "Traceback" not in stderr


@pytest.mark.parametrize("how", ["refused-token", "out-is-a-file", "interrupted"])
def test_a_first_run_whose_sync_never_completes_leaves_no_state_file(
    env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    """A first online `auditor run` that ends with no sync completed (the service refuses the
    token and the run audits what is stored, `--out` a file, Ctrl-C during the sync) leaves no
    empty state file, as `sync` does: a CI cache step would keep it, and every later read
    refuses it. The same run with a sync that completed keeps its file."""
    state = Path(env["AUDITOR_STATE"])
    argv = ["run", "--policy", str(POLICY), "--out", "out"]
    if how == "refused-token":
        env = {**env, "AUDITOR_TOKEN": "not-the-emulators-token-0123456789"}
    elif how == "out-is-a-file":
        (tmp_path / "f").write_text("x")
        argv[-1] = "f"
    else:

        def cut(*_a: Any, **_k: Any) -> Any:
            raise KeyboardInterrupt

        monkeypatch.setattr("auditor.workflows.sync.sync_service", cut)
    code, _, stderr = run_cli(argv, env, tmp_path)
    assert code == (130 if how == "interrupted" else 2), stderr
    assert "Traceback" not in stderr
    assert not state.exists() and not Path(f"{state}.lock").exists()
    monkeypatch.undo()
    code, _, stderr = run_cli(["run", "--policy", str(POLICY), "--out", "out2"], env, tmp_path)
    if how == "refused-token":
        assert code == 2 and not state.exists()
    else:
        assert code in (0, 1), stderr
        with closing(Store.open(state)) as kept:
            assert kept.last_sync() is not None and kept.count_revisions() > 0


@pytest.mark.parametrize("command", ["sync", "review", "run"])
def test_an_interrupt_while_a_new_state_file_is_set_up_leaves_no_file(
    env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    """Ctrl-C in the few milliseconds after the state file is created, while its schema is
    written (before the command holds a store to clean up after): no empty store is left for
    a CI cache to keep (tester T18 left one with a signal 2-5 ms after the file appeared)."""
    state = Path(env["AUDITOR_STATE"])
    real = auditor.store.database.prepare

    def cut(db: sqlite3.Connection, *args: Any, **kwargs: Any) -> Any:
        real(db, *args, **kwargs)
        raise KeyboardInterrupt

    monkeypatch.setattr(auditor.store.database, "prepare", cut)
    proposed = tmp_path / "proposed.json"
    proposed.write_text("{}")
    argv = {
        "sync": ["sync"],
        "review": ["review", str(proposed), "--out", "out"],
        "run": ["run", "--policy", str(POLICY), "--out", "out"],
    }[command]
    code, _, stderr = run_cli(argv, env, tmp_path)
    assert code == 130, stderr
    assert not state.exists() and not Path(f"{state}.lock").exists()
    assert not Path(f"{state}-journal").exists()


NEVER_SYNCED_READERS = {
    "history": ["history"],
    "diff": ["diff"],
    "export": ["export", "--out", "bundle"],
}


@pytest.mark.parametrize("command", NEVER_SYNCED_READERS)
def test_a_store_no_sync_completed_into_is_refused_by_readers(
    any_env: dict[str, str], tmp_path: Path, command: str
) -> None:
    """A first sync killed (kill -9: nothing can clean up) leaves an empty store: the commands
    that read it say to sync first (exit 2), as when there is no store, instead of an empty
    history or an evidence bundle of no revisions (exit 0)."""
    Store.open(any_env["AUDITOR_STATE"]).close()
    code, stdout, stderr = run_cli(NEVER_SYNCED_READERS[command], any_env, tmp_path)
    assert code == 2, stderr
    assert "holds no completed sync (a first sync failed or was cut off): run `auditor sync` " \
        "first" in stderr  # fmt: skip
    assert stdout == "" and stderr.count("\n") == 1
    assert not (tmp_path / "bundle").exists()
    code, _, stderr = run_cli(["policy", "lint", str(POLICY)], any_env, tmp_path)
    assert code == 0, stderr  # no history to lint against, as without a store


OTHER_ORG = {
    "history": ["history"],
    "diff": ["diff"],
    "export": ["export", "--out", "r"],
    "run-offline": ["run", "--offline", "--policy", str(POLICY), "--out", "r"],
    "run": ["run", "--policy", str(POLICY), "--out", "r"],
    "policy-lint": ["policy", "lint", str(POLICY)],
}


@pytest.mark.parametrize("given", ["flag", "environment"])
@pytest.mark.parametrize("command", OTHER_ORG)
def test_every_command_refuses_a_state_file_of_another_organization(
    env: dict[str, str], tmp_path: Path, synced: Path, command: str, given: str
) -> None:
    """As `sync` does: another organization's data is never labelled as this one's (an
    evidence bundle's run-parameters.json, a report's Organisation)."""
    argv, env = list(OTHER_ORG[command]), dict(env)
    if given == "flag":
        argv += ["--org", "other"]
    else:
        env["AUDITOR_ORG"] = "other"
    before = digest(synced)
    code, stdout, stderr = run_cli(argv, env, tmp_path)
    assert code == 2, stderr
    assert f"state file {synced} holds organization 'default', not 'other'" in stderr
    assert stdout == "" and stderr.count("\n") == 1
    assert not (tmp_path / "r").exists()
    assert digest(synced) == before
    code, _, stderr = run_cli(OTHER_ORG[command], {**env, "AUDITOR_ORG": "default"}, tmp_path)
    assert code in (0, 1), stderr


@pytest.mark.parametrize("command", ["run-offline", "run", "sync"])
def test_a_writer_given_no_organization_on_another_ones_file_says_which_to_give(
    env: dict[str, str], tmp_path: Path, command: str
) -> None:
    """A file synced with `--org acme`, then a step without AUDITOR_ORG: refused (as sync
    always was), and the message names the `--org` that goes on, not only the mismatch."""
    code, _, stderr = run_cli(["sync", "--org", "acme corp"], env, tmp_path)
    assert code == 0, stderr
    argv = ["sync"] if command == "sync" else OTHER_ORG[command]
    before = digest(Path(env["AUDITOR_STATE"]))
    code, stdout, stderr = run_cli(argv, env, tmp_path)
    assert code == 2, stderr
    # refused before anything in the file was brought up to date (the scrub index rebuilt)
    assert digest(Path(env["AUDITOR_STATE"])) == before
    assert stderr.count("\n") == 1 and stdout == ""
    assert "holds organization 'acme corp', not 'default'" in stderr
    assert stderr.rstrip().endswith("give --org 'acme corp' to use this one")
    code, _, stderr = run_cli([*argv, "--org", "acme corp"], env, tmp_path)
    assert code in (0, 1), stderr


def test_an_export_given_no_organization_is_labelled_with_the_files_own(
    env: dict[str, str], tmp_path: Path
) -> None:
    """An evidence bundle of a file synced with `--org acme`, exported without `--org`, said
    `"org": "default"` in run-parameters.json and `Organisation: default` in its reports."""
    code, _, stderr = run_cli(["sync", "--org", "acme"], env, tmp_path)
    assert code == 0, stderr
    code, _, stderr = run_cli(["export", "--out", "ev"], env, tmp_path)
    assert code == 0, stderr
    parameters = json.loads((tmp_path / "ev" / "run-parameters.json").read_text())
    assert parameters["org"] == "acme"
    assert "**Organisation:** acme" in (tmp_path / "ev" / "reports" / "report.md").read_text()
    code, _, stderr = run_cli(["verify", "ev"], env, tmp_path)
    assert code == 0, stderr


def test_an_export_given_no_organization_never_prints_a_token_the_file_holds_as_its_org(
    env: dict[str, str], tmp_path: Path
) -> None:
    """The organization a state file holds is checked as `--org` is before it labels a bundle
    (a hand-edited file's `ghp_…` was written into run-parameters.json and every report)."""
    token = "ghp_" + "abcdefghijklmnopqrstuvwxyz0123456789"
    code, _, stderr = run_cli(["sync"], env, tmp_path)
    assert code == 0, stderr
    with closing(sqlite3.connect(env["AUDITOR_STATE"])) as db, db:
        db.execute("UPDATE meta SET value = ? WHERE key = 'org'", (token,))
    code, stdout, stderr = run_cli(["export", "--out", "ev"], env, tmp_path)
    assert code == 2 and token not in stdout + stderr, stderr
    assert "org: expected the organization's name" in stderr
    assert not (tmp_path / "ev").exists()


def test_a_sync_from_another_service_address_warns_naming_both(
    env: dict[str, str], tmp_path: Path, synced: Path
) -> None:
    """A moved service is set to its new address on purpose, so the sync goes ahead; one line
    says so, as the data of two services would otherwise be mixed silently."""
    with start_emulator(tokens={OWNER_TOKEN: "owner"}, now=FIXED_NOW, revisions=30, repos=3) as e:
        code, _, stderr = run_cli(
            ["sync"],
            {**env, "AUDITOR_BASE_URL": e.base_url, "AUDITOR_APP_URL": e.app_url},
            tmp_path,
        )
    assert code == 0, stderr
    assert stderr == (
        f"auditor: warning: state file {synced} was last synced from {env['AUDITOR_BASE_URL']}, "
        f"this sync is from {e.base_url}: if this is not the same service moved, its data is "
        "mixed with the other's in this store\n"
    )
    assert OWNER_TOKEN not in stderr
    code, _, stderr = run_cli(["sync"], env, tmp_path)  # and back: the last sync's address
    assert code == 0 and e.base_url in stderr, stderr
    code, _, stderr = run_cli(["sync"], env, tmp_path)
    assert code == 0 and stderr == "", stderr


LOCK_COMMANDS = {
    "history": ["history"],
    "export": ["export", "--out", "bundle"],
    "sync": ["sync"],
    "run": ["run", "--policy", str(POLICY), "--out", "reports"],
}


def _lock_refused(state: Path, what: str) -> str:
    return (
        f"auditor: error: cannot lock state file {state}: its lock file {state}.lock is {what}, "
        "not a lock file auditor made: move it aside (auditor makes its own)\n"
    )


@pytest.mark.parametrize("target", ["state-file", "other-file"])
@pytest.mark.parametrize("command", LOCK_COMMANDS)
def test_a_symlink_at_the_lock_file_is_refused_and_truncates_nothing(
    env: dict[str, str], tmp_path: Path, synced: Path, command: str, target: str
) -> None:
    """`<state>.lock` a symlink (to the state file, or to any file: a shared runner folder
    others can write to): every command, the read-only ones too, emptied what it points to
    (a `history` wiped the state file, then said "run `auditor sync` first"). It is refused,
    one line naming the lock file and what to do, and nothing changes."""
    lock = Path(f"{synced}.lock")
    lock.unlink(missing_ok=True)
    other = tmp_path / "precious.txt"
    other.write_text("precious\n")
    lock.symlink_to(synced if target == "state-file" else other)
    before = digest(synced)
    code, _, stderr = run_cli(LOCK_COMMANDS[command], env, tmp_path)
    assert code == 2, stderr
    assert stderr == _lock_refused(synced, "a symbolic link")
    assert digest(synced) == before and other.read_text() == "precious\n"
    assert lock.is_symlink()  # left as it was: the user decides what it is
    assert not (tmp_path / "bundle").exists() and not (tmp_path / "reports").exists()


def _fifo(lock: Path, _tmp: Path) -> str:
    os.mkfifo(lock)
    return "a named pipe (FIFO)"


def _device_link(lock: Path, _tmp: Path) -> str:
    lock.symlink_to("/dev/zero")
    return "a symbolic link"


def _folder(lock: Path, _tmp: Path) -> str:
    lock.mkdir()
    return "a folder"


def _hard_link(lock: Path, tmp: Path) -> str:
    other = tmp / "notes.txt"
    other.write_text("notes\n")
    os.link(other, lock)
    return "a file with other names too (a hard link)"


def _someone_elses_file(lock: Path, _tmp: Path) -> str:
    lock.write_text("notes, not a pid\n")
    return "a file holding something else"


LOCK_KINDS = {
    "fifo": _fifo,
    "device-link": _device_link,
    "folder": _folder,
    "hard-link": _hard_link,
    "other-content": _someone_elses_file,
}


@pytest.mark.parametrize("kind", LOCK_KINDS)
def test_a_lock_file_that_is_not_auditors_is_refused_naming_it(
    env: dict[str, str], tmp_path: Path, synced: Path, kind: str
) -> None:
    """A named pipe (`cannot lock state file …: None`), a link to /dev/zero (`unexpected
    OSError`), a folder, a hard link to another file or a file holding something else at
    `<state>.lock`: one line naming the lock file, exit 2; the state file and what the lock
    file is are unchanged."""
    lock = Path(f"{synced}.lock")
    lock.unlink(missing_ok=True)
    what = LOCK_KINDS[kind](lock, tmp_path)
    before = digest(synced)
    content = lock.read_bytes() if kind in ("hard-link", "other-content") else None
    for command in ("history", "sync"):
        code, _, stderr = run_cli([command], env, tmp_path)
        assert code == 2, stderr
        assert stderr == _lock_refused(synced, what)
    assert digest(synced) == before
    if content is not None:
        assert lock.read_bytes() == content


def test_a_state_path_that_is_a_symlink_loop_is_refused_naming_it(
    env: dict[str, str], tmp_path: Path
) -> None:
    """`--state loop.db`, a symlink to itself: `unexpected RuntimeError: Symlink loop` from
    `sync`; one line naming the file now, from every command."""
    loop = tmp_path / "loop.db"
    loop.symlink_to(loop)
    for command in (["sync"], ["history"], ["run", "--policy", str(POLICY), "--out", "r"]):
        code, _, stderr = run_cli([*command, "--state", str(loop)], env, tmp_path)
        assert code == 2, stderr
        assert stderr == (
            f"auditor: error: cannot open state file {loop}: it is a symbolic link that leads "
            "back to itself (a loop): choose another --state\n"
        )
    assert loop.is_symlink() and not (tmp_path / "r").exists()


def test_a_reader_never_writes_in_the_lock_file(
    env: dict[str, str], tmp_path: Path, synced: Path
) -> None:
    """`history`, `diff`, `export` never change a byte: the lock file's content neither (a
    reader emptied it, clearing the pid a killed writer left); the next writer takes it."""
    lock = Path(f"{synced}.lock")
    lock.write_text("999999")  # what a writer killed with kill -9 leaves
    for command in READ_ONLY.values():
        code, _, stderr = run_cli(command, env, tmp_path)
        assert code in (0, 1), stderr
        assert lock.read_text() == "999999"
    code, _, stderr = run_cli(["sync"], env, tmp_path)
    assert code == 0, stderr
    assert lock.read_text() == ""  # a finished writer leaves no pid behind


def test_an_older_file_refused_by_a_reader_names_a_way_without_the_api(
    env: dict[str, str], tmp_path: Path, synced: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An auditor given a state file an older release made (a CI artifact), without the
    service's address or token: `history` refuses it until it is opened for writing, and said
    `(e.g. auditor sync)`, which stops at once without the API. The way that needs none,
    `auditor run --offline`, is named, and works."""
    from auditor.store import schema

    now = schema.SCHEMA_VERSION  # the test plays the next release, whose step adds a table
    monkeypatch.setattr(schema, "SCHEMA_VERSION", now + 1)
    monkeypatch.setattr(schema, "MIGRATIONS", {**schema.MIGRATIONS, now + 1: "CREATE TABLE x (i)"})
    offline = {"AUDITOR_STATE": str(synced)}
    code, _, stderr = run_cli(["history"], offline, tmp_path)
    assert code == 2, stderr
    assert f"schema version {now}; this auditor reads version {now + 1}" in stderr
    assert "`auditor run --offline`" in stderr and "needs no service" in stderr, stderr
    code, _, stderr = run_cli(["sync"], offline, tmp_path)
    assert code == 2  # the other way named needs the API
    argv = ["run", "--offline", "--policy", str(POLICY), "--out", str(tmp_path / "r"), "-q"]
    code, _, stderr = run_cli(argv, offline, tmp_path)
    assert code in (0, 1), stderr
    code, _, stderr = run_cli(["history"], offline, tmp_path)
    assert code == 0, stderr


@pytest.mark.parametrize(
    "argv",
    [["history"], ["run", "--offline"], ["policy", "lint", "policies-here"]],
    ids=["history", "run", "policy lint"],
)
def test_a_state_file_name_too_long_for_the_system_is_said_so(
    tmp_path: Path, argv: list[str]
) -> None:
    """Review R56 F1: `unexpected StoreError` (exit 2, no reason): the error path screening
    the message with the state file's memory of secrets asked the name too long whether it
    is a file, and that raised too."""
    from tests.conftest import run_cli

    (tmp_path / "policies-here").mkdir()
    (tmp_path / "policies-here" / "p.yaml").write_text("rules: []\n")
    state = tmp_path / ("s" * 300 + ".db")
    code, _out, err = run_cli([*argv, "--state", str(state)], {}, tmp_path)
    assert code == 2, err
    assert "unexpected" not in err, err
    assert f"cannot open state file {state}: File name too long" in err, err
