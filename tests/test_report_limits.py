"""The reports of real runs within what their consumers accept.

GitHub code scanning rejects a SARIF file over 10 MB gzip-compressed, over 20 runs, over
25,000 results or rules per run, over 1,000 locations per result or 20 tags per rule (and keeps
5,000 results, 10 tags); a PR comment holds 65,536 characters, a step summary 1 MiB; CI test
tabs read JUnit by its XSD. Checked on `auditor run --all-revisions` and `auditor review` (with
`GITHUB_STEP_SUMMARY`) against the emulator, and on the size cap's own logic.
"""

from __future__ import annotations

import gzip
import io
import json
import random
from collections import Counter
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]
import pytest
import xmlschema
from report_fixture import build_large

import auditor.report as report_module
from auditor.cli import Context, main
from auditor.emulator import start_emulator
from auditor.models import Evidence, severity_rank
from auditor.report import ReportData, sarif, write_reports
from auditor.report.sarif import MAX_RESULTS, MAX_TAGS, gzip_size, listed_findings
from tests.conftest import FIXED_NOW, OWNER_TOKEN

REPO = Path(__file__).resolve().parents[1]
SCHEMAS = Path(__file__).parent / "schemas"
PR_COMMENT = 65_536  # characters
STEP_SUMMARY = 1 << 20  # bytes


def check_sarif(path: Path) -> dict[str, Any]:
    """Assert what code scanning would reject (or cut) is not in the file; return its run."""
    raw = path.read_bytes()
    assert len(gzip.compress(raw, compresslevel=6)) <= sarif.UPLOAD_LIMIT  # as an upload packs it
    log = json.loads(raw)
    jsonschema.Draft4Validator(
        json.loads((SCHEMAS / "sarif-schema-2.1.0.json").read_text())
    ).validate(log)
    assert len(log["runs"]) == 1
    run = log["runs"][0]
    rules, results = run["tool"]["driver"]["rules"], run["results"]
    assert len(results) <= MAX_RESULTS and len(rules) <= 25_000
    assert all(len(r["properties"]["tags"]) <= MAX_TAGS for r in rules)
    assert all(len(r["locations"]) == 1 for r in results)
    prints = Counter(r["partialFingerprints"]["auditorFingerprint/v1"] for r in results)
    assert prints and max(prints.values()) == 1  # every result its own stable fingerprint
    assert all(rules[r["ruleIndex"]]["id"] == r["ruleId"] for r in results)
    return run  # type: ignore[no-any-return]


def check_junit(path: Path) -> None:
    xmlschema.XMLSchema(str(SCHEMAS / "junit-10.xsd")).validate(str(path))


