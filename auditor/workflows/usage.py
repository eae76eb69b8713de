"""Usage analytics in the workflows: the sync's part, and what the audit reads back.

`sync_usage` takes an open store inside the sync's transaction, the client, the sync's id
and clock, gives a `UsageSync`: how many days were fetched and stored, and whether the
analytics were readable.
Incremental by date: only dates of the window not yet stored with every series are fetched
(consecutive ones in one request per series), and the window's last `REFETCH_DAYS` days again
on every sync, replacing what is stored, because the API's figures lag 24 hours; an answer
that holds less than is stored keeps the stored rows, with a warning (`kept_evidence`). A 403 is
recorded as `denied` with the API's reason and nothing else fails: settings and readiness
still sync. `usage_inputs` gives the audit the stored days of its window (or the one line
saying why there are none); `without_usage` drops the usage rules (`--no-usage`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import date, timedelta
from typing import TYPE_CHECKING

from auditor.common.dates import date_ranges, usage_window
from auditor.models import JSON, DataWarning
from auditor.store import Store

#: How many of the window's newest days every sync fetches again (analytics lag 24 hours).
REFETCH_DAYS = 2

if TYPE_CHECKING:  # `auditor sync` loads neither the evaluation nor the policy stack, and
    # `run --offline` not the fetch stack (httpx, detect-secrets' plugins)
    from auditor.evaluate.model import UsageInputs
    from auditor.fetch import PlatformClient
    from auditor.fetch.analytics import DayRows
    from auditor.fetch.tolerant import DataQuality
    from auditor.policy import PolicySet


@dataclass(frozen=True)
class UsageSync:
    """What the sync did about usage analytics."""

    status: str  # ok | denied | skipped
    detail: str = ""
    window: tuple[date, date] | None = None
    days_new: int = 0
    days_stored: int = 0
    requests: int = 0
    days_refetched: int = 0  # stored days fetched again (the newest `REFETCH_DAYS`)

    def describe(self) -> str:
        """One clause of the sync summary."""
        if self.status == "skipped":
            return "usage analytics skipped (--no-usage)"
        if self.status == "denied":
            return f"usage analytics not readable: {self.detail}"
        assert self.window is not None
        first, last = self.window
        return (
            f"usage analytics {first}..{last}: {self.days_stored} of {(last - first).days + 1} "
            f"days stored ({self.days_new} new, {self.days_refetched} fetched again)"
        )


def sync_usage(
    store: Store,
    client: PlatformClient,
    sync_id: int,
    *,
    today: date,
    days: int | None,
    quality: DataQuality,
    progress: Callable[[str], None],
) -> UsageSync:
    """Fetch the window's missing dates and its newest `REFETCH_DAYS` again (`days` None:
    skip) inside the open transaction."""
    if days is None:
        return UsageSync("skipped")
    from auditor.fetch.analytics import ALL_SERIES, AnalyticsDenied, AnalyticsReader

    start, end = usage_window(today, days)
    have = store.analytics_days_stored(start, end, len(ALL_SERIES))
    wanted = [start + timedelta(days=i) for i in range(days)]
    # The newest days are fetched again: the API's figures lag, so the first fetch of
    # yesterday may be incomplete. What comes back replaces what is stored.
    fresh = {d.isoformat() for d in wanted[-REFETCH_DAYS:]}
    missing = [d for d in wanted if d.isoformat() not in have or d.isoformat() in fresh]
    reader = AnalyticsReader(client, store.ingest_redactor(), quality)
    fetched: set[str] = set()
    try:
        for first, last in date_ranges(missing):
            # What is stored of these days: a re-fetch never leaves less evidence than it.
            before = dict(store.iter_analytics(first, last))
            for rows in reader.read(first, last):
                data = kept_evidence(rows, before.get(rows.day, {}).get(rows.series), quality)
                store.ingest_analytics(rows.day, rows.series, data, sync_id)
                fetched.add(rows.day)
            progress(f"usage: {first}..{last}, {len(fetched)} days")
    except AnalyticsDenied as exc:
        detail = store.redactor.redact_shown(str(exc))
        store.set_analytics_access("denied", detail)
        return UsageSync("denied", detail, (start, end), requests=reader.requests)
    store.set_analytics_access("ok", f"{start}..{end}")
    stored = store.analytics_days_stored(start, end, len(ALL_SERIES))
    # new: days stored now (every series) that were not before; a day fetched again that
    # still lacks a series is neither
    new = len(stored - have)
    again = len(fetched & have)
    return UsageSync("ok", "", (start, end), new, len(stored), reader.requests, again)


def kept_evidence(rows: DayRows, stored: JSON | None, quality: DataQuality) -> JSON:
    """What to store of a series fetched again: the answer as it came, unless it holds less
    than `stored` (the earlier answer). Figures only grow as the API catches up, so an answer
    that shrinks is a hiccup (a short page, an outage answered with `[]`), not news: per-user
    rows (`users`) of users it leaves out are kept as stored; a day row (the other series)
    missing a field stored, or with fewer entries in a breakdown, is kept as stored whole.
    Either way a data-quality warning names the day, the series and the request."""
    from auditor.fetch.analytics import USERS

    new = rows.data
    if stored is None:
        return new
    if rows.series == USERS:
        if not isinstance(stored, list) or not isinstance(new, list):
            return new
        sent = {u.get("user_id") for u in new if isinstance(u, dict)}
        left_out = [u for u in stored if isinstance(u, dict) and u.get("user_id") not in sent]
        if not left_out:
            return new
        problem = (
            f"the API sent {len(new)} users for {rows.day}, leaving out {len(left_out)} of "
            f"the {len(stored)} stored; their stored rows are kept"
        )
        merged = sorted([*new, *left_out], key=lambda u: str(u.get("user_id")))
        quality.add(DataWarning("$.data", problem, f"{USERS} {rows.day}", rows.where))
        return merged
    if not isinstance(stored, dict) or not isinstance(new, dict):
        return new
    shrunk = [_shrink(name, was, new.get(name)) for name, was in stored.items()]
    lost = [s for s in shrunk if s]
    if not lost:
        return new
    shown = "; ".join(lost[:3]) + (f" and {len(lost) - 3} more" if len(lost) > 3 else "")
    problem = f"the API sent less for {rows.day} than is stored ({shown}); the stored row is kept"
    quality.add(DataWarning("$.data", problem, f"{rows.series} {rows.day}", rows.where))
    return stored


def _shrink(name: str, stored: JSON, sent: JSON | None) -> str:
    """How field `name` of a day row shrank from `stored` to `sent`, or ""."""
    if sent is None:
        return f"{name} left out"
    if isinstance(stored, list | dict) and stored:
        size = len(sent) if isinstance(sent, list | dict) else 0
        if size < len(stored):
            return f"{name}: {size} entries, {len(stored)} stored"
    return ""


def usage_inputs(store: Store, today: date, days: int | None) -> UsageInputs | None:
    """The stored analytics of the window ending the day before `today` (None: skipped): the
    days holding every series, as the sync counts them."""
    if days is None:
        return None
    from auditor.evaluate.model import UsageInputs
    from auditor.evaluate.usage import SERIES_KEYS, TRAILING_DAYS

    start, end = usage_window(today, days)
    window = (start.isoformat(), end.isoformat())
    access = store.analytics_access()
    if access is not None and access.status == "denied":
        why = (
            "the analytics endpoints refused the token (manager or owner role needed): "
            + access.detail
        )
        return UsageInputs(unavailable=why, window=window)
    # The days before the window feed the trailing median of its first days, when stored.
    # A day counts as stored only with every series stored, as the sync counts it: one the
    # API left out of a series (its `users` stored, say) is not judged on what remains, it
    # is named among the days not stored (and fetched again by the next sync).
    stored = tuple(
        (day, series)
        for day, series in store.iter_analytics(start - timedelta(days=TRAILING_DAYS), end)
        if all(key in series for key in SERIES_KEYS)
    )
    if not any(day >= window[0] for day, _ in stored):
        if access is None:
            return UsageInputs(window=window)  # never synced: the evaluator says so
        return UsageInputs(
            unavailable=f"no usage analytics stored for {start}..{end}", window=window
        )
    return UsageInputs(days=stored, window=window, first_judged=window[0])


def without_usage(policy: PolicySet) -> PolicySet:
    """The policy set without its `usage` rules."""
    return replace(policy, rules=tuple(r for r in policy.rules if r.target != "usage"))
