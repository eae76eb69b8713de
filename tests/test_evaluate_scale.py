"""Evaluation at scale: memoised verdicts equal the uncached ones, histories are streamed."""

from __future__ import annotations

import weakref
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

import auditor.evaluate.rule as rule_mod
from auditor.emulator import generate_dataset
from auditor.evaluate.engine import Steps, evaluate
from auditor.evaluate.memo import VerdictCache, projection_key
from auditor.evaluate.model import EvaluationInputs
from auditor.evaluate.rule import Verdict
from auditor.fetch.decode import to_revision
from auditor.models import Revision
from auditor.policy import SHIPPED_POLICY_DIR, PolicySet, load_policies
from auditor.redact import Redactor
from auditor.store.database import Store
from auditor.workflows.run import AuditOptions, load_inputs, run_audit

NOW = datetime(2026, 11, 1, 12, tzinfo=UTC)


@pytest.fixture(scope="module")
def shipped() -> PolicySet:
    return load_policies([SHIPPED_POLICY_DIR])


@pytest.fixture(scope="module")
def raw_history() -> list[dict[str, Any]]:
    return generate_dataset().history


def revisions(raw: list[dict[str, Any]]) -> Iterator[Revision]:
    redactor = Redactor(b"test-key")
    for i, item in enumerate(raw):
        yield to_revision(item, redactor, "default", f"$.changes[{i}]")


class Streamed:
    """A re-iterable history that builds revisions on demand and counts how many are alive."""

    def __init__(self, raw: list[dict[str, Any]]) -> None:
        self.raw = raw
        self.alive: list[weakref.ref[Revision]] = []
        self.most_alive = 0
        self.passes = 0

    def __iter__(self) -> Iterator[Revision]:
        self.passes += 1
        for revision in revisions(self.raw):
            self.alive = [ref for ref in self.alive if ref() is not None]
            self.alive.append(weakref.ref(revision))
            self.most_alive = max(self.most_alive, len(self.alive))
            yield revision


def inputs_for(history: tuple[Revision, ...], **options: Any) -> EvaluationInputs:
    return EvaluationInputs(
        NOW, history[-1], history, all_revisions=True, steps=Steps(history), **options
    )


