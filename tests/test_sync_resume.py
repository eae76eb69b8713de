"""A sync that cannot finish keeps its new history pages, and the next one goes on from them
(tester T62's LOW-1: a first history longer than one `deadline`, or cut by a 401 at page k, was
fetched again from page 1 on every rerun, and never finished).

Against a real loopback service, through the CLI. What is kept is never history (`run
--offline`, readers), stays when the first sync's state file would otherwise be removed, is
redacted and scrubbed as stored rows are, and a resumed sync's result equals a from-scratch
sync's: revisions, content hashes, the scrub index and the secret memory. Any disagreement
between the kept pages and the service drops them with one data-quality warning.
"""

from __future__ import annotations

import hashlib
import os
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import orjson
import pytest

from auditor.store import Store, scrubindex
from tests.conftest import run_cli, secret_forms, serve_http

pytestmark = pytest.mark.e2e  # a server over HTTP, the CLI

TOKEN = "tok-resume-0123456789abcdef"
KEY = "resume-tests-fingerprint-key-0123"
HISTORY = "/api/v0/organization/enterprise-controls/history"
SECRET = "sk-live-Zq8vR2mXw9Lp4Tn7Hc3Jd6Fb1Kg5Ys0Ue"  # an API key in a model's `apiKey`
PAGE = 10


def change(rev: int, note: str = "") -> dict[str, Any]:
    settings: dict[str, Any] = {"maxAutonomyLevel": "low", "n": rev}
    if note:
        settings["note"] = note
    return {
        "revision": rev,
        "settings": settings,
        "user": {"id": f"u{rev}", "email": f"u{rev}@example.com", "name": "U"},
        "updatedAt": datetime.fromtimestamp(1_780_000_000 + rev * 3600, UTC).isoformat(),
    }


class Service:
    """The history of revisions 1..n, newest first, `PAGE` a page, its cursor the offset; a
    status to answer once at a given offset (`fail`), and every request seen."""

    def __init__(self, n: int, *, keyset: bool = False) -> None:
        self.revisions = {r: change(r) for r in range(1, n + 1)}
        self.keyset = keyset  # the cursor: the last revision sent (else the offset)
        self.fail: dict[int, int] = {}  # offset -> status, answered once
        self.requests: list[str] = []

    def answer(self, path: str, query: dict[str, str]) -> tuple[int, bytes]:
        if path != HISTORY:
            return 404, b"{}"
        cursor = int(query.get("cursor", "0"))
        limit = int(query["limit"])
        self.requests.append(query.get("cursor", ""))
        if cursor in self.fail:
            status = self.fail.pop(cursor)
            return status, orjson.dumps({"status": status, "title": "refused"})
        numbers = sorted(self.revisions, reverse=True)
        offset = cursor
        if self.keyset:
            offset = sum(n >= cursor for n in numbers) if cursor else 0
        more = offset + limit < len(numbers)
        changes = [self.revisions[r] for r in numbers[offset : offset + limit]]
        following = str(changes[-1]["revision"]) if self.keyset and changes else str(offset + limit)
        paging = {"hasMore": True, "nextCursor": following} if more else {}
        return 200, orjson.dumps({"changes": changes, "pagination": paging or {"hasMore": False}})


@contextmanager
def serving(service: Service) -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            parts = urlsplit(self.path)
            query = {k: v[0] for k, v in parse_qs(parts.query).items()}
            status, body = service.answer(parts.path, query)
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    with contextmanager(serve_http)(Handler) as url:
        yield url


def cli(url: str, tmp: Path, state: str | Path, *argv: str) -> tuple[int, str, str]:
    env = {
        "AUDITOR_TOKEN": TOKEN,
        "AUDITOR_BASE_URL": url,
        "AUDITOR_STATE": str(state),
        "AUDITOR_FINGERPRINT_KEY": KEY,
    }
    (tmp / "auditor.toml").write_text(f"page_size = {PAGE}\ntimeout = 5\ndeadline = 60\n")
    return run_cli([*argv, "--config", "auditor.toml"], env, tmp)


def sync(url: str, tmp: Path, state: str | Path) -> tuple[int, str, str]:
    return cli(url, tmp, state, "sync", "--no-usage")


