"""The one place `ReportData` is built, from what a workflow gathered.

Takes the run's header, its findings (any order), the waivers engine's report and the readiness
reports, gives the `ReportData` every writer renders: sorted findings, completeness derived from
the errors, waivers and readiness flattened into rows.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from auditor import __version__
from auditor.evaluate.readiness import ReadinessModel, org_view, repo_views
from auditor.findings import Finding, WaiverReport, sort_findings
from auditor.models import FindingRecord, ReadinessReport, Waiver
from auditor.policy.model import PolicyFile
from auditor.report.model import (
    InputDigest,
    ReadinessRow,
    ReportData,
    ReviewInfo,
    WaiverSummary,
)


@dataclass(frozen=True)
class RunHeader:
    """Which run, when, against what, and the severity the exit code is gated on."""

    run_id: str
    generated_at: datetime
    mode: str  # "run" | "review"
    api_address: str
    fail_on: str


@dataclass(frozen=True)
class ReadinessInputs:
    """The newest report per repository, the model that grades them and the time they age to."""

    reports: Sequence[ReadinessReport]
    model: ReadinessModel
    now: datetime


def build_report_data(
    header: RunHeader,
    policy_files: tuple[PolicyFile, ...],
    findings: Iterable[Finding],
    errors: Sequence[str],
    *,
    resolved: Sequence[FindingRecord] = (),
    waivers: WaiverReport | None = None,
    readiness: ReadinessInputs | None = None,
    failing_by_revision: Sequence[tuple[int, int]] = (),
    waived_by_revision: Sequence[tuple[int, int]] = (),
    inputs: InputDigest | None = None,
    review: ReviewInfo | None = None,
    in_order: bool = False,
    waivers_as_of: datetime | None = None,
) -> ReportData:
    """Everything one run's reports show; the run is complete when nothing went wrong.

    `in_order`: the findings are already in report order (`sort_findings`), so they are not
    sorted again (a sort of 100,000s of findings holds a key list and a copy of them).
    `waivers_as_of`: an `--at` run's time, as of which the waivers were judged."""
    ordered = tuple(findings) if in_order else tuple(sort_findings(findings))
    return ReportData(
        tool_version=__version__,
        run_id=header.run_id,
        generated_at=header.generated_at,
        mode=header.mode,
        api_address=header.api_address,
        complete=not errors,
        not_evaluated=tuple(errors),
        policy_files=policy_files,
        findings=ordered,
        ordered=ordered,
        resolved=tuple(resolved),
        failing_by_revision=failing_by_revision,
        waived_by_revision=waived_by_revision,
        readiness_rows=readiness_rows(readiness) if readiness else (),
        org_level=org_level(readiness) if readiness else None,
        waivers=waiver_summary(waivers, waivers_as_of, header.generated_at)
        if waivers
        else WaiverSummary(as_of=waivers_as_of),
        inputs=inputs or InputDigest(),
        review=review,
        fail_on=header.fail_on,
    )


def readiness_rows(readiness: ReadinessInputs) -> tuple[ReadinessRow, ...]:
    """One row per repository (its newest report), graded by the readiness model."""
    rows = []
    for report, view in repo_views(readiness.reports, readiness.model, readiness.now):
        rows.append(
            ReadinessRow(
                repo_url=report.repo_url,
                level=view.get("$level"),  # absent: unknown
                score=view["$score"],
                age_days=view["$age_days"],
                clean=view["$clean"],
                report_id=report.report_id,
            )
        )
    return tuple(rows)


def org_level(readiness: ReadinessInputs) -> int | None:
    """The organization's readiness level, or None without reports."""
    if not readiness.reports:
        return None
    level = org_view(readiness.reports, readiness.model, readiness.now).get("$level")
    return level if isinstance(level, int) else None


def waiver_summary(
    report: WaiverReport, as_of: datetime | None = None, report_time: datetime | None = None
) -> WaiverSummary:
    """Flatten the waivers engine's report into the renderers' record, each list sorted by
    expiry (soonest first), then rule id, then subject, and the warnings in the order of the
    waivers they name: the reports do not depend on the order of the waivers file, and
    report.md's note of the first five expiring waivers names the soonest (it named the
    file's first five).

    `as_of`: an `--at` run's time, as of which the waivers were judged; those in force (or
    stale) then that expired before `report_time` are listed apart as well
    (`expired_since_as_of`), as every report says they still waive the run's findings."""
    every = (*report.expired, *report.expiring_soon, *report.in_force, *report.stale)
    lapsed: tuple[Waiver, ...] = ()
    if as_of is not None and report_time is not None:
        lapsed = _by_expiry(
            w for w in (*report.in_force, *report.stale) if as_of <= w.expires < report_time
        )
    return WaiverSummary(
        in_force=_by_expiry(report.in_force),
        expiring_soon=_by_expiry(report.expiring_soon),
        expired=_by_expiry(report.expired),
        stale=_by_expiry(report.stale),
        warnings=_warnings_by_expiry(report.warnings, every),
        as_of=as_of,
        expired_since_as_of=lapsed,
    )


def _waiver_key(w: Waiver) -> tuple[datetime, str, str, str, str, str]:
    return (w.expires, w.rule_id, w.subject, w.owner, w.reason, w.ticket)


def _by_expiry(waivers: Iterable[Waiver]) -> tuple[Waiver, ...]:
    return tuple(sorted(waivers, key=_waiver_key))


def _warnings_by_expiry(warnings: Sequence[str], waivers: Iterable[Waiver]) -> tuple[str, ...]:
    """`warnings` in the order of the waivers they name (each starts `waiver for RULE on
    SUBJECT (FILE:LINE:COL)`; a stale waiver that also runs too long keeps its two, in their
    order); one that names none stays after them, in its order."""
    named: dict[str, tuple[datetime, str, str, str, str, str]] = {}
    for w in waivers:
        where = f" ({w.source})" if w.source else ""
        named[f"waiver for {w.rule_id} on {w.subject}{where} "] = _waiver_key(w)

    def key(indexed: tuple[int, str]) -> tuple[int, Any, int]:
        index, text = indexed
        # the longest prefix names it (a subject with a space may start like another's)
        found = [k for k in named if text.startswith(k)]
        if not found:
            return (1, (), index)
        return (0, named[max(found, key=len)], index)

    return tuple(text for _, text in sorted(enumerate(warnings), key=key))
