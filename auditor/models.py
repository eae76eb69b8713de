"""The records stages hand to each other: frozen dataclasses, plus plain JSON for settings payloads.

Takes nothing, gives the shared vocabulary. Every stage imports from here; nothing here imports
a stage.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

#: A plain JSON value (dict / list / str / int / float / bool / None). Settings stay this way.
JSON = Any

Severity = Literal["critical", "high", "medium", "low", "info"]
SEVERITIES: tuple[Severity, ...] = ("critical", "high", "medium", "low", "info")

Target = Literal["settings", "change", "readiness", "org"]
TARGETS: tuple[Target, ...] = ("settings", "change", "readiness", "org")

Status = Literal["pass", "fail", "not_applicable", "unknown", "error", "waived"]
STATUSES: tuple[Status, ...] = ("pass", "fail", "not_applicable", "unknown", "error", "waived")

OnMissing = Literal["fail", "pass", "unknown", "not_applicable"]

ChangeKind = Literal[
    "added", "removed", "changed", "type_changed", "item_added", "item_removed", "renamed"
]
CHANGE_KINDS: tuple[ChangeKind, ...] = (
    "added",
    "removed",
    "changed",
    "type_changed",
    "item_added",
    "item_removed",
    "renamed",
)

Lifecycle = Literal["new", "persisting", "resolved"]


def severity_rank(severity: str) -> int:
    """Return 0 for critical … 4 for info (lower is worse); unknown severities rank last."""
    return SEVERITIES.index(severity) if severity in SEVERITIES else len(SEVERITIES)


@dataclass(frozen=True)
class User:
    """The author of a settings revision."""

    id: str
    email: str
    name: str


@dataclass(frozen=True)
class Revision:
    """One enterprise-control settings snapshot, already redacted (never holds a secret)."""

    revision: int
    updated_at: datetime  # timezone-aware, UTC
    user: User
    settings: JSON  # generic JSON object, secret values replaced by markers
    content_hash: str  # sha256 hex of the canonical JSON of `settings`
    org: str = "default"


@dataclass(frozen=True)
class ReadinessReport:
    """One agent-readiness report of one repository, as received (redacted)."""

    report_id: str
    repo_url: str
    created_at: datetime  # timezone-aware, UTC (the API sends Unix ms)
    data: JSON  # the whole report object as the API returned it
    content_hash: str


@dataclass(frozen=True)
class Change:
    """One difference between two JSON documents.

    `path` uses the one notation of `auditor.paths` (e.g. `$.sandbox.network.allowedDomains`).
    For `added`/`item_added`, `before` is None; for `removed`/`item_removed`, `after` is None.
    For `renamed`, `path` is the new location and `old_path` the old one. Secret values arrive
    here already as markers (see `auditor.redact`).
    """

    path: str
    kind: ChangeKind
    before: JSON = None
    after: JSON = None
    old_path: str | None = None


@dataclass(frozen=True)
class SourceLocation:
    """A 1-based position in a file (policies, waivers, settings files under review)."""

    file: str
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


@dataclass(frozen=True)
class Rule:
    """A validated policy rule. `when`/`condition` are compiled by `auditor.policy`."""

    id: str
    title: str
    severity: Severity
    target: Target
    condition: Any  # compiled `assert`
    when: Any = None  # compiled precondition, or None
    on_missing: OnMissing = "unknown"
    description: str = ""
    remediation: str = ""
    controls: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    source: SourceLocation | None = None
    paths: tuple[str, ...] = ()  # every settings path the rule reads (for incremental evaluation)


@dataclass(frozen=True)
class PolicyFile:
    """A loaded policy file and the hash reports cite."""

    path: str
    sha256: str
    rule_ids: tuple[str, ...]


@dataclass(frozen=True)
class Subject:
    """What a rule was evaluated against.

    `key` is the stable identity used in fingerprints: `settings` (the settings in force),
    `settings@412` (one historical revision), `change:411..412`, the repository URL, or `org`.
    """

    kind: Target
    key: str
    label: str
    revision: int | None = None
    repo_url: str | None = None


@dataclass(frozen=True)
class Evidence:
    """Why a rule gave its result: the JSON path looked at, what was there, what was expected."""

    path: str
    actual: JSON = None  # redacted
    expected: JSON = None
    operator: str = ""
    present: bool = True  # False when the path was absent (actual is then None)
    note: str = ""
    shows_expected: bool = True  # False when `operator` is a whole phrase ("a non-empty list")


@dataclass(frozen=True)
class Attribution:
    """Who and when: the revision where a rule last went from pass to fail (or a change's step)."""

    revision: int
    updated_at: datetime
    author_email: str
    author_name: str = ""


@dataclass(frozen=True)
class Waiver:
    """An accepted exception from a waivers file."""

    rule_id: str
    subject: str  # "settings", or a repository URL glob, or "org"
    reason: str
    owner: str
    expires: datetime  # end of the expiry day, UTC
    ticket: str = ""
    source: SourceLocation | None = None


@dataclass(frozen=True)
class RuleResult:
    """The outcome of one rule on one subject. `raw_status` is the status before waivers."""

    rule: Rule
    subject: Subject
    status: Status
    message: str
    evidence: tuple[Evidence, ...] = ()
    raw_status: Status | None = None  # set when a waiver changed `status`
    waiver: Waiver | None = None
    since: Attribution | None = None

    @property
    def original_status(self) -> Status:
        """The status before any waiver applied."""
        return self.raw_status or self.status


@dataclass(frozen=True)
class FindingRecord:
    """A finding as remembered between runs (stored per run; compared by the next one)."""

    fingerprint: str
    rule_id: str
    subject_key: str
    status: str
    severity: str
    first_seen_run: str


@dataclass(frozen=True)
class EvaluationInputs:
    """Everything one evaluation looks at. Built by the cli; evaluated by `auditor.evaluate`."""

    now: datetime
    settings: Revision | None = None  # the revision under test (latest / --at / proposed)
    # `history` and `steps` are re-iterable (a tuple, or a view that streams anew on each
    # iteration, e.g. over the store), so a long history is never held in memory.
    history: Iterable[Revision] | None = None  # ascending; for attribution and --all-revisions
    all_revisions: bool = False
    steps: Iterable[tuple[Revision, Revision]] = ()  # (before, after) pairs for change rules
    reports: tuple[ReadinessReport, ...] = ()
    readiness_model: Any = None  # `auditor.readiness.ReadinessModel`; None means the shipped one
    options: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Evaluation:
    """All results of one evaluation plus what could not be evaluated."""

    results: tuple[RuleResult, ...]
    not_evaluated: tuple[str, ...] = ()  # human-readable reasons; non-empty means incomplete
    failing_by_revision: tuple[tuple[int, int], ...] = ()  # (revision, failing rule count)

    @property
    def complete(self) -> bool:
        """True when nothing was left unevaluated."""
        return not self.not_evaluated
