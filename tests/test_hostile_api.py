"""A hostile or unlucky service, through the CLI: every case ends on time with exit 2 and one line.

Each server is a raw socket server on 127.0.0.1 started by the test and stopped after it: it
serves a small valid history until told to turn hostile (trickle one byte a second, never answer,
1,000-deep JSON). Deadlines come from a `--config` file (`timeout`, `deadline`), so every case is
bounded in seconds; the state file filled by the good sync must be byte-for-byte unchanged.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import socket
import socketserver
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import orjson
import pytest

from auditor.cli import Context, main
from auditor.cli.common import _encrypted_or_local
from tests.conftest import FIXED_NOW

TOKEN = "tok-hostile-9f8e7d6c5b4a"
HISTORY = "/api/v0/organization/enterprise-controls/history"
Behaviour = Callable[[socket.socket, "Hostile"], None]


def change(rev: int) -> dict[str, Any]:
    return {
        "revision": rev,
        "settings": {"maxAutonomyLevel": "low", "hooks": {"hooksDisabled": False}},
        "user": {"id": f"u{rev}", "email": f"u{rev}@example.com", "name": "U"},
        "updatedAt": f"2026-10-{rev:02d}T10:00:00Z",
    }


def page(changes: list[dict[str, Any]]) -> bytes:
    return orjson.dumps({"changes": changes, "pagination": {"hasMore": False}})


def respond(body: bytes, status: str = "200 OK") -> bytes:
    head = f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n"
    return head.encode() + b"Connection: close\r\n\r\n" + body


def good(sock: socket.socket, server: Hostile) -> None:
    sock.sendall(respond(page([change(3), change(2), change(1)])))


def trickle(sock: socket.socket, server: Hostile) -> None:
    """Headers at once, then the body one byte a second: no single read ever times out."""
    body = page([change(4), change(3), change(2), change(1)])
    sock.sendall(respond(body)[: -len(body)])
    for byte in body:
        if server.stopping.wait(1.0):
            return
        sock.sendall(bytes([byte]))


def trickle_headers(sock: socket.socket, server: Hostile) -> None:
    for byte in respond(page([change(1)])):
        if server.stopping.wait(1.0):
            return
        sock.sendall(bytes([byte]))


def silent(sock: socket.socket, server: Hostile) -> None:
    server.stopping.wait(30)


def deep(sock: socket.socket, server: Hostile) -> None:
    nested = b'{"a":' * 1000 + b"1" + b"}" * 1000
    sock.sendall(
        respond(
            b'{"changes":[{"revision":4,"updatedAt":"2026-10-04T10:00:00Z",'
            b'"user":{"id":"u"},"settings":' + nested + b"}],"
            b'"pagination":{"hasMore":false}}'
        )
    )


def corrupt_gzip(sock: socket.socket, server: Hostile) -> None:
    body = b"\x1f\x8bnot gzip at all"
    head = respond(body).replace(b"\r\n\r\n", b"\r\nContent-Encoding: gzip\r\n\r\n", 1)
    sock.sendall(head)


def brotli_bomb(sock: socket.socket, server: Hostile) -> None:
    """What was 1.6 KB of brotli for 1 GB of zeros (httpx inflated it whole: 2.1 GB); auditor
    does not ask for brotli, so any brotli body is refused unread."""
    head = respond(b"\x1b\xff\xff").replace(b"\r\n\r\n", b"\r\nContent-Encoding: br\r\n\r\n", 1)
    sock.sendall(head)


def very_deep(sock: socket.socket, server: Hostile) -> None:
    sock.sendall(respond(b"[" * 5000 + b"]" * 5000))


class Hostile(socketserver.ThreadingTCPServer):
    """Answers every request with `behaviour` (a plain good page until told otherwise)."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.behaviour: Behaviour = good
        self.stopping = threading.Event()
        self.requests = 0
        self.last_path = ""

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        server: Hostile = self.server  # type: ignore[assignment]
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = self.request.recv(4096)
            if not chunk:
                return
            if not data and chunk[:1] == b"\x16":  # a TLS hello: answer in plain HTTP, as a
                self.request.sendall(respond(b"{}", "400 Bad Request"))  # plain server does
                return
            data += chunk
        server.requests += 1
        server.last_path = data.split(b" ", 2)[1].decode("ascii", "replace")
        with contextlib.suppress(OSError):  # the client gave up first: what this module is about
            server.behaviour(self.request, server)


