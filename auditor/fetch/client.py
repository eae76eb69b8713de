"""The HTTP client: the only module that touches the network.

Takes the service addresses and a token, gives the raw pages of the enterprise-control history
(newest first) and of the readiness reports, each validated against a JSON Schema. Paging
follows the real service (design §2); guards stop on a repeated cursor, `hasMore` with an empty
page, too many pages, oversized or non-JSON responses.
Validation lives in `fetch_schema`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from types import TracebackType
from typing import Any

import httpx

from auditor import __version__
from auditor.errors import DataError
from auditor.fetch.retry import Requester, RetryPolicy
from auditor.fetch.schema import validate
from auditor.redact import Redactor

HISTORY_PATH = "/api/v0/organization/enterprise-controls/history"
REPORTS_PATH = "/api/organization/agent-readiness-reports"


class PlatformClient:
    """Reads the history and readiness reports; one `httpx.Client` per base address."""

    def __init__(
        self,
        *,
        base_url: str,
        app_url: str | None,
        token: str,
        redactor: Redactor | None = None,
        timeout: float = 30.0,
        deadline: float = 300.0,
        max_pages: int = 10000,
        page_size: int = 100,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        max_retry_after: float = 60.0,
        max_response_bytes: int = 64 * 1024 * 1024,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.app_url = app_url.rstrip("/") if app_url else None
        self.redactor = redactor or Redactor(b"auditor-client")
        self.redactor.register(token)
        self._max_pages = max_pages
        self._page_size = page_size
        policy = RetryPolicy(
            deadline=deadline,
            max_retry_after=max_retry_after,
            max_response_bytes=max_response_bytes,
            sleep=sleep,
            clock=clock,
        )
        headers = {
            "Authorization": f"Bearer {token}",
            "Accept": "application/json",
            "User-Agent": f"auditor/{__version__}",
        }
        self._clients: list[httpx.Client] = []
        self._history = Requester(
            self._client(self.base_url, headers, timeout, transport), policy, self.redactor
        )
        self._reports: Requester | None = None
        if self.app_url:
            client = self._client(self.app_url, headers, timeout, transport)
            self._reports = Requester(client, policy, self.redactor)

    def _client(
        self,
        base: str,
        headers: dict[str, str],
        timeout: float,
        transport: httpx.BaseTransport | None,
    ) -> httpx.Client:
        client = httpx.Client(
            base_url=base,
            headers=headers,
            timeout=timeout,
            transport=transport,
            follow_redirects=False,
            trust_env=False,
        )
        self._clients.append(client)
        return client

    @property
    def has_reports(self) -> bool:
        """True when an app address is configured (readiness reports can be read)."""
        return self._reports is not None

    def _page_guard(self, page: int, what: str) -> None:
        if page > self._max_pages:
            raise DataError(
                f"{what} paging stopped: more than {self._max_pages} pages (raise max_pages "
                "if the organization really has that much data)"
            )

    def iter_history_pages(self) -> Iterator[list[dict[str, Any]]]:
        """Yield each history page's raw change dicts (newest first), validated, to the end."""
        cursor: str | None = None
        seen: set[str] = set()
        page = 0
        while True:
            page += 1
            self._page_guard(page, "history")
            params = {"limit": str(self._page_size)}
            if cursor is not None:
                params["cursor"] = cursor
            where = f"GET {self.base_url}{HISTORY_PATH} page {page}"
            body = self._history.get_json(HISTORY_PATH, params, where)
            validate(body, "api-history.schema.json", where)
            changes: list[dict[str, Any]] = body["changes"]
            pagination = body["pagination"]
            yield changes
            if not pagination["hasMore"]:
                return
            cursor = self._next_cursor(pagination, changes, seen, where)

    def _next_cursor(
        self, pagination: dict[str, Any], changes: list[Any], seen: set[str], where: str
    ) -> str:
        if not changes:
            raise DataError(f"$.pagination.hasMore: true on an empty page ({where})")
        cursor = pagination.get("nextCursor")
        if not cursor:
            raise DataError(f"$.pagination.nextCursor: missing while hasMore is true ({where})")
        if cursor in seen:
            raise DataError(
                f"$.pagination.nextCursor: the API repeated an earlier cursor; "
                f"paging would loop ({where})"
            )
        seen.add(cursor)
        return str(cursor)

    def iter_reports_pages(self) -> Iterator[list[dict[str, Any]]]:
        """Yield each readiness-report page (newest first), validated, until a short page."""
        if self._reports is None:
            return
        after: str | None = None
        seen: set[str] = set()
        page = 0
        while True:
            page += 1
            self._page_guard(page, "readiness report")
            params = {"limit": str(self._page_size)}
            if after is not None:
                params["startAfter"] = after
            where = f"GET {self.app_url}{REPORTS_PATH} page {page}"
            body = self._reports.get_json(REPORTS_PATH, params, where)
            validate(body, "api-readiness.schema.json", where)
            reports: list[dict[str, Any]] = body["reports"]
            if reports:
                yield reports
            if len(reports) < self._page_size:
                return
            after = str(reports[-1]["reportId"])
            if after in seen:
                raise DataError(
                    f"$.reports[-1].reportId: repeated {after!r}; paging would loop ({where})"
                )
            seen.add(after)

    def close(self) -> None:
        """Close the underlying HTTP connections."""
        for client in self._clients:
            client.close()

    def __enter__(self) -> PlatformClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
