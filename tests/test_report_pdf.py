"""report.pdf as an auditor files it: `auditor demo -o html,pdf` against the emulator, the pages
turned into images with `pdftoppm` and read with `pdftotext` (poppler-utils, installed by
.ci/run): A4, a running header with organisation and run id, "Page X of Y" on every page, and
the appendices (passing results with their evidence, the inputs) printed in full. A large run's
PDF still names every rule with its counts and says how many results it leaves out and where
they are; none of its tables is longer than `TABLE_ROWS` rows (each cut keeps every row).

report.pdf is a tagged PDF: a structure tree (headings, lists, tables with their header cells)
that screen readers follow, with the page's language and title; an untagged file gives them one
stream of text (WCAG 1.3.1; PDF techniques PDF9, PDF6). Checked on the demo's file with
poppler's `pdfinfo`. The charts' tables of figures are printed, within the page's width."""

from __future__ import annotations

import functools
import importlib.util
import io
import re
import shutil
import subprocess
import sys
import zlib
from dataclasses import replace
from html import unescape
from pathlib import Path

import pytest
from PIL import Image
from report_fixture import build_large

import auditor.report as report_module
from auditor.cli import Context, main
from auditor.evaluate.model import UsageInputs
from auditor.report import write_reports
from auditor.report.html import Caps, render_html
from auditor.report.pdf import PDF_CAPS, TABLE_ROWS, render_pdf, split_tables
from auditor.report.usage import usage_view
from tests.conftest import FIXED_NOW, missing_tool

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        message = f"{name} is not installed (apt-get install poppler-utils, as .ci/run does)"
        missing_tool(message, "PDF TOOL", "PDF TEST")
    return path


def _cli(argv: list[str], cwd: Path, env: dict[str, str] | None = None) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    ctx = Context(env=env or {}, stdout=out, stderr=err, clock=lambda: FIXED_NOW, cwd=str(cwd))
    return main(argv, ctx), err.getvalue()


@pytest.fixture(scope="module")
def pdf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """report.pdf of the demo (about 90 pages), made once for the module."""
    work = tmp_path_factory.mktemp("pdf")
    code, err = _cli(
        ["demo", "--out", "r", "--revisions", "30", "--repos", "4", "-o", "html,pdf"], work
    )
    assert code in (0, 1), err
    return work / "r" / "report.pdf"


def _pdftotext(pdf: Path, how: str) -> str:
    """`pdftotext` of the file: `-layout` text, or `-bbox` (each word with its box); read
    once per file as it is (the demo's 90 pages are read by a dozen tests, a second each)."""
    seen = pdf.stat()
    return _pdftotext_of(str(pdf), how, seen.st_mtime_ns, seen.st_size)


@functools.cache
def _pdftotext_of(pdf: str, how: str, _mtime_ns: int, _size: int) -> str:
    return subprocess.run(
        [_tool("pdftotext"), how, pdf, "-"],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    ).stdout


def _page_texts(pdf: Path) -> list[str]:
    return _pdftotext(pdf, "-layout").split("\f")[:-1]  # one form feed after every page


_WORD = re.compile(
    r'<word xMin="([\d.]+)" yMin="([\d.]+)" xMax="([\d.]+)" yMax="([\d.]+)">([^<]*)</word>'
)


def _printed_over(pdf: Path) -> list[tuple[int, str, str]]:
    """(page, word, word) for each two words printed over each other on a line: the boxes
    `pdftotext -bbox` gives cross by more than half a point across and over half the line's
    height (a chart's axis labels that touch at a corner are not a line's words run together)."""
    boxes = _pdftotext(pdf, "-bbox")
    crossed = []
    for number, page in enumerate(boxes.split("<page ")[1:], 1):
        words = sorted((*map(float, m[:4]), m[4]) for m in _WORD.findall(page))
        for i, (_x0, y0, x1, y1, word) in enumerate(words):
            for a0, b0, a1, b1, other in words[i + 1 :]:
                if a0 >= x1 - 0.5:
                    break
                height = min(y1 - y0, b1 - b0)
                if min(y1, b1) - max(y0, b0) > 0.6 * height and min(x1, a1) - a0 > 0.5:
                    crossed.append((number, word, other))
    return crossed


