"""One GET with retries: jittered backoff, `Retry-After`, deadlines, size and type guards.

Takes an `httpx.Client` and a request, gives the parsed JSON body, or raises `ApiError` /
`DataError` with a message naming the status, the problem title and detail and the URL path
(and the host, when no answer came back). Each attempt has a total time limit (`timeout`) that
holds while a body trickles in; all requests of a sync share one `Budget` (`deadline`). A
connection refused twice, a host name that does not resolve and a TLS failure end at once:
retrying cannot fix them. Through a proxy (`Network`), a failure before the tunnel to the
service is open names the proxy (refused, timed out, 407, CONNECT refused); without one, a
failure to connect names a standard proxy variable set in the environment, which auditor
does not read, and a certificate not accepted says how to trust a company CA. Every message
passes through the redactor, so the token (and the proxy's password) never shows.
"""

from __future__ import annotations

import errno
import json
import math
import random
import re
import socket
import ssl
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from http import HTTPStatus
from typing import NamedTuple

import h11
import httpx

from auditor.common.escape import shorten
from auditor.common.jsonutil import loads
from auditor.common.lazyre import lazy_regex
from auditor.errors import ApiError, DataError
from auditor.fetch.deadline import Network, at_proxy, past_deadline, within
from auditor.fetch.inflate import Inflater, NotDecodable, TooLarge
from auditor.fetch.pieces import Pieces
from auditor.fetch.shape import (
    MAX_DEPTH,
    MAX_VALUES,
    Duplicate,
    check_shape,
    count_values,
    too_deep_to_parse,
)
from auditor.fetch.text import Repaired, declared_charset, repair, repair_bytes
from auditor.models import JSON
from auditor.redact import Redactor
from auditor.redact.plain import kept_before_cut

#: A parsed body and the keys it sent twice (the parser kept the last value of each).
Parsed = tuple[JSON, tuple[Duplicate, ...]]


class TooWide(DataError):
    """A response holds more than `MAX_VALUES` values: a paged listing asks again for fewer
    items a page (`Pages`), anything else fails with it."""


class Oversized(ApiError):
    """A successful answer longer than `max_response_bytes`: a paged listing asks again for
    fewer items a page (`Pages`), anything else fails with it."""


class Fetched(NamedTuple):
    """An answer that is not a retry: its bytes, not parsed yet (`Requester.decode`)."""

    response: httpx.Response
    body: bytes
    request: httpx.Request
    label: str  # `GET /path?query`
    where: str  # names the page in messages


RETRY_STATUSES = frozenset({429, 502, 503, 504})
_BASE_DELAY = 0.5
_MAX_DELAY = 30.0
_MAX_ATTEMPTS = 8
_MAX_REFUSED = 2
_GAVE_UP = "; gave up after {attempts} in {elapsed}"
_OUT_OF_TIME = (
    "; gave up after {attempts} in {elapsed}: "
    "the sync's deadline of {deadline} leaves no time for another try"
)
_TOO_LITTLE = (
    "; gave up after {attempts} in {elapsed}: "
    "the sync's deadline of {deadline} leaves no time for another try "
    "(only {left} left; a last try gets {floor} at least)"
)
#: Less time left than this is none: the message says so (`_OUT_OF_TIME`).
_NO_TIME = 0.05
#: The shortest last try worth making (or `timeout`, when shorter): when the backoff's wait
#: would pass the sync's deadline, it is shortened so that a try of at least this long fits.
_LAST_TRY = 1.0
#: The shortest wait before a retry that the deadline shortened (half the first backoff's).
_SHORTEST_WAIT = _BASE_DELAY / 2


@dataclass(frozen=True)
class RetryPolicy:
    """How long and how often to retry, plus the injectable sleep, clock and jitter."""

    deadline: float = 300.0
    max_retry_after: float = 60.0
    max_response_bytes: int = 64 * 1024 * 1024
    sleep: Callable[[float], None] = lambda _s: None
    clock: Callable[[], float] = lambda: 0.0
    jitter: Callable[[], float] = random.random
    wall_clock: Callable[[], datetime] = lambda: datetime.now(UTC)
    max_attempts: int = _MAX_ATTEMPTS
    timeout: float = 30.0  # one request in total: connect, TLS, send, headers and body
    network: Network = field(default_factory=Network)  # the proxy and CA bundle (messages)


class _Retryable(Exception):
    """An attempt failed in a way worth retrying; `wait` is a server-requested delay or None.

    `network`: no answer came back (the message names the host); `refused`: the connection was
    refused (twice is an error: nothing listens there); `connect`: no connection was made (a
    hint may name an ignored proxy variable); `reset`: a plain-HTTP connection was reset before
    any answer, and `resets` how many attempts in a row up to this one were (on every attempt,
    the last error asks whether the server speaks TLS, unless the service answered an earlier
    request of this command in plain HTTP)."""

    def __init__(
        self,
        reason: str,
        wait: float | None = None,
        *,
        network: bool = False,
        refused: bool = False,
        connect: bool = False,
        reset: bool = False,
    ) -> None:
        super().__init__(reason)
        self.reason = reason
        self.wait = wait
        self.network = network
        self.refused = refused
        self.connect = connect
        self.reset = reset
        self.resets = 0


def _host(request: httpx.Request) -> str:
    """`host` or `host:port`, as the message names the server (never credentials)."""
    host, port = request.url.host, f":{request.url.port}" if request.url.port else ""
    return f"[{host}]{port}" if ":" in host else f"{host}{port}"  # an IPv6 address: `[::1]:80`


