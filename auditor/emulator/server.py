"""The emulator's HTTP side: two loopback listeners (main and app address) serving a `Dataset`.

Takes a dataset, a token -> role map and ports (0 = any free one); gives a running `Emulator`
whose `base_url` / `app_url` speak the platform API, with Bearer auth, problem bodies per
API version, a log of every request served and switchable faults.
"""

from __future__ import annotations

import contextlib
import itertools
import re
import socket
import sys
import threading
from collections.abc import Callable, Mapping
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from auditor.emulator import endpoints_analytics as analytics
from auditor.emulator.data import Dataset, generate_dataset
from auditor.emulator.endpoints import PRIVILEGED, Problem, Reply, Request, problem_body
from auditor.emulator.endpoints import computer as computer_endpoint
from auditor.emulator.endpoints import history as history_endpoint
from auditor.emulator.endpoints import reports as reports_endpoint
from auditor.emulator.faults import FaultController

DEFAULT_TOKENS: dict[str, str] = {
    "demo-owner-token": "owner",
    "demo-member-token": "member",
    "demo-auditor-token": "auditor",
}
#: A read-only compliance key: the settings history, but not the analytics (manager/owner only).
HISTORY_READERS = PRIVILEGED | {"auditor"}
Handler = Callable[[Request], Reply]
# (path pattern, problem flavor, manager/owner only (or the roles allowed), handler)
Route = tuple[re.Pattern[str], str, bool | frozenset[str], Handler]

MAIN_ROUTES: tuple[Route, ...] = (
    (
        re.compile(r"/api/v0/organization/enterprise-controls/history"),
        "v0",
        HISTORY_READERS,
        history_endpoint,
    ),
    (re.compile(r"/api/v0/computers/(?P<computerId>[^/]+)"), "v0", False, computer_endpoint),
    (re.compile(r"/api/v1/analytics/users"), "v1", True, analytics.users),
    (
        re.compile(r"/api/v1/analytics/(?P<series>tokens|tools|activity|productivity)"),
        "v1",
        True,
        lambda req: analytics.series(req, req.path_params["series"]),
    ),
)
APP_ROUTES: tuple[Route, ...] = (
    (re.compile(r"/api/organization/agent-readiness-reports"), "v1", False, reports_endpoint),
)


def _query(raw: str) -> dict[str, str]:
    query: dict[str, str] = {}
    for key, value in parse_qsl(raw, keep_blank_values=True):
        query.setdefault(key, value)
    return query


def _bearer(header: str | None) -> str | None:
    scheme, _, value = (header or "").partition(" ")
    return value.strip() if scheme.lower() == "bearer" and value.strip() else None