def _cli(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[int, str]:
    err = io.StringIO()
    ctx = Context(env=env, stdout=io.StringIO(), stderr=err, clock=lambda: FIXED_NOW, cwd=str(cwd))
    return main(argv, ctx), err.getvalue()


@pytest.fixture
def env(tmp_path: Path) -> Iterator[dict[str, str]]:
    """The emulator with a history long enough for more open results than SARIF keeps."""
    with start_emulator(tokens={OWNER_TOKEN: "owner"}, now=FIXED_NOW, revisions=360) as emu:
        yield {
            "AUDITOR_BASE_URL": emu.base_url,
            "AUDITOR_APP_URL": emu.app_url,
            "AUDITOR_TOKEN": OWNER_TOKEN,
            "AUDITOR_STATE": str(tmp_path / "state.db"),
        }


@pytest.mark.e2e
def test_all_revisions_run_outputs_fit_their_consumers(env: dict[str, str], tmp_path: Path) -> None:
    out = tmp_path / "all"
    argv = ["run", "--all-revisions", "--soft-fail", "--out", str(out), "-o", "md,json,sarif,junit"]
    code, err = _cli(argv, env, tmp_path)
    assert code == 0, err
    run = check_sarif(out / "findings.sarif")
    check_junit(out / "junit.xml")
    md = (out / "report.md").read_text(encoding="utf-8")
    assert len(md) <= PR_COMMENT
    everything = json.loads((out / "findings.json").read_text(encoding="utf-8"))["findings"]
    open_ = [f for f in everything if f["status"] in ("fail", "error", "unknown")]
    # A history this long has more open results than code scanning keeps: the worst are listed
    # and the run says how many were left out.
    assert len(open_) > MAX_RESULTS
    assert len(run["results"]) == MAX_RESULTS
    assert run["properties"]["resultsLeftOut"] == len(open_) - MAX_RESULTS
    note = run["invocations"][0]["toolExecutionNotifications"][0]["message"]["text"]
    assert f"keeps at most {MAX_RESULTS:,} per run" in note
    listed = [severity_rank(r["properties"]["severity"]) for r in run["results"]]
    left = Counter(f["severity"] for f in open_) - Counter(
        r["properties"]["severity"] for r in run["results"]
    )
    assert min(severity_rank(s) for s in left) >= max(listed)  # nothing worse left out


@pytest.mark.e2e
def test_review_step_summary_fits(env: dict[str, str], tmp_path: Path) -> None:
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step output\n", encoding="utf-8")
    out = tmp_path / "review"
    argv = ["review", str(REPO / "examples" / "proposed-settings.yaml"), "--out", str(out)]
    argv += ["--author", "dev@example.com"]
    code, err = _cli(argv, {**env, "GITHUB_STEP_SUMMARY": str(summary)}, tmp_path)
    assert code == 1, err
    md = (out / "report.md").read_text(encoding="utf-8")
    assert summary.read_text(encoding="utf-8") == "earlier step output\n" + md
    assert len(md) <= PR_COMMENT and len(summary.read_bytes()) <= STEP_SUMMARY
    assert check_sarif(out / "findings.sarif")["results"]
    check_junit(out / "junit.xml")


def _incompressible(count: int) -> ReportData:
    """`count` failing findings whose evidence is random text (nothing for gzip to share)."""
    rng = random.Random(7)
    d = build_large(count)
    findings = tuple(
        replace(
            f,
            severity=("critical", "high", "medium", "low")[i % 4],
            evidence=tuple(
                Evidence(f"$.k{j}", rng.randbytes(120).hex(), None, "equals") for j in range(3)
            ),
        )
        for i, f in enumerate(d.findings)
    )
    return replace(d, findings=findings)


def test_sarif_over_the_upload_limit_keeps_the_worst_results_that_fit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = _incompressible(600)
    whole = write_reports(data, tmp_path / "whole", ["sarif"])["findings.sarif"]
    assert len(json.loads(whole.read_text())["runs"][0]["results"]) == 600
    limit = gzip_size(whole) // 3
    monkeypatch.setattr(sarif, "UPLOAD_LIMIT", limit)
    path = write_reports(data, tmp_path / "cut", ["sarif"])["findings.sarif"]
    assert gzip_size(path) <= limit
    # the same bytes as the renderer gives (what `auditor verify` compares a bundle's file with)
    assert path.read_bytes() == sarif.render_sarif(data).encode("utf-8")
    run = check_sarif(path)
    kept = len(run["results"])
    assert 100 < kept < 600 and run["properties"]["resultsLeftOut"] == 600 - kept
    note = run["invocations"][0]["toolExecutionNotifications"][0]["message"]["text"]
    assert f"lists {kept:,} of 600 results" in note and "gzip-compressed" in note
    # the worst: every critical and high result before any low one
    expected, _ = listed_findings(data, kept)
    assert [r["partialFingerprints"]["auditorFingerprint/v1"] for r in run["results"]] == [
        f.fingerprint for f in expected
    ]
    assert {r["properties"]["severity"] for r in run["results"]} >= {"critical", "high"}


@pytest.mark.parametrize(
    ("raw", "packed", "expected"),
    [
        (1_000, 1_000, [MAX_RESULTS]),  # within the limit uncompressed: never compressed
        (60_000, 40_000, [MAX_RESULTS]),  # over raw, within compressed: written once
        (120_000, 120_000, [MAX_RESULTS, 225]),  # 600 results, 2.4x over: 600 / 2.4 less 10%
    ],
    ids=["small", "compresses-within", "over"],
)
def test_write_fitted_writes_again_in_proportion_until_it_fits(
    monkeypatch: pytest.MonkeyPatch, raw: int, packed: int, expected: list[int]
) -> None:
    """The one loop behind findings.sarif (file and text): each write's raw size, then its gzip
    size only when the raw size could be over the limit, decide the next cap."""
    monkeypatch.setattr(sarif, "UPLOAD_LIMIT", 50_000)
    data = _incompressible(600)
    writes: list[int] = []
    compressed: list[int] = []

    def write(max_results: int) -> tuple[int, Any]:
        writes.append(max_results)
        share = min(max_results, 600) / 600

        def gzip_of() -> int:
            compressed.append(max_results)
            return int(packed * share)

        return int(raw * share), gzip_of

    sarif.write_fitted(write, data)
    assert writes == expected
    assert compressed == ([] if raw < 50_000 else [MAX_RESULTS])


def test_sarif_just_over_the_limit_is_written_again_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file 10% over the limit with fewer results than the 5,000 cap is cut in proportion to
    the results it lists, not to the cap: one more write, not one per 10% below 5,000."""
    data = _incompressible(600)
    whole = write_reports(data, tmp_path / "whole", ["sarif"])["findings.sarif"]
    limit = int(gzip_size(whole) / 1.1)
    monkeypatch.setattr(sarif, "UPLOAD_LIMIT", limit)
    writes: list[int] = []
    chunks = sarif.sarif_chunks

    def counted(d: ReportData, **kw: Any) -> Iterator[str]:
        writes.append(kw.get("max_results", MAX_RESULTS))
        return chunks(d, **kw)

    monkeypatch.setattr(report_module, "sarif_chunks", counted)
    path = write_reports(data, tmp_path / "cut", ["sarif"])["findings.sarif"]
    assert gzip_size(path) <= limit
    kept = len(check_sarif(path)["results"])
    assert len(writes) == 2 and writes[1] == kept
    assert 450 <= kept < 600  # about 600 / 1.1, less a 10% margin


def test_a_sarif_expired_waiver_sentence_cuts_its_values_as_the_rest_of_sarif() -> None:
    """An expired waiver's owner and ticket in a SARIF message are cut at `MESSAGE_VALUE`
    characters, as evidence values are (a 3,000-character ticket made a 3,600-character
    message)."""
    from datetime import UTC, datetime

    from report_fixture import build_report_data

    from auditor.models import Waiver
    from auditor.report.sarif import MESSAGE_VALUE

    data = build_report_data()
    failing = next(f for f in data.findings if f.status == "fail" and f.subject.kind == "settings")
    expires = datetime(2026, 10, 1, 23, 59, 59, tzinfo=UTC)
    waiver = Waiver(failing.rule_id, "settings", "r", "o" * 1_000, expires, "T" * 3_000)
    data = replace(data, waivers=replace(data.waivers, expired=(waiver,)))
    results = json.loads(sarif.render_sarif(data))["runs"][0]["results"]
    said = [r["message"]["text"] for r in results if "Waiver expired" in r["message"]["text"]]
    cut = MESSAGE_VALUE + 1
    assert said and all("o" * cut not in t and "T" * cut not in t for t in said)
    assert all("o" * 100 in t and "T" * 100 in t for t in said)  # cut, not dropped


def test_a_huge_author_is_cut_in_findings_json_as_in_every_report() -> None:
    # A hostile service's 1 MB email was cut in every report's attribution text but written
    # whole in findings.json's `since`, once per finding it attributes.
    data = build_large(40)
    huge = "a" * 1_000_000 + "@x.com"
    findings = tuple(
        replace(f, since=replace(f.since, author_email=huge, author_name="n" * 300))
        if f.since is not None
        else f
        for f in data.findings
    )
    out = json.loads(report_module.render_json(replace(data, findings=findings)))
    since = [f["since"] for f in out["findings"] if f["since"]]
    assert since
    for s in since:
        assert s["author_email"] == "a" * 254 + "… (999752 more characters)"
        assert s["author_name"] == "n" * 254 + "… (46 more characters)"
    assert len(json.dumps(out)) < 2_000_000
