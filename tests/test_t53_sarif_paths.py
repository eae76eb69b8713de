"""T53 #5: run from a folder below the checkout's root (a workflow step's
`working-directory:`), findings.sarif names each policy file from the root
(`GITHUB_WORKSPACE`), as `review` names its proposed file: code scanning finds the file."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]
import pytest
from conftest import run_cli

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = json.loads((Path(__file__).parent / "schemas" / "sarif-schema-2.1.0.json").read_text())

pytestmark = pytest.mark.e2e


def _uris(out: Path) -> set[str]:
    log: dict[str, Any] = json.loads((out / "findings.sarif").read_text())
    jsonschema.Draft4Validator(SCHEMA).validate(log)
    return {
        loc["physicalLocation"]["artifactLocation"]["uri"]
        for r in log["runs"][0]["results"]
        for loc in r["locations"]
    }


def test_policy_uris_are_from_the_workspace_root(
    env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = tmp_path / "ws"
    ci = ws / "ci"
    shutil.copytree(ROOT / "policies", ci / "pol")
    monkeypatch.chdir(ci)
    argv = ["run", "--policy", "pol/", "-q", "-o", "sarif,json"]
    code, _, err = run_cli(
        [*argv, "--out", str(tmp_path / "a")], {**env, "GITHUB_WORKSPACE": str(ws)}, ci
    )
    assert code in (0, 1), err
    uris = _uris(tmp_path / "a")
    assert uris and all(u.startswith("ci/pol/") for u in uris), uris
    assert all((ws / u).is_file() for u in uris)
    # the other reports keep the path as given
    doc = json.loads((tmp_path / "a" / "findings.json").read_text())
    assert all(p["path"].startswith("pol/") for p in doc["policy_files"])
    # at the root, or without GITHUB_WORKSPACE, the path as given
    code, _, err = run_cli([*argv, "--offline", "--out", str(tmp_path / "b")], env, ci)
    assert code in (0, 1), err
    assert all(u.startswith("pol/") for u in _uris(tmp_path / "b"))
