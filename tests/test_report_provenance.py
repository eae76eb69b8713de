"""Every report ties itself to its inputs and data (tester T64 MED 2-4): the readiness model
and the waivers file with their digests, when the stored data was last fetched and whether
the run synced, and which stored revisions the last sync compared with the service."""

from __future__ import annotations

import hashlib
import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]

from auditor.report.jsonout import schema
from tests.conftest import FIXED_NOW, run_cli
from tests.test_report_oscal import problems

SHIPPED_MODEL = Path(__file__).resolve().parents[1] / "auditor" / "data" / "readiness-criteria.yaml"
FORMATS = ("report.md", "report.html", "findings.json", "findings.sarif", "findings.oscal.json")
WAIVERS = (
    "waivers:\n  - rule: BASE-CMD-001\n    subject: settings\n    reason: {reason}\n"
    "    owner: sec@acme.example\n    expires: 2027-01-31\n"
)


def _texts(out: Path) -> dict[str, str]:
    return {name: (out / name).read_text(encoding="utf-8") for name in FORMATS}


def _setup(tmp_path: Path) -> None:
    # pages of 10: the history of 30 revisions takes three, and a later sync re-reads one
    (tmp_path / "pyproject.toml").write_text("[tool.auditor]\npage_size = 10\n")


def _run(env: dict[str, str], cwd: Path, out: str, *extra: str, now: Any) -> Path:
    argv = ["run", "--no-usage", "--out", out, "-o", "html,md,json,sarif,oscal", *extra]
    code, _, err = run_cli(argv, env, cwd, now=now)
    assert code in (0, 1), err
    return cwd / out


def test_offline_run_names_the_last_sync_model_waivers_and_integrity_coverage(
    env: dict[str, str], tmp_path: Path
) -> None:
    _setup(tmp_path)
    first, second = FIXED_NOW, FIXED_NOW + timedelta(hours=1)
    for when in (first, second):
        code, _, err = run_cli(["sync", "-q"], env, tmp_path, now=when)
        assert code == 0, err
    model = tmp_path / "mymodel.yaml"
    model.write_text(SHIPPED_MODEL.read_text().replace("0.8", "0.5"))
    waivers = tmp_path / "waivers.yaml"
    waivers.write_text(WAIVERS.format(reason="accepted risk"))
    later = second + timedelta(days=20)
    extra = ("--offline", "--readiness-model", "mymodel.yaml", "--waivers", "waivers.yaml")
    out = _run(env, tmp_path, "r1", *extra, now=later)
    model_sha = hashlib.sha256(model.read_bytes()).hexdigest()
    waivers_sha = hashlib.sha256(waivers.read_bytes()).hexdigest()
    for name, text in _texts(out).items():
        assert model_sha in text, name
        assert waivers_sha in text, name
        assert "mymodel.yaml" in text, name
    human = {n: t for n, t in _texts(out).items() if n.startswith("report.")}
    for name, text in human.items():
        # the second sync's time, not the run's, and that this run did not sync
        assert "last sync 2026-11-01 13:00 UTC" in text, name
        assert "not synced by this run: --offline" in text, name
        assert "revisions 21-30 read again from the service" in text, name
        assert "revisions 1-20 were not read again by it" in text, name
    doc = json.loads((out / "findings.json").read_text())
    source = doc["inputs"]["data_source"]
    assert source["last_sync"].startswith("2026-11-01T13:00:00")
    assert source["synced_this_run"] is False
    assert source["integrity_rechecked"] == {"first_revision": 21, "last_revision": 30}
    files = {f["role"]: f for f in doc["inputs"]["files"]}
    assert files["readiness model"] == {
        "role": "readiness model",
        "path": "mymodel.yaml",
        "sha256": model_sha,
    }
    assert files["waivers"]["sha256"] == waivers_sha
    oscal = json.loads((out / "findings.oscal.json").read_text())
    result = oscal["assessment-results"]["results"][0]
    props = {p["name"]: p["value"] for p in result["props"]}
    assert props["last-sync"].startswith("2026-11-01T13:00:00")
    assert props["synced-this-run"] == "false"
    assert props["integrity-rechecked"] == "21-30"
    hashes = [
        h["value"]
        for r in oscal["assessment-results"]["back-matter"]["resources"]
        for link in r.get("rlinks", [])
        for h in link.get("hashes", [])
    ]
    assert model_sha in hashes and waivers_sha in hashes

    # the documents with the new fields still pass their schemas (findings.json's, SARIF
    # 2.1.0, NIST's OSCAL and compliance-trestle's models)
    jsonschema.Draft202012Validator(schema()).validate(doc)
    sarif_schema = Path(__file__).parent / "schemas" / "sarif-schema-2.1.0.json"
    sarif = json.loads((out / "findings.sarif").read_text())
    jsonschema.Draft4Validator(json.loads(sarif_schema.read_text())).validate(sarif)
    assert sarif["runs"][0]["properties"]["syncedThisRun"] is False
    assert problems(oscal) == []

    # another model: another digest, the old one gone
    model.write_text(SHIPPED_MODEL.read_text().replace("0.8", "0.6"))
    other = hashlib.sha256(model.read_bytes()).hexdigest()
    out2 = _run(env, tmp_path, "r2", *extra, now=later)
    for name, text in _texts(out2).items():
        assert other in text and model_sha not in text, name


