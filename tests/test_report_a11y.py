"""What report.html gives readers who do not see it as drawn: the content in a `<main>`
landmark, each chart's figures as a table beside it (capped like the other tables, saying how
many rows are left out), the usage chart's colours at 3:1 or more against the white page with a
white gap between stacked segments (WCAG 1.4.11; not told apart by colour alone), and an empty
input list said as "None." rather than a table of one header row.

The browser checks (axe-core, reflow at 320 px) are in tests/test_report_axe.py."""

from __future__ import annotations

import re
from dataclasses import replace
from html.parser import HTMLParser
from typing import Any

import pytest
from report_fixture import build_report_data

from auditor.evaluate.model import UsageInputs
from auditor.report.charts import Span, spans
from auditor.report.html import CHART_ROWS, Caps, render_html
from auditor.report.pdf import PDF_CAPS
from auditor.report.usage import BACKGROUND, PALETTE, usage_view

DASH = "\N{EN DASH}"  # between the first and last revision of a row


def _luminance(colour: str) -> float:
    channels = [int(colour[i : i + 2], 16) / 255 for i in (1, 3, 5)]
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast(a: str, b: str) -> float:
    """WCAG 2.1's contrast ratio of two `#rrggbb` colours."""
    high, low = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def _day(day: str, models: dict[str, int]) -> tuple[str, dict[str, Any]]:
    by_model = [{"model": m, "billable_tokens": n} for m, n in models.items()]
    return day, {"tokens": {"billable_tokens": sum(models.values()), "by_model": by_model}}


def _usage(days: int) -> Any:
    first = "2026-01-01"
    series = tuple(
        _day(f"2026-{1 + d // 28:02d}-{1 + d % 28:02d}", {"claude-a": 1000 + d, "claude-b": 7})
        for d in range(days)
    )
    return usage_view(UsageInputs(days=series, window=(first, series[-1][0])))


class _Landmarks(HTMLParser):
    """Where each heading and table sits: inside `<main>` or not."""

    def __init__(self) -> None:
        super().__init__()
        self.depth = 0
        self.mains = 0
        self.outside: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "main":
            self.mains += 1
            self.depth += 1
        elif tag in {"h2", "h3", "table", "section", "nav", "details"} and not self.depth:
            self.outside.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag == "main":
            self.depth -= 1


@pytest.mark.parametrize("review", [False, True], ids=["run", "review"])
def test_content_is_in_one_main_landmark(review: bool) -> None:
    html = render_html(build_report_data(review=review))
    parser = _Landmarks()
    parser.feed(html)
    assert parser.mains == 1 and parser.outside == []
    # the header (banner) before it, the footer (contentinfo) after it, both children of body
    assert re.search(r"<body>\s*<header class=\"top\">.*?</header>\s*<main>", html, re.S)
    assert re.search(r"</main>\s*<footer>[^<]*</footer>\s*</body>", html)


def test_over_time_chart_has_its_figures_as_a_table() -> None:
    html = render_html(build_report_data())
    section = html.split('<h2 id="over-time">')[1].split("<h2")[0]
    table = section.split('<details class="chart-data">')[1].split("</details>")[0]
    rows = re.findall(r"<tr><td>([^<]*)</td><td class=\"num\">(\d+)</td></tr>", table)
    rows = [(revs.replace(DASH, "-"), n) for revs, n in rows]
    # (400, 0), (401-402, 1), (403-405, 2), (406-407, 1), (408, 2), (409-411, 3), (412, 4), (413, 5)
    assert rows == [
        ("400", "0"),
        ("401-402", "1"),
        ("403-405", "2"),
        ("406-407", "1"),
        ("408", "2"),
        ("409-411", "3"),
        ("412", "4"),
        ("413", "5"),
    ]
    assert "<summary>" in table and "more row(s)" not in table


def test_spans_join_only_consecutive_revisions_with_the_same_count() -> None:
    points = [(3, 2), (1, 2), (2, 2), (5, 2), (6, 1), (7, 1)]
    assert spans(points) == [Span(1, 3, 2), Span(5, 5, 2), Span(6, 7, 1)]
    assert spans([]) == []