def test_no_word_is_printed_over_another_or_past_the_margin(pdf: Path) -> None:
    """The results tables have fixed column widths (WeasyPrint's automatic layout took half
    its time): a word wider than its column, such as the status `not applicable`, would run
    into the next column's text ("not applicableprecondition"); it wraps instead. And nothing
    runs past the right margin (12 mm, the page's `@page`): the controls table's rule ids did,
    some cut at the paper's edge (`RDY-FRESH-00`)."""
    assert _printed_over(pdf) == []
    past = _past_the_margin(pdf)
    assert past == [], past[:10]


def _past_the_margin(pdf: Path) -> list[tuple[str, str]]:
    """(word, its right side) for each word printed past the right margin (12 mm, the page's
    `@page`), or cut at the paper's edge."""
    boxes = _pdftotext(pdf, "-bbox")
    width = float(re.findall(r'<page width="([\d.]+)"', boxes)[0])
    edge = width - 12 / 25.4 * 72 + 1  # a point of tolerance for a glyph's side bearing
    return [(m[4], m[2]) for m in _WORD.findall(boxes) if float(m[2]) > edge]


def test_pages_render_to_a4_images(pdf: Path, tmp_path: Path) -> None:
    subprocess.run(
        [_tool("pdftoppm"), "-r", "40", "-png", str(pdf), str(tmp_path / "page")],
        check=True,
        timeout=300,
    )
    images = sorted(tmp_path.glob("page-*.png"))
    assert len(images) == len(_page_texts(pdf)) >= 5
    for path in images:
        with Image.open(path) as im:
            width, height = im.size
            assert abs(height / width - 297 / 210) < 0.02  # A4 portrait
            assert im.convert("L").getextrema()[0] < 200  # something is printed on it


def test_the_compliance_chart_is_printed_in_its_colours(pdf: Path, tmp_path: Path) -> None:
    """WeasyPrint's SVG renderer applies none of the page's CSS to the chart: its area printed
    solid black, over a fifth of the page. Its colours are attributes too now: the page holding
    the chart has next to no pure black (the page's ink is #1f2328)."""
    texts = _page_texts(pdf)
    (number,) = [n for n, t in enumerate(texts, 1) if "Compliance over time" in t][-1:]
    pages = ["-f", str(number), "-l", str(number)]
    argv = [_tool("pdftoppm"), "-r", "30", "-png", *pages, str(pdf), str(tmp_path / "chart")]
    subprocess.run(argv, check=True, timeout=120)
    (image,) = tmp_path.glob("chart*.png")
    with Image.open(image) as im:
        grey = im.convert("L")
        black = sum(grey.histogram()[:8])
        assert black / (grey.width * grey.height) < 0.01, black


def test_every_page_is_numbered_and_has_the_running_header(pdf: Path) -> None:
    pages = _page_texts(pdf)
    total = len(pages)
    for number, text in enumerate(pages, 1):
        assert f"Page {number} of {total}" in text, number
        head = text.strip().splitlines()[0]
        assert "Compliance report · default" in head and "run 20261101T120000Z" in head


def test_the_title_pages_run_id_and_api_address_are_not_broken_across_lines(pdf: Path) -> None:
    """The title page's facts box was squeezed to its narrowest: `Run 20261101T1200 / 00Z`,
    `API http:// / 127.0.0.1:389 / 31`, each broken over two or three lines."""
    first = _page_texts(pdf)[0]
    assert re.search(r"\bRun +20261101T120000Z\s*$", first, re.MULTILINE), first
    assert re.search(r"\bAPI +http://127\.0\.0\.1:\d+\s*$", first, re.MULTILINE), first
    assert re.search(r"\bGenerated +2026-11-01 12:00 UTC\s*$", first, re.MULTILINE), first


