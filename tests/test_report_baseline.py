"""What the reports say of the comparison with the previous run, night after night.

A run with no earlier complete run of its scope to compare with (the first run, a state file
new or lost, rules added or removed) marks nothing `new` or `resolved`: report.md and
report.html say so, and why that may be, instead of "New: 0 · Resolved since previous run: 0"
(the words of a quiet night), and findings.json names the run compared with
(`run.previous_run_id`, null when none). The first run after an upgrade says which release
made the previous run next to the counts, whether or not anything was resolved."""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
import subprocess
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import missing_tool, run_cli

ROOT = Path(__file__).resolve().parents[1]
QUIET_NIGHT = "**New:** 0 · **Resolved since previous run:** 0"
NOT_COMPARED = (
    "Not compared with an earlier run:</strong> the state file holds no earlier complete run"
)
WHY = "This may be the first run, the state file may be new or lost"
UPGRADE = "the previous run was made by auditor 0.2.0: some changes may come from the upgrade"
CARDS = '<span class="l">resolved</span>'


def night(env: dict[str, str], tmp_path: Path, name: str, *extra: str) -> dict[str, Any]:
    out = tmp_path / name
    code, stdout, stderr = run_cli(
        ["run", "--out", str(out), "-o", "json,md,html", *extra], env, tmp_path
    )
    assert code in (0, 1), stderr
    return {
        "stdout": stdout,
        "md": (out / "report.md").read_text(),
        "html": (out / "report.html").read_text(),
        "json": json.loads((out / "findings.json").read_text()),
    }


def policies(tmp_path: Path, *names: str) -> Path:
    folder = tmp_path / "policies"
    folder.mkdir(exist_ok=True)
    for name in names:
        shutil.copy(ROOT / "policies" / name, folder / name)
    return folder


def quiet_policy(tmp_path: Path) -> Path:
    """A policy of one rule that never applies: no finding to mark new or persisting."""
    folder = tmp_path / "quiet"
    folder.mkdir()
    (folder / "quiet.yaml").write_text(
        "rules:\n"
        "  - id: QUIET-001\n"
        "    title: Never applies\n"
        "    severity: low\n"
        "    target: settings\n"
        "    description: Its precondition is never true.\n"
        "    when: {path: no.such.key, equals: true, default: false}\n"
        "    assert: {path: no.such.key, equals: true}\n"
        "    remediation: Nothing to do.\n"
        '    controls: ["SOC2:CC6.1"]\n'
    )
    return folder


def assert_not_compared(n: dict[str, Any]) -> None:
    md, page, doc = n["md"], n["html"], n["json"]
    assert QUIET_NIGHT not in md and "Resolved since" not in md
    md_note = "**Not compared with an earlier run:** the state file holds no earlier complete run"
    assert md_note in md and WHY in md
    assert "| Severity | Open | New |" not in md  # no column of zeros claiming "new"
    assert NOT_COMPARED in page and WHY in page and CARDS not in page
    assert doc["run"]["previous_run_id"] is None
    assert {f["lifecycle"] for f in doc["findings"]} == {None}
    assert doc["summary"]["new"] == 0 and doc["resolved"] == []
    assert "since the previous run" not in n["stdout"]


def assert_compared(n: dict[str, Any], previous: dict[str, Any]) -> None:
    md, page, doc = n["md"], n["html"], n["json"]
    assert QUIET_NIGHT in md and "| Severity | Open | New |" in md
    assert "Not compared" not in md and "Not compared" not in page and CARDS in page
    assert doc["run"]["previous_run_id"] == previous["json"]["run"]["id"]
    assert "since the previous run: 0 new, 0 resolved" in n["stdout"]


def test_a_run_with_no_earlier_run_says_it_compared_nothing_and_the_next_one_compares(
    env: dict[str, str], tmp_path: Path
) -> None:
    folder = policies(tmp_path, "baseline.yaml", "changes.yaml")
    first = night(env, tmp_path, "night1", "--policy", str(folder))
    assert [f for f in first["json"]["findings"] if f["status"] == "fail"]
    assert_not_compared(first)
    second = night(env, tmp_path, "night2", "--policy", str(folder))
    assert_compared(second, first)
    # a policy file added: other rules, a new baseline, nothing compared again
    policies(tmp_path, "readiness.yaml")
    third = night(env, tmp_path, "night3", "--policy", str(folder))
    assert_not_compared(third)
    fourth = night(env, tmp_path, "night4", "--policy", str(folder))
    assert_compared(fourth, third)


