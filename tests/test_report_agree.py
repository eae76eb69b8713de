"""The outputs of one real run agree with each other (and with what the README promises).

Each test runs what a user runs (the CLI against the emulator) and compares its reports."""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

import auditor
import auditor.report.html as html_module
from auditor.emulator import start_emulator
from tests.conftest import FIXED_NOW, OWNER_TOKEN, emulator_env, run_cli


@pytest.fixture
def emu300() -> Iterator[Any]:
    """A 300-revision history of 5 repositories (its own: tests add revisions to it)."""
    with start_emulator(tokens={OWNER_TOKEN: "owner"}, now=FIXED_NOW, revisions=300, repos=5) as e:
        yield e


def nightly(env: dict[str, str], out: Path, *extra: str) -> tuple[int, str, str]:
    return run_cli(["run", "--out", str(out), *extra], env, out.parent)


@pytest.fixture
def small_caps(monkeypatch: pytest.MonkeyPatch) -> None:
    """The page's caps made small (10 rows a rule, 50 revisions in Appendix B), so a
    300-revision history has rules past them (as a 3,000-revision one has past the real 200
    and 1,000)."""
    small = html_module.Caps(rows_per_rule=10, appendix_rows=50)
    context = html_module.context
    default = html_module.Caps()

    def small_context(data: Any, caps: Any = default) -> Any:
        return context(data, small if caps == default else caps)

    monkeypatch.setattr(html_module, "context", small_context)


@pytest.mark.usefixtures("small_caps")
def test_html_cut_keeps_a_rules_newest_and_new_results_and_the_audited_revision(
    emu300: Any, tmp_path: Path
) -> None:
    env = emulator_env(emu300, tmp_path / "state.db")
    nightly(env, tmp_path / "night1")
    emu300.add_revisions(40)
    nightly(env, tmp_path / "night2")
    doc = json.loads((tmp_path / "night2" / "findings.json").read_text())
    page = (tmp_path / "night2" / "report.html").read_text()
    new = [f for f in doc["findings"] if f["lifecycle"] == "new"]
    assert new and doc["summary"]["new"] == len(new)
    missing = [(f["rule_id"], f["subject"]["key"]) for f in new if f["fingerprint"] not in page]
    assert missing == []
    # a rule cut in the page says its oldest results were left out
    assert re.search(
        r"more finding\(s\) of this rule not shown \(the oldest; limit 10 per rule", page
    )
    # Appendix B lists the newest revisions: the audited one's hash is in the page
    newest = doc["inputs"]["revisions_evaluated"][-1]
    assert newest["sha256"] in page
    assert "more (the oldest; the newest 50 are listed)" in page


def test_a_control_none_of_whose_results_applied_is_not_met_and_not_applicable_is_not_passing(
    tmp_path: Path,
) -> None:
    with start_emulator(
        tokens={OWNER_TOKEN: "owner"}, now=FIXED_NOW, seed=11, revisions=300, repos=10
    ) as emu:
        env = emulator_env(emu, tmp_path / "state.db")
        nightly(env, tmp_path / "out", "-o", "html,json,oscal")
    out = tmp_path / "out"
    doc = json.loads((out / "findings.json").read_text())
    rules = {r["id"]: r for r in doc["rules"]}
    by: dict[str, Counter[str]] = {}
    for f in doc["findings"]:
        for c in rules[f["rule_id"]]["controls"]:
            by.setdefault(c, Counter())[f["status"]] += 1
    page = (out / "report.html").read_text()
    oscal = json.loads((out / "findings.oscal.json").read_text())
    controls = {
        next(p["value"] for p in x["props"] if p["name"] == "control"): x
        for x in oscal["assessment-results"]["results"][0]["findings"]
    }
    only_na = [c for c, n in by.items() if set(n) == {"not_applicable"}]
    with_na = [c for c, n in by.items() if n["not_applicable"] and n["pass"]]
    assert only_na and with_na  # the scene has both kinds
    for c in [*only_na, *with_na]:
        n = by[c]
        row = re.search(rf'title="{re.escape(c)}">.*?</tr>', page)
        assert row is not None
        cells = [re.sub("<[^>]+>", "", x) for x in re.findall(r"<td[^>]*>(.*?)</td>", row[0])]
        state, passing, na = cells[0], int(cells[4]), int(cells[5])
        assert (passing, na) == (n["pass"], n["not_applicable"])
        status = controls[c]["target"]["status"]
        if c in only_na:
            assert state == "not applicable"
            assert status == {"state": "not-satisfied", "reason": "other"}
            assert "Not applicable" in controls[c]["description"]
        elif not n["fail"] + n["error"] + n["unknown"] + n["waived"]:
            assert state == "met" and status["state"] == "satisfied"
        assert (
            f"{n['pass']} passing and {n['not_applicable']} not applicable"
            in (controls[c]["description"])
        )