class _Server(ThreadingHTTPServer):
    """A threading HTTP server that can close its open keep-alive connections on stop."""

    daemon_threads = True

    def __init__(
        self, address: tuple[str, int], emulator: Emulator, routes: tuple[Route, ...]
    ) -> None:
        self.emulator = emulator
        self.routes = routes
        self._open: set[socket.socket] = set()
        self._open_lock = threading.Lock()
        super().__init__(address, _Handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._open_lock:
            self._open.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._open_lock:
            self._open.discard(request)
        super().shutdown_request(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client gone before its answer was written (a run stopped by Ctrl-C or a timeout)
        is nothing to report: socketserver printed each one's traceback on stderr."""
        if isinstance(sys.exc_info()[1], ConnectionError | TimeoutError):
            return
        super().handle_error(request, client_address)

    def close_connections(self) -> None:
        """Hang up on every client still connected."""
        with self._open_lock:
            sockets = list(self._open)
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 60
    disable_nagle_algorithm = True  # headers and body go out as separate writes
    server: _Server

    def do_GET(self) -> None:
        self._handle("GET")

    def _other(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        self._handle(self.command)

    do_POST = do_PUT = do_PATCH = do_DELETE = _other

    def _handle(self, method: str) -> None:
        emulator = self.server.emulator
        emulator.requests.append((method, self.path))
        request_id = emulator.next_request_id()
        reply = emulator.dispatch(
            self.server.routes, method, self.path, self.headers.get("Authorization"), request_id
        )
        self.send_response(reply.status)
        self.send_header("Content-Type", reply.content_type)
        self.send_header("Content-Length", str(len(reply.body)))
        self.send_header("X-Request-Id", request_id)
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(reply.body)

    def log_message(self, format: str, *args: Any) -> None:
        if self.server.emulator.log is not None:
            self.server.emulator.log(f"{self.address_string()} {format % args}")


def _bind_pair(emulator: Emulator, host: str, port: int, app_port: int) -> list[_Server]:
    main = _Server((host, port), emulator, MAIN_ROUTES)
    try:
        return [main, _Server((host, app_port), emulator, APP_ROUTES)]
    except OSError:
        main.server_close()
        raise


class Emulator:
    """A running emulator; also a context manager that stops it on exit."""

    def __init__(
        self,
        dataset: Dataset,
        tokens: Mapping[str, str],
        host: str,
        port: int,
        app_port: int,
        log: Callable[[str], None] | None = None,
    ) -> None:
        self.dataset = dataset
        self.faults = FaultController()
        self.requests: list[tuple[str, str]] = []
        self.errors: list[str] = []
        self.log = log
        self._tokens = dict(tokens)
        self._ids = itertools.count(1)
        self._servers = _bind_pair(self, host, port, app_port)
        self.base_url, self.app_url = (
            f"http://{host}:{s.server_address[1]}" for s in self._servers
        )
        self._threads = [
            threading.Thread(
                target=s.serve_forever, args=(0.05,), name=f"emulator-{i}", daemon=True
            )
            for i, s in enumerate(self._servers)
        ]
        for thread in self._threads:
            thread.start()

    def next_request_id(self) -> str:
        """A fresh request id for problem bodies and the X-Request-Id header."""
        return f"req_{next(self._ids):08x}"

    def add_revisions(self, n: int) -> None:
        """Append `n` new revisions to the served history."""
        self.dataset.add_revisions(n)

    def dispatch(
        self,
        routes: tuple[Route, ...],
        method: str,
        target: str,
        authorization: str | None,
        request_id: str,
    ) -> Reply:
        """Answer one request: auth, route, endpoint, problem bodies for every error."""
        parts = urlsplit(target)
        match, route = next(
            ((m, r) for r in routes if (m := r[0].fullmatch(parts.path))), (None, None)
        )
        flavor = route[1] if route else ("v0" if parts.path.startswith("/api/v0/") else "v1")
        try:
            role = self._role(authorization)
            if match is None or route is None:
                raise Problem(404, f"No such endpoint: {parts.path}")
            if method != "GET":
                raise Problem(405, f"Method {method} is not allowed on {parts.path}")
            allowed = PRIVILEGED if route[2] is True else route[2]
            if allowed and role not in allowed:
                raise Problem(403, "This endpoint requires the manager or owner role")
            request = Request(
                _query(parts.query), self.dataset, self.faults, role, match.groupdict()
            )
            return route[3](request)
        except Problem as problem:
            body = problem_body(flavor, problem.status, problem.detail, request_id)
            return Reply(problem.status, body, headers=problem.headers)
        except Exception as exc:  # a bug in the emulator must still answer, and be visible to tests
            self.errors.append(f"{type(exc).__name__}: {exc}")
            return Reply(500, problem_body(flavor, 500, "Internal emulator error", request_id))

    def _role(self, authorization: str | None) -> str:
        token = _bearer(authorization)
        if token is None:
            raise Problem(401, "Missing bearer token in the Authorization header")
        role = self._tokens.get(token)
        if role is None:
            raise Problem(401, "Invalid or expired API key")
        return role

    def stop(self) -> None:
        """Stop both listeners and hang up on connected clients."""
        for server in self._servers:
            server.shutdown()
            server.close_connections()
            server.server_close()
        for thread in self._threads:
            thread.join(timeout=5)

    def __enter__(self) -> Emulator:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def start_emulator(
    *,
    dataset: Dataset | None = None,
    seed: int = 7,
    revisions: int = 240,
    repos: int = 36,
    tokens: Mapping[str, str] | None = None,
    now: datetime | None = None,
    host: str = "127.0.0.1",
    port: int = 0,
    app_port: int = 0,
    log: Callable[[str], None] | None = None,
) -> Emulator:
    """Start an emulator serving `dataset` (or one generated from the seed and sizes)."""
    data = dataset or generate_dataset(seed=seed, revisions=revisions, repos=repos, now=now)
    return Emulator(data, DEFAULT_TOKENS if tokens is None else tokens, host, port, app_port, log)
