"""Analytics: the five GET /api/v1/analytics endpoints, read day by day for a window of dates.

Takes a `PlatformClient`, a range of dates and the sync's `DataQuality`, gives one `DayRows`
per (date, series): the day's row of /tokens, /tools, /activity and /productivity (one request
per series for the whole range: without `group_by` each day's row already carries every
breakdown the usage rules read) and the day's per-user rows of /users (paged with
`cursor`/`next_cursor` by the one paging loop, `auditor.fetch.paging`, which follows an empty
page that says there is more, as the history's, under the same guards). Rows are checked by
the tolerant reader (`api-analytics-<series>.schema.json`: an odd value is a warning and read
as absent) and redacted before they leave. A row without a usable `date`, or two rows for one
date (or, of /users, two different rows for one user), fails the sync, as does a /users page
of users already sent that the listing goes on after. A breakdown entry sent twice in a day's
row (`by_model` naming one model twice; `NAMED_ONCE`) is read once when the two are the same,
with a warning, and fails the sync when their figures differ, as a user sent twice does. A 403
(the token lacks the manager or owner role) is `AnalyticsDenied`, which the sync records
instead of failing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from datetime import date, timedelta
from urllib.parse import urlencode

from auditor.common import paths
from auditor.common.dates import date_ranges
from auditor.common.escape import shorten, show_value
from auditor.errors import ApiError, DataError
from auditor.fetch.client import PlatformClient
from auditor.fetch.paging import Item, Listing, Page, cursor_paging, refuse_repaired
from auditor.fetch.retry import redacted_cut
from auditor.fetch.schema import validate
from auditor.fetch.tolerant import DataQuality, tolerate
from auditor.models import JSON, DataWarning
from auditor.redact import Redactor

ANALYTICS_PATH = "/api/v1/analytics"
#: The day series, one row per day each; `users` holds the day's per-user rows.
DAY_SERIES = ("tokens", "tools", "activity", "productivity")
USERS = "users"
ALL_SERIES = (*DAY_SERIES, USERS)
PAGE_SCHEMA = "api-analytics-page.schema.json"
USERS_PAGE_SCHEMA = "api-analytics-users-page.schema.json"
#: The breakdowns of a day row and the fields naming each entry: an entry is the same entry in
#: another answer (a re-fetch) when these are, and one named twice in a row is sent twice.
BREAKDOWN_KEYS: dict[str, tuple[str, ...]] = {
    "by_model": ("model",),
    "by_user": ("user_id",),
    "by_tool": ("tool",),
    "mcp_by_server": ("server",),
    "skills_by_name": ("name",),
    "slash_commands_by_name": ("name",),
    "hooks_by_event": ("event", "matcher", "command"),
    "by_extension": ("extension",),
    "by_language": ("language",),
}
#: The breakdowns whose entries each name one thing (a model, a server): one named twice in a
#: row is sent twice. Not `hooks_by_event`: a hook configured twice in the settings is two
#: entries with the same event, matcher and command.
NAMED_ONCE = tuple(k for k in BREAKDOWN_KEYS if k != "hooks_by_event")


def entry_key(entry: JSON, fields: tuple[str, ...]) -> tuple[str | None, ...] | None:
    """What names a breakdown entry (its `fields`, text or null), or None when it has no
    usable name (not an object, a field of another type, none of them text)."""
    if not isinstance(entry, dict):
        return None
    key = tuple(entry.get(f) for f in fields)
    if any(v is not None and not isinstance(v, str) for v in key):
        return None
    if not any(isinstance(v, str) and v for v in key):
        return None
    return key


def entry_name(
    fields: tuple[str, ...], key: tuple[str | None, ...], redact: Callable[[str], str]
) -> str:
    """An entry's name as messages show it (each text `redact`ed, then cut): `model 'm'`,
    `event 'E', matcher null, command '…'`."""
    return ", ".join(
        f"{f} null" if v is None else f"{f} {redacted_cut(v, 80, redact)!r}"
        for f, v in zip(fields, key, strict=True)
    )


_STALLED_PAGES = 2  # users pages in a row with nothing new before paging is refused


class AnalyticsDenied(Exception):
    """The analytics endpoints refused the token (403: manager or owner role needed)."""


@dataclass(frozen=True)
class DayRows:
    """One series of one day, redacted: a row (day series) or a list of per-user rows."""

    day: str  # YYYY-MM-DD
    series: str
    data: JSON
    where: str = ""  # the request it came from, `GET https://…/tokens?startDate=…`


#: /users for one day (`query` gains `startDate` and `endDate` per day).
USERS_LISTING = Listing(
    name="analytics users",
    path=f"{ANALYTICS_PATH}/users",
    on_app=False,
    schema=USERS_PAGE_SCHEMA,
    items="data",
    token_param="cursor",
    next_token=cursor_paging("meta", "has_more", "next_cursor"),
    repeated="$.meta.next_cursor: the API repeated an earlier cursor; paging would loop",
    token_at="$.meta.next_cursor",
    keep_empty=False,
    exact=(("data", "*", "date"), ("meta", "next_cursor")),
)


#: How many ranges of days without a row one warning names (the others are counted).
_NAMED_RANGES = 5


def _no_rows(days: list[date]) -> str:
    """`no row for 2026-11-02`, or for many days one problem naming their count and ranges
    (`no row for 29 days (2026-11-02..2026-11-30)`): a problem naming each day was one
    warning a day (29 for a service whose analytics start mid-window), not one with a count."""
    if len(days) == 1:
        return f"no row for {days[0]}"
    ranges = [f"{a}" if a == b else f"{a}..{b}" for a, b in date_ranges(days)]
    more = len(ranges) - _NAMED_RANGES
    shown = ", ".join(ranges[:_NAMED_RANGES]) + (
        f" and {more} more {'range' if more == 1 else 'ranges'}" if more > 0 else ""
    )
    return f"no row for {len(days)} days ({shown})"


def _query(start: date, end: date) -> dict[str, str]:
    return {"startDate": start.isoformat(), "endDate": end.isoformat()}


def _row_date(row: Item, index: int, start: date, end: date, where: str) -> str:
    text = row.get("date")
    try:
        day = date.fromisoformat(text) if isinstance(text, str) and len(text) == 10 else None
    except ValueError:
        day = None
    if day is None:
        raise DataError(f"$.data[{index}].date: expected YYYY-MM-DD, got {text!r} ({where})")
    if not start <= day <= end:
        raise DataError(
            f"$.data[{index}].date: {text} is outside the requested {start}..{end} ({where})"
        )
    return day.isoformat()


class AnalyticsReader:
    """Reads the analytics of date ranges through one client; warnings go to `quality`."""

    def __init__(self, client: PlatformClient, redactor: Redactor, quality: DataQuality) -> None:
        self._client = client
        self._redactor = redactor
        self._quality = quality
        self.requests = 0

    def read(self, start: date, end: date) -> Iterator[DayRows]:
        """Every series of every day from `start` to `end`; AnalyticsDenied on a 403."""
        try:
            for series in DAY_SERIES:
                yield from self._series(series, start, end)
            day = start
            while day <= end:
                yield self._users(day)
                day += timedelta(days=1)
        except ApiError as exc:
            if exc.status == 403:
                raise AnalyticsDenied(str(exc)) from None
            raise

    def _tolerate(self, row: Item, series: str, base: str, item: str, where: str) -> Item:
        def warn(warning: DataWarning) -> None:
            self._quality.add(replace(warning, where=where))

        return tolerate(row, f"api-analytics-{series}.schema.json", base, item, warn)

    def _series(self, series: str, start: date, end: date) -> Iterator[DayRows]:
        path = f"{ANALYTICS_PATH}/{series}"
        params = _query(start, end)
        where = f"GET {self._client.base_url}{path}?{urlencode(params)}"
        body, repeated = self._client.get_json(path, params, where)
        self.requests += 1
        validate(body, PAGE_SCHEMA, where)
        refuse_repaired(repeated, USERS_LISTING.exact, where)
        rows: list[Item] = body["data"]
        page = Page(1, rows, where, repeated)
        listing = replace(USERS_LISTING, name=series)
        self._quality.add_duplicates(page, listing, lambda r: f"{series} {r.get('date')}")
        seen: dict[str, Item] = {}
        for index, raw in enumerate(rows):
            day = _row_date(raw, index, start, end, where)
            if day in seen:
                raise DataError(f"$.data[{index}]: a second row for {day} ({where})")
            row = self._tolerate(raw, series, f"$.data[{index}]", f"{series} {day}", where)
            seen[day] = self._read_once(row, series, day, f"$.data[{index}]", where)
        missing: list[date] = []
        day_ = start
        while day_ <= end:
            key = day_.isoformat()
            if key in seen:
                yield DayRows(key, series, self._redactor.redact_json(seen[key]), where)
            else:
                missing.append(day_)
            day_ += timedelta(days=1)
        if missing:
            problem = f"{_no_rows(missing)}; fetched again next sync"
            self._quality.add(DataWarning("$.data", problem, series, where))

    def _read_once(self, row: Item, series: str, day: str, base: str, where: str) -> Item:
        """`row` with each breakdown entry it sends twice as before read once (a warning);
        one sent twice with other figures fails the sync (the chart would sum it twice)."""
        out = row
        for field in NAMED_ONCE:
            fields, entries = BREAKDOWN_KEYS[field], row.get(field)
            if not isinstance(entries, list):
                continue
            first: dict[tuple[str | None, ...], int] = {}
            kept: list[JSON] = []
            for index, entry in enumerate(entries):
                key = entry_key(entry, fields)
                if key is None or key not in first:
                    if key is not None:
                        first[key] = index
                    kept.append(entry)
                    continue
                path = paths.join(base, field, index)
                name = entry_name(fields, key, self._redactor.redact_shown)
                if entry != entries[first[key]]:
                    raise DataError(
                        f"{path}: a second entry for {name} on {day}, with other figures than "
                        f"{field}[{first[key]}] ({where})"
                    )
                problem = f"{name} sent again as {field}[{first[key]}] was; read once"
                self._quality.add(DataWarning(path, problem, f"{series} {day}", where))
            if len(kept) < len(entries):
                out = {**out, field: kept}
        return out

    def _users(self, day: date) -> DayRows:
        listing = replace(USERS_LISTING, query=tuple(_query(day, day).items()))
        users: list[Item] = []
        sent: dict[str, Item] = {}  # each user's row as sent, by user_id
        # The numbers of the pages in a row, up to the last, that sent only users sent before:
        # one such page is an overlap (offset paging as rows shift, an inclusive cursor); two
        # in a row, and yet the listing goes on, is paging that never ends (A,B,A,B …).
        stalled: list[int] = []
        for page in self._client.pages(listing):
            self.requests += 1
            if len(stalled) >= _STALLED_PAGES:
                raise DataError(
                    f"$.data: analytics users pages {stalled[0]} to {stalled[-1]} only repeated "
                    f"users sent on earlier pages, and the listing went on: paging makes no "
                    f"progress ({page.where})"
                )
            self._quality.add_duplicates(page, listing, lambda r: f"user {_who(r)}")
            fresh = 0
            here: set[str] = set()  # the users of this page
            for index, raw in enumerate(page.items):
                shown = _row_date(raw, index, day, day, page.where)
                user = raw.get("user_id")
                if isinstance(user, str) and user in sent:
                    if sent[user] != raw:  # the rules would read one user's day twice
                        raise DataError(
                            f"$.data[{index}]: a second row for user {user} on {shown}, with "
                            f"other figures ({page.where})"
                        )
                    # sent again as it was: read once; between pages an overlap (offset
                    # paging as rows shift), within one page a service defect (as the
                    # history's and the readiness listing's, `workflows.sync._once_on_page`)
                    if user in here:
                        problem = "sent twice on one page; read once"
                        at = paths.join("$.data", index)
                        self._quality.add(
                            DataWarning(at, problem, f"user {user} on {shown}", page.where)
                        )
                    here.add(user)
                    continue
                if isinstance(user, str):
                    sent[user] = raw
                    here.add(user)
                fresh += 1
                item = f"user {_who(raw)} on {shown}"
                base = paths.join("$.data", index)
                users.append(self._tolerate(raw, USERS, base, item, page.where))
            stalled = [*stalled, page.number] if page.items and not fresh else []
        users.sort(key=lambda u: str(u.get("user_id")))
        # the day's request, as its warnings name it (an empty listing has no page to name)
        where = f"GET {self._client.base_url}{listing.path}?{urlencode(_query(day, day))}"
        return DayRows(day.isoformat(), USERS, self._redactor.redact_json(users), where)


def _who(row: Item) -> str:
    """How a warning names a `/users` row: its `user_id` as sent, one that is no text as its
    JSON (`null`, `["u-1"]`; it was Python's `None`, `['u-1']`: tester T95 #5)."""
    user = row.get("user_id")
    return user if isinstance(user, str) else shorten(show_value(user), 80)
