"""Compiling conditions: the raw `when`/`assert` mapping of a rule in, a condition tree out.

Takes the YAML data of one condition (already schema-checked as far as JSON Schema can), gives
the frozen tree of `auditor.policy.conditions` with operator arguments prepared once, or the
problems found, each with the YAML path where it occurs so the loader can attach
`file:line:col`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from auditor.models import CHANGE_KINDS
from auditor.operators import MISSING, REGISTRY, Operator
from auditor.policy.conditions import Condition, Leaf, Logic, Parts, Quantifier
from auditor.policy.hints import kind_hint, operator_hint
from auditor.policy.pathexpr import (
    CompiledPath,
    Key,
    PathSyntaxError,
    Select,
    Star,
    Step,
    compile_path,
)
from auditor.policy.refs import Ref, is_ref

Problem = tuple[Parts, str]
LOGIC_KEYS = ("all", "any", "not")
QUANTIFIERS = ("each", "some", "none")
LEAF_KEYS = ("path", "default", "enum")
ORDERED_OPS = ("at_most", "at_least", "increased", "decreased")
NON_NEGATIVE_OPS = ("within_days", "older_than_days")  # days before now
# The operators whose literal is a value (or a list of values) a change's `kind` is compared
# with: each such literal must be a kind (`item_add` would match no change, so a rule on it
# passed every step).
KIND_OPS = frozenset(
    {"equals", "not_equals", "in", "not_in", "contains", "excludes"}
    | {"contains_any", "contains_all", "subset_of"}
)
_CHANGES, _KIND = Key("changes"), Key("kind")
_BEFORE, _AFTER = Key("before"), Key("after")


class Compiler:
    """Compiles raw conditions of one rule, collecting problems with their YAML path."""

    def __init__(
        self,
        target: str,
        enums: Mapping[str, tuple[str, ...]],
        written: Callable[[Parts], str | None] | None = None,
    ) -> None:
        self.target = target
        self.enums = enums
        self.written = written  # a scalar's text as the file writes it (for messages)
        self.problems: list[Problem] = []
        self._over_changes = False  # compiling the `assert` of `each|some|none: changes`

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
            hint = operator_hint(str(key), _SUGGESTIONS)
            self.fail((*where, key), f"unknown key `{key}`{hint}")
        if unknown:
            return None
        logic = [k for k in LOGIC_KEYS if k in raw]
        quant = [k for k in QUANTIFIERS if k in raw]
        if logic:
            return self._logic(raw, logic, where, in_element)
        if quant:
            return self._quantifier(raw, quant, where, in_element)
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
        self, raw: Mapping[str, Any], keys: list[str], where: Parts, inside: bool = False
    ) -> Condition | None:
        kind = keys[0]
        if not self._only(raw, (kind, "assert"), where, f"`{kind}`"):
            return None
        path = self._path(raw[kind], (*where, kind), root=not inside)
        if "assert" not in raw:
            self.fail(where, f"`{kind}` needs an `assert` condition for each element")
            return None
        over, self._over_changes = self._over_changes, (
            self.target == "change" and not inside and path is not None
            and path.steps in ((_CHANGES,), (_CHANGES, Star()))
        )  # fmt: skip
        try:
            inner = self.compile(raw["assert"], (*where, "assert"), in_element=True)
        finally:
            self._over_changes = over
        if path is None or inner is None:
            return None
        return Quantifier(kind, path, inner)  # type: ignore[arg-type]

    def _path(self, text: Any, where: Parts, *, root: bool = False) -> CompiledPath | None:
        """Compile one path; `root`: read from the rule's document (not an element's)."""
        if not isinstance(text, str):
            self.fail(where, "a path must be a string")
            return None
        if not text:  # compiled to the value itself, as `@` does, where a key was meant
            self.fail(where, "a path must not be empty (`@` names the value itself)")
            return None
        try:
            path = compile_path(text)
        except PathSyntaxError as exc:
            self.fail(where, str(exc))
            return None
        if root and self.target == "change":
            self._check_selected_kind(path, where)
        return path

    def _check_selected_kind(self, path: CompiledPath, where: Parts) -> None:
        """`changes[kind=item_add]`: the selector's kind is a kind, as a literal compared with
        `kind` must be (a misspelt one selects no change: the path is always absent)."""
        steps = path.steps
        if len(steps) < 2 or steps[0] != _CHANGES:
            return
        step = steps[1]
        if isinstance(step, Select) and step.field == "kind" and step.value not in CHANGE_KINDS:
            self.fail(where, _not_a_kind(step.value, f"so `{path.text}` would select no change"))

    def _leaf(self, raw: Mapping[str, Any], where: Parts, in_element: bool) -> Condition | None:
        names = [k for k in raw if k in REGISTRY]
        if not names:
            self.fail(
                where, "a condition needs an operator, `all`/`any`/`not` or `each`/`some`/`none`"
            )
            return None
        count = len(self.problems)
        texts = raw.get("path", "@")
        if texts == []:
            self.fail((*where, "path"), "`path` needs a path or a non-empty list of paths")
        alternatives = texts if isinstance(texts, list) else [texts]
        paths = [self._path(t, (*where, "path"), root=not in_element) for t in alternatives]
        ops = [self._op(name, raw, where, in_element) for name in names]
        kinds = {REGISTRY[n].kind == "change" for n in names}
        if len(kinds) > 1:
            self.fail(
                where, "change operators (changed, from, to, …) cannot share a leaf with others"
            )
        if "enum" in raw and not any(n in ORDERED_OPS for n in names):
            self.fail((*where, "enum"), "`enum` applies only to " + ", ".join(ORDERED_OPS))
        if len(self.problems) == count and any(self._reads_kind(p, in_element) for p in paths):
            self._check_kinds(raw, names, where)
        if len(self.problems) > count:
            return None
        default = raw.get("default", MISSING)
        loose = any(self._varies(p) for p in paths)
        return Leaf(tuple(paths), tuple(ops), default, where, loose)  # type: ignore[arg-type]

    def _varies(self, path: CompiledPath | None) -> bool:
        """The value at `path` may be of any JSON type by design (`Leaf.loose`): a change's
        `before` / `after` in the `assert` of a quantifier over `changes` (a step's changes
        hold values of every type). Not the element itself (`@`): a settings array holds one
        type, and `in: ["22"]` on its numbers is the quoted-literal mistake (review R17)."""
        if path is None or not path.steps:
            return False
        return self._over_changes and path.steps[0] in (_BEFORE, _AFTER)

    def _reads_kind(self, path: CompiledPath | None, in_element: bool) -> bool:
        """`path` is a change's `kind`: `kind` in the `assert` of a quantifier over `changes`,
        or `changes[*].kind` (`[N]`, `[key=value]`) in a change rule's leaf."""
        if path is None or self.target != "change":
            return False
        steps: tuple[Step, ...] = path.steps
        if self._over_changes and steps == (_KIND,):
            return True
        return (
            not in_element
            and len(steps) == 3
            and steps[0] == _CHANGES
            and not isinstance(steps[1], Key)
            and steps[2] == _KIND
        )

    def _check_kinds(self, raw: Mapping[str, Any], names: list[str], where: Parts) -> None:
        """Each literal compared with a change's `kind` is a kind (a closed set): a misspelt
        one (`item_add`) would match no change, and the rule would pass every step."""
        for name in names:
            arg = raw[name]
            if name not in KIND_OPS or is_ref(arg):
                continue
            items = list(enumerate(arg)) if isinstance(arg, list) else [(None, arg)]
            for at, value in items:
                if not isinstance(value, str) or value in CHANGE_KINDS:
                    continue
                spot = (*where, name) if at is None else (*where, name, at)
                self.fail(spot, _not_a_kind(value, "so this literal would match no change"))

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
        if name.startswith("version_") and isinstance(arg, float):
            # YAML reads `1.10` as the number 1.1: the version would silently lose digits
            as_written = self.written((*where, name)) if self.written else None
            text = as_written or repr(arg)
            self.fail(
                (*where, name),
                f"{name}: {text} was read as the number {arg!r}; quote the version: '{text}'",
            )
            return None
        if name in ORDERED_OPS and "enum" in raw:
            arg = {"enum": raw["enum"]} if arg is True else {"enum": raw["enum"], "value": arg}
        try:
            prepared = op.prepare(arg, self.enums)
            # (a number only: any other type is named where the operand's type is checked)
            if name in NON_NEGATIVE_OPS and _number(prepared) and prepared < 0:
                raise ValueError(f"`{name}` counts days before now: 0 or more, got {arg!r}")
            return op, prepared, raw[name]
        except ValueError as exc:
            self.fail((*where, name), str(exc))
            return None

    def _ref(self, op: Operator, text: Any, where: Parts) -> tuple[Operator, Any, Any] | None:
        if not op.ref:
            accepting = ", ".join(n for n, o in sorted(REGISTRY.items()) if o.ref)
            self.fail(where, f"`{op.name}` does not accept {{ref: …}} (these do: {accepting})")
            return None
        path = self._path(text, (*where, "ref"), root=True)
        if path is None:
            return None
        return op, Ref(path), {"ref": text}


def _not_a_kind(value: Any, so: str) -> str:
    """The problem of a change kind that is none (`item_add`)."""
    shown = str(value) if isinstance(value, str) else repr(value)
    return (
        f"`{shown}` is not a change kind{kind_hint(shown, CHANGE_KINDS)}: a change's `kind` is "
        f"one of {', '.join(CHANGE_KINDS)}, {so}"
    )


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


_ALL_KEYS = frozenset((*LOGIC_KEYS, *QUANTIFIERS, *LEAF_KEYS, "assert"))
_SUGGESTIONS = sorted(_ALL_KEYS | set(REGISTRY))
