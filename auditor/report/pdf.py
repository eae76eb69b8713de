"""The PDF report: the report page rendered for print by WeasyPrint (the optional `pdf` extra).

Takes the HTML text of the page written with `PDF_CAPS` (fewer results per rule and inputs than
report.html, each list saying how many more there are and where), gives the bytes of
`report.pdf`: A4, the running header (organisation and run id) and "page X of Y" footer of the
page's print stylesheet, table headers repeated on every page, rows kept whole, every section
expanded, and no table longer than `TABLE_ROWS` rows (a longer one is printed as several, each
with its header: WeasyPrint's time per table grows with the pages it spans). The contents block
and the cross-references gain page numbers. The file is tagged (a structure tree for screen
readers, with the page's language and title). Nothing is fetched: the page is self-contained and
every URL is refused.
"""

from __future__ import annotations

import importlib.util
import itertools
import re
from typing import Any, NoReturn

from auditor.errors import ReportError
from auditor.report.html import APPENDIX_ROWS, ROWS_PER_RULE, Caps

#: What to say when WeasyPrint is missing (the CLI says it before a run starts).
INSTALL_HINT = (
    "the pdf output needs WeasyPrint, which is not installed: "
    "pip install 'auditor[pdf]' (it also needs the Pango library: "
    "apt-get install libpango-1.0-0 libpangoft2-1.0-0)"
)

#: Print-only additions WeasyPrint understands (CSS Generated Content for Paged Media), kept
#: out of the page's own stylesheet so browsers and the HTML checker never see them. The results
#: tables (`findings`, and the controls' `drill`), nearly every table of a report, are laid out
#: with fixed column widths: an automatic layout measures every cell's text at every break
#: opportunity (`overflow-wrap: anywhere`) to size the columns, which took about half of
#: WeasyPrint's time (the demo's ~90 pages: 87-95 s of CPU, 36-42 s fixed).
#: The widths are the page's own (`th.c-*` in style.css.j2), but for the status column, wide
#: enough for "not applicable", which may wrap: a fixed column does not widen to its content,
#: and a word wider than its cell would be printed over the next. Headers, statuses and the
#: other cells the page keeps on one line may wrap on paper: the controls table's nine columns
#: did not fit the A4 width so, and its rule ids ran off the page. (This sheet is WeasyPrint's
#: user sheet: the page's author sheet wins over it but for `!important`.) The usage table's
#: headers, the models' names, break only where the page's `<wbr>` or a hyphen allows (never
#: inside a word, `PREVIEW-2` / `026`, but every 10 characters of a run no column holds),
#: printed as the API names them (not upper case).
_PAGED = """
nav.toc a[href^="#"]::after { content: " \\00a0p.\\00a0" target-counter(attr(href), page);
  color: #59636e; font-size: 0.9em; }
.rule p.muted a[href^="#"]::after {
  content: " (p.\\00a0" target-counter(attr(href), page) ")"; color: #59636e; }
table.pdf-cut { margin-bottom: 0; }
table.pdf-more { margin-top: 0; }
table.findings, table.drill { table-layout: fixed; }
table.findings th.c-status, table.drill th.c-status { width: 15% !important; }
th, td.nowrap, td .st { white-space: normal !important; }
details.chart-data th { overflow-wrap: normal !important; word-break: normal !important; }
details.chart-data th.model { text-transform: none !important; letter-spacing: 0 !important;
  font-size: 10.5px !important; }
p.legend span.nowrap { white-space: nowrap !important; }
"""

#: What the PDF lists of a long report: fewer results per rule and inputs than the HTML page,
#: each list ending with how many more there are and where they are (report.html, findings.json).
#: Every rule, its results' counts by status and every control's state are printed whatever the
#: size; the caps bound the pages (and so WeasyPrint's time and memory) on a long history.
PDF_CAPS = Caps(
    rows_per_rule=50,
    appendix_rows=250,
    rest=f"report.html lists up to {ROWS_PER_RULE} per rule, findings.json all",
    rest_inputs=f"report.html lists up to {APPENDIX_ROWS:,}, findings.json all",
    chart_rows=60,
)

#: The most body rows one table of the PDF holds: a longer table is printed as several tables
#: of at most this many rows, one after the other, each with the header. WeasyPrint lays a
#: table out again for every page it runs onto, so one table of a thousand rows cost minutes
#: (Kozea/WeasyPrint#1104, #1296); tables of 40 rows, a page or two each, cost the same per row.
TABLE_ROWS = 40

# A table as the report's template writes it: the opening tag, the header, the body's rows.
# Data never writes markup (every `<` from data is escaped), so every `<tr` here is a row.
_TABLE = re.compile(
    r"(?P<open><table(?: class=\"(?P<cls>[^\"]*)\")?>)\s*(?P<head><thead>.*?</thead>)\s*"
    r"<tbody>(?P<body>.*?)</tbody>\s*</table>",
    re.S,
)
_ROW = re.compile(r"<tr[ >]")


def split_tables(html: str, rows: int = TABLE_ROWS) -> str:
    """`html` with every table of more than `rows` body rows cut into tables of at most `rows`
    rows, each with the table's header (nothing else changes: every row, id and link stays)."""

    def cut(m: re.Match[str]) -> str:
        body = m.group("body")
        starts = [r.start() for r in _ROW.finditer(body)]
        if len(starts) <= rows:
            return m.group(0)
        cls = m.group("cls") or ""
        head = m.group("head")
        bounds = [*starts[::rows], len(body)]
        bounds[0] = 0
        pieces = []
        for n, (a, b) in enumerate(itertools.pairwise(bounds)):
            marks = [cls] if cls else []
            if n:
                marks.append("pdf-more")
            if b < len(body):
                marks.append("pdf-cut")
            shown = " ".join(marks)
            pieces.append(f'<table class="{shown}">\n{head}\n<tbody>{body[a:b]}</tbody>\n</table>')
        return "\n".join(pieces)

    return _TABLE.sub(cut, html)


def pdf_problem() -> str | None:
    """Why report.pdf cannot be made here (None: it can). Imports WeasyPrint, which loads
    Pango: asked only when the pdf output was chosen, so that a missing library is said before
    the run starts rather than after it (WeasyPrint installed without Pango is the usual case)."""
    if importlib.util.find_spec("weasyprint") is None:
        return INSTALL_HINT
    try:
        import weasyprint  # noqa: F401
    except (ImportError, OSError) as exc:  # OSError: WeasyPrint found, but not Pango
        return f"{INSTALL_HINT} ({exc})"
    return None


def _refuse(url: str, *args: Any, **kwargs: Any) -> NoReturn:
    raise ValueError(f"report.pdf fetches nothing (refused {url[:80]!r})")


def render_pdf(html: str) -> bytes:
    """`report.pdf` from the text of `report.html`; ReportError when WeasyPrint is missing or
    its libraries cannot be loaded."""
    try:
        import weasyprint  # optional: only the pdf output needs it
    except (ImportError, OSError) as exc:  # OSError: WeasyPrint found, but not Pango
        detail = "" if isinstance(exc, ModuleNotFoundError) else f" ({exc})"
        raise ReportError(INSTALL_HINT + detail) from None
    document = weasyprint.HTML(string=split_tables(html), url_fetcher=_refuse, media_type="print")
    # Tagged (a structure tree: headings, tables with their header cells, lists, reading order),
    # so that a screen reader reads the file as the page; its language and title come from the
    # page's `<html lang>` and `<title>`.
    data = document.write_pdf(stylesheets=[weasyprint.CSS(string=_PAGED)], pdf_tags=True)
    assert isinstance(data, bytes)
    return data
