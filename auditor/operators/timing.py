"""Time and version operators: within_days, older_than_days, version_at_least.

Takes the actual value, the argument (and the clock for time), gives a bool.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, date, datetime
from typing import Any

from auditor.common.dates import parse_date_time, unix_time
from auditor.operators.core import NUMBER, OperandTypeError, is_number, need_string, operator


def to_datetime(value: Any) -> datetime:
    """An ISO-8601 string, a date, or a Unix time (seconds or milliseconds, told apart by
    size as the sync tells them, `unix_time`) as a UTC datetime."""
    if isinstance(value, datetime):
        moment = value
    elif isinstance(value, date):
        moment = datetime(value.year, value.month, value.day)
    elif is_number(value):
        try:
            moment, _unit = unix_time(value)
        except (ValueError, OverflowError, OSError):
            raise OperandTypeError(
                "a timestamp (ISO-8601 or Unix time)", value, "not a representable Unix time"
            ) from None
    elif isinstance(value, str):
        try:
            moment = parse_date_time(value)  # as the sync reads an API date-time
        except ValueError:
            raise OperandTypeError(
                "an ISO-8601 timestamp", value, "not an ISO-8601 timestamp"
            ) from None
    else:
        raise OperandTypeError("a timestamp (ISO-8601 or Unix time)", value)
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


#: How far after `now` a time may be and still be judged by age: clocks disagree a little
#: (a report made on a machine a few hours ahead). Further than that, the time is wrong (or
#: `now` is), and no age can be given.
FUTURE_SKEW_DAYS = 1.0


def future_detail(moment: datetime, now: datetime) -> str:
    """`<time> is N days after now (<now>; …)`: why a time after `now` has no age."""
    ahead = (moment - now).total_seconds() / 86400
    return (
        f"{_iso(moment)} is {ahead:.2f} days after now ({_iso(now)}; "
        f"the clock-skew allowance is {FUTURE_SKEW_DAYS:g} day)"
    )


def _iso(moment: datetime) -> str:
    try:
        return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")
    except OverflowError:  # 9999-12-31T23:59:59-14:00 is past the last UTC time Python has
        return moment.isoformat()


def _age_days(actual: Any, now: datetime) -> float:
    """Days from `actual` to `now`; OperandTypeError for a time after `now` beyond the skew
    (a future time is neither fresh nor old: `not`, `none` or `when` would pass on a
    `false`)."""
    moment = to_datetime(actual)
    age = (now - moment).total_seconds() / 86400
    if age < -FUTURE_SKEW_DAYS:
        detail = f"{future_detail(moment, now)}: its age cannot be judged"
        raise OperandTypeError("a time not after now", actual, detail)
    return age


@operator(
    "within_days",
    NUMBER,
    "to be within the last {arg} days",
    "to be more than {arg} days old",
    kind="time",
)
def within_days(actual: Any, expected: float, now: datetime) -> bool:
    """The timestamp is at most N days before now (a time more than a day after now: error)."""
    return _age_days(actual, now) <= expected


@operator(
    "older_than_days",
    NUMBER,
    "to be more than {arg} days old",
    "to be within the last {arg} days",
    kind="time",
)
def older_than_days(actual: Any, expected: float, now: datetime) -> bool:
    """The timestamp is more than N days before now (a time more than a day after now: error)."""
    return _age_days(actual, now) > expected


#: A version: `v` optional, dotted numbers, a SemVer pre-release (`-rc.1`), build metadata.
#: ASCII digits only (`\d` and `int()` also read Arabic-Indic and other Unicode digits).
_VERSION_RE = re.compile(
    r"v?(?P<release>[0-9]+(?:\.[0-9]+)*)"
    r"(?:-(?P<pre>[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?"
    r"(?:\+[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?"
)

#: A version's precedence key: the release numbers (trailing zeros dropped, so `1.10` is
#: `1.10.0`), then `(1,)` for a release or `(0, *identifiers)` for a pre-release.
Version = tuple[tuple[int, ...], tuple[Any, ...]]


def parse_version(value: Any) -> Version:
    """`v1.2.3` / `1.2` / `1.2.3-rc.1+build` as a key that sorts by SemVer 2.0 precedence (§11):
    release numbers numerically, a pre-release below its release, pre-release identifiers
    left to right (numeric ones numerically and below alphanumeric ones, compared in ASCII;
    more identifiers sort higher when the others are equal); build metadata is ignored."""
    if isinstance(value, float):
        raise OperandTypeError(
            "a version such as 1.2.3",
            value,
            "a version must be a string: as a number it has lost its zeros (1.10 is 1.1)",
        )
    text = need_string(value) if not is_number(value) else str(value)  # an integer: `2`
    match = _VERSION_RE.fullmatch(text.strip())
    if match is None:
        raise OperandTypeError("a version such as 1.2.3", value, "not a version such as 1.2.3")
    parts = [int(p) for p in match["release"].split(".")]
    while len(parts) > 1 and parts[-1] == 0:
        parts.pop()
    pre = match["pre"]
    if pre is None:
        return tuple(parts), (1,)
    ids = tuple((0, int(i), "") if i.isdigit() else (1, 0, i) for i in pre.split("."))
    return tuple(parts), (0, *ids)


def prepare_version(arg: Any, enums: Mapping[str, tuple[str, ...]]) -> Version:
    """Parse the minimum version once, at load."""
    try:
        return parse_version(arg)
    except OperandTypeError:
        raise ValueError(f"{arg!r} is not a version such as 1.2.3") from None


@operator(
    "version_at_least",
    {"type": ["string", "number"]},
    "to be version {arg} or later",
    "to be a version before {arg}",
    prepare=prepare_version,
)
def version_at_least(actual: Any, expected: Version) -> bool:
    """The version is at least the argument by SemVer (`1.10` > `1.9`, `2.0-rc.1` < `2.0`)."""
    return parse_version(actual) >= expected