EXAMPLES = Path(auditor.__file__).resolve().parents[1] / "examples"


def test_a_reviews_oscal_and_html_say_it_reviews_the_proposed_file_and_which_rules_it_evaluated(
    tmp_path: Path,
) -> None:
    code, _, _ = run_cli(
        [
            "review", str(EXAMPLES / "proposed-settings.yaml"),
            "--against", str(EXAMPLES / "live-settings.yaml"),
            "--author", "a@example.com", "--out", str(tmp_path / "out"),
            "-o", "json,oscal,html,junit", "-q",
        ],
        {},
        tmp_path,
    )  # fmt: skip
    assert code == 1
    out = tmp_path / "out"
    doc = json.loads((out / "findings.json").read_text())
    proposed = doc["review"]["proposed_file"]
    evaluated = {r["id"] for r in doc["rules"]}
    oscal = json.loads((out / "findings.oscal.json").read_text())["assessment-results"]
    result = oscal["results"][0]
    props = {p["name"]: p["value"] for p in result["props"]}
    assert proposed in result["title"] and "review" in result["title"]
    assert (
        proposed in result["description"]
        and "every rule was evaluated" not in (result["description"])
    )
    assert f"every rule evaluated ({len(evaluated)})" in result["description"]
    assert props["mode"] == "review" and props["proposed-file"] == proposed
    assert "settings-revision" not in props  # the live side's, not the proposal's
    assert int(props["rules-settings"]) + int(props["rules-change"]) == len(evaluated)
    resources = oscal["back-matter"]["resources"]
    counted = sum(
        int(p["value"])
        for r in resources
        for p in r.get("props", ())
        if p["name"] == "rules-evaluated"
    )
    assert counted == len(evaluated)
    titles = [r["title"] for r in resources]
    assert not [t for t in titles if re.fullmatch(r"settings revision \d+", t)]
    assert f"the proposed settings file {proposed}" in titles
    page = (out / "report.html").read_text()
    assert "every rule was evaluated" not in page
    assert re.search(r"Rules evaluated</dt><dd>[^<]*\((\d+) in all\)", page)[1] == str(
        len(evaluated)
    )  # type: ignore[index]
    assert "settings revision 1<" not in page
    # the live side, a file here, is no "settings revision 0" either
    fixed = [f["subject"]["label"] for f in doc["review"]["fixed"]]
    assert fixed and all(x == f"the settings of {doc['review']['against']}" for x in fixed)


def test_a_run_that_left_rules_out_does_not_say_every_rule_was_evaluated(
    emu300: Any, tmp_path: Path
) -> None:
    env = emulator_env(emu300, tmp_path / "state.db")
    nightly(env, tmp_path / "out", "--no-usage", "--no-readiness", "-o", "json,oscal,html")
    out = tmp_path / "out"
    result = json.loads((out / "findings.oscal.json").read_text())["assessment-results"]["results"][
        0
    ]
    assert "every rule was evaluated" not in result["description"]
    assert "usage rule(s) not evaluated" in result["description"]
    assert "repository readiness not read" in result["description"]
    page = (out / "report.html").read_text()
    assert "every rule was evaluated" not in page
    assert re.search(r"rule\(s\) of the policies were left out \([^)]*usage", page)


def test_a_nightlys_new_headlines_say_waived_new_findings_apart(
    emu300: Any, tmp_path: Path
) -> None:
    (tmp_path / "waivers.yaml").write_text(
        "waivers:\n"
        + "".join(
            f"  - {{rule: {r}, subject: change, reason: accepted, owner: a@example.com,"
            " expires: 2027-06-30}\n"
            for r in ("CHG-CMD-003", "CHG-SBX-002", "CHG-ATH-001")
        )
    )
    env = emulator_env(emu300, tmp_path / "state.db")
    nightly(env, tmp_path / "night1", "--waivers", str(tmp_path / "waivers.yaml"))
    emu300.add_revisions(40)
    _, stdout, _ = nightly(env, tmp_path / "night2", "--waivers", str(tmp_path / "waivers.yaml"))
    out = tmp_path / "night2"
    doc = json.loads((out / "findings.json").read_text())
    new = [f for f in doc["findings"] if f["lifecycle"] == "new"]
    waived = sum(f["status"] == "waived" for f in new)
    assert waived and doc["summary"]["new"] == len(new) and doc["summary"]["new_waived"] == waived
    said = f"{len(new) - waived} (+{waived} waived)"
    assert f"since the previous run: {len(new) - waived} new (+{waived} waived)" in stdout
    md = (out / "report.md").read_text()
    column = [int(n) for n in re.findall(r"^\| \S+ \w+ \| \d+ \| (\d+) \|$", md, re.M)]
    assert sum(column) == len(new) - waived
    assert f"**New:** {said}" in md
    page = (out / "report.html").read_text()
    assert (
        f'<span class="n">{len(new) - waived}</span><span class="l">new (+{waived} waived)</span>'
        in page
    )


