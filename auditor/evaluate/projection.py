"""What part of a document a condition can see, and type-strict keys of it.

Takes a document (or an array element) and the leading keys of the paths a condition reads,
gives the projection (where each walk stopped and the value there) and a hashable key of it
whose equality implies equal JSON — `true`, `1` and `1.0` differ — so a verdict or a status
computed once can be reused for every document with the same key (`memo`, and `status` for
the elements of an array).
"""

from __future__ import annotations

import hashlib
from collections.abc import Hashable, Iterator, Sequence
from contextvars import ContextVar
from typing import Any

import orjson

from auditor.policy.conditions import Condition, Leaf, Logic
from auditor.policy.refs import Ref

Deps = tuple[str, ...]


def projection(doc: Any, deps: Deps) -> Any:
    """What a path with these leading keys can see: where the walk stopped and the value there.

    The walk stops early at an absent key or a non-object (the path then reads nothing below,
    or reports the wrong type, so the value there is all that matters).
    """
    node = doc
    for depth, key in enumerate(deps):
        if not isinstance(node, dict):
            return [depth, node]
        if key not in node:
            return [depth]
        node = node[key]
    return [len(deps), node]


def element_reads(cond: Condition) -> tuple[Deps, ...] | None:
    """The leading keys of every path `cond` reads relative to the node it is run on, or None
    when it also reads outside that node (a `{ref: …}` argument or a change leaf)."""
    reads: set[Deps] = set()
    for kind, deps in _element_reads(cond):
        if kind != "path":
            return None
        reads.add(deps)
    return tuple(sorted(reads))


def _element_reads(cond: Condition) -> Iterator[tuple[str, Deps]]:
    if isinstance(cond, Leaf):
        if cond.is_change:
            yield "outside", ()
        for _, arg, _ in cond.ops:
            if isinstance(arg, Ref):
                yield "outside", ()
        yield from (("path", path.deps) for path in cond.paths)
    elif isinstance(cond, Logic):
        for child in cond.children:
            yield from _element_reads(child)
    else:  # a nested quantifier reads all there is below its array
        yield "path", cond.path.deps
        yield from (("outside", ()) for kind, _ in _element_reads(cond.condition) if kind != "path")


def document_reads(cond: Condition, *, inside: bool = False) -> Iterator[Deps]:
    """The leading keys of every document path `cond` reads when run on the document (change
    leaves read both sides; `{ref: …}` arguments read from the root)."""
    if isinstance(cond, Leaf):
        yield from _leaf_reads(cond, inside=inside)
    elif isinstance(cond, Logic):
        for child in cond.children:
            yield from document_reads(child, inside=inside)
    else:
        if not inside:  # a nested quantifier reads inside the element the outer one read
            yield cond.path.deps
        yield from document_reads(cond.condition, inside=True)


def _leaf_reads(leaf: Leaf, *, inside: bool) -> Iterator[Deps]:
    if leaf.is_change:  # resolved against both settings sides, wherever the leaf sits
        for path in leaf.paths:
            yield ("before", *path.deps)
            yield ("after", *path.deps)
    elif not inside:
        yield from (path.deps for path in leaf.paths)
    for _, arg, _ in leaf.ops:
        if isinstance(arg, Ref):  # refs always read from the document root
            yield arg.path.deps


def element_key(item: Any, reads: Sequence[Deps]) -> Hashable | None:
    """A type-strict key of what `reads` see of `item` (None when it cannot be serialized)."""
    if type(item) is str and () in reads and len(item) <= _SHORT:
        return item  # no other key is a str
    if type(item) is dict and len(reads) == 1 and len(reads[0]) == 1:
        # The common case: one key of an object read, holding a short string (a URL, an id):
        # the string in a 1-tuple (no other key is a tuple) says what the bytes would.
        value = item.get(reads[0][0], _ABSENT)
        if type(value) is str and len(value) <= _SHORT:
            return (value,)
    try:
        if len(reads) == 1:
            data = strict_json(projection(item, reads[0]))
        else:
            data = strict_json([projection(item, deps) for deps in reads])
    except TypeError:  # not JSON, or not type-strict (see `strict_json`)
        return None
    # orjson's bytes keep a 4 KB buffer however short they are: a short key is kept as an
    # exact-size copy, a long one (a whole element) as a 256-bit BLAKE2b digest.
    if len(data) <= _SHORT:
        return bytes(memoryview(data))
    return hashlib.blake2b(data, digest_size=32).digest()


def strict_json(value: Any) -> bytes:
    """The JSON bytes of `value`, equal only for equal values of the same types; TypeError
    when it has none: an integer beyond 64 bits, a date or time (orjson writes the string a
    string value would have), or a NaN or infinity (orjson writes `null`, so
    `[NaN, null]` would look like two nulls; a YAML policy test case can hold them)."""
    data = orjson.dumps(value, option=_STRICT)
    # only behind a `null` can a NaN or an infinity hide, and only in documents not parsed
    # by orjson (which refuses them)
    if b"null" in data and NON_FINITE_POSSIBLE.get() and not _finite(value):
        raise TypeError("NaN or infinity")
    return data


#: True while the documents evaluated may hold a NaN or an infinity, as a YAML policy test case
#: can (`auditor policy test` sets it). Everything else evaluated was parsed from JSON by orjson,
#: which refuses them (the stored revisions, reports and analytics, an evidence bundle), or was
#: refused if it held one (`auditor review`), so `strict_json` need not look for them there
#: (about a tenth of a full evaluation's time).
NON_FINITE_POSSIBLE: ContextVar[bool] = ContextVar("auditor_non_finite", default=False)


def _finite(value: Any) -> bool:
    """No NaN or infinity in `value` (a list of the projections' parts, mostly scalars)."""
    if isinstance(value, float):
        return bool(value - value == 0.0)  # NaN and the infinities give NaN
    if isinstance(value, (list, dict)):
        for item in value.values() if isinstance(value, dict) else value:
            if isinstance(item, _NESTED) and not _finite(item):
                return False
    return True


_NESTED = (float, list, dict)
#: A subclass of dict, list or str is written as its base (a parsed object may be one, and it
#: behaves as its base in every operator); a date or a dataclass has no JSON of its own.
_STRICT = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS
_ABSENT = object()
#: Keys up to this many bytes are kept as they are; longer ones as a 32-byte digest.
_SHORT = 64
