"""Skip what cannot match: a quantifier entry's status decided by one field it reads, and a
change rule not run for a step of no concern to it.

Takes a quantifier whose inner condition is an `all`, an `any` of such (`Either`) or a single
condition, and an entry of its array; gives the status `status.condition_status` would give
the inner condition on the entry, without evaluating all of it, or None when that cannot be
told this way. And (`change_gates`, `idle`) tells `change.ChangeRun` when a change rule's
status on a step is the step before's.

A change rule judges every change of every step (`none: changes`), and most changes are of
no concern to it: `$.commandDenylist[3]` under a rule on hook paths. Its inner `all` names
that concern in a child reading one text field of the change (`{path: path, matches:
'^\\$\\.hooks'}`, `{path: kind, in: [removed]}`): a *gate*. A gate's status on a plain text
(no redaction marker) is a function of that text alone, so it is kept by the text: a history
of 10,000 steps writes a few hundred distinct paths. When a gate fails, the `all` fails, unless
another child is an `error` (an error is never hidden, `status._all`). The other children are
read for that only when they could be one: each is checked once, when the quantifier is first
met, to be *safe* (leaves whose operators cannot fail to decide on the values they read: an
equality or a type test on a change's `before` / `after`, whose leaves take a literal of another
type as unequal, `Leaf.loose`; an equality, pattern or affix test on a text field with text
literals), and the values they read are checked on each entry to hold no marker the leaf
cannot decide (`ANY_VALUE`, `KEYED`, `NO_MARKER`: equality needs the run's key,
`type: string/number/integer` needs no marker; see `operators.hidden`). Otherwise the entry is
evaluated whole, as before.

Exact by construction: `tests/test_sieve.py` compares the statuses given so with the plain
evaluation's over generated changes (markers and errors included) and whole evaluations.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from auditor.evaluate.outcome import OutcomeStatus
from auditor.evaluate.projection import document_reads
from auditor.operators import MISSING, current_marker_of, holds_marker
from auditor.policy.conditions import Condition, Leaf, Logic, Quantifier
from auditor.policy.model import Rule
from auditor.policy.pathexpr import Key
from auditor.policy.refs import Ref
from auditor.redact.plain import MARKER_START

#: Gate statuses one gate keeps by text before it starts over (with `GATE_TEXT`, bounds memory).
GATE_BUDGET = 4096
#: Operators that decide on any text without a marker, each with the literal it needs for
#: that: a text (`equals: [rm]` on a text is an error, never unequal: reviewer R92 #1), a list
#: of texts, a text or a list of them, a compiled pattern, or anything (`exists`, `type`).
_TEXT_SAFE: dict[str, Callable[[Any], bool]] = {
    "equals": lambda arg: isinstance(arg, str),
    "not_equals": lambda arg: isinstance(arg, str),
    "in": lambda arg: isinstance(arg, list) and all(isinstance(a, str) for a in arg),
    "not_in": lambda arg: isinstance(arg, list) and all(isinstance(a, str) for a in arg),
    "starts_with": lambda arg: _texts(arg),
    "ends_with": lambda arg: _texts(arg),
    "matches": lambda arg: isinstance(getattr(arg, "pattern", None), str),
    "not_matches": lambda arg: isinstance(getattr(arg, "pattern", None), str),
    "exists": lambda arg: True,
    "type": lambda arg: True,
}
#: Texts a gate's answer is kept for, at most (a change's `after` may be a long text: kept by
#: the whole text, 4,096 of them were 100s of MB, reviewer R92 #6).
GATE_TEXT = 512
#: Operators that decide on any JSON value without a marker in a loose leaf (`Leaf.loose`:
#: a literal of another type is unequal, not an error).
_LOOSE_SAFE = frozenset({"equals", "not_equals", "in", "not_in", "exists", "type"})

Evaluate = Callable[[Condition, Any], OutcomeStatus]


@dataclass
class Sieve:
    """A quantifier's gates (children of its inner `all` that read one field: the child, the
    field, and, when the child cannot be an error on a value as its level says (`ANY_VALUE`,
    `KEYED`, `NO_MARKER`), that level, so that it can be passed over where its field holds no
    plain text) and what the other children read, as text (`text`) or as any value (`plain`,
    each field with its level)."""

    gates: tuple[tuple[Condition, str, int | None], ...]
    text: tuple[str, ...]
    plain: tuple[tuple[str, int], ...]  # each field with its level (`ANY_VALUE` …)
    whole: bool  # the inner condition is the one gate itself
    seen: tuple[dict[str, OutcomeStatus], ...] = field(default=())

    def __post_init__(self) -> None:
        self.seen = tuple({} for _ in self.gates)

    def decide(self, item: Any, evaluate: Evaluate) -> OutcomeStatus | None:
        """The inner condition's status on `item`, or None: evaluate it whole."""
        if type(item) is not dict:
            return None
        failed = False
        for (gate, name, level), seen in zip(self.gates, self.seen, strict=True):
            value = item.get(name)
            if type(value) is not str or MARKER_START in value:
                if self.whole or level is None or not _decided(level, value):
                    return None
                continue  # (it cannot be an error here: whether the `all` fails, the rest say)
            status = seen.get(value)
            if status is None:
                status = evaluate(gate, item)
                if len(value) <= GATE_TEXT:
                    if len(seen) >= GATE_BUDGET:
                        seen.clear()
                    seen[value] = status
            if self.whole or status == "error":
                return status  # an error in an `all` is its status, whatever the rest gives
            failed = failed or status == "fail"
        if not failed:
            return None
        for name in self.text:
            value = item.get(name, "")
            if type(value) is not str or MARKER_START in value:
                return None
        for name, level in self.plain:
            if not _decided(level, item.get(name)):
                return None
        return "fail"


