"""Shape limits on a response body: nesting depth and duplicate keys, checked on the raw bytes.

Takes the body's bytes and its parsed value, gives nothing, a `DataError` naming the JSON path
where the nesting passes `MAX_DEPTH` (checked before anything walks the value recursively), or
the duplicate keys the parser dropped (orjson keeps the last value silently). Both checks work
on bytes at C speed: the depth by peeling empty pairs off the brackets outside strings (both
kinds written as one, `()`, so a level takes one `replace`) up to `MAX_DEPTH` times, the
duplicates by counting `:` before and after an orjson round trip; only a body whose counts
differ is parsed a second time, with `json`'s `object_pairs_hook`, to name the keys (a
100-revision page of 0.5 MB: about 1 ms for both checks, 8 ms more with duplicates).
A body that is exactly what orjson writes back for its parsed value (the service's pages as a
rule: no spaces, the same escapes) has neither a key twice nor a wide integer, and is known so
by one comparison of bytes, without counting anything or looking for long runs of digits.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import orjson

from auditor.common import paths
from auditor.errors import DataError

#: The deepest nesting accepted in an API response (objects and arrays, the body itself is 1).
MAX_DEPTH = 64

_NOT_SHAPE = bytes(b for b in range(256) if b not in b'[]{}"')
#: Both kinds of bracket as one (valid JSON nests them properly, so the depth is the same).
_ONE_KIND = bytes.maketrans(b"[]{}", b"()()")
_ESCAPED_COLONS = (b"\\u003a", b"\\u003A")

Path = tuple[str | int, ...]


@dataclass(frozen=True)
class Duplicate:
    """A key sent twice in one object (the value kept is the last one), or, with `problem`,
    another value the parser could not keep as sent (an integer beyond 64 bits)."""

    path: Path  # the object holding the key; with `problem`, the value itself
    key: str
    problem: str = ""  # what the warning says instead of "key … sent twice"
    repaired: bool = False  # text that was not UTF-8, read with U+FFFD (`auditor.fetch.text`)


def _skeleton(body: bytes) -> bytes:
    """The brackets and quotes of valid JSON `body`, in order, escaped quotes left out, every
    `[` and `{` written `(` and every `]` and `}` written `)`: one table pass over the body."""
    # Escapes read left to right as the parser does: after dropping `\\` then `\"`, every
    # quote left opens or closes a string (neither drop takes a bracket with it).
    if b"\\" in body:
        body = body.replace(b"\\\\", b"").replace(b'\\"', b"")
    return body.translate(_ONE_KIND, _NOT_SHAPE)


def _brackets(skeleton: bytes) -> bytes:
    """The brackets outside strings, in order, from a body's `_skeleton`."""
    # Two quotes in a row (a string with no bracket in it, or the gap between two strings)
    # go together without changing which quotes open a string: most of them, cheaply.
    # (The skeleton holds no colon: they were a table pass more here.)
    quotes = skeleton.replace(b'""', b"")
    return b"".join(quotes.split(b'"')[::2])


def deeper_than(body: bytes, limit: int = MAX_DEPTH) -> bool:
    """True if valid JSON `body` nests objects/arrays more than `limit` levels deep."""
    return _deeper(_skeleton(body), limit)


def _deeper(skeleton: bytes, limit: int) -> bool:
    brackets = _brackets(skeleton)
    for _ in range(limit):
        if not brackets:
            return False
        brackets = _peel(brackets)
    return bool(brackets)


def _peel(brackets: bytes) -> bytes:
    """Drop every innermost pair `()` (an empty array or object once strings and the pairs
    inside are gone): one level, in one left-to-right pass at memchr speed (`replace` does not
    look again at what it wrote, so an outer pair they close, `(())`, stays for the next)."""
    return brackets.replace(b"()", b"")


def _children(value: Any) -> Iterator[tuple[str | int, Any]]:
    if isinstance(value, dict):
        return iter(value.items())
    if isinstance(value, list):
        return enumerate(value)
    return iter(())


def deep_path(value: Any, limit: int = MAX_DEPTH) -> Path:
    """The path of the first container nested deeper than `limit` (iterative: no recursion)."""
    stack: list[tuple[Any, Path]] = [(value, ())]
    while stack:
        node, path = stack.pop()
        if not isinstance(node, dict | list):
            continue
        if len(path) >= limit:
            return path
        stack.extend((child, (*path, key)) for key, child in _children(node))
    return ()


def _check_depth(skeleton: bytes, value: Any, where: str) -> None:
    """Raise `DataError` naming the path when the body nests deeper than `MAX_DEPTH`."""
    if _deeper(skeleton, MAX_DEPTH):
        path = paths.render(deep_path(value)[:8])
        raise DataError(
            f"{path}…: nested deeper than {MAX_DEPTH} levels, the limit for API data ({where})"
        )


#: The most values (scalars, arrays, objects) one response may hold. A page of 100 revisions
#: holds 10,000s; sync memory grows by about 290 bytes a value (10 million zeros in one
#: revision took 2.9 GB and 16 s), so this keeps a page within a few hundred MB.
MAX_VALUES = 1_000_000

_STRUCTURE = bytes(b for b in range(256) if b not in b'",[]{}')


