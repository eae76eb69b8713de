"""An author whose e-mail the redactor hides (a service account's random id that the value
detectors take for a token) is an unknown author: the author rule (CHG-ATH-001) is `unknown`
on that step, a finding a waiver can cover, not an `error` that left every later nightly run
incomplete (exit 2) with nothing to clear it."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXED_NOW, OWNER_TOKEN, emulator_env, run_cli

HIDDEN = "ZX8qLmN4pR7sT2vW9yB3cD6fG1hJ5kM0@acme.example"


@pytest.fixture(scope="module")
def emu() -> Iterator[Any]:
    from auditor.emulator import generate_dataset, start_emulator

    data = generate_dataset(revisions=20, repos=2, now=FIXED_NOW)
    last = data.history[-1]
    settings = copy.deepcopy(last["settings"])
    settings["sessionRetentionDays"] = 31
    user = {"id": "usr_svc", "email": HIDDEN, "name": "svc"}
    data.history.append(
        {**last, "revision": last["revision"] + 1, "settings": settings, "user": user}
    )
    with start_emulator(dataset=data, tokens={OWNER_TOKEN: "owner"}) as e:
        yield e


def _author_results(folder: Path) -> dict[str, str]:
    doc = json.loads((folder / "findings.json").read_text())
    return {
        f["subject"]["key"]: f["status"] for f in doc["findings"] if f["rule_id"] == "CHG-ATH-001"
    }


def test_a_hidden_author_is_unknown_night_after_night(emu: Any, tmp_path: Path) -> None:
    env = emulator_env(emu, tmp_path / "state.db")
    for n, argv in enumerate((["run"], ["run", "--offline"])):  # the state read back too
        code, _out, err = run_cli([*argv, "--out", f"r{n}"], env, tmp_path)
        assert code == 1, err  # findings, not an incomplete run
        assert "not evaluated" not in err
        assert _author_results(tmp_path / f"r{n}")["change:20..21"] == "unknown"
        assert HIDDEN not in (tmp_path / f"r{n}" / "report.md").read_text()


def test_a_waiver_covers_it(emu: Any, tmp_path: Path) -> None:
    """What the README offers for an author rule on a bot's change: a waiver by subject."""
    env = emulator_env(emu, tmp_path / "state.db")
    (tmp_path / "waivers.yaml").write_text(
        "waivers:\n"
        "  - rule: CHG-ATH-001\n"
        "    subject: change:20..21\n"
        "    reason: service account applying settings from code\n"
        "    owner: sec@acme.example\n"
        "    expires: 2027-01-01\n"
    )
    code, _out, err = run_cli(["run", "--waivers", "waivers.yaml", "--out", "r"], env, tmp_path)
    assert code in (0, 1), err
    assert "not evaluated" not in err
    assert _author_results(tmp_path / "r")["change:20..21"] == "waived"