def test_online_run_says_it_synced_and_names_the_shipped_model(
    env: dict[str, str], tmp_path: Path
) -> None:
    _setup(tmp_path)
    now = FIXED_NOW + timedelta(days=3)
    out = _run(env, tmp_path, "r", now=now)
    shipped = hashlib.sha256(SHIPPED_MODEL.read_bytes()).hexdigest()
    for name, text in _texts(out).items():
        assert shipped in text and "(shipped)" in text.replace("\\", ""), name
    for name in ("report.md", "report.html"):
        text = (out / name).read_text()
        assert "last sync 2026-11-04 12:00 UTC (this run synced)" in text.replace("\\", ""), name
        # the first sync of an empty state file read no stored revision again
        assert "read no stored revision again" in text, name
    doc = json.loads((out / "findings.json").read_text())
    assert doc["inputs"]["data_source"]["synced_this_run"] is True
    assert doc["inputs"]["data_source"]["integrity_rechecked"] is None
    assert "waivers" not in {f["role"] for f in doc["inputs"]["files"]}


def test_a_waivers_file_holding_a_secret_is_cited_by_its_copys_digest(
    env: dict[str, str], tmp_path: Path
) -> None:
    _setup(tmp_path)
    secret = "ghp_" + "abcdefghijklmnopqrstuvwxyz0123456789"
    waivers = tmp_path / "waivers.yaml"
    waivers.write_text(WAIVERS.format(reason=f'"old key {secret} rotated"'))
    plain = hashlib.sha256(waivers.read_bytes()).hexdigest()
    out = _run(env, tmp_path, "r", "--waivers", "waivers.yaml", now=FIXED_NOW)
    doc = json.loads((out / "findings.json").read_text())
    cited = {f["role"]: f["sha256"] for f in doc["inputs"]["files"]}["waivers"]
    assert cited != plain
    for name, text in _texts(out).items():
        assert plain not in text and secret not in text, name
        assert cited in text, name
    # the digest is the evidence bundle's copy's, as a policy file's is
    code, _, err = run_cli(
        ["export", "--out", "ev", "--waivers", "waivers.yaml"], env, tmp_path, now=FIXED_NOW
    )
    assert code == 0, err
    assert hashlib.sha256((tmp_path / "ev/inputs/waivers.yaml").read_bytes()).hexdigest() == cited


def test_a_state_whose_last_sync_recorded_no_recheck_says_the_coverage_is_unknown(
    env: dict[str, str], tmp_path: Path
) -> None:
    """A state file last synced by an older auditor (no `history_recheck` kept): the reports
    do not claim any coverage."""
    import sqlite3

    _setup(tmp_path)
    code, _, err = run_cli(["sync", "-q"], env, tmp_path, now=FIXED_NOW)
    assert code == 0, err
    with sqlite3.connect(env["AUDITOR_STATE"]) as db:
        db.execute("DELETE FROM meta WHERE key = 'history_recheck'")
    out = _run(env, tmp_path, "r", "--offline", now=FIXED_NOW)
    for name in ("report.md", "report.html"):
        assert "which stored revisions were compared with the service is not known" in (
            (out / name).read_text()
        ), name
    doc = json.loads((out / "findings.json").read_text())
    assert doc["inputs"]["data_source"]["integrity_recheck_recorded"] is False
