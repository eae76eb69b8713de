"""The report writers' shortcuts give the bytes of the full cleaning they skip, for every
character: a character that `clean_text` or `xml_text` came to drop or rewrite, or one more
invisible character for `json_inert`, must not slip past a shortcut into a report unescaped.

- report.html passes alphanumeric text through its escaper as it is (`Escaper`, fingerprints),
  and escapes printable text without cleaning it;
- junit.xml and findings.sarif skip `xml_text`/`clean_text` for printable text, and JUnit
  escapes each line of a failure alone (cleaning must go character by character);
- findings.json, SARIF and OSCAL look for `json_inert`'s characters a lead byte at a time
  (`jsonout.inert_json`/`inert_utf8`) instead of `escape.inert_bytes`' one pattern, an E2 lead
  byte by `bytes.find` and the two bytes after it;
- report.html picks a rule's shown rows (`kept_rows`) from keys sorted once, not by heaps with
  a key function, and makes its chart's runs of revisions in one pass: the same rows and runs
  as the code they replace (kept here as the reference).
"""

from __future__ import annotations

import heapq
import re
import sys
from types import SimpleNamespace
from typing import Any

import orjson
from hypothesis import given
from hypothesis import strategies as st

from auditor.common.escape import clean_text, inert_bytes, xml_text
from auditor.report import charts, junit, sarif
from auditor.report.charts import Span
from auditor.report.html import environment, kept_rows
from auditor.report.htmlrows import Escaper, html_escape
from auditor.report.jsonout import _has_e2_invisible, inert_json, inert_utf8

EVERY = "".join(chr(c) for c in range(sys.maxunicode + 1) if not 0xD800 <= c <= 0xDFFF)


def test_printable_text_is_what_cleaning_it_gives() -> None:
    printable = "".join(ch for ch in EVERY if ch.isprintable())
    # Cleaning goes character by character (checked below), so one call checks each.
    assert clean_text(printable) == printable
    assert xml_text(printable) == printable
    assert sarif._clean(printable) == clean_text(printable)


def test_alphanumeric_text_is_what_escaping_it_gives() -> None:
    alnum = "".join(ch for ch in EVERY if ch.isalnum())
    assert Escaper()(alnum) == alnum  # the shortcut
    assert html_escape(clean_text(alnum)) == alnum  # what the escaper does to other text
    assert junit._text(alnum) == alnum  # JUnit's fingerprint line


#: Characters each escaping or cleaning step treats apart: markup, controls (C0, DEL, C1),
#: bidi controls, line and paragraph separators, lone surrogates, noncharacters, BOM.
HAZARDS = list("<>&\"'\x00\x07\t\n\r\x1b\x7f\x85\x9f\u061c\u200e\u200f\u2028\u2029")
HAZARDS += list("\u202a\u202e\u2066\u2069\ud800\udfff\ufffe\uffff\ufeff\u00a0\u2014")
_TEXT = st.lists(
    st.one_of(
        st.sampled_from(HAZARDS),
        st.characters(min_codepoint=0, max_codepoint=sys.maxunicode, exclude_categories=()),
        st.text(max_size=20),
    ),
    max_size=40,
).map("".join)


@given(st.lists(st.one_of(_TEXT, _TEXT.map(lambda t: t * 200)), min_size=1, max_size=4))
def test_the_html_escaper_writes_text_as_the_page_template_does(texts: list[str]) -> None:
    """`Escaper` (its printable and alphanumeric shortcuts, its cache) against the report's
    own environment's `{{ v }}` (finalize: `clean_text`; autoescape), on text full of every
    escaping hazard, long text included, each twice (the second from the cache)."""
    template = environment().from_string("{{ v }}")
    escaper = Escaper()
    for text in [*texts, *texts]:
        assert escaper(text) == template.render(v=text), repr(text[:80])


def test_the_lead_byte_scan_finds_every_character_the_pattern_finds() -> None:
    for ch in EVERY:
        raw = orjson.dumps(f"\u2014{ch}\u00e9")  # behind an em dash (E2 80 94), before C3 A9
        want = inert_bytes(raw)
        assert inert_json(raw) == want, hex(ord(ch))
        assert inert_utf8(raw) == want.encode("utf-8"), hex(ord(ch))


