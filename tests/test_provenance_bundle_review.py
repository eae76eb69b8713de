"""The data-source lines of an evidence bundle's reports and of a review's (review of T64 MED
2-4's fix): `run` says when the data was last fetched, whether it synced and which revisions
the last sync re-read for the integrity check; `export` (whose reports `verify` re-makes from
the bundle byte for byte) and `review` said none of it."""

from __future__ import annotations

import hashlib
import json
from datetime import timedelta
from pathlib import Path
from typing import Any

from tests.conftest import FIXED_NOW, run_cli

SHIPPED_MODEL = Path(__file__).resolve().parents[1] / "auditor" / "data" / "readiness-criteria.yaml"
WAIVERS = (
    "waivers:\n  - rule: BASE-CMD-001\n    subject: settings\n    reason: accepted risk\n"
    "    owner: sec@acme.example\n    expires: 2027-01-31\n"
)
SECOND = FIXED_NOW + timedelta(hours=1)
LATER = SECOND + timedelta(days=20)
HUMAN = ("report.md", "report.html")


def _synced_twice(env: dict[str, str], cwd: Path) -> None:
    """Two syncs, pages of 10: the second re-reads the newest page (revisions 21-30)."""
    (cwd / "pyproject.toml").write_text("[tool.auditor]\npage_size = 10\n")
    for when in (FIXED_NOW, SECOND):
        code, _, err = run_cli(["sync", "-q"], env, cwd, now=when)
        assert code == 0, err


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8").replace("\\", "")


