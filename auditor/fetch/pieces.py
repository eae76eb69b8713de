"""Compact pages read in pieces: each distinct piece parsed once, an unchanged one shared.

Takes a page's bytes (after the size and value-count guards) and what the listing's previous
item was made of, gives the page's value, equal to `orjson.loads(page)` (types and key order
included), or None when the page is not exactly orjson's compact rendering of its value; the
caller then reads it as any other body, with that path's warnings and errors. A page of the
history is split by `msgspec` (its `Raw` type gives a value's bytes without parsing it) into
its top-level parts, each item into its fields, and each item's object under `shared` (the
settings) into its top-level keys' bytes (after a page read so, the next ones in one pass:
msgspec is given the shape of that page, its keys and its items' fields, `_Shape`; a page of
another shape is refused by it, or does not rebuild, and is split as the first was). A piece
byte-identical to the same key's piece of the previous item (the previous page's last item too)
is that item's parsed object, the same one: a revision differs from the one before in a leaf or
two, so most of a page is not parsed at all, and whoever compares two revisions (the redactor)
finds the unchanged parts by identity. Any other piece is parsed by orjson and must be written
back as it was sent; last, the page must be what the pieces rebuild (keys as orjson writes
them, joined): one compare. That proves the page is orjson's writing of the value returned, so
it holds no key twice, no wide integer, no space and no other escape, which `check_shape` would
have said after parsing it whole (a page that passes is what `check_shape` finds nothing in, by
one compare too).
The nesting depth is checked on each piece parsed, against what is left of `MAX_DEPTH` at its
place in the page (a piece shared is the previous item's, checked when it was parsed): the
page's bytes are not scanned for it. msgspec refuses a page nested past the interpreter's
recursion limit (`RecursionError`), before anything is parsed; either way the page is then read
the usual way, which names the path.

Values given are shared with neighbouring items (of this page and of later pages): they are
read-only, nothing downstream may change them (the tolerant reader copies before it removes,
the redactor builds its copies, and its shortcuts assume an object seen twice is unchanged).

Memory: a `msgspec.Raw` read from a page points into the whole page, so nothing is kept
across pages but copies: once a page is read, the last item's pieces are copied and only the
fields that item has are kept. What the reader keeps alive between pages is bounded: the last
item's pieces at most `_KEPT_LIMIT` bytes (1 MiB), counted as Python holds them: each piece's
key (as a string and as written), a copy of its bytes, its parsed value (`sys.getsizeof` of it
and all it holds, as if the caller had dropped it) and `_ENTRY_BYTES` per entry; a piece past
the bound is forgotten (parsed again if the next item sends it unchanged), the settings' keys
and pieces all at once if their keys alone do not fit. Plus the cache of how keys are written,
at most `_KEYS_CACHE_LIMIT` bytes (1 MiB) counted so too, and the shape learned (at most 64
keys of at most 256 characters each). A page not read in pieces leaves
what was kept as it was, and so does one whose reading an error ends (Ctrl-C, MemoryError).
The reader gives up early (the page is then parsed whole, as any other) when pieces cannot
pay: a shared object with more than `_MEMBERS_LIMIT` keys, or a page whose pieces mostly
differ from the item's before (`_MISSES_ALLOWED`).
"""

from __future__ import annotations

import itertools
import operator
import sys
import types
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, NamedTuple

import orjson

from auditor.fetch.shape import MAX_DEPTH, deeper_than

if TYPE_CHECKING:
    import msgspec


class _Msgspec:
    """msgspec's decoders, made on the first page (its import, about 10 ms with
    `typing_extensions`, is not paid before the first request)."""

    def __init__(self) -> None:
        import msgspec

        self.object = msgspec.json.Decoder(dict[str, msgspec.Raw]).decode
        # The page in one pass: a list its items' fields (a list of anything but objects is
        # refused: the page is read whole), an object its members, a scalar its value.
        self.page = msgspec.json.Decoder(
            dict[
                str,
                list[dict[str, msgspec.Raw]]
                | dict[str, msgspec.Raw]
                | str
                | int
                | float
                | bool
                | None,
            ]
        ).decode
        # What msgspec raises for a page it refuses (its errors, `UnicodeDecodeError` for a
        # key that is not UTF-8), what a piece's parse raises, and giving up: the page is then
        # read the usual way.
        # (`orjson.JSONEncodeError`: a page's own scalar orjson cannot write, an integer past
        # 64 bits, which msgspec reads)
        self.refused = (
            msgspec.MsgspecError,
            ValueError,
            orjson.JSONEncodeError,
            RecursionError,
            _GiveUp,
        )
        _UNSET[0] = msgspec.UNSET