def test_contents_scope_and_appendices_are_printed_in_full(pdf: Path) -> None:
    pages = _page_texts(pdf)
    text = "\n".join(pages)
    assert "Contents" in pages[0]
    for heading in (
        "Scope",
        "Period covered",
        "Populations",
        "Control drill-down",
        "Appendix A: passing results and their evidence",
        "Appendix B: inputs",
        "Settings revisions evaluated (30)",
    ):
        assert heading in text, heading
    start = text.index("Every result of every rule mapped to each control")
    drill = text[start : text.index("Every open or waived result with its full evidence")]
    assert re.search(r"\bpass \(\d+\)", drill)  # passing results are in the drill-down too
    assert re.search(r"\$\.\S+\s+expected\s", drill) and ": found " in drill  # with evidence
    appendix = text[text.index("Appendix A: passing results and their evidence") :]
    assert re.search(r"\bpass\b", appendix) and "$." in appendix  # results with their evidence
    assert re.search(r"\b30\s+[0-9a-f]{64}\b", appendix)  # the last revision's hash is printed
    assert re.search(r"p\.\s?\d+", pages[0])  # the contents give page numbers


def test_a_later_run_removes_the_report_pdf_an_earlier_run_left_in_its_out_folder(
    pdf: Path, tmp_path: Path
) -> None:
    """An auditor must not read yesterday's report.pdf beside today's reports as current: a run
    without the pdf output removes auditor's own (told by its document information, its title
    `Compliance report RUN-ID`, as WeasyPrint wrote it compressed or not), never another
    tool's PDF of that name."""
    import weasyprint

    def other(unc: bool) -> bytes:
        page = weasyprint.HTML(string="<title>Quarterly report</title><p>mine</p>")
        return bytes(page.write_pdf(uncompressed_pdf=unc))

    plain = weasyprint.HTML(string="<title>Compliance report 20261101T120000Z</title><p>old")
    earlier = {
        "demo": pdf.read_bytes(),
        "uncompressed": bytes(plain.write_pdf(uncompressed_pdf=True)),
        "other": other(False),
        "other-uncompressed": other(True),
    }
    for name, content in earlier.items():
        out = tmp_path / name
        out.mkdir()
        (out / "report.pdf").write_bytes(content)
        argv = ["demo", "--out", str(out), "--revisions", "3", "--repos", "1", "-o", "md", "-q"]
        code, err = _cli(argv, tmp_path)
        assert code in (0, 1), err
        kept = {p.name for p in out.iterdir()}
        assert kept == ({"report.md", "report.pdf"} if "other" in name else {"report.md"}), name


@pytest.mark.parametrize(
    ("init", "says"),
    [
        pytest.param(None, "pip install 'auditor[pdf]'", id="not-installed"),
        pytest.param(
            "raise OSError(\"cannot load library 'libpango-1.0-0'\")\n",
            "libpango-1.0-0",
            id="installed-without-pango",
        ),
    ],
)
def test_pdf_output_that_cannot_be_made_is_a_clear_error_before_the_run(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    init: str | None,
    says: str,
) -> None:
    # A stand-in `weasyprint` first on the path: absent (an empty folder has no such package),
    # or present but failing to load Pango as the real one does on a machine without it.
    fake = tmp_path / "site"
    fake.mkdir()
    if init is not None:
        (fake / "weasyprint").mkdir()
        (fake / "weasyprint" / "__init__.py").write_text(init)
    monkeypatch.syspath_prepend(str(fake))
    monkeypatch.delitem(sys.modules, "weasyprint", raising=False)
    if init is None:  # not installed at all
        found = importlib.util.find_spec
        monkeypatch.setattr(
            importlib.util, "find_spec", lambda n, *a: None if n == "weasyprint" else found(n, *a)
        )
    work = tmp_path / "work"
    work.mkdir()
    code, _ = _cli(["run", "--offline", "-o", "html,pdf"], work)
    err = capsys.readouterr().err  # argparse reports option errors on the process's stderr
    assert code == 2
    assert says in err and "Traceback" not in err
    assert not (work / "reports").exists()  # said before anything ran


def _bodies(html: str) -> list[str]:
    return re.findall(r"<tbody>(.*?)</tbody>", html, re.S)


def test_large_run_pdf_page_names_every_rule_and_says_what_is_left_out_and_where() -> None:
    data = build_large(3000)  # 50 rules, 60 failing results each
    page, html = render_html(data, PDF_CAPS), render_html(data)
    assert PDF_CAPS.rows_per_rule == 50
    for n in range(50):
        start = page.index(f'<section class="rule" id="rule-rdy-{n:03d}">')
        assert "60 fail" in page[start : page.index("</header>", start)]  # all counted
    more = (
        "10 more finding(s) of this rule not shown (limit 50 per rule; "
        "report.html lists up to 200 per rule, findings.json all)."
    )
    assert page.count(more) == 50
    assert page.count('<tr id="f-') == 50 * 50
    assert "10 more result(s) of RDY-000 not shown (limit 50 open and 50 passing per rule; " in page
    # the HTML page is not cut: every result, and no word of the PDF's caps
    assert html.count('<tr id="f-') == 3000 and "report.html lists" not in html


