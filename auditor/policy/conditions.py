"""The condition tree: leaves `{path, <operator>: value}`, `all`/`any`/`not`, and
`each`/`some`/`none` over arrays (paths inside are relative to the element).

Frozen nodes built once by `auditor.policy.compile`; they say what they check (`describe`) and
which paths they read (`iter_leaves`, `root_paths`). Running them against a document is the
interpreter's job (`auditor.evaluate.conditions`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Literal

from auditor.operators import MISSING, Operator
from auditor.policy.pathexpr import CompiledPath
from auditor.policy.phrasing import phrase, shown_arg, third_person
from auditor.policy.refs import Ref

Parts = tuple[str | int, ...]


@dataclass(frozen=True, eq=False)
class Leaf:
    """`{path: P, op: arg, …}`: every operator must hold for the first present path."""

    paths: tuple[CompiledPath, ...]
    ops: tuple[tuple[Operator, Any, Any], ...]  # (operator, prepared arg, arg as written)
    default: Any = MISSING
    where: Parts = ()
    # The value's JSON type varies by design (a change's `before`/`after` in `changes[]`): a
    # literal of another type is unequal, not an `error` (the `operators.LiteralMismatch`'s
    # result is taken), or a rule on `changes[]` could not compare `after` with `false`
    # beside a change whose `after` is text.
    loose: bool = False

    @property
    def is_change(self) -> bool:
        """True when the leaf compares a settings path between before and after."""
        return self.ops[0][0].kind == "change"

    @cached_property
    def shown(self) -> tuple[str, ...]:
        """Each operator's argument as messages show it (a ref's is replaced when read)."""
        return tuple(shown_arg(op, raw) for op, _, raw in self.ops)

    def describe(self, negate: bool = False) -> str:
        """What the leaf checks, third person: `matches /^rm/`, `apiKey is absent`."""
        parts = [
            third_person(phrase(op, raw, shown_arg(op, raw), negate, MISSING))
            for op, _, raw in self.ops
        ]
        text = (" or " if negate else " and ").join(parts)
        path = self.paths[0].text
        return text if path == "@" else f"{path} {text}"


@dataclass(frozen=True, eq=False)
class Logic:
    """`all: [...]`, `any: [...]` or `not: …`."""

    kind: Literal["all", "any", "not"]
    children: tuple[Condition, ...]

    def describe(self, negate: bool = False) -> str:
        """What the combination checks, third person (negation by De Morgan)."""
        if self.kind == "not":
            return self.children[0].describe(not negate)
        joiner = " and " if (self.kind == "all") != negate else " or "
        return joiner.join(c.describe(negate) for c in self.children)


@dataclass(frozen=True, eq=False)
class Quantifier:
    """`each` / `some` / `none` element of an array satisfies `assert`."""

    kind: Literal["each", "some", "none"]
    path: CompiledPath
    condition: Condition

    @cached_property
    def inner(self) -> tuple[str, str]:
        """The inner condition described plainly and negated (indexed by `negate`)."""
        return self.condition.describe(False), self.condition.describe(True)

    @cached_property
    def on_self(self) -> bool:
        """The inner condition reads only the array entry itself (every leaf path is `@`)."""
        return _on_self(self.condition)

    def describe(self, negate: bool = False) -> str:
        """What the quantifier checks, third person: `no entry of hooks matches /x/`."""
        word = _QUANTIFIER_WORDS[(self.kind, negate)]
        return f"{word} entry of {self.path.text} {self.condition.describe()}"


_QUANTIFIER_WORDS = {
    ("each", False): "every",
    ("each", True): "not every",
    ("some", False): "some",
    ("some", True): "no",
    ("none", False): "no",
    ("none", True): "some",
}


def _on_self(cond: Condition) -> bool:
    if isinstance(cond, Logic):
        return all(_on_self(c) for c in cond.children)
    return isinstance(cond, Leaf) and all(p.text == "@" for p in cond.paths)


#: A compiled `when` or `assert`: what `Rule` carries and the interpreter runs.
Condition = Leaf | Logic | Quantifier


def iter_leaves(cond: Condition, relative: bool = False) -> Iterator[tuple[Leaf, bool]]:
    """Every leaf of a condition, with whether its paths are relative to an array element."""
    if isinstance(cond, Leaf):
        yield cond, relative
    elif isinstance(cond, Logic):
        for child in cond.children:
            yield from iter_leaves(child, relative)
    else:
        yield from iter_leaves(cond.condition, True)


def root_paths(cond: Condition) -> Iterator[CompiledPath]:
    """Every path read from the document root (leaf paths, quantifier arrays and refs)."""
    yield from _direct_paths(cond)
    for leaf, _ in iter_leaves(cond):
        yield from (arg.path for _, arg, _ in leaf.ops if isinstance(arg, Ref))


def _direct_paths(cond: Condition) -> Iterator[CompiledPath]:
    if isinstance(cond, Leaf):
        yield from cond.paths
    elif isinstance(cond, Logic):
        for child in cond.children:
            yield from _direct_paths(child)
    else:
        yield cond.path
