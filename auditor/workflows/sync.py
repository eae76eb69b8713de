"""Sync: pulls what is new from the service into the store, in one all-or-nothing transaction.

Takes an open `Store` and a `PlatformClient` (or the `SyncOptions` to build one), gives a
`SyncSummary`. One ingest loop walks each listing: pages are decoded (`auditor.fetch.decode`)
and written as they arrive, so memory stays flat. The history (newest first) stops after the
first page that reached a revision stored by an earlier sync; the readiness reports after the
first page made only of known report ids, while the listing has been seen newest first (the
spec states no order: otherwise every page is read), and not when its last whole read is a
week old (`WHOLE_READ_DAYS`: a report listed late with an earlier time is found then).

The history pages made only of new revisions are kept as they arrive, each in a short
transaction of its own (`Store.stage_page`), never as history: the sync's own transaction
moves them into `revisions` (`Store.commit_staged`) and does the rest. On an error that
transaction is rolled back, the pages kept stay kept, and the next sync goes on from them
(`_Kept`): it reads the listing's head until it meets them (compared item by item), then asks
for the page after them. Any disagreement between the kept pages and the service drops them
with a data-quality warning, and the sync reads from the start, never mixing two histories.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from auditor.common.collector import few_collections
from auditor.common.heap import keep_freed_memory
from auditor.common.interrupts import check_cancelled, held
from auditor.errors import ApiError, AuditorError, DataError
from auditor.fetch import (
    HISTORY,
    READINESS,
    DataQuality,
    Item,
    Listing,
    Network,
    Page,
    PlatformClient,
    check_report,
    encode_report,
    encode_revision_parts,
)
from auditor.fetch.paging import Pages
from auditor.models import DataWarning, Revision
from auditor.redact.plain import author_of, shown_author
from auditor.store import Ingested, IntegrityIssue, Store
from auditor.store.schema import revision_row
from auditor.workflows.usage import UsageSync, sync_usage

Progress = Callable[[str], None]

_HISTORY_LABEL = "history"
_READINESS_LABEL = "readiness"


@dataclass(frozen=True)
class SyncOptions:
    """Where the service is and how to read it: what a sync takes from the configuration."""

    base_url: str
    app_url: str | None
    token: str = field(repr=False)
    org: str = "default"
    timeout: float = 30.0
    deadline: float = 300.0
    max_pages: int = 10000
    page_size: int = 100
    usage_days: int | None = 30  # the usage analytics window; None: skip (--no-usage)
    network: Network | None = None  # the proxy and CA bundle (None: straight, default CAs)


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
    data_quality: tuple[DataWarning, ...] = ()  # odd values kept and read as absent
    usage: UsageSync = field(default_factory=lambda: UsageSync("skipped"))  # usage analytics
    # The readiness pages read on although one held only known reports, because the listing
    # was not newest first (0: it stopped early, or it never had such a page).
    reports_read_on: int = 0
    # The readiness listing, newest first, was read to its end because its last whole read
    # was `WHOLE_READ_DAYS` old or more (or none was recorded): a report the service listed
    # late with an earlier `createdAt`, which the early stop misses, is found then.
    reports_read_whole: bool = False


@dataclass
class _Count:
    pages: int = 0
    items: int = 0
    new: int = 0


#: The falls of `createdAt` a page of known readiness reports needs to end a sync early: a page
#: in another order runs newest first that often by chance once in 9! (362,880) pages.
_FALLS = 8
#: The fewest reports a page needs to end a sync early: a service of smaller pages has every
#: page read (README), whatever its pages' falls (a page of 9 can fall 8 times).
_STOP_PAGE = 10
#: A sync reads the whole readiness listing, even newest first, when its last whole read is
#: this many days old or more: the early stop cannot see a report the service listed late
#: with an earlier `createdAt` than the known reports at the end of page 1 (made on a client,
#: uploaded later), and this bounds how long such a report stays unsynced. A whole read of
#: 1,700 reports is 18 pages, once a week; the nightly in between reads one.
WHOLE_READ_DAYS = 7


@dataclass
class _ReportOrder:
    """Whether the readiness listing is newest first: only then does a page of known reports
    mean that the rest are known too. The spec states no order; a service may list oldest
    first, or by id. Learned from a whole read of the listing (`createdAt` never rising, and
    falling somewhere: a first page of one report, or of reports of one time, proves nothing)
    and kept in the state file (`learned`); a sync stops early only when a whole read showed
    it newest first and its own pages have not contradicted it since. (A page can run newest
    first in a listing that does not: one ordered by repository, newest first within each;
    only a whole read tells.)"""

    learned: str | None = None  # `newest` / `other`, as the state file kept it (None: never)
    whole_due: bool = False  # the last whole read is `WHOLE_READ_DAYS` old (or unknown)
    # whole_due on a listing already learned newest first when the sync began (`learned`
    # changes as it ends): read whole for the week, not to learn its order
    weekly: bool = False
    stopped: bool = False  # this sync stopped early
    last: datetime | None = None
    newest_first: bool = True  # no rise seen in this sync's pages
    falls: bool = False  # a fall seen in this sync's pages
    page_falls: int = 0  # falls seen since the page before this one was judged
    read_on: int = 0  # pages of known reports after which the sync read on (not newest first)

    def see(self, created: datetime) -> None:
        if self.last is not None:
            self.newest_first = self.newest_first and created <= self.last
            self.falls = self.falls or created < self.last
            self.page_falls += created < self.last
        self.last = created

    def stops(self, items: int) -> bool:
        """A page of `items` known reports ends the listing: the listing is known to be newest
        first (a whole read showed it), this sync's pages have not risen, and this page falls
        itself, at half its steps and `_FALLS` times at least, and holds `_STOP_PAGE` reports at
        least (a service in another order whose small page happens to run newest first, a page
        of one report or of reports of one time, or of one new report before reports of one
        time, is read on); and not when the last whole read is `WHOLE_READ_DAYS` old."""
        falls, self.page_falls = self.page_falls, 0
        self.stopped = (
            self.learned == "newest"
            and not self.whole_due
            and self.newest_first
            and items >= _STOP_PAGE
            and falls >= max(_FALLS, items // 2)
        )
        return self.stopped

    def learn(self, store: Store, *, whole: bool) -> None:
        """Keep what this sync showed of the order: a rise is proof of another order, a whole
        read with falls and no rise proof of newest first; anything else leaves it as it was."""
        order = "other" if not self.newest_first else "newest" if whole and self.falls else None
        if order is not None and order != self.learned:
            store.set_report_order(order)
            self.learned = order


@dataclass
class _Tally:
    counts: defaultdict[str, _Count] = field(default_factory=lambda: defaultdict(_Count))
    issues: list[IntegrityIssue] = field(default_factory=list)
    quality: DataQuality = field(default_factory=DataQuality)
    order: _ReportOrder = field(default_factory=_ReportOrder)

    @property
    def history(self) -> _Count:
        return self.counts[_HISTORY_LABEL]

    @property
    def reports(self) -> _Count:
        return self.counts[_READINESS_LABEL]

    @property
    def pages(self) -> int:
        return self.history.pages + self.reports.pages

    def describe(self) -> str:
        return (
            f"fetched {self.history.pages} history pages / {self.history.items} revisions and "
            f"{self.reports.pages} report pages / {self.reports.items} reports"
        )

    def count(self, outcome: Ingested, what: str, where: str, page: Page) -> None:
        """Count `outcome` of the item `what` at JSON path `where` on `page`: an item sent
        twice in this listing with other content is an error naming both, as any page's is."""
        if outcome.status == "conflict" and not outcome.known_before:
            raise DataError(
                f"{where}: the API sent {what} twice in one listing with different content; "
                f"cannot tell which is true ({page.where})"
            )
        if outcome.issue is not None:
            self.issues.append(outcome.issue)


