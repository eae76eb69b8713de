"""Findings: rule results made comparable across runs, waived, and gated.

Takes `RuleResult`s from `auditor.evaluate` (and the previous run's records from the store), gives
`Finding`s with a stable fingerprint and who/when attribution (`finding`), waivers applied and
reported (`waivers`), the new / persisting / resolved lifecycle (`baseline`), and what the exit
code rests on (`gate`).
"""

from __future__ import annotations

from auditor.findings.baseline import compare_runs, records_for_store
from auditor.findings.finding import (
    Finding,
    attribution_text,
    control_key,
    findings_from_pending,
    findings_from_results,
    fingerprint,
    sort_controls,
    sort_findings,
    sort_key,
)
from auditor.findings.gate import error_lines, failing_at
from auditor.findings.waivers import WaiverReport, apply_waivers, load_waivers

__all__ = [
    "Finding",
    "WaiverReport",
    "apply_waivers",
    "attribution_text",
    "compare_runs",
    "control_key",
    "error_lines",
    "failing_at",
    "findings_from_pending",
    "findings_from_results",
    "fingerprint",
    "load_waivers",
    "records_for_store",
    "sort_controls",
    "sort_findings",
    "sort_key",
]
