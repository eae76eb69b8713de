"""Conditions, compiled once: leaves `{path, <operator>: value}`, `all`/`any`/`not`, and
`each`/`some`/`none` over arrays (paths inside are relative to the element).

Takes the raw `when`/`assert` mapping of a rule, gives a tree whose `evaluate(node, base, env)`
returns an `Outcome`: pass, fail, missing (a path is absent; the rule's `on_missing` decides)
or error (wrong type; never a silent false). Compile problems are returned with the YAML path
where they occur, so the loader can attach `file:line:col`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Literal

from auditor.models import Evidence
from auditor.operators import MISSING, REGISTRY, OperandTypeError, Operator, json_type
from auditor.policy.outcome import (
    Env,
    Outcome,
    combine_all,
    combine_any,
    element_base,
    lazy_pair,
    paired,
    short,
    show,
)
from auditor.policy.pathexpr import CompiledPath, PathSyntaxError, PathTypeError, compile_path
from auditor.policy.phrasing import clip, phrase, third_person
from auditor.policy.quantify import Quantified, each_outcome, some_outcome
from auditor.policy.refs import Ref, dereference, is_ref
from auditor.policy.wording import held, held_change, shown_arg, worded
from auditor.policy.yamlsafe import suggest

Parts = tuple[str | int, ...]
Problem = tuple[Parts, str]
LOGIC_KEYS = ("all", "any", "not")
QUANTIFIERS = ("each", "some", "none")
LEAF_KEYS = ("path", "default", "enum")
ORDERED_OPS = ("at_most", "at_least", "increased", "decreased")


@dataclass(frozen=True, eq=False)
class Leaf:
    """`{path: P, op: arg, …}`: every operator must hold for the first present path."""

    paths: tuple[CompiledPath, ...]
    ops: tuple[tuple[Operator, Any, Any], ...]  # (operator, prepared arg, arg as written)
    default: Any = MISSING
    where: Parts = ()

    @property
    def is_change(self) -> bool:
        """True when the leaf compares a settings path between before and after."""
        return self.ops[0][0].kind == "change"

    def evaluate(self, node: Any, base: str, env: Env) -> Outcome:
        """Resolve the path and apply every operator."""
        try:
            if self.is_change:
                return self._change(base, env)
            value, where = self._resolve(node, base)
        except PathTypeError as exc:
            return Outcome.error(f"{base}{str(exc)[1:]}", Evidence(base + exc.where[1:]))
        if value is MISSING and self.default is not MISSING:
            value = self.default
        if value is MISSING and any(op.kind != "presence" for op, _, _ in self.ops):
            return Outcome.missing(where)
        return self._apply(value, where, env)

    def _resolve(self, node: Any, base: str) -> tuple[Any, str]:
        first = ""
        for path in self.paths:
            value, where = path.resolve(node)
            where = base + where[1:]
            if value is not MISSING:
                return value, where
            first = first or where
        return MISSING, first

    @cached_property
    def _shown(self) -> tuple[str, ...]:
        """Each operator's argument as messages show it (a ref's is replaced when read)."""
        return tuple(shown_arg(op, raw) for op, _, raw in self.ops)

    def _apply(self, value: Any, where: str, env: Env) -> Outcome:
        checks: list[tuple[Operator, Any, str, Evidence]] = []
        present = value is not MISSING
        actual = value if present else None
        for (op, arg, raw), shown in zip(self.ops, self._shown, strict=True):
            ev = Evidence(where, actual, raw, op.name, present)
            if isinstance(arg, Ref):
                got = dereference(arg, op, where, env, ev)
                if isinstance(got, Outcome):
                    return got
                arg, shown, ev = got
            checks.append((op, ev.expected, shown, ev))
            try:
                ok = op.fn(value, arg, env.now) if op.kind == "time" else op.fn(value, arg)
            except OperandTypeError as exc:
                return Outcome.type_error(where, value, op.name, exc, worded(ev, op, False))
            except (TypeError, ValueError, ArithmeticError) as exc:
                return Outcome.error(f"{show(where)}: `{op.name}` failed: {exc}", ev)
            if not ok:
                return _failed_leaf(where, value, op, shown, ev)
        return held(where, value, checks)

    def _change(self, base: str, env: Env) -> Outcome:
        if env.change is None:
            return Outcome.error(f"`{self.ops[0][0].name}` needs a change target")
        before, where = self._resolve(env.change[0], base)
        after, _ = self._resolve(env.change[1], base)
        went = f"{show(where)} went {short(before)} -> {short(after)}"
        note = f"before: {short(before)}"
        checks = []
        for (op, arg, raw), shown in zip(self.ops, self._shown, strict=True):
            ev = Evidence(
                where, None if after is MISSING else after, raw, op.name, after is not MISSING, note
            )
            checks.append((op, raw, shown, ev))
            try:
                ok = op.fn(before, after, arg)
            except OperandTypeError as exc:
                return Outcome.type_error(where, after, op.name, exc, worded(ev, op, False))
            if not ok:
                expected = phrase(op, raw, shown)
                text = clip(f"{went}; expected {expected}")
                failed = Outcome("fail", text, (worded(ev, op, False),), 1, "", went, expected)
                return paired(failed, Outcome("pass", clip(went), failed.evidence, subject=went))
        return held_change(went, after, checks)

    def describe(self, negate: bool = False) -> str:
        """What the leaf checks, third person: `matches /^rm/`, `apiKey is absent`."""
        parts = [
            third_person(phrase(op, raw, shown_arg(op, raw), negate, MISSING))
            for op, _, raw in self.ops
        ]
        text = (" or " if negate else " and ").join(parts)
        path = self.paths[0].text
        return text if path == "@" else f"{path} {text}"


def _failed_leaf(where: str, value: Any, op: Operator, shown: str, ev: Evidence) -> Outcome:
    """The first operator that did not hold; the passing negation is worded on demand."""
    expected = phrase(op, ev.expected, shown, False, value)
    failed = Outcome.failed(where, value, expected, worded(ev, op, False))
    return lazy_pair(failed, lambda: Outcome.passed(where, value, failed.evidence))


@dataclass(frozen=True, eq=False)
class Logic:
    """`all: [...]`, `any: [...]` or `not: …`."""

    kind: Literal["all", "any", "not"]
    children: tuple[Condition, ...]

    def evaluate(self, node: Any, base: str, env: Env) -> Outcome:
        """Combine the children (an error anywhere is never hidden)."""
        outcomes = [c.evaluate(node, base, env) for c in self.children]
        if self.kind == "all":
            return combine_all(outcomes)
        if self.kind == "any":
            return combine_any(outcomes)
        return outcomes[0].negated()

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

    def evaluate(self, node: Any, base: str, env: Env) -> Outcome:
        """Evaluate the inner condition on every element, relative to it."""
        try:
            items, where = self.path.resolve(node)
        except PathTypeError as exc:
            return Outcome.error(f"{base}{str(exc)[1:]}", Evidence(base + exc.where[1:]))
        where = base + where[1:]
        if items is MISSING:
            return Outcome.missing(where)
        if not isinstance(items, list):
            detail = f"{show(where)} is {json_type(items)}; `{self.kind}` needs an array"
            return Outcome.error(detail, Evidence(where, items, None, self.kind))
        outcomes = [
            self.condition.evaluate(item, element_base(where, i, item), env)
            for i, item in enumerate(items)
        ]
        run = Quantified(where, items, outcomes, self._inner.__getitem__, self._reads_entry)
        if self.kind == "each":
            return each_outcome(run)
        found = some_outcome(run)
        return found if self.kind == "some" else found.negated()

    @cached_property
    def _inner(self) -> tuple[str, str]:
        """The inner condition described plainly and negated (indexed by `negate`)."""
        return self.condition.describe(False), self.condition.describe(True)

    @cached_property
    def _reads_entry(self) -> bool:
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
    """The condition reads only the array entry itself (every leaf path is `@`)."""
    if isinstance(cond, Logic):
        return all(_on_self(c) for c in cond.children)
    return isinstance(cond, Leaf) and all(p.text == "@" for p in cond.paths)


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


class Compiler:
    """Compiles raw conditions of one rule, collecting problems with their YAML path."""

    def __init__(self, target: str, enums: Mapping[str, tuple[str, ...]]) -> None:
        self.target = target
        self.enums = enums
        self.problems: list[Problem] = []

    def fail(self, where: Parts, message: str) -> None:
        """Record one problem."""
        self.problems.append((where, message))

    def compile(self, raw: Any, where: Parts, *, in_element: bool = False) -> Condition | None:
        """Compile one condition mapping (None after recording a problem)."""
        if not isinstance(raw, dict) or not raw:
            self.fail(where, "a condition must be a non-empty mapping")
            return None
        unknown = [k for k in raw if k not in REGISTRY and k not in _ALL_KEYS]
        for key in unknown:
            self.fail((*where, key), f"unknown key `{key}`{suggest(str(key), _SUGGESTIONS)}")
        if unknown:
            return None
        logic = [k for k in LOGIC_KEYS if k in raw]
        quant = [k for k in QUANTIFIERS if k in raw]
        if logic:
            return self._logic(raw, logic, where, in_element)
        if quant:
            return self._quantifier(raw, quant, where)
        return self._leaf(raw, where, in_element)

    def _only(
        self, raw: Mapping[str, Any], allowed: Sequence[str], where: Parts, what: str
    ) -> bool:
        extra = [k for k in raw if k not in allowed]
        for key in extra:
            self.fail((*where, key), f"`{key}` cannot be combined with {what} in one condition")
        return not extra

    def _logic(
        self, raw: Mapping[str, Any], keys: list[str], where: Parts, inside: bool
    ) -> Condition | None:
        kind = keys[0]
        if not self._only(raw, (kind,), where, f"`{kind}`"):
            return None
        if kind == "not":
            child = self.compile(raw["not"], (*where, "not"), in_element=inside)
            return Logic("not", (child,)) if child else None
        items = raw[kind]
        if not isinstance(items, list) or not items:
            self.fail((*where, kind), f"`{kind}` needs a non-empty list of conditions")
            return None
        children = [
            self.compile(c, (*where, kind, i), in_element=inside) for i, c in enumerate(items)
        ]
        if any(c is None for c in children):
            return None
        return Logic(kind, tuple(c for c in children if c is not None))  # type: ignore[arg-type]

    def _quantifier(
        self, raw: Mapping[str, Any], keys: list[str], where: Parts
    ) -> Condition | None:
        kind = keys[0]
        if not self._only(raw, (kind, "assert"), where, f"`{kind}`"):
            return None
        path = self._path(raw[kind], (*where, kind))
        if "assert" not in raw:
            self.fail(where, f"`{kind}` needs an `assert` condition for each element")
            return None
        inner = self.compile(raw["assert"], (*where, "assert"), in_element=True)
        if path is None or inner is None:
            return None
        return Quantifier(kind, path, inner)  # type: ignore[arg-type]

    def _path(self, text: Any, where: Parts) -> CompiledPath | None:
        if not isinstance(text, str):
            self.fail(where, "a path must be a string")
            return None
        try:
            return compile_path(text)
        except PathSyntaxError as exc:
            self.fail(where, str(exc))
            return None

    def _leaf(self, raw: Mapping[str, Any], where: Parts, in_element: bool) -> Condition | None:
        names = [k for k in raw if k in REGISTRY]
        if not names:
            self.fail(
                where, "a condition needs an operator, `all`/`any`/`not` or `each`/`some`/`none`"
            )
            return None
        count = len(self.problems)
        texts = raw.get("path", "@")
        alternatives = texts if isinstance(texts, list) and texts else [texts]
        paths = [self._path(t, (*where, "path")) for t in alternatives]
        ops = [self._op(name, raw, where, in_element) for name in names]
        kinds = {REGISTRY[n].kind == "change" for n in names}
        if len(kinds) > 1:
            self.fail(
                where, "change operators (changed, from, to, …) cannot share a leaf with others"
            )
        if "enum" in raw and not any(n in ORDERED_OPS for n in names):
            self.fail((*where, "enum"), "`enum` applies only to " + ", ".join(ORDERED_OPS))
        if len(self.problems) > count:
            return None
        default = raw.get("default", MISSING)
        return Leaf(tuple(paths), tuple(ops), default, where)  # type: ignore[arg-type]

    def _op(
        self, name: str, raw: Mapping[str, Any], where: Parts, inside: bool
    ) -> tuple[Operator, Any, Any] | None:
        op, arg = REGISTRY[name], raw[name]
        if is_ref(arg):
            return self._ref(op, arg["ref"], (*where, name))
        if op.kind == "change" and (self.target != "change" or inside):
            self.fail(
                (*where, name),
                f"`{name}` applies only to `target: change` leaves outside each/some/none",
            )
            return None
        if name in ORDERED_OPS and "enum" in raw:
            arg = {"enum": raw["enum"]} if arg is True else {"enum": raw["enum"], "value": arg}
        try:
            return op, op.prepare(arg, self.enums), raw[name]
        except ValueError as exc:
            self.fail((*where, name), str(exc))
            return None

    def _ref(self, op: Operator, text: Any, where: Parts) -> tuple[Operator, Any, Any] | None:
        if not op.ref:
            accepting = ", ".join(n for n, o in sorted(REGISTRY.items()) if o.ref)
            self.fail(where, f"`{op.name}` does not accept {{ref: …}} (these do: {accepting})")
            return None
        path = self._path(text, (*where, "ref"))
        if path is None:
            return None
        return op, Ref(path), {"ref": text}


_ALL_KEYS = frozenset((*LOGIC_KEYS, *QUANTIFIERS, *LEAF_KEYS, "assert"))
_SUGGESTIONS = sorted(_ALL_KEYS | set(REGISTRY))
