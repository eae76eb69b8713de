"""The one input record every report renderer takes.

Takes plain values gathered by the command line (findings, waivers, readiness rows, input
hashes), gives `ReportData`. Renderers import nothing from `waivers` or `readiness`: the cli
flattens those into the rows below.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Generic, TypeVar

from auditor.common.pairs import RevisionCounts
from auditor.findings.finding import Finding, control_key, sort_findings
from auditor.models import (
    OPEN_STATUSES,
    SEVERITIES,
    STATUSES,
    TRACKED_STATUSES,
    Change,
    DataWarning,
    FindingRecord,
    Waiver,
)
from auditor.policy.model import PolicyFile
from auditor.report.usage import UsageView


@dataclass(frozen=True)
class ReadinessRow:
    """One repository's readiness as shown in the reports."""

    repo_url: str
    level: int | None  # None: no level could be computed
    score: float | None  # passing share, 0.0 to 1.0; None when no criterion was evaluated
    age_days: float | None
    clean: bool | None  # None: the report does not say whether the tree was clean
    report_id: str


@dataclass(frozen=True)
class WaiverSummary:
    """Waivers grouped by state (from `auditor.waivers.WaiverReport`)."""

    in_force: tuple[Waiver, ...] = ()
    expiring_soon: tuple[Waiver, ...] = ()
    expired: tuple[Waiver, ...] = ()
    stale: tuple[Waiver, ...] = ()
    warnings: tuple[str, ...] = ()
    #: an `--at` run's time: the waivers were judged as of then (None: as of the report time)
    as_of: datetime | None = None
    #: of the waivers in force (or stale) as of `as_of`, those that expired before the report
    #: time, by expiry: they still waive this run's findings, which every report says
    expired_since_as_of: tuple[Waiver, ...] = ()


@dataclass(frozen=True)
class InputDigest:
    """Hashes of everything evaluated, for the appendix and the JSON output."""

    revisions_evaluated: Sequence[tuple[int, str]] = ()  # (revision, content hash), ascending
    reports_evaluated: tuple[tuple[str, str], ...] = ()  # (report id, content hash)
    settings_revision: int | None = None


@dataclass(frozen=True)
class InputFile:
    """An input file besides the policy packs that changes the results (the readiness model,
    the waivers file), as the reports cite it: its name (`(shipped)`: the model shipped with
    auditor) and its sha256, of its copy with its secrets as markers when it holds one
    (`auditor.workflows.run.redacted_inputs`), never of a file holding a secret as written."""

    role: str  # "readiness model" | "waivers"
    path: str
    sha256: str


@dataclass(frozen=True)
class DataSource:
    """When the stored data was fetched, and what the last sync compared with the service:
    the reports' answer to "how fresh is this, and what did the integrity check cover"."""

    last_sync: datetime | None = None  # the last finished sync's end (None: none recorded)
    synced: bool = False  # this run synced (False: `--offline`, or its sync failed)
    not_synced: str = ""  # why this run did not sync (`--offline`, its sync failed), if known
    #: the stored revisions the last sync read again from the service and compared with the
    #: stored ones (AUDITOR-INTEGRITY-001): (oldest, newest); None: none, or not recorded
    rechecked: tuple[int, int] | None = None
    recheck_recorded: bool = False  # the state file records what its last sync re-read
    #: the command that read the data: "run", "review" (its live side, the settings stored by
    #: that sync) or "export" (an evidence bundle's reports: the state file as exported)
    by: str = "run"


#: Why an evidence bundle's reports were made without a sync (`DataSource.not_synced`).
EXPORT_NOT_SYNCED = "an export reads the state file alone"

#: Files that other commands write where reports may be written, which the report-folder check
#: (`cli.outdir`) recognises without loading those commands' modules: an evidence bundle's
#: manifest (`auditor export`) and the most of it read (a bundle's is a few KB: one entry of
#: about 100 bytes per file, 160,000 files fit; 1 GiB let a manifest of made-up entries keep
#: `verify` busy for minutes and GBs: 209 MB, 70 s, 1.5 GB, two million lines printed), and
#: `run --orgs`'s summary beside the organizations' folders.
BUNDLE_MANIFEST = "manifest.json"
BUNDLE_MANIFEST_MAX_BYTES = 16 << 20
ORGS_SUMMARY = "summary.json"