class _NewRows:
    """A page's new revisions, written together when the page is done (one statement, and the
    lock-free stretches of SQLite's work come together, after the next page has arrived, rather
    than handing the interpreter lock to the thread that fetches it, a hundred times a page).

    Only a revision that is surely new waits here: newer than every revision stored before this
    sync, and not sent before in it. Anything else is ingested at once, after the rows waiting
    here are written (`write`), so every comparison sees every row."""

    def __init__(self, store: Store, top: int | None) -> None:
        self._store = store
        self.top = top  # the newest revision stored before this sync (None: none stored)
        self._seen: set[int] = set()  # the revision numbers of this sync
        self.kept: set[int] = set()  # the revisions kept by an earlier sync that did not finish
        self._rows: list[tuple[Any, ...]] = []
        self._parts: list[Sequence[bytes] | None] = []  # each row's settings parts, if known
        self._lowest: int | None = None  # the oldest revision the listing has sent so far
        self._page = 0  # the page `_items` and `_repeats` count
        self._items = self._repeats = 0
        #: the stored revisions read again and compared with the stored ones (oldest, newest)
        self.rechecked: tuple[int, int] | None = None

    def rechecked_one(self, number: int) -> None:
        """Count revision `number`, stored before this sync, as read again and compared."""
        low, high = self.rechecked or (number, number)
        self.rechecked = (min(low, number), max(high, number))

    def check_order(self, number: int, where: str, page: Page) -> str | None:
        """Refuse a history that is not newest first (the sync stops at the first stored
        revision, so an older page followed by a newer one would drop revisions unseen) or
        whose paging makes no progress (a page of revisions already sent, and yet another
        page). Gives the went-back warning when the listing's newest revision is older than
        the newest stored."""
        if page.number != self._page:
            if self._items and self._repeats == self._items:
                raise DataError(
                    f"$.changes: history page {self._page} only repeated revisions sent on "
                    f"earlier pages, and the listing went on: paging makes no progress "
                    f"({page.where})"
                )
            self._page, self._items, self._repeats = page.number, 0, 0
        self._items += 1
        if number in self._seen:
            self._repeats += 1  # a page overlapping the one before: read again, compared
        elif number in self.kept:
            pass  # a kept revision met again (compared with its kept copy: `_History`)
        elif self._lowest is not None and number > self._lowest:
            raise DataError(
                f"{where}.revision: {number} after revision {self._lowest}: the "
                f"history is not newest first, so a sync cannot tell what it has ({page.where})"
            )
        first, lowest = self._lowest is None, self._lowest
        self._lowest = number if lowest is None else min(lowest, number)
        if first and self.top is not None and number < self.top:
            return (
                f"the service's newest revision is {number}, but revision {self.top} is stored: "
                "its history went back; the stored revisions are kept and audited"
            )
        return None

    def take(
        self, rev: Revision, sync_id: int, body: bytes, parts: Sequence[bytes] | None = None
    ) -> bool:
        """Keep `rev` for `write` if it is surely new (True); False: ingest it now. `parts`:
        what `body` was put together from, if it was (`encode_revision_parts`)."""
        number = rev.revision
        fresh = (self.top is None or number > self.top) and number not in self._seen
        fresh = fresh and number not in self.kept
        self._seen.add(number)
        if fresh:
            self._rows.append(revision_row(rev, sync_id, body))
            self._parts.append(parts)
        return fresh

    def held(self) -> tuple[list[tuple[Any, ...]], list[Sequence[bytes] | None]]:
        """Take the rows waiting (to keep them: `Store.stage_page`), oldest first."""
        rows, self._rows = self._rows, []
        parts, self._parts = self._parts, []
        rows.reverse()
        parts.reverse()
        return rows, parts

    @property
    def lowest(self) -> int | None:
        """The oldest revision the listing has sent so far in this sync."""
        return self._lowest

    def new_page_run(self) -> None:
        """The next page is the first of a listing read on from a kept cursor: the pages
        before it (the head, up to the kept pages) are not judged for progress with it."""
        self._page, self._items, self._repeats = 0, 0, 0

    def waiting(self) -> int:
        """How many rows wait to be written or kept."""
        return len(self._rows)

    def forget_from(self, waiting: int) -> None:
        """Forget the rows taken since `waiting` rows waited (a page that failed midway)."""
        del self._rows[waiting:], self._parts[waiting:]

    def sent(self, number: int) -> bool:
        """Whether revision `number` was sent earlier in this sync."""
        return number in self._seen

    def write(self) -> None:
        """Insert the rows kept so far."""
        if self._rows:
            rows, self._rows = self._rows, []
            parts, self._parts = self._parts, []
            # Oldest first (a page comes newest first): SQLite then fills its pages as it does
            # for rows that come in order, and a state file of 10,000 revisions is 105 MB, not
            # 114 MB (the rows are the same).
            rows.reverse()
            parts.reverse()
            self._store.insert_new_revisions(rows, parts)


