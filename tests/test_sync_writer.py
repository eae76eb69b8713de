"""The sync's writer thread (issue 10): each history page's new revisions are hashed and inserted
in the background while the next page is redacted. What it stores is what writing inline
stored; a write that fails there fails the sync as it did inline (same message, same exit code,
nothing saved); an interruption while a write is pending leaves the state file as it was."""

from __future__ import annotations

import functools
import os
import shutil
import signal
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from test_sync import NOW, TOKEN, FakeService, cli, client_for

from auditor.cli.signals import Terminated
from auditor.errors import StoreError
from auditor.fetch import PlatformClient
from auditor.store import Store
from auditor.workflows import sync as sync_module
from auditor.workflows.sync import sync

KEY = b"k" * 32  # one fingerprint key for every file compared
BASE = "https://svc.test"


@pytest.fixture(autouse=True)
def _only_data_commands(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("auditor.cli.COMMANDS", ("sync", "export"))


def _inline(monkeypatch: pytest.MonkeyPatch, inline: bool) -> None:
    monkeypatch.setattr(sync_module, "_WRITE_IN_BACKGROUND", not inline)


def dump(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table of a state file (sorted: the scrub index is a set)."""
    db = sqlite3.connect(path)
    try:
        tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return {t: sorted(db.execute(f"SELECT * FROM {t}").fetchall(), key=repr) for t in tables}
    finally:
        db.close()


def _service() -> FakeService:
    """Revisions over several pages (10 a page), reports, and a secret found in an old revision
    that was pasted into newer ones (scrubbed from rows this sync wrote: the scrub index is made
    from them again)."""
    service = FakeService(47, reports=13)
    late = "plainwordpastedearlier-77"
    service.revisions[3]["settings"]["env"] = {"DB_PASSWORD": late}
    for n in (30, 41, 46):
        service.revisions[n]["settings"]["note"] = f"uses {late} here"
    return service


def _sync_file(path: Path | str, service: FakeService, **kw: Any) -> Any:
    with Store.open(path, fingerprint_key=KEY) as store:
        store.register_secret(TOKEN)
        with client_for(service, **kw) as client:
            return sync(store, client, clock=lambda: NOW)


def _two_syncs(path: Path | str) -> list[Any]:
    """A first sync, then one that re-reads a page (known revisions, one changed: an integrity
    issue) and stores new ones."""
    service = _service()
    summaries = [_sync_file(path, service)]
    service.revisions[45]["settings"]["n"] = "changed"
    service.add_revisions(14)
    summaries.append(_sync_file(path, service))
    return summaries


@pytest.mark.parametrize("inline", [True, False], ids=["inline", "background"])
def test_a_sync_stores_what_it_stored_writing_inline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, inline: bool
) -> None:
    _inline(monkeypatch, True)
    expected = _two_syncs(tmp_path / "inline.db")
    _inline(monkeypatch, inline)
    written: list[int] = []
    insert = Store._insert_rows

    def counted(store: Store, rows: list[tuple[Any, ...]]) -> None:
        written.append(threading.get_ident())
        insert(store, rows)

    monkeypatch.setattr(Store, "_insert_rows", counted)
    assert _two_syncs(tmp_path / "state.db") == expected
    assert dump(tmp_path / "state.db") == dump(tmp_path / "inline.db")
    rows = dump(tmp_path / "state.db")
    assert len(rows["revisions"]) == 61 and rows["integrity_issues"] and rows["scrub_index"]
    assert not any(b"plainwordpastedearlier" in r[6] for r in rows["revisions"])
    # the writer's thread wrote the new pages (the known revisions' page is written inline)
    others = sum(t != threading.get_ident() for t in written)
    assert others == (0 if inline else 6)


# -- a write that fails in the writer's thread ----------------------------------------------


def _refuse_revision(path: Path, number: int) -> None:
    """The store refuses one row: a trigger in the file aborts its insert."""
    db = sqlite3.connect(path)
    db.execute(
        f"CREATE TRIGGER refuse BEFORE INSERT ON revisions WHEN NEW.revision = {number} "
        "BEGIN SELECT RAISE(ABORT, 'row refused by a trigger'); END"
    )
    db.commit()
    db.close()


def _lie_about_the_newest(monkeypatch: pytest.MonkeyPatch) -> None:
    """The store says it holds no revision (as if the pages had lied about what is new): the
    25 stored are written as new with the last page, and the insert finds them stored."""
    monkeypatch.setattr(Store, "latest_revision", lambda _store: None)


def _disk_full(monkeypatch: pytest.MonkeyPatch) -> None:
    """From the second page on, the file may not grow ("database or disk is full")."""
    real = Store._insert_rows
    calls: list[int] = []

    def full(store: Store, rows: list[tuple[Any, ...]]) -> None:
        calls.append(len(rows))
        if len(calls) == 2:
            pages = store._conn.execute("PRAGMA page_count").fetchone()[0]
            store._conn.execute(f"PRAGMA max_page_count = {pages}")
        real(store, rows)

    monkeypatch.setattr(Store, "_insert_rows", full)


# 275 revisions, pages of 100: 275-176, 175-76, 75-1
FAILURES: list[Any] = [
    pytest.param(
        lambda path, mp: _refuse_revision(path, 150),
        "fetched 2 history pages / 200 revisions",
        "cannot write, nothing was changed: row refused by a trigger",
        id="row-refused",
    ),
    pytest.param(
        lambda _path, mp: _lie_about_the_newest(mp),
        "fetched 3 history pages / 275 revisions",
        "25 of 75 revisions written as new were stored already",
        id="unique-violation",
    ),
    pytest.param(
        lambda _path, mp: _disk_full(mp),
        "fetched 2 history pages / 200 revisions",
        "cannot write, nothing was changed: ",
        id="disk-full",
    ),
]


@pytest.fixture
def fake_cli(monkeypatch: pytest.MonkeyPatch) -> FakeService:
    """The CLI's API: 25 revisions, which the tests sync before they add 250 more (3 pages)."""
    service = FakeService(25, reports=3)
    patched = functools.partial(
        PlatformClient, transport=httpx.MockTransport(service), sleep=lambda _s: None
    )
    monkeypatch.setattr("auditor.workflows.sync.PlatformClient", patched)
    return service


def _failed_sync(
    tmp_path: Path, fail: Callable[..., None], mp: pytest.MonkeyPatch
) -> tuple[int, str, bytes, bytes]:
    """Sync state.db (a copy of start.db) with `fail` set up; gives the exit code, the error,
    and the file before and after."""
    path = tmp_path / "state.db"
    shutil.copy(tmp_path / "start.db", path)
    with mp.context() as m:
        fail(path, m)
        before = path.read_bytes()
        code, out, err = cli(
            tmp_path, "sync", "--no-usage", "--base-url", BASE, "--state", path.name
        )
    assert out == ""
    return code, err, before, path.read_bytes()


@pytest.mark.parametrize(("fail", "counts", "message"), FAILURES)
def test_a_write_failing_in_the_writer_fails_the_sync_as_inline_and_saves_nothing(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    fake_cli: FakeService,
    fail: Callable[..., None],
    counts: str,
    message: str,
) -> None:
    code, _, err = cli(tmp_path, "sync", "--no-usage", "--base-url", BASE, "--state", "start.db")
    assert code == 0, err
    fake_cli.add_revisions(250)
    _inline(monkeypatch, True)
    inline = _failed_sync(tmp_path, fail, monkeypatch)
    _inline(monkeypatch, False)
    background = _failed_sync(tmp_path, fail, monkeypatch)
    code, err, before, after = background
    assert (code, err) == inline[:2]
    # the counts are those of the page whose write failed, not of the page redacted meanwhile
    assert err.startswith(f"auditor: error: sync failed, nothing saved ({counts} and "), err
    assert message in err and code == 2 and err.count("\n") == 1
    assert after == before  # nothing of the sync


def test_a_failed_write_is_raised_before_a_later_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The page after the one whose write fails holds a bad item: the sync fails with the
    # write's error, which came first (as inline), and the counts then, not the later page's.
    service = FakeService(35)
    service.revisions[20]["updatedAt"] = "not a date"  # on the second page (25 … 16)
    path = tmp_path / "state.db"
    _sync_file(path, FakeService(0))
    before = dump(path)
    _refuse_revision(path, 33)  # on the first page (35 … 26)
    for inline in (True, False):
        _inline(monkeypatch, inline)
        with pytest.raises(StoreError) as info:
            _sync_file(path, service)
        assert str(info.value).startswith(
            "sync failed, nothing saved (fetched 1 history pages / 10 revisions and 0 report "
            "pages / 0 reports before): state file "
        ), str(info.value)
        assert "row refused by a trigger" in str(info.value)
        assert dump(path) == before


# -- an interruption while a write is pending --------------------------------------------------


def _slow_writes(monkeypatch: pytest.MonkeyPatch, started: threading.Event) -> None:
    """Each background write waits a moment before it runs: the interruption lands meanwhile."""
    real = Store._insert_rows

    def slow(store: Store, rows: list[tuple[Any, ...]]) -> None:
        if threading.current_thread() is not threading.main_thread():
            started.set()
            time.sleep(0.3)
        real(store, rows)

    monkeypatch.setattr(Store, "_insert_rows", slow)


@pytest.mark.parametrize("interruption", [KeyboardInterrupt, Terminated])
def test_an_interruption_while_a_write_is_pending_saves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, interruption: type[BaseException]
) -> None:
    path = tmp_path / "state.db"
    _sync_file(path, FakeService(5))
    before = dump(path)
    started = threading.Event()
    _slow_writes(monkeypatch, started)

    def progress(_message: str) -> None:
        assert started.wait(5)  # page 1's rows are being written
        raise interruption

    with Store.open(path, fingerprint_key=KEY) as store:
        store.register_secret(TOKEN)
        with client_for(FakeService(40)) as client, pytest.raises(interruption):
            sync(store, client, clock=lambda: NOW, progress=progress)
        assert store.count_revisions() == 5
    assert dump(path) == before


def test_sigterm_while_a_write_is_pending_exits_143_and_saves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_cli: FakeService
) -> None:
    code, _, err = cli(tmp_path, "sync", "--no-usage", "--base-url", BASE, "--state", "s.db")
    assert code == 0, err
    before = (tmp_path / "s.db").read_bytes()
    fake_cli.add_revisions(250)
    real = Store._insert_rows

    def terminated_meanwhile(store: Store, rows: list[tuple[Any, ...]]) -> None:
        if threading.current_thread() is not threading.main_thread():
            os.kill(os.getpid(), signal.SIGTERM)  # raised in the main thread, mid-redaction
            time.sleep(0.3)
        real(store, rows)

    monkeypatch.setattr(Store, "_insert_rows", terminated_meanwhile)
    code, out, err = cli(tmp_path, "sync", "--no-usage", "--base-url", BASE, "--state", "s.db")
    assert (code, out, err) == (143, "", "auditor: exit 143: terminated (SIGTERM)\n")
    assert (tmp_path / "s.db").read_bytes() == before


