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

import hashlib
import json
import re
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


# (rule, subject, expires): the emulator's settings fail these BASE rules; FIXED_NOW is
# 2026-11-01, so the first seven lapse within 14 days (two on one day, one rule on two
# subjects), BASE-NET-002's has lapsed and the `settings@1`, `settings@2` and BASE-MCP-001
# ones are stale.
ORDER_WAIVERS = (
    ("BASE-MOD-009", "settings", "2026-11-10"),
    ("BASE-CMD-002", "settings", "2026-11-05"),
    ("BASE-HOK-003", "settings", "2026-11-08"),
    ("BASE-CMD-001", "settings", "2026-11-05"),
    ("BASE-KEY-001", "settings", "2026-11-03"),
    ("BASE-MOD-003", "settings", "2026-11-09"),
    ("BASE-HOK-001", "settings", "2026-11-09"),
    ("BASE-MOD-001", "settings@2", "2026-11-04"),
    ("BASE-MOD-001", "settings@1", "2026-11-04"),
    ("BASE-MCP-001", "settings", "2026-11-02"),
    ("BASE-NET-002", "settings", "2026-10-20"),
)


def _waivers_file(entries: tuple[tuple[str, str, str], ...]) -> str:
    return "waivers:\n" + "".join(
        f"  - {{rule: {rule}, subject: '{subject}', reason: r, owner: o@x.example, "
        f"expires: {expires}}}\n"
        for rule, subject, expires in entries
    )


def _without_lines(text: str) -> str:
    text = re.sub(r"waivers\.yaml:\d+:\d+", "waivers.yaml:L:C", text)
    return re.sub(r'"line": \d+', '"line": N', text)


def test_waivers_in_another_order_give_the_same_reports_soonest_first(
    synced_state: Path, tmp_path: Path
) -> None:
    forward = _checkout(tmp_path / "a", synced_state, _waivers_file(ORDER_WAIVERS))
    backward = _checkout(tmp_path / "b", synced_state, _waivers_file(ORDER_WAIVERS[::-1]))
    for folder in (forward, backward):
        _run(folder)
    # the waivers file's digest, cited among the inputs, is the one thing that differs
    digests = [
        hashlib.sha256((f / "waivers.yaml").read_bytes()).hexdigest() for f in (forward, backward)
    ]
    for name in ("report.md", "report.html", "findings.json"):
        a = (forward / "out" / name).read_text(encoding="utf-8")
        b = (backward / "out" / name).read_text(encoding="utf-8")
        assert digests[0] in a and digests[1] in b, name
        a, b = a.replace(digests[0], "DIGEST"), b.replace(digests[1], "DIGEST")
        assert _without_lines(a) == _without_lines(b), name
    waivers = json.loads((forward / "out" / "findings.json").read_text(encoding="utf-8"))["waivers"]
    soon = [(w["expires"][:10], w["rule_id"]) for w in waivers["expiring_soon"]]
    assert soon == [
        ("2026-11-03", "BASE-KEY-001"),
        ("2026-11-05", "BASE-CMD-001"),
        ("2026-11-05", "BASE-CMD-002"),
        ("2026-11-08", "BASE-HOK-003"),
        ("2026-11-09", "BASE-HOK-001"),
        ("2026-11-09", "BASE-MOD-003"),
        ("2026-11-10", "BASE-MOD-009"),
    ]
    stale = [(w["rule_id"], w["subject"]) for w in waivers["stale"]]
    assert stale == [
        ("BASE-MCP-001", "settings"),
        ("BASE-MOD-001", "settings@1"),
        ("BASE-MOD-001", "settings@2"),
    ]
    assert [w["rule_id"] for w in waivers["expired"]] == ["BASE-NET-002"]
    named = [re.match(r"waiver for (\S+) on (\S+)", w).groups() for w in waivers["warnings"]]
    assert named[:5] == [
        ("BASE-NET-002", "settings"),
        ("BASE-MCP-001", "settings"),
        ("BASE-KEY-001", "settings"),
        ("BASE-MOD-001", "settings@1"),
        ("BASE-MOD-001", "settings@2"),
    ]
    # report.md's note names the first five expiring: the soonest, not the file's first
    md = (backward / "out" / "report.md").read_text(encoding="utf-8")
    note = md.split("\n\n")[2]
    assert "2 more expiring: see report.html" in note
    expiring = re.findall(r"> - expiring: (\S+) on", note)
    assert expiring == [
        "BASE-KEY-001",
        "BASE-CMD-001",
        "BASE-CMD-002",
        "BASE-HOK-003",
        "BASE-HOK-001",
    ]