def test_the_orgs_summary_says_waived_new_findings_apart(emu300: Any, tmp_path: Path) -> None:
    (tmp_path / "waivers.yaml").write_text(
        "waivers:\n  - {rule: CHG-CMD-003, subject: change, reason: accepted,"
        " owner: a@example.com, expires: 2027-06-30}\n"
    )
    (tmp_path / "orgs.toml").write_text(
        f'[[org]]\nname = "acme"\nbase_url = "{emu300.base_url}"\n'
        f'app_url = "{emu300.app_url}"\ntoken_env = "ACME_TOKEN"\n'
    )
    env = {"ACME_TOKEN": OWNER_TOKEN, "AUDITOR_STATE": str(tmp_path / "state")}
    argv = [
        "run",
        "--orgs",
        str(tmp_path / "orgs.toml"),
        "--waivers",
        str(tmp_path / "waivers.yaml"),
    ]
    run_cli([*argv, "--out", str(tmp_path / "r1")], env, tmp_path)
    emu300.add_revisions(40)
    _, stdout, _ = run_cli([*argv, "--out", str(tmp_path / "r2")], env, tmp_path)
    summary = json.loads(next((tmp_path / "r2").rglob("summary.json")).read_text())
    acme = summary["organizations"][0]
    doc = json.loads(next((tmp_path / "r2").rglob("findings.json")).read_text())
    assert (
        acme["new"] == doc["summary"]["new"] and acme["new_waived"] == doc["summary"]["new_waived"]
    )
    assert acme["new_waived"]
    row = next(line for line in stdout.splitlines() if line.startswith("acme "))
    assert f" {acme['new'] - acme['new_waived']} (+{acme['new_waived']} waived) " in row


def test_a_stale_waiver_expiring_soon_is_only_stale(emu300: Any, tmp_path: Path) -> None:
    soon = (FIXED_NOW + timedelta(days=5)).date().isoformat()
    (tmp_path / "waivers.yaml").write_text(
        "waivers:\n  - {rule: BASE-AUT-001, subject: settings@1, reason: matches nothing,"
        f" owner: d@example.com, expires: {soon}}}\n"
    )
    env = emulator_env(emu300, tmp_path / "state.db")
    nightly(
        env, tmp_path / "out", "--waivers", str(tmp_path / "waivers.yaml"), "-o", "json,md,html"
    )
    out = tmp_path / "out"
    waivers = json.loads((out / "findings.json").read_text())["waivers"]
    assert [len(waivers[k]) for k in ("in_force", "expiring_soon", "expired", "stale")] == [
        0,
        0,
        0,
        1,
    ]
    md = (out / "report.md").read_text()
    assert "expiring within 14 days" not in md and "1 stale" in md
    page = (out / "report.html").read_text()
    assert "Stale (match nothing) (1)" in page and "Expiring within 14 days (1)" not in page


def test_an_expired_waiver_is_in_oscal_as_in_every_other_report(
    emu300: Any, tmp_path: Path
) -> None:
    (tmp_path / "waivers.yaml").write_text(
        "waivers:\n  - {rule: BASE-CMD-001, subject: settings, reason: lapsed exception,"
        " owner: a@example.com, expires: 2026-01-31, ticket: SEC-9}\n"
    )
    env = emulator_env(emu300, tmp_path / "state.db")
    out = tmp_path / "out"
    nightly(env, out, "--waivers", str(tmp_path / "waivers.yaml"), "-o", "json,sarif,oscal")
    finding = next(
        f for f in json.loads((out / "findings.json").read_text())["findings"]
        if f["rule_id"] == "BASE-CMD-001"
    )  # fmt: skip
    assert finding["status"] == "fail" and finding["expired_waiver"]["owner"] == "a@example.com"
    observations = json.loads((out / "findings.oscal.json").read_text())["assessment-results"][
        "results"
    ][0]["observations"]
    obs = next(o for o in observations if o["title"].startswith("BASE-CMD-001"))
    props = {p["name"]: p["value"] for p in obs["props"]}
    assert props["waiver-expired"] == finding["expired_waiver"]["expires"]
    assert props["expired-waiver-owner"] == "a@example.com"
    assert props["expired-waiver-ticket"] == "SEC-9"
    assert "Waiver expired on 2026-01-31" in obs["description"]