def last_sync_text(source: DataSource) -> str:
    """`2026-11-30 02:00 UTC (this run synced)` / `… (not synced by this run: --offline)`
    (`this review`, `this export` for theirs)."""
    if source.last_sync is None:
        when = "no finished sync recorded"
    else:
        when = source.last_sync.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")
    why = f": {source.not_synced}" if source.not_synced else ""
    how = f"this {source.by} synced" if source.synced else f"not synced by this {source.by}{why}"
    return f"{when} ({how})"


def integrity_coverage_text(source: DataSource) -> str:
    """What the integrity check (AUDITOR-INTEGRITY-001) covered: the revisions the last sync
    read again and compared, and that older ones were not read again; no sync option reads
    the whole history again. A review's ends saying a review reports no integrity issue."""
    return _coverage(source) + _review_note(source)


def _coverage(source: DataSource) -> str:
    when = (
        source.last_sync.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")
        if source.last_sync is not None
        else "never"
    )
    if not source.recheck_recorded:
        return (
            "not recorded by the state file's last sync (made by an older auditor): which "
            "stored revisions were compared with the service is not known"
        )
    if source.rechecked is None:
        return (
            f"the last sync ({when}) read no stored revision again (none was stored, or the "
            "service listed only new ones): no stored revision was compared with the service"
        )
    low, high = source.rechecked
    older = (
        f"; revisions 1-{low - 1} were not read again by it (a sync re-reads only the newest "
        "page of history; no sync option reads the whole history again)"
        if low > 1
        else ""
    )
    return (
        f"revisions {low}-{high} read again from the service by the last sync ({when}) and "
        f"compared with the stored ones{older}"
    )


def _review_note(source: DataSource) -> str:
    """A review's coverage line ends saying it reports no integrity issue: only `run` does."""
    if source.by != "review":
        return ""
    return "; a review reports no integrity issue (AUDITOR-INTEGRITY-001 is `auditor run`'s)"


@dataclass(frozen=True)
class ReviewInfo:
    """A pre-change review: the proposed file against the live settings."""

    proposed_file: str
    against: str  # e.g. "rev 412 (live)"
    changes: tuple[Change, ...] = ()
    introduced: tuple[str, ...] = ()  # fingerprints of findings the change would introduce
    fixed: tuple[Finding, ...] = ()  # findings in force now that the change would fix
    # findings in force now whose rule would not apply after the change (a `when:` guard)
    no_longer_applies: tuple[Finding, ...] = ()
    unchanged: int = 0  # failing findings present before and after
    # the rules the review evaluated, per target (settings and change), and those of the
    # policies it did not (target, count, why): a review is not an audit of every rule
    rules_by_target: tuple[tuple[str, int], ...] = ()
    rules_left_out: tuple[tuple[str, int, str], ...] = ()
    rule_ids: frozenset[str] = frozenset()  # the ids of the rules evaluated
    rule_ids_left_out: tuple[tuple[str, str], ...] = ()  # (target, rule id), sorted


def rules_left_out(data: ReportData) -> tuple[tuple[str, int, str], ...]:
    """The policies' rules this run or review did not evaluate: (target, count, why)."""
    if data.review is not None and data.review.rules_by_target:
        return data.review.rules_left_out
    return data.scope.rules_left_out if data.scope else ()


def left_out_rule_ids(data: ReportData, target: str) -> tuple[str, ...] | None:
    """The ids of the rules of `target` this run or review left out (None: not known)."""
    if data.review is not None and data.review.rules_by_target:
        pairs = data.review.rule_ids_left_out
    elif data.scope is not None:
        pairs = data.scope.rule_ids_left_out
    else:
        return None
    return tuple(rule for t, rule in pairs if t == target) or None


