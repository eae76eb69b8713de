"""Behind an enterprise network: every request through `AUDITOR_PROXY` (a CONNECT tunnel for
https://, plain forwarding for http://), a company CA trusted with `AUDITOR_CA_BUNDLE`, and the
hints a user who set neither gets.

End to end: the CLI against the emulator, over TLS behind a terminator holding a `trustme`
certificate, through a small threaded proxy on loopback (Basic auth, or one that stalls). The
proxy resolves every host to 127.0.0.1, so the service can be named `api.example.test`.
"""

from __future__ import annotations

import base64
import json
import select
import socket
import sqlite3
import ssl
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator
from contextlib import closing
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import trustme

from tests.conftest import emulator_env as _emulator_env
from tests.conftest import run_cli, secret_forms

pytestmark = pytest.mark.e2e

SERVICE_NAMES = ("127.0.0.1", "localhost", "api.example.test", "app.example.test")


def _pump(a: socket.socket, b: socket.socket) -> None:
    """Copy bytes both ways until either side closes (one thread: an SSL socket is never read
    and written from two threads at once)."""
    pair = (a, b)
    try:
        while True:
            ready = [s for s in pair if isinstance(s, ssl.SSLSocket) and s.pending()]
            if not ready:
                ready, _, _ = select.select(pair, [], [], 30)
            if not ready:
                return
            for sock in ready:
                data = sock.recv(65536)
                if not data:
                    return
                (b if sock is a else a).sendall(data)
    except OSError:
        return
    finally:
        for sock in pair:
            sock.close()


class _Listener:
    """A loopback listener whose connections are each handled by a thread."""

    def __init__(self) -> None:
        self._sock = socket.create_server(("127.0.0.1", 0))
        self._sock.settimeout(0.1)
        self.port = self._sock.getsockname()[1]
        self.stopped = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while not self.stopped.is_set():
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            conn.settimeout(None)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        raise NotImplementedError

    def close(self) -> None:
        self.stopped.set()
        self._thread.join(5)
        self._sock.close()


class TLSFront(_Listener):
    """TLS in front of a plain HTTP port (the emulator's), with a certificate of `ca`."""

    def __init__(self, upstream: int, context: ssl.SSLContext) -> None:
        self._upstream, self._context = upstream, context
        super().__init__()

    def _serve(self, conn: socket.socket) -> None:
        try:
            tls = self._context.wrap_socket(conn, server_side=True)
        except (OSError, ssl.SSLError):
            conn.close()
            return
        _pump(tls, socket.create_connection(("127.0.0.1", self._upstream)))


