"""T33's hostile service (findings F2, F3, F4), end to end through the CLI.

F2: the readiness listing's early stop missed new reports: a service of pages under 10
reports stopped after page 1, and at the default page size a report the service listed late
with an earlier `createdAt` (made on a client, uploaded later) was never fetched, on any later
sync. A page must now hold 10 reports to stop a sync, and the whole listing is read again when
its last whole read (kept in the state file) is `WHOLE_READ_DAYS` old.
F3: an `updatedAt` of a time, a NUL and junk was stored as the time (CPython 3.11's
`datetime.fromisoformat` stops at a NUL): text with a control character is no date-time.
F4: with `timeout = 3` and `deadline = 25`, a sync gave up at 12.6 s, "the sync's deadline of
25s leaves no time for another try": the backoff's last wait is now shortened so that a last
try fits, and the message says how much time was left.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from auditor.common.dates import parse_date_time
from auditor.emulator import Emulator, start_emulator
from tests.conftest import FIXED_NOW, OWNER_TOKEN, emulator_env, run_cli

pytestmark = pytest.mark.e2e  # the emulator and servers over HTTP, the CLI

HISTORY = "/api/v0/organization/enterprise-controls/history"


def _emulator(repos: int) -> Emulator:
    return start_emulator(tokens={OWNER_TOKEN: "owner"}, now=FIXED_NOW, revisions=12, repos=repos)


# -- F3: a control character in a date-time ---------------------------------------------------

NUL_TIMES = [
    "2026-10-31T10:00:00Z\u0000 not a date at all; 1999-01-01",
    "2026-10-31T10:00:00\u0000",
    "Sat, 31 Oct 2026 10:00:00 +0000\u0000 junk",  # an RFC 2822 date (read, with a warning)
]


@pytest.mark.parametrize("sent", NUL_TIMES, ids=["iso-junk", "iso-nul", "rfc2822-junk"])
def test_an_updated_at_with_a_nul_fails_the_sync(tmp_path: Path, sent: str) -> None:
    """Was: stored as the time before the NUL, exit 0, no warning. The README's tolerant
    reader: anything but ISO 8601, a Unix time or an RFC 2822 date fails the sync."""
    with _emulator(3) as emu:
        emu.dataset.history[-1]["updatedAt"] = sent
        env = emulator_env(emu, tmp_path / "state.db")
        code, out, err = run_cli(["sync", "--no-usage"], env, tmp_path)
    assert code == 2, out
    assert (
        "$.changes[0].updatedAt: not an ISO-8601 date-time (it holds a control character)" in err
    ), err
    assert "Traceback" not in err


def test_a_created_at_text_with_a_nul_fails_the_sync(tmp_path: Path) -> None:
    with _emulator(3) as emu:
        emu.dataset.report_order = "id"  # the emulator cannot sort times of two types
        emu.dataset.reports[1]["createdAt"] = "2026-10-01T00:00:00Z\u0000 1999-01-01"
        env = emulator_env(emu, tmp_path / "state.db")
        code, out, err = run_cli(["sync", "--no-usage"], env, tmp_path)
    assert code == 2, out
    assert ".createdAt: not a Unix time in milliseconds (it holds a control character)" in err


@pytest.mark.parametrize("text", ["2026-10-31T10:00:00Z\x00junk", "2026-10-31T10:00:00\x00"])
def test_the_date_time_parser_refuses_a_control_character(text: str) -> None:
    """The parser of policy date-times (`within_days`, `older_than_days`) and of `--since`,
    `--until` and `--at` too: each refuses what it cannot read."""
    with pytest.raises(ValueError):
        parse_date_time(text)
