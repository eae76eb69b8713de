"""Evaluation: statuses never collapsed, attribution over history, change/readiness/org targets."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

import auditor.evaluate.history as history_mod
import auditor.evaluate.memo as memo_mod
import auditor.evaluate.rule as rule_mod
from auditor.common.jsonutil import content_hash
from auditor.evaluate.conditions import Env
from auditor.evaluate.engine import evaluate
from auditor.evaluate.model import EvaluationInputs
from auditor.models import ReadinessReport, Revision, User
from auditor.policy import PolicySet, load_policies

NOW = datetime(2026, 11, 1, tzinfo=UTC)
SAMPLE = Path(__file__).parent / "policies" / "valid"


@pytest.fixture(scope="module")
def policy() -> PolicySet:
    return load_policies([SAMPLE])


def rev(number: int, settings: Any, who: str = "a@example.com") -> Revision:
    when = NOW - timedelta(days=100 - number)
    return Revision(number, when, User("u" + who, who, who.split("@")[0]), settings,
                    content_hash(settings))  # fmt: skip


def only(policy: PolicySet, *ids: str) -> PolicySet:
    return PolicySet(tuple(r for r in policy.rules if r.id in ids), policy.files, policy.enums)


GOOD = {"sandbox": {"enabled": True}, "maxAutonomyLevel": "low"}
BAD = {"sandbox": {"enabled": False}, "maxAutonomyLevel": "low"}


def test_failure_is_attributed_to_the_revision_that_broke_it(policy: PolicySet) -> None:
    history = (
        rev(1, BAD),
        rev(2, GOOD),
        rev(3, BAD, "mallory@example.com"),
        rev(4, {**BAD, "x": 1}),
    )
    result = evaluate(only(policy, "SBX-001"), EvaluationInputs(NOW, history[-1], history))
    (res,) = result.results
    assert (res.status, res.subject.key, res.message) == (
        "fail", "settings", "sandbox.enabled is false; expected true",
    )  # fmt: skip
    assert res.since is not None
    assert (res.since.revision, res.since.author_email) == (3, "mallory@example.com")
    assert result.failing_by_revision == ((1, 1), (2, 0), (3, 1), (4, 1))
    assert result.complete


def test_at_date_revision_sees_only_its_past(policy: PolicySet) -> None:
    history = (rev(1, GOOD), rev(2, BAD), rev(3, GOOD))
    result = evaluate(only(policy, "SBX-001"), EvaluationInputs(NOW, history[1], history))
    assert result.results[0].since is not None and result.results[0].since.revision == 2
    assert result.failing_by_revision == ((1, 0), (2, 1))


def test_proposed_settings_inherit_an_existing_failure(policy: PolicySet) -> None:
    history = (rev(1, GOOD), rev(2, BAD))
    proposed = rev(99, {**BAD, "note": "proposal"})
    (res,) = evaluate(only(policy, "SBX-001"), EvaluationInputs(NOW, proposed, history)).results
    assert res.since is not None and res.since.revision == 2
    fixed_history = (rev(1, GOOD),)
    (new,) = evaluate(
        only(policy, "SBX-001"), EvaluationInputs(NOW, proposed, fixed_history)
    ).results
    assert new.status == "fail" and new.since is None  # introduced by the proposal itself


def test_all_revisions_yields_a_result_per_revision(policy: PolicySet) -> None:
    history = (rev(1, GOOD), rev(2, BAD), rev(3, BAD))
    inputs = EvaluationInputs(NOW, history[-1], history, all_revisions=True)
    results = evaluate(only(policy, "SBX-001"), inputs).results
    assert [(r.subject.key, r.status) for r in results] == [
        ("settings@1", "pass"),
        ("settings@2", "fail"),
        ("settings@3", "fail"),
    ]  # the revision under test once, as `settings@3` (it was also, or only, `settings`)
    assert results[2].since is not None and results[2].since.revision == 2


def test_rules_are_re_evaluated_only_when_their_paths_change(
    policy: PolicySet, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[str] = []
    worded: list[str] = []
    real, real_status = rule_mod.run_rule, memo_mod.rule_status

    def counting(rule: Any, doc: Any, env: Any) -> Any:
        worded.append(rule.id)
        return real(rule, doc, env)

    def counting_status(rule: Any, doc: Any, env: Any, *memo: Any) -> Any:
        calls.append(rule.id)
        return real_status(rule, doc, env, *memo)

    monkeypatch.setattr(rule_mod, "run_rule", counting)
    monkeypatch.setattr(memo_mod, "rule_status", counting_status)
    history = tuple(rev(n, {**GOOD, "unrelated": n}) for n in range(1, 51))
    history += (rev(51, {**BAD, "unrelated": 51}),)
    subset = only(policy, "SBX-001", "AUT-001", "MOD-001")
    evaluate(subset, EvaluationInputs(NOW, history[-1], history))
    assert calls.count("AUT-001") == 1  # first revision only: its path never changed
    assert calls.count("SBX-001") == 2  # first revision and revision 51
    # Verdict first, words later: the walk needs statuses; only the revision under test is
    # worded, once per rule.
    assert sorted(worded) == ["AUT-001", "MOD-001", "SBX-001"]


def test_type_change_inside_a_list_is_seen() -> None:
    changed: set[int] = set()
    trie = history_mod.build_trie(load_policies([SAMPLE]).rules)
    history_mod.affected(trie, {"customModels": [1]}, {"customModels": [True]}, changed)
    assert changed == {3}  # MOD-001 reads customModels


def test_affected_over_a_chain_of_revisions() -> None:
    """The walk keeps each watched container's last bytes and fetches a node's keys at once:
    over a chain (each pair's `after` the next one's `before`) a type-only change, a key that
    appears and disappears, and a dict subclass are all still seen."""

    class Sub(dict[str, Any]):
        pass

    trie = history_mod.build_trie(load_policies([SAMPLE]).rules)
    chain: list[dict[str, Any]] = [
        {"customModels": [1], "sandbox": {"enabled": True}, "maxAutonomyLevel": "low"},
        {"customModels": [1], "sandbox": {"enabled": True}, "maxAutonomyLevel": "low"},
        {"customModels": [True], "sandbox": {"enabled": True}, "maxAutonomyLevel": "low"},
        {"customModels": [True], "sandbox": {}, "maxAutonomyLevel": "low"},
        {"customModels": [True], "sandbox": {"enabled": 1}, "maxAutonomyLevel": "low"},
        {"customModels": [True], "sandbox": Sub(enabled=1), "maxAutonomyLevel": "low"},
        {"customModels": [True], "sandbox": Sub(enabled=True), "maxAutonomyLevel": "low"},
        {"customModels": [True], "sandbox": {"enabled": True}},
    ]
    seen = []
    for before, after in pairwise(chain):
        changed: set[int] = set()
        history_mod.affected(trie, before, after, changed)
        seen.append(changed)
    # by position in the sample policy: SBX-001 and SBX-002, AUT-001 and CHG-AUT-001, MOD-001
    sbx, aut, mod = {0, 1}, {2, 4}, {3}
    assert seen == [set(), mod, sbx, sbx, set(), sbx, aut]
    # Out of order (a proposal against the latest): the bytes kept are another object's.
    out_of_order: set[int] = set()
    history_mod.affected(trie, {**chain[-1], "customModels": [1]}, chain[-1], out_of_order)
    assert out_of_order == mod


def test_entries_with_equal_text_of_another_type_are_judged_apart() -> None:
    """A quantifier reuses an entry's status by a key of what it reads; a string and the
    number (or list) that would print alike are different entries."""
    rule = load_policies([SAMPLE]).rules[3]  # MOD-001: each customModels, baseUrl https
    memo = memo_mod.MemoRule(rule)
    env = Env(NOW)
    urls: list[Any] = ["https://a", ["https://a"], "1", 1]
    docs = [{"customModels": [{"baseUrl": url}]} for url in urls]
    statuses = [memo.status(doc, env) for doc in docs]
    assert statuses == [rule_mod.run_rule(rule, doc, env).status for doc in docs]
    assert statuses == ["pass", "error", "fail", "error"]


@pytest.mark.parametrize(
    ("settings", "status", "message"),
    [
        pytest.param({}, "fail", "maxAutonomyLevel is absent", id="on-missing-fail"),
        pytest.param({"autonomyLevel": "low"}, "pass", 'autonomyLevel is "low"', id="alt-path"),
        pytest.param(
            {"maxAutonomyLevel": "extreme"},
            "error",
            'maxAutonomyLevel is "extreme": not a level of autonomy (off < low < medium < high)',
            id="unknown-level-is-error",
        ),
        pytest.param(
            {"maxAutonomyLevel": "high"},
            "fail",
            'maxAutonomyLevel is "high"; expected to be at most "medium" (autonomy)',
            id="fail",
        ),
    ],
)
def test_statuses_are_never_collapsed(
    policy: PolicySet, settings: Any, status: str, message: str
) -> None:
    (res,) = evaluate(only(policy, "AUT-001"), EvaluationInputs(NOW, rev(1, settings))).results
    assert (res.status, res.message) == (status, message)


def test_not_applicable_and_unknown(policy: PolicySet) -> None:
    inputs = EvaluationInputs(NOW, rev(1, {"sandbox": {"enabled": False}}))
    results = {r.rule.id: r for r in evaluate(only(policy, "SBX-002", "MOD-001"), inputs).results}
    assert results["SBX-002"].status == "not_applicable"
    assert results["SBX-002"].message.startswith("precondition not met: sandbox.enabled is false")
    assert results["MOD-001"].status == "unknown"


def test_change_steps_are_evaluated_with_their_author(policy: PolicySet) -> None:
    r1, r2 = rev(1, {"maxAutonomyLevel": "low"}), rev(2, {"maxAutonomyLevel": "high"}, "e@x.io")
    r3 = rev(3, {"maxAutonomyLevel": "high", "other": 1})
    inputs = EvaluationInputs(NOW, steps=((r1, r2), (r2, r3)))
    results = evaluate(only(policy, "CHG-AUT-001"), inputs).results
    assert [(r.subject.key, r.status) for r in results] == [("change:1..2", "fail")]
    assert results[0].since is not None and results[0].since.author_email == "e@x.io"
    assert results[0].message == ('maxAutonomyLevel went "low" -> "high"; expected not to increase')
    every = evaluate(only(policy, "CHG-AUT-001"), replace(inputs, all_revisions=True)).results
    assert [(r.subject.key, r.status) for r in every] == [
        ("change:1..2", "fail"), ("change:2..3", "not_applicable"),
    ]  # fmt: skip


def test_a_change_rule_nothing_failed_gives_one_summary(policy: PolicySet) -> None:
    r1, r2 = rev(1, {"maxAutonomyLevel": "high"}), rev(2, {"maxAutonomyLevel": "low"})
    r3 = rev(3, {"maxAutonomyLevel": "low", "other": 1})
    inputs = EvaluationInputs(NOW, steps=((r1, r2), (r2, r3)))
    (summary,) = evaluate(only(policy, "CHG-AUT-001"), inputs).results
    assert (summary.subject.key, summary.status) == ("change:all", "pass")
    assert summary.subject.label == "all 2 steps (revisions 1 -> 3)"
    assert summary.message == "1 of 2 steps pass, 1 does not apply; none fails"


def test_a_single_step_keeps_its_passing_results(policy: PolicySet) -> None:
    r1, r2 = rev(1, {"maxAutonomyLevel": "high"}), rev(2, {"maxAutonomyLevel": "low"})
    (result,) = evaluate(
        only(policy, "CHG-AUT-001"), EvaluationInputs(NOW, steps=((r1, r2),))
    ).results
    assert (result.subject.key, result.status) == ("change:1..2", "pass")


def test_change_rules_can_read_the_change_list(tmp_path: Path) -> None:
    (tmp_path / "p.yaml").write_text(
        "rules:\n  - id: C-1\n    title: no secret rotation by bots\n    severity: low\n"
        "    target: change\n    assert:\n      not:\n        all:\n"
        "          - {path: author, ends_with: '@bots.example'}\n"
        "          - {some: changes, assert: {path: path, starts_with: '$.customModels'}}\n"
    )
    a = rev(1, {"customModels": [{"id": "m", "apiKey": "[secret fp:1 len:3]"}]})
    b = rev(2, {"customModels": [{"id": "m", "apiKey": "[secret fp:2 len:3]"}]}, "ci@bots.example")
    (res,) = evaluate(load_policies([tmp_path]), EvaluationInputs(NOW, steps=((a, b),))).results
    assert res.status == "fail"


def _report(repo: str, days_old: float, report_id: str = "r") -> ReadinessReport:
    data = {"reportId": report_id, "repoUrl": repo, "report": {}}
    return ReadinessReport(report_id, repo, NOW - timedelta(days=days_old), data, "h")


def test_readiness_and_org_targets(policy: PolicySet) -> None:
    reports = (
        _report("https://git/b", 3),
        _report("https://git/a", 45, "old"),
        _report("https://git/a", 2, "new"),
    )
    inputs = EvaluationInputs(NOW, reports=reports)
    results = evaluate(only(policy, "RDY-FRESH-001", "ORG-001"), inputs).results
    assert [(r.rule.id, r.subject.key, r.status) for r in results] == [
        ("RDY-FRESH-001", "https://git/a", "pass"),  # latest report per repo only
        ("RDY-FRESH-001", "https://git/b", "pass"),
        ("ORG-001", "org", "fail"),
    ]


def test_rules_without_input_are_listed_not_passed(policy: PolicySet) -> None:
    result = evaluate(policy, EvaluationInputs(NOW, rev(1, GOOD)))
    assert not result.complete
    assert "CHG-AUT-001: not evaluated (no revision steps (fewer than two revisions))" in (
        result.not_evaluated
    )
    assert {r.rule.target for r in result.results} == {"settings"}


def test_result_order_is_rule_order_then_subject(policy: PolicySet) -> None:
    history = (rev(1, GOOD), rev(2, BAD))
    inputs = EvaluationInputs(
        NOW, history[-1], history, steps=((history[0], history[1]),), reports=(_report("u", 1),)
    )
    results = evaluate(policy, inputs).results
    ids = [r.rule.id for r in results]
    assert ids == sorted(ids, key=[r.id for r in policy.rules].index)