class TestProxy(_Listener):
    """An HTTP proxy: CONNECT tunnels, forwarding of absolute-form requests (one request per
    upstream connection), Basic proxy auth when `auth` is given, or a stall (accepts, then
    says nothing). Every host is 127.0.0.1; `seen` holds the request lines."""

    __test__ = False

    def __init__(
        self,
        auth: tuple[str, str] | None = None,
        stall: bool = False,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self.seen: list[str] = []
        self._stall = stall
        self._tls = tls
        self._expected = None
        if auth is not None:
            pair = f"{auth[0]}:{auth[1]}".encode()
            self._expected = "Basic " + base64.b64encode(pair).decode()
        super().__init__()

    def url(self, user: str | None = None, password: str | None = None) -> str:
        scheme = "https" if self._tls else "http"
        if user is None:
            return f"{scheme}://127.0.0.1:{self.port}"
        quoted = (
            urllib.parse.quote(user, safe="") + ":" + urllib.parse.quote(password or "", safe="")
        )
        return f"{scheme}://{quoted}@127.0.0.1:{self.port}"

    def _serve(self, conn: socket.socket) -> None:
        if self._tls is not None:
            try:
                conn = self._tls.wrap_socket(conn, server_side=True)
            except (OSError, ssl.SSLError):
                conn.close()
                return
        if self._stall:
            self.stopped.wait(30)
            conn.close()
            return
        buffer = b""
        while True:
            while b"\r\n\r\n" not in buffer:
                data = conn.recv(65536)
                if not data:
                    conn.close()
                    return
                buffer += data
            head, buffer = buffer.split(b"\r\n\r\n", 1)
            line, *lines = head.decode("latin-1").split("\r\n")
            self.seen.append(line)
            headers = {
                k.strip().lower(): v.strip() for k, _, v in (x.partition(":") for x in lines)
            }
            if self._expected and headers.get("proxy-authorization") != self._expected:
                conn.sendall(
                    b"HTTP/1.1 407 Proxy Authentication Required\r\n"
                    b'Proxy-Authenticate: Basic realm="test"\r\nContent-Length: 0\r\n\r\n'
                )
                continue
            method, target, version = line.split(" ")
            if method == "CONNECT":
                upstream = socket.create_connection(("127.0.0.1", int(target.rsplit(":", 1)[1])))
                conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
                upstream.sendall(buffer)
                _pump(conn, upstream)
                return
            url = urllib.parse.urlsplit(target)
            path = url.path + (f"?{url.query}" if url.query else "")
            kept = [x for x in lines if not x.lower().startswith(("proxy-", "connection:"))]
            request = "\r\n".join([f"{method} {path} {version}", *kept, "Connection: close"])
            with socket.create_connection(("127.0.0.1", url.port or 80)) as upstream:
                upstream.sendall(request.encode("latin-1") + b"\r\n\r\n")
                answer = b""
                while data := upstream.recv(65536):
                    answer += data
            conn.sendall(answer)


@pytest.fixture
def proxy() -> Iterator[TestProxy]:
    server = TestProxy()
    yield server
    server.close()


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture(scope="module")
def server_context(ca: trustme.CA) -> ssl.SSLContext:
    """A server's TLS context with a certificate of `ca` for the service's names."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert(*SERVICE_NAMES).configure_cert(context)
    return context


@pytest.fixture(scope="module")
def tls(
    emu: Any,
    ca: trustme.CA,
    server_context: ssl.SSLContext,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Any]:
    """The emulator behind TLS: (base port, app port, the CA's PEM file)."""
    ports = [int(url.rsplit(":", 1)[1]) for url in (emu.base_url, emu.app_url)]
    fronts = [TLSFront(port, server_context) for port in ports]
    pem = tmp_path_factory.mktemp("ca") / "company-ca.pem"
    ca.cert_pem.write_to_path(str(pem))
    try:
        yield fronts[0].port, fronts[1].port, pem
    finally:
        for front in fronts:
            front.close()


def emulator_env(emu: Any, state: Path) -> dict[str, str]:
    """conftest's, with one fingerprint key: two state files' secret markers then compare."""
    return _emulator_env(emu, state) | {"AUDITOR_FINGERPRINT_KEY": "network-tests-key-0123456789"}


def _free_port() -> int:
    with socket.create_server(("127.0.0.1", 0)) as sock:
        return int(sock.getsockname()[1])


def _state(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    """What a sync stored (revisions, reports, analytics), without the sync's own records."""
    tables = {
        "revisions": "revision, org, updated_at, user_id, user_email, user_name, settings",
        "reports": "report_id, repo_url, created_at, data",
        "analytics_days": "day, series, data",
    }
    with closing(sqlite3.connect(path)) as db, db:
        return {
            t: db.execute(f"SELECT {c} FROM {t} ORDER BY 1, 2").fetchall()
            for t, c in tables.items()
        }


def _https(
    env: dict[str, str], tls: Any, host: tuple[str, str] = ("127.0.0.1",) * 2
) -> dict[str, str]:
    base, app, _ = tls
    return {
        **env,
        "AUDITOR_BASE_URL": f"https://{host[0]}:{base}",
        "AUDITOR_APP_URL": f"https://{host[1]}:{app}",
    }


def _error_line(err: str) -> str:
    lines = [x for x in err.splitlines() if x.startswith("auditor: error:")]
    assert len(lines) == 1, err
    return lines[0]


# -- the proxy -------------------------------------------------------------------------------


def test_sync_through_the_proxy_stores_what_a_direct_sync_does(
    emu: Any, tmp_path: Path, proxy: TestProxy
) -> None:
    direct = emulator_env(emu, tmp_path / "direct.db")
    assert run_cli(["sync", "-q"], direct, tmp_path)[0] == 0
    through = {**emulator_env(emu, tmp_path / "proxied.db"), "AUDITOR_PROXY": proxy.url()}
    code, _, err = run_cli(["sync"], through, tmp_path)
    assert code == 0, err
    assert err == ""  # the emulator and the proxy are on this machine: no plain-HTTP warning
    assert _state(tmp_path / "proxied.db") == _state(tmp_path / "direct.db")
    for url in (emu.base_url, emu.app_url):  # every request went through it, both addresses
        assert any(line.startswith(f"GET {url}/") for line in proxy.seen), proxy.seen
    assert not [line for line in proxy.seen if not line.startswith("GET http://127.0.0.1:")]


def test_https_goes_through_a_connect_tunnel_with_the_company_ca(
    emu: Any, tls: Any, tmp_path: Path, proxy: TestProxy
) -> None:
    """`api.example.test` resolves only at the proxy: a request that did not go through it
    fails; the certificate is the company CA's, trusted through `AUDITOR_CA_BUNDLE` alone."""
    direct = emulator_env(emu, tmp_path / "direct.db")
    assert run_cli(["sync", "-q"], direct, tmp_path)[0] == 0
    env = _https(
        emulator_env(emu, tmp_path / "state.db"), tls, ("api.example.test", "app.example.test")
    )
    env |= {"AUDITOR_PROXY": proxy.url(), "AUDITOR_CA_BUNDLE": str(tls[2])}
    code, out, err = run_cli(["sync"], env, tmp_path)
    assert code == 0, err
    assert out.startswith(f"Synced https://api.example.test:{tls[0]}: 30 revisions")
    assert _state(tmp_path / "state.db") == _state(tmp_path / "direct.db")
    assert set(proxy.seen) == {
        f"CONNECT api.example.test:{tls[0]} HTTP/1.1",
        f"CONNECT app.example.test:{tls[1]} HTTP/1.1",
    }


@pytest.mark.parametrize("scheme", ["https", "http"])
def test_an_https_proxy_is_checked_against_the_ca_bundle_too(
    emu: Any, tls: Any, tmp_path: Path, server_context: ssl.SSLContext, scheme: str
) -> None:
    """An https:// proxy (TLS to the proxy, then TLS to the service inside it, or plain HTTP
    forwarded inside it): the company CA's certificate of the proxy is trusted through the
    same bundle; without the bundle, the line says it was the proxy's certificate."""
    server = TestProxy(tls=server_context)
    try:
        env = emulator_env(emu, tmp_path / "state.db") | {"AUDITOR_PROXY": server.url()}
        if scheme == "https":
            env = _https(env, tls, ("api.example.test", "app.example.test"))
        code, _, err = run_cli(["sync", "-q"], env | {"AUDITOR_CA_BUNDLE": str(tls[2])}, tmp_path)
        assert code == 0, err
        assert server.seen and all(x.startswith(("CONNECT", "GET")) for x in server.seen)
        code, _, err = run_cli(["sync"], env, tmp_path)
        assert code == 2
        line = _error_line(err)
        assert (
            f": the proxy 127.0.0.1:{server.port}: TLS failure: certificate not accepted "
            "(unable to get local issuer certificate); not retried; if your network inspects TLS"
        ) in line, line
    finally:
        server.close()


def test_plain_http_through_the_proxy_says_the_proxy_sees_the_token(
    emu: Any, tmp_path: Path, proxy: TestProxy
) -> None:
    base, app = (url.rsplit(":", 1)[1] for url in (emu.base_url, emu.app_url))
    env = emulator_env(emu, tmp_path / "state.db") | {
        "AUDITOR_BASE_URL": f"http://api.example.test:{base}",
        "AUDITOR_APP_URL": f"http://app.example.test:{app}",
        "AUDITOR_PROXY": proxy.url(),
    }
    code, _, err = run_cli(["sync"], env, tmp_path)
    assert code == 0, err
    assert (
        f"auditor: warning: base_url http://api.example.test:{base} is plain HTTP: the API token "
        f"goes over the network unencrypted, and the proxy http://127.0.0.1:{proxy.port} sees it "
        "too (use https://)"
    ) in err.splitlines()
    assert f"auditor: warning: app_url http://app.example.test:{app} is plain HTTP" in err


def test_proxy_credentials_are_never_shown_anywhere(emu: Any, tls: Any, tmp_path: Path) -> None:
    """The proxy's user name and password go to the proxy only: not in any line, traceback,
    report, the state file (nor its sync records), raw, URL-encoded or base64."""
    user, password = "svc-audit-7f3k2q", f"Pr0xy/p@ss+{time.time_ns() % 10**9}"
    server = TestProxy(auth=(user, password))
    try:
        env = _https(
            emulator_env(emu, tmp_path / "state.db"), tls, ("api.example.test", "app.example.test")
        )
        env |= {"AUDITOR_PROXY": server.url(user, password), "AUDITOR_CA_BUNDLE": str(tls[2])}
        outputs = []
        code, out, err = run_cli(["sync"], env, tmp_path)
        assert code == 0, err
        outputs += [out, err]
        code, out, err = run_cli(
            ["run", "--out", str(tmp_path / "reports"), "-o", "md,json,sarif"], env, tmp_path
        )
        assert code in (0, 1), err
        outputs += [out, err]
        proposed = tmp_path / "proposed.json"
        proposed.write_text(json.dumps(emu.dataset.history[-1]["settings"]))
        seen = len(server.seen)
        code, out, err = run_cli(
            ["review", str(proposed), "--out", str(tmp_path / "rv")], env, tmp_path
        )
        assert code in (0, 1), err
        assert len(server.seen) > seen  # `review` online syncs through the proxy too
        outputs += [out, err]
        code, out, err = run_cli(["export", "--out", str(tmp_path / "evidence")], env, tmp_path)
        assert code == 0, err
        outputs += [out, err]
        orgs = tmp_path / "orgs.toml"
        orgs.write_text(
            f'[[org]]\nname = "acme"\nbase_url = "{env["AUDITOR_BASE_URL"]}"\n'
            f'app_url = "{env["AUDITOR_APP_URL"]}"\ntoken_env = "ACME_TOKEN"\n'
        )
        seen = len(server.seen)
        orgs_env = env | {
            "ACME_TOKEN": env["AUDITOR_TOKEN"],
            "AUDITOR_STATE": str(tmp_path / "o.db"),
        }
        code, out, err = run_cli(
            ["run", "--orgs", str(orgs), "--out", str(tmp_path / "orgs")], orgs_env, tmp_path
        )
        assert code in (0, 1), err
        assert len(server.seen) > seen  # each organization's sync too
        outputs += [out, err]
        wrong = env | {"AUDITOR_PROXY": server.url(user, password + "x")}
        code, out, err = run_cli(["sync", "--debug"], wrong, tmp_path)
        assert code == 2
        outputs += [out, err]
        assert f"the proxy 127.0.0.1:{server.port} did not accept the user name and password" in err
    finally:
        server.close()
    files = [p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()]
    pair = f"{user}:{password}"
    for secret in (password, user, pair):
        for form in secret_forms(secret):
            for text in outputs:
                assert form not in text, (secret, form)
            for data in files:
                assert form.encode() not in data, (secret, form)


def test_a_proxy_password_that_is_a_word_is_not_scrubbed_from_the_settings(
    emu: Any, tmp_path: Path, proxy: TestProxy
) -> None:
    """A password a person chose (`github`) may be any word of the settings: remembered, it was
    scrubbed from every stored value for good (the allowlist's `github` a marker), and every
    run and review after was incomplete (exit 2), with no proxy set too. auditor never writes
    the password itself: a word is not remembered (review R3 #2)."""
    plain = emulator_env(emu, tmp_path / "plain.db") | {"AUDITOR_PROXY": proxy.url()}
    word = emulator_env(emu, tmp_path / "word.db") | {"AUDITOR_PROXY": proxy.url("ci", "github")}
    for env in (plain, word):
        code, _, err = run_cli(["sync", "-q"], env, tmp_path)
        assert code == 0, err
    stored = _state(tmp_path / "plain.db")
    assert "github" in repr(stored["revisions"])  # the word is in the settings
    assert _state(tmp_path / "word.db") == stored
    codes = []
    for env in (plain, word):
        offline = {k: v for k, v in env.items() if k != "AUDITOR_PROXY"}
        out = str(tmp_path / f"r-{len(codes)}")
        code, _, err = run_cli(
            ["run", "--offline", "--out", out, "-o", "json", "-q"], offline, tmp_path
        )
        codes.append(code)
        assert "cannot be decided" not in err, err
    assert codes[0] == codes[1] and codes[0] in (0, 1)


@pytest.mark.parametrize("password", ["proxy", "password", "failed", "accept"])
def test_a_weak_proxy_password_leaves_the_error_line_whole(
    emu: Any, tmp_path: Path, password: str
) -> None:
    """A password that is a word of auditor's own line (`proxy`, `password`) became `[token]`
    there: which word went missing told the password (review R3 #3)."""
    server = TestProxy(auth=("svc-audit", "right-password"))
    try:
        env = emulator_env(emu, tmp_path / "state.db") | {
            "AUDITOR_PROXY": server.url("svc-audit", password)
        }
        code, _, err = run_cli(["sync"], env, tmp_path)
    finally:
        server.close()
    assert code == 2
    assert "[token]" not in err, err
    assert (
        f"the proxy 127.0.0.1:{server.port} did not accept the user name and password of the "
        "proxy URL (407 Proxy Authentication Required); not retried"
    ) in _error_line(err)


def test_a_407_is_one_line_saying_it_was_the_proxy(emu: Any, tls: Any, tmp_path: Path) -> None:
    server = TestProxy(auth=("ci", "secret-proxy-password"))
    try:
        tunnel = _https(emulator_env(emu, tmp_path / "a.db"), tls) | {
            "AUDITOR_PROXY": server.url(),
            "AUDITOR_CA_BUNDLE": str(tls[2]),
        }
        plain = emulator_env(emu, tmp_path / "b.db") | {"AUDITOR_PROXY": server.url()}
        for env, host in ((tunnel, f"127.0.0.1:{tls[0]}"), (plain, emu.base_url.split("//")[1])):
            code, _, err = run_cli(["sync"], env, tmp_path)
            assert code == 2
            line = _error_line(err)
            assert (
                f"on {host}: the proxy 127.0.0.1:{server.port} asks for a user name and password "
                "(407 Proxy Authentication Required): put them in the proxy URL, as its user-info "
                "before the host; not retried"
            ) in line, line
            assert err.splitlines()[-1] == line or "exit 2" in err.splitlines()[-1]
    finally:
        server.close()


def test_a_stalling_proxy_times_out_within_the_request_deadline(
    emu: Any, tls: Any, tmp_path: Path
) -> None:
    (tmp_path / "c.toml").write_text("timeout = 1\ndeadline = 3\n")
    server = TestProxy(stall=True)
    try:
        env = _https(emulator_env(emu, tmp_path / "state.db"), tls) | {
            "AUDITOR_PROXY": server.url(),
            "AUDITOR_CA_BUNDLE": str(tls[2]),
        }
        started = time.monotonic()
        code, _, err = run_cli(["sync", "--config", "c.toml"], env, tmp_path)
        elapsed = time.monotonic() - started
    finally:
        server.close()
    assert code == 2
    assert elapsed < 3 + 1.5, elapsed
    line = _error_line(err)
    assert (
        f"on 127.0.0.1:{tls[0]}: the proxy 127.0.0.1:{server.port} did not answer within 1s" in line
    )
    assert "the sync's deadline of 3s leaves no time for another try" in line


def test_a_proxy_that_refuses_connections_is_named(emu: Any, tmp_path: Path) -> None:
    port = _free_port()
    env = emulator_env(emu, tmp_path / "state.db") | {"AUDITOR_PROXY": f"http://127.0.0.1:{port}"}
    code, _, err = run_cli(["sync"], env, tmp_path)
    assert code == 2
    assert (
        f"the proxy 127.0.0.1:{port} refused the connection; nothing is listening there "
        "(refused 2 times in a row)"
    ) in _error_line(err)


def test_a_connect_tunnel_refused_is_named(emu: Any, tls: Any, tmp_path: Path) -> None:
    """A proxy that refuses CONNECT (403): one line, not retried."""

    class Refusing(TestProxy):
        def _serve(self, conn: socket.socket) -> None:
            conn.recv(65536)
            conn.sendall(b"HTTP/1.1 403 Forbidden by policy\r\nContent-Length: 0\r\n\r\n")
            conn.close()

    server = Refusing()
    try:
        env = _https(emulator_env(emu, tmp_path / "state.db"), tls) | {
            "AUDITOR_PROXY": server.url(),
            "AUDITOR_CA_BUNDLE": str(tls[2]),
        }
        code, _, err = run_cli(["sync"], env, tmp_path)
    finally:
        server.close()
    assert code == 2
    assert (
        f"the proxy 127.0.0.1:{server.port} refused to open a tunnel to 127.0.0.1:{tls[0]} "
        "(403 Forbidden); not retried"
    ) in _error_line(err)


@pytest.mark.parametrize("variable", ["HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "ALL_PROXY"])
def test_a_standard_proxy_variable_is_named_when_a_connection_fails(
    emu: Any, tmp_path: Path, variable: str
) -> None:
    env = emulator_env(emu, tmp_path / "state.db") | {
        "AUDITOR_BASE_URL": f"http://127.0.0.1:{_free_port()}",
        variable: "http://proxy.corp.example:3128",
    }
    code, _, err = run_cli(["sync"], env, tmp_path)
    assert code == 2
    assert _error_line(err).endswith(
        f"(refused 2 times in a row); {variable} is set in the environment, but auditor does not "
        "read it: to go through a proxy, set AUDITOR_PROXY (or `proxy` in a config file)"
    )


def test_no_hint_when_auditor_proxy_is_set_or_no_variable(
    emu: Any, tmp_path: Path, proxy: TestProxy
) -> None:
    env = emulator_env(emu, tmp_path / "state.db") | {
        "AUDITOR_BASE_URL": f"http://127.0.0.1:{_free_port()}"
    }
    code, _, err = run_cli(["sync"], env, tmp_path)
    assert code == 2 and "PROXY" not in err
    env |= {
        "HTTPS_PROXY": "http://proxy.corp.example:3128",
        "AUDITOR_PROXY": f"http://127.0.0.1:{_free_port()}",
    }
    code, _, err = run_cli(["sync"], env, tmp_path)
    assert code == 2 and "HTTPS_PROXY" not in err


# -- the CA bundle ---------------------------------------------------------------------------


def test_without_the_company_ca_the_certificate_is_refused_with_a_hint(
    emu: Any, tls: Any, tmp_path: Path
) -> None:
    env = _https(emulator_env(emu, tmp_path / "state.db"), tls)
    code, _, err = run_cli(["sync"], env, tmp_path)
    assert code == 2
    line = _error_line(err)
    assert "TLS failure: certificate not accepted (unable to get local issuer certificate)" in line
    assert line.endswith(
        "not retried; if your network inspects TLS with its own certificate authority, set "
        "AUDITOR_CA_BUNDLE (or `ca_bundle`) to a PEM file of its CA certificates"
    )


def test_the_right_bundle_is_trusted_and_replaces_the_default(
    emu: Any, tls: Any, tmp_path: Path
) -> None:
    env = _https(emulator_env(emu, tmp_path / "state.db"), tls) | {"AUDITOR_CA_BUNDLE": str(tls[2])}
    code, out, err = run_cli(["sync", "-q"], env, tmp_path)
    assert (code, out, err) == (0, "", "")
    # another CA's bundle (a company CA where the service has a public one): refused, named
    other = tmp_path / "other-ca.pem"
    trustme.CA().cert_pem.write_to_path(str(other))
    code, _, err = run_cli(["sync"], env | {"AUDITOR_CA_BUNDLE": str(other)}, tmp_path)
    assert code == 2
    line = _error_line(err)
    assert f"certificate not accepted by the CA bundle {other} (unable to get local issuer" in line
    assert "set AUDITOR_CA_BUNDLE" not in line


def test_a_bundle_of_the_issuing_intermediate_ca_alone_is_trusted(emu: Any, tmp_path: Path) -> None:
    """A company bundle holding only its issuing (intermediate) CA: curl's `--cacert` accepts
    it (partial chain); auditor refused it (`unable to get issuer certificate`) (review R3 #4)."""
    root = trustme.CA()
    issuing = root.create_child_ca()
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    issuing.issue_cert(*SERVICE_NAMES).configure_cert(context)  # sends leaf and intermediate
    ports = [int(url.rsplit(":", 1)[1]) for url in (emu.base_url, emu.app_url)]
    fronts = [TLSFront(port, context) for port in ports]
    bundle = tmp_path / "issuing-ca.pem"
    issuing.cert_pem.write_to_path(str(bundle))
    try:
        tls = (fronts[0].port, fronts[1].port, bundle)
        env = _https(emulator_env(emu, tmp_path / "state.db"), tls)
        code, out, err = run_cli(["sync", "-q"], env | {"AUDITOR_CA_BUNDLE": str(bundle)}, tmp_path)
        assert (code, out, err) == (0, "", "")
        other = tmp_path / "other.pem"  # another company's intermediate: still refused
        trustme.CA().create_child_ca().cert_pem.write_to_path(str(other))
        env |= {"AUDITOR_CA_BUNDLE": str(other), "AUDITOR_STATE": str(tmp_path / "o.db")}
        code, _, err = run_cli(["sync"], env, tmp_path)
        assert code == 2 and "certificate not accepted by the CA bundle" in _error_line(err)
    finally:
        for front in fronts:
            front.close()


def test_ca_bundle_from_a_config_file_is_relative_to_it(emu: Any, tls: Any, tmp_path: Path) -> None:
    (tmp_path / "ci").mkdir()
    (tmp_path / "ci" / "ca.pem").write_bytes(tls[2].read_bytes())
    (tmp_path / "ci" / "auditor.toml").write_text('ca_bundle = "ca.pem"\n')
    env = _https(emulator_env(emu, tmp_path / "state.db"), tls)
    assert run_cli(["sync", "-q", "--config", "ci/auditor.toml"], env, tmp_path)[0] == 0
    (tmp_path / "ci" / "auditor.toml").write_text('timeout = 5\nca-bundle = "missing.pem"\n')
    code, _, err = run_cli(["sync", "--config", "ci/auditor.toml"], env, tmp_path)
    assert code == 2
    assert err.splitlines()[0] == (
        "auditor: error: ci/auditor.toml:2:1: ca_bundle: cannot read the CA bundle missing.pem: "
        "No such file or directory"
    )


def _bundles(tmp_path: Path, good: Path) -> dict[str, tuple[Path, str]]:
    empty = tmp_path / "empty.pem"
    empty.write_text("# no certificate here\n")
    key = tmp_path / "key.pem"
    key.write_text("-----BEGIN PRIVATE KEY-----\nMIIB\n-----END PRIVATE KEY-----\n")
    broken = tmp_path / "broken.pem"
    broken.write_text(
        good.read_text()
        + "-----BEGIN CERTIFICATE-----\nTm90IGEgY2VydA==\n-----END CERTIFICATE-----\n"
    )
    folder = tmp_path / "certs"
    folder.mkdir()
    big = tmp_path / "big.pem"
    big.write_bytes(b"#" * 10_000_001)
    return {
        "missing": (
            tmp_path / "nope.pem",
            "cannot read the CA bundle {path}: No such file or directory",
        ),
        "folder": (folder, "cannot read the CA bundle {path}: a directory, not a regular file"),
        "empty": (empty, "{path}: no certificate in the CA bundle (expected PEM text: "),
        "key": (key, "{path}: no certificate in the CA bundle (expected PEM text: "),
        "broken": (broken, "{path}:"),
        "big": (
            big,
            "cannot read the CA bundle {path}: file is 10000001 bytes; the limit is 10000000",
        ),
    }


@pytest.mark.parametrize("case", ["missing", "folder", "empty", "key", "broken", "big"])
def test_a_bad_ca_bundle_is_a_config_error_naming_it(
    emu: Any, tls: Any, tmp_path: Path, case: str
) -> None:
    path, said = _bundles(tmp_path, tls[2])[case]
    env = _https(emulator_env(emu, tmp_path / "state.db"), tls) | {"AUDITOR_CA_BUNDLE": str(path)}
    for command in (["sync"], ["history"]):  # read with the configuration, as any key is
        code, out, err = run_cli(command, env, tmp_path)
        assert code == 2 and out == ""
        assert err.splitlines()[0].startswith(
            "auditor: error: AUDITOR_CA_BUNDLE: " + said.format(path=path)
        ), err
        assert len(err.splitlines()) <= 2, err  # the line, and the exit line
    if case == "broken":
        assert "certificate 2 of the CA bundle is not valid PEM" in err


# -- configuration ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "said"),
    [
        (
            "socks5://u:Sekr1tPw0rd@proxy:1080",
            "expected an http:// or https:// proxy URL (http://host:port), got socks5://…",
        ),
        ("u:Sekr1tPw0rd@proxy:3128", "got no scheme:// at its start"),
        ("http://u:Sekr1t/Pw0rd@proxy:3128", "has a character that must be percent-encoded"),
        ("http://u:Sekr1tPw0rd@proxy:99999", "not a valid proxy URL (the port is not a number"),
        ("http://u:Sekr1tPw0rd@proxy:0", "the proxy URL's port is 0"),  # was read as :80
        ("http://u:Sekr1tPw0rd@proxy:3128/path?q=1", "without a path, query or fragment"),
        (  # a Cyrillic o (U+043E), as pasted: was "unexpected TypeError" at the first request
            "http://u:Sekr1tPw0rd@pr\u043exy.corp:3128",
            "the proxy URL's host has a character that is not ASCII",
        ),
    ],
)
def test_a_bad_proxy_url_is_refused_without_showing_it(
    emu: Any, tmp_path: Path, value: str, said: str
) -> None:
    env = emulator_env(emu, tmp_path / "state.db") | {"AUDITOR_PROXY": value}
    code, out, err = run_cli(["sync"], env, tmp_path)
    assert code == 2
    assert err.startswith("auditor: error: AUDITOR_PROXY: ") and said in err, err
    assert "Sekr1t" not in err + out
    (tmp_path / "c.toml").write_text(f'proxy = "{value}"\n')
    code, _, err = run_cli(
        ["sync", "--config", "c.toml"], emulator_env(emu, tmp_path / "s.db"), tmp_path
    )
    assert code == 2 and err.startswith("auditor: error: c.toml:1:1: proxy: ") and said in err, err
    assert "Sekr1t" not in err


def test_config_never_shows_the_proxy_password(tmp_path: Path) -> None:
    from auditor.config import load_config

    config = load_config(
        flags={},
        env={"AUDITOR_PROXY": "http://ci:Sekr1t%2FPw0rd@proxy.corp:3128/"},
        cwd=tmp_path,
        config_file=None,
    )
    assert config.proxy is not None
    assert config.proxy.url == "http://proxy.corp:3128"
    assert config.proxy.password == b"Sekr1t/Pw0rd" and config.proxy.username == b"ci"
    assert "Sekr1t" not in repr(config) and "Sekr1t" not in repr(replace(config, org="x"))
    assert "Sekr1t" not in repr(config.proxy)


# -- the README ------------------------------------------------------------------------------


def test_the_readme_documents_the_keys_variables_and_hints() -> None:
    """What a user looks up (the keys, the variables) and the hints' words as the lines say."""
    from auditor.config import ENV_KEYS, FILE_KEYS

    text = (Path(__file__).parents[1] / "README.md").read_text(encoding="utf-8")
    flat = " ".join(text.split())
    keys = flat.split("Config file keys", 1)[1].split(". ", 1)[0]
    for key in set(FILE_KEYS) - {"state_path"}:
        assert f"`{key}`" in keys, key
    table = text.split("| environment | meaning |", 1)[1].split("\n\n", 1)[0]
    for variable in ENV_KEYS:
        assert f"| `{variable}` |" in table, variable
    assert (
        "``HTTPS_PROXY is set in the environment, but auditor does not read it: to go through a "
        "proxy, set AUDITOR_PROXY (or `proxy` in a config file)``"
    ) in flat
    assert (
        "``; if your network inspects TLS with its own certificate authority, set "
        "AUDITOR_CA_BUNDLE (or `ca_bundle`) to a PEM file of its CA certificates``"
    ) in flat


def test_a_block_openssl_cannot_read_is_named_at_the_sync(
    emu: Any, tls: Any, tmp_path: Path
) -> None:
    """A block that is PEM and a DER sequence but no certificate passes the configuration's
    check; OpenSSL refuses it when the sync loads the bundle: the same one line, exit 2."""
    odd = tmp_path / "odd.pem"
    body = base64.b64encode(b"\x30\x03\x02\x01\x01").decode()
    odd.write_text(f"-----BEGIN CERTIFICATE-----\n{body}\n-----END CERTIFICATE-----\n")
    env = _https(emulator_env(emu, tmp_path / "state.db"), tls) | {"AUDITOR_CA_BUNDLE": str(odd)}
    code, _, err = run_cli(["sync"], env, tmp_path)
    assert code == 2
    assert _error_line(err).startswith(
        f"auditor: error: AUDITOR_CA_BUNDLE: {odd}: the CA bundle holds a certificate that "
        "cannot be read ("
    ), err
    assert not (tmp_path / "state.db").exists()  # a first sync that failed leaves nothing


def _error_through_proxy(password: str, answer: Callable[[Any], Any], user: str = "ci") -> str:
    """The error line of a request answered by `answer`, made through a proxy whose password
    is `password`."""
    import httpx

    from auditor.errors import ApiError
    from auditor.fetch.deadline import Network
    from auditor.fetch.retry import Requester, RetryPolicy
    from auditor.redact import Redactor

    network = Network(proxy="http://proxy.corp:3128", proxy_auth=(user.encode(), password.encode()))
    client = httpx.Client(base_url="http://api.example.test", transport=httpx.MockTransport(answer))
    requester = Requester(client, RetryPolicy(network=network), Redactor(b"k" * 32))
    with pytest.raises(ApiError) as caught:
        requester.get_json("/x", {}, "page 1")
    return str(caught.value)


@pytest.mark.parametrize("password", ["github", "Sekr1t-Pw0rd-9x"])
def test_the_proxy_password_reads_token_in_a_body_quoted_whatever_it_is(password: str) -> None:
    """Text from outside (an error body quoted in the line) is searched for the password, a
    word too; auditor's own wording never is (review R3 #3)."""
    import httpx

    def answer(request: httpx.Request) -> httpx.Response:
        body = {"title": "Bad Request", "detail": f"proxy rejected {password} for the request"}
        return httpx.Response(400, json=body, headers={"content-type": "application/json"})

    text = _error_through_proxy(password, answer)
    assert password not in text and "[token]" in text, text
    assert "proxy rejected" in text, text


@pytest.mark.parametrize("password", ["swordfish", "Sekr1t-Pw0rd-9x"])
def test_the_proxy_user_name_and_the_passwords_base64_read_token_in_a_body(password: str) -> None:
    """A proxy's error page names the user it authenticated (Squid's `%a`) and may echo what it
    was sent: the user name was shown in the line and every report of the run after (tester
    T20), a word password's base64 too. Both are secrets (README, Behind a proxy)."""
    import httpx

    def answer(request: httpx.Request) -> httpx.Response:
        b64 = base64.b64encode(password.encode()).decode().rstrip("=")
        basic = base64.b64encode(f"svc-auditproxy-7:{password}".encode()).decode()
        body = {
            "title": "Proxy says no",
            "detail": f"user svc-auditproxy-7 pw64={b64} refused; got Basic {basic}",
        }
        return httpx.Response(400, json=body, headers={"content-type": "application/json"})

    network = ("svc-auditproxy-7", password)
    text = _error_through_proxy(password, answer, user=network[0])
    assert "svc-auditproxy-7" not in text, text
    assert base64.b64encode(password.encode()).decode().rstrip("=") not in text, text
    assert "user [token] pw64=[token] refused" in text, text
    assert text.endswith("got Basic [token]"), text  # whole: it encodes the user and password


@pytest.mark.parametrize("password", ["marmalade", "Sekr1t-Pw0rd-9x"])
def test_the_proxy_password_reads_token_in_a_redirect_target_whatever_it_is(
    password: str,
) -> None:
    """A redirect's target is text from outside too: the password in its path, a word too,
    reads `[token]` in the error line (review R5 #5: a plain word was shown)."""
    import httpx

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(302, headers={"location": f"http://x.example/{password}"})

    text = _error_through_proxy(password, answer)
    assert password not in text, text
    assert "redirects to http://x.example/[token]" in text, text


def test_the_default_ca_bundle_is_loaded_by_the_first_handshake_and_used_for_it(
    emu: Any, tls: Any, ca: trustme.CA, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without a CA bundle of auditor's own, the default TLS context (certifi's bundle) is made
    when a connection first needs TLS, not with the client: a run against `http://` addresses
    (a local mirror, the demo) does not load it. The handshake then verifies with it: here it
    trusts the test CA, so the request goes through (with the stand-in, which trusts no CA,
    every certificate would be refused)."""
    import httpx

    from auditor.fetch import deadline

    monkeypatch.setattr(deadline, "_TLS", {})
    with httpx.Client(transport=deadline.DeadlineTransport()) as client:
        assert client.get(f"{emu.base_url}/").status_code > 0
        assert deadline._TLS == {}  # plain HTTP: no TLS context made
        trusting = ssl.create_default_context()
        ca.configure_trust(trusting)
        deadline._TLS[None] = trusting  # the default context, trusting the test CA
        assert client.get(f"https://127.0.0.1:{tls[0]}/").status_code > 0
        deadline._TLS.clear()  # without it, the default (certifi's bundle) refuses the test CA
        with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
            client.get(f"https://localhost:{tls[1]}/")
        assert None in deadline._TLS
