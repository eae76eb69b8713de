"""The five report formats: golden files, schema validity, and what each format promises."""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable
from dataclasses import replace
from html import unescape
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]
import pytest
import xmlschema
from report_fixture import build_large, build_report_data, declared_urls

from auditor.common.pairs import RevisionCounts
from auditor.findings.finding import sort_controls
from auditor.models import Change, SourceLocation, severity_rank
from auditor.report import (
    DEFAULT_OUTPUTS,
    OUTPUTS,
    REPORT_FILES,
    ReportData,
    render_html,
    render_json,
    render_junit,
    render_markdown,
    render_sarif,
    write_reports,
)
from auditor.report.charts import MAX_POINTS, failing_chart
from auditor.report.display import display_value
from auditor.report.html import ROWS_PER_RULE, anchors
from auditor.report.jsonout import schema
from auditor.report.model import ReadinessRow
from auditor.report.sarif import (
    FINGERPRINT_KEY,
    MAX_RESULTS,
    MAX_TAGS,
    artifact_location,
    automation_id,
    category_word,
    listed_findings,
    sarif_log,
)

GOLDEN = Path(__file__).parent / "golden"
SCHEMAS = Path(__file__).parent / "schemas"  # SARIF 2.1.0 and JUnit, vendored (see README there)

Renderer = Callable[[ReportData], str]
CASES: list[tuple[str, bool, Renderer]] = [
    (name, review, render) for review in (False, True) for name, render in REPORT_FILES.items()
]


def _golden_name(name: str, review: bool) -> str:
    return f"{'review' if review else 'run'}-{name}"


@pytest.mark.parametrize(
    ("name", "review", "render"), CASES, ids=[_golden_name(n, r) for n, r, _ in CASES]
)
def test_golden(name: str, review: bool, render: Renderer, update_golden: bool) -> None:
    path = GOLDEN / _golden_name(name, review)
    text = render(build_report_data(review=review))
    if update_golden:
        path.parent.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8", newline="\n")
    assert path.exists(), f"{path} missing: run pytest --update-golden and review the diff"
    assert text == path.read_text(encoding="utf-8"), f"{path.name} changed (--update-golden)"


@pytest.mark.parametrize("render", REPORT_FILES.values(), ids=list(REPORT_FILES))
def test_same_input_gives_identical_output(render: Renderer) -> None:
    assert render(build_report_data()) == render(build_report_data())


def test_write_reports_writes_five_files_and_no_temporaries(tmp_path: Path) -> None:
    written = write_reports(build_report_data(), tmp_path / "reports" / "run-42")
    five = sorted(OUTPUTS[n] for n in DEFAULT_OUTPUTS)
    assert len(five) == 5 and sorted(written) == five
    assert sorted(p.name for p in written["report.html"].parent.iterdir()) == five
    assert written["findings.json"].read_text(encoding="utf-8") == render_json(build_report_data())


@pytest.mark.parametrize("review", [False, True], ids=["run", "review"])
def test_json_validates_against_shipped_schema(review: bool) -> None:
    doc = json.loads(render_json(build_report_data(review=review)))
    jsonschema.Draft202012Validator(schema()).validate(doc)
    assert doc["complete"] is False and doc["not_evaluated"]
    assert len(doc["findings"]) == len(build_report_data().findings)


def _sarif(review: bool = False) -> dict[str, Any]:
    return json.loads(render_sarif(build_report_data(review=review)))  # type: ignore[no-any-return]


@pytest.mark.parametrize("review", [False, True], ids=["run", "review"])
def test_sarif_validates_against_sarif_2_1_0(review: bool) -> None:
    sarif_schema = json.loads((SCHEMAS / "sarif-schema-2.1.0.json").read_text())
    jsonschema.Draft4Validator(sarif_schema).validate(_sarif(review))


