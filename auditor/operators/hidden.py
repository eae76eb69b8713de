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
decides equals / not_equals / in / not_in and the membership operators, on arrays and objects
too (walked leaf by leaf with the literal, `_equal`), and the change operators `from` / `to`
(`guarded_change`). `length` and `empty` read the marker's length. Other operators
(`starts_with`, `matches`, `gt`, `type` …) cannot look inside a hidden value:
`HiddenValueError`. A rule that speaks of markers itself (a literal or pattern holding
`[secret`, as the shipped packs' "no literal credential" rules do) is applied to the text as
it is.

A string holding a marker inside longer text (a token in a hook command) has its markers put
back where a literal of the rule matches one (for that comparison only); if markers remain,
equality is decided piece by piece (the literal must fit the visible text, and its piece at
each marker must have that marker), and a content test only by the visible text around the
markers, never by a marker's own text (`_VISIBLE`): a substring wholly in it, an affix that
fits in or differs from the text before the first / after the last marker, a regex match
clear of markers, or no match possible whatever the markers hide (each alternative anchored
at an end whose visible text rules out its literal head / tail, `anchored.ruled_out`: the
shipped `path matches '^\\$\\.hooks'` on `$.mcpAutonomyOverrides['[secret …]']`). The property
test `tests/test_hidden_decided.py` checks that any text put in place of the markers gives
the answer given. Anything else is `HiddenValueError` whichever way it would go: a `false`
read on the text is a silent pass under `not`, `none` or `when`. So every answer on a value
holding markers is exact or an error, whatever combinator is around it.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from auditor.common.paths import IDENT_CHARS, is_identifier
from auditor.common.spans import merge_spans
from auditor.operators.anchored import branches, ruled_out
from auditor.operators.core import (
    INDEX_FROM,
    SCOPE_LISTS,
    OperandTypeError,
    Ordered,
    need_substrings,
    same,
    scoped,
)
from auditor.redact import MARKER_RE, MARKER_START
from auditor.redact.redactor import number_text

MarkerOf = Callable[[str], str]  # a text -> its marker under the run's key
_MARKER_OF: ContextVar[MarkerOf | None] = ContextVar("auditor_marker_of", default=None)

# Decided exactly once every literal is known to differ from a marker no literal matches.
_EQUALITY = frozenset({"equals", "not_equals", "in", "not_in"})
_MEMBERSHIP = frozenset({"contains", "contains_all", "contains_any", "excludes", "subset_of"})
_NEGATIVE = frozenset({"not_matches", "excludes"})  # on a string: rule content out
_READS_LENGTH = frozenset({"length", "empty"})
_SHAPE = frozenset({"type"})
_HIDDEN_TYPES = frozenset({"string", "number", "integer"})  # what a marker may stand for
_DIRECTION = frozenset({"increased", "decreased"})
_PRESENCE = frozenset({"added", "removed", "changed"})  # markers compared as they are


@contextmanager
def fingerprinting(marker_of: MarkerOf | None) -> Iterator[None]:
    """Evaluate with `marker_of` (a redactor's `marker`) deciding comparisons with markers
    (each literal's marker made once: an HMAC per literal per value was wasted work)."""
    token = _MARKER_OF.set(None if marker_of is None else functools.lru_cache(4096)(marker_of))
    try:
        yield
    finally:
        _MARKER_OF.reset(token)


def current_marker_of() -> MarkerOf | None:
    """The marker function evaluations run with now (`fingerprinting`), or None: what an
    answer on a hidden value turns on, so a status kept between evaluations is kept under it."""
    return _MARKER_OF.get()


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
    deep = name in _EQUALITY or name in _MEMBERSHIP

    def run(actual: Any, *rest: Any) -> bool:
        kind = type(actual)
        if kind is str:
            if MARKER_START in actual:
                return _on_text(name, fn, actual, rest)
        elif deep and (kind is list or kind is dict) and actual and holds_marker(actual):
            if _speaks_of_markers(rest[0]):
                return fn(actual, *rest)
            if name in _EQUALITY:
                return _by_equality(name, fn, actual, rest)
            if kind is list:
                return _on_list(name, fn, actual, rest)
        return fn(actual, *rest)

    run.__doc__ = fn.__doc__
    run.__wrapped__ = fn  # type: ignore[attr-defined]
    return run


def guarded_change(name: str, fn: Callable[..., bool]) -> Callable[..., bool]:
    """A change operator, deciding by fingerprint when a side holds a marker: `from` / `to`
    read each side as the rule's literal where its markers are that literal's (else the side
    differs from it); `changed`, `added`, `removed` compare the markers themselves (one key:
    equal markers, equal values); `increased` / `decreased` read levels only."""

    def run(before: Any, after: Any, *rest: Any) -> bool:
        if name in _PRESENCE or not (holds_marker(before) or holds_marker(after)):
            return fn(before, after, *rest)
        arg = rest[0]
        if _speaks_of_markers(arg):
            return fn(before, after, *rest)
        marker_of = _MARKER_OF.get()
        literals = list(arg.levels) if isinstance(arg, Ordered) else [arg]
        sides = [_as_literal(name, side, literals, marker_of) for side in (before, after)]
        if name in _DIRECTION and (holds_marker(sides[0]) or holds_marker(sides[1])):
            side = "before" if holds_marker(sides[0]) else "after"  # a hidden number or level
            exc = HiddenValueError(name, before if side == "before" else after)
            exc.side = side
            raise exc
        return fn(*sides, *rest)

    run.__doc__ = fn.__doc__
    run.__wrapped__ = fn  # type: ignore[attr-defined]
    return run


def _as_literal(name: str, value: Any, literals: list[Any], marker_of: MarkerOf | None) -> Any:
    """The literal `value` is (its markers are that literal's parts), or `value` itself,
    which then differs from every literal; HiddenValueError when that turns on a marker and
    there is no key to read it by."""
    if not holds_marker(value):
        return value
    undecided = False
    for literal in literals:
        found = _equal(value, literal, marker_of)
        if found:
            return literal
        undecided = undecided or found is None
    if undecided:
        raise HiddenValueError(name, value)
    return value


def holds_marker(value: Any) -> bool:
    """`value` holds a marker somewhere."""
    kind = type(value)
    if kind is str:
        return MARKER_START in value
    if kind is list:
        try:
            return MARKER_START in "\0".join(value)  # at C speed when every item is a string
        except TypeError:
            return any(holds_marker(i) for i in value)
    if kind is dict:
        return any(holds_marker(i) for i in value.values())
    return False


def _equal(value: Any, literal: Any, marker_of: MarkerOf | None) -> bool | None:
    """Policy equality of `value` (which may hold markers) and `literal`, exact: a whole
    marker is the literal when the literal's marker is it, a marker inside text when the
    literal fits it (`_fits`); arrays and objects are walked together. None: it turns on a
    marker and there is no key (`marker_of` None) to read it by."""
    kind = type(value)
    if kind is str:
        if MARKER_START not in value:
            return same(value, literal)
        if type(literal) in (int, float):  # a hidden number
            if MARKER_RE.fullmatch(value) is None:
                return False
            return None if marker_of is None else marker_of(_text(literal)) == value
        if type(literal) is not str:
            return False
        if MARKER_RE.fullmatch(value) is None and not _fits(value, literal, None):
            return False  # the visible text differs
        if marker_of is None:
            return None
        return _fits(value, literal, marker_of)
    if kind is list or kind is dict:
        if type(literal) is not kind or len(value) != len(literal):
            return False
        pairs: list[tuple[Any, Any]]
        if kind is dict:
            other: Any = literal
            if value.keys() != other.keys():
                return False
            pairs = [(value[k], other[k]) for k in value]
        else:
            pairs = list(zip(value, literal, strict=True))
        undecided = False
        for v, x in pairs:
            found = _equal(v, x, marker_of)
            if found is False:
                return False
            undecided = undecided or found is None
        return None if undecided else True
    return same(value, literal)


def _candidates(name: str, arg: Any) -> list[Any]:
    """The rule's literals the value (or an item of it) is compared with."""
    if isinstance(arg, Ordered):
        return list(arg.levels)
    if name in ("equals", "not_equals"):
        return [arg]
    if isinstance(arg, list):
        return [arg, *arg] if name == "contains" else list(arg)
    return [arg]


def _by_equality(name: str, fn: Callable[..., bool], actual: Any, rest: tuple[Any, ...]) -> bool:
    """equals / not_equals / in / not_in on a value holding markers: the literal it is, if
    one (then exact, nothing shown), else it differs from every literal. Without the key, only
    what the visible parts decide (another shape, a visible leaf or text that differs)."""
    marker_of = _MARKER_OF.get()
    arg = rest[0]
    if (
        name in ("in", "not_in")
        and type(arg) is list
        and len(arg) >= INDEX_FROM
        and type(actual) is str
        and MARKER_RE.fullmatch(actual) is not None
    ):
        markers = _markers_of(arg, marker_of)
        if markers is not None:
            return fn(_whole_marker_as_literal(name, actual, markers, marker_of), *rest)
    return fn(_as_literal(name, actual, _candidates(name, arg), marker_of), *rest)


def _markers_of(literals: list[Any], marker_of: MarkerOf | None) -> dict[str, list[Any]] | None:
    """The literals a whole marker may be, by their marker (in order; none without the key:
    then only whether one is a string or a number, `_EITHER`), made once per list in one
    evaluation (`core.scoped`); None outside an evaluation. `_as_literal` made every literal's
    marker for every value: 4,000 redacted values `not_in` a `{ref: …}` list of 4,000 took
    110 s."""
    memo = scoped("markers")
    if memo is None:
        return None
    key = (id(literals), id(marker_of))
    found = memo.get(key)
    if found is not None and found[0] is literals and found[1] is marker_of:
        return found[2]  # type: ignore[no-any-return]
    markers: dict[str, list[Any]] = {}
    for literal in literals:
        if type(literal) in (str, int, float):
            if marker_of is None:
                markers[_EITHER] = [literal]
                break
            markers.setdefault(marker_of(_text(literal)), []).append(literal)
    if len(memo) >= SCOPE_LISTS:
        memo.clear()
    memo[key] = (literals, marker_of, markers)
    return markers


_EITHER = ""  # no marker is empty: the key `_markers_of` gives a string or number under


def _whole_marker_as_literal(
    name: str, value: str, markers: dict[str, list[Any]], marker_of: MarkerOf | None
) -> Any:
    """`_as_literal` of a value that is one whole marker, against the literals `markers`
    holds: only a string or number literal can be it, and only one whose marker is the value
    (`_equal`, asked of those only); without the key, any string or number leaves it
    undecided."""
    if marker_of is None:
        if markers:
            raise HiddenValueError(name, value)
        return value
    for literal in markers.get(value, ()):
        if _equal(value, literal, marker_of):
            return literal
    return value


def _literals(arg: Any) -> list[Any]:
    """The rule's literals a hidden value could be: strings and numbers."""
    items = arg if isinstance(arg, list) else [arg]
    if isinstance(arg, Ordered):
        items = list(arg.levels)
    return [i for i in items if type(i) in (str, int, float)]


def _text(literal: Any) -> str:
    return literal if isinstance(literal, str) else number_text(literal)


def _speaks_of_markers(arg: Any) -> bool:
    """A rule argument that is about markers themselves (`starts_with: "[secret "`); a long
    list's answer is kept for the evaluation (`core.scoped`)."""
    if isinstance(arg, str):
        return "[secret" in arg
    if isinstance(arg, list):
        memo = scoped("speaks") if type(arg) is list and len(arg) >= INDEX_FROM else None
        if memo is None:
            return any(isinstance(a, str) and "[secret" in a for a in arg)
        found = memo.get(id(arg))
        if found is not None and found[0] is arg:
            return found[1]  # type: ignore[no-any-return]
        speaks = any(isinstance(a, str) and "[secret" in a for a in arg)
        if len(memo) >= SCOPE_LISTS:
            memo.clear()
        memo[id(arg)] = (arg, speaks)
        return speaks
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
    if name in _EQUALITY:
        return _by_equality(name, fn, text, rest)
    marker_of = _MARKER_OF.get()
    whole = MARKER_RE.fullmatch(text)
    if name in _READS_LENGTH:  # the marker carries the hidden value's length
        return fn(MARKER_RE.sub(lambda m: "\0" * int(m["len"]), text), *rest)
    if name in _SHAPE:
        if whole is None:
            return fn(text, *rest)  # text around a marker: a string
        if rest[0] not in _HIDDEN_TYPES:  # `type: object` on a marker: the redactor hides
            return False  # strings and numbers, never an object, array, boolean or null
        raise HiddenValueError(name, text)  # the hidden value may have been a number
    literals = _literals(arg)
    if marker_of is not None and literals:
        if whole is not None:
            hidden = _matching(text, literals, marker_of)
            if hidden is not None:
                return fn(hidden, *rest)
        text = _put_back(text, literals, marker_of)
        if MARKER_START not in text:
            return fn(text, *rest)
    decide = _VISIBLE.get(name)
    found = None if decide is None else decide(text, arg)
    if found is None:
        raise HiddenValueError(name, text)
    return found


def _put_back(text: str, literals: list[Any], marker_of: MarkerOf) -> str:
    """`text` with each marker a literal of the rule matches replaced by that literal."""
    strings = [lit for lit in literals if isinstance(lit, str) and lit]

    def back(m: re.Match[str]) -> str:
        found = _matching(m[0], strings, marker_of)
        return m[0] if found is None else str(found)

    return MARKER_RE.sub(back, text)


#: A path's key written in brackets (`['…']`, `paths.render_component`). A key holding a marker
#: is written so whatever it was: the key it hides may have been an identifier, written
#: `.key`. So its `['` and `']` are no more the original text than the marker is (what lies
#: between them and the marker is the key's own text, in both ways of writing it).
_BRACKETED = re.compile(r"\['(?:[^'\\]|\\.)*'\]")


def _hidden_spans(text: str) -> list[tuple[int, int]]:
    """Where `text` holds what the original may not have, in order, merged: each marker, and
    the `['` and `']` around a path's key that holds one."""
    spans = [m.span() for m in MARKER_RE.finditer(text)]
    if not spans:
        return []
    for b in _BRACKETED.finditer(text):
        inner = text[b.start() + 2 : b.end() - 2]
        # brackets the original may not have: around a key holding a marker whose own text is
        # all such as an identifier holds (another character, and the key was written so)
        if MARKER_RE.search(inner) and IDENT_CHARS.issuperset(MARKER_RE.sub("", inner)):
            spans += [(b.start(), b.start() + 2), (b.end() - 2, b.end())]
    return merge_spans(spans)


def _visible(text: str) -> list[str]:
    """The parts of `text` the original surely holds as they are, in order (`_hidden_spans`
    between them): the first is a prefix of the original, the last a suffix."""
    if MARKER_START not in text:
        return [text]
    parts, at = [], 0
    for start, end in _hidden_spans(text):
        parts.append(text[at:start])
        at = end
    return [*parts, text[at:]]


def _strings(arg: Any) -> list[str]:
    return [a for a in (arg if isinstance(arg, list) else [arg]) if isinstance(a, str)]


def _contains(text: str, arg: Any) -> bool | None:
    """A substring is held when it lies wholly in the visible text (never in a marker's own
    text); a string argument found nowhere there may be in a hidden part: not decided."""
    need_substrings("contains", text, [arg])
    return True if any(arg in part for part in _visible(text)) else None


def _excludes(text: str, arg: Any) -> bool | None:
    unwanted = need_substrings("excludes", text, arg if isinstance(arg, list) else [arg])
    parts = _visible(text)
    if any(u in part for u in unwanted for part in parts):
        return False
    return None if unwanted else True


def _affix(end: int) -> Callable[[str, Any], bool | None]:
    """starts_with (`end` 0) / ends_with (-1): decided by the visible text before the first
    (after the last) marker when an affix fits in it or differs from it."""

    def decide(text: str, arg: Any) -> bool | None:
        edge = _visible(text)[end]
        undecided = False
        for affix in _strings(arg):
            if edge.startswith(affix) if end == 0 else edge.endswith(affix):
                return True
            if affix.startswith(edge) if end == 0 else affix.endswith(edge):
                undecided = True  # the affix runs on into the hidden part
        return None if undecided else False

    return decide


def _clear_match(text: str, pattern: Any) -> bool:
    """A match of `pattern` lies in the visible text (`_hidden_spans`), so the text the
    redactor saw matches too: with a visible character (or the text's end) on each side, or
    next to a hidden part when the pattern cannot look past its match there (no `\\b`, `\\B`
    or flag group: a `^` or `$` of the match holds only at the text's ends, which the first and
    last visible parts share with the original)."""
    spans = _hidden_spans(text)
    source = getattr(pattern, "pattern", None)
    looks_around = not isinstance(source, str) or any(
        sign in source for sign in ("\\b", "\\B", "(?")
    )
    margin = 1 if looks_around else 0
    for found in pattern.finditer(text):
        start, end = found.span()
        if all(end + margin <= s or start - margin >= e for s, e in spans):
            return True
    return False


#: A path ending in a key that is one marker: `…['[secret fp:… len:N]']`.
_LAST_KEY = re.compile(r"\['" + MARKER_RE.pattern + r"'\]\Z")


def _ends_as_hidden_key(tail: str, before: str, least: int) -> bool:
    """Whether `before + "." + K` can end with `tail`, for a key K written `.K` (an identifier)
    of `least` characters or more (a marker's hidden text is never shorter than its `len:`,
    the secret's: an encoding only adds characters)."""
    if IDENT_CHARS.issuperset(tail):
        return True  # a long enough K ends with it
    for k in range(max(least, 1), len(tail)):
        key, dot, rest = tail[-k:], tail[-k - 1], tail[: -k - 1]
        if dot == "." and is_identifier(key) and before.endswith(rest):
            return True
    return False


def _last_key_rules_out(source: str, before: str, least: int) -> bool:
    """No match of `source` is possible on a path `before` + a last key that is one marker,
    whichever way the original wrote that key: `['K']` (as shown) or `.K` (an identifier)."""
    found = branches(source)
    if not found or not ruled_out(source, before + "['", "']"):
        return False
    first = before + "."
    for branch in found:
        if branch.start and not any(
            first.startswith(h) or h.startswith(first) for h in branch.heads
        ):
            continue
        if branch.end and not any(_ends_as_hidden_key(t, before, least) for t in branch.tails):
            continue
        return False
    return True


def _search(text: str, pattern: Any) -> bool | None:
    """`matches`: a match clear of markers (`_clear_match`) is one whatever they hide; none
    is possible when every alternative of the pattern is anchored at an end whose literal
    text the visible text there rules out (`anchored.ruled_out`: `^\\$\\.hooks` on
    `$.mcpAutonomyOverrides['[secret …]']`), whatever they hide; else not decided."""
    if _clear_match(text, pattern):
        return True
    parts = _visible(text)
    source = getattr(pattern, "pattern", None)
    if not isinstance(source, str):
        return None
    if ruled_out(source, parts[0], parts[-1]):
        return False
    last = _LAST_KEY.search(text)
    # (that key all that is hidden: the visible text before it is all the text before it, not
    # up to an earlier hidden key whose `']` the spans joined with this key's `['`)
    if (
        last is not None
        and parts == [text[: last.start()], ""]
        and _last_key_rules_out(source, parts[0], int(last["len"]))
    ):
        return False
    return None


_VISIBLE: dict[str, Callable[[str, Any], bool | None]] = {
    "contains": _contains,
    "excludes": _excludes,
    "starts_with": _affix(0),
    "starts_with_any": _affix(0),
    "ends_with": _affix(-1),
    "matches": _search,
    "not_matches": lambda text, p: None if (found := _search(text, p)) is None else not found,
}


def _fits(text: str, literal: str, marker_of: MarkerOf | None) -> bool:
    """`literal` is `text` with each marker's hidden value in its place: the visible parts
    match, and the piece of the literal at each marker has that marker (its length and keyed
    fingerprint)."""
    markers = [m[0] for m in MARKER_RE.finditer(text)]
    visible = MARKER_RE.split(text)[::3]
    # A literal whose length is not the visible text's and the hidden lengths' together is
    # not it: said before a pattern is made, whose `.{N}` for a marker-shaped text of
    # `len:4294967296` (not the redactor's, but text it leaves as it is) is more than `re` can
    # compile (reviewer R94)
    lengths = sum(map(len, visible))
    for marker in markers:
        digits: str = MARKER_RE.fullmatch(marker)["len"]  # type: ignore[index]
        if len(digits) > 18:  # (longer than any text: and `int` refuses 4,300 digits)
            return False
        lengths += int(digits)
    if lengths != len(literal):
        return False
    pattern = (
        re.escape(visible[0])
        + "".join(
            f"(.{{{MARKER_RE.fullmatch(m)['len']}}})" + re.escape(v)  # type: ignore[index]
            for m, v in zip(markers, visible[1:], strict=True)
        )
    )
    found = re.fullmatch(pattern, literal, re.DOTALL)
    if found is None or marker_of is None:  # None: the visible parts and lengths only
        return found is not None
    return all(
        marker_of(piece) == marker for piece, marker in zip(found.groups(), markers, strict=True)
    )


def _on_list(name: str, fn: Callable[..., bool], items: list[Any], rest: tuple[Any, ...]) -> bool:
    """An array holding markers (at any depth), under a membership operator: an item that is a
    literal of the rule (`_equal`, by fingerprint) stands for it; the others differ from every
    literal."""
    marker_of = _MARKER_OF.get()
    arg = rest[0]
    literals = _candidates(name, arg)
    markers = _markers_of(arg, marker_of) if type(arg) is list and len(arg) >= INDEX_FROM else None
    if markers is None:
        return fn([_as_literal(name, item, literals, marker_of) for item in items], *rest)
    # a whole marker is found by the literals' markers (`contains`' whole list, one of its
    # candidates, is no string or number: no marker is it)
    return fn(
        [
            _whole_marker_as_literal(name, item, markers, marker_of)
            if type(item) is str and MARKER_RE.fullmatch(item) is not None
            else _as_literal(name, item, literals, marker_of)
            for item in items
        ],
        *rest,
    )