def _seconds(value: float) -> str:
    if 0 < value < 0.001:  # what was left of a deadline: not "0s" (nor "0.s")
        return "less than 0.001s"
    if 0 < value < 0.1:
        return f"{value:.3f}".rstrip("0") + "s"
    return f"{value:.1f}".removesuffix(".0") + "s"


def _root_cause(exc: BaseException) -> BaseException:
    """The first error httpx and httpcore wrapped: the OSError the socket raised, if any."""
    seen: set[int] = set()
    while id(exc) not in seen:
        seen.add(id(exc))
        inner = exc.__cause__ or exc.__context__
        if inner is None:
            break
        exc = inner
    return exc


#: OpenSSL's verify codes of a certificate whose chain may be trusted, but whose dates or names
#: are wrong (not yet valid, expired, another host's): no CA bundle is to blame.
_NOT_THE_CHAIN = frozenset({9, 10, 62, 64})


#: What orjson says when the memory to parse a body cannot be had (a `JSONDecodeError`).
_NO_MEMORY = "Not enough memory"

#: A failure of this machine, not of the network: no open file left (`ulimit -n`), in this
#: process or the system. Retrying for the sync's deadline cannot help.
_LOCAL_LIMITS = {errno.EMFILE: "this process", errno.ENFILE: "this machine"}


def _fatal_reason(cause: BaseException, network: Network | None = None) -> str | None:
    """Why a connection can never work by retrying (DNS, TLS), or None if it might. A
    certificate not accepted names the CA bundle it was checked against, when one is set."""
    if isinstance(cause, OSError) and cause.errno in _LOCAL_LIMITS:
        return (
            f"{_LOCAL_LIMITS[cause.errno]} has no file descriptor left ({cause.strerror}): "
            "raise the limit (`ulimit -n`) or close what holds them"
        )
    if isinstance(cause, socket.gaierror):
        detail = cause.strerror or "unknown host"
        return f"cannot resolve the host name (DNS: {detail})"
    if isinstance(cause, ssl.SSLCertVerificationError):
        if cause.verify_code in _NOT_THE_CHAIN:  # a bundle trusting the chain cannot help
            return f"TLS failure: certificate not valid here ({cause.verify_message})"
        bundle = network.ca_shown if network is not None else None
        against = f" by the CA bundle {bundle}" if bundle else ""
        return f"TLS failure: certificate not accepted{against} ({cause.verify_message})"
    if isinstance(cause, ssl.SSLEOFError):
        return None  # closed in the handshake (a load balancer draining): worth a retry
    if isinstance(cause, ssl.SSLError):
        return f"TLS failure ({cause.reason or cause.strerror or type(cause).__name__})"
    return None


def _malformed(cause: BaseException) -> str | None:
    """What is wrong with an answer the HTTP parser refused (an illegal status line or header,
    a bad `Content-Length`), or None: an answer that is malformed comes back the same when
    asked again (`HTTP/1.1 2000 OK` was retried 8 times, 42 s), whereas one cut off because the
    server disconnected is worth a retry. The parser's own words, without the Python writing
    of the bytes (`illegal status line: bytearray(b'HTTP/1.1 2000 OK')`)."""
    if not isinstance(cause, h11.RemoteProtocolError):
        return None
    said = str(cause)
    if said.startswith(_DISCONNECTED):
        return None
    if said == _FIRST_BYTE:
        return _NOT_TEXT
    return _BYTES_REPR.sub(lambda m: f'"{m[2]}"', " ".join(said.split()))


#: How the HTTP parser's words begin when the server closed the connection before a whole
#: answer (in the headers; in the body: `… (received 120 bytes, expected 239)`).
_DISCONNECTED = ("peer unexpectedly closed", "peer closed connection")
#: What h11 says, in its words for a request, of an answer whose first byte is a control
#: character or a space: no status line begins so. An HTTP/2 frame does (a server that speaks
#: only HTTP/2), and so does a TLS record (a TLS server asked with http://).
_FIRST_BYTE = "illegal request line"
_NOT_TEXT = (
    "its first byte cannot begin a status line, as an HTTP/2 frame's or a TLS record's: is "
    "this an HTTP/2-only server, or an https:// one asked with http://?"
)
#: `bytearray(b'…')` or `b'…'` in a parser's message (the bytes' escapes are kept as written).
_BYTES_REPR = lazy_regex(globals(), "_BYTES_REPR", r"""(?:bytearray\()?\bb(['"])(.*?)\1\)?""")


def describe_request(request: httpx.Request) -> str:
    """`GET /path?query`: what error messages name (never the host's credentials)."""
    target = request.url.raw_path.decode("ascii", "replace")
    return f"{request.method} {target}"


def parse_retry_after(value: str | None, now: datetime) -> float | None:
    """Seconds to wait from a `Retry-After` header (delta-seconds or an HTTP date), or None."""
    if not value:
        return None
    text = value.strip()
    if _DELAY_SECONDS.fullmatch(text):  # ASCII digits only: `str.isdigit` takes `²` and `٣`
        return float(text)
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - now).total_seconds())


_DELAY_SECONDS = lazy_regex(globals(), "_DELAY_SECONDS", r"[0-9]+")
#: The status at the start of httpcore's `ProxyError` for a CONNECT answered other than 2xx.
_PROXY_STATUS = lazy_regex(globals(), "_PROXY_STATUS", r"^([1-5][0-9][0-9])\b")


def _status_text(status: int) -> str:
    try:
        return f"{status} {HTTPStatus(status).phrase}"
    except ValueError:
        return str(status)