def contents(state: str | Path) -> tuple[Any, ...]:
    """What a from-scratch sync and a resumed one must agree on: each revision (settings,
    author, time, content hash), the scrub index, the secret memory; and the pages kept."""
    with Store.open(state, readonly=True, fingerprint_key=KEY.encode()) as store:
        revisions = [
            (r.revision, r.content_hash, r.settings, r.user, r.updated_at)
            for r in store.iter_revisions()
        ]
        db: Any = store._db
        index = sorted(scrubindex.stored(db))
        memory = sorted(
            tuple(r) for r in db.execute("SELECT fingerprint, length FROM secret_memory")
        )
        kept = db.execute("SELECT COUNT(*) FROM history_staged").fetchone()[0]
        return revisions, index, memory, kept


def from_scratch(service: Service, tmp: Path) -> tuple[Any, ...]:
    """The contents a sync of `service` into a new state file gives."""
    other = tmp / "scratch"
    other.mkdir()
    with serving(service) as url:
        code, _, err = sync(url, other, other / "state.db")
    assert code == 0, err
    return contents(other / "state.db")


def test_a_first_sync_cut_by_a_401_keeps_its_pages_and_the_next_goes_on_from_them(
    tmp_path: Path,
) -> None:
    service = Service(55)  # 6 pages
    service.fail[40] = 401  # page 5
    state = tmp_path / "state.db"
    with serving(service) as url:
        code, _, err = sync(url, tmp_path, state)
        assert code == 2
        assert "sync failed, kept 4 pages (40 revisions); the next sync continues from there" in (
            err
        )
        assert state.exists()  # a failed first sync's file stays when it kept pages
        # kept pages are no history: readers and an offline run see no sync, no revision
        code, out, err = cli(url, tmp_path, state, "history")
        assert code != 0 and "holds no completed sync" in err
        code, out, err = cli(url, tmp_path, state, "run", "--offline", "--out", "out")
        assert code == 2 and "not evaluated (no settings revision)" in err, err
        service.requests.clear()
        code, out, err = sync(url, tmp_path, state)
    assert code == 0, err
    assert "55 revisions (55 new)" in out and "data-quality" not in out
    # the head page (it meets the kept pages), the last kept page again (it must come back the
    # same), then pages 5 and 6: not all 6 pages again
    assert service.requests == ["", "30", "40", "50"]
    assert contents(state) == from_scratch(service, tmp_path)


def test_new_revisions_at_the_head_before_a_cursor_that_holds_its_place(tmp_path: Path) -> None:
    """A cursor that names the last revision sent (not an offset): 3 new revisions at the head
    leave the kept pages where they were; the head page brings the new ones and meets them."""
    service = Service(45, keyset=True)
    service.fail[16] = 401  # page 4: revisions 15..6
    state = tmp_path / "state.db"
    with serving(service) as url:
        assert sync(url, tmp_path, state)[0] == 2
        for rev in range(46, 49):
            service.revisions[rev] = change(rev)
        service.requests.clear()
        code, out, err = sync(url, tmp_path, state)
    assert code == 0, err
    assert "48 revisions (48 new)" in out and "data-quality" not in out
    assert service.requests == ["", "26", "16", "6"]  # the head, kept page 3 again, 4, 5
    assert contents(state) == from_scratch(service, tmp_path)


def test_three_syncs_cut_short_one_after_the_other_still_give_the_same_history(
    tmp_path: Path,
) -> None:
    """Kept pages, then 25 new revisions (3 head pages before the kept ones) and a second cut
    right after the head met them, then a third cut one page on: each sync keeps what it read,
    and the last one's history is a from-scratch sync's."""
    service = Service(45, keyset=True)
    service.fail[26] = 401  # page 3
    state = tmp_path / "state.db"
    with serving(service) as url:
        assert "kept 2 pages (20 revisions)" in sync(url, tmp_path, state)[2]
        for rev in range(46, 71):
            service.revisions[rev] = change(rev)
        service.fail[36] = 401  # the last kept page, asked for again
        assert "kept 2 pages (45 revisions)" in sync(url, tmp_path, state)[2]
        service.fail[26] = 401  # the page after it
        assert "kept 2 pages (45 revisions)" in sync(url, tmp_path, state)[2]
        service.fail[16] = 401
        assert "kept 3 pages (55 revisions)" in sync(url, tmp_path, state)[2]
        service.requests.clear()
        code, out, err = sync(url, tmp_path, state)
    assert code == 0, err
    assert "70 revisions (70 new)" in out and "data-quality" not in out
    assert service.requests == ["", "26", "16", "6"]
    assert contents(state) == from_scratch(service, tmp_path)