@pytest.mark.parametrize("caps", [Caps(), PDF_CAPS], ids=["html", "pdf"])
def test_over_time_table_is_capped_keeping_the_newest(caps: Caps) -> None:
    counts = tuple((r, r % 2) for r in range(1, 1001))  # every revision its own row
    html = render_html(replace(build_report_data(), failing_by_revision=counts), caps)
    table = html.split('<details class="chart-data">')[1].split("</details>")[0]
    shown = re.findall(r"<tr><td>(\d+)</td>", table)
    assert len(shown) == caps.chart_rows and shown[-1] == "1000"  # the newest kept
    assert f"{1000 - caps.chart_rows} more row(s) not shown (the oldest" in table
    assert "findings.json lists every revision" in table


def test_usage_chart_has_its_daily_figures_as_a_table() -> None:
    view = _usage(5)
    html = render_html(replace(build_report_data(), usage=view))
    section = html.split('<h2 id="usage">')[1].split("<h2")[0]
    table = section.split('<details class="chart-data">')[1].split("</details>")[0]
    head = re.findall(r"<th[^>]*>([^<]*)</th>", table)
    assert head == ["Day", "claude-a", "claude-b", "All models"]
    rows = re.findall(r"<tr><td class=\"nowrap\">([^<]*)</td>(.*?)</tr>", table)
    assert [d for d, _ in rows] == [
        "2026-01-01",
        "2026-01-02",
        "2026-01-03",
        "2026-01-04",
        "2026-01-05",
    ]
    assert re.findall(r'<td class="num">([^<]*)</td>', rows[-1][1]) == ["1,004", "7", "1,011"]
    # every figure the bars' hover titles give is in the page's text
    for title in re.findall(r"<title>(\S+) (\S+): ([\d,]+) billable tokens</title>", section):
        day, model, figure = title
        row = dict(rows)[day]
        assert figure in row, (day, model, figure)


def test_usage_table_is_capped_keeping_the_newest() -> None:
    view = _usage(80)
    html = render_html(replace(build_report_data(), usage=view), replace(Caps(), chart_rows=30))
    table = html.split('<h2 id="usage">')[1].split('<details class="chart-data">')[1]
    table = table.split("</details>")[0]
    days = re.findall(r"<tr><td class=\"nowrap\">([^<]*)</td>", table)
    assert len(days) == 30 and days[-1] == view.days[-1].day
    assert "50 more day(s) not shown (the oldest" in table
    assert CHART_ROWS >= 90  # the page's cap holds a 90-day window whole


def test_usage_colours_reach_3_to_1_and_stacked_segments_are_parted_by_white() -> None:
    assert BACKGROUND == "#ffffff"
    low = {c: round(contrast(c, BACKGROUND), 2) for c in PALETTE if contrast(c, BACKGROUND) < 3}
    assert low == {}, f"series colours under 3:1 against the page: {low}"
    html = render_html(replace(build_report_data(), usage=_usage(5)))
    bars = re.findall(r"<rect class=\"bar\" [^>]*>", html)
    assert len(bars) == 10
    css = html.split("<style>")[1]
    assert re.search(r"svg\.chart \.bar \{ stroke: #fff; stroke-width: 1; \}", css)


@pytest.mark.parametrize("review", [False, True], ids=["run", "review"])
def test_empty_input_lists_say_none_not_an_empty_table(review: bool) -> None:
    data = build_report_data(review=review)
    data = replace(data, inputs=replace(data.inputs, revisions_evaluated=(), reports_evaluated=()))
    html = render_html(data)
    for heading in ("Settings revisions evaluated (0)", "Readiness reports evaluated (0)"):
        after = html.split(heading + "</h3>")[1]
        assert after.lstrip().startswith('<p class="muted">None.</p>'), after[:200]
    assert "<tbody>\n</tbody>" not in html


def test_print_expands_the_chart_tables() -> None:
    """A printed page and report.pdf hide nothing: closed `<details>` print open."""
    css = render_html(build_report_data()).split("<style>")[1]
    print_rules = css[css.index("@media print") :]
    assert "details::details-content { content-visibility: visible; }" in print_rules