@dataclass(frozen=True)
class _Run:
    """One sync in progress: where items go, under which sync record, and what was seen."""

    store: Store
    sync_id: int
    now: datetime
    org: str
    tally: _Tally
    progress: Progress
    new_rows: _NewRows  # the history page's new revisions, written together


_NEW = Ingested("new", known_before=False)


def _on(page: Page, exc: AuditorError) -> AuditorError:
    """A decoding error names the request and the page the item came from."""
    return type(exc)(f"{exc} ({page.where})")


def _once_on_page(run: _Run, page: Page, here: set[str], name: str, where: str) -> None:
    """A data-quality warning for an item `page` sent again alike (`name`, at `where`), read
    once: one sent again with other content already failed the sync (`_Tally.count`). Between
    pages that is an overlap (offset paging); within one page a service defect, which may have
    put it where another item belonged."""
    if name in here:
        problem = "sent twice on one page; read once"
        run.tally.quality.on(page)(DataWarning(where, problem, name))
    else:
        here.add(name)


def _decode_revision(
    run: _Run, raw: Item, where: str, page: Page
) -> tuple[Revision, bytes, Sequence[bytes] | None, str]:
    """Decode and redact a history item, and check it against the listing's order."""
    try:
        warn = run.tally.quality.on(page)
        redactor = run.store.ingest_redactor()
        rev, body, parts = encode_revision_parts(raw, redactor, run.org, where, warn)
    except AuditorError as exc:
        raise _on(page, exc) from None
    name = f"revision {rev.revision}"
    went_back = run.new_rows.check_order(rev.revision, where, page)
    if went_back is not None:
        warn(DataWarning(f"{where}.revision", went_back, name))
    return rev, body, parts, name


def _ingest_revision(run: _Run, raw: Item, where: str, page: Page) -> tuple[Ingested, str]:
    rev, body, parts, name = _decode_revision(run, raw, where, page)
    if run.new_rows.take(rev, run.sync_id, body, parts):
        return _NEW, name
    run.new_rows.write()  # the store is read below: every row kept must be in it
    outcome = run.store.ingest_revision(rev, run.sync_id, run.now, settings_json=body)
    if outcome.known_before:  # a stored revision compared with the service's (integrity)
        run.new_rows.rechecked_one(rev.revision)
    return outcome, name


def _ingest_report(run: _Run, raw: Item, where: str, page: Page) -> tuple[Ingested, str]:
    # The very item stored before (same raw content under a keyed fingerprint, stored row
    # unchanged since) is recognised without redacting it again: the nightly sync re-reads a
    # page of reports it has. It is still read as before, so its warnings and errors stay.
    fingerprint = run.store.report_fingerprint(raw)
    known = run.store.known_report(fingerprint, run.sync_id)
    try:
        if known is not None:
            _item, created = check_report(raw, where, run.tally.quality.on(page))
            run.tally.order.see(created)
            return known[1], f"report {known[0]}"
        report, body = encode_report(
            raw, run.store.ingest_redactor(), where, run.tally.quality.on(page)
        )
    except AuditorError as exc:
        raise _on(page, exc) from None
    run.tally.order.see(report.created_at)
    outcome = run.store.ingest_report(
        report, run.sync_id, run.now, data_json=body, fingerprint=fingerprint
    )
    return outcome, f"report {report.report_id}"


@dataclass(frozen=True)
class _Feed:
    """How one listing is ingested: its label in messages, its noun, and when to stop."""

    listing: Listing
    label: str  # "history page 2", "history: page 2, …"
    plural: str  # "… 3 new revisions"
    ingest: Callable[[_Run, Item, str, Page], tuple[Ingested, str]]  # gives the outcome, a name
    name: Callable[[Item], str]  # names a raw item in a data-quality warning
    # given the run and each item's `known_before`: stop after the page?
    stop: Callable[[_Run, list[bool]], bool]
    # True only when the listing surely goes on after this page (then the next one is fetched
    # while this one is written); False when unsure, so no request is sent that a stop wastes.
    goes_on: Callable[[_Run, Page], bool]
    # what an empty first page means (the history's went-back warning), if anything
    on_empty: Callable[[_Run, Page], None] | None = None
    # what the listing's end tells, given whether it was read whole (no early stop)
    on_end: Callable[[_Run, bool], None] | None = None


def _empty_history(run: _Run, page: Page) -> None:
    """An empty history while revisions are stored is the went-back warning too: a wrong
    organization or a stub in front of the service must not pass for a quiet night."""
    top = run.new_rows.top
    if top is not None:
        run.tally.quality.on(page)(
            DataWarning(
                "$.changes",
                f"the service's history is empty, but revision {top} is stored: its history "
                "went back; the stored revisions are kept and audited",
                "the page",
            )
        )


# Newest first: a page that reached a stored revision reached everything older too.
_HISTORY_FEED = _Feed(
    HISTORY,
    _HISTORY_LABEL,
    "revisions",
    _ingest_revision,
    lambda i: f"revision {i['revision']}",
    lambda _run, known: any(known),
    lambda run, page: _all_newer(page.items, run.new_rows.top),
    _empty_history,
)


def _reports_known(run: _Run, known: list[bool]) -> bool:
    """Reports are not one sequence: stop only when a whole page is already known, and only
    while the listing has been newest first (a new report is then on the first pages); in
    another order (oldest first, by id) a new report may be on any page: read them all."""
    if not all(known):
        run.tally.order.page_falls = 0
        return False
    order = run.tally.order
    if order.stops(len(known)):
        return True
    if not order.newest_first:  # (a listing not yet learned is read whole once, silently)
        order.read_on += 1
    return False


def _empty_readiness(run: _Run, page: Page) -> None:
    """No readiness report listed while reports are stored is a warning, as an empty history
    is: a wrong organization or a stub in front of the service (the stored reports are kept)."""
    stored = run.store.count_reports()
    if stored:
        noun = "report is" if stored == 1 else "reports are"
        run.tally.quality.on(page)(
            DataWarning(
                "$.reports",
                f"the service lists no readiness reports, but {stored} {noun} stored: its "
                "listing went back; the stored reports are kept and audited",
                "the listing",
            )
        )


