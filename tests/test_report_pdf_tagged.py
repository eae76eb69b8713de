"""report.pdf is a tagged PDF: a structure tree (headings, lists, tables with their header
cells) that screen readers follow, with the page's language and title; an untagged file gives
them one stream of text (WCAG 1.3.1; PDF techniques PDF9, PDF6). Checked on a real run's file
with poppler's `pdfinfo` (poppler-utils, installed by .ci/run). The charts' tables of figures
are printed, within the page's width."""

from __future__ import annotations

import re
import shutil
import subprocess
import zlib
from dataclasses import replace
from html import unescape
from pathlib import Path

import pytest

from auditor.evaluate.model import UsageInputs
from auditor.report.html import render_html
from auditor.report.pdf import PDF_CAPS, render_pdf
from auditor.report.usage import usage_view
from tests.conftest import missing_tool

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def _pdfinfo() -> str:
    path = shutil.which("pdfinfo")
    if path is None:
        message = "pdfinfo is not installed (apt-get install poppler-utils, as .ci/run does)"
        missing_tool(message, "PDF TOOL", "PDF TEST")
    return path


@pytest.fixture
def pdf(demo_pdf: Path) -> Path:
    """The demo's report.pdf (tests/conftest.py makes it once for the PDF test modules)."""
    return demo_pdf


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


@pytest.fixture(scope="module")
def wide_usage_pdf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """report.pdf of the fixed report with a usage chart of six long model names and `other`."""
    from report_fixture import build_report_data

    names = [f"claude-sonnet-4-5-{n}-preview-2026" for n in range(7)]
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
    html = render_html(replace(build_report_data(), usage=view), PDF_CAPS)
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
    tool = _pdfinfo().removesuffix("pdfinfo") + "pdftotext"
    boxes = subprocess.run(
        [tool, "-bbox", str(path), "-"], capture_output=True, text=True, check=True, timeout=300
    ).stdout
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
