"""`run --all-revisions` reports each revision once.

The newest revision was reported twice, as `settings` and as `settings@N`, both "settings
revision N": JUnit had duplicate test identities, SARIF two alerts (two fingerprints) for one
problem, and the counts included both. It is now reported once, as `settings`, with the
fingerprints a run without `--all-revisions` gives it.
"""

from __future__ import annotations

import io
import json
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path
from typing import Any

from auditor.cli import Context, main
from tests.conftest import FIXED_NOW
from tests.test_report_limits import check_junit, check_sarif

KEY = {"AUDITOR_FINGERPRINT_KEY": "0123456789abcdef0123"}


def _cli(argv: list[str], cwd: Path) -> None:
    err = io.StringIO()
    ctx = Context(env=KEY, stdout=io.StringIO(), stderr=err, clock=lambda: FIXED_NOW, cwd=str(cwd))
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
    newest = max(f["subject"]["revision"] for f in settings)
    assert {f["subject"]["key"] for f in settings if f["subject"]["revision"] == newest} == {
        "settings"
    }
    assert len({f["subject"]["revision"] for f in settings}) == 30

    # one code scanning alert per problem: no two results about one rule and one revision
    run = check_sarif(out / "findings.sarif")
    shown = Counter((r["ruleId"], r["message"]["text"]) for r in run["results"])
    assert max(shown.values()) == 1

    # the newest revision's findings keep the fingerprints the plain run gives them
    plain = {
        (f["rule_id"], f["fingerprint"])
        for f in _findings(tmp_path / "one")
        if f["subject"]["kind"] == "settings"
    }
    assert plain == {
        (f["rule_id"], f["fingerprint"]) for f in settings if f["subject"]["key"] == "settings"
    }
