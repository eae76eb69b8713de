"""T82's paging findings (2, 4, 5, 6, 7), through the CLI against the emulator or a small server.

#2: an empty analytics `/users` page with `has_more: true` and a new cursor failed the whole
sync (`$.meta.has_more: true on an empty page`), where the history follows such pages.
#4: a service that suddenly listed no readiness reports while reports were stored passed
without a word (the history's equivalent is a data-quality warning).
#5: an item sent twice, alike, on one page (a revision, a report) was read once silently.
#6: `fetched N history pages` in a failed sync's line counted a refused page 1 as fetched when
an item's value was wrong, and not when its shape was.
#7: `nextCursor: ""` was called missing; an answer whose first byte is binary (an HTTP/2 frame)
was called `illegal request line`; `http://` to a server that resets every connection (a TLS
port) was retried with no hint that the scheme may be wrong.
"""

from __future__ import annotations

import socket
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

import pytest

from auditor.emulator import Emulator, start_emulator
from tests.conftest import FIXED_NOW, OWNER_TOKEN, emulator_env, run_cli
from tests.test_sync_hostile_t62 import (
    HISTORY,
    REPORTS,
    change,
    good,
    history,
    json_answer,
    report,
    service,
    sync,
)

pytestmark = pytest.mark.e2e  # servers over HTTP, the CLI


@pytest.fixture
def emu() -> Iterator[Emulator]:
    with start_emulator(tokens={OWNER_TOKEN: "owner"}, now=FIXED_NOW, revisions=30, repos=3) as e:
        yield e


def _cli(emu: Emulator, tmp: Path, *args: str, config: str = "") -> tuple[int, str, str]:
    path = tmp / "auditor.toml"
    path.write_text(f"page_size = 20\n{config}")
    env = emulator_env(emu, tmp / "state.db")
    return run_cli(["sync", "--config", str(path), *args], env, tmp)


def _users_by_day(state: Path) -> dict[str, list[str]]:
    """The stored `/users` rows' user ids, per day."""
    from auditor.store import Store

    with Store.open(state) as store:
        return {
            day: sorted(str(u["user_id"]) for u in series["users"])
            for day, series in store.iter_analytics()
            if "users" in series
        }


# --- #2: an empty /users page that goes on ----------------------------------------------------


def test_an_empty_users_page_with_a_new_cursor_is_followed_and_loses_no_user(
    emu: Emulator, tmp_path: Path
) -> None:
    """Was: exit 2, `$.meta.has_more: true on an empty page (GET …/analytics/users?… page 2
    (cursor '…'))`, the nightly's run incomplete every night."""
    emu.faults.add("analytics", "empty_has_more", page=2)
    code, out, err = _cli(emu, tmp_path)
    assert code == 0, err
    assert ("analytics", "empty_has_more", 2) in emu.faults.fired
    assert "30 of 30 days stored" in out and "data-quality" not in out
    everyone = sorted(u["user_id"] for u in emu.dataset.analytics_users)
    days = _users_by_day(tmp_path / "state.db")
    assert len(days) == 30 and all(users == everyone for users in days.values()), days


def test_empty_users_pages_without_end_are_stopped_by_the_page_cap(
    emu: Emulator, tmp_path: Path
) -> None:
    """Followed, but bounded as the history's are: each empty page's cursor is new, so the
    page cap stops them (a cursor sent again is the repeated-cursor guard, `test_usage.py`)."""
    emu.faults.add("analytics", "empty_has_more", page=2, times=0)
    code, _out, err = _cli(emu, tmp_path, config="max_pages = 6\n")
    assert code == 2
    assert "analytics users paging stopped: more than 6 pages" in err, err
    # which day's listing, and the page not asked for (30 days' listings share the words)
    line = next(x for x in err.splitlines() if "paging stopped" in x)
    assert f"(GET {emu.base_url}" in line and "/analytics/users?startDate=20" in line, line
    assert "page 7" in line, line


# --- #4: no readiness report listed while reports are stored ----------------------------------


