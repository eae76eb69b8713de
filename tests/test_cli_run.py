"""`auditor run`, `auditor review` and `auditor demo` end to end against a real emulator."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import socket
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from contextlib import closing
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

import auditor.store.database
import auditor.store.file
import auditor.workflows.run
from auditor.cli import Context, main
from auditor.cli.signals import Terminated
from auditor.emulator import start_emulator
from auditor.errors import StoreError
from auditor.policy import SHIPPED_POLICY_DIR, load_policies
from tests.conftest import FIXED_NOW, OWNER_TOKEN, emulator_env, secret_forms

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"
REPORT_FILES = {"report.html", "report.md", "findings.json", "findings.sarif", "junit.xml"}


def run_cli(
    argv: list[str], *, env: dict[str, str], cwd: Path, now: Any = FIXED_NOW
) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    ctx = Context(env=env, stdout=out, stderr=err, clock=lambda: now, cwd=str(cwd))
    return main(argv, ctx), out.getvalue(), err.getvalue()


@pytest.fixture
def emu() -> Iterator[Any]:
    with start_emulator(tokens={OWNER_TOKEN: "owner"}, now=FIXED_NOW, revisions=80, repos=8) as e:
        yield e


@pytest.fixture
def env(emu: Any, tmp_path: Path) -> dict[str, str]:
    return emulator_env(emu, tmp_path / "state.db")


def findings_json(out: Path) -> dict[str, Any]:
    return json.loads((out / "findings.json").read_text())


def test_run_writes_five_reports_and_exits_1_on_findings(env: dict[str, str], tmp_path: Path):
    code, stdout, stderr = run_cli(["run", "--out", str(tmp_path / "r")], env=env, cwd=tmp_path)
    assert code == 1, stderr
    assert {p.name for p in (tmp_path / "r").iterdir()} == REPORT_FILES
    assert "report.html" in stdout
    assert stderr.strip().splitlines()[-1].startswith("auditor: exit 1: ")
    data = findings_json(tmp_path / "r")
    assert data["complete"] is True
    kinds = {f["subject"]["kind"] for f in data["findings"]}
    assert kinds == {"settings", "change", "readiness", "org", "usage"}
    for name in REPORT_FILES:  # reports must not depend on where the checkout lives
        assert str(REPO) not in (tmp_path / "r" / name).read_text()


def test_default_out_dir_is_reports_run_id(env: dict[str, str], tmp_path: Path):
    code, _, _ = run_cli(["run", "--soft-fail"], env=env, cwd=tmp_path)
    assert code == 0
    assert [p.name for p in (tmp_path / "reports").iterdir()] == ["20261101T120000Z"]


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        pytest.param(["--soft-fail"], 0, id="soft-fail-turns-1-into-0"),
        pytest.param(["--fail-on", "none"], 0, id="fail-on-none"),
        pytest.param(["--fail-on", "low"], 1, id="fail-on-low"),
    ],
)
def test_exit_code_by_fail_on(env: dict[str, str], tmp_path: Path, flags: list[str], expected: int):
    code, _, stderr = run_cli(["run", "--out", str(tmp_path / "r"), *flags], env=env, cwd=tmp_path)
    assert code == expected, stderr
    last = stderr.strip().splitlines()[-1]
    assert last.startswith(f"auditor: exit {expected}: ")
    if "none" in flags:  # the gate is off: said so, not "no findings at or above severity none"
        assert last == "auditor: exit 0: --fail-on none: no findings fail the run"


def test_second_run_marks_findings_persisting_then_resolved(
    env: dict[str, str], tmp_path: Path, emu: Any
):
    run_cli(["run", "--out", str(tmp_path / "a")], env=env, cwd=tmp_path)
    later = FIXED_NOW + timedelta(hours=1)
    run_cli(["run", "--out", str(tmp_path / "b")], env=env, cwd=tmp_path, now=later)
    second = findings_json(tmp_path / "b")
    open_findings = [f for f in second["findings"] if f["status"] in ("fail", "unknown")]
    assert open_findings
    assert {f["lifecycle"] for f in open_findings} == {"persisting"}
    assert second["resolved"] == []


def test_sync_failure_still_reports_what_is_stored_and_exits_2(
    env: dict[str, str], tmp_path: Path, emu: Any
):
    run_cli(["run", "--out", str(tmp_path / "a")], env=env, cwd=tmp_path)
    emu.add_revisions(3)
    emu.faults.add("history", "500", times=0)
    later = FIXED_NOW + timedelta(hours=1)
    code, _, stderr = run_cli(
        ["run", "--out", str(tmp_path / "b")], env=env, cwd=tmp_path, now=later
    )
    assert code == 2
    data = findings_json(tmp_path / "b")
    assert data["complete"] is False
    assert any("sync failed" in line for line in data["not_evaluated"])
    assert any(f["status"] == "fail" for f in data["findings"])
    assert "incomplete" in stderr.strip().splitlines()[-1]
    # the stored settings were evaluated: their results are the SARIF's, as on a good night
    assert json.loads((tmp_path / "b" / "findings.sarif").read_text())["runs"][0]["results"]


@pytest.mark.parametrize("new_revisions", [3, 0])
def test_a_full_disk_still_writes_the_reports_and_the_run_is_no_baseline(
    env: dict[str, str],
    tmp_path: Path,
    emu: Any,
    monkeypatch: pytest.MonkeyPatch,
    new_revisions: int,
):
    # The state file cannot grow (SQLite's `max_page_count`: a full disk as SQLite sees it).
    # With new revisions the sync fails first; without, the run's own records fail. Either
    # way what is stored is judged and the five reports are written, as an incomplete run
    # (exit 2) that the store does not record: the next run compares with the night before.
    # The store's error names the state file, here in a folder named like a token: the line
    # shows it as the sync's failure does (a marker), in no output in clear.
    folder = "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5"
    state = tmp_path / folder / "state.db"
    env = {**env, "AUDITOR_STATE": str(state)}
    # 4 KiB pages, as earlier versions made state files: a file of 64 KiB pages has room in
    # them for a few revisions and the run's records, so capping its page count (unlike a
    # real full disk, where the journal cannot be written either) would not stop a write.
    monkeypatch.setattr(auditor.store.file, "PAGE_SIZE", 4096)
    run_cli(["run", "--out", str(tmp_path / "a")], env=env, cwd=tmp_path)
    emu.add_revisions(new_revisions)
    real_connect = auditor.store.database.connect

    def full(path: Path, *, readonly: bool) -> Any:
        db = real_connect(path, readonly=readonly)
        pages = db.execute("PRAGMA page_count").fetchone()[0]
        db.execute(f"PRAGMA max_page_count = {pages}")
        return db

    monkeypatch.setattr(auditor.store.database, "connect", full)
    later = FIXED_NOW + timedelta(hours=1)
    code, _, stderr = run_cli(
        ["run", "--out", str(tmp_path / "b")], env=env, cwd=tmp_path, now=later
    )
    assert code == 2, stderr
    assert {p.name for p in (tmp_path / "b").iterdir()} == REPORT_FILES
    data = findings_json(tmp_path / "b")
    assert data["complete"] is False
    assert any("could not record this run" in line for line in data["not_evaluated"])
    assert "full" in " ".join(data["not_evaluated"])
    assert any(f["status"] == "fail" for f in data["findings"])
    assert "incomplete" in stderr.strip().splitlines()[-1]
    assert "Traceback" not in stderr
    assert folder not in stderr
    for name in REPORT_FILES:
        assert folder not in (tmp_path / "b" / name).read_text(), name
    monkeypatch.undo()
    code, _, stderr = run_cli(
        ["run", "--out", str(tmp_path / "c")], env=env, cwd=tmp_path, now=later + timedelta(hours=1)
    )
    assert code == 1, stderr
    assert findings_json(tmp_path / "c")["complete"] is True
    with closing(sqlite3.connect(state)) as db, db:
        runs = dict(db.execute("SELECT run_id, complete FROM runs").fetchall())
    assert runs == {"20261101T120000Z": 1, "20261101T140000Z": 1} or runs == {
        "20261101T120000Z": 1,
        "20261101T130000Z": 0,  # begun, never finished: no run compares with it
        "20261101T140000Z": 1,
    }


def test_a_run_whose_completion_cannot_be_recorded_says_so_in_its_reports(
    env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    # The last record (the run complete, after its reports) refused by a full disk: the
    # reports said "complete" while the store did not record the run, so the next run
    # called this run's new findings new again. They are written again, incomplete, exit 2.
    def refused(*_args: Any) -> None:
        raise StoreError("state file state.db: cannot write, nothing was changed: disk full")

    monkeypatch.setattr(auditor.store.database.Store, "complete_run", refused)
    code, _, stderr = run_cli(["run", "--out", str(tmp_path / "r")], env=env, cwd=tmp_path)
    assert code == 2, stderr
    data = findings_json(tmp_path / "r")
    assert data["complete"] is False
    assert [line for line in data["not_evaluated"] if "could not record this run" in line]
    assert "could not record this run" in (tmp_path / "r" / "report.md").read_text()
    assert "incomplete" in stderr.strip().splitlines()[-1]


def test_invalid_policy_exits_2_before_touching_anything(env: dict[str, str], tmp_path: Path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("rules:\n  - id: X\n    severty: high\n")
    code, _, stderr = run_cli(
        ["run", "--policy", str(bad), "--out", str(tmp_path / "r")], env=env, cwd=tmp_path
    )
    assert code == 2
    assert "bad.yaml:" in stderr
    assert not (tmp_path / "r").exists()
    assert not (tmp_path / "state.db").exists()


def test_same_inputs_give_byte_identical_reports(env: dict[str, str], tmp_path: Path):
    run_cli(["sync"], env=env, cwd=tmp_path)
    outputs = []
    for name in ("a", "b"):
        state = tmp_path / f"{name}.db"
        shutil.copy(tmp_path / "state.db", state)
        run_env = {**env, "AUDITOR_STATE": str(state)}
        run_cli(["run", "--offline", "--out", str(tmp_path / name)], env=run_env, cwd=tmp_path)
        outputs.append({f: (tmp_path / name / f).read_bytes() for f in REPORT_FILES})
    assert outputs[0] == outputs[1]


def test_at_date_audits_the_revision_in_force_then(env: dict[str, str], tmp_path: Path, emu: Any):
    history = emu.dataset.history
    middle = history[len(history) // 2]
    code, _, stderr = run_cli(
        # no analytics are stored for the 30 days before a past date: --no-usage
        [
            "run",
            "--soft-fail",
            "--no-usage",
            "--at",
            middle["updatedAt"],
            "--out",
            str(tmp_path / "r"),
        ],
        env=env,
        cwd=tmp_path,
    )
    assert code == 0, stderr
    assert findings_json(tmp_path / "r")["inputs"]["settings_revision"] == middle["revision"]


def test_no_usage_says_in_every_scope_how_many_usage_rules_were_left_out(
    env: dict[str, str], tmp_path: Path
):
    usage_rules = sum(1 for r in load_policies([SHIPPED_POLICY_DIR]).rules if r.target == "usage")
    assert usage_rules > 0
    outputs = "html,md,json,oscal"
    for name, flags in (("with", []), ("without", ["--no-usage"])):
        argv = ["run", "--soft-fail", *flags, "-o", outputs, "--out", str(tmp_path / name)]
        code, _, stderr = run_cli(argv, env=env, cwd=tmp_path)
        assert code == 0, stderr
    said = f"{usage_rules} usage rule(s), not evaluated: --no-usage was given"
    html = (tmp_path / "without" / "report.html").read_text()
    scope = html[html.index('<section id="scope"') : html.index("</section>")]
    assert "Rules left out" in scope and said in re.sub(r"<[^>]+>", "", scope)
    md = (tmp_path / "without" / "report.md").read_text()
    assert f"**Rules left out:** {usage_rules} usage, not evaluated: <code>--no-usage</code>" in md
    oscal = json.loads((tmp_path / "without" / "findings.oscal.json").read_text())
    props = {p["name"]: p["value"] for p in oscal["assessment-results"]["results"][0]["props"]}
    assert props["rules-left-out-usage"].startswith(f"{usage_rules}: `--no-usage` was given")
    assert "rules-usage" not in props
    for name in ("report.html", "report.md", "findings.oscal.json"):
        text = (tmp_path / "with" / name).read_text()
        assert "Rules left out" not in text and "rules-left-out" not in text


def test_at_before_the_first_revision_leaves_no_report_folder(
    env: dict[str, str], tmp_path: Path
) -> None:
    """One error, exit 2, and no empty `--out` folder left behind (it was made before the date
    was checked against the stored history)."""
    out = tmp_path / "r"
    code, _, stderr = run_cli(
        ["run", "--no-usage", "--at", "2001-01-01", "--out", str(out)], env=env, cwd=tmp_path
    )
    assert code == 2
    assert "is before the first stored settings revision" in stderr.splitlines()[-1]
    assert not out.exists()


def test_a_bad_readiness_model_lists_each_problem_on_its_own_line(tmp_path: Path) -> None:
    """As a policy or waiver file's problems are; they were one line with `\\u000a` in it."""
    model = tmp_path / "model.yaml"
    model.write_text("levels: 5\ncriteria: x\n")
    argv = ["run", "--offline", "--readiness-model", str(model), "--out", str(tmp_path / "r")]
    code, _, stderr = run_cli(argv, env={"AUDITOR_STATE": str(tmp_path / "s.db")}, cwd=tmp_path)
    assert code == 2
    lines = stderr.splitlines()
    assert lines[0].startswith(f"{model}:1:9: error: $.levels: ")
    assert lines[1].startswith(f"{model}:2:11: error: $.criteria: ")
    assert lines[2:] == ["auditor: error: 2 problem(s) in input files (listed above)"]