_READINESS_FEED = _Feed(
    READINESS,
    _READINESS_LABEL,
    "reports",
    _ingest_report,
    lambda i: f"report {i['reportId']}",
    _reports_known,
    lambda _run, _page: False,  # a few pages at most: not worth a query per page
    _empty_readiness,
    on_end=lambda run, whole: _reports_end(run, whole=whole),
)


def _reports_end(run: _Run, *, whole: bool) -> None:
    """The readiness listing's end: what it showed of the order is kept, and so is the time,
    when this sync read it to its end (a listing cut short by a service that ignores
    `startAfter` too: it was read as far as it can be), for the next whole read's date."""
    order = run.tally.order
    order.learn(run.store, whole=whole)
    if not order.stopped and run.tally.reports.pages:  # (no app address: nothing was read)
        run.store.set_reports_read_whole(run.now)


def _whole_read_due(store: Store, now: datetime) -> bool:
    """True when the readiness listing is to be read whole: its last whole read is
    `WHOLE_READ_DAYS` old or more, after `now` (a clock set back), or not recorded."""
    last = store.reports_read_whole()
    if last is None:
        return True
    since = now.astimezone(UTC) - last
    return not timedelta(0) <= since < timedelta(days=WHOLE_READ_DAYS)


def _all_newer(items: list[Item], top: int | None) -> bool:
    """True when every item is a revision newer than any stored before this sync: none of them
    can be known, so the history goes on after this page."""
    if top is None:
        return True
    return all(type(i.get("revision")) is int and i["revision"] > top for i in items)


def _ingest(run: _Run, client: PlatformClient, feed: _Feed) -> None:
    count = run.tally.counts[feed.label]
    pages = client.pages(feed.listing)
    first: Page | None = None
    for page in pages:
        first = first or page
        if feed.goes_on(run, page):
            keep_freed_memory()  # pages of ~1 MB follow: their buffers are reused (`heap`)
            if pages.waits:  # a service that answers at once: no second thread (`Pages.waits`)
                pages.ahead()
        run.tally.quality.add_duplicates(page, feed.listing, feed.name)
        known: list[bool] = []
        here: set[str] = set()  # the items' names on this page (`_once_on_page`)
        for index, raw in enumerate(page.items):
            check_cancelled()  # (`run --orgs`: an interrupted organization's stops here too)
            where = f"$.{feed.listing.items}[{index}]"
            outcome, name = feed.ingest(run, raw, where, page)
            count.new += outcome.status == "new"
            if outcome.status != "new":
                run.tally.count(outcome, f"{name} ({feed.label} page {page.number})", where, page)
                if outcome.note is not None:  # a stored item re-read with fields added
                    run.tally.quality.on(page)(outcome.note)
            _once_on_page(run, page, here, name, where)
            known.append(outcome.known_before)
        # a page is counted as fetched once read whole (a page refused is not, whether for its
        # shape or for an item's value)
        count.pages += 1
        count.items += len(known)
        run.new_rows.write()
        run.progress(f"{feed.label}: page {count.pages}, {count.new} new {feed.plural}")
        if feed.stop(run, known):
            if feed.on_end is not None:
                feed.on_end(run, False)
            return
    # an empty listing (empty pages that said more are followed: the last page decides; an
    # empty readiness page ends the listing, unreturned: `read_at` names it)
    if count.items == 0 and feed.on_empty is not None and pages.read_at is not None:
        feed.on_empty(run, first or Page(1, [], pages.read_at))
    if pages.repeated_at is not None:
        run.tally.quality.add(_token_ignored(feed, pages.repeated_at))
    if feed.on_end is not None:  # (a listing cut short by a repeated page was not read whole)
        feed.on_end(run, pages.repeated_at is None)


def _token_ignored(feed: _Feed, where: str) -> DataWarning:
    """The listing ended where the service sent its last (short) page again for the next
    page's token: it ignores the token, so a service that also serves fewer items a page than
    asked has more that cannot be read."""
    listing = feed.listing
    return DataWarning(
        f"$.{listing.items}",
        f"the service sent its last page again for `{listing.token_param}` (it ignores it): "
        f"the listing ends there; if it serves fewer {feed.plural} a page than asked "
        "(`page_size`), the rest cannot be read",
        "the listing",
        where,
    )


def _utc_now() -> datetime:
    return datetime.now(UTC)


#: How a failed sync's error begins (`_failed`); `auditor run` audits the stored data after it
#: and says so in its own words (`failure_of`).
FAILED = "sync failed, "
#: The note an interrupted sync leaves on the interrupt: what it had fetched (`interrupted`).
_FETCHED_NOTE = "auditor sync: "


def _failed(exc: AuditorError, tally: _Tally, store: Store) -> AuditorError:
    kept = kept_pages(store) or "nothing saved"
    message = store.redactor.redact_shown(f"{FAILED}{kept} ({tally.describe()} before): {exc}")
    if isinstance(exc, ApiError):
        return ApiError(message, url=exc.url, status=exc.status)
    return type(exc)(message)


def failure_of(exc: AuditorError) -> str:
    """What stopped a sync, without the `sync failed, ` its error begins with (`_failed`): the
    kept pages, what it had fetched, the cause."""
    return str(exc).removeprefix(FAILED)


def interrupted(store: Store, exc: BaseException) -> str | None:
    """What an interrupted sync says, as a failed one does: the history pages it kept
    (`kept_pages`), else `nothing saved`, and what it had fetched (a sync that read 9 pages
    and kept none loses them: T73 LOW-3). None when the interrupt did not come from inside
    `sync` (no note) and no pages are kept."""
    fetched = next(
        (
            n[len(_FETCHED_NOTE) :]
            for n in getattr(exc, "__notes__", ())
            if n.startswith(_FETCHED_NOTE)
        ),
        None,
    )
    kept = kept_pages(store)
    if fetched is None:
        return kept
    return f"{kept or 'nothing saved'} ({fetched} before)"