def test_sarif_rules_results_and_fingerprints() -> None:
    run = _sarif()["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    ids = [r["id"] for r in rules]
    assert ids == sorted(set(ids))
    by_id = {r["id"]: r for r in rules}
    assert by_id["SET-001"]["properties"]["security-severity"] == "9.5"
    assert by_id["SET-002"]["properties"]["security-severity"] == "8.0"
    statuses = {(r["ruleId"], r["properties"]["status"]) for r in run["results"]}
    assert ("SET-003", "pass") not in statuses and ("RDY-002", "error") in statuses
    for r in run["results"]:
        assert ids[r["ruleIndex"]] == r["ruleId"]
        assert re.fullmatch(r"[0-9a-f]{32}", r["partialFingerprints"]["auditorFingerprint/v1"])


def test_sarif_leaves_waived_findings_out_by_default() -> None:
    # GitHub code scanning ignores `suppressions`: a waived result would show as an open alert
    data = build_report_data()
    assert any(f.status == "waived" for f in data.findings)
    statuses = {r["properties"]["status"] for r in _sarif()["runs"][0]["results"]}
    assert statuses == {"fail", "error", "unknown"}


def test_sarif_include_waived_lists_them_suppressed_with_justification() -> None:
    data = replace(build_report_data(), sarif_include_waived=True)
    log = json.loads(render_sarif(data))
    waived = [r for r in log["runs"][0]["results"] if r["properties"]["status"] == "waived"]
    assert len(waived) == 1
    (suppression,) = waived[0]["suppressions"]
    assert suppression["status"] == "accepted"
    assert "security-team@example.com" in suppression["justification"]
    sarif_schema = json.loads((SCHEMAS / "sarif-schema-2.1.0.json").read_text())
    jsonschema.Draft4Validator(sarif_schema).validate(log)


def test_sarif_rules_have_a_readable_name_unique_tags_and_help() -> None:
    driver = _sarif()["runs"][0]["tool"]["driver"]
    by_id = {r["id"]: r for r in driver["rules"]}
    assert by_id["SET-004"]["name"] == "MCPServersLimitedToAnAllowlist"
    for rule in driver["rules"]:
        assert rule["name"] != rule["id"] and re.fullmatch(r"[A-Z][A-Za-z0-9]*", rule["name"])
        tags = rule["properties"]["tags"]
        assert len(tags) == len(set(tags)) <= MAX_TAGS
        assert rule["help"]["markdown"].startswith("**")


def test_fail_on_none_is_worded_as_failing_on_nothing() -> None:
    """`--fail-on none` (the Action's `fail-on: none`) read `fail on none and above` in
    report.md and `Fail on: none and above` in report.html and the PDF."""
    d = replace(build_report_data(), fail_on="none")
    md, page = render_markdown(d), render_html(d)
    assert "fail on nothing (<code>--fail-on none</code>)" in md
    assert "<dt>Fail on</dt><dd>nothing (<code>--fail-on none</code>)</dd>" in page
    assert "none and above" not in md and "none and above" not in page
    high = build_report_data()
    assert "fail on high and above" in render_markdown(high)
    assert "<dt>Fail on</dt><dd>high and above</dd>" in render_html(high)


def test_markdown_names_the_waivers_to_act_on() -> None:
    """report.md (the job summary, the PR comment) said nothing of an expired waiver, whose
    findings count again, nor of a stale or soon expiring one: only report.html did."""
    md = render_markdown(build_report_data())
    assert (
        "> **Waivers:** 1 expired (no longer waiving), 1 expiring within 14 days, "
        "1 stale (waiving nothing).\n"
        "> - expired: RDY-001 on https&#8203;://github.com/acme/legacy-\\*, expired 2026-10-01, "
        "owner platform@&#8203;example.com\n"
        "> - expiring: SET-004 on settings, until 2026-11-20, "
        "owner security-team@&#8203;example.com\n"
        "> - stale: SET-099 on settings, until 2027-01-31, owner dave@&#8203;example.com\n"
    ) in md
    d = build_report_data()
    many = replace(d.waivers, expired=d.waivers.expired * 7, expiring_soon=(), stale=())
    md = render_markdown(replace(d, waivers=many))
    assert md.count("> - expired: RDY-001") == 5 and "> - 2 more expired: see report.html" in md
    none = replace(d.waivers, expired=(), expiring_soon=(), stale=())
    assert "Waivers:" not in render_markdown(replace(d, waivers=none))


def test_sarif_rule_help_shows_code_spans_as_code() -> None:
    """Code scanning renders `help.markdown`: a rule's `code` spans (`Set `x` to true`) were
    escaped there into literal backticks; they are code spans again, and the rest of the text
    stays escaped."""
    d = build_report_data()
    text = "Set `sandbox.enabled` to true; see <b>@bob</b> and `a<b>`."
    d = replace(
        d, findings=tuple(replace(f, remediation=text, description=text) for f in d.findings)
    )
    for rule in json.loads(render_sarif(d))["runs"][0]["tool"]["driver"]["rules"]:
        md = rule["help"]["markdown"]
        assert "\\`" not in md
        assert "Set `sandbox.enabled` to true" in md
        assert "`a<b>`" in md and "&lt;b&gt;@&#8203;bob" in md  # code as is, text escaped
        assert "**Remediation:** Set `sandbox.enabled`" in md
        assert rule["help"]["text"].startswith(text)  # the plain text is as written


def test_sarif_names_no_made_up_tool_address() -> None:
    """Code scanning shows the tool's `informationUri` as its link: without a home page in the
    package metadata there is none (optional in SARIF), never a placeholder organisation
    (whatever pyproject.toml declares today: here only an issue tracker, which is no home)."""
    with declared_urls("Issues, https://tracker.example.net/auditor"):
        text = render_sarif(build_report_data())
    tool = json.dumps(json.loads(text)["runs"][0]["tool"])
    assert "your-org" not in text and "example" not in tool and "github.com" not in tool
    assert "informationUri" not in json.loads(text)["runs"][0]["tool"]["driver"]


def test_sarif_tool_address_is_the_declared_home_page() -> None:
    with declared_urls(
        "Issues, https://example.org/auditor/issues", "Homepage, https://example.org/auditor/"
    ):
        log = json.loads(render_sarif(build_report_data()))
    assert log["runs"][0]["tool"]["driver"]["informationUri"] == "https://example.org/auditor"
    jsonschema.Draft4Validator(
        json.loads((SCHEMAS / "sarif-schema-2.1.0.json").read_text())
    ).validate(log)
    with declared_urls("Homepage, http://example.org/plain", "Source, javascript:alert(1)"):
        log = json.loads(render_sarif(build_report_data()))
    assert "informationUri" not in log["runs"][0]["tool"]["driver"]  # https only


def test_sarif_tags_are_deduplicated_and_capped() -> None:
    base = build_report_data()
    many = tuple(f"SOC2:CC{i}.1" for i in range(1, 30))
    findings = tuple(
        replace(f, tags=("security", "compliance", "security"), controls=many)
        for f in base.findings
    )
    rules = _rules_of(replace(base, findings=findings))
    for rule in rules:
        tags = rule["properties"]["tags"]
        assert tags[:3] == ["security", "compliance", "SOC2:CC1.1"]
        assert len(tags) == len(set(tags)) == MAX_TAGS
        assert "SOC2:CC29.1" in rule["help"]["markdown"]  # every control is still in the help


def _rules_of(data: ReportData) -> list[dict[str, Any]]:
    return json.loads(render_sarif(data))["runs"][0]["tool"]["driver"]["rules"]  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("org", "api", "expected"),
    [
        ("acme", "https://api.example.com", "auditor/acme/run/run-42"),
        ("default", "https://api.example.com:8443/v0", "auditor/api.example.com/run/run-42"),
        ("", "(offline)", "auditor/offline/run/run-42"),
        ("Acme Corp/EU", "https://x", "auditor/Acme-Corp-EU-472edbcc/run/run-42"),
        ("Müller", "https://x", "auditor/M-ller-a7842989/run/run-42"),
        ("日本", "https://x", "auditor/unknown-cf2abf0c/run/run-42"),
    ],
    ids=["org", "default-org-uses-host", "offline", "slashes-and-spaces", "umlaut", "cjk"],
)
def test_sarif_automation_id_is_one_category_per_org_and_run_kind(
    org: str, api: str, expected: str
) -> None:
    data = replace(build_report_data(), org=org, api_address=api)
    assert automation_id(data) == expected


