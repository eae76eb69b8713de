"""What a review's change findings say and where they point, in every format it writes.

A change finding's message keeps its count and its author however long the changes' names are
(the cut once took both, and left a quote open); a change finding points at the line of the
proposed file the change is on (it once pointed at the file's first key), in findings.json and
in the SARIF region code scanning annotates the diff with.
"""

from __future__ import annotations

import io
import json
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from auditor.cli import Context, main
from auditor.evaluate.changewords import explain_step
from auditor.models import Evidence
from auditor.policy.phrasing import MESSAGE_LIMIT
from tests.conftest import FIXED_NOW
from tests.test_report_limits import check_junit, check_sarif

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
PERSON = "a@b.c"
WORKERS = [
    f"sudo systemctl restart payments-reconciliation-worker@{i}.service --no-block"
    for i in range(5)
]


def _review(tmp_path: Path, proposed: Path, against: Path) -> dict[str, Any]:
    """Review `proposed` against `against`; every output parsed (SARIF and JUnit validated)."""
    out = tmp_path / "out"
    argv = ["review", str(proposed), "--against", str(against), "--author", PERSON]
    argv += ["--out", str(out), "-q"]
    ctx = Context(env={}, stdout=io.StringIO(), stderr=io.StringIO(), clock=lambda: FIXED_NOW)
    code = main(argv, ctx)
    assert code in (0, 1), ctx.stderr.getvalue()  # type: ignore[attr-defined]
    check_junit(out / "junit.xml")
    return {
        "json": json.loads((out / "findings.json").read_text(encoding="utf-8")),
        "sarif": check_sarif(out / "findings.sarif"),
        "junit": ET.parse(out / "junit.xml"),
        "md": (out / "report.md").read_text(encoding="utf-8"),
    }


def _workers_added(tmp_path: Path) -> Path:
    """The example proposal with five long commands added after `npm test` (lines 61-65)."""
    text = (EXAMPLES / "proposed-settings.yaml").read_text(encoding="utf-8")
    added = "".join(f"- {c}\n" for c in WORKERS)
    assert text.count("\n- npm test\n") == 1
    path = tmp_path / "proposed.yaml"
    path.write_text(text.replace("\n- npm test\n", "\n- npm test\n" + added), encoding="utf-8")
    return path


def _finding(outputs: dict[str, Any], rule_id: str) -> dict[str, Any]:
    (finding,) = [f for f in outputs["json"]["findings"] if f["rule_id"] == rule_id]
    return finding  # type: ignore[no-any-return]


def _sarif_result(outputs: dict[str, Any], rule_id: str) -> dict[str, Any]:
    (result,) = [r for r in outputs["sarif"]["results"] if r["ruleId"] == rule_id]
    return result  # type: ignore[no-any-return]


def _line_of(path: Path, text: str) -> int:
    lines = path.read_text(encoding="utf-8").splitlines()
    (number,) = [i for i, line in enumerate(lines, 1) if text in line]
    return number


def test_long_changes_keep_the_count_and_the_author_in_every_format(tmp_path: Path) -> None:
    """Five added commands of 75 characters: the message was cut at 240 characters in the
    third command's name, with no "(+2 more)", no "by a@b.c in rev 1" and a quote left open."""
    outputs = _review(tmp_path, _workers_added(tmp_path), EXAMPLES / "live-settings.yaml")
    finding = _finding(outputs, "CHG-CMD-003")
    message = finding["message"]
    assert finding["status"] == "fail" and finding["lifecycle"] == "new"
    assert message.endswith(" to commandAllowlist (+2 more) by a@b.c in rev 1"), message
    assert message.startswith("added `sudo systemctl restart payments-"), message
    assert message.count("; added `") == 2, message  # three named, the other two counted
    assert len(message) <= MESSAGE_LIMIT and message.count("`") % 2 == 0, message
    assert message in _sarif_result(outputs, "CHG-CMD-003")["message"]["text"]
    failure = outputs["junit"].find(".//testcase[@classname='CHG-CMD-003']/failure")
    assert failure is not None and failure.get("message") == message
    assert "commandAllowlist \\(+2 more\\) by a@&#8203;b.c in rev 1\n" in outputs["md"]


