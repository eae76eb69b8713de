"""What report.html gives readers who do not see it as drawn: the content in a `<main>`
landmark, and an empty input list said as "None." rather than a table of one header row.

The browser checks (axe-core, reflow at 320 px) are in tests/test_report_axe.py."""

from __future__ import annotations

import re
from dataclasses import replace
from html.parser import HTMLParser

import pytest
from report_fixture import build_report_data

from auditor.report.html import render_html


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


@pytest.mark.parametrize("review", [False, True], ids=["run", "review"])
def test_empty_input_lists_say_none_not_an_empty_table(review: bool) -> None:
    data = build_report_data(review=review)
    data = replace(data, inputs=replace(data.inputs, revisions_evaluated=(), reports_evaluated=()))
    html = render_html(data)
    for heading in ("Settings revisions evaluated (0)", "Readiness reports evaluated (0)"):
        after = html.split(heading + "</h3>")[1]
        assert after.lstrip().startswith('<p class="muted">None.</p>'), after[:200]
    assert "<tbody>\n</tbody>" not in html
