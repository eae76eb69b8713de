"""A service that pages as the spec allows but not as the emulator does (T15 problems 1, 2, 5).

Each test runs the CLI end to end against the emulator switched to the variant: a readiness
`limit` capped below what auditor asks, a readiness listing oldest first or by report id (the
spec states no order), and a history page that is empty but says `hasMore` with a new cursor.
"""

from __future__ import annotations

import copy
import json
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from auditor.emulator import Emulator, start_emulator
from tests.conftest import FIXED_NOW, OWNER_TOKEN, emulator_env, run_cli

REPORTS = "/api/organization/agent-readiness-reports"
HISTORY = "/api/v0/organization/enterprise-controls/history"
NEW_ID = "ffffffff-ffff-4fff-bfff-ffffffffffff"  # sorts after every other report id


def _emulator() -> Emulator:
    return start_emulator(tokens={OWNER_TOKEN: "owner"}, now=FIXED_NOW, revisions=40, repos=12)


@pytest.fixture
def emu() -> Iterator[Emulator]:
    with _emulator() as e:
        yield e


@pytest.fixture
def plain() -> Iterator[Emulator]:
    with _emulator() as e:
        yield e


def _env(emu: Emulator, tmp: Path, name: str) -> dict[str, str]:
    # one fingerprint key: the stored hashes of two state files can be compared
    key = {"AUDITOR_FINGERPRINT_KEY": "0123456789abcdef0123"}
    return {**emulator_env(emu, tmp / f"{name}.db"), **key}


def _config(tmp: Path, page_size: int) -> str:
    path = tmp / f"page{page_size}.toml"
    path.write_text(f"page_size = {page_size}\n")
    return str(path)


def _sync(env: dict[str, str], tmp: Path, *extra: str) -> str:
    code, out, err = run_cli(["sync", "--no-usage", *extra], env, tmp)
    assert code == 0, err
    return out


def _stored_reports(env: dict[str, str]) -> set[str]:
    with closing(sqlite3.connect(f"file:{env['AUDITOR_STATE']}?mode=ro", uri=True)) as db:
        return {row[0] for row in db.execute("select report_id from reports")}


def _findings(env: dict[str, str], tmp: Path, name: str) -> dict[str, Any]:
    out = tmp / name
    code, _out, err = run_cli(["run", "--no-usage", "--out", str(out), "-q"], env, tmp)
    assert code in (0, 1), err
    data = json.loads((out / "findings.json").read_text())
    return {
        "complete": data["complete"],
        "summary": data["summary"],
        "readiness": data["readiness"],
        "inputs": data["inputs"],
        "findings": sorted(
            json.dumps([f["rule_id"], f["subject"], f["status"], f["message"]], sort_keys=True)
            for f in data["findings"]
        ),
    }


def _report_requests(emu: Emulator) -> list[str]:
    return [path for _method, path in emu.requests if path.startswith(REPORTS)]


def _add_report(emu: Emulator) -> None:
    """The service gets one new report, the newest, with an id that sorts after all others."""
    ds = emu.dataset
    with ds.lock:
        newest = max(
            (r for r in ds.reports if isinstance(r["createdAt"], int)),
            key=lambda r: int(r["createdAt"]),
        )
        added = copy.deepcopy(newest)
        added["reportId"] = NEW_ID
        added["createdAt"] = newest["createdAt"] + 60_000
        ds.reports.append(added)