# msgspec's `UNSET` (a field of a page's shape that a page or an item does not have), once
# msgspec is loaded; before, an object nothing is.
_UNSET: list[Any] = [object()]


class _Split(NamedTuple):
    """A page as msgspec split it: its members (key, value) in order, and how one item of its
    listing gives its fields (key, bytes as sent; for the shared object, its bytes or its
    members already split) in order."""

    members: Iterable[tuple[str, Any]]
    fields: Callable[[Any], Iterable[tuple[str, Any]]]


class _Shape:
    """The shape of a listing's pages, learned from a page read in pieces: its members' keys in
    order, and its items' fields in order (every item of that page has the same). msgspec
    splits a page of that shape in one pass, the shared object of each item into its members
    too (without it, each item's shared object is split again from its bytes: 2 of the 3 µs a
    settings object of 9 KB costs). A page of any other shape (a key not learned, a member of
    another type) is refused by msgspec, or its pieces do not rebuild it (another order): it is
    then split as before, and the shape learned again (at most `_RESHAPES` times)."""

    def __init__(self, decode: Callable[[bytes], Any], keys: list[str], fields: list[str]):
        self._decode = decode
        self._keys = keys
        self._fields = fields

    @classmethod
    def of(cls, top: dict[str, Any], items: str, shared: str) -> _Shape | None:
        """The shape of a page split as any page (`top`), if its items all have one."""
        listed = top.get(items)
        if type(listed) is not list or not listed:
            return None
        names, keys = list(listed[0]), list(top)
        if any(list(item) != names for item in listed):
            return None
        # (kept across pages: a few short keys, not what a hostile page may send)
        if len(names) + len(keys) > _SHAPE_KEYS or max(map(len, names + keys)) > _KEY_BYTES:
            return None
        import msgspec

        members = dict[str, msgspec.Raw]  # an object's members, each as sent
        kinds: list[Any] = [members if n == shared else msgspec.Raw for n in names]
        try:
            listing = types.GenericAlias(list, (_struct("Item", names, kinds),))
        except (ValueError, TypeError):  # (as below)
            return None
        scalar = str | int | float | bool | None
        kinds = [
            listing if k == items else members if type(top[k]) is dict else scalar for k in keys
        ]
        try:
            page = _struct("Page", keys, kinds)
            return cls(msgspec.json.Decoder(page).decode, keys, names)
        except (ValueError, TypeError):  # a name msgspec takes for no field's (`\`, `"`, a
            return None  # control character): no shape; each page is split as any

    def read(self, body: bytes) -> _Split:
        """The page split (msgspec's errors for a page not of this shape)."""
        from msgspec.structs import astuple

        fields = self._fields
        top = astuple(self._decode(body))  # a value for each key (`UNSET`: missing)
        return _Split(
            zip(self._keys, top, strict=True), lambda item: zip(fields, astuple(item), strict=True)
        )


def _struct(name: str, keys: list[str], kinds: list[Any]) -> Any:
    """A msgspec struct of these keys (any text: each is the field's name as sent), each of its
    kind or missing (`UNSET`), and no other."""
    import msgspec

    fields = [(f"f{n}", kind | msgspec.UnsetType, msgspec.UNSET) for n, kind in enumerate(kinds)]
    names = {f"f{n}": key for n, key in enumerate(keys)}
    return msgspec.defstruct(name, fields, rename=names, forbid_unknown_fields=True)


_MSGSPEC: list[_Msgspec] = []
_RESHAPES = 3  # pages not of the shape learned before the reader stops learning one
_SHAPE_KEYS = 64  # a page's keys and its items' fields, at most, in a shape learned


def _msgspec() -> _Msgspec:
    if not _MSGSPEC:
        _MSGSPEC.append(_Msgspec())
    return _MSGSPEC[0]


