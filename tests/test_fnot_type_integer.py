"""`type: integer` holds for a whole number however written (`30.0`), as in JSON Schema and as
the README says `1` and `1.0` are the same number (T93 #6); nothing else about `type` changes."""

from __future__ import annotations

import io
import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from auditor.cli import Context, main
from auditor.evaluate.conditions import Env
from auditor.evaluate.memo import MemoRule
from auditor.evaluate.rule import run_rule
from auditor.policy import load_policies
from tests.conftest import FIXED_NOW

POLICY = """\
defaults: {severity: high, target: settings, on_missing: unknown}
rules:
  - {id: T-INT, title: whole days, assert: {path: n, type: integer}}
  - {id: T-NUM, title: a number, assert: {path: n, type: number}}
  - {id: T-NOT, title: not whole, assert: {not: {path: n, type: integer}}}
  - {id: T-EACH, title: whole days each, assert: {each: xs, assert: {path: "@", type: integer}}}
"""

CASES: list[tuple[Any, str, str]] = [  # value, T-INT, T-NUM
    (30, "pass", "pass"),
    (30.0, "pass", "pass"),
    (-0.0, "pass", "pass"),
    (1e300, "pass", "pass"),  # a float that large has no fraction
    (30.5, "fail", "pass"),
    (True, "fail", "fail"),
    (False, "fail", "fail"),
    ("30", "fail", "fail"),
    (None, "fail", "fail"),
    ([30], "fail", "fail"),
]


def _review(tmp: Path, proposed: dict[str, Any]) -> tuple[int, dict[str, Any], str]:
    (tmp / "pol.yaml").write_text(POLICY)
    (tmp / "p.json").write_text(json.dumps(proposed))
    (tmp / "l.json").write_text(json.dumps({}))
    out = tmp / "out"
    argv = ["review", str(tmp / "p.json"), "--against", str(tmp / "l.json"), "--offline"]
    argv += ["--policy", str(tmp / "pol.yaml"), "--out", str(out), "-o", "md,json", "-q"]
    env = {"HOME": str(tmp), "PATH": os.environ.get("PATH", "")}
    ctx = Context(
        env=env, stdout=io.StringIO(), stderr=io.StringIO(), clock=lambda: FIXED_NOW, cwd=str(tmp)
    )
    code = main(argv, ctx)
    doc = json.loads((out / "findings.json").read_text())
    statuses = {f["rule_id"]: f["status"] for f in doc["findings"]}
    return code, statuses, (out / "report.md").read_text()


@pytest.mark.parametrize(("value", "integer", "number"), CASES)
def test_type_integer_holds_for_a_whole_number_however_written(
    tmp_path: Path, value: Any, integer: str, number: str
) -> None:
    _, statuses, _ = _review(tmp_path, {"n": value, "xs": [value]})
    assert statuses["T-INT"] == integer
    assert statuses["T-NUM"] == number
    assert statuses["T-NOT"] == ("fail" if integer == "pass" else "pass")
    assert statuses["T-EACH"] == integer


def test_a_whole_float_passes_where_it_failed(tmp_path: Path) -> None:
    code, statuses, md = _review(tmp_path, {"n": 30.0, "xs": [1, 2.0, 3]})
    assert code == 0
    assert statuses["T-INT"] == statuses["T-EACH"] == "pass"
    assert 'expected to be of type "integer"' not in md


def test_a_rule_reused_across_documents_tells_30_0_from_30_5(tmp_path: Path) -> None:
    """The history walk reuses a status for documents that look alike to a rule that reads a
    value only for its type: 30.0 and 30.5 (both floats) no longer look alike to it."""
    (tmp_path / "pol.yaml").write_text(POLICY)
    rules = {r.id: r for r in load_policies([tmp_path / "pol.yaml"]).rules}
    now = datetime(2026, 11, 1, tzinfo=UTC)
    for rule_id in ("T-INT", "T-NOT", "T-EACH"):
        memo = MemoRule(rules[rule_id])
        seen = []
        for value in (30.5, 30.0, 30, 30.5, 1e300, 2.5):
            doc = {"n": value, "xs": [1, value]}
            want = run_rule(memo.rule, json.loads(json.dumps(doc)), Env(now)).status
            assert memo.status(doc, Env(now)) == want, (rule_id, value)
            seen.append(want)
        assert len(set(seen)) == 2, (rule_id, seen)