def count_values(body: bytes) -> int:
    """About how many values `body` holds (commas and containers outside strings, plus one:
    never fewer than there are), or 0 when its length, or a first bound at memchr speed,
    shows it is under `MAX_VALUES` (a page of 2 MB or less costs nothing). Checked on the
    bytes, before the parser builds anything."""
    if len(body) <= 2 * MAX_VALUES:  # a value and what separates it take two bytes at least
        return 0
    bound = body.count(b",") + body.count(b"[") + body.count(b"{") + 1
    if bound <= MAX_VALUES:
        return 0
    if b"\\" in body:  # escapes as `_skeleton` reads them: every quote left is a string's
        body = body.replace(b"\\\\", b"").replace(b'\\"', b"")
    outside = b"".join(body.translate(None, _STRUCTURE).split(b'"')[::2])
    return outside.count(b",") + outside.count(b"[") + outside.count(b"{") + 1


def check_shape(body: bytes, value: Any, where: str) -> tuple[Duplicate, ...]:
    """Raise `DataError` when the body nests deeper than `MAX_DEPTH`; else its `duplicates`,
    both from one pass over the body's bytes, and the integers it could not keep exactly."""
    skeleton = _skeleton(body)
    _check_depth(skeleton, value, where)
    written = _written(value)
    if written == body:
        # The body is what orjson writes back for what it read: no member was dropped (an
        # object written back has each key once) and no integer became a float (written back
        # with a `.` or an exponent). The usual case, at memcmp speed.
        return ()
    return _duplicates(body, value, _colons(body), written) + inexact_integers(body, value)


def _written(value: Any) -> bytes | None:
    """`value` as orjson writes it (None when it cannot: not from orjson's parser)."""
    try:
        return orjson.dumps(value)
    except TypeError:
        return None


#: Digits as `0`, `-` as itself, anything else as a space: a run of 20 digits (the shortest
#: integer beyond 64 bits, 2^64) or `-` and 19 (below -2^63, -9223372036854775809) is then
#: found by a substring search, at memchr speed (a regular expression took twice the parse
#: time).
_DIGITS = bytes(0x30 if 0x30 <= b <= 0x39 else b if b == 0x2D else 0x20 for b in range(256))
_LONG_RUN = b"0" * 20
_LONG_NEGATIVE = b"-" + b"0" * 19


def inexact_integers(body: bytes, value: Any) -> tuple[Duplicate, ...]:
    """Integers beyond 64 bits, which orjson reads as the nearest float: each with its path.

    Only a body with a run of 20 digits, or of `-` and 19, somewhere (a string too) is parsed
    again, by `json`, which keeps integers exact; the two readings are compared value by value."""
    shape = body.translate(_DIGITS)
    if _LONG_RUN not in shape and _LONG_NEGATIVE not in shape:
        return ()
    try:
        exact = json.loads(body)
    except ValueError:  # an integer over Python's 4,300 digits: orjson refused it already
        return ()
    found: list[Duplicate] = []
    stack: list[tuple[Any, Any, Path]] = [(exact, value, ())]
    while stack:
        sent, read, path = stack.pop()
        if type(sent) is int and type(read) is float:
            digits = len(str(abs(sent)))
            problem = (
                f"an integer of {digits} digits does not fit in 64 bits; read as the nearest "
                f"number, {read!r} (not exact)"
            )
            found.append(Duplicate(path, "", problem))
        elif isinstance(sent, dict) and isinstance(read, dict):
            stack.extend((v, read.get(k), (*path, k)) for k, v in sent.items())
        elif isinstance(sent, list) and isinstance(read, list):
            stack.extend(
                (v, r, (*path, i)) for i, (v, r) in enumerate(zip(sent, read, strict=False))
            )
    return tuple(sorted(found, key=lambda d: paths.render(d.path)))


def too_deep_to_parse(error: ValueError) -> bool:
    """True when orjson refused the body for its own nesting limit (1,024 levels)."""
    text = str(error).lower()
    return "depth limit" in text or "recursion" in text


def _colons(body: bytes) -> int:
    """Colons as orjson writes them back: `\\u003a` in a string is one too. (Only a body
    that is not orjson's own writing is counted: see `check_shape`.)"""
    colons = body.count(b":")
    if b"\\" not in body:  # no escape at all (the usual case): nothing more to count
        return colons
    return colons + sum(body.count(escaped) for escaped in _ESCAPED_COLONS)


class _Object(dict[str, Any]):
    """A parsed object that remembers the keys it was given more than once."""

    dropped: tuple[str, ...] = ()


def _pairs(pairs: list[tuple[str, Any]]) -> _Object:
    obj = _Object(pairs)
    if len(obj) < len(pairs):
        seen: set[str] = set()
        repeated: list[str] = []
        for key, _ in pairs:
            (repeated.append if key in seen else seen.add)(key)
        obj.dropped = tuple(repeated)
    return obj


def duplicates(body: bytes, value: Any) -> tuple[Duplicate, ...]:
    """Keys the parser dropped from `value` (parsed from `body`), each with its object's path."""
    return _duplicates(body, value, _colons(body), _written(value))


def _duplicates(
    body: bytes, value: Any, colons: int, written: bytes | None
) -> tuple[Duplicate, ...]:
    if written is not None and colons == written.count(b":"):
        return ()  # every member survived (a dropped member takes its own `:` with it)
    found: list[Duplicate] = []
    stack: list[tuple[Any, Path]] = [(json.loads(body, object_pairs_hook=_pairs), ())]
    while stack:
        node, path = stack.pop()
        found.extend(Duplicate(path, key) for key in getattr(node, "dropped", ()))
        stack.extend((child, (*path, key)) for key, child in _children(node))
    return tuple(sorted(found, key=lambda d: (paths.render(d.path), d.key)))
