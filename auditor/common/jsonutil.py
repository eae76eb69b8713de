"""Canonical JSON: one serialization for hashing, type-strict comparison and byte-stable output."""

from __future__ import annotations

import hashlib
from typing import Any

import orjson


def canonical(value: Any) -> bytes:
    """Serialize with sorted keys and no whitespace; `true` and `1` serialize differently."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


def content_hash(value: Any) -> str:
    """sha256 hex of the canonical serialization."""
    return hashlib.sha256(canonical(value)).hexdigest()


def dumps_pretty(value: Any) -> str:
    """Stable, human-readable JSON text (sorted keys, two-space indent, trailing newline)."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2).decode() + "\n"


def loads(data: bytes | str) -> Any:
    """Parse JSON text (raises orjson.JSONDecodeError, a ValueError)."""
    return orjson.loads(data)


def share_equal(old: Any, new: Any) -> None:
    """Make `new` (a parsed JSON object) reuse `old`'s objects wherever they are the same JSON.

    Every object or array under `new` whose serialization is byte-identical to the one at the
    same key of `old` (same values, types and key order, so nothing can tell the two apart) is
    replaced by `old`'s object. A history read revision after revision then shares everything
    a revision did not change, and whoever compares two revisions (the history walk, the
    diff) finds the untouched subtrees by identity instead of comparing them again.
    `new` must not have been handed to anyone yet; `old` is not changed.
    """
    if type(old) is not dict or type(new) is not dict:
        return
    same: list[tuple[str, Any]] = []
    for key, value in new.items():
        was = old.get(key, _ABSENT)
        kind = type(value)
        if was is value or type(was) is not kind or (kind is not dict and kind is not list):
            continue
        if value == was and _same_bytes(value, was):
            same.append((key, was))
        elif kind is dict:
            share_equal(was, value)
        else:
            _share_items(was, value)
    for key, was in same:
        new[key] = was


def _share_items(old: list[Any], new: list[Any]) -> None:
    """`share_equal` for the objects of two arrays, position by position."""
    for index, (was, value) in enumerate(zip(old, new, strict=False)):
        if type(was) is dict and type(value) is dict:
            if value == was and _same_bytes(value, was):
                new[index] = was
            else:
                share_equal(was, value)


class Sharing:
    """`share_equal` along a history read in order: each document shares with the one before
    it, and the bytes of its top-level values are kept for the next, so each value is
    serialized once (one `orjson.dumps` of a document, where `share_equal` compares and
    serializes both sides of every value the two have alike)."""

    def __init__(self) -> None:
        self._old: Any = None
        self._bytes: dict[str, bytes] = {}

    def share(self, new: Any) -> None:
        """`share_equal(previous, new)`, `previous` the document shared last."""
        old, known = self._old, self._bytes
        fresh: dict[str, bytes] = {}
        if type(new) is dict:
            same: list[tuple[str, Any]] = []
            for key, value in new.items():
                kind = type(value)
                if kind is not dict and kind is not list:
                    continue
                data = _bytes(value)
                if data is not None:
                    fresh[key] = data
                was: Any = old.get(key, _ABSENT) if type(old) is dict else _ABSENT
                if was is value or type(was) is not kind:
                    continue
                if data is not None and known.get(key) == data:  # `was`'s bytes: the same JSON
                    same.append((key, was))
                elif type(was) is list:
                    _share_items(was, value)
                else:
                    share_equal(was, value)
            for key, was in same:
                new[key] = was
        self._old, self._bytes = new, fresh


class EqualPool:
    """One object for each distinct JSON value put through `shared` (told apart by its orjson
    bytes, as `share_equal` tells them), for up to `limit` distinct values: documents read
    together (each repository's newest readiness report) then share their equal parts, as a
    history's revisions share theirs (`Sharing`). What is shared is read, never changed."""

    def __init__(self, limit: int = 4096) -> None:
        self._kept: dict[bytes, Any] = {}
        self._limit = limit

    def shared(self, value: Any) -> Any:
        """`value`, or the equal value put through first."""
        data = _bytes(value)
        if data is None:
            return value
        kept = self._kept.get(data, _ABSENT)
        if kept is _ABSENT:
            if len(self._kept) < self._limit:
                self._kept[data] = value
        elif kept == value:  # (orjson writes NaN as null: a NaN is not the null kept)
            return kept
        return value


def _bytes(value: Any) -> bytes | None:
    try:
        return orjson.dumps(value)
    except TypeError:  # orjson.JSONEncodeError: e.g. an integer beyond 64 bits
        return None


def _same_bytes(a: Any, b: Any) -> bool:
    try:
        return bool(orjson.dumps(a) == orjson.dumps(b))
    except TypeError:  # orjson.JSONEncodeError: e.g. an integer beyond 64 bits
        return False


_ABSENT = object()