@contextlib.contextmanager
def running() -> Iterator[Hostile]:
    """A hostile server on a free loopback port, stopped (and its threads released) after."""
    server = Hostile()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.stopping.set()
        server.shutdown()
        server.server_close()
        thread.join(5)


@pytest.fixture
def hostile() -> Iterator[Hostile]:
    with running() as server:
        yield server


def run_cli(argv: list[str], cwd: Path, base_url: str) -> tuple[int, str, str, float]:
    out, err = io.StringIO(), io.StringIO()
    env = {"AUDITOR_TOKEN": TOKEN, "AUDITOR_BASE_URL": base_url}
    ctx = Context(env=env, stdout=out, stderr=err, clock=lambda: FIXED_NOW, cwd=str(cwd))
    started = time.monotonic()
    code = main(argv, ctx)
    return code, out.getvalue(), err.getvalue(), time.monotonic() - started


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def synced(tmp_path: Path, hostile: Hostile) -> Path:
    """A state file from one good sync, and a config with small deadlines for the next."""
    (tmp_path / "auditor.toml").write_text("timeout = 1.5\ndeadline = 3\n")
    code, _, err, _ = run_cli(["sync", *CONFIG], tmp_path, hostile.url)
    assert code == 0, err
    return tmp_path / "state.db"


# The hostile server answers every path as the history: no usage analytics (--no-usage).
CONFIG = ["--config", "auditor.toml", "--state", "state.db", "--no-usage"]

SILENT = ("no response within 1.5s", "the sync's deadline of 3s leaves no time")
CASES = [  # (id, behaviour, what the message must say); each through `sync`, some through `run`
    ("body-trickles", trickle, ("response not complete within 1.5s",)),
    ("headers-trickle", trickle_headers, ("no response within 1.5s",)),
    ("never-answers", silent, SILENT),
    ("deep-json", deep, ("nested deeper than 64 levels",)),
    ("too-deep-to-parse", very_deep, ("nested deeper than 64 levels",)),
    ("corrupt-gzip", corrupt_gzip, ("→ 200: the body is not valid gzip data",)),
    ("brotli", brotli_bomb, ("→ 200: Content-Encoding 'br' is not one auditor accepts",)),
]
RUN_TOO = {"body-trickles", "never-answers", "deep-json"}


@pytest.mark.parametrize(
    ("command", "behaviour", "reasons"),
    [
        pytest.param(command, behaviour, reasons, id=f"{name}-{command}")
        for name, behaviour, reasons in CASES
        for command in ("sync", "run")
        if command == "sync" or name in RUN_TOO
    ],
)
def test_hostile_service_ends_on_time_with_exit_2(
    tmp_path: Path,
    hostile: Hostile,
    synced: Path,
    command: str,
    behaviour: Behaviour,
    reasons: tuple[str, ...],
) -> None:
    before = digest(synced)
    hostile.behaviour = behaviour
    argv = [command, *CONFIG] + (["--out", "out"] if command == "run" else [])
    code, _, err, took = run_cli(argv, tmp_path, hostile.url)
    assert code == 2
    assert took < 3 + 2  # the sync's deadline, plus the run's own work
    lines = err.splitlines()
    failed = [line for line in lines if "sync failed" in line]
    host = hostile.url.split("//", 1)[1]
    assert all(r in failed[0] for r in reasons), failed[0]
    assert HISTORY in failed[0] and host in failed[0], failed[0]
    assert "Traceback" not in err and TOKEN not in err
    if command == "sync":
        assert len(lines) == 1 and lines[0].startswith("auditor: error: ")
        assert digest(synced) == before
    else:
        assert lines[-1].startswith("auditor: exit 2: ")
        assert _revisions(synced) == [1, 2, 3]


def _sends(raw: bytes) -> Behaviour:
    return lambda sock, server: sock.sendall(raw)


