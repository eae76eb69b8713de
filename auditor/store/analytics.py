"""Analytics in the state file: a row per (date, series), and whether the last sync could read them.

Takes an open store connection, SQLite or PostgreSQL (owned by `auditor.store.Store`), and
redacted analytics rows (`auditor.fetch.analytics` reads them); gives the stored dates, when
each was fetched (the start of the sync that stored it, from its `sync_id`: a state file of an
earlier version has it too), the rows of a date range grouped by day, and the access status
the last sync recorded (`ok`, or `denied` with the API's one-line reason). The table came with
schema version 2 (`schema.MIGRATIONS`). Plain SQL only: `auditor.store.dialect` adapts it to
PostgreSQL.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from auditor.common.jsonutil import canonical, loads
from auditor.models import JSON
from auditor.redact import Redactor
from auditor.redact.memory import literal_matcher
from auditor.store.dialect import meta_text, stream
from auditor.store.schema import from_text

_STATUS_KEY = "analytics_access"


@dataclass(frozen=True)
class AnalyticsAccess:
    """What the last sync that tried the analytics found: `ok`, `denied` or `skipped`."""

    status: str
    detail: str = ""


def stored_days(db: Any, start: date, end: date, series: int) -> set[str]:
    """The dates from `start` to `end` holding all `series` series."""
    rows = db.execute(
        "SELECT day FROM analytics_days WHERE day BETWEEN ? AND ? GROUP BY day "
        "HAVING COUNT(*) >= ?",
        (start.isoformat(), end.isoformat(), series),
    )
    return {str(r[0]) for r in rows}


def fetched_at(db: Any, start: date, end: date) -> dict[str, datetime | None]:
    """When each stored date from `start` to `end` was fetched: the start of the sync that
    stored the oldest of its series, or None when a series' sync has no record (unknown)."""
    rows = db.execute(
        "SELECT a.day, MIN(s.started), COUNT(*) - COUNT(s.started) FROM analytics_days a "
        "LEFT JOIN syncs s ON s.id = a.sync_id WHERE a.day BETWEEN ? AND ? GROUP BY a.day",
        (start.isoformat(), end.isoformat()),
    )
    return {str(day): None if unknown else from_text(str(first)) for day, first, unknown in rows}


def put_day(db: Any, day: str, series: str, data: JSON, sync_id: int) -> bytes:
    """Store (or replace) one series of one day; `data` is already redacted. Gives the JSON
    stored (for the scrub index)."""
    body = canonical(data)
    digest = hashlib.sha256(body).hexdigest()
    db.execute("DELETE FROM analytics_days WHERE day = ? AND series = ?", (day, series))
    db.execute(
        "INSERT INTO analytics_days (day, series, data, content_hash, sync_id) "
        "VALUES (?, ?, ?, ?, ?)",
        (day, series, body, digest, sync_id),
    )
    return body


def iter_days(
    db: Any, start: date | None = None, end: date | None = None
) -> Iterator[tuple[str, dict[str, JSON]]]:
    """(date, {series: data}) for every stored date in the range, ascending."""
    low = start.isoformat() if start else "0000-00-00"
    high = end.isoformat() if end else "9999-99-99"
    rows = stream(  # batches from a server-side cursor on PostgreSQL, never the whole table
        db,
        "SELECT day, series, data FROM analytics_days WHERE day BETWEEN ? AND ? "
        "ORDER BY day, series",
        (low, high),
    )
    current: str | None = None
    series: dict[str, JSON] = {}
    for day, name, data in rows:
        if day != current:
            if current is not None:
                yield current, series
            current, series = str(day), {}
        series[str(name)] = loads(data)
    if current is not None:
        yield current, series


def set_access(db: Any, access: AnalyticsAccess) -> None:
    """Record what this sync found (inside its transaction)."""
    db.execute("DELETE FROM meta WHERE key = ?", (_STATUS_KEY,))
    value = canonical({"status": access.status, "detail": access.detail})
    db.execute("INSERT INTO meta (key, value) VALUES (?, ?)", (_STATUS_KEY, value))


def get_access(db: Any) -> AnalyticsAccess | None:
    """What the last sync found, or None when no sync has tried the analytics."""
    row = db.execute("SELECT value FROM meta WHERE key = ?", (_STATUS_KEY,)).fetchone()
    if row is None:
        return None
    value = loads(meta_text(row[0]))
    return AnalyticsAccess(str(value.get("status", "")), str(value.get("detail", "")))


def scrub(
    db: Any,
    redactor: Redactor,
    forms: Iterable[str],
    before_sync: int | None = None,
    *,
    only_sync: int | None = None,
) -> int:
    """Redact again the stored rows (of syncs before `before_sync`, or of sync `only_sync`, if
    given) holding a secret learned after they were written (`forms`: its encoded forms, one
    automaton for all)."""
    matcher = literal_matcher(forms)
    return _redact_again(
        db,
        redactor,
        lambda data: matcher.search(data.decode("utf-8", "replace")),
        before_sync,
        only_sync,
    )


def redact_again(db: Any, redactor: Redactor) -> int:
    """Redact every stored row again (another auditor's rules stored it) and write back those
    that change; gives how many."""
    return _redact_again(db, redactor, lambda _data: True)


def _redact_again(
    db: Any,
    redactor: Redactor,
    chosen: Callable[[bytes], bool],
    before_sync: int | None = None,
    only_sync: int | None = None,
) -> int:
    """Redact again the rows `chosen` picks (by their stored bytes; of syncs before
    `before_sync`, or of sync `only_sync`, if given); write back and count those that change."""
    changed = []
    query = "SELECT day, series, data, content_hash FROM analytics_days"
    args: tuple[int, ...] = ()
    if before_sync is not None:
        query, args = query + " WHERE sync_id < ?", (before_sync,)
    if only_sync is not None:
        query, args = query + " WHERE sync_id = ?", (only_sync,)
    for day, series, data, digest in stream(db, query, args):
        if not chosen(bytes(data)):
            continue
        body = canonical(redactor.redact_json(loads(data)))
        again = hashlib.sha256(body).hexdigest()
        if again != digest:
            changed.append((body, again, day, series))
    if changed:
        db.executemany(
            "UPDATE analytics_days SET data = ?, content_hash = ? WHERE day = ? AND series = ?",
            changed,
        )
    return len(changed)
