"""A failed or interrupted sync whose last scrub of the history pages it kept cannot be
written, as another program holds the state file's lock (review R37 #4): the kept pages may
hold, in clear, a value a later page named as a secret. The last lines say so and what to do
(they said the pages were kept for the next sync to go on from), an interrupted sync waits for
the lock once and briefly (it waited twice, 5 s each), and the next sync scrubs them.

Against a real loopback service, through the CLI, with another connection holding the lock
from the moment the sync is cut short until it has ended.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

import pytest

from auditor.store.database import Store
from tests.conftest import secret_forms
from tests.test_sync_resume import (
    Service,
    change,
    cli,
    contents,
    from_scratch,
    serving,
    state_bytes,
    sync,
)

pytestmark = pytest.mark.e2e  # a server over HTTP, the CLI

VALUE = "opaquevalueXyzzyPlugh4821"  # unlabelled on a kept page, an `apiKey` on a later one
UNSCRUBBED = (
    "not scrubbed: another program held the state file's lock, so a value this sync learned "
    "is a secret after keeping them may be in clear in them, in the state file; run `auditor "
    "sync` again"
)


def service_naming_late() -> Service:
    """Revision 140 (kept with the first batch of 10 pages) holds VALUE unlabelled; revision
    30, on page 12 (read, not yet kept), names it a model's apiKey."""
    service = Service(145)
    service.revisions[140] = change(140, note=f"see {VALUE} for the model")
    service.revisions[30]["settings"]["customModels"] = [{"id": "m", "apiKey": VALUE}]
    return service


def sqlite_lock(state: Path, how: str) -> Callable[[], Callable[[], None]]:
    def take() -> Callable[[], None]:
        db = sqlite3.connect(state, isolation_level=None, check_same_thread=False)
        db.execute(f"BEGIN {how}")

        def release() -> None:
            db.rollback()
            db.close()

        return release

    return take


def pg_lock(url: str) -> Callable[[], Callable[[], None]]:
    def take() -> Callable[[], None]:
        from pgcluster import _pg_connect

        db: Any = _pg_connect(url)
        db.execute("BEGIN")
        db.execute("LOCK TABLE meta, history_staged IN EXCLUSIVE MODE")  # reads go on

        def release() -> None:
            db.execute("ROLLBACK")
            db.close()

        return release

    return take


@contextmanager
def locked_at_page_14(
    service: Service, take: Callable[[], Callable[[], None]], *, interrupt: bool
) -> Iterator[list[Callable[[], None]]]:
    """As page 14 is asked for, another connection takes the lock (and, with `interrupt`,
    Ctrl-C lands while the client waits for the answer; else the service answers 401)."""
    real = service.answer
    held: list[Callable[[], None]] = []

    def answer(path: str, query: dict[str, str]) -> tuple[int, bytes]:
        if query.get("cursor") == "130" and not held:
            held.append(take())
            if interrupt:
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(0.5)
            else:
                return 401, b'{"status": 401, "title": "refused"}'
        return real(path, query)

    service.answer = answer  # type: ignore[method-assign]
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a terminal
    try:
        yield held
    finally:
        signal.signal(signal.SIGINT, previous)
        for release in held:
            release()
        held.clear()
        service.answer = real  # type: ignore[method-assign]


def forms_in(state: Path) -> list[str]:
    raw = state_bytes(state)
    return [f for f in secret_forms(VALUE) if f.encode() in raw]


def then_the_next_sync_scrubs_them(url: str, service: Service, tmp: Path, state: Path) -> None:
    """Kept rows are no history (an offline run sees none of them, nor the value); the next
    sync reads page 12 again and scrubs the kept rows: as a sync from scratch."""
    code, out, err = cli(url, tmp, state, "run", "--offline", "--out", "out")
    assert code == 2 and "not evaluated (no settings revision)" in err, err
    written = b"".join(p.read_bytes() for p in (tmp / "out").rglob("*") if p.is_file())
    assert all(f.encode() not in written + out.encode() + err.encode() for f in secret_forms(VALUE))
    code, _, err = sync(url, tmp, state)
    assert code == 0, err
    assert forms_in(state) == []
    assert contents(state) == from_scratch(service, tmp)


