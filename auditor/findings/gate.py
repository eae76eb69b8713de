"""The gate: what the exit code rests on — failing findings at a severity, evaluation errors."""

from __future__ import annotations

from collections.abc import Iterable

from auditor.evaluate.model import RuleResult
from auditor.findings.finding import Finding
from auditor.models import FAILING_STATUSES, severity_rank


def failing_at(findings: Iterable[Finding], fail_on: str) -> tuple[Finding, ...]:
    """Findings that are failing (fail/unknown, not waived) at or above `fail_on` severity."""
    if fail_on == "none":
        return ()
    limit = severity_rank(fail_on)
    return tuple(
        f for f in findings if f.status in FAILING_STATUSES and severity_rank(f.severity) <= limit
    )


def error_lines(results: Iterable[RuleResult]) -> list[str]:
    """One line per result that could not be evaluated: each makes the run incomplete."""
    return [
        f"{r.rule.id} on {r.subject.label}: evaluation error: {r.message}"
        for r in results
        if r.original_status == "error"
    ]
