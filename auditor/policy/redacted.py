"""A policy's own text through the run's redactor, before any of it reaches an output.

Takes a `PolicySet` and a text redactor (`Redactor.redact_text`: value detectors and the
memory of secrets); gives the same policy with every secret in a rule's title, description and
remediation, and in each leaf's argument *as written* (what messages and evidence show as the
expectation), replaced by its marker. The prepared arguments the operators compare with stay
as they are, so a rule still judges the value (by fingerprint where it is redacted,
`auditor.operators.hidden`). A rule with nothing to redact is the same object.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from auditor.policy.conditions import Condition, Leaf, Logic, Quantifier
from auditor.policy.loader import PolicySet
from auditor.policy.model import Rule

Redact = Callable[[str], str]


def redacted_policy(policy: PolicySet, redact: Redact, scrub: Redact | None = None) -> PolicySet:
    """`policy` with the secrets in its rules' text replaced by markers (see the module).

    `scrub` (the memory of secrets alone, `Redactor.scrub_known`), when given, serves the rules
    of shipped files as built (their sha256 in the build's record), in which no detector finds
    anything (`tests/test_hidden_values.py` checks): a run of the shipped packs alone does not
    load the value detectors (a tenth of a second)."""
    built = _as_built(policy) if scrub is not None else frozenset()
    rules = tuple(
        redacted_rule(rule, scrub if scrub is not None and rule.id in built else redact)
        for rule in policy.rules
    )
    if all(a is b for a, b in zip(rules, policy.rules, strict=True)):
        return policy
    return replace(policy, rules=rules)


def _as_built(policy: PolicySet) -> frozenset[str]:
    """The ids of the rules of shipped files as the build recorded them."""
    from auditor.policy.yamlsafe import shipped_yaml

    record = shipped_yaml()
    return frozenset(i for f in policy.files if f.sha256 in record for i in f.rule_ids)


def redacted_rule(rule: Rule, redact: Redact) -> Rule:
    """`rule` with the secrets in its text replaced by markers, or `rule` itself."""
    title, description = redact(rule.title), redact(rule.description)
    remediation = redact(rule.remediation)
    condition = _condition(rule.condition, redact)
    when = None if rule.when is None else _condition(rule.when, redact)
    if (
        title == rule.title
        and description == rule.description
        and remediation == rule.remediation
        and condition is rule.condition
        and when is rule.when
    ):
        return rule
    return replace(
        rule,
        title=title,
        description=description,
        remediation=remediation,
        condition=condition,
        when=when,
    )


def _condition(cond: Condition, redact: Redact) -> Condition:
    if isinstance(cond, Leaf):
        ops = tuple((op, arg, _written(raw, redact)) for op, arg, raw in cond.ops)
        if all(new[2] is old[2] for new, old in zip(ops, cond.ops, strict=True)):
            return cond
        return Leaf(cond.paths, ops, cond.default, cond.where)
    if isinstance(cond, Logic):
        children = tuple(_condition(c, redact) for c in cond.children)
        if all(a is b for a, b in zip(children, cond.children, strict=True)):
            return cond
        return Logic(cond.kind, children)
    inner = _condition(cond.condition, redact)
    return cond if inner is cond.condition else Quantifier(cond.kind, cond.path, inner)


def _written(raw: Any, redact: Redact) -> Any:
    """An argument as written, its strings redacted (the same object when none changed)."""
    if isinstance(raw, str):
        out = redact(raw)
        return raw if out == raw else out
    if isinstance(raw, list):
        items = [_written(item, redact) for item in raw]
        return raw if all(a is b for a, b in zip(items, raw, strict=True)) else items
    if isinstance(raw, dict):
        values = {k: _written(v, redact) for k, v in raw.items()}
        return raw if all(values[k] is v for k, v in raw.items()) else values
    return raw