def problem_message(
    response: httpx.Response,
    body: bytes,
    redact: Callable[[str], str],
    words: Callable[[str], str] = str,
) -> str:
    """`→ 403 Forbidden: detail (request id r-1)` from a problem body, else the bare status.

    Both problem shapes are read: v0 `{title, detail, status, metadata: {requestId}}` and v1
    `{title, detail, status, requestId}`. The request id is what the platform's support asks
    for; it is shown only when it looks like an id (a short run of letters, digits and `._:-`).
    `redact` scrubs the title and detail before they are cut (see `_clip`); `words` replaces
    what must be hidden in them first, even where they are kept whole (the proxy's password).
    """
    title, detail, request_id = "", "", ""
    try:
        body = body.removeprefix(UTF8_BOM)  # as a page's (`Requester.decode`)
        problem = loads(body) if body else None
    except ValueError:  # text that is not UTF-8 is read with U+FFFD, as in a page
        fixed = repair(body, declared_charset(response.headers.get("content-type", "")))
        problem = fixed.value if fixed is not None else None
    if isinstance(problem, dict):
        # Read as the tolerant reader reads odd values: a title that is not text is absent
        # (the status's phrase stands in), a detail that is not text is shown as JSON, on one
        # line, escaped; never as Python writes it (`{'x': ['a']}`).
        found_title = problem.get("title")
        found_title = words(found_title) if isinstance(found_title, str) else ""
        title = _clip(found_title, _MAX_TITLE, redact)
        detail = _clip(words(_as_text(problem.get("detail"))), _MAX_DETAIL, redact)
        meta = problem.get("metadata")
        found = problem.get("requestId") or (
            meta.get("requestId") if isinstance(meta, dict) else None
        )
        if isinstance(found, str) and _REQUEST_ID.fullmatch(found):
            request_id = found
    head = f"{response.status_code} {title}" if title else _status_text(response.status_code)
    text = f"→ {head}: {detail}" if detail else f"→ {head}"
    return f"{text} (request id {request_id})" if request_id else text


def _as_text(value: object) -> str:
    """A problem field as text: a string as it is, nothing for null or an empty value, any
    other JSON value as compact JSON in ASCII (one line, its control characters escaped)."""
    if isinstance(value, str):
        return value
    if value is None or value in ("", [], {}):
        return ""
    return json.dumps(value, ensure_ascii=True, separators=(",", ":"))


_REQUEST_ID = lazy_regex(globals(), "_REQUEST_ID", r"[A-Za-z0-9._:-]{1,64}")
_MAX_TITLE = 200
_MAX_DETAIL = 1000
_MAX_LABEL = 300  # `GET /path?query` in a message: a page's cursor goes into the query


def _clip(text: str, limit: int, redact: Callable[[str], str]) -> str:
    """`text` cut to `limit` characters, saying how many were left out: a problem body's text
    goes into a one-line error, shown in CI logs and reports. What is kept is redacted before
    the cut (and a margin beyond it, not the whole text: 2 MB took 2.6 s): a secret cut in two
    was no longer recognised, and its first characters were shown. A cut never falls inside a
    secret's marker (it goes before it): `[secret fp:1968eec4 len:1…` kept a fingerprint that
    the command's own token, named `[token]` by its whole marker, could be known by."""
    if len(text) <= limit:
        return text  # redacted whole with the message it goes into
    kept = kept_before_cut(redact(text[: limit + _SECRET_MARGIN]), limit)
    return f"{kept}… ({len(text) - len(kept)} more characters)"


def redacted_cut(text: str, limit: int, redact: Callable[[str], str]) -> str:
    """Text the service sent, as a message shows it: `redact`ed, and cut to `limit` characters
    with a count when longer (`_clip`: redacted before the cut, so a secret cut in two is still
    hidden, and only as far as the cut needs)."""
    return redact(text) if len(text) <= limit else _clip(text, limit, redact)


#: How far past the cut `_clip` redacts: longer than any token or key it must recognise.
_SECRET_MARGIN = 4096


_QUERY_OR_FRAGMENT = lazy_regex(globals(), "_QUERY_OR_FRAGMENT", r"[?#]")
_CONTROL = lazy_regex(globals(), "_CONTROL", "[\x00-\x1f\x7f-\x9f\u2028\u2029]")


#: Where a 3xx answer's `Location` is kept (`keep_location`), out of httpx's way.
LOCATION_KEPT = "auditor.location"


def keep_location(response: httpx.Response) -> None:
    """A response hook: a redirect's `Location` is moved out of the headers into the response's
    extensions before httpx reads it. Not following redirects, httpx still builds the request a
    redirect would make, and a `Location` it cannot make one of (`about:blank`, `urn:…`,
    `http://[::1/x`) raised from inside `send`, losing the answer: an internal error, or a
    protocol error retried for 40 s, instead of the redirect named (`_redirect_note`)."""
    if 300 <= response.status_code < 400 and "location" in response.headers:
        response.extensions[LOCATION_KEPT] = response.headers["location"]
        del response.headers["location"]


def _encoded_tokens(address: str, tokens: tuple[str, ...]) -> str:
    """`address` with each of `tokens` (from 8 characters on) as `[token]`, in any case (a
    host is lowercased: `http://<token>.evil.example/` showed the token in lowercase) and
    where some or all of its characters are percent-encoded (`%73%33cr3t…`: a `Location`
    encoded twice, its path decoded once); a shorter one is `shown_address`'s."""
    for token in sorted(tokens, key=len, reverse=True):
        if len(token) < 8:
            continue
        each = [
            f"(?:{re.escape(c)}|{''.join(f'%{b:02X}' for b in c.encode('utf-8', 'surrogatepass'))})"
            for c in token
        ]
        address = re.sub("".join(each), "[token]", address, flags=re.IGNORECASE)
    return address


