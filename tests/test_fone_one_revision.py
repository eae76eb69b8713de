"""A history of one revision (a new organization's first sync, `--at` before the second) has no
change step: each change rule is one `not_applicable` result saying so, not an item not
evaluated, so the run exits by its findings and is a baseline; the next night's second
revision is judged as a step. A history that does not hold the revision alone (none read, or
steps given apart from it) still leaves the change rules not evaluated (review T93 #1)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXED_NOW, OWNER_TOKEN, emulator_env, run_cli

from auditor.evaluate.engine import Steps, evaluate
from auditor.evaluate.model import EvaluationInputs
from auditor.models import Revision, User
from auditor.policy import load_policies

POLICIES = Path(__file__).parents[1] / "policies"
NO_STEP = "no change step to judge: the stored history holds one revision (rev 1)"


@pytest.fixture
def one_revision() -> Iterator[Any]:
    from auditor.emulator import start_emulator

    with start_emulator(revisions=1, repos=2, now=FIXED_NOW, tokens={OWNER_TOKEN: "owner"}) as emu:
        yield emu


def _findings(folder: Path) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((folder / "findings.json").read_text())
    return doc


def _change(doc: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [
        (f["subject"]["key"], f["status"], f["message"])
        for f in doc["findings"]
        if f["subject"]["kind"] == "change"
    ]


def _change_rules() -> set[str]:
    return {r.id for r in load_policies([POLICIES]).rules if r.target == "change"}


def test_one_revision_run_is_complete_and_the_next_night_judges_the_step(
    one_revision: Any, tmp_path: Path
) -> None:
    env = emulator_env(one_revision, tmp_path / "state.db")
    args = ["run", "--no-usage", "--no-readiness", "-o", "json,md"]
    code, _out, err = run_cli([*args, "--out", "r1"], env, tmp_path)
    assert code == 1, err  # the settings rules' findings, not an incomplete audit
    assert "not evaluated" not in err and "incomplete" not in err
    first = _findings(tmp_path / "r1")
    assert first["complete"] is True and first["not_evaluated"] == []
    changes = _change(first)
    assert len(changes) == len(_change_rules())  # one result per change rule
    assert {(key, status) for key, status, _ in changes} == {("change:all", "not_applicable")}
    assert all(message.startswith(NO_STEP) for _, _, message in changes)
    assert first["summary"]["by_status"]["not_applicable"] >= len(changes)  # counted
    report = (tmp_path / "r1" / "report.md").read_text()
    assert "item(s) not evaluated" not in report  # no incomplete banner
    assert f"{first['summary']['by_status']['not_applicable']} not applicable" in report

    # the next night: a second revision, one step, judged; this run compares with the first
    one_revision.add_revisions(1)
    code, _out, err = run_cli([*args, "--out", "r2"], env, tmp_path)
    assert code in (0, 1), err
    second = _findings(tmp_path / "r2")
    assert second["complete"] is True
    assert second["run"]["previous_run_id"] == first["run"]["id"]  # the first is a baseline
    changes = _change(second)
    assert changes and {key for key, _, _ in changes} == {"change:1..2"}
    assert not any(NO_STEP in message for _, _, message in changes)


def test_at_before_the_second_revision_and_all_revisions(one_revision: Any, tmp_path: Path) -> None:
    env = emulator_env(one_revision, tmp_path / "state.db")
    assert run_cli(["sync", "--no-usage"], env, tmp_path)[0] == 0
    one_revision.add_revisions(1)
    assert run_cli(["sync", "--no-usage"], env, tmp_path)[0] == 0
    first = one_revision.dataset.history[0]["updatedAt"]
    at = (datetime.fromisoformat(first.replace("Z", "+00:00")) + timedelta(minutes=1)).isoformat()
    base = ["run", "--offline", "--no-usage", "--no-readiness", "-o", "json", "--at", at]
    for n, extra in enumerate(([], ["--all-revisions"])):
        code, _out, err = run_cli([*base, *extra, "--out", f"r{n}"], env, tmp_path)
        assert code == 1, err
        doc = _findings(tmp_path / f"r{n}")
        assert doc["complete"] is True and doc["not_evaluated"] == []
        changes = _change(doc)
        assert len(changes) == len(_change_rules())
        assert {(key, status) for key, status, _ in changes} == {("change:all", "not_applicable")}


NOW = FIXED_NOW


def _rev(n: int) -> Revision:
    return Revision(n, NOW - timedelta(days=10 - n), User("u", "u@x.example", "U"), {}, "h")


def test_without_the_revision_alone_change_rules_stay_not_evaluated() -> None:
    policy = load_policies([POLICIES])
    only = replace(policy, rules=tuple(r for r in policy.rules if r.id == "CHG-AUT-001"))
    missing = "CHG-AUT-001: not evaluated (no revision steps (fewer than two revisions))"
    # a history read as empty, though a revision is under test
    empty: tuple[Revision, ...] = ()
    inputs = EvaluationInputs(NOW, _rev(1), history=empty, steps=Steps(empty))
    assert evaluate(only, inputs).not_evaluated == (missing,)
    # a history whose one revision is not the one under test
    other = (_rev(2),)
    inputs = EvaluationInputs(NOW, _rev(1), history=other, steps=Steps(other))
    assert evaluate(only, inputs).not_evaluated == (missing,)
    # no step given apart from the history (as a review or a test case gives them)
    inputs = EvaluationInputs(NOW, _rev(1), history=(_rev(1),), steps=())
    assert evaluate(only, inputs).not_evaluated == (missing,)
    # the revision alone: not applicable, nothing missing
    alone = (_rev(1),)
    result = evaluate(only, EvaluationInputs(NOW, alone[0], history=alone, steps=Steps(alone)))
    assert result.complete
    assert [(r.subject.key, r.status) for r in result.results] == [("change:all", "not_applicable")]
    assert result.results[0].message.startswith(NO_STEP)


def test_a_history_cut_to_one_revision_behind_auditors_back_is_refused_as_damaged(
    one_revision: Any, tmp_path: Path
) -> None:
    """Review R68: with revision 1's row deleted from a two-revision state file, the one left
    made the change rules `not_applicable`: the run exited 0, was a baseline and marked the
    step's finding resolved. A history that lost rows is no history of one revision: the
    state file is damaged, as `export` says of it."""
    import sqlite3

    env = emulator_env(one_revision, tmp_path / "state.db")
    one_revision.add_revisions(1)
    args = ["run", "--no-usage", "--no-readiness", "-o", "json"]
    code, _out, err = run_cli([*args, "--out", "r1"], env, tmp_path)
    assert code in (0, 1), err
    assert {key for key, _, _ in _change(_findings(tmp_path / "r1"))} == {"change:1..2"}
    db = sqlite3.connect(tmp_path / "state.db")
    with db:
        db.execute("DELETE FROM revisions WHERE revision = 1")
    db.close()
    code, _out, err = run_cli([*args, "--offline", "--out", "r2"], env, tmp_path)
    assert code == 2, err  # as `export` refuses it: the file is damaged, and what to do
    assert "is damaged" in err and "1 deleted since" in err and "restore a copy" in err, err
    assert not (tmp_path / "r2" / "findings.json").exists()  # no report "resolves" the step