def test_different_org_labels_never_share_a_sarif_category() -> None:
    """`Müller` and `Möller` were both `auditor/M-ller/…`, `日本` and `中国` both
    `auditor/unknown/…`: one organization's upload closed the other's alerts. A label whose
    characters had to be replaced gets a short hash of itself; one that needs none is kept."""
    labels = ["Müller", "Möller", "日本", "中国", "Acme Corp", "Acme-Corp", "Acme  Corp", "acme"]
    words = [category_word(label) for label in labels]
    assert len(set(words)) == len(labels), words
    assert category_word("acme") == "acme" and category_word("Acme-Corp") == "Acme-Corp"
    assert all(re.fullmatch(r"[A-Za-z0-9._-]+", w) for w in words)


def test_sarif_caps_results_worst_first_and_says_where_the_rest_are() -> None:
    base = build_large(30)
    severities = ("low", "critical", "info", "high", "medium") * 6
    data = replace(
        base,
        findings=tuple(
            replace(f, severity=s) for f, s in zip(base.findings, severities, strict=True)
        ),
    )
    log = sarif_log(data, max_results=12)
    run = log["runs"][0]
    kept = [r["properties"]["severity"] for r in run["results"]]
    assert sorted(kept) == sorted(["critical"] * 6 + ["high"] * 6)
    assert [r["partialFingerprints"] for r in run["results"]] == sorted(
        (r["partialFingerprints"] for r in run["results"]), key=lambda p: p[FINGERPRINT_KEY]
    )  # report order kept among those listed
    (note, *_) = run["invocations"][0]["toolExecutionNotifications"]
    assert "lists 12 of 30 results" in note["message"]["text"]
    assert "18 of lowest severity were left out" in note["message"]["text"]
    assert "findings.json" in note["message"]["text"]
    # report.html and report.md are capped too: the note once called them complete
    assert "(and report.html, report.md)" not in note["message"]["text"]
    assert f"report.html lists at most {ROWS_PER_RULE} per rule" in note["message"]["text"]
    assert run["properties"]["resultsLeftOut"] == 18
    sarif_schema = json.loads((SCHEMAS / "sarif-schema-2.1.0.json").read_text())
    jsonschema.Draft4Validator(sarif_schema).validate(log)