def test_no_table_of_the_pdf_is_longer_than_the_cap_and_the_cuts_keep_every_row() -> None:
    page = render_html(build_large(3000), PDF_CAPS)
    cut = split_tables(page)
    tables = re.findall(r"<table[^>]*>.*?</table>", cut, re.S)
    rows = [len(re.findall(r"<tr[ >]", t.split("</tbody>")[0].split("<tbody>")[1])) for t in tables]
    assert max(rows) == TABLE_ROWS  # 50-row tables were cut (into 40 + 10)
    assert all(t.count("<thead>") == 1 for t in tables)  # every piece has the header
    assert "".join(_bodies(cut)) == "".join(_bodies(page))  # every row, once, in order
    assert len(tables) > len(re.findall(r"<table[ >]", page))


def test_pdf_of_a_large_run_prints_every_rule_and_the_count_left_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 60 results over 50 rules (2 for the first ten, 1 for the rest); at most one per rule
    monkeypatch.setattr(report_module, "PDF_CAPS", Caps(1, 5, PDF_CAPS.rest, PDF_CAPS.rest_inputs))
    write_reports(build_large(60), tmp_path, ["pdf"])
    text = " ".join("\n".join(_page_texts(tmp_path / "report.pdf")).split())
    for n in range(50):
        assert f"RDY-{n:03d}" in text
    said = re.findall(
        r"1 more finding\(s\) of this rule not shown \(limit 1 per rule; report.html lists up "
        r"to 200 per rule, findings.json all\)",
        text,
    )
    assert len(said) == 10
    assert re.search(r"Contents.*p\.\s?\d+", text)  # the contents still give page numbers


class _Counted(io.BytesIO):
    """A file that counts the bytes read from it."""

    read_bytes = 0

    def read(self, size: int | None = -1) -> bytes:
        data = super().read(size)
        self.read_bytes += len(data)
        return data


def _hostile_table(tokens: int) -> bytes:
    """A cross-reference table at the start, then `trailer<<` over and over, then a trailer
    that names an information dictionary no row holds."""
    head = b"%PDF-1.7\nxref\n0 1\n0000000000 65535 f \n"
    body = b"trailer<< /Size 1 " * tokens
    end = b"trailer\n<< /Info 7 0 R >>\nstartxref\n9\n%%EOF\n"
    return head + body + end


def test_a_crafted_report_pdf_is_refused_reading_a_bounded_number_of_bytes(
    tmp_path: Path,
) -> None:
    """A file named report.pdf in `--out` that only looks like a PDF (thousands of `trailer<<`
    tokens, a stream whose `/Length` says 1.5 GB) is not auditor's, so it stays, and telling
    so reads a few KB of it (the trailer from the file's end, one row of the table) or a
    stream's data up to `_PDF_STREAM`, never what the file claims: no scan over a megabyte,
    no 1.5 GB read, no MemoryError."""
    from auditor.cli import outdir

    table = _Counted(_hostile_table(5_000))
    assert outdir._pdf_info(table) is None
    assert table.read_bytes <= 3 * 4096
    sparse = tmp_path / "report.pdf"
    with sparse.open("wb") as f:
        f.write(b"%PDF-1.7\n1 0 obj\n<< /Type /XRef /W [1 2 2] /Info 2 0 R")
        f.write(b" /Length 1500000000 >>\nstream\n")
        f.seek(1 << 25)  # sparse: 32 MB, a sixteen-MB cap on a stream's data
        f.write(b"\nendstream\nendobj\nstartxref\n9\n%%EOF\n")
    big = _Counted(sparse.read_bytes())
    with pytest.raises(ValueError, match="stream too long"):
        outdir._pdf_info(big)
    assert big.read_bytes <= 3 * 4096
    assert not outdir._pdf_by_auditor(sparse) and sparse.exists()


