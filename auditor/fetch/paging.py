"""Paging: one loop walks any listing of the service, page by page, with guards against loops.

Takes a `Listing` (where the endpoint lives, which schema checks a page, where its items are, how
the next request is formed and when the listing ends) and a `Requester`, gives validated `Page`s
in the service's order. Guards stop on a repeated cursor, a token too long to go into the next
page's URL (`MAX_URL_LENGTH`) and more than `max_pages` pages (and the client's deadline on the
whole sync); every message names the request and the page number.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from urllib.parse import urlencode

from auditor.common import paths
from auditor.errors import AuditorError, DataError
from auditor.fetch.ahead import Pending, Worker
from auditor.fetch.pieces import Pieces
from auditor.fetch.retry import Fetched, Oversized, Requester, TooWide
from auditor.fetch.schema import validate
from auditor.fetch.shape import Duplicate
from auditor.models import JSON

HISTORY_PATH = "/api/v0/organization/enterprise-controls/history"
#: A request answered after at least this long of waiting (its time less the CPU time the
#: caller's thread spent on it: the service thinking, the network's round trip, a backoff)
#: makes `Pages.waits` true. Below it, a page fetched ahead costs more than it hides: the
#: thread fetching it and the caller hand the interpreter lock to each other for every read of
#: the body, about 2-4 ms of CPU a page of 1 MB (`bench/README.md`), against 1-2 ms of waiting
#: for the local emulator.
WAIT_WORTH_HIDING = 0.010
REPORTS_PATH = "/api/organization/agent-readiness-reports"

#: One schema-valid item of a listing: a `changes[]` or a `reports[]` entry, still in wire names.
Item = dict[str, JSON]
#: A whole response body, already validated against the listing's schema.
Body = dict[str, JSON]
#: Given a page's body, its items, the page size and `where`: the next page's token, or None
#: when this page was the last.
NextToken = Callable[[Body, list[Item], int, str], str | None]


@dataclass(frozen=True)
class Listing:
    """One paged endpoint of the service and the rules of its paging (design §2)."""

    name: str  # names the listing in the too-many-pages message
    path: str
    on_app: bool  # served from the app address (readiness), not the base address
    schema: str
    items: str  # the body's key holding the page's items
    token_param: str  # the query parameter that carries the next page's token
    next_token: NextToken
    repeated: str  # the message when a token comes back; `{token!r}` names it
    keep_empty: bool  # an empty page is data (history) or only the end of the listing
    query: tuple[tuple[str, str], ...] = ()  # fixed query parameters sent with every page
    # Strings the audit cannot do without, `*` for any index: one that was not UTF-8 (read
    # with U+FFFD, `auditor.fetch.text`) fails the sync instead of being a warning.
    exact: tuple[tuple[str, ...], ...] = ()
    # The item's key whose object's top-level values an item shares with the item before when
    # sent the same (the settings: `auditor.fetch.pieces`); "": pages are read whole.
    shared: str = ""
    # A listing with no has-more flag (the readiness reports): after a page shorter than asked
    # the next request only confirms the end, since the service may cap `limit`. An answer to
    # it that repeats the token (a service that ignores `startAfter` sends its first page
    # again) ends the listing there, as a short page did before, rather than failing the sync.
    short_may_end: bool = False
    # Where the page before sends the next page's token, as a message names it.
    token_at: str = "$"


@dataclass(frozen=True)
class Page:
    """One validated page: its number (from 1), its items, and `GET <url> page <n>` for messages."""

    number: int
    items: list[Item]
    where: str
    duplicates: tuple[Duplicate, ...] = ()  # keys sent twice (last value kept), inexact ints
    # The token this page sent for the next one, as it will be sent (None: no next page, or
    # one that cannot be asked for: `last` tells), and whether the listing ended here.
    next_token: str | None = None
    last: bool = False
    limit: int = 0  # the page size the next page is asked for (`limit`)
    token: str | None = None  # the token this page was asked for with (None: the first page)


def cursor_paging(holder: str, more: str, cursor: str) -> NextToken:
    """The next token of a listing whose body says `{holder: {more: bool, cursor: str}}`.

    An empty page that says `more` is followed like any other: a service that filters after
    paging sends such pages (the history's and the analytics users' alike); the repeated-cursor
    guard, the page cap and the deadline still bound one that never ends."""

    def next_token(body: Body, items: list[Item], page_size: int, where: str) -> str | None:
        paging = body[holder]
        if not paging.get(more):
            return None
        token = paging.get(cursor)
        if not token:
            sent = "missing" if cursor not in paging else "null" if token is None else "empty"
            raise DataError(f"$.{holder}.{cursor}: {sent} while {more} is true ({where})")
        return str(token)

    return next_token


_next_cursor = cursor_paging("pagination", "hasMore", "nextCursor")


def _start_after(body: Body, items: list[Item], page_size: int, where: str) -> str | None:
    # No has-more flag, and `limit` is only "a positive integer": a service may cap it (or use
    # its own default), so a page shorter than asked is not the last one; an empty page is.
    # (Design §2's "a short or empty page" lost every report after a capped first page.)
    return str(items[-1]["reportId"]) if items else None


HISTORY = Listing(
    name="history",
    path=HISTORY_PATH,
    on_app=False,
    schema="api-history.schema.json",
    items="changes",
    token_param="cursor",
    next_token=_next_cursor,
    repeated="$.pagination.nextCursor: the API repeated an earlier cursor; paging would loop",
    token_at="$.pagination.nextCursor",
    keep_empty=True,
    exact=(("changes", "*", "updatedAt"), ("pagination", "nextCursor")),
    shared="settings",
)

READINESS = Listing(
    name="readiness report",
    path=REPORTS_PATH,
    on_app=True,
    schema="api-readiness.schema.json",
    items="reports",
    token_param="startAfter",
    next_token=_start_after,
    repeated="$.reports[-1].reportId: repeated {token!r}; paging would loop",
    token_at="$.reports[-1].reportId",
    keep_empty=False,
    short_may_end=True,
    exact=(
        ("reports", "*", "reportId"),
        ("reports", "*", "repoUrl"),
        ("reports", "*", "createdAt"),
    ),
)


def _matches(path: tuple[str | int, ...], pattern: tuple[str, ...]) -> bool:
    return len(path) == len(pattern) and all(
        want == "*" if isinstance(part, int) else want == part
        for part, want in zip(path, pattern, strict=True)
    )


def refuse_repaired(
    found: tuple[Duplicate, ...], exact: tuple[tuple[str, ...], ...], where: str
) -> None:
    """Raise `DataError` for the first string the audit cannot do without (`exact`) that was
    not UTF-8: read with U+FFFD it would be another id, time or cursor than the one sent."""
    for dup in found:
        if dup.repaired and any(_matches(dup.path, pattern) for pattern in exact):
            raise DataError(
                f"{paths.render(dup.path)}: not valid UTF-8 (a byte sequence, or a lone "
                f"UTF-16 surrogate escape); the audit cannot do without this field "
                f"({where})"
            )


#: The longest URL a page is asked for with (httpx's limit, of the query and of a whole URL):
#: a cursor, or a last report id, that makes the next page's URL longer is an error naming it.
MAX_URL_LENGTH = 65536


def _too_long(listing: Listing, token: str, url: int, where: str) -> DataError:
    """The error of a token too long to go into the next page's URL (`url` characters long):
    httpx's own, `URL component 'query' too long`, named neither the field nor the page."""
    return DataError(
        f"{listing.token_at}: {len(token)} characters, too long to go into the next page's URL "
        f"(it would be {url} characters, more than {MAX_URL_LENGTH}) ({where})"
    )