@given(st.lists(st.text(), max_size=5))
def test_junit_escapes_lines_alone_as_it_escaped_them_joined(lines: list[str]) -> None:
    assert "\n".join(junit._text(line) for line in lines) == junit._text("\n".join(lines))
    assert "".join(clean_text(line) for line in lines) == clean_text("".join(lines))


def test_the_e2_scan_finds_what_the_pattern_finds() -> None:
    pattern = re.compile(rb"\xe2(?:\x80[\x8e\x8f\xa8-\xae]|\x81[\xa6-\xa9])")
    pieces = [b"a", b"\xe2", b"\x80", b"\x81", b"\x8e", b"\xa5", b"\xa6", b"\xa9", b"\xaa", b"\xae"]
    pieces += [b"\xaf", b"\x94", b"\xe2\x80\x94", b"\xe2\x80", b"\xe2\x81"]
    texts = [b"", *pieces, *(a + b + c for a in pieces for b in pieces for c in pieces)]
    texts += [f"x{chr(c)}y\u2014".encode() for c in range(0x2000, 0x2100)]
    for raw in texts:
        assert _has_e2_invisible(raw) == (pattern.search(raw) is not None), raw


def _kept_rows_before(items: list[Any], cap: int) -> tuple[tuple[Any, ...], bool]:
    """`kept_rows` as it was written with `heapq.nlargest` and key functions (the reference)."""
    if len(items) <= cap:
        return tuple(items), False

    def new(n: int) -> bool:
        return bool(items[n].lifecycle == "new")

    if not any(f.subject.revision is not None for f in items):
        chosen = heapq.nlargest(cap, range(len(items)), key=lambda n: (new(n), -n))
        return tuple(items[n] for n in sorted(chosen)), False

    def revision(n: int) -> tuple[int, int]:
        rev = items[n].subject.revision
        return (-1 if rev is None else rev, n)

    newest = set(heapq.nlargest(cap // 2, range(len(items)), key=revision))
    rest = (n for n in range(len(items)) if n not in newest)
    more = heapq.nlargest(cap - len(newest), rest, key=lambda n: (new(n), *revision(n)))
    chosen = sorted(newest.union(more))
    kept = set(chosen)
    left = [revision(n) for n in range(len(items)) if n not in kept]
    oldest = max(left) < min(revision(n) for n in chosen)
    return tuple(items[n] for n in chosen), oldest


_RESULT = st.builds(
    lambda rev, life: SimpleNamespace(
        subject=SimpleNamespace(revision=rev), lifecycle=life, marks=(None, None, life, None)
    ),
    st.one_of(st.none(), st.integers(-3, 30)),
    st.sampled_from(["new", "persisting", None]),
)


@given(
    st.one_of(
        st.lists(_RESULT, max_size=60),
        st.lists(_RESULT.filter(lambda f: f.subject.revision is None), max_size=60),
    ),
    st.integers(-2, 40),
)
def test_kept_rows_keeps_the_rows_the_heaps_kept(items: list[Any], cap: int) -> None:
    def outcome(pick: Any) -> Any:
        try:
            return pick(items, cap)
        except ValueError as exc:  # a cap of 0 with revisions: nothing kept, both refuse
            return type(exc)

    assert outcome(kept_rows) == outcome(_kept_rows_before)


def _spans_before(points: list[tuple[int, int]]) -> list[Span]:
    runs: list[Span] = []
    for rev, count in sorted(points):
        last = runs[-1] if runs else None
        if last is not None and last.failing == count and last.last + 1 == rev:
            runs[-1] = Span(last.first, rev, count)
        else:
            runs.append(Span(rev, rev, count))
    return runs


@given(st.lists(st.tuples(st.integers(0, 50), st.integers(0, 3)), max_size=80))
def test_the_charts_runs_are_made_as_before(points: list[tuple[int, int]]) -> None:
    assert charts.spans(points) == _spans_before(points)
    chart = charts.failing_chart(points)
    assert chart is None or list(chart.spans) == _spans_before(points)
