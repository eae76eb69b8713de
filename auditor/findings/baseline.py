"""The baseline: this run's findings against the previous complete run's records.

Takes `Finding`s and the stored `FindingRecord`s of the run being compared with, gives the
`new` / `persisting` lifecycle of each tracked finding, the `resolved` records, and the records
this run leaves for the next one.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from auditor.findings.finding import Finding, pack_fingerprint
from auditor.models import TRACKED_STATUSES, FindingRecord, severity_rank


def compare_runs(
    current: Sequence[Finding],
    previous: Sequence[FindingRecord] | None,
    *,
    in_place: bool = False,
) -> tuple[list[Finding], list[FindingRecord]]:
    """Mark tracked current findings `new`/`persisting`; return them and the resolved old ones.

    With no previous complete run (`previous is None`) nothing is compared: lifecycle stays None.
    With `in_place` (`current` a list), each finding is replaced in that list and the list is
    returned, so the unmarked and the marked findings are never all held at once.
    """
    if previous is None:
        return (current if in_place and isinstance(current, list) else list(current)), []
    before = {p.fingerprint for p in previous if p.status in TRACKED_STATUSES}
    # The digests the findings hold (numbers), not 100,000s of new fingerprint strings.
    now = {f.digest for f in current if f.status in TRACKED_STATUSES}
    if in_place and isinstance(current, list):
        for i, f in enumerate(current):
            current[i] = _with_lifecycle(f, before)
        marked = current
    else:
        marked = [_with_lifecycle(f, before) for f in current]
    resolved = sorted(
        (
            p
            for p in previous
            if p.status in TRACKED_STATUSES and pack_fingerprint(p.fingerprint) not in now
        ),
        key=lambda p: (severity_rank(p.severity), p.rule_id, p.subject_key, p.fingerprint),
    )
    return marked, _unique(resolved)


def _with_lifecycle(f: Finding, before: set[str]) -> Finding:
    if f.status not in TRACKED_STATUSES:
        return f
    return f.with_marks(lifecycle="persisting" if f.fingerprint in before else "new")


def _unique(records: list[FindingRecord]) -> list[FindingRecord]:
    seen: set[str] = set()
    out = []
    for p in records:
        if p.fingerprint not in seen:
            seen.add(p.fingerprint)
            out.append(p)
    return out


def records_for_store(
    findings: Sequence[Finding], prior: Sequence[FindingRecord] | None, run_id: str
) -> Iterator[FindingRecord]:
    """The tracked findings as the next run will compare with them (first sighting kept),
    one at a time as the store writes them (`--all-revisions` has 100,000s)."""
    first_seen = {p.fingerprint: p.first_seen_run for p in prior or ()}
    for f in findings:
        if f.status in TRACKED_STATUSES:
            yield FindingRecord(
                fingerprint=f.fingerprint,
                rule_id=f.rule_id,
                subject_key=f.subject.key,
                status=f.status,
                severity=f.severity,
                first_seen_run=first_seen.get(f.fingerprint, run_id),
            )
