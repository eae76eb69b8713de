"""The state file's schema, its records and the conversion of models to and from rows.

Takes `Revision` / `ReadinessReport` models and SQLite rows, gives rows and models back. It
knows nothing of the API's field names: `auditor.fetch.decode` turns API items into models.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from auditor.common.jsonutil import canonical, loads
from auditor.models import FindingRecord, ReadinessReport, Revision, User

SCHEMA_VERSION = 5
# Forward-only migrations: version N's DDL takes a store from version N-1 to N (run in one
# transaction on opening for writing). `DDL` below is always the whole current schema, for new
# stores. Both are written for SQLite; `auditor.store.dialect` adapts them to PostgreSQL.

DDL = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS revisions (
    revision INTEGER PRIMARY KEY, org TEXT NOT NULL, updated_at TEXT NOT NULL,
    user_id TEXT NOT NULL, user_email TEXT NOT NULL, user_name TEXT NOT NULL,
    settings BLOB NOT NULL, content_hash TEXT NOT NULL, sync_id INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS revisions_by_time ON revisions (updated_at, revision);
CREATE TABLE IF NOT EXISTS reports (
    report_id TEXT PRIMARY KEY, repo_url TEXT NOT NULL, created_at TEXT NOT NULL,
    data BLOB NOT NULL, content_hash TEXT NOT NULL, sync_id INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS reports_by_repo ON reports (repo_url, created_at, report_id);
CREATE TABLE IF NOT EXISTS integrity_issues (
    id INTEGER PRIMARY KEY, revision INTEGER, report_id TEXT, stored_hash TEXT NOT NULL,
    seen_hash TEXT NOT NULL, seen_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS syncs (
    id INTEGER PRIMARY KEY, started TEXT NOT NULL, finished TEXT, base_url TEXT NOT NULL,
    revisions_new INTEGER NOT NULL DEFAULT 0, reports_new INTEGER NOT NULL DEFAULT 0,
    pages INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY, started TEXT NOT NULL, finished TEXT, complete INTEGER NOT NULL,
    tool_version TEXT NOT NULL, policy_hashes TEXT NOT NULL, scope TEXT NOT NULL DEFAULT '');
CREATE TABLE IF NOT EXISTS findings (
    run_id TEXT NOT NULL REFERENCES runs (run_id), fingerprint TEXT NOT NULL,
    rule_id TEXT NOT NULL, subject_key TEXT NOT NULL, status TEXT NOT NULL,
    severity TEXT NOT NULL, first_seen_run TEXT NOT NULL, PRIMARY KEY (run_id, fingerprint));
CREATE TABLE IF NOT EXISTS secret_memory (fingerprint TEXT PRIMARY KEY, length INTEGER NOT NULL);
"""
# Usage analytics per (date, series), redacted like everything else (`auditor.store.analytics`).
# Schema version 2: a store made by version 1 gains it when first opened for writing.
ANALYTICS_DDL = """
CREATE TABLE IF NOT EXISTS analytics_days (
    day TEXT NOT NULL, series TEXT NOT NULL, data BLOB NOT NULL, content_hash TEXT NOT NULL,
    sync_id INTEGER NOT NULL, PRIMARY KEY (day, series));
"""
# Keyed fingerprints of every secret ever found (never the value): see `auditor.redact.memory`.
# Created on first use too, so a file made before the table existed gains it on its next sync.
SECRET_MEMORY_DDL = (
    "CREATE TABLE IF NOT EXISTS secret_memory (fingerprint TEXT PRIMARY KEY, "
    "length INTEGER NOT NULL)"
)

