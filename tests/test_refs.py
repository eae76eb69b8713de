"""`{ref: <path>}` arguments: one settings path compared with another, checked at load and run."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from auditor.common.jsonutil import content_hash
from auditor.evaluate.conditions import Env
from auditor.evaluate.engine import evaluate
from auditor.evaluate.model import EvaluationInputs
from auditor.evaluate.rule import run_rule
from auditor.models import Revision, User
from auditor.operators import BUILTIN_ENUMS
from auditor.policy import load_policies
from auditor.policy.compile import Compiler
from auditor.policy.conditions import Condition, root_paths
from auditor.policy.model import Rule
from auditor.policy.schema import schema_problems

NOW = datetime(2026, 11, 1, tzinfo=UTC)
ENV = Env(NOW)
ALLOWED = {"allowedBaseUrls": ["https://llm.corp.example/", "https://api.anthropic.com/"]}
GOOD = {
    "modelPolicy": ALLOWED,
    "customModels": [{"id": "custom:a", "baseUrl": "https://llm.corp.example/v1"}],
    "limits": {"max": 5, "used": 3},
    "teams": ["a", "b"],
}
ROGUE = {**GOOD, "customModels": [{"id": "custom:b", "baseUrl": "http://evil.example/v1"}]}
BASE_URLS = {
    "each": "customModels",
    "assert": {"path": "baseUrl", "starts_with_any": {"ref": "modelPolicy.allowedBaseUrls"}},
}


def _compile(raw: Any, target: str = "settings") -> Condition:
    compiler = Compiler(target, BUILTIN_ENUMS)
    cond = compiler.compile(raw, ("assert",))
    assert not compiler.problems and cond is not None, compiler.problems
    return cond


def _rule(raw: Any, target: str = "settings") -> Rule:
    return Rule("R-1", "t", "high", target, _compile(raw, target))


@pytest.mark.parametrize(
    ("raw", "doc", "status", "message"),
    [
        pytest.param(
            BASE_URLS, GOOD, "pass", "customModels[?id=='custom:a'].baseUrl is "
            '"https://llm.corp.example/v1"', id="starts-with-any-pass",
        ),
        pytest.param(
            BASE_URLS, ROGUE, "fail", "customModels[?id=='custom:b'].baseUrl is "
            '"http://evil.example/v1"; expected to start with one of modelPolicy.allowedBaseUrls '
            '(["https://llm.corp.example/","https://api.anthropic.com/"])',
            id="starts-with-any-fail",
        ),
        pytest.param(
            BASE_URLS, {"customModels": GOOD["customModels"]}, "unknown",
            "ref modelPolicy.allowedBaseUrls (for customModels[?id=='custom:a'].baseUrl) is absent",
            id="absent-ref-is-unknown",
        ),
        pytest.param(
            BASE_URLS, {**GOOD, "modelPolicy": {"allowedBaseUrls": "https://x"}}, "error",
            'ref modelPolicy.allowedBaseUrls is string "https://x"; `starts_with_any` at '
            "customModels[?id=='custom:a'].baseUrl needs a list of strings", id="wrong-type",
        ),
        pytest.param(
            {"path": "limits.used", "lte": {"ref": "limits.max"}}, GOOD, "pass",
            "limits.used is 3", id="number-pass",
        ),
        pytest.param(
            {"path": "limits.max", "lt": {"ref": "limits.used"}}, GOOD, "fail",
            "limits.max is 5; expected to be less than limits.used (3)", id="number-fail",
        ),
        pytest.param(
            {"path": "limits.used", "equals": {"ref": "limits.max"}}, GOOD, "fail",
            "limits.used is 3; expected limits.max (5)", id="equals",
        ),
        pytest.param(
            {"path": "teams", "subset_of": {"ref": "teams"}}, GOOD, "pass", 'teams is ["a","b"]',
            id="subset-of",
        ),
        pytest.param(
            {"path": "teams[0]", "in": {"ref": "limits.max"}}, GOOD, "error",
            "ref limits.max is integer 5; `in` at teams[0] needs a list", id="in-wrong-type",
        ),
        pytest.param(
            {"path": "teams", "contains": {"ref": "customModels[0].id"}}, GOOD, "fail",
            'teams is ["a","b"]; expected to contain customModels[0].id ("custom:a")',
            id="contains",
        ),
        pytest.param(
            {"path": "teams", "contains": {"ref": "teams[0].x"}}, GOOD, "error",
            "ref teams[0] (for teams): $.teams[0] is string, so it has no key `x`",
            id="ref-through-a-scalar",
        ),
    ],
)  # fmt: skip
def test_ref_outcomes(raw: Any, doc: Any, status: str, message: str) -> None:
    verdict = run_rule(_rule(raw), doc, ENV)
    assert (verdict.status, verdict.message) == (status, message)


def test_absent_ref_follows_on_missing_and_names_the_ref() -> None:
    rule = Rule("R-1", "t", "high", "settings", _compile(BASE_URLS), on_missing="fail")
    verdict = run_rule(rule, {"customModels": GOOD["customModels"]}, ENV)
    (ev,) = verdict.evidence
    assert (verdict.status, ev.path, ev.expected, ev.present) == (
        "fail", "$.modelPolicy.allowedBaseUrls", {"ref": "modelPolicy.allowedBaseUrls"}, False,
    )  # fmt: skip


def test_evidence_holds_the_referenced_value() -> None:
    verdict = run_rule(_rule(BASE_URLS), ROGUE, ENV)
    (ev,) = verdict.evidence
    assert ev.expected == ALLOWED["allowedBaseUrls"]
    assert ev.note == "argument from ref modelPolicy.allowedBaseUrls"


def test_change_rules_resolve_refs_against_the_change_document() -> None:
    raw = {**BASE_URLS, "each": "after.customModels"}
    raw["assert"] = {
        "path": "baseUrl",
        "starts_with_any": {"ref": "after.modelPolicy.allowedBaseUrls"},
    }
    rule = _rule(raw, "change")
    assert run_rule(rule, {"before": GOOD, "after": ROGUE}, ENV).status == "fail"
    assert run_rule(rule, {"before": ROGUE, "after": GOOD}, ENV).status == "pass"


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        pytest.param(
            {"path": "a", "matches": {"ref": "b"}}, "`matches` does not accept {ref: …}", id="op"
        ),
        pytest.param({"path": "a", "in": {"ref": "b..c"}}, "invalid path 'b..c'", id="syntax"),
        pytest.param({"path": "a", "in": {"ref": 3}}, "a path must be a string", id="not-text"),
    ],
)
def test_ref_compile_problems(raw: Any, problem: str) -> None:
    compiler = Compiler("settings", BUILTIN_ENUMS)
    assert compiler.compile(raw, ("assert",)) is None
    assert any(problem in msg for _, msg in compiler.problems), compiler.problems


def test_ref_paths_are_watched_by_incremental_history() -> None:
    assert {p.text for p in root_paths(_compile(BASE_URLS))} == {
        "customModels", "modelPolicy.allowedBaseUrls",
    }  # fmt: skip


def _rev(number: int, settings: Any) -> Revision:
    when = NOW - timedelta(days=10 - number)
    return Revision(number, when, User("u", "a@example.com", "a"), settings, content_hash(settings))


def test_changing_only_the_referenced_list_changes_the_result(tmp_path: Path) -> None:
    (tmp_path / "p.yaml").write_text(
        "rules:\n  - id: R-1\n    title: t\n    severity: high\n    target: settings\n"
        "    assert: {each: customModels, assert: {path: baseUrl, starts_with_any: "
        "{ref: modelPolicy.allowedBaseUrls}}}\n"
    )
    narrowed = {**GOOD, "modelPolicy": {"allowedBaseUrls": ["https://api.anthropic.com/"]}}
    history = (_rev(1, GOOD), _rev(2, narrowed), _rev(3, {**narrowed, "x": 1}))
    inputs = EvaluationInputs(NOW, history[-1], history, all_revisions=True)
    got = evaluate(load_policies([tmp_path]), inputs)
    # each revision once, revision 3 (under test) too, as `settings@N`
    assert [r.status for r in got.results] == ["pass", "fail", "fail"]
    assert [r.subject.key for r in got.results] == ["settings@1", "settings@2", "settings@3"]


@pytest.mark.parametrize(
    ("arg", "message"),
    [
        pytest.param({"ref": "a.b"}, [], id="ref-accepted"),
        pytest.param(
            {"rf": "a.b"},
            ["missing required key `ref`", "unknown key `rf` (did you mean `ref`?)"],
            id="typo",
        ),
        pytest.param("a.b", ["expected a list, got string"], id="plain-value-message-kept"),
    ],
)
def test_schema_accepts_the_ref_form(arg: Any, message: list[str]) -> None:
    doc = {"rules": [{"id": "A", "title": "t", "assert": {"path": "x", "in": arg}}]}
    assert sorted(msg for _, msg, _ in schema_problems(doc)) == message
