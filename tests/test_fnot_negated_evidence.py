"""The evidence of a rule under `not` / `none` states the expectation as the rule does.

A fail was worded negated already; an `error` or a pass under `not` said the un-negated
expectation (`model not blocked`: `$.m: 5 — expected to be one of ["gpt-5"]`), in every report
(T93 #3). Each test reviews a proposed file against a live one, offline, and reads the reports.
"""

from __future__ import annotations

import io
import json
import os
from pathlib import Path
from typing import Any

from auditor.cli import Context, main
from tests.conftest import FIXED_NOW

POLICY = """\
defaults: {severity: high, target: settings, on_missing: unknown}
rules:
  - {id: N-GT, title: n not above 5, assert: {not: {path: n, gt: 5}}}
  - {id: NOT-IN, title: model not blocked, assert: {not: {path: m, in: [gpt-5]}}}
  - {id: N-RM, title: n not raised, target: change, assert: {not: {path: n, increased: true}}}
  - {id: NONE-GT, title: no entry above 5, assert: {none: xs, assert: {path: a, gt: 5}}}
  - {id: NN-GT, title: n above 5, assert: {not: {not: {path: n, gt: 5}}}}
  - {id: NOT-ALL, title: not both, assert: {not: {all: [{path: n, gt: 5}, {path: k, equals: 1}]}}}
"""


def _review(tmp: Path, proposed: dict[str, Any], live: dict[str, Any]) -> tuple[int, Path]:
    (tmp / "pol.yaml").write_text(POLICY)
    (tmp / "p.json").write_text(json.dumps(proposed))
    (tmp / "l.json").write_text(json.dumps(live))
    out = tmp / "out"
    argv = ["review", str(tmp / "p.json"), "--against", str(tmp / "l.json"), "--offline"]
    argv += ["--policy", str(tmp / "pol.yaml")]
    argv += ["--out", str(out), "-o", "md,html,sarif,junit,json", "-q"]
    env = {"HOME": str(tmp), "PATH": os.environ.get("PATH", "")}
    ctx = Context(
        env=env, stdout=io.StringIO(), stderr=io.StringIO(), clock=lambda: FIXED_NOW, cwd=str(tmp)
    )
    return main(argv, ctx), out


def _evidence(out: Path) -> dict[str, list[tuple[str, str, Any]]]:
    """Each rule's results' evidence in findings.json: (status, operator, expected)."""
    doc = json.loads((out / "findings.json").read_text())
    found: dict[str, list[tuple[str, str, Any]]] = {}
    for result in doc["findings"]:
        for ev in result["evidence"]:
            row = (result["status"], ev["operator"], ev["expected"])
            found.setdefault(result["rule_id"], []).append(row)
    return found


def test_an_error_under_not_states_the_negated_expectation_in_every_report(
    tmp_path: Path,
) -> None:
    proposed = {"n": "x", "m": 5, "xs": [{"a": "9"}, {"a": 7}], "k": 1}
    code, out = _review(tmp_path, proposed, {"n": 3, "m": "gpt-4", "xs": [], "k": 1})
    assert code == 2  # every rule but one is an error: the review is incomplete
    ev = _evidence(out)
    assert ev["NOT-IN"] == [("error", "not to be one of", ["gpt-5"])]
    assert ev["N-GT"] == [("error", "to be at most", 5)]
    assert ev["N-RM"] == [("error", "not to increase", None)]
    assert ev["NONE-GT"] == [("error", "to be at most", 5)]
    assert ev["NN-GT"] == [("error", "to be greater than", 5)]  # `not` of a `not`: as written
    assert ev["NOT-ALL"] == [("error", "to be at most", 5)]
    md = (out / "report.md").read_text()
    assert '— expected not to be one of <code>\\["gpt-5"\\]</code>' in md
    assert "— expected not to increase (before: 3)" in md
    assert "expected to be one of" not in md and "expected to increase" not in md
    sarif = json.loads((out / "findings.sarif").read_text())
    texts = [r["message"]["text"] for r in sarif["runs"][0]["results"]]
    assert any('expected not to be one of ["gpt-5"]' in t for t in texts), texts
    assert any("expected not to increase (before: 3)" in t for t in texts), texts
    assert not any("expected to be one of" in t or "expected to increase" in t for t in texts)
    for name in ("junit.xml", "report.html"):
        text = (out / name).read_text()
        assert "expected not to increase (before: 3)" in text, name
        assert "expected to increase" not in text and "expected to be one of" not in text, name


def test_a_pass_under_not_states_the_negated_expectation(tmp_path: Path) -> None:
    proposed = {"n": 2, "m": "gpt-4", "xs": [{"a": 1}], "k": 1}
    code, out = _review(tmp_path, proposed, {"n": 3, "m": "gpt-4", "xs": [], "k": 1})
    ev = _evidence(out)
    assert code == 0
    assert ev["NOT-IN"] == [("pass", "not to be one of", ["gpt-5"])]
    assert ev["N-GT"] == [("pass", "to be at most", 5)]
    assert ev["N-RM"] == [("pass", "not to increase", None)]
    assert ev["NONE-GT"] == [("pass", "to be at most", 5)]
    assert ev["NOT-ALL"] == [("pass", "to be at most", 5)]


def test_a_fail_under_not_and_a_double_negation_are_worded_as_before(tmp_path: Path) -> None:
    proposed = {"n": 9, "m": "gpt-5", "xs": [{"a": 9}], "k": 1}
    code, out = _review(tmp_path, proposed, {"n": 3, "m": "gpt-4", "xs": [], "k": 1})
    ev = _evidence(out)
    assert code == 1
    assert ev["NOT-IN"] == [("fail", "not to be one of", ["gpt-5"])]
    assert ev["N-GT"] == [("fail", "to be at most", 5)]
    assert ev["N-RM"] == [("fail", "not to increase", None)]
    assert ev["NONE-GT"] == [("fail", "to be at most", 5)]
    assert ev["NN-GT"] == [("pass", "to be greater than", 5)]
