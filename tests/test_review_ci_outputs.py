"""What a pull request's CI reads of a review: code scanning's SARIF and a test tab's JUnit
carry what the change does, not what the live settings already had (tester T96 #2, #3).

A pull request that only adds a comment on the line of a finding the live settings have too
introduces nothing (exit 0). Code scanning annotates a pull request's changed lines with the
alerts on them and fails its check on an `error`; a JUnit consumer marks the build unstable on
a failure. So the review's findings.sarif lists only findings the change introduces, and its
junit.xml writes one the change leaves as it was as a skipped case that says so; report.md,
report.html and findings.json list them all.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from tests.conftest import run_cli

LIVE = Path(__file__).resolve().parent.parent / "examples" / "live-settings.yaml"


def _review(
    tmp_path: Path, text: str, name: str, codes: tuple[int, ...] = (0, 1)
) -> tuple[int, Path]:
    proposed = tmp_path / f"{name}.yaml"
    proposed.write_text(text)
    out = tmp_path / name
    argv = ["review", str(proposed), "--against", str(LIVE), "--out", str(out), "-q"]
    code, _, stderr = run_cli(argv, {}, tmp_path)
    assert code in codes, stderr
    return code, out


def _results(out: Path) -> list[dict[str, Any]]:
    results: list[dict[str, Any]] = json.loads((out / "findings.sarif").read_text())["runs"][0][
        "results"
    ]
    return results


def _failing(out: Path) -> list[dict[str, Any]]:
    findings = json.loads((out / "findings.json").read_text())["findings"]
    return [f for f in findings if f["status"] in ("fail", "unknown")]


def test_a_comment_on_a_failing_line_puts_no_alert_and_no_test_failure(tmp_path: Path) -> None:
    live = LIVE.read_text()
    _, same = _review(tmp_path, live, "same")
    old = [f for f in _failing(same) if f["location"] is not None]
    assert old and all(f["lifecycle"] == "persisting" for f in old)
    line = old[0]["location"]["line"]
    lines = live.splitlines(keepends=True)
    lines[line - 1] = lines[line - 1].rstrip("\n") + "  # tracked in SEC-1412\n"
    code, out = _review(tmp_path, "".join(lines), "comment")
    assert code == 0
    assert len(_failing(out)) == len(_failing(same))  # findings.json lists them all
    assert _results(out) == []
    suites = ET.parse(out / "junit.xml").getroot()
    assert suites.get("failures") == "0"
    skipped = [c for c in suites.iter("testcase") if c.find("skipped") is not None]
    unchanged = [
        c
        for c in skipped
        if c.find("skipped").get("message", "").startswith("unchanged by this change")  # type: ignore[union-attr]
    ]
    assert len(unchanged) == len(_failing(out))
    assert "unchanged" in (out / "report.md").read_text()


def test_a_finding_the_change_introduces_is_an_alert_and_a_failure(tmp_path: Path) -> None:
    text = LIVE.read_text().replace("maxAutonomyLevel: low\n", "maxAutonomyLevel: high\n", 1)
    code, out = _review(tmp_path, text, "raised")
    assert code == 1
    # (no author known here: the author rule's `unknown` is listed, but not the change's)
    (blind,) = [f for f in _failing(out) if f["lifecycle"] is None]
    assert blind["rule_id"] == "CHG-ATH-001"
    new = [f for f in _failing(out) if f["lifecycle"] == "new"]
    assert new, "raising the ceiling introduces a finding"
    results = _results(out)
    assert sorted(r["partialFingerprints"]["auditorFingerprint/v1"] for r in results) == sorted(
        f["fingerprint"] for f in new
    )
    assert all(r["properties"]["lifecycle"] == "new" for r in results)
    suites = ET.parse(out / "junit.xml").getroot()
    failed = [c for c in suites.iter("testcase") if c.find("failure") is not None]
    assert len(failed) == len(new) and suites.get("failures") == str(len(new))
    (case,) = [c for c in suites.iter("testcase") if c.get("classname") == "CHG-ATH-001"]
    assert case.find("skipped").get("message", "").startswith("not counted by the review")  # type: ignore[union-attr]


def test_a_proposed_value_is_no_link_and_no_emoji_in_the_comment(tmp_path: Path) -> None:
    """A value a pull request proposes reaches the bot's comment (report.md) as written, not
    as a link GitHub makes of an address nor as an emoji (tester T96 #4)."""
    value = ":shipit: see https://evil.example/login and www.evil.example"
    text = LIVE.read_text().replace(
        "maxAutonomyLevel: low\n", f"maxAutonomyLevel: {json.dumps(value)}\n", 1
    )
    _, out = _review(tmp_path, text, "hostile", (2,))  # (no level of autonomy: an error)
    md = (out / "report.md").read_text()
    assert "evil.example/login" in md  # shown
    for live in ("https://evil", "www.evil", ":shipit:"):
        assert live not in md, live


def test_a_policys_own_links_and_emoji_stay_live(tmp_path: Path) -> None:
    """A rule's remediation is the policy's prose (a runbook link, `:warning:`): it stays a
    link in report.md and in the SARIF rule's help, unlike a value from the data (R83 #4)."""
    policy = tmp_path / "runbook.yaml"
    policy.write_text(
        "rules:\n  - id: RUN-001\n    title: Autonomy off\n    severity: high\n"
        "    target: settings\n    assert: {path: maxAutonomyLevel, equals: 'off'}\n"
        "    description: 'See https://runbook.example/autonomy :warning:'\n"
        "    remediation: 'Follow https://runbook.example/autonomy :warning:'\n"
    )
    proposed = tmp_path / "p.yaml"
    proposed.write_text(LIVE.read_text())
    out = tmp_path / "out"
    argv = ["review", str(proposed), "--against", str(LIVE), "--policy", str(policy)]
    code, _, err = run_cli([*argv, "--out", str(out), "-q"], {}, tmp_path)
    assert code == 0, err
    assert "Follow https://runbook.example/autonomy :warning:" in (out / "report.md").read_text()
    (rule,) = json.loads((out / "findings.sarif").read_text())["runs"][0]["tool"]["driver"]["rules"]
    assert "See https://runbook.example/autonomy :warning:" in rule["help"]["markdown"]
    assert "Follow https://runbook.example/autonomy :warning:" in rule["help"]["markdown"]
