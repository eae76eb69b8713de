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


def _locations(out: Path) -> list[dict[str, str]]:
    log: dict[str, Any] = json.loads((out / "findings.sarif").read_text())
    jsonschema.Draft4Validator(SCHEMA).validate(log)
    return [
        loc["physicalLocation"]["artifactLocation"]
        for r in log["runs"][0]["results"]
        for loc in r["locations"]
    ]


def test_a_policy_folder_given_from_a_parent_is_named_from_the_workspace(
    env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--policy ../pol/` run in `ci/`: the files lie in the workspace, so findings.sarif names
    them from its root (`pol/…` under %SRCROOT%), as a folder given below `ci/` is; it gave
    `file:///…/ws/pol/…`, which code scanning cannot link to the repository. The same for an
    absolute path, and through a workspace reached by a symlink. A policy folder outside the
    workspace (itself, or where a symlink in it leads) keeps its `file://` URI."""
    ws = tmp_path / "ws"
    ci = ws / "ci"
    ci.mkdir(parents=True)
    shutil.copytree(ROOT / "policies", ws / "pol")
    shutil.copytree(ROOT / "policies", tmp_path / "outside")
    (ws / "linked").symlink_to(tmp_path / "outside")
    (tmp_path / "ws-link").symlink_to(ws)
    monkeypatch.chdir(ci)
    env = {**env, "GITHUB_WORKSPACE": str(ws)}
    assert run_cli(["sync", "-q"], env, ci)[0] == 0
    for n, (policy, workspace) in enumerate(
        [("../pol/", ws), (str(ws / "pol"), ws), ("../pol", tmp_path / "ws-link")]
    ):
        out = tmp_path / f"r{n}"
        argv = ["run", "--offline", "--policy", policy, "-q", "-o", "sarif", "--out", str(out)]
        code, _, err = run_cli(argv, {**env, "GITHUB_WORKSPACE": str(workspace)}, ci)
        assert code in (0, 1), err
        locations = _locations(out)
        assert locations, policy
        for location in locations:
            assert location["uri"].startswith("pol/"), (policy, location)
            assert location["uriBaseId"] == "%SRCROOT%"
            assert (ws / location["uri"]).is_file()
    for n, policy in enumerate([str(tmp_path / "outside"), "../linked/"]):
        out = tmp_path / f"o{n}"
        argv = ["run", "--offline", "--policy", policy, "-q", "-o", "sarif", "--out", str(out)]
        code, _, err = run_cli(argv, env, ci)
        assert code in (0, 1), err
        locations = _locations(out)
        assert locations, policy
        for location in locations:
            assert set(location) == {"uri"}, location  # (no uriBaseId: an absolute URI)
            assert location["uri"].startswith((tmp_path / "outside").as_uri() + "/"), location
