"""The HTTP client against an in-process fake service (httpx.MockTransport)."""

from __future__ import annotations

import copy
import errno
import gc
import gzip
import itertools
import json
import ssl
import time
import tracemalloc
import urllib.parse
import zlib
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from importlib import resources
from typing import Any

import httpx
import jsonschema  # type: ignore[import-untyped]
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from auditor.emulator import generate_dataset
from auditor.errors import ApiError, DataError
from auditor.fetch import (
    HISTORY,
    HISTORY_PATH,
    READINESS,
    REPORTS_PATH,
    PlatformClient,
    inflate,
    shape,
)
from auditor.fetch import schema as fetch_schema
from auditor.fetch.retry import parse_retry_after
from auditor.fetch.schema import compile_check, fast_check
from tests.test_tolerant_reader import _depth

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


@pytest.mark.parametrize("at", [60, 80, 94, 99])
def test_a_repeated_report_id_holding_the_token_is_hidden_wherever_it_is_cut(at: int) -> None:
    """The message quoting a repeated `reportId` cuts it at 100 characters: the token at a
    place the cut splits was shown in part (20 of its 24 characters, in the sync's line and
    every report), as the cut came before the redaction."""
    last = "r" * at + TOKEN

    def handle(request: httpx.Request) -> httpx.Response:
        item = {
            "createdAt": 1_790_000_000_000,
            "repoUrl": "https://g/x",
            "report": {"lint": {"numerator": 1, "denominator": 1, "rationale": "ok"}},
        }
        page = [{**item, "reportId": f"a{n}"} for n in range(9)] + [{**item, "reportId": last}]
        return httpx.Response(200, json={"reports": page})

    c, _ = client(handle)
    with pytest.raises(DataError, match="paging would loop") as info:
        list(c.iter_reports_pages())
    message = str(info.value)
    assert "reportId: repeated" in message
    assert all(TOKEN[n : n + 6] not in message for n in range(len(TOKEN) - 5)), message


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


@pytest.mark.parametrize("value", ["\xb2", "-1", "1.5", " ", "9" * 400])
def test_an_odd_retry_after_falls_back_to_backoff(value: str) -> None:
    """`Retry-After: ²` (one byte from the server) ended the sync with 'unexpected ValueError'."""
    raw = httpx.Response(503, headers=[(b"retry-after", value.encode("latin-1", "replace"))])
    c, sleeps = client(Recorder(history(3), [raw]), max_retry_after=60)
    assert all_history(c) == [3, 2, 1]
    assert len(sleeps) == 1 and 0 < sleeps[0] <= 60


@pytest.mark.parametrize(
    ("value", "asked"),
    [
        ("1000000000", "1000000000s; at most 60s is waited)"),
        ("999999999999999", "999999999999999s; at most 60s is waited)"),
        # was 'asked for 99999999999999991611392s' (the float it was read as) and 'infs'
        ("99999999999999999999999", "more than 10^15s; at most 60s is waited)"),
        ("9" * 400, "more than 10^15s; at most 60s is waited)"),
        ("45", "45s)"),  # was '(Retry-After asked for 45s; at most 45s is waited)'
    ],
)
def test_a_retry_after_past_the_deadline_is_named_in_the_error(value: str, asked: str) -> None:
    """It read like the sync had run out of time by itself ('gave up after 1 attempts in 0s')."""
    busy = _problem(429, "Too Many", **{"Retry-After": value})
    c, sleeps = client(Recorder(history(3), [busy]), deadline=30, clock=lambda: 0.0)
    with pytest.raises(ApiError) as info:
        all_history(c)
    assert str(info.value).endswith(
        f"leaves no time for another try (Retry-After asked for {asked}"
    )
    assert sleeps == []


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


@pytest.mark.parametrize(
    "asked", ["0", "Wed, 21 Oct 2015 07:28:00 GMT"], ids=["zero", "a-date-past"]
)
def test_a_retry_after_shorter_than_the_backoff_waits_the_backoff(asked: str) -> None:
    """`Retry-After: 0` (or a date past) was taken as it came: 8 attempts in 0.0 s, then the
    sync failed, where the same outage without the header was waited out."""
    busy = [_problem(503, "Unavailable", **{"Retry-After": asked}) for _ in range(3)]
    c, sleeps = client(Recorder(history(3), busy))
    assert all_history(c) == [3, 2, 1]
    # the jittered backoff, as with no header at all: half to all of 0.5 s, 1 s, 2 s
    assert [0.25 <= sleeps[0] <= 0.5, 0.5 <= sleeps[1] <= 1, 1 <= sleeps[2] <= 2] == [True] * 3


def test_a_broken_answer_says_what_was_wrong_with_it() -> None:
    """It said only 'failed: RemoteProtocolError' after 8 attempts."""
    said = "Server disconnected without sending a response."
    c, _ = client(Recorder(history(3), [httpx.RemoteProtocolError(said)] * 8))
    with pytest.raises(ApiError) as info:
        all_history(c)
    assert f"on svc.test: failed: RemoteProtocolError ({said}); gave up after 8" in str(info.value)


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


def test_a_page_the_deadline_leaves_no_time_for_says_so() -> None:
    """Each page takes 40 s of a 100 s deadline: page 4 is never sent. The message was
    'on svc.test: not sent; gave up after 0 attempts in 120s: … no time for another try'."""
    now = [0.0]

    def slow(request: httpx.Request) -> httpx.Response:
        now[0] += 40
        return history(50)(request)

    rec = Recorder(slow)
    c, _ = client(rec, deadline=100, clock=lambda: now[0])
    with pytest.raises(ApiError) as info:
        all_history(c)
    assert str(info.value) == (
        f"GET {HISTORY_PATH}?limit=10&cursor=c30 not sent: the sync's deadline of 100s passed "
        "after 120s of its earlier requests and the reading of their pages (raise `deadline` "
        "if there is really that much to fetch)"
    )
    assert len(rec.requests) == 3


def test_a_huge_problem_body_is_clipped_in_the_one_line_error() -> None:
    """A 403 whose detail was 2 MB made a 2 MB error line (and took 2.6 s to redact)."""
    body = {"title": "Forbidden " + "t" * 5000, "detail": "d" * 2_000_000}
    c, _ = client(Recorder(lambda r: httpx.Response(403, json=body)))
    with pytest.raises(ApiError) as info:
        all_history(c)
    message = str(info.value)
    assert message.startswith(f"GET {HISTORY_PATH}?limit=10 → 403 Forbidden ttt")
    assert "… (4810 more characters): ddd" in message
    assert message.endswith("… (1999000 more characters)")
    assert len(message) < 1400


@pytest.mark.parametrize(
    ("body", "secret"),
    [
        pytest.param({"title": "x", "detail": "d" * 990 + TOKEN}, TOKEN, id="token-in-detail"),
        pytest.param({"title": "t" * 190 + TOKEN, "detail": "x"}, TOKEN, id="token-in-title"),
        pytest.param({"detail": "d" * 994 + f" sk-live-{'4f3a9b8c' * 4}"}, "sk-li", id="api-key"),
    ],
)
def test_a_secret_cut_by_the_clip_is_not_shown_in_part(body: dict[str, str], secret: str) -> None:
    """Clipped first and redacted after, 'tok-Zq9dis… (15 more characters)' was shown."""
    c, _ = client(Recorder(lambda r: httpx.Response(403, json=body)))
    with pytest.raises(ApiError) as info:
        all_history(c)
    assert "more characters" in str(info.value)
    assert secret[:5] not in str(info.value)


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


