"""What an external auditor reads of waivers (tester T64).

- MED 1: `run --at DATE` judges the waivers as of DATE, so a waiver in force then still waives
  though it expired before the report time; no report said so ("In force" listed it, "Expired"
  was empty). Every report now says the waivers were judged as of DATE and lists those that
  expired since, before the report.
- LOW 5: report.html's and report.md's row of a finding whose waiver expired did not say so
  (SARIF, JUnit and OSCAL did).
- LOW 6: `verify` printed a bundle's invalid readiness model as one line with literal
  `\\u000a` between its problems.
"""

from __future__ import annotations

import hashlib
import html
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FIXED_NOW, emulator_env, run_cli

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[1]

#: BASE-CMD-001 fails on the emulator's settings of 2026-09-30 and today (FIXED_NOW,
#: 2026-11-01): its waiver was in force on 2026-09-30 and expired on 2026-10-15.
WAIVERS = """\
waivers:
  - rule: BASE-CMD-001
    subject: settings
    reason: Legacy agents
    owner: old-owner@acme.example
    expires: 2026-10-15
    ticket: SEC-2
  - rule: BASE-CMD-002
    subject: settings
    reason: Migration
    owner: sec@acme.example
    expires: 2026-12-31
"""
EXPIRED_LINE = (
    "Waiver expired on 2026-10-15 (owner old-owner@acme.example, SEC-2): no longer waived"
)
FORMATS = "html,md,json,sarif,junit,oscal"


@pytest.fixture(scope="module")
def work(emu: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("t64")
    env = emulator_env(emu, folder / "state.db")
    code, _, err = run_cli(["sync"], env, folder)
    assert code == 0, err
    (folder / "waivers.yaml").write_text(WAIVERS, encoding="utf-8")
    return folder


def _run(work: Path, out: str, *extra: str, waivers: str = "waivers.yaml") -> Path:
    env = {"AUDITOR_STATE": str(work / "state.db")}
    argv = ["run", "--offline", "--no-usage", "--soft-fail", "-q", "--waivers", waivers]
    code, _, err = run_cli([*argv, "--out", out, "-o", FORMATS, *extra], env, work)
    assert code == 0, err
    return work / out


def _text(page: str) -> str:
    """report.html's text, tags left out, entities read."""
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page)))


def _md_block(md: str, rule: str) -> str:
    blocks = [b for b in md.split("<details>") if f"<b>{rule}</b>" in b]
    assert blocks, rule
    return blocks[0].split("</details>")[0]


def test_an_at_run_says_its_waivers_were_judged_then_and_which_expired_since(work: Path) -> None:
    out = _run(work, "at", "--at", "2026-09-30")
    doc = json.loads((out / "findings.json").read_text(encoding="utf-8"))
    waivers = doc["waivers"]
    assert waivers["judged_as_of"].startswith("2026-09-30")
    assert [w["rule_id"] for w in waivers["expired_since_as_of"]] == ["BASE-CMD-001"]
    # as of 2026-09-30 both were in force, and both waive (the view is coherent) ...
    assert {w["rule_id"] for w in waivers["in_force"]} == {"BASE-CMD-001", "BASE-CMD-002"}
    assert waivers["expired"] == []
    cmd1 = [f for f in doc["findings"] if f["rule_id"] == "BASE-CMD-001"]
    assert [f["status"] for f in cmd1] == ["waived"]

    # ... and every report says so
    page = _text((out / "report.html").read_text(encoding="utf-8"))
    section = page.split("Waivers judged as of", 1)
    assert len(section) == 2, "report.html does not say the waivers were judged as of --at"
    assert section[1].startswith(" 2026-09-30 23:59 UTC (--at)")
    assert "In force on 2026-09-30, expired before this report (1)" in page
    assert "In force on 2026-09-30 (2)" in page
    assert "2026-10-15 (expired before this report)" in page
    row = page.split("BASE-CMD-001", 2)  # the finding's row names the waiver's fate too
    assert (
        "Waiver judged as of 2026-09-30 (--at), when it was in force; it expired on 2026-10-15 "
        "(owner old-owner@acme.example, SEC-2), before this report"
    ) in page, row[0][-200:]

    md = (out / "report.md").read_text(encoding="utf-8")
    assert "Waivers judged as of 2026-09-30 23:59 UTC (--at)" in md
    assert "BASE-CMD-001 on settings, in force on 2026-09-30; expired 2026-10-15, before" in md
    block = _md_block(md, "BASE-CMD-001")
    assert "it expired on 2026-10-15" in html.unescape(block).replace("\\", "")

    sarif = json.loads((out / "findings.sarif").read_text(encoding="utf-8"))
    props = sarif["runs"][0]["properties"]
    assert props["waiversJudgedAsOf"].startswith("2026-09-30")
    assert props["waiversExpiredSinceAsOf"] == ["BASE-CMD-001 on settings: expired 2026-10-15"]

    junit = (out / "junit.xml").read_text(encoding="utf-8")
    assert 'name="waivers-judged-as-of" value="2026-09-30' in junit
    skipped = re.search(r'<skipped message="([^"]*old-owner[^"]*)"', junit)
    assert skipped and "it expired on 2026-10-15" in skipped.group(1)

    oscal = json.loads((out / "findings.oscal.json").read_text(encoding="utf-8"))
    result = oscal["assessment-results"]["results"][0]
    names = {p["name"]: p["value"] for p in result["props"]}
    assert names["waivers-judged-as-of"].startswith("2026-09-30")
    assert names["waiver-expired-since-as-of"].startswith("BASE-CMD-001 on settings")