def test_sarif_under_the_cap_lists_everything_without_a_notice() -> None:
    data = build_large(40)
    run = sarif_log(data, max_results=40)["runs"][0]
    assert len(run["results"]) == 40 and run["properties"]["resultsLeftOut"] == 0
    assert not any(
        "left out" in n["message"]["text"]
        for n in run["invocations"][0]["toolExecutionNotifications"]
    )
    assert MAX_RESULTS == 5_000  # GitHub code scanning keeps at most 5,000 results of a run


@pytest.mark.parametrize(
    ("review", "rule", "uri", "line"),
    [
        (False, "SET-001", "policies/baseline.yaml", 4),
        (True, "SET-001", "settings/proposed.json", 7),
        (True, "CHG-001", "policies/baseline.yaml", 48),
    ],
    ids=["run-points-at-policy", "review-points-at-proposed-file", "review-change-rule"],
)
def test_sarif_locations(review: bool, rule: str, uri: str, line: int) -> None:
    result = next(r for r in _sarif(review)["runs"][0]["results"] if r["ruleId"] == rule)
    loc = result["locations"][0]["physicalLocation"]
    assert (loc["artifactLocation"]["uri"], loc["region"]["startLine"]) == (uri, line)


def _junit_cases(text: str) -> dict[tuple[str, str], str]:
    xs = xmlschema.XMLSchema(str(SCHEMAS / "junit-10.xsd"))
    xs.validate(text)
    from xml.etree import ElementTree as ET

    out = {}
    for case in ET.fromstring(text).iter("testcase"):
        child = next(iter(case), None)
        out[(case.get("classname", ""), case.get("name", ""))] = (
            "passed" if child is None else f"{child.tag}:{child.get('message', '')[:7]}"
        )
    return out


def test_junit_validates_and_maps_each_status() -> None:
    cases = _junit_cases(render_junit(build_report_data()))
    assert cases[("SET-001", "settings in force (rev 413)")] == "failure:customM"
    assert cases[("SET-003", "settings in force (rev 413)")] == "passed"
    assert cases[("SET-005", "settings in force (rev 413)")].startswith("failure:")  # unknown
    assert cases[("RDY-002", "acme/payments")].startswith("error:")
    assert cases[("RDY-002", "acme/web")] == "skipped:not app"
    assert cases[("SET-004", "settings in force (rev 413)")] == "skipped:waived "
    assert cases[("auditor", "every input evaluated")].startswith("error:")


FINDING_BLOCK = re.compile(r"<details><summary>[^<]*<b>.*?</summary>")


def test_markdown_new_findings_first_and_details_blocks() -> None:
    md = render_markdown(build_report_data())
    blocks = FINDING_BLOCK.findall(md)
    lifecycles = [("new" if "· new" in b else "other") for b in blocks]
    assert lifecycles == sorted(lifecycles, key=lambda x: x != "new") and "new" in lifecycles
    assert len(blocks) == 8 and md.count("<details>") == md.count("</details>") == 9
    assert "| Severity | Open | New |" in md
    assert "Resolved since the previous run: 1" in md


def test_markdown_review_lists_introduced_findings_first() -> None:
    md = render_markdown(build_report_data(review=True))
    assert "<b>SET-002</b>" in FINDING_BLOCK.findall(md)[0]
    assert "| Path | Change | Before | After |" in md


