"""report.html of real runs checked for accessibility in headless Chromium: axe-core finds no
violation of WCAG 2.0/2.1 A and AA or of its best practices, and the page reflows at 320 CSS px.

The runs are the ones users make, through the CLI: the demo (against its emulator, with the
usage chart and the over-time chart) and a review of the example proposed file. axe-core runs
in a copy of the page with the CSP meta tag dropped (the CSP forbids every script) and
`axe.min.js` inlined; the result is written into the DOM and read back with `--dump-dom`.
`.ci/run` installs axe-core from npm into `.ci/tools`; without it the axe tests fail when
CI=true and skip otherwise, saying how to install it.
"""

from __future__ import annotations

import io
import json
import re
import shutil
import subprocess
from dataclasses import dataclass
from datetime import timedelta
from html import escape, unescape
from pathlib import Path
from typing import Any

import pytest

from auditor.cli import Context, main
from tests.conftest import FIXED_NOW, missing_tool

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"
AXE = REPO / ".ci" / "tools" / "node_modules" / "axe-core" / "axe.min.js"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"]
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-extensions",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-default-browser-check",
    "--disable-breakpad",
    "--hide-scrollbars",
    # Nothing may be fetched: the page and axe are inline (an unused proxy blocks the rest).
    "--proxy-server=http://127.0.0.1:9",
    "--proxy-bypass-list=<-loopback>",
]
CSP = re.compile(r'<meta http-equiv="Content-Security-Policy"[^>]*>')
RESULT = re.compile(r'<pre id="probe-result">(.*?)</pre>', re.S)
# Writes what `probe` (a promise of a JSON-able value) gives into the DOM.
RUNNER = """<script>%s</script>
<script>
function done(value) { var p = document.createElement('pre'); p.id = 'probe-result';
  p.textContent = JSON.stringify(value); document.body.appendChild(p); }
Promise.resolve().then(function () { return (%s); }).then(done,
  function (e) { done({error: String(e)}); });
</script>
"""
AXE_RUN = (
    "axe.run(document, {runOnly: {type: 'tag', values: " + json.dumps(TAGS) + "}})"
    ".then(function (r) {"
    " return {version: r.testEngine.version, violations: r.violations.map(function (v) {"
    " return {id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.slice(0, 3).map("
    "function (n) { return n.target.join(' ') + ': ' + n.html.slice(0, 160); })}; })}; })"
)
# Elements outside tables (which WCAG 1.4.10 exempts) whose right edge passes the viewport of
# the page, loaded in a frame `width` CSS px wide (headless Chromium's window is at least 500).
REFLOW = """new Promise(function (resolve) {
  var frame = document.createElement('iframe');
  frame.style.cssText = 'width: %dpx; height: 900px; border: 0';
  frame.onload = function () {
    var win = frame.contentWindow, out = [];
    win.document.querySelectorAll('body *').forEach(function (e) {
      if (e.closest('table') || e.closest('svg')) { return; }
      var r = e.getBoundingClientRect();
      if (r.width && r.right > win.innerWidth + 0.5) {
        out.push(e.tagName.toLowerCase() + (e.className ? '.' + e.className : '') + ' right '
          + Math.round(r.right) + ': ' + (e.textContent || '').trim().slice(0, 40));
      }
    });
    resolve({width: win.innerWidth, overflowing: out});
  };
  frame.srcdoc = document.getElementById('page').textContent;
  document.body.appendChild(frame);
})"""


@dataclass(frozen=True)
class Pages:
    """report.html of the demo and of the review."""

    demo: Path
    review: Path