@pytest.mark.parametrize(
    ("extra", "shown"),
    [
        pytest.param({"requestId": "req-7f3a"}, " (request id req-7f3a)", id="v1"),
        pytest.param({"metadata": {"requestId": "a1.b2:c3"}}, " (request id a1.b2:c3)", id="v0"),
        pytest.param({"requestId": "x y\n<script>"}, "", id="not-an-id"),
        pytest.param({"requestId": "r" * 65}, "", id="too-long"),
    ],
)
def test_problem_body_request_id_is_named_for_support(extra: dict[str, Any], shown: str) -> None:
    body = {"status": 403, "title": "Forbidden", "detail": "no", **extra}
    c, _ = client(Recorder(lambda r: httpx.Response(403, json=body)))
    with pytest.raises(ApiError) as info:
        all_history(c)
    assert str(info.value).startswith(f"GET {HISTORY_PATH}?limit=10 → 403 Forbidden: no{shown}")
    assert "<script>" not in str(info.value)


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
        # outside a string (inside one it is read with U+FFFD: tests/test_text_repair.py)
        _body(b'{"changes": [],\n "pagination": {"hasMore": false}, "x": caf\xe9}'),
        DataError,
        "invalid JSON (not UTF-8 text: byte 59 (line 2) is 0xe9) (GET http://svc.test",
        id="latin-1",  # was 'str is not valid UTF-8: surrogates not allowed: line 1 column 1'
    ),
    pytest.param(
        _body({"changes": [change(1)], "pagination": {"hasMore": True, "nextCursor": "same"}}),
        DataError,
        "repeated an earlier cursor",
        id="repeat-cursor",
    ),
    pytest.param(  # was 'unexpected InvalidURL: URL component 'query' too long', then
        # 'cannot request … page 2: its address is not a valid URL (URL component 'query' too
        # long)', naming neither the field nor the page that sent it (tester T62 LOW-3)
        _body({"changes": [change(1)], "pagination": {"hasMore": True, "nextCursor": "c" * 70000}}),
        DataError,
        "$.pagination.nextCursor: 70000 characters, too long to go into the next page's URL (it "
        f"would be {len(BASE + HISTORY_PATH) + len('?limit=10&cursor=') + 70000} characters, "
        f"more than 65536) (GET {BASE}{HISTORY_PATH} page 1)",
        id="cursor-too-long-for-a-url",
    ),
    pytest.param(  # an empty page that goes on is followed (T15 #5), but not in a loop
        _body({"changes": [], "pagination": {"hasMore": True, "nextCursor": "x"}}),
        DataError,
        "$.pagination.nextCursor: the API repeated an earlier cursor; paging would loop (GET "
        f"{BASE}{HISTORY_PATH} page 2)",
        id="empty-has-more-same-cursor",
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


def _encoded(payload: bytes, encoding: str, first: int | None = None) -> Handler:
    chunks = [payload] if first is None else [payload[:first], payload[first:]]

    def handle(request: httpx.Request) -> httpx.Response:
        headers = {"content-type": "application/json", "content-encoding": encoding}
        return httpx.Response(200, content=iter(chunks), headers=headers)  # as it arrives

    return handle


def _bomb(size: int, layers: int = 1) -> bytes:
    data = gzip.compress(b"\0" * size, 9)
    for _ in range(layers - 1):
        data = gzip.compress(data, 9)
    return data


@pytest.mark.parametrize(
    ("encoding", "body"),
    [
        pytest.param("gzip", lambda p: gzip.compress(p), id="gzip"),
        pytest.param("x-gzip", lambda p: gzip.compress(p), id="x-gzip"),
        pytest.param("deflate", lambda p: zlib.compress(p), id="deflate"),
        pytest.param("deflate", lambda p: zlib.compress(p, wbits=-15), id="raw-deflate"),
        pytest.param("gzip, gzip", lambda p: gzip.compress(gzip.compress(p)), id="twice"),
        pytest.param("identity", lambda p: p, id="identity"),
    ],
)
@pytest.mark.parametrize("first", [None, 1], ids=["whole", "first-byte-alone"])
def test_compressed_pages_are_read(
    encoding: str, body: Callable[[bytes], bytes], first: int | None
) -> None:
    """A raw deflate body whose first byte came alone was 'not valid deflate data'."""
    payload = orjson.dumps({"changes": [change(2), change(1)], "pagination": {"hasMore": False}})
    rec = Recorder(_encoded(body(payload), encoding, first))
    c, _ = client(rec)
    assert all_history(c) == [2, 1]
    assert rec.requests[0].headers["accept-encoding"] == "gzip, deflate"


@pytest.mark.parametrize("layers", [1, 2], ids=["gzip", "gzip-in-gzip"])
def test_a_compression_bomb_stops_at_the_cap_without_inflating_it_whole(layers: int) -> None:
    """64 MB of zeros in 64 KB of gzip: reading stops at the 1 MB cap, and never holds more
    than a few caps' worth (httpx inflated each network read whole: 2.1 GB from 1.6 KB)."""
    bomb = _bomb(64_000_000, layers)
    c, _ = client(_encoded(bomb, ", ".join(["gzip"] * layers)), max_response_bytes=1_000_000)
    tracemalloc.start()
    try:
        with pytest.raises(ApiError, match="response exceeds 1000000 bytes"):
            all_history(c)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 8_000_000


_PAGE = orjson.dumps({"changes": [change(2), change(1)], "pagination": {"hasMore": False}})
_GZ = gzip.compress(_PAGE)


@pytest.mark.parametrize(
    ("encoding", "payload", "message"),
    [
        pytest.param("br", b"\x0b\x02\x80{}\x03", "Content-Encoding 'br' is not one", id="br"),
        pytest.param("zstd", b"{}", "Content-Encoding 'zstd' is not one", id="zstd"),
        # a 16 KB header value made a 16 KB "one line" error
        pytest.param(
            "x" * 16_000,
            b"{}",
            f"Content-Encoding '{'x' * 40}… (15960 more characters)'",
            id="long-name",
        ),
        pytest.param("gzip", b"\x1f\x8bnot gzip", "the body is not valid gzip data", id="bad-gzip"),
        pytest.param("deflate", b"not deflate", "the body is not valid deflate data", id="bad"),
        # without its 8-byte trailer the page was read whole and synced, its CRC never checked
        pytest.param("gzip", _GZ[:-8], "the gzip data is cut off before its end", id="no-trailer"),
        # was 'invalid JSON (unexpected end of data: line 1 column 83 …)'
        pytest.param("gzip", _GZ[: len(_GZ) // 2], "the gzip data is cut off", id="cut-gzip"),
        pytest.param(
            "deflate", zlib.compress(_PAGE)[:-4], "the deflate data is cut off", id="cut-deflate"
        ),
        pytest.param(
            "deflate", zlib.compress(_PAGE, wbits=-15)[:-3], "the deflate data is cut off", id="raw"
        ),
        # bytes after the end of the compressed data were dropped without a word
        pytest.param(
            "gzip",
            _GZ + b"<html>",
            "the body has data after the end of the gzip data",
            id="gz-tail",
        ),
        pytest.param(
            "deflate",
            zlib.compress(_PAGE) + b"x",
            "the body has data after the end of the deflate data",
            id="tail",
        ),
    ],
)
def test_a_body_that_cannot_be_decoded_is_one_error(
    encoding: str, payload: bytes, message: str
) -> None:
    rec = Recorder(_encoded(payload, encoding))
    c, _ = client(rec)
    with pytest.raises(ApiError) as info:
        all_history(c)
    assert f"→ 200: {message}" in str(info.value)
    assert f"{BASE}{HISTORY_PATH} page 1" in str(info.value)
    assert len(rec.requests) == 1  # not retried: the same bytes would come again


@pytest.mark.parametrize("split", [30, len(_PAGE)], ids=["split-json", "whitespace-member"])
def test_concatenated_gzip_members_are_read_whole(split: int) -> None:
    """RFC 1952: a gzip body may be several members, its data their concatenation. Only the
    first was read: the page ended after 30 bytes ('invalid JSON (unexpected end of data …)'),
    or a page's second part was dropped without a word."""
    payload = gzip.compress(_PAGE[:split]) + gzip.compress(_PAGE[split:] or b" ")
    c, _ = client(Recorder(_encoded(payload, "gzip")))
    assert all_history(c) == [2, 1]


def test_compressed_data_that_inflates_to_nothing_stops_at_the_cap() -> None:
    """Empty stored deflate blocks (5 bytes each, no output) for as long as the server likes:
    the bytes read count against the cap too."""
    endless = b"\x78\x9c" + b"\x00\x00\x00\xff\xff" * 300_000
    c, _ = client(_encoded(endless, "deflate"), max_response_bytes=1_000_000)
    with pytest.raises(ApiError, match="response exceeds 1000000 bytes"):
        all_history(c)


@pytest.mark.parametrize(("status", "said"), [(200, "on svc.test: "), (500, "on svc.test → 500: ")])
def test_an_answer_too_long_names_the_host_and_a_failing_status(status: int, said: str) -> None:
    """A compression bomb behind a 500 (tester T19) was `GET … response exceeds N bytes`: which
    of the two services (base and app address) sent it, and that it was an error page, was
    not said; every other network error names both."""
    bomb = gzip.compress(b" " * 2_000_000)

    def handle(request: httpx.Request) -> httpx.Response:
        headers = {"content-type": "application/json", "content-encoding": "gzip"}
        return httpx.Response(status, content=iter([bomb]), headers=headers)

    c, _ = client(handle, max_response_bytes=1_000_000)
    with pytest.raises(ApiError) as info:
        all_history(c)
    assert f"{HISTORY_PATH}?limit=" in str(info.value)
    assert f"{said}response exceeds 1000000 bytes" in str(info.value)


@pytest.mark.parametrize(
    ("code", "message", "said"),
    [
        (62, "Hostname mismatch, certificate is not valid for 'localhost'.", "not valid here"),
        (10, "certificate has expired", "not valid here"),
        (20, "unable to get local issuer certificate", "not accepted by the CA bundle ca.pem"),
    ],
)
def test_a_certificate_for_another_host_or_expired_does_not_blame_the_ca_bundle(
    code: int, message: str, said: str
) -> None:
    """A wrong host name or an expired certificate, whose chain the bundle accepts, read
    `certificate not accepted by the CA bundle …` (tester T19): the user rebuilt the bundle,
    which cannot help. Only a chain the bundle does not trust names it."""
    from auditor.fetch.deadline import Network
    from auditor.fetch.retry import _fatal_reason

    error = ssl.SSLCertVerificationError(1, message)
    error.verify_code, error.verify_message = code, message
    network = Network(ca_pem="pem", ca_shown="ca.pem")
    assert _fatal_reason(error, network) == f"TLS failure: certificate {said} ({message})"


def test_an_ipv6_host_is_named_in_brackets() -> None:
    """`on ::1:18999` read as one IPv6 address (tester T19): the port is told apart as an
    address writes it, `[::1]:18999`."""
    from auditor.fetch.retry import _host

    assert _host(httpx.Request("GET", "http://[::1]:18999/x")) == "[::1]:18999"
    assert _host(httpx.Request("GET", "https://[2001:db8::1]/x")) == "[2001:db8::1]"
    assert _host(httpx.Request("GET", "http://127.0.0.1:8080/x")) == "127.0.0.1:8080"


def test_no_file_descriptor_left_is_not_retried_as_a_network_fault() -> None:
    """`ulimit -n` reached (tester T18: `[Errno 24] Too many open files` while connecting) was
    retried as a network failure for 51 s; it is this machine's limit: said at once."""

    def handle(request: httpx.Request) -> httpx.Response:
        try:
            raise OSError(errno.EMFILE, "Too many open files")
        except OSError as exc:
            raise httpx.ConnectError("[Errno 24] Too many open files", request=request) from exc

    c, sleeps = client(handle)
    with pytest.raises(ApiError) as info:
        all_history(c)
    assert "this process has no file descriptor left (Too many open files): raise the limit " \
        "(`ulimit -n`)" in str(info.value)  # fmt: skip
    assert "not retried" in str(info.value) and sleeps == []


def test_no_memory_to_parse_a_page_is_not_called_invalid_json(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """orjson's `Not enough memory to allocate buffer for parsing` (a tight `ulimit -v`, tester
    T18) read as `invalid JSON` from the service: it is this machine's MemoryError."""

    def refuse(_body: bytes) -> Any:
        raise orjson.JSONDecodeError("Not enough memory to allocate buffer for parsing", "", 0)

    monkeypatch.setattr("auditor.fetch.retry.loads", refuse)
    monkeypatch.setattr("auditor.fetch.pieces.ENABLED", False)
    c, _ = client(_body({"changes": [change(1)], "pagination": {"hasMore": False}}))
    with pytest.raises(MemoryError) as info:
        all_history(c)
    assert "invalid JSON" not in str(info.value) and "Not enough memory" in str(info.value)


_CODERS: dict[str, Callable[[bytes], bytes]] = {
    "gzip": gzip.compress,
    "deflate": zlib.compress,
    "raw-deflate": lambda p: zlib.compress(p, wbits=-15),
}


@settings(max_examples=300, deadline=None)
@given(
    st.binary(max_size=300),
    st.sampled_from(sorted(_CODERS)),
    st.lists(st.integers(0, 400), max_size=4),
    st.one_of(st.none(), st.integers(0, 10**6)),
)
def test_inflater_reads_any_split_and_refuses_any_damage_as_one_of_its_errors(
    payload: bytes, coder: str, cuts: list[int], flip: int | None
) -> None:
    """Any split of valid data reads back exactly; damaged data is NotDecodable or TooLarge
    (never another exception, never more than the cap)."""
    data = bytearray(_CODERS[coder](payload))
    if flip is not None:
        data[flip % len(data)] ^= 1 + flip % 255
    bounds = [0, *sorted(c % (len(data) + 1) for c in cuts), len(data)]
    inflater = inflate.Inflater("gzip" if coder == "gzip" else "deflate", 1000)
    try:
        out = b"".join(inflater.feed(bytes(data[a:b])) for a, b in itertools.pairwise(bounds))
        out += inflater.finish()
    except (inflate.NotDecodable, inflate.TooLarge):
        assert flip is not None or len(payload) > 1000
        return
    assert len(out) <= 1000
    if flip is None:
        assert out == payload


def test_a_body_of_many_gzip_members_is_refused() -> None:
    """3 million empty members fit in 64 MiB, each a new decoder and a copy of what follows."""
    c, _ = client(_encoded(gzip.compress(b"") * 1001 + _GZ, "gzip"))
    with pytest.raises(ApiError, match="→ 200: the body is more than 1,000 gzip members"):
        all_history(c)


def test_concatenated_gzip_members_count_against_the_cap_together() -> None:
    member = gzip.compress(b" " * 600_000)
    c, _ = client(_encoded(member * 2, "gzip"), max_response_bytes=1_000_000)
    with pytest.raises(ApiError, match="response exceeds 1000000 bytes"):
        all_history(c)


@pytest.mark.parametrize(
    ("status", "location", "shown"),
    [
        pytest.param(
            302,
            "https://elsewhere.test/h?key=sk-query-secret",
            "→ 302 Found: redirects to https://elsewhere.test/h; auditor does not follow",
            id="other-host",
        ),
        pytest.param(
            301, "/moved", f"→ 301 Moved Permanently: redirects to {BASE}/moved;", id="relative"
        ),
        pytest.param(304, "", "→ 304 Not Modified (GET", id="not-modified"),
        pytest.param(  # the path as decoded read '/h?key=sk-query-secret', a query shown
            307,
            "https://elsewhere.test/h%3Fkey%3Dsk-query-secret?x=1",
            "→ 307 Temporary Redirect: redirects to https://elsewhere.test/h; auditor",
            id="encoded-query",
        ),
        pytest.param(
            308,
            "/h%23key=sk-query-secret",
            f"→ 308 Permanent Redirect: redirects to {BASE}/h; auditor",
            id="encoded-fragment",
        ),
        pytest.param(  # httpx made the request it would follow: an internal error, no report
            302, "about:blank", "→ 302 Found: redirects to about:blank; auditor", id="about-blank"
        ),
        pytest.param(302, "urn:ietf:x", "→ 302 Found: redirects to urn:ietf:x;", id="urn"),
        pytest.param(  # the token's marker took the host's end and the rest (tester T19)
            302,
            "https://other.example.com/ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789/v1",
            "redirects to https://other.example.com/<not shown: looks like a secret>/v1;",
            id="token-in-path",
        ),
        pytest.param(  # a protocol error, retried for 40 s
            302,
            "http://[::1/x",
            "→ 302 Found: redirects to an address that is not a valid URL; auditor",
            id="unbalanced-bracket",
        ),
        pytest.param(  # decoded, the one-line error had a line break and a terminal escape
            303,
            "/x%0Aauditor: sync ok%1B[2K",
            f"→ 303 See Other: redirects to {BASE}/x%0Aauditor: sync ok%1B[2K; auditor",
            id="control-characters",
        ),
    ],
)
def test_a_redirect_is_an_error_even_with_a_page_in_its_body(
    status: int, location: str, shown: str
) -> None:
    """A 3xx was read as the page when its body was JSON, and was 'invalid JSON' otherwise."""
    page = orjson.dumps({"changes": [change(1)], "pagination": {"hasMore": False}})
    headers = {"content-type": "application/json", "location": location}
    rec = Recorder(lambda request: httpx.Response(status, content=page, headers=headers))
    c, _ = client(rec)
    with pytest.raises(ApiError) as info:
        all_history(c)
    assert shown in str(info.value) and f"{BASE}{HISTORY_PATH} page 1" in str(info.value)
    assert "sk-query-secret" not in str(info.value)
    assert [r.url.host for r in rec.requests] == ["svc.test"]  # never followed


def test_a_page_of_too_many_values_is_refused_before_it_is_parsed() -> None:
    """10 million zeros in one revision's settings (20 MB, under the 64 MiB cap) took 16 s and
    2.9 GB of memory to sync."""
    wide = b'{"changes": [{"revision": 1, "settings": {"x": [' + b"0," * 1_000_000 + b"0]}}]}"
    rec = Recorder(_body(wide))
    c, _ = client(rec)
    with pytest.raises(DataError) as info:
        all_history(c)
    assert str(info.value).startswith(
        "$: about 1000007 values in one response, more than the 1000000 allowed for API data "
        f"(GET {BASE}{HISTORY_PATH} page 1: GET "
    )
    # asked again with fewer items a page, down to one, before giving up
    assert [r.url.params["limit"] for r in rec.requests] == ["10", "5", "2", "1"]


def test_a_page_too_wide_is_asked_for_again_with_fewer_items() -> None:
    """Long allowlists (150,000 values a revision) made a page of 10 too wide: the sync failed
    every night until page_size was lowered by hand. The same page is now asked for again,
    half as long, and the rest of the listing keeps that size."""
    wide = [0] * 150_000
    inner = history(12)

    def handle(request: httpx.Request) -> httpx.Response:
        body = orjson.loads(inner(request).content)
        for item in body["changes"]:
            item["settings"]["allowlist"] = wide
        return httpx.Response(200, json=body)

    rec = Recorder(handle)
    c, _ = client(rec)
    assert all_history(c) == list(range(12, 0, -1))
    assert [(r.url.params["limit"], r.url.params.get("cursor")) for r in rec.requests] == [
        ("10", None), ("5", None), ("5", "c5"), ("5", "c10"),
    ]  # fmt: skip


@pytest.mark.parametrize("declared", [True, False], ids=["content-length", "streamed"])
def test_a_page_too_long_in_bytes_is_asked_for_again_with_fewer_items(declared: bool) -> None:
    """Allowlists of long entries pass the byte cap before the value limit (5,000 entries of
    150 bytes a revision: 77 MB at page_size 100, 500,000 values): every sync failed with
    'response of 76819599 bytes exceeds 67108864'. Now the page is asked for again, half as
    long, as a page of too many values is; an error page that long is not."""
    inner = history(12)

    def handle(request: httpx.Request) -> httpx.Response:
        body = orjson.loads(inner(request).content)
        for item in body["changes"]:
            item["settings"]["allowlist"] = "x" * 150_000
        data = orjson.dumps(body)
        headers = {"content-type": "application/json"}
        if declared:
            return httpx.Response(200, content=data, headers=headers)
        return httpx.Response(200, content=iter([data]), headers=headers)

    rec = Recorder(handle)
    c, _ = client(rec, max_response_bytes=1_000_000)
    assert all_history(c) == list(range(12, 0, -1))
    assert [(r.url.params["limit"], r.url.params.get("cursor")) for r in rec.requests] == [
        ("10", None), ("5", None), ("5", "c5"), ("5", "c10"),
    ]  # fmt: skip


def test_an_error_page_too_long_is_not_asked_for_again() -> None:
    big = b"x" * 2_000_000
    rec = Recorder(
        lambda r: httpx.Response(404, content=big, headers={"content-type": "text/plain"})
    )
    c, _ = client(rec, max_response_bytes=1_000_000)
    with pytest.raises(ApiError, match="response of 2000000 bytes exceeds 1000000"):
        all_history(c)
    assert [r.url.params["limit"] for r in rec.requests] == ["10"]


def test_readiness_pages_too_wide_shrink_and_still_end() -> None:
    """Readiness paging ends on an empty page, after pages shrunk to half the size asked."""
    reports = [
        {"reportId": f"r{i:02d}", "createdAt": 1_700_000_000_000, "repoUrl": f"https://g/{i}",
         "report": {"wide": {"numerator": 1, "denominator": 1, "extra": [0] * 150_000}}}
        for i in range(7)
    ]  # fmt: skip

    def handle(request: httpx.Request) -> httpx.Response:
        limit = int(request.url.params["limit"])
        after = request.url.params.get("startAfter")
        start = 0 if after is None else int(after[1:]) + 1
        return httpx.Response(200, json={"reports": reports[start : start + limit]})

    rec = Recorder(handle)
    c, _ = client(rec)
    got = [r["reportId"] for page in c.iter_reports_pages() for r in page]
    assert got == [f"r{i:02d}" for i in range(7)]
    assert [r.url.params["limit"] for r in rec.requests] == ["10", "5", "5", "5"]


def test_a_long_content_type_is_named_cut() -> None:
    """A 16 KB Content-Type made a 16 KB "one line" error, as a long Content-Encoding did."""
    c, _ = client(_body(b"<html></html>", "text/html; x=" + "y" * 16_000))
    with pytest.raises(ApiError) as info:
        all_history(c)
    message = str(info.value)
    assert (
        f"→ 200: expected JSON, got text/html; x={'y' * 27}… (15973 more characters) (" in message
    )
    assert len(message) < 400


def test_commas_inside_strings_are_not_values() -> None:
    text = "a, " * 1_000_000
    page = {"changes": [change(1, note=text)], "pagination": {"hasMore": False}}
    c, _ = client(_body(page))
    assert all_history(c) == [1]
    assert 0 < shape.count_values(orjson.dumps(page)) < 100


def test_readiness_schema_error_names_path_and_url() -> None:
    bad = {"reports": [{"reportId": "r1", "createdAt": True, "repoUrl": "x", "report": {}}]}
    c, _ = client(_body(bad))
    with pytest.raises(DataError) as info:
        list(c.iter_reports_pages())
    assert str(info.value) == (
        "$.reports[0].createdAt: expected number or string, got boolean "
        f"(GET {APP}{REPORTS_PATH} page 1)"
    )


def test_client_is_a_context_manager() -> None:
    c, _ = client(history(1))
    with c as same:
        assert all_history(same) == [1]


# --- schema validation: the fast check agrees with jsonschema --------------------------------

HIST = "api-history.schema.json"
READY = "api-readiness.schema.json"
DELETE = object()


def _oracle(name: str) -> Any:
    schema = orjson.loads(resources.files("auditor.schemas").joinpath(name).read_bytes())
    return jsonschema.Draft202012Validator(schema)


def _report(rid: str) -> dict[str, Any]:
    return {
        "reportId": rid,
        "createdAt": 1_790_000_000_000.5,
        "repoUrl": f"https://g/{rid}",
        "apps": {"web": {"description": "x"}},
        "report": {
            "lint": {"numerator": 1, "denominator": 2, "rationale": "half"},
            "odd key": {"numerator": None, "denominator": 1.5, "rationale": None, "new": [1]},
        },
        "commitHash": None,
        "branch": "main",
        "hasLocalChanges": False,
        "hasNonRemoteCommits": None,
        "modelUsed": {"id": "m"},
        "agentVersion": "1.2",
        "unknownField": {"kept": True},
    }


PAGES = {
    HIST: {
        "changes": [change(2), change(1)],
        "pagination": {"hasMore": False, "nextCursor": None},
    },
    READY: {"reports": [_report("r1"), _report("r2")]},
}


def _mutate(name: str, path: str | tuple[str | int, ...], value: Any) -> Any:
    """The valid page with the value at `path` ("reports/0/report") replaced or deleted."""
    if isinstance(path, str):
        path = tuple(int(p) if p.isdigit() else p for p in path.split("/") if p)
    page = copy.deepcopy(PAGES[name])
    if not path:
        return value
    *parents, last = path
    target: Any = page
    for part in parents:
        target = target[part]
    if value is DELETE:
        del target[last]
    else:
        target[last] = value
    return page


def test_shipped_schemas_compile_to_a_fast_check() -> None:
    """Every page and item schema of the API (history, readiness, analytics): a valid item
    needs no jsonschema walk (analytics rows were all walked, 0.2 s of a nightly sync)."""
    names = [
        p.name
        for p in resources.files("auditor.schemas").iterdir()
        if p.name.startswith("api-") and p.name.endswith(".schema.json")
    ]
    assert len(names) >= 10
    for name in names:
        schema = orjson.loads(resources.files("auditor.schemas").joinpath(name).read_bytes())
        assert compile_check(schema) is not None, name


@pytest.mark.parametrize(
    ("schema", "values"),
    [
        ({"type": "number", "minimum": 0, "maximum": 1}, [0, 1, 0.5, -0.1, 1.01, 2, True, "1"]),
        ({"maximum": 3}, [3, 4, 2.9, "x", None, [5]]),
        ({"enum": ["a", "b"]}, ["a", "b", "c", "", 1, None, True, ["a"]]),
        ({"type": "string", "enum": ["a", "bb"], "minLength": 2}, ["a", "bb", "c", 1]),
        ({"type": ["integer", "null"], "enum": ["a"]}, ["a", 1, None]),
    ],
    ids=["range", "maximum-untyped", "enum", "enum-minlength", "enum-wrong-type"],
)
def test_fast_check_of_maximum_and_enum_never_accepts_what_jsonschema_rejects(
    schema: dict[str, Any], values: list[Any]
) -> None:
    check = compile_check(schema)
    assert check is not None
    oracle = jsonschema.validators.validator_for(schema)(schema)
    assert [check(v) for v in values] == [oracle.is_valid(v) for v in values]


def test_unsupported_enum_values_leave_the_work_to_jsonschema() -> None:
    assert compile_check({"enum": [1, "a"]}) is None
    assert compile_check({"maximum": "3"}) is None


@pytest.mark.parametrize(
    "schema",
    [{"type": "string", "pattern": "^a"}, {"properties": {"a": {"format": "email"}}}, []],
    ids=["pattern", "nested-format", "not-a-schema"],
)
def test_unknown_keywords_leave_the_work_to_jsonschema(schema: Any) -> None:
    assert compile_check(schema) is None


@pytest.fixture(scope="module")
def emulator_pages() -> list[tuple[str, Any]]:
    ds = generate_dataset(revisions=120, repos=30)
    hist = [
        (HIST, {"changes": ds.history[i : i + 25], "pagination": {"hasMore": True}})
        for i in range(0, len(ds.history), 25)
    ]
    ready = [(READY, {"reports": ds.reports[i : i + 25]}) for i in range(0, 90, 25)]
    return hist + ready


def test_valid_emulator_pages_pass_without_the_jsonschema_walk(
    emulator_pages: list[tuple[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert all(_oracle(name).is_valid(page) for name, page in emulator_pages)

    def walk(name: str) -> Any:
        raise AssertionError(f"jsonschema walked a valid {name} page")

    monkeypatch.setattr(fetch_schema, "_validator", walk)
    for name, page in emulator_pages:
        assert fast_check(name)(page)
        fetch_schema.validate(page, name, "GET x")


# fmt: off
# Odd values in optional fields are not page errors: see tests/test_tolerant_reader.py.
INVALID = [
    # id, page, path to change ("" = the whole body), new value or DELETE, message
    ("hist-body-array", HIST, "", [],
     "$: expected object, got array"),
    ("hist-no-changes", HIST, "changes", DELETE,
     "$: missing required key 'changes'"),
    ("hist-no-pagination", HIST, "pagination", DELETE,
     "$: missing required key 'pagination'"),
    ("changes-object", HIST, "changes", {},
     "$.changes: expected array, got object"),
    ("change-string", HIST, "changes/1", 'x',
     "$.changes[1]: expected object, got string"),
    ("revision-missing", HIST, "changes/1/revision", DELETE,
     "$.changes[1]: missing required key 'revision'"),
    ("revision-negative", HIST, "changes/0/revision", -1,
     "$.changes[0].revision: fails minimum 0"),
    ("revision-fraction", HIST, "changes/0/revision", 1.5,
     "$.changes[0].revision: expected integer, got number"),
    ("revision-bool", HIST, "changes/0/revision", True,
     "$.changes[0].revision: expected integer, got boolean"),
    ("revision-string", HIST, "changes/0/revision", '3',
     "$.changes[0].revision: expected integer, got string"),
    ("settings-list", HIST, "changes/0/settings", [],
     "$.changes[0].settings: expected object, got array"),
    ("settings-null", HIST, "changes/1/settings", None,
     "$.changes[1].settings: expected object, got null"),
    ("updated-empty", HIST, "changes/0/updatedAt", '',
     "$.changes[0].updatedAt: fails minLength 1"),
    ("has-more-string", HIST, "pagination/hasMore", 'yes',
     "$.pagination.hasMore: expected boolean, got string"),
    ("cursor-int", HIST, "pagination/nextCursor", 3,
     "$.pagination.nextCursor: expected string or null, got integer"),
    ("ready-body-null", READY, "", None,
     "$: expected object, got null"),
    ("no-reports", READY, "reports", DELETE,
     "$: missing required key 'reports'"),
    ("reports-string", READY, "reports", '[]',
     "$.reports: expected array, got string"),
    ("report-list", READY, "reports/1", [],
     "$.reports[1]: expected object, got array"),
    ("report-id-missing", READY, "reports/0/reportId", DELETE,
     "$.reports[0]: missing required key 'reportId'"),
    ("report-id-empty", READY, "reports/0/reportId", '',
     "$.reports[0].reportId: fails minLength 1"),
    ("created-bool", READY, "reports/0/createdAt", False,
     "$.reports[0].createdAt: expected number or string, got boolean"),
    ("repo-url-missing", READY, "reports/1/repoUrl", DELETE,
     "$.reports[1]: missing required key 'repoUrl'"),
    ("report-missing", READY, "reports/0/report", DELETE,
     "$.reports[0]: missing required key 'report'"),
    ("report-string", READY, "reports/0/report", 'ok',
     "$.reports[0].report: expected object, got string"),
    ("criterion-number", READY, "reports/1/report/lint", 3,
     "$.reports[1].report.lint: expected object, got integer"),
    ("denominator-missing", READY, "reports/1/report/odd key/denominator", DELETE,
     "$.reports[1].report['odd key']: missing required key 'denominator'"),
    ("denominator-null", READY, "reports/0/report/lint/denominator", None,
     "$.reports[0].report.lint.denominator: expected number, got null"),
    ("numerator-string", READY, "reports/0/report/lint/numerator", '1',
     "$.reports[0].report.lint.numerator: expected number or null, got string"),
    ("numerator-bool", READY, "reports/0/report/lint/numerator", True,
     "$.reports[0].report.lint.numerator: expected number or null, got boolean"),
]

VALID_EDGES = [
    ("revision-integral-float", HIST, "changes/0/revision", 2.0),
    ("cursor-missing", HIST, "pagination/nextCursor", DELETE),
    ("user-extra", HIST, "changes/0/user/role", 'admin'),
    ("no-changes", HIST, "changes", []),
    ("no-reports", READY, "reports", []),
    ("empty-report", READY, "reports/0/report", {}),
    ("numerator-missing", READY, "reports/0/report/lint/numerator", DELETE),
    ("huge-number", READY, "reports/0/createdAt", 1000000000000000000000000000000),
]
# fmt: on


@pytest.mark.parametrize(
    ("name", "path", "value", "message"), [pytest.param(*c[1:], id=c[0]) for c in INVALID]
)
def test_invalid_pages_fail_fast_and_are_explained_by_jsonschema(
    name: str, path: str, value: Any, message: str
) -> None:
    page = _mutate(name, path, value)
    assert not fast_check(name)(page)
    assert not _oracle(name).is_valid(page)
    with pytest.raises(DataError) as info:
        fetch_schema.validate(page, name, "GET x")
    assert str(info.value) == f"{message} (GET x)"


@pytest.mark.parametrize(
    ("name", "path", "value"), [pytest.param(*c[1:], id=c[0]) for c in VALID_EDGES]
)
def test_edge_cases_jsonschema_accepts_are_accepted(name: str, path: str, value: Any) -> None:
    page = _mutate(name, path, value)
    assert _oracle(name).is_valid(page)
    fetch_schema.validate(page, name, "GET x")


def _slots(value: Any, path: tuple[str | int, ...] = ()) -> list[tuple[str | int, ...]]:
    """Every path in a page, containers and leaves alike."""
    found = [path]
    if isinstance(value, dict):
        for key, item in value.items():
            found += _slots(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _slots(item, (*path, index))
    return found


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-3, 3)
    | st.floats(allow_nan=False)
    | st.text(max_size=2),
    lambda inner: (
        st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=3), inner, max_size=2)
    ),
    max_leaves=4,
)


@settings(max_examples=300, deadline=None)
@given(
    name=st.sampled_from([HIST, READY]),
    pick=st.integers(min_value=0),
    value=JSON_VALUES | st.just(DELETE),
)
def test_fast_check_never_accepts_what_jsonschema_rejects(name: str, pick: int, value: Any) -> None:
    slots = _slots(PAGES[name])
    path = slots[pick % len(slots)]
    if value is DELETE and not path:
        value = {}
    if value is DELETE and isinstance(path[-1], int):
        value = None
    page = _mutate(name, path, value)
    valid = _oracle(name).is_valid(page)
    if fast_check(name)(page):
        assert valid
    try:
        fetch_schema.validate(page, name, "GET x")
    except DataError:
        assert not valid
    else:
        assert valid


def test_malformed_request_is_not_retried() -> None:
    calls: list[httpx.Request] = []

    def refuse(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        raise httpx.LocalProtocolError("illegal header value")

    c, sleeps = client(refuse)
    with pytest.raises(ApiError, match="could not be sent: LocalProtocolError"):
        all_history(c)
    assert (len(calls), sleeps) == (1, [])


# -- the next page fetched ahead, and the shape checks on raw bytes ----------------------------


def _wait_for(predicate: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 10
    while not predicate():
        assert time.monotonic() < deadline, "the page asked for ahead was never requested"
        time.sleep(0.01)


def test_next_page_is_requested_only_when_asked_and_arrives_in_order() -> None:
    recorder = Recorder(history(25))
    c, _ = client(recorder)
    pages = c.pages(HISTORY)
    first = next(pages)
    assert len(recorder.requests) == 1  # nothing fetched ahead unless asked
    pages.ahead()
    _wait_for(lambda: len(recorder.requests) == 2)  # sent before the caller asks for it
    rest = [first, *pages]
    assert [ch["revision"] for page in rest for ch in page.items] == list(range(25, 0, -1))
    assert len(recorder.requests) == 3


def test_failure_of_a_page_fetched_ahead_is_raised_where_that_page_is_taken() -> None:
    fail = httpx.Response(400, json={"title": "Bad Request", "status": 400})
    recorder = Recorder(history(25), faults=[lambda r: history(25)(r), fail])
    c, _ = client(recorder)
    pages = c.pages(HISTORY)
    next(pages)
    pages.ahead()
    _wait_for(lambda: len(recorder.requests) == 2)
    time.sleep(0.05)  # the failed fetch has finished; nothing is raised until the page is taken
    with pytest.raises(ApiError, match="400"):
        next(pages)


_TRICKY_TEXT = st.text(alphabet='[]{}"\\:,ab\u00e9', max_size=8)
_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | _TRICKY_TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TRICKY_TEXT, inner, max_size=3),
    max_leaves=40,
)


@given(_JSON_VALUES, st.integers(min_value=0, max_value=8), st.booleans())
@settings(max_examples=300, deadline=None)
def test_depth_check_on_bytes_agrees_with_the_parsed_value(
    value: Any, limit: int, spaced: bool
) -> None:
    body = json.dumps(value, indent=1 if spaced else None).encode()
    assert shape.deeper_than(body, limit) == (_depth(value) > limit)


def _with_duplicate(value: Any) -> tuple[bytes, bool]:
    """`value` as JSON text, with a key sent twice in its first non-empty object (if any)."""
    text = json.dumps(value)
    for start in range(len(text)):
        try:
            obj, _ = json.JSONDecoder().raw_decode(text, start)
        except ValueError:
            continue
        if isinstance(obj, dict) and obj and text[start] == "{":
            key = json.dumps(next(iter(obj)))
            return (text[:start] + "{" + key + ': "again", ' + text[start + 1 :]).encode(), True
    return text.encode(), False


@given(_JSON_VALUES, st.booleans())
@settings(max_examples=300, deadline=None)
def test_one_pass_shape_check_agrees_with_the_two_checks(value: Any, doubled: bool) -> None:
    body = _with_duplicate(value)[0] if doubled else json.dumps(value).encode()
    parsed = orjson.loads(body)
    expected = shape.duplicates(body, parsed) + shape.inexact_integers(body, parsed)
    if shape.deeper_than(body):
        with pytest.raises(DataError, match="nested deeper"):
            shape.check_shape(body, parsed, "GET x")
    else:
        assert shape.check_shape(body, parsed, "GET x") == expected
    if doubled and _with_duplicate(value)[1]:
        assert expected  # the key sent twice is found


def _compact(value: Any) -> bytes:
    """`value` as orjson writes it; as `json` writes it without spaces when orjson cannot
    (an integer beyond 64 bits), in ASCII when the text cannot be UTF-8 (a lone surrogate)."""
    try:
        return orjson.dumps(value)
    except TypeError:
        pass
    try:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()
    except UnicodeEncodeError:
        return json.dumps(value, separators=(",", ":")).encode()


@given(_JSON_VALUES, st.booleans())
@settings(max_examples=300, deadline=None)
def test_a_body_written_as_orjson_writes_it_gets_the_same_shape_check(
    value: Any, doubled: bool
) -> None:
    # Such a body is recognised by writing the parsed value back (a page of the service
    # usually is one): what the full checks find there must still be found.
    inner = _compact(value)
    body = b'{"k":"again","k":' + inner + b"}" if doubled else inner
    parsed = orjson.loads(body)
    expected = shape.duplicates(body, parsed) + shape.inexact_integers(body, parsed)
    if shape.deeper_than(body):
        with pytest.raises(DataError, match="nested deeper"):
            shape.check_shape(body, parsed, "GET x")
        return
    assert shape.check_shape(body, parsed, "GET x") == expected
    if doubled:
        assert shape.Duplicate((), "k") in expected


def test_a_compact_body_with_a_key_twice_or_a_wide_integer_is_still_reported() -> None:
    wide = 2**64 + 1
    body = b'{"a":{"x":1,"x":2},"n":' + str(wide).encode() + b"}"
    found = shape.check_shape(body, orjson.loads(body), "GET x")
    assert shape.Duplicate(("a",), "x") in found
    assert [d.path for d in found if d.problem] == [("n",)]
    assert shape.check_shape(b'{"a":{"x":2},"n":1}', {"a": {"x": 2}, "n": 1}, "GET x") == ()


def test_a_page_fetched_ahead_too_wide_is_asked_again_smaller_and_none_is_left_pending() -> None:
    """Page 2 was asked for ahead at the old size and came back too wide: it is asked for again
    at half the size (same cursor), every later page (fetched ahead too) at that size, and every
    revision arrives once, in order."""
    inner = history(25)

    def handle(request: httpx.Request) -> httpx.Response:
        body = orjson.loads(inner(request).content)
        for item in body["changes"]:
            if item["revision"] <= 15:  # the older revisions carry long allowlists
                item["settings"]["allowlist"] = [0] * 150_000
        return httpx.Response(200, json=body)

    rec = Recorder(handle)
    c, _ = client(rec)
    pages = c.pages(HISTORY)
    got: list[int] = []
    for page in pages:
        got += [ch["revision"] for ch in page.items]
        pages.ahead()
    assert got == list(range(25, 0, -1))
    assert [(r.url.params["limit"], r.url.params.get("cursor")) for r in rec.requests] == [
        ("10", None), ("10", "c10"), ("5", "c10"), ("5", "c15"), ("5", "c20"),
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("problem", "said"),
    [
        pytest.param(
            {"title": {"x": ["a", "a"]}, "detail": ["\n\n", "line2\rline3\x1b[31mred"]},
            '→ 500 Internal Server Error: ["\\n\\n","line2\\rline3\\u001b[31mred"]',
            id="object-title-list-detail",
        ),
        pytest.param(
            {"title": 7, "detail": {"why": "busy"}},
            '→ 500 Internal Server Error: {"why":"busy"}',
            id="number-title",
        ),
        pytest.param({"title": "Oops", "detail": "plain"}, "→ 500 Oops: plain", id="strings"),
    ],
)
def test_a_problem_title_or_detail_that_is_no_string_is_never_a_python_repr(
    problem: dict[str, Any], said: str
) -> None:
    """A title that is an object was printed as Python writes it (`{'x': ['a', 'a']}`): it is
    absent (the status's phrase stands in); a detail that is no string is compact JSON."""
    from auditor.fetch.retry import problem_message

    body = json.dumps(problem).encode()
    assert problem_message(httpx.Response(500), body, lambda text: text) == said


def test_a_body_sent_in_tiny_chunks_stops_at_the_cap_in_memory_too() -> None:
    """A server sending 2-byte HTTP chunks: each was kept as its own bytes object (~40 bytes
    of memory per byte sent), so a sync reached 310 MB before the 64 MiB cap stopped it."""

    def chunks() -> Any:
        yield b"["
        while True:
            yield bytes((32, 32))  # a new object each, as off the network

    def handle(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=chunks(), headers={"content-type": "application/json"})

    c, _ = client(handle, max_response_bytes=200_000)
    tracemalloc.start()
    try:
        with pytest.raises(ApiError, match="response exceeds 200000 bytes"):
            all_history(c)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 3_000_000  # 1.6 MB now (the client's own included), 5.7 MB before


def _fresh_cursors(size: int, pages: int, *, repeat_at: int | None = None) -> Handler:
    """A history of one revision a page, each page with a fresh cursor of `size` characters
    (page `repeat_at` sends the first page's cursor again)."""

    def handle(request: httpx.Request) -> httpx.Response:
        cursor = request.url.params.get("cursor", "")
        i = int(cursor.split("-", 1)[0]) if cursor else 0
        more = i + 1 < pages
        nxt = f"{1 if i + 1 == repeat_at else i + 1}-" + "x" * size
        body = {"changes": [change(10_000 - i)], "pagination": {"hasMore": more}}
        if more:
            body["pagination"]["nextCursor"] = nxt
        return httpx.Response(200, json=body)

    return handle


def test_cursors_seen_are_not_kept_whole() -> None:
    """The repeated-cursor guard kept every cursor sent: fresh 60 KB cursors took ~1 GB at
    the default `max_pages`; and each answer's request (its URL holding the cursor) waited
    for the cyclic collector, which a sync runs seldom (`few_collections`). What is kept no
    longer grows with a cursor's length."""
    c, _ = client(_fresh_cursors(60_000, 150), page_size=1)
    pages = c.pages(HISTORY)
    gc.collect()
    gc.disable()
    tracemalloc.start()
    try:
        for _page in pages:
            pass
        urllib.parse.urlsplit.cache_clear()  # httpx's cookie jar parses each URL: 128 kept
        current, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        gc.enable()
    assert current < 2_000_000  # 150 cursors of 60 KB: 9 MB kept, 18 MB more in cycles


def test_a_long_repeated_cursor_is_refused_without_being_echoed() -> None:
    c, _ = client(_fresh_cursors(60_000, 10, repeat_at=4), page_size=1)
    with pytest.raises(DataError) as info:
        all_history(c)
    message = str(info.value)
    assert "repeated an earlier cursor; paging would loop" in message
    assert len(message) < 400 and "xxxxx" not in message


def test_a_long_cursor_is_cut_in_an_error_naming_the_request() -> None:
    """A 60 KB cursor followed by a 500 made a 60 KB error line (the request's query)."""

    def handle(request: httpx.Request) -> httpx.Response:
        if "cursor" in request.url.params:
            return httpx.Response(500, json={"title": "Internal", "detail": "boom"})
        return _fresh_cursors(60_000, 5)(request)

    c, _ = client(handle, page_size=1)
    with pytest.raises(ApiError) as info:
        all_history(c)
    message = str(info.value)
    assert message.startswith(f"GET {HISTORY_PATH}?limit=1&cursor=1-xxx")
    assert message.endswith(" more characters) → 500 Internal: boom")
    assert len(message) < 500


def test_one_attempt_is_said_in_the_singular() -> None:
    busy = _problem(429, "Too Many", **{"Retry-After": "45"})
    c, _ = client(Recorder(history(3), [busy]), deadline=30, clock=lambda: 0.0)
    with pytest.raises(ApiError) as info:
        all_history(c)
    assert "; gave up after 1 attempt in 0.0s: the sync's deadline of 30s" in str(info.value)


def test_an_empty_history_page_with_a_new_cursor_is_followed() -> None:
    """T15 #5: a service that filters after paging sends an empty page that says `hasMore`
    with a new cursor; the next page holds the rest (was: `hasMore: true on an empty page`)."""
    pages = {
        None: ([3, 2], "a"),
        "a": ([], "b"),
        "b": ([], "c"),
        "c": ([1], None),
    }

    def handle(request: httpx.Request) -> httpx.Response:
        revs, cursor = pages[request.url.params.get("cursor")]
        pagination = {"hasMore": cursor is not None, "nextCursor": cursor}
        return httpx.Response(
            200, json={"changes": [change(r) for r in revs], "pagination": pagination}
        )

    rec = Recorder(handle)
    c, _ = client(rec)
    assert all_history(c) == [3, 2, 1]
    assert [r.url.params.get("cursor") for r in rec.requests] == [None, "a", "b", "c"]


def test_readiness_pages_shorter_than_asked_go_on_to_an_empty_page() -> None:
    """T15 #1: `limit` is only "a positive integer"; a service that serves at most 4 reports a
    page (10 asked) is read to its empty page, not stopped after the first short one."""
    reports = [
        {"reportId": f"r{i:02d}", "createdAt": 1_700_000_000_000 - i, "repoUrl": f"https://g/{i}",
         "report": {"c": {"numerator": 1, "denominator": 1}}}
        for i in range(9)
    ]  # fmt: skip

    def handle(request: httpx.Request) -> httpx.Response:
        after = request.url.params.get("startAfter")
        start = 0 if after is None else int(after[1:]) + 1
        return httpx.Response(200, json={"reports": reports[start : start + 4]})

    rec = Recorder(handle)
    c, _ = client(rec)
    got = [r["reportId"] for page in c.iter_reports_pages() for r in page]
    assert got == [f"r{i:02d}" for i in range(9)]
    assert [r.url.params.get("startAfter") for r in rec.requests] == [None, "r03", "r07", "r08"]


@pytest.mark.parametrize("count", [0, 3, 10])
def test_a_service_that_ignores_start_after_ends_after_its_short_page(count: int) -> None:
    """A service that ignores `startAfter` sends its first page again to the request that
    confirms a short page's end: that answer ends the listing (its reports once), as the short
    page itself did before; a full page repeated is still a loop, refused."""
    reports = [
        {"reportId": f"r{i:02d}", "createdAt": 1_700_000_000_000 - i, "repoUrl": f"https://g/{i}",
         "report": {"c": {"numerator": 1, "denominator": 1}}}
        for i in range(count)
    ]  # fmt: skip

    def handle(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"reports": reports[:10]})

    rec = Recorder(handle)
    c, _ = client(rec)
    if count < 10:
        got = [r["reportId"] for page in c.iter_reports_pages() for r in page]
        assert got == [f"r{i:02d}" for i in range(count)]
        assert len(rec.requests) == (1 if count == 0 else 2)
        pages = c.pages(READINESS)
        list(pages)
        assert (pages.repeated_at is not None) == (count > 0)  # the sync's warning says so
    else:
        with pytest.raises(DataError, match=r"\$\.reports\[-1\]\.reportId: repeated 'r09'"):
            list(c.iter_reports_pages())
