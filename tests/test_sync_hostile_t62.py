"""T62's hostile service (findings LOW-2 to LOW-5), through the CLI against a real local server.

LOW-2: analytics that answer for only some days of the window gave one data-quality warning
per missing day (29 at `$.data`), though the same problem in one field is one warning with a
count; so did a problem naming what each item's value was read as (a Unix `updatedAt`).
LOW-3: a cursor (or last report id) too long for the next page's URL failed in httpx's words
(`URL component 'query' too long`), naming neither the JSON path nor the page.
LOW-4: the command's token in a redirect's `Location` showed as a `[secret fp:… len:39]` marker
that took the host's end or the port with it, so the line no longer said where to.
LOW-5: a UTF-8 byte order mark before a valid page failed the whole sync as invalid JSON.
"""

from __future__ import annotations

import base64
import re
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import orjson
import pytest

from tests.conftest import run_cli, serve_http

pytestmark = pytest.mark.e2e  # a server over HTTP, the CLI

TOKEN = "s3cr3tTOKENvalue_abcdef123456"  # the tester's: the redactor's marker took more with it
HISTORY = "/api/v0/organization/enterprise-controls/history"
REPORTS = "/app/api/organization/agent-readiness-reports"
ANALYTICS = "/api/v1/analytics"
BOM = b"\xef\xbb\xbf"
#: (status, headers, body) for a request's path and query.
Answer = Callable[[str, dict[str, str]], tuple[int, dict[str, str], bytes]]


def change(rev: int, updated: object = None) -> dict[str, Any]:
    return {
        "revision": rev,
        "settings": {"maxAutonomyLevel": "low"},
        "user": {"id": f"u{rev}", "email": f"u{rev}@example.com", "name": "U"},
        "updatedAt": updated if updated is not None else f"2026-10-{rev:02d}T10:00:00Z",
    }


def report(n: int, report_id: str = "") -> dict[str, Any]:
    return {
        "reportId": report_id or f"00000000-0000-4000-8000-{n:012d}",
        "createdAt": 1_790_000_000_000 + n,
        "repoUrl": f"https://github.com/acme/r{n}",
        "report": {"lint": {"numerator": 1, "denominator": 1, "rationale": "ok"}},
    }


def json_answer(value: object, prefix: bytes = b"") -> tuple[int, dict[str, str], bytes]:
    return 200, {"Content-Type": "application/json"}, prefix + orjson.dumps(value)


def history(*revisions: dict[str, Any], cursor: str | None = None) -> bytes:
    more = {"hasMore": True, "nextCursor": cursor} if cursor else {"hasMore": False}
    return orjson.dumps({"changes": list(revisions), "pagination": more})


