"""Findings: rule results made comparable across runs, waived, and gated.

Takes `RuleResult`s from `auditor.evaluate` (and the previous run's records from the store), gives
`Finding`s with a stable fingerprint and who/when attribution (`finding`), waivers applied and
reported (`waivers`), the new / persisting / resolved lifecycle (`baseline`), and what the exit
code rests on (`gate`).

The names below are imported on first use (PEP 562), so loading a waiver file does not load
the finding and baseline modules.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from auditor.common import lazy

if TYPE_CHECKING:
    from auditor.findings.baseline import compare_runs, continued, records_for_store
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

_WHERE = {
    "compare_runs": "baseline",
    "continued": "baseline",
    "records_for_store": "baseline",
    "Finding": "finding",
    "attribution_text": "finding",
    "control_key": "finding",
    "findings_from_pending": "finding",
    "findings_from_results": "finding",
    "fingerprint": "finding",
    "sort_controls": "finding",
    "sort_findings": "finding",
    "sort_key": "finding",
    "error_lines": "gate",
    "failing_at": "gate",
    "WaiverReport": "waivers",
    "apply_waivers": "waivers",
    "load_waivers": "waivers",
}

__all__ = [
    "Finding",
    "WaiverReport",
    "apply_waivers",
    "attribution_text",
    "compare_runs",
    "continued",
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


def __getattr__(name: str) -> Any:
    return lazy.load(__name__, _WHERE, name)


def __dir__() -> list[str]:
    return lazy.listed(globals(), __all__)