def test_new_revisions_at_the_head_before_an_offset_cursor_drop_the_kept_pages(
    tmp_path: Path,
) -> None:
    """An offset cursor: 3 new revisions at the head move every page 3 revisions down, and the
    kept cursor would skip or repeat some: the last kept page, asked for again, shows it, and
    the sync reads from the start (never mixing); the result is a from-scratch sync's."""
    service = Service(45)
    service.fail[30] = 401
    state = tmp_path / "state.db"
    with serving(service) as url:
        assert sync(url, tmp_path, state)[0] == 2
        for rev in range(46, 49):
            service.revisions[rev] = change(rev)
        code, out, err = sync(url, tmp_path, state)
    assert code == 0, err
    assert "48 revisions (48 new)" in out and "1 data-quality warning" in out
    assert "the last kept page (history page 3) came back with other revisions" in out
    assert contents(state) == from_scratch(service, tmp_path)


def test_a_kept_revision_changed_since_drops_the_kept_pages_with_one_warning(
    tmp_path: Path,
) -> None:
    service = Service(45)
    service.fail[30] = 401
    state = tmp_path / "state.db"
    with serving(service) as url:
        assert sync(url, tmp_path, state)[0] == 2
        service.revisions[38] = change(38, note="rewritten")  # on kept page 1
        service.requests.clear()
        code, out, err = sync(url, tmp_path, state)
    assert code == 0, err
    assert "1 data-quality warning" in out
    assert "the history changed since the kept pages (revision 38)" in out
    assert "kept pages dropped, read from the start" in out
    assert service.requests == ["", "", "10", "20", "30", "40"]  # the head, then all of it
    assert contents(state) == from_scratch(service, tmp_path)


def test_a_kept_cursor_the_service_refuses_drops_the_kept_pages_and_reads_from_the_start(
    tmp_path: Path,
) -> None:
    service = Service(45)
    service.fail[30] = 401
    state = tmp_path / "state.db"
    with serving(service) as url:
        assert sync(url, tmp_path, state)[0] == 2
        service.fail[20] = 400  # the last kept page's cursor is no longer one it knows
        code, out, err = sync(url, tmp_path, state)
    assert code == 0, err
    assert "the service refused the kept pages' cursor (400)" in out
    assert contents(state) == from_scratch(service, tmp_path)


def test_a_gap_where_the_kept_pages_were_drops_them(tmp_path: Path) -> None:
    service = Service(45)
    service.fail[30] = 401
    state = tmp_path / "state.db"
    with serving(service) as url:
        assert sync(url, tmp_path, state)[0] == 2
        del service.revisions[40]  # inside the kept pages: the service's history is another
        code, out, err = sync(url, tmp_path, state)
    assert code == 0, err
    assert "kept pages dropped, read from the start" in out
    assert contents(state) == from_scratch(service, tmp_path)


def test_kept_pages_of_another_page_size_are_dropped(tmp_path: Path) -> None:
    service = Service(45)
    service.fail[30] = 401
    state = tmp_path / "state.db"
    with serving(service) as url:
        assert sync(url, tmp_path, state)[0] == 2
        global PAGE
        old, PAGE = PAGE, 20
        try:
            code, out, err = sync(url, tmp_path, state)
            assert code == 0, err
            assert "the history pages were kept with another page_size" in out
            assert contents(state) == from_scratch(service, tmp_path)
        finally:
            PAGE = old


def test_a_secret_learned_on_a_later_page_is_scrubbed_from_a_kept_page(tmp_path: Path) -> None:
    """Revision 44 (kept page 1) holds the key pasted into a note, unlabelled; revision 5 (page
    5, read by the second sync) names it as a model's `apiKey`. The kept row is redacted again
    then: the key is nowhere in the file, and the result is a from-scratch sync's."""
    service = Service(45)
    service.revisions[44] = change(44, note=f"the key is {SECRET}")
    service.revisions[5]["settings"]["customModels"] = [{"id": "m", "apiKey": SECRET}]
    service.fail[30] = 401
    state = tmp_path / "state.db"
    with serving(service) as url:
        assert sync(url, tmp_path, state)[0] == 2
        code, _out, err = sync(url, tmp_path, state)
    assert code == 0, err
    assert SECRET.encode() not in state.read_bytes()
    [kept] = [r for r in contents(state)[0] if r[0] == 44]
    assert SECRET not in str(kept) and "[secret fp:" in kept[2]["note"]
    assert contents(state) == from_scratch(service, tmp_path)