def left_out_text(target: str, count: int, why: str) -> str:
    """`12 usage rule(s) not evaluated: `--no-usage` was given: …`: one target's rules left
    out, as SARIF's notification and JUnit's completeness case say it."""
    return f"{count} {target} rule(s) not evaluated: {why}"


#: The most data-quality warnings OSCAL's props and SARIF's notifications list one by one
#: (findings.json, report.html and junit.xml list them all).
DATA_QUALITY_LISTED = 50


def data_quality_lines(data: ReportData, limit: int | None = DATA_QUALITY_LISTED) -> list[str]:
    """Each data-quality warning in one line (`describe`), the first `limit` of them and a
    last line counting the rest (`limit` None: all)."""
    warnings = data.data_quality
    shown = warnings if limit is None else warnings[:limit]
    lines = [w.describe() for w in shown]
    if len(warnings) > len(shown):
        lines.append(f"{len(warnings) - len(shown)} more data-quality warning(s) in findings.json")
    return lines


def incomplete_headline(data: ReportData, shown: Callable[[str], str] = str) -> str:
    """What an incomplete run's banner leads with (report.md, junit.xml, the summary on
    stdout): how many items were not evaluated; or, when none was and only its outputs are
    short (`output_notes`: interrupted while the reports were written, written again after a
    write failed), what happened, and that every result is there. A note about the outputs is
    never counted as an item not evaluated: an auditor reading "2 item(s) not evaluated"
    takes the results for understated. `shown`: how the note's words are written (escaped
    for Markdown)."""
    if data.output_notes and not data.not_evaluated:
        return f"{shown(output_headline(data))} (every result of the evaluation is here)"
    return f"{len(data.not_evaluated)} item(s) not evaluated"


def output_headline(data: ReportData) -> str:
    """What happened to the run's outputs, in a few words: the `WHAT` of its first note
    (`interrupted while the reports were written`), "" when there is none."""
    return data.output_notes[0].split(":", 1)[0] if data.output_notes else ""


def what_was_audited(data: ReportData) -> str:
    """What a run evaluated, for the reports' subtitle: the settings (those of every stored
    revision with `--all-revisions`), and the repositories' readiness unless `--no-readiness`
    left it out."""
    every = data.review is None and data.scope is not None and data.scope.all_revisions
    settings = (
        "Enterprise control settings of every stored revision (--all-revisions)"
        if every
        else "Enterprise control settings"
    )
    if any(target == "readiness" for target, _, _ in rules_left_out(data)):
        return f"{settings} (repository readiness not read)"
    return f"{settings} and repository readiness"


def settings_judged(data: ReportData) -> str:
    """Which settings the settings rules judged, for the scope of report.md and report.html:
    those in force, or (`--all-revisions`) every stored revision's, each its own result
    (plain text, `code` spans marked with backticks)."""
    if data.scope is not None and data.scope.all_revisions:
        return (
            "every stored revision (`--all-revisions`): each settings rule has a result per "
            "revision (`settings@N`), not only for the settings in force"
        )
    rev = data.inputs.settings_revision
    which = f" (rev {rev})" if rev is not None else ""
    return (
        f"the settings in force{which}: one result per settings rule; the change rules "
        "judged every change step"
    )


def rules_by_target(data: ReportData) -> tuple[tuple[str, int], ...]:
    """The rules this run or review evaluated, per target (empty: not known)."""
    if data.review is not None and data.review.rules_by_target:
        return data.review.rules_by_target
    return data.scope.rules_by_target if data.scope else ()


def rules_evaluated(data: ReportData) -> int | None:
    """How many rules were evaluated (None: not known, every rule of the policy files)."""
    counts = rules_by_target(data)
    return sum(n for _, n in counts) if counts else None


