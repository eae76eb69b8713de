"""How a leaf's outcome is worded: the argument as shown, evidence phrases, and negations.

Takes a leaf's operators, arguments and evidence, gives outcomes whose message and evidence
read naturally (`expected not to contain "[secret "`) and whose negation (under `not`/`none`)
is worded too, rather than prefixed with "not expected".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from auditor.models import Evidence
from auditor.operators import MISSING, Operator
from auditor.policy.outcome import Outcome, paired, show_arg
from auditor.policy.phrasing import clip, evidence_parts, phrase, show_bounds, template
from auditor.policy.refs import is_ref

Check = tuple[Operator, Any, str, Evidence]  # operator, argument, argument as shown, evidence


def shown_arg(op: Operator, raw: Any) -> str:
    """An argument as a message shows it (`at least 1 and at most 3` for length bounds)."""
    if is_ref(raw):
        return show_ref_text(raw)
    if ("/{arg}/" in op.expect or op.name == "version_at_least") and isinstance(raw, str):
        return clip(raw, 80)
    bounds = show_bounds(raw) if op.name == "length" else None
    return bounds or show_arg(raw)


def show_ref_text(raw: Any) -> str:
    """A `{ref: path}` argument as descriptions show it."""
    return f"the value at {raw['ref']}"


def worded(ev: Evidence, op: Operator, negate: bool) -> Evidence:
    """The evidence with its expectation worded: operator `to match`, expected the argument."""
    lead, arg = evidence_parts(op, ev.expected, negate, ev.actual if ev.present else MISSING)
    whole = "{arg}" not in template(op, ev.expected, negate)
    return replace(ev, operator=lead, expected=arg, shows_expected=not whole)


def held(where: str, value: Any, checks: Sequence[Check]) -> Outcome:
    """Every operator held; the negation says what was expected instead."""
    passed = Outcome.passed(where, value, tuple(worded(ev, op, False) for op, _, _, ev in checks))
    expected = " or ".join(phrase(op, a, s, True, value) for op, a, s, _ in checks)
    negated = tuple(worded(ev, op, True) for op, _, _, ev in checks)
    failed = Outcome.failed(where, value, expected, negated[0])
    return paired(passed, replace(failed, evidence=negated))


def held_change(went: str, after: Any, checks: Sequence[Check]) -> Outcome:
    """Every change operator held; the negation says the change was not expected."""
    evidence = tuple(worded(ev, op, False) for op, _, _, ev in checks)
    expected = " or ".join(phrase(op, raw, s, True, after) for op, raw, s, _ in checks)
    negated = tuple(worded(ev, op, True) for op, _, _, ev in checks)
    text = clip(f"{went}; expected {expected}")
    failed = Outcome("fail", text, negated, subject=went, expects=expected)
    return paired(Outcome("pass", clip(went), evidence, subject=went), failed)