def test_a_persisting_settings_finding_keeps_its_junit_test_case_name(
    emu300: Any, tmp_path: Path
) -> None:
    import xml.etree.ElementTree as ET

    env = emulator_env(emu300, tmp_path / "state.db")
    nightly(env, tmp_path / "night1", "-o", "json,junit")
    emu300.add_revisions(1)
    nightly(env, tmp_path / "night2", "-o", "json,junit")

    def cases(night: str) -> dict[str, tuple[str | None, str | None, str]]:
        out = {}
        for tc in ET.parse(tmp_path / night / "junit.xml").getroot().iter("testcase"):
            e = tc.find("failure")
            if e is not None and e.text:
                fp = re.search(r"Fingerprint: (\w+)", e.text)
                assert fp is not None
                out[fp[1]] = (tc.get("classname"), tc.get("name"), e.text)
        return out

    a, b = cases("night1"), cases("night2")
    doc = json.loads((tmp_path / "night2" / "findings.json").read_text())
    life = {f["fingerprint"]: f for f in doc["findings"]}
    persisting = [k for k in a if k in b and life[k]["lifecycle"] == "persisting"]
    settings = [k for k in persisting if life[k]["subject"]["key"] == "settings"]
    assert settings
    assert [k for k in persisting if a[k][:2] != b[k][:2]] == []
    for k in settings:
        assert b[k][1] == "settings in force"
        assert f"Subject: {life[k]['subject']['label']}" in b[k][2]  # the revision, in the text


def test_the_first_run_after_an_upgrade_says_the_previous_run_was_made_by_another_release(
    emu300: Any, tmp_path: Path
) -> None:
    import sqlite3
    from contextlib import closing

    state = tmp_path / "state.db"
    env = emulator_env(emu300, state)
    nightly(env, tmp_path / "night1", "-o", "json")
    # night1 as an older release left it: its version, and a finding this release no longer gives
    with closing(sqlite3.connect(state)) as db, db:
        (run_id,) = db.execute("SELECT run_id FROM runs WHERE complete = 1").fetchone()
        db.execute("UPDATE runs SET tool_version = '0.2.0' WHERE run_id = ?", (run_id,))
        db.execute(
            "INSERT INTO findings (run_id, fingerprint, rule_id, subject_key, status, severity,"
            " first_seen_run) VALUES (?, 'f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0', 'CHG-HOK-001',"
            " 'change:1..2', 'fail', 'high', ?)",
            (run_id, run_id),
        )
    _, stdout, _ = nightly(env, tmp_path / "night2", "-o", "json,md,html")
    out = tmp_path / "night2"
    doc = json.loads((out / "findings.json").read_text())
    assert [r["fingerprint"] for r in doc["resolved"]] == ["f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0"]
    assert doc["run"]["previous_tool_version"] == "0.2.0"
    note = "the previous run was made by auditor 0.2.0: some changes may come from the upgrade"
    line = next(x for x in stdout.splitlines() if x.startswith("since the previous run"))
    assert "1 resolved" in line and note in line
    md = (out / "report.md").read_text()
    assert note in md.split("Resolved since the previous run", 1)[1]
    page = (out / "report.html").read_text()
    assert note in page.split("Resolved since the previous run", 1)[1]
    # the next night, compared with a run of this release, says nothing of it
    _, stdout, _ = nightly(env, tmp_path / "night3", "-o", "json")
    assert "made by auditor" not in stdout
    doc = json.loads((tmp_path / "night3" / "findings.json").read_text())
    assert "previous_tool_version" not in doc["run"]


