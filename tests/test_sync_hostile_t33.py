"""T33's hostile service (findings F2, F3, F4), end to end through the CLI.

F2: the readiness listing's early stop missed new reports: a service of pages under 10
reports stopped after page 1, and at the default page size a report the service listed late
with an earlier `createdAt` (made on a client, uploaded later) was never fetched, on any later
sync. A page must now hold 10 reports to stop a sync, and the whole listing is read again when
its last whole read (kept in the state file) is `WHOLE_READ_DAYS` old.
F3: an `updatedAt` of a time, a NUL and junk was stored as the time (CPython 3.11's
`datetime.fromisoformat` stops at a NUL): text with a control character is no date-time.
F4: with `timeout = 3` and `deadline = 25`, a sync gave up at 12.6 s, "the sync's deadline of
25s leaves no time for another try": the backoff's last wait is now shortened so that a last
try fits, and the message says how much time was left.
"""

from __future__ import annotations

import contextlib
import copy
import random
import re
import socketserver
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import closing
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from auditor.common.dates import parse_date_time
from auditor.emulator import Emulator, start_emulator
from auditor.errors import ApiError
from auditor.fetch.retry import Requester, RetryPolicy
from auditor.redact import Redactor
from tests.conftest import FIXED_NOW, OWNER_TOKEN, emulator_env, run_cli

pytestmark = pytest.mark.e2e  # the emulator and servers over HTTP, the CLI

REPORTS = "/api/organization/agent-readiness-reports"
HISTORY = "/api/v0/organization/enterprise-controls/history"
LATE_ID = "99999999-2222-4333-8444-555555555555"
WHOLE_READ_DAYS = 7  # `auditor.workflows.sync.WHOLE_READ_DAYS`, as the README says it


def _emulator(repos: int) -> Emulator:
    return start_emulator(tokens={OWNER_TOKEN: "owner"}, now=FIXED_NOW, revisions=12, repos=repos)


@pytest.fixture
def emu12() -> Iterator[Emulator]:
    with _emulator(12) as e:  # 37 reports
        yield e


@pytest.fixture
def emu45() -> Iterator[Emulator]:
    with _emulator(45) as e:  # 150 reports: two pages of 100
        yield e


def _sync(env: dict[str, str], tmp: Path, days: float = 0, *extra: str) -> str:
    code, out, err = run_cli(
        ["sync", "--no-usage", *extra], env, tmp, FIXED_NOW + timedelta(days=days)
    )
    assert code == 0, err
    return out


def _stored_reports(env: dict[str, str]) -> set[str]:
    with closing(sqlite3.connect(f"file:{env['AUDITOR_STATE']}?mode=ro", uri=True)) as db:
        return {row[0] for row in db.execute("select report_id from reports")}


def _report_requests(emu: Emulator) -> list[str]:
    return [path for _method, path in emu.requests if path.startswith(REPORTS)]


def _add_late_report(emu: Emulator) -> None:
    """The service lists a new report whose `createdAt` is older than every report it has:
    made on a client and uploaded later. Newest first, it is the listing's last."""
    ds = emu.dataset
    with ds.lock:
        oldest = min(ds.reports, key=lambda r: int(r["createdAt"]))
        late = copy.deepcopy(oldest)
        late["reportId"] = LATE_ID
        late["createdAt"] = int(oldest["createdAt"]) - 1000
        ds.reports.append(late)


# -- F2 (a): pages under 10 reports ---------------------------------------------------------


