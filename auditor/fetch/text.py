"""Text repair: a body whose JSON is valid but whose text is not all UTF-8 is still read.

Takes the bytes the parser refused (and the charset the response declared), gives the value
parsed from a repaired copy and the JSON path of every string value or object key that had to
be repaired, or `None` when the body is not JSON even once repaired. Only the slow path: the
parser reads a good body first, and this runs only when it refuses one.

Repairs: a byte sequence that is not UTF-8 becomes U+FFFD (as Python's `replace` decoding
does), and so does a `\\uD800`-`\\uDFFF` escape that is not half of a surrogate pair. A body
declared in another charset (`Content-Type: application/json; charset=iso-8859-1`) that is not
UTF-8 is read in that charset instead (one that is UTF-8 is read as UTF-8, whatever it
declares; a name longer than 40 characters, RFC 2978's limit, or one that is not a charset but
a Python codec, `unicode_escape`, or UTF-7, which can spell `,[{` in letters, is ignored). The
limits on a body's values hold for the text it is read as: `check` sees it before it is parsed.
A repaired string keeps the rest of its text, so redaction still sees a secret next to a bad
byte.
"""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson

from auditor.common.lazyre import lazy_regex
from auditor.fetch.shape import MAX_DEPTH

Path = tuple[str | int, ...]
_Link = tuple["_Link", str | int] | None  # a path as a link to its parent's

#: A surrogate pair escape (kept), a lone surrogate escape (repaired) or any other escape
#: (kept: `\\\\` is consumed whole, so `\\\\ud800` is text, not an escape).
_ESCAPE = lazy_regex(
    globals(),
    "_ESCAPE",
    rb"(?P<pair>\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2})"
    rb"|(?P<lone>\\u[dD][89a-fA-F][0-9a-fA-F]{2})"
    rb"|\\.",
    re.DOTALL,
)
_MAYBE_SURROGATE = lazy_regex(globals(), "_MAYBE_SURROGATE", rb"\\u[dD][89a-fA-F]")
_SURROGATE = lazy_regex(globals(), "_SURROGATE", "[\ud800-\udfff]")
_REPLACEMENT = b"\\ufffd"
_HIGH = lazy_regex(globals(), "_HIGH", rb"\\u[dD][89abAB][0-9a-fA-F]{2}")
_CHUNK = 1 << 20  # more than 6: a piece can always end before a high surrogate's escape
_UTF8 = frozenset({"utf-8", "utf8", "utf_8", "u8", "utf-8-sig"})
#: RFC 2978: a charset name is at most 40 characters (a longer one is not looked up: Python
#: keeps every name it was asked for, a hostile server's too).
_MAX_CHARSET = 40
#: Codecs that are not charsets a server can mean (they read escapes or host names), and
#: UTF-7, which spells JSON's structure in letters (WHATWG: never to be supported).
_NOT_CHARSETS = frozenset({"unicode-escape", "raw-unicode-escape", "idna", "punycode", "utf-7"})


@dataclass(frozen=True)
class Repaired:
    """A body read after repair: its value, the paths repaired (a key's path ends with the key
    as repaired), and the charset it was read in when not UTF-8."""

    value: Any
    body: bytes  # the repaired bytes the value was parsed from (the shape checks read them)
    strings: tuple[Path, ...]
    keys: tuple[Path, ...]
    charset: str = ""  # the declared charset it was read in; "" when read as UTF-8


def _escape(match: re.Match[bytes]) -> bytes:
    return _REPLACEMENT if match.lastgroup == "lone" else match[0]


def repair_bytes(body: bytes) -> bytes:
    """`body` with invalid UTF-8 and lone surrogate escapes replaced by U+FFFD."""
    if _MAYBE_SURROGATE.search(body):
        body = _escapes_repaired(body)
    return body.decode("utf-8", "replace").encode("utf-8")


def _escapes_repaired(body: bytes) -> bytes:
    """`body` with its lone surrogate escapes replaced, a piece of about `_CHUNK` bytes at a
    time: `re.sub` joins what it kept and replaced, and `bytes.join` takes 80 bytes a piece (a
    60 MB page of lone escapes, 10 million pieces, took 880 MB more in one go). A piece ends
    where an escape starts (`masked`: with every `\\` masked, as the parser reads them left to
    right, each backslash left starts one), never between the halves of a pair."""
    masked = body.replace(b"\\\\", b"\0\0")
    pieces: list[bytes] = []
    start = 0
    while start < len(body):
        cut = masked.find(b"\\", start + _CHUNK)
        if cut < 0:
            cut = len(body)
        elif _HIGH.fullmatch(masked, cut - 6, cut):
            cut -= 6
        pieces.append(_ESCAPE.sub(_escape, body[start:cut]))
        start = cut
    return b"".join(pieces)


