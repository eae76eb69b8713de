"""Paging: one loop walks any listing of the service, page by page, with guards against loops.

Takes a `Listing` (where the endpoint lives, which schema checks a page, where its items are, how
the next request is formed and when the listing ends) and a `Requester`, gives validated `Page`s
in the service's order. Guards stop on a repeated cursor, `hasMore` on an empty page and more
than `max_pages` pages; every message names the request and the page number.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from auditor.errors import DataError
from auditor.fetch.retry import Requester
from auditor.fetch.schema import validate
from auditor.fetch.shape import Duplicate
from auditor.models import JSON

HISTORY_PATH = "/api/v0/organization/enterprise-controls/history"
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


@dataclass(frozen=True)
class Page:
    """One validated page: its number (from 1), its items, and `GET <url> page <n>` for messages."""

    number: int
    items: list[Item]
    where: str
    duplicates: tuple[Duplicate, ...] = ()  # keys sent twice; the last value is in `items`


def cursor_paging(holder: str, more: str, cursor: str) -> NextToken:
    """The next token of a listing whose body says `{holder: {more: bool, cursor: str}}`."""

    def next_token(body: Body, items: list[Item], page_size: int, where: str) -> str | None:
        paging = body[holder]
        if not paging.get(more):
            return None
        if not items:
            raise DataError(f"$.{holder}.{more}: true on an empty page ({where})")
        token = paging.get(cursor)
        if not token:
            raise DataError(f"$.{holder}.{cursor}: missing while {more} is true ({where})")
        return str(token)

    return next_token


_next_cursor = cursor_paging("pagination", "hasMore", "nextCursor")


def _start_after(body: Body, items: list[Item], page_size: int, where: str) -> str | None:
    # No has-more flag: a short (or empty) page is the last one.
    return None if len(items) < page_size else str(items[-1]["reportId"])


HISTORY = Listing(
    name="history",
    path=HISTORY_PATH,
    on_app=False,
    schema="api-history.schema.json",
    items="changes",
    token_param="cursor",
    next_token=_next_cursor,
    repeated="$.pagination.nextCursor: the API repeated an earlier cursor; paging would loop",
    keep_empty=True,
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
    keep_empty=False,
)


def _too_many(listing: Listing, max_pages: int) -> DataError:
    return DataError(
        f"{listing.name} paging stopped: more than {max_pages} pages (raise max_pages "
        "if the organization really has that much data)"
    )


def iter_pages(
    requester: Requester, base_url: str, listing: Listing, *, page_size: int, max_pages: int
) -> Iterator[Page]:
    """Yield each validated page of `listing`, in the service's order, to the end."""
    params = {"limit": str(page_size), **dict(listing.query)}
    seen: set[str] = set()
    for number in itertools.count(1):
        if number > max_pages:
            raise _too_many(listing, max_pages)
        where = f"GET {base_url}{listing.path} page {number}"
        body, repeated = requester.get_json(listing.path, params, where)
        validate(body, listing.schema, where)
        items: list[Item] = body[listing.items]
        if items or listing.keep_empty:
            yield Page(number, items, where, repeated)
        token = listing.next_token(body, items, page_size, where)
        if token is None:
            return
        if token in seen:
            raise DataError(f"{listing.repeated.format(token=token)} ({where})")
        seen.add(token)
        params = {"limit": str(page_size), **dict(listing.query), listing.token_param: token}
