"""Calendar dates: the usage window, and consecutive days merged into ranges (the usage sync's
requests, and the days of a usage window that are not stored). Here, not in `auditor.fetch`, so
an offline run reads the window without loading the HTTP client."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import date, timedelta


def date_ranges(dates: Iterable[date]) -> list[tuple[date, date]]:
    """Consecutive dates merged into inclusive (first, last) ranges, in order."""
    ranges: list[tuple[date, date]] = []
    for day in sorted(set(dates)):
        if ranges and ranges[-1][1] + timedelta(days=1) == day:
            ranges[-1] = (ranges[-1][0], day)
        else:
            ranges.append((day, day))
    return ranges


DEFAULT_DAYS = 30  # the usage window: the last 30 complete days


def usage_window(today: date, days: int = DEFAULT_DAYS) -> tuple[date, date]:
    """The last `days` complete days, first and last: the API refuses today's date and its
    figures lag 24 hours, so the window ends yesterday (UTC)."""
    if days < 1:
        raise ValueError("the usage window needs at least one day")
    end = today - timedelta(days=1)
    return end - timedelta(days=days - 1), end