def test_a_secret_learned_on_a_kept_page_is_remembered_and_scrubbed_at_once(
    tmp_path: Path,
) -> None:
    """Revision 45 (page 1) pastes the key; revision 33 (page 2) names it: the kept page 1 is
    redacted again as page 2 is kept, and the key's fingerprint is remembered with it, so the
    file never holds the key, even while the sync is unfinished."""
    service = Service(45)
    service.revisions[45] = change(45, note=f"the key is {SECRET}")
    service.revisions[33]["settings"]["customModels"] = [{"id": "m", "apiKey": SECRET}]
    service.fail[30] = 401
    state = tmp_path / "state.db"
    with serving(service) as url:
        assert sync(url, tmp_path, state)[0] == 2
        assert SECRET.encode() not in state.read_bytes()
        assert contents(state)[2]  # remembered
        assert sync(url, tmp_path, state)[0] == 0
    assert SECRET.encode() not in state.read_bytes()
    assert contents(state) == from_scratch(service, tmp_path)


def test_a_cursor_holding_a_secret_is_never_kept(tmp_path: Path) -> None:
    """The pages before a cursor the redactor changes are kept with the cursor before it; the
    token is never stored."""
    service = Service(25)
    real = service.answer

    def answer(path: str, query: dict[str, str]) -> tuple[int, bytes]:
        if query.get("cursor", "").startswith(TOKEN):
            query = {**query, "cursor": query["cursor"][len(TOKEN) :]}
        status, body = real(path, query)
        if status == 200 and b'"nextCursor":"20"' in body:
            body = body.replace(b'"nextCursor":"20"', f'"nextCursor":"{TOKEN}20"'.encode())
        return status, body

    service.answer = answer  # type: ignore[method-assign]
    service.fail[20] = 401
    state = tmp_path / "state.db"
    with serving(service) as url:
        code, _, err = sync(url, tmp_path, state)
        assert code == 2
        assert "kept 1 page (10 revisions)" in err
        assert TOKEN.encode() not in state.read_bytes()
        code, out, err = sync(url, tmp_path, state)
    assert code == 0, err
    assert "25 revisions (25 new)" in out


def prefixed_cursor(service: Service, value: str, after: str) -> None:
    """The service sends `value` + `after` as the cursor it sends as `after` (and strips the
    prefix when that cursor comes back): an opaque cursor that holds the value."""
    real = service.answer

    def answer(path: str, query: dict[str, str]) -> tuple[int, bytes]:
        if query.get("cursor", "").startswith(value):
            query = {**query, "cursor": query["cursor"][len(value) :]}
        status, body = real(path, query)
        old = f'"nextCursor":"{after}"'.encode()
        if status == 200 and old in body:
            body = body.replace(old, f'"nextCursor":"{value}{after}"'.encode())
        return status, body

    service.answer = answer  # type: ignore[method-assign]


def state_bytes(state: Path) -> bytes:
    """The state file and whatever SQLite keeps beside it (journal, WAL)."""
    return b"".join(p.read_bytes() for p in state.parent.glob(state.name + "*") if p.is_file())


def test_a_cursor_that_a_later_page_names_a_secret_is_not_kept(tmp_path: Path) -> None:
    """Page 1's cursor holds a value page 2 names as a model's `apiKey` (so it was clean when
    it came, and is a secret once page 2 is read): page 3 fails. The pages are not kept (their
    only resume point held the secret), and the secret's bytes are nowhere in the file."""
    value = "opaquevalueXyzzyPlugh4821"
    service = Service(45)
    service.revisions[33]["settings"]["customModels"] = [{"id": "m", "apiKey": value}]
    prefixed_cursor(service, value, "10")
    service.fail[20] = 401
    state = tmp_path / "state.db"
    with serving(service) as url:
        code, _, err = sync(url, tmp_path, state)
        assert code == 2 and "sync failed, nothing saved" in err, err
        assert not state.exists() or value.encode() not in state_bytes(state)
        code, _, err = sync(url, tmp_path, state)
    assert code == 0, err
    assert value.encode() not in state_bytes(state)
    assert contents(state) == from_scratch(service, tmp_path)


def test_a_head_cursor_holding_a_secret_drops_the_kept_pages_saying_why(tmp_path: Path) -> None:
    """Review R36 #2: the history's head page leads on with a cursor that holds the token, so
    nothing after it can be kept from a cursor: the kept pages are dropped with a warning that
    names that cause (it said the head did not lead to the kept pages, which it did), and the
    history read from the start equals a from-scratch sync's."""
    service = Service(45, keyset=True)
    service.fail[26] = 401
    state = tmp_path / "state.db"
    with serving(service) as url:
        code, _, err = sync(url, tmp_path, state)
        assert code == 2 and "kept 2 pages (20 revisions)" in err, err
        for r in range(46, 61):
            service.revisions[r] = change(r)
        prefixed_cursor(service, TOKEN, "51")  # head page 1's next cursor holds the token
        code, out, err = sync(url, tmp_path, state)
    assert code == 0, err
    assert "the cursor after history page 1 holds a secret, so no page could be kept" in out
    assert "did not lead" not in out + err and TOKEN not in out + err
    assert contents(state) == from_scratch(service, tmp_path)


