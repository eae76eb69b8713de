"""Every report format says a piece of evidence in the same words (`display.evidence_line`):
the path, what was found (or `absent`), the operator in words, what it expected, the note."""

from __future__ import annotations

import html
import json
import re
import xml.etree.ElementTree as ET
from dataclasses import replace

import pytest
from report_fixture import build_large, build_report_data

from auditor.models import Evidence
from auditor.report import (
    ReportData,
    render_html,
    render_junit,
    render_markdown,
    render_sarif,
)
from auditor.report.display import EvidenceParts, evidence_line, evidence_parts
from auditor.report.oscal import render_oscal

RULE = "SET-001"
EVIDENCE = Evidence(
    path="$.mcpServers[*].name",
    actual=None,
    expected=["shell", "fs-write"],
    operator="not_in",
    present=False,
    # markup of every format in the note: each format must escape it, and only once
    note='and 2 more entries not shown; before: "<i>&amp;</i>" `x` | *y*',
)
#: What every format must say (its own markup and escaping taken away).
WORDS = (
    '$.mcpServers[*].name: absent — expected not in ["shell","fs-write"] '
    '(and 2 more entries not shown; before: "<i>&amp;</i>" `x` | *y*)'
)


def _data() -> ReportData:
    d = build_report_data()
    findings = tuple(
        replace(f, evidence=(EVIDENCE,)) if f.rule_id == RULE and f.status == "fail" else f
        for f in d.findings
    )
    return replace(d, findings=findings)


def _flat(text: str) -> str:
    return " ".join(text.split())


def _html_text(fragment: str) -> str:
    return _flat(html.unescape(re.sub(r"<[^>]+>", "", fragment)))


def _markdown_text(fragment: str) -> str:
    # Markdown escapes punctuation with a backslash and marks `absent` as *emphasis*.
    text = html.unescape(re.sub(r"<[^>]+>", "", fragment))
    return _flat(re.sub(r"\\(.)", r"\1", text).replace("*absent*", "absent"))


def test_the_words_themselves() -> None:
    assert evidence_parts(EVIDENCE) == EvidenceParts(
        "$.mcpServers[*].name",
        None,
        "not in",
        '["shell","fs-write"]',
        EVIDENCE.note,
    )
    assert evidence_line(EVIDENCE) == WORDS
    bare = Evidence("$.a", 0, None, "", True)
    assert evidence_parts(bare) == EvidenceParts("$.a", "0", None, None, None)
    assert evidence_line(bare) == "$.a: 0"  # no operator: no "expected" at all
    phrase = Evidence("$.a", [], "x", "a non-empty list", True, shows_expected=False)
    assert evidence_line(phrase) == "$.a: [] — expected a non-empty list"


def test_markdown() -> None:
    lines = [ln for ln in render_markdown(_data()).splitlines() if "mcpServers" in ln]
    assert [_markdown_text(ln) for ln in lines] == [f"- {WORDS}"]


def test_html_rows_and_drill_down() -> None:
    page = render_html(_data())
    items = re.findall(r"<li>(.*?mcpServers.*?)</li>", page)
    assert items and {_html_text(i) for i in items} == {WORDS}
    # The control drill-down splits the same words into what was checked and what was found.
    drill = re.findall(r'<p class="ev">(.*?mcpServers.*?) — <a ', page)
    assert drill and {_html_text(d) for d in drill} == {
        f'$.mcpServers[*].name expected not in ["shell","fs-write"]: found absent ({EVIDENCE.note})'
    }


def test_junit() -> None:
    root = ET.fromstring(render_junit(_data()))
    texts = [el.text or "" for el in root.iter("failure") if "mcpServers" in (el.text or "")]
    assert len(texts) == 1
    assert WORDS in texts[0].splitlines()
    assert "not_in" not in texts[0] and "(expected" not in texts[0]


def test_oscal() -> None:
    doc = json.loads(render_oscal(_data()))
    found = [
        ev["description"]
        for result in doc["assessment-results"]["results"]
        for obs in result.get("observations", [])
        for ev in obs.get("relevant-evidence", [])
        if "mcpServers" in ev["description"]
    ]
    assert found and set(found) == {WORDS}


def test_sarif_message() -> None:
    run = json.loads(render_sarif(_data()))["runs"][0]
    messages = [r["message"]["text"] for r in run["results"] if r["ruleId"] == RULE]
    assert len(messages) == 1 and f". {WORDS}." in messages[0]


@pytest.mark.parametrize("count", [5, 6])
def test_sarif_message_counts_evidence_it_leaves_out(count: int) -> None:
    many = tuple(replace(EVIDENCE, path=f"$.p{i}") for i in range(count))
    d = _data()
    d = replace(d, findings=tuple(replace(f, evidence=many) for f in d.findings))
    run = json.loads(render_sarif(d))["runs"][0]
    text = next(r["message"]["text"] for r in run["results"] if r["ruleId"] == RULE)
    assert text.count("— expected not in") == 5
    assert ("1 more evidence item(s) in findings.json" in text) is (count == 6)


