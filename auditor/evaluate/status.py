"""Verdict first, words later: a rule's status on a document without building any text.

Takes a compiled `Rule`, the document and the environment, gives the status `run_rule` would
give (pass, fail, error, unknown or not_applicable …) by the same four-valued rules — `all`:
error > fail > missing > pass; `any` and `some`: error > pass > missing > fail; `each`: error >
fail > missing > pass (an empty array passes); `not` and `none` swap pass and fail — but
builds no message and no evidence. The history walk and the change steps need only the
status of most of what they evaluate; the words are built (`rule.run_rule`) for the results
that are reported. `tests/test_status.py` checks both agree over every shipped rule and many
generated documents.
"""

from __future__ import annotations

from typing import Any

from auditor.evaluate.conditions import Env
from auditor.evaluate.outcome import OutcomeStatus
from auditor.evaluate.refs import RefError, resolve_ref
from auditor.models import Status
from auditor.operators import MISSING, OperandTypeError
from auditor.policy.conditions import Condition, Leaf, Logic
from auditor.policy.model import Rule
from auditor.policy.pathexpr import PathTypeError
from auditor.policy.refs import Ref

_SWAP: dict[OutcomeStatus, OutcomeStatus] = {"pass": "fail", "fail": "pass"}


def rule_status(rule: Rule, doc: Any, env: Env) -> Status:
    """The status of `rule` on `doc`: `run_rule(rule, doc, env).status`, without the words."""
    if env.root is not doc:
        env = Env(env.now, env.change, doc)
    if rule.when is not None:
        pre = condition_status(rule.when, doc, env)
        if pre == "error":
            return "error"
        if pre != "pass":
            return "not_applicable"
    out = condition_status(rule.condition, doc, env)
    return rule.on_missing if out == "missing" else out


def condition_status(cond: Condition, node: Any, env: Env) -> OutcomeStatus:
    """The status `evaluate_condition` gives `cond` on `node`."""
    if isinstance(cond, Leaf):
        return _leaf(cond, node, env)
    if isinstance(cond, Logic):
        if cond.kind == "not":
            status = condition_status(cond.children[0], node, env)
            return _SWAP.get(status, status)
        statuses = [condition_status(c, node, env) for c in cond.children]
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
    statuses = [condition_status(cond.condition, item, env) for item in items]
    if cond.kind == "each":
        return _all(statuses)
    found = _any(statuses)
    return found if cond.kind == "some" else _SWAP.get(found, found)


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
        except (OperandTypeError, TypeError, ValueError, ArithmeticError):
            return "error"
        if not ok:
            return "fail"
    return "pass"


def _change(leaf: Leaf, env: Env) -> OutcomeStatus:
    if env.change is None:
        return "error"
    before, _ = _first(leaf, env.change[0])
    after, _ = _first(leaf, env.change[1])
    for op, arg, _ in leaf.ops:
        try:
            ok = op.fn(before, after, arg)
        except OperandTypeError:
            return "error"
        if not ok:
            return "fail"
    return "pass"