def good(path: str, query: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
    """A small valid service: three revisions, one report, no analytics rows."""
    if path == HISTORY:
        return 200, {"Content-Type": "application/json"}, history(change(3), change(2), change(1))
    if path == REPORTS:
        return json_answer({"reports": [] if "startAfter" in query else [report(1)]})
    return json_answer({"data": [], "meta": {"has_more": False}})


class _Handler(BaseHTTPRequestHandler):
    answer: Answer = staticmethod(good)
    paths: list[str]

    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        query = {k: v[0] for k, v in parse_qs(parts.query).items()}
        type(self).paths.append(self.path)
        status, headers, body = type(self).answer(parts.path, query)
        self.send_response(status)
        for name, value in {**headers, "Content-Length": str(len(body))}.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextmanager
def service(answer: Answer) -> Iterator[tuple[str, list[str]]]:
    """The service answering with `answer` on a free loopback port: its address and the paths
    (with queries) it was asked for."""
    paths: list[str] = []
    handler = type("Handler", (_Handler,), {"answer": staticmethod(answer), "paths": paths})
    with contextmanager(serve_http)(handler) as url:
        yield url, paths


def sync(url: str, tmp: Path, *extra: str) -> tuple[int, str, str]:
    env = {
        "AUDITOR_TOKEN": TOKEN,
        "AUDITOR_BASE_URL": url,
        "AUDITOR_APP_URL": f"{url}/app",
        "AUDITOR_STATE": str(tmp / "state.db"),
    }
    (tmp / "auditor.toml").write_text("timeout = 5\ndeadline = 20\n")
    return run_cli(["sync", *extra, "--config", "auditor.toml"], env, tmp)


def warnings_of(out: str) -> int:
    """The number of data-quality warnings the sync's summary counts."""
    if "data-quality warning" not in out:
        return 0
    return int(out.split(" data-quality warning", 1)[0].rsplit(" ", 1)[1])


# --- LOW-2: one warning with a count -------------------------------------------------------


def test_days_an_analytics_series_leaves_out_are_one_warning_naming_their_count_and_ranges(
    tmp_path: Path,
) -> None:
    """Rows for 2026-10-02 and 2026-10-15 only, of the window 2026-10-02..2026-10-31: there were
    28 warnings at `$.data`, `no row for 2026-10-03; …` and one for each day after."""

    def answer(path: str, query: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        if path.startswith(ANALYTICS) and not path.endswith("/users"):
            days = [d for d in ("2026-10-02", "2026-10-15") if query["startDate"] <= d]
            return json_answer({"data": [{"date": d} for d in days], "meta": {}})
        return good(path, query)

    with service(answer) as (url, _):
        code, out, err = sync(url, tmp_path)
    assert code == 0, err
    assert "2 of 30 days stored" in out, out
    assert out.count("no row for") == 1, out
    assert (
        "$.data: no row for 28 days (2026-10-03..2026-10-14, 2026-10-16..2026-10-31); fetched "
        "again next sync (tokens, GET "
    ) in out, out
    assert "; 3 more items like it)" in out, out  # tools, activity, productivity
    assert warnings_of(out) == 1, out


def test_a_day_left_out_alone_is_named_as_before(tmp_path: Path) -> None:
    def answer(path: str, query: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        if path.startswith(ANALYTICS) and not path.endswith("/users"):
            days = [f"2026-10-{d:02d}" for d in range(2, 32) if d != 10]
            return json_answer({"data": [{"date": d} for d in days], "meta": {}})
        return good(path, query)

    with service(answer) as (url, _):
        code, out, err = sync(url, tmp_path)
    assert code == 0, err
    assert "$.data: no row for 2026-10-10; fetched again next sync (tokens" in out, out
    assert warnings_of(out) == 1, out


def test_many_ranges_of_days_left_out_are_named_up_to_five_and_counted(tmp_path: Path) -> None:
    def answer(path: str, query: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        if path.startswith(ANALYTICS) and not path.endswith("/users"):
            days = [f"2026-10-{d:02d}" for d in range(2, 32) if d % 2 == 0]
            return json_answer({"data": [{"date": d} for d in days], "meta": {}})
        return good(path, query)

    with service(answer) as (url, _):
        code, out, err = sync(url, tmp_path)
    assert code == 0, err
    assert (
        "no row for 15 days (2026-10-03, 2026-10-05, 2026-10-07, 2026-10-09, 2026-10-11 and "
        "10 more ranges); fetched again next sync"
    ) in out, out
    assert warnings_of(out) == 1, out


def test_unix_times_of_many_revisions_are_one_warning_with_a_count(tmp_path: Path) -> None:
    """Each warning named the time it read (`…; read as 2026-10-01T…`), so each revision's was
    a problem of its own: a page of 3 was 3 warnings on `$.changes[*].updatedAt`."""
    revisions = [change(r, 1_790_000_000 + r * 3600) for r in (3, 2, 1)]

    def answer(path: str, query: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        if path == HISTORY:
            return 200, {"Content-Type": "application/json"}, history(*revisions)
        return good(path, query)

    with service(answer) as (url, _):
        code, out, err = sync(url, tmp_path, "--no-usage")
    assert code == 0, err
    assert warnings_of(out) == 1, out
    assert "$.changes[0].updatedAt: a Unix time in seconds, not ISO 8601; read as 2026-" in out
    assert "(revision 3, GET " in out and "; 2 more items like it)" in out, out


# --- LOW-3: a token too long for the next page's URL ---------------------------------------


@pytest.mark.parametrize(
    ("cursor", "length"),
    [
        pytest.param("c" * 70_000, 70_000, id="ascii"),
        pytest.param("é" * 12_000, 12_000, id="percent-encoded"),  # 72,000 in the URL
    ],
)
def test_a_cursor_too_long_for_the_next_url_names_its_path_and_page(
    tmp_path: Path, cursor: str, length: int
) -> None:
    """It read `cannot request GET …/history page 2: its address is not a valid URL (URL
    component 'query' too long); the page before sent what goes into it`."""

    def answer(path: str, query: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        if path == HISTORY:
            return 200, {"Content-Type": "application/json"}, history(change(2), cursor=cursor)
        return good(path, query)

    with service(answer) as (url, paths):
        code, _, err = sync(url, tmp_path, "--no-usage")
    assert code == 2
    assert (
        f"$.pagination.nextCursor: {length} characters, too long to go into the next page's URL "
        f"(it would be "
    ) in err, err
    assert f"more than 65536) (GET {url}{HISTORY} page 1)" in err, err
    assert "not a valid URL" not in err and "Traceback" not in err
    assert [p for p in paths if p.startswith(HISTORY)] == [f"{HISTORY}?limit=100"]


def test_a_last_report_id_too_long_for_the_next_url_names_its_path_and_page(
    tmp_path: Path,
) -> None:
    def answer(path: str, query: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        if path == REPORTS:
            return json_answer({"reports": [report(1, "r" * 70_000)]})
        return good(path, query)

    with service(answer) as (url, _):
        code, _, err = sync(url, tmp_path, "--no-usage")
    assert code == 2
    assert (
        "$.reports[-1].reportId: 70000 characters, too long to go into the next page's URL (it "
        "would be 70"
    ) in err, err
    assert f"more than 65536) (GET {url}{REPORTS} page 1)" in err, err


def test_a_long_cursor_that_fits_in_the_url_is_followed(tmp_path: Path) -> None:
    cursor = "c" * 60_000

    def answer(path: str, query: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        if path == HISTORY and query.get("cursor") == cursor:
            return 200, {"Content-Type": "application/json"}, history(change(1))
        if path == HISTORY:
            body = history(change(3), change(2), cursor=cursor)
            return 200, {"Content-Type": "application/json"}, body
        return good(path, query)

    with service(answer) as (url, _):
        code, out, err = sync(url, tmp_path, "--no-usage")
    assert code == 0, err
    assert "3 revisions (3 new)" in out, out


# --- LOW-4: the command's token in a redirect's Location -----------------------------------


@pytest.mark.parametrize(
    ("location", "shown"),
    [
        pytest.param(
            f"http://evil.example:8443/a/{TOKEN}",
            "redirects to http://evil.example:8443/a/[token];",
            id="other-host",
        ),
        pytest.param(f"/a/b%2F{TOKEN}", "redirects to {url}/a/b/[token];", id="encoded-slash"),
        pytest.param(  # encoded twice: the path decoded holds it percent-encoded
            "/a/" + "".join(f"%25{b:02X}" for b in TOKEN.encode()),
            "redirects to {url}/a/[token];",
            id="encoded-twice",
        ),
        pytest.param(
            f"https://{TOKEN[:8]}.evil.example/{TOKEN}/x",
            "redirects to https://s3cr3tto.evil.example/[token]/x;",
            id="host-kept",
        ),
        pytest.param(  # the host lowercased: the token was shown whole, in lowercase
            f"http://{TOKEN}.evil.example:9/x",
            "redirects to http://[token].evil.example:9/x;",
            id="token-as-host",
        ),
        pytest.param(
            f"/a/{TOKEN.lower()}", "redirects to {url}/a/[token];", id="token-in-lowercase"
        ),
    ],
)
def test_the_token_in_a_redirects_location_reads_token_and_the_host_and_port_stay(
    tmp_path: Path, location: str, shown: str
) -> None:
    """It read `redirects to http://evil.[secret fp:f589500d len:39]` (the marker took
    `example/a/` with it) and `http://127.0.0.1:[secret fp:b24ae750 len:39]` (the port)."""

    def answer(path: str, query: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        return 301, {"Location": location, "Content-Type": "application/json"}, b"{}"

    with service(answer) as (url, paths):
        code, _, err = sync(url, tmp_path, "--no-usage")
    assert code == 2
    assert shown.format(url=url) in err, err
    assert TOKEN.lower() not in err.lower() and "secret fp:" not in err, err
    assert len(paths) == 1  # never followed


B64 = base64.b64encode(TOKEN.encode()).decode()


@pytest.mark.parametrize(
    ("location", "shown"),
    [
        pytest.param(f"http://evil.example/a/{B64}", "http://evil.example/a/", id="base64"),
        pytest.param(
            f"http://evil.example:8080/a/{B64}", "http://evil.example:8080/a/", id="base64-port"
        ),
        pytest.param(
            f"http://evil.example/a/{TOKEN[::-1]}", "http://evil.example/a/", id="reversed"
        ),  # (`a/` went with the marker before the address read the token's forms, T71 #4)
        pytest.param(
            f"https://u:{B64}@evil.example:8443/{TOKEN[::-1]}?t={B64}#{B64}",
            "https://evil.example:8443/",
            id="userinfo-query-fragment",
        ),
    ],
)
def test_a_token_encoded_in_a_redirects_path_is_a_marker_after_the_host_and_port(
    tmp_path: Path, location: str, shown: str
) -> None:
    """The token in base64 or reversed: the marker the redactor made of it took the host's
    end or the port with it (`http://evil.[secret fp:… len:49]`, reviewer R32 #2); it now
    stands after `scheme://host[:port]/` (or reads `[token]`), the path's part hidden; the
    user name and password, the query and the fragment are left out."""

    def answer(path: str, query: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        return 302, {"Location": location, "Content-Type": "application/json"}, b"{}"

    with service(answer) as (url, paths):
        code, _, err = sync(url, tmp_path, "--no-usage")
    assert code == 2
    hidden = r"(?:\[token\]|\[secret fp:[0-9a-f]+ len:\d+\])"
    assert re.search(rf"redirects to {re.escape(shown)}{hidden}; auditor", err), err
    for form in (TOKEN, B64, B64.rstrip("="), TOKEN[::-1]):
        assert form.lower() not in err.lower(), err
    assert len(paths) == 1  # never followed


# --- LOW-5: a UTF-8 byte order mark ---------------------------------------------------------


def _revisions(state: Path) -> list[int]:
    with closing(sqlite3.connect(f"file:{state}?mode=ro", uri=True)) as db:
        return sorted(row[0] for row in db.execute("select revision from revisions"))


@pytest.mark.parametrize("compact", [True, False], ids=["compact", "spaced"])
def test_a_page_after_a_utf8_bom_is_read_with_a_warning(tmp_path: Path, compact: bool) -> None:
    """It failed the sync: `invalid JSON (UTF-8 byte order mark (BOM) is not supported: line 1
    column 1 (char 0))`. RFC 8259 §8.1 lets a parser ignore it."""
    body = history(change(3), change(2), change(1))
    body = body if compact else orjson.dumps(orjson.loads(body), option=orjson.OPT_INDENT_2)

    def answer(path: str, query: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        if path == HISTORY:
            return 200, {"Content-Type": "application/json"}, BOM + body
        if path == REPORTS and "startAfter" not in query:
            return json_answer({"reports": [report(1)]}, BOM)
        return good(path, query)

    with service(answer) as (url, _):
        code, out, err = sync(url, tmp_path, "--no-usage")
    assert code == 0, err
    assert "3 revisions (3 new)" in out and "1 readiness reports (1 new)" in out, out
    assert (
        "$: the body begins with a UTF-8 byte order mark (BOM), which a service must not send "
        f"before JSON (RFC 8259 §8.1): ignored (the page, GET {url}{HISTORY} page 1; 1 more "
        "items like it)"
    ) in out, out
    assert warnings_of(out) == 1, out
    assert _revisions(tmp_path / "state.db") == [1, 2, 3]


def test_an_analytics_answer_after_a_bom_is_read(tmp_path: Path) -> None:
    def answer(path: str, query: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        if path.startswith(ANALYTICS) and not path.endswith("/users"):
            days = [f"2026-10-{d:02d}" for d in range(2, 32)]
            return json_answer({"data": [{"date": d} for d in days], "meta": {}}, BOM)
        return good(path, query)

    with service(answer) as (url, _):
        code, out, err = sync(url, tmp_path)
    assert code == 0, err
    assert "byte order mark" in out and "(the page, GET " in out, out


def test_a_problem_body_after_a_bom_still_shows_its_detail(tmp_path: Path) -> None:
    def answer(path: str, query: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        problem = {"title": "Forbidden", "detail": "role member may not read this"}
        return 403, {"Content-Type": "application/problem+json"}, BOM + orjson.dumps(problem)

    with service(answer) as (url, _):
        code, _, err = sync(url, tmp_path, "--no-usage")
    assert code == 2
    assert "→ 403 Forbidden: role member may not read this" in err, err
