"""What an anchored regex needs at a text's start or end: the literal text every match begins
(ends) with, read from the pattern's source.

Takes an RE2 pattern's source; gives, per top-level alternative, whether it is anchored at the
text's start (`^`, `\\A`) or end (`$`, `\\z`: RE2 without `(?m)`, so the text's very end) and
the literal heads (tails) every match of it starts (ends) with. `hidden` uses them to decide
`matches` / `not_matches` on a text holding markers: an anchored alternative whose every head
disagrees with the visible text before the first marker (every tail with the text after the
last) matches no text the markers could stand for (`^\\$\\.hooks` on
`$.mcpAutonomyOverrides['[secret …]']`).

Sound by construction, never complete: a construct it does not model (a class, `.`, `\\d`, a
quantifier that may repeat zero times) ends the literal part there (a shorter head is a weaker
claim), and one whose meaning it does not know for sure (a flag group such as `(?i)` or
`(?m)`, `\\x41`, `\\pL`, `\\Q…\\E`, a `{` that is no repetition) gives up on the whole pattern:
nothing is claimed.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

# Literal heads/tails are cut short (claiming less) past this many alternatives.
_MAX_AFFIXES = 256

_LITERAL_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "f": "\f", "v": "\v", "a": "\a"}
_OPAQUE_ESCAPES = frozenset("dDwWsSbB")  # a class or a zero-width test: no literal, no argument
_REPEAT_CHARS = frozenset("0123456789,")


class _GiveUp(Exception):
    """A construct whose meaning is not modelled for sure: claim nothing about the pattern."""


# A parsed pattern: ("lit", c) | ("any",) | ("start",) | ("end",) | ("rep", node, min)
# | ("seq", [node]) | ("alt", [node]).
Node = tuple[object, ...]
Affixes = frozenset[tuple[str, bool]]  # (literal, complete: the node's whole match)

_NOTHING: Affixes = frozenset({("", False)})
_EMPTY: Affixes = frozenset({("", True)})


@dataclass(frozen=True)
class Branch:
    """A top-level alternative: anchored at the start / end, and the literals every match of
    it starts / ends with (one of them)."""

    start: bool
    end: bool
    heads: frozenset[str]
    tails: frozenset[str]


class _Parser:
    def __init__(self, source: str) -> None:
        self.s = source
        self.i = 0

    def parse(self) -> Node:
        node = self._alt()
        if self.i != len(self.s):
            raise _GiveUp  # an unbalanced `)`
        return node

    def _alt(self) -> Node:
        branches = [self._seq()]
        while self.i < len(self.s) and self.s[self.i] == "|":
            self.i += 1
            branches.append(self._seq())
        return ("alt", branches)

    def _seq(self) -> Node:
        items: list[Node] = []
        while self.i < len(self.s) and self.s[self.i] not in "|)":
            atom = self._atom()
            items.append(self._repeat(atom))
        return ("seq", items)

    def _atom(self) -> Node:
        s, c = self.s, self.s[self.i]
        self.i += 1
        if c == "(":
            if s.startswith("?:", self.i):
                self.i += 2
            elif s.startswith("?P<", self.i) or s.startswith("?<", self.i):
                close = s.find(">", self.i)
                if close < 0:
                    raise _GiveUp
                self.i = close + 1
            elif s.startswith("?", self.i):
                raise _GiveUp  # flags: (?i) changes what a literal matches, (?m) the anchors
            node = self._alt()
            if self.i >= len(s) or s[self.i] != ")":
                raise _GiveUp
            self.i += 1
            return node
        if c == "[":
            self._skip_class()
            return ("any",)
        if c == ".":
            return ("any",)
        if c == "^":
            return ("start",)
        if c == "$":
            return ("end",)
        if c in "*+?{}":
            raise _GiveUp  # a repetition of nothing, or a brace RE2 may read as a literal
        if c == "\\":
            if self.i >= len(s):
                raise _GiveUp
            e = s[self.i]
            self.i += 1
            if e == "A":
                return ("start",)
            if e == "z":
                return ("end",)
            if e in _LITERAL_ESCAPES:
                return ("lit", _LITERAL_ESCAPES[e])
            if e in _OPAQUE_ESCAPES:
                return ("any",)
            if e.isascii() and not e.isalnum():
                return ("lit", e)
            raise _GiveUp  # \x41, \pL, \Q…\E, \C, \1 …: not modelled
        return ("lit", c)

    def _skip_class(self) -> None:
        s = self.s
        if s.startswith("^", self.i):
            self.i += 1
        if s.startswith("]", self.i):  # a `]` first is a literal
            self.i += 1
        while self.i < len(s):
            c = s[self.i]
            if c == "\\":
                self.i += 2
                continue
            if s.startswith("[:", self.i):
                close = s.find(":]", self.i + 2)
                if close < 0:
                    raise _GiveUp
                self.i = close + 2
                continue
            self.i += 1
            if c == "]":
                return
        raise _GiveUp

    def _repeat(self, atom: Node) -> Node:
        s = self.s
        while self.i < len(s) and s[self.i] in "*+?{":
            c = s[self.i]
            if c == "{":
                close = s.find("}", self.i)
                body = s[self.i + 1 : close] if close > 0 else ""
                if not body or not set(body) <= _REPEAT_CHARS or not body[0].isdigit():
                    raise _GiveUp
                least = int(body.split(",")[0])
                self.i = close + 1
            else:
                least = 1 if c == "+" else 0
                self.i += 1
            if self.i < len(s) and s[self.i] == "?":  # lazy: the same texts match
                self.i += 1
            atom = ("rep", atom, least)
        return atom


def _cap(found: set[tuple[str, bool]]) -> Affixes:
    return frozenset(found) if len(found) <= _MAX_AFFIXES else _NOTHING


def _affixes(node: Node, tail: bool) -> Affixes:
    """The literals every match of `node` starts (`tail`: ends) with, each marked complete when
    it is the whole match."""
    kind = node[0]
    if kind == "lit":
        return frozenset({(str(node[1]), True)})
    if kind == "rep":
        inner = node[1]
        assert isinstance(inner, tuple)
        if node[2] == 0:
            return _NOTHING
        return frozenset((text, False) for text, _ in _affixes(inner, tail))
    if kind == "alt":
        parts = node[1]
        assert isinstance(parts, list)
        found: set[tuple[str, bool]] = set()
        for part in parts:
            found |= _affixes(part, tail)
        return _cap(found)
    if kind == "seq":
        items = node[1]
        assert isinstance(items, list)
        done = _EMPTY
        for item in reversed(items) if tail else items:
            if not any(complete for _, complete in done):
                break
            grown: set[tuple[str, bool]] = {(t, False) for t, complete in done if not complete}
            more = _affixes(item, tail)
            for text, complete in done:
                if complete:
                    grown |= {((m + text) if tail else (text + m), c) for m, c in more}
            done = _cap(grown)
        return done
    return _NOTHING  # any character, or an anchor inside the pattern


@functools.lru_cache(maxsize=1024)
def branches(source: str) -> tuple[Branch, ...] | None:
    """The top-level alternatives of the RE2 pattern `source`, or None when it holds a
    construct not modelled for sure (then nothing is claimed)."""
    try:
        tree = _Parser(source).parse()
    except (_GiveUp, RecursionError, ValueError):
        return None
    parts = tree[1]
    assert isinstance(parts, list)
    out: list[Branch] = []
    for part in parts:
        items = part[1]
        start = bool(items) and items[0] == ("start",)
        end = bool(items) and items[-1] == ("end",)
        rest: Node = ("seq", items[int(start) : len(items) - int(end)])
        heads = frozenset(t for t, _ in _affixes(rest, False))
        tails = frozenset(t for t, _ in _affixes(rest, True))
        out.append(Branch(start, end, heads, tails))
    return tuple(out)


def ruled_out(source: str, first: str, last: str) -> bool:
    """No text that starts with `first` and ends with `last`, whatever lies between (a text
    holding markers: the visible text before the first and after the last marker, the hidden
    texts arbitrary), holds a match of `source`: every alternative is anchored at an end
    whose visible text disagrees with each of its literal heads (tails). False when unsure."""
    found = branches(source)
    if not found:
        return False
    for branch in found:
        head_fits = any(first.startswith(h) or h.startswith(first) for h in branch.heads)
        tail_fits = any(last.endswith(t) or t.endswith(last) for t in branch.tails)
        if not ((branch.start and not head_fits) or (branch.end and not tail_fits)):
            return False
    return True