def test_a_kept_cursor_that_a_later_sync_names_a_secret_is_dropped(tmp_path: Path) -> None:
    """Sync 1 keeps pages whose cursor holds a value no page named yet; a new revision names it
    as a model's `apiKey`, and sync 2 fails asking for the last kept page again: the kept pages
    are dropped (the record would go on holding the secret), no byte of it stays in the file,
    and sync 3 reads from the start."""
    value = "opaquevalueXyzzyPlugh4821"
    service = Service(45, keyset=True)
    prefixed_cursor(service, value, "26")
    service.fail[26] = 401  # page 3
    state = tmp_path / "state.db"
    with serving(service) as url:
        code, _, err = sync(url, tmp_path, state)
        assert code == 2 and "kept 2 pages (20 revisions)" in err, err
        service.revisions[46] = change(46)
        service.revisions[46]["settings"]["customModels"] = [{"id": "m", "apiKey": value}]
        service.fail[36] = 401  # the last kept page, asked for again
        code, _, err = sync(url, tmp_path, state)
        assert code == 2 and "sync failed, nothing saved" in err, err
        assert value.encode() not in state_bytes(state)
        with Store.open(state, readonly=True, fingerprint_key=KEY.encode()) as store:
            assert store.has_staged() is False
        service.requests.clear()
        code, _, err = sync(url, tmp_path, state)
    assert code == 0, err
    assert service.requests[0] == "" and len(service.requests) == 5  # from the start
    assert value.encode() not in state_bytes(state)
    assert contents(state) == from_scratch(service, tmp_path)


def test_a_sync_that_fails_once_the_history_is_read_keeps_all_of_it(tmp_path: Path) -> None:
    """The readiness listing fails after the whole history was read: the next sync reads the
    head page only, meets the kept pages, and finishes."""
    service = Service(25)
    state = tmp_path / "state.db"
    with serving(service) as url:
        env_app = f"{url}/app"
        (tmp_path / "auditor.toml").write_text(f"page_size = {PAGE}\n")
        code, _, err = run_cli(
            ["sync", "--no-usage", "--config", "auditor.toml"],
            {
                "AUDITOR_TOKEN": TOKEN,
                "AUDITOR_BASE_URL": url,
                "AUDITOR_APP_URL": env_app,
                "AUDITOR_STATE": str(state),
                "AUDITOR_FINGERPRINT_KEY": KEY,
            },
            tmp_path,
        )
        assert code == 2 and "kept 3 pages (25 revisions)" in err, err
        service.requests.clear()
        code, _out, err = sync(url, tmp_path, state)
    assert code == 0, err
    assert service.requests == ["", "20"]  # the head, then the last kept page again
    assert contents(state) == from_scratch(service, tmp_path)


def test_a_resumed_sync_records_only_the_stored_revisions_it_read_again(tmp_path: Path) -> None:
    """The integrity coverage a resumed sync records (`history_recheck`, the reports' line)
    names the stored revisions it read again and compared (36-45, the page that met them),
    never the kept ones, of which only the head and the last kept page were read again: the
    kept pages between them are taken as kept, as stored revisions are."""
    service = Service(45)
    state = tmp_path / "state.db"
    with serving(service) as url:
        assert sync(url, tmp_path, state)[0] == 0
        for number in range(46, 106):
            service.revisions[number] = change(number)
        service.fail[40] = 401  # page 5: pages 1-4 (revisions 105-66) kept
        code, _, err = sync(url, tmp_path, state)
        assert code == 2 and "kept 4 pages (40 revisions)" in err, err
        with Store.open(state, readonly=True, fingerprint_key=KEY.encode()) as store:
            record = store.staged_resume()
            assert record is not None and (record["lowest"], record["highest"]) == (66, 105)
        service.requests.clear()
        code, _, err = sync(url, tmp_path, state)
    assert code == 0, err
    assert service.requests == ["", "30", "40", "50", "60"]  # head, last kept page, the rest
    with Store.open(state, readonly=True, fingerprint_key=KEY.encode()) as store:
        assert store.history_recheck() == (True, (36, 45))
    assert contents(state) == from_scratch(service, tmp_path)


