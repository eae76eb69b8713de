"""What an external auditor reads off each report of a run (tester T22): the data-quality
warnings, the rules left out, the `--all-revisions` view, where the data came from and which
policy file was evaluated, said in every format, not only in report.md and report.html."""

from __future__ import annotations

import hashlib
import json
import shutil
from contextlib import closing
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import pytest

from auditor.policy import SHIPPED_POLICY_DIR
from tests.conftest import emulator_env, run_cli


@pytest.fixture(scope="module")
def synced(emu: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A state file synced once from the module's emulator (copied by each test that runs)."""
    folder = tmp_path_factory.mktemp("synced")
    state = folder / "state.db"
    code, _, err = run_cli(["sync"], env=emulator_env(emu, state), cwd=folder)
    assert code == 0, err
    return state


@pytest.fixture
def state(synced: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "state.db"
    shutil.copyfile(synced, copy)
    return copy


def _sarif_notes(out: Path) -> list[str]:
    sarif = json.loads((out / "findings.sarif").read_text())
    notes = sarif["runs"][0]["invocations"][0]["toolExecutionNotifications"]
    return [n["message"]["text"] for n in notes]


def _completeness(out: Path) -> ElementTree.Element:
    root = ElementTree.parse(out / "junit.xml").getroot()
    (suite,) = [s for s in root if s.get("name") == "auditor: completeness"]
    return suite


def _oscal_result(out: Path) -> dict[str, Any]:
    result: dict[str, Any] = json.loads((out / "findings.oscal.json").read_text())[
        "assessment-results"
    ]["results"][0]
    return result


def _props(result: dict[str, Any], name: str) -> list[str]:
    return [p["value"] for p in result["props"] if p["name"] == name]


ALL = ["-o", "html,md,json,sarif,junit,oscal", "-q"]


def test_readiness_not_synced_is_a_warning_in_oscal_sarif_and_junit(
    emu: Any, state: Path, tmp_path: Path
) -> None:
    """No app URL: the readiness reports were not refreshed. Every format says so (OSCAL said
    "every rule was evaluated" and nothing else)."""
    env = emulator_env(emu, state)
    del env["AUDITOR_APP_URL"]
    out = tmp_path / "r"
    code, _, err = run_cli(["run", "--out", str(out), *ALL], env=env, cwd=tmp_path)
    assert code in (0, 1), err
    (warning,) = json.loads((out / "findings.json").read_text())["data_quality"]
    assert "no app URL" in warning["problem"]
    result = _oscal_result(out)
    assert "every rule was evaluated" not in result["description"]
    assert "1 data-quality warning" in result["description"]
    assert any("no app URL" in v for v in _props(result, "data-quality-warning"))
    assert "no app URL" in result["remarks"]
    assert any("no app URL" in n for n in _sarif_notes(out))
    suite = _completeness(out)
    values = [p.get("value", "") for p in suite.iter("property")]
    assert any("no app URL" in v for v in values)
    assert "no app URL" in "".join(suite.itertext())


@pytest.mark.parametrize(
    ("flag", "targets"), [("--no-usage", {"usage"}), ("--no-readiness", {"readiness", "org"})]
)
def test_rules_left_out_are_named_in_json_sarif_and_junit(
    emu: Any, state: Path, tmp_path: Path, flag: str, targets: set[str]
) -> None:
    out = tmp_path / "r"
    env = emulator_env(emu, state)
    code, _, err = run_cli(
        ["run", "--offline", flag, "--out", str(out), *ALL], env=env, cwd=tmp_path
    )
    assert code in (0, 1), err
    data = json.loads((out / "findings.json").read_text())
    assert data["complete"] is True  # left out on purpose: the run is still complete
    left = data["rules_left_out"]
    assert {e["target"] for e in left} == targets
    for entry in left:
        assert flag in entry["reason"]
        assert len(entry["rule_ids"]) == entry["count"] > 0
        evaluated = {r["id"] for r in data["rules"]}
        assert not evaluated & set(entry["rule_ids"])
    assert any(flag in n for n in _sarif_notes(out))
    sarif = json.loads((out / "findings.sarif").read_text())
    assert {e["target"] for e in sarif["runs"][0]["properties"]["rulesLeftOut"]} == targets
    suite = _completeness(out)
    names = {p.get("name") for p in suite.iter("property")}
    assert {f"rules-left-out-{t}" for t in targets} <= names
    assert flag in "".join(suite.itertext())


def test_a_complete_nightly_names_no_rule_left_out(emu: Any, state: Path, tmp_path: Path) -> None:
    out = tmp_path / "r"
    env = emulator_env(emu, state)
    code, _, err = run_cli(["run", "--offline", "--out", str(out), *ALL], env=env, cwd=tmp_path)
    assert code in (0, 1), err
    data = json.loads((out / "findings.json").read_text())
    assert data["rules_left_out"] == []
    assert data["run"]["all_revisions"] is False
    assert not any("not evaluated" in n for n in _sarif_notes(out))


def test_an_all_revisions_run_is_named_in_every_report(
    emu: Any, state: Path, tmp_path: Path
) -> None:
    env = emulator_env(emu, state)
    nightly, every = tmp_path / "n", tmp_path / "a"
    for out, extra in ((nightly, []), (every, ["--all-revisions"])):
        code, _, err = run_cli(
            ["run", "--offline", *extra, "--out", str(out), *ALL], env=env, cwd=tmp_path
        )
        assert code in (0, 1), err
    for name in ("report.md", "report.html", "findings.oscal.json"):
        assert "--all-revisions" in (every / name).read_text(), name
        assert "--all-revisions</code>: every" not in (nightly / name).read_text(), name
    assert json.loads((every / "findings.json").read_text())["run"]["all_revisions"] is True
    assert json.loads((nightly / "findings.json").read_text())["run"]["all_revisions"] is False
    assert _props(_oscal_result(every), "all-revisions") == ["true"]
    assert _props(_oscal_result(nightly), "all-revisions") == ["false"]
    assert "every stored revision" in _oscal_result(every)["description"]

    def scope(out: Path) -> str:
        text = (out / "report.md").read_text()
        return text[text.index("### Scope") : text.index("### Usage")]

    assert scope(nightly) != scope(every)


def test_offline_run_names_the_address_the_state_was_synced_from(
    emu: Any, state: Path, tmp_path: Path
) -> None:
    env = {"AUDITOR_STATE": str(state)}  # no address, no token: `run --offline` on the state
    out = tmp_path / "r"
    code, _, err = run_cli(["run", "--offline", "--out", str(out), "-o", "md,json,oscal", "-q"],
                           env=env, cwd=tmp_path)  # fmt: skip
    assert code in (0, 1), err
    data = json.loads((out / "findings.json").read_text())
    assert data["run"]["api_address"] == emu.base_url
    assert f"API {emu.base_url}" in (out / "report.md").read_text().replace("&#8203;", "")
    assert "(offline)" not in (out / "report.md").read_text()


def test_offline_review_names_the_address_the_state_was_synced_from(
    emu: Any, state: Path, tmp_path: Path
) -> None:
    """R16 #3: `review --offline` said `(offline)` where `run --offline` names the address
    the live side was synced from."""
    env = {"AUDITOR_STATE": str(state)}  # no address, no token
    proposed = tmp_path / "proposed.json"
    proposed.write_text('{"sandboxEnabled": false}\n')
    out = tmp_path / "r"
    code, _, err = run_cli(["review", str(proposed), "--offline", "--out", str(out),
                            "-o", "md,json,oscal,sarif", "-q"], env=env, cwd=tmp_path)  # fmt: skip
    assert code in (0, 1), err
    data = json.loads((out / "findings.json").read_text())
    assert data["run"]["api_address"] == emu.base_url
    assert f"API {emu.base_url}" in (out / "report.md").read_text().replace("&#8203;", "")
    assert "(offline)" not in (out / "report.md").read_text()
    assert _props(_oscal_result(out), "api-address") == [emu.base_url]
    # the default SARIF category names the service's host, as an online review's does
    sarif = json.loads((out / "findings.sarif").read_text())["runs"][0]
    assert sarif["automationDetails"]["id"].startswith("auditor/127.0.0.1/review/"), sarif[
        "automationDetails"
    ]


def test_a_review_names_the_ids_of_the_rules_it_leaves_out(
    emu: Any, state: Path, tmp_path: Path
) -> None:
    """A review evaluates the settings and change rules only; findings.json named how many
    readiness, org and usage rules it left out but gave `rule_ids: null`, where a run names
    each id."""
    env = {"AUDITOR_STATE": str(state)}
    proposed = tmp_path / "proposed.json"
    proposed.write_text('{"sandboxEnabled": false}\n')
    out = tmp_path / "r"
    code, _, err = run_cli(["review", str(proposed), "--offline", "--out", str(out),
                            "-o", "json", "-q"], env=env, cwd=tmp_path)  # fmt: skip
    assert code in (0, 1), err
    data = json.loads((out / "findings.json").read_text())
    left = data["rules_left_out"]
    assert {e["target"] for e in left} == {"readiness", "org", "usage"}
    evaluated = {r["id"] for r in data["rules"]}
    for entry in left:
        assert len(entry["rule_ids"]) == entry["count"] > 0, entry
        assert not evaluated & set(entry["rule_ids"])
        assert all(i.startswith(("RDY-", "ORG-", "USE-")) for i in entry["rule_ids"]), entry


def test_offline_run_of_a_never_synced_state_still_says_offline(tmp_path: Path) -> None:
    """Nothing recorded: `(offline)` as before (the run itself is refused: no revision)."""
    from auditor.cli.common import api_address
    from auditor.config import Config

    assert api_address(Config(), None) == "(offline)"


def test_shipped_packs_are_not_named_as_a_local_file_of_the_same_path(
    emu: Any, state: Path, tmp_path: Path
) -> None:
    """A working folder with its own policies/baseline.yaml: the shipped pack the run
    evaluated (no --policy) is not named by that path, which holds another file."""
    work = tmp_path / "repo"
    (work / "policies").mkdir(parents=True)
    local = work / "policies" / "baseline.yaml"
    local.write_text("rules: []\n")
    out = tmp_path / "r"
    env = emulator_env(emu, state)
    code, _, err = run_cli(["run", "--offline", "--out", str(out), "-o", "json,md", "-q"],
                           env=env, cwd=work)  # fmt: skip
    assert code in (0, 1), err
    files = {p["path"]: p["sha256"] for p in json.loads((out / "findings.json").read_text())[
        "policy_files"]}  # fmt: skip
    shipped = hashlib.sha256((SHIPPED_POLICY_DIR / "baseline.yaml").read_bytes()).hexdigest()
    assert files.get("(shipped) policies/baseline.yaml") == shipped
    assert "policies/baseline.yaml" not in files
    assert r"\(shipped\) policies/baseline.yaml" in (out / "report.md").read_text()  # escaped


def test_sarif_keeps_the_shipped_packs_old_artifact_uri(
    emu: Any, state: Path, tmp_path: Path
) -> None:
    """Code scanning ties an alert to its file path: the shipped packs' results keep the URI
    0.2.0 gave them (`policies/changes.yaml` under %SRCROOT%, not `(shipped)%20policies/…`),
    so the upgrade closes and reopens no alert; the artifact's description says it is the
    shipped pack. The other reports keep the `(shipped)` name."""
    out = tmp_path / "r"
    code, _, err = run_cli(["run", "--offline", "--out", str(out), "-o", "json,sarif", "-q"],
                           env=emulator_env(emu, state), cwd=tmp_path)  # fmt: skip
    assert code in (0, 1), err
    results = json.loads((out / "findings.sarif").read_text())["runs"][0]["results"]
    assert results
    places = [r["locations"][0]["physicalLocation"]["artifactLocation"] for r in results]
    uris = {p["uri"] for p in places}
    assert uris <= {"policies/baseline.yaml", "policies/changes.yaml", "policies/readiness.yaml",
                    "policies/usage.yaml"}, uris  # fmt: skip
    assert {p["uriBaseId"] for p in places} == {"%SRCROOT%"}
    for p in places:
        assert "shipped with auditor" in p["description"]["text"]
        assert f"(shipped) {p['uri']}" in p["description"]["text"]
    named = {p["path"] for p in json.loads((out / "findings.json").read_text())["policy_files"]}
    assert all(n.startswith("(shipped) policies/") for n in named), named


def test_sarif_locates_a_shipped_pack_where_0_2_0_did() -> None:
    from auditor.report.sarif import artifact_location, shipped_artifact_location

    # a file of the repository (the working folder's own policies/) is as it was
    assert shipped_artifact_location("policies/baseline.yaml") is None
    shipped = shipped_artifact_location("(shipped) policies/baseline.yaml")
    assert shipped is not None
    assert {k: shipped[k] for k in ("uri", "uriBaseId")} == artifact_location(
        "policies/baseline.yaml"
    )


def test_shipped_pack_names_keep_the_nightly_baseline_after_an_upgrade(
    emu: Any, state: Path, tmp_path: Path
) -> None:
    """The comparison with the previous run does not rest on the policy files' names: a run
    recorded with the old names (`policies/…`) is still the baseline (nothing new)."""
    import sqlite3

    env = emulator_env(emu, state)
    first = tmp_path / "1"
    code, _, err = run_cli(["run", "--offline", "--out", str(first), "-o", "json", "-q"],
                           env=env, cwd=tmp_path)  # fmt: skip
    assert code in (0, 1), err
    with closing(sqlite3.connect(state)) as db, db:  # as a 0.2 run recorded them
        (hashes,) = db.execute("SELECT policy_hashes FROM runs").fetchone()
        old = {k.replace("(shipped) ", ""): v for k, v in json.loads(hashes).items()}
        db.execute("UPDATE runs SET policy_hashes = ?", (json.dumps(old),))
    second = tmp_path / "2"
    later = run_cli(["run", "--offline", "--out", str(second), "-o", "json", "-q"],
                    env=env, cwd=tmp_path)  # fmt: skip
    assert later[0] in (0, 1), later[2]
    summary = json.loads((second / "findings.json").read_text())["summary"]
    assert summary["new"] == 0
    assert summary["resolved"] == 0


def _with_warnings(taint: str = "", *, complete: bool = True, n: int = 2) -> Any:
    """The report fixture with `n` data-quality warnings (text with `taint` in it)."""
    from dataclasses import replace

    from report_fixture import build_report_data

    from auditor.models import DataWarning

    data = build_report_data(taint)
    warnings = tuple(
        DataWarning("readiness reports", f"not synced: no app URL {i} {taint}", "sync", "config")
        for i in range(n)
    )
    extra = {} if complete else {"complete": False, "not_evaluated": ("sync failed: HTTP 503",)}
    return replace(data, data_quality=warnings, **({"complete": True, "not_evaluated": ()}
                                                   if complete else extra))  # fmt: skip


@pytest.mark.parametrize("complete", [True, False], ids=["complete", "incomplete"])
@pytest.mark.parametrize("taint", ["", "<b>&</b> \u202e \x07 ` *"], ids=["plain", "hostile"])
def test_data_quality_in_oscal_validates_against_nist_and_trestle(
    complete: bool, taint: str
) -> None:
    from test_report_oscal import problems, problems_1_1

    from auditor.report.oscal import render_oscal

    doc = json.loads(render_oscal(_with_warnings(taint, complete=complete)))
    assert problems(doc) == []
    assert problems_1_1(doc) == []
    (result,) = doc["assessment-results"]["results"]
    assert "every rule was evaluated" not in result["description"]
    assert "2 data-quality warning(s)" in result["description"]
    assert len(_props(result, "data-quality-warning")) == 2
    assert _props(result, "data-quality-warnings") == ["2"]
    assert ("Not evaluated" in result["remarks"]) is not complete


def test_many_data_quality_warnings_are_listed_up_to_a_limit_then_counted() -> None:
    from auditor.report.model import DATA_QUALITY_LISTED
    from auditor.report.oscal import render_oscal
    from auditor.report.sarif import render_sarif

    data = _with_warnings(n=DATA_QUALITY_LISTED + 7)
    (result,) = json.loads(render_oscal(data))["assessment-results"]["results"]
    listed = _props(result, "data-quality-warning")
    assert len(listed) == DATA_QUALITY_LISTED + 1
    assert listed[-1] == "7 more data-quality warning(s) in findings.json"
    notes = json.loads(render_sarif(data))["runs"][0]["invocations"][0][
        "toolExecutionNotifications"
    ]
    assert sum(n.get("descriptor", {}).get("id") == "auditor/data-quality" for n in notes) == (
        DATA_QUALITY_LISTED + 1
    )


@pytest.mark.parametrize("complete", [True, False], ids=["complete", "incomplete"])
def test_data_quality_in_sarif_and_junit_is_schema_valid(complete: bool) -> None:
    import jsonschema  # type: ignore[import-untyped]
    import xmlschema

    from auditor.report.junit import render_junit
    from auditor.report.sarif import render_sarif

    schemas = Path(__file__).parent / "schemas"
    data = _with_warnings("<b>&</b>", complete=complete)
    log = json.loads(render_sarif(data))
    jsonschema.Draft4Validator(
        json.loads((schemas / "sarif-schema-2.1.0.json").read_text())
    ).validate(log)
    run = log["runs"][0]
    assert run["properties"]["dataQualityWarnings"] == 2
    notes = [n for n in run["invocations"][0]["toolExecutionNotifications"]
             if n.get("descriptor", {}).get("id") == "auditor/data-quality"]  # fmt: skip
    assert [n["level"] for n in notes] == ["warning", "warning"]
    text = render_junit(data)
    xmlschema.XMLSchema(str(schemas / "junit-10.xsd")).validate(text)
    root = ElementTree.fromstring(text)
    suite = root[0]
    assert suite.get("name") == "auditor: completeness"
    assert suite.get("errors") == ("0" if complete else "1")  # a warning fails nothing
    values = [
        p.get("value") for p in suite.iter("property") if p.get("name") == "data-quality-warning"
    ]
    assert len(values) == 2
    assert all("<b>&</b>" in v for v in values)  # escaped in the file, read back as written