def test_a_run_without_at_judges_waivers_now_and_says_nothing_of_as_of(work: Path) -> None:
    out = _run(work, "now")
    doc = json.loads((out / "findings.json").read_text(encoding="utf-8"))
    assert "judged_as_of" not in doc["waivers"]
    assert "expired_since_as_of" not in doc["waivers"]
    assert [w["rule_id"] for w in doc["waivers"]["expired"]] == ["BASE-CMD-001"]
    assert "judged as of" not in (out / "report.html").read_text(encoding="utf-8")


def test_the_row_of_a_finding_whose_waiver_expired_says_so_in_html_and_md(work: Path) -> None:
    out = _run(work, "plain")
    page = (out / "report.html").read_text(encoding="utf-8")
    rule = page.split('id="rule-base-cmd-001"', 1)[1].split("</section>", 1)[0]
    assert EXPIRED_LINE in html.unescape(rule)
    md = (out / "report.md").read_text(encoding="utf-8")
    block = html.unescape(_md_block(md, "BASE-CMD-001")).replace("\\", "")
    assert EXPIRED_LINE.replace("@", "@\u200b") in block or EXPIRED_LINE in block
    # the finding still waived by the other waiver says nothing of an expiry
    other = html.unescape(_md_block(md, "BASE-CMD-002"))
    assert "expired" not in other.lower()


