"""The HTTP client against an in-process fake service (httpx.MockTransport)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import httpx
import orjson
import pytest

from auditor.errors import ApiError, DataError
from auditor.fetch import HISTORY_PATH, REPORTS_PATH, PlatformClient
from auditor.fetch_retry import parse_retry_after

TOKEN = "tok-Zq9distinctive-7f3a1c"
BASE = "http://svc.test"
APP = "http://app.test"
Handler = Callable[[httpx.Request], httpx.Response]


def change(rev: int, **settings: Any) -> dict[str, Any]:
    return {
        "revision": rev,
        "settings": {"maxAutonomyLevel": "low", "brandNewKey": {"x": rev}, **settings},
        "user": {"id": "u1", "email": "a@b.c", "name": "A"},
        "updatedAt": f"2026-10-{1 + rev % 28:02d}T10:00:00Z",
    }


def history(total: int) -> Handler:
    """History of revisions total..1, paged by an opaque cursor like the real service."""

    def handle(request: httpx.Request) -> httpx.Response:
        limit = int(request.url.params["limit"])
        start = int(request.url.params.get("cursor", "c0")[1:])
        revs = list(range(total, 0, -1))[start : start + limit]
        more = start + limit < total
        body = {
            "changes": [change(r) for r in revs],
            "pagination": {"hasMore": more, "nextCursor": f"c{start + limit}" if more else None},
        }
        return httpx.Response(200, json=body)

    return handle


def reports(total: int) -> Handler:
    ids = [f"r{n:04d}" for n in range(total)]

    def handle(request: httpx.Request) -> httpx.Response:
        limit = int(request.url.params["limit"])
        after = request.url.params.get("startAfter")
        start = ids.index(after) + 1 if after else 0
        page = [
            {
                "reportId": i,
                "createdAt": 1_790_000_000_000,
                "repoUrl": f"https://g/{i}",
                "report": {"lint": {"numerator": None, "denominator": 1, "rationale": "ok"}},
            }
            for i in ids[start : start + limit]
        ]
        return httpx.Response(200, json={"reports": page})

    return handle


class Recorder:
    """Wraps a handler, records requests and can inject responses before the real one."""

    def __init__(self, handler: Handler, faults: list[Any] | None = None) -> None:
        self.handler = handler
        self.faults = list(faults or [])
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        if self.faults:
            fault = self.faults.pop(0)
            if isinstance(fault, Exception):
                raise fault
            response: httpx.Response = fault(request) if callable(fault) else fault
            return response
        return self.handler(request)


def client(handler: Handler, **kwargs: Any) -> tuple[PlatformClient, list[float]]:
    sleeps: list[float] = []
    options: dict[str, Any] = {
        "base_url": BASE,
        "app_url": APP,
        "token": TOKEN,
        "page_size": 10,
        "transport": httpx.MockTransport(handler),
        "sleep": sleeps.append,
    }
    options.update(kwargs)
    return PlatformClient(**options), sleeps


def all_history(c: PlatformClient) -> list[int]:
    return [ch["revision"] for page in c.iter_history_pages() for ch in page]


def test_pages_history_to_the_end_with_string_limit_and_cursor() -> None:
    rec = Recorder(history(25))
    c, _ = client(rec)
    assert all_history(c) == list(range(25, 0, -1))
    assert [r.url.params.get("cursor") for r in rec.requests] == [None, "c10", "c20"]
    assert all(r.url.params["limit"] == "10" for r in rec.requests)
    assert rec.requests[0].headers["authorization"] == f"Bearer {TOKEN}"


def test_unknown_settings_keys_and_shapes_are_data() -> None:
    c, _ = client(history(3))
    page = next(c.iter_history_pages())
    assert page[0]["settings"]["brandNewKey"] == {"x": 3}


@pytest.mark.parametrize("total", [0, 9, 10, 25], ids=lambda n: f"{n}-reports")
def test_pages_reports_until_short_page(total: int) -> None:
    rec = Recorder(reports(total))
    c, _ = client(rec)
    got = [r["reportId"] for page in c.iter_reports_pages() for r in page]
    assert got == [f"r{n:04d}" for n in range(total)]
    assert rec.requests[0].url.host == "app.test"
    assert rec.requests[0].url.path == REPORTS_PATH
    if total >= 10:
        assert rec.requests[1].url.params["startAfter"] == "r0009"


def test_no_app_url_means_no_reports() -> None:
    c, _ = client(reports(3), app_url=None)
    assert list(c.iter_reports_pages()) == []
    assert not c.has_reports


def _problem(status: int, title: str, **headers: str) -> httpx.Response:
    body = {"status": status, "title": title, "detail": "slow down"}
    return httpx.Response(status, json=body, headers=headers)


@pytest.mark.parametrize("status", [429, 502, 503, 504])
def test_retries_transient_statuses_then_completes(status: int) -> None:
    rec = Recorder(history(15), [_problem(status, "Busy"), _problem(status, "Busy")])
    c, sleeps = client(rec)
    assert all_history(c) == list(range(15, 0, -1))
    assert len(sleeps) == 2
    assert 0 < sleeps[0] < sleeps[1] <= 2  # jittered exponential backoff


@pytest.mark.parametrize(
    "exc", [httpx.ReadTimeout("slow"), httpx.ConnectError("refused")], ids=["timeout", "connect"]
)
def test_retries_timeouts_and_connection_errors(exc: Exception) -> None:
    c, sleeps = client(Recorder(history(3), [exc]))
    assert all_history(c) == [3, 2, 1]
    assert len(sleeps) == 1


def test_honours_retry_after_seconds_and_caps_it() -> None:
    faults = [
        _problem(429, "Too Many", **{"Retry-After": "7"}),
        _problem(429, "Too Many", **{"Retry-After": "3600"}),
    ]
    c, sleeps = client(Recorder(history(3), faults), max_retry_after=60)
    assert all_history(c) == [3, 2, 1]
    assert sleeps == [7.0, 60.0]


def test_honours_retry_after_http_date() -> None:
    now = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
    assert parse_retry_after(format_datetime(now + timedelta(seconds=12), usegmt=True), now) == 12
    assert parse_retry_after("garbage", now) is None
    fault = _problem(
        503,
        "Unavailable",
        **{
            "Retry-After": format_datetime(now + timedelta(seconds=5), usegmt=True),
            "Date": format_datetime(now, usegmt=True),
        },
    )
    c, sleeps = client(Recorder(history(3), [fault]))
    assert all_history(c) == [3, 2, 1]
    assert sleeps == [5.0]


def test_gives_up_after_the_deadline() -> None:
    ticks = iter(range(0, 10_000, 40))
    c, sleeps = client(
        Recorder(history(3), [_problem(503, "Service Unavailable")] * 50),
        deadline=100,
        clock=lambda: float(next(ticks)),
    )
    with pytest.raises(ApiError) as info:
        all_history(c)
    message = str(info.value)
    assert message.startswith(f"GET {HISTORY_PATH}?limit=10 → 503 Service Unavailable: slow down")
    assert "gave up after" in message
    assert len(sleeps) < 5


def test_problem_body_names_status_title_detail_and_path() -> None:
    body = {"status": 403, "title": "Forbidden", "detail": f"role member may not (key {TOKEN})"}
    rec = Recorder(lambda r: httpx.Response(403, json=body))
    c, sleeps = client(rec)
    with pytest.raises(ApiError) as info:
        all_history(c)
    message = str(info.value)
    assert message.startswith(f"GET {HISTORY_PATH}?limit=10 → 403 Forbidden: role member may not")
    assert TOKEN not in message and TOKEN not in info.value.url
    assert (info.value.status, sleeps, len(rec.requests)) == (403, [], 1)


def test_server_error_is_not_retried_and_non_problem_body_reads_plainly() -> None:
    rec = Recorder(lambda r: httpx.Response(500, text="boom"))
    c, sleeps = client(rec)
    with pytest.raises(ApiError, match=r"→ 500 Internal Server Error$"):
        all_history(c)
    assert (len(rec.requests), sleeps) == (1, [])


def _body(payload: Any, content_type: str = "application/json") -> Handler:
    data = payload if isinstance(payload, bytes) else orjson.dumps(payload)
    return lambda r: httpx.Response(200, content=data, headers={"content-type": content_type})


GUARDS = [
    pytest.param(
        _body({"changes": [change(1)], "pagination": {"hasMore": True, "nextCursor": "same"}}),
        DataError,
        "repeated an earlier cursor",
        id="repeat-cursor",
    ),
    pytest.param(
        _body({"changes": [], "pagination": {"hasMore": True, "nextCursor": "x"}}),
        DataError,
        "$.pagination.hasMore: true on an empty page",
        id="empty-has-more",
    ),
    pytest.param(
        _body(b"<html>maintenance</html>", "text/html"),
        ApiError,
        "→ 200: expected JSON, got text/html",
        id="wrong-content-type",
    ),
    pytest.param(
        _body(
            b'{"changes": [',
        ),
        DataError,
        "invalid JSON",
        id="invalid-json",
    ),
    pytest.param(
        _body(
            {
                "changes": [change(1) | {"settings": "sk-secretvalue1234567890"}],
                "pagination": {"hasMore": False},
            }
        ),
        DataError,
        f"$.changes[0].settings: expected object, got string (GET {BASE}{HISTORY_PATH} page 1)",
        id="settings-not-object",
    ),
    pytest.param(
        _body(
            {
                "changes": [{k: v for k, v in change(1).items() if k != "revision"}],
                "pagination": {"hasMore": False},
            }
        ),
        DataError,
        "$.changes[0]: missing required key 'revision'",
        id="missing-revision",
    ),
    pytest.param(
        _body({"pagination": {"hasMore": False}}),
        DataError,
        "$: missing required key 'changes'",
        id="missing-changes",
    ),
]


@pytest.mark.parametrize(("handler", "error", "message"), GUARDS)
def test_guards(handler: Handler, error: type[Exception], message: str) -> None:
    c, _ = client(handler)
    with pytest.raises(error) as info:
        all_history(c)
    assert message in str(info.value)
    assert "sk-secretvalue" not in str(info.value)


def test_page_limit() -> None:
    c, _ = client(history(100), max_pages=3)
    with pytest.raises(DataError, match="more than 3 pages"):
        all_history(c)


@pytest.mark.parametrize("declared", [True, False], ids=["content-length", "streamed"])
def test_response_size_cap(declared: bool) -> None:
    payload = orjson.dumps({"changes": [change(1)] * 50, "pagination": {"hasMore": False}})

    def handle(request: httpx.Request) -> httpx.Response:
        if declared:
            return httpx.Response(
                200, content=payload, headers={"content-type": "application/json"}
            )
        return httpx.Response(
            200,
            content=iter([payload[:500], payload[500:]]),
            headers={"content-type": "application/json"},
        )

    c, _ = client(handle, max_response_bytes=1000)
    with pytest.raises(ApiError, match="exceeds 1000"):
        all_history(c)


def test_readiness_schema_error_names_path_and_url() -> None:
    bad = {"reports": [{"reportId": "r1", "createdAt": "yesterday", "repoUrl": "x", "report": {}}]}
    c, _ = client(_body(bad))
    with pytest.raises(DataError) as info:
        list(c.iter_reports_pages())
    assert str(info.value) == (
        f"$.reports[0].createdAt: expected number, got string (GET {APP}{REPORTS_PATH} page 1)"
    )


def test_client_is_a_context_manager() -> None:
    c, _ = client(history(1))
    with c as same:
        assert all_history(same) == [1]
