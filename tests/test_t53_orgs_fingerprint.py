"""T53 #4: `run --orgs`: each organization's findings.sarif results carry fingerprints of
their own (the organization is part of them), so code scanning never merges two
organizations' results into one alert; a run of one organization keeps its fingerprints."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]
import pytest

from auditor.report.sarif import FINGERPRINT_KEY
from tests.test_orgs import _run  # the CLI in this process, at test_orgs' NOW (the same)

NOW = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
TOKEN = "demo-owner-token"
NAMES = ("acme", "Globex.EU")
SCHEMA = json.loads((Path(__file__).parent / "schemas" / "sarif-schema-2.1.0.json").read_text())

pytestmark = pytest.mark.e2e


@pytest.fixture
def emulators() -> Iterator[list[Any]]:
    from auditor.emulator import start_emulator

    started = [start_emulator(seed=s, revisions=30, repos=3, now=NOW) for s in (1, 1)]
    try:
        yield started
    finally:
        for emu in started:
            emu.stop()


def _log(path: Path) -> dict[str, Any]:
    log: dict[str, Any] = json.loads(path.read_text())
    jsonschema.Draft4Validator(SCHEMA).validate(log)
    return log


def _keys(log: dict[str, Any]) -> set[tuple[str, str, str]]:
    return {
        (
            r["ruleId"],
            r["partialFingerprints"][FINGERPRINT_KEY],
            json.dumps(r["locations"], sort_keys=True),
        )
        for r in log["runs"][0]["results"]
    }


def test_organizations_never_share_an_alert(emulators: list[Any], tmp_path: Path) -> None:
    # the same data in both (seed 1): every result would be the same alert on main's code
    orgs = tmp_path / "orgs.toml"
    orgs.write_text(
        "\n".join(
            f'[[org]]\nname = "{name}"\nbase_url = "{emu.base_url}"\n'
            f'app_url = "{emu.app_url}"\ntoken_env = "T"\n'
            for name, emu in zip(NAMES, emulators, strict=True)
        )
    )
    env = {"T": TOKEN, "AUDITOR_STATE": str(tmp_path / "st" / "state.db")}
    argv = ["run", "--orgs", str(orgs), "--out", str(tmp_path / "r"), "-o", "json,sarif"]
    code, _, err = _run(argv, env, tmp_path)
    assert code in (0, 1), err
    logs = {name: _log(tmp_path / "r" / name / "findings.sarif") for name in NAMES}
    a, b = (_keys(logs[name]) for name in NAMES)
    assert a and b
    assert not a & b, f"{len(a & b)} results shared by both organizations"
    for name in NAMES:  # <org>|<findings.json's fingerprint>, hashed
        doc = json.loads((tmp_path / "r" / name / "findings.json").read_text())
        ours = {
            hashlib.sha256(f"{name}|{f['fingerprint']}".encode()).hexdigest()[:32]
            for f in doc["findings"]
        }
        assert {fp for _, fp, _ in _keys(logs[name])} <= ours
    # one organization's run (no --orgs) keeps findings.json's fingerprints
    one = {
        "AUDITOR_BASE_URL": emulators[0].base_url,
        "AUDITOR_APP_URL": emulators[0].app_url,
        "AUDITOR_TOKEN": TOKEN,
        "AUDITOR_STATE": str(tmp_path / "one.db"),
        "AUDITOR_ORG": "acme",
    }
    code, _, err = _run(["run", "--out", str(tmp_path / "one"), "-o", "json,sarif"], one, tmp_path)
    assert code in (0, 1), err
    doc = json.loads((tmp_path / "one" / "findings.json").read_text())
    listed = {fp for _, fp, _ in _keys(_log(tmp_path / "one" / "findings.sarif"))}
    assert listed and listed <= {f["fingerprint"] for f in doc["findings"]}
