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
import random
import re
import socketserver
import threading
import time
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

HISTORY = "/api/v0/organization/enterprise-controls/history"


def _emulator(repos: int) -> Emulator:
    return start_emulator(tokens={OWNER_TOKEN: "owner"}, now=FIXED_NOW, revisions=12, repos=repos)


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