def kept_pages(store: Store) -> str | None:
    """What a sync that did not finish says of the history pages it kept (None: none are):
    that the next sync goes on from them, or, when its last scrub of them could not be written
    (`Store.forget_unsafe_resume`), that they may hold a secret in clear and what to do. When
    the state file cannot be read now (another program's exclusive lock), pages this process
    saw kept are named without their count, never as `nothing saved` (review R41 #4)."""
    try:
        record, readable = store.staged_resume(), True
    except AuditorError:
        record, readable = None, False
    kept = "kept history pages"
    if record:
        pages, revisions = record.get("pages"), record.get("revisions")
        kept = (
            f"kept {pages} page{'' if pages == 1 else 's'} ({revisions} "
            f"revision{'' if revisions == 1 else 's'})"
        )
    elif not readable and store.kept_seen:
        kept += " (not counted: the state file cannot be read now)"
    elif not store.kept_unscrubbed:
        return None
    if store.kept_unscrubbed:
        return (
            f"{kept}, not scrubbed: {store.kept_unscrubbed}, so a value this sync learned is a "
            "secret after keeping them may be in clear in them, in the state file; run `auditor "
            "sync` again, which reads the page that named it again and scrubs them"
        )
    return f"{kept}; the next sync continues from there"


class _Disagree(Exception):
    """The kept history pages and the service (or the sync's settings) disagree: the pages are
    dropped and the sync reads the history from the start (`sync`)."""

    def __init__(self, problem: str, where: str = "") -> None:
        super().__init__(problem)
        self.problem = problem
        self.where = where

    def warning(self) -> DataWarning:
        return DataWarning(
            "$.changes",
            f"{self.problem}: kept pages dropped, read from the start",
            "the kept history pages",
            self.where,
        )


@dataclass
class _Kept:
    """The history pages an earlier sync that did not finish kept (`Store.stage_page`)."""

    cursor: str | None  # the token of the page after them (None: they reached the end)
    pages: int  # the listing's pages they came from
    revisions: int
    lowest: int  # the oldest kept revision
    highest: int  # the newest
    limit: int  # the page size the page after them is asked for
    numbers: set[int]
    # the token the last kept page was asked for with (None: the first page), and its revisions:
    # that page is asked for again, and must come back the same, before the listing goes on
    # after it (a position-based cursor of a history that changed since points elsewhere)
    last_cursor: str | None
    last_page: list[int]
    linked: bool = False  # this sync met them on the listing's head


#: The fields of the kept pages' record (`Store.stage_page`) and their types.
_RECORD: dict[str, tuple[type, ...]] = {
    "cursor": (str, type(None)),
    "pages": (int,),
    "revisions": (int,),
    "lowest": (int,),
    "highest": (int,),
    "top": (int, type(None)),
    "base_url": (str,),
    "org": (str,),
    "page_size": (int,),
    "limit": (int,),
    "last_cursor": (str, type(None)),
    "last_page": (list,),
}


def _kept_pages(run: _Run, client: PlatformClient) -> _Kept | None:
    """The kept history pages this sync goes on from (None: none are kept); `_Disagree` when
    they cannot be, as they were kept for another service, organization, page size or stored
    history, or do not match their record."""
    record = run.store.staged_resume()
    if record is None:
        return None
    if record.get("unresumable") is True:  # (a sync that ended before it could drop them)
        raise _Disagree("the kept history pages' cursor named a value found to be a secret")
    if any(
        not isinstance(record.get(k), types) or isinstance(record.get(k), bool)
        for k, types in _RECORD.items()
    ):
        raise _Disagree("the record of the kept history pages cannot be read")
    last_page = record["last_page"]
    if not all(type(n) is int for n in last_page):
        raise _Disagree("the record of the kept history pages cannot be read")
    for key, now, what in (
        ("base_url", client.shown_url, "service address"),
        ("org", run.org, "organization"),
        ("page_size", client.page_size, "page_size"),
        ("top", run.new_rows.top, "newest stored revision"),
    ):
        if record[key] != now:
            raise _Disagree(f"the history pages were kept with another {what}")
    numbers = run.store.staged_numbers()
    if (
        len(numbers) != record["revisions"]
        or not numbers
        or (min(numbers), max(numbers)) != (record["lowest"], record["highest"])
    ):
        raise _Disagree("the kept history pages do not match their record")
    if not set(last_page) <= numbers:
        raise _Disagree("the kept history pages do not match their record")
    return _Kept(
        record["cursor"],
        record["pages"],
        record["revisions"],
        record["lowest"],
        max(numbers),
        record["limit"],
        numbers,
        record["last_cursor"],
        last_page,
    )


def _refused(exc: ApiError) -> bool:
    """Whether the service refused the request itself (a 4xx that is not about the token,
    permissions or the rate): asked for the page after kept pages, their cursor is refused."""
    return exc.status is not None and 400 <= exc.status < 500 and exc.status not in _NOT_CURSOR


_NOT_CURSOR = frozenset({401, 403, 407, 408, 429})
# History pages are kept (`Store.stage_page`) a batch at a time: every `STAGE_PAGES` pages, or
# once `STAGE_SECONDS` passed since pages were last kept, whichever comes first
STAGE_PAGES = 10
STAGE_SECONDS = 5.0