@dataclass(frozen=True)
class AuditScope:
    """What the audit covered, for the auditor's scope block: the period, the "as of" time,
    the rules per target and the populations the results were drawn from."""

    period_start: datetime | None = None  # the first stored revision's time
    period_end: datetime | None = None  # the evaluated (newest or `--at`) revision's time
    as_of: datetime | None = None  # `--at`, when given
    all_revisions: bool = False  # `--all-revisions`: every stored revision's settings judged
    rules_by_target: tuple[tuple[str, int], ...] = ()  # (target, rule count), sorted
    # rules of the policy not evaluated this run: (target, rule count, why), e.g. the usage
    # rules with `--no-usage`
    rules_left_out: tuple[tuple[str, int, str], ...] = ()
    #: the ids of those rules: (target, rule id), sorted
    rule_ids_left_out: tuple[tuple[str, str], ...] = ()
    revisions: int = 0  # settings revisions evaluated (the history up to the settings)
    change_steps: int = 0  # consecutive revision pairs the change rules looked at
    repositories: int = 0  # repositories with a readiness report in the period
    reports: int = 0  # readiness reports stored up to the "as of" time
    reports_evaluated: int = 0  # the newest report per repository, which the rules read


@dataclass(frozen=True)
class ReportData:
    """Everything one run's reports show. Same value in, byte-identical files out."""

    tool_version: str
    run_id: str
    generated_at: datetime
    mode: str  # "run" | "review"
    api_address: str
    complete: bool
    not_evaluated: tuple[str, ...]
    policy_files: tuple[PolicyFile, ...]
    findings: tuple[Finding, ...]  # all of them, passes included
    resolved: tuple[FindingRecord, ...] = ()
    #: (revision, settings rules failing there), waived ones included
    failing_by_revision: Sequence[tuple[int, int]] = ()
    #: (revision, how many of those a waiver covers), the same revisions; empty: none is
    waived_by_revision: Sequence[tuple[int, int]] = ()
    readiness_rows: tuple[ReadinessRow, ...] = ()
    org_level: int | None = None
    waivers: WaiverSummary = WaiverSummary()
    inputs: InputDigest = InputDigest()
    review: ReviewInfo | None = None
    fail_on: str = "low"
    org: str = ""  # the `--org` label; SARIF's automation id names it
    sarif_include_waived: bool = False  # SARIF lists waived findings (as suppressed results)
    sarif_category: str = ""  # code scanning category (automationDetails.id's); "": the default
    #: the organization `run --orgs` named ("": a run of one organization): findings.sarif's
    #: `partialFingerprints` include it, so code scanning never merges organizations' alerts
    sarif_org: str = ""
    #: the working folder's path from the repository's root (`ci/`; "": the root itself, or
    #: not known): findings.sarif names a relative policy file from the root with it
    sarif_base: str = ""
    #: the repository's root, resolved (`GITHUB_WORKSPACE`; "": not set): findings.sarif names
    #: a policy file lying there that is shown by an absolute path (`--policy ../pol/`, given
    #: from outside the working folder) from the root
    sarif_root: str = ""
    data_quality: tuple[DataWarning, ...] = ()  # odd API values kept and read as absent
    #: what happened to the run's outputs, each `WHAT: why` (findings.sarif or report.pdf not
    #: written, interrupted while the reports were written, written again after a write
    #: failed): the run is incomplete (`complete` False), but no item went unevaluated, so
    #: the banners list them apart from `not_evaluated` and never count them as such
    output_notes: tuple[str, ...] = ()
    usage: UsageView | None = None  # the usage section (None: usage not part of the run)
    scope: AuditScope | None = None  # what the audit covered (None: not known, e.g. a review)
    #: the auditor release that made the run this one was compared with ("": none, or unknown)
    previous_tool_version: str = ""
    #: the readiness model and waivers file, each named with its digest (empty: not known,
    #: e.g. a review's, or those of an evidence bundle made before its reports cited them)
    input_files: tuple[InputFile, ...] = ()
    #: when the data was fetched and what the integrity check covered (None: not known, or a
    #: review `--against FILE`, which reads no service data)
    source: DataSource | None = None
    #: the id of the earlier complete run this run's findings were compared with (None: none
    #: was: no earlier complete run of the same scope is recorded, so nothing is `new` or
    #: `resolved`; a review compares with the live settings, never with a run)
    previous_run_id: str | None = None
    #: why no earlier run was compared with, when the caller knows it (an evidence bundle
    #: holds no earlier run); "": `no_comparison_note` gives every possible reason
    not_compared: str = ""
    #: findings of the run compared with on a usage day that left this run's usage window:
    #: no longer judged, so neither resolved nor persisting (listed once, then dropped)
    left_window: tuple[FindingRecord, ...] = ()
    #: findings of the run compared with whose rule this run did not judge on their subject
    #: (a usage day: the analytics unreadable, the day not stored): not resolved
    not_reevaluated: tuple[FindingRecord, ...] = ()
    #: the run that first saw each `persisting` finding, by its `Finding.digest` (empty: not
    #: known): past code scanning's 5,000 results, findings.sarif lists the oldest first
    first_seen: Mapping[int | str, str] = field(
        default_factory=dict, compare=False, repr=False, hash=False
    )
    #: `findings` itself when it is known to be in report order (`build_report_data` sorts
    #: them), so `report_order` need not sort it again; a copy given other findings
    #: (`dataclasses.replace`) still refers to the old tuple, and its findings are sorted.
    ordered: tuple[Finding, ...] | None = field(default=None, compare=False, repr=False)


