"""Usage evidence that is partly missing or comes back short: a day counts as stored only with
every analytics series (sync and run agree, the run is incomplete otherwise); a re-fetch that
sends less than is stored keeps the stored rows, with a data-quality warning naming the day,
the series and the request; and a token the analytics refuse leaves the usage rules `unknown`
on the subject the README names. Run as a user runs them: the CLI against the emulator."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from auditor.emulator import data_analytics, start_emulator
from auditor.fetch.analytics import DayRows
from auditor.fetch.tolerant import DataQuality
from auditor.redact import Redactor
from auditor.workflows.usage import kept_evidence
from tests.conftest import FIXED_NOW, OWNER_TOKEN, emulator_env, run_cli

REPO = Path(__file__).resolve().parents[1]
USAGE_PACK = str(REPO / "policies" / "usage.yaml")
ROLELESS_TOKEN = "test-auditor-token-0123456789"
_REDACTOR = Redactor(b"k")
GAP = date(2026, 10, 10)  # inside the window the emulator's clock gives (Oct 2..31)


@pytest.fixture
def emu() -> Iterator[Any]:
    tokens = {OWNER_TOKEN: "owner", ROLELESS_TOKEN: "auditor"}
    with start_emulator(tokens=tokens, now=FIXED_NOW, revisions=80, repos=4) as e:
        yield e


def _run(env: dict[str, str], tmp_path: Path, out: str, *args: str) -> tuple[int, Any, str]:
    """`auditor run ARGS --out tmp/OUT`: exit code, findings.json, report.md."""
    where = tmp_path / out
    code, _, err = run_cli(["run", *args, "--out", str(where)], env, tmp_path)
    assert code in (0, 1, 2), err
    data = json.loads((where / "findings.json").read_text())
    return code, data, (where / "report.md").read_text()


def _failing(data: Any, rule: str) -> set[str]:
    return {
        f["subject"]["key"]
        for f in data["findings"]
        if f["rule_id"] == rule and f["status"] == "fail"
    }


@pytest.mark.e2e
def test_a_day_the_day_series_left_out_is_not_stored_and_the_run_is_incomplete(
    emu: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The four daily series leave out a day while /users answers for it: the sync said 29 of
    30 days stored, and `run --offline` said 30 of 30, complete, exit 0, the day judged on its
    users alone."""
    every_day = data_analytics.days
    monkeypatch.setattr(
        data_analytics, "days", lambda start, end: [d for d in every_day(start, end) if d != GAP]
    )
    env = emulator_env(emu, tmp_path / "state.db")
    code, out, err = run_cli(["sync"], env, tmp_path)
    assert code == 0, err
    assert "29 of 30 days stored (29 new, 0 fetched again)" in out  # users of Oct 10 stored
    assert f"no row for {GAP}; fetched again next sync" in out
    args = ("--offline", "--policy", USAGE_PACK, "--fail-on", "critical")
    code, data, md = _run(env, tmp_path, "out", *args)
    assert code == 2
    assert data["complete"] is False
    assert data["not_evaluated"] == [
        f"usage: 1 of 30 days of 2026-10-02..2026-10-31 not stored ({GAP}): not judged"
    ]
    assert "Analytics 2026-10-02..2026-10-31: 29 of 30 days stored." in md
    judged = {f["subject"]["key"] for f in data["findings"]}
    assert f"usage@{GAP}" not in judged and "usage@2026-10-11" in judged
    # the next sync asks for the day again; once the API sends it the run is complete
    monkeypatch.setattr(data_analytics, "days", every_day)
    code, out, err = run_cli(["sync"], env, tmp_path)
    assert code == 0 and "30 of 30 days stored (1 new, 2 fetched again)" in out, err
    code, data, md = _run(env, tmp_path, "out2", *args)
    assert (code, data["complete"], data["not_evaluated"]) == (0, True, [])
    assert "30 of 30 days stored." in md


