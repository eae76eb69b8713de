"""How a leaf's outcome is worded: evidence phrases, and negations worded on demand.

Takes a leaf's operators, arguments (as shown) and evidence, gives outcomes whose message and
evidence read naturally (`expected not to contain "[secret "`) and whose negation (under
`not`/`none`) is worded too, rather than prefixed with "not expected".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from auditor.evaluate.outcome import Outcome, lazy_pair
from auditor.models import Evidence
from auditor.operators import MISSING, Operator
from auditor.policy.phrasing import clip, phrase, phrase_parts, template

Check = tuple[Operator, Any, str, Evidence]  # operator, argument, argument as shown, evidence


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


def not_held(where: str, value: Any, op: Operator, shown: str, ev: Evidence) -> Outcome:
    """The first operator that did not hold; the passing negation is worded on demand."""
    expected = phrase(op, ev.expected, shown, False, value)
    failed = Outcome.failed(where, value, expected, worded(ev, op, False))
    return lazy_pair(failed, lambda: Outcome.passed(where, value, (worded(ev, op, True),)))


def held_change(went: str, after: Any, checks: Sequence[Check]) -> Outcome:
    """Every change operator held; the negation (worded on demand) says it was not expected."""
    evidence = tuple(worded(ev, op, False) for op, _, _, ev in checks)

    def failed() -> Outcome:
        expected = " or ".join(phrase(op, raw, s, True, after) for op, raw, s, _ in checks)
        negated = tuple(worded(ev, op, True) for op, _, _, ev in checks)
        text = clip(f"{went}; expected {expected}")
        return Outcome("fail", text, negated, subject=went, expects=expected)

    return lazy_pair(Outcome("pass", clip(went), evidence, subject=went), failed)


def not_held_change(went: str, op: Operator, raw: Any, shown: str, ev: Evidence) -> Outcome:
    """A change operator that did not hold; its negation is the step as it went."""
    expected = phrase(op, raw, shown)
    text = clip(f"{went}; expected {expected}")
    failed = Outcome("fail", text, (worded(ev, op, False),), 1, "", went, expected)
    return lazy_pair(
        failed, lambda: Outcome("pass", clip(went), (worded(ev, op, True),), subject=went)
    )


def erred(out: Outcome, op: Operator, ev: Evidence, **shown: Any) -> Outcome:
    """`out`, the error of an operator that could not be applied, with `ev` worded as the rule
    states it: under `not`/`none` it is still an error, but what was expected is negated too
    (`expected not to be one of ["gpt-5"]`, never the value the rule forbids). `shown`: fields
    of the worded evidence to replace (a change's value before it)."""

    def evidence(negate: bool) -> tuple[Evidence, ...]:
        said = worded(ev, op, negate)
        return (replace(said, **shown) if shown else said,)

    out.evidence = evidence(False)
    return lazy_pair(out, lambda: Outcome(out.status, out.message, evidence(True), out.count))