def _too_many(listing: Listing, max_pages: int, where: str) -> DataError:
    """The stop of a listing longer than `max_pages`, naming the page not asked for (`where`:
    its URL, and of the analytics' /users the day's query)."""
    return DataError(
        f"{listing.name} paging stopped: more than {max_pages} pages (raise max_pages "
        f"if the organization really has that much data) ({where})"
    )


class Pages(Iterator[Page]):
    """Each validated page of a listing, in the service's order, to the end; `ahead()` sends
    the next page's request now, so it travels while the caller works on this page.

    Nothing is fetched ahead unless asked (a caller that may stop after this page does not ask,
    so it sends no request it would not have sent), and the sync asks only once the service has
    kept a page waiting (`waits`): from a service that answers at once, fetching ahead in a
    second thread costs more CPU than the waiting it hides. A failure of the page fetched ahead,
    and a problem with this page's token for the next one, are raised where the next page is
    taken, never earlier. At most one request is in flight, so memory holds at most two pages
    (and, for a listing read in pieces, a copy of the last item's pieces holding at most 1 MiB,
    keys, parsed values and overhead counted, and at most 1 MiB of keys' written forms: nothing
    read from a page outlives it, `auditor.fetch.pieces`).

    Items are read-only: a listing read in pieces (the history) gives items that share the
    parts they did not change with the items before them, on this page and earlier ones (the
    same objects), and the redactor takes an object it saw before as unchanged. A caller that
    needs to change an item changes a copy."""

    #: Whether a page fetched in the caller's thread waited `WAIT_WORTH_HIDING` or more for the
    #: service: a caller that goes on pages asks for the next one `ahead()` only then.
    waits = False

    def __init__(
        self,
        requester: Requester | None,  # None: a listing that cannot be read (no pages)
        base_url: str,
        listing: Listing,
        *,
        page_size: int,
        max_pages: int,
        start: str | None = None,
        first_number: int = 1,
        seen: Iterable[bytes] = (),
    ) -> None:
        """`start`: the token of the first page asked for (a sync that continues where an
        earlier one stopped), numbered `first_number`; `seen`: the digests (`token_digest`) of
        the tokens sent before it, so the repeated-token guard and `max_pages` span both."""
        self._requester = requester
        self._base_url = base_url
        self._listing = listing
        self._page_size = page_size
        self._max_pages = max_pages
        self._number = first_number  # the next page's
        self._params: dict[str, str] | None = None  # the next page's query; None: no more
        if requester is not None:
            self._params = {"limit": str(page_size), **dict(listing.query)}
            if start is not None:
                self._params[listing.token_param] = start
        # A digest of each token sent (`token_digest`): a service may send a fresh 60 KB cursor
        # a page, and 10,000 of them kept whole were 600 MB.
        self._seen: set[bytes] = set(seen)
        if start is not None:
            self._seen.add(token_digest(start))
        self._later: AuditorError | None = None  # raised when the next page is asked for
        # The next request only confirms that a short page was the last (`short_may_end`).
        self._confirming = False
        #: Where the answer to such a request repeated the short page (the service ignores the
        #: token): the listing ended there, though a service that also caps its pages has more.
        self.repeated_at: str | None = None
        #: Where the last page read came from, returned or not (an empty readiness page ends
        #: the listing unreturned): names the listing in a warning about it (None: none read).
        self.read_at: str | None = None
        self._pending: Pending[Fetched] | None = None
        self._worker: Worker | None = None  # runs the requests sent ahead
        # Reads compact pages in pieces, sharing what an item did not change (None: whole).
        self.pieces = Pieces(listing.items, listing.shared) if listing.shared else None

    def __iter__(self) -> Pages:
        return self

    def _where(self) -> str:
        """`GET <url> page <n>`; of a listing with a fixed query (the analytics' /users, read
        per day), the query too and the page's cursor (redacted, cut), so a message names
        which day's listing and which page it was."""
        listing = self._listing
        if not listing.query:
            return f"GET {self._base_url}{listing.path} page {self._number}"
        where = f"GET {self._base_url}{listing.path}?{urlencode(listing.query)} page {self._number}"
        token = (self._params or {}).get(listing.token_param)
        if token is not None and self._requester is not None:
            where += f" ({listing.token_param} {self._requester.clipped(token, 100)!r})"
        return where

    def ahead(self) -> None:
        """Start fetching the next page now (once; nothing if it is on its way, or if there is
        no next page to fetch)."""
        if (
            self._pending is not None
            or self._params is None
            or self._later is not None
            or self._number > self._max_pages
            or self._requester is None
        ):
            return
        fetch, path, params, where = (
            self._requester.fetch,
            self._listing.path,
            self._params,
            self._where(),
        )
        if self._worker is None:
            self._worker = Worker()
        self._pending = self._worker.submit(lambda: fetch(path, params, where))

    def __next__(self) -> Page:
        while True:
            if self._later is not None:
                error, self._later = self._later, None
                self._params = None
                raise error
            if self._params is None or self._requester is None:
                raise StopIteration
            if self._number > self._max_pages:
                self._params = None
                raise _too_many(self._listing, self._max_pages, self._where())
            where = self._where()
            asked = self._params.get(self._listing.token_param)
            pending, self._pending = self._pending, None
            try:
                if pending is not None:
                    fetched = pending.result()
                else:
                    began, cpu = time.perf_counter(), time.thread_time()
                    fetched = self._requester.fetch(self._listing.path, self._params, where)
                    waited = time.perf_counter() - began - (time.thread_time() - cpu)
                    self.waits = self.waits or waited >= WAIT_WORTH_HIDING
                body, repeated = self._requester.decode(fetched, self.pieces)
                validate(body, self._listing.schema, where)
                refuse_repaired(repeated, self._listing.exact, where)
            except (TooWide, Oversized):
                if self._page_size == 1:
                    self._params = None
                    raise
                # Items this wide (long allowlists: too many values, or too many bytes): ask for
                # the same page again, half as long, and keep that size for the rest of the
                # listing.
                self._page_size = max(1, self._page_size // 2)
                self._params = {**(self._params or {}), "limit": str(self._page_size)}
                continue
            except BaseException:
                self._params = None
                raise
            items: list[Item] = body[self._listing.items]
            self.read_at = where
            if not self._follow(self._requester, body, items, where):
                raise StopIteration  # the confirming request's answer repeated the last page
            if items or self._listing.keep_empty:
                params, later = self._params, self._later is not None
                token = None if params is None else params.get(self._listing.token_param)
                last = params is None and not later
                return Page(
                    self._number - 1, items, where, repeated, token, last, self._page_size, asked
                )

    def _follow(self, requester: Requester, body: Body, items: list[Item], where: str) -> bool:
        """Move on to the next page: its query, or None at the end. A token the page cannot
        send (`null` while it says there is more) refuses the page, as its shape would: raised
        now, before the page is counted; one that cannot be followed (repeated, too long) is
        kept for the next `__next__`, the page itself being whole. False when this page is no
        page: the answer to a request that only confirmed the end of a `short_may_end`
        listing, repeating a token (the service ignored it and sent what it had sent before)."""
        listing = self._listing
        try:
            token = listing.next_token(body, items, self._page_size, where)
        except BaseException:
            self._params = None
            raise
        self._number += 1
        confirming, self._confirming = self._confirming, False
        try:
            if token is None:
                self._params = None
                return True
            seen = token_digest(token)
            if seen in self._seen:
                if confirming:
                    self._params, self.repeated_at = None, where
                    return False
                # redacted before it is cut: a token cut in two is no longer one it knows
                shown = requester.clipped(token, 100)
                raise DataError(f"{listing.repeated.format(token=shown)} ({where})")
            params = {
                "limit": str(self._page_size),
                **dict(listing.query),
                listing.token_param: token,
            }
            url = len(self._base_url) + len(listing.path) + 1 + len(urlencode(params))
            if url > MAX_URL_LENGTH:
                raise _too_long(listing, token, url, where)
        except AuditorError as exc:
            self._later = exc
            return True
        self._seen.add(seen)
        self._confirming = listing.short_may_end and len(items) < self._page_size
        self._params = params
        return True


def token_digest(token: str) -> bytes:
    """What `Pages` keeps of a token to recognise it when it comes back: 16 bytes, whatever
    the token's length (a collision of BLAKE2b-128 is not a concern: nobody gets to choose
    both tokens to stop a sync, and the service can stop it anyway)."""
    return hashlib.blake2b(token.encode("utf-8", "surrogatepass"), digest_size=16).digest()
