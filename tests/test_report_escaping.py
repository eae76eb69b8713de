"""Hostile text in every field never becomes markup, links, mentions or terminal escapes."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from html.parser import HTMLParser
from xml.etree import ElementTree as ET

import pytest
from markupsafe import Markup, escape
from report_fixture import build_report_data

from auditor.common.escape import (
    clean_text,
    html_inline,
    md_inline,
    one_line,
    safe_url,
    shorten,
    terminal_text,
    xml_text,
)
from auditor.report import render_html, render_json, render_junit, render_markdown, render_sarif
from auditor.report.html import environment
from auditor.report.htmlrows import Escaper, html_escape
from auditor.report.model import ReportData

LONG = "L" * 100_000
HOSTILE = (
    '<script>alert(1)</script>"><img src=x onerror=alert(2)>javascript:alert(3) '
    "| pipe ``` tick @team #1 \x1b[31mred\x07\x00\x08 \u202egnp.exe\u2066 [x](javascript:y) "
    "&lt;b&gt;\r\nnext line " + LONG
)
RAW_CONTROLS = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\u202a-\u202e\u2066-\u2069]")
HTML_TAGS = {
    "html",
    "head",
    "meta",
    "title",
    "style",
    "body",
    "header",
    "div",
    "dl",
    "dt",
    "dd",
    "code",
    "strong",
    "ul",
    "li",
    "h1",
    "h2",
    "h3",
    "table",
    "thead",
    "tbody",
    "tr",
    "th",
    "td",
    "span",
    "p",
    "section",
    "br",
    "em",
    "a",
    "svg",
    "line",
    "text",
    "polygon",
    "polyline",
    "footer",
    "main",
    "details",
    "summary",
    "nav",
    "ol",
}


@pytest.fixture(scope="module", params=[False, True], ids=["run", "review"])
def hostile(request: pytest.FixtureRequest) -> ReportData:
    return build_report_data(HOSTILE, review=bool(request.param))


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: set[str] = set()
        self.attrs: list[tuple[str, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        self.attrs += [(k, v or "") for k, v in attrs]


def test_html_has_only_our_tags_attributes_and_links(hostile: ReportData) -> None:
    parser = _Tags()
    parser.feed(render_html(hostile))
    assert parser.tags <= HTML_TAGS
    assert not [k for k, _ in parser.attrs if k.startswith("on") or k in {"src", "srcdoc"}]
    hrefs = [v for k, v in parser.attrs if k == "href"]
    outside = [h for h in hrefs if not h.startswith("#")]
    assert all(h.startswith("https://") and "javascript:" not in h for h in outside)
    # in-page links are our own slugs and fingerprints, never text from data
    assert all(re.fullmatch(r"#[a-z0-9-]+", h) for h in hrefs if h.startswith("#"))


def test_html_text_has_no_controls_and_cuts_huge_values(hostile: ReportData) -> None:
    html = render_html(hostile)
    assert not RAW_CONTROLS.search(html)
    assert "[U+202E]" in html  # the bidi override is shown, not obeyed
    assert "more characters)" in html


def test_markdown_has_no_active_content(hostile: ReportData) -> None:
    md = render_markdown(hostile)
    assert len(md) <= 65536
    assert {t.lower() for t in re.findall(r"</?([A-Za-z]+)", md)} <= {
        "details",
        "summary",
        "code",
        "b",
        "sub",
    }
    assert "@team" not in md and not re.search(r"#1\b", md)
    assert not re.search(r"(?<!\\)`", md), "unescaped backtick"
    assert not re.search(r"(?<!\\)\]\(", md), "a link could form"
    assert not RAW_CONTROLS.search(md)
    assert max(len(line) for line in md.splitlines()) < 20_000


def test_markdown_table_rows_keep_their_column_count(hostile: ReportData) -> None:
    md = render_markdown(hostile)
    for block in re.split(r"\n\n+", md):
        rows = [ln for ln in block.splitlines() if ln.startswith("|")]
        widths = {len(re.findall(r"(?<!\\)\|", row)) for row in rows}
        assert len(widths) <= 1, block[:200]


def test_json_keeps_data_faithfully_and_inertly(hostile: ReportData) -> None:
    text = render_json(hostile)
    assert not RAW_CONTROLS.search(text)
    doc = json.loads(text)
    assert doc["findings"][0]["rule_id"].endswith(LONG)
    assert "\u202e" in doc["findings"][0]["rule_id"]  # escaped in the text, intact in the data


def test_sarif_parses_and_has_no_raw_controls(hostile: ReportData) -> None:
    text = render_sarif(hostile)
    assert not RAW_CONTROLS.search(text)
    uris = [
        r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
        for r in json.loads(text)["runs"][0]["results"]
    ]
    assert all(" " not in u and "<" not in u for u in uris)


def test_junit_is_well_formed_xml(hostile: ReportData) -> None:
    text = render_junit(hostile)
    assert not re.search("[\x00-\x08\x0b\x0c\x0e-\x1f]", text)
    root = ET.fromstring(text)
    assert root.tag == "testsuites"


@pytest.mark.parametrize(
    ("fn", "text", "expected"),
    [
        (md_inline, "a|b", "a\\|b"),
        (md_inline, "`x`", "\\`x\\`"),
        (md_inline, "<b>&", "&lt;b&gt;&amp;"),
        (md_inline, "ping @team", "ping @&#8203;team"),
        (md_inline, "see #12", "see #&#8203;12"),
        (md_inline, "a\n\nb", "a b"),
        (md_inline, "[x](javascript:y)", "\\[x\\]\\(javascript:y\\)"),
        (html_inline, "<i a='1'>@x #2", "&lt;i a=&#x27;1&#x27;&gt;@&#8203;x #&#8203;2"),
        (
            md_inline,
            ":shipit: https://e.example/a www.e.example :white_check_mark: 10:30:00",
            ":&#8203;shipit: https&#8203;://e.example/a www&#8203;.e.example "
            ":&#8203;white\\_check\\_mark: 10:30:00",
        ),
        (html_inline, ":+1: HTTP://e.example", ":&#8203;+1: HTTP&#8203;://e.example"),
        (
            md_inline,
            "_https://e.example \u00e9https://e.example _www.e.example :100: :1234:",
            "\\_https&#8203;://e.example \u00e9https&#8203;://e.example \\_www&#8203;.e.example "
            ":&#8203;100: :&#8203;1234:",
        ),
        (xml_text, "a\x00b\x1bc\ufffed", "abcd"),
        (terminal_text, "\x1b[31mred\x1b[0m\nnext", "\\u001b[31mred\\u001b[0m\\u000anext"),
        (clean_text, "x\u202ey", "x[U+202E]y"),
        (one_line, "a \r\n b\u2028c\n", "a b c "),
        (safe_url, "https://github.com/acme/x", "https://github.com/acme/x"),
        (safe_url, "javascript:alert(1)", ""),
        (safe_url, "data:text/html,<b>", ""),
        (safe_url, 'https://x.y/"><img', ""),
        (safe_url, "//evil.example/x", ""),
    ],
    ids=[
        "pipe",
        "backtick",
        "html",
        "mention",
        "issue-link",
        "newlines",
        "md-link",
        "html-inline",
        "md-autolink-emoji",
        "html-autolink-emoji",
        "autolink-glued-and-digit-emoji",
        "xml-forbidden",
        "terminal-escapes",
        "bidi",
        "one-line",
        "url-https",
        "url-javascript",
        "url-data",
        "url-quote",
        "url-scheme-relative",
    ],
)
def test_escape_functions(fn: object, text: str, expected: str) -> None:
    assert fn(text) == expected  # type: ignore[operator]


def test_html_rows_escape_exactly_as_the_template_does() -> None:
    """The report's rows are built in Python (`auditor.report.htmlrows`): their escaping must
    be the template's own (control characters dropped, bidi controls shown, the five markup
    characters as markupsafe writes them), for every character and for hostile text."""
    every = "".join(chr(c) for c in range(0x250)) + HOSTILE[:300] + "\u202e\u2066 \ud800"
    escaper = Escaper()
    for text in (every, HOSTILE, "plain", ""):
        expected = str(escape(clean_text(text)))
        assert html_escape(clean_text(text)) == expected
        assert escaper(text) == expected
        assert escaper(text) == expected  # from the cache
    assert escaper(Markup("<b>ours</b>")) == "<b>ours</b>"
    assert (escaper(None), escaper(3), escaper(True)) == ("None", "3", "True")


def test_shorten_says_how_much_was_cut() -> None:
    assert shorten("x" * 1005) == "x" * 1000 + "… (5 more characters)"
    assert shorten("short") == "short"


@pytest.mark.parametrize(
    "render",
    [render_json, render_sarif, render_junit, render_markdown, render_html],
    ids=["json", "sarif", "junit", "markdown", "html"],
)
def test_lone_surrogates_and_noncharacters_do_not_break_rendering(render: object) -> None:
    text = render(build_report_data("\ud800\ufffe"))  # type: ignore[operator]
    assert "SET-001" in text
    text.encode("utf-8")  # the file can be written


CODE_SPAN_ATTACKS = [
    "`<img src=x onerror=alert(1)>`",
    "`</code><script>alert(1)</script>`",
    "`@team #12 [x](javascript:y) | pipe`",
    "`\x1b[31m\u202e`",
]


@pytest.mark.parametrize("attack", CODE_SPAN_ATTACKS, ids=["img", "close-code", "md", "controls"])
def test_code_spans_in_prose_stay_inert(attack: str) -> None:
    base = build_report_data()
    first = replace(base.findings[0], remediation=f"Fix {attack} now", description=attack)
    data = replace(base, findings=(first, *base.findings[1:]))
    parser = _Tags()
    html = render_html(data)
    parser.feed(html)
    assert parser.tags <= HTML_TAGS and "<script" not in html and "<img" not in html
    assert not RAW_CONTROLS.search(html)
    md = render_markdown(data)
    assert "<script" not in md and "<img" not in md and "](javascript" not in md
    assert not RAW_CONTROLS.search(md)
    assert "@team" not in md and "#12" not in md


class _Shown:
    """A non-text value the template shows by `str` (e.g. a location)."""

    def __str__(self) -> str:
        return "<i>\x1b\u202eshown</i>"


class _Text(str):
    """A `str` subclass: not cached by the rows' escaper, escaped all the same."""


def test_html_rows_escape_every_kind_of_value_as_the_report_template_does() -> None:
    """The rows' escaper against the report's own jinja environment (its `finalize` and
    autoescape), not a restatement of it: text, numbers, null, booleans, markup and objects."""
    template = environment().from_string("{{ v }}")
    escaper = Escaper()
    values = [HOSTILE[:400], "", None, 0, -0.0, float("nan"), 10**30, True, False]
    values += [Markup("<b>ours</b>"), _Shown(), _Text('<a href="x">\x07'), ("<t>", 1)]
    for value in values:
        assert escaper(value) == template.render(v=value), repr(value)
        assert escaper(value) == template.render(v=value), repr(value)  # cached
