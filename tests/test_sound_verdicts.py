"""Evaluations that cannot be done are `error`, never a silent pass: an ambiguous `[key=value]`
selector, a time after `now`, a pre-release version, a type mismatch under `not`."""

from __future__ import annotations

import argparse
import io
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from auditor.cli import Context
from auditor.cli.parsers import register_policy
from auditor.evaluate.conditions import Env, evaluate_condition
from auditor.evaluate.status import condition_status
from auditor.operators import BUILTIN_ENUMS
from auditor.policy.compile import Compiler
from auditor.policy.conditions import Condition

NOW = datetime(2026, 11, 1, tzinfo=UTC)
ENV = Env(NOW)
TWINS: dict[str, Any] = {
    "a": [{"id": "x", "b": 1}, {"id": "y", "b": 9}, {"id": "x", "b": 2}],
    "ok": [{"id": "x", "b": 1}],
    "want": 1,
}


def _compile(raw: Any, target: str = "settings") -> Condition:
    compiler = Compiler(target, BUILTIN_ENUMS)
    cond = compiler.compile(raw, ("assert",))
    assert not compiler.problems and cond is not None, compiler.problems
    return cond


def _both(raw: Any, doc: Any, env: Env = ENV) -> tuple[str, str]:
    """The worded outcome's status and message; the status-only path must agree."""
    cond = _compile(raw)
    env = Env(env.now, env.change, doc)
    outcome = evaluate_condition(cond, doc, "$", env)
    assert condition_status(cond, doc, env) == outcome.status
    return outcome.status, outcome.message


def run_policy(tmp_path: Path, policy: str, tests: str) -> tuple[int, str]:
    (tmp_path / "p.yaml").write_text(policy)
    (tmp_path / "p.tests.yaml").write_text(tests)
    parser = argparse.ArgumentParser(prog="auditor")
    register_policy(parser.add_subparsers())
    args = parser.parse_args(["policy", "test", str(tmp_path / "p.yaml")])
    out, err = io.StringIO(), io.StringIO()
    ctx = Context(env={}, stdout=out, stderr=err, clock=lambda: NOW, cwd=str(tmp_path))
    return args.handler(args, ctx), out.getvalue() + err.getvalue()


# -- 1. a selector that matches more than one entry -----------------------------------------


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param({"path": "a[id=x].b", "not_equals": 2}, id="leaf"),
        pytest.param({"path": "a[id=x].b", "equals": 1}, id="first-entry-is-good"),
        pytest.param({"not": {"path": "a[id=x].b", "equals": 2}}, id="under-not"),
        pytest.param({"path": "a[id=x]", "exists": False}, id="presence"),
        pytest.param({"path": "a[id=x].b", "default": 1, "equals": 1}, id="with-default"),
        pytest.param({"each": "a[id=x].tags", "assert": {"path": "@", "equals": 1}}, id="each"),
        pytest.param({"path": "want", "equals": {"ref": "a[id=x].b"}}, id="ref"),
        pytest.param(
            {"each": "ok", "assert": {"path": "b", "equals": {"ref": "a[id=x].b"}}},
            id="ref-inside-each",
        ),
    ],
)
def test_a_selector_matching_two_entries_is_an_error_naming_them(raw: Any) -> None:
    status, message = _both(raw, TWINS)
    assert status == "error"
    assert "$.a[?id=='x'] matches 2 entries ($.a[0], $.a[2])" in message
    assert "use `each:` to check every entry" in message


def test_a_selector_matching_one_entry_still_reads_it() -> None:
    assert _both({"path": "ok[id=x].b", "equals": 1}, TWINS) == ("pass", "ok[?id=='x'].b is 1")
    assert _both({"path": "a[id=y].b", "equals": 9}, TWINS)[0] == "pass"
    assert _both({"path": "a[id=z].b", "equals": 9}, TWINS)[0] == "missing"


def test_a_bad_duplicate_entry_is_not_passed_by_policy_test(tmp_path: Path) -> None:
    policy = """rules:
  - {id: SEL-1, title: t, severity: high, target: settings, remediation: x,
     assert: {path: "customModels[id=custom:x].baseUrl", starts_with: "https://"}}
  - {id: SEL-2, title: t, severity: high, target: settings, remediation: x,
     when: {path: "customModels[id=custom:x].enabled", equals: true},
     assert: {path: sandbox, exists: true}}
  - {id: CHG-1, title: t, severity: high, target: change, remediation: x,
     assert: {not: {path: "customModels[id=custom:x].baseUrl", to: "http://evil"}}}
"""
    twins = (
        '[{id: "custom:x", baseUrl: "https://a", enabled: false},'
        ' {id: "custom:x", baseUrl: "http://evil", enabled: true}]'
    )
    tests = f"""tests:
  - name: duplicate
    settings: {{customModels: {twins}}}
    expect: {{SEL-1: pass, SEL-2: not_applicable}}
  - name: duplicate added
    before: {{customModels: [{{id: "custom:x", baseUrl: "https://a"}}]}}
    after: {{customModels: {twins}}}
    author: a@b.c
    expect: {{CHG-1: pass}}
"""
    code, out = run_policy(tmp_path, policy, tests)
    assert code == 1
    assert "SEL-1: expected pass, got error" in out
    assert "SEL-2: expected not_applicable, got error" in out
    assert "CHG-1: expected pass, got error" in out
    assert "matches 2 entries" in out
