"""Text that is not UTF-8 in API data: a string with a bad byte or a lone surrogate escape is
read with U+FFFD and named in a data-quality warning; only a field the audit cannot do without
fails the sync. End to end through `auditor sync` and `auditor run --offline` over HTTP (a proxy
on 127.0.0.1 in front of the emulator damages the bytes), plus the repair function itself."""

from __future__ import annotations

import http.server
import io
import json
import re
import threading
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from auditor.cli import Context, main
from auditor.emulator import start_emulator
from auditor.errors import ApiError, AuditorError, DataError
from auditor.fetch import HISTORY, PlatformClient, text
from auditor.fetch.text import declared_charset, repair, repair_bytes
from auditor.redact import Redactor
from tests.conftest import FIXED_NOW, OWNER_TOKEN

HISTORY_PATH = "/api/v0/organization/enterprise-controls/history"
REPORTS_PATH = "/api/organization/agent-readiness-reports"
GITHUB_TOKEN = "ghp_" + "7f3a9c2e1b" * 3 + "0d4e8f"  # a token redaction recognises by its form
Mutate = Callable[[str, bytes], tuple[bytes, str]]


# -- the repair function -------------------------------------------------------------------


def test_bad_bytes_and_lone_surrogates_become_u_fffd_and_are_named_by_path() -> None:
    body = b'{"a":"x\xffy","b":["ok","\\udfffz","\\ud800\\ud800"],"k\xfe":1,"c":"\\\\ud800"}'
    fixed = repair(body)
    assert fixed is not None
    assert fixed.value == {
        "a": "x\ufffdy",
        "b": ["ok", "\ufffdz", "\ufffd\ufffd"],
        "k\ufffd": 1,
        "c": "\\ud800",  # an escaped backslash: text, not a surrogate
    }
    assert set(fixed.strings) == {("a",), ("b", 1), ("b", 2)}
    assert fixed.keys == (("k\ufffd",),)


def test_a_surrogate_pair_and_valid_text_are_untouched() -> None:
    body = '{"a":"\\ud83d\\ude00","b":"caf\u00e9"}'.encode()
    assert repair_bytes(body) == body


def test_a_bad_byte_outside_a_string_is_still_not_json() -> None:
    assert repair(b'{"a":1,\xff}') is None
    assert repair(b'{"a":"x\xff"') is None


def test_a_body_in_its_declared_charset_is_read_in_it() -> None:
    body = '{"name":"Zo\u00eb M\u00fcller"}'.encode("latin-1")
    fixed = repair(body, declared_charset("application/json; charset=ISO-8859-1"))
    assert fixed is not None and fixed.value == {"name": "Zo\u00eb M\u00fcller"}
    assert fixed.charset == "iso-8859-1" and not fixed.strings
    # an unknown charset name: read as UTF-8, repaired
    fixed = repair(body, declared_charset('application/json; charset="x-nonsense"'))
    assert fixed is not None and fixed.value == {"name": "Zo\ufffd M\ufffdller"}


_JSON_TEXT = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_any_bytes_are_read_with_warnings_or_refused_never_an_exception(body: bytes) -> None:
    fixed = repair(body)
    if fixed is not None:
        orjson.dumps(fixed.value)  # valid text all through: it can be stored
        assert orjson.loads(fixed.body) == fixed.value


@settings(max_examples=200, deadline=None)
@given(_JSON_TEXT, st.data())
def test_damaging_one_string_names_it_and_keeps_everything_else(value: Any, data: Any) -> None:
    body = json.dumps({"s": "ab", "v": value}).encode()  # the first `"s"` and `"ab"` are these
    cut = data.draw(st.sampled_from([b'"ab"', b'"s"']))
    bad = data.draw(st.sampled_from([b"\xff", b"\xc3", b"\\udc00", b"\xed\xa0\x80"]))
    damaged = body.replace(cut, cut[:2] + bad + cut[2:], 1)
    fixed = repair(damaged)
    assert fixed is not None
    assert fixed.value["v"] == value
    if cut == b'"ab"':
        assert fixed.strings == (("s",),) and "\ufffd" in fixed.value["s"]
    else:
        assert len(fixed.keys) == 1 and fixed.keys[0][0].startswith("s\ufffd")


# -- end to end through the CLI, over HTTP -------------------------------------------------


