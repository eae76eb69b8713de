"""The gate: what the exit code rests on — failing findings at a severity, evaluation errors."""

from __future__ import annotations

from collections.abc import Iterable

from auditor.evaluate.model import RuleResult
from auditor.findings.finding import Finding
from auditor.models import FAILING_STATUSES, SEVERITIES, severity_rank


def failing_at(findings: Iterable[Finding], fail_on: str) -> tuple[Finding, ...]:
    """Findings that are failing (fail/unknown, not waived) at or above `fail_on` severity."""
    if fail_on == "none":
        return ()
    limit = severity_rank(fail_on)
    # The severities at or above the limit as a set (an unknown one ranks below every known
    # one), not `severity_rank` called per finding: a nightly has 1,000s.
    every = limit >= len(SEVERITIES)
    worse = frozenset(SEVERITIES[: limit + 1])
    return tuple(
        f for f in findings if f.status in FAILING_STATUSES and (every or f.facts.severity in worse)
    )


def error_lines(results: Iterable[RuleResult]) -> list[str]:
    """One line per result that could not be evaluated: each makes the run incomplete."""
    return [
        f"{r.rule.id} on {r.subject.label}: evaluation error: {r.message}"
        for r in results
        # `original_status`, read without a property call per result (a nightly has 1,000s)
        if (r.raw_status or r.status) == "error"
    ]