_FRAMEWORKS = {"SOC2": "SOC 2", "ISO27001": "ISO 27001"}


@dataclass(frozen=True)
class ControlRow:
    """Compliance of one framework control, over every finding of the rules that map to it."""

    framework: str
    control: str
    rules: tuple[str, ...]
    failing: int
    unverified: int  # error or unknown
    waived: int
    passing: int  # `pass` results only
    not_applicable: int = 0  # precondition false: nothing was tested, neither passing nor failing

    @property
    def code(self) -> str:
        """The control without its framework prefix: `CC6.1` for `SOC2:CC6.1`."""
        return self.control.split(":", 1)[1] if ":" in self.control else self.control

    @property
    def state(self) -> str:
        """`not met`, `unverified`, `waived` (nothing fails or is unverified, but a result
        passes only because a waiver accepts it: an accepted exception, never `met`), `met`
        (some result passed, none failed) or `not applicable` (every result was
        `not_applicable`: nothing was tested, so the control is not shown as met)."""
        if self.failing:
            return "not met"
        if self.unverified:
            return "unverified"
        if self.waived:
            return "waived"
        return "met" if self.passing else "not applicable"


_LOCAL = threading.local()  # `shared_order`'s orders, per thread (`run --orgs` workers)


@contextmanager
def shared_order(data: ReportData) -> Iterator[None]:
    """Within the block, `report_order(data)` sorts `data`'s findings once for every report
    written (HTML and Markdown each list them in report order), and the summaries' counts
    (`status_counts`, `severity_counts`, `new_count`) are counted once, and each evidence item is
    worded once (`shared_parts`); let go after. Inside
    another such block, the outer one's serve (`run --orgs` writes one file per call)."""
    if getattr(_LOCAL, "orders", None) is not None:
        yield
        return
    before = (
        getattr(_LOCAL, "orders", None),
        getattr(_LOCAL, "tallies", None),
        getattr(_LOCAL, "parts", None),
    )
    _LOCAL.orders = {}
    _LOCAL.tallies = {}
    _LOCAL.parts = {}
    try:
        yield
    finally:
        _LOCAL.orders, _LOCAL.tallies, _LOCAL.parts = before


def shared_parts() -> dict[int, tuple[Any, Any]] | None:
    """Inside `shared_order`, where `display.evidence_parts` keeps the words of each evidence
    item it was asked for (by the item's identity, with the item), so that the formats that word
    evidence (HTML, Markdown, SARIF, JUnit) work each item's words out once; None outside."""
    parts: dict[int, tuple[Any, Any]] | None = getattr(_LOCAL, "parts", None)
    return parts