def test_the_store_waits_for_a_pending_write_before_any_other_use(tmp_path: Path) -> None:
    # A pending write is waited for by the store's next use: its rows are there to read, and
    # its error is raised by that use, once.
    with Store.open(tmp_path / "state.db", fingerprint_key=KEY) as store, store.transaction():
        sync_id = store.begin_sync(NOW, BASE)
        gate = threading.Event()
        real = store._insert_rows

        def gated(rows: list[tuple[Any, ...]]) -> None:
            assert gate.wait(5)
            real(rows)

        store._insert_rows = gated  # type: ignore[method-assign]
        rows = [(1, "default", "2026-10-01T00:00:00.000000+00:00", "", "", "", b"{}", "", sync_id)]
        store.insert_new_revisions([rows[0]], background=True)
        threading.Timer(0.2, gate.set).start()
        assert store.count_revisions() == 1  # waited for the write
        store.insert_new_revisions([rows[0]], background=True)  # the same row again: refused
        gate.set()
        with pytest.raises(StoreError, match="1 of 1 revisions written as new were stored"):
            store.count_revisions()
        assert store.count_revisions() == 1
        stored = store.get_revision(1)
        assert stored is not None and stored.content_hash == _sha256(b"{}")


def _sha256(body: bytes) -> str:
    import hashlib

    return hashlib.sha256(body).hexdigest()


