"""The baseline: this run's findings against the previous complete run's records.

Takes `Finding`s and the stored `FindingRecord`s of the run being compared with, gives the
`new` / `persisting` lifecycle of each tracked finding, the `resolved` records, and the records
this run leaves for the next one.

A finding's fingerprint names one failing entry (its smallest evidence path). When that entry
goes while others still fail, the fingerprint moves to the next one; by fingerprint alone the
rule would read as resolved plus a new finding. So a rule failing on the same subject in both
runs, with one finding each side, is one finding (`persisting`, first seen when the older one
was) whichever entry its fingerprint names. Fingerprints themselves are not changed.

A usage finding names a day (`usage@2026-10-24`). An older one this run has no result for was
not fixed: its day left the usage window (`set_aside`'s `left_window`: reported once, then
dropped) or this run did not judge it (the analytics unreadable, the day not stored:
`not_evaluated`, carried to the next run's records as they were). Neither is `resolved`.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from auditor.findings.finding import Finding, mark_in_place, pack_fingerprint
from auditor.models import TRACKED_STATUSES, FindingRecord, finding_record, severity_rank


def compare_runs(
    current: Sequence[Finding],
    previous: Sequence[FindingRecord] | None,
    *,
    in_place: bool = False,
    carried: Mapping[int | str, FindingRecord] | None = None,
) -> tuple[list[Finding], list[FindingRecord]]:
    """Mark tracked current findings `new`/`persisting`; return them and the resolved old ones.

    With no previous complete run (`previous is None`) nothing is compared: lifecycle stays None.
    With `in_place` (`current` a list that alone holds its findings), each finding is marked
    in place (`mark_in_place`) and the list is returned, so no second finding is made for
    each: the findings must not be held elsewhere, hashed or compared before.
    `carried` is `continued(current, previous)` when the caller has it already.
    """
    if previous is None:
        return (current if in_place and isinstance(current, list) else list(current)), []
    # Each older fingerprint packed once (as a finding holds it: `pack_fingerprint`), and
    # compared with the digests the findings hold, not with 100,000s of new fingerprint texts.
    digests = packed_digests(previous)
    before = {d for p, d in zip(previous, digests, strict=True) if p.status in TRACKED_STATUSES}
    # Of the older digests, those a tracked finding holds now: what is resolved is the rest
    # (a set of every digest now held 12.6 MB at the `--all-revisions` peak)
    now = _held(current, before)
    if carried is None:
        carried = continued(current, previous, now=now)
    if in_place and isinstance(current, list):
        for f in current:
            if f.status in TRACKED_STATUSES:
                same = f.digest in before or f.digest in carried
                mark_in_place(f, "persisting" if same else "new")
        marked = current
    else:
        marked = [_with_lifecycle(f, before, carried) for f in current]
    gone = {p.fingerprint for p in carried.values()}
    resolved = sorted(
        (
            p
            for p, digest in zip(previous, digests, strict=True)
            if p.status in TRACKED_STATUSES and digest not in now and p.fingerprint not in gone
        ),
        key=lambda p: (severity_rank(p.severity), p.rule_id, p.subject_key, p.fingerprint),
    )
    return marked, _unique(resolved)


_USAGE_DAY = re.compile(r"usage@(\d{4}-\d{2}-\d{2})")


@dataclass(frozen=True)
class SetAside:
    """What `compare_runs` found gone, told apart: `resolved` (the rule judged the subject
    again and it no longer fails), `left_window` (a usage day before this run's window: no
    longer judged, nothing was fixed) and `not_evaluated` (a usage day of the window this run
    did not judge: the analytics unreadable, the day not stored)."""

    resolved: list[FindingRecord]
    left_window: list[FindingRecord]
    not_evaluated: list[FindingRecord]


def set_aside(
    gone: Sequence[FindingRecord], current: Sequence[Finding], *, usage_from: str | None
) -> SetAside:
    """`gone` (`compare_runs`' resolved records) split: a record of a usage day is resolved
    only when this run judged its rule on that day (a result of the same rule and subject);
    one of a day before `usage_from` (the first day of this run's usage window; None: no
    window) left the window; any other was not evaluated. Other records stay resolved."""
    usage = [p for p in gone if _USAGE_DAY.fullmatch(p.subject_key)]
    if not usage:
        return SetAside(list(gone), [], [])
    judged = {(f.rule_id, f.subject.key) for f in current if f.subject.kind == "usage"}
    left: list[FindingRecord] = []
    unjudged: list[FindingRecord] = []
    for p in usage:
        if (p.rule_id, p.subject_key) in judged:
            continue
        day = p.subject_key.partition("@")[2]
        (left if usage_from is not None and day < usage_from else unjudged).append(p)
    if not left and not unjudged:
        return SetAside(list(gone), [], [])
    out = {id(p) for p in (*left, *unjudged)}
    return SetAside([p for p in gone if id(p) not in out], left, unjudged)


def _held(current: Sequence[Finding], older: set[int | str]) -> set[int | str]:
    """The digests of `older` a tracked finding of `current` holds."""
    return {f.digest for f in current if f.status in TRACKED_STATUSES and f.digest in older}


def continued(
    current: Sequence[Finding],
    previous: Sequence[FindingRecord],
    *,
    now: set[int | str] | None = None,
) -> dict[int | str, FindingRecord]:
    """The previous record each current finding continues under another fingerprint, by digest.

    A tracked finding whose fingerprint the previous run does not hold continues the previous
    run's finding of the same rule and subject when each run has exactly one tracked finding of
    that rule and subject and the older fingerprint is gone from this run: the rule failed in
    both runs, only the entry the fingerprint names changed.
    """
    tracked: dict[str, FindingRecord] = {}
    packed: dict[str, int | str] = {}
    for p, digest in zip(previous, packed_digests(previous), strict=True):
        if p.status in TRACKED_STATUSES:
            tracked[p.fingerprint] = p
            packed[p.fingerprint] = digest
    if now is None:  # (of the older digests, those held now: `compare_runs`)
        now = _held(current, set(packed.values()))
    per_key = Counter((p.rule_id, p.subject_key) for p in tracked.values())
    orphans = {
        (p.rule_id, p.subject_key): p
        for fp, p in tracked.items()
        if per_key[(p.rule_id, p.subject_key)] == 1 and packed[fp] not in now
    }
    if not orphans:
        return {}
    known = set(packed.values())
    count: Counter[tuple[str, str]] = Counter()
    candidates: dict[tuple[str, str], Finding] = {}
    for f in current:
        if f.status not in TRACKED_STATUSES:
            continue
        key = (f.rule_id, f.subject.key)
        if key in orphans:
            count[key] += 1
            if f.digest not in known:
                candidates[key] = f
    return {f.digest: orphans[k] for k, f in candidates.items() if count[k] == 1}


def _with_lifecycle(
    f: Finding, before: set[int | str], carried: Mapping[int | str, FindingRecord]
) -> Finding:
    if f.status not in TRACKED_STATUSES:
        return f
    same = f.digest in before or f.digest in carried
    return f.with_marks(lifecycle="persisting" if same else "new")


def _unique(records: list[FindingRecord]) -> list[FindingRecord]:
    seen: set[str] = set()
    out = []
    for p in records:
        if p.fingerprint not in seen:
            seen.add(p.fingerprint)
            out.append(p)
    return out


def records_for_store(
    findings: Sequence[Finding],
    prior: Sequence[FindingRecord] | None,
    run_id: str,
    *,
    carried: Mapping[int | str, FindingRecord] | None = None,
    kept: Sequence[FindingRecord] = (),
) -> Iterator[FindingRecord]:
    """The tracked findings as the next run will compare with them (first sighting kept),
    one at a time as the store writes them (`--all-revisions` has 100,000s), then `kept`
    (older records this run did not evaluate: `SetAside.not_evaluated`) as they were.
    `carried` is `continued(findings, prior)` when the caller has it already (marking does
    not change it)."""
    # The previous record of each digest (the last one of a digest, as the store keeps them)
    older = dict(zip(packed_digests(prior), prior, strict=True)) if prior else {}
    if carried is None:
        carried = continued(findings, prior) if prior else {}
    for f in findings:
        if f.status in TRACKED_STATUSES:
            facts = f.facts
            before = older.get(f.digest)
            first = _first_sighting(f, older, carried) or run_id
            if (
                before is not None
                and before.status == f.status
                and before.first_seen_run == first
                and before.subject_key == f.subject.key
                and before.rule_id == facts.rule_id
                and before.severity == facts.severity
            ):
                # the record as the previous run left it (the same fingerprint: the digest is
                # its number, or its very text): most nights repeat most records
                yield before
                continue
            yield finding_record(
                f.fingerprint, facts.rule_id, f.subject.key, f.status, facts.severity, first
            )
    yield from kept


def first_seen_runs(
    findings: Iterable[Finding],
    prior: Sequence[FindingRecord],
    carried: Mapping[int | str, FindingRecord],
) -> dict[int | str, str]:
    """The run that first saw each `persisting` finding of `findings`, by its digest, as
    `records_for_store` records it."""
    older = dict(zip(packed_digests(prior), prior, strict=True))
    out: dict[int | str, str] = {}
    for f in findings:
        if f.lifecycle == "persisting" and (seen := _first_sighting(f, older, carried)):
            out[f.digest] = seen
    return out


class PriorRecords(tuple[FindingRecord, ...]):
    """The previous run's records, each fingerprint packed as a `Finding` holds it
    (`pack_fingerprint`) once, for every step that compares with them (`continued`,
    `compare_runs`, `records_for_store`, `first_seen_runs`): not once per step."""

    @functools.cached_property
    def digests(self) -> list[int | str]:
        """Each record's packed fingerprint, in order."""
        return [pack_fingerprint(p.fingerprint) for p in self]


def packed_digests(records: Sequence[FindingRecord]) -> list[int | str]:
    """Each record's fingerprint as a `Finding` holds it (`pack_fingerprint`), in order."""
    if isinstance(records, PriorRecords):
        return records.digests
    return [pack_fingerprint(p.fingerprint) for p in records]


def _first_sighting(
    f: Finding,
    older: Mapping[int | str, FindingRecord],
    carried: Mapping[int | str, FindingRecord],
) -> str | None:
    """The run that first saw `f`: that of the older finding it continues under another
    fingerprint (`continued`), else that of the previous record of its own fingerprint
    (`older`, by digest; None: none saw it)."""
    record = (carried.get(f.digest) if carried else None) or older.get(f.digest)
    return record.first_seen_run if record is not None else None
