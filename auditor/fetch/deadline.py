"""A total deadline per request, held at the socket: connect, TLS, send, headers and body.

httpx's timeouts bound each socket operation, so a server that trickles one byte a second never
trips them. The transport here wraps every network stream so each read, write and handshake
gets at most the time left before the current request's deadline (`within`); when none is left
it raises httpx's own timeout errors. Takes the deadline and the `Network` (a proxy, a CA
bundle), gives an `httpx.HTTPTransport` that honours it, through the proxy when one is given.
"""

from __future__ import annotations

import base64
import ssl
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from auditor.common import lazy
from auditor.common.interrupts import check_network, watch_socket

# httpcore imports `anyio` for its async primitives, which a sync client never makes: it loads
# on first use, not with httpcore (`lazy.deferring`).
with lazy.deferring("anyio"):
    import httpcore
import httpx

from auditor.errors import ConfigError

_DEADLINE: ContextVar[float | None] = ContextVar("auditor_request_deadline", default=None)
#: Where the current request is with a proxy: `[True]` while it connects to the proxy or waits
#: on its answer (before the tunnel to the service is open), `[False]` after (`at_proxy`).
_AT_PROXY: ContextVar[list[bool] | None] = ContextVar("auditor_at_proxy", default=None)
_READ_BYTES = 1 << 20


@dataclass(frozen=True)
class Network:
    """How requests reach the service: straight or through a proxy, and the CAs trusted.

    `proxy`: `http://host:port` or `https://host:port`, without user-info (what messages name);
    `proxy_auth`: its user name and password (never shown); `ca_pem`: the certificates of the
    CA bundle that replaces the default one (`ca_shown` names it, `ca_where` says where it was
    set); `ignored_proxy_variable`: the standard proxy variable set in the environment
    (`HTTPS_PROXY` …), which auditor does not read, named by a hint when a connection fails."""

    proxy: str | None = None
    proxy_auth: tuple[bytes, bytes] | None = field(default=None, repr=False)
    ca_pem: str | None = field(default=None, repr=False)
    ca_shown: str | None = None
    ca_where: str = ""
    ignored_proxy_variable: str | None = None

    @property
    def secrets(self) -> tuple[str, ...]:
        """The proxy's password (as text) when it may be a credential (`may_be_credential`):
        remembered and kept out of every stored value and message as the token is. A word
        (`github`, `proxy`) is not: scrubbed from every key and value after, and from auditor's
        own wording, it would hide what is no secret and tell the password by what went
        missing. auditor never writes the password itself (only into Proxy-Authorization)."""
        from auditor.redact.commands import may_be_credential

        if self.proxy_auth is None or not self.proxy_auth[1]:
            return ()
        password = self.proxy_auth[1].decode("utf-8", "replace")
        return (password,) if may_be_credential(password) else ()

    @property
    def outside_secrets(self) -> tuple[str, ...]:
        """The proxy's password and user name (as text), whatever they are: `[token]` in text
        that came from outside and goes into a message (a response body, an exception's text:
        a proxy's error page names the user it authenticated, Squid's `%a`, and may echo what
        it was sent)."""
        if self.proxy_auth is None:
            return ()
        return tuple(part.decode("utf-8", "replace") for part in self.proxy_auth[::-1] if part)

    @property
    def outside_encoded(self) -> tuple[str, ...]:
        """`outside_secrets` in base64 (padded and not): `[token]` too, looked for once the text
        is redacted (a `Basic` value holding both is one marker by then, not cut into two)."""
        encoded = [base64.b64encode(part.encode()).decode() for part in self.outside_secrets]
        return (*encoded, *(e.rstrip("=") for e in encoded if e.endswith("=")))

    @property
    def proxy_host(self) -> str:
        """`host:port` of the proxy, as a message names it ("" without one)."""
        if self.proxy is None:
            return ""
        return self.proxy.split("://", 1)[1]


@contextmanager
def within(seconds: float) -> Iterator[float]:
    """Bound every socket operation started inside the block to `seconds` from now in total."""
    deadline = time.monotonic() + seconds
    token = _DEADLINE.set(deadline)
    stage = _AT_PROXY.set([False])
    try:
        yield deadline
    finally:
        _AT_PROXY.reset(stage)
        _DEADLINE.reset(token)


def at_proxy() -> bool:
    """True when the current request (`within`) failed before its tunnel through the proxy was
    open: connecting to the proxy, its TLS, or waiting on its answer to CONNECT."""
    stage = _AT_PROXY.get()
    return bool(stage and stage[0])


