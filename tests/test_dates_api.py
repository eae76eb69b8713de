"""API date-times are read as RFC 3339 allows them: one parser (`dates.parse_date_time`).

A lower-case `z` (as the lower-case `t` already was) and a leap second (`23:59:60Z`, read as
the last instant of that minute so times keep their order) are accepted; anything RFC 3339 and
ISO 8601 do not allow is still refused. The sync, a `createdAt` sent as text and the time
operators all read with it.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from auditor.common.dates import parse_date_time
from auditor.emulator import start_emulator
from auditor.errors import DataError
from auditor.fetch.decode import _parse_created_at, _parse_updated_at
from auditor.operators.timing import to_datetime
from auditor.store import Store
from tests.conftest import FIXED_NOW, OWNER_TOKEN, emulator_env, run_cli

LAST = datetime(2016, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)  # the leap second, as read
PST = timezone(timedelta(hours=-8))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-10-31T11:57:59Z", datetime(2026, 10, 31, 11, 57, 59, tzinfo=UTC)),
        ("2026-10-31t11:57:59z", datetime(2026, 10, 31, 11, 57, 59, tzinfo=UTC)),
        ("2026-10-31T11:57:59z", datetime(2026, 10, 31, 11, 57, 59, tzinfo=UTC)),
        ("2026-10-31T11:57:59.5z", datetime(2026, 10, 31, 11, 57, 59, 500000, tzinfo=UTC)),
        ("2026-10-31T11:57:59+05:30", datetime(2026, 10, 31, 6, 27, 59, tzinfo=UTC)),
        ("2026-10-31T11:57:59-00:00", datetime(2026, 10, 31, 11, 57, 59, tzinfo=UTC)),
        ("2016-12-31T23:59:60Z", LAST),
        ("2016-12-31t23:59:60z", LAST),
        ("2016-12-31T23:59:60.5Z", LAST),
        ("2016-12-31T15:59:60-08:00", LAST),  # RFC 3339 §5.8's example
        ("20161231T235960Z", LAST),
        ("2026-10-31T11:57:59", datetime(2026, 10, 31, 11, 57, 59, tzinfo=UTC)),  # as before
    ],
)
def test_an_rfc_3339_date_time_is_read(text: str, expected: datetime) -> None:
    assert _parse_updated_at(text, "$.changes[0]") == expected
    when = parse_date_time(text)  # (naive when the text has no offset: UTC for the sync)
    assert (when if when.tzinfo else when.replace(tzinfo=UTC)) == expected


@pytest.mark.parametrize(
    "text",
    [
        "2026-10-31T11:57:59zz",
        "2026-10-31T11:57:59Zz",
        "2026-10-31T11:57:59 z",
        "2026-10-31z",
        "2026-10-31T11:57:61Z",
        "2016-12-31T12:59:60Z",  # a leap second is the last second of a UTC day only
        "2016-12-31T23:58:60Z",
        "2016-12-31T23:59:60+01:00",  # 22:59:60 UTC
        "2016-12-31T23:59:600Z",
        "2026-10-31T11:57:59x",
        "31/10/2026 11:57:59",
        "",
    ],
)
def test_what_rfc_3339_does_not_allow_is_still_refused(text: str) -> None:
    with pytest.raises(ValueError):
        parse_date_time(text)
    with pytest.raises(DataError, match=r"updatedAt: not an ISO-8601 date-time"):
        _parse_updated_at(text, "$.changes[0]")


def test_one_parser_reads_created_at_as_text_and_the_time_operators() -> None:
    warned: list[Any] = []
    assert _parse_created_at("2016-12-31T23:59:60z", "$", "r", warned.append) == LAST
    assert len(warned) == 1  # (an ISO 8601 createdAt is read with a warning, as before)
    assert to_datetime("2016-12-31T15:59:60-08:00") == LAST.astimezone(PST)
    assert to_datetime("2026-10-31T11:57:59z") == datetime(2026, 10, 31, 11, 57, 59, tzinfo=UTC)


def test_a_sync_reads_a_lower_case_z_and_a_leap_second(tmp_path: Path) -> None:
    with start_emulator(tokens={OWNER_TOKEN: "owner"}, now=FIXED_NOW, revisions=5, repos=1) as emu:
        history = emu.dataset.history
        history[0]["updatedAt"] = "2016-12-31T23:59:60Z"
        history[-1]["updatedAt"] = history[-1]["updatedAt"].lower()
        newest = parse_date_time(history[-1]["updatedAt"].upper())
        env = emulator_env(emu, tmp_path / "state.db")
        code, out, err = run_cli(["sync", "--no-usage"], env, tmp_path)
    assert code == 0, err
    assert "5 revisions (5 new)" in out
    with Store.open(tmp_path / "state.db") as store:
        times = {r.revision: r.updated_at for r in store.iter_revisions()}
    assert times[history[0]["revision"]] == LAST
    assert times[history[-1]["revision"]] == newest


def test_the_command_line_reads_the_date_times_the_sync_reads() -> None:
    """`--since`, `--until` and `--at` read a lower-case `z` and a leap second as the sync
    stores them (reviewer R8: they were refused, exit 2), and still refuse what RFC 3339 does
    not allow; a bare date is still a whole day."""
    from auditor.cli.common import parse_when
    from auditor.errors import UsageError

    for option in ("--since", "--until", "--at"):
        got = parse_when("2016-12-31t23:59:60z", option, end_of_day=option == "--until")
        assert got == LAST
        assert parse_when("2026-10-31T11:57:59z", option, end_of_day=False) == datetime(
            2026, 10, 31, 11, 57, 59, tzinfo=UTC
        )
        with pytest.raises(UsageError, match=rf"^{option}: expected a date"):
            parse_when("2016-12-31T12:59:60Z", option, end_of_day=False)
    assert parse_when("2016-12-31", "--until", end_of_day=True) == LAST