_KEYS_LIMIT = 10_000  # distinct keys whose written form is kept (a hostile page has many)
_KEY_BYTES = 256  # a longer key's written form is not kept
_KEYS_CACHE_LIMIT = 1 << 20  # bytes held by the keys' written forms kept (`_keys`)
_KEPT_LIMIT = 1 << 20  # bytes the last item's pieces kept for the next page's first item hold
# Bytes held per entry kept beyond its key's and value's own: the tuple or list slot, the dict
# slot, the `Raw` object (an over-estimate, so the bound is one).
_ENTRY_BYTES = 200
_MEMBERS_LIMIT = 1_000  # a shared object with more top-level keys: the page is read whole
# Pieces parsed (missed) on a page before the reader checks they pay: past it, a page whose
# misses outnumber its reused pieces is read whole.
_MISSES_ALLOWED = 2_000
# The nesting a piece may have at its place (the page is level 1): a member of a page's own
# object (3), an item's field (4), a member of the item's shared object (5).
_PLAIN_DEPTH = MAX_DEPTH - 2
_FIELD_DEPTH = MAX_DEPTH - 3
_MEMBER_DEPTH = MAX_DEPTH - 4


class _GiveUp(Exception):
    """The page is read whole: pieces would cost more than they save."""


#: Tests only: False reads every page the usual way (to compare both paths' results).
ENABLED = True


