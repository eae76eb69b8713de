"""Per-format escaping of data on its way into a report.

Takes any text from audited data, gives text that cannot change the meaning of its output:
control characters dropped, bidi overrides made visible, Markdown neutralised (pipes, backticks,
HTML, `@` mentions, `#123` links, newlines), XML stripped of characters XML 1.0 forbids, links
limited to http/https. HTML escaping itself is jinja2's autoescape.
"""

from __future__ import annotations

import html
import re
import unicodedata
from typing import Any

from auditor.common.jsonutil import canonical
from auditor.common.lazyre import lazy_regex

# C0 controls except tab/newline/CR, DEL, C1 controls (ESC starts terminal sequences) and lone
# surrogates (not encodable as UTF-8).
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]")
# Bidi embeddings, overrides, isolates and marks: shown as `[U+202E]` instead of obeyed; and
# the line and paragraph separators, a line break to some readers: a space, as a newline in a
# value reads in every format.
_BIDI = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]")
# Characters XML 1.0 forbids (beyond the controls above): surrogates and U+FFFE/U+FFFF.
_XML_FORBIDDEN = lazy_regex(globals(), "_XML_FORBIDDEN", "[\ud800-\udfff\ufffe\uffff]")
_NEWLINES = re.compile(r"\s*[\r\n]+\s*")
# What a plain-text reader takes for a new line (other breaking controls are dropped anyway).
_LINE_BREAKS = re.compile(r"\s*[\r\n\u2028\u2029]+\s*")
_MD_PUNCT = re.compile(r"([\\`*_{}\[\]()!|~])")
_MENTION = re.compile(r"@(?=\w)")
_ISSUE_REF = re.compile(r"(?<!&)#(?=\w)")  # not the '#' of an entity we wrote
# What GitHub makes live in Markdown text (a PR comment): an address it links without a link's
# syntax (GFM's extended autolinks: `https://…`, `www.…`) and an emoji shortcode (`:shipit:`;
# a `\_` escape inside one is gone once the Markdown is read). A zero-width space after the
# scheme or `www`, and after a shortcode's first colon, leaves the text as it reads, inert.
# Wherever they stand: GitHub links `_https://…`, `éhttps://…` and `_www.…` too (R83 #3).
_AUTOLINK = re.compile(r"(?:https?|ftp)(?=://)|www(?=\.)", re.IGNORECASE)
# A name with a letter (`+1`, `-1` too), or of three digits or more (`:100:`); not `10:30:00`.
_SHORTCODE = re.compile(r":(?=[\\\w+-]*[A-Za-z+-][\\\w+-]*:|\d{3,}:)")
_URL_OK = re.compile(r"^https?://[^\s\"'<>\\`]+$", re.IGNORECASE)

#: Longest value shown in full in HTML and Markdown; longer ones are cut with a count.
DISPLAY_LIMIT = 1000


def clean_text(text: str) -> str:
    """Drop control characters, make bidi controls visible, and a line or paragraph
    separator (U+2028, U+2029) a space."""
    text = _CONTROL.sub("", text)
    return text if text.isascii() else _BIDI.sub(_shown, text)


def _shown(m: re.Match[str]) -> str:
    char = m.group()
    return " " if char in "\u2028\u2029" else f"[U+{ord(char):04X}]"


def fold(text: str) -> str:
    """Clean and put on one line."""
    return _NEWLINES.sub(" ", clean_text(text)).strip()


def one_line(text: str) -> str:
    """`text` with its line breaks (and the blanks around them) as one space, nothing else
    changed, so that a value in a line of plain text (JUnit, a SARIF message) cannot start a
    line of its own. No scan for ASCII text without CR or LF (the common case)."""
    if text.isascii() and "\n" not in text and "\r" not in text:
        return text
    return _LINE_BREAKS.sub(" ", text)


