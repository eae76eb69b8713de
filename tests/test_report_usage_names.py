"""The usage section with long model names (review R37 #6): the legend is the page's text under
the chart (SVG text cannot wrap: its entries were printed over each other and past the paper's
edge), every model named there in full; the table's headers break a name only after a separator
(`sonnet-4-` / `5-0-`), never inside a run of letters or digits that a column holds; a run too
long for one may break every `HEAD_RUN` characters, and no name is ever shortened (two names
shortened alike made two columns look the same: review R40). report.pdf's own checks are in
test_report_pdf.py (the wide usage PDF)."""

from __future__ import annotations

import re
from dataclasses import replace
from html import unescape

from report_fixture import build_report_data

from auditor.evaluate.model import UsageInputs
from auditor.report.html import render_html
from auditor.report.usage import HEAD_RUN, header_pieces, usage_view

NAMES = [
    "claude-sonnet-4-5-0-preview-2026",
    "us.anthropic.claude-3-5-sonnet-20241022-v2:0",
    "customacmegptsuperlongmodelname",
    "(no model name)",
    "gpt-4o",
]


def _section(names: list[str]) -> str:
    days = tuple(
        (
            f"2026-10-{d:02d}",
            {
                "tokens": {
                    "billable_tokens": 1000 * len(names),
                    "by_model": [{"model": m, "billable_tokens": 1000} for m in names],
                }
            },
        )
        for d in range(1, 4)
    )
    view = usage_view(UsageInputs(days=days, window=("2026-10-01", "2026-10-03")))
    html = render_html(replace(build_report_data(), usage=view))
    return html.split('<h2 id="usage">Usage</h2>')[1].split("<h2")[0]


def test_header_pieces_break_after_a_separator_and_keep_every_name_whole() -> None:
    for name in NAMES:
        assert "".join(header_pieces(name)) == name  # never shortened
    assert header_pieces(NAMES[0]) == ("claude-sonnet-", "4-", "5-", "0-preview-", "2026")
    assert header_pieces(NAMES[2]) == ("customacme", "gptsuperlo", "ngmodelnam", "e")
    assert header_pieces("(no model name)") == ("(no model name)",)
    assert header_pieces("claude-a") == ("claude-a",)  # breaks the engines make stay theirs
    for name in [n for n in NAMES if n != NAMES[2]]:  # no run longer than a column holds
        for piece in header_pieces(name)[:-1]:
            assert not piece[-1].isalnum(), (name, piece)  # never inside a run
    assert all(len(p) <= HEAD_RUN for p in header_pieces(NAMES[2]))


def test_the_legend_names_every_model_in_full_and_the_svg_none() -> None:
    section = _section(NAMES)
    svg = section.split('<svg class="chart"')[1].split("</svg>")[0]
    texts = re.findall(r"<text [^>]*>([^<]*)</text>", svg)
    odd = [t for t in texts if not re.fullmatch(r"\d[\d.]*[kMG]?|\d\d-\d\d", t)]
    assert texts and odd == []  # the chart's own text: its axes' figures and days only
    legend = re.findall(r'<p class="legend">(.*?)</p>', section, re.S)[0]
    shown = [unescape(t) for t in re.findall(r"</svg>&nbsp;([^<]*)</span>", legend)]
    assert sorted(shown) == sorted(NAMES)


def test_two_long_names_alike_get_headers_as_different_as_the_names() -> None:
    """Two names that differ only past their first ten characters (review R40: both were
    `customacm…` over different figures)."""
    names = [*NAMES, "customacmegptsuperlongmodelnameB"]
    section = _section(names)
    table = section.split('<details class="chart-data">')[1].split("</details>")[0]
    heads = re.findall(r'<th class="num model"([^>]*)>(.*?)</th>', table)
    texts = [unescape(h.replace("<wbr>", "")) for _, h in heads]
    assert sorted(texts) == sorted(names)  # each model's header is its whole name
    assert "…" not in table and "shortened" not in section
