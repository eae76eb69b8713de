"""A failed sync under another program's lock on the state file waits for it once, then says
what it kept and what it could not (review R60 LOW-1): it waited out the same lock 5 s at a
time, for the pages it held, the read after that write, its last scrub, the pages it kept and
whether a first sync's file goes (26 s under an exclusive lock, 10 s under a write lock), where
an interrupted sync stops waiting once it has met the lock.

Against a real loopback service, through the CLI. What is counted is each time the state file's
connection gave up on the lock, with the wait it was given then, not the clock.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from auditor.errors import AuditorError
from auditor.workflows import sync as sync_workflow
from tests.test_sync_resume import Service, cli, contents, from_scratch, serving, sync
from tests.test_sync_resume_locked import (
    UNSCRUBBED,
    forms_in,
    locked_at_page_14,
    service_naming_late,
    sqlite_lock,
    then_the_next_sync_scrubs_them,
)

pytestmark = pytest.mark.e2e  # a server over HTTP, the CLI


def lock_given_up(
    monkeypatch: pytest.MonkeyPatch, then: Callable[[int], object] = lambda _ms: None
) -> list[int]:
    """Each time a connection to the state file, opened from now on, gave up waiting for
    another's lock: the wait it had (ms; 1 is a store told not to wait), also given to `then`."""
    given_up: list[int] = []

    class Watched(sqlite3.Connection):
        def execute(self, *args: Any, **kwargs: Any) -> sqlite3.Cursor:
            try:
                return super().execute(*args, **kwargs)
            except sqlite3.OperationalError as exc:
                if getattr(exc, "sqlite_errorname", "").startswith(
                    ("SQLITE_BUSY", "SQLITE_LOCKED")
                ):
                    given_up.append(int(super().execute("PRAGMA busy_timeout").fetchone()[0]))
                    then(given_up[-1])
                raise

    real = sqlite3.connect

    def connect(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        kwargs.setdefault("factory", Watched)
        return real(*args, **kwargs)

    monkeypatch.setattr(sqlite3, "connect", connect)
    return given_up


def waited(given_up: list[int]) -> list[int]:
    """The waits the user sat through: all but the store's 1 ms and the half second the error
    line's screen reads the file's remembered secrets with (`remembered_memory`, its own
    connection: it never writes)."""
    return [ms for ms in given_up if ms > 500]


def test_a_failed_sync_under_an_exclusive_lock_waits_for_it_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No late secret; another program holds the state file EXCLUSIVE (not even a read gets
    through) from page 14, which the service refuses (401). The pages held (11-13) wait 5 s
    for the lock in vain; nothing the failed sync says after that waits for it: the scrub
    (nothing to scrub), the kept pages' count (each waited 5 s more). Whether the first sync's
    file goes is read once the sync has said that, and waits as every read does (review R65
    MED-1). The line says the pages are kept, not counted, and the next sync goes on from
    them; it does."""
    given_up = lock_given_up(monkeypatch)
    service = Service(145)
    state = tmp_path / "state.db"
    with serving(service) as url:
        with locked_at_page_14(service, sqlite_lock(state, "EXCLUSIVE"), interrupt=False) as held:
            code, _, err = sync(url, tmp_path, state)
            assert held, err
        assert code == 2, err
        assert waited(given_up) == [5000, 5000], given_up
        assert (
            "sync failed, kept history pages (not counted: the state file cannot be read now); "
            "the next sync continues from there" in err
        ), err
        code, _, err = sync(url, tmp_path, state)
        assert code == 0, err
        assert contents(state) == from_scratch(service, tmp_path)


def test_a_failed_sync_that_cannot_scrub_under_a_write_lock_waits_for_it_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A value kept unlabelled (revision 140) is named a secret on page 12; another program
    holds the write lock from page 14 (refused, 401): the pages held wait for it, and the
    last scrub, which has a secret to scrub, once more (review R65 LOW-1); nothing after it.
    The line says what was kept and that it could not be scrubbed, and the next sync scrubs
    it."""
    given_up = lock_given_up(monkeypatch)
    service = service_naming_late()
    state = tmp_path / "state.db"
    with serving(service) as url:
        with locked_at_page_14(service, sqlite_lock(state, "IMMEDIATE"), interrupt=False):
            code, _, err = sync(url, tmp_path, state)
        assert code == 2, err
        assert waited(given_up) == [5000, 5000], given_up
        assert f"sync failed, kept 10 pages (100 revisions), {UNSCRUBBED}" in err, err
        assert forms_in(state)
        then_the_next_sync_scrubs_them(url, service, tmp_path, state)


def test_a_failed_sync_with_no_pages_held_waits_for_the_lock_once_in_its_scrub(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lock is taken as page 11 is asked for, right after the first batch was kept (no
    page held to keep): the last scrub waits for it, once, with the store's own wait, and the
    line that follows reads nothing that waits for it again (whether the first sync's file
    goes is read after it, as every read)."""
    given_up = lock_given_up(monkeypatch)
    service = Service(145)
    state = tmp_path / "state.db"
    real = service.answer
    held: list[Callable[[], None]] = []

    def answer(path: str, query: dict[str, str]) -> tuple[int, bytes]:
        if query.get("cursor") == "100" and not held:
            held.append(sqlite_lock(state, "EXCLUSIVE")())
            return 401, b'{"status": 401, "title": "refused"}'
        return real(path, query)

    service.answer = answer  # type: ignore[method-assign]
    with serving(service) as url:
        try:
            code, _, err = sync(url, tmp_path, state)
        finally:
            for release in held:
                release()
        assert held, err
        assert code == 2, err
        assert waited(given_up) == [5000, 5000], given_up
        assert "sync failed, kept history pages (not counted" in err, err


def test_a_run_whose_sync_fails_under_a_write_lock_audits_what_is_stored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`run` goes on after its sync failed, with the lock still held (reads get through): it
    says what the sync kept and could not scrub, and audits the stored data (nothing: the
    kept pages are no history): the sync waited for the lock for the pages it held and its
    scrub, and the audit's reads and writes as they always did."""
    given_up = lock_given_up(monkeypatch)
    service = service_naming_late()
    state = tmp_path / "state.db"
    with serving(service) as url:
        with locked_at_page_14(service, sqlite_lock(state, "IMMEDIATE"), interrupt=False):
            code, _, err = cli(url, tmp_path, state, "run", "--out", "out")
        assert code == 2, err
        # the pages held, the scrub (a secret to scrub); then the run's own record
        # (`start_run`), a write of its own, which waits as every write does
        assert waited(given_up) == [5000, 5000, 5000], given_up
        assert (
            f"auditor: sync failed, auditing the stored data: kept 10 pages (100 revisions), "
            f"{UNSCRUBBED}" in err
        ), err
        assert "not evaluated (no settings revision)" in err, err
        assert (tmp_path / "out" / "findings.json").is_file()


def released_later(
    take: Callable[[], Callable[[], None]], started: list[Callable[[], None]]
) -> Callable[[], Callable[[], None]]:
    """`take`, whose lock is let go 2 s after a call of the function put in `started`."""

    def taken() -> Callable[[], None]:
        release = take()
        gone: list[bool] = []

        def once() -> None:
            if not gone:
                gone.append(True)
                release()

        started.append(lambda: threading.Timer(2, once).start())
        return once

    return taken


def test_a_run_whose_sync_failed_under_an_exclusive_lock_waits_for_it_in_its_audit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The other program lets go of its exclusive lock 2 s after the sync said what it kept:
    the run's audit waits for it as every read does and writes its reports (it read the file
    without waiting and failed at once, `database is locked`, with no report: review R65
    MED-1). The user sat through one wait of the sync's, the pages it held."""
    given_up = lock_given_up(monkeypatch)
    started: list[Callable[[], None]] = []
    real_failed = sync_workflow._failed

    def failed(*args: Any) -> AuditorError:
        said = real_failed(*args)
        for start in started:
            start()
        return said

    monkeypatch.setattr(sync_workflow, "_failed", failed)
    service = Service(145)
    state = tmp_path / "state.db"
    with serving(service) as url:
        take = released_later(sqlite_lock(state, "EXCLUSIVE"), started)
        with locked_at_page_14(service, take, interrupt=False) as held:
            code, _, err = cli(url, tmp_path, state, "run", "--out", "out")
            assert held, err
        assert code == 2, err
        assert "database is locked" not in err, err
        assert "auditor: sync failed, auditing the stored data: kept history pages" in err, err
        assert "not evaluated (no settings revision)" in err, err
        assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
            "findings.json",
            "junit.xml",
            "report.html",
            "report.md",
        ]
        assert waited(given_up) == [5000], given_up


def test_a_failed_sync_with_a_late_secret_waits_once_to_scrub_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A value kept unlabelled is named a secret on page 12; the write lock another program
    took at page 14 is let go 2 s after the pages held gave up on it: the last scrub waits for
    it (it did not wait at all when the write before it had given up: review R65 LOW-1) and
    scrubs the kept pages, which the next sync goes on from."""
    started: list[Callable[[], None]] = []

    def then(ms: int) -> None:  # (the pages held gave up on the lock: it goes 2 s later)
        if ms > 500 and started:
            started.pop()()

    given_up = lock_given_up(monkeypatch, then)
    service = service_naming_late()
    state = tmp_path / "state.db"
    with serving(service) as url:
        take = released_later(sqlite_lock(state, "IMMEDIATE"), started)
        with locked_at_page_14(service, take, interrupt=False) as held:
            code, _, err = sync(url, tmp_path, state)
            assert held, err
        assert code == 2, err
        assert "sync failed, kept 10 pages (100 revisions); the next sync continues" in err, err
        assert forms_in(state) == []
        assert waited(given_up) == [5000], given_up
        then_the_next_sync_scrubs_them(url, service, tmp_path, state)