# Incremental evaluation state per rule key (see `auditor.store.evalstate`); schema version 3
# (a store made by an earlier version gains it when first opened for writing).
EVAL_STATE_DDL = (
    "CREATE TABLE IF NOT EXISTS eval_state (rule_key TEXT PRIMARY KEY, "
    "revision INTEGER NOT NULL, history TEXT NOT NULL, data BLOB NOT NULL)"
)
# Per stored report, a keyed fingerprint of the raw item it was redacted from (never a plain
# hash of raw content) and the content hash that redaction gave: a later sync that receives the
# very same item while the stored row is still that one recognises it without redacting it
# again. Only a cache: created on first use; a missing or stale row means "redact and compare".
REPORT_SEEN_DDL = (
    "CREATE TABLE IF NOT EXISTS report_seen (report_id TEXT PRIMARY KEY, "
    "fingerprint TEXT NOT NULL, content_hash TEXT NOT NULL)"
)
REPORT_SEEN_INDEX = (
    "CREATE INDEX IF NOT EXISTS report_seen_by_fingerprint ON report_seen (fingerprint)"
)
# Every distinct piece of text the stored rows hold (`auditor.store.scrubindex`), searched for a
# secret new to the file instead of the rows; schema version 4. A store made by an earlier
# version gains the table when first opened for writing and fills it then (one read of its
# rows); an older auditor refuses a version-4 store, so none writes rows the index misses.
SCRUB_INDEX_DDL = (
    "CREATE TABLE IF NOT EXISTS scrub_index (digest BLOB PRIMARY KEY, piece BLOB NOT NULL) "
    "WITHOUT ROWID"
)
# Each revision's number and content hash, read without its settings (`Store.revision_hashes`,
# every run): the hash sits after the settings in the row, so reading it from the table walks
# every row's overflow pages (93 MB at 10,000 revisions, ~50 ms); from this index, ~10 ms.
# Schema version 4 too.
REVISION_HASHES_INDEX = (
    "CREATE INDEX IF NOT EXISTS revisions_hashes ON revisions (revision, content_hash)"
)
DDL += ANALYTICS_DDL + EVAL_STATE_DDL + ";\n" + SCRUB_INDEX_DDL + ";\n"
DDL += REVISION_HASHES_INDEX + ";\n"
# The history pages a sync that did not finish kept (`Store.stage_page`), with the `meta` record
# `history_resume` that says where the listing goes on: the `revisions` columns, redacted as
# they are, and never read as history (the next sync checks them against the service and moves
# them into `revisions`, or drops them). Schema version 5.
HISTORY_STAGED_DDL = """
CREATE TABLE IF NOT EXISTS history_staged (
    revision INTEGER PRIMARY KEY, org TEXT NOT NULL, updated_at TEXT NOT NULL,
    user_id TEXT NOT NULL, user_email TEXT NOT NULL, user_name TEXT NOT NULL,
    settings BLOB NOT NULL, content_hash TEXT NOT NULL, sync_id INTEGER NOT NULL);
"""
DDL += HISTORY_STAGED_DDL
MIGRATIONS: dict[int, str] = {
    2: ANALYTICS_DDL,
    3: EVAL_STATE_DDL,
    4: SCRUB_INDEX_DDL + ";\n" + REVISION_HASHES_INDEX,
    5: HISTORY_STAGED_DDL,
}


@dataclass(frozen=True)
class IntegrityIssue:
    """Content the API sent for a revision (or report) that differs from what was stored."""

    revision: int | None
    stored_hash: str
    seen_hash: str
    seen_at: datetime
    report_id: str | None = None
    repo_url: str | None = None  # a report's repository, when the report is stored

    def describe(self) -> str:
        """One line for people: which item, and both hashes."""
        what = (
            f"revision {self.revision}"
            if self.report_id is None
            else (f"readiness report {self.report_id}")
        )
        return (
            f"{what} changed after it was stored (stored sha256 {self.stored_hash[:12]}, "
            f"API now sends {self.seen_hash[:12]}); the stored copy was kept"
        )


@dataclass(frozen=True)
class SyncRecord:
    """One finished sync."""

    started: datetime
    finished: datetime | None
    base_url: str
    revisions_new: int
    reports_new: int
    pages: int


@dataclass(frozen=True)
class RunRecord:
    """One `auditor run` and its findings."""

    run_id: str
    started: datetime
    finished: datetime | None
    complete: bool
    findings: tuple[FindingRecord, ...]
    tool_version: str = ""  # the auditor release that made the run


def to_text(when: datetime) -> str:
    """Fixed-width UTC text, so SQL string order is time order."""
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.astimezone(UTC).isoformat(timespec="microseconds")


def from_text(text: str | None) -> datetime | None:
    """Inverse of `to_text`."""
    return datetime.fromisoformat(text) if text else None


