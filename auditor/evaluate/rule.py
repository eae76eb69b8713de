"""One rule on one document: the precondition, the assertion and `on_missing`, as a `Verdict`.

Takes a compiled `Rule`, the document its target sees and the environment (clock, change
sides), gives the status, a one-line message and the evidence. Never two-valued: absent paths
follow the rule's `on_missing`, wrong types are `error`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from auditor.evaluate.conditions import Env, evaluate_condition
from auditor.evaluate.model import RuleResult
from auditor.models import Evidence, Status, Subject
from auditor.operators.core import enter_scope, leave_scope
from auditor.policy.model import Rule
from auditor.policy.phrasing import clip


@dataclass(frozen=True)
class Verdict:
    """A rule's result on one document, before it is attached to a subject."""

    status: Status
    message: str
    evidence: tuple[Evidence, ...] = ()
    count: int = 1  # how many failing checks (entries) the message stands for: "(+N more …)"

    def result(self, rule: Rule, subject: Subject, **extra: Any) -> RuleResult:
        """This verdict as the RuleResult of `rule` on `subject`."""
        return RuleResult(rule, subject, self.status, self.message, self.evidence, **extra)


def run_rule(rule: Rule, doc: Any, env: Env) -> Verdict:
    """Evaluate `when` then `assert` of one rule against one document: one evaluation, whose
    scope (`core.enter_scope`) keeps what it works out about the document's lists (the index
    `in` looks in, a `{ref: …}`'s type check) till it ends, and no longer."""
    token = enter_scope()
    try:
        return _run_rule(rule, doc, env)
    finally:
        leave_scope(token)


def _run_rule(rule: Rule, doc: Any, env: Env) -> Verdict:
    if env.root is not doc:
        env = Env(env.now, env.change, doc, env.table)
    if rule.when is not None:
        pre = evaluate_condition(rule.when, doc, "$", env)
        if pre.status == "error":
            return Verdict("error", pre.message, pre.evidence)
        if pre.status != "pass":
            text = clip(f"precondition not met: {pre.message}")  # within the message limit
            return Verdict("not_applicable", text, pre.evidence)
    out = evaluate_condition(rule.condition, doc, "$", env)
    if out.status == "missing":
        return Verdict(rule.on_missing, out.message, out.evidence, out.count)
    return Verdict(out.status, out.message, out.evidence, out.count)