def test_a_page_that_cannot_be_fetched_keeps_every_page_before_it(tmp_path: Path) -> None:
    """Pages are kept 10 at a time, but a page the service refuses keeps the 3 complete pages
    read since the last batch too: the next sync reads the head, the last kept page again and
    the rest."""
    service = Service(145)
    service.fail[130] = 401  # page 14
    state = tmp_path / "state.db"
    with serving(service) as url:
        code, _, err = sync(url, tmp_path, state)
        assert code == 2 and "kept 13 pages (130 revisions)" in err, err
        service.requests.clear()
        code, _, err = sync(url, tmp_path, state)
    assert code == 0, err
    assert service.requests == ["", "120", "130", "140"]
    assert contents(state) == from_scratch(service, tmp_path)


@contextmanager
def interrupted_at_page_14(service: Service, cursor: str = "130") -> Iterator[None]:
    """Ctrl-C while page 14 (the page at `cursor`) is on its way, once (the service interrupts
    this process as it answers, the interrupt landing while the client waits), SIGINT handled
    as in a terminal."""
    real = service.answer
    once = [True]

    def answer(path: str, query: dict[str, str]) -> tuple[int, bytes]:
        if query.get("cursor") == cursor and once:
            once.clear()
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.5)
        return real(path, query)

    service.answer = answer  # type: ignore[method-assign]
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        service.answer = real  # type: ignore[method-assign]


@pytest.mark.parametrize(("cursor", "pages"), [("130", 13), ("30", 3)])
def test_ctrl_c_while_a_page_is_awaited_keeps_the_pages_read_and_says_so(
    tmp_path: Path, cursor: str, pages: int
) -> None:
    """Ctrl-C while page 14 (or page 4, before the first batch of 10 is kept) is on its way
    (the service interrupts this process as it answers): exit 130, the state file kept with
    every page read before it (T101 #2: those read since the last batch were lost, all of them
    when a page never came), and the interrupted sync says what it kept and had fetched, as a
    failed one does (tester T73 LOW-3: it said nothing but the exit line). The next sync reads
    the head, the last kept page again and the rest."""
    service = Service(145)
    state = tmp_path / "state.db"
    with interrupted_at_page_14(service, cursor=cursor), serving(service) as url:
        code, _, err = sync(url, tmp_path, state)
        assert code == 130, err
        assert (
            f"auditor: sync interrupted: kept {pages} pages ({pages * 10} revisions); the next "
            f"sync continues from there (fetched {pages} history pages / {pages * 10} revisions "
            "and 0 report pages / 0 reports before)\n"
        ) in err, err
        service.requests.clear()
        code, _, err = sync(url, tmp_path, state)
    assert code == 0, err
    assert service.requests[:2] == ["", str((pages - 1) * 10)]
    assert contents(state) == from_scratch(service, tmp_path)


def test_ctrl_c_while_the_first_page_is_awaited_says_nothing_was_saved(tmp_path: Path) -> None:
    service = Service(145)
    with interrupted_at_page_14(service, cursor=None), serving(service) as url:  # type: ignore[arg-type]
        code, _, err = sync(url, tmp_path, tmp_path / "state.db")
    assert code == 130, err
    assert (
        "auditor: sync interrupted: nothing saved (fetched 0 history pages / 0 revisions and "
        "0 report pages / 0 reports before)\n"
    ) in err, err
    assert not (tmp_path / "state.db").exists()


def test_a_run_whose_sync_fails_says_so_once(tmp_path: Path) -> None:
    """Tester T73 LOW-2: `auditor run` whose sync is refused at page 14 audits the stored data
    and says why in one sentence, on stderr and in the reports (it said `sync failed,
    auditing the stored data: sync failed, kept 13 pages …`)."""
    service = Service(145)
    service.fail[130] = 401
    out = tmp_path / "out"
    with serving(service) as url:
        code, _, err = cli(
            url, tmp_path, tmp_path / "state.db", "run", "--no-usage", "--no-readiness",
            "--out", str(out), "-o", "json",
        )  # fmt: skip
    assert code == 2, err
    assert "auditor: sync failed, auditing the stored data: kept 13 pages (130 revisions); " in err
    assert [line for line in err.splitlines() if line.count("sync failed") > 1] == [], err
    listed = orjson.loads((out / "findings.json").read_bytes())["not_evaluated"]
    assert (
        [line for line in listed if "sync failed" in line]
        == [
            line
            for line in listed
            if line.startswith("sync failed: kept 13 pages (130 revisions); ")
        ]
        != []
    ), listed