def test_a_readiness_listing_gone_empty_is_a_warning_and_the_stored_reports_are_kept(
    emu: Emulator, tmp_path: Path
) -> None:
    """Was: `… readiness reports (0 new) …`, exit 0, no warning."""
    code, _out, err = _cli(emu, tmp_path, "--no-usage")
    assert code == 0, err
    with closing(sqlite3.connect(tmp_path / "state.db")) as db:
        (stored,) = db.execute("select count(*) from reports").fetchone()
    assert stored > 0
    emu.faults.add("reports", "empty_has_more", times=0)  # every readiness page empty
    code, out, err = _cli(emu, tmp_path, "--no-usage")
    assert code == 0, err
    assert (
        f"$.reports: the service lists no readiness reports, but {stored} reports are stored: "
        "its listing went back; the stored reports are kept and audited (the listing, GET "
        f"{emu.app_url}{REPORTS_PATH} page 1)"
    ) in out, out
    assert f"{stored} readiness reports (0 new)" in out
    with closing(sqlite3.connect(tmp_path / "state.db")) as db:
        assert db.execute("select count(*) from reports").fetchone() == (stored,)


def test_an_empty_readiness_listing_into_a_state_without_reports_says_nothing(
    emu: Emulator, tmp_path: Path
) -> None:
    emu.faults.add("reports", "empty_has_more", times=0)
    code, out, err = _cli(emu, tmp_path, "--no-usage")
    assert code == 0, err
    assert "0 readiness reports (0 new)" in out and "data-quality" not in out, out


REPORTS_PATH = "/api/organization/agent-readiness-reports"


# --- #5: an item sent twice on one page ------------------------------------------------------


def _dup_history(path: str, query: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
    """Page 1: revisions 5, 4, 4 (the same twice), 3, then page 2: 3 again (an overlap
    between pages, as offset paging sends), 2, 1."""
    if path == HISTORY and "cursor" not in query:
        body = history(change(5), change(4), change(4), change(3), cursor="p2")
        return 200, {"Content-Type": "application/json"}, body
    if path == HISTORY:
        return 200, {"Content-Type": "application/json"}, history(change(3), change(2), change(1))
    if path == REPORTS and "startAfter" not in query:
        return json_answer({"reports": [report(1), report(2), report(2), report(3)]})
    return good(path, query)


def test_an_item_sent_twice_on_one_page_is_read_once_with_a_warning(tmp_path: Path) -> None:
    """Was: `5 revisions (5 new)`, `3 readiness reports`, exit 0, no warning (a page naming one
    id twice is a service defect, which may have put it where another item belonged); an
    overlap between pages stays silent."""
    with service(_dup_history) as (url, _paths):
        code, out, err = sync(url, tmp_path, "--no-usage")
    assert code == 0, err
    assert "5 revisions (5 new)" in out and "3 readiness reports (3 new)" in out
    assert (
        f"$.changes[2]: sent twice on one page; read once (revision 4, GET {url}{HISTORY} page 1)"
    ) in out, out
    assert (
        "$.reports[2]: sent twice on one page; read once (report "
        "00000000-0000-4000-8000-000000000002, GET "
    ) in out, out
    assert out.count("sent twice") == 2  # not revision 3, sent again on the next page


# --- #6: a page refused is not counted as fetched ----------------------------------------------


def _bad_item(page: int, value: object) -> Any:
    def answer(path: str, query: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        if path != HISTORY:
            return good(path, query)
        first = "cursor" not in query
        revs = [change(5), change(4)] if first else [change(3), change(2), change(1)]
        if page == 1:
            revs = [change(5), change(4), change(3), change(2), change(1)]
        if first == (page == 1):
            revs[1]["updatedAt"] = value
        body = history(*revs, cursor="p2" if first and page == 2 else None)
        return 200, {"Content-Type": "application/json"}, body

    return answer


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        (None, "expected string or number, got null"),  # the page's schema refuses it
        ("01/11/2026 10:00", "not an ISO-8601 date-time"),  # the item's decoding does
    ],
    ids=["schema", "value"],
)
@pytest.mark.parametrize(
    ("page", "fetched"),
    [(1, "fetched 0 history pages / 0 revisions"), (2, "fetched 1 history pages / 2 revisions")],
    ids=["page1", "page2"],
)
def test_a_refused_page_is_not_counted_as_fetched(
    tmp_path: Path, value: object, problem: str, page: int, fetched: str
) -> None:
    """Was: `fetched 1 history pages / 1 revisions` for a bad date on page 1 (the revision
    before it counted too), `fetched 0 history pages` for a null one."""
    with service(_bad_item(page, value)) as (url, _paths):
        code, _out, err = sync(url, tmp_path, "--no-usage")
    assert code == 2
    assert f"({fetched} and 0 report pages / 0 reports before)" in err, err
    assert f"$.changes[1].updatedAt: {problem} (GET {url}{HISTORY} page {page})" in err, err


