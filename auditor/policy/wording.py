"""How a leaf's outcome is worded: the argument as shown, evidence phrases, and negations.

Takes a leaf's operators, arguments and evidence, gives outcomes whose message and evidence
read naturally (`expected not to contain "[secret "`) and whose negation (under `not`/`none`)
is worded too, rather than prefixed with "not expected".
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from auditor.models import Evidence
from auditor.operators import MISSING, Operator
from auditor.policy.outcome import Outcome, lazy_pair, show_arg
from auditor.policy.phrasing import clip, phrase, phrase_parts, show_bounds, template
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
    actual = ev.actual if ev.present else MISSING
    lead, has_arg = phrase_parts(template(op, ev.expected, negate), actual)
    arg = ev.expected if has_arg else None
    return Evidence(ev.path, ev.actual, arg, lead, ev.present, ev.note, has_arg)


def held(where: str, value: Any, checks: Sequence[Check]) -> Outcome:
    """Every operator held; the negation (worded on demand) says what was expected instead."""
    passed = Outcome.passed(where, value, tuple(worded(ev, op, False) for op, _, _, ev in checks))

    def failed() -> Outcome:
        expected = " or ".join(phrase(op, a, s, True, value) for op, a, s, _ in checks)
        negated = tuple(worded(ev, op, True) for op, _, _, ev in checks)
        out = Outcome.failed(where, value, expected, negated[0])
        out.evidence = negated
        return out

    return lazy_pair(passed, failed)


def held_change(went: str, after: Any, checks: Sequence[Check]) -> Outcome:
    """Every change operator held; the negation (worded on demand) says it was not expected."""
    evidence = tuple(worded(ev, op, False) for op, _, _, ev in checks)

    def failed() -> Outcome:
        expected = " or ".join(phrase(op, raw, s, True, after) for op, raw, s, _ in checks)
        negated = tuple(worded(ev, op, True) for op, _, _, ev in checks)
        text = clip(f"{went}; expected {expected}")
        return Outcome("fail", text, negated, subject=went, expects=expected)

    return lazy_pair(Outcome("pass", clip(went), evidence, subject=went), failed)
