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


# -- 2. a time after now ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param({"path": "t", "within_days": 30}, id="within_days"),
        pytest.param({"not": {"path": "t", "within_days": 30}}, id="not-within_days"),
        pytest.param({"path": "t", "older_than_days": 30}, id="older_than_days"),
        pytest.param({"not": {"path": "t", "older_than_days": 30}}, id="not-older_than_days"),
    ],
)
@pytest.mark.parametrize("when", ["2099-01-01T00:00:00Z", 4102444800000])
def test_a_time_after_now_is_an_error_naming_it(raw: Any, when: Any) -> None:
    status, message = _both(raw, {"t": when})
    assert status == "error"
    assert "days after now (2026-11-01T00:00:00Z; the clock-skew allowance is 1 day)" in message
    assert ("2099-01-01T00:00:00Z" if isinstance(when, str) else "2100-01-01T00:00:00Z") in message


def test_the_last_time_there_is_is_named_as_after_now() -> None:
    """`9999-12-31T23:59:59-14:00` is past the last UTC time Python has: the message naming
    it overflowed, and the rule said `within_days failed: date value out of range`."""
    status, message = _both({"path": "t", "within_days": 30}, {"t": "9999-12-31T23:59:59-14:00"})
    assert status == "error"
    assert "9999-12-31T23:59:59-14:00 is " in message and "days after now" in message


def test_a_time_within_the_clock_skew_allowance_is_fresh() -> None:
    assert _both({"path": "t", "within_days": 30}, {"t": "2026-11-01T20:00:00Z"})[0] == "pass"
    assert _both({"path": "t", "within_days": 30}, {"t": "2026-11-02T01:00:00Z"})[0] == "error"


READINESS = """rules:
  - {id: FRESH, title: t, severity: medium, target: readiness, remediation: x,
     assert: {path: $age_days, lte: 30}}
  - {id: CLEAN, title: t, severity: low, target: readiness, remediation: x,
     assert: {path: hasLocalChanges, equals: false}}
"""


def _report(rid: str, created: int) -> str:
    return (
        f"{{reportId: {rid}, createdAt: {created}, repoUrl: https://github.com/acme/api,"
        " hasLocalChanges: false, apps: {}, report: {}}"
    )


def test_a_report_dated_after_now_is_not_judged_fresh(tmp_path: Path) -> None:
    tests = f"""tests:
  - name: dated 2100
    now: "2026-11-01T00:00:00Z"
    reports: [{_report("r1", 4102444800000)}]
    expect: {{FRESH: pass, CLEAN: pass}}
  - name: dated 2100, and a real one of today
    now: "2026-11-01T00:00:00Z"
    reports: [{_report("r1", 4102444800000)}, {_report("r2", 1793491200000)}]
    expect: {{FRESH: pass, CLEAN: pass}}
  - name: half a day ahead
    now: "2026-11-01T00:00:00Z"
    reports: [{_report("r3", 1793534400000)}]
    expect: {{FRESH: pass, CLEAN: pass}}
"""
    code, out = run_policy(tmp_path, READINESS, tests)
    lines = out.splitlines()
    assert code == 1
    (line,) = [ln for ln in lines if ": dated 2100: " in ln]
    for rule in ("FRESH", "CLEAN"):
        assert (
            f"{rule}: expected pass, got error (report r1: createdAt 2100-01-01T00:00:00Z" in line
        ), out
    assert "(its repository has no report dated before it)" in line
    # A real report beside it is the one judged: the date no clock has yet hides nothing (it
    # made every readiness rule of the repository an error, night after night).
    for case in ("dated 2100, and a real one of today", "half a day ahead"):
        assert [ln for ln in lines if ln.startswith("PASS") and ln.endswith(f": {case}")], out


# -- 4. a change operator's type error names the side at fault ------------------------------


@pytest.mark.parametrize(
    ("arg", "before", "after", "message"),
    [
        pytest.param(
            True, None, 5, "x was null before the change (now 5); `increased` needs a number",
            id="number-before",
        ),
        pytest.param(
            True, 5, "7", 'x is string "7"; `increased` needs a number', id="number-after",
        ),
        pytest.param(
            {"enum": "autonomy"}, "ultra", "low",
            'x was "ultra" before the change (now "low"): not a level of autonomy',
            id="level-before",
        ),
        pytest.param(
            {"enum": "autonomy"}, "low", "ultra", 'x is "ultra": not a level of autonomy',
            id="level-after",
        ),
    ],
)  # fmt: skip
@pytest.mark.parametrize("op", ["increased", "decreased"])
def test_a_change_type_error_names_the_side_at_fault(
    op: str, arg: Any, before: Any, after: Any, message: str
) -> None:
    compiler = Compiler("change", BUILTIN_ENUMS)
    cond = compiler.compile({"path": "x", op: arg}, ("assert",))
    assert cond is not None and not compiler.problems
    sides = ({"x": before}, {"x": after})
    env = Env(NOW, sides, {"before": sides[0], "after": sides[1]})
    outcome = evaluate_condition(cond, None, "$", env)
    assert outcome.status == "error"
    assert outcome.message.startswith(message.replace("increased", op)), outcome.message
    assert outcome.evidence[0].actual == (before if "before the change" in message else after)


def test_a_hidden_number_before_the_change_is_named_as_the_side_at_fault() -> None:
    from auditor.operators import REGISTRY, HiddenValueError, fingerprinting

    marker = "[secret fp:0123456789abcdef len:11]"
    with fingerprinting(None), pytest.raises(HiddenValueError) as caught:
        REGISTRY["increased"].fn(marker, 5, None)
    assert (caught.value.side, caught.value.actual) == ("before", marker)


# -- 5. type mismatches and non-finite numbers ----------------------------------------------


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param({"path": "s", "contains": {"k": 1}}, id="contains-object"),
        pytest.param({"not": {"path": "s", "contains": {"k": 1}}}, id="not-contains"),
        pytest.param({"path": "s", "excludes": {"k": 1}}, id="excludes-object"),
        pytest.param({"path": "s", "excludes": ["z", 5]}, id="excludes-number"),
        pytest.param({"path": "h", "contains": {"k": 1}}, id="contains-on-redacted-text"),
        pytest.param({"path": "h", "excludes": [5]}, id="excludes-on-redacted-text"),
        pytest.param({"not": {"path": "n", "lte": 5}}, id="not-lte-nan"),
    ],
)
def test_a_type_mismatch_is_an_error_not_a_false(raw: Any) -> None:
    doc = {"s": "abc", "h": "x [secret fp:0123456789abcdef len:11] y", "n": float("nan")}
    status, message = _both(raw, doc)
    assert status == "error", message


def test_policy_test_shows_infinite_and_nan_values_as_they_are(tmp_path: Path) -> None:
    policy = """rules:
  - {id: N-1, title: t, severity: low, target: settings, remediation: x,
     assert: {path: a, lte: 5}}
"""
    tests = """tests:
  - {name: inf, settings: {a: .inf}, expect: {N-1: pass}}
  - {name: minus inf, settings: {a: [-.inf]}, expect: {N-1: pass}}
  - {name: nan, settings: {a: .nan}, expect: {N-1: fail}}
"""
    code, out = run_policy(tmp_path, policy, tests)
    assert code == 1
    assert "inf: N-1: expected pass, got fail (a is Infinity; expected to be at most 5)" in out
    assert "minus inf: N-1: expected pass, got error (a is array [-Infinity];" in out
    assert "nan: N-1: expected fail, got error (a is NaN: NaN is not a number" in out
