"""One GET with retries: jittered backoff, `Retry-After`, a total deadline, size and type guards.

Takes an `httpx.Client` and a request, gives the parsed JSON body, or raises `ApiError` /
`DataError` with a message naming the status, the problem title and detail and the URL path.
Every message passes through the redactor, so the token never shows.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from http import HTTPStatus

import httpx

from auditor.common.jsonutil import loads
from auditor.errors import ApiError, DataError
from auditor.models import JSON
from auditor.redact import Redactor

RETRY_STATUSES = frozenset({429, 502, 503, 504})
_BASE_DELAY = 0.5
_MAX_DELAY = 30.0
_MAX_ATTEMPTS = 8


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


class _Retryable(Exception):
    """An attempt failed in a way worth retrying; `wait` is a server-requested delay or None."""

    def __init__(self, reason: str, wait: float | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.wait = wait


def describe_request(request: httpx.Request) -> str:
    """`GET /path?query`: what error messages name (never the host's credentials)."""
    target = request.url.raw_path.decode("ascii", "replace")
    return f"{request.method} {target}"


def parse_retry_after(value: str | None, now: datetime) -> float | None:
    """Seconds to wait from a `Retry-After` header (delta-seconds or an HTTP date), or None."""
    if not value:
        return None
    text = value.strip()
    if text.isdigit():
        return float(text)
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - now).total_seconds())


def _status_text(status: int) -> str:
    try:
        return f"{status} {HTTPStatus(status).phrase}"
    except ValueError:
        return str(status)


def problem_message(response: httpx.Response, body: bytes) -> str:
    """`→ 403 Forbidden: detail` from a problem body, or the bare status if there is none."""
    title, detail = "", ""
    try:
        problem = loads(body) if body else None
    except ValueError:
        problem = None
    if isinstance(problem, dict):
        title = str(problem.get("title") or "")
        detail = str(problem.get("detail") or "")
    head = f"{response.status_code} {title}" if title else _status_text(response.status_code)
    return f"→ {head}: {detail}" if detail else f"→ {head}"


def _is_json(content_type: str) -> bool:
    media = content_type.split(";", 1)[0].strip().lower()
    return media == "application/json" or media.endswith("+json")


class Requester:
    """Sends GETs through one `httpx.Client` under a `RetryPolicy`."""

    def __init__(self, client: httpx.Client, policy: RetryPolicy, redactor: Redactor) -> None:
        self._client = client
        self._policy = policy
        self._redactor = redactor

    def get_json(self, path: str, params: Mapping[str, str], where: str) -> JSON:
        """GET `path` and return the parsed JSON body; `where` names the page for messages."""
        request = self._client.build_request("GET", path, params=params)
        label = describe_request(request)
        started = self._policy.clock()
        attempt = 0
        while True:
            attempt += 1
            try:
                return self._attempt(request, label, where)
            except _Retryable as exc:
                delay = self._delay(exc, attempt)
                elapsed = self._policy.clock() - started
                if attempt >= self._policy.max_attempts or (
                    elapsed + delay > self._policy.deadline
                ):
                    raise self._error(
                        f"{label} {exc.reason}; gave up after {attempt} attempts in {elapsed:.1f}s",
                        request,
                    ) from None
                self._policy.sleep(delay)

    def _delay(self, exc: _Retryable, attempt: int) -> float:
        if exc.wait is not None:
            return min(exc.wait, self._policy.max_retry_after)
        ceiling: float = min(_MAX_DELAY, _BASE_DELAY * 2.0 ** (attempt - 1))
        return ceiling * (0.5 + 0.5 * self._policy.jitter())

    def _error(self, message: str, request: httpx.Request, status: int | None = None) -> ApiError:
        text = self._redactor.redact_text(message)
        return ApiError(text, url=self._redactor.redact_text(str(request.url)), status=status)

    def _attempt(self, request: httpx.Request, label: str, where: str) -> JSON:
        try:
            response = self._client.send(request, stream=True)
        except httpx.TimeoutException:
            raise _Retryable("timed out") from None
        except (
            httpx.LocalProtocolError
        ) as exc:  # our own request is malformed: retrying cannot help
            raise self._error(f"{label} could not be sent: {type(exc).__name__}", request) from None
        except httpx.TransportError as exc:
            raise _Retryable(f"failed: {type(exc).__name__}") from None
        try:
            body = self._read(response, request, label)
        finally:
            response.close()
        return self._decode(response, body, request, label, where)

    def _read(self, response: httpx.Response, request: httpx.Request, label: str) -> bytes:
        cap = self._policy.max_response_bytes
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > cap:
            raise self._error(f"{label} response of {declared} bytes exceeds {cap}", request)
        chunks: list[bytes] = []
        size = 0
        try:
            for chunk in response.iter_bytes():
                size += len(chunk)
                if size > cap:
                    raise self._error(f"{label} response exceeds {cap} bytes", request)
                chunks.append(chunk)
        except httpx.TimeoutException:
            raise _Retryable("timed out while reading the response") from None
        except httpx.TransportError as exc:
            raise _Retryable(f"response cut off ({type(exc).__name__})") from None
        return b"".join(chunks)

    def _now(self, response: httpx.Response) -> datetime:
        """The server's own `Date` when it sent one (a `Retry-After` date is relative to it)."""
        try:
            when = parsedate_to_datetime(response.headers.get("date", ""))
        except (TypeError, ValueError):
            return self._policy.wall_clock()
        return when if when.tzinfo else when.replace(tzinfo=UTC)

    def _decode(
        self, response: httpx.Response, body: bytes, request: httpx.Request, label: str, where: str
    ) -> JSON:
        status = response.status_code
        if status in RETRY_STATUSES:
            wait = parse_retry_after(response.headers.get("retry-after"), self._now(response))
            raise _Retryable(problem_message(response, body), wait)
        if status >= 400:
            raise self._error(f"{label} {problem_message(response, body)}", request, status)
        content_type = response.headers.get("content-type", "")
        if not _is_json(content_type):
            shown = content_type or "no content type"
            raise self._error(f"{label} → {status}: expected JSON, got {shown} ({where})", request)
        try:
            return loads(body)
        except ValueError as exc:
            raise DataError(
                self._redactor.redact_text(f"invalid JSON ({exc}) ({where}: {label})")
            ) from None