def test_a_service_of_pages_of_9_has_every_page_read(emu12: Emulator, tmp_path: Path) -> None:
    """Was: a page of 9 known reports falling 8 times ended the nightly (one request), so a
    new report on page 2 was never stored, exit 0, nothing said; the README said a service
    of pages under 10 reports has every page read."""
    emu12.dataset.report_limit_cap = 9
    env = emulator_env(emu12, tmp_path / "state.db")
    total = len(emu12.dataset.reports)
    assert f"{total} readiness reports ({total} new)" in _sync(env, tmp_path)
    _add_late_report(emu12)
    emu12.requests.clear()
    out = _sync(env, tmp_path, 1)  # the next night: no whole read is due
    assert LATE_ID in _stored_reports(env), out
    assert f"{total + 1} readiness reports (1 new) for" in out
    # pages of 9 to the end, and the empty page that ends the listing
    assert len(_report_requests(emu12)) == -(-(total + 1) // 9) + 1


# -- F2 (b): a report listed late with an earlier time ----------------------------------------


def test_a_report_listed_late_with_an_earlier_time_is_found_by_the_weekly_whole_read(
    emu45: Emulator, tmp_path: Path
) -> None:
    """Was: never fetched, on any later sync (each stopped after page 1). The nightly still
    reads one page; the whole listing is read again once its last whole read is 7 days old."""
    env = emulator_env(emu45, tmp_path / "state.db")
    total = len(emu45.dataset.reports)
    assert total > 100
    _sync(env, tmp_path)  # learns "newest first", records the whole read
    _add_late_report(emu45)
    for night in range(1, WHOLE_READ_DAYS):  # the cheap nightly: one page, the report unseen
        emu45.requests.clear()
        out = _sync(env, tmp_path, night)
        assert _report_requests(emu45) == [f"{REPORTS}?limit=100"], night
        assert "every page read" not in out
    assert LATE_ID not in _stored_reports(env)
    emu45.requests.clear()
    out = _sync(env, tmp_path, WHOLE_READ_DAYS)
    assert LATE_ID in _stored_reports(env), out
    assert (
        f"{total + 1} readiness reports (1 new, every page read, as every {WHOLE_READ_DAYS} "
        "days: a report the service listed late with an earlier time is found then)" in out
    ), out
    assert len(_report_requests(emu45)) == 3  # 100, 51, and the empty page
    emu45.requests.clear()
    out = _sync(env, tmp_path, WHOLE_READ_DAYS + 1)  # the week starts again
    assert _report_requests(emu45) == [f"{REPORTS}?limit=100"]
    assert "every page read" not in out and "0 integrity issues" in out


@pytest.mark.parametrize(
    "kept",
    [None, "not a time", "2030-01-01T00:00:00+00:00"],
    ids=["from-before-0.3.0", "damaged", "after-now"],
)
def test_a_state_file_without_a_usable_whole_read_time_reads_the_listing_whole(
    emu45: Emulator, tmp_path: Path, kept: str | None
) -> None:
    """A state file that learned the order before the time was kept (or whose time is no time,
    or after the sync's clock) has the whole listing read on its next sync, which keeps it."""
    env = emulator_env(emu45, tmp_path / "state.db")
    _sync(env, tmp_path)
    with closing(sqlite3.connect(env["AUDITOR_STATE"])) as db, db:
        db.execute("DELETE FROM meta WHERE key = 'reports_read_whole'")
        if kept is not None:
            db.execute("INSERT INTO meta (key, value) VALUES ('reports_read_whole', ?)", (kept,))
    _add_late_report(emu45)
    out = _sync(env, tmp_path, 1)
    assert LATE_ID in _stored_reports(env), out
    assert "every page read, as every 7 days" in out
    emu45.requests.clear()
    _sync(env, tmp_path, 2)
    assert _report_requests(emu45) == [f"{REPORTS}?limit=100"]


# -- F3: a control character in a date-time ---------------------------------------------------

NUL_TIMES = [
    "2026-10-31T10:00:00Z\u0000 not a date at all; 1999-01-01",
    "2026-10-31T10:00:00\u0000",
    "Sat, 31 Oct 2026 10:00:00 +0000\u0000 junk",  # an RFC 2822 date (read, with a warning)
]


@pytest.mark.parametrize("sent", NUL_TIMES, ids=["iso-junk", "iso-nul", "rfc2822-junk"])
def test_an_updated_at_with_a_nul_fails_the_sync(tmp_path: Path, sent: str) -> None:
    """Was: stored as the time before the NUL, exit 0, no warning. The README's tolerant
    reader: anything but ISO 8601, a Unix time or an RFC 2822 date fails the sync."""
    with _emulator(3) as emu:
        emu.dataset.history[-1]["updatedAt"] = sent
        env = emulator_env(emu, tmp_path / "state.db")
        code, out, err = run_cli(["sync", "--no-usage"], env, tmp_path)
    assert code == 2, out
    assert (
        "$.changes[0].updatedAt: not an ISO-8601 date-time (it holds a control character)" in err
    ), err
    assert "Traceback" not in err


def test_a_created_at_text_with_a_nul_fails_the_sync(tmp_path: Path) -> None:
    with _emulator(3) as emu:
        emu.dataset.report_order = "id"  # the emulator cannot sort times of two types
        emu.dataset.reports[1]["createdAt"] = "2026-10-01T00:00:00Z\u0000 1999-01-01"
        env = emulator_env(emu, tmp_path / "state.db")
        code, out, err = run_cli(["sync", "--no-usage"], env, tmp_path)
    assert code == 2, out
    assert ".createdAt: not a Unix time in milliseconds (it holds a control character)" in err


@pytest.mark.parametrize("text", ["2026-10-31T10:00:00Z\x00junk", "2026-10-31T10:00:00\x00"])
def test_the_date_time_parser_refuses_a_control_character(text: str) -> None:
    """The parser of policy date-times (`within_days`, `older_than_days`) and of `--since`,
    `--until` and `--at` too: each refuses what it cannot read."""
    with pytest.raises(ValueError):
        parse_date_time(text)


# -- F4: the last wait before the deadline ----------------------------------------------------


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def _requester(clock: _Clock, handler: Any) -> Requester:
    policy = RetryPolicy(
        deadline=25,
        timeout=3,
        sleep=clock.sleep,
        clock=lambda: clock.now,
        jitter=lambda: 1.0,  # the whole backoff: 0.5, 1, 2, 4, 8, 16 s
    )
    client = httpx.Client(base_url="http://svc.test", transport=httpx.MockTransport(handler))
    return Requester(client, policy, Redactor(b"t33-key"))


def test_a_wait_that_would_pass_the_deadline_is_shortened_for_a_last_try() -> None:
    """T33 F4: answers cut off at once, `timeout = 3`, `deadline = 25`. Was: 'gave up after 6
    attempts in 15.5s: the sync's deadline of 25s leaves no time for another try', 9.5 s left
    (the next wait, 16 s, would have passed the deadline)."""
    clock = _Clock()
    tries: list[float] = []

    def cut_off(request: httpx.Request) -> httpx.Response:
        tries.append(clock.now)
        raise httpx.RemoteProtocolError("peer closed connection without sending complete body")

    with pytest.raises(ApiError) as info:
        _requester(clock, cut_off).get_json(HISTORY, {}, "history page 1")
    # the backoff, then the wait shortened so that a whole 3 s try ends by the deadline
    assert clock.sleeps[:5] == [0.5, 1, 2, 4, 8]
    assert clock.sleeps[5] == 6.5 and tries[6] == 22
    assert len(tries) == 8  # and one more try in the time left, the 8th and last attempt
    assert str(info.value).endswith("; gave up after 8 attempts in 22.2s"), info.value

    # A wait the service asked for (`Retry-After`) is never shortened: the deadline ends the
    # sync instead, saying so.
    clock = _Clock()

    def busy(request: httpx.Request) -> httpx.Response:
        return httpx.Response(503, headers={"Retry-After": "20"})

    with pytest.raises(ApiError) as info:
        _requester(clock, busy).get_json(HISTORY, {}, "history page 1")
    assert clock.sleeps == [20]
    assert "leaves no time for another try (Retry-After asked for 20s)" in str(info.value)


def test_a_service_that_never_answers_gets_a_last_try_cut_short_to_end_by_the_deadline() -> None:
    """Each try times out after 3 s: after the 5th, at 22.5 s, the backoff's 8 s would pass
    the deadline. Was: given up there with 2.5 s left; now a last try of 2.25 s ends by it."""
    clock = _Clock()
    limits: list[float] = []

    def silent(request: httpx.Request) -> httpx.Response:
        limit = float(request.extensions["timeout"]["read"])
        limits.append(limit)
        clock.now += limit
        raise httpx.ReadTimeout("timed out", request=request)

    with pytest.raises(ApiError) as info:
        _requester(clock, silent).get_json(HISTORY, {}, "history page 1")
    assert limits == [3, 3, 3, 3, 3, 2.25]
    assert clock.now == 25
    message = str(info.value)
    assert message.endswith(
        "no response within 3s; gave up after 6 attempts in 25.0s: the sync's deadline of 25s "
        "leaves no time for another try"
    ), message


def _cut_off_server() -> tuple[socketserver.ThreadingTCPServer, threading.Thread]:
    class Handler(socketserver.BaseRequestHandler):
        def handle(self) -> None:
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = self.request.recv(4096)
                if not chunk:
                    return
                data += chunk
            body = orjson.dumps({"changes": [], "pagination": {"hasMore": False}})
            head = (
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(body) + 500}\r\n\r\n"
            )
            with contextlib.suppress(OSError):
                self.request.sendall(head.encode() + body)  # then closes: cut off

    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    return server, thread


