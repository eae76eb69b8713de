"""T53 #2: `auditor review --against live`: a change finding's fingerprint does not hold the
live revision number, so a live change between two pushes of a pull request no longer re-keys
every change alert of the PR (code scanning closed them as fixed and opened new ones, a
dismissal lost). The subject shown keeps the numbers."""

from __future__ import annotations

import json
import shutil
from datetime import timedelta
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]
import pytest
from conftest import FIXED_NOW, OWNER_TOKEN, emulator_env, run_cli

from auditor.report.sarif import FINGERPRINT_KEY

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = json.loads((Path(__file__).parent / "schemas" / "sarif-schema-2.1.0.json").read_text())

pytestmark = pytest.mark.e2e


def _changes(out: Path) -> dict[str, dict[str, Any]]:
    log = json.loads((out / "findings.sarif").read_text())
    jsonschema.Draft4Validator(SCHEMA).validate(log)
    return {
        r["ruleId"]: r
        for r in log["runs"][0]["results"]
        if r["properties"]["subject"].startswith("change:")
    }


def test_a_live_change_between_two_pushes_keeps_the_change_fingerprints(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from auditor.emulator import start_emulator

    ws = tmp_path / "ws"
    (ws / "settings").mkdir(parents=True)
    shutil.copy(ROOT / "examples" / "proposed-settings.yaml", ws / "settings" / "ec.yaml")
    monkeypatch.chdir(ws)
    with start_emulator(tokens={OWNER_TOKEN: "owner"}, now=FIXED_NOW, revisions=60, repos=3) as emu:
        env = {**emulator_env(emu, tmp_path / "state.db"), "GITHUB_WORKSPACE": str(ws)}
        for push in range(2):  # the live settings gain a revision between the two pushes
            code, _, err = run_cli(
                ["review", "settings/ec.yaml", "--out", str(tmp_path / f"r{push}"), "-q",
                 "-o", "json,sarif"],
                env,
                ws,
                now=FIXED_NOW + timedelta(hours=push),
            )  # fmt: skip
            assert code in (0, 1), err
            emu.add_revisions(1)
    first, second = _changes(tmp_path / "r0"), _changes(tmp_path / "r1")
    assert first and second
    subjects = {r["properties"]["subject"] for r in (*first.values(), *second.values())}
    assert subjects == {"change:60..61", "change:61..62"}  # the subjects keep their numbers
    same_place = [
        rule
        for rule in first.keys() & second.keys()
        if first[rule]["locations"] == second[rule]["locations"]
    ]
    assert same_place
    for rule in same_place:
        assert first[rule]["partialFingerprints"] == second[rule]["partialFingerprints"], rule
    # findings.json names the same fingerprint as the SARIF
    doc = json.loads((tmp_path / "r1" / "findings.json").read_text())
    listed = {f["fingerprint"] for f in doc["findings"]}
    assert all(r["partialFingerprints"][FINGERPRINT_KEY] in listed for r in second.values())