def revision_row(
    rev: Revision, sync_id: int, settings_json: bytes | None = None
) -> tuple[Any, ...]:
    """The `revisions` row for a revision (`settings_json`: its canonical settings, if known)."""
    return (
        rev.revision,
        rev.org,
        to_text(rev.updated_at),
        rev.user.id,
        rev.user.email,
        rev.user.name,
        canonical(rev.settings) if settings_json is None else settings_json,
        rev.content_hash,
        sync_id,
    )


def report_row(
    report: ReadinessReport, sync_id: int, data_json: bytes | None = None
) -> tuple[Any, ...]:
    """The `reports` row for a report (`data_json`: its canonical data, if known)."""
    return (
        report.report_id,
        report.repo_url,
        to_text(report.created_at),
        canonical(report.data) if data_json is None else data_json,
        report.content_hash,
        sync_id,
    )


REVISION_COLUMNS = (
    "revision, org, updated_at, user_id, user_email, user_name, settings, content_hash"
)
REPORT_COLUMNS = "report_id, repo_url, created_at, data, content_hash"
# `insert` in lower case: the store reads these statements' `rowcount`, and CPython 3.11's
# sqlite3 counts it only for a statement it takes for DML, by comparing the first word with
# "insert" through the C library's `tolower()`. Under a Turkish locale (tr_TR, az_AZ) that does
# not lower "I" to "i": an upper-case INSERT had rowcount -1 and a first sync failed with
# "101 of 100 revisions written as new were stored already" (tests/test_locale.py). UPDATE and
# DELETE have no "I". Write every statement whose rowcount is read this way.
INSERT_SQL = {
    "revisions": "insert INTO revisions (revision, org, updated_at, user_id, user_email, "
    "user_name, settings, content_hash, sync_id) VALUES (?,?,?,?,?,?,?,?,?)",
    "reports": "insert INTO reports (report_id, repo_url, created_at, data, content_hash, "
    "sync_id) VALUES (?, ?, ?, ?, ?, ?)",
    "history_staged": "insert INTO history_staged (revision, org, updated_at, user_id, "
    "user_email, user_name, settings, content_hash, sync_id) VALUES (?,?,?,?,?,?,?,?,?)",
}
KEY_COLUMN = {"revisions": "revision", "reports": "report_id", "history_staged": "revision"}


def _checked(blob: Any, digest: Any, what: str) -> Any:
    """`blob` if it still hashes to the SHA-256 stored beside it (ValueError otherwise: the row
    was changed after it was stored, and reports and bundles must not cite a hash it lost)."""
    raw = blob.encode("utf-8") if isinstance(blob, str) else bytes(blob)
    if hashlib.sha256(raw).hexdigest() != digest:
        raise ValueError(
            f"{what} do not match their stored SHA-256 {str(digest)[:12]}…: "
            "it was changed after it was stored"
        )
    return blob


def revision_from_row(row: sqlite3.Row | tuple[Any, ...]) -> Revision:
    """Inverse of `revision_row` (columns as in REVISION_COLUMNS); ValueError if the settings no
    longer hash to the stored content hash."""
    number, org, updated, uid, email, name, settings, digest = row
    _checked(settings, digest, f"the settings of revision {number}")
    return Revision(
        revision=int(number),
        updated_at=datetime.fromisoformat(updated),
        user=User(id=uid, email=email, name=name),
        settings=loads(settings),
        content_hash=digest,
        org=org,
    )


def report_from_row(row: sqlite3.Row | tuple[Any, ...]) -> ReadinessReport:
    """A `ReadinessReport` from a `reports` row (columns as in REPORT_COLUMNS)."""
    report_id, repo_url, created, data, digest = row
    _checked(data, digest, f"the data of readiness report {report_id}")
    return ReadinessReport(
        report_id=report_id,
        repo_url=repo_url,
        created_at=datetime.fromisoformat(created),
        data=loads(data),
        content_hash=digest,
    )


def issue_from_row(row: Iterable[Any]) -> IntegrityIssue:
    """An `IntegrityIssue` from an `integrity_issues` row (and the report's `repo_url`)."""
    revision, report_id, stored, seen, seen_at, *repo = row
    when = datetime.fromisoformat(seen_at)
    return IntegrityIssue(revision, stored, seen, when, report_id, repo[0] if repo else None)
