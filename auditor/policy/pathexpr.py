"""Policy paths, compiled once: `sandbox.network.allowedDomains`, `hooks[*].command`,
`customModels[id=custom:x].baseUrl`, `criteria.readme.passed`, `$score`, `['odd key']`.

Takes the path text of a policy leaf, gives a `CompiledPath` whose `resolve(doc)` returns the
value (or `MISSING`, distinct from null) and the concrete location for evidence in the
`auditor.paths` notation. `[*]` projects: the values found under every element, as a list
(an empty array gives `[]`; a non-empty one where no element has the value gives MISSING).
A `[key=value]` selector names one entry: when more than one matches, the path cannot be
resolved (`AmbiguousSelectorError`, an `error` result), never read from the first of them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from auditor.common import paths
from auditor.operators import MISSING, json_type, same


class PathSyntaxError(ValueError):
    """The path text cannot be parsed; the message names the offset."""


class PathTypeError(Exception):
    """The data has a scalar where the path needs an object or array."""

    def __init__(self, where: str, found: Any, wanted: str) -> None:
        self.where = where
        super().__init__(f"{where} is {json_type(found)}, so it has no {wanted}")


class AmbiguousSelectorError(PathTypeError):
    """A `[key=value]` selector matches more than one array entry: which one the rule means
    cannot be known, so reading the first would pass a bad duplicate unseen."""

    def __init__(self, where: str, parent: str, at: list[int]) -> None:
        self.where = where
        shown = ", ".join(f"{parent}[{i}]" for i in at[:5])
        more = f" and {len(at) - 5} more" if len(at) > 5 else ""
        Exception.__init__(
            self,
            f"{where} matches {len(at)} entries ({shown}{more}); a selector must match one "
            "entry: use `each:` to check every entry",
        )


@dataclass(frozen=True)
class Key:
    """An object member."""

    name: str


@dataclass(frozen=True)
class Index:
    """An array element by position (negative counts from the end)."""

    index: int


@dataclass(frozen=True)
class Select:
    """The one array element whose `field` equals `value`: `[id=custom:x]` (more than one is
    an `AmbiguousSelectorError`)."""

    field: str
    value: Any
    raw: str | None  # the unquoted text, also matched against string fields


@dataclass(frozen=True)
class Star:
    """Every array element: `[*]`."""


Step = Key | Index | Select | Star

_IDENT = r"[A-Za-z_$][A-Za-z0-9_$-]*"
_TOKEN = re.compile(
    rf"""(?P<key>{_IDENT})
      | \[(?P<star>\*)\]
      | \[(?P<index>-?\d+)\]
      | \[(?P<q>['"])(?P<qkey>.*?)(?P=q)\]
      | \[(?P<field>{_IDENT})=(?:(?P<vq>['"])(?P<qval>.*?)(?P=vq)|(?P<val>[^\]]*))\]
    """,
    re.VERBOSE,
)
_LITERALS: dict[str, Any] = {"true": True, "false": False, "null": None}


def _literal(text: str) -> Any:
    if text in _LITERALS:
        return _LITERALS[text]
    if re.fullmatch(r"-?\d+", text):
        return int(text)
    return text


def _step(m: re.Match[str]) -> Step:
    if m["key"] is not None:
        return Key(m["key"])
    if m["star"] is not None:
        return Star()
    if m["index"] is not None:
        return Index(int(m["index"]))
    if m["qkey"] is not None:
        return Key(m["qkey"])
    if m["qval"] is not None:
        return Select(m["field"], m["qval"], None)
    return Select(m["field"], _literal(m["val"]), m["val"])


def parse_steps(text: str) -> tuple[Step, ...]:
    """Parse policy path text into steps; raises PathSyntaxError naming the offset."""
    if text in ("", "$", "@"):
        return ()
    pos = 2 if text.startswith(("$.", "@.")) else 1 if text.startswith(("$[", "@[")) else 0
    steps: list[Step] = []
    while pos < len(text):
        if steps and text[pos] == ".":
            pos += 1
        m = _TOKEN.match(text, pos)
        if m is None or (m["key"] is not None and steps and text[pos - 1] != "."):
            raise PathSyntaxError(f"invalid path {text!r} at offset {pos}")
        steps.append(_step(m))
        pos = m.end()
    return tuple(steps)


def _render(parts: list[paths.Component | Star]) -> str:
    return "$" + "".join("[*]" if isinstance(p, Star) else paths.render_component(p) for p in parts)


def _pick(items: list[Any], step: Select) -> list[int]:
    """The positions of the entries `step` selects."""
    at: list[int] = []
    for i, item in enumerate(items):
        if isinstance(item, dict) and step.field in item:
            found = item[step.field]
            if same(found, step.value) or (step.raw is not None and found == step.raw):
                at.append(i)
    return at


@dataclass(frozen=True)
class CompiledPath:
    """A parsed policy path; `deps` are its leading plain keys (what incremental runs watch)."""

    text: str
    steps: tuple[Step, ...]

    @property
    def deps(self) -> tuple[str, ...]:
        """The leading object keys, up to the first array step."""
        out: list[str] = []
        for step in self.steps:
            if not isinstance(step, Key):
                break
            out.append(step.name)
        return tuple(out)

    @cached_property
    def _keys(self) -> tuple[tuple[str, ...], str] | None:
        """For a path of plain keys only: the keys, and the location (the same wherever the
        walk stops)."""
        if not all(isinstance(step, Key) for step in self.steps):
            return None
        names = tuple(step.name for step in self.steps if isinstance(step, Key))
        return names, _render(list(names))

    def resolve(self, doc: Any) -> tuple[Any, str]:
        """The value at this path in `doc` (or MISSING) and where it was looked for."""
        keys = self._keys
        if keys is not None:
            node = doc
            for name in keys[0]:
                if node is MISSING or node is None:
                    return MISSING, keys[1]
                if not isinstance(node, dict):
                    break  # the walk below raises, naming where
                node = node.get(name, MISSING)
            else:
                return node, keys[1]
        parts: list[paths.Component | Star] = []
        value, stop = _walk(doc, self.steps, 0, parts)
        return value, _render(parts + [_component(s) for s in self.steps[stop:]])


def _component(step: Step) -> paths.Component | Star:
    if isinstance(step, Key):
        return step.name
    if isinstance(step, Index):
        return step.index
    if isinstance(step, Select):
        return paths.Match(step.field, step.value)
    return step


def _walk(
    node: Any, steps: tuple[Step, ...], i: int, parts: list[paths.Component | Star]
) -> tuple[Any, int]:
    for pos in range(i, len(steps)):
        step = steps[pos]
        if node is MISSING or node is None:
            return MISSING, pos
        if isinstance(step, Key):
            if not isinstance(node, dict):
                raise PathTypeError(_render(parts), node, f"key `{step.name}`")
            parts.append(step.name)
            node = node.get(step.name, MISSING)
            continue
        if not isinstance(node, list):
            raise PathTypeError(_render(parts), node, "elements")
        if isinstance(step, Star):
            found = []
            for at, item in enumerate(node):
                try:
                    found.append(_walk(item, steps, pos + 1, [])[0])
                except PathTypeError:  # walked again from its own place (`$.a[0]`) to name it
                    _walk(item, steps, pos + 1, [*parts, at])
                    raise
            parts.append(step)
            kept = [v for v in found if v is not MISSING]
            return (MISSING if found and not kept else kept), pos + 1
        node = _index(node, step, parts)
    return node, len(steps)


def _index(node: list[Any], step: Index | Select, parts: list[paths.Component | Star]) -> Any:
    if isinstance(step, Index):
        parts.append(step.index)
        in_range = -len(node) <= step.index < len(node)
        return node[step.index] if in_range else MISSING
    at = _pick(node, step)
    item = node[at[0]] if at else MISSING
    parts.append(paths.Match(step.field, item[step.field] if at else step.value))
    if len(at) > 1:  # (the parent's text made only then: a resolve takes a fifth less)
        raise AmbiguousSelectorError(_render(parts), _render(parts[:-1]), at)
    return item


def compile_path(text: str) -> CompiledPath:
    """Compile policy path text once (raises PathSyntaxError)."""
    return CompiledPath(text, parse_steps(text))
