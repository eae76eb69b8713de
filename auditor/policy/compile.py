"""Compiling conditions: the raw `when`/`assert` mapping of a rule in, a condition tree out.

Takes the YAML data of one condition (already schema-checked as far as JSON Schema can), gives
the frozen tree of `auditor.policy.conditions` with operator arguments prepared once, or the
problems found, each with the YAML path where it occurs so the loader can attach
`file:line:col`.
"""

from __future__ import annotations

import contextlib
import difflib
import math
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from auditor.models import CHANGE_DOCUMENT_FIELDS, CHANGE_FIELDS, CHANGE_KINDS
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
_PATH, _OLD_PATH = Key("path"), Key("old_path")
#: Steps a path may have: settings nest at most 64 levels (`fetch.shape.MAX_DEPTH`, and a
#: YAML input's), and a change rule's `changes[N].after` adds 3, so a longer one is never
#: present (1,000 steps ended the run with an unexpected RecursionError: tester T98 #5).
MAX_PATH_STEPS = 67
# The operators that compare a change's `path` (or `old_path`) with a literal whole: the
# literal must be a path as the diff writes it (`$.commandDenylist`), or it matches no change.
EXACT_OPS = frozenset({"equals", "not_equals", "in", "not_in"})
_STARTS_OPS = frozenset({"starts_with", "starts_with_any"})  # (`$.hooks.` starts a path)
# The bounds a leaf's number, or a `length:`, is held to: lower (strict?) and upper.
_LOWER = {"gt": True, "gte": False}
_UPPER = {"lt": True, "lte": False}


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

    def _path(
        self, text: Any, where: Parts, *, root: bool = False, on_settings: bool = False
    ) -> CompiledPath | None:
        """Compile one path; `root`: read from the rule's document (not an element's);
        `on_settings`: a change operator's, read in the settings before and after."""
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
        if len(path.steps) > MAX_PATH_STEPS:
            self.fail(
                where,
                f"a path of {len(path.steps)} steps is never present: settings nest at most "
                f"64 levels (a change rule's `changes[N].after` adds 3, so {MAX_PATH_STEPS} "
                "steps at most)",
            )
            return None
        change = self.target == "change" and (root or self._over_changes) and not on_settings
        if change and not self._check_change_field(path, where, root=root):
            return None
        if root and self.target == "change":
            self._check_selected_kind(path, where)
        return path

    def _check_change_field(self, path: CompiledPath, where: Parts, *, root: bool) -> bool:
        """A change rule's path starts at one of its document's fields (`after.sandbox…`),
        or, in a quantifier over `changes`, at one of a change's: any other is always absent,
        so the rule was `not_applicable` or passed on every step (`sandbox.enabled` where
        `after.sandbox.enabled` was meant: tester T98 #1)."""
        first = path.steps[0] if path.steps else None
        fields = CHANGE_DOCUMENT_FIELDS if root else CHANGE_FIELDS
        if not isinstance(first, Key) or first.name in fields:
            return True
        whose = "a change rule's document" if root else "a change in `changes`"
        close = difflib.get_close_matches(first.name, fields, n=1, cutoff=0.75)
        bare = path.text.removeprefix("@.").removeprefix("$.")
        # (in a change, `after` is the changed value, not the settings: its `path` names the
        # key it changed, R90 #9)
        meant = close[0] if close else f"after.{bare}" if root else f'path: "$.{bare}"'
        self.fail(
            where,
            f"`{first.name}` is not a field of {whose} ({', '.join(fields)}), so "
            f"`{path.text}` is never present (did you mean `{meant}`?)",
        )
        return False

    def _check_selected_kind(self, path: CompiledPath, where: Parts) -> None:
        """`changes[kind=item_add]`: the selector's kind is a kind, as a literal compared with
        `kind` must be (a misspelt one selects no change: the path is always absent)."""
        steps = path.steps
        if len(steps) < 2 or steps[0] != _CHANGES:
            return
        step = steps[1]
        if isinstance(step, Select) and step.field == "kind" and step.value not in CHANGE_KINDS:
            self.fail(where, _not_a_kind(step.value, f"so `{path.text}` would select no change"))
        # (R90 #7; `old_path=null` selects the changes that are no rename, as the diff writes)
        if (
            isinstance(step, Select)
            and step.field in ("path", "old_path")
            and step.value is not None
        ):
            value = str(step.raw if step.raw is not None else step.value)
            said = _not_a_change_path(value, f", so `{path.text}` would select no change")
            if said:
                self.fail(where, said)

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
        on_settings = any(REGISTRY[n].kind == "change" for n in names)  # (read on both sides)
        paths = [
            self._path(t, (*where, "path"), root=not in_element, on_settings=on_settings)
            for t in alternatives
        ]
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
        if len(self.problems) == count and any(
            self._reads_kind(p, in_element, (_PATH, _OLD_PATH)) for p in paths
        ):
            self._check_change_paths(raw, names, where)
        if len(self.problems) == count:
            self._check_bounds(raw, names, where)
        if "default" in raw and not any(self._varies(p) for p in paths):
            self._check_default(raw, names, where)
        if "default" in raw and "exists" in names:
            self.fail(
                (*where, "default"),
                "`default` makes an absent key present, so `exists` cannot fail on it (nor "
                "`exists: false` pass): drop `default`, or `exists`",
            )
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

    def _reads_kind(
        self, path: CompiledPath | None, in_element: bool, fields: tuple[Key, ...] = (_KIND,)
    ) -> bool:
        """`path` is a change's `kind` (or another of `fields`): `kind` in the `assert` of a
        quantifier over `changes`, or `changes[*].kind` (`[N]`, `[key=value]`) in a change
        rule's leaf."""
        if path is None or self.target != "change":
            return False
        steps: tuple[Step, ...] = path.steps
        if self._over_changes and len(steps) == 1 and steps[0] in fields:
            return True
        return (
            not in_element
            and len(steps) == 3
            and steps[0] == _CHANGES
            and not isinstance(steps[1], Key)
            and steps[2] in fields
        )

    def _check_change_paths(self, raw: Mapping[str, Any], names: list[str], where: Parts) -> None:
        """Each literal compared whole with a change's `path` is a path as the diff writes
        it: `commandDenylist`, `$.customModels[id=custom:x].baseUrl` (a policy path's
        selector) or `[?id=="custom:x"]` match no change, and the rule passed every step
        (tester T98 #2)."""
        for spot, value in _text_literals(raw, names, _STARTS_OPS, where):
            if not value.startswith("$"):  # (`starts_with: sandbox.`: R90 #7)
                self.fail(
                    spot,
                    f"`{value}` starts no change's path: the diff writes each from `$` "
                    f"(did you mean `$.{value}`?), so this literal would match no change",
                )
        so = (
            ": `$.key.key`, `$['odd key']`, `[N]` in a plain list and `[?id=='value']` in a "
            "list of items with ids, so this literal would match no change"
        )
        for spot, value in _text_literals(raw, names, EXACT_OPS, where):
            if said := _not_a_change_path(value, so):
                self.fail(spot, said)

    def _check_default(self, raw: Mapping[str, Any], names: list[str], where: Parts) -> None:
        """A `default` of another type than every literal it is compared with (`equals: true,
        default: "true"`) judges nothing: the absent key would be an `error` on every run
        where it is meant to decide (tester T98 #8)."""
        default = _json_type(raw["default"])
        if default is None:
            return
        for name in names:
            arg = raw[name]
            if name not in _TYPED_OPS or is_ref(arg):
                continue
            literals = arg if isinstance(arg, list) else [arg]
            types = {_json_type(v) for v in literals}
            if literals and None not in types and default not in types:
                shown = " or ".join(sorted(str(t) for t in types))
                self.fail(
                    (*where, "default"),
                    f"`default` is a {default}, and `{name}` compares with a {shown}: the "
                    "absent key could never be judged (write the default as the literal's type)",
                )
                return

    def _check_bounds(self, raw: Mapping[str, Any], names: list[str], where: Parts) -> None:
        """Bounds that no value meets (`{gt: 500, lt: 10}`, `length: {gte: 5, lte: 1}`)
        always fail, and pass under `not:`: refused (tester T98 #7)."""
        own = {n: raw[n] for n in names if n in _LOWER or n in _UPPER or n == "equals"}
        if len(own) > 1 and not _satisfiable(own, integers=False):
            self.fail(where, f"no value meets {_shown_bounds(own)}: the leaf can never hold")
        length = raw.get("length") if "length" in names else None
        if isinstance(length, Mapping) and not _satisfiable(length, integers=True):
            self.fail(
                (*where, "length"),
                f"no length meets {_shown_bounds(length)}: the leaf can never hold",
            )

    def _check_kinds(self, raw: Mapping[str, Any], names: list[str], where: Parts) -> None:
        """Each literal compared with a change's `kind` is a kind (a closed set): a misspelt
        one (`item_add`) would match no change, and the rule would pass every step."""
        for spot, value in _text_literals(raw, names, KIND_OPS, where):
            if value not in CHANGE_KINDS:
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


