"""The PDF report: `report.html` rendered for print by WeasyPrint (the optional `pdf` extra).

Takes the HTML text, gives the bytes of `report.pdf`: A4, the running header (organisation and
run id) and "page X of Y" footer of the page's print stylesheet, table headers repeated on every
page, rows kept whole, every section expanded. The contents block and the cross-references gain
page numbers. Nothing is fetched: the page is self-contained and every URL is refused.
"""

from __future__ import annotations

import importlib.util
from typing import Any, NoReturn

from auditor.errors import ReportError

#: What to say when WeasyPrint is missing (the CLI says it before a run starts).
INSTALL_HINT = (
    "the pdf output needs WeasyPrint, which is not installed: "
    "pip install 'auditor[pdf]' (it also needs the Pango library: "
    "apt-get install libpango-1.0-0 libpangoft2-1.0-0)"
)

#: Print-only additions WeasyPrint understands (CSS Generated Content for Paged Media), kept
#: out of the page's own stylesheet so browsers and the HTML checker never see them.
_PAGED = """
nav.toc a[href^="#"]::after { content: " \\00a0p.\\00a0" target-counter(attr(href), page);
  color: #59636e; font-size: 0.9em; }
.rule p.muted a[href^="#"]::after {
  content: " (p.\\00a0" target-counter(attr(href), page) ")"; color: #59636e; }
"""


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
    document = weasyprint.HTML(string=html, url_fetcher=_refuse, media_type="print")
    data = document.write_pdf(stylesheets=[weasyprint.CSS(string=_PAGED)])
    assert isinstance(data, bytes)
    return data
