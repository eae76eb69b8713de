"""A total deadline per request, held at the socket: connect, TLS, send, headers and body.

httpx's timeouts bound each socket operation, so a server that trickles one byte a second never
trips them. The transport here wraps every network stream so each read, write and handshake
gets at most the time left before the current request's deadline (`within`); when none is left
it raises httpx's own timeout errors. Takes nothing but the deadline, gives an
`httpx.HTTPTransport` that honours it.
"""

from __future__ import annotations

import ssl
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import httpcore
import httpx

_DEADLINE: ContextVar[float | None] = ContextVar("auditor_request_deadline", default=None)
_READ_BYTES = 1 << 20


@contextmanager
def within(seconds: float) -> Iterator[float]:
    """Bound every socket operation started inside the block to `seconds` from now in total."""
    deadline = time.monotonic() + seconds
    token = _DEADLINE.set(deadline)
    try:
        yield deadline
    finally:
        _DEADLINE.reset(token)


def past_deadline() -> bool:
    """True once the current request's deadline (if any) has passed."""
    deadline = _DEADLINE.get()
    return deadline is not None and time.monotonic() >= deadline


def _left(timeout: float | None, error: type[Exception]) -> float | None:
    deadline = _DEADLINE.get()
    if deadline is None:
        return timeout
    left = deadline - time.monotonic()
    if left <= 0:
        raise error("the request's total time limit passed")
    return left if timeout is None else min(timeout, left)


class _Stream(httpcore.NetworkStream):
    """A network stream whose every operation ends by the request's deadline."""

    def __init__(self, inner: httpcore.NetworkStream) -> None:
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        # Whatever has arrived, up to 1 MiB, not httpcore's 64 KiB: a large page then takes a
        # few reads instead of dozens, and the thread that fetches the next page in the
        # background needs the interpreter lock (which the sync's own thread holds) less often.
        size = max(max_bytes, _READ_BYTES)
        return self._inner.read(size, _left(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, _left(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.NetworkStream:
        limit = _left(timeout, httpcore.ConnectTimeout)
        return _Stream(self._inner.start_tls(ssl_context, server_hostname, limit))

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _Backend(httpcore.NetworkBackend):
    """httpcore's own synchronous backend, with every stream bounded by the deadline."""

    def __init__(self) -> None:
        self._inner = httpcore.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        limit = _left(timeout, httpcore.ConnectTimeout)
        stream = self._inner.connect_tcp(host, port, limit, local_address, socket_options)
        return _Stream(stream)

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore.NetworkStream:
        limit = _left(timeout, httpcore.ConnectTimeout)
        return _Stream(self._inner.connect_unix_socket(path, limit, socket_options))

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


class DeadlineTransport(httpx.HTTPTransport):
    """`httpx.HTTPTransport` (no proxies from the environment) on the deadline-bounded backend."""

    def __init__(self) -> None:
        context = _tls_context()
        super().__init__(verify=context, trust_env=False)
        # httpx has no parameter for the network backend: the pool it built is replaced by the
        # same pool on ours (same TLS context, httpx's default limits).
        self._pool = httpcore.ConnectionPool(
            ssl_context=context,
            max_connections=100,
            max_keepalive_connections=20,
            keepalive_expiry=5.0,
            network_backend=_Backend(),
        )


_TLS: list[ssl.SSLContext] = []


def _tls_context() -> ssl.SSLContext:
    """httpx's default TLS context (its CA bundle, no environment), made once per process:
    loading the CA bundle took 15 ms, and every transport made two (one discarded), so a sync
    with an app address paid four before its first request. A context is safe to share."""
    if not _TLS:
        _TLS.append(httpx.create_ssl_context(trust_env=False))
    return _TLS[0]