class _Proxy(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, upstream: str) -> None:
        super().__init__(("127.0.0.1", 0), _Forward)
        self.upstream = upstream
        self.mutate: Mutate = lambda _path, body: (body, "application/json")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Forward(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        server: _Proxy = self.server  # type: ignore[assignment]
        got = httpx.get(
            server.upstream + self.path,
            headers={"Authorization": self.headers.get("Authorization", "")},
        )
        body, content_type = got.content, got.headers.get("content-type", "")
        if got.status_code == 200:
            body, content_type = server.mutate(self.path, body)
        self.send_response(got.status_code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


class _Service:
    def __init__(self, emu: Any, base: _Proxy, app: _Proxy) -> None:
        self.emu, self.base, self.app = emu, base, app

    def mutate(self, mutate: Mutate) -> None:
        self.base.mutate = self.app.mutate = mutate


@pytest.fixture
def service() -> Iterator[_Service]:
    with start_emulator(tokens={OWNER_TOKEN: "owner"}, now=FIXED_NOW, revisions=6, repos=2) as emu:
        proxies = [_Proxy(emu.base_url), _Proxy(emu.app_url)]
        threads = [threading.Thread(target=p.serve_forever, daemon=True) for p in proxies]
        for thread in threads:
            thread.start()
        try:
            yield _Service(emu, *proxies)
        finally:
            for proxy, thread in zip(proxies, threads, strict=True):
                proxy.shutdown()
                proxy.server_close()
                thread.join(5)


def _cli(argv: list[str], service: _Service, cwd: Path) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    env = {
        "AUDITOR_TOKEN": OWNER_TOKEN,
        "AUDITOR_BASE_URL": service.base.url,
        "AUDITOR_APP_URL": service.app.url,
        "AUDITOR_STATE": str(cwd / "state.db"),
    }
    ctx = Context(env=env, stdout=out, stderr=err, clock=lambda: FIXED_NOW, cwd=str(cwd))
    return main(argv, ctx), out.getvalue(), err.getvalue()


def _damage(path: str, body: bytes) -> tuple[bytes, str]:
    if path.startswith(HISTORY_PATH):
        body = body.replace(b'"name":"Priya', b'"name":"\\ud800Priya')  # a lone surrogate
        # bad bytes inside settings, one next to a secret and the API token
        body = body.replace(b'"NO_PROXY":"', b'"NO_PROXY":"' + GITHUB_TOKEN.encode() + b"\xff")
        body = body.replace(b'"HTTPS_PROXY":"', b'"HTTPS_PROXY":"' + OWNER_TOKEN.encode() + b"\xfe")
        # the text of an escape, not one: valid, kept as sent (the redactor, which reads JSON
        # escapes in text to find a secret behind them, failed on it: exit 2)
        body = body.replace(b'"svcRouterGuidance":"', b'"svcRouterGuidance":"C:\\\\ud800dir ')
    elif path.startswith(REPORTS_PATH):
        body = body.replace(b'"rationale":"Lint config', b'"rationale":"Lint \\udfffconfig')
    elif path.startswith("/api/v1/analytics/users"):
        body = body.replace(b'"primary_model":"claude-haiku', b'"primary_model":"claude\xc3-haiku')
    return body, "application/json"


def _stored(state: Path) -> bytes:
    return state.read_bytes() + b"".join(p.read_bytes() for p in state.parent.glob("state.db-*"))


@pytest.mark.e2e
def test_bad_text_is_kept_with_one_warning_per_item_and_the_run_reports_it(
    service: _Service, tmp_path: Path
) -> None:
    service.mutate(_damage)
    code, out, err = _cli(["sync"], service, tmp_path)
    assert code == 0, err
    assert "Traceback" not in out + err
    # one warning per damaged item naming path, item and the URL; grouped over items
    assert re.search(
        r"\$\.changes\[\d+\]\.settings\.env\.HTTPS_PROXY: text that is not valid UTF-8 .*"
        r"read with U\+FFFD in its place; 1 more string of it read the same way "
        rf"\(revision \d+, GET {re.escape(service.base.url + HISTORY_PATH)}",
        out,
    ), out
    assert re.search(r"\$\.reports\[\d+\]\.report\.lint_config\.rationale: text that is not", out)
    assert re.search(r"\$\.data\[\d+\]\.primary_model: text that is not valid UTF-8", out)
    assert "\ufffdPriya" not in out and "NO_PROXY" not in out.replace("env.NO_PROXY", "")
    stored = _stored(tmp_path / "state.db")
    for secret in (OWNER_TOKEN, GITHUB_TOKEN, GITHUB_TOKEN[4:]):
        assert secret.encode() not in stored and secret not in out + err
    assert "\ufffdPriya".encode() in stored  # the author's name kept, repaired
    assert b"C:\\\\ud800dir" in stored and "svcRouterGuidance" not in out

    code, _, err = _cli(["run", "--offline", "--out", "out"], service, tmp_path)
    assert code in (0, 1), err
    assert "Traceback" not in err
    report = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    findings = json.loads((tmp_path / "out" / "findings.json").read_text(encoding="utf-8"))
    assert "\ufffd" in report + json.dumps(findings, ensure_ascii=False)
    # a run that syncs shows the warnings in its reports too (they are the sync's, not stored)
    code, _, err = _cli(["run", "--out", "online"], service, tmp_path)
    assert code in (0, 1), err
    online = json.loads((tmp_path / "online" / "findings.json").read_text(encoding="utf-8"))
    assert any("U+FFFD" in w["problem"] for w in online["data_quality"]), online["data_quality"]
    assert "U+FFFD" in (tmp_path / "online" / "report.md").read_text(encoding="utf-8")
    outputs = [*(tmp_path / "out").iterdir(), *(tmp_path / "online").iterdir()]
    everything = b"".join(p.read_bytes() for p in outputs if p.is_file())
    assert OWNER_TOKEN.encode() not in everything and GITHUB_TOKEN.encode() not in everything
    assert b"\\ud800" not in everything and b"\xff" not in everything


def _damage_cursor(path: str, body: bytes) -> tuple[bytes, str]:
    if path.startswith(HISTORY_PATH):
        body = body.replace(b'"nextCursor":"', b'"nextCursor":"\xff')
    return body, "application/json"


def _damage_report_id(path: str, body: bytes) -> tuple[bytes, str]:
    if path.startswith(REPORTS_PATH):
        body = body.replace(b'"reportId":"', b'"reportId":"\\udc00', 1)
    return body, "application/json"


def _damage_time(path: str, body: bytes) -> tuple[bytes, str]:
    if path.startswith(HISTORY_PATH):
        body = body.replace(b'"updatedAt":"2026', b'"updatedAt":"\xe9026', 1)
    return body, "application/json"


def _damage_day(path: str, body: bytes) -> tuple[bytes, str]:
    if path.startswith("/api/v1/analytics/tokens"):
        body = body.replace(b'"date":"2026', b'"date":"\\udc002026', 1)
    return body, "application/json"


@pytest.mark.e2e
@pytest.mark.parametrize(
    ("mutate", "where", "path"),
    [
        (_damage_cursor, HISTORY_PATH, "$.pagination.nextCursor"),
        (_damage_report_id, REPORTS_PATH, "$.reports[0].reportId"),
        (_damage_time, HISTORY_PATH, "$.changes[0].updatedAt"),
        (_damage_day, "/api/v1/analytics/tokens?", "$.data[0].date"),
    ],
)
def test_bad_text_in_a_field_the_audit_needs_fails_in_one_line_and_keeps_the_store(
    service: _Service, tmp_path: Path, mutate: Mutate, where: str, path: str
) -> None:
    usage = mutate is _damage_day
    (tmp_path / "auditor.toml").write_text("" if usage else "page_size = 2\n")  # a cursor
    argv = ["sync", "--config", "auditor.toml", *([] if usage else ["--no-usage"])]
    code, _, err = _cli(argv, service, tmp_path)
    assert code == 0, err
    state = tmp_path / "state.db"
    before = state.read_bytes()
    with service.emu.dataset.lock:
        history = service.emu.dataset.history
        history.append({**history[-1], "revision": history[-1]["revision"] + 1})
    service.mutate(mutate)
    code, _, err = _cli(argv, service, tmp_path)
    assert code == 2
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("auditor: error: sync failed, nothing saved")
    assert f"{path}: not valid UTF-8" in lines[0] and "cannot do without this field" in lines[0]
    assert where in lines[0] and "Traceback" not in err
    assert state.read_bytes() == before  # the earlier sync's data kept, nothing of this one


# -- error bodies and charsets, through the client -----------------------------------------


def _client(handler: Callable[[httpx.Request], httpx.Response]) -> PlatformClient:
    return PlatformClient(
        base_url="http://svc.test", app_url=None, token=OWNER_TOKEN,
        transport=httpx.MockTransport(handler), redactor=Redactor(b"k"),
    )  # fmt: skip


def test_an_error_body_with_bad_text_still_shows_its_detail() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        body = b'{"title":"Forbidden","detail":"no access for caf\xe9 \\ud800 ' + (
            OWNER_TOKEN.encode() + b'\xff"}'
        )
        return httpx.Response(403, content=body, headers={"content-type": "application/json"})

    with _client(refuse) as client, pytest.raises(ApiError) as caught:
        next(iter(client.pages(HISTORY)))
    message = str(caught.value)
    assert "403 Forbidden: no access for caf\ufffd \ufffd" in message
    assert OWNER_TOKEN not in message


def test_a_page_declared_latin_1_is_read_in_latin_1_with_a_warning() -> None:
    item = '{"revision":1,"settings":{"n":"Zo\u00eb"},"updatedAt":"2026-10-01T00:00:00Z"}'
    body = f'{{"changes":[{item}],"pagination":{{"hasMore":false}}}}'.encode("latin-1")

    def latin(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            200, content=body, headers={"content-type": "application/json; charset=ISO-8859-1"}
        )

    with _client(latin) as client:
        first = next(iter(client.pages(HISTORY)))
    assert first.items[0]["settings"] == {"n": "Zo\u00eb"}
    assert [d.problem for d in first.duplicates] == [
        "the body is declared as charset=iso-8859-1 and is not UTF-8 (JSON is UTF-8, "
        "RFC 8259): read as iso-8859-1"
    ]


def test_bad_bytes_outside_strings_are_still_invalid_json_naming_the_byte() -> None:
    def broken(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            200, content=b'{"changes":[]\xff}', headers={"content-type": "application/json"}
        )

    with _client(broken) as client, pytest.raises(DataError, match=r"not UTF-8 text: byte 13"):
        next(iter(client.pages(HISTORY)))


_PAGE = orjson.dumps(
    {
        "changes": [
            {
                "revision": 2,
                "settings": {"env": {"A": "caf\u00e9"}, "list": ["x", "y"]},
                "user": {"id": "u", "name": "N"},
                "updatedAt": "2026-10-01T00:00:00Z",
            }
        ],
        "pagination": {"hasMore": False},
    }
)


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(
        st.binary(max_size=120),
        st.tuples(
            st.integers(0, len(_PAGE)),
            st.sampled_from([b"\xff", b"\xc3", b"\\ud800", b"\\udfff", b"\xed\xa0\x80", b"\\"]),
        ).map(lambda cut: _PAGE[: cut[0]] + cut[1] + _PAGE[cut[0] :]),
    )
)
def test_any_body_gives_a_page_with_warnings_or_a_clear_error_never_a_crash(body: bytes) -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=body, headers={"content-type": "application/json"})

    with _client(answer) as client:
        try:
            page = next(iter(client.pages(HISTORY)))
        except AuditorError as exc:
            assert "\n" not in str(exc) and "(GET http://svc.test" in str(exc)
            return
    orjson.dumps(page.items)  # every string is valid text: it can be stored
    if any(d.repaired for d in page.duplicates):
        assert "\ufffd" in orjson.dumps(page.items).decode()