def _pg_rows(url: str) -> dict[str, list[tuple[Any, ...]]]:
    from auditor.store import postgres

    db = postgres.connect(url, "default")
    try:
        return {
            t: sorted(
                (
                    tuple(bytes(v) if isinstance(v, memoryview) else v for v in row)
                    for row in db.execute(f"SELECT * FROM {db.schema}.{t}").fetchall()
                ),
                key=repr,
            )
            for t in ("revisions", "reports", "scrub_index", "syncs", "integrity_issues")
        }
    finally:
        db.close()


def test_the_postgres_store_stores_what_it_stored_writing_inline(
    pg_cluster: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import uuid

    found = []
    for inline in (True, False):
        _inline(monkeypatch, inline)
        url = str(pg_cluster.create_database(f"t_{uuid.uuid4().hex[:16]}"))
        _two_syncs(url)
        found.append(_pg_rows(url))
    assert found[0] == found[1]
    assert len(found[1]["revisions"]) == 61 and found[1]["scrub_index"]


def test_a_write_failing_as_its_transaction_ends_rolls_it_back(tmp_path: Path) -> None:
    # Nothing used the store after the write was handed over: the transaction's end waits for
    # it, raises its error and rolls back, and the store goes on as before.
    row = (1, "default", "2026-10-01T00:00:00.000000+00:00", "", "", "", b"{}", "", 1)
    with Store.open(tmp_path / "state.db", fingerprint_key=KEY) as store:
        with store.transaction():
            store.insert_new_revisions([row])
        stored = pytest.raises(StoreError, match="1 of 2 revisions written as new were stored")
        with stored, store.transaction():
            store.insert_new_revisions([(2, *row[1:]), row], background=True)
        assert store.revision_numbers() == [1]
        with store.transaction():
            store.insert_new_revisions([(2, *row[1:])], background=True)
        assert store.revision_numbers() == [1, 2]
