"""findings.json, findings.sarif, junit.xml and findings.oscal.json are written as streams
(issue 13): a large report is never held whole, and the files are byte for byte what one dump
of the whole document gives, with clean data, with lone surrogates (the `json` fallback) and
with none."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson
import pytest

from auditor.common.escape import inert_bytes, json_inert
from auditor.report import (
    html,
    htmlrows,
    jsonout,
    junit,
    model,
    render_html,
    render_markdown,
    sarif,
    write_reports,
)
from auditor.report.build import RunHeader
from auditor.report.build import build_report_data as built
from auditor.report.html import context, environment, iter_html
from auditor.report.jsonout import inert_json, report_json
from auditor.report.model import InputDigest, ReportData
from auditor.report.oscal import oscal_chunks, oscal_document
from auditor.report.sarif import sarif_log
from tests.report_fixture import build_large, build_report_data


def iso(value: object) -> str:
    return value.isoformat() if isinstance(value, datetime) else str(value)


def whole_json(data: ReportData) -> str:
    """findings.json as one dump of the whole document (how it was written before)."""
    value = report_json(data)
    try:
        raw = orjson.dumps(value, option=orjson.OPT_INDENT_2, default=iso)
    except orjson.JSONEncodeError:
        return json.dumps(value, indent=2, ensure_ascii=True, default=iso) + "\n"
    return inert_bytes(raw) + "\n"


def whole_sarif(data: ReportData) -> str:
    value = sarif_log(data)
    try:
        text = orjson.dumps(value, option=orjson.OPT_INDENT_2).decode("utf-8")
    except orjson.JSONEncodeError:
        text = json.dumps(value, indent=2, ensure_ascii=True)
    return json_inert(text) + "\n"


def whole_oscal(data: ReportData) -> str:
    """findings.oscal.json as one dump of the whole document (how it was written before)."""
    value = oscal_document(data)
    try:
        return inert_bytes(orjson.dumps(value, option=orjson.OPT_INDENT_2)) + "\n"
    except orjson.JSONEncodeError:
        return json.dumps(value, indent=2, ensure_ascii=True) + "\n"


CASES = {
    "fixture": lambda: build_report_data(),
    "surrogates": lambda: build_report_data("\ud800\u2028\x7f"),
    "large": lambda: build_large(3000),
    "no-findings": lambda: replace(build_report_data(), findings=()),
    "many-revisions": lambda: replace(
        build_large(300),
        failing_by_revision=tuple((n, n % 7) for n in range(1, 3001)),
        inputs=InputDigest(
            revisions_evaluated=tuple((n, f"{n:064x}") for n in range(1, 2501)),
            reports_evaluated=(("r-1", "ab" * 32),),
            settings_revision=2500,
        ),
    ),
    "no-revisions": lambda: replace(
        build_report_data(), failing_by_revision=(), inputs=InputDigest()
    ),
    # revisions evaluated that are not a number and a hex digest, among batches that are
    "odd-revisions": lambda: replace(
        build_report_data(),
        inputs=InputDigest(
            revisions_evaluated=(
                *((n, f"{n:064x}") for n in range(1, 1500)),
                (1500, 'a"b'),
                (1501, "a\u202eb"),
                (1502, "\u00e9"),
                (True, "ab"),
                (2**70, "ab"),
                (-3, ""),
                (1503, "x" * 3000),
                (1.5, "ab"),  # … dumped ones …
                *((n, f"{n:064x}") for n in range(1600, 2700)),  # … and text again
            ),
        ),
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_streamed_files_equal_one_dump_of_the_whole_document(case: str, tmp_path: Path) -> None:
    data = CASES[case]()
    written = write_reports(data, tmp_path, ("json", "sarif", "junit", "oscal"))
    json_text = written["findings.json"].read_bytes().decode("utf-8", "surrogatepass")
    assert json_text == whole_json(data)
    assert json.loads(json_text)["findings"] or case == "no-findings"
    sarif_text = written["findings.sarif"].read_text(encoding="utf-8")
    assert sarif_text == whole_sarif(data)
    assert written["junit.xml"].read_text(encoding="utf-8").startswith("<?xml")
    oscal_text = written["findings.oscal.json"].read_text(encoding="utf-8")
    assert oscal_text == whole_oscal(data)


def test_oscal_is_streamed_a_batch_of_observations_at_a_time() -> None:
    """At --all-revisions the observations, and each control's links to them, are nearly all
    of findings.oscal.json (280 MB at 2,000 revisions): held whole, writing it took the run's
    peak memory from 324 MB to 2.4 GB. Only the back matter (a resource per subject) and the
    head are pieces larger than a batch of 256 observations."""
    data = build_large(3000)  # 3,000 results, each its own subject
    sizes = [len(chunk) for chunk in oscal_chunks(data)]  # UTF-8 bytes
    assert sum(sizes) == len(whole_oscal(data).encode("utf-8"))
    # a batch of 256 is 515 KB: each result here is attributed (description and props)
    assert len(sizes) > 20 and sorted(sizes)[-2] < 600_000, sorted(sizes)[-3:]


@pytest.mark.parametrize("case", sorted(CASES))
def test_streamed_html_equals_the_whole_page(case: str, tmp_path: Path) -> None:
    """report.html is written chunk by chunk from the template (the whole page, up to tens of
    MB with `--all-revisions`, is never joined in memory) and is the page `render_html` gives."""
    data = CASES[case]()
    written = write_reports(data, tmp_path, ("html",))
    page = written["report.html"].read_text(encoding="utf-8")
    assert page == render_html(data)
    assert page.rstrip().endswith("</html>")


@pytest.mark.parametrize("inert", [inert_bytes, inert_json])
def test_the_byte_check_for_invisible_characters_misses_none(
    inert: Callable[[bytes], str],
) -> None:
    """`inert_bytes` (and the report writers' faster `inert_json`) skip the text scan only when
    no character `json_inert` rewrites is in the bytes: every character that shares a UTF-8
    lead byte with one (U+0080-U+07FF, U+2000-U+20FF: the em dash among them), alone and
    after an em dash, gives what the scan gives."""
    for code in [*range(0x7F, 0x800), *range(0x2000, 0x2100), 0x2066, 0xFEFF]:
        if 0xD800 <= code <= 0xDFFF:
            continue
        for text in (f"a{chr(code)}b", f"a\u2014b\u00b7{chr(code)}"):
            raw = orjson.dumps({"message": text})
            assert inert(raw) == json_inert(raw.decode("utf-8")), hex(code)
    assert inert(orjson.dumps("x\u202ey")) == '"x\\u202ey"'
    assert inert(orjson.dumps("x\u2014y")) == '"x\u2014y"'


def test_html_row_caches_stay_bounded_over_a_long_page(monkeypatch: pytest.MonkeyPatch) -> None:
    """report.html's rows escape each distinct text once, but the caches that make that so keep
    at most `CACHE_LIMIT` entries: a page of 10,000s of rows (each with its own fingerprint,
    message and author) is streamed without keeping every row's text until the end."""
    monkeypatch.setattr(htmlrows, "CACHE_LIMIT", 64)
    data = build_large(3000)
    findings = tuple(
        replace(f, message=f"{f.message} ({n})", evidence=(replace(f.evidence[0], actual=n),))
        for n, f in enumerate(data.findings)
    )
    ctx = context(replace(data, findings=findings))
    for _ in environment().get_template("report.html.j2").generate(ctx):
        pass
    rows = ctx["rows"]
    caches = (rows.esc._cache, rows._subjects, rows._evidences, rows._same_evidence, rows._drills)
    sizes = [len(cache) for cache in caches]
    assert max(sizes) <= 64, sizes


def test_html_drill_down_rows_kept_for_other_controls_stay_bounded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A rule's drill-down rows are written once and kept for the other controls it maps to,
    up to `DRILL_CACHE_CHARS` characters: past that they are let go, and the page is the same."""
    data = build_large(3000)  # 50 rules of 60 results, each rule in several controls
    whole = render_html(data)
    monkeypatch.setattr(htmlrows, "DRILL_CACHE_CHARS", 20_000)
    ctx = context(data)
    assert "".join(environment().get_template("report.html.j2").generate(ctx)) == whole
    rows = ctx["rows"]
    assert 0 < rows._drill_chars <= 20_000 + max(len(text) for _, text in rows._drills.values())


def test_html_rows_are_the_same_when_the_caches_are_emptied(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Emptying a full cache changes nothing on the page (byte for byte)."""
    for data in (build_report_data("<b>'\"&\x01\u202e"), build_large(400)):
        whole = render_html(data)
        monkeypatch.setattr(htmlrows, "CACHE_LIMIT", 2)
        assert render_html(data) == whole
        monkeypatch.undo()


def test_html_is_streamed_a_rule_at_a_time_in_a_control_drill_down() -> None:
    """A control's drill-down lists every rule mapped to it (up to 400 results each): it is
    written a rule at a time, never as one piece (that held 8 MB at 300 rules x 200 results
    and doubled the peak memory of writing report.html)."""
    data = build_large(3000)  # 50 rules, 60 results each, every one in the same controls
    sizes = [len(chunk) for chunk in iter_html(data)]
    assert sum(sizes) == len(render_html(data))
    assert max(sizes) < 100_000, max(sizes)  # one rule's rows (a drill-down of all: 400,000+)


def test_reports_sort_the_findings_once_and_list_them_as_sorting_each_list_would(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """write_reports sorts a run's findings once for the HTML and Markdown reports (each
    sorted its lists on its own, three sorts of up to 100,000s of findings); the shown and
    passing lists are taken from that order, which is the order sorting each alone gives,
    whatever order the findings come in."""
    data = build_large(600)
    shuffled = replace(data, findings=tuple(reversed(data.findings)))
    calls = []
    sort = model.sort_findings

    def counted(findings: Any) -> Any:
        calls.append(1)
        return sort(findings)

    monkeypatch.setattr(model, "sort_findings", counted)
    written = write_reports(shuffled, tmp_path, ("html", "md"))
    assert len(calls) == 1
    monkeypatch.undo()
    assert written["report.html"].read_text(encoding="utf-8") == render_html(data)
    assert written["report.md"].read_text(encoding="utf-8") == render_markdown(data)


def test_a_runs_findings_sorted_when_its_data_was_built_are_not_sorted_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`build.build_report_data` puts the findings in report order, and the reports take that
    order as it is (the sort was a twentieth of writing a nightly's five files); a copy of the
    data given other findings (`dataclasses.replace`) has them sorted, as before."""
    fixture = build_large(600)
    header = RunHeader(fixture.run_id, fixture.generated_at, "run", fixture.api_address, "low")
    shuffled = tuple(reversed(fixture.findings))
    data = replace(
        built(header, fixture.policy_files, shuffled, ()),
        failing_by_revision=fixture.failing_by_revision,
    )
    expected = {
        name: render(data) for name, render in (("html", render_html), ("md", render_markdown))
    }
    calls = []
    sort = model.sort_findings
    monkeypatch.setattr(model, "sort_findings", lambda fs: calls.append(1) or sort(fs))
    written = write_reports(data, tmp_path / "built", ("html", "md"))
    assert calls == []
    copy = replace(data, findings=tuple(reversed(data.findings)))
    again = write_reports(copy, tmp_path / "copy", ("html", "md"))
    assert calls == [1]
    for name, path in (*written.items(), *again.items()):
        assert path.read_text(encoding="utf-8") == expected[path.suffix[1:]], name


def test_every_report_is_the_same_when_the_writers_caches_are_emptied(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The writers make what findings share (evidence words, attributions, drill-down rows,
    locations) once and keep it in bounded caches; emptying them at every second entry changes
    no byte of any report."""
    data = build_large(600)
    data = replace(
        data, findings=tuple(replace(f, message=f"{f.message} \u2014 <&>") for f in data.findings)
    )
    whole = write_reports(
        data, tmp_path / "whole", ["html", "md", "json", "sarif", "junit", "oscal"]
    )
    for module, name in (
        (junit, "CACHE_LIMIT"), (sarif, "CACHE_LIMIT"), (jsonout, "CACHE_LIMIT"),
        (model, "ATTRIBUTION_LIMIT"), (html, "KEYS_LIMIT"), (htmlrows, "CACHE_LIMIT"),
    ):  # fmt: skip
        monkeypatch.setattr(module, name, 2)
    monkeypatch.setattr(htmlrows, "DRILL_CACHE_CHARS", 1000)
    small = write_reports(
        data, tmp_path / "small", ["html", "md", "json", "sarif", "junit", "oscal"]
    )
    for name, path in whole.items():
        assert small[name].read_bytes() == path.read_bytes(), name
