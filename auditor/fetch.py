"""The HTTP client: the only module that touches the network.

Takes the service addresses and a token, gives the raw pages of the enterprise-control history
(newest first) and of the readiness reports, each validated against a JSON Schema. Paging
follows the real service (design §2); guards stop on a repeated cursor, `hasMore` with an empty
page, too many pages, oversized or non-JSON responses.

Validation is "fast yes, slow why": each schema is compiled once into a cheap predicate that only
says yes when jsonschema would; on anything else jsonschema walks the page and words the error, so
the schemas stay the one source of what is valid and of every message.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from functools import cache
from importlib import resources
from types import TracebackType
from typing import Any

import httpx
import jsonschema  # type: ignore[import-untyped]

from auditor import __version__, paths
from auditor.errors import DataError
from auditor.fetch_retry import Requester, RetryPolicy
from auditor.jsonutil import loads
from auditor.redact import Redactor

HISTORY_PATH = "/api/v0/organization/enterprise-controls/history"
REPORTS_PATH = "/api/organization/agent-readiness-reports"

_JSON_TYPES = {
    dict: "object",
    list: "array",
    str: "string",
    bool: "boolean",
    int: "integer",
    float: "number",
    type(None): "null",
}


Check = Callable[[Any], bool]

# Exact Python types per JSON type: `type(x) in ...` never admits bool as a number, nor a subclass.
_PY_TYPES: dict[str, frozenset[type]] = {
    "object": frozenset({dict}),
    "array": frozenset({list}),
    "string": frozenset({str}),
    "boolean": frozenset({bool}),
    "integer": frozenset({int}),
    "number": frozenset({int, float}),
    "null": frozenset({type(None)}),
}
_ANY_JSON: frozenset[type] = frozenset().union(*_PY_TYPES.values())
_ANNOTATIONS = frozenset({"$schema", "$id", "$comment", "title", "description", "examples"})
_KEYWORDS = frozenset(
    {"type", "required", "properties", "additionalProperties", "items", "minLength", "minimum"}
)


class _Unsupported(Exception):
    """The schema uses a keyword the fast checker does not know; jsonschema does all the work."""


@cache
def _validator(name: str) -> Any:
    cls = jsonschema.validators.validator_for(_schema(name))
    return cls(_schema(name))


@cache
def _schema(name: str) -> Any:
    return loads(resources.files("auditor.schemas").joinpath(name).read_bytes())


@cache
def fast_check(name: str) -> Check:
    """The named schema's quick test: True only if jsonschema accepts; False means "ask it"."""
    return compile_check(_schema(name)) or _never


def compile_check(schema: Any) -> Check | None:
    """Compile a schema into a predicate that never accepts what jsonschema rejects.

    None when the schema uses a keyword outside the small subset understood here; callers then
    leave all the work to jsonschema. A False answer is never an error by itself: the caller asks
    jsonschema, which decides and words the message.
    """
    try:
        return _compile(schema)
    except _Unsupported:
        return None


def _never(_value: Any) -> bool:
    return False


def _always(_value: Any) -> bool:
    return True


def _compile(schema: Any) -> Check:
    if isinstance(schema, bool):
        return _always if schema else _never
    if not isinstance(schema, dict):
        raise _Unsupported(f"schema must be an object, got {type(schema).__name__}")
    unknown = schema.keys() - _KEYWORDS - _ANNOTATIONS
    if unknown:
        raise _Unsupported(f"keyword {sorted(unknown)[0]!r}")
    allowed = _allowed_types(schema.get("type"))
    by_type = _keyword_checks(schema)
    if not by_type:
        return lambda value: type(value) in allowed

    def check(value: Any) -> bool:
        kind = type(value)
        if kind not in allowed:
            return False
        keywords = by_type.get(kind)
        return keywords is None or keywords(value)

    return check


def _allowed_types(declared: Any) -> frozenset[type]:
    if declared is None:
        return _ANY_JSON
    names = [declared] if isinstance(declared, str) else declared
    if not isinstance(names, list) or not all(n in _PY_TYPES for n in names):
        raise _Unsupported(f"type {declared!r}")
    return frozenset().union(*(_PY_TYPES[n] for n in names))


def _keyword_checks(schema: dict[str, Any]) -> dict[type, Check]:
    """Checks of the keywords that apply to each Python type (jsonschema skips the others)."""
    by_type: dict[type, Check] = {}
    if {"required", "properties", "additionalProperties"} & schema.keys():
        by_type[dict] = _object_check(schema)
    if "items" in schema:
        by_type[list] = _items_check(_compile(schema["items"]))
    if "minLength" in schema:
        by_type[str] = _min_length_check(schema["minLength"])
    if "minimum" in schema:
        by_type[int] = by_type[float] = _minimum_check(schema["minimum"])
    return by_type


def _object_check(schema: dict[str, Any]) -> Check:
    required = schema.get("required", [])
    properties = schema.get("properties", {})
    if not isinstance(required, list) or not isinstance(properties, dict):
        raise _Unsupported("required or properties of an unexpected shape")
    props = {key: _compile(sub) for key, sub in properties.items()}
    extra = _compile(schema.get("additionalProperties", True))
    known = props.items()

    def check(value: dict[str, Any]) -> bool:
        for key in required:
            if key not in value:
                return False
        for key, sub in known:
            if key in value and not sub(value[key]):
                return False
        if extra is not _always:
            for key, item in value.items():
                if key not in props and not extra(item):
                    return False
        return True

    return check


def _items_check(item: Check) -> Check:
    return lambda value: all(map(item, value))


def _min_length_check(limit: Any) -> Check:
    if type(limit) is not int:
        raise _Unsupported(f"minLength {limit!r}")
    return lambda value: len(value) >= limit


def _minimum_check(limit: Any) -> Check:
    if type(limit) not in (int, float):
        raise _Unsupported(f"minimum {limit!r}")
    return lambda value: not value < limit


def _describe(error: Any) -> str:
    """A message that never repeats the offending value (it may be a secret)."""
    if error.validator == "type":
        expected = error.validator_value
        wanted = " or ".join(expected) if isinstance(expected, list) else str(expected)
        return f"expected {wanted}, got {_JSON_TYPES.get(type(error.instance), 'unknown')}"
    if error.validator == "required" and isinstance(error.instance, dict):
        missing = [k for k in error.validator_value if k not in error.instance]
        return f"missing required key {missing[0]!r}" if missing else "missing required key"
    return f"fails {error.validator} {error.validator_value!r}"


def validate(body: Any, schema: str, where: str) -> None:
    """Raise `DataError` naming the JSON path and `where` if `body` does not match `schema`."""
    if fast_check(schema)(body):
        return
    error = jsonschema.exceptions.best_match(_validator(schema).iter_errors(body))
    if error is not None:
        path = paths.render(error.absolute_path)
        raise DataError(f"{path}: {_describe(error)} ({where})")


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
