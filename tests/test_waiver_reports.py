"""The waivers in the reports do not depend on where the repository is checked out or on the
order of the waivers file.

- The `--waivers` file was cited as the current folder joined with the path as given
  (`/home/alice/src/repo/waivers.yaml`, `..` kept): one repository in two folders gave other
  findings.json, report.html and evidence bundles, and leaked the local folder. It is named as
  policy files are (`display_path`: from the current folder, `waivers.yaml`).
- The waiver lists followed the file's order, so report.md's note of the first five expiring
  waivers was not the soonest first; they are sorted by expiry date, rule id, subject.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import emulator_env, run_cli

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def synced_state(emu: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("synced")
    env = emulator_env(emu, folder / "state.db")
    code, _, err = run_cli(["sync"], env, folder)
    assert code == 0, err
    return folder / "state.db"


def _checkout(folder: Path, state: Path, waivers: str) -> Path:
    folder.mkdir(parents=True)
    shutil.copytree(REPO / "policies", folder / "policies")
    (folder / "waivers.yaml").write_text(waivers, encoding="utf-8")
    shutil.copy(state, folder / "state.db")
    shutil.copy(REPO / "auditor" / "data" / "readiness-criteria.yaml", folder / "model.yaml")
    return folder


def _run(folder: Path, *extra: str) -> None:
    env = {"AUDITOR_STATE": str(folder / "state.db")}
    argv = ["run", "--offline", "--soft-fail", "-q", "--policy", "policies"]
    argv += ["--readiness-model", "model.yaml"]
    code, _, err = run_cli(
        [*argv, "--waivers", "waivers.yaml", "--out", "out", *extra], env, folder
    )
    assert code == 0, err
    argv = ["export", "--policy", "policies", "--waivers", "waivers.yaml", "--out", "ev"]
    argv += ["--readiness-model", "model.yaml"]
    code, _, err = run_cli(argv, env, folder)
    assert code == 0, err


def test_one_repository_in_two_folders_gives_the_same_reports_and_bundle(
    synced_state: Path, tmp_path: Path
) -> None:
    waivers = (REPO / "examples" / "waivers.yaml").read_text(encoding="utf-8")
    ci = _checkout(tmp_path / "ci" / "repo", synced_state, waivers)
    alice = _checkout(tmp_path / "home" / "alice" / "src" / "repo", synced_state, waivers)
    for folder in (ci, alice):
        _run(folder)
    for name in (
        "out/findings.json",
        "out/report.html",
        "out/report.md",
        "ev/run-parameters.json",
        "ev/reports/findings.json",
        "ev/manifest.json",
    ):
        assert (ci / name).read_bytes() == (alice / name).read_bytes(), name
    findings = json.loads((ci / "out" / "findings.json").read_text(encoding="utf-8"))
    listed = [
        w
        for kind in ("in_force", "expiring_soon", "expired", "stale")
        for w in findings["waivers"][kind]
    ]
    assert listed
    assert {w["source"]["file"] for w in listed} == {"waivers.yaml"}
    params = json.loads((ci / "ev" / "run-parameters.json").read_text(encoding="utf-8"))
    assert params["waivers"]["shown"] == "waivers.yaml"
    assert params["readinessModel"]["shown"] == "model.yaml"
    for folder in (ci, alice):
        for name in ("out/findings.json", "out/report.html", "ev/run-parameters.json"):
            assert str(tmp_path) not in (folder / name).read_text(encoding="utf-8"), name