@pytest.mark.parametrize("cut", [14])
def test_a_key_holding_an_escape_is_read_or_refused_never_a_crash(cut: int) -> None:
    """An item's key made `"\\revision"` (a carriage return in it) by a stray backslash: the
    page reader's shape of the pages (msgspec structs named by the keys) cannot be made of such
    a name; the page is split as any other (a falsifying case hypothesis found in CI)."""
    test_any_body_gives_a_page_with_warnings_or_a_clear_error_never_a_crash.hypothesis.inner_test(  # type: ignore[attr-defined]
        _PAGE[:cut] + b"\\" + _PAGE[cut:]
    )


def _declared(body: bytes, charset: str) -> Callable[[httpx.Request], httpx.Response]:
    def answer(request: httpx.Request) -> httpx.Response:
        content_type = f"application/json; charset={charset}"
        return httpx.Response(200, content=body, headers={"content-type": content_type})

    return answer


def test_a_utf_8_body_declared_latin_1_keeps_its_text_when_a_surrogate_is_repaired() -> None:
    # UTF-8 whatever it declares: read in latin-1, "Zoë" became "ZoÃ«", with a warning that
    # the body was not UTF-8
    settings = '{"n":"Zo\u00eb","s":"\\ud800"}'
    item = f'{{"revision":1,"settings":{settings},"updatedAt":"2026-10-01T00:00:00Z"}}'
    body = f'{{"changes":[{item}],"pagination":{{"hasMore":false}}}}'.encode()
    with _client(_declared(body, "ISO-8859-1")) as client:
        first = next(iter(client.pages(HISTORY)))
    assert first.items[0]["settings"] == {"n": "Zo\u00eb", "s": "\ufffd"}
    assert [d.path for d in first.duplicates] == [("changes", 0, "settings", "s")]
    assert not any("charset" in d.problem for d in first.duplicates)


