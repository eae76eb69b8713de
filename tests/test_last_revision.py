"""A review whose live settings are revision 2^63-1, the last number the API gives
(`fetch.decode`): its proposal is revision 2^63, beyond the 8-byte arrays the settings walk
and the failing counts held revision numbers in, and the review ended with `auditor: error:
unexpected OverflowError: int too big to convert`, exit 2, online and offline, with or
without the evaluation state a run leaves. It judges the proposal as it does one after any
other revision: the same findings introduced, fixed and unchanged, the same exit."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXED_NOW, OWNER_TOKEN, emulator_env, run_cli

LAST = 2**63 - 1
SMALL = 6  # the same history's live revision, numbered as usual


def _dataset(live: int) -> Any:
    """Five revisions, then the live one numbered `live`, which keeps sessions 31 days."""
    from auditor.emulator import generate_dataset

    data = generate_dataset(revisions=5, repos=2, now=FIXED_NOW)
    last = data.history[-1]
    settings = copy.deepcopy(last["settings"])
    settings["sessionRetentionDays"] = 31
    data.history.append({**last, "revision": live, "settings": settings})
    return data


@pytest.fixture(scope="module")
def emus() -> Iterator[dict[int, Any]]:
    from auditor.emulator import start_emulator

    tokens = {OWNER_TOKEN: "owner"}
    with (
        start_emulator(dataset=_dataset(LAST), tokens=tokens, now=FIXED_NOW) as last,
        start_emulator(dataset=_dataset(SMALL), tokens=tokens, now=FIXED_NOW) as small,
    ):
        yield {LAST: last, SMALL: small}


def _review(emu: Any, folder: Path, *, run_first: bool, offline: bool) -> tuple[Any, ...]:
    """A sync (and an `auditor run`, which leaves its evaluation state), then a review of
    the live settings with sessions kept 400 days: (exit code, stdout, stderr, findings.json
    or None)."""
    folder.mkdir()
    env = emulator_env(emu, folder / "state.db")
    code, _out, err = run_cli(["sync", "-q"], env, folder)
    assert code == 0, err
    if run_first:
        code, _out, err = run_cli(
            ["run", "--offline", "-q", "--out", str(folder / "run")], env, folder
        )
        assert code == 1, err
    proposed = copy.deepcopy(emu.dataset.history[-1]["settings"])
    proposed["sessionRetentionDays"] = 400
    (folder / "proposed.json").write_text(json.dumps(proposed, indent=2))
    argv = ["review", str(folder / "proposed.json"), "--out", str(folder / "review")]
    argv += ["--author", "priya.raman@acme.example", *(["--offline"] if offline else [])]
    code, out, err = run_cli(argv, env, folder)
    report = folder / "review" / "findings.json"  # none when the review failed
    return code, out, err, json.loads(report.read_text()) if report.exists() else None


def _judged(findings: dict[str, Any], live: int) -> list[tuple[Any, ...]]:
    """What the review found, by rule, subject, status and mark (`live..live+1` as `step`)."""
    step = f"change:{live}..{live + 1}"
    return sorted(
        (f["rule_id"], "step" if f["subject"]["key"] == step else f["subject"]["key"],
         f["status"], f["lifecycle"], f["fingerprint"])
        for f in findings["findings"]
    )  # fmt: skip


@pytest.mark.parametrize(
    ("run_first", "offline"),
    [(True, True), (False, True), (False, False)],
    ids=["offline-after-a-run", "offline-no-state", "online"],
)
def test_a_review_after_the_last_revision_number_judges_the_proposal(
    emus: dict[int, Any], tmp_path: Path, run_first: bool, offline: bool
) -> None:
    code, out, err, findings = _review(
        emus[LAST], tmp_path / "last", run_first=run_first, offline=offline
    )
    assert "unexpected" not in err and "Traceback" not in err
    assert err.splitlines()[-1] == (
        "auditor: exit 1: 2 findings introduced by the change at or above severity low"
    )
    assert code == 1
    assert "the change would introduce 2 and fix 0 finding(s); 12 unchanged" in out
    review = findings["review"]
    assert review["against"] == f"rev {LAST} (live)" and findings["complete"] is True
    introduced = {
        (f["rule_id"], f["subject"]["key"])
        for f in findings["findings"]
        if f["fingerprint"] in review["introduced"]
    }
    assert introduced == {
        ("BASE-RET-001", "settings"),
        ("CHG-RET-001", f"change:{LAST}..{LAST + 1}"),
    }
    # the same review of the same history numbered as usual: the same judgement throughout
    small = _review(emus[SMALL], tmp_path / "small", run_first=run_first, offline=offline)
    assert (small[0], small[1].replace(str(tmp_path / "small"), str(tmp_path / "last"))) == (
        code,
        out,
    )
    assert _judged(small[3], SMALL) == _judged(findings, LAST)
    assert small[3]["review"]["introduced"] == review["introduced"]