def _explained(paths: list[str], changes: list[dict[str, Any]], author: str, count: int) -> str:
    result = _Result(tuple(Evidence(path=p, actual="x", operator="not to be") for p in paths))
    doc = {"changes": changes, "author": author, "revision": 7}
    return explain_step(result, doc, count).message  # type: ignore[arg-type]


@dataclass(frozen=True)
class _Result:
    """What `explain_step` reads of a rule's result."""

    evidence: tuple[Evidence, ...]
    message: str = ""
    status: str = "fail"


def test_a_change_at_a_very_long_key_keeps_the_count_and_closes_its_quote() -> None:
    long_key = "k" * 400
    changes = [
        {"path": f"$.{long_key}", "kind": "changed", "before": "a" * 90, "after": "b" * 90},
        {"path": "$.x", "kind": "added", "before": None, "after": 1},
    ]
    message = _explained(["$.changes[0].kind", "$.changes[1].kind"], changes, PERSON, 30)
    assert message.endswith(" (+29 more) by a@b.c in rev 7"), message
    assert len(message) <= MESSAGE_LIMIT and message.count("`") % 2 == 0, message
    author = "someone-" * 60 + "@example.com"
    message = _explained(["$.changes[0].kind"], changes[1:], author, 1)
    assert message.startswith("added x with 1 by someone-someone-") and " in rev 7" in message
    assert len(message) <= MESSAGE_LIMIT, message


def test_a_short_change_message_is_as_before() -> None:
    changes = [{"path": "$.commandAllowlist", "kind": "item_added", "after": f"tool-{i}"}
               for i in range(5)]  # fmt: skip
    paths = [f"$.changes[{i}].path" for i in range(5)]
    message = _explained(paths, changes, PERSON, 5)
    assert message == (
        "added `tool-0` to commandAllowlist; added `tool-1` to commandAllowlist; added "
        "`tool-2` to commandAllowlist (+2 more) by a@b.c in rev 7"
    )


def test_a_change_finding_points_at_the_added_line_of_a_yaml_proposal(tmp_path: Path) -> None:
    """CHG-CMD-003 pointed at line 5, the file's first key (`sessionDefaultSettings:`), while
    the first command it names is at line 61, where BASE-CMD-005 points."""
    proposed = _workers_added(tmp_path)
    outputs = _review(tmp_path, proposed, EXAMPLES / "live-settings.yaml")
    line = _line_of(proposed, WORKERS[0])
    assert line == 61
    location = _finding(outputs, "CHG-CMD-003")["location"]
    assert (location["line"], location["col"]) == (line, 3)
    assert _finding(outputs, "BASE-CMD-005")["location"] == location
    region = _sarif_result(outputs, "CHG-CMD-003")["locations"][0]["physicalLocation"]["region"]
    assert (region["startLine"], region["startColumn"]) == (line, 3)
    # a change to a value: the value's line, as before
    level = _finding(outputs, "CHG-AUT-001")["location"]
    assert level["line"] == _line_of(proposed, "maxAutonomyLevel: high")