def test_a_secret_read_after_the_last_kept_batch_is_scrubbed_from_it_when_interrupted(
    location: Path | str, tmp_path: Path
) -> None:
    """Review R36 #1: revision 140 (kept with the first batch) holds a value nothing marks as
    a secret; revision 30, on page 12, read after that batch, names it a model's apiKey;
    Ctrl-C while page 14 is on its way. The kept row is scrubbed and the secret remembered
    before the command ends, as keeping a batch does: no form of it is left in the store (it
    stayed in clear in the kept row)."""
    from pgcluster import stored_bytes

    value = "opaquevalueXyzzyPlugh4821"
    service = Service(145)
    service.revisions[140] = change(140, note=f"see {value} for the model")
    service.revisions[30]["settings"]["customModels"] = [{"id": "m", "apiKey": value}]
    with interrupted_at_page_14(service), serving(service) as url:
        code, _, err = sync(url, tmp_path, location)
        assert code == 130, err
        assert "kept 13 pages (130 revisions)" in err
        raw = state_bytes(location) if isinstance(location, Path) else stored_bytes(location)
        assert [f for f in secret_forms(value) if f.encode() in raw] == []
        code, _, err = sync(url, tmp_path, location)
    assert code == 0, err
    assert contents(location) == from_scratch(service, tmp_path)


