"""Verdict first, words later: a rule's status on a document without building any text.

Takes a compiled `Rule`, the document and the environment, gives the status `run_rule` would
give (pass, fail, error, unknown or not_applicable …) by the same four-valued rules — `all`:
error > fail > missing > pass; `any` and `some`: error > pass > missing > fail; `each`: error >
fail > missing > pass (an empty array passes); `not` and `none` swap pass and fail — but
builds no message and no evidence. The history walk and the change steps need only the
status of most of what they evaluate; the words are built (`rule.run_rule`) for the results
that are reported. `tests/test_status.py` checks both agree over every shipped rule and many
generated documents. With an `ElementMemo` (one per rule, see `memo`), an array element's
status under a quantifier is reused whenever what the inner condition reads of it repeats:
a list that gained one entry costs one entry.
"""

from __future__ import annotations

import weakref
from collections.abc import Hashable, Iterator
from typing import Any

from auditor.evaluate.env import Env
from auditor.evaluate.outcome import OutcomeStatus
from auditor.evaluate.projection import (
    Deps,
    document_reads,
    element_key,
    element_reads,
    projection,
)
from auditor.evaluate.refs import RefError, resolve_ref
from auditor.evaluate.sieve import Decider, Evaluate, sieve_of
from auditor.models import Status
from auditor.operators import MISSING, LiteralMismatch, OperandTypeError, current_marker_of
from auditor.operators.change import ListsAt
from auditor.operators.core import enter_scope, leave_scope
from auditor.policy.conditions import Condition, Leaf, Logic, Quantifier
from auditor.policy.model import Rule
from auditor.policy.pathexpr import PathTypeError
from auditor.policy.refs import Ref

_SWAP: dict[OutcomeStatus, OutcomeStatus] = {"pass": "fail", "fail": "pass"}
#: Element statuses one quantifier keeps before it starts over (bounds memory).
ELEMENT_BUDGET = 4096


class ElementMemo:
    """One rule's element statuses: for each quantifier whose inner condition reads nothing
    outside the element (no `{ref: …}`, no change leaf), the status by the element's key.

    The clock is part of what a status depends on: one memo serves one evaluation (one `now`),
    as the rule's verdict cache does."""

    def __init__(self, rule: Rule, *, steady: bool = False) -> None:
        self.plan: dict[int, tuple[tuple[Deps, ...], dict[Hashable, OutcomeStatus]]] = {}
        self.steady: dict[int, Steady] = {}
        for cond in (c for c in (rule.when, rule.condition) if c is not None):
            for quantifier in _quantifiers(cond):
                reads = element_reads(quantifier.condition)
                if reads is not None:
                    self.plan[id(quantifier)] = (reads, {})
            if steady:
                parts = _steady_parts(cond)
                self.steady.update((id(part), Steady(reads)) for part, reads in parts)


class Steady:
    """The last status of one part of a rule that reads only what often stays the same from
    one document to the next (`_steady_parts`), and what it read then: the same objects (a
    history's revisions share their unchanged values, `common.jsonutil.Sharing`) or equal
    scalars give the same status. A change rule's hook or override list that no step touches
    is judged once, not on each of 10,000 steps.

    Kept only where the documents are never changed once judged (`ElementMemo(steady=True)`:
    the history walk and the change steps, over revisions read from the store): an object
    changed in place would read as the same (reviewer R92 #4). Other callers (a test editing a
    document between two evaluations) evaluate every part."""

    __slots__ = ("reads", "seen", "status")

    def __init__(self, reads: tuple[Deps, ...]) -> None:
        self.reads = reads
        self.seen: list[Any] | None = None
        self.status: OutcomeStatus = "pass"


#: Leading keys of a change document that differ on every step (or nearly): a part that reads
#: them is not kept (see `memo.PER_STEP_FIELDS`).
_UNSTEADY = frozenset({"changes", "revision", "previous_revision", "updated_at"})


def _steady_parts(cond: Condition) -> Iterator[tuple[Condition, tuple[Deps, ...]]]:
    """The children of `and`/`or`/`not` at the document's root (and below them) worth keeping:
    no single value leaf (reading it is the check; a change leaf, which reads both sides, is
    kept), nothing that reads a per-step field or the whole document."""
    if not isinstance(cond, Logic):
        return
    for child in cond.children:
        if isinstance(child, Logic):
            yield from _steady_parts(child)
        if isinstance(child, Leaf) and not child.is_change:
            continue
        reads = tuple(sorted(set(document_reads(child))))
        if reads and all(deps and deps[0] not in _UNSTEADY for deps in reads):
            yield child, reads