def test_a_change_finding_points_at_the_added_entry_of_a_json_proposal(tmp_path: Path) -> None:
    """CHG-MOD-001 (a custom model added) pointed at line 1 of a JSON proposal."""
    live = {
        "commandBlocklist": ["scp", "rm -rf /"],
        "customModels": [{"id": "custom:a", "baseUrl": "https://a.example/v1"}],
    }
    proposed = json.loads(json.dumps(live))
    proposed["customModels"].append({"id": "custom:new", "baseUrl": "https://new.example/v1"})
    proposed["commandBlocklist"].remove("scp")
    (tmp_path / "live.json").write_text(json.dumps(live), encoding="utf-8")
    path = tmp_path / "proposed.json"
    path.write_text(json.dumps(proposed, indent=2), encoding="utf-8")
    outputs = _review(tmp_path, path, tmp_path / "live.json")
    added = _finding(outputs, "CHG-MOD-001")
    assert added["status"] == "fail", added
    # the new entry's object starts the line before its id
    assert added["location"]["line"] == _line_of(path, '"custom:new"') - 1 > 1, added
    region = _sarif_result(outputs, "CHG-MOD-001")["locations"][0]["physicalLocation"]["region"]
    assert region["startLine"] == added["location"]["line"]
    # a removal points at the nearest key the proposal still has: the list's
    removal = _finding(outputs, "CHG-CMD-001")
    assert removal["message"].startswith("removed `scp` from commandBlocklist"), removal
    assert removal["location"]["line"] == _line_of(path, '"commandBlocklist"'), removal


def test_waived_findings_are_not_counted_as_introduced_in_the_headlines(tmp_path: Path) -> None:
    """Two of the five findings the example introduces waived: stdout, report.md and
    report.html said "introduce 5" while the severity table summed to 3 and the exit line said
    3; every headline now says 3 and names the two waived apart."""
    waivers = tmp_path / "waivers.yaml"
    why = "reason: r, owner: a@b.c, expires: 2099-01-01"
    waivers.write_text(
        "waivers:\n"
        + "".join(
            f"  - {{rule: {rule}, subject: {subject}, {why}}}\n"
            for rule, subject in (("BASE-AUT-001", "settings"), ("CHG-MCP-001", "change"))
        ),
        encoding="utf-8",
    )
    out = tmp_path / "out"
    argv = ["review", str(EXAMPLES / "proposed-settings.yaml"), "--against"]
    argv += [str(EXAMPLES / "live-settings.yaml"), "--author", PERSON, "--waivers", str(waivers)]
    stdout, stderr = io.StringIO(), io.StringIO()
    ctx = Context(env={}, stdout=stdout, stderr=stderr, clock=lambda: FIXED_NOW)
    assert main([*argv, "--out", str(out)], ctx) == 1, stderr.getvalue()
    assert "the change would introduce 3 (+2 waived) and fix 3 finding(s)" in stdout.getvalue()
    assert "exit 1: 3 findings introduced" in stderr.getvalue()
    md = (out / "report.md").read_text(encoding="utf-8")
    table = md.split("| Severity | Open | Introduced |")[1].split("\n\n")[0]
    assert sum(int(row.rsplit("|", 2)[1]) for row in table.splitlines()[2:]) == 3, table
    assert "**Introduced:** 3 (+2 waived) ·" in md
    assert "change(s): 3 (+2 waived) finding(s) introduced," in md
    html = (out / "report.html").read_text(encoding="utf-8")
    assert '<span class="n">3</span><span class="l">introduced (+2 waived)</span>' in html
    data = json.loads((out / "findings.json").read_text(encoding="utf-8"))
    statuses = sorted(
        f["status"] for f in data["findings"] if f["fingerprint"] in data["review"]["introduced"]
    )
    assert statuses == ["fail", "fail", "fail", "waived", "waived"]  # the JSON lists all five


def test_a_line_separator_in_a_value_is_never_written_raw(tmp_path: Path) -> None:
    """U+2028 and U+2029 (a line break to some readers) were written raw into report.md and
    report.html: the change table and the evidence code spans. They are written as their
    escapes, as the findings' messages write them."""
    live = {"commandAllowlist": ["git status"], "x": "a"}
    proposed = {"commandAllowlist": ["git status", "sudo su\u2028next\u2029para"], "x": "a\u2028b"}
    (tmp_path / "live.json").write_text(json.dumps(live), encoding="utf-8")
    (tmp_path / "proposed.json").write_text(json.dumps(proposed), encoding="utf-8")
    _review(tmp_path, tmp_path / "proposed.json", tmp_path / "live.json")
    for name in ("report.md", "report.html", "junit.xml", "findings.sarif", "findings.json"):
        text = (tmp_path / "out" / name).read_text(encoding="utf-8")
        assert "\u2028" not in text and "\u2029" not in text, name
    md = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    assert '| <code>"sudo su\\\\u2028next\\\\u2029para"</code> |' in md  # the change table
    assert '| <code>"a\\\\u2028b"</code> |' in md
    html = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    assert "<code>&#34;sudo su\\u2028next\\u2029para&#34;</code>" in html
    data = json.loads((tmp_path / "out" / "findings.json").read_text(encoding="utf-8"))
    assert data["review"]["changes"][-1]["after"] == "a\u2028b"  # findings.json keeps it raw