def test_junit_counts_unknown_results_as_failures_and_only_error_results_as_errors(
    tmp_path: Path,
) -> None:
    import xml.etree.ElementTree as ET

    out = tmp_path / "d"
    run_cli(["demo", "--out", str(out), "-q"], {}, tmp_path)
    by_status = json.loads((out / "findings.json").read_text())["summary"]["by_status"]
    assert by_status["unknown"] and not by_status["error"]
    root = ET.parse(out / "junit.xml").getroot()
    assert root.get("errors") == "0"
    assert int(root.get("failures") or 0) == by_status["fail"] + by_status["unknown"]
    unknown = [e for e in root.iter("failure") if e.get("type") == "unknown"]
    assert len(unknown) == by_status["unknown"] and not list(root.iter("error"))


@pytest.mark.parametrize("online", [True, False])
def test_a_reviews_attributions_name_the_proposed_file_not_a_revision_that_does_not_exist(
    emu300: Any, tmp_path: Path, online: bool
) -> None:
    """Review R4: the proposal's findings said `violating since rev 301 … by a@b.c` (online:
    the number it would take; offline `rev 1`), the `--against` file's `since rev 0 … by
    settings file`: no stored revision. Every report words them by the file."""
    argv = ["review", str(EXAMPLES / "proposed-settings.yaml"), "--author", "a@example.com"]
    argv += ["--out", str(tmp_path / "out"), "-o", "md,html,json,sarif,junit", "-q"]
    env: dict[str, str] = {}
    if online:
        env = emulator_env(emu300, tmp_path / "state.db")
        assert run_cli(["sync", "-q"], env, tmp_path)[0] == 0
    else:
        argv += ["--against", str(EXAMPLES / "live-settings.yaml")]
    code, out, err = run_cli(argv, env, tmp_path)
    assert code == 1, out + err
    doc = json.loads((tmp_path / "out" / "findings.json").read_text())
    proposal = 301 if online else 1
    texts = [
        f["since"]["text"]
        for f in (*doc["findings"], *doc["review"]["fixed"])
        if f.get("since") is not None
    ]
    placed = [t for t in texts if " in the proposed file examples/proposed-settings.yaml" in t]
    assert placed and all(t.endswith(" by a@example.com") for t in placed), texts
    if not online:  # the live side, a file: its settings, no author
        assert f"violating in the settings of {EXAMPLES / 'live-settings.yaml'}" in texts
    for name in ("report.md", "report.html", "findings.sarif", "junit.xml"):
        text = (tmp_path / "out" / name).read_text()
        assert not re.search(rf"(since|changed in) rev {proposal}\b", text), name
        assert online or not re.search(r"since rev 0\b", text), name
        assert "by settings file" not in text, name


def _step_rule(tmp_path: Path, last_passing: int) -> Path:
    """A change rule failing on every step to a revision past `last_passing`."""
    policy = tmp_path / "steps.yaml"
    policy.write_text(
        "rules:\n"
        "  - id: CHG-T-001\n"
        "    title: No step past a revision\n"
        "    severity: high\n"
        "    target: change\n"
        f"    assert: {{path: revision, lte: {last_passing}}}\n"
    )
    return policy


@pytest.mark.usefixtures("small_caps")
def test_a_cut_keeps_a_rules_newest_results_when_a_policy_edit_makes_many_old_ones_new(
    emu300: Any, tmp_path: Path
) -> None:
    """Review R4: an edit that makes hundreds of old steps fail anew filled the page with
    them (every `new` result ranked first) and left out the rule's newest failing steps, the
    note calling what was left out "the oldest"."""
    env = emulator_env(emu300, tmp_path / "state.db")
    policy = _step_rule(tmp_path, 280)  # steps to 281..300 fail
    nightly(env, tmp_path / "night1", "--policy", str(policy), "-o", "json,html")
    policy = _step_rule(tmp_path, 0)  # edited: every step fails, 2..280 new
    nightly(env, tmp_path / "night2", "--policy", str(policy), "-o", "json,html")
    doc = json.loads((tmp_path / "night2" / "findings.json").read_text())
    page = (tmp_path / "night2" / "report.html").read_text()
    steps = [f for f in doc["findings"] if f["rule_id"] == "CHG-T-001"]
    assert sum(f["lifecycle"] == "new" for f in steps) > 10
    newest = max(steps, key=lambda f: f["subject"]["revision"])
    assert newest["lifecycle"] == "persisting"
    assert newest["fingerprint"] in page  # the rule's latest failing step is in the page
    shown = [f for f in steps if f["fingerprint"] in page]
    assert len(shown) == 10 and any(f["lifecycle"] == "new" for f in shown)
    assert "more finding(s) of this rule not shown (the oldest" not in page
    assert re.search(r"\d+ more finding\(s\) of this rule not shown \(limit 10 per rule", page)