class _History:
    """The history listing of one sync: pages made only of new revisions are kept as they come
    (`Store.stage_page`, each in its own transaction, with where the listing goes on), until a
    page meets a stored revision (or cannot be kept): then the sync's transaction begins
    (`begin`, which moves the kept pages into `revisions`) and the rest is ingested in it as
    before. With pages kept by an earlier sync, the listing's head is read until it meets them
    (each kept revision met compared with its kept copy, redacted again), then the page after
    them is asked for (its first pages may overlap them: compared too). Whatever disagrees
    raises `_Disagree`."""

    def __init__(self, run: _Run, client: PlatformClient, kept: _Kept | None) -> None:
        self.run = run
        self.client = client
        self.kept = kept
        self.total = 0 if kept is None else kept.revisions  # the revisions kept
        self.highest = 0 if kept is None else kept.highest  # the newest kept revision
        # The page whose rows are held and not kept yet (pages are kept a batch at a time:
        # `_save`), the pages held, and when pages were last kept
        self.pending: Page | None = None
        self.held = 0
        self.saved_at = time.monotonic()
        if kept is not None:
            run.new_rows.kept = set(kept.numbers)

    def _plan(self, page: Page, linking: bool) -> tuple[bool, bool]:
        """(whether `page`'s items can be kept: only new revisions, each once; whether it
        holds a kept revision), from the items' numbers; `_Disagree` for a number the kept
        pages should hold and do not (the history changed since)."""
        rows, kept = self.run.new_rows, self.kept
        keepable, met, here = True, False, set()
        for raw in page.items:
            number = raw.get("revision")
            if type(number) is not int:
                keepable = False  # (decoding says what is wrong)
                continue
            if kept is not None:
                if number in kept.numbers:
                    met = True
                    continue
                missing = number <= kept.highest if linking else number > kept.lowest
                if missing and not rows.sent(number):
                    raise _Disagree(
                        f"the history changed since the kept pages (revision {number})", page.where
                    )
            top = rows.top
            if (top is not None and number <= top) or rows.sent(number) or number in here:
                keepable = False
            here.add(number)
        return keepable, met

    def _keepable(self, token: str | None) -> bool:
        """A cursor is kept only if redaction leaves it as it is (no secret in it)."""
        return token is not None and self.run.store.redactor.redact_shown(token) == token

    def _record(
        self,
        cursor: str | None,
        pages: int,
        revisions: int,
        lowest: int,
        limit: int,
        last: Page | None,
    ) -> dict[str, Any]:
        """The record of the kept pages (`Store.stage_page`); `last`: the last of them (None:
        the last the kept pages had, `_Kept`)."""
        if last is None:
            assert self.kept is not None
            last_cursor, last_page = self.kept.last_cursor, self.kept.last_page
        else:
            last_cursor = last.token
            last_page = [i["revision"] for i in last.items if type(i.get("revision")) is int]
        return {
            "last_cursor": last_cursor,
            "last_page": last_page,
            "cursor": cursor,
            "pages": pages,
            "revisions": revisions,
            "lowest": lowest,
            "top": self.run.new_rows.top,
            "base_url": self.client.shown_url,
            "org": self.run.org,
            "page_size": self.client.page_size,
            "limit": limit,
        }

    def _stage(self, page: Page | None, cursor: str | None, pages: int, limit: int) -> None:
        """Keep the new revisions held with the record, `page` the last kept page (None: the
        kept pages' last stays the last, the head having brought new revisions before them)."""
        rows, parts = self.run.new_rows.held()
        total = self.total + len(rows)
        lowest = self.run.new_rows.lowest
        if self.kept is not None:
            lowest = self.kept.lowest if lowest is None else min(lowest, self.kept.lowest)
        if total == 0 or lowest is None:
            return  # nothing to go on from (only empty pages so far)
        record = self._record(cursor, pages, total, lowest, limit, page)
        # the kept range (oldest, newest): a sync that goes on from them reads again only the
        # head and the last kept page, and records no kept revision as read again
        # (`history_recheck`)
        self.highest = max([self.highest, *(row[0] for row in rows)])
        record["highest"] = self.highest
        self.run.store.stage_page(rows, parts, record)
        self.total = total

    def _save(self, *, now: bool) -> None:
        """Keep the pages held (`_stage`), unless `now` is False and fewer than `STAGE_PAGES`
        pages were read in fewer than `STAGE_SECONDS` since pages were last kept: a kept page
        costs a transaction, a scrub and a scrub index write, so they are kept in batches (a
        sync that fails loses the pages held, but when a page cannot be fetched: `ingest`)."""
        page = self.pending
        if page is None:
            return
        if not now and self.held < STAGE_PAGES and time.monotonic() - self.saved_at < STAGE_SECONDS:
            return
        self._stage(page, page.next_token, page.number, page.limit)
        self.pending, self.held, self.saved_at = None, 0, time.monotonic()

    def _begin(self, begin: Callable[[], _Run]) -> _Run:
        """Keep the pages held now, then begin the sync's transaction (`begin`): its rows are
        written in it from the pages kept, under its own sync id."""
        self._save(now=True)
        return begin()

    def _save_before(self) -> None:
        """A page could not be fetched: keep the complete pages held before it, so the next
        sync goes on from there (nothing to add when the store cannot be written)."""
        with contextlib.suppress(AuditorError):
            self._save(now=True)

    def ingest(self, begin: Callable[[], _Run]) -> _Run:
        """Read the history; gives the run inside the sync's transaction (begun by `begin`)."""
        run, client, kept = self.run, self.client, self.kept
        count = run.tally.history
        staging = True  # pages are kept as they come
        pages: Pages = client.pages(HISTORY)
        resumed = False  # the next page is the last kept page, asked for again
        first: Page | None = None
        while True:
            try:
                page = next(pages)
            except StopIteration:
                break
            except ApiError as exc:
                if resumed and _refused(exc):
                    raise _Disagree(
                        f"the service refused the kept pages' cursor ({exc.status})", exc.url
                    ) from None
                if staging:
                    self._save_before()
                raise
            # (a page that is not JSON, a repeated cursor; Ctrl-C or SIGTERM while it is
            # awaited: T101 #2, 6 pages read, then a page that never came, lost all 6)
            except (AuditorError, KeyboardInterrupt):
                if staging:
                    self._save_before()
                raise
            again, resumed = resumed, False
            first = first or page
            linking = kept is not None and not kept.linked
            keepable, met = self._plan(page, linking)
            if linking and not keepable:  # (what only a sync's transaction can judge)
                raise _Disagree("the history's head did not lead to the kept pages", page.where)
            cursor = page.last or self._keepable(page.next_token)
            if staging and not linking and not (keepable and cursor):
                run = self._begin(begin)
                staging = False
            if _HISTORY_FEED.goes_on(run, page) and not linking:
                keep_freed_memory()
                if pages.waits:
                    pages.ahead()
            run.tally.quality.add_duplicates(page, HISTORY, _HISTORY_FEED.name)
            waiting = run.new_rows.waiting()
            try:
                known = self._items(run, page, compare=staging)
            except AuditorError:  # (an item the sync cannot read: the pages before it are kept)
                if staging and not linking:
                    run.new_rows.forget_from(waiting)  # (this page's rows: not a whole page)
                    self._save_before()
                raise
            count.pages += 1  # (read whole: a page refused is not counted as fetched)
            count.items += len(known)
            if again:
                self._same_as_kept(page)
            if not staging:
                run.new_rows.write()
            run.progress(f"history: page {page.number}, {count.new} new revisions")
            if linking:
                assert kept is not None
                if met:  # the head met the kept pages: keep what it brought, then go on
                    kept.linked = True  # from the last kept page, asked for again
                    self._stage(None, kept.cursor, kept.pages, kept.limit)
                    if kept.last_cursor is None:  # the first page: this one
                        self._same_as_kept(page)
                    else:
                        pages = client.pages(
                            HISTORY,
                            start=kept.last_cursor,
                            first_number=kept.pages,
                            page_size=kept.limit,
                        )
                        resumed = True
                        run.new_rows.new_page_run()
                elif page.last:
                    raise _Disagree("the history ended before it led to the kept pages", page.where)
                elif not cursor and page.next_token is not None:  # (nothing kept after it)
                    raise _Disagree(
                        f"the cursor after history page {page.number} holds a secret, so no page "
                        "could be kept after it",
                        page.where,
                    )
                elif not cursor:
                    raise _Disagree("the history's head did not lead to the kept pages", page.where)
            elif staging:
                self.pending = page
                self.held += 1
                self._save(now=page.last)
            elif any(known):  # newest first: a page that met a stored revision met all older
                break
        if kept is not None and not kept.linked:
            raise _Disagree("the history ended before it led to the kept pages")
        if staging:
            run = self._begin(begin)
        if first is not None and count.items == 0:
            _empty_history(run, first)
        return run

    def _same_as_kept(self, page: Page) -> None:
        """`_Disagree` unless `page`, the last kept page asked for again, holds the revisions it
        held (their content is compared as they are read): its token still points where it
        did, so the listing goes on after it where it went on then."""
        assert self.kept is not None
        numbers = [i.get("revision") for i in page.items]
        if numbers != self.kept.last_page:
            raise _Disagree(
                f"the last kept page (history page {self.kept.pages}) came back with other "
                "revisions: the history changed since",
                page.where,
            )

    def _items(self, run: _Run, page: Page, *, compare: bool) -> list[bool]:
        """Ingest `page`'s items (while `compare`, a kept revision is compared with its kept
        copy instead); gives each item's `known_before`."""
        count = run.tally.history
        kept = self.kept.numbers if self.kept is not None else set()
        known: list[bool] = []
        here: set[str] = set()  # the revisions on this page (`_once_on_page`)
        for index, raw in enumerate(page.items):
            check_cancelled()  # (`run --orgs`: an interrupted organization's stops here too)
            where = f"$.changes[{index}]"
            number = raw.get("revision")
            if compare and type(number) is int and number in kept:
                rev, _body, _parts, name = _decode_revision(run, raw, where, page)
                if run.store.staged_hash(number) != rev.content_hash:
                    raise _Disagree(
                        f"the history changed since the kept pages (revision {number})", page.where
                    )
                _once_on_page(run, page, here, name, where)
                known.append(False)
                continue
            outcome, name = _ingest_revision(run, raw, where, page)
            count.new += outcome.status == "new"
            if outcome.status != "new":
                if outcome.status == "conflict" and number in kept:
                    raise _Disagree(
                        f"the history changed since the kept pages (revision {number})", page.where
                    )
                run.tally.count(outcome, f"{name} (history page {page.number})", where, page)
                if outcome.note is not None:
                    run.tally.quality.on(page)(outcome.note)
            _once_on_page(run, page, here, name, where)
            known.append(outcome.known_before)
        return known


