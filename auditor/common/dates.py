"""Calendar dates: the usage window, and consecutive days merged into ranges (the usage sync's
requests, and the days of a usage window that are not stored). Here, not in `auditor.fetch`, so
an offline run reads the window without loading the HTTP client."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, date, datetime, timedelta

#: A Unix time below this is in seconds, from it on in milliseconds: seconds reach it in the
#: year 5138, milliseconds only passed it in 1973.
UNIX_SECONDS_BELOW = 1e11


def unix_time(value: float) -> tuple[datetime, str]:
    """A Unix time as a UTC datetime, in seconds or milliseconds told apart by size
    (`UNIX_SECONDS_BELOW`), and which it was read as (`seconds` or `milliseconds`);
    ValueError, OverflowError or OSError when it is not a representable time."""
    seconds = abs(value) < UNIX_SECONDS_BELOW
    unit, name = (1.0, "seconds") if seconds else (1000.0, "milliseconds")
    return datetime.fromtimestamp(value / unit, UTC), name


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
MAX_DAYS = 3660  # the longest usage window: ten years
#: No usage window starts before this day: none of the service's figures is older, and the
#: days counted back from a window's start (its trailing median) stay far from `date.min`.
EARLIEST = date(1970, 1, 1)


def usage_window(today: date, days: int = DEFAULT_DAYS) -> tuple[date, date]:
    """The last `days` complete days, first and last: the API refuses today's date and its
    figures lag 24 hours, so the window ends yesterday (UTC). A ValueError, never an
    OverflowError, for a window out of range (more than `MAX_DAYS`, or starting before
    `EARLIEST`)."""
    if days < 1:
        raise ValueError("the usage window needs at least one day")
    if days > MAX_DAYS:
        raise ValueError(f"the usage window is at most {MAX_DAYS} days, not {days}")
    if (today - EARLIEST).days < days:
        raise ValueError(
            f"a usage window of {days} days before {today.isoformat()} would start before "
            f"{EARLIEST.isoformat()}"
        )
    end = today - timedelta(days=1)
    return end - timedelta(days=days - 1), end