def test_markdown_review_with_its_scope_stays_under_every_limit() -> None:
    """The scope list and the proposed change together are counted against the limit (a
    review whose change only just fits beside the header must not push the comment over)."""
    data = build_report_data(review=True)
    head = len(render_markdown(data, limit=10**6).split("### Scope")[0])
    for limit in range(head + 450, 12_000, 10):
        md = render_markdown(data, limit=limit)
        assert len(md) <= limit, limit


@pytest.mark.parametrize("limit", [65536, 8000], ids=["pr-comment", "small"])
def test_markdown_stays_under_limit_with_explicit_notice(limit: int) -> None:
    md = render_markdown(build_large(3000), limit=limit)
    assert len(md) <= limit
    shown = len(FINDING_BLOCK.findall(md))
    assert f"**{3000 - shown} more not shown**" in md and 0 < shown < 3000


def test_html_is_self_contained_with_strict_csp() -> None:
    html = render_html(build_report_data())
    (csp,) = re.findall(r'http-equiv="Content-Security-Policy" content="([^"]*)"', html)
    assert unescape(csp).startswith("default-src 'none'; style-src 'sha256-")
    assert "<script" not in html and "<link" not in html and " src=" not in html
    assert "<svg" in html and "<polyline" in html
    hrefs = set(re.findall(r'href="([^"]*)"', html))
    assert {h for h in hrefs if not h.startswith("#")} == {
        "https://github.com/acme/payments",
        "https://github.com/acme/web",
        "https://github.com/acme/empty",
    }
    ids = re.findall(r' id="([^"]*)"', html)
    assert len(ids) == len(set(ids))  # every anchor unique
    assert {h[1:] for h in hrefs if h.startswith("#")} <= set(ids)  # every link lands


def test_html_groups_large_runs_by_rule_with_a_cap() -> None:
    html = render_html(build_large(12000))
    assert html.count('<section class="rule" id="rule-') == 50
    assert html.count("more finding(s) of this rule not shown") == 50
    assert '<td colspan="4" class="more">-' not in html


def test_html_shows_every_section_an_auditor_needs() -> None:
    html = render_html(build_report_data())
    for text in (
        "Compliance by framework control",
        "Compliance over time",
        "Findings by rule",
        "Repository readiness",
        "Waivers",
        "Appendix A: passing results and their evidence",
        "Appendix B: inputs",
        "Control drill-down",
        "Contents",
        "Period covered",
        "Populations",
        "Incomplete",
        "violating since rev 412 (2026-09-03) by alice@example.com",
        "9f9f9f9f",
        "Expired (no longer waiving)",
        "Stale (match nothing)",
    ):
        assert text in html, text


def test_chart_downsampling_keeps_the_peak_and_bounds_the_points() -> None:
    points = [(r, 1) for r in range(1, 100_001)]
    points[54_321] = (54_322, 40)
    chart = failing_chart(points)
    assert chart is not None and chart.peak == 40
    assert len(chart.line.split()) <= MAX_POINTS
    assert min(float(p.split(",")[1]) for p in chart.line.split()) == chart.plot_top  # peak drawn
    # the counts as a run gives them (in order, not sorted again): the very same chart
    assert failing_chart(RevisionCounts.of(points)) == chart
    assert failing_chart(list(reversed(points))) == chart
    assert failing_chart(RevisionCounts.of(reversed(points))) == chart


@pytest.mark.parametrize("points", [[], [(412, 3)]], ids=["no-history", "one-revision"])
def test_chart_needs_two_revisions(points: list[tuple[int, int]]) -> None:
    assert failing_chart(points) is None
    assert "Not enough revision history" in render_html(
        replace(build_report_data(), failing_by_revision=tuple(points))
    )


NATURAL = ["ISO27001:A.5.2", "ISO27001:A.5.15", "SOC2:CC6.8", "SOC2:CC6.10"]


def _in_order(text: str, needles: list[str]) -> bool:
    positions = [text.find(n) for n in needles]
    return -1 not in positions and positions == sorted(positions)


def test_controls_are_in_natural_order_in_every_format() -> None:
    data = build_report_data()
    html = render_html(data)
    assert _in_order(html, ['title="ISO27001:A.5.2"', 'title="ISO27001:A.5.15"'])
    assert _in_order(html, ['title="SOC2:CC6.8"', 'title="SOC2:CC6.10"'])
    assert "Controls: " + ", ".join(NATURAL) + "." in re.sub(r"<[^>]+>", "", html)
    rdy = next(r for r in json.loads(render_json(data))["rules"] if r["id"] == "RDY-002")
    assert rdy["controls"] == NATURAL
    sarif_rule = next(
        r for r in _sarif()["runs"][0]["tool"]["driver"]["rules"] if r["id"] == "RDY-002"
    )
    assert sarif_rule["properties"]["tags"][2:6] == NATURAL
    assert f'value="{", ".join(NATURAL)}"' in render_junit(data)