def shorten(text: str, limit: int = DISPLAY_LIMIT) -> str:
    """Cut `text` to `limit` characters, saying how many more there were."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text) - limit} more characters)"


def show_value(value: Any) -> str:
    """A JSON value as compact, canonical JSON text (strings quoted)."""
    try:
        return canonical(value).decode("utf-8")
    except TypeError:
        return repr(value)


def md_inline(text: str, limit: int = DISPLAY_LIMIT) -> str:
    """Escape text for Markdown inline content or a table cell (one line, nothing active)."""
    return md_escape(shorten(fold(text), limit))


def md_escape(text: str, *, links: bool = False) -> str:
    """Escape one-line, cleaned text for Markdown (keeps its spaces; see `md_inline`).
    `links`: the text is a policy's own prose (a rule's description or remediation, from the
    user's or the base branch's policy files), whose addresses and emoji stay live (a runbook
    link); data never is (`_inert`)."""
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    text = _MD_PUNCT.sub(r"\\\1", text)
    text = _ISSUE_REF.sub("#&#8203;", text)  # before mentions: their entity holds a '#'
    text = _MENTION.sub("@&#8203;", text)
    return text if links else _inert(text)


def _inert(text: str) -> str:
    """No autolink and no emoji in `text` (Markdown, or HTML inside Markdown): an address or
    a `:shortcode:` in a value a pull request proposes stays as written, not a link or an
    emoji in the bot's comment (tester T96 #4)."""
    if ":" not in text and "w" not in text and "W" not in text:
        return text
    return _SHORTCODE.sub(":&#8203;", _AUTOLINK.sub(r"\g<0>&#8203;", text))


def xml_text(text: str) -> str:
    """Text XML 1.0 accepts (the serializer escapes markup characters)."""
    text = clean_text(text)
    return text if text.isascii() else _XML_FORBIDDEN.sub("", text)


def terminal_text(text: str) -> str:
    """Text for a terminal: control, format (bidi) and line-break characters from data are
    shown as `\\uXXXX`, never obeyed, so data cannot drive the terminal or hide a change."""
    if text.isprintable():
        return text
    return "".join(
        ch if ch.isprintable() and unicodedata.category(ch) != "Cf" else f"\\u{ord(ch):04x}"
        for ch in text
    )


def safe_url(url: str) -> str:
    """`url` when it is a plain http(s) address, else the empty string."""
    url = url.strip()
    return url if _URL_OK.match(url) and not _CONTROL.search(url) else ""


def html_inline(text: str, limit: int = DISPLAY_LIMIT) -> str:
    """Escape text for raw HTML inside Markdown (e.g. `<summary>`): entities, no mentions."""
    text = html.escape(shorten(fold(text), limit), quote=True)
    text = text.replace("`", "&#96;").replace("[", "&#91;").replace("]", "&#93;")
    text = _ISSUE_REF.sub("#&#8203;", text)
    return _inert(_MENTION.sub("@&#8203;", text))


_JSON_INVISIBLE = lazy_regex(
    globals(),
    "_JSON_INVISIBLE",
    "[\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]",
)


def json_inert(text: str) -> str:
    r"""Serialized JSON with bidi controls, DEL/C1 and line separators written as `\uXXXX`."""
    return _JSON_INVISIBLE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


# `_JSON_INVISIBLE`'s characters as UTF-8 bytes: DEL, C1 (C2 80-9F), U+061C (D8 9C), U+200E-F,
# U+2028-9, U+202A-E (E2 80 ..) and U+2066-9 (E2 81 ..). Exact, so text that merely shares a
# lead byte with them (an em dash is E2 80 94) is not scanned again as text.
_INVISIBLE_UTF8 = lazy_regex(
    globals(),
    "_INVISIBLE_UTF8",
    rb"\x7f|\xc2[\x80-\x9f]|\xd8\x9c|\xe2\x80[\x8e\x8f\xa8-\xae]|\xe2\x81[\xa6-\xa9]",
)


def inert_bytes(raw: bytes) -> str:
    """Decode serialized UTF-8 JSON and apply `json_inert`, skipping the text scan when none
    of its characters is in the bytes (the common, large case)."""
    text = raw.decode("utf-8")
    if not _INVISIBLE_UTF8.search(raw):  # DEL is ASCII: no `isascii` shortcut
        return text
    return json_inert(text)


_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def printable(text: str) -> str:
    """`text` on one line with every character kept, one that does not print (a line break,
    a tab, a control or format character) written as its escape (`\\n`, `\\t`, `\\u200b`)."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else _escape(c) for c in text)


def _escape(char: str) -> str:
    code = ord(char)
    return _ESCAPES.get(char) or (f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}")
