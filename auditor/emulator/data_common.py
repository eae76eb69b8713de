"""Small helpers shared by the emulator's data generators: seeded ids, secret-looking tokens,
time formatting and copy-on-write updates of nested JSON objects.

Everything takes an explicit `random.Random`, so a seed fully determines the data.
"""

from __future__ import annotations

import hashlib
import random
import string
import uuid
from datetime import UTC, datetime
from typing import Any

JsonObj = dict[str, Any]

ALNUM = string.ascii_letters + string.digits
DEFAULT_NOW = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
EMAIL_DOMAIN = "acme.example"


def token(rng: random.Random, length: int, alphabet: str = ALNUM) -> str:
    """A random string of `length` characters from `alphabet`."""
    return "".join(rng.choices(alphabet, k=length))


def hexstr(rng: random.Random, length: int) -> str:
    """`length` random lowercase hex digits."""
    return f"{rng.getrandbits(4 * length):0{length}x}"


def uuid4(rng: random.Random) -> str:
    """A version-4 UUID string drawn from `rng`."""
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def stable_id(prefix: str, text: str, length: int = 24) -> str:
    """An id that depends only on `text` (so users keep their ids across seeds)."""
    return prefix + hashlib.sha256(text.encode()).hexdigest()[:length]


def iso(moment: datetime) -> str:
    """ISO-8601 UTC with a `Z` suffix, second precision."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def unix_ms(moment: datetime) -> int:
    """Unix time in milliseconds."""
    return int(moment.timestamp() * 1000)


def set_in(obj: JsonObj, path: tuple[str, ...], value: Any) -> JsonObj:
    """A copy of `obj` with `path` set to `value`; only the dicts along the path are copied."""
    new = dict(obj)
    if len(path) == 1:
        new[path[0]] = value
        return new
    child = obj.get(path[0])
    new[path[0]] = set_in(child if isinstance(child, dict) else {}, path[1:], value)
    return new


def drop_in(obj: JsonObj, path: tuple[str, ...]) -> JsonObj:
    """A copy of `obj` without the key at `path` (unchanged if absent)."""
    if len(path) == 1:
        return {k: v for k, v in obj.items() if k != path[0]}
    child = obj.get(path[0])
    if not isinstance(child, dict):
        return obj
    new = dict(obj)
    new[path[0]] = drop_in(child, path[1:])
    return new


def get_in(obj: JsonObj, path: tuple[str, ...], default: Any = None) -> Any:
    """The value at `path`, or `default` when any step is missing."""
    current: Any = obj
    for key in path:
        if not isinstance(current, dict) or key not in current:
            return default
        current = current[key]
    return current
