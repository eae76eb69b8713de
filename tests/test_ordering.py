"""Change steps in numeric order in every report, and change findings worded as the change."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from auditor.evaluate import EvaluationInputs, evaluate
from auditor.evaluate.changewords import describe_step_change
from auditor.findings import findings_from_results
from auditor.models import Revision, User
from auditor.policy import PolicySet, load_policies
from auditor.report import render_html, render_json, render_markdown
from auditor.report.build import RunHeader, build_report_data

CHANGES = Path(__file__).resolve().parents[1] / "policies" / "changes.yaml"
NOW = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def changes_pack() -> PolicySet:
    return load_policies([CHANGES])


def rev(number: int, settings: Any, email: str = "a@b.c") -> Revision:
    when = NOW - timedelta(days=500 - number)
    return Revision(number, when, User("u", email, "A"), settings, f"h{number}")


def only(policy: PolicySet, rule_id: str) -> PolicySet:
    return replace(policy, rules=tuple(r for r in policy.rules if r.id == rule_id))


def step_messages(policy: PolicySet, before: Revision, after: Revision) -> dict[str, str]:
    results = evaluate(policy, EvaluationInputs(NOW, steps=((before, after),))).results
    return {r.rule.id: r.message for r in results if r.status not in ("pass", "not_applicable")}


def test_change_steps_sort_numerically_in_every_report(changes_pack: PolicySet) -> None:
    """`change:8..9` comes before `change:77..78` (text order put it after)."""
    history = [rev(n, {"commandAllowlist": [f"cmd{n // 10}"]}) for n in range(1, 81)]
    steps = tuple(pairwise(history))
    policy = only(changes_pack, "CHG-CMD-003")
    results = evaluate(policy, EvaluationInputs(NOW, steps=steps, all_revisions=True)).results
    findings = findings_from_results(results)
    failing = [f.subject.key for f in findings if f.status == "fail"]
    assert failing == [f"change:{n - 1}..{n}" for n in range(10, 81, 10)]
    header = RunHeader("r", NOW, "run", "http://x", "low")
    data = build_report_data(header, policy.files, findings, ())
    for text in (render_markdown(data), render_html(data)):
        # As text, `change:19..20` sorts before `change:9..10`.
        assert text.index("in rev 10") < text.index("in rev 20") < text.index("in rev 80")
    keys = [f["subject"]["key"] for f in json.loads(render_json(data))["findings"]]
    open_keys = [k for k in keys if k in failing]
    assert open_keys == failing


# (rule, before, after, expected message) — one row per kind of change a rule can object to.
WORDING = [
    pytest.param(
        "CHG-CMD-003",
        {"commandAllowlist": ["ls"]},
        {"commandAllowlist": ["ls", "curl … | sh"]},
        "added `curl … | sh` to commandAllowlist by a@b.c in rev 412",
        id="item_added-command",
    ),
    pytest.param(
        "CHG-CMD-001",
        {"commandBlocklist": ["rm -rf /", "mkfs"]},
        {"commandBlocklist": ["mkfs"]},
        "removed `rm -rf /` from commandBlocklist by a@b.c in rev 412",
        id="item_removed-command",
    ),
    pytest.param(
        "CHG-MCP-002",
        {"mcpPolicy": {"enabled": True, "allowlist": ["github"]}},
        {"mcpPolicy": {"enabled": True, "allowlist": ["github", "random-server"]}},
        "added `random-server` to mcpPolicy.allowlist by a@b.c in rev 412",
        id="item_added-mcp-server",
    ),
    pytest.param(
        "CHG-MOD-001",
        {"customModels": []},
        {"customModels": [{"id": "custom:groq", "baseUrl": "https://groq.example/v1"}]},
        "added `custom:groq` to customModels by a@b.c in rev 412",
        id="item_added-model",
    ),
    pytest.param(
        "CHG-HOK-001",
        {"hooks": {}},
        {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "/opt/x.sh"}]}]}},
        "added hooks.Stop with command `/opt/x.sh` by a@b.c in rev 412",
        id="added-hook-command",
    ),
    pytest.param(
        "CHG-CMD-001",
        {"commandBlocklist": ["rm -rf /"]},
        {},
        'removed commandBlocklist (was ["rm -rf /"]) by a@b.c in rev 412',
        id="removed-list",
    ),
    pytest.param(
        "CHG-MOD-001",
        {"customModels": [{"id": "custom:a", "baseUrl": "https://a.example"}]},
        {"customModels": [{"id": "custom:a", "baseUrl": "https://b.example"}]},
        "changed customModels[?id=='custom:a'].baseUrl from `https://a.example` to "
        "`https://b.example` by a@b.c in rev 412",
        id="changed-model-endpoint",
    ),
    pytest.param(
        "CHG-CMD-003",
        {"commandAllowlist": []},
        {"commandAllowlist": "*"},
        "changed commandAllowlist from [] to `*` (a different type) by a@b.c in rev 412",
        id="type_changed",
    ),
]


@pytest.mark.parametrize(("rule", "before", "after", "expected"), WORDING)
def test_change_finding_says_what_changed_in_words(
    changes_pack: PolicySet, rule: str, before: Any, after: Any, expected: str
) -> None:
    messages = step_messages(only(changes_pack, rule), rev(411, before), rev(412, after))
    assert messages == {rule: expected}


def test_renamed_key_is_worded_as_a_rename() -> None:
    change = {"kind": "renamed", "path": "$.enableAgentShield", "old_path": "$.enableDroidShield"}
    assert describe_step_change(change) == "renamed enableDroidShield to enableAgentShield"


def test_evidence_notes_carry_the_words_and_several_changes_are_all_named(
    changes_pack: PolicySet,
) -> None:
    before, after = rev(1, {"commandAllowlist": []}), rev(2, {"commandAllowlist": ["a", "b"]})
    (result,) = evaluate(
        only(changes_pack, "CHG-CMD-003"), EvaluationInputs(NOW, steps=((before, after),))
    ).results
    assert result.message == (
        "added `a` to commandAllowlist; added `b` to commandAllowlist by a@b.c in rev 2"
    )
    assert {e.note for e in result.evidence} == {
        "added `a` to commandAllowlist",
        "added `b` to commandAllowlist",
    }


def test_an_unknown_author_is_unknown_not_a_violation(changes_pack: PolicySet) -> None:
    """An author rule cannot judge a change whose author nobody knows: `unknown`, not `fail`."""
    policy = only(changes_pack, "CHG-ATH-001")
    before, after = rev(1, {}), rev(2, {"x": 1}, email="")
    (result,) = evaluate(policy, EvaluationInputs(NOW, steps=((before, after),))).results
    assert (result.status, result.message) == ("unknown", "the author of this change is unknown")