class Pieces:
    """Reads a listing's compact pages in pieces (`read`), remembering the last item's parts;
    `items` names the page's key holding the items, `shared` the item's key whose object's
    top-level values are shared with the previous item's."""

    def __init__(self, items: str, shared: str) -> None:
        self._items = items
        self._shared = shared
        # The last item's pieces, by key: (bytes as sent, parsed value); only its own keys.
        self._fields: dict[str, tuple[msgspec.Raw, Any]] = {}
        # The last item's shared object: its keys, their bytes as sent and parsed values, and
        # how each key is written in it (`{"key":` first, `,"key":` after).
        self._names: list[str] = []
        self._raws: list[Any] = []
        self._parsed: list[Any] = []
        self._texts: list[bytes] = []
        # The shared object given for the page's item before, while the page is read.
        self._shared_value: dict[str, Any] | None = None
        self._keys: dict[str, tuple[bytes, bytes]] = {}  # key: (`"key":`, `,"key":`)
        self._keys_held = 0  # bytes `_keys` holds (counted as `_keep` does), at most 1 MiB
        self._hits = self._misses = 0  # on the page being read: pieces reused, pieces parsed
        self._shape: _Shape | None = None  # the pages' shape, once learned
        self._reshapes = _RESHAPES  # how many more times it may be learned
        self.pages_read = 0  # pages read in pieces (tests tell which path a page took)

    def read(self, body: bytes) -> Any:
        """The page's value, or None when it is not orjson's compact writing of one (or nests
        deeper than `MAX_DEPTH`: the usual path names where)."""
        if not ENABLED:
            return None
        decoders = _msgspec()
        kept = self._fields, self._names, self._raws, self._parsed, self._texts
        value = None
        try:
            shape = self._shape
            if shape is not None:
                try:
                    value = self._joined(body, shape.read(body), decoders)
                except _GiveUp:  # (the page's own decision, whichever way it is split)
                    return None
                except decoders.refused:
                    value = None
                if value is None:  # not of the shape learned: split as any page, below
                    self._fields, self._names, self._raws, self._parsed, self._texts = kept
                    self._shape = None
                    self._reshapes -= 1
            if value is None:
                try:
                    top = decoders.page(body)
                    value = self._joined(body, _Split(top.items(), dict.items), decoders)
                except decoders.refused:
                    value = None
                if value is not None and self._shape is None and self._reshapes > 0:
                    self._shape = _Shape.of(top, self._items, self._shared)
            if value is not None:
                self._keep()
        except BaseException:  # MemoryError, KeyboardInterrupt: nothing of this page is kept
            value = None
            raise
        finally:
            if value is None:  # what the last page read in pieces left, as it was
                self._fields, self._names, self._raws, self._parsed, self._texts = kept
        if value is None:
            return None
        self.pages_read += 1
        return value

    def _keep(self) -> None:
        """Copies of the last item's pieces (a `Raw` read from the page keeps the whole page
        alive), holding at most `_KEPT_LIMIT` bytes (see the module's docstring): a field past
        it is forgotten, a settings piece past it too (its key is kept, so the next item's
        lines up), and the settings' keys and pieces all of them when their keys do not fit."""
        budget = _KEPT_LIMIT
        fields: dict[str, tuple[msgspec.Raw, Any]] = {}
        for key, (raw, got) in self._fields.items():
            cost = sys.getsizeof(key) + len(raw) + _ENTRY_BYTES
            if cost <= budget:
                cost += _size(got, budget - cost)
            if cost <= budget:
                budget -= cost
                fields[key] = (raw.copy(), got)
        self._fields = fields
        names = sum(map(sys.getsizeof, self._names)) + sum(map(sys.getsizeof, self._texts))
        names += _ENTRY_BYTES * len(self._names)  # the name's and the text's list slots
        if names > budget:  # the next item parses its settings whole
            self._names, self._texts, self._raws, self._parsed = [], [], [], []
            return
        budget -= names
        raws: list[Any] = []
        parsed: list[Any] = []
        for piece, got in zip(self._raws, self._parsed, strict=True):
            cost = _ENTRY_BYTES if piece is None else len(piece) + _ENTRY_BYTES
            if piece is not None and cost <= budget:
                cost += _size(got, budget - cost)
            if piece is None or cost > budget:
                raws.append(None)  # the next item's same key parses it again
                parsed.append(None)
            else:
                budget -= cost
                raws.append(piece.copy())
                parsed.append(got)
        self._raws, self._parsed = raws, parsed

    def _count(self, hits: int, misses: int) -> None:
        """Gives up on a page whose pieces mostly miss, once past `_MISSES_ALLOWED` misses."""
        self._hits += hits
        self._misses += misses
        if self._misses > _MISSES_ALLOWED and self._misses > self._hits:
            raise _GiveUp

    def _key(self, key: str) -> tuple[bytes, bytes]:
        written = self._keys.get(key)
        if written is None:
            text = orjson.dumps(key) + b":"
            written = (text, b"," + text)
            if len(self._keys) < _KEYS_LIMIT and len(text) <= _KEY_BYTES:
                held = sys.getsizeof(key) + 2 * sys.getsizeof(text) + _ENTRY_BYTES
                if self._keys_held + held <= _KEYS_CACHE_LIMIT:
                    self._keys_held += held
                    self._keys[key] = written
        return written

    def _joined(self, body: bytes, split: _Split, decoders: _Msgspec) -> dict[str, Any] | None:
        """The page's value from its split, if the pieces rebuild the page (one compare)."""
        self._hits = self._misses = 0
        parts: list[Any] = []
        try:
            value = self._page(split, parts, decoders)
        finally:
            self._shared_value = None  # (only ever the page's own: it is not kept)
        if value is None or b"".join(parts) != body:
            return None
        return value

    def _page(self, split: _Split, parts: list[Any], decoders: _Msgspec) -> dict[str, Any] | None:
        members = [(key, got) for key, got in split.members if got is not _UNSET[0]]
        items = next((got for key, got in members if key == self._items), None)
        if type(items) is not list:
            return None
        value: dict[str, Any] = {}
        for n, (key, got) in enumerate(members):
            parts.append(self._key(key)[1] if n else b"{" + self._key(key)[0])
            if key == self._items:
                value[key] = self._list(items, split.fields, parts, decoders)
            elif type(got) is dict:  # a member of the page's own object (`pagination`)
                value[key] = self._plain(got, parts)
            elif type(got) is list:  # another listing: not a page the pieces are made for
                raise _GiveUp
            else:  # a scalar: the join below proves orjson writes it back as it was sent
                value[key] = got
                parts.append(orjson.dumps(got))
        parts.append(b"}")
        return value

    def _plain(self, members: dict[str, msgspec.Raw], parts: list[Any]) -> dict[str, Any]:
        """An object of the page's own, every member parsed (nothing of it is shared)."""
        value: dict[str, Any] = {}
        opening = b"{"
        for key, raw in members.items():
            first, later = self._key(key)
            parts.append(opening + first if opening else later)
            opening = b""
            value[key] = _parsed(raw, _PLAIN_DEPTH)
            parts.append(raw)
        parts.append(b"}" if members else b"{}")
        return value

    def _list(
        self,
        listed: list[Any],
        fields_of: Callable[[Any], Iterable[tuple[str, Any]]],
        parts: list[Any],
        decoders: _Msgspec,
    ) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        parts.append(b"[")
        for n, item in enumerate(listed):
            if n:
                parts.append(b",")
            items.append(self._object(fields_of(item), parts, decoders))
        parts.append(b"]")
        return items

    def _object(
        self, fields: Iterable[tuple[str, Any]], parts: list[Any], decoders: _Msgspec
    ) -> dict[str, Any]:
        """An item from its fields' bytes: each one the same as the previous item's is its
        parsed value, any other is parsed (and remembered); the field named `shared` is an
        object read so too, member by member (`_members`; its members already split when the
        page was read in its shape)."""
        value: dict[str, Any] = {}
        last, keys, opening = self._fields, self._key, b"{"
        now: dict[str, tuple[msgspec.Raw, Any]] = {}  # this item's pieces, nothing else
        hits = 0
        unset = _UNSET[0]
        for key, raw in fields:
            if raw is unset:  # a field of the shape this item does not have
                continue
            first, later = keys(key)
            if opening:
                parts.append(opening + first)
                opening = b""
            else:
                parts.append(later)
            if key == self._shared:
                members = raw if type(raw) is dict else decoders.object(raw)
                value[key] = self._members(members, parts)
                continue
            was = last.get(key)
            if was is not None and was[0] == raw:
                value[key] = was[1]
                now[key] = was
                hits += 1
            else:
                value[key] = got = _parsed(raw, _FIELD_DEPTH)
                now[key] = (raw, got)
            parts.append(raw)
        if opening:  # no field at all
            parts.append(b"{}")
            self._fields = {}
            return value
        parts.append(b"}")
        self._fields = now
        self._count(hits, len(now) - hits)
        return value

    def _members(self, members: dict[str, msgspec.Raw], parts: list[Any]) -> dict[str, Any]:
        """The shared object from its members' bytes, each compared at C speed with the same
        key's of the previous item (kept in the previous item's key order, the usual one)."""
        if len(members) > _MEMBERS_LIMIT:
            raise _GiveUp
        names = list(members)
        raws = list(members.values())
        last = self._shared_value
        if names != self._names:  # a key added, removed or moved: line the last ones up
            last = None
            known = dict(zip(self._names, zip(self._raws, self._parsed, strict=True), strict=True))
            was = [known.get(k, (None, None)) for k in names]
            texts = [self._key(k)[n > 0] for n, k in enumerate(names)]
            if texts:
                texts[0] = b"{" + texts[0]
            self._names, self._texts = names, texts
            self._raws, self._parsed = [w[0] for w in was], [w[1] for w in was]
        parsed = list(self._parsed)  # the previous item's list stays its own
        changed = list(itertools.compress(range(len(raws)), map(operator.ne, raws, self._raws)))
        self._count(len(raws) - len(changed), len(changed))
        for n in changed:
            parsed[n] = _parsed(raws[n], _MEMBER_DEPTH)
        self._raws, self._parsed = raws, parsed  # only once all of them were read
        parts += itertools.chain.from_iterable(zip(self._texts, raws, strict=True))
        parts.append(b"}" if names else b"{}")
        if last is None:
            value = dict(zip(names, parsed, strict=True))
        else:  # the previous item's, its keys in the same order: a copy, the changed ones set
            value = last.copy()
            for n in changed:
                value[names[n]] = parsed[n]
        self._shared_value = value
        return value