#: Values that do not print as they are (a line break, a tab, CR, NUL, BEL, a zero-width
#: space), each with what every report shows for it: the escape the findings' messages write.
UNPRINTABLE = {
    "ls\nrm -rf /": "ls\\nrm -rf /",
    "tab\there": "tab\\there",
    "zero\u200bwidth": "zero\\u200bwidth",
    "cr\rx": "cr\\rx",
    "nul\u0000x": "nul\\u0000x",
    "bell\u0007x": "bell\\u0007x",
}


def test_the_change_table_and_evidence_show_a_value_that_does_not_print_as_its_escapes(
    tmp_path: Path,
) -> None:
    """The change table (report.md, the PR comment, and report.html) showed `"nulx"` for
    `nul\\u0000x`, a line break as a space, a tab and a zero-width space raw (two different
    entries looked alike), and report.html's evidence did too, while the messages of the same
    report escaped them: the reviewer approves from the table, so it shows what is proposed."""
    live = {"commandAllowlist": ["git status"]}
    proposed = {"commandAllowlist": ["git status", *UNPRINTABLE]}
    (tmp_path / "live.json").write_text(json.dumps(live), encoding="utf-8")
    (tmp_path / "proposed.json").write_text(json.dumps(proposed), encoding="utf-8")
    _review(tmp_path, tmp_path / "proposed.json", tmp_path / "live.json")
    md = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    html = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    for shown in UNPRINTABLE.values():
        md_shown = shown.replace("\\", "\\\\")  # Markdown escapes the backslash
        assert f'| item added | — | <code>"{md_shown}"</code> |' in md, shown
        cell = f"<td><code>&#34;{shown}&#34;</code></td></tr>"
        assert cell in html, shown
        item = r"<li><code>\$\.commandAllowlist\[\d\]</code>: "  # an evidence line
        assert re.search(item + re.escape(f"<code>&#34;{shown}&#34;</code>"), html), shown
    for report in (md, html):
        assert not re.search("[\t\u200b\x00\x07]", report)


def test_a_sarif_column_counts_characters_and_the_run_says_so(tmp_path: Path) -> None:
    """A region's `startColumn` is the YAML and JSON readers' column, in characters; SARIF
    reads columns as UTF-16 code units unless the run says otherwise (T99 #7: four emoji
    before the value put it 4 columns off), so the run declares `unicodeCodePoints`."""
    live = tmp_path / "live.json"
    live.write_text('{"svcRouterGuidance": "x", "maxAutonomyLevel": "low"}', encoding="utf-8")
    proposed = tmp_path / "proposed.json"
    text = '{"svcRouterGuidance": "😀😀😀😀", "maxAutonomyLevel": "high"}'
    proposed.write_text(text, encoding="utf-8")
    outputs = _review(tmp_path, proposed, live)
    run = outputs["sarif"]  # (`check_sarif` gives the run)
    assert run["columnKind"] == "unicodeCodePoints"
    located = [
        r["locations"][0]["physicalLocation"]["region"]
        for r in run["results"]
        if r.get("locations") and "maxAutonomyLevel" in json.dumps(r["message"])
    ]
    assert located, run["results"]
    for region in located:
        assert region["startLine"] == 1
        assert text[region["startColumn"] - 1 :].startswith('"high"'), region  # its value