def report_order(data: ReportData) -> Sequence[Finding]:
    """`sort_findings(data.findings)`: the findings in report order, made once per report
    inside `shared_order`, and not at all when `data.ordered` says they are in that order. Take
    the findings of some statuses by filtering this list: the sort is stable, so it gives the
    order that sorting those findings alone gives."""
    orders: dict[int, tuple[tuple[Finding, ...], list[Finding]]] | None = getattr(
        _LOCAL, "orders", None
    )
    findings = data.findings
    if data.ordered is findings:
        return findings  # not even copied: --all-revisions can hold a million findings
    known = None if orders is None else orders.get(id(findings))
    if known is not None and known[0] is findings:
        return known[1]
    order = sort_findings(findings)
    if orders is not None:
        orders[id(findings)] = (findings, order)
    return order


#: The most attributions one `PerAttribution` keeps (it is emptied when full).
ATTRIBUTION_LIMIT = 4096

T = TypeVar("T")


class PerAttribution(Generic[T]):
    """`make(f)` for what depends only on a finding's attribution and subject kind (as
    `attribution_text` does), made once per attribution: findings share their attributions
    (one per step or revision), and each format words and escapes them."""

    def __init__(self, make: Callable[[Finding], T]) -> None:
        self._make = make
        self._known: dict[tuple[int, str], tuple[object, T]] = {}

    def __call__(self, f: Finding) -> T:
        a = f.since
        if a is None:
            return self._make(f)
        key = (id(a), f.subject.kind)
        known = self._known.get(key)
        if known is None or known[0] is not a:
            if len(self._known) >= ATTRIBUTION_LIMIT:
                self._known.clear()
            known = self._known[key] = (a, self._make(f))
        return known[1]


def failing_not_waived(data: ReportData) -> Sequence[tuple[int, int]]:
    """(revision, settings rules failing there that no waiver covers): "Compliance over
    time"'s figures, counted as the findings table counts (a waived result is `waived`)."""
    if not data.waived_by_revision:
        return data.failing_by_revision
    failing, waived = data.failing_by_revision, data.waived_by_revision
    if len(failing) != len(waived):
        raise ValueError("the waived counts are not of the failing counts' revisions")
    return RevisionCounts.of((r, n - w) for (r, n), (_, w) in zip(failing, waived, strict=True))


def shown_findings(data: ReportData) -> list[Finding]:
    """The findings listed in detail, in report order."""
    return [f for f in data.findings if f.status in TRACKED_STATUSES]


def status_counts(findings: tuple[Finding, ...]) -> dict[str, int]:
    """How many findings have each status (every status listed, zeros included)."""
    counts: dict[str, int] = dict.fromkeys(STATUSES, 0)
    for (status, _, _), n in _tallies(findings).items():
        counts[status] = counts.get(status, 0) + n
    return counts


def severity_counts(findings: tuple[Finding, ...]) -> dict[str, int]:
    """Open findings (fail, error, unknown) per severity, worst first."""
    counts: dict[str, int] = dict.fromkeys(SEVERITIES, 0)
    for (status, severity, _), n in _tallies(findings).items():
        if status in OPEN_STATUSES:
            counts[severity] = counts.get(severity, 0) + n
    return counts


#: The kinds of older findings a run did not judge again (not resolved): the `ReportData`
#: field holding their records, the heading of their section and what it says of them.
_NOT_JUDGED = (
    (
        "left_window",
        "Left the usage window since the previous run",
        "Their day is before this run's 30-day usage window, so it is no longer judged: "
        "not resolved (nothing was fixed), and no later run lists them.",
    ),
    (
        "not_reevaluated",
        "Not evaluated again by this run",
        "This run did not judge their rule on their subject (see what was not evaluated): "
        "not resolved; the next complete run compares them again.",
    ),
)


def not_judged(data: ReportData) -> list[tuple[str, str, tuple[FindingRecord, ...]]]:
    """The previous run's findings this run did not judge again, by kind (heading, what the
    section says of them, the records), the kinds that have any; none in a review."""
    if data.review:
        return []
    kinds = ((heading, words, getattr(data, field)) for field, heading, words in _NOT_JUDGED)
    return [kind for kind in kinds if kind[2]]


