"""The condition language: paths, missing vs null, defaults, combinators and quantifiers."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from auditor.evaluate.conditions import Env, evaluate_condition
from auditor.evaluate.status import condition_status
from auditor.operators import BUILTIN_ENUMS, MISSING
from auditor.policy.compile import Compiler
from auditor.policy.conditions import Condition
from auditor.policy.pathexpr import PathSyntaxError, PathTypeError, compile_path
from auditor.policy.schema import schema_problems

ENV = Env(datetime(2026, 11, 1, tzinfo=UTC))
DOC: dict[str, Any] = {
    "sandbox": {"enabled": False, "network": {"allowedDomains": ["a.com", "*"]}, "proxy": None},
    "customModels": [
        {"id": "custom:x", "baseUrl": "http://x.internal", "apiKey": "[secret fp:1a2b len:40]"},
        {"id": "custom:y", "baseUrl": "https://y.example"},
    ],
    "hooks": [],
    "scripts": [{"command": "rm -rf /"}, {"cmd": "ls"}],
    "$score": 0.75,
    "odd key": 1,
    "count": "7",
}


def _compile(raw: Any, target: str = "settings") -> Condition:
    compiler = Compiler(target, BUILTIN_ENUMS)
    cond = compiler.compile(raw, ("assert",))
    assert not compiler.problems and cond is not None, compiler.problems
    return cond


@pytest.mark.parametrize(
    ("text", "value", "where"),
    [
        pytest.param("sandbox.enabled", False, "$.sandbox.enabled", id="dotted"),
        pytest.param("$.sandbox.enabled", False, "$.sandbox.enabled", id="dollar-prefix"),
        pytest.param("sandbox.proxy", None, "$.sandbox.proxy", id="null-is-a-value"),
        pytest.param("sandbox.proxy.url", MISSING, "$.sandbox.proxy.url", id="through-null"),
        pytest.param("sandbox.nope.deeper", MISSING, "$.sandbox.nope.deeper", id="missing"),
        pytest.param(
            "customModels[id=custom:y].baseUrl",
            "https://y.example",
            "$.customModels[?id=='custom:y'].baseUrl",
            id="key-selector",
        ),
        pytest.param(
            "customModels[*].id", ["custom:x", "custom:y"], "$.customModels[*].id", id="star"
        ),
        pytest.param("customModels[-1].id", "custom:y", "$.customModels[-1].id", id="index"),
        pytest.param("hooks[*].command", [], "$.hooks[*].command", id="star-empty"),
        pytest.param(
            "customModels[*].nope", MISSING, "$.customModels[*].nope", id="star-none-has-key"
        ),
        pytest.param("scripts[*].cmd", ["ls"], "$.scripts[*].cmd", id="star-some-have-key"),
        pytest.param("$score", 0.75, "$.$score", id="computed-field"),
        pytest.param("['odd key']", 1, "$['odd key']", id="quoted-key"),
    ],
)
def test_path_resolution(text: str, value: Any, where: str) -> None:
    assert compile_path(text).resolve(DOC) == (value, where)


@pytest.mark.parametrize("text", ["a..b", "a[0]b", "a[", ".a", "a b"])
def test_path_syntax_errors(text: str) -> None:
    with pytest.raises(PathSyntaxError, match="invalid path"):
        compile_path(text)


def test_walking_into_a_scalar_is_a_type_error() -> None:
    with pytest.raises(PathTypeError, match=r"\$\.sandbox\.enabled is boolean"):
        compile_path("sandbox.enabled.mode").resolve(DOC)


@pytest.mark.parametrize(
    ("raw", "status", "message"),
    [
        pytest.param(
            {"path": "sandbox.enabled", "equals": True},
            "fail",
            "sandbox.enabled is false; expected true",
            id="leaf-fail",
        ),
        pytest.param(
            {"path": "sandbox.missing", "equals": True},
            "missing",
            "sandbox.missing is absent",
            id="absent",
        ),
        pytest.param(
            {"path": "sandbox.missing", "equals": True, "default": True},
            "pass",
            "sandbox.missing is true",
            id="default",
        ),
        pytest.param(
            {"path": ["enableShield", "sandbox.enabled"], "equals": False},
            "pass",
            "sandbox.enabled is false",
            id="alternatives-first-present-wins",
        ),
        pytest.param(
            {"path": "sandbox.proxy", "exists": True}, "pass", "sandbox.proxy is null", id="exists"
        ),
        pytest.param(
            {"path": "count", "gte": 5},
            "error",
            'count is string "7"; `gte` needs a number',
            id="type-mismatch",
        ),
        pytest.param(
            {"path": "sandbox.enabled.mode", "equals": 1},
            "error",
            "$.sandbox.enabled is boolean, so it has no key `mode`",
            id="walk-into-scalar",
        ),
        pytest.param(
            {"all": [{"path": "$score", "gte": 0.5}, {"path": "count", "equals": "7"}]},
            "pass",
            "$score is 0.75 (+1 more checks)",
            id="all-pass",
        ),
        pytest.param(
            {
                "any": [
                    {"path": "sandbox.enabled", "equals": True},
                    {"path": "nope", "exists": True},
                ]
            },
            "fail",
            "sandbox.enabled is false; expected true; or nope is absent; expected to be present",
            id="any-fail",
        ),
        pytest.param(
            {"all": [{"path": "nope", "equals": 1}, {"path": "count", "lt": 1}]},
            "error",
            'count is string "7"; `lt` needs a number',
            id="error-never-hidden",
        ),
        pytest.param(
            {"not": {"path": "sandbox.enabled", "equals": True}},
            "pass",
            "sandbox.enabled is false",
            id="not",
        ),
        pytest.param(
            {"each": "customModels", "assert": {"path": "baseUrl", "starts_with": "https://"}},
            "fail",
            "customModels[?id=='custom:x'].baseUrl is \"http://x.internal\"; "
            'expected to start with "https://"',
            id="each-fail-names-element",
        ),
        pytest.param(
            {"some": "customModels", "assert": {"path": "baseUrl", "starts_with": "https://"}},
            "pass",
            "customModels[?id=='custom:y'].baseUrl is \"https://y.example\"",
            id="some",
        ),
        pytest.param(
            {"none": "sandbox.network.allowedDomains", "assert": {"equals": "*"}},
            "fail",
            'sandbox.network.allowedDomains[1] is "*"; expected not to be "*"',
            id="none-over-scalars",
        ),
        pytest.param(
            {"each": "hooks", "assert": {"path": "command", "exists": True}},
            "pass",
            "hooks is empty",
            id="each-empty",
        ),
        pytest.param(
            {"some": "hooks", "assert": {"path": "command", "exists": True}},
            "fail",
            "hooks has no entry where command is present (the list is empty)",
            id="some-empty",
        ),
        pytest.param(
            {"each": "sandbox", "assert": {"exists": True}},
            "error",
            "sandbox is object; `each` needs an array",
            id="each-not-array",
        ),
        pytest.param(
            {"each": "['odd key']", "assert": {"exists": True}},
            "error",
            "$['odd key'] is integer; `each` needs an array",
            id="each-on-quoted-key-not-array",
        ),
        pytest.param(
            {"path": "customModels[*].baseUrl", "contains": "https://y.example"},
            "pass",
            'customModels[*].baseUrl is ["http://x.internal","https://y.example"]',
            id="projection",
        ),
    ],
)
def test_condition_outcomes(raw: Any, status: str, message: str) -> None:
    outcome = evaluate_condition(_compile(raw), DOC, "$", ENV)
    assert (outcome.status, outcome.message) == (status, message)
    assert condition_status(_compile(raw), DOC, ENV) == status  # the status-only evaluator


@pytest.mark.parametrize(
    ("raw", "status"),
    [
        ({"path": "sandbox.missing", "exists": True, "equals": True}, "fail"),
        ({"path": "sandbox.missing", "equals": True, "exists": True}, "fail"),
        ({"path": "sandbox.missing", "exists": False, "equals": True}, "missing"),
        ({"not": {"path": "sandbox.missing", "exists": True, "equals": True}}, "pass"),
        ({"path": "sandbox.enabled", "exists": True, "equals": False}, "pass"),
    ],
)
def test_exists_true_beside_other_operators_fails_on_an_absent_key(raw: Any, status: str) -> None:
    """`exists: true` fails on an absent key with other operators on the leaf too ("a leaf
    with several operators passes only if all hold"): they made it `missing`, so the rule's
    `on_missing` decided, a pass with `on_missing: pass`."""
    outcome = evaluate_condition(_compile(raw), DOC, "$", ENV)
    assert outcome.status == status
    if status == "fail" and "not" not in raw:
        assert outcome.message == "sandbox.missing is absent; expected to be present"
    assert condition_status(_compile(raw), DOC, ENV) == status


@pytest.mark.parametrize("ts", [1e20, -1e20, float("nan")], ids=["huge", "negative", "nan"])
def test_timestamp_beyond_the_calendar_is_an_error_naming_the_path(ts: float) -> None:
    outcome = evaluate_condition(_compile({"path": "ts", "within_days": 30}), {"ts": ts}, "$", ENV)
    assert outcome.status == "error" and outcome.message.startswith("ts ")


def test_projecting_a_key_no_entry_has_is_missing_not_a_pass() -> None:
    doc = {"hooks": [{"command": "rm -rf /"}]}
    cond = _compile({"path": "hooks[*].cmd", "excludes": "rm -rf /"})
    outcome = evaluate_condition(cond, doc, "$", ENV)
    assert (outcome.status, outcome.message) == ("missing", "hooks[*].cmd is absent")


def test_evidence_carries_path_value_and_expectation() -> None:
    outcome = evaluate_condition(
        _compile({"path": "sandbox.enabled", "equals": True}), DOC, "$", ENV
    )
    (ev,) = outcome.evidence
    assert (ev.path, ev.actual, ev.expected, ev.operator, ev.present) == (
        "$.sandbox.enabled", False, True, "to be", True,
    )  # fmt: skip


def test_long_values_are_shortened_in_messages() -> None:
    doc = {"big": {"k" + str(i): "v" * 50 for i in range(50)}}
    outcome = evaluate_condition(_compile({"path": "big", "equals": {}}), doc, "$", ENV)
    assert outcome.status == "fail" and len(outcome.message) < 120 and "…" in outcome.message


def _rule_doc(raw: Any) -> dict[str, Any]:
    rule = {"id": "A", "title": "t", "severity": "low", "target": "settings", "assert": raw}
    return {"rules": [rule]}


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param({"path": "level", "at_most": "medium", "enum": "autonomy"}, id="shorthand"),
        pytest.param(
            {"path": "level", "at_most": {"enum": "autonomy", "value": "medium"}}, id="long"
        ),
    ],
)
@pytest.mark.parametrize(("level", "status"), [("high", "fail"), ("medium", "pass")])
def test_both_ordered_enum_forms_pass_schema_and_compiler(
    raw: Any, level: str, status: str
) -> None:
    assert list(schema_problems(_rule_doc(raw))) == []
    assert evaluate_condition(_compile(raw), {"level": level}, "$", ENV).status == status


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param(
            {"path": "level", "at_most": True, "enum": "autonomy"}, id="shorthand-no-level"
        ),
        pytest.param({"path": "level", "at_least": {"enum": "autonomy"}}, id="long-no-level"),
    ],
)
def test_ordered_enum_without_a_level_is_refused_by_schema_and_compiler(raw: Any) -> None:
    assert list(schema_problems(_rule_doc(raw))) != []
    compiler = Compiler("settings", BUILTIN_ENUMS)
    assert compiler.compile(raw, ("assert",)) is None
    assert any("needs a level of autonomy" in msg for _, msg in compiler.problems)


@pytest.mark.parametrize(
    ("before", "after", "status"),
    [
        pytest.param({"lvl": "low"}, {"lvl": "high"}, "fail", id="raised"),
        pytest.param({"lvl": "high"}, {"lvl": "low"}, "pass", id="lowered"),
        pytest.param({}, {"lvl": "high"}, "pass", id="added-is-not-increased"),
    ],
)
def test_change_leaf_reads_both_sides(before: Any, after: Any, status: str) -> None:
    cond = _compile({"not": {"path": "lvl", "increased": {"enum": "autonomy"}}}, "change")
    env = Env(ENV.now, (before, after))
    assert evaluate_condition(cond, {}, "$", env).status == status


@pytest.mark.parametrize(
    ("raw", "target", "problem"),
    [
        pytest.param({"path": "a"}, "settings", "needs an operator", id="no-operator"),
        pytest.param({"path": "a", "changed": True}, "settings", "applies only to", id="change"),
        pytest.param(
            {"path": "a", "changed": True, "equals": 1}, "change", "cannot share", id="mixed"
        ),
        pytest.param({"path": "a", "equals": 1, "enum": "autonomy"}, "settings", "`enum`", id="en"),
        pytest.param({"all": []}, "settings", "non-empty list", id="empty-all"),
        pytest.param({"each": "a"}, "settings", "needs an `assert`", id="each-no-assert"),
        pytest.param({"path": "a", "equal": 1}, "settings", "did you mean `equals`", id="typo"),
    ],
)
def test_compile_problems(raw: Any, target: str, problem: str) -> None:
    compiler = Compiler(target, BUILTIN_ENUMS)
    assert compiler.compile(raw, ("assert",)) is None
    assert any(problem in msg for _, msg in compiler.problems), compiler.problems