def _summary(store: Store, client: PlatformClient, tally: _Tally, usage: UsageSync) -> SyncSummary:
    return SyncSummary(
        revisions_new=tally.history.new,
        revisions_total=store.count_revisions(),
        reports_new=tally.reports.new,
        reports_total=store.count_reports(),
        pages=tally.pages,
        integrity_issues=tuple(tally.issues),
        latest=store.latest_revision(),
        repositories=store.count_repositories(),
        reports_skipped=not client.has_reports,
        data_quality=tally.quality.warnings(store.redactor),
        usage=usage,
        reports_read_on=tally.order.read_on,
        # said when the whole read was the weekly one, not the order's (`reports_read_on`)
        reports_read_whole=(
            tally.order.weekly and tally.order.newest_first and bool(tally.reports.pages)
        ),
    )


def sync(
    store: Store,
    client: PlatformClient,
    *,
    progress: Progress | None = None,
    clock: Callable[[], datetime] | None = None,
    org: str = "default",
    usage_days: int | None = None,
) -> SyncSummary:
    """Fetch new revisions and reports (and, given `usage_days`, the usage analytics of that
    many complete days) into the store. All or nothing, but for the history pages made only
    of new revisions: those are kept as they come, and a sync that fails leaves them for the
    next one to go on from (never read as history until a sync finishes with them)."""
    now = (clock or _utc_now)()
    tally = _Tally()
    dropped: DataWarning | None = None
    try:
        while True:
            tally = _Tally()
            if dropped is not None:
                tally.quality.add(dropped)
            try:
                usage = _sync_once(
                    store,
                    client,
                    tally,
                    now=now,
                    clock=clock or _utc_now,
                    org=org,
                    usage_days=usage_days,
                    progress=progress or (lambda _m: None),
                    resume=dropped is None,
                )
                break
            except _Disagree as why:  # (its transaction, if begun, rolled back)
                if dropped is not None:
                    raise
                store.drop_staged()
                dropped = why.warning()
    except AuditorError as exc:
        _forget_unsafe_resume(store)
        try:
            raise _failed(exc, tally, store) from None
        finally:  # (said: what comes next, `run`'s audit, waits for a lock as ever)
            store.wait_again()
    except BaseException as exc:  # (an interrupt: what it kept must not hold a secret either)
        _forget_unsafe_resume(store, wait=INTERRUPTED_LOCK_WAIT)
        exc.add_note(_FETCHED_NOTE + tally.describe())  # (`interrupted` says it)
        raise
    return _summary(store, client, tally, usage)


# How long an interrupted sync's last scrub of the pages it kept waits for a lock another
# program holds on the state file (once; a failed sync's as every write does, not at all when
# the pages it held, kept as it failed, just waited for it in vain and it has nothing to scrub,
# and neither then reads again for it what it says: `Store.forget_unsafe_resume`; `run`'s audit
# after a failed sync waits as ever: `Store.wait_again`): another program's short write (the
# sqlite3 shell, a backup's step) ends within it; for a lock held longer the user is told what
# was left unscrubbed (`kept_pages`) rather than kept waiting after Ctrl-C, and a SIGTERM's
# grace period (10 s for `docker stop`) is not used up.
INTERRUPTED_LOCK_WAIT = 1.5


