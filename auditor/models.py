"""The records stages hand to each other: frozen dataclasses, plus plain JSON for settings payloads.

Takes nothing, gives the shared vocabulary. Every stage imports from here; nothing here imports
a stage.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

#: A plain JSON value (dict / list / str / int / float / bool / None). Settings stay this way.
JSON = Any

Severity = Literal["critical", "high", "medium", "low", "info"]
SEVERITIES: tuple[Severity, ...] = ("critical", "high", "medium", "low", "info")

Target = Literal["settings", "change", "readiness", "org", "usage"]
TARGETS: tuple[Target, ...] = ("settings", "change", "readiness", "org", "usage")

Status = Literal["pass", "fail", "not_applicable", "unknown", "error", "waived"]
STATUSES: tuple[Status, ...] = ("pass", "fail", "not_applicable", "unknown", "error", "waived")
#: Open results: someone has to act on them (an `error` or `unknown` is never a pass).
OPEN_STATUSES: frozenset[str] = frozenset({"fail", "error", "unknown"})
#: Results tracked across runs and listed in the reports: open ones and accepted (waived) ones.
TRACKED_STATUSES: frozenset[str] = OPEN_STATUSES | {"waived"}
#: Results that count against `--fail-on` (an `error` makes the run an error instead).
FAILING_STATUSES: frozenset[str] = frozenset({"fail", "unknown"})
#: Results that need no one's attention.
QUIET_STATUSES: frozenset[str] = frozenset({"pass", "not_applicable"})

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

#: The fields of the document a `target: change` rule reads (`evaluate.change.change_document`)
#: and of each of its `changes[]`: a path whose first key is none of them is always absent.
CHANGE_DOCUMENT_FIELDS: tuple[str, ...] = (
    "before",
    "after",
    "changes",
    "author",
    "author_name",
    "revision",
    "previous_revision",
    "updated_at",
)
CHANGE_FIELDS: tuple[str, ...] = ("path", "kind", "before", "after", "old_path")

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


@dataclass(frozen=True, slots=True)
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


@dataclass(frozen=True, slots=True)
class Evidence:
    """Why a rule gave its result: the JSON path looked at, what was there, what was expected."""

    path: str
    actual: JSON = None  # redacted
    expected: JSON = None
    operator: str = ""
    present: bool = True  # False when the path was absent (actual is then None)
    note: str = ""
    shows_expected: bool = True  # False when `operator` is a whole phrase ("a non-empty list")


@dataclass(frozen=True, slots=True)
class Attribution:
    """Who and when: the revision where a rule last went from pass to fail (or a change's step)."""

    revision: int
    updated_at: datetime
    author_email: str
    author_name: str = ""
    # What the reports name instead of `rev N` where N is no stored revision: a review's
    # proposal ("the proposed file PATH") or an `--against` file ("the settings of PATH").
    place: str = ""


def make_subject(
    kind: Target, key: str, label: str, revision: int | None = None, repo_url: str | None = None
) -> Subject:
    """`Subject(...)` with its slots filled directly (as `finding_record`): a nightly reads
    1,000s back from the evaluation state, one per change step."""
    made: Subject = object.__new__(Subject)
    set_kind, set_key, set_label, set_revision, set_repo = _SUBJECT_SLOTS
    set_kind(made, kind)
    set_key(made, key)
    set_label(made, label)
    set_revision(made, revision)
    set_repo(made, repo_url)
    return made


def make_attribution(
    revision: int, updated_at: datetime, author_email: str, author_name: str = "", place: str = ""
) -> Attribution:
    """`Attribution(...)` with its slots filled directly (see `make_subject`)."""
    made: Attribution = object.__new__(Attribution)
    set_revision, set_at, set_email, set_name, set_place = _ATTRIBUTION_SLOTS
    set_revision(made, revision)
    set_at(made, updated_at)
    set_email(made, author_email)
    set_name(made, author_name)
    set_place(made, place)
    return made


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
    #: (rule, subject) as the file writes them, when `rule_id`/`subject` are the text shown
    #: (a secret in them as its marker); matching goes by these. None: as shown.
    written: tuple[str, str] | None = None

    @property
    def match_rule(self) -> str:
        """The rule id this waiver matches (as written)."""
        return self.written[0] if self.written else self.rule_id

    @property
    def match_subject(self) -> str:
        """The subject pattern this waiver matches (as written)."""
        return self.written[1] if self.written else self.subject


@dataclass(frozen=True, slots=True)
class FindingRecord:
    """A finding as remembered between runs (stored per run; compared by the next one)."""

    fingerprint: str
    rule_id: str
    subject_key: str
    status: str
    severity: str
    first_seen_run: str


_RECORD_SLOTS = tuple(
    getattr(FindingRecord, name).__set__
    for name in ("fingerprint", "rule_id", "subject_key", "status", "severity", "first_seen_run")
)


_SUBJECT_SLOTS = tuple(
    getattr(Subject, name).__set__ for name in ("kind", "key", "label", "revision", "repo_url")
)
_ATTRIBUTION_SLOTS = tuple(
    getattr(Attribution, name).__set__
    for name in ("revision", "updated_at", "author_email", "author_name", "place")
)


def finding_record(
    fingerprint: str, rule_id: str, subject_key: str, status: str, severity: str,
    first_seen_run: str,
) -> FindingRecord:  # fmt: skip
    """`FindingRecord(...)` with its slots filled directly: a nightly reads the previous run's
    thousands of records and writes as many, and the frozen class's `__init__` (a call of
    `object.__setattr__` per field) was about half of that."""
    record: FindingRecord = object.__new__(FindingRecord)
    set_fp, set_rule, set_subject, set_status, set_severity, set_first = _RECORD_SLOTS
    set_fp(record, fingerprint)
    set_rule(record, rule_id)
    set_subject(record, subject_key)
    set_status(record, status)
    set_severity(record, severity)
    set_first(record, first_seen_run)
    return record


@dataclass(frozen=True)
class DataWarning:
    """An odd value in API data the audit can do without: the item is kept, the value read as
    absent (or in the other accepted format it came in) and the oddity shown in every report."""

    path: str  # the JSON path in the page, `$.changes[3].user`
    problem: str  # `expected object, got null; read as absent`
    item: str  # `revision 42`, `report 5f0c…`
    where: str = ""  # `GET https://…/history page 2`
    count: int = 1  # items with the same problem in the same field (the first one is named)

    def describe(self) -> str:
        """One line: path, problem, the item and where it came from."""
        more = f"; {self.count - 1} more items like it" if self.count > 1 else ""
        where = f", {self.where}" if self.where else ""  # (T101 #4: `(the kept pages, )`)
        return f"{self.path}: {self.problem} ({self.item}{where}{more})"