def test_verify_lists_a_bundles_readiness_model_problems_one_a_line(
    work: Path, tmp_path: Path
) -> None:
    env = {"AUDITOR_STATE": str(work / "state.db")}
    code, _, err = run_cli(["export", "--out", str(tmp_path / "ev")], env, work)
    assert code == 0, err
    bundle = tmp_path / "ev"
    model = bundle / "inputs" / "readiness-model.yaml"
    text = model.read_text(encoding="utf-8")
    assert "scope: application" in text
    model.write_text(text.replace("scope: application", "scope: applicatixn"), encoding="utf-8")
    # the manifest rewritten to match (verify re-runs no file its hash check found altered)
    manifest = json.loads((bundle / "manifest.json").read_text(encoding="utf-8"))
    entry = manifest["files"]["inputs/readiness-model.yaml"]
    entry["sha256"] = hashlib.sha256(model.read_bytes()).hexdigest()
    entry["bytes"] = model.stat().st_size
    (bundle / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    code, _, err = run_cli(["verify", str(bundle)], {}, tmp_path, now=FIXED_NOW)
    assert code == 2
    assert "\\u000a" not in err and "\\n" not in err
    lines = err.splitlines()
    head = [x for x in lines if "re-run: the bundle cannot be evaluated" in x]
    assert len(head) == 1 and head[0].endswith("invalid readiness model:"), head
    listed = [x for x in lines if x.startswith("auditor: verify:   ")]
    *problems, more = listed  # the first 20, then how many more
    assert len(problems) == 20
    assert all("readiness-model.yaml:" in x and ": error: " in x for x in problems)
    assert re.fullmatch(r"auditor: verify:   … and \d+ more line\(s\)", more), more
    assert all(len(x) < 400 for x in lines)
    shutil.rmtree(bundle)


def _per_revision(doc: dict[str, Any], status: str) -> dict[int, int]:
    counts: dict[int, int] = {}
    for f in doc["findings"]:
        s = f["subject"]
        if s["kind"] == "settings" and f["status"] == status:
            counts[s["revision"]] = counts.get(s["revision"], 0) + 1
    return counts


def test_compliance_over_time_counts_a_waived_result_as_waived_not_failing(work: Path) -> None:
    """LOW 7: the chart and findings.json's `failing_by_revision` counted waived results as
    failing, unlabelled, while every other count puts them under waived."""
    plain = _run(work, "allrev-plain", "--all-revisions")
    doc = json.loads((plain / "findings.json").read_text(encoding="utf-8"))
    # a rule failing at some older revision only, to waive that revision alone (`settings@N`)
    by_rule: dict[str, set[int]] = {}
    for f in doc["findings"]:
        if f["subject"]["kind"] == "settings" and f["raw_status"] == "fail":
            by_rule.setdefault(f["rule_id"], set()).add(f["subject"]["revision"])
    rule, revisions = min(
        ((r, revs) for r, revs in by_rule.items() if r not in ("BASE-CMD-001", "BASE-CMD-002")),
        key=lambda item: (len(item[1]), item[0]),
    )
    one = min(revisions)
    waivers = WAIVERS + (
        f"  - rule: {rule}\n    subject: settings@{one}\n    reason: One revision\n"
        "    owner: sec@acme.example\n    expires: 2026-12-31\n"
    )
    (work / "waivers-all.yaml").write_text(waivers, encoding="utf-8")
    out = _run(work, "allrev", "--all-revisions", waivers="waivers-all.yaml")
    doc = json.loads((out / "findings.json").read_text(encoding="utf-8"))
    fails, waived = _per_revision(doc, "fail"), _per_revision(doc, "waived")
    assert waived.get(one, 0) >= 2  # BASE-CMD-002 (every revision) and the settings@N one
    raw = dict(map(tuple, doc["failing_by_revision"]))
    shown = dict(map(tuple, doc["failing_not_waived_by_revision"]))
    assert list(raw) == list(shown)
    for revision, n in raw.items():  # each revision ties to the findings table
        assert shown[revision] == fails.get(revision, 0), revision
        assert n == fails.get(revision, 0) + waived.get(revision, 0), revision
    page = _text((out / "report.html").read_text(encoding="utf-8"))
    latest = max(raw)
    assert (
        f"Failing settings rules (not waived) per settings revision (revisions 1\u2013{latest}); "
        f"now {shown[latest]}"
    ) in page
    assert f"{waived[latest]} more fail" in page and "waived, not counted here" in page
    # a plain run: the chart's "now" is the findings table's fail count of the settings
    out = _run(work, "plain-chart")
    doc = json.loads((out / "findings.json").read_text(encoding="utf-8"))
    settings_fail = sum(
        1 for f in doc["findings"] if f["subject"]["kind"] == "settings" and f["status"] == "fail"
    )
    assert doc["failing_not_waived_by_revision"][-1][1] == settings_fail
    page = _text((out / "report.html").read_text(encoding="utf-8"))
    assert f"now {settings_fail}, peak" in page


def test_the_chart_of_a_run_without_all_revisions_counts_no_stale_waiver(work: Path) -> None:
    """Review R33 #4: without `--all-revisions`, a `settings@N` waiver of an older revision N
    waives nothing (the run judges the settings in force as `settings`), and every report calls
    it stale; "Compliance over time" still counted it as waiving at revision N."""
    plain = _run(work, "r33-allrev", "--all-revisions")
    doc = json.loads((plain / "findings.json").read_text(encoding="utf-8"))
    latest = max(r for r, _ in doc["failing_by_revision"])
    # a settings rule failing at an older revision only (not at the latest, which is judged)
    by_rule: dict[str, set[int]] = {}
    for f in doc["findings"]:
        if f["subject"]["kind"] == "settings" and f["raw_status"] == "fail":
            by_rule.setdefault(f["rule_id"], set()).add(f["subject"]["revision"])
    rule, revisions = min(
        ((r, revs) for r, revs in by_rule.items() if latest not in revs),
        key=lambda item: (len(item[1]), item[0]),
    )
    one = min(revisions)
    (work / "waivers-r33.yaml").write_text(
        WAIVERS + f"  - rule: {rule}\n    subject: settings@{one}\n    reason: One revision\n"
        "    owner: sec@acme.example\n    expires: 2026-12-31\n",
        encoding="utf-8",
    )
    without = json.loads((_run(work, "r33-without") / "findings.json").read_text())
    out = _run(work, "r33-with", waivers="waivers-r33.yaml")
    doc = json.loads((out / "findings.json").read_text(encoding="utf-8"))
    stale = [(w["rule_id"], w["subject"]) for w in doc["waivers"]["stale"]]
    assert (rule, f"settings@{one}") in stale
    # the stale waiver changes nothing on the chart: revision N counts its failure as failing
    assert doc["failing_not_waived_by_revision"] == without["failing_not_waived_by_revision"]
    raw, shown = (
        dict(map(tuple, doc["failing_by_revision"])),
        dict(map(tuple, doc["failing_not_waived_by_revision"])),
    )
    waived_everywhere = raw[latest] - shown[latest]  # BASE-CMD-002's `settings` waiver
    assert raw[one] - shown[one] <= waived_everywhere
    # and report.html's chart says the same figures
    page = _text((out / "report.html").read_text(encoding="utf-8"))
    old = _text((work / "r33-without" / "report.html").read_text(encoding="utf-8"))
    chart = "Failing settings rules (not waived) per settings revision"
    assert chart in page
    assert page.split(chart)[1][:800] == old.split(chart)[1][:800]
