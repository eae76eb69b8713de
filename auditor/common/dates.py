"""Calendar dates: the usage window, and consecutive days merged into ranges (the usage sync's
requests, and the days of a usage window that are not stored). Here, not in `auditor.fetch`, so
an offline run reads the window without loading the HTTP client."""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import UTC, date, datetime, timedelta

#: A time whose seconds are `60` (a leap second, RFC 3339 §5.6-5.7): what comes before the
#: seconds, their fraction, and the offset.
_LEAP_SECOND = re.compile(
    r"(?P<head>.+[Tt ]\d\d(?P<colon>:?)\d\d(?P=colon))60(?P<fraction>[.,]\d+)?"
    r"(?P<offset>[Zz]|[+-]\d\d(?::?\d\d)?)?"
)
#: A `z` ending a time (RFC 3339 §5.6: `Z` in either case).
_LOWER_Z = re.compile(r"(?<=\d)z\Z")
#: A control character (C0, DEL, C1): no date-time holds one. CPython 3.11's
#: `datetime.fromisoformat` stops reading at a NUL, so `…10:00:00Z\x00 junk` read as a time.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


def has_control(text: str) -> bool:
    """True when `text` holds a control character: no date-time does (`parse_date_time`)."""
    return _CONTROL.search(text) is not None


def parse_date_time(text: str) -> datetime:
    """An ISO 8601 / RFC 3339 date-time from the service (`updatedAt`, a `createdAt` sent as
    text), as `datetime.fromisoformat` reads it, and also: a lower-case `z` for UTC (as the
    lower-case `t` it already reads), and a leap second (`23:59:60Z`) read as the last instant
    of that minute (`23:59:59.999999`, so times keep their order; Python has no second 60),
    accepted only where one can be: the last minute of a UTC day (`15:59:60-08:00` too).
    Naive when the text has no offset. ValueError for anything else, also for text holding a
    control character (a NUL and junk after a time were read as the time)."""
    if has_control(text):
        raise ValueError(f"{text!r}: a control character in a date-time")
    text = _LOWER_Z.sub("Z", text)
    leap = _LEAP_SECOND.fullmatch(text)
    if leap is None:
        return datetime.fromisoformat(text)
    colon, offset = leap["colon"], leap["offset"] or ""
    when = datetime.fromisoformat(f"{leap['head']}59{'.' if colon else ','}999999{offset}")
    utc = when if when.tzinfo is None else when.astimezone(UTC)
    if (utc.hour, utc.minute) != (23, 59):
        raise ValueError(f"{text!r}: a leap second (second 60) is only the last of a UTC day")
    return when


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