def _text_literals(
    raw: Mapping[str, Any], names: list[str], ops: frozenset[str], where: Parts
) -> Iterator[tuple[Parts, str]]:
    """Each text literal (an item of a list one too) of the operators of `ops` among `names`
    in leaf `raw`, with its YAML path (a `{ref: …}` is no literal)."""
    for name in names:
        arg = raw[name]
        if name not in ops or is_ref(arg):
            continue
        items = list(enumerate(arg)) if isinstance(arg, list) else [(None, arg)]
        for at, value in items:
            if isinstance(value, str):
                yield ((*where, name) if at is None else (*where, name, at)), value


def _not_a_change_path(value: str, so: str) -> str | None:
    """The problem of a change's path written otherwise than the diff writes it
    (`commandDenylist`, `[id=x]`), with the form meant when it can be read as one; None for
    one the diff writes."""
    meant = _as_diff_writes(value)
    if meant == value:
        return None
    hint = f" (did you mean `{meant}`?)" if meant else ""
    return f"`{value}` is not a change's path as the diff writes it{hint}{so}"


def _not_a_kind(value: Any, so: str) -> str:
    """The problem of a change kind that is none (`item_add`)."""
    shown = str(value) if isinstance(value, str) else repr(value)
    return (
        f"`{shown}` is not a change kind{kind_hint(shown, CHANGE_KINDS)}: a change's `kind` is "
        f"one of {', '.join(CHANGE_KINDS)}, {so}"
    )


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _satisfiable(bounds: Mapping[str, Any], *, integers: bool) -> bool:
    """Whether some number (an integer, for a length) meets every one of `bounds` (`gt`,
    `gte`, `lt`, `lte`, `equals`: each a number; any other is judged elsewhere)."""
    low, low_strict = -math.inf, False
    high, high_strict = math.inf, False
    for name, bound in bounds.items():
        if not _number(bound):
            return True  # (a ref, a wrong type: said elsewhere)
        if name in _LOWER or name == "equals":
            strict = _LOWER.get(name, False)
            if bound > low or (bound == low and strict):
                low, low_strict = bound, strict
        if name in _UPPER or name == "equals":
            strict = _UPPER.get(name, False)
            if bound < high or (bound == high and strict):
                high, high_strict = bound, strict
    if integers:  # the least and greatest integers within them (a length is 0 or more)
        if low < 0:
            low, low_strict = 0, False
        if math.isfinite(low) and (low_strict or low != math.floor(low)):
            low = math.floor(low) + 1
        if math.isfinite(high) and (high_strict or high != math.ceil(high)):
            high = math.ceil(high) - 1
        return bool(low <= high)
    return bool(low < high or (low == high and not (low_strict or high_strict)))