@dataclass
class Either:
    """A quantifier's inner `any` whose every child has a sieve: each child's status told by
    its own, joined as `any` joins them (error > pass > missing > fail; CHG-MOD-001's "a model
    added, or the endpoint of one moved")."""

    children: tuple[Sieve | Either, ...]

    def decide(self, item: Any, evaluate: Evaluate) -> OutcomeStatus | None:
        """The inner condition's status on `item`, or None: evaluate it whole."""
        told: list[OutcomeStatus] = []
        for child in self.children:
            status = child.decide(item, evaluate)
            if status is None:
                return None
            if status == "error":
                return status
            told.append(status)
        for status in ("pass", "missing"):
            if status in told:
                return status
        return "fail"


Decider = Sieve | Either
_SIEVES: weakref.WeakKeyDictionary[Quantifier, Decider | None] = weakref.WeakKeyDictionary()


def sieve_of(cond: Quantifier) -> Decider | None:
    """The quantifier's sieve (made once), or None when its inner condition has no gate or
    a child that is not safe."""
    try:
        return _SIEVES[cond]
    except KeyError:
        found = _SIEVES[cond] = _make(cond.condition)
        return found


def _make(inner: Condition) -> Decider | None:
    name = _gate_field(inner)
    if name is not None:
        return Sieve(((inner, name, None),), (), (), whole=True)
    if isinstance(inner, Logic) and inner.kind == "any":
        children = [_make(child) for child in inner.children]
        if any(child is None for child in children):
            return None
        return Either(tuple(child for child in children if child is not None))
    if not isinstance(inner, Logic) or inner.kind != "all":
        return None
    gates: list[tuple[Condition, str, int | None]] = []
    text: set[str] = set()
    plain: dict[str, int] = {}
    for child in inner.children:
        name = _gate_field(child)
        if name is not None:
            texts: set[str] = set()
            plains: dict[str, int] = {}
            safe = _safe(child, texts, plains) and not texts
            gates.append((child, name, plains.get(name) if safe else None))
        elif not _safe(child, text, plain):
            return None
    if not gates:
        return None
    return Sieve(tuple(gates), tuple(sorted(text)), tuple(sorted(plain.items())), whole=False)


def _leaves(cond: Condition) -> list[Leaf] | None:
    """The leaves of `and`/`or`/`not` over leaves; None when there is a quantifier below."""
    if isinstance(cond, Leaf):
        return [cond]
    if isinstance(cond, Logic):
        found: list[Leaf] = []
        for child in cond.children:
            below = _leaves(child)
            if below is None:
                return None
            found.extend(below)
        return found
    return None


def _field(leaf: Leaf) -> str | None:
    """The one field of the entry every path of `leaf` reads (`path`, `kind`), or None."""
    names = set()
    for path in leaf.paths:
        step = path.steps[0] if len(path.steps) == 1 else None
        if not isinstance(step, Key):
            return None
        names.add(step.name)
    return names.pop() if len(names) == 1 else None


def _pure(leaf: Leaf) -> bool:
    """The leaf reads nothing but its entry: no `{ref: …}`, no clock, no change operator."""
    return not leaf.is_change and all(
        op.kind != "time" and not isinstance(arg, Ref) for op, arg, _ in leaf.ops
    )