def _quantifiers(cond: Condition) -> Iterator[Quantifier]:
    if isinstance(cond, Logic):
        for child in cond.children:
            yield from _quantifiers(child)
    elif isinstance(cond, Quantifier):
        yield cond
        yield from _quantifiers(cond.condition)


def rule_status(rule: Rule, doc: Any, env: Env, memo: ElementMemo | None = None) -> Status:
    """The status of `rule` on `doc`: `run_rule(rule, doc, env).status`, without the words
    (one evaluation, scoped as `run_rule`'s)."""
    token = enter_scope()
    try:
        return _rule_status(rule, doc, env, memo)
    finally:
        leave_scope(token)


def _rule_status(rule: Rule, doc: Any, env: Env, memo: ElementMemo | None) -> Status:
    if env.root is not doc:
        env = Env(env.now, env.change, doc, env.table)
    if rule.when is not None:
        pre = condition_status(rule.when, doc, env, memo)
        if pre == "error":
            return "error"
        if pre != "pass":
            return "not_applicable"
    out = condition_status(rule.condition, doc, env, memo)
    return rule.on_missing if out == "missing" else out


def condition_status(
    cond: Condition, node: Any, env: Env, memo: ElementMemo | None = None
) -> OutcomeStatus:
    """The status `evaluate_condition` gives `cond` on `node`."""
    if isinstance(cond, Leaf):
        return _leaf(cond, node, env)
    if isinstance(cond, Logic):
        if cond.kind == "not":
            status = condition_status(cond.children[0], node, env, memo)
            return _SWAP.get(status, status)
        if memo is not None and memo.steady and node is env.root:
            statuses = [_steady(c, node, env, memo) for c in cond.children]
        else:
            statuses = [condition_status(c, node, env, memo) for c in cond.children]
        if cond.kind == "all":
            return _all(statuses)
        return _any(statuses)
    try:
        items, _ = cond.path.resolve(node)
    except PathTypeError:
        return "error"
    if items is MISSING:
        return "missing"
    if not isinstance(items, list):
        return "error"
    slot = memo.plan.get(id(cond)) if memo is not None else None
    sieve = sieve_of(cond)
    if slot is None and sieve is None:
        statuses = [condition_status(cond.condition, item, env, memo) for item in items]
    elif slot is None:
        statuses = _elements(cond.condition, items, env, memo, None, {}, sieve)
    else:
        statuses = _elements(cond.condition, items, env, memo, *slot, sieve)
    if cond.kind == "each":
        return _all(statuses)
    found = _any(statuses)
    return found if cond.kind == "some" else _SWAP.get(found, found)


def _steady(cond: Condition, doc: Any, env: Env, memo: ElementMemo) -> OutcomeStatus:
    """`condition_status(cond, doc, …)`, the last one kept when `cond` read the same then."""
    kept = memo.steady.get(id(cond))
    if kept is None or (env.change is not None and (
        type(doc) is not dict
        or env.change[0] is not doc.get("before")
        or env.change[1] is not doc.get("after")
    )):  # fmt: skip
        return condition_status(cond, doc, env, memo)
    seen = [projection(doc, deps) for deps in kept.reads]
    seen.append(env.now)
    seen.append(env.table)  # (how the change operators key lists)
    seen.append(env.change is None)  # (a change leaf is an error without the sides)
    seen.append(current_marker_of())
    if kept.seen is not None and _same(seen, kept.seen):
        return kept.status
    kept.status = condition_status(cond, doc, env, memo)
    kept.seen = seen
    return kept.status


def _same(new: list[Any], old: list[Any]) -> bool:
    """What a part read now is what it read last: the same objects, or equal scalars of one
    type (`1`, `1.0` and `true` differ)."""
    for a, b in zip(new, old, strict=True):
        if a is b:
            continue
        if type(a) is list:  # a projection: [depth] or [depth, value]
            if type(b) is not list or len(a) != len(b) or a[0] != b[0]:
                return False
            if len(a) == 1 or a[1] is b[1]:
                continue
            a, b = a[1], b[1]
        if type(a) is not type(b) or type(a) in (dict, list) or a != b:
            return False
    return True


