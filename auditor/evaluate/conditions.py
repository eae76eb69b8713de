"""Running a condition tree against a document: one node in, one four-valued `Outcome` out.

Takes a compiled condition (`auditor.policy.conditions`), the node it reads, the JSON path of
that node (`$` for the document, `$.hooks[0]` inside a quantifier) and the environment (clock,
change sides, root document for `{ref: …}` arguments). Gives pass, fail, missing (a path is
absent; the rule's `on_missing` decides) or error (wrong type; never a silent false).
"""

from __future__ import annotations

import sys
from typing import Any

from auditor.common import paths
from auditor.evaluate.env import Env
from auditor.evaluate.outcome import Outcome, combine_all, combine_any
from auditor.evaluate.quantify import Quantified, each_outcome, grouped, some_outcome
from auditor.evaluate.refs import dereference
from auditor.evaluate.status import entry_statuses
from auditor.evaluate.wording import Check, erred, held, held_change, not_held, not_held_change
from auditor.models import Evidence
from auditor.operators import MISSING, LiteralMismatch, OperandTypeError, Operator, json_type
from auditor.operators.change import ListsAt
from auditor.policy.conditions import Condition, Leaf, Logic, Quantifier
from auditor.policy.pathexpr import PathTypeError
from auditor.policy.phrasing import short, show
from auditor.policy.refs import Ref

__all__ = [
    "Env",
    "element_base",
    "evaluate_condition",
    "evaluate_leaf",
    "evaluate_logic",
    "evaluate_quantifier",
]


def evaluate_condition(cond: Condition, node: Any, base: str, env: Env) -> Outcome:
    """The outcome of `cond` on `node`, whose JSON path is `base`."""
    if isinstance(cond, Leaf):
        return evaluate_leaf(cond, node, base, env)
    if isinstance(cond, Logic):
        return evaluate_logic(cond, node, base, env)
    return evaluate_quantifier(cond, node, base, env)


def evaluate_logic(cond: Logic, node: Any, base: str, env: Env) -> Outcome:
    """Combine the children (an error anywhere is never hidden)."""
    outcomes = [evaluate_condition(c, node, base, env) for c in cond.children]
    if cond.kind == "all":
        return combine_all(outcomes)
    if cond.kind == "any":
        return combine_any(outcomes)
    return outcomes[0].negated()


def evaluate_quantifier(cond: Quantifier, node: Any, base: str, env: Env) -> Outcome:
    """Evaluate the inner condition on every element, relative to it."""
    try:
        items, where = cond.path.resolve(node)
    except PathTypeError as exc:
        return _type_error(base, exc)
    where = base + where[1:]
    if items is MISSING:
        return Outcome.missing(where)
    if not isinstance(items, list):
        detail = f"{show(where)} is {json_type(items)}; `{cond.kind}` needs an array"
        return Outcome.error(detail, Evidence(where, items, None, cond.kind))
    inner = cond.condition
    worded: dict[int, Outcome] = {}

    def word(index: int) -> Outcome:
        found = worded.get(index)
        if found is None:
            item = items[index]
            found = evaluate_condition(inner, item, element_base(where, index, item), env)
            worded[index] = found
        return found

    # Every entry's status, but the words only of the entries the outcome shows (at most
    # ENTRY_EVIDENCE of them): a list of 20,000 commands is 20,000 statuses, not 20,000
    # messages. `status.entry_statuses` gives the status `evaluate_condition` would.
    groups = grouped(entry_statuses(cond, items, env))
    run = Quantified(where, items, groups, word, cond.inner.__getitem__, cond.on_self)
    if cond.kind == "each":
        return each_outcome(run)
    found = some_outcome(run)
    return found if cond.kind == "some" else found.negated()


def element_base(where: str, index: int, item: Any) -> str:
    """The evidence path of an array element: by `id` when it has one, else by position."""
    ident = item.get("id") if isinstance(item, dict) else None
    if isinstance(ident, str | int):
        return sys.intern(where + paths.render_component(paths.Match("id", ident)))
    return sys.intern(f"{where}[{index}]")