def _cli(argv: list[str], env: dict[str, str], cwd: Path, minutes: int) -> None:
    now = FIXED_NOW + timedelta(minutes=minutes)
    out, err = io.StringIO(), io.StringIO()
    ctx = Context(env=env, stdout=out, stderr=err, clock=lambda: now, cwd=str(cwd))
    code = main(argv, ctx)
    assert code in (0, 1), f"auditor {' '.join(argv)} exited {code}: {err.getvalue()}"


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> Pages:
    root = tmp_path_factory.mktemp("a11y")
    _cli(["demo", "--out", "demo", "--revisions", "60", "--repos", "6", "-o", "html"], {}, root, 0)
    # the files outside the working folder, named by a long absolute path with no place to
    # break: a scope line of the page must wrap it, wherever the repository is checked out
    far = root.parent / ("a_folder_outside_the_working_folder_" * 2) / "settings"
    far.mkdir(parents=True)
    for name in ("proposed-settings.yaml", "live-settings.yaml"):
        shutil.copyfile(EXAMPLES / name, far / name)
    argv = ["review", str(far / "proposed-settings.yaml")]
    argv += ["--against", str(far / "live-settings.yaml"), "--out", "review", "-o", "html"]
    _cli(argv, {"AUDITOR_STATE": str(root / "review.db")}, root, 1)
    demo, review = root / "demo" / "report.html", root / "review" / "report.html"
    page = demo.read_text(encoding="utf-8")
    assert 'id="usage"' in page and page.count('<svg class="chart"') == 2  # both charts checked
    return Pages(demo, review)


def _browser() -> str:
    if CHROMIUM is None:
        message = "chromium is not installed (apt-get install chromium)"
        missing_tool(message, "BROWSER", "BROWSER TEST")
    return CHROMIUM


def _axe() -> str:
    if not AXE.exists():
        message = (
            f"axe-core is not installed ({AXE} is missing): "
            "`npm install --prefix .ci/tools axe-core` (as .ci/run does)"
        )
        missing_tool(message, "AXE-CORE", "ACCESSIBILITY TEST")
    return AXE.read_text(encoding="utf-8")


def _without_csp(page: Path) -> str:
    """The page's text without its CSP meta tag (which forbids every script)."""
    text, found = CSP.subn("", page.read_text(encoding="utf-8"))
    assert found == 1, "the page's CSP meta tag was not found"
    return text


def _probe(text: str, tmp: Path, name: str, library: str, probe: str) -> Any:
    """What `probe` (a JavaScript expression) gives in the page `text` with `library` inlined."""
    browser = _browser()
    # `</script` cannot occur in the inlined code: the browser would end the element there.
    assert "</script" not in library.lower()
    copy = tmp / f"probe-{name}.html"
    copy.write_text(text.replace("</body>", RUNNER % (library, probe) + "</body>"), "utf-8")
    cmd = [browser, *FLAGS, f"--user-data-dir={tmp / 'profile'}", "--window-size=1280,900"]
    cmd += ["--virtual-time-budget=120000", "--dump-dom", copy.as_uri()]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False)
    found = RESULT.search(done.stdout)
    assert found, f"no result in the DOM (exit {done.returncode}): {done.stderr[-1500:]}"
    result = json.loads(unescape(found.group(1)))
    assert not (isinstance(result, dict) and "error" in result), result
    return result


@pytest.mark.slow
@pytest.mark.parametrize("name", ["demo", "review"])
def test_axe_finds_no_violation(pages: Pages, tmp_path: Path, name: str) -> None:
    library = _axe()
    result = _probe(_without_csp(getattr(pages, name)), tmp_path, name, library, AXE_RUN)
    violations = result["violations"]
    shown = json.dumps(violations, indent=1)[:4000]
    assert violations == [], f"axe-core {result['version']} on the {name}'s report.html: {shown}"


@pytest.mark.parametrize("name", ["demo", "review"])
def test_page_reflows_at_320_css_pixels(pages: Pages, tmp_path: Path, name: str) -> None:
    """WCAG 1.4.10: at 320 px (400 % zoom) nothing but the data tables needs sideways
    scrolling; the header's metadata wraps."""
    text = _without_csp(getattr(pages, name))
    assert "</textarea" not in text.lower()  # (the page escapes every `<` from data)
    frame = '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>320 px</title>'
    frame += f'</head><body><textarea id="page" hidden>{escape(text)}</textarea></body></html>'
    result = _probe(frame, tmp_path, name, "", REFLOW % 320)
    assert result["width"] == 320, result  # the frame really is narrow
    assert result["overflowing"] == [], result["overflowing"]
