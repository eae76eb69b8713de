"""Calendar dates: consecutive days merged into ranges (the usage sync's requests, and the
days of a usage window that are not stored)."""

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