def _parsed(raw: msgspec.Raw, depth: int) -> Any:
    """A piece parsed by orjson; ValueError unless orjson writes it back as it was sent, and
    `_GiveUp` when it nests more than `depth` levels (the usual path names where)."""
    data = bytes(raw)  # (a copy: compared at memcmp speed, a memoryview byte by byte)
    value = orjson.loads(data)
    text = orjson.dumps(value)
    if text != data:
        raise ValueError("not written as orjson writes it")
    # (fewer opening brackets than `depth`, strings' included, cannot nest deeper: most)
    if (
        type(value) in _CONTAINERS
        and text.count(b"[") + text.count(b"{") > depth
        and deeper_than(text, depth)
    ):
        raise _GiveUp
    return value


_CONTAINERS = (dict, list)


def _size(value: Any, limit: int) -> int:
    """Bytes `value` holds with all it contains (`sys.getsizeof` of each, an object held twice
    counted twice), or a number past `limit` once it is past it (the walk stops there)."""
    total = 0
    stack = [value]
    getsize, pop, extend = sys.getsizeof, stack.pop, stack.extend
    while stack:
        item = pop()
        total += getsize(item)
        if total > limit:
            break
        if type(item) is dict:
            extend(item.keys())
            extend(item.values())
        elif type(item) is list:
            extend(item)
    return total
