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
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

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


def lock_given_up(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Each time a connection to the state file, opened from now on, gave up waiting for
    another's lock: the wait it had (ms; 1 is a store told not to wait)."""
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
    for the lock in vain; nothing after that waits for it: the scrub, the kept pages' count,
    whether the first sync's file goes (each waited 5 s more). The line says the pages are
    kept, not counted, and the next sync goes on from them; it does."""
    given_up = lock_given_up(monkeypatch)
    service = Service(145)
    state = tmp_path / "state.db"
    with serving(service) as url:
        with locked_at_page_14(service, sqlite_lock(state, "EXCLUSIVE"), interrupt=False) as held:
            code, _, err = sync(url, tmp_path, state)
            assert held, err
        assert code == 2, err
        assert waited(given_up) == [5000], given_up
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
    last scrub does not wait for it again (it did: 10 s). The line says what was kept and
    that it could not be scrubbed, and the next sync scrubs it."""
    given_up = lock_given_up(monkeypatch)
    service = service_naming_late()
    state = tmp_path / "state.db"
    with serving(service) as url:
        with locked_at_page_14(service, sqlite_lock(state, "IMMEDIATE"), interrupt=False):
            code, _, err = sync(url, tmp_path, state)
        assert code == 2, err
        assert waited(given_up) == [5000], given_up
        assert f"sync failed, kept 10 pages (100 revisions), {UNSCRUBBED}" in err, err
        assert forms_in(state)
        then_the_next_sync_scrubs_them(url, service, tmp_path, state)


def test_a_failed_sync_with_no_pages_held_waits_for_the_lock_once_in_its_scrub(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lock is taken as page 11 is asked for, right after the first batch was kept (no
    page held to keep): the last scrub waits for it, once, with the store's own wait, and the
    line that follows reads nothing that waits for it again."""
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
        assert waited(given_up) == [5000], given_up
        assert "sync failed, kept history pages (not counted" in err, err


def test_a_run_whose_sync_fails_under_a_write_lock_audits_what_is_stored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`run` goes on after its sync failed, with the lock still held (reads get through): it
    says what the sync kept and could not scrub, and audits the stored data (nothing: the
    kept pages are no history): the sync waited for the lock once, and the audit's reads as
    they always did (the store waited no more only until a read got through)."""
    given_up = lock_given_up(monkeypatch)
    service = service_naming_late()
    state = tmp_path / "state.db"
    with serving(service) as url:
        with locked_at_page_14(service, sqlite_lock(state, "IMMEDIATE"), interrupt=False):
            code, _, err = cli(url, tmp_path, state, "run", "--out", "out")
        assert code == 2, err
        # the pages held, once; then the run's own record (`start_run`), a write of its own,
        # which waits as every write does (the lock may be gone by then); the scrub did not
        assert waited(given_up) == [5000, 5000], given_up
        assert (
            f"auditor: sync failed, auditing the stored data: kept 10 pages (100 revisions), "
            f"{UNSCRUBBED}" in err
        ), err
        assert "not evaluated (no settings revision)" in err, err
        assert (tmp_path / "out" / "findings.json").is_file()