def _object_stream_bomb(pairs: int) -> bytes:
    """A PDF whose information dictionary (object 3) sits in an object stream (object 2) whose
    index claims `pairs` pairs: a 32 MB run of `0 0 ` that zlib packs into a few KB."""
    import zlib

    head = b"%PDF-1.7\n"
    objects = zlib.compress(b"0 0 " * pairs, 9)
    stream_at = len(head)
    stream = (
        (
            b"2 0 obj\n<< /Type /ObjStm /N %d /First %d /Length %d /Filter /FlateDecode >>\n"
            b"stream\n" % (pairs, 4 * pairs, len(objects))
        )
        + objects
        + b"\nendstream\nendobj\n"
    )
    xref_at = stream_at + len(stream)
    rows = bytes([0, 0, 0, 0, 0]) + bytes([1]) + xref_at.to_bytes(2, "big") + bytes(2)
    rows += bytes([1]) + stream_at.to_bytes(2, "big") + bytes(2)  # object 2: the stream
    rows += bytes([2, 0, 2, 0, 3])  # object 3: in object stream 2, at position 3
    xref = (
        (
            b"1 0 obj\n<< /Type /XRef /W [1 2 2] /Index [0 4] /Info 3 0 R /Size 4 /Length %d >>\n"
            b"stream\n" % len(rows)
        )
        + rows
        + b"\nendstream\nendobj\n"
    )
    return head + stream + xref + b"startxref\n%d\n%%%%EOF\n" % xref_at


def test_an_object_stream_claiming_millions_of_objects_is_read_only_as_far_as_needed() -> None:
    """A report.pdf whose information dictionary is in an object stream whose index claims
    8 million objects (a zlib bomb of a few KB) is read only up to the pairs it needs: telling
    it is not auditor's holds little memory (splitting the whole index held 400 MB)."""
    import tracemalloc

    from auditor.cli import outdir

    pdf = _object_stream_bomb(8_000_000)
    assert len(pdf) < 100_000
    tracemalloc.start()
    try:
        assert outdir._pdf_info(io.BytesIO(pdf)) is None
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 100 * 2**20, peak


def _pdfinfo() -> str:
    path = shutil.which("pdfinfo")
    if path is None:
        message = "pdfinfo is not installed (apt-get install poppler-utils, as .ci/run does)"
        missing_tool(message, "PDF TOOL", "PDF TEST")
    return path


def test_report_pdf_is_tagged_with_language_and_title(pdf: Path) -> None:
    info = subprocess.run(
        [_pdfinfo(), str(pdf)], capture_output=True, text=True, check=True, timeout=120
    ).stdout
    assert re.search(r"^Tagged:\s+yes$", info, re.M), info
    assert re.search(r"^Title:\s+Compliance report \S+$", info, re.M), info
    assert re.search(rb"/Lang ?\(en\)", _objects(pdf)), "no /Lang (en) in the catalog"


def _objects(pdf: Path) -> bytes:
    """The file's bytes with its compressed streams (object streams among them) inflated."""
    data = pdf.read_bytes()
    parts = [data]
    for m in re.finditer(rb"stream\r?\n", data):
        try:
            parts.append(zlib.decompressobj().decompress(data[m.end() : m.end() + 2_000_000]))
        except zlib.error:
            continue
    return b"\n".join(parts)


def test_structure_tree_has_headings_lists_and_tables_with_header_cells(pdf: Path) -> None:
    tree = subprocess.run(
        [_pdfinfo(), "-struct", str(pdf)], capture_output=True, text=True, check=True, timeout=300
    ).stdout
    kinds = {line.split()[0].rstrip(":") for line in tree.splitlines() if line.strip()}
    assert {"H1", "H2", "H3", "L", "LI", "Table", "THead", "TH", "TR", "TD", "Link"} <= kinds


WIDE_MODELS = [f"claude-sonnet-4-5-{n}-preview-2026" for n in range(7)]