def test_control_table_shows_code_without_prefix_and_never_wraps_it() -> None:
    html = render_html(build_report_data())
    row = re.search(r"<tr><td[^>]*>SOC 2</td><td([^>]*)><a [^>]*><code[^>]*>CC6\.10</code>", html)
    assert row is not None and 'class="nowrap"' in row.group(1)
    assert ", .nowrap, .nowrap code { white-space: nowrap;" in html


CHANGE_CASES = [
    (Change("$.a", "added", None, 1), "—", "<code>1</code>"),
    (Change("$.a", "item_added", None, "x"), "—", '<code>"x"</code>'),
    (Change("$.a", "removed", 2, None), "<code>2</code>", "—"),
    (Change("$.a", "item_removed", "y", None), '<code>"y"</code>', "—"),
    (Change("$.a", "changed", None, 3), "<code>null</code>", "<code>3</code>"),
    (Change("$.a", "type_changed", "1", 1), '<code>"1"</code>', "<code>1</code>"),
    (
        Change("$.b", "renamed", True, True, old_path="$.a"),
        "<code>true</code>",
        "<code>true</code>",
    ),
]


@pytest.mark.parametrize(
    ("change", "before", "after"), CHANGE_CASES, ids=[c.kind for c, _, _ in CHANGE_CASES]
)
def test_change_table_shows_each_kind_sensibly(change: Change, before: str, after: str) -> None:
    base = build_report_data(review=True)
    assert base.review is not None
    data = replace(base, review=replace(base.review, changes=(change,)))
    kind = change.kind.replace("_", " ")
    md_rows = [line for line in render_markdown(data).splitlines() if f"| {kind} |" in line]
    assert md_rows and md_rows[0].endswith(f"| {kind} | {before} | {after} |")
    html = render_html(data)
    (row,) = re.findall(rf'<tr><td>.*?</td><td class="nowrap">{kind}</td>.*?</tr>', html)
    dash = '<span class="muted">—</span>'
    cells = [dash if x == "—" else x.replace('"', "&#34;") for x in (before, after)]
    assert row.endswith(f"<td>{cells[0]}</td><td>{cells[1]}</td></tr>")
    if change.kind == "renamed":
        assert (
            "<code>$.a</code> → <code>$.b</code>" in md_rows[0]
            and "<code>$.a</code> → <code>$.b</code>" in row
        )


def test_unknown_readiness_values_show_as_dash_or_unknown_and_json_null() -> None:
    row = ReadinessRow("https://github.com/acme/x", None, None, None, None, "rpt-x")
    data = replace(build_report_data(), readiness_rows=(row,))
    html = render_html(data)
    cells = re.findall(r'<td class="num">([^<]*)</td>', html.split("acme/x</a></td>")[1])[:3]
    assert cells == ["—", "—", "—"]
    assert "<td>unknown</td><td><code>rpt-x</code>" in html
    doc = json.loads(render_json(data))
    jsonschema.Draft202012Validator(schema()).validate(doc)
    (repo,) = doc["readiness"]["repositories"]
    assert (repo["level"], repo["score"], repo["age_days"], repo["clean"]) == (
        None,
        None,
        None,
        None,
    )


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("policies/baseline.yaml", {"uri": "policies/baseline.yaml", "uriBaseId": "%SRCROOT%"}),
        ("./policies/my rules.yaml", {"uri": "policies/my%20rules.yaml", "uriBaseId": "%SRCROOT%"}),
        ("/srv/audit/policies/a.yaml", {"uri": "file:///srv/audit/policies/a.yaml"}),
        ("C:\\audit\\a.yaml", {"uri": "file:///C:/audit/a.yaml"}),
        ("odd:name.yaml", {"uri": "odd%3Aname.yaml", "uriBaseId": "%SRCROOT%"}),
    ],
    ids=["relative", "dot-slash-and-space", "absolute", "windows", "colon-not-a-scheme"],
)
def test_sarif_artifact_location(path: str, expected: dict[str, str]) -> None:
    assert artifact_location(path) == expected


