"""Sync: pulls what is new from the service into the store, in one all-or-nothing transaction.

Takes an open `Store` and a `PlatformClient`, gives a `SyncSummary`. History pages arrive newest
first and are written as they arrive (memory stays flat); paging stops at the first page that
holds a revision stored by an earlier sync. Readiness reports stop at the first page made only
of known report ids. On any error nothing is committed and the message says what was fetched.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from auditor.errors import ApiError, AuditorError, DataError
from auditor.fetch.client import HISTORY_PATH, REPORTS_PATH, PlatformClient
from auditor.fetch.decode import encode_report, encode_revision
from auditor.models import Revision
from auditor.store.database import Ingested, IntegrityIssue, Store

Progress = Callable[[str], None]


@dataclass(frozen=True)
class SyncSummary:
    """What one sync fetched and what the store holds afterwards."""

    revisions_new: int
    revisions_total: int
    reports_new: int
    reports_total: int
    pages: int
    integrity_issues: tuple[IntegrityIssue, ...]
    latest: Revision | None = None
    repositories: int = 0
    reports_skipped: bool = False


@dataclass
class _Tally:
    history_pages: int = 0
    revisions: int = 0
    revisions_new: int = 0
    report_pages: int = 0
    reports: int = 0
    reports_new: int = 0
    issues: list[IntegrityIssue] = field(default_factory=list)

    def describe(self) -> str:
        return (
            f"fetched {self.history_pages} history pages / {self.revisions} revisions and "
            f"{self.report_pages} report pages / {self.reports} reports"
        )

    def count(self, outcome: Ingested, what: str) -> None:
        if outcome.status == "conflict" and not outcome.known_before:
            raise DataError(
                f"the API sent {what} twice in one listing with different content; "
                "cannot tell which is true"
            )
        if outcome.issue is not None:
            self.issues.append(outcome.issue)


def _utc_now() -> datetime:
    return datetime.now(UTC)


def _sync_history(
    store: Store,
    client: PlatformClient,
    org: str,
    sync_id: int,
    now: datetime,
    tally: _Tally,
    progress: Progress,
) -> None:
    for page in client.iter_history_pages():
        tally.history_pages += 1
        reached_known = False
        for index, raw in enumerate(page):
            where = f"$.changes[{index}]"
            try:
                rev, body = encode_revision(raw, store.ingest_redactor(), org, where)
            except AuditorError as exc:
                url = f"GET {client.base_url}{HISTORY_PATH} page {tally.history_pages}"
                raise type(exc)(f"{exc} ({url})") from None
            outcome = store.ingest_revision(rev, sync_id, now, settings_json=body)
            tally.revisions += 1
            tally.revisions_new += outcome.status == "new"
            tally.count(outcome, f"revision {rev.revision} (history page {tally.history_pages})")
            reached_known = reached_known or outcome.known_before
        progress(f"history: page {tally.history_pages}, {tally.revisions_new} new revisions")
        if reached_known:
            return


def _sync_reports(
    store: Store,
    client: PlatformClient,
    sync_id: int,
    now: datetime,
    tally: _Tally,
    progress: Progress,
) -> None:
    for page in client.iter_reports_pages():
        tally.report_pages += 1
        all_known = True
        for index, raw in enumerate(page):
            try:
                where = f"$.reports[{index}]"
                report, body = encode_report(raw, store.ingest_redactor(), where)
            except AuditorError as exc:
                url = f"GET {client.app_url}{REPORTS_PATH} page {tally.report_pages}"
                raise type(exc)(f"{exc} ({url})") from None
            outcome = store.ingest_report(report, sync_id, now, data_json=body)
            tally.reports += 1
            tally.reports_new += outcome.status == "new"
            tally.count(outcome, f"report {report.report_id} (readiness page {tally.report_pages})")
            all_known = all_known and outcome.known_before
        progress(f"readiness: page {tally.report_pages}, {tally.reports_new} new reports")
        if all_known:
            return


def _failed(exc: AuditorError, tally: _Tally, store: Store) -> AuditorError:
    message = store.redactor.redact_text(
        f"sync failed, nothing saved ({tally.describe()} before): {exc}"
    )
    if isinstance(exc, ApiError):
        return ApiError(message, url=exc.url, status=exc.status)
    return type(exc)(message)


def sync(
    store: Store,
    client: PlatformClient,
    *,
    progress: Progress | None = None,
    clock: Callable[[], datetime] | None = None,
    org: str = "default",
) -> SyncSummary:
    """Fetch new revisions and reports into the store; all or nothing."""
    now = (clock or _utc_now)()
    say = progress or (lambda _m: None)
    tally = _Tally()
    try:
        with store.transaction():
            store.bind_org(org)
            sync_id = store.begin_sync(now, client.base_url)
            _sync_history(store, client, org, sync_id, now, tally, say)
            _sync_reports(store, client, sync_id, now, tally, say)
            store.finish_sync(
                sync_id,
                (clock or _utc_now)(),
                revisions_new=tally.revisions_new,
                reports_new=tally.reports_new,
                pages=tally.history_pages + tally.report_pages,
            )
    except AuditorError as exc:
        raise _failed(exc, tally, store) from None
    return SyncSummary(
        revisions_new=tally.revisions_new,
        revisions_total=store.count_revisions(),
        reports_new=tally.reports_new,
        reports_total=store.count_reports(),
        pages=tally.history_pages + tally.report_pages,
        integrity_issues=tuple(tally.issues),
        latest=store.latest_revision(),
        repositories=store.count_repositories(),
        reports_skipped=not client.has_reports,
    )


def format_summary(summary: SyncSummary, base_url: str) -> str:
    """The one-paragraph summary `auditor sync` prints."""
    parts = [
        f"Synced {base_url}: {summary.revisions_total} revisions ({summary.revisions_new} new)"
    ]
    latest = summary.latest
    if latest is not None:
        who = latest.user.email or latest.user.name or latest.user.id
        parts[0] += f", latest rev {latest.revision} at {latest.updated_at:%Y-%m-%d} by {who}"
    if summary.reports_skipped:
        parts.append("readiness reports skipped (no app URL configured)")
    else:
        parts.append(
            f"{summary.reports_total} readiness reports ({summary.reports_new} new) for "
            f"{summary.repositories} repositories"
        )
    issues = summary.integrity_issues
    noun = "integrity issue" if len(issues) == 1 else "integrity issues"
    text = "; ".join(parts) + f"; {len(issues)} {noun}."
    if issues:
        text += " " + " ".join(f"{issue.describe()}." for issue in issues)
    return text