#: The operators whose literal's type the value's must be (`equals: true` is no test of "true").
_TYPED_OPS = frozenset({"equals", "not_equals", "in", "not_in", "gt", "gte", "lt", "lte"})


def _json_type(value: Any) -> str | None:
    """`boolean`, `number` or `string` for a scalar of that type; None for any other (null,
    a list, a mapping: not judged here)."""
    if isinstance(value, bool):
        return "boolean"
    if _number(value):
        return "number"
    return "string" if isinstance(value, str) else None


def _shown_bounds(bounds: Mapping[str, Any]) -> str:
    return " and ".join(f"`{name}: {bound!r}`" for name, bound in bounds.items())


def _as_diff_writes(text: str) -> str | None:
    """`text` as the diff writes a change's path, if it can be read as one: `$.` put before a
    bare key, a policy path's selector `[id=x]` or a double-quoted `[?id=="x"]` written as
    `[?id=='x']` (None: no reading of it)."""
    from auditor.common import paths

    with contextlib.suppress(ValueError):  # as written (`$['a[b=c]']`, `[?n==1e+16]`: R90 #8)
        return paths.render(paths.parse(text))
    candidate = text if text.startswith("$") else ("$" if text.startswith("[") else "$.") + text
    candidate = re.sub(
        r"\[\??([A-Za-z_$][A-Za-z0-9_$-]*)==?(\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*'|[^\]'\"]+)\]",
        lambda m: "[?" + m[1] + "==" + _quoted_value(m[2]) + "]",
        candidate,
    )
    try:
        return paths.render(paths.parse(candidate))
    except ValueError:
        return None


def _quoted_value(text: str) -> str:
    """A selector's value as the diff writes it: a text single-quoted."""
    if text.startswith("'"):
        return text
    if text.startswith('"'):
        text = text[1:-1].replace('\\"', '"')
    elif text in ("true", "false", "null") or re.fullmatch(r"-?\d+(\.\d+)?", text):
        return text
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


_ALL_KEYS = frozenset((*LOGIC_KEYS, *QUANTIFIERS, *LEAF_KEYS, "assert"))
_SUGGESTIONS = sorted(_ALL_KEYS | set(REGISTRY))