def test_a_body_read_in_its_declared_charset_is_held_to_the_value_limit() -> None:
    # In UTF-16, "\u0122" is the bytes 22 01: a quote to a count of the bytes sent, so every
    # comma after it looked inside a string and 1.1 million values passed as 6
    values = ",".join(["0"] * 1_100_000)
    settings = f'{{"s":"\u0122","l":[{values}]}}'
    item = f'{{"revision":1,"settings":{settings},"updatedAt":"2026-10-01T00:00:00Z"}}'
    body = f'{{"changes":[{item}],"pagination":{{"hasMore":false}}}}'.encode("utf-16")
    with (
        _client(_declared(body, "utf-16")) as client,
        pytest.raises(DataError, match=r"\$: about 1100\d+ values in one response, more than"),
    ):
        next(iter(client.pages(HISTORY)))


def test_utf_7_and_codecs_that_are_not_charsets_are_not_read_in() -> None:
    # UTF-7 spells `,` as `+ACw-`, out of sight of the value count; `unicode_escape` reads
    # backslash escapes, not a charset: the body is read as UTF-8 (and here is not JSON)
    assert repair(b"[0+ACw-1]", declared_charset("application/json; charset=utf-7")) is None
    fixed = repair(b'{"a":"x\xff"}', "unicode_escape")
    assert fixed is not None and fixed.value == {"a": "x\ufffd"} and not fixed.charset