def upgrade_note(data: ReportData) -> str:
    """When the previous run was made by another auditor release, what report.md and
    report.html say beside the New and Resolved counts (and in the Resolved section), and
    stdout after them: some of what changed may be the new release judging differently."""
    before = data.previous_tool_version
    if data.review is not None or not before or before == data.tool_version:
        return ""
    return (
        f"the previous run was made by auditor {before}: some changes may come from the "
        "upgrade (see CHANGELOG)"
    )


def compared(data: ReportData) -> bool:
    """Whether this run's findings were compared with an earlier run: it names the run
    (`previous_run_id`), or its findings carry a lifecycle or it has resolved records (report
    data made without the run's id)."""
    if data.review is not None:
        return False
    if data.previous_run_id is not None or data.resolved or data.left_window:
        return True
    return any(lifecycle for (_, _, lifecycle) in _tallies(data.findings))


def no_comparison_note(data: ReportData) -> str:
    """When a run compared its findings with no earlier run, why, as report.md and report.html
    say it after "Not compared with an earlier run:" in place of the New and Resolved counts
    ("" when it compared, and in a review, which compares with the live settings)."""
    if data.review is not None or compared(data):
        return ""
    if not data.complete and not data.findings:
        return "the run stopped before its findings were compared, so nothing is new or resolved"
    if data.not_compared:
        return data.not_compared
    return (
        "the state file holds no earlier complete run of these rules and view, so nothing is "
        "marked new or resolved. This may be the first run, the state file may be new or lost "
        "(a CI cache that missed or was evicted), the policies' rules or the view (`--at`, "
        "`--all-revisions`) changed since the last run, which starts a new baseline, or every "
        "earlier run of them was incomplete (interrupted, a failed sync, no app URL, no usage "
        "analytics for an `--at` window: its reports list what was not evaluated), and an "
        "incomplete run is never a baseline"
    )


#: Why an evidence bundle's reports (`auditor export`, `auditor verify`) compare with nothing.
BUNDLE_NOT_COMPARED = (
    "an evidence bundle holds no earlier run (its reports come from evaluating the bundle's own "
    "files), so nothing is marked new or resolved"
)


def new_count(findings: tuple[Finding, ...]) -> int:
    """Findings first seen in this run (waived ones included: `new_waived_count` of them)."""
    return sum(n for (_, _, lifecycle), n in _tallies(findings).items() if lifecycle == "new")


def new_waived_count(findings: tuple[Finding, ...]) -> int:
    """Findings first seen in this run that a waiver covers (not in the severity table)."""
    return sum(
        n
        for (status, _, lifecycle), n in _tallies(findings).items()
        if lifecycle == "new" and status == "waived"
    )


def new_text(findings: tuple[Finding, ...], noun: str = "") -> str:
    """`38` or `38 (+5 waived)`: the findings first seen in this run as the headlines say them,
    a waived one apart (the severity table's New column does not count it), as a review says
    what it introduces."""
    tally = _tallies(findings)  # counted once for both numbers (the summary calls this twice)
    total = sum(n for (_, _, lifecycle), n in tally.items() if lifecycle == "new")
    waived = sum(
        n
        for (status, _, lifecycle), n in tally.items()
        if lifecycle == "new" and status == "waived"
    )
    return new_words(total, waived, noun)


def new_words(total: int, waived: int, noun: str = "") -> str:
    """`38 (+5 waived)` for `total` new findings `waived` of which a waiver covers; `43`
    (`noun` after the number: `38 new (+5 waived)`)."""
    return f"{total - waived}{noun} (+{waived} waived)" if waived else f"{total}{noun}"


def introduced_counts(data: ReportData) -> tuple[int, int]:
    """How many findings a reviewed change would introduce: (open, waived). A waived one is
    not counted with the others (nor by the gate, nor in the severity table), but said apart."""
    if data.review is None:
        return 0, 0
    introduced = set(data.review.introduced)
    found = [f.status for f in data.findings if f.fingerprint in introduced]
    return sum(s in OPEN_STATUSES for s in found), found.count("waived")