def _mark(at: bool) -> None:
    stage = _AT_PROXY.get()
    if stage is not None:
        stage[0] = at


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
    """A network stream whose every operation ends by the request's deadline.

    `proxy_tls`: a stream to an `https://` proxy whose own TLS is still to start (the next
    `start_tls` is the proxy's, the one after it the service's, inside the tunnel)."""

    def __init__(self, inner: httpcore.NetworkStream, *, proxy_tls: bool = False) -> None:
        self._inner = inner
        self._proxy_tls = proxy_tls
        # (`run --orgs`: shut down when the organization is cancelled, which wakes a read
        # waiting on it; its failure then is `Cancelled`, below, never a network error retried)
        try:
            watch_socket(inner.get_extra_info("socket"))
        except BaseException:
            inner.close()
            raise

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        # Whatever has arrived, up to 1 MiB, not httpcore's 64 KiB: a large page then takes a
        # few reads instead of dozens, and the thread that fetches the next page in the
        # background needs the interpreter lock (which the sync's own thread holds) less often.
        size = max(max_bytes, _READ_BYTES)
        try:
            data = self._inner.read(size, _left(timeout, httpcore.ReadTimeout))
        except BaseException:
            check_network()
            raise
        # (a socket shut down still gives what had arrived, then nothing: the end of a
        # stream, which is not said to be the service's)
        check_network()
        return data

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        try:
            self._inner.write(buffer, _left(timeout, httpcore.WriteTimeout))
        except BaseException:
            check_network()
            raise

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.NetworkStream:
        limit = _left(timeout, httpcore.ConnectTimeout)
        _mark(self._proxy_tls)  # the proxy's own TLS, or the service's through the tunnel
        if ssl_context is _DEFERRED:
            ssl_context = _default_tls()
        try:
            inner = self._inner.start_tls(ssl_context, server_hostname, limit)
        except BaseException:
            check_network()
            raise
        return _Stream(inner)

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _Backend(httpcore.NetworkBackend):
    """httpcore's own synchronous backend, with every stream bounded by the deadline.

    `proxy`: the scheme of the proxy every connection goes to (`http`, `https`), or None."""

    def __init__(self, proxy: str | None = None) -> None:
        self._inner = httpcore.SyncBackend()
        self._proxy = proxy

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        limit = _left(timeout, httpcore.ConnectTimeout)
        _mark(self._proxy is not None)  # with a proxy, every connection is to the proxy
        stream = self._inner.connect_tcp(host, port, limit, local_address, socket_options)
        return _Stream(stream, proxy_tls=self._proxy == "https")

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore.NetworkStream:
        limit = _left(timeout, httpcore.ConnectTimeout)
        return _Stream(self._inner.connect_unix_socket(path, limit, socket_options))

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


class DeadlineTransport(httpx.HTTPTransport):
    """`httpx.HTTPTransport` (no proxies from the environment) on the deadline-bounded backend,
    through `network.proxy` when one is given, trusting `network.ca_pem` when one is."""

    def __init__(self, network: Network | None = None) -> None:
        network = network or Network()
        # Without a CA bundle of its own, the default context (certifi's bundle, 17 ms to load)
        # is made by the first TLS handshake: a run against an `http://` address (a local
        # mirror, the demo) never pays for it.
        context = _DEFERRED if network.ca_pem is None else _tls_context(network)
        super().__init__(verify=context, trust_env=False)
        # httpx has no parameter for the network backend: the pool it built is replaced by the
        # same pool on ours (same TLS context, httpx's default limits), or httpcore's own proxy
        # pool (https targets through a CONNECT tunnel: the token stays inside TLS).
        if network.proxy is None:
            self._pool = httpcore.ConnectionPool(
                ssl_context=context,
                max_connections=100,
                max_keepalive_connections=20,
                keepalive_expiry=5.0,
                network_backend=_Backend(),
            )
            return
        scheme = network.proxy.split("://", 1)[0]
        self._pool = httpcore.HTTPProxy(
            proxy_url=network.proxy,
            proxy_auth=network.proxy_auth,
            ssl_context=context,
            proxy_ssl_context=context if scheme == "https" else None,
            max_connections=100,
            max_keepalive_connections=20,
            keepalive_expiry=5.0,
            network_backend=_Backend(scheme),
        )


_TLS: dict[str | None, ssl.SSLContext] = {}

# Stands in for the default TLS context until a handshake needs it (`_Stream.start_tls` swaps
# it for `_default_tls()`). Never a handshake's own: it verifies certificates and host names
# and trusts no CA, so were it ever used, every certificate would be refused.
_DEFERRED = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)


def _default_tls() -> ssl.SSLContext:
    """The default TLS context (httpx's CA bundle, no environment), offering HTTP/1.1 alone as
    httpcore sets on the context it is given (`_DEFERRED` got it instead)."""
    context = _tls_context(Network())
    context.set_alpn_protocols(["http/1.1"])
    return context


def _tls_context(network: Network) -> ssl.SSLContext:
    """The TLS context for `network`'s CA bundle (None: httpx's default, its CA bundle, no
    environment), made once per process for each bundle: loading a CA bundle took 15 ms, and
    every transport made two (one discarded), so a sync with an app address paid four before
    its first request. A context is safe to share.

    A bundle's certificates are trust anchors whether root or intermediate
    (`VERIFY_X509_PARTIAL_CHAIN`, as curl's `--cacert`). A bundle whose certificates OpenSSL
    cannot read (checked as PEM when the configuration was
    read, `auditor.config`) is a ConfigError naming it and where it was set."""
    key = network.ca_pem
    if key not in _TLS:
        if key is None:
            _TLS[key] = httpx.create_ssl_context(trust_env=False)
        else:
            try:  # cadata: these certificates alone, not the system's nor certifi's
                context = ssl.create_default_context(cadata=key)
                # a bundle holding only the company's issuing (intermediate) CA is trusted as
                # curl's `--cacert` trusts it (OpenSSL's partial chain, which curl sets)
                context.verify_flags |= ssl.VERIFY_X509_PARTIAL_CHAIN
                _TLS[key] = context
            except (ssl.SSLError, ValueError) as exc:
                reason = getattr(exc, "reason", None) or str(exc) or type(exc).__name__
                raise ConfigError(
                    f"{network.ca_where}: {network.ca_shown}: the CA bundle holds a certificate "
                    f"that cannot be read ({reason})"
                ) from None
    return _TLS[key]