#: Each quantifier's `element_reads` (None: its inner condition reads outside the element).
_ENTRY_READS: weakref.WeakKeyDictionary[Quantifier, tuple[Deps, ...] | None] = (
    weakref.WeakKeyDictionary()
)


def entry_statuses(cond: Quantifier, items: list[Any], env: Env) -> list[OutcomeStatus]:
    """The status `evaluate_condition` gives the quantifier's inner condition on each entry,
    without words; an entry whose values the condition reads repeat an earlier entry's (a
    list of 20,000 changes to one list, all `item_added` at the same path) reuses its status."""
    try:
        reads = _ENTRY_READS[cond]
    except KeyError:
        reads = _ENTRY_READS[cond] = element_reads(cond.condition)
    sieve = sieve_of(cond)
    if reads is None and sieve is None:
        return [condition_status(cond.condition, item, env) for item in items]
    return _elements(cond.condition, items, env, None, reads, {}, sieve)


def _elements(
    inner: Condition,
    items: list[Any],
    env: Env,
    memo: ElementMemo | None,
    reads: tuple[Deps, ...] | None,
    known: dict[Hashable, OutcomeStatus],
    sieve: Decider | None = None,
) -> list[OutcomeStatus]:
    """Each element's status: told by the quantifier's sieve where it can be (see `sieve`),
    else reused when what `inner` reads of the element was seen before (`reads` not None)."""
    statuses: list[OutcomeStatus] = []
    evaluate: Evaluate = lambda cond, item: condition_status(cond, item, env, memo)  # noqa: E731
    for item in items:
        status = sieve.decide(item, evaluate) if sieve is not None else None
        if status is not None:
            statuses.append(status)
            continue
        key = element_key(item, reads) if reads is not None else None
        status = known.get(key) if key is not None else None
        if status is None:
            status = condition_status(inner, item, env, memo)
            if key is not None:
                if len(known) >= ELEMENT_BUDGET:
                    known.clear()
                known[key] = status
        statuses.append(status)
    return statuses


def _all(statuses: list[OutcomeStatus]) -> OutcomeStatus:
    for status in ("error", "fail", "missing"):
        if status in statuses:
            return status
    return "pass"


def _any(statuses: list[OutcomeStatus]) -> OutcomeStatus:
    for status in ("error", "pass", "missing"):
        if status in statuses:
            return status
    return "fail"


def _first(leaf: Leaf, node: Any) -> tuple[Any, str]:
    first = ""
    for path in leaf.paths:
        value, where = path.resolve(node)
        if value is not MISSING:
            return value, where
        first = first or where
    return MISSING, first


def _leaf(leaf: Leaf, node: Any, env: Env) -> OutcomeStatus:
    try:
        if leaf.is_change:
            return _change(leaf, env)
        value, where = _first(leaf, node)
    except PathTypeError:
        return "error"
    if value is MISSING and leaf.default is not MISSING:
        value = leaf.default
    if value is MISSING and any(op.kind != "presence" for op, _, _ in leaf.ops):
        # an `exists: true` among them fails on the absent key (as `conditions.evaluate_leaf`)
        if any(op.kind == "presence" and not op.fn(value, arg) for op, arg, _ in leaf.ops):
            return "fail"
        return "missing"
    for op, arg, _ in leaf.ops:
        if isinstance(arg, Ref):
            try:
                arg, _ = resolve_ref(arg, op, env.root, where)
            except RefError:
                return "error"
            if arg is MISSING:
                return "missing"
        try:
            ok = op.fn(value, arg, env.now) if op.kind == "time" else op.fn(value, arg)
        except LiteralMismatch as exc:
            if not leaf.loose:
                return "error"
            ok = exc.result
        except (OperandTypeError, TypeError, ValueError, ArithmeticError):
            return "error"
        if not ok:
            return "fail"
    return "pass"


def _change(leaf: Leaf, env: Env) -> OutcomeStatus:
    if env.change is None:
        return "error"
    before, where = _first(leaf, env.change[0])
    after, _ = _first(leaf, env.change[1])
    at = ListsAt(where, env.table)
    for op, arg, _ in leaf.ops:
        try:
            ok = op.fn(before, after, arg, at)
        except OperandTypeError:
            return "error"
        if not ok:
            return "fail"
    return "pass"
