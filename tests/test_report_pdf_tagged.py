"""report.pdf is a tagged PDF: a structure tree (headings, lists, tables with their header
cells) that screen readers follow, with the page's language and title; an untagged file gives
them one stream of text (WCAG 1.3.1; PDF techniques PDF9, PDF6). Checked on a real run's file
with poppler's `pdfinfo` (poppler-utils, installed by .ci/run)."""

from __future__ import annotations

import io
import os
import re
import shutil
import subprocess
import zlib
from pathlib import Path

import pytest

from auditor.cli import Context, main
from tests.conftest import FIXED_NOW

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def _pdfinfo() -> str:
    path = shutil.which("pdfinfo")
    if path is None:
        message = "pdfinfo is not installed (apt-get install poppler-utils, as .ci/run does)"
        if os.environ.get("CI"):
            pytest.fail(f"PDF TOOL MISSING IN CI: {message}")
        pytest.skip(f"PDF TEST SKIPPED: {message}")
    return path


@pytest.fixture(scope="module")
def pdf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("tagged")
    out, err = io.StringIO(), io.StringIO()
    ctx = Context(env={}, stdout=out, stderr=err, clock=lambda: FIXED_NOW, cwd=str(work))
    code = main(["demo", "--out", "r", "--revisions", "12", "--repos", "3", "-o", "pdf"], ctx)
    assert code in (0, 1), err.getvalue()
    return work / "r" / "report.pdf"


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
