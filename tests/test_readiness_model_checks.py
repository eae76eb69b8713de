"""Readiness verdicts the data cannot support, and readiness-model files that do not fit the
reports, as a user meets them: `auditor sync` from the emulator, then `auditor run --offline`.

- A criterion whose score is not one (0 of 0, 5 of 1, -1 of 1) is not evaluable: a rule on it
  is `unknown`, never a fail saying the control is missing; the repository's `$level` is
  unknown where that criterion, passing or failing, could change it.
- A report with `hasLocalChanges: null` did not record it: RDY-CLN-001 is `unknown`, as its
  text says.
- A model criterion that no report holds (a misspelt id) is a warning on stderr and in the
  reports' data quality, with a "did you mean".
- A `--readiness-model` that cannot be read is a `file:1:1: error:`, as a `--waivers` one is.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from auditor.emulator import generate_dataset, start_emulator
from tests.conftest import FIXED_NOW, OWNER_TOKEN, emulator_env, run_cli

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[1]
SHIPPED_MODEL = ROOT / "auditor" / "data" / "readiness-criteria.yaml"
PACK = str(ROOT / "policies" / "readiness.yaml")

LEVEL1_PASSING = ("lint_config", "type_check", "formatter", "unit_tests_exist", "readme")
LEVEL2 = (
    "pre_commit_hooks", "strict_typing", "build_cmd_doc", "deps_pinned", "vcs_cli_tools",
    "automated_pr_review", "monorepo_tooling", "unit_tests_runnable", "test_coverage_thresholds",
    "agents_md", "automated_doc_generation", "devcontainer", "local_services_setup",
    "database_schema", "structured_logging", "error_tracking_contextualized",
    "runbooks_documented", "branch_protection", "codeowners", "automated_security_review",
    "dependency_update_automation", "secrets_management", "issue_templates",
    "issue_labeling_system", "pr_templates",
)  # fmt: skip


def score(num: int, den: int = 1) -> dict[str, Any]:
    return {"numerator": num, "denominator": den, "rationale": "r"}


class Synced:
    """A state file synced from an emulator whose reports were altered, and the repositories."""

    def __init__(self, state: Path, env: dict[str, str], repos: list[str]) -> None:
        self.state, self.env, self.repos = state, env, repos
        self.gate, self.above, self.negative, self.unrecorded = repos[:4]


@pytest.fixture(scope="module")
def synced(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Synced]:
    dataset = generate_dataset(now=FIXED_NOW)
    repos = sorted({r["repoUrl"] for r in dataset.reports})
    gate, above, negative, unrecorded = repos[:4]
    for report in dataset.reports:  # every report of the repository, so its newest too
        criteria = report["report"]
        if report["repoUrl"] == gate:
            # level 1: 5 pass, 1 fails, 1 is 0 of 0: 5 of 7 (level 1) or 6 of 7 (level 2);
            # counted out, 5 of 6 would make it level 2
            criteria.update({cid: score(1) for cid in LEVEL1_PASSING})
            criteria["env_template"] = score(0)
            criteria["gitignore_comprehensive"] = score(0, 0)
            criteria.update({cid: score(0) for cid in LEVEL2})
            criteria["secret_scanning"] = score(0, 0)
        elif report["repoUrl"] == above:
            criteria["secret_scanning"] = score(5, 1)
        elif report["repoUrl"] == negative:
            criteria["secret_scanning"] = score(-1, 1)
        elif report["repoUrl"] == unrecorded:
            report["hasLocalChanges"] = None
            report["hasNonRemoteCommits"] = False
    emu = start_emulator(dataset=dataset, tokens={OWNER_TOKEN: "owner"}, now=FIXED_NOW)
    work = tmp_path_factory.mktemp("synced")
    state = work / "state.db"
    try:
        env = emulator_env(emu, state)
        code, _, err = run_cli(["sync", "--no-usage"], env, work)
        assert code == 0, err
    finally:
        emu.stop()
    yield Synced(state, env, repos)


def run_offline(
    synced: Synced, tmp_path: Path, *extra: str
) -> tuple[int, str, dict[str, Any], str]:
    """`auditor run --offline` of the readiness pack on a copy of the synced state:
    (exit code, stderr, findings.json, report.md)."""
    for part in synced.state.parent.glob(synced.state.name + "*"):
        shutil.copy(part, tmp_path / part.name)
    env = {**synced.env, "AUDITOR_STATE": str(tmp_path / synced.state.name)}
    argv = ["run", "--offline", "--no-usage", "--policy", PACK, "--out", "out", *extra]
    code, _, err = run_cli(argv, env, tmp_path)
    findings = json.loads((tmp_path / "out" / "findings.json").read_text())
    return code, err, findings, (tmp_path / "out" / "report.md").read_text()


def result(findings: dict[str, Any], rule: str, repo: str) -> dict[str, Any]:
    (found,) = (
        f for f in findings["findings"] if f["rule_id"] == rule and f["subject"]["key"] == repo
    )
    return found


def test_a_score_that_is_not_one_makes_its_rules_unknown_not_failed(
    synced: Synced, tmp_path: Path
) -> None:
    """0 of 0, 5 of 1, -1 of 1 said 'criteria.secret_scanning.passed is null; expected true'."""
    _, _, findings, _ = run_offline(synced, tmp_path)
    for repo in (synced.gate, synced.above, synced.negative):
        found = result(findings, "RDY-SEC-001", repo)
        assert found["status"] == "unknown", (repo, found["message"])
        assert found["message"] == "criteria.secret_scanning.passed is absent"
    # the other repositories are judged as before
    statuses = {result(findings, "RDY-SEC-001", r)["status"] for r in synced.repos[4:]}
    assert {"pass", "fail"} <= statuses


def test_a_level_that_a_criterion_not_evaluable_could_change_is_unknown(
    synced: Synced, tmp_path: Path
) -> None:
    """5 of 6 evaluated level-1 criteria made level 2, though the seventh (0 of 0) may fail."""
    _, _, findings, _ = run_offline(synced, tmp_path)
    found = result(findings, "RDY-LVL-001", synced.gate)
    assert found["status"] == "unknown"
    assert found["message"] == "$level is absent"
    rows = {r["repo_url"]: r for r in findings["readiness"]["repositories"]}
    assert rows[synced.gate]["level"] is None
    # a criterion not evaluable at a level the repository does not reach changes nothing
    assert isinstance(rows[synced.above]["level"], int)
    assert result(findings, "RDY-LVL-001", synced.above)["status"] in ("pass", "fail")


def test_an_unknown_level_is_unknown_again_when_the_grades_are_read_back(
    synced: Synced, tmp_path: Path
) -> None:
    """The second run reads each report's grades back (an unknown level is not kept)."""
    run_offline(synced, tmp_path)
    shutil.rmtree(tmp_path / "out")
    env = {**synced.env, "AUDITOR_STATE": str(tmp_path / synced.state.name)}
    argv = ["run", "--offline", "--no-usage", "--policy", PACK, "--out", "out"]
    run_cli(argv, env, tmp_path)
    findings = json.loads((tmp_path / "out" / "findings.json").read_text())
    assert result(findings, "RDY-LVL-001", synced.gate)["status"] == "unknown"
    assert result(findings, "RDY-SEC-001", synced.gate)["status"] == "unknown"