def _forget_unsafe_resume(store: Store, *, wait: float | None = None) -> None:
    """Drop the kept history pages when a cursor of theirs holds a value this sync learned is
    a secret (`Store.forget_unsafe_resume`): a sync that failed learned it too late to check
    the record it wrote, or wrote none since (nothing to say when the store cannot be read,
    but `Store.kept_unscrubbed`, which `kept_pages` says)."""
    # held: a second Ctrl-C or SIGTERM must not cut the scrub short (raised once it is done)
    with contextlib.suppress(AuditorError), held():
        store.forget_unsafe_resume(wait=wait)


def _sync_once(
    store: Store,
    client: PlatformClient,
    tally: _Tally,
    *,
    now: datetime,
    clock: Callable[[], datetime],
    org: str,
    usage_days: int | None,
    progress: Progress,
    resume: bool,
) -> UsageSync:
    """One attempt of `sync`; `_Disagree` when the kept history pages cannot be gone on from
    (`resume`: they are looked at)."""
    # fewer collections: millions of short-lived parsed containers, hardly any cycles
    # (`collector.few_collections`)
    with few_collections(), contextlib.ExitStack() as stack:
        store.check_org(org)  # (before a page is kept; recorded as the sync begins)
        latest = store.latest_revision()
        rows = _NewRows(store, None if latest is None else latest.revision)
        tally.order.learned = store.report_order()
        tally.order.whole_due = _whole_read_due(store, now)
        tally.order.weekly = tally.order.whole_due and tally.order.learned == "newest"
        run = _Run(store, 0, now, org, tally, progress, rows)  # (sync 0: pages kept, `_History`)
        kept = _kept_pages(run, client) if resume else None
        if not resume and store.has_staged():
            store.drop_staged()

        def begin() -> _Run:
            """The sync's transaction: its record, and the kept pages moved into `revisions`."""
            stack.enter_context(store.transaction())
            store.bind_org(org)
            sync_id = store.begin_sync(now, client.shown_url)
            store.reshow_sync_addresses(client.shown)  # as an earlier version recorded them
            tally.history.new = store.commit_staged(sync_id)  # every new revision kept so far
            return dataclasses.replace(run, sync_id=sync_id)

        run = _History(run, client, kept).ingest(begin)
        _ingest(run, client, _READINESS_FEED)
        usage = sync_usage(
            store,
            client,
            run.sync_id,
            today=now.astimezone(UTC).date(),
            days=usage_days,
            quality=tally.quality,
            progress=run.progress,
        )
        # Pages come newest first: a key found in an old revision may have been pasted
        # into a newer one already written; those rows are redacted again before commit.
        store.scrub_stored()
        store.remember_secrets()
        store.set_history_recheck(rows.rechecked)  # what the integrity check covered
        store.finish_sync(
            run.sync_id,
            clock(),
            revisions_new=tally.history.new,
            reports_new=tally.reports.new,
            pages=tally.pages,
        )
    return usage


def sync_service(
    store: Store,
    options: SyncOptions,
    *,
    progress: Progress | None = None,
    clock: Callable[[], datetime] | None = None,
) -> SyncSummary:
    """Sync the service `options` describe into an open store (`sync`, `run` and `review`)."""
    store.register_secret(options.token)
    client = PlatformClient(
        base_url=options.base_url,
        app_url=options.app_url,
        token=options.token,
        redactor=store.redactor,
        timeout=options.timeout,
        deadline=options.deadline,
        max_pages=options.max_pages,
        page_size=options.page_size,
        network=options.network,
    )
    with client:
        return sync(
            store,
            client,
            progress=progress,
            clock=clock,
            org=options.org,
            usage_days=options.usage_days,
        )


#: How many integrity issues the sync's summary names (the rest are counted).
NAMED_ISSUES = 3


def format_summary(summary: SyncSummary, base_url: str) -> str:
    """The one-paragraph summary `auditor sync` prints."""
    parts = [
        f"Synced {base_url}: {summary.revisions_total} revisions ({summary.revisions_new} new)"
    ]
    latest = summary.latest
    if latest is not None:
        who = author_of(latest.user.email, latest.user.name, latest.user.id)
        # an author the API did not give (or not as an object): nothing; a 2 MB id made a 2 MB
        # line: cut, as an attribution is
        by = f" by {shown_author(who)}" if who else ""
        parts[0] += f", latest rev {latest.revision} at {latest.updated_at.date().isoformat()}{by}"
    if summary.reports_skipped:
        parts.append("readiness reports skipped (no app URL configured)")
    else:
        read_on = ""
        if summary.reports_read_on:
            # why a nightly sync reads every page: said, not warned (nothing is wrong)
            read_on = ", every page read: the service does not list them newest first"
        elif summary.reports_read_whole:
            read_on = (
                f", every page read, as every {WHOLE_READ_DAYS} days: a report the service "
                "listed late with an earlier time is found then"
            )
        parts.append(
            f"{summary.reports_total} readiness reports ({summary.reports_new} new{read_on}) "
            f"for {summary.repositories} repositories"
        )
    issues = summary.integrity_issues
    noun = "integrity issue" if len(issues) == 1 else "integrity issues"
    if summary.usage.status != "skipped":
        parts.append(summary.usage.describe())
    text = "; ".join(parts) + f"; {len(issues)} {noun}."
    if issues:  # a few named, the rest counted: a rewritten history has 1,000s
        text += " " + " ".join(f"{issue.describe()}." for issue in issues[:NAMED_ISSUES])
        if len(issues) > NAMED_ISSUES:
            text += f" … and {len(issues) - NAMED_ISSUES} more (`auditor run` reports each)."
    return text + quality_line(summary.data_quality)


def quality_line(warnings: tuple[DataWarning, ...]) -> str:
    """` N data-quality warnings: …` after the summary (nothing when there are none)."""
    if not warnings:
        return ""
    noun = "data-quality warning" if len(warnings) == 1 else "data-quality warnings"
    listed = " ".join(f"{w.describe()}." for w in warnings)
    return f" {len(warnings)} {noun} (items kept, odd values read as absent): {listed}"
