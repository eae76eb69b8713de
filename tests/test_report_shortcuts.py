"""The report writers' shortcuts give the bytes of the full cleaning they skip, for every
character: a character that `clean_text` or `xml_text` came to drop or rewrite, or one more
invisible character for `json_inert`, must not slip past a shortcut into a report unescaped.

- report.html passes alphanumeric text through its escaper as it is (`Escaper`, fingerprints),
  and escapes printable text without cleaning it;
- junit.xml and findings.sarif skip `xml_text`/`clean_text` for printable text, and JUnit
  escapes each line of a failure alone (cleaning must go character by character);
- findings.json, SARIF and OSCAL look for `json_inert`'s characters a lead byte at a time
  (`jsonout.inert_json`/`inert_utf8`) instead of `escape.inert_bytes`' one pattern.
"""

from __future__ import annotations

import sys

import orjson
from hypothesis import given
from hypothesis import strategies as st

from auditor.common.escape import clean_text, inert_bytes, xml_text
from auditor.report import junit, sarif
from auditor.report.html import environment
from auditor.report.htmlrows import Escaper, html_escape
from auditor.report.jsonout import inert_json, inert_utf8

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
