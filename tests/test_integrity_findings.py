"""`auditor run` reports the store's integrity issues as findings of a built-in rule.

A revision (or readiness report) stored with one content and later served with another is kept
as stored and recorded as an integrity issue (design §4). Every run reports each as a finding
of `AUDITOR-INTEGRITY-001`: in every output, gated at its severity, waivable, new then
persisting. A sync records each issue once, however often it meets it.
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

import pytest

from auditor.cli import Context, main
from auditor.store.database import Store
from auditor.workflows.sync import format_summary
from tests.test_sync import NOW, TOKEN, FakeService, run_sync

RULE = "AUDITOR-INTEGRITY-001"
# One rule that passes on the fake service's settings: the integrity findings are the only ones.
POLICY = """\
rules:
  - id: T-N-001
    title: The revision counter is set
    severity: low
    target: settings
    assert: {path: n, exists: true}
"""


@pytest.fixture
def service() -> FakeService:
    return FakeService(5, reports=3)


@pytest.fixture(params=["sqlite", "postgresql"])
def state(request: pytest.FixtureRequest, tmp_path: Path) -> Path | str:
    """The state: a file, or a PostgreSQL store (the issues are read by the shared SQL)."""
    if request.param == "postgresql":
        return str(request.getfixturevalue("pg_url"))
    return tmp_path / "state.db"


def sync_into(state: Path | str, service: FakeService) -> Any:
    with Store.open(state) as store:
        store.register_secret(TOKEN)
        return run_sync(store, service)


def rewrite(service: FakeService, revision: int, value: str) -> None:
    service.revisions[revision]["settings"]["n"] = value


def run(tmp_path: Path, state: Path | str, name: str, *flags: str) -> tuple[int, str]:
    (tmp_path / "p.yaml").write_text(POLICY)
    err = io.StringIO()
    ctx = Context(
        env={"AUDITOR_STATE": str(state)},
        stdout=io.StringIO(),
        stderr=err,
        clock=lambda: NOW,
        cwd=str(tmp_path),
    )
    argv = [
        "run",
        "--offline",
        "--policy",
        "p.yaml",
        "--out",
        name,
        "-o",
        "json,sarif,junit,md,html",
    ]
    return main([*argv, *flags], ctx), err.getvalue()


def integrity(tmp_path: Path, name: str) -> list[dict[str, Any]]:
    data = json.loads((tmp_path / name / "findings.json").read_text())
    return [f for f in data["findings"] if f["rule_id"] == RULE]


def test_a_rewritten_revision_is_a_critical_finding_in_every_output(
    tmp_path: Path, state: Path | str, service: FakeService
) -> None:
    sync_into(state, service)
    with Store.open(state) as store:
        stored = store.get_revision(3)
    rewrite(service, 3, "rewritten")
    sync_into(state, service)
    code, err = run(tmp_path, state, "r")
    assert code == 1, err
    assert err.strip().splitlines()[-1].startswith("auditor: exit 1: 1 finding")
    [finding] = integrity(tmp_path, "r")
    assert stored is not None
    assert finding["severity"] == "critical" and finding["status"] == "fail"
    assert finding["title"] == "Stored history changed at the source"
    assert finding["subject"]["key"] == "settings@3"
    [evidence] = finding["evidence"]
    assert evidence["expected"] == stored.content_hash != evidence["actual"]
    assert "first served" in evidence["note"]
    assert "rewritten" not in (tmp_path / "r" / "findings.json").read_text()  # no content shown
    sarif = json.loads((tmp_path / "r" / "findings.sarif").read_text())
    [driver_rule] = [r for r in sarif["runs"][0]["tool"]["driver"]["rules"] if r["id"] == RULE]
    assert driver_rule["defaultConfiguration"]["level"] == "error"
    assert [r["ruleId"] for r in sarif["runs"][0]["results"]] == [RULE]
    for name in ("junit.xml", "report.md", "report.html"):
        text = (tmp_path / "r" / name).read_text()
        assert RULE in text and "revision 3" in text, name


def test_the_finding_is_new_then_persisting_and_a_waiver_acknowledges_it(
    tmp_path: Path, state: Path | str, service: FakeService
) -> None:
    sync_into(state, service)
    rewrite(service, 2, "rewritten")
    sync_into(state, service)
    run(tmp_path, state, "r1")
    run(tmp_path, state, "r2")
    [first], [second] = integrity(tmp_path, "r1"), integrity(tmp_path, "r2")
    assert second["lifecycle"] == "persisting"
    assert second["fingerprint"] == first["fingerprint"]
    (tmp_path / "w.yaml").write_text(
        "waivers:\n  - rule: AUDITOR-INTEGRITY-001\n    subject: settings@2\n"
        "    reason: restored from a backup, checked\n    owner: sec@example.com\n"
        "    expires: 2026-12-31\n"
    )
    code, err = run(tmp_path, state, "r3", "--waivers", "w.yaml")
    assert code == 0, err
    [waived] = integrity(tmp_path, "r3")
    assert waived["status"] == "waived" and waived["fingerprint"] == first["fingerprint"]


def test_a_rewritten_report_and_a_second_rewrite_are_findings_of_their_own(
    tmp_path: Path, state: Path | str, service: FakeService
) -> None:
    sync_into(state, service)
    rewrite(service, 4, "first")
    service.reports[1]["report"]["lint"]["rationale"] = "edited"
    sync_into(state, service)
    rewrite(service, 4, "second")
    sync_into(state, service)
    code, err = run(tmp_path, state, "r", "--fail-on", "critical")
    assert code == 1, err
    found = integrity(tmp_path, "r")
    assert sorted(f["subject"]["key"] for f in found) == [
        service.reports[1]["repoUrl"],
        "settings@4",
        "settings@4",
    ]
    assert len({f["fingerprint"] for f in found}) == 3
    [report] = [f for f in found if f["subject"]["kind"] == "readiness"]
    assert "readiness report r0001" in report["subject"]["label"]


def test_a_sync_records_an_issue_once_and_names_only_a_few(
    tmp_path: Path, state: Path | str, service: FakeService
) -> None:
    sync_into(state, service)
    for number in range(1, 6):
        rewrite(service, number, "rewritten")
    summaries = [sync_into(state, service) for _ in range(3)]
    with Store.open(state) as store:
        issues = store.integrity_issues()
        rows = store._db.execute("SELECT COUNT(*) FROM integrity_issues").fetchone()[0]
    assert (len(issues), rows) == (5, 5)
    assert {i.seen_at for i in issues} == {summaries[0].integrity_issues[0].seen_at}
    text = format_summary(summaries[-1], "https://svc.test")
    assert "5 integrity issues." in text
    assert len(re.findall("changed after it was stored", text)) == 3
    assert "… and 2 more" in text


@pytest.mark.parametrize(
    ("policy", "flags", "message"),
    [
        pytest.param("rules: []\n", [], "the policies have no rule", id="no-rules"),
        pytest.param(
            "rules:\n  - {id: U-1, title: t, severity: low, target: usage,"
            " assert: {path: days, exists: true}}\n",
            ["--no-usage"],
            "every rule of the policies (1) is a usage rule and --no-usage leaves them out",
            id="only-usage-rules",
        ),
    ],
)
def test_a_run_that_evaluates_no_rule_is_refused(
    tmp_path: Path,
    state: Path | str,
    service: FakeService,
    policy: str,
    flags: list[str],
    message: str,
) -> None:
    sync_into(state, service)
    (tmp_path / "e.yaml").write_text(policy)
    err = io.StringIO()
    ctx = Context(
        env={"AUDITOR_STATE": str(state)}, stdout=io.StringIO(), stderr=err, clock=lambda: NOW,
        cwd=str(tmp_path),
    )  # fmt: skip
    code = main(["run", "--offline", "--policy", "e.yaml", "--out", "o", *flags], ctx)
    assert code == 2
    assert message in err.getvalue() and "Traceback" not in err.getvalue()
    assert not (tmp_path / "o").exists()


def test_an_evidence_bundle_reports_the_issues_and_its_rerun_reproduces_them(
    tmp_path: Path, service: FakeService
) -> None:
    state = tmp_path / "state.db"
    sync_into(state, service)
    rewrite(service, 2, "rewritten")
    service.reports[0]["report"]["lint"]["rationale"] = "edited"
    sync_into(state, service)
    (tmp_path / "p.yaml").write_text(POLICY)
    env = {"AUDITOR_STATE": str(state)}
    err = io.StringIO()
    ctx = Context(env=env, stdout=io.StringIO(), stderr=err, clock=lambda: NOW, cwd=str(tmp_path))
    assert main(["export", "--out", "bundle", "--policy", "p.yaml"], ctx) == 0, err.getvalue()
    data = json.loads((tmp_path / "bundle" / "reports" / "findings.json").read_text())
    keys = sorted(f["subject"]["key"] for f in data["findings"] if f["rule_id"] == RULE)
    assert keys == [service.reports[0]["repoUrl"], "settings@2"]
    out = io.StringIO()
    ctx = Context(env={}, stdout=out, stderr=err, clock=lambda: NOW, cwd=str(tmp_path))
    assert main(["verify", "bundle"], ctx) == 0, err.getvalue()
    assert "reports/findings.json" in out.getvalue()


def test_a_finding_fingerprinted_per_issue_keeps_everything_else() -> None:
    """Only the fingerprint changes: the status, waiver, lifecycle, location, attribution and
    rule facts are kept (the finding was copied field by field, which a field added later
    would have missed)."""
    from dataclasses import fields
    from datetime import UTC, datetime

    from auditor.findings.finding import Finding
    from auditor.findings.integrity import with_issue_fingerprints
    from auditor.models import Attribution, Evidence, SourceLocation, Subject

    finding = Finding(
        fingerprint="0" * 32,
        status="fail",
        raw_status="fail",
        subject=Subject("settings", "settings@3", "revision 3", revision=3),
        message="m",
        evidence=(Evidence("content_hash", "seen", "stored", "equals"),),
        since=Attribution(3, datetime(2026, 1, 1, tzinfo=UTC), "a@b.c"),
        rule_id=RULE,
        title="t",
        severity="critical",
        lifecycle="persisting",
        location=SourceLocation("f.yaml", 2, 3),
    )
    (fingerprinted,) = with_issue_fingerprints([finding])
    assert fingerprinted.fingerprint != finding.fingerprint
    for field in fields(Finding):
        if field.name != "digest":
            assert getattr(fingerprinted, field.name) == getattr(finding, field.name), field.name


def test_an_as_of_run_reports_the_issues_seen_by_then(
    tmp_path: Path, state: Path | str, service: FakeService
) -> None:
    """`run --at` (compliance as of a date) reported an issue first seen weeks after it."""
    sync_into(state, service)
    rewrite(service, 3, "rewritten")
    sync_into(state, service)  # seen at NOW, 2026-11-01 12:00
    code, err = run(tmp_path, state, "before", "--at", "2026-10-20T00:00:00Z")
    assert code == 0, err
    assert integrity(tmp_path, "before") == []
    code, err = run(tmp_path, state, "after", "--at", "2026-11-01T12:00:00Z")
    assert code == 1, err
    assert [f["subject"]["key"] for f in integrity(tmp_path, "after")] == ["settings@3"]
