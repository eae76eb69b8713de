"""Operators on redacted values: a marker is judged by its keyed fingerprint, never by its text.

Takes an operator's function and what it is applied to; gives the operator's answer where it
can be decided, and `HiddenValueError` (an `error` result, never a silent pass) where it cannot.
A value the redactor hid reads `[secret fp:1a2b3c4d len:40]`: a secret by its place, or any
value equal to a remembered secret (an `env` value copied into `dataRegion`). Its text is not
its content, so comparing the text with a rule's literal gave wrong answers both ways
(`dataRegion not_in [us-east-1]` passed on a hidden `us-east-1`).

With the run's marker function set (`fingerprinting`, the redactor of the run's state or
files), a literal of the rule whose marker is the value's marker *is* the hidden value (same
key, same fingerprint, same length), and the operator is applied to that literal, so the result
is exact and nothing is shown; a marker no literal matches differs from every literal, which
decides equals / not_equals / in / not_in and the membership operators on arrays. `length` and
`empty` read the marker's length. Other operators (`starts_with`, `matches`, `gt` …) cannot look
inside a hidden value: `HiddenValueError`. A rule that speaks of markers itself (a literal or
pattern holding `[secret`, as the shipped packs' "no literal credential" rules do) is applied
to the text as it is.

A string holding a marker inside longer text (a token in a hook command) has its markers put
back where a literal of the rule matches one (for that comparison only); if markers remain,
equality is decided piece by piece (the literal must fit the visible text, and its piece at
each marker must have that marker), a positive operator (contains, matches, starts_with …) is
applied to the text as it is (a hidden part can only make it hold more often: a `false` is a
failure shown, not a silent pass), and a negative one (excludes, not_matches) that would hold is
`HiddenValueError`, as the hidden part may hold what it rules out.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from auditor.operators.core import OperandTypeError, Ordered
from auditor.redact import MARKER_RE
from auditor.redact.redactor import number_text

_MARKER = "[secret fp:"
MarkerOf = Callable[[str], str]  # a text -> its marker under the run's key
_MARKER_OF: ContextVar[MarkerOf | None] = ContextVar("auditor_marker_of", default=None)

# Decided exactly once every literal is known to differ from a marker no literal matches.
_EQUALITY = frozenset({"equals", "not_equals", "in", "not_in"})
_MEMBERSHIP = frozenset({"contains", "contains_all", "contains_any", "excludes", "subset_of"})
_NEGATIVE = frozenset({"not_matches", "excludes"})  # on a string: rule content out
_READS_LENGTH = frozenset({"length", "empty"})
_SHAPE = frozenset({"type"})


@contextmanager
def fingerprinting(marker_of: MarkerOf | None) -> Iterator[None]:
    """Evaluate with `marker_of` (a redactor's `marker`) deciding comparisons with markers
    (each literal's marker made once: an HMAC per literal per value was wasted work)."""
    token = _MARKER_OF.set(None if marker_of is None else functools.lru_cache(4096)(marker_of))
    try:
        yield
    finally:
        _MARKER_OF.reset(token)


class HiddenValueError(OperandTypeError):
    """The operator would have to read a value the redactor hid."""

    def __init__(self, op: str, actual: Any) -> None:
        super().__init__(
            "a value that is not redacted",
            actual,
            f"the value is redacted (a secret, or equal to a remembered one), so `{op}` "
            "cannot be decided on it",
        )


def guarded(name: str, fn: Callable[..., bool]) -> Callable[..., bool]:
    """`fn`, deciding by fingerprint when the value holds a marker (see the module)."""
    lists = name in _MEMBERSHIP

    def run(actual: Any, *rest: Any) -> bool:
        kind = type(actual)
        if kind is str:
            if _MARKER in actual:
                return _on_text(name, fn, actual, rest)
        elif kind is list and lists and actual and _holds_marker(actual):
            return _on_list(name, fn, actual, rest)
        return fn(actual, *rest)

    run.__doc__ = fn.__doc__
    run.__wrapped__ = fn  # type: ignore[attr-defined]
    return run


def _holds_marker(items: list[Any]) -> bool:
    try:
        return _MARKER in "\0".join(items)  # at C speed when every item is a string
    except TypeError:
        return any(type(i) is str and _MARKER in i for i in items)


def _literals(arg: Any) -> list[Any]:
    """The rule's literals a hidden value could be: strings and numbers."""
    items = arg if isinstance(arg, list) else [arg]
    if isinstance(arg, Ordered):
        items = list(arg.levels)
    return [i for i in items if type(i) in (str, int, float)]


def _text(literal: Any) -> str:
    return literal if isinstance(literal, str) else number_text(literal)


def _speaks_of_markers(arg: Any) -> bool:
    """A rule argument that is about markers themselves (`starts_with: "[secret "`)."""
    if isinstance(arg, str):
        return "[secret" in arg
    if isinstance(arg, list):
        return any(isinstance(a, str) and "[secret" in a for a in arg)
    pattern = getattr(arg, "pattern", None)
    return isinstance(pattern, str) and "[secret" in pattern


def _matching(marker: str, literals: list[Any], marker_of: MarkerOf) -> Any:
    """The literal whose marker is `marker` (the hidden value), or None."""
    for literal in literals:
        if marker_of(_text(literal)) == marker:
            return literal
    return None


def _on_text(name: str, fn: Callable[..., bool], text: str, rest: tuple[Any, ...]) -> bool:
    arg = rest[0]
    if _speaks_of_markers(arg):
        return fn(text, *rest)
    marker_of = _MARKER_OF.get()
    literals = _literals(arg)
    whole = MARKER_RE.fullmatch(text)
    if whole is not None:
        if marker_of is not None:
            hidden = _matching(text, literals, marker_of)
            if hidden is not None:
                return fn(hidden, *rest)
            if name in _EQUALITY:
                return fn(text, *rest)  # differs from every literal
        if name in _READS_LENGTH:
            return fn("\0" * int(whole["len"]), *rest)
        if name in _SHAPE:
            return fn(text, *rest)
        raise HiddenValueError(name, text)
    if marker_of is not None and literals:
        text = _put_back(text, literals, marker_of)
        if _MARKER not in text:
            return fn(text, *rest)
    if name in _EQUALITY:
        if marker_of is None:
            raise HiddenValueError(name, text)
        for literal in literals:
            if isinstance(literal, str) and _fits(text, literal, marker_of):
                return fn(literal, *rest)
        return fn(text, *rest)
    held = fn(text, *rest)
    if held and name in _NEGATIVE:
        raise HiddenValueError(name, text)
    return held


def _put_back(text: str, literals: list[Any], marker_of: MarkerOf) -> str:
    """`text` with each marker a literal of the rule matches replaced by that literal."""
    strings = [lit for lit in literals if isinstance(lit, str) and lit]

    def back(m: re.Match[str]) -> str:
        found = _matching(m[0], strings, marker_of)
        return m[0] if found is None else str(found)

    return MARKER_RE.sub(back, text)


def _fits(text: str, literal: str, marker_of: MarkerOf) -> bool:
    """`literal` is `text` with each marker's hidden value in its place: the visible parts
    match, and the piece of the literal at each marker has that marker (its length and keyed
    fingerprint)."""
    markers = [m[0] for m in MARKER_RE.finditer(text)]
    visible = MARKER_RE.split(text)[::3]
    pattern = (
        re.escape(visible[0])
        + "".join(
            f"(.{{{MARKER_RE.fullmatch(m)['len']}}})" + re.escape(v)  # type: ignore[index]
            for m, v in zip(markers, visible[1:], strict=True)
        )
    )
    found = re.fullmatch(pattern, literal, re.DOTALL)
    return found is not None and all(
        marker_of(piece) == marker for piece, marker in zip(found.groups(), markers, strict=True)
    )


def _on_list(name: str, fn: Callable[..., bool], items: list[Any], rest: tuple[Any, ...]) -> bool:
    """An array holding markers, under a membership operator: each marker that a literal of
    the rule matches stands for that literal; the others differ from every literal."""
    arg = rest[0]
    if _speaks_of_markers(arg):
        return fn(items, *rest)
    marker_of = _MARKER_OF.get()
    if marker_of is None:
        raise HiddenValueError(name, items)
    literals = _literals(arg)
    out: list[Any] = []
    for item in items:
        if type(item) is str and _MARKER in item:
            if MARKER_RE.fullmatch(item):
                hidden = _matching(item, literals, marker_of)
            else:
                fit = (lit for lit in literals if isinstance(lit, str))
                hidden = next((lit for lit in fit if _fits(item, lit, marker_of)), None)
            out.append(item if hidden is None else hidden)
        else:
            out.append(item)
    return fn(out, *rest)