def test_sarif_with_absolute_and_relative_paths_stays_valid() -> None:
    base = build_report_data()
    findings = tuple(
        replace(f, source=SourceLocation("/srv/audit/policies/baseline.yaml", 3, 1)) if i % 2 else f
        for i, f in enumerate(base.findings)
    )
    log = json.loads(render_sarif(replace(base, findings=findings)))
    sarif_schema = json.loads((SCHEMAS / "sarif-schema-2.1.0.json").read_text())
    jsonschema.Draft4Validator(sarif_schema).validate(log)
    uris = {
        r["locations"][0]["physicalLocation"]["artifactLocation"].get("uriBaseId", "abs")
        for r in log["runs"][0]["results"]
    }
    assert uris == {"%SRCROOT%", "abs"}


def test_review_mode_speaks_of_introduced_and_fixed_not_new_and_resolved() -> None:
    data = build_report_data(review=True)
    md, html = render_markdown(data), render_html(data)
    assert "| Severity | Open | Introduced |" in md and "**Introduced:** 1 · **Fixed:** 1" in md
    assert "Resolved since" not in md and "Resolved since" not in html
    assert '<span class="l">introduced</span>' in html and '<span class="l">fixed</span>' in html
    assert "<dt>Settings</dt>" not in html
    assert "<dt>Settings</dt>" in render_html(build_report_data())


def test_backticks_in_remediation_become_code_and_regexes_keep_single_backslashes() -> None:
    base = build_report_data()
    first = replace(
        base.findings[0],
        remediation="Set `sandbox.enabled` to <true>",
        evidence=(replace(base.findings[0].evidence[0], operator="matches", expected=r"^\d+$"),),
    )
    data = replace(base, findings=(first, *base.findings[1:]))
    html = render_html(data)
    assert "<strong>Remediation:</strong> Set <code>sandbox.enabled</code> to &lt;true&gt;" in html
    assert "expected matches <code>&#34;^\\d+$&#34;</code>" in html
    md = render_markdown(data)
    assert "**Remediation:** Set <code>sandbox.enabled</code> to &lt;true&gt;" in md


@pytest.mark.parametrize(
    "render", [render_markdown, render_html, render_junit], ids=["md", "html", "junit"]
)
def test_a_whole_phrase_expectation_shows_no_stray_value(render: Renderer) -> None:
    data = build_report_data()
    target = next(f for f in data.findings if f.status == "fail" and f.evidence)
    evidence = replace(
        target.evidence[0], operator="a non-empty list", expected=None, shows_expected=False
    )
    changed = replace(target, evidence=(evidence, *target.evidence[1:]))
    findings = tuple(changed if f is target else f for f in data.findings)
    text = unescape(render(replace(data, findings=findings)))
    assert "expected a non-empty list" in text
    assert not re.search(r"expected a non-empty list\W*(<code>)?null", text)


def _drill_section(html: str, anchor: str) -> str:
    found = re.search(rf'<section class="control" id="{anchor}">.*?</section>', html, re.S)
    assert found is not None, anchor
    return found.group(0)


def test_drill_down_lists_every_result_with_its_evidence_and_links_both_ways() -> None:
    data = build_report_data()
    html = render_html(data)
    control_anchor = anchors("control", [c for f in data.findings for c in f.controls])
    mapped = [f for f in data.findings if f.controls]
    assert {f.status for f in mapped} >= {"pass", "fail", "not_applicable", "waived"}
    for f in mapped:
        for control in f.controls:
            ca = control_anchor[control]
            section = _drill_section(html, ca)
            link = f'<a href="#f-{f.fingerprint}" id="{ca}-{f.fingerprint}">'
            assert link in section, (f.rule_id, control)
            line = next(p for p in re.findall(r'<p class="ev">.*?</p>', section) if link in p)
            text = unescape(re.sub(r"<[^>]+>", "", line))
            if f.evidence:  # what was checked and what was found, before the result's name
                e = f.evidence[0]
                assert text.startswith(e.path[:40]), text
                found = "found absent" if not e.present else f"found {display_value(e.actual)[:40]}"
                assert found in text, (found, text)
            else:
                assert f.message[:40] in text
        row = re.search(rf'<tr id="f-{f.fingerprint}">.*?</tr>', html, re.S)
        assert row is not None  # the full evidence, once, linking back to the drill-down
        first = control_anchor[sort_controls(f.controls)[0]]
        assert f'href="#{first}-{f.fingerprint}"' in row.group(0)
        assert html.count(f'<tr id="f-{f.fingerprint}">') == 1


def test_drill_down_puts_results_with_the_same_evidence_on_one_line() -> None:
    data = build_large(150)  # three failing results per rule, all with the same evidence
    html = render_html(data)
    control = sort_controls(data.findings[0].controls)[0]
    section = _drill_section(html, anchors("control", [control])[control])
    lines = re.findall(r'<p class="ev">.*?</p>', section)
    assert len(lines) == 50  # one line per rule
    assert all(line.count('<a href="#f-') == 3 and line.count("found ") == 1 for line in lines)