def evaluate_leaf(leaf: Leaf, node: Any, base: str, env: Env) -> Outcome:
    """Resolve the leaf's path and apply every operator."""
    try:
        if leaf.is_change:
            return _change(leaf, base, env)
        value, where = _resolve(leaf, node, base)
    except PathTypeError as exc:
        return _type_error(base, exc)
    if value is MISSING and leaf.default is not MISSING:
        value = leaf.default
    if value is MISSING and any(op.kind != "presence" for op, _, _ in leaf.ops):
        # `exists: true` beside other operators: the absent key fails it, whatever the others
        # could not tell ("a leaf with several operators passes only if all hold")
        for (op, arg, raw), shown in zip(leaf.ops, leaf.shown, strict=True):
            if op.kind == "presence" and not op.fn(value, arg):
                return not_held(where, value, op, shown, Evidence(where, None, raw, op.name, False))
        return Outcome.missing(where)
    return _apply(leaf, value, where, env)


def _type_error(base: str, exc: PathTypeError) -> Outcome:
    return Outcome.error(f"{base}{str(exc)[1:]}", Evidence(base + exc.where[1:]))


def _resolve(leaf: Leaf, node: Any, base: str) -> tuple[Any, str]:
    """The value at the first present path (or MISSING) and where it is (or the first path)."""
    first = ""
    for path in leaf.paths:
        value, where = path.resolve(node)
        # One object for each place (`$.changes[0].path` is the place of 100,000s of
        # evidence items in an `--all-revisions` run: 18 MB of copies; `sys.intern` holds no
        # reference of its own, so the text goes with its last user)
        where = sys.intern(base + where[1:])
        if value is not MISSING:
            return value, where
        first = first or where
    return MISSING, first


def _apply(leaf: Leaf, value: Any, where: str, env: Env) -> Outcome:
    checks: list[Check] = []
    present = value is not MISSING
    actual = value if present else None
    for (op, arg, raw), shown in zip(leaf.ops, leaf.shown, strict=True):
        ev = Evidence(where, actual, raw, op.name, present)
        ref = isinstance(arg, Ref)
        if ref:
            got = dereference(arg, op, where, env.root, ev)
            if isinstance(got, Outcome):
                return erred(got, op, got.evidence[0]) if got.evidence else got
            arg, shown, ev = got
        checks.append((op, ev.expected, shown, ev))
        try:
            ok = op.fn(value, arg, env.now) if op.kind == "time" else op.fn(value, arg)
        except LiteralMismatch as exc:
            if not leaf.loose:
                shown_exc = exc.from_ref() if ref else exc
                return erred(Outcome.type_error(where, value, op.name, shown_exc, ev), op, ev)
            ok = exc.result
        except OperandTypeError as exc:
            return erred(Outcome.type_error(where, value, op.name, exc, ev), op, ev)
        except (TypeError, ValueError, ArithmeticError) as exc:
            return erred(Outcome.error(f"{show(where)}: `{op.name}` failed: {exc}"), op, ev)
        if not ok:
            return not_held(where, value, op, shown, ev)
    return held(where, value, checks)


def _change(leaf: Leaf, base: str, env: Env) -> Outcome:
    if env.change is None:
        return Outcome.error(f"`{leaf.ops[0][0].name}` needs a change target")
    before, where = _resolve(leaf, env.change[0], base)
    after, _ = _resolve(leaf, env.change[1], base)
    went = f"{show(where)} went {short(before)} -> {short(after)}"
    note = sys.intern(f"before: {short(before)}")
    present = after is not MISSING
    at = ListsAt(where, env.table)
    checks: list[Check] = []
    for (op, arg, raw), shown in zip(leaf.ops, leaf.shown, strict=True):
        ev = Evidence(where, after if present else None, raw, op.name, present, note)
        checks.append((op, raw, shown, ev))
        try:
            ok = op.fn(before, after, arg, at)
        except OperandTypeError as exc:
            if exc.side != "before":
                return erred(Outcome.type_error(where, after, op.name, exc, ev), op, ev)
            # The value before is at fault (`null -> 5` under `increased`): say so.
            return _before_error(where, before, after, op, exc, ev)
        if not ok:
            return not_held_change(went, op, raw, shown, ev)
    return held_change(went, after, checks)


def _before_error(
    where: str, before: Any, after: Any, op: Operator, exc: OperandTypeError, ev: Evidence
) -> Outcome:
    """A change operator's type error whose value at fault is the one before the change."""
    if exc.detail:
        found, why = short(before), f": {exc.detail}"
    else:
        found = "null" if before is None else f"{json_type(before)} {short(before)}"
        why = f"; `{op.name}` needs {exc.wanted}"
    text = f"{show(where)} was {found} before the change (now {short(after)}){why}"
    note = f"after: {short(after)}"
    return erred(Outcome.error(text), op, ev, actual=before, present=True, note=note)