def _redirect_note(
    response: httpx.Response,
    request: httpx.Request,
    redact: Callable[[str], str],
    words: Callable[[str], str],
    tokens: tuple[str, ...] = (),
) -> str:
    """`: redirects to …; …` for a 3xx: where to, without its query (it may carry a token),
    and why it is an error (the token is never sent to an address the user did not give).
    `words`: the proxy's password, whatever it is, `[token]` in the address (text from
    outside); `tokens` (the command's own) read `[token]` too, before anything else looks
    for secrets there: found by the redactor, one took the host's end or the port with it in
    its marker (`http://evil.[secret fp:… len:39]`), so the line no longer said where to."""
    location = response.extensions.get(LOCATION_KEPT) or response.headers.get("location", "")
    if not 300 <= response.status_code < 400 or not location:
        return ""
    try:
        target = request.url.join(location)
        netloc = target.netloc.decode("ascii", "replace")
        path = _QUERY_OR_FRAGMENT.split(target.path, maxsplit=1)[0]  # decoded: `%3F` is `?`
        path = _CONTROL.sub(lambda m: f"%{ord(m[0]):02X}", path)  # `%0A` stays so: one line
        address = f"{target.scheme}://{netloc}{path}" if netloc else f"{target.scheme}:{path}"
        if netloc:  # name by name, its host kept: `https://host/<not shown: …>/v1` (README)
            from auditor.redact.shown import shown_address

            address = shown_address(_encoded_tokens(address, tokens), tokens)
        elif tokens:
            from auditor.redact.shown import named_tokens

            address = named_tokens(_encoded_tokens(address, tokens), tokens)
        shown = _shown_apart(words(address), redact)
    except (httpx.InvalidURL, ValueError):
        shown = "an address that is not a valid URL"
    return (
        f": redirects to {shown}; auditor does not follow redirects (the token would go with "
        "them): if the service moved, set base_url / app_url to its new address"
    )


#: A redirect's address as `_redirect_note` shows it: its scheme, `//` and host and port (no
#: user name or password), then its path.
_AUTHORITY = lazy_regex(globals(), "_AUTHORITY", r"[A-Za-z][A-Za-z0-9+.-]*://[^/\\]*")


def _shown_apart(address: str, redact: Callable[[str], str]) -> str:
    """A redirect's address redacted in two parts, so a secret's marker never takes the
    host's end or the port with it: the redactor hides the whole run of characters glued to a
    secret it finds encoded (the command's token in base64 after `/a/` took `example/a/`, or
    `8080/a/`: `http://evil.[secret fp:… len:49]`, reviewer R32 #2). `scheme://host[:port]`
    is redacted alone (a host label that is a secret is still its marker), then the path after
    its first `/`. A secret across the host and the path, found in neither alone, the
    message's own redaction (`_error`) still hides, with the host. Cut to `_MAX_TITLE`
    characters (`_clip`); no host (`about:blank`, `urn:…`): redacted whole."""
    head = _AUTHORITY.match(address)
    end = head.end() + address.startswith("/", head.end()) if head else 0
    host, path = redact(address[:end]), address[end:]
    room = max(_MAX_TITLE - len(host), 0)
    return host + (_clip(path, room, redact) if len(path) > room else redact(path))


def _json_problem(body: bytes, exc: ValueError) -> str:
    """Why a body is not JSON, in words: orjson says 'str is not valid UTF-8: surrogates not
    allowed … line 1 column 1' for any byte that is not UTF-8, wherever it is. When the text
    that is not UTF-8 (or a lone surrogate escape) was inside a string, where it is repaired,
    the problem is further on: that one is named (line and column of the repaired text)."""
    if too_deep_to_parse(exc):
        return f"nested deeper than {MAX_DEPTH} levels"
    problem, at = str(exc), getattr(exc, "pos", 0)
    if "not valid UTF-8" in problem:
        try:
            body.decode("utf-8")
        except UnicodeDecodeError as bad:
            line = body.count(b"\n", 0, bad.start) + 1
            at = len(body[: bad.start].decode("utf-8"))
            problem = (
                f"not UTF-8 text: byte {bad.start} (line {line}) is {bad.object[bad.start]:#04x}"
            )
    try:
        loads(repair_bytes(body))
    except ValueError as later:
        if not too_deep_to_parse(later) and getattr(later, "pos", 0) > at:
            return str(later)
    return problem


def _is_json(content_type: str) -> bool:
    media = content_type.split(";", 1)[0].strip().lower()
    return media == "application/json" or media.endswith("+json")


class Budget:
    """The whole sync's time (config `deadline`), shared by every request of one client."""

    def __init__(self, seconds: float, clock: Callable[[], float]) -> None:
        self.seconds = seconds
        self._clock = clock
        self._started: float | None = None

    def elapsed(self) -> float:
        """Seconds since the first request (starting the clock on the first call)."""
        if self._started is None:
            self._started = self._clock()
        return self._clock() - self._started

    def left(self) -> float:
        """Seconds left before the deadline."""
        return self.seconds - self.elapsed()


