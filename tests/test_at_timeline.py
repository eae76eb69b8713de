"""`run --at` against the service's own order: the revision in force at a time is the last one
(by number) made by then, so a revision whose time is earlier than the one before it (a skewed
clock) is judged by `--at` as by a run of the latest; a newest revision dated after the run's
time is judged and named as a data-quality warning; `--at <today>` is an as-of-now run; an
`--at` run's findings.json says as of when."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from conftest import FIXED_NOW, OWNER_TOKEN, emulator_env, run_cli

SCHEMA = Path(__file__).parents[1] / "auditor" / "schemas" / "findings.schema.json"


def _emulator(last_time: str) -> Iterator[Any]:
    """30 revisions; the last turns the sandbox off and is dated `last_time`."""
    from auditor.emulator import generate_dataset, start_emulator

    data = generate_dataset(revisions=30, repos=2, now=FIXED_NOW)
    last = data.history[-1]
    last["settings"] = copy.deepcopy(last["settings"])
    last["settings"]["sandbox"]["enabled"] = False
    last["updatedAt"] = last_time
    with start_emulator(dataset=data, tokens={OWNER_TOKEN: "owner"}) as emu:
        yield emu


@pytest.fixture(scope="module")
def skewed() -> Iterator[Any]:
    yield from _emulator("2026-10-02T00:00:00Z")  # before revision 29's time


@pytest.fixture(scope="module")
def future() -> Iterator[Any]:
    yield from _emulator("9999-12-31T00:00:00Z")


def _sandbox(folder: Path) -> tuple[int, str, dict[str, Any]]:
    """(revision judged, BASE-SBX-001's status, the document) of a run's findings.json."""
    doc = json.loads((folder / "findings.json").read_text())
    jsonschema.validate(doc, json.loads(SCHEMA.read_text()))
    found = next(f for f in doc["findings"] if f["rule_id"] == "BASE-SBX-001")
    return found["subject"]["revision"], found["status"], doc


def test_at_now_judges_what_the_latest_run_judges_on_a_skewed_timeline(
    skewed: Any, tmp_path: Path
) -> None:
    env = emulator_env(skewed, tmp_path / "state.db")
    assert run_cli(["sync", "--no-usage"], env, tmp_path)[0] == 0
    seen = []
    for n, at in enumerate(([], ["--at", "2026-11-01T12:00:00Z"], ["--at", "2026-10-31"])):
        code, _out, err = run_cli(
            ["run", "--offline", "--no-usage", *at, "--out", f"r{n}"], env, tmp_path
        )
        assert code == 1, err
        revision, status, _doc = _sandbox(tmp_path / f"r{n}")
        seen.append((revision, status))
    assert seen == [(30, "fail")] * 3  # the sandbox turned off is never passed over


def test_a_newest_revision_dated_in_the_future_is_named(future: Any, tmp_path: Path) -> None:
    env = emulator_env(future, tmp_path / "state.db")
    code, _out, err = run_cli(["run", "--no-usage", "--out", "r"], env, tmp_path)
    assert code == 1, err
    revision, status, doc = _sandbox(tmp_path / "r")
    assert (revision, status) == (30, "fail")
    warned = [w for w in doc.get("data_quality") or [] if w["item"] == "revision 30"]
    assert warned and "after now" in warned[0]["problem"]
    report = (tmp_path / "r" / "report.md").read_text()
    assert "revision 30" in report and "after now" in report  # the warning, in the report too


def test_at_today_says_how_to_ask_for_now_and_findings_json_says_as_of(
    skewed: Any, tmp_path: Path
) -> None:
    """A date alone that is today is refused with the way to ask for now (its end is to come,
    and an as-of-now run is a run without `--at`, which judges the newest revision whatever its
    time); an `--at` run's findings.json names its time (`run.as_of`), a live run's does not."""
    env = emulator_env(skewed, tmp_path / "state.db")
    assert run_cli(["sync", "--no-usage"], env, tmp_path)[0] == 0
    today = FIXED_NOW.date().isoformat()
    code, _out, err = run_cli(["run", "--offline", "--at", today, "--out", "t"], env, tmp_path)
    assert code == 2 and "is today" in err and "leave --at out" in err
    assert not (tmp_path / "t").exists()
    tomorrow = (FIXED_NOW + timedelta(days=1)).date().isoformat()
    code, _out, err = run_cli(["run", "--offline", "--at", tomorrow, "--out", "t"], env, tmp_path)
    assert code == 2 and "is in the future" in err
    at = "2026-10-31T00:00:00Z"
    code, _out, err = run_cli(
        ["run", "--offline", "--no-usage", "--at", at, "--out", "r"], env, tmp_path
    )
    assert code == 1, err
    revision, _status, doc = _sandbox(tmp_path / "r")
    assert doc["run"]["as_of"] == "2026-10-31T00:00:00+00:00"
    assert revision == 30  # dated 2026-10-02, after revision 29's time: in force by then
    code, _out, err = run_cli(["run", "--offline", "--no-usage", "--out", "live"], env, tmp_path)
    assert "as_of" not in _sandbox(tmp_path / "live")[2]["run"]
