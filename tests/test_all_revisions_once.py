"""`run --all-revisions` reports each revision once, as `settings@N`, the newest included.

The newest revision was reported twice, as `settings` and as `settings@N`, both "settings
revision N": JUnit had duplicate test identities, SARIF two alerts (two fingerprints) for one
problem, and the counts included both. Reported once as `settings` instead, its findings got
another subject (and fingerprints) once a newer revision arrived: every settings change made
the previous newest revision's failures `new`. Each revision is now `settings@N` in every
`--all-revisions` run (which compares only with earlier `--all-revisions` runs).
"""

from __future__ import annotations

import io
import json
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path
from typing import Any

from auditor.cli import Context, main
from auditor.emulator import start_emulator
from tests.conftest import FIXED_NOW, OWNER_TOKEN
from tests.test_report_limits import check_junit, check_sarif

KEY = {"AUDITOR_FINGERPRINT_KEY": "0123456789abcdef0123"}


def _cli(argv: list[str], cwd: Path, env: dict[str, str] = KEY) -> None:
    err = io.StringIO()
    ctx = Context(env=env, stdout=io.StringIO(), stderr=err, clock=lambda: FIXED_NOW, cwd=str(cwd))
    assert main(argv, ctx) in (0, 1), err.getvalue()


def _findings(out: Path) -> list[dict[str, Any]]:
    return json.loads((out / "findings.json").read_text(encoding="utf-8"))["findings"]  # type: ignore[no-any-return]


def test_all_revisions_reports_the_newest_revision_once(tmp_path: Path) -> None:
    state = str(tmp_path / "s.db")
    _cli(
        ["demo", "--revisions", "30", "--state", state, "--out", str(tmp_path / "d"), "-q"],
        tmp_path,
    )
    _cli(["run", "--offline", "--state", state, "--out", str(tmp_path / "one"), "-q"], tmp_path)
    out = tmp_path / "all"
    _cli(
        ["run", "--offline", "--all-revisions", "--state", state, "--out", str(out), "-q"], tmp_path
    )

    check_junit(out / "junit.xml")
    cases = Counter(
        (case.get("classname"), case.get("name"))
        for case in ET.parse(out / "junit.xml").iter("testcase")
    )
    assert cases and max(cases.values()) == 1, [k for k, n in cases.items() if n > 1][:5]

    findings = _findings(out)
    labels = Counter((f["rule_id"], f["subject"]["label"]) for f in findings)
    assert max(labels.values()) == 1, [k for k, n in labels.items() if n > 1][:5]
    settings = [f for f in findings if f["subject"]["kind"] == "settings"]
    # every revision as `settings@N`, the newest (30) too: none as `settings`
    assert {f["subject"]["key"] for f in settings} == {f"settings@{n}" for n in range(1, 31)}
    # a rule's revisions newest first, so a report capped per rule keeps the settings in force
    # (oldest first, report.html's 200 per rule left the newest out of a long history)
    by_rule: dict[str, list[int]] = {}
    for f in settings:
        by_rule.setdefault(f["rule_id"], []).append(f["subject"]["revision"])
    assert all(seen == sorted(seen, reverse=True) for seen in by_rule.values())
    assert any(seen[0] == 30 and len(seen) > 1 for seen in by_rule.values())
    html = (out / "report.html").read_text(encoding="utf-8")
    assert html.index("settings revision 30") < html.index("settings revision 1<")

    # one code scanning alert per problem: no two results about one rule and one revision
    run = check_sarif(out / "findings.sarif")
    shown = Counter((r["ruleId"], r["message"]["text"]) for r in run["results"])
    assert max(shown.values()) == 1

    # the newest revision's findings are those the plain run gives, under their own subject
    plain = Counter(
        (f["rule_id"], f["status"], f["message"])
        for f in _findings(tmp_path / "one")
        if f["subject"]["kind"] == "settings"
    )
    assert plain == Counter(
        (f["rule_id"], f["status"], f["message"])
        for f in settings
        if f["subject"]["revision"] == 30
    )


def test_all_revisions_lifecycle_holds_when_a_revision_arrives(tmp_path: Path) -> None:
    """The newest revision's failures are `persisting` in the next `--all-revisions` run, once
    a newer revision was synced: only the new revision's are `new`."""
    with start_emulator(tokens={OWNER_TOKEN: "owner"}, now=FIXED_NOW, revisions=30, repos=4) as emu:
        env = {
            **KEY,
            "AUDITOR_BASE_URL": emu.base_url,
            "AUDITOR_APP_URL": emu.app_url,
            "AUDITOR_TOKEN": OWNER_TOKEN,
            "AUDITOR_STATE": str(tmp_path / "s.db"),
        }
        _cli(["sync"], tmp_path, env)
        _cli(["run", "--offline", "--all-revisions", "--out", "a1", "-o", "json"], tmp_path, env)
        emu.add_revisions(1)
        _cli(["sync"], tmp_path, env)
        _cli(["run", "--offline", "--all-revisions", "--out", "a2", "-o", "json"], tmp_path, env)

    first = [f for f in _findings(tmp_path / "a1") if f["subject"]["kind"] == "settings"]
    newest = max(f["subject"]["revision"] for f in first)
    second = [f for f in _findings(tmp_path / "a2") if f["subject"]["kind"] == "settings"]
    assert max(f["subject"]["revision"] for f in second) == newest + 1

    def failing(findings: list[dict[str, Any]], revision: int) -> Counter[str]:
        return Counter(
            f["lifecycle"]
            for f in findings
            if f["subject"]["revision"] == revision and f["status"] == "fail"
        )

    was_newest = failing(second, newest)
    assert was_newest and set(was_newest) == {"persisting"}, was_newest
    assert sum(was_newest.values()) == sum(failing(first, newest).values())
    assert {f["subject"]["key"] for f in second if f["lifecycle"] == "new"} <= {
        f"settings@{newest + 1}"
    }
    assert not any(f["lifecycle"] == "new" for f in second if f["subject"]["revision"] <= newest)