def test_the_sync_says_how_much_time_its_deadline_left(tmp_path: Path) -> None:
    """End to end: every answer cut off, `timeout = 1`, `deadline = 4`. The sync either uses
    its deadline or says how little was left; it never stops with time for a try left over
    while saying there is none (was: `leaves no time` with up to 2.2 s left)."""
    random.seed(33)  # the backoff's jitter (random.random)
    (tmp_path / "c.toml").write_text("timeout = 1\ndeadline = 4\n")
    server, thread = _cut_off_server()
    try:
        env = {
            "AUDITOR_TOKEN": "tok-t33-0123456789abcdef",
            "AUDITOR_BASE_URL": f"http://127.0.0.1:{server.server_address[1]}",
            "AUDITOR_STATE": str(tmp_path / "state.db"),
        }
        started = time.monotonic()
        code, _out, err = run_cli(["sync", "--no-usage", "--config", "c.toml"], env, tmp_path)
        took = time.monotonic() - started
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
    assert code == 2
    assert took < 4 + 1
    line = err.strip()
    assert "response cut off" in line, line
    if "gave up after 8 attempts" in line:
        return
    assert "the sync's deadline of 4s leaves no time for another try" in line, line
    left = re.search(r"\(only ([0-9.]+)s left; a last try gets 1s at least\)", line)
    if left is None:  # the last try was cut short to end by the deadline
        assert took > 4 - 0.2, (took, line)
    else:
        # (`took` counts the command's own work before the first request too)
        assert float(left[1]) < 1 + 0.25 and took > 4 - float(left[1]) - 0.2, (took, line)