# --- #7: what was received, named --------------------------------------------------------------


@pytest.mark.parametrize(
    ("pagination", "said"),
    [
        ({"hasMore": True, "nextCursor": ""}, "empty"),
        ({"hasMore": True, "nextCursor": None}, "null"),
        ({"hasMore": True}, "missing"),
    ],
)
def test_a_cursor_that_cannot_be_followed_is_named_for_what_it_is(
    tmp_path: Path, pagination: dict[str, Any], said: str
) -> None:
    """Was: `$.pagination.nextCursor: missing while hasMore is true` for `""` too; and the
    page refused for it counted as fetched, with its items (`fetched 1 history pages / 2
    revisions`, review R54 #2), where `nextCursor: 12345` said `fetched 0`."""

    def answer(path: str, query: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        if path == HISTORY:
            return json_answer({"changes": [change(2), change(1)], "pagination": pagination})
        return good(path, query)

    with service(answer) as (url, _paths):
        code, _out, err = sync(url, tmp_path, "--no-usage")
    assert code == 2
    assert f"$.pagination.nextCursor: {said} while hasMore is true (GET {url}" in err, err
    assert "nothing saved (fetched 0 history pages / 0 revisions " in err, err


@contextmanager
def _raw(reply: bytes | None, first: bytes | None = None) -> Iterator[str]:
    """A server that reads a request and answers `reply` (None: resets the connection); the
    first request `first` if given."""
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()
    replies = [first] if first is not None else []

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn:
                conn.recv(65536)
                if replies:
                    conn.sendall(replies.pop())
                elif reply is None:  # an RST, as a TLS server that cannot read the request sends
                    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\0\0\0\0\0\0\0")
                else:
                    conn.sendall(reply)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stop.set()
        listener.close()
        thread.join(5)


def _sync_at(url: str, tmp: Path, config: str) -> tuple[int, str, str]:
    (tmp / "auditor.toml").write_text(config)
    env = {"AUDITOR_TOKEN": "t0k3n-abcdefgh", "AUDITOR_STATE": str(tmp / "state.db")}
    args = ["sync", "--no-usage", "--base-url", url, "--config", "auditor.toml"]
    return run_cli(args, env, tmp)


def test_an_http2_frame_for_an_answer_is_named_so(tmp_path: Path) -> None:
    """Was: `the answer is not valid HTTP/1.1 (illegal request line)`: h11's words, of a
    request, for an answer whose first byte is binary."""
    settings_frame = b"\x00\x00\x12\x04\x00\x00\x00\x00\x00"
    with _raw(settings_frame) as url:
        code, _out, err = _sync_at(url, tmp_path, "timeout = 5\ndeadline = 20\n")
    assert code == 2
    assert "request line" not in err
    assert (
        "the answer is not valid HTTP/1.1 (its first byte cannot begin a status line, as an "
        "HTTP/2 frame's or a TLS record's: is this an HTTP/2-only server, or an https:// one "
        "asked with http://?); not retried"
    ) in err, err


def test_connections_reset_on_every_attempt_ask_whether_the_server_speaks_tls(
    tmp_path: Path,
) -> None:
    """Was: `failed: ReadError ([Errno 104] Connection reset by peer); gave up after 8
    attempts` (25 s), nothing said of the scheme. Still retried as before."""
    with _raw(None) as url:
        code, _out, err = _sync_at(url, tmp_path, "timeout = 2\ndeadline = 3\n")
    assert code == 2
    line = err.strip().splitlines()[-1]
    assert "Connection reset by peer" in line and "; gave up after " in line, line
    assert line.endswith(
        "; the server reset the connection before any answer on every attempt: is this an "
        "https:// server? (the URL says http://)"
    ), line


def test_connections_reset_after_an_answer_in_plain_http_do_not_question_the_scheme(
    tmp_path: Path,
) -> None:
    """Was: the same `is this an https:// server?` hint when the server had answered page 1 of
    the same sync over http:// and then reset every request (review R54 #1)."""
    page = history(change(3), change(2), cursor="c2")
    first = (
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n"
        + f"Content-Length: {len(page)}\r\n\r\n".encode()
        + page
    )
    with _raw(None, first) as url:
        code, _out, err = _sync_at(url, tmp_path, "timeout = 2\ndeadline = 3\n")
    assert code == 2
    line = err.strip().splitlines()[-1]
    assert "kept 1 page (2 revisions)" in line and "cursor=c2" in line, line
    assert "Connection reset by peer" in line and "; gave up after " in line, line
    assert "https://" not in line, line


# --- #8: an author longer than any output shows -------------------------------------------------


def test_an_author_name_longer_than_any_output_shows_is_a_warning_and_stored_whole(
    tmp_path: Path,
) -> None:
    """Was: a 5 MB `user.name` stored without a word (the state file grew tenfold). It is
    kept whole, as the service sent it (the record `export` reproduces); the warning names the
    path and the size."""
    name = "N" * 100_000

    def answer(path: str, query: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        if path == HISTORY:
            newest = change(3)
            newest["user"]["name"] = name
            body = history(newest, change(2), change(1))
            return 200, {"Content-Type": "application/json"}, body
        return good(path, query)

    with service(answer) as (url, _paths):
        code, out, err = sync(url, tmp_path, "--no-usage")
    assert code == 0, err
    assert (
        "$.changes[0].user.name: 100000 characters, longer than an author's can be; stored "
        "whole; the reports, the sync's summary and `history` show its first 254, `history "
        f"--format json` and `export` all of it (revision 3, GET {url}{HISTORY} page 1)"
    ) in out, out
    assert "latest rev 3 at 2026-10-03 by u3@example.com" in out
    with closing(sqlite3.connect(tmp_path / "state.db")) as db:
        rows = db.execute("select revision, length(user_name) from revisions").fetchall()
    assert sorted(rows) == [(1, 1), (2, 1), (3, 100_000)]
    # what the warning says (review R54 #3: it said `every output shows its first 254`)
    env = {"AUDITOR_STATE": str(tmp_path / "state.db")}
    code, out, err = run_cli(["history", "--format", "json"], env, tmp_path)
    assert code == 0 and f'"name":"{name}"' in out.replace(" ", ""), err


# --- R54 #4: an attempt cut short by the sync's deadline says so --------------------------------


def test_an_attempt_cut_short_by_the_deadline_says_what_its_limit_was(
    emu: Emulator, tmp_path: Path
) -> None:
    """Was: `response not complete within 0s`: the attempt's limit was what was left of the
    sync's deadline, shown rounded to nothing and not called so."""
    emu.faults.add("history", "delay", times=0, seconds=5)
    code, _out, err = _cli(emu, tmp_path, config="timeout = 4\ndeadline = 1.5\n")
    assert code == 2, err
    assert "no response within 1.5s (what was left of the sync's deadline)" in err, err
    assert "within 0s" not in err, err


def test_a_users_row_sent_twice_on_one_page_is_read_once_with_a_warning(
    emu: Emulator, tmp_path: Path
) -> None:
    """Was (review R54 #5): read once silently, where a revision or a readiness report sent
    twice on one page gets a data-quality warning; a row sent again on a later page (an
    overlap) stays silent."""
    # (page 1 of every analytics listing: the day series' ignore it, each day's /users has it)
    emu.faults.add("analytics", "duplicate_row", page=1, times=0)
    code, out, err = _cli(emu, tmp_path)
    assert code == 0, err
    assert ("analytics", "duplicate_row", 1) in emu.faults.fired
    lines = [x for x in out.splitlines() if "sent twice on one page" in x]
    assert lines, out
    assert all("$.data[1]: sent twice on one page; read once (user usr_" in x for x in lines), lines
    assert all("/analytics/users?startDate=" in x for x in lines), lines
    everyone = sorted(u["user_id"] for u in emu.dataset.analytics_users)
    days = _users_by_day(tmp_path / "state.db")
    assert len(days) == 30 and all(users == everyone for users in days.values()), days