class Requester:
    """Sends GETs through one `httpx.Client` under a `RetryPolicy` and a shared `Budget`."""

    def __init__(
        self,
        client: httpx.Client,
        policy: RetryPolicy,
        redactor: Redactor,
        budget: Budget | None = None,
        tokens: tuple[str, ...] = (),  # the command's own: `[token]` in a redirect's address
    ) -> None:
        self._client = client
        self._policy = policy
        self._redactor = redactor
        self._budget = budget or Budget(policy.deadline, policy.clock)
        self._tokens = tokens
        # the service answered once in this command (in HTTP): a reset later is not the scheme's
        self._spoke_http = False

    def get_json(self, path: str, params: Mapping[str, str], where: str) -> Parsed:
        """GET `path`: the parsed JSON body and the keys it repeated; `where` names the page."""
        return self.decode(self.fetch(path, params, where))

    def fetch(self, path: str, params: Mapping[str, str], where: str) -> Fetched:
        """GET `path` with retries: the answer's bytes, not parsed yet (`decode` does that).
        Only network work (the thread that fetches the next page ahead runs this part)."""
        try:
            request = self._client.build_request("GET", path, params=params)
        except httpx.InvalidURL as exc:  # a cursor or last id from the page before, too long
            raise DataError(
                self._redactor.redact_shown(
                    f"cannot request {where}: its address is not a valid URL ({exc}); the page "
                    "before sent what goes into it"
                )
            ) from None
        label = describe_request(request)  # in a message: `_shown(label)`
        self._budget.elapsed()  # the sync's clock starts with its first request
        attempt, refused = 0, 0
        last = _Retryable("not sent", network=True)
        while True:
            limit = min(self._policy.timeout, self._budget.left())
            if limit <= 0 and attempt == 0:  # the sync so far used its whole time
                spent = _seconds(self._budget.elapsed())
                raise self._error(
                    f"{self._shown(label)} not sent: the sync's deadline of "
                    f"{_seconds(self._budget.seconds)} "
                    f"passed after {spent} of its earlier requests and the reading of their "
                    "pages (raise `deadline` if there is really that much to fetch)",
                    request,
                )
            if limit <= 0:
                raise self._stopped(label, request, last, attempt, _OUT_OF_TIME)
            attempt += 1
            try:
                return self._attempt(request, label, where, limit)
            except _Retryable as exc:
                if exc.reset:
                    exc.resets = (last.resets if attempt > 1 else 0) + 1
                left = self._budget.left()
                if limit < self._policy.timeout and left < min(_LAST_TRY, self._policy.timeout):
                    # cut short to end by the deadline: the last try (a timeout then names the
                    # last full attempt's reason, not the shortened limit)
                    shown = last if attempt > 1 else exc
                    why = self._no_time(left)
                    raise self._stopped(label, request, shown, attempt, why) from None
                last = exc
                refused = refused + 1 if exc.refused else 0
                self._wait_or_stop(label, request, exc, attempt, refused)

    def _wait_or_stop(
        self, label: str, request: httpx.Request, exc: _Retryable, attempt: int, refused: int
    ) -> None:
        if refused >= _MAX_REFUSED:
            why = f"; nothing is listening there (refused {refused} times in a row)"
            raise self._stopped(label, request, exc, attempt, why)
        delay = self._delay(exc, attempt)
        if attempt >= self._policy.max_attempts:
            raise self._stopped(label, request, exc, attempt, _GAVE_UP)
        left = self._budget.left()
        last_try = min(_LAST_TRY, self._policy.timeout)
        if delay > left - last_try:
            # The backoff would pass the deadline: wait less, so that a last try fits (a
            # whole `timeout` when there is time for one; cut short to end by the deadline
            # otherwise). Never less than the service's own Retry-After (capped).
            asked = None if exc.wait is None else min(exc.wait, self._policy.max_retry_after)
            shortest = min(delay, max(_SHORTEST_WAIT, asked or 0.0))
            wait = min(delay, max(shortest, left - self._policy.timeout))
            if left - wait < last_try:
                raise self._stopped(label, request, exc, attempt, self._no_time(left, exc, delay))
            delay = wait
        self._policy.sleep(delay)

    def _no_time(self, left: float, exc: _Retryable | None = None, delay: float = 0.0) -> str:
        """Why no other try is made: the service's Retry-After (capped) passes the deadline,
        or too little time is left for a try worth making (`_LAST_TRY`)."""
        last_try = min(_LAST_TRY, self._policy.timeout)
        if exc is not None and exc.wait is not None and min(delay, exc.wait) > left - last_try:
            asked = _seconds(exc.wait) if exc.wait < 1e15 else "more than 10^15s"
            capped = f"; at most {_seconds(delay)} is waited" if delay < exc.wait else ""
            # float: exact below 10^15
            return _OUT_OF_TIME + f" (Retry-After asked for {asked}{capped})"
        if left < _NO_TIME:
            return _OUT_OF_TIME
        shown = f"{math.floor(left * 10) / 10:.1f}s"  # 0.99 s is not `1.0s`, the floor
        return _TOO_LITTLE.replace("{left}", shown).replace("{floor}", _seconds(last_try))

    def _stopped(
        self, label: str, request: httpx.Request, exc: _Retryable, attempt: int, why: str
    ) -> ApiError:
        """The error after the last attempt; names the host when no answer came back."""
        where = f" on {_host(request)}:" if exc.network else ""
        elapsed = f"{self._budget.elapsed():.1f}s"
        attempts = f"{attempt} attempt" if attempt == 1 else f"{attempt} attempts"
        text = why.format(attempts=attempts, elapsed=elapsed, deadline=f"{self._budget.seconds:g}s")
        hint = self._proxy_hint() if exc.connect else ""
        if exc.reset and exc.resets == attempt and attempt > 1 and not self._spoke_http:
            hint += (
                "; the server reset the connection before any answer on every attempt: is "
                "this an https:// server? (the URL says http://)"
            )
        return self._error(f"{self._shown(label)}{where} {exc.reason}{text}{hint}", request)

    def _proxy_hint(self) -> str:
        """`; HTTPS_PROXY is set …` when a connection failed without a proxy configured while a
        standard proxy variable is set: auditor does not read those (explicit is safer in CI)."""
        network = self._policy.network
        variable = network.ignored_proxy_variable
        if network.proxy is not None or variable is None:
            return ""
        return (
            f"; {variable} is set in the environment, but auditor does not read it: to go "
            "through a proxy, set AUDITOR_PROXY (or `proxy` in a config file)"
        )

    def _via(self, request: httpx.Request) -> tuple[str, str]:
        """What a network failure of `request` says of the proxy: (`the proxy HOST:PORT `
        when it failed there, before the tunnel to the service was open, or ""; ` (through
        the proxy HOST:PORT)` when it failed beyond it, or "")."""
        proxy = self._policy.network.proxy_host
        if not proxy:
            return "", ""
        if request.url.scheme == "http" or at_proxy():  # an http:// target: the proxy answers
            return f"the proxy {proxy} ", ""
        return "", f" (through the proxy {proxy})"

    def _delay(self, exc: _Retryable, attempt: int) -> float:
        """The wait before the next attempt: the jittered backoff, or the service's
        `Retry-After` (capped) when it asks for longer. A shorter ask (`Retry-After: 0`, a
        date in the past, as a load balancer sends) is not taken: 8 attempts in no time turned
        a short outage into a failed sync and a burst of requests."""
        ceiling: float = min(_MAX_DELAY, _BASE_DELAY * 2.0 ** (attempt - 1))
        backoff = ceiling * (0.5 + 0.5 * self._policy.jitter())
        if exc.wait is not None:
            return max(min(exc.wait, self._policy.max_retry_after), backoff)
        return backoff

    def _shown(self, label: str) -> str:
        """`label` as a message shows it: a cursor of 60 KB made every message naming the
        request 60 KB long, so a long one is cut (redacted before the cut, `_clip`). Only for
        a message: cutting each request's label cost 4 ms of redaction a page."""
        if len(label) <= _MAX_LABEL:
            return label
        return _clip(label, _MAX_LABEL, self._redactor.redact_shown)

    def _outside(self, text: str) -> str:
        """Text from outside (a response body, an exception's text) as a message shows it:
        redacted, and the proxy's password `[token]` even when it is a word (`proxy`), which
        is kept out of auditor's own wording (`Network.secrets`)."""
        return self._encoded(self._redactor.redact_shown(self._words(text)))

    def _encoded(self, shown: str) -> str:
        """Redacted text with the proxy's user name and password in base64 (an error page's
        echo of them, not of the `Basic` value, which is one marker by now) as `[token]`."""
        encoded = self._policy.network.outside_encoded
        if not encoded:
            return shown
        from auditor.redact.shown import named_tokens

        return named_tokens(shown, encoded)

    def _words(self, text: str) -> str:
        """`text` from outside with the proxy's password, whatever it is, as `[token]` (what
        `_clip` keeps whole is redacted with the message it goes into, never with this)."""
        secrets = self._policy.network.outside_secrets
        if not secrets:
            return text
        from auditor.redact.shown import named_tokens

        return named_tokens(text, secrets)

    def _error(self, message: str, request: httpx.Request, status: int | None = None) -> ApiError:
        text = self._encoded(self._redactor.redact_shown(message))
        return ApiError(text, url=self._redactor.redact_shown(str(request.url)), status=status)

    def _oversized(
        self, message: str, request: httpx.Request, response: httpx.Response
    ) -> ApiError:
        """Too long: an `Oversized` when the answer was a success (a page of wide items), a plain
        `ApiError` otherwise (an error page is not made shorter by asking for fewer items)."""
        error = self._error(message, request)
        if not 200 <= response.status_code < 300:
            return error
        return Oversized(str(error), url=error.url, status=error.status)

    def _limit(self, limit: float) -> str:
        """An attempt's time limit in words: `timeout`, or what was left of the deadline."""
        if limit < self._policy.timeout:
            return f"{_seconds(limit)} (what was left of the sync's deadline)"
        return _seconds(limit)

    def _attempt(self, request: httpx.Request, label: str, where: str, limit: float) -> Fetched:
        request.extensions["timeout"] = httpx.Timeout(limit).as_dict()
        with within(limit):
            try:
                response = self._client.send(request, stream=True)
            except httpx.TimeoutException as exc:
                proxy, beyond = self._via(request)
                said = f"{proxy}did not answer within" if proxy else "no response within"
                raise _Retryable(
                    f"{said} {self._limit(limit)}{beyond}",
                    network=True,
                    connect=isinstance(exc, httpx.ConnectTimeout),
                ) from None
            except httpx.LocalProtocolError as exc:  # our own request is malformed
                raise self._error(
                    f"{self._shown(label)} could not be sent: {type(exc).__name__}", request
                ) from None
            except httpx.TransportError as exc:
                raise self._transport_failure(exc, label, request) from None
            self._spoke_http = True
            try:
                body = self._read(response, request, label, limit, where)
            finally:
                response.close()
                # httpx's streamed answer and its stream refer to each other: a cycle, freed
                # only by the collector (which a sync runs seldom, `few_collections`), that
                # held each request's URL, a 60 KB cursor in it (289 MB at 2,000 pages)
                response.stream = httpx.ByteStream(b"")
        status = response.status_code
        if status == 407 and self._policy.network.proxy is not None:  # an http:// target's
            raise self._proxy_answer(status, label, request)
        if status in RETRY_STATUSES:
            wait = parse_retry_after(response.headers.get("retry-after"), self._now(response))
            raise _Retryable(problem_message(response, body, self._outside, self._words), wait)
        return Fetched(response, body, request, label, where)

    def _transport_failure(
        self, exc: httpx.TransportError, label: str, request: httpx.Request
    ) -> Exception:
        """Refused: retried once; DNS and TLS failures: an error at once (retrying cannot fix).
        A proxy's answer to CONNECT other than 2xx: an error naming the proxy (retried for
        502, 503 and 504, as from the service)."""
        cause = _root_cause(exc)
        proxy, beyond = self._via(request)
        if isinstance(exc, httpx.ProxyError) and proxy:
            status = _PROXY_STATUS.match(str(exc))
            if status is not None:
                return self._proxy_answer(int(status[1]), label, request)
        connect = isinstance(exc, httpx.ConnectError)
        if isinstance(cause, ConnectionRefusedError):
            said = f"{proxy}refused the connection" if proxy else "connection refused"
            return _Retryable(said + beyond, network=True, refused=True, connect=True)
        malformed = _malformed(cause)
        if malformed is not None:
            return self._not_http(malformed, label, request, proxy)
        fatal = _fatal_reason(cause, self._policy.network)
        if fatal is None:
            said = " ".join(str(exc).split())  # e.g. "Server disconnected without sending …"
            detail = f" ({_clip(self._words(said), _MAX_TITLE, self._outside)})" if said else ""
            where = f"{proxy}failed" if proxy else "failed"
            # (through a proxy, the reset may be the proxy's: no scheme to question)
            reset = (
                isinstance(cause, ConnectionResetError)
                and isinstance(exc, httpx.ReadError)
                and request.url.scheme == "http"
                and not proxy
                and not beyond
            )
            return _Retryable(
                f"{where}: {type(exc).__name__}{detail}{beyond}",
                network=True,
                connect=connect,
                reset=reset,
            )
        hint = self._proxy_hint()
        if isinstance(cause, ssl.SSLCertVerificationError) and self._policy.network.ca_pem is None:
            hint += (
                "; if your network inspects TLS with its own certificate authority, set "
                "AUDITOR_CA_BUNDLE (or `ca_bundle`) to a PEM file of its CA certificates"
            )
        at = f": {proxy.rstrip()}" if proxy else ""
        return self._error(
            f"{self._shown(label)} on {_host(request)}{at}: {fatal}{beyond}; not retried{hint}",
            request,
        )

    def _proxy_answer(self, status: int, label: str, request: httpx.Request) -> Exception:
        """The proxy's refusal (its answer to CONNECT, or a 407 for an http:// target): 407 and
        any other refusal an error at once, 502/503/504 retried. The proxy's own reason phrase
        is not shown (the status's standard one is)."""
        network = self._policy.network
        proxy = f"the proxy {network.proxy_host}"
        if status == 407 and network.proxy_auth is not None:
            why = (
                f"{proxy} did not accept the user name and password of the proxy URL "
                "(407 Proxy Authentication Required)"
            )
        elif status == 407:
            why = (
                f"{proxy} asks for a user name and password (407 Proxy Authentication "
                "Required): put them in the proxy URL, as its user-info before the host"
            )
        elif status in RETRY_STATUSES:
            return _Retryable(
                f"{proxy} could not open a tunnel to {_host(request)} ({_status_text(status)})",
                network=True,
            )
        else:
            why = f"{proxy} refused to open a tunnel to {_host(request)} ({_status_text(status)})"
        return self._error(f"{self._shown(label)} on {_host(request)}: {why}; not retried", request)

    def clipped(self, text: str, limit: int) -> str:
        """`redacted_cut` under this requester's display-only redaction."""
        return redacted_cut(text, limit, self._outside)

    def _not_http(
        self, malformed: str, label: str, request: httpx.Request, proxy: str = ""
    ) -> ApiError:
        """The error for an answer the HTTP parser refused (`_malformed`): not retried.
        `proxy`: `the proxy HOST:PORT ` when it was the proxy's answer."""
        shown = _clip(self._words(malformed), _MAX_TITLE, self._outside)
        whose = f"the answer of {proxy.rstrip()}" if proxy else "the answer"
        return self._error(
            f"{self._shown(label)} on {_host(request)}: {whose} is not valid HTTP/1.1 "
            f"({shown}); not retried",
            request,
        )

    def _answered(self, label: str, request: httpx.Request, response: httpx.Response) -> str:
        """`GET … on HOST: ` or, for an answer other than a success, `GET … on HOST → 500: `,
        which the error of an answer too long begins with (two services in one CI log)."""
        status = response.status_code
        said = "" if 200 <= status < 300 else f" → {status}"
        return f"{self._shown(label)} on {_host(request)}{said}: "

    def _read(
        self,
        response: httpx.Response,
        request: httpx.Request,
        label: str,
        limit: float,
        where: str,
    ) -> bytes:
        cap = self._policy.max_response_bytes
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > cap:
            raise self._oversized(
                f"{self._answered(label, request, response)}response of {declared} bytes "
                f"exceeds {cap}",
                request,
                response,
            )
        body = bytearray()  # one buffer: a list of tiny chunks took ~40 bytes per byte
        raw = 0
        late = _Retryable(f"response not complete within {self._limit(limit)}", network=True)
        try:  # read raw and inflated here, under the cap: a compression bomb stops at it
            if response.is_stream_consumed:  # read and decoded already (a test's transport)
                inflater, stream = Inflater("", cap), iter((response.content,))
            else:
                coding = response.headers.get("content-encoding", "")
                inflater = Inflater(coding, cap, self._redactor.redact_shown)
                stream = response.iter_raw()
            for chunk in stream:
                raw += len(chunk)
                data = inflater.feed(chunk)
                if len(body) + len(data) > cap or raw > cap:
                    raise TooLarge
                if past_deadline():  # a body that trickles in never trips a read timeout
                    raise late
                body += data
            body += inflater.finish()
            if len(body) > cap:
                raise TooLarge
        except TooLarge:
            raise self._oversized(
                f"{self._answered(label, request, response)}response exceeds {cap} bytes",
                request,
                response,
            ) from None
        except NotDecodable as exc:
            status = response.status_code
            raise self._error(
                f"{self._shown(label)} → {status}: {exc} ({where})", request
            ) from None
        except httpx.TimeoutException:
            raise late from None
        except httpx.TransportError as exc:
            malformed = _malformed(_root_cause(exc))
            if malformed is not None:  # a bad chunk size: sent the same way again
                raise self._not_http(malformed, label, request) from None
            raise _Retryable(f"response cut off ({type(exc).__name__})", network=True) from None
        return bytes(body)

    def _now(self, response: httpx.Response) -> datetime:
        """The server's own `Date` when it sent one (a `Retry-After` date is relative to it)."""
        try:
            when = parsedate_to_datetime(response.headers.get("date", ""))
        except (TypeError, ValueError):
            return self._policy.wall_clock()
        return when if when.tzinfo else when.replace(tzinfo=UTC)

    def decode(self, fetched: Fetched, pieces: Pieces | None = None) -> Parsed:
        """The parsed body of a fetched answer and the keys it repeated, or the error it is.

        With `pieces`, a page that is exactly orjson's compact writing of its value is read in
        pieces (`auditor.fetch.pieces`: the same value, its unchanged parts shared with the
        item before); any other is read here as before."""
        response, body, request, label, where = fetched
        status = response.status_code
        if status >= 400:
            problem = problem_message(response, body, self._outside, self._words)
            raise self._error(f"{self._shown(label)} {problem}", request, status)
        if not 200 <= status < 300:  # a redirect's body is not the page, whatever it holds
            moved = _redirect_note(response, request, self._outside, self._words, self._tokens)
            raise self._error(
                f"{self._shown(label)} → {_status_text(status)}{moved} ({where})", request, status
            )
        content_type = response.headers.get("content-type", "")
        if not _is_json(content_type):
            # redacted before it is cut: a token echoed there, cut, is no longer one it knows
            shown = shorten(self._outside(content_type), 40)
            shown = shown if content_type else "no content type"
            raise self._error(
                f"{self._shown(label)} → {status}: expected JSON, got {shown} ({where})", request
            )

        def check_values(text: bytes) -> None:
            values = count_values(text)
            if values > MAX_VALUES:
                raise TooWide(
                    self._redactor.redact_shown(
                        f"$: about {values} values in one response, more than the {MAX_VALUES} "
                        f"allowed for API data ({where}: {self._shown(label)})"
                    )
                )

        # A UTF-8 byte order mark before the JSON: RFC 8259 §8.1 lets a parser ignore it (the
        # parser refused it: a whole sync failed as invalid JSON); read, with a warning.
        bom: tuple[Duplicate, ...] = ()
        if body.startswith(UTF8_BOM):
            body, bom = body[len(UTF8_BOM) :], (Duplicate((), "", BOM_IGNORED),)
        check_values(body)
        if pieces is not None:
            compact = pieces.read(body)
            if compact is not None:  # what `check_shape` would find nothing in
                return compact, bom
        repaired: tuple[Duplicate, ...] = bom
        try:
            value = loads(body)
        except ValueError as exc:
            if str(exc).startswith(_NO_MEMORY):  # this machine's lack, not the service's JSON
                raise MemoryError(f"{where}: {self._shown(label)}: {_NO_MEMORY}") from None
            # The slow path, only for a body the parser refused: text that is not UTF-8
            # (or a body in the charset it declares, its values counted again) is read, each
            # string repaired named.
            charset = declared_charset(content_type)
            fixed = None if too_deep_to_parse(exc) else repair(body, charset, check_values)
            if fixed is None:
                problem = _json_problem(body, exc)
                raise DataError(
                    self._redactor.redact_shown(
                        f"invalid JSON ({problem}) ({where}: {self._shown(label)})"
                    )
                ) from None
            value, body, repaired = fixed.value, fixed.body, bom + _repairs(fixed)
        try:
            return value, check_shape(body, value, where) + repaired
        except DataError as exc:
            raise DataError(self._redactor.redact_shown(str(exc))) from None


