"""T53 #1: past code scanning's 5,000 results, findings.sarif keeps the same results from one
night to the next: within a severity, findings already tracked (`persisting`, the longest
tracked first) before `new` ones, so a night's new findings never push out still-failing ones
(code scanning closes every alert an upload leaves out, as fixed)."""

from __future__ import annotations

import itertools
import json
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]
import pytest
from conftest import FIXED_NOW, OWNER_TOKEN, emulator_env, run_cli
from report_fixture import build_large

from auditor.report import sarif
from auditor.report.sarif import FINGERPRINT_KEY, listed_findings, sarif_log

SCHEMA = json.loads((Path(__file__).parent / "schemas" / "sarif-schema-2.1.0.json").read_text())


def test_the_cap_keeps_persisting_findings_oldest_first_before_new_ones() -> None:
    base = build_large(12)
    # report order: new ones first (as a change history's newest steps are listed first)
    lifecycles = ["new"] * 6 + ["persisting"] * 6
    findings = tuple(
        replace(f, severity="low").with_marks(lifecycle=lc)  # type: ignore[arg-type]
        for f, lc in zip(base.findings, lifecycles, strict=True)
    )
    first_seen = {f.digest: f"2026110{9 - i}T000000Z" for i, f in enumerate(findings[6:])}
    data = replace(base, findings=findings, first_seen=first_seen)
    kept, left_out = listed_findings(data, max_results=4)
    assert left_out == 8
    # the 4 tracked longest (first seen 20261104..07: the last four), in report order
    assert kept == list(findings[8:])
    kept, _ = listed_findings(data, max_results=8)
    assert kept == [*findings[:2], *findings[6:]]  # every persisting one, then new in order
    log = sarif_log(data, max_results=4)
    (note, *_) = log["runs"][0]["invocations"][0]["toolExecutionNotifications"]
    assert "findings new in this run before those already tracked" in note["message"]["text"]
    jsonschema.Draft4Validator(SCHEMA).validate(log)


def _results(path: Path) -> dict[str, dict[str, Any]]:
    log = json.loads(path.read_text())
    jsonschema.Draft4Validator(SCHEMA).validate(log)
    return {r["partialFingerprints"][FINGERPRINT_KEY]: r for r in log["runs"][0]["results"]}


@pytest.mark.e2e
def test_a_nightly_over_the_cap_never_drops_a_result_that_still_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three nights over the cap (lowered to 60), 40 revisions apart: a result listed one night
    that the next still reports failing (`persisting`) is listed again, unless a new finding
    of a higher severity took its place (on main's code, new change findings of the same
    severity did, as they come first in report order)."""
    from auditor.emulator import start_emulator

    monkeypatch.setattr(sarif, "MAX_RESULTS", 60)
    with start_emulator(
        tokens={OWNER_TOKEN: "owner"}, now=FIXED_NOW, revisions=150, repos=4
    ) as emu:
        env = emulator_env(emu, tmp_path / "state.db")
        outs = []
        for night in range(3):
            out = tmp_path / f"n{night}"
            code, _, err = run_cli(
                ["run", "--out", str(out), "-q", "-o", "json,sarif"],
                env,
                tmp_path,
                now=FIXED_NOW + timedelta(days=night),
            )
            assert code in (0, 1), err
            outs.append(out)
            emu.add_revisions(40)
    for before, after in itertools.pairwise(outs):
        listed = _results(before / "findings.sarif")
        now = _results(after / "findings.sarif")
        doc = json.loads((after / "findings.json").read_text())
        assert sum(1 for f in doc["findings"] if f["status"] == "fail") > 60  # over the cap
        still = {
            f["fingerprint"]
            for f in doc["findings"]
            if f["status"] in ("fail", "unknown", "error") and f["lifecycle"] == "persisting"
        }
        dropped = [fp for fp in listed if fp in still and fp not in now]
        # only a worse finding may take a still-failing one's place (a new one of a higher
        # severity): never a new one of the same severity or lower
        rank = {s: i for i, s in enumerate(("critical", "high", "medium", "low", "info"))}
        worst_dropped = min(
            (rank[listed[fp]["properties"]["severity"]] for fp in dropped), default=9
        )
        taken = [
            r["ruleId"]
            for r in now.values()
            if r["properties"]["lifecycle"] == "new"
            and rank[r["properties"]["severity"]] >= worst_dropped
        ]
        assert not taken, f"{len(dropped)} still-failing results left out for new ones: {taken}"
        assert len(now) == 60