def test_interrupt_writes_an_incomplete_report_and_exits_130(
    env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    def interrupted(*_args: Any, **_kwargs: Any) -> Any:
        raise KeyboardInterrupt

    monkeypatch.setattr("auditor.cli.cmd_run.run_audit", interrupted)
    code, _, stderr = run_cli(["run", "--out", str(tmp_path / "r")], env=env, cwd=tmp_path)
    assert code == 130
    assert findings_json(tmp_path / "r")["complete"] is False
    assert stderr.strip().splitlines()[-1] == "auditor: exit 130: interrupted"
    assert auditor.workflows.run  # the module under test stays importable after the patch


def test_an_interrupted_run_leaves_no_sarif_to_close_the_alerts_with(
    env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """A SARIF of 0 results uploaded after a cancel or a step timeout would mark every open
    code-scanning alert of its category fixed: the interrupted run writes none, removes the one
    an earlier run left, and says so on stderr and in the other reports' incomplete banner."""
    out = tmp_path / "r"
    assert run_cli(["run", "--out", str(out)], env=env, cwd=tmp_path)[0] == 1
    assert json.loads((out / "findings.sarif").read_text())["runs"][0]["results"]

    def terminated(*_args: Any, **_kwargs: Any) -> Any:
        raise Terminated

    monkeypatch.setattr("auditor.cli.cmd_run.run_audit", terminated)
    later = FIXED_NOW + timedelta(hours=1)
    code, _, stderr = run_cli(["run", "--out", str(out)], env=env, cwd=tmp_path, now=later)
    assert code == 143
    assert {p.name for p in out.iterdir()} == REPORT_FILES - {"findings.sarif"}
    cut = findings_json(out)
    assert any("findings.sarif not written" in r for r in cut["output_notes"])
    assert cut["not_evaluated"] == ["interrupted before the evaluation finished"]
    assert "findings.sarif not written" in (out / "report.md").read_text()
    assert "**Incomplete:** 1 item(s) not evaluated." in (out / "report.md").read_text()
    assert "auditor: findings.sarif not written: the evaluation did not finish" in stderr
    assert stderr.strip().splitlines()[-1] == "auditor: exit 143: terminated (SIGTERM)"


def test_a_run_interrupted_while_its_reports_are_written_keeps_its_results(
    env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """A cancel or a step timeout while report.pdf was rendered (minutes at 10,000 revisions)
    replaced the finished reports with empty ones saying "No open findings" and "the
    evaluation did not finish". The evaluation had finished: the reports keep every result,
    marked incomplete (the run is not recorded in the state file), still without a SARIF,
    and the PDF is not rendered again."""
    out = tmp_path / "r"

    def terminated(*_args: Any, **_kwargs: Any) -> Any:
        raise Terminated

    monkeypatch.setattr("auditor.report._write_pdf", terminated)
    argv = ["run", "--out", str(out), "-o", "html,md,json,sarif,junit,pdf"]
    code, _, stderr = run_cli(argv, env=env, cwd=tmp_path)
    assert code == 143, stderr
    cut = findings_json(out)
    assert cut["complete"] is False
    assert cut["findings"], "the finished results were dropped"
    reasons = "\n".join(cut["output_notes"])
    assert "interrupted while the reports were written" in reasons
    assert "report.pdf not written" in reasons
    assert "did not finish" not in reasons + stderr
    assert not (out / "findings.sarif").exists() and not (out / "report.pdf").exists()
    # the SARIF removed is the one this run wrote before the PDF, not an earlier run's
    assert f"(removed this run's {out / 'findings.sarif'})" in stderr
    md = (out / "report.md").read_text()
    assert "No open findings" not in md and "interrupted while the reports were written" in md
    assert stderr.strip().splitlines()[-1] == "auditor: exit 143: terminated (SIGTERM)"

    monkeypatch.undo()  # the next night: the same results, marked new against no recorded run
    code, _, stderr = run_cli(["run", "--out", str(out)], env=env, cwd=tmp_path)
    assert code == 1, stderr
    again = findings_json(out)
    assert again["complete"] is True
    key = ("fingerprint", "status", "lifecycle")
    assert [[f.get(k) for k in key] for f in again["findings"]] == [
        [f.get(k) for k in key] for f in cut["findings"]
    ]


def test_a_run_interrupted_while_its_reports_are_written_says_every_result_is_there(
    env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """T73 LOW-1: the banners said "3 item(s) could not be evaluated; results below may
    understate the findings" (report.md and junit.xml: "3 item(s) not evaluated"), counting
    "interrupted while the reports were written: every result … is here", "report.pdf not
    written" and "findings.sarif not written": nothing went unevaluated. Each report says
    what happened, that every result is there, and lists those notes apart."""
    out = tmp_path / "r"

    def terminated(*_args: Any, **_kwargs: Any) -> Any:
        raise Terminated

    monkeypatch.setattr("auditor.report._write_pdf", terminated)
    argv = ["run", "--out", str(out), "-o", "html,md,json,sarif,junit,oscal,pdf"]
    code, _, stderr = run_cli(argv, env=env, cwd=tmp_path)
    assert code == 143, stderr
    cut = findings_json(out)
    assert (cut["complete"], cut["not_evaluated"]) == (False, [])
    heads = [note.split(":")[0] for note in cut["output_notes"]]
    assert heads == [
        "interrupted while the reports were written",
        "report.pdf not written",
        "findings.sarif not written",
    ]
    what = "interrupted while the reports were written"
    md = (out / "report.md").read_text()
    assert f"> **Incomplete:** {what} (every result of the evaluation is here).\n" in md
    html = (out / "report.html").read_text()
    assert f"<strong>Incomplete:</strong> {what}; every result of the evaluation is below." in html
    junit = (out / "junit.xml").read_text()
    assert f'message="{what} (every result of the evaluation is here)"' in junit
    oscal = json.loads((out / "findings.oscal.json").read_text())
    (result,) = oscal["assessment-results"]["results"]
    assert result["description"].endswith(f"{what}; every result of the evaluation is here.")
    assert result["remarks"].startswith(f"Outputs: {what}: ")
    for name in ("report.md", "report.html", "junit.xml", "findings.oscal.json"):
        text = (out / name).read_text()
        assert "item(s) not evaluated" not in text, name
        assert "could not be evaluated" not in text, name
        assert "report.pdf not written" in text and "findings.sarif not written" in text, name


def test_a_failed_first_sync_counts_the_same_items_on_the_terminal_and_in_every_report(
    env: dict[str, str], tmp_path: Path, emu: Any
):
    """T73 LOW-2: stdout said "INCOMPLETE: 62 item(s) not evaluated" and the exit line "62
    problem(s)", the reports 63: they counted "findings.sarif not written" as an item not
    evaluated, which the terminal did not. The note is listed apart, counted nowhere."""
    emu.faults.add("history", "500", times=0)
    out = tmp_path / "r"
    argv = ["run", "--out", str(out), "-o", "html,md,json,sarif,junit,oscal"]
    code, stdout, stderr = run_cli(argv, env=env, cwd=tmp_path)
    assert code == 2, stderr
    data = findings_json(out)
    assert [n.split(":")[0] for n in data["output_notes"]] == ["findings.sarif not written"]
    n = len(data["not_evaluated"])
    assert n > 0 and not any("findings.sarif" in line for line in data["not_evaluated"])
    assert f"INCOMPLETE: {n} item(s) not evaluated" in stdout.splitlines()
    assert re.search(rf"exit 2: the audit is incomplete: {n} problem\(s\)", stderr.splitlines()[-1])
    assert f"**Incomplete:** {n} item(s) not evaluated." in (out / "report.md").read_text()
    html = (out / "report.html").read_text()
    assert f"<strong>Incomplete:</strong> {n} item(s) could not be evaluated;" in html
    assert f'message="{n} item(s) not evaluated"' in (out / "junit.xml").read_text()
    oscal = json.loads((out / "findings.oscal.json").read_text())
    (result,) = oscal["assessment-results"]["results"]
    assert f"{n} item(s) could not be evaluated." in result["description"]


def test_an_interrupted_run_writes_its_partial_reports_beside_a_folder_named_like_the_sarif(
    env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    out = tmp_path / "r"
    (out / "findings.sarif").mkdir(parents=True)

    def terminated(*_args: Any, **_kwargs: Any) -> Any:
        raise Terminated

    monkeypatch.setattr("auditor.cli.cmd_run.run_audit", terminated)
    code, _, stderr = run_cli(["run", "--out", str(out)], env=env, cwd=tmp_path)
    assert code == 143, stderr
    assert findings_json(out)["complete"] is False
    assert (out / "findings.sarif").is_dir()
    assert stderr.strip().splitlines()[-1] == "auditor: exit 143: terminated (SIGTERM)"


def test_a_failed_first_sync_writes_no_sarif(env: dict[str, str], tmp_path: Path, emu: Any):
    """Nothing stored, no settings revision evaluated: a SARIF of the 12 usage rules' results
    would close every other open alert."""
    emu.faults.add("history", "500", times=0)
    out = tmp_path / "r"
    code, _, stderr = run_cli(["run", "--out", str(out)], env=env, cwd=tmp_path)
    assert code == 2
    assert not (out / "findings.sarif").exists()
    assert findings_json(out)["complete"] is False
    assert "findings.sarif not written: no settings revision was evaluated" in stderr


def test_a_run_leaves_no_report_of_an_earlier_run_in_its_out_folder(
    env: dict[str, str], tmp_path: Path
):
    """A persistent workspace must not ship yesterday's reports as today's: once its own checks
    have passed, every run clears auditor's own report files from --out (also when it then
    fails before writing any), and nothing else."""
    out = tmp_path / "o"
    assert run_cli(["run", "--out", str(out)], env=env, cwd=tmp_path)[0] == 1
    (out / "notes.txt").write_text("mine")
    (out / "findings.sarif.bak").write_text("mine")
    later = FIXED_NOW + timedelta(hours=1)
    argv = ["run", "--offline", "--out", str(out), "-o", "md"]
    assert run_cli(argv, env=env, cwd=tmp_path, now=later)[0] == 1
    assert {p.name for p in out.iterdir()} == {"report.md", "notes.txt", "findings.sarif.bak"}
    argv = ["run", "--offline", "--out", str(out), "--at", "1999-01-01"]  # before revision 1
    assert run_cli(argv, env=env, cwd=tmp_path, now=later)[0] == 2
    assert {p.name for p in out.iterdir()} == {"notes.txt", "findings.sarif.bak"}
    assert (out / "notes.txt").read_text() == "mine"


def test_a_run_that_fails_its_own_checks_leaves_the_out_folder_alone(
    env: dict[str, str], tmp_path: Path
):
    """A typo on the command line (a bad date, a bad policy file, a bad --workers) is refused
    before anything is touched: yesterday's reports stay."""
    out = tmp_path / "o"
    assert run_cli(["run", "--out", str(out)], env=env, cwd=tmp_path)[0] == 1
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    bad = tmp_path / "bad.yaml"
    bad.write_text("rules:\n  - id: X\n    severty: high\n")
    orgs = tmp_path / "orgs.toml"
    orgs.write_text('[[org]]\nname = "acme"\n')
    for flags in (
        ["--at", "2026-13-01"],
        ["--policy", str(bad)],
        ["--orgs", str(orgs), "--workers", "0"],
        ["--orgs", str(orgs), "--org", "x"],
    ):
        argv = ["run", "--offline", "--out", str(out), *flags]
        assert run_cli(argv, env=env, cwd=tmp_path)[0] == 2, flags
        assert {p.name: p.read_bytes() for p in out.iterdir()} == before, flags


def test_a_run_removes_only_the_report_files_auditor_wrote(env: dict[str, str], tmp_path: Path):
    """A pytest junit.xml, a hand-written report.md, a folder or a symlink of a report's name
    is not auditor's: it stays (a symlink's target is never touched)."""
    out = tmp_path / "o"
    out.mkdir()
    junit = '<?xml version="1.0" encoding="utf-8"?><testsuites name="pytest tests">\n'
    (out / "junit.xml").write_text(junit)
    (out / "report.md").write_text("# My report\n\nauditor is great\n")
    (out / "findings.json").write_text('{"tool": {"name": "other"}}\n')
    (out / "report.html").mkdir()
    elsewhere = tmp_path / "elsewhere"
    assert run_cli(["run", "--out", str(elsewhere)], env=env, cwd=tmp_path)[0] == 1
    (out / "findings.sarif").symlink_to(tmp_path / "mine.sarif")
    (tmp_path / "mine.sarif").write_text('{"version": "2.1.0"}\n')
    argv = ["run", "--offline", "--out", str(out), "-o", "md"]
    code, _, stderr = run_cli(argv, env=env, cwd=tmp_path)
    assert "report.md" not in stderr
    assert code == 1, stderr
    assert (out / "junit.xml").read_text() == junit
    assert (out / "findings.json").read_text() == '{"tool": {"name": "other"}}\n'
    assert (out / "report.html").is_dir()
    assert (out / "findings.sarif").is_symlink()
    assert (tmp_path / "mine.sarif").read_text() == '{"version": "2.1.0"}\n'
    assert (out / "report.md").read_text().startswith("## Compliance run ")  # overwritten
    # a link to auditor's own earlier report: the link goes, never what it points to
    (out / "findings.sarif").unlink()
    (out / "findings.sarif").symlink_to(elsewhere / "findings.sarif")
    assert run_cli(argv, env=env, cwd=tmp_path)[0] == 1
    assert not (out / "findings.sarif").is_symlink()
    assert (elsewhere / "findings.sarif").is_file()
    # every report auditor writes is recognised as its own
    argv = ["run", "--offline", "--out", str(elsewhere), "-o", "html,md,json,sarif,junit,oscal"]
    assert run_cli(argv, env=env, cwd=tmp_path)[0] == 1
    assert len(list(elsewhere.iterdir())) == 6
    argv = ["run", "--offline", "--out", str(elsewhere), "-o", "md"]
    assert run_cli(argv, env=env, cwd=tmp_path)[0] == 1
    assert {p.name for p in elsewhere.iterdir()} == {"report.md"}


def test_a_review_leaves_no_report_of_an_earlier_run_in_its_out_folder(
    env: dict[str, str], tmp_path: Path
):
    out = tmp_path / "o"
    assert run_cli(["run", "--out", str(out)], env=env, cwd=tmp_path)[0] == 1
    proposed = EXAMPLES / "proposed-settings.yaml"
    argv = ["review", str(proposed), "--offline", "--out", str(out), "-o", "json"]
    code, _, stderr = run_cli(argv, env=env, cwd=tmp_path)
    assert code in (0, 1), stderr
    assert {p.name for p in out.iterdir()} == {"findings.json"}
    assert "review" in findings_json(out)


def test_a_run_refuses_an_evidence_bundles_folder_as_out(env: dict[str, str], tmp_path: Path):
    """Clearing the reports of a bundle would break its manifest: refused, nothing removed."""
    bundle = _exported(env, tmp_path)
    _refused_as_out(bundle, [str(bundle), str(bundle / "reports")], env, tmp_path)


def _exported(env: dict[str, str], tmp_path: Path) -> Path:
    """An evidence bundle `evidence/` of a fresh sync."""
    assert run_cli(["sync"], env=env, cwd=tmp_path)[0] == 0
    bundle = tmp_path / "evidence"
    assert run_cli(["export", "--out", str(bundle)], env=env, cwd=tmp_path)[0] == 0
    return bundle


def _refused_as_out(bundle: Path, outs: list[str], env: dict[str, str], tmp_path: Path) -> None:
    """`run --out` each of `outs` is refused, and the bundle is left whole and verifies."""
    before = sorted(p.relative_to(bundle) for p in bundle.rglob("*"))
    for out in outs:
        code, _, stderr = run_cli(["run", "--offline", "--out", out], env=env, cwd=tmp_path)
        assert code == 2
        assert "belongs to an evidence bundle" in stderr.splitlines()[-1]
    assert sorted(p.relative_to(bundle) for p in bundle.rglob("*")) == before
    assert run_cli(["verify", str(bundle)], env=env, cwd=tmp_path)[0] == 0


def test_a_symlink_to_an_evidence_bundles_folder_is_refused_as_out(
    env: dict[str, str], tmp_path: Path
):
    """A `latest` link to a bundle's reports is that folder: refused, the bundle verifies."""
    bundle = _exported(env, tmp_path)
    (tmp_path / "latest").symlink_to(bundle / "reports")
    (tmp_path / "root").symlink_to(bundle)
    _refused_as_out(bundle, ["latest", "root", "root/reports"], env, tmp_path)


def test_a_fifo_named_manifest_json_beside_the_out_folder_is_not_waited_on(
    env: dict[str, str], tmp_path: Path
):
    """The bundle check read `manifest.json` in `--out`'s parent whatever it was: a named pipe
    there left the run waiting for a writer forever. It is read as every input file is (a
    regular file under a cap), so the run goes on."""
    assert run_cli(["sync"], env=env, cwd=tmp_path)[0] == 0
    os.mkfifo(tmp_path / "manifest.json")
    (tmp_path / "r").mkdir()  # yesterday's report folder
    argv = [sys.executable, "-m", "auditor", "run", "--offline", "--out", "r", "-o", "md"]
    done = subprocess.run(
        argv, env={**os.environ, **env}, cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    # (exit 2 here only for the usage days the real clock finds missing: the run finished)
    assert "evidence bundle" not in done.stderr
    assert (tmp_path / "r" / "report.md").read_text().startswith("## Compliance run ")


def sarif_category(out: Path) -> str:
    automation = json.loads((out / "findings.sarif").read_text())["runs"][0]["automationDetails"]
    category, _, run_id = automation["id"].rpartition("/")
    assert run_id.startswith("20261101T")
    return str(category)


def test_the_sarif_category_is_chosen_and_a_one_off_run_never_takes_the_nightlys(
    env: dict[str, str], tmp_path: Path, emu: Any
):
    """Code scanning replaces the alerts of the category a SARIF names, and codeql-action's
    `category` input does not override auditor's automationDetails.id: `--sarif-category`
    sets it, and an `--at` or `--all-revisions` run has a category of its own."""
    assert run_cli(["sync"], env=env, cwd=tmp_path)[0] == 0
    at = emu.dataset.history[len(emu.dataset.history) // 2]["updatedAt"]
    runs = {
        "nightly": [],
        "named": ["--sarif-category", "auditor-nightly"],
        "at": ["--no-usage", "--at", at],
        "all": ["--all-revisions"],
        "both": ["--no-usage", "--at", at, "--all-revisions"],
        "at-named": ["--no-usage", "--at", at, "--sarif-category", "audits/q3"],
    }
    categories = {}
    for name, flags in runs.items():
        argv = ["run", "--offline", "--soft-fail", "--out", str(tmp_path / name), *flags]
        code, _, stderr = run_cli(argv, env=env, cwd=tmp_path)
        assert code == 0, stderr
        categories[name] = sarif_category(tmp_path / name)
    assert categories == {
        "nightly": "auditor/127.0.0.1/run",  # as before: the nightly's open alerts stay its own
        "named": "auditor-nightly",
        # `--no-usage` left the usage rules out: named too, so that an upload never closes them
        "at": "auditor/127.0.0.1/run-as-of-no-usage",
        "all": "auditor/127.0.0.1/run-all-revisions",
        "both": "auditor/127.0.0.1/run-as-of-all-revisions-no-usage",
        "at-named": "audits/q3",
    }


@pytest.mark.parametrize("category", ["", "a/", "/a", "a//b", "a b", "nightly\n", "x" * 201])
def test_a_bad_sarif_category_is_a_usage_error(
    tmp_path: Path, category: str, capsys: pytest.CaptureFixture[str]
):
    argv = ["run", "--offline", "--sarif-category", category, "--out", str(tmp_path / "r")]
    code, _, stderr = run_cli(argv, env={"AUDITOR_STATE": str(tmp_path / "s.db")}, cwd=tmp_path)
    assert code == 2
    assert "--sarif-category: " in stderr + capsys.readouterr().err  # argparse's own stderr
    assert not (tmp_path / "r").exists()


def test_review_against_live_reports_introduced_and_fixed(env: dict[str, str], tmp_path: Path):
    summary = tmp_path / "step-summary.md"
    review_env = {**env, "GITHUB_STEP_SUMMARY": str(summary)}
    proposed = EXAMPLES / "proposed-settings.yaml"
    code, stdout, stderr = run_cli(
        ["review", str(proposed), "--out", str(tmp_path / "r")], env=review_env, cwd=tmp_path
    )
    assert code == 1, stderr
    data = findings_json(tmp_path / "r")
    assert data["review"]["introduced"], "raising autonomy to high must introduce findings"
    assert "would introduce" in stdout
    assert summary.read_text() == (tmp_path / "r" / "report.md").read_text()
    sarif = json.loads((tmp_path / "r" / "findings.sarif").read_text())
    uris = {
        loc["physicalLocation"]["artifactLocation"]["uri"]
        for result in sarif["runs"][0]["results"]
        for loc in result.get("locations", [])
    }
    assert any(uri.endswith("proposed-settings.yaml") for uri in uris)


def test_review_between_two_files_needs_no_service(tmp_path: Path):
    code, _, stderr = run_cli(
        [
            "review",
            str(EXAMPLES / "proposed-settings.yaml"),
            "--against",
            str(EXAMPLES / "live-settings.yaml"),
            "--out",
            str(tmp_path / "r"),
        ],
        env={},
        cwd=tmp_path,
    )
    assert code == 1, stderr
    review = findings_json(tmp_path / "r")["review"]
    assert review["introduced"] and review["fixed"]


def test_review_of_a_file_that_is_not_a_settings_object(tmp_path: Path):
    proposed = tmp_path / "p.json"
    proposed.write_text("[1, 2]")
    code, _, stderr = run_cli(
        ["review", str(proposed), "--against", str(EXAMPLES / "live-settings.yaml")],
        env={},
        cwd=tmp_path,
    )
    assert code == 2
    assert "p.json:1:1" in stderr and "expected a settings object" in stderr


def test_demo_writes_reports_and_exits_0(tmp_path: Path):
    code, stdout, stderr = run_cli(["demo", "--out", str(tmp_path / "demo")], env={}, cwd=tmp_path)
    assert code == 0, stderr
    assert {p.name for p in (tmp_path / "demo").iterdir()} == REPORT_FILES
    assert str(tmp_path / "demo" / "report.html") in stdout


def test_demo_reaches_its_emulator_directly_whatever_proxy_is_configured(tmp_path: Path):
    """A machine set up for a proxy (`AUDITOR_PROXY`, a `[tool.auditor] proxy`) and a CA bundle
    that is gone: the demo's emulator listens on this machine's loopback, which a proxy
    elsewhere cannot reach, so the demo goes to it directly (it used to exit 2, its sync sent
    to the proxy with the demo token)."""
    with socket.socket() as s:  # a port nothing listens on: a proxy that cannot be reached
        s.bind(("127.0.0.1", 0))
        proxy = f"http://127.0.0.1:{s.getsockname()[1]}"
    (tmp_path / "pyproject.toml").write_text(f'[tool.auditor]\nproxy = "{proxy}"\n')
    env = {"AUDITOR_PROXY": proxy, "AUDITOR_CA_BUNDLE": str(tmp_path / "gone.pem")}
    code, stdout, stderr = run_cli(["demo", "--out", str(tmp_path / "demo")], env=env, cwd=tmp_path)
    assert code == 0, stderr
    assert "demo: AUDITOR_PROXY and AUDITOR_CA_BUNDLE not used: the emulator runs on this " \
        "machine" in stderr  # fmt: skip
    assert "sync failed" not in stderr and "proxy" not in stdout
    assert {p.name for p in (tmp_path / "demo").iterdir()} == REPORT_FILES


def test_canary_secrets_never_reach_any_output(emu: Any, tmp_path: Path):
    canaries = emu.dataset.plant_canaries()
    token = "CANARYTOKEN-" + "7f3a9c2e1d5b8a4f6e0c"
    emu_tokens = {token: "owner"}
    with start_emulator(dataset=emu.dataset, tokens=emu_tokens, now=FIXED_NOW) as canary_emu:
        env = {
            "AUDITOR_BASE_URL": canary_emu.base_url,
            "AUDITOR_APP_URL": canary_emu.app_url,
            "AUDITOR_TOKEN": token,
            "AUDITOR_STATE": str(tmp_path / "state.db"),
        }
        proposed = tmp_path / "proposed.json"
        latest = dict(canary_emu.dataset.history[-1]["settings"])
        latest["maxAutonomyLevel"] = "high"
        proposed.write_text(json.dumps(latest))
        streams = []
        for argv in (
            ["sync"],
            ["diff"],
            ["diff", "--format", "patch"],
            ["history"],
            ["run", "--out", str(tmp_path / "run")],
            ["review", str(proposed), "--out", str(tmp_path / "review")],
            ["export", "--out", str(tmp_path / "evidence")],
        ):
            _, out, err = run_cli(argv, env=env, cwd=tmp_path)
            streams += [out, err]
    files = [p for p in tmp_path.rglob("*") if p.is_file() and p != proposed]
    texts = streams + [p.read_bytes().decode("utf-8", "replace") for p in files]
    for secret in [*canaries, token]:
        for form in secret_forms(secret):
            hits = [i for i, text in enumerate(texts) if form in text]
            assert not hits, f"{secret!r} leaked as {form!r}"
    report = (tmp_path / "run" / "findings.json").read_text()
    assert "[secret fp:" in report or "secret fp:" in report


def test_error_messages_carry_no_terminal_escapes_from_data(tmp_path: Path):
    policy = tmp_path / "p.yaml"
    policy.write_text('rules:\n  - id: X\n    "\\e]8;;http://evil\\a\\e[31mseverty": high\n')
    code, stdout, stderr = run_cli(["policy", "lint", str(policy)], env={}, cwd=tmp_path)
    assert code == 2
    assert "severty" in stdout + stderr
    assert "\x1b" not in stdout + stderr and "\x07" not in stdout + stderr
    code, _, stderr = run_cli(["run", "--offline", "--policy", str(policy)], env={}, cwd=tmp_path)
    assert code == 2
    assert "severty" in stderr
    assert "\x1b" not in stderr and "\x07" not in stderr


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        pytest.param(["run", "--offline"], "no state file", id="offline-without-state"),
        pytest.param(["run"], "no service address", id="no-address"),
        pytest.param(["run", "--at", "2026-13-01"], "--at: expected a date", id="bad-at-date"),
        pytest.param(["run", "--at", "2027-01-01"], "is in the future", id="future-at-date"),
    ],
)
def test_run_refuses_early_when_it_has_nothing_to_audit(
    tmp_path: Path, argv: list[str], message: str
):
    code, _, stderr = run_cli(argv, env={}, cwd=tmp_path)
    assert code == 2
    assert message in stderr
    assert not (tmp_path / ".auditor").exists() and not (tmp_path / "reports").exists()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param(
            "sessionRetentionDays: 99999999999999999999999\n", "p.yaml:1:23:", id="big-int"
        ),
        pytest.param(
            "sandbox: {enabled: .nan}\n", "p.yaml:1:20: error: $.sandbox.enabled: ", id="nan"
        ),
        pytest.param("a: !!binary aGVsbG8=\n", "p.yaml:1:4:", id="binary-tag"),
    ],
)
def test_review_refuses_values_json_cannot_carry(tmp_path: Path, text: str, message: str):
    (tmp_path / "p.yaml").write_text(text)
    argv = ["review", str(tmp_path / "p.yaml"), "--against", str(EXAMPLES / "live-settings.yaml")]
    code, _, stderr = run_cli(argv, env={}, cwd=tmp_path)
    assert code == 2
    assert message in stderr and "Traceback" not in stderr


@pytest.mark.parametrize(
    "argv",
    [
        pytest.param(["demo", "--revisions", "0"], id="demo-without-revisions"),
        # (a folder given to review is an input file's `/:1:1: error: a directory, …`, as for
        # --waivers: tests/test_review_inputs.py)
        # ran until killed, filling the memory, before a bound
        pytest.param(["emulator", "--revisions", "99999999999"], id="emulator-too-many"),
        pytest.param(["demo", "--repos", "10000000"], id="demo-too-many-repos"),
    ],
)
def test_usage_errors_are_one_line(tmp_path: Path, argv: list[str]):
    code, _, stderr = run_cli(argv, env={}, cwd=tmp_path)
    assert code == 2
    assert stderr.startswith("auditor: error: ") and stderr.count("\n") == 1
    if argv[-1] in ("99999999999", "10000000"):
        assert "--revisions must be from 1 to 200,000 and --repos from 0 to 20,000" in stderr


@pytest.mark.parametrize(
    "argv",
    [
        pytest.param(["run", "--offline", "--at", "0001-01-01T00:00:00+01:00"], id="at-underflow"),
        pytest.param(["history", "--until", "9999-12-31T23:59:59-01:00"], id="until-overflow"),
    ],
)
def test_dates_beyond_the_calendar_are_usage_errors(tmp_path: Path, argv: list[str]):
    code, _, stderr = run_cli(argv, env={}, cwd=tmp_path)
    assert code == 2
    assert "expected a date" in stderr and "Traceback" not in stderr


def test_a_name_too_long_for_the_file_system_is_a_clear_error_not_an_unexpected_one(
    env: dict[str, str], tmp_path: Path
):
    """`Path.exists` raises ENAMETOOLONG: `--out` said `unexpected OSError`; so did an input
    file, and `verify` of a bundle so named."""
    run_cli(["sync"], env=env, cwd=tmp_path)
    long = str(tmp_path / ("y" * 300))
    said = {}
    for name, argv in {
        "run": ["run", "--offline", "--out", long],
        "review": ["review", long, "--offline"],
        "review-out": ["review", str(tmp_path / "p.json"), "--offline", "--out", long],
        "export": ["export", "--out", long],
        "verify": ["verify", long],
        "config": ["sync", "--config", long],
    }.items():
        (tmp_path / "p.json").write_text("{}")
        code, _, stderr = run_cli(argv, env=env, cwd=tmp_path)
        said[name] = (code, stderr.strip().splitlines()[-1].replace(long, "LONG"))
    assert said == {
        "run": (2, "auditor: error: cannot use LONG as the report folder: File name too long"),
        "review": (2, "auditor: error: LONG: File name too long"),
        "review-out": (
            2,
            "auditor: error: cannot use LONG as the report folder: File name too long",
        ),
        "export": (2, "auditor: error: cannot use LONG as the report folder: File name too long"),
        "verify": (2, "auditor: error: LONG: no such folder (give the evidence bundle's folder)"),
        "config": (2, "auditor: error: LONG: File name too long"),
    }


def test_an_unusable_report_folder_stops_the_run_before_it_is_recorded(
    env: dict[str, str], tmp_path: Path
):
    run_cli(["sync"], env=env, cwd=tmp_path)
    blocker = tmp_path / "afile"
    blocker.write_text("x")
    code, _, stderr = run_cli(["run", "--offline", "--out", str(blocker)], env=env, cwd=tmp_path)
    assert code == 2
    assert "cannot use" in stderr and "it is a file" in stderr
    code, _, _ = run_cli(["run", "--offline", "--out", str(tmp_path / "r")], env=env, cwd=tmp_path)
    assert code == 1
    assert {f["lifecycle"] for f in findings_json(tmp_path / "r")["findings"]} == {None}


@pytest.mark.parametrize(("signal_", "code_"), [("int", 130), ("term", 143)])
def test_demo_passes_an_interrupt_through(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, signal_: str, code_: int
):
    """Ctrl-C is 130 and SIGTERM 143, as for `run` (SIGTERM gave 0: reviewer R12)."""
    from auditor.cli.signals import Terminated

    def interrupted(*_args: Any, **_kwargs: Any) -> Any:
        raise KeyboardInterrupt if signal_ == "int" else Terminated

    monkeypatch.setattr("auditor.cli.cmd_run.run_audit", interrupted)
    code, _, stderr = run_cli(["demo", "--out", str(tmp_path / "d")], env={}, cwd=tmp_path)
    assert code == code_
    assert f"exit {code_}" in stderr


def test_review_checks_the_proposed_file_before_any_request(
    env: dict[str, str], tmp_path: Path, emu: Any
):
    code, _, stderr = run_cli(["review", str(tmp_path / "missing.yaml")], env=env, cwd=tmp_path)
    assert code == 2 and "missing.yaml:1:1: error: No such file or directory" in stderr
    assert emu.requests == []


def test_two_reviews_in_one_second_keep_both_reports(tmp_path: Path):
    argv = ["review", str(EXAMPLES / "proposed-settings.yaml"), "--against"]
    for _ in range(2):
        run_cli([*argv, str(EXAMPLES / "live-settings.yaml")], env={}, cwd=tmp_path)
    assert len(list((tmp_path / "reports").iterdir())) == 2


def test_review_diffs_lists_by_the_configured_table(tmp_path: Path):
    (tmp_path / "live.yaml").write_text("teamMembers: [a, b, c]\n")
    (tmp_path / "proposed.yaml").write_text("teamMembers: [c, a, b, d]\n")
    (tmp_path / "auditor.toml").write_text('[diff_keys]\nsets = ["teamMembers"]\n')
    files = {name: str(tmp_path / name) for name in ("proposed.yaml", "live.yaml", "auditor.toml")}
    argv = ["review", files["proposed.yaml"], "--against", files["live.yaml"]]
    argv += ["--config", files["auditor.toml"]]
    run_cli([*argv, "--out", str(tmp_path / "r")], env={}, cwd=tmp_path)
    changes = findings_json(tmp_path / "r")["review"]["changes"]
    assert [(c["kind"], c["after"]) for c in changes] == [("item_added", "d")]


def test_a_one_off_run_does_not_become_the_nightly_baseline(env: dict[str, str], tmp_path: Path):
    def run(name: str, *extra: str, hours: int) -> dict[str, Any]:
        argv = ["run", "--soft-fail", "--out", str(tmp_path / name), *extra]
        run_cli(argv, env=env, cwd=tmp_path, now=FIXED_NOW + timedelta(hours=hours))
        return findings_json(tmp_path / name)

    run("nightly-1", hours=0)
    one_off = run("one-off", "--policy", str(REPO / "policies" / "readiness.yaml"), hours=1)
    assert one_off["resolved"] == []  # not compared with a run of other rules
    also = run("as-of", "--all-revisions", hours=2)
    assert all(f["lifecycle"] is None for f in also["findings"])
    nightly = run("nightly-2", hours=3)
    tracked = [f for f in nightly["findings"] if f["status"] in ("fail", "unknown")]
    assert {f["lifecycle"] for f in tracked} == {"persisting"}
    assert nightly["resolved"] == []


def test_nightly_runs_keep_only_the_records_the_next_run_compares_with(
    env: dict[str, str], tmp_path: Path
):
    """Night after night the state file keeps the finding records of the last complete
    nightly only (it grew by every night's records, ~1.1 MB a night at 5,800 findings), and
    what the next night says is unchanged: persisting findings, first seen in the first run,
    also when a night's clock is behind the night before's."""

    def run(name: str, *extra: str, hours: int) -> dict[str, Any]:
        argv = ["run", "--soft-fail", "--out", str(tmp_path / name), *extra]
        run_cli(argv, env=env, cwd=tmp_path, now=FIXED_NOW + timedelta(hours=hours))
        return findings_json(tmp_path / name)

    def stored() -> dict[str, int]:
        with closing(sqlite3.connect(env["AUDITOR_STATE"])) as db, db:
            rows = db.execute("SELECT run_id, count(*) FROM findings GROUP BY run_id").fetchall()
        return dict(rows)

    first = run("night-1", hours=0)
    one_off = run("one-off", "--policy", str(REPO / "policies" / "readiness.yaml"), hours=1)
    tracked = {f["fingerprint"] for f in first["findings"] if f["status"] in ("fail", "unknown")}
    assert tracked
    nights = [first]
    for n, hours in [(2, 2), (3, 3), (4, 1)]:  # the fourth night's clock is behind
        nights.append(run(f"night-{n}", hours=hours))
        last = nights[-1]
        now = [f for f in last["findings"] if f["status"] in ("fail", "unknown")]
        assert {f["fingerprint"] for f in now} == tracked
        assert {f["lifecycle"] for f in now} == {"persisting"}
        assert last["resolved"] == []
        kept = stored()
        assert set(kept) == {one_off["run"]["id"], last["run"]["id"]}
        assert kept[last["run"]["id"]] >= len(tracked)
    with closing(sqlite3.connect(env["AUDITOR_STATE"])) as db, db:
        runs = [r for (r,) in db.execute("SELECT run_id FROM runs ORDER BY rowid")]
        first_seen = {r for (r,) in db.execute("SELECT DISTINCT first_seen_run FROM findings")}
    assert len(runs) == 5  # every run is still listed
    assert first_seen <= {first["run"]["id"], one_off["run"]["id"]}


def test_no_usage_does_not_call_a_usage_rules_waiver_stale(env: dict[str, str], tmp_path: Path):
    """`--no-usage` leaves the usage rules out: their waivers were not tried, so they are not
    stale; a waiver of a rule that was tried and matched nothing still is."""
    (tmp_path / "w.yaml").write_text(
        "waivers:\n"
        "  - {rule: USE-MOD-001, subject: usage, reason: r, owner: o, expires: 2026-12-31}\n"
        "  - {rule: BASE-MOD-001, subject: org, reason: r, owner: o, expires: 2026-12-31}\n",
        encoding="utf-8",
    )
    argv = ["run", "--no-usage", "--soft-fail", "--waivers", str(tmp_path / "w.yaml")]
    code, _, stderr = run_cli([*argv, "--out", str(tmp_path / "r")], env=env, cwd=tmp_path)
    assert code == 0, stderr
    stale = findings_json(tmp_path / "r")["waivers"]["stale"]
    assert [w["rule_id"] for w in stale] == ["BASE-MOD-001"]
