"""report.html in a real headless Chromium: no network request, renders, prints to A4 PDF."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import replace
from html import unescape
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from report_fixture import build_report_data

from auditor.report import render_html
from tests.conftest import missing_tool

pytestmark = pytest.mark.browser

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
BASE_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-extensions",
    "--disable-default-apps",
    "--mute-audio",
    "--hide-scrollbars",
    "--no-pings",
    "--disable-domain-reliability",
    "--disable-client-side-phishing-detection",
    "--disable-features=NetworkTimeServiceQuerying,OptimizationHints,Translate,MediaRouter",
    "--no-default-browser-check",
    "--disable-breakpad",
]


# Chromium's own service traffic (component updates, sign-in probes) that survives the flags
# above; it is the browser's, not the page's. Anything else the proxy sees fails the tests.
# www.google.com: from Chromium 150 the omnibox asks `/async/folae` (its "AI mode" eligibility)
# at start-up, headless too, and no switch or feature name turns it off (its net log names no
# other URL there); a report that fetched from it would still be caught by the HTML checks of
# tests/test_report_formats.py (a strict CSP, no script, link or src=).
BROWSER_SERVICE_HOSTS = {
    "update.googleapis.com",
    "accounts.google.com",
    "clients2.google.com",
    "www.google.com",
}


def _page_requests(seen: list[str]) -> list[str]:
    """The requests the page made: everything but the browser's own service traffic."""
    out = []
    for line in seen:
        target = line.split(" ")[1] if " " in line else line
        host = re.sub(r"^[a-z]+://", "", target).split("/")[0].split(":")[0]
        if host not in BROWSER_SERVICE_HOSTS:
            out.append(line)
    return out