@pytest.fixture(scope="module")
def wide_usage_pdf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """report.pdf of the fixed report with a usage chart of six long model names and `other`,
    without its findings (their pages are the demo's `pdf`'s to check): 6 pages, not 11."""
    from report_fixture import build_report_data

    names = WIDE_MODELS
    days = tuple(
        (
            f"2026-10-{d:02d}",
            {
                "tokens": {
                    "billable_tokens": 7 * 98_765_432,
                    "by_model": [{"model": m, "billable_tokens": 98_765_432} for m in names],
                }
            },
        )
        for d in range(1, 11)
    )
    view = usage_view(UsageInputs(days=days, window=("2026-10-01", "2026-10-10")))
    html = render_html(replace(build_report_data(), usage=view, findings=()), PDF_CAPS)
    path = tmp_path_factory.mktemp("wide") / "report.pdf"
    path.write_bytes(render_pdf(html))
    return path


@pytest.mark.parametrize("which", ["demo", "wide"])
def test_chart_tables_are_printed_within_the_page(
    pdf: Path, wide_usage_pdf: Path, which: str
) -> None:
    """The charts' figures (a `<details>` on screen) are printed open, and the usage table's
    columns, one per model with long names in their headers, fit the paper's width."""
    path = pdf if which == "demo" else wide_usage_pdf
    boxes = _pdftotext(path, "-bbox")
    text = unescape(" ".join(re.findall(r">([^<]*)</word>", boxes)))
    assert "The chart's figures: billable tokens per day and model" in text
    assert "The chart's figures: failing settings rules (not waived) per settings revision" in text
    width = float(re.findall(r'<page width="([\d.]+)"', boxes)[0])
    words = re.findall(r'<word xMin="[\d.]+" yMin="[\d.]+" xMax="([\d.]+)"[^>]*>([^<]*)<', boxes)
    # the usage table's figures ("24,860,697") and its last header ("ALL MODELS"): a word
    # past the paper's edge is left out of the text, or its box runs past the edge
    figures = [(x, w) for x, w in words if re.fullmatch(r"\d{1,3}(,\d{3})+|MODELS", w)]
    assert "MODELS" in [w for _, w in figures]
    if which == "wide":
        assert [w for _, w in figures].count("691,358,024") == 10  # every day's total
    outside = [w for x, w in figures if float(x) > width]
    assert outside == [], outside[:10]


def test_long_model_names_are_printed_whole_and_apart_within_the_margin(
    wide_usage_pdf: Path,
) -> None:
    """Review R37 #6: with six long model names the usage chart's legend (SVG text, which
    cannot wrap) printed its entries over each other, the last one past the paper's edge
    (`claude-sonnet-4-5-3-prev…` to x=596.5), and the table's headers broke inside a word
    (`PREVIEW-2` / `026`). The legend is the page's text now: every name whole on a line, no
    word over another, nothing past the margin."""
    assert _printed_over(wide_usage_pdf) == []
    past = _past_the_margin(wide_usage_pdf)
    assert past == [], past[:10]
    boxes = _pdftotext(wide_usage_pdf, "-bbox")
    words = [unescape(w) for w in re.findall(r">([^<]*)</word>", boxes)]
    for name in [*WIDE_MODELS[:6], "other"]:  # the seventh is charted as `other`
        assert name in words, name


def test_the_usage_tables_headers_break_only_between_the_parts_of_a_name(
    wide_usage_pdf: Path,
) -> None:
    """A header's line ends after a separator (`claude-`, `sonnet-4-5-0-`) or at the end of
    the name, and the next starts a part: a piece of a name that begins or ends inside a run
    of letters or digits (`PREVIEW-2` / `026`) is a word broken in two."""
    pages = _pdftotext(wide_usage_pdf, "-bbox").split("<page ")
    (page,) = [p for p in pages if "figures:</word>" in p and ">billable</word>" in p]
    head = re.split(r">(?:Day|DAY)</word>", page)[1].split(">2026-10-01</word>")[0]
    pieces = [unescape(w).lower() for w in re.findall(r">([^<]*)</word>", head)]
    assert pieces and "".join(pieces).count("claude-sonnet-4-5-0-preview-2026") == 1, pieces
    names = [n.lower() for n in WIDE_MODELS[:6]]
    broken = []
    for piece in pieces:
        for name in names:
            at = name.find(piece)
            if piece == name or at < 0:
                continue
            starts = at == 0 or not name[at - 1].isalnum()
            ends = at + len(piece) == len(name) or not piece[-1].isalnum()
            if not (starts and ends):
                broken.append(piece)
            break
    assert broken == [], broken
