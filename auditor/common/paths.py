"""The one JSON-path notation used everywhere in the tool (changes, evidence, errors, reports).

Takes path components, gives strings such as `$.sandbox.network.allowedDomains`,
`$.customModels[?id=='custom:x'].baseUrl`, `$.hooks.PreToolUse[0]` or `$['odd key']`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

#: A key written `.key`; any other is written `['key']`. (`fullmatch`: a `$` would let a key
#: ending in a line feed pass for one.)
_IDENT = re.compile(r"[A-Za-z_$][A-Za-z0-9_$-]*")
#: The characters such a key is made of.
IDENT_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_$-")


def is_identifier(key: str) -> bool:
    """Whether `key` is written `.key` in a path (else `['key']`)."""
    return _IDENT.fullmatch(key) is not None


@dataclass(frozen=True)
class Match:
    """A list element selected by identity: `[?field=='value']`."""

    field: str
    value: str | int | float | bool | None


Component = str | int | Match


def _quote(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _literal(value: object) -> str:
    if isinstance(value, str):
        return _quote(value)
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value)


def render_component(part: Component) -> str:
    """Render one component as it appears after its parent (`.key`, `[3]`, `[?id=='x']`)."""
    if isinstance(part, Match):
        return f"[?{part.field}=={_literal(part.value)}]"
    if isinstance(part, int):
        return f"[{part}]"
    if is_identifier(part):
        return "." + part
    return "[" + _quote(part) + "]"


def render(parts: Iterable[Component]) -> str:
    """Render components as a path rooted at `$`."""
    return "$" + "".join(render_component(p) for p in parts)


def join(base: str, *parts: Component) -> str:
    """Append components to an already rendered path."""
    return base + "".join(render_component(p) for p in parts)


_TOKEN = re.compile(
    r"""\.(?P<key>[A-Za-z_$][A-Za-z0-9_$-]*)
      | \[(?P<index>-?\d+)\]
      | \['(?P<qkey>(?:[^'\\]|\\.)*)'\]
      | \[\?(?P<field>[A-Za-z_$][A-Za-z0-9_$-]*)==(?P<value>'(?:[^'\\]|\\.)*'|[^\]]+)\]
    """,
    re.VERBOSE,
)


def _unquote(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text)


def _parse_literal(text: str) -> str | int | float | bool | None:
    if text.startswith("'"):
        return _unquote(text[1:-1])
    special: dict[str, bool | None] = {"true": True, "false": False, "null": None}
    if text in special:
        return special[text]
    try:
        return int(text)
    except ValueError:
        return float(text)


def parse(path: str) -> tuple[Component, ...]:
    """Parse a rendered path back into components; raises ValueError naming the bad offset."""
    if not path.startswith("$"):
        raise ValueError(f"path must start with '$': {path!r}")
    parts: list[Component] = []
    pos = 1
    while pos < len(path):
        m = _TOKEN.match(path, pos)
        if m is None:
            raise ValueError(f"cannot parse path {path!r} at offset {pos}")
        if m["key"] is not None:
            parts.append(m["key"])
        elif m["index"] is not None:
            parts.append(int(m["index"]))
        elif m["qkey"] is not None:
            parts.append(_unquote(m["qkey"]))
        else:
            parts.append(Match(m["field"], _parse_literal(m["value"])))
        pos = m.end()
    return tuple(parts)


def to_pointer(parts: Iterable[str | int]) -> str:
    """Render plain key/index components as an RFC 6901 JSON Pointer (for JSON Patch)."""
    out = []
    for p in parts:
        out.append(str(p).replace("~", "~0").replace("/", "~1"))
    return "".join("/" + p for p in out)
