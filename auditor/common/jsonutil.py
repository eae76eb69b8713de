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