@pytest.mark.parametrize(
    ("answer", "problem"),
    [
        pytest.param(
            b"HTTP/1.1 2000 OK\r\nContent-Length: 2\r\n\r\n{}",
            'illegal status line: "HTTP/1.1 2000 OK"',
            id="status-line",
        ),
        pytest.param(
            b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}",
            "conflicting Content-Length headers",
            id="two-lengths",
        ),
        pytest.param(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            b"Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n",
            'illegal chunk header: "zz\\r\\n"',
            id="chunk-size",
        ),
    ],
)
def test_a_malformed_answer_is_not_retried(
    tmp_path: Path, hostile: Hostile, answer: bytes, problem: str
) -> None:
    """`HTTP/1.1 2000 OK` was retried 8 times (42 s at the default deadline), and said
    `failed: RemoteProtocolError (illegal status line: bytearray(b'HTTP/1.1 2000 OK'))`."""
    (tmp_path / "auditor.toml").write_text("timeout = 1.5\ndeadline = 30\n")
    hostile.behaviour = _sends(answer)
    code, _, err, _ = run_cli(["sync", *CONFIG], tmp_path, hostile.url)
    host = hostile.url.split("//", 1)[1]
    assert code == 2 and hostile.requests == 1
    assert err.rstrip().endswith(
        f"{HISTORY}?limit=100 on {host}: the answer is not valid HTTP/1.1 ({problem}); not retried"
    ), err


@pytest.mark.parametrize(
    "cut",
    [
        pytest.param(b"HTTP/1.1 200 OK\r\nContent-Le", id="in-the-headers"),
        # in the body, the HTTP parser says so itself (`peer closed connection without sending
        # complete message body`): told from a malformed answer by its words alone
        pytest.param(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 239\r\n"
            b'\r\n{"changes": [',
            id="in-a-body-of-known-length",
        ),
        pytest.param(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            b'Transfer-Encoding: chunked\r\n\r\n20\r\n{"changes": [',
            id="in-a-chunk",
        ),
    ],
)
def test_a_server_that_disconnects_is_still_retried(
    tmp_path: Path, hostile: Hostile, cut: bytes
) -> None:
    (tmp_path / "auditor.toml").write_text("timeout = 1.5\ndeadline = 3\n")
    hostile.behaviour = _sends(cut)  # then the connection closes
    code, _, err, _ = run_cli(["sync", *CONFIG], tmp_path, hostile.url)
    assert code == 2 and hostile.requests > 1
    assert "not retried" not in err and "not valid HTTP" not in err, err


def _echoing(header: str, value: str) -> Behaviour:
    def answer(sock: socket.socket, server: Hostile) -> None:
        head = respond(b"{}").replace(b"\r\n\r\n", f"\r\n{header}: {value}\r\n\r\n".encode(), 1)
        if header == "Content-Type":  # the header replaces the JSON one
            head = head.replace(b"Content-Type: application/json\r\n", b"", 1)
        sock.sendall(head)

    return answer


def test_a_tls_handshake_the_server_closes_is_retried(tmp_path: Path) -> None:
    """A connection closed in the TLS handshake (a load balancer draining) was `TLS failure
    (UNEXPECTED_EOF_WHILE_READING); not retried` after one request: it is a dropped
    connection like any other, worth a retry (a certificate refused or a plain-HTTP server
    stay fatal: above)."""
    listener = socket.create_server(("127.0.0.1", 0))
    accepted: list[int] = []

    def serve() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            accepted.append(1)
            with conn:
                conn.recv(65536)  # the ClientHello, never answered

    threading.Thread(target=serve, daemon=True).start()
    try:
        (tmp_path / "auditor.toml").write_text("timeout = 1.5\ndeadline = 3\n")
        url = f"https://127.0.0.1:{listener.getsockname()[1]}"
        code, _, err, _ = run_cli(["sync", *CONFIG], tmp_path, url)
    finally:
        listener.close()
    assert code == 2 and len(accepted) > 1, err
    assert "not retried" not in err, err


@pytest.mark.parametrize(
    ("header", "value"),
    [
        ("Content-Type", f"text/html; charset=utf-8; x={TOKEN}"),
        ("Content-Encoding", f"x-padding-padding-{TOKEN}"),
        ("Content-Encoding", f"gzip, x{TOKEN}{TOKEN}"),
    ],
)
def test_a_header_echoing_the_token_is_redacted_before_it_is_cut_short(
    tmp_path: Path, hostile: Hostile, header: str, value: str
) -> None:
    """The error quotes an odd Content-Type or Content-Encoding cut to 40 characters, and the
    Content-Encoding lower-cased: cut first (or lower-cased), the token was no longer one the
    redaction knows, and most of it was printed."""
    hostile.behaviour = _echoing(header, value)
    code, _, err, _ = run_cli(["sync", "--no-usage"], tmp_path, hostile.url)
    assert code == 2 and "→ 200: " in err, err
    assert TOKEN[:12] not in err and "[secret" in err, err