def _gate_field(cond: Condition) -> str | None:
    """The field a gate reads: every leaf reads that one field, and nothing else."""
    leaves = _leaves(cond)
    if not leaves or not all(_pure(leaf) for leaf in leaves):
        return None
    names = {_field(leaf) for leaf in leaves}
    if len(names) != 1 or None in names:
        return None
    return names.pop()


def _texts(arg: Any) -> bool:
    """A text, or a list of texts."""
    if isinstance(arg, list):
        return all(isinstance(a, str) for a in arg)
    return isinstance(arg, str)


def _never(arg: Any) -> bool:
    return False


def _safe(cond: Condition, text: set[str], plain: dict[str, int]) -> bool:
    """`cond` cannot be an `error` on an entry whose `text` fields are texts without a
    marker and whose `plain` fields are as their level asks (`ANY_VALUE`, `KEYED`,
    `NO_MARKER`: the fields it reads are added, each at the strictest level a leaf reads it
    with)."""
    leaves = _leaves(cond)
    if leaves is None:
        return False
    for leaf in leaves:
        name = _field(leaf)
        if name is None or not _pure(leaf) or leaf.default is not MISSING:
            return False
        names = {op.name for op, _, _ in leaf.ops}
        if leaf.loose and names <= _LOOSE_SAFE:
            level = max(_hides(op.name, arg) for op, arg, _ in leaf.ops)
            plain[name] = max(level, plain.get(name, ANY_VALUE))
        elif all(_TEXT_SAFE.get(op.name, _never)(arg) for op, arg, _ in leaf.ops):
            text.add(name)
        else:
            return False
    return True


#: How much a loose leaf's operators can decide on a value holding a redaction marker
#: (`operators.hidden`): on any value (`exists`; `type` of a kind no marker stands for:
#: object, array, boolean, null), on any value once the run's key is set (equality and
#: membership: a marker is the literal whose marker it is, else differs from it), or only on a
#: value without a marker (`type: string` on a marker, which may hide a number).
ANY_VALUE, KEYED, NO_MARKER = 0, 1, 2
_HIDDEN_TYPES = frozenset({"string", "number", "integer"})  # (as `operators.hidden` has them)


def _hides(name: str, arg: Any) -> int:
    if name == "exists" or (name == "type" and arg not in _HIDDEN_TYPES):
        return ANY_VALUE
    return NO_MARKER if name == "type" else KEYED


def _decided(level: int, value: Any) -> bool:
    """A leaf of this level can decide on `value`: it holds no marker, or needs none."""
    if level == ANY_VALUE or not holds_marker(value):
        return True
    return level == KEYED and current_marker_of() is not None


_CHANGES = (Key("changes"),)
_SIDES = (("before",), ("after",))


def change_gates(rule: Rule) -> tuple[Decider, ...] | None:
    """The sieves of a change rule whose every part (what `and`/`or`/`not` join at its root)
    either reads only the settings of the step's two sides (`before.…`, `after.…`) or is a
    quantifier over `changes` with a sieve; None for any other rule. Such a rule's status is a
    function of those settings and, for each quantifier, of which statuses its changes have:
    on a step whose every change each sieve tells fails (or that has none), it is the status of
    the step before when that step was so too and the settings it reads did not move
    (`change.ChangeRun`: a change rule is not run for a step that does not concern it)."""
    sieves: list[Decider] = []
    for cond in (c for c in (rule.when, rule.condition) if c is not None):
        for part in _parts(cond):
            if isinstance(part, Quantifier) and part.path.steps == _CHANGES:
                found = sieve_of(part)
                if found is None:
                    return None
                sieves.append(found)
            elif not all(deps[:1] in _SIDES for deps in document_reads(part)):
                return None
    return tuple(sieves) if sieves else None


def _parts(cond: Condition) -> list[Condition]:
    if isinstance(cond, Logic):
        return [part for child in cond.children for part in _parts(child)]
    return [cond]


def idle(sieves: tuple[Decider, ...], changes: Any, evaluate: Evaluate) -> str | None:
    """`empty` when the step has no change, `fail` when each of `sieves` tells every change
    fails, else None (a change that may concern the rule, or one the sieves cannot tell)."""
    if type(changes) is not list:
        return None
    if not changes:
        return "empty"
    for item in changes:
        for sieve in sieves:
            if sieve.decide(item, evaluate) != "fail":
                return None
    return "fail"