@pytest.mark.e2e
def test_a_refetch_that_sends_no_users_keeps_the_stored_users_and_says_so(
    emu: Any, tmp_path: Path
) -> None:
    """The newest two days are fetched again on every sync. One that came back with
    `users: []` replaced the stored users silently: the next run said "2 resolved" and the
    days passed USE-USR-001 on nothing."""
    env = emulator_env(emu, tmp_path / "state.db")
    code, first, _ = _run(env, tmp_path, "out1", "--policy", USAGE_PACK)
    assert code == 1
    days = {"usage@2026-10-30", "usage@2026-10-31"} & _failing(first, "USE-USR-001")
    assert days  # the newest days (the ones fetched again) break the rule
    people, emu.dataset.analytics_users = emu.dataset.analytics_users, []
    code, again, _ = _run(env, tmp_path, "out2", "--policy", USAGE_PACK)
    emu.dataset.analytics_users = people
    assert code == 1
    assert days <= _failing(again, "USE-USR-001")
    assert _failing(again, "USE-USR-001") == _failing(first, "USE-USR-001")
    assert (again["summary"]["resolved"], again["resolved"]) == (0, [])
    warnings = [json.dumps(w) for w in again.get("data_quality", [])]
    for day in ("2026-10-30", "2026-10-31"):
        named = [w for w in warnings if f"the API sent 0 users for {day}, leaving out" in w]
        assert len(named) == 1, warnings
        assert f"users?startDate={day}&endDate={day}" in named[0]
        assert "their stored rows are kept" in named[0]


def _rows(series: str, data: Any) -> DayRows:
    return DayRows("2026-10-31", series, data, "GET https://svc.test/api/v1/analytics/x")


def test_a_refetch_keeps_users_it_leaves_out_and_takes_the_new_figures_of_the_others() -> None:
    quality = DataQuality()
    stored = [{"user_id": u, "billable_tokens": 5} for u in ("a", "b", "c")]
    sent = [{"user_id": "b", "billable_tokens": 9}, {"user_id": "d", "billable_tokens": 1}]
    kept = kept_evidence(_rows("users", sent), stored, quality)
    assert kept == [
        {"user_id": "a", "billable_tokens": 5},
        {"user_id": "b", "billable_tokens": 9},
        {"user_id": "c", "billable_tokens": 5},
        {"user_id": "d", "billable_tokens": 1},
    ]
    (warning,) = quality.warnings(_REDACTOR)
    assert "sent 2 users for 2026-10-31, leaving out 2 of the 3 stored" in warning.describe()
    # a re-fetch that holds every stored user (and more) replaces them, without a word
    quality = DataQuality()
    grown = [*stored, {"user_id": "d", "billable_tokens": 1}]
    assert kept_evidence(_rows("users", grown), stored, quality) == grown
    assert kept_evidence(_rows("users", []), None, quality) == []  # a first fetch: as sent
    assert quality.warnings(_REDACTOR) == ()


def test_a_refetched_day_row_with_less_in_it_keeps_the_stored_row() -> None:
    stored = {
        "date": "2026-10-31",
        "billable_tokens": 900,
        "by_model": [
            {"model": "m", "billable_tokens": 600},
            {"model": "n", "billable_tokens": 300},
        ],
    }
    quality = DataQuality()
    short = {"date": "2026-10-31", "billable_tokens": 0, "by_model": []}
    assert kept_evidence(_rows("tokens", short), stored, quality) == stored
    (warning,) = quality.warnings(_REDACTOR)
    assert re.search(r"by_model: 0 entries, 2 stored\); the stored row is kept", warning.problem)
    assert warning.item == "tokens 2026-10-31" and "analytics/x" in warning.where
    # the figures grew as the API caught up: the new row replaces the stored one
    quality = DataQuality()
    grown = {**stored, "billable_tokens": 950, "by_model": [*stored["by_model"], {"model": "o"}]}
    assert kept_evidence(_rows("tokens", grown), stored, quality) == grown
    assert quality.warnings(_REDACTOR) == ()


@pytest.mark.e2e
def test_a_refused_token_leaves_usage_rules_unknown_on_the_subject_the_readme_names(
    emu: Any, tmp_path: Path
) -> None:
    env = emulator_env(emu, tmp_path / "state.db", ROLELESS_TOKEN)
    code, data, _ = _run(env, tmp_path, "out", "--policy", USAGE_PACK)
    assert code == 2
    subjects = {
        (f["subject"]["key"], f["subject"]["label"], f["status"])
        for f in data["findings"]
        if f["rule_id"].startswith("USE-")
    }
    assert subjects == {("usage", "usage analytics", "unknown")}
    readme = " ".join((REPO / "README.md").read_text().split())
    assert "every `usage` rule is `unknown` on the subject `usage` (labelled `usage analytics`" in (
        readme
    )