def test_a_service_capping_limit_gives_every_report_and_the_same_findings(
    emu: Emulator, plain: Emulator, tmp_path: Path
) -> None:
    """Was: the capped first page (7 of the 100 asked) read as the listing's end; every other
    report lost, exit 0, `complete: true`, fewer failures."""
    emu.dataset.report_limit_cap = 7
    capped, full = _env(emu, tmp_path, "capped"), _env(plain, tmp_path, "plain")
    total = len(emu.dataset.reports)
    assert total > 3 * 7
    out = _sync(capped, tmp_path)
    assert f"{total} readiness reports ({total} new)" in out
    _sync(full, tmp_path)
    assert _stored_reports(capped) == _stored_reports(full)
    assert len(_stored_reports(capped)) == total
    # pages of 7 until the empty page that ends the listing
    assert len(_report_requests(emu)) == -(-total // 7) + 1
    got, want = _findings(capped, tmp_path, "run-capped"), _findings(full, tmp_path, "run-plain")
    for key in want:
        assert got[key] == want[key], key


def test_a_service_using_its_own_page_size_gives_every_report(
    emu: Emulator, tmp_path: Path
) -> None:
    """A service that ignores `limit` and sends its default of 20 a page."""
    emu.dataset.report_limit_cap = 20
    env = _env(emu, tmp_path, "state")
    total = len(emu.dataset.reports)
    assert f"{total} readiness reports ({total} new)" in _sync(env, tmp_path)


@pytest.mark.parametrize("order", ["oldest", "id"])
def test_a_later_sync_finds_a_new_report_whatever_the_listing_order(
    emu: Emulator, tmp_path: Path, order: str
) -> None:
    """Was: the second sync stopped after a first page of known reports, so a new report on a
    later page was never fetched ("0 new", exit 0)."""
    emu.dataset.report_order = order
    env = _env(emu, tmp_path, "state")
    config = _config(tmp_path, 10)
    total = len(emu.dataset.reports)
    assert f"{total} readiness reports ({total} new)" in _sync(env, tmp_path, "--config", config)
    _add_report(emu)
    emu.requests.clear()
    out = _sync(env, tmp_path, "--config", config)
    assert (
        f"{total + 1} readiness reports (1 new, every page read: the service does not list "
        "them newest first)" in out
    ), out
    assert "0 integrity issues" in out and "data-quality" not in out
    assert NEW_ID in _stored_reports(env)
    assert len(_report_requests(emu)) == -(-(total + 1) // 10) + 1
    # a third sync: every report re-read as before, none new, none an issue
    out = _sync(env, tmp_path, "--config", config)
    assert f"{total + 1} readiness reports (0 new, every page read" in out
    assert "0 integrity issues" in out


@pytest.mark.parametrize("page", [1, 3])
def test_a_first_page_that_only_looks_newest_first_does_not_stop_a_later_sync(
    emu: Emulator, tmp_path: Path, page: int
) -> None:
    """Reviewer R8: a service listing by id whose first page held one report, or reports of
    one time, passed for newest first, so every later sync stopped after it ("0 new"). The
    order is learned from a whole read of the listing and kept in the state file."""
    emu.dataset.report_order = "id"
    reports = sorted(emu.dataset.reports, key=lambda r: str(r["reportId"]))
    for report in reports[:page]:  # the first page: one time, the newest
        report["createdAt"] = max(int(r["createdAt"]) for r in reports) + 1
    env = _env(emu, tmp_path, "state")
    config = _config(tmp_path, page)
    _sync(env, tmp_path, "--config", config)
    _add_report(emu)
    out = _sync(env, tmp_path, "--config", config)
    assert "(1 new, every page read: the service does not list them newest first)" in out, out
    assert NEW_ID in _stored_reports(env)


def _synced_by_id_at_one_time(emu: Emulator, tmp_path: Path) -> tuple[dict[str, str], str]:
    """A service listing its reports by id, all of one `createdAt` (a bulk import), synced
    once in pages of 5: the environment and the config file of the syncs that follow."""
    emu.dataset.report_order = "id"
    for report in emu.dataset.reports:
        report["createdAt"] = 1_790_000_000_000
    env = _env(emu, tmp_path, "state")
    config = _config(tmp_path, 5)
    _sync(env, tmp_path, "--config", config)
    return env, config


def test_a_listing_of_one_time_is_read_whole_every_sync_and_loses_nothing(
    emu: Emulator, tmp_path: Path
) -> None:
    """Reports that all carry one `createdAt` tell nothing of the order: every sync reads the
    whole listing (no early stop), so a new report on any page is found."""
    env, config = _synced_by_id_at_one_time(emu, tmp_path)
    for _ in range(2):
        _add_report(emu)
        emu.dataset.reports[-1]["reportId"] = NEW_ID[:-1] + str(len(emu.dataset.reports) % 10)
        _sync(env, tmp_path, "--config", config)
        assert emu.dataset.reports[-1]["reportId"] in _stored_reports(env)


def test_a_bulk_of_one_time_then_one_newer_report_does_not_pass_for_newest_first(
    emu: Emulator, tmp_path: Path
) -> None:
    """Reviewer R10: reports imported at one instant, listed by id, then one newer report whose
    id sorts first: a whole read saw a fall and no rise ("newest first"), and every later sync
    stopped after page 1, losing a report whose id sorts last. A page must itself fall (at half
    its steps, 8 times at least) to stop a sync."""
    env, config = _synced_by_id_at_one_time(emu, tmp_path)
    _add_report(emu)
    emu.dataset.reports[-1]["reportId"] = "00000000-0000-4000-8000-000000000000"  # sorts first
    _sync(env, tmp_path, "--config", config)
    _add_report(emu)  # NEW_ID: sorts last, newest
    _sync(env, tmp_path, "--config", config)
    assert NEW_ID in _stored_reports(env)


def test_a_service_that_changes_its_order_loses_no_report(emu: Emulator, tmp_path: Path) -> None:
    """Learned newest first, then the service lists by id: this sync's own pages rise, so it
    reads on (and learns the new order)."""
    env = _env(emu, tmp_path, "state")
    config = _config(tmp_path, 5)
    _sync(env, tmp_path, "--config", config)
    emu.dataset.report_order = "id"
    _add_report(emu)
    out = _sync(env, tmp_path, "--config", config)
    assert NEW_ID in _stored_reports(env), out


def test_the_nightly_against_a_newest_first_service_still_stops_after_one_page(
    emu: Emulator, tmp_path: Path
) -> None:
    env = _env(emu, tmp_path, "state")
    config = _config(tmp_path, 10)
    _sync(env, tmp_path, "--config", config)
    emu.requests.clear()
    out = _sync(env, tmp_path, "--config", config)
    assert _report_requests(emu) == [f"{REPORTS}?limit=10"]
    assert "every page read" not in out
    _add_report(emu)
    emu.requests.clear()
    out = _sync(env, tmp_path, "--config", config)
    # the new report is on page 1, page 2 is all known: two requests, no empty third
    assert len(_report_requests(emu)) == 2
    assert "(1 new) for" in out and NEW_ID in _stored_reports(env)


def test_an_odd_created_at_does_not_break_the_order_check(emu: Emulator, tmp_path: Path) -> None:
    """An ISO 8601 `createdAt` (read, with a data-quality warning) among Unix milliseconds is
    compared as the time it is."""
    emu.dataset.report_order = "id"  # the emulator cannot sort times of two types
    ds = emu.dataset
    with ds.lock:
        ds.reports[3] = {**ds.reports[3], "createdAt": "2026-10-01T00:00:00Z"}
    env = _env(emu, tmp_path, "state")
    config = _config(tmp_path, 10)
    _sync(env, tmp_path, "--config", config)
    _add_report(emu)
    out = _sync(env, tmp_path, "--config", config)
    assert "(1 new, every page read" in out and "data-quality warning" in out
    assert NEW_ID in _stored_reports(env)


def test_an_empty_history_page_that_goes_on_with_a_new_cursor_loses_nothing(
    emu: Emulator, plain: Emulator, tmp_path: Path
) -> None:
    """Was: `$.pagination.hasMore: true on an empty page`, exit 2, nothing saved. A service
    that filters after paging sends such a page; its new cursor is followed."""
    emu.faults.add("history", "empty_has_more", page=2)
    env, full = _env(emu, tmp_path, "state"), _env(plain, tmp_path, "plain")
    out = _sync(env, tmp_path, "--config", _config(tmp_path, 10))
    revisions = len(emu.dataset.history)
    assert f"{revisions} revisions ({revisions} new)" in out
    assert ("history", "empty_has_more", 2) in emu.faults.fired
    assert "data-quality" not in out
    _sync(full, tmp_path)
    with closing(sqlite3.connect(f"file:{env['AUDITOR_STATE']}?mode=ro", uri=True)) as db:
        got = sorted(r for (r,) in db.execute("select revision from revisions"))
    assert got == sorted(c["revision"] for c in plain.dataset.history)


def test_an_empty_first_history_page_that_goes_on_is_not_an_empty_history(
    emu: Emulator, tmp_path: Path
) -> None:
    """The went-back warning ("the service's history is empty") is for an empty listing, not
    for an empty first page followed by revisions."""
    env = _env(emu, tmp_path, "state")
    _sync(env, tmp_path)
    emu.add_revisions(2)
    emu.faults.add("history", "empty_has_more", page=1)
    out = _sync(env, tmp_path)
    assert "(2 new)" in out and "went back" not in out


def test_empty_history_pages_that_never_end_are_stopped_by_the_page_cap(
    emu: Emulator, tmp_path: Path
) -> None:
    emu.faults.add("history", "empty_has_more", times=0)
    path = tmp_path / "cap.toml"
    path.write_text("max_pages = 5\n")
    code, _out, err = run_cli(
        ["sync", "--no-usage", "--config", str(path)], _env(emu, tmp_path, "s"), tmp_path
    )
    assert code == 2
    assert "history paging stopped: more than 5 pages" in err