def test_charset_names_of_any_length_are_not_kept_in_memory() -> None:
    # Python keeps every codec name it is asked for: a server sending a new 50 kB name with
    # each page grew the sync by 50 kB a page, for good
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for i in range(100):
            repair(b'{"a":"x\xff"}', f"x-{i}-" + "y" * 50_000)
        kept = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert kept < 1_000_000, kept


@pytest.mark.parametrize("bad", [b"caf\xe9", b"\\ud800"], ids=["byte", "surrogate"])
def test_a_body_not_json_for_another_reason_names_that_not_the_text_repaired(bad: bytes) -> None:
    # text read with U+FFFD inside a string is not what makes this body invalid: the message
    # named the bad byte (or the surrogate) and not the `fals` further on
    item = b'{"revision":1,"settings":{"n":"' + bad + b'"},"updatedAt":"2026-10-01T00:00:00Z"}'
    body = b'{"changes":[' + item + b'],\n"pagination":{"hasMore":fals}}'

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=body, headers={"content-type": "application/json"})

    with (
        _client(answer) as client,
        pytest.raises(
            DataError, match=r"invalid JSON \(invalid literal, expected 'false': line 2 "
        ),
    ):
        next(iter(client.pages(HISTORY)))


def test_a_page_of_lone_surrogate_escapes_is_repaired_in_memory_of_its_own_order() -> None:
    # `re.sub` over the whole body joined one piece per escape, at 80 bytes a piece: a 60 MB
    # page of them took 880 MB more (sync peak 1.16 GB; a good page that size: 278 MB)
    body = b'{"s":"' + b"\\ud800" * 1_000_000 + b'"}'
    tracemalloc.start()
    try:
        fixed = repair_bytes(body)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert fixed == b'{"s":"' + b"\\ufffd" * 1_000_000 + b'"}'
    assert peak < 6 * len(body), (peak, len(body))


_ESCAPES = st.lists(
    st.sampled_from(
        [b"\\", b"\\\\", b"\\ud800", b"\\uDBFF", b"\\udc00", b"\\uDFFF", b"\\u0041", b"a", b'"']
    ),
    max_size=40,
).map(b"".join)


@settings(max_examples=300, deadline=None)
@given(_ESCAPES, st.integers(7, 30))
def test_the_repair_does_not_depend_on_where_the_body_is_cut(body: bytes, chunk: int) -> None:
    # a long body is repaired a piece at a time: a piece never ends inside an escape, between
    # a pair's halves or inside a run of backslashes
    whole = repair_bytes(body)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(text, "_CHUNK", chunk)
        assert repair_bytes(body) == whole


def test_a_deep_body_with_bad_text_fails_the_depth_check_without_first_walking_it_all() -> None:
    # the paths of the strings repaired were sought before the depth check: each of a wide
    # array's values 900 levels down got its own copy of the path (0.6 MB: 26 s and 2.1 GB)
    inner = b"[" * 900 + b",".join([b"0"] * 20_000) + b',"\xff"' + b"]" * 900
    body = b'{"changes":[{"revision":1,"settings":{"s":' + inner + b"}}]}"

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=body, headers={"content-type": "application/json"})

    with _client(answer) as client:
        tracemalloc.start()
        try:
            with pytest.raises(DataError, match=r"nested deeper than 64 levels"):
                next(iter(client.pages(HISTORY)))
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert peak < 16_000_000, peak  # 4 MB now; 148 MB before (and growing with the depth)