def test_a_bundles_reports_say_when_the_data_was_fetched_and_verify_reproduces_them(
    env: dict[str, str], tmp_path: Path
) -> None:
    _synced_twice(env, tmp_path)
    model = tmp_path / "mymodel.yaml"
    model.write_text(SHIPPED_MODEL.read_text().replace("0.8", "0.5"))
    (tmp_path / "waivers.yaml").write_text(WAIVERS)
    inputs = ("--readiness-model", "mymodel.yaml", "--waivers", "waivers.yaml", "--no-usage")
    code, _, err = run_cli(
        ["run", "--offline", "--out", "r", "-o", "json", *inputs], env, tmp_path, now=LATER
    )
    assert code in (0, 1), err
    code, _, err = run_cli(["export", "--out", "ev", *inputs], env, tmp_path, now=LATER)
    assert code == 0, err
    bundle = tmp_path / "ev"
    for name in HUMAN:
        text = _text(bundle / "reports" / name)
        assert (
            "last sync 2026-11-01 13:00 UTC (not synced by this export: an export reads the "
            "state file alone)"
        ) in text, name
        assert "revisions 21-30 read again from the service" in text, name
        assert "revisions 1-20 were not read again by it" in text, name
    doc = json.loads((bundle / "reports" / "findings.json").read_text())
    source = doc["inputs"]["data_source"]
    assert source["last_sync"].startswith("2026-11-01T13:00:00")
    assert source["synced_this_run"] is False
    assert source["integrity_rechecked"] == {"first_revision": 21, "last_revision": 30}
    # the readiness model and waivers file, cited as the run cites them
    run_doc = json.loads((tmp_path / "r" / "findings.json").read_text())
    assert doc["inputs"]["files"] == run_doc["inputs"]["files"]
    model_sha = hashlib.sha256(model.read_bytes()).hexdigest()
    assert {"role": "readiness model", "path": "mymodel.yaml", "sha256": model_sha} in (
        doc["inputs"]["files"]
    )
    oscal = json.loads((bundle / "reports" / "findings.oscal.json").read_text())
    props = {p["name"]: p["value"] for p in oscal["assessment-results"]["results"][0]["props"]}
    assert props["integrity-rechecked"] == "21-30"
    params = json.loads((bundle / "run-parameters.json").read_text())
    assert params["dataSource"]["lastSync"].startswith("2026-11-01T13:00:00")
    assert params["dataSource"]["integrityRecheckRecorded"] is True
    assert params["dataSource"]["integrityRechecked"] == [21, 30]
    # JUnit names them too, in the completeness suite's properties (valid JUnit)
    junit = _properties(bundle / "reports" / "junit.xml")
    assert f"mymodel.yaml (sha256 {model_sha})" in junit["readiness-model"]
    assert junit["waivers-file"][0].startswith("waivers.yaml (sha256 ")
    assert len(junit["policy-file"]) == len(doc["policy_files"])
    assert junit["data-fetched"] == [
        "last sync 2026-11-01 13:00 UTC (not synced by this export: an export reads the state "
        "file alone)"
    ]
    assert junit["integrity-check"][0].startswith("revisions 21-30 read again")
    code, out, err = run_cli(["verify", "ev"], env, tmp_path, now=LATER)
    assert code == 0, err
    assert "reports/report.md" in out and "reports/report.html" in out

    # the lines are re-made from run-parameters.json: another last sync there (its manifest
    # entry rewritten to match) and the re-run no longer reproduces the reports
    params["dataSource"]["lastSync"] = "2026-10-01T00:00:00+00:00"
    _rewrite(bundle, "run-parameters.json", json.dumps(params, indent=2) + "\n")
    code, _, err = run_cli(["verify", "ev"], env, tmp_path, now=LATER)
    assert code == 2
    assert "re-run: reports/report.md differs from the re-run's" in err

    # a bundle made before run-parameters.json recorded it is re-made as it was made: its
    # reports carry neither the data-source lines nor the input files' digests
    from auditor.workflows.export import evaluate_bundle

    older = dict(params)
    del older["dataSource"]
    _rewrite(bundle, "run-parameters.json", json.dumps(older, indent=2) + "\n")
    data = evaluate_bundle(bundle)
    assert data.source is None and data.input_files == ()

    # a value export never writes is named by its path, not a traceback
    params["dataSource"]["integrityRechecked"] = [30, "x"]
    _rewrite(bundle, "run-parameters.json", json.dumps(params, indent=2) + "\n")
    code, _, err = run_cli(["verify", "ev"], env, tmp_path, now=LATER)
    assert code == 2
    assert "$.dataSource.integrityRechecked: expected [first, last] revision numbers" in err
    params["dataSource"]["integrityRechecked"] = [21, 30]
    params["dataSource"]["lastSync"] = "2026-11-01T13:00:00"  # no offset: no time to show
    _rewrite(bundle, "run-parameters.json", json.dumps(params, indent=2) + "\n")
    code, _, err = run_cli(["verify", "ev"], env, tmp_path, now=LATER)
    assert code == 2
    assert "$.dataSource.lastSync: expected a time with its UTC offset" in err
    # one the offset moves out of the calendar's range in UTC (review R35 LOW 3: it was an
    # unexpected OverflowError while the reports were written, naming nothing)
    params["dataSource"]["lastSync"] = "9999-12-31T23:59:59-14:00"
    _rewrite(bundle, "run-parameters.json", json.dumps(params, indent=2) + "\n")
    code, _, err = run_cli(["verify", "ev"], env, tmp_path, now=LATER)
    assert code == 2 and "unexpected" not in err, err
    assert "$.dataSource.lastSync: expected a time with its UTC offset" in err


def _properties(path: Path) -> dict[str, list[str]]:
    """The properties of junit.xml's first suite (the completeness one), by name, the file
    checked against the JUnit XSD the tests use."""
    import xml.etree.ElementTree as ET

    import xmlschema  # type: ignore[import-untyped]

    schema = Path(__file__).parent / "schemas" / "junit-10.xsd"
    xmlschema.XMLSchema(str(schema)).validate(str(path))
    suite = ET.parse(path).getroot().find("testsuite")
    assert suite is not None and suite.get("name") == "auditor: completeness"
    found: dict[str, list[str]] = {}
    for prop in suite.iter("property"):
        found.setdefault(prop.get("name", ""), []).append(prop.get("value", ""))
    return found