def test_local_changes_not_recorded_are_unknown_as_the_rule_says(
    synced: Synced, tmp_path: Path
) -> None:
    """`hasLocalChanges: null` said 'hasLocalChanges is null; expected false' (a fail)."""
    _, _, findings, _ = run_offline(synced, tmp_path)
    found = result(findings, "RDY-CLN-001", synced.unrecorded)
    assert found["status"] == "unknown"
    assert found["message"] == "hasLocalChanges is absent"


def test_a_misspelt_model_criterion_is_named_with_did_you_mean(
    synced: Synced, tmp_path: Path
) -> None:
    """A typo dropped `gitignore_comprehensive` from every level, silently."""
    model = SHIPPED_MODEL.read_text().replace(
        "\n  gitignore_comprehensive:", "\n  gitignore_comprehnsive:"
    )
    (tmp_path / "typo.yaml").write_text(model)
    _, err, findings, markdown = run_offline(synced, tmp_path, "--readiness-model", "typo.yaml")
    said = (
        "$.criteria.gitignore_comprehnsive: criterion in none of the 36 reports the run grades "
        "(did you mean `gitignore_comprehensive`?); it counts in no repository's level"
    )
    assert f"auditor: warning: {said}" in err
    quality = [f"{w['path']}: {w['problem']}" for w in findings["data_quality"]]
    assert [q for q in quality if "criteria" in q.split(":")[0]] == [
        said + ", as a criterion a report lacks never does"
    ]
    assert r"$.criteria.gitignore\_comprehnsive: criterion in none of" in markdown


def test_a_model_for_other_reports_is_one_warning(synced: Synced, tmp_path: Path) -> None:
    """None of the model's criteria in any report gave every repository level 1, silently."""
    (tmp_path / "other.yaml").write_text(
        "levels: {1: One, 2: Two}\ncriteria:\n"
        "  x_one: {level: 1, scope: repository, pillar: P}\n"
        "  x_two: {level: 1, scope: repository, pillar: P}\n"
    )
    _, err, findings, _ = run_offline(synced, tmp_path, "--readiness-model", "other.yaml")
    said = (
        "$.criteria: none of the model's 2 criteria is in any of the 36 reports the run grades "
        "(a model for other reports?): every repository stays at level 1"
    )
    assert f"auditor: warning: {said}" in err
    assert said in [f"{w['path']}: {w['problem']}" for w in findings["data_quality"]]


def test_the_shipped_model_over_the_emulator_reports_warns_of_nothing(
    synced: Synced, tmp_path: Path
) -> None:
    _, err, findings, _ = run_offline(synced, tmp_path)
    assert "criteria" not in err
    assert not [w for w in findings.get("data_quality", []) if w["path"].startswith("$.criteria")]


def test_a_model_that_is_a_folder_is_reported_as_a_waivers_folder_is(tmp_path: Path) -> None:
    """`--readiness-model DIR` said `auditor: error: DIR: cannot read readiness model: …`."""
    (tmp_path / "rm").mkdir()
    env = {"AUDITOR_STATE": str(tmp_path / "state.db")}
    base = ["run", "--offline", "--no-usage", "--out", "out"]
    waivers = run_cli([*base, "--waivers", "rm"], env, tmp_path)
    model = run_cli([*base, "--readiness-model", "rm"], env, tmp_path)
    folder = tmp_path / "rm"
    assert waivers[0] == model[0] == 2
    assert waivers[2].splitlines()[0] == f"{folder}:1:1: error: a directory, not a regular file"
    assert model[2].splitlines() == [
        f"{folder}:1:1: error: cannot read readiness model: a directory, not a regular file",
        "auditor: error: 1 problem(s) in input files (listed above)",
    ]