UTF8_BOM = b"\xef\xbb\xbf"
#: What a data-quality warning says of a page that began with a UTF-8 byte order mark.
BOM_IGNORED = (
    "the body begins with a UTF-8 byte order mark (BOM), which a service must not send "
    "before JSON (RFC 8259 §8.1): ignored"
)

#: What a data-quality warning says of a string, or a key, read with U+FFFD.
NOT_UTF8 = (
    "text that is not valid UTF-8 (a byte sequence, or a lone UTF-16 "
    "surrogate escape) read with U+FFFD in its place"
)
KEY_NOT_UTF8 = f"a key of {NOT_UTF8}"


def _repairs(fixed: Repaired) -> tuple[Duplicate, ...]:
    """The warnings of a repaired body: one per string or key repaired, and one for the page
    when it was read in the charset it declared."""
    found = [Duplicate(path, "", NOT_UTF8, repaired=True) for path in fixed.strings]
    found += [Duplicate(path, "", KEY_NOT_UTF8, repaired=True) for path in fixed.keys]
    if fixed.charset:
        problem = (
            f"the body is declared as charset={shorten(fixed.charset, 40)} and is not UTF-8 "
            f"(JSON is UTF-8, RFC 8259): read as {shorten(fixed.charset, 40)}"
        )
        found.insert(0, Duplicate((), "", problem))
    return tuple(found)