def test_memoised_results_equal_uncached_results(
    shipped: PolicySet, raw_history: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[str] = []
    real = rule_mod.run_rule

    def counting(rule: Any, doc: Any, env: Any) -> Verdict:
        calls.append(rule.id)
        return real(rule, doc, env)

    monkeypatch.setattr(rule_mod, "run_rule", counting)
    history = tuple(revisions(raw_history))
    cached = evaluate(shipped, inputs_for(history))
    cached_calls, calls[:] = len(calls), []
    uncached = evaluate(shipped, inputs_for(history, memoise=False))
    assert cached_calls < len(calls) * 2 / 3  # the cache really is used
    assert len(cached.results) == len(uncached.results) > len(history) * 16
    for mine, theirs in zip(cached.results, uncached.results, strict=True):
        assert mine == theirs
        assert (mine.message, mine.evidence) == (theirs.message, theirs.evidence)
    assert cached.failing_by_revision == uncached.failing_by_revision
    assert cached.not_evaluated == uncached.not_evaluated


def test_history_is_streamed_not_held(
    shipped: PolicySet, raw_history: list[dict[str, Any]]
) -> None:
    history = Streamed(raw_history)
    (latest,) = revisions(raw_history[-1:])
    inputs = EvaluationInputs(NOW, latest, history, steps=Steps(history))
    held = evaluate(shipped, inputs)
    settings_rules = sum(r.target == "settings" for r in shipped.rules)
    assert history.passes == 1  # one pass feeds the settings walk and the change steps
    assert history.most_alive <= settings_rules + 3  # the previous revision and failure starts
    whole = tuple(revisions(raw_history))
    assert (
        held.results
        == evaluate(shipped, replace(inputs, history=whole, steps=Steps(whole))).results
    )


def test_a_one_shot_iterator_is_refused(
    shipped: PolicySet, raw_history: list[dict[str, Any]]
) -> None:
    history = tuple(revisions(raw_history[:3]))
    inputs = EvaluationInputs(NOW, history[-1], iter(history))
    with pytest.raises(TypeError, match="history must be re-iterable"):
        evaluate(shipped, inputs)


def test_change_rules_without_steps_are_not_evaluated(
    shipped: PolicySet, raw_history: list[dict[str, Any]]
) -> None:
    (only,) = tuple(revisions(raw_history[:1]))
    result = evaluate(shipped, EvaluationInputs(NOW, only, (only,), steps=Steps((only,))))
    change_rules = [r.id for r in shipped.rules if r.target == "change"]
    missing = [line.split(":")[0] for line in result.not_evaluated if "revision steps" in line]
    assert missing == change_rules
    assert not result.complete


@pytest.mark.parametrize(
    ("first", "second"),
    [
        pytest.param({"a": True}, {"a": 1}, id="true-vs-1"),
        pytest.param({"a": 1}, {"a": 1.0}, id="int-vs-float"),
        pytest.param({"a": None}, {}, id="null-vs-absent"),
        pytest.param({"a": [True]}, {"a": [1]}, id="inside-a-list"),
        pytest.param({"a": {"x": 1, "y": 2}}, {"a": {"y": 2, "x": 1}}, id="key-order-shows"),
        pytest.param({"a": "s"}, {"a": {"b": "s"}}, id="scalar-vs-object"),
    ],
)
def test_projection_keys_are_type_strict(first: Any, second: Any) -> None:
    assert projection_key(first, [("a",)]) != projection_key(second, [("a",)])


@pytest.mark.parametrize(
    ("first", "second"),
    [
        pytest.param({"a": 1, "z": 1}, {"a": 1, "z": 2}, id="unread-key"),
        pytest.param({"a": {"b": 1, "c": 1}}, {"a": {"b": 1, "c": 2}}, id="unread-sibling"),
    ],
)
def test_projection_keys_ignore_unread_paths(first: Any, second: Any) -> None:
    assert projection_key(first, [("a", "b")]) == projection_key(second, [("a", "b")])


def test_verdict_cache_starts_over_when_over_budget() -> None:
    cache = VerdictCache(budget=10)
    made: list[str] = []

    for key in (b"aaaa", b"bbbb", b"aaaa", b"cccc", b"aaaa"):

        def make(name: str = key.decode()) -> Verdict:
            made.append(name)
            return Verdict("pass", name)

        cache.get(key, make)
    assert made == ["aaaa", "bbbb", "cccc", "aaaa"]  # a hit, then a miss after starting over
    assert cache.size <= 10


def test_stored_run_lists_every_revision_evaluated(
    tmp_path: Path, raw_history: list[dict[str, Any]]
) -> None:
    loaded = load_inputs([], None, None, cwd=tmp_path)
    with Store.open(tmp_path / "state.db") as store:
        sync = store.begin_sync(NOW, "http://127.0.0.1")
        stored = list(revisions(raw_history[:30]))
        for revision in stored:
            store.ingest_revision(revision, sync, NOW)
        outcome = run_audit(store, loaded, AuditOptions(run_id="r1", now=NOW))
    assert outcome.data.inputs.revisions_evaluated == tuple(
        (r.revision, r.content_hash) for r in stored
    )
    assert outcome.data.inputs.settings_revision == stored[-1].revision


STEP_RULES = """\
rules:
  - id: EXT-CHG-002
    title: The session autonomy ceiling, when it changes, stays a level name
    severity: low
    target: change
    when: {path: maxAutonomyLevel, changed: true}
    assert: {path: after.maxAutonomyLevel, type: string}
  - id: EXT-CHG-003
    title: Retention is not shortened
    severity: low
    target: change
    when: {path: before.sessionRetentionDays, type: number}
    assert: {path: after.sessionRetentionDays, gte: {ref: before.sessionRetentionDays}}
"""


@pytest.mark.parametrize("seed", [7, 21])
def test_skipped_and_status_only_steps_equal_every_rule_worded_on_every_step(
    shipped: PolicySet, seed: int, tmp_path: Path
) -> None:
    """The nightly's shortcuts (status only for passing steps, change rules whose settings
    paths did not move skipped, verdicts reused) against a run without reuse: the same
    results, one per failing step plus summaries (whose pass / not-applicable counts show
    any step skipped wrongly), and the same failing counts."""
    (tmp_path / "steps.yaml").write_text(STEP_RULES)
    extra = load_policies([tmp_path / "steps.yaml"])
    policy = replace(shipped, rules=(*shipped.rules, *extra.rules))
    history = tuple(revisions(generate_dataset(seed=seed, revisions=400).history))
    quick = evaluate(policy, EvaluationInputs(NOW, history[-1], history, steps=Steps(history)))
    slow = evaluate(
        policy, EvaluationInputs(NOW, history[-1], history, steps=Steps(history), memoise=False)
    )
    assert len(quick.results) == len(slow.results)
    for mine, theirs in zip(quick.results, slow.results, strict=True):
        assert mine == theirs
        assert (mine.message, mine.evidence) == (theirs.message, theirs.evidence)
    assert quick.failing_by_revision == slow.failing_by_revision
    assert any(r.subject.key == "change:all" for r in quick.results)  # summaries are compared