def test_a_batch_whose_commit_fails_after_its_scrub_leaves_no_secret_in_the_kept_pages(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Review R37 #1: the second batch learns a secret (revision 30's apiKey) that a kept row
    of the first holds unlabelled (revision 140), scrubs it, and its COMMIT fails (a full disk):
    the rollback undoes the scrub, so the failed sync's last scrub must not take the secret as
    scrubbed (it did: the kept row stayed in clear)."""
    import sqlite3

    from auditor.store.database import Store

    value = "opaquevalueXyzzyPlugh4821"
    service = Service(145)
    service.revisions[140] = change(140, note=f"see {value} for the model")
    service.revisions[30]["settings"]["customModels"] = [{"id": "m", "apiKey": value}]
    real = Store._write_scrub_index
    fired: list[int] = []

    def write_index(self: Store) -> None:
        if not fired and value in self.redactor.memory.values:
            fired.append(1)
            raise sqlite3.OperationalError("database or disk is full")
        real(self)

    monkeypatch.setattr(Store, "_write_scrub_index", write_index)
    state = tmp_path / "state.db"
    with serving(service) as url:
        code, _, err = sync(url, tmp_path, state)
    assert fired and code == 2, err
    assert "kept 10 pages (100 revisions)" in err and "disk is full" in err
    raw = state_bytes(state)
    assert [f for f in secret_forms(value) if f.encode() in raw] == []


def test_a_deadline_reached_midway_keeps_the_pages_read(tmp_path: Path) -> None:
    """The deadline through a fake clock (no timed test): every look at it is half a "second"
    later, of a deadline of 3.5; the pages read before it are kept, the next sync goes on from
    them."""
    from auditor.fetch import PlatformClient
    from auditor.workflows.sync import sync as run_sync

    service = Service(55)
    state = tmp_path / "state.db"
    now = [0.0]

    def clock() -> float:
        now[0] += 0.5
        return now[0]

    with serving(service) as url:
        with Store.open(state, fingerprint_key=KEY.encode()) as store:
            store.register_secret(TOKEN)
            client = PlatformClient(
                base_url=url,
                app_url=None,
                token=TOKEN,
                redactor=store.redactor,
                page_size=PAGE,
                deadline=3.5,
                clock=clock,
            )
            with client, pytest.raises(Exception, match=r"kept [1-5] pages? .*deadline"):
                run_sync(store, client)
            assert store.last_sync() is None and store.count_revisions() == 0
            first = len(service.requests)
        service.requests.clear()
        code, _out, err = sync(url, tmp_path, state)
    assert code == 0, err
    assert len(service.requests) < 6 <= first + len(service.requests)
    assert contents(state) == from_scratch(service, tmp_path)


def test_a_resumed_sync_into_postgresql_equals_a_from_scratch_one(
    tmp_path: Path, pg_url: str
) -> None:
    service = Service(45)
    service.revisions[44] = change(44, note=f"the key is {SECRET}")
    service.revisions[5]["settings"]["customModels"] = [{"id": "m", "apiKey": SECRET}]
    service.fail[30] = 401
    with serving(service) as url:
        code, _, err = sync(url, tmp_path, pg_url)
        assert code == 2 and "kept 3 pages (30 revisions)" in err, err
        assert Store.exists(pg_url)  # a failed first sync's schema stays when it kept pages
        code, _out, err = sync(url, tmp_path, pg_url)
    assert code == 0, err
    assert contents(pg_url) == from_scratch(service, tmp_path)


# --- the store: kept rows are covered by the migration, re-redaction and the scrub index ------


@pytest.fixture(params=["sqlite", "postgres"])
def location(request: pytest.FixtureRequest, tmp_path: Path) -> Path | str:
    """A new store's location: an SQLite file, or a fresh PostgreSQL database."""
    if request.param == "sqlite":
        return tmp_path / "state.db"
    return str(request.getfixturevalue("pg_url"))


def kept_row(number: int, settings: dict[str, Any]) -> tuple[Any, ...]:
    """A `history_staged` row as `Store.stage_page` takes it (settings as given: unredacted)."""
    from auditor.common.jsonutil import canonical
    from auditor.models import Revision, User
    from auditor.store.schema import revision_row

    body = canonical(settings)
    when = datetime(2026, 10, 1, tzinfo=UTC)
    digest = hashlib.sha256(body).hexdigest()
    rev = Revision(number, when, User("u", "u@example.com", "U"), settings, digest, "default")
    return revision_row(rev, 0, body)


RECORD = {
    "cursor": "20",
    "pages": 1,
    "revisions": 1,
    "lowest": 7,
    "top": None,
    "base_url": "http://127.0.0.1:1",
    "org": "default",
    "page_size": 10,
    "limit": 10,
    "last_cursor": None,
    "last_page": [7],
}


def test_a_store_of_schema_4_gains_the_kept_pages_table(location: Path | str) -> None:
    from pgcluster import raw_sql

    from auditor.store import schema
    from auditor.store.dialect import meta_text

    with Store.open(location) as store:
        assert store.has_staged() is False
    raw_sql(location, "DROP TABLE history_staged")
    raw_sql(location, "UPDATE meta SET value = ? WHERE key = 'schema_version'", (b"4",))
    with Store.open(location) as store:
        store.stage_page([kept_row(7, {"n": 7})], [None], RECORD)
        assert store.staged_numbers() == {7} and store.staged_resume() == RECORD
        version = store._db.execute("SELECT value FROM meta WHERE key = 'schema_version'")
        assert meta_text(version.fetchone()[0]) == str(schema.SCHEMA_VERSION) == "5"


def test_kept_rows_are_redacted_again_under_new_rules_and_leave_the_index_when_dropped(
    location: Path | str,
) -> None:
    """A kept row redacted under older rules (a `docker login -p` password let through) is
    redacted again when the store is opened for writing, as stored rows are; dropping the kept
    pages takes their pieces out of the scrub index."""
    from pgcluster import raw_sql, stored_bytes

    password = "Qz7pLm2Rx9wK"
    settings = {"hooks": {"Stop": [{"command": f"docker login -u ci -p {password} r.io"}]}}
    plain = {"note": "a-piece-only-the-kept-row-holds"}
    with Store.open(location) as store:
        store.stage_page([kept_row(7, settings), kept_row(6, plain)], [None, None], RECORD)
        assert any(b"a-piece-only-the-kept-row-holds" in p for p in scrubindex.stored(store._db))
    raw_sql(location, "DELETE FROM meta WHERE key = 'redaction'")
    assert password.encode() in stored_bytes(location)
    with Store.open(location) as store:
        assert store.redacted_again == 1
        again = store.staged_hash(7)
        assert again is not None and again != kept_row(7, settings)[7]
        store.drop_staged()
        assert store.has_staged() is False
        assert not any(b"a-piece-only" in p for p in scrubindex.stored(store._db))
    assert password.encode() not in stored_bytes(location)


def test_kept_pages_whose_cursor_new_rules_redact_are_dropped(location: Path | str) -> None:
    """A kept cursor that this auditor's rules redact (kept under older ones: a `docker login
    -p` password) is not left in the store: opening it for writing redacts the rows again and
    drops the kept pages, cursor and all."""
    from pgcluster import raw_sql, stored_bytes

    from auditor.store.dialect import meta_value

    password = "Qz7pLm2Rx9wK"
    with Store.open(location) as store:
        store.stage_page([kept_row(7, {"n": 7})], [None], RECORD)
        record = orjson.dumps({**RECORD, "cursor": f"docker login -u ci -p {password} r.io"})
        value = meta_value(store._db, record.decode())
    raw_sql(location, "UPDATE meta SET value = ? WHERE key = 'history_resume'", (value,))
    raw_sql(location, "DELETE FROM meta WHERE key = 'redaction'")
    assert password.encode() in stored_bytes(location)
    with Store.open(location) as store:
        assert store.has_staged() is False
    assert password.encode() not in stored_bytes(location)