def test_junit_names_the_runs_inputs_with_their_digests(
    env: dict[str, str], tmp_path: Path
) -> None:
    """JUnit listed no input, unlike the other formats (review of T64 MED 2)."""
    _synced_twice(env, tmp_path)
    (tmp_path / "waivers.yaml").write_text(WAIVERS)
    argv = ["run", "--offline", "--no-usage", "--waivers", "waivers.yaml", "--out", "r"]
    code, _, err = run_cli([*argv, "-o", "json,junit"], env, tmp_path, now=LATER)
    assert code in (0, 1), err
    doc = json.loads((tmp_path / "r" / "findings.json").read_text())
    junit = _properties(tmp_path / "r" / "junit.xml")
    assert junit["policy-file"] == [
        f"{p['path']} (sha256 {p['sha256']})" for p in doc["policy_files"]
    ]
    files = {f["role"]: f for f in doc["inputs"]["files"]}
    shipped = hashlib.sha256(SHIPPED_MODEL.read_bytes()).hexdigest()
    assert junit["readiness-model"] == [f"(shipped) (sha256 {shipped})"]
    waivers_sha = hashlib.sha256((tmp_path / "waivers.yaml").read_bytes()).hexdigest()
    assert files["waivers"]["sha256"] == waivers_sha
    assert junit["waivers-file"] == [f"waivers.yaml (sha256 {waivers_sha})"]
    assert junit["data-fetched"] == [
        "last sync 2026-11-01 13:00 UTC (not synced by this run: --offline)"
    ]
    assert "revisions 1-20 were not read again" in junit["integrity-check"][0]


def _rewrite(bundle: Path, name: str, text: str) -> None:
    (bundle / name).write_text(text)
    manifest = json.loads((bundle / "manifest.json").read_text())
    manifest["files"][name] = {
        "sha256": hashlib.sha256((bundle / name).read_bytes()).hexdigest(),
        "bytes": (bundle / name).stat().st_size,
    }
    (bundle / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")


def _review(env: dict[str, str], cwd: Path, out: str, *extra: str, now: Any) -> Path:
    argv = [
        "review",
        str(cwd / "proposed.json"),
        "--out",
        out,
        "-o",
        "html,md,json,sarif,junit,oscal",
    ]
    code, _, err = run_cli([*argv, "--soft-fail", "-q", *extra], env, cwd, now=now)
    assert code == 0, err
    return cwd / out


def _proposed(cwd: Path) -> None:
    """A proposed file and a base file (what the review judges against is what these tests
    read, not its findings)."""
    settings = {"permissions": {"allow": ["Bash(ls:*)"]}, "env": {}}
    (cwd / "proposed.json").write_text(json.dumps(settings))
    (cwd / "live.json").write_text(json.dumps(settings))


def test_a_reviews_reports_say_what_the_live_side_is(env: dict[str, str], tmp_path: Path) -> None:
    _synced_twice(env, tmp_path)
    _proposed(tmp_path)
    # --offline: the settings the state file's last sync stored
    out = _review(env, tmp_path, "off", "--offline", now=LATER)
    for name in HUMAN:
        text = _text(out / name)
        assert "last sync 2026-11-01 13:00 UTC (not synced by this review: --offline)" in text
        assert "a review reports no integrity issue" in text, name
    doc = json.loads((out / "findings.json").read_text())
    assert doc["inputs"]["data_source"]["synced_this_run"] is False
    assert doc["inputs"]["data_source"]["last_sync"].startswith("2026-11-01T13:00:00")
    sarif = json.loads((out / "findings.sarif").read_text())
    assert sarif["runs"][0]["properties"]["syncedThisRun"] is False
    # online: the settings this review's sync fetched, at its time
    out = _review(env, tmp_path, "on", now=LATER)
    for name in HUMAN:
        assert "last sync 2026-11-21 13:00 UTC (this review synced)" in _text(out / name), name
    doc = json.loads((out / "findings.json").read_text())
    assert doc["inputs"]["data_source"]["synced_this_run"] is True
    junit = _properties(out / "junit.xml")
    assert junit["against"] == ["rev 30 (live)"]
    assert junit["data-fetched"] == ["last sync 2026-11-21 13:00 UTC (this review synced)"]
    # --against FILE: no service data, so no sync to name; the reports name the file
    out = _review(env, tmp_path, "file", "--against", str(tmp_path / "live.json"), now=LATER)
    for name in HUMAN:
        text = _text(out / name)
        assert "last sync" not in text and "live.json" in text, name
    doc = json.loads((out / "findings.json").read_text())
    assert "data_source" not in doc["inputs"]
    junit = _properties(out / "junit.xml")
    assert junit["against"] == [doc["review"]["against"]] and "data-fetched" not in junit
    assert doc["review"]["against"].endswith("live.json")
