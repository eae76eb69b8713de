"""Usage analytics in the workflows: the sync's part, and what the audit reads back.

`sync_usage` takes an open store inside the sync's transaction, the client, the sync's id
and clock, gives a `UsageSync`: how many days were fetched and stored, and whether the
analytics were readable.
Incremental by date: only dates of the window not yet stored with every series are fetched
(consecutive ones in one request per series), and again the window's last `REFETCH_DAYS` days
and every stored day fetched before its figures settled (`may_be_short`: a night was missed),
because the API's figures lag 24 hours; what an answer holds less of than is stored (a lower
count, an entry left out) keeps the stored value, with a warning (`kept_evidence`). A 403 is
recorded as `denied` with the API's reason and nothing else fails: settings and readiness
still sync. `usage_inputs` gives the audit the stored days of its window (or the one line
saying why there are none); `without_usage` drops the usage rules (`--no-usage`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, time, timedelta
from typing import TYPE_CHECKING

from auditor.common import paths
from auditor.common.dates import date_ranges, usage_window
from auditor.common.escape import shorten
from auditor.common.jsonutil import canonical
from auditor.common.paths import Component, Match
from auditor.models import JSON, DataWarning
from auditor.store import Store

#: How many of the window's newest days every sync fetches again (analytics lag 24 hours).
REFETCH_DAYS = 2
#: How long after its end a day's figures may still grow: a copy fetched earlier may be short.
LAG = timedelta(days=1)
#: A stored day whose fetch time is unknown (its sync has no record) is fetched again only
#: among the window's newest `UNKNOWN_REFETCH_DAYS` days, not across the whole window.
UNKNOWN_REFETCH_DAYS = 7

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
    days_refetched: int = 0  # stored days fetched again (the newest, and those maybe short)

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
    """Fetch the window's missing dates, and again its newest `REFETCH_DAYS` and the days
    whose stored copy `may_be_short` (`days` None: skip), inside the open transaction."""
    if days is None:
        return UsageSync("skipped")
    from auditor.fetch.analytics import ALL_SERIES, AnalyticsDenied, AnalyticsReader

    start, end = usage_window(today, days)
    have = store.analytics_days_stored(start, end, len(ALL_SERIES))
    wanted = [start + timedelta(days=i) for i in range(days)]
    # Fetched again: the newest days, and any day stored while its figures may still have
    # lagged (`may_be_short`): what comes back replaces what is stored (`kept_evidence`).
    fresh = {d.isoformat() for d in wanted[-REFETCH_DAYS:]}
    fresh |= may_be_short(store.analytics_fetched_at(start, end), end)
    missing = [d for d in wanted if d.isoformat() not in have or d.isoformat() in fresh]
    reader = AnalyticsReader(client, store.ingest_redactor(), quality)
    fetched: set[str] = set()
    try:
        for first, last in date_ranges(missing):
            # What is stored of these days, under every secret known now: a re-fetch never
            # leaves less evidence than it.
            before = dict(store.current_analytics(first, last))
            for rows in reader.read(first, last):
                data = kept_evidence(rows, before.get(rows.day, {}).get(rows.series), quality)
                store.ingest_analytics(rows.day, rows.series, data, sync_id)
                fetched.add(rows.day)
            progress(f"usage: {first}..{last}, {len(fetched)} days")
    except AnalyticsDenied as exc:
        detail = client.named(store.redactor.redact_shown(str(exc)), store.redactor)
        store.set_analytics_access("denied", detail)
        return UsageSync("denied", detail, (start, end), requests=reader.requests)
    store.set_analytics_access("ok", f"{start}..{end}")
    stored = store.analytics_days_stored(start, end, len(ALL_SERIES))
    # new: days stored now (every series) that were not before; a day fetched again that
    # still lacks a series is neither
    new = len(stored - have)
    again = len(fetched & have)
    return UsageSync("ok", "", (start, end), new, len(stored), reader.requests, again)


def may_be_short(fetched: dict[str, datetime | None], end: date) -> set[str]:
    """The stored days (of `fetched`: day -> when it was fetched, None unknown) whose copy may
    be short: fetched less than `LAG` after the day ended (a sync that ran the next night
    stored it as yesterday, and the night after that was missed), or fetched at an unknown
    time and among the newest `UNKNOWN_REFETCH_DAYS` days of the window ending `end`."""
    short = set()
    for day, when in fetched.items():
        settled = datetime.combine(date.fromisoformat(day), time(), UTC) + timedelta(days=1) + LAG
        if when is None:
            if (end - date.fromisoformat(day)).days < UNKNOWN_REFETCH_DAYS:
                short.add(day)
        elif when.astimezone(UTC) < settled:
            short.add(day)
    return short


def kept_evidence(rows: DayRows, stored: JSON | None, quality: DataQuality) -> JSON:
    """What to store of a series fetched again: the answer as it came, except where it holds
    less than `stored` (the earlier answer). Figures only grow as the API catches up, so an
    answer that shrinks is a hiccup (a short page, an outage answered with `[]` or zeros), not
    news. Compared field by field and entry by entry (`_Merge`): a count that came back lower,
    a field or a breakdown entry left out (entries matched by name, `BREAKDOWN_KEYS`; of
    `users`, each user's row by `user_id`) keep what is stored; everything else takes the new
    answer. Each (day, series) that kept something is one data-quality warning naming the day,
    each JSON path with both figures, and the request."""
    from auditor.fetch.analytics import USERS

    new = rows.data
    if stored is None:
        return new
    if rows.series == USERS:
        return _kept_users(rows, stored, quality)
    if not isinstance(stored, dict) or not isinstance(new, dict) or stored == new:
        return new  # (a row sent as stored merges into itself, with nothing to say)
    merge = _Merge()
    kept = merge.row(stored, new)
    path = paths.join("$.data", Match("date", rows.day))
    if merge.changed:
        problem = _changed(rows.day, merge.changed)
        quality.add(DataWarning(path, problem, f"{rows.series} {rows.day}", rows.where))
    if not merge.notes:
        return kept
    whole = "the stored row is kept" if kept == stored else "those stored values are kept"
    problem = f"the API sent less for {rows.day} than is stored ({_listed(merge.notes)}); {whole}"
    quality.add(DataWarning(path, problem, f"{rows.series} {rows.day}", rows.where))
    return kept


def _changed(day: str, changed: list[str]) -> str:
    """The warning of values a day fetched again changed while none of its counts grew."""
    return (
        f"the API sent other values for {day} than are stored, though none of its counts grew "
        f"({_listed(changed)}); the values sent are taken"
    )


def _kept_users(rows: DayRows, stored: JSON, quality: DataQuality) -> JSON:
    """`kept_evidence` of a day's per-user rows: the stored rows of users the answer leaves out
    are kept, and each user's row is merged with its stored one (`_Merge`)."""
    from auditor.fetch.analytics import USERS

    new = rows.data
    if not isinstance(stored, list) or not isinstance(new, list):
        return new
    # Only a row with a text `user_id` is matched with its stored one; rows without one (the
    # API sent a number or null: read as absent) cannot be, and are taken as sent, replacing
    # the stored ones without: matched as one user `None`, each got every user's largest
    # figures on every re-fetch (tester T95 #2)
    before = {uid: u for u in stored if (uid := _user_id(u)) is not None}
    sent = {_user_id(u) for u in new} - {None}
    left_out = [u for u in stored if (uid := _user_id(u)) is not None and uid not in sent]
    merged: list[JSON] = []
    notes: list[str] = []
    changed: list[str] = []
    for user in new:
        uid = _user_id(user)
        was = before.get(uid) if uid is not None else None
        # (a row sent as stored merges into itself, with nothing to say: not walked)
        if not isinstance(user, dict) or not isinstance(was, dict) or was == user:
            merged.append(user)
            continue
        merge = _Merge()
        merged.append(merge.row(was, user))
        who = str(uid)
        notes += [f"user {shorten(who, 80)!r}: {note}" for note in merge.notes]
        changed += [f"user {shorten(who, 80)!r}: {note}" for note in merge.changed]
    where, item = rows.where, f"{USERS} {rows.day}"
    if changed:
        quality.add(DataWarning("$.data", _changed(f"users of {rows.day}", changed), item, where))
    if left_out:
        problem = (
            f"the API sent {len(new)} users for {rows.day}, leaving out {len(left_out)} of "
            f"the {len(stored)} stored; their stored rows are kept"
        )
        quality.add(DataWarning("$.data", problem, item, where))
    if notes:
        problem = (
            f"the API sent less for users of {rows.day} than is stored ({_listed(notes)}); "
            "those stored values are kept"
        )
        quality.add(DataWarning("$.data", problem, item, where))
    if not left_out and not notes:
        return merged
    return sorted([*merged, *left_out], key=lambda u: str(u.get("user_id")))


def _user_id(row: JSON) -> str | None:
    """A `/users` row's `user_id`, when it is text (None: no row, or no usable id)."""
    uid = row.get("user_id") if isinstance(row, dict) else None
    return uid if isinstance(uid, str) else None


#: How many of a warning's kept values are named (the others are counted).
_NAMED_NOTES = 5


def _listed(notes: list[str]) -> str:
    more = len(notes) - _NAMED_NOTES
    return "; ".join(notes[:_NAMED_NOTES]) + (f"; and {more} more" if more > 0 else "")


_RATIO_ENDINGS = ("_avg", "_p50", "_p90")
_MAX_COUNT = 2**63 - 1


def _is_ratio(key: str) -> bool:
    """A field holding a ratio, a fraction or an average (`tool_autonomy_level_ratio`,
    `autonomy_ratio_avg`, `tool_calls_per_session_avg`), not an amount."""
    return "ratio" in key or key.endswith(_RATIO_ENDINGS)


def _is_number(value: JSON) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_count(value: JSON) -> bool:
    """A number the schemas take for a count: 0 to 2^63 - 1 (a state file of an earlier
    release may hold `1e308` or `-5`, which the rules and the chart read as none)."""
    return _is_number(value) and 0 <= value <= _MAX_COUNT


def _shown(value: JSON) -> str:
    if isinstance(value, dict):
        counts = [f"{k} {v}" for k, v in value.items() if _is_number(v)]
        return ", ".join(counts[:3]) if counts else "an object"
    if isinstance(value, list):
        return f"{len(value)} entries"
    if isinstance(value, str):
        return repr(shorten(value, 80))
    return (
        "null" if value is None else str(value).lower() if isinstance(value, bool) else str(value)
    )


class _Merge:
    """One row (a day row, or one user's row) fetched again, merged with its stored copy.

    What "less" is, per kind of value:
    - a count (any number not a ratio): lower than stored; the stored count is kept;
    - a field, a breakdown entry (matched by the fields naming it: `BREAKDOWN_KEYS`; an entry
      without a usable name by its whole value), an item of a list of names (`languages`) or a
      key of a map of counts (`daily_active_users_by_client`): left out; the stored one is kept;
    - a ratio, an average or a text (`tool_autonomy_level_ratio.auto_high`, `primary_model`):
      none is less than another (a share of high autonomy that rises is more evidence, one
      that falls may be a correction), so the new value is taken. When it changed while no
      count of the row grew (nor an entry or field was added), the day did not catch up:
      `changed` names it, and the sync warns (reviewer R26 #1: keeping the stored 0.0 hid an
      `auto_high` of 0.3 the service sent, and a blocked `primary_model`).
    A stored breakdown that names one entry twice alike (stored by a release that read such
    duplicates twice) is read with it once, as the answer is (`NAMED_ONCE`).
    `notes` says what was kept: `mcp_by_server[?server=='x'].invocations: 0 sent, 40 stored`;
    `changed`, what was taken though no count grew: `auto_high: 0.3 sent, 0.0 stored`."""

    def __init__(self) -> None:
        self.notes: list[str] = []
        self.changed: list[str] = []
        self._grew = False

    def row(self, stored: dict[str, JSON], new: dict[str, JSON]) -> JSON:
        self._grew = _grew(stored, new, "", ratio=False)
        return self._value(stored, new, "", "", ratio=False)

    def _note(self, path: str, text: str) -> None:
        self.notes.append(f"{path.lstrip('.')}: {text}")

    def _value(self, stored: JSON, new: JSON, name: str, path: str, *, ratio: bool) -> JSON:
        if _is_number(new) and not ratio:
            if _is_count(stored) and new < stored:
                self._note(path, f"{new} sent, {stored} stored")
                return stored
            return new  # a stored value no count (odd, kept by an earlier version) is none
        if isinstance(stored, dict) and isinstance(new, dict):
            return self._object(stored, new, path, ratio=ratio)
        if isinstance(stored, list) and isinstance(new, list):
            return self._list(stored, new, name, path, ratio=ratio)
        if stored != new and not self._grew:
            self.changed.append(f"{path.lstrip('.')}: {_shown(new)} sent, {_shown(stored)} stored")
        return new

    def _object(
        self, stored: dict[str, JSON], new: dict[str, JSON], path: str, *, ratio: bool
    ) -> JSON:
        out: dict[str, JSON] = {}
        for key, value in new.items():
            inner = ratio or _is_ratio(key)
            at = paths.join(path, key)
            out[key] = (
                value
                if key not in stored
                else self._value(stored[key], value, key, at, ratio=inner)
            )
        for key, value in stored.items():
            if key not in new:
                self._note(paths.join(path, key), f"left out, {_shown(value)} stored")
                out[key] = value
        return out

    def _list(
        self, stored: list[JSON], new: list[JSON], name: str, path: str, *, ratio: bool
    ) -> JSON:
        from auditor.fetch.analytics import NAMED_ONCE

        named = _naming(name, stored, new)
        if name in NAMED_ONCE:
            stored = _once(stored)
        keys = _keys(new, named)
        before = dict(zip(_keys(stored, named), stored, strict=True))
        out: list[JSON] = []
        for entry, key in zip(new, keys, strict=True):
            was = before.get(key)
            if not isinstance(entry, dict) or not isinstance(was, dict):
                out.append(entry)
                continue
            at = paths.join(path, _selector(named, key, len(out)))
            out.append(self._object(was, entry, at, ratio=ratio))
        sent = set(keys)
        lost = [(k, e) for k, e in before.items() if k not in sent]
        every = bool(lost) and len(lost) == len(stored) and len(new) < len(stored)
        if every:  # an outage's `[]`: one note for the breakdown
            self._note(path, f"{len(new)} entries, {len(stored)} stored")
        for key, entry in lost:
            if not every:
                at = paths.join(path, _selector(named, key, len(out)))
                self._note(at, f"left out, {_shown(entry)} stored")
            out.append(entry)
        return out


def _once(entries: list[JSON]) -> list[JSON]:
    """`entries` with an entry repeated alike read once (the first)."""
    seen: set[bytes] = set()
    out: list[JSON] = []
    for entry in entries:
        key = canonical(entry)
        if key not in seen:
            seen.add(key)
            out.append(entry)
    return out


def _naming(name: str, *lists: list[JSON]) -> tuple[str, ...]:
    """The fields naming the entries of breakdown `name` (any other list of objects: its text
    fields)."""
    from auditor.fetch.analytics import BREAKDOWN_KEYS

    if name in BREAKDOWN_KEYS:
        return BREAKDOWN_KEYS[name]
    texts = {
        k
        for entries in lists
        for e in entries
        if isinstance(e, dict)
        for k, v in e.items()
        if isinstance(v, str)
    }
    return tuple(sorted(texts))


def _keys(entries: list[JSON], named: tuple[str, ...]) -> list[tuple[object, int]]:
    """What matches each entry with its stored copy: its name (or, without one, its whole
    value) and how many entries before it have the same (a hook configured twice)."""
    from auditor.fetch.analytics import entry_key

    seen: dict[object, int] = {}
    out: list[tuple[object, int]] = []
    for entry in entries:
        key = entry_key(entry, named) if named else None
        which: object = ("name", key) if key is not None else ("value", canonical(entry))
        seen[which] = seen.get(which, -1) + 1
        out.append((which, seen[which]))
    return out


def _selector(named: tuple[str, ...], key: tuple[object, int], index: int) -> Component:
    """`[?model=='m']` for the first entry of a name of one field, else its index in the
    merged list."""
    which, nth = key
    if isinstance(which, tuple) and which[0] == "name" and len(named) == 1 and nth == 0:
        return Match(named[0], which[1][0])
    return index


def _grew(stored: JSON, new: JSON, name: str, *, ratio: bool) -> bool:
    """Whether `new` holds more than `stored` anywhere: a higher count (or one where `stored`
    has none usable), or a field, an entry or an item `stored` lacks."""
    if _is_number(new) and not ratio:
        return not _is_count(stored) or new > stored
    if isinstance(stored, dict) and isinstance(new, dict):
        return any(
            k not in stored or _grew(stored[k], v, k, ratio=ratio or _is_ratio(k))
            for k, v in new.items()
        )
    if isinstance(stored, list) and isinstance(new, list):
        named = _naming(name, stored, new)
        before = dict(zip(_keys(stored, named), stored, strict=True))
        return any(
            k not in before or _grew(before[k], e, "", ratio=ratio)
            for k, e in zip(_keys(new, named), new, strict=True)
        )
    return False


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