class _Counter(BaseHTTPRequestHandler):
    """A stand-in proxy: records every request the browser tries to make, answers 404."""

    seen: list[str]

    def _record(self) -> None:
        self.seen.append(self.requestline)
        self.send_response(404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_GET = do_POST = do_HEAD = do_CONNECT = do_OPTIONS = _record

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def proxy() -> Iterator[tuple[str, list[str]]]:
    seen: list[str] = []
    handler = type("Handler", (_Counter,), {"seen": seen})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()


def _chromium(tmp: Path, proxy_url: str, page: Path, *extra: str) -> str:
    if CHROMIUM is None:
        message = "chromium is not installed (apt-get install chromium)"
        missing_tool(message, "BROWSER", "BROWSER TEST")
    cmd = [
        CHROMIUM,
        *BASE_FLAGS,
        f"--user-data-dir={tmp / 'profile'}",
        f"--proxy-server={proxy_url}",
        "--proxy-bypass-list=<-loopback>",
        *extra,
        page.as_uri(),
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=90, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


@pytest.fixture
def report(tmp_path: Path) -> Path:
    path = tmp_path / "report.html"
    path.write_text(render_html(build_report_data()), encoding="utf-8")
    return path


def test_harness_notices_a_page_that_does_fetch(
    tmp_path: Path, proxy: tuple[str, list[str]]
) -> None:
    page = tmp_path / "leaky.html"
    page.write_text('<img src="http://assets.example.invalid/x.png">', encoding="utf-8")
    _chromium(tmp_path, proxy[0], page, "--dump-dom")
    assert any("assets.example.invalid" in line for line in _page_requests(proxy[1]))


def test_report_loads_without_any_network_request(
    tmp_path: Path, report: Path, proxy: tuple[str, list[str]]
) -> None:
    dom = _chromium(tmp_path, proxy[0], report, "--dump-dom")
    assert "Findings by rule" in dom and "<polyline" in dom
    assert not re.search(r"""\b(?:src|srcset|action|data|poster)=["']?(?:https?:)?//""", dom)
    assert _page_requests(proxy[1]) == []


def test_screenshot_is_written(tmp_path: Path, report: Path, proxy: tuple[str, list[str]]) -> None:
    out = tmp_path / "shot.png"
    _chromium(tmp_path, proxy[0], report, f"--screenshot={out}", "--window-size=1280,2400")
    data = out.read_bytes()
    assert data.startswith(b"\x89PNG") and len(data) > 50_000  # a blank page is a few KB
    assert _page_requests(proxy[1]) == []


def test_prints_to_a4_pdf_with_several_pages(
    tmp_path: Path, report: Path, proxy: tuple[str, list[str]]
) -> None:
    pdf = tmp_path / "report.pdf"
    _chromium(tmp_path, proxy[0], report, f"--print-to-pdf={pdf}", "--no-pdf-header-footer")
    data = pdf.read_bytes()
    assert data.startswith(b"%PDF")
    pages = re.findall(rb"/Type\s*/Page(?!s)", data)
    assert len(pages) >= 2
    boxes = set(re.findall(rb"/MediaBox\s*\[\s*0 0 ([\d.]+) ([\d.]+)\s*\]", data))
    assert boxes == {(b"595.91998", b"842.88")} or all(
        abs(float(w) - 595.3) < 2 and abs(float(h) - 841.9) < 2 for w, h in boxes
    )
    assert _page_requests(proxy[1]) == []


# -- the auditor's view: contents, anchors, scope, appendix, print -----------------------------


@pytest.fixture
def audited(tmp_path: Path) -> Path:
    path = tmp_path / "audited.html"
    data = replace(build_report_data(), org="acme-corp")
    path.write_text(render_html(data), encoding="utf-8")
    return path


def _text(html: str) -> str:
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", html)).split())


def test_desktop_contents_anchors_scope_and_appendix(
    tmp_path: Path, audited: Path, proxy: tuple[str, list[str]]
) -> None:
    dom = _chromium(tmp_path, proxy[0], audited, "--dump-dom")
    nav = re.search(r'<nav class="toc" id="contents".*?</nav>', dom, re.S)
    assert nav is not None
    toc_links = re.findall(r'href="#([^"]+)"', nav.group(0))
    ids = re.findall(r'\bid="([^"]+)"', dom)
    assert len(ids) == len(set(ids))  # no anchor twice
    links = set(re.findall(r'href="#([^"]+)"', dom))
    assert links <= set(ids), links - set(ids)  # every in-page link lands somewhere
    for section in ("scope", "summary", "controls", "drill-down", "findings", "passing", "inputs"):
        assert section in toc_links
    # control → rules → results, and result's rule → controls
    assert 'href="#control-soc2-cc6-1"' in dom and 'id="control-soc2-cc6-1"' in dom
    assert re.search(  # each result in the drill-down with its evidence, linking to its row
        r'<section class="control" id="control-[^"]+">.*?<p class="ev"><code>\$[^<]*</code>'
        r' expected [^<]*<code>[^<]*</code>: found <code>[^<]*</code> — <a href="#f-[0-9a-f]{32}"',
        dom,
        re.S,
    )
    assert re.search(r'<tr id="f-[0-9a-f]{32}">.*?href="#control-[^"]+-[0-9a-f]{32}"', dom, re.S)
    assert re.search(r'<section class="rule" id="rule-[^"]+">.*?href="#control-', dom, re.S)
    found = re.search(r'<section id="scope".*?</section>', dom, re.S)
    assert found is not None
    scope = _text(found.group(0))
    facts = ("acme-corp", "https://api.example.com", "Period covered", "2026-03-02 09:15 UTC")
    left_out = "Rules left out 3 usage rule(s), not evaluated: --no-usage was given"
    for fact in (*facts, "Report time", left_out, "Populations", "policies/baseline.yaml"):
        assert fact in scope, fact
    appendix = dom[dom.index('id="passing"') :]
    # nothing collapsed but the chart's figures, a table beside the chart that prints open
    assert re.findall(r"<details[^>]*>", dom) == ['<details class="chart-data">']
    assert re.search(
        r'<tr id="f-[0-9a-f]{32}">.*?class="st pass".*?<ul class="evidence">', appendix, re.S
    )
    assert _page_requests(proxy[1]) == []


def test_print_expands_everything_with_header_and_page_numbers(
    tmp_path: Path, audited: Path, proxy: tuple[str, list[str]]
) -> None:
    pdftotext = shutil.which("pdftotext")
    if pdftotext is None:
        if os.environ.get("CI"):
            pytest.fail("PDF TOOL MISSING IN CI: pdftotext (poppler-utils)")
        pytest.skip(
            "PRINT TEST SKIPPED: pdftotext is not installed (apt-get install poppler-utils)"
        )
    pdf = tmp_path / "printed.pdf"
    _chromium(tmp_path, proxy[0], audited, f"--print-to-pdf={pdf}", "--no-pdf-header-footer")
    text = subprocess.run(
        [pdftotext, "-layout", str(pdf), "-"], capture_output=True, text=True, check=True
    ).stdout
    pages = text.split("\f")[:-1]
    assert len(pages) >= 3
    for number, page in enumerate(pages, 1):
        assert f"Page {number} of {len(pages)}" in page
        assert "acme-corp" in page.strip().splitlines()[0] and "run run-42" in page
    printed = " ".join(text.split())
    tail = printed[printed.index("Appendix A: passing results and their evidence (") :]
    assert "Appendix A: passing results and their evidence" in tail[60:]  # the section itself
    assert "$." in tail and "Appendix B: inputs" in tail and "cdcdcdcd" in tail
    drill = printed[printed.index("Every result of every rule mapped to each control") :]
    drill = drill[: drill.index("Every open or waived result with its full evidence")]
    assert re.search(r"\$\.\S+ expected .{0,60}: found ", drill)  # evidence in the drill-down
    heading = "The chart's figures: failing settings rules (not waived) per settings revision"
    figures = printed[printed.index(heading) :]
    # the chart's table, collapsed on screen, printed open (a page may break it, its header
    # repeated on the next page)
    assert "SETTINGS REVISIONS FAILING RULES (NOT WAIVED) 400 0 " in figures
    assert "401\N{EN DASH}402 1 403\N{EN DASH}405 2 " in figures
    assert _page_requests(proxy[1]) == []