def introduced_text(data: ReportData) -> str:
    """`3` or `3 (+2 waived)`: the findings a change would introduce, as the headlines say."""
    open_, waived = introduced_counts(data)
    return f"{open_} (+{waived} waived)" if waived else str(open_)


def new_severity_counts(findings: tuple[Finding, ...]) -> dict[str, int]:
    """`severity_counts` of the findings first seen in this run."""
    counts: dict[str, int] = dict.fromkeys(SEVERITIES, 0)
    for (status, severity, lifecycle), n in _tallies(findings).items():
        if lifecycle == "new" and status in OPEN_STATUSES:
            counts[severity] = counts.get(severity, 0) + n
    return counts


Tally = dict[tuple[str, str, str | None], int]


def _tallies(findings: tuple[Finding, ...]) -> Tally:
    """How many findings have each (status, severity, lifecycle), in the order first met: made
    once for every report inside `shared_order` (the summaries of report.html, report.md and
    findings.json each count the same findings)."""
    known: dict[int, tuple[tuple[Finding, ...], Tally]] | None = getattr(_LOCAL, "tallies", None)
    if known is not None:
        found = known.get(id(findings))
        if found is not None and found[0] is findings:
            return found[1]
    # Counted per rule's facts, status and marks (objects findings share: a few hundred keys),
    # by identity (hashing them hashes every field), then per (status, severity, lifecycle).
    per: dict[tuple[int, str, int], list[Any]] = {}
    for f in findings:
        key = (id(f.facts), f.status, id(f.marks))
        slot = per.get(key)
        if slot is None:
            per[key] = [f, 1]
        else:
            slot[1] += 1
    tally: Tally = {}
    for (_, status, _), (f, n) in per.items():
        key2 = (status, f.facts.severity, f.marks[2])
        tally[key2] = tally.get(key2, 0) + n
    if known is not None:
        known[id(findings)] = (findings, tally)
    return tally


def framework_of(control: str) -> str:
    """`SOC 2` for `SOC2:CC6.1`; the prefix itself for other frameworks."""
    prefix = control.split(":", 1)[0] if ":" in control else "other"
    return _FRAMEWORKS.get(prefix.upper().replace(" ", ""), prefix)


def control_rows(findings: tuple[Finding, ...]) -> list[ControlRow]:
    """One row per framework control, sorted by framework, then naturally by control id."""
    # Counted per rule facts and status first (a rule's findings share one `RuleFacts`), then
    # spread over each rule's controls: a few hundred dictionary updates, not one per finding
    # and control.
    # Keyed by the facts' identity: hashing a frozen dataclass hashes all its fields each time.
    per_rule: dict[tuple[int, str], list[Any]] = {}
    for f in findings:
        # a waived error or unknown is still unverified: a waiver accepts a finding, it does
        # not stand in for an evaluation that was not done
        status: str = f.status
        if status == "waived" and f.raw_status in ("error", "unknown"):
            status = f.raw_status
        key = (id(f.facts), status)
        found = per_rule.get(key)
        if found is None:
            per_rule[key] = [f.facts, 1]
        else:
            found[1] += 1
    tallies: dict[str, list[int]] = {}
    rules: dict[str, set[str]] = {}
    for (_, status), (facts, n) in per_rule.items():
        slot = _tally_slot(status)
        for control in facts.controls:
            t = tallies.setdefault(control, [0, 0, 0, 0, 0])
            rules.setdefault(control, set()).add(facts.rule_id)
            t[slot] += n
    rows = [
        ControlRow(framework_of(c), c, tuple(sorted(rules[c])), t[0], t[1], t[2], t[3], t[4])
        for c, t in tallies.items()
    ]
    return sorted(rows, key=lambda r: (r.framework, control_key(r.control)))


def _tally_slot(status: str) -> int:
    """failing, unverified, waived, passing or not applicable, by status (a waived one's raw
    status: `fail` waived counts as waived, `error` or `unknown` waived as unverified)."""
    if status == "fail":
        return 0
    if status in OPEN_STATUSES:
        return 1
    if status == "waived":
        return 2
    return 4 if status == "not_applicable" else 3