def declared_charset(content_type: str) -> str:
    """The `charset` parameter of a Content-Type, lower case ("" when none)."""
    for param in content_type.split(";")[1:]:
        name, _, value = param.partition("=")
        if name.strip().lower() == "charset":
            return value.strip().strip('"').lower()
    return ""


def _transcoded(body: bytes, charset: str) -> bytes | None:
    """`body` read in a declared charset other than UTF-8, as UTF-8; None if it is not one,
    or if `body` is UTF-8 (the parser refused it for another reason, a lone surrogate escape:
    read in the declared charset its text would change)."""
    if not charset or charset in _UTF8 or len(charset) > _MAX_CHARSET:
        return None
    try:
        name = codecs.lookup(charset).name
    except (LookupError, ValueError):
        return None
    if name in _UTF8 or name in _NOT_CHARSETS or _is_utf8(body):
        return None
    try:
        return body.decode(name).encode("utf-8", "surrogatepass")
    except (LookupError, UnicodeError, ValueError):
        return None


def _is_utf8(body: bytes) -> bool:
    try:
        body.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def repair(
    body: bytes, charset: str = "", check: Callable[[bytes], None] | None = None
) -> Repaired | None:
    """The body read after repair, or None when it is not JSON even then. `check` (which may
    raise) sees a body read in its declared charset before it is parsed: its structure is not
    the one of the bytes sent (whose values were counted), UTF-16 or Shift JIS bytes can hide
    commas and brackets from a count on them."""
    transcoded = _transcoded(body, charset)
    if transcoded is not None:
        if check is not None:
            check(transcoded)
        # the paths first: the copies `json` reads are gone before the repaired value is built
        strings, keys = _damaged(transcoded)
        fixed = repair_bytes(transcoded)
        try:
            return Repaired(orjson.loads(fixed), fixed, strings, keys, charset)
        except orjson.JSONDecodeError:
            pass
    strings, keys = _damaged(body)
    fixed = repair_bytes(body)
    try:
        return Repaired(orjson.loads(fixed), fixed, strings, keys)
    except orjson.JSONDecodeError:
        return None


def _damaged(body: bytes) -> tuple[tuple[Path, ...], tuple[Path, ...]]:
    """The paths of the strings and keys `repair_bytes` changes, read by a parser that keeps
    what it cannot decode (`json` reads a lone surrogate escape as it is; a byte that is not
    UTF-8 is kept as one by `surrogateescape`). Its answer is used only for a body the repair
    made valid."""
    try:
        original = json.loads(body.decode("utf-8", "surrogateescape"))
    except (ValueError, RecursionError):
        return ((),), ()  # cannot say where: the whole body is named
    strings: list[Path] = []
    keys: list[Path] = []
    if isinstance(original, str) and _SURROGATE.search(original):
        strings.append(())
    # A node's path is a link to its parent's (built out only for a string repaired): a copy
    # of the whole path for each of a wide array's values took memory times its depth. Nothing
    # deeper than `MAX_DEPTH` is walked: such a body fails the depth check after this (a 0.6 MB
    # page 900 levels deep took 26 s and 2.1 GB here before it did).
    stack: list[tuple[dict[str, Any] | list[Any], _Link, int]] = []
    if isinstance(original, dict | list):
        stack.append((original, None, 1))
    while stack:
        node, link, depth = stack.pop()
        children = node.items() if isinstance(node, dict) else enumerate(node)
        for key, child in children:
            if isinstance(key, str) and _SURROGATE.search(key):
                key = fix(key)
                keys.append(_path((link, key)))
            if isinstance(child, str):
                if _SURROGATE.search(child):
                    strings.append(_path((link, key)))
            elif isinstance(child, dict | list) and depth < MAX_DEPTH:
                stack.append((child, (link, key), depth + 1))
    return tuple(sorted(strings, key=repr)), tuple(sorted(keys, key=repr))


def _path(link: _Link) -> Path:
    keys: list[str | int] = []
    while link is not None:
        link, key = link
        keys.append(key)
    return tuple(reversed(keys))


def fix(text: str) -> str:
    """`text` with every lone surrogate replaced by U+FFFD."""
    return _SURROGATE.sub("\ufffd", text)