def _revisions(state: Path) -> list[int]:
    with closing(sqlite3.connect(f"file:{state}?mode=ro", uri=True)) as db, db:
        return [r for (r,) in db.execute("SELECT revision FROM revisions ORDER BY revision")]


def _refused_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


UNREACHABLE = [
    pytest.param(_refused_url, "connection refused; nothing is listening there", id="refused"),
    pytest.param(lambda: "https://nonexistent.invalid", "cannot resolve the host name", id="dns"),
]


@pytest.mark.parametrize("command", ["sync", "run"])
@pytest.mark.parametrize(("address", "reason"), UNREACHABLE)
def test_unreachable_service_fails_fast_naming_host_path_and_reason(
    tmp_path: Path, hostile: Hostile, synced: Path, command: str, address: Any, reason: str
) -> None:
    before = digest(synced)
    url = address()
    argv = [command, *CONFIG] + (["--out", "out"] if command == "run" else [])
    code, _, err, took = run_cli(argv, tmp_path, url)
    assert code == 2 and took < 3
    host = url.split("//", 1)[1]
    failed = [line for line in err.splitlines() if "sync failed" in line]
    assert f"{HISTORY}?limit=100 on {host}: {reason}" in failed[0]
    if command == "sync":
        assert digest(synced) == before and err.count("\n") == 1
    else:
        assert _revisions(synced) == [1, 2, 3]


def test_tls_to_a_plain_http_server_is_not_retried(
    tmp_path: Path, hostile: Hostile, synced: Path
) -> None:
    before = digest(synced)
    silent_requests = hostile.requests
    url = hostile.url.replace("http://", "https://")
    code, _, err, took = run_cli(["sync", *CONFIG], tmp_path, url)
    assert code == 2 and took < 3
    assert "TLS failure" in err and "not retried" in err and HISTORY in err
    assert digest(synced) == before and hostile.requests == silent_requests


@pytest.mark.parametrize(
    ("url", "warned"),
    [
        pytest.param("http://nonexistent.invalid", True, id="http"),
        pytest.param("https://nonexistent.invalid", False, id="https"),
        pytest.param("http://localhost.invalid", True, id="not-localhost"),
    ],
)
def test_a_token_sent_over_plain_http_is_warned_about(
    tmp_path: Path, url: str, warned: bool
) -> None:
    """The token went to a plain http:// address off this machine without a word."""
    (tmp_path / "auditor.toml").write_text("timeout = 1.5\ndeadline = 3\n")
    code, _, err, _ = run_cli(["sync", *CONFIG], tmp_path, url)
    lines = err.splitlines()
    assert code == 2 and "cannot resolve the host name" in lines[-1]
    warning = (
        f"auditor: warning: base_url {url} is plain HTTP: the API token goes over the network "
        "unencrypted (use https://)"
    )
    assert lines[:-1] == ([warning] if warned else [])
    assert TOKEN not in err


@pytest.mark.parametrize(
    ("url", "local"),
    [
        ("http://127.0.0.1:8080", True),
        ("http://[::1]:8080", True),
        ("http://[::ffff:127.0.0.1]:8080", True),  # loopback as an IPv4-mapped address: warned
        ("http://[::ffff:10.0.0.1]:8080", False),
        ("http://10.0.0.1", False),
        ("https://10.0.0.1", True),
    ],
)
def test_which_addresses_count_as_this_machine(url: str, local: bool) -> None:
    assert _encrypted_or_local(url) is local


def test_the_local_emulator_over_http_is_not_warned_about(tmp_path: Path, hostile: Hostile) -> None:
    (tmp_path / "auditor.toml").write_text("timeout = 1.5\ndeadline = 3\n")
    code, _, err, _ = run_cli(["sync", *CONFIG], tmp_path, hostile.url)
    assert code == 0 and err == ""