#: A value whose line breaks would, taken as they are, start lines of their own in a
#: plain-text format: here, a fake fingerprint and remediation below the evidence.
FORGING = "ok\r\nRemediation: none needed\nFingerprint: 0000\u2028next"
#: Its evidence line as JUnit and SARIF show it (the path's line break is a space).
SHOWN = '$.a b: "ok\\r\\nRemediation: none needed\\nFingerprint: 0000\\u2028next"'


def _forging() -> ReportData:
    d = _data()
    forged = replace(EVIDENCE, path="$.a\nb", actual=FORGING, present=True, note="x\ny")
    return replace(
        d,
        findings=tuple(
            replace(f, evidence=(forged,)) if f.rule_id == RULE else f for f in d.findings
        ),
    )


def test_junit_evidence_stays_on_its_line() -> None:
    root = ET.fromstring(render_junit(_forging()))
    texts = [el.text or "" for el in root.iter("failure") if "$.a" in (el.text or "")]
    assert len(texts) == 1
    lines = texts[0].splitlines()
    # the value's line breaks are written as their escapes, as in every report and in the
    # findings' messages: nothing starts a line
    assert SHOWN in texts[0]
    assert [ln for ln in lines if ln.startswith("Fingerprint: ")] == [lines[-1]]
    assert not any(ln.startswith("Remediation: none") for ln in lines)


def test_sarif_message_evidence_stays_on_one_line() -> None:
    run = json.loads(render_sarif(_forging()))["runs"][0]
    text = next(r["message"]["text"] for r in run["results"] if r["ruleId"] == RULE)
    assert SHOWN in text
    assert not re.search("[\r\n\u2028\u2029]", text)


def test_drill_down_shares_a_line_only_between_results_with_the_same_note() -> None:
    """The drill-down shows the first evidence item's note: results that differ only in their
    note ("before: 1", "before: 2") are two lines, each with its own note."""
    data = build_large(150)  # three failing results per rule, all with the same evidence
    rule = data.findings[0].rule_id
    same = [f for f in data.findings if f.rule_id == rule and f.evidence]
    assert len(same) == 3
    notes = {same[0].fingerprint: "before: 1", same[1].fingerprint: "before: 2"}
    findings = tuple(
        replace(f, evidence=(replace(f.evidence[0], note=notes[f.fingerprint]),))
        if f.fingerprint in notes
        else f
        for f in data.findings
    )
    page = render_html(replace(data, findings=findings))
    lines = re.findall(r'<p class="ev">.*?</p>', page)
    for fingerprint, note in notes.items():
        mine = [ln for ln in lines if f'href="#f-{fingerprint}"' in ln]
        assert mine and all(f"({note}) — " in ln for ln in mine), (note, mine[:1])


#: An ordered level (`at_most: medium` with `enum: autonomy`): the rule's argument as the
#: evaluator keeps it, which the finding's message words as `"medium" (autonomy)`.
LEVEL = Evidence(
    path="$.autonomyCeiling",
    actual="high",
    expected={"enum": "autonomy", "value": "medium"},
    operator="to be at most",
    present=True,
)
LEVEL_WORDS = '$.autonomyCeiling: "high" — expected to be at most "medium" (autonomy)'


def test_an_ordered_level_is_worded_as_the_message_words_it_in_every_format() -> None:
    """Every format said `expected to be at most {"enum":"autonomy","value":"medium"}`: the
    policy engine's argument, not what the rule says."""
    assert evidence_line(LEVEL) == LEVEL_WORDS
    d = build_report_data()
    d = replace(
        d,
        findings=tuple(
            replace(f, evidence=(LEVEL,)) if f.rule_id == RULE and f.status == "fail" else f
            for f in d.findings
        ),
    )
    md = [ln for ln in render_markdown(d).splitlines() if "autonomyCeiling" in ln]
    assert [_markdown_text(ln) for ln in md] == [f"- {LEVEL_WORDS}"]
    page = render_html(d)
    items = re.findall(r"<li>(.*?autonomyCeiling.*?)</li>", page)
    assert items and {_html_text(i) for i in items} == {LEVEL_WORDS}
    junit = [el.text or "" for el in ET.fromstring(render_junit(d)).iter("failure")]
    assert any(LEVEL_WORDS in t.splitlines() for t in junit)
    sarif = json.loads(render_sarif(d))["runs"][0]["results"]
    assert any(LEVEL_WORDS in r["message"]["text"] for r in sarif)
    oscal = render_oscal(d)
    found = {
        ev["description"]
        for result in json.loads(oscal)["assessment-results"]["results"]
        for obs in result.get("observations", [])
        for ev in obs.get("relevant-evidence", [])
        if "autonomyCeiling" in ev["description"]
    }
    assert found == {LEVEL_WORDS}
    for text in (page, render_markdown(d), render_junit(d), json.dumps(sarif), oscal):
        assert '"enum"' not in html.unescape(text).replace('\\"', '"')