def test_a_run_compared_with_one_where_nothing_failed_says_so(
    env: dict[str, str], tmp_path: Path
) -> None:
    # neither run has a finding to mark new or persisting: a comparison still happened
    folder = quiet_policy(tmp_path)
    first = night(env, tmp_path, "night1", "--policy", str(folder))
    assert_not_compared(first)
    second = night(env, tmp_path, "night2", "--policy", str(folder))
    assert {f["lifecycle"] for f in second["json"]["findings"]} == {None}  # nothing tracked
    assert_compared(second, first)


def test_the_first_run_after_an_upgrade_says_so_even_when_nothing_was_resolved(
    env: dict[str, str], tmp_path: Path
) -> None:
    first = night(env, tmp_path, "night1")
    with closing(sqlite3.connect(env["AUDITOR_STATE"])) as db, db:
        db.execute("UPDATE runs SET tool_version = '0.2.0' WHERE complete = 1")
    second = night(env, tmp_path, "night2")
    md, page, doc = second["md"], second["html"], second["json"]
    assert doc["resolved"] == [] and doc["run"]["previous_tool_version"] == "0.2.0"
    assert doc["run"]["previous_run_id"] == first["json"]["run"]["id"]
    assert UPGRADE in second["stdout"]
    # beside the counts, though there is no Resolved section to hold it
    assert "Resolved since the previous run" not in md
    assert f"{QUIET_NIGHT}\n\n**Note:** {UPGRADE}" in md
    assert "Resolved since the previous run" not in page
    summary = page.split('<h2 id="summary">', 1)[1].split('<h2 id="controls">', 1)[0]
    assert CARDS in summary and f"<strong>Note:</strong> {UPGRADE}" in summary
    # the next night, compared with a run of this release, says nothing of it
    third = night(env, tmp_path, "night3")
    assert "made by auditor" not in third["md"] + third["html"] + third["stdout"]


def test_a_review_says_nothing_of_an_earlier_run(env: dict[str, str], tmp_path: Path) -> None:
    out = tmp_path / "r"
    proposed = ROOT / "examples" / "proposed-settings.yaml"
    argv = ["review", str(proposed), "--out", str(out), "-o", "json,md,html"]
    code, stdout, stderr = run_cli(argv, env, tmp_path)
    assert code in (0, 1), stderr
    md, page = (out / "report.md").read_text(), (out / "report.html").read_text()
    assert "**Introduced:**" in md and "Resolved since" not in md
    for text in (md, page, stdout):
        assert "Not compared" not in text and "previous run" not in text
    assert json.loads((out / "findings.json").read_text())["run"]["previous_run_id"] is None


@pytest.mark.slow
def test_the_pdf_says_so_too(env: dict[str, str], tmp_path: Path) -> None:
    folder = quiet_policy(tmp_path)  # a short report: two PDFs made in seconds

    def pdf_text(name: str) -> str:
        out = tmp_path / name
        argv = ["run", "--policy", str(folder), "--out", str(out), "-o", "json,pdf"]
        code, _, stderr = run_cli(argv, env, tmp_path)
        assert code in (0, 1), stderr
        tool = shutil.which("pdftotext")
        if tool is None:
            missing_tool("pdftotext is not installed", "PDF TOOL", "PDF TEST")
        pages = subprocess.run(
            [tool, str(out / "report.pdf"), "-"], capture_output=True, text=True, check=True
        ).stdout
        return re.sub(r"\s+", " ", pages)

    first = pdf_text("night1")
    assert "Not compared with an earlier run: the state file holds no earlier" in first
    with closing(sqlite3.connect(env["AUDITOR_STATE"])) as db, db:
        db.execute("UPDATE runs SET tool_version = '0.2.0' WHERE complete = 1")
    second = pdf_text("night2")
    assert "Not compared" not in second and f"Note: {UPGRADE}" in second