def brief_busy_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every SQLite connection opened from now on waits 1 s for a lock another holds, not
    Python's 5 s: a failed sync reads the locked file several times before it says what it
    kept (about 25 s of waiting out the same lock), and what it says is what is checked."""
    real = sqlite3.connect

    def connect(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        kwargs.setdefault("timeout", 1.0)
        return real(*args, **kwargs)

    monkeypatch.setattr(sqlite3, "connect", connect)


def lock_waits(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Every lock wait the store is told (ms), in order, as it is told them."""
    waits: list[int] = []
    real_wait = Store._set_lock_wait

    def set_lock_wait(self: Store, ms: int) -> None:
        waits.append(ms)
        real_wait(self, ms)

    monkeypatch.setattr(Store, "_set_lock_wait", set_lock_wait)
    return waits


@pytest.mark.parametrize("how", ["IMMEDIATE", "EXCLUSIVE"])
def test_an_interrupted_sync_that_cannot_scrub_its_kept_pages_says_so(
    tmp_path: Path, how: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C while page 14 is on its way, another connection holding the state file's lock
    (IMMEDIATE: it can be read; EXCLUSIVE: not even that). The kept row of revision 140 stays
    in clear (nothing can be written), and the last line says so and what to do, never that
    the next sync goes on from pages kept safely. The lock is waited for once, 1.5 s, and then
    no more (it was waited for twice, 5 s each, and under EXCLUSIVE a third time: 10-16 s
    from Ctrl-C to the exit; what the store was told to wait is watched, not the clock)."""
    waits = lock_waits(monkeypatch)
    service = service_naming_late()
    state = tmp_path / "state.db"
    with serving(service) as url:
        with locked_at_page_14(service, sqlite_lock(state, how), interrupt=True) as held:
            code, _, err = sync(url, tmp_path, state)
            assert held, err
        # the scrub waits 1.5 s, once; the drop not at all (0 s: 1 ms); then the store waits
        # no more (1 ms); between them the connection's own 5 s is only put back
        assert waits[0] == 1500 and waits.count(1500) == 1 and waits[-1] == 1, waits
        assert set(waits) <= {1500, 5000, 1}, waits
        assert code == 130, err
        assert "sync interrupted: kept" in err and UNSCRUBBED in err, err
        assert "the next sync continues from there" not in err
        if how == "IMMEDIATE":  # (the record can be read: what was kept is said)
            assert "kept 10 pages (100 revisions), not scrubbed:" in err
        assert forms_in(state)  # the truth said: the value is there, unscrubbed
        then_the_next_sync_scrubs_them(url, service, tmp_path, state)


def test_an_interrupted_sync_under_a_lock_waits_for_it_once_with_nothing_to_scrub(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Tester T73 MED-1: Ctrl-C while another program holds the state file EXCLUSIVE, the
    kept pages clean (no value learned since they were kept). The last scrub's read waits
    1.5 s, once, and then the store waits no more: what the command said next (the kept
    pages, whether a first sync's file goes) read it again, 5 s each, 14.5 s from Ctrl-C."""
    waits = lock_waits(monkeypatch)
    service = Service(145)
    state = tmp_path / "state.db"
    with serving(service) as url:
        with locked_at_page_14(service, sqlite_lock(state, "EXCLUSIVE"), interrupt=True) as held:
            code, _, err = sync(url, tmp_path, state)
            assert held, err
        assert code == 130, err
        assert waits[0] == 1500 and waits.count(1500) == 1 and waits[-1] == 1, waits
        assert (
            "sync interrupted: kept history pages (not counted: the state file cannot be read"
            in err
        )
        code, _, err = sync(url, tmp_path, state)
    assert code == 0, err
    assert contents(state) == from_scratch(service, tmp_path)


def test_a_failed_sync_that_cannot_scrub_its_kept_pages_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Page 14 is refused (401), another connection holding the state file's lock meanwhile:
    the error says the kept pages may hold a secret in clear, and what to do."""
    brief_busy_wait(monkeypatch)
    service = service_naming_late()
    state = tmp_path / "state.db"
    with serving(service) as url:
        with locked_at_page_14(service, sqlite_lock(state, "IMMEDIATE"), interrupt=False):
            code, _, err = sync(url, tmp_path, state)
        assert code == 2, err
        assert f"sync failed, kept 10 pages (100 revisions), {UNSCRUBBED}" in err, err
        assert "the next sync continues from there" not in err
        then_the_next_sync_scrubs_them(url, service, tmp_path, state)


def test_an_interrupted_sync_into_a_locked_postgresql_store_says_so(
    tmp_path: Path, pg_url: str
) -> None:
    """As above, in PostgreSQL: another session holds the kept pages' tables locked (reads go
    on), so the last scrub waits for its lock_timeout, briefly, and says what it left."""
    from pgcluster import stored_bytes

    service = service_naming_late()
    with serving(service) as url:
        with locked_at_page_14(service, pg_lock(pg_url), interrupt=True) as held:
            code, _, err = sync(url, tmp_path, pg_url)
            assert held, err
        assert code == 130, err
        assert f"sync interrupted: kept 10 pages (100 revisions), {UNSCRUBBED}" in err, err
        assert "the next sync continues from there" not in err
        assert [f for f in secret_forms(VALUE) if f.encode() in stored_bytes(pg_url)]
        code, _, err = sync(url, tmp_path, pg_url)
    assert code == 0, err
    assert [f for f in secret_forms(VALUE) if f.encode() in stored_bytes(pg_url)] == []
    assert contents(pg_url) == from_scratch(service, tmp_path)


def test_a_failed_sync_whose_scrub_meets_a_full_disk_says_that(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The disk is full as the sync fails (SQLite's own error, raised where the scrub and the
    drop write; no other program holds a lock): the line names the full disk, never another
    program's lock (review R41 #1)."""
    full: list[bool] = []

    def disk_full(*args: Any, **kwargs: Any) -> Any:
        error = sqlite3.OperationalError("database or disk is full")
        error.sqlite_errorname = "SQLITE_FULL"  # type: ignore[attr-defined]
        raise error

    real_scrub, real_drop = Store._scrub_kept, Store._drop_staged_rows
    monkeypatch.setattr(
        Store, "_scrub_kept", lambda self: disk_full() if full else real_scrub(self)
    )
    monkeypatch.setattr(
        Store, "_drop_staged_rows", lambda self: disk_full() if full else real_drop(self)
    )
    service = service_naming_late()
    state = tmp_path / "state.db"

    def fill() -> Callable[[], None]:
        full.append(True)
        return full.clear

    with serving(service) as url:
        with locked_at_page_14(service, fill, interrupt=False):
            code, _, err = sync(url, tmp_path, state)
        assert code == 2, err
        assert (
            "sync failed, kept 10 pages (100 revisions), not scrubbed: the state file could not "
            "be written: database or disk is full (SQLITE_FULL" in err
        ), err
        assert "lock" not in err.lower()
        assert forms_in(state)
        then_the_next_sync_scrubs_them(url, service, tmp_path, state)


@pytest.mark.parametrize("interrupt", [False, True])
def test_kept_pages_under_an_exclusive_lock_are_never_called_nothing_saved(
    tmp_path: Path, interrupt: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No late secret, but another program holds the state file's exclusive lock as the sync
    fails (401) or is interrupted at page 14: the kept pages cannot be counted, and the last
    line says they are kept, not `nothing saved` (review R41 #4), nor nothing at all."""
    brief_busy_wait(monkeypatch)
    service = Service(145)
    state = tmp_path / "state.db"
    with serving(service) as url:
        with locked_at_page_14(service, sqlite_lock(state, "EXCLUSIVE"), interrupt=interrupt):
            code, _, err = sync(url, tmp_path, state)
        assert code == (130 if interrupt else 2), err
        assert "nothing saved" not in err
        assert (
            "kept history pages (not counted: the state file cannot be read now); the next "
            "sync continues from there" in err
        ), err
        with closing(sqlite3.connect(state)) as db:
            assert db.execute("SELECT COUNT(*) FROM history_staged").fetchone()[0] == 100
        code, _, err = sync(url, tmp_path, state)
        assert code == 0, err
        assert contents(state) == from_scratch(service, tmp_path)