def test_drill_down_shares_a_line_only_between_results_that_found_the_same_value() -> None:
    """Values are shortened in the drill-down; two values alike only in their shown part are
    still two lines (one "found" each), not one line claiming they found the same thing."""
    data = build_large(150)
    rule = data.findings[0].rule_id
    same = [f for f in data.findings if f.rule_id == rule and f.evidence]
    assert len(same) == 3
    long = "x" * 100
    values = {same[0].fingerprint: long + "A", same[1].fingerprint: long + "B"}
    findings = tuple(
        replace(f, evidence=(replace(f.evidence[0], actual=values[f.fingerprint]),))
        if f.fingerprint in values
        else f
        for f in data.findings
    )
    html = render_html(replace(data, findings=findings))
    control = sort_controls(same[0].controls)[0]
    section = _drill_section(html, anchors("control", [control])[control])
    line = next(
        p for p in re.findall(r'<p class="ev">.*?</p>', section) if same[0].fingerprint in p
    )
    assert line.count("found ") == 3  # xxx…A, xxx…B and the third result's own value


@pytest.mark.parametrize(
    "values", [(True, 1, 1.0), (0, False, -0.0), ("1", 1, None)], ids=["one", "zero", "text"]
)
def test_each_result_row_shows_the_value_it_found(values: tuple[Any, Any, Any]) -> None:
    """Results of one rule whose found values are equal in Python (`true`, `1`, `1.0`) still
    show their own value in their row: the report writes each row's evidence, never another's."""
    data = build_large(150)
    rule = data.findings[0].rule_id
    same = [f for f in data.findings if f.rule_id == rule and f.evidence]
    assert len(same) == 3
    found = dict(zip((f.fingerprint for f in same), values, strict=True))
    findings = tuple(
        replace(f, evidence=(replace(f.evidence[0], actual=found[f.fingerprint], present=True),))
        if f.fingerprint in found
        else f
        for f in data.findings
    )
    html = render_html(replace(data, findings=findings))
    for fingerprint, value in found.items():
        row = re.search(rf'<tr id="f-{fingerprint}">.*?</tr>', html, re.S)
        assert row is not None
        shown = re.findall(
            r'<ul class="evidence">\n<li><code>[^<]*</code>: <code>([^<]*)</code>', row.group(0)
        )
        assert [unescape(v) for v in shown] == [display_value(value)], (value, shown)


def test_every_drill_down_row_names_its_rule() -> None:
    """A rule with several status rows, or rows cut off by a page break in the PDF, still says
    which rule each row is about (a screen reader reads the row alone)."""
    html = render_html(build_report_data())
    rows = re.findall(r'<table class="drill">.*?</table>', html, re.S)
    cells = [
        m.group(1)
        for table in rows
        for m in re.finditer(r"<tr><td>(.*?)</td>", table.split("<tbody>", 1)[1], re.S)
    ]
    assert len(cells) > 5
    assert all(re.search(r"<code[^>]*>[^<]+</code>", cell) for cell in cells), [
        c for c in cells if "<code" not in c
    ][:3]


@pytest.mark.parametrize("seed", range(20))
def test_sarif_cap_keeps_the_worst_by_severity_then_status_in_report_order(seed: int) -> None:
    """The cap keeps the `max_results` worst findings, ranked by severity, then failures
    before unknown, error and waived, then persisting before new (T53 #1: so a night's new
    findings never push out still-failing ones), then report order; those kept stay in report
    order."""
    rng = random.Random(seed)
    base = build_large(rng.randint(1, 60))
    findings = tuple(
        replace(
            f,
            severity=rng.choice(("critical", "high", "medium", "low", "info")),
            status=rng.choice(("fail", "unknown", "error", "waived")),
        )
        for f in base.findings
    )
    data = replace(base, findings=findings, sarif_include_waived=True)
    cap = rng.randint(0, len(findings) + 2)
    status_rank = ("fail", "unknown", "error", "waived")
    ranked = sorted(
        range(len(findings)),
        key=lambda i: (
            severity_rank(findings[i].severity),
            status_rank.index(findings[i].status),
            findings[i].lifecycle != "persisting",
            i,
        ),
    )
    expected = [findings[i] for i in sorted(ranked[:cap])]
    kept, left_out = listed_findings(data, max_results=cap)
    assert kept == expected
    assert left_out == max(0, len(findings) - cap)
