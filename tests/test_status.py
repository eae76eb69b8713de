"""Verdict first, words later (issue 13): the status-only evaluator gives exactly the status
`run_rule` gives, for every shipped rule (and the sample pack), over generated settings
histories, their change steps and readiness views, and over the same documents with values
randomly replaced by values of other JSON types (the error and missing paths) — with and
without the element memo a run keeps per rule."""

from __future__ import annotations

import copy
import random
import tracemalloc
from collections.abc import Iterator
from datetime import UTC, datetime
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from auditor.emulator import generate_dataset
from auditor.evaluate.change import change_document
from auditor.evaluate.conditions import Env
from auditor.evaluate.memo import MemoRule
from auditor.evaluate.readiness import load_readiness_model, readiness_view
from auditor.evaluate.rule import run_rule
from auditor.evaluate.status import ElementMemo, rule_status
from auditor.fetch.decode import to_report, to_revision
from auditor.policy import SHIPPED_POLICY_DIR, load_policies
from auditor.policy.model import Rule
from auditor.redact import Redactor

NOW = datetime(2026, 11, 1, 12, tzinfo=UTC)
SAMPLE = Path(__file__).parent / "policies" / "valid" / "sample.yaml"
ODD_VALUES: list[Any] = [None, True, 0, -3, 2.5, "", "x", "low", [], [1, "a"], {}, {"id": 1}]


def rules() -> list[Rule]:
    return [*load_policies([SHIPPED_POLICY_DIR]).rules, *load_policies([SAMPLE]).rules]


def perturbed(doc: Any, rng: random.Random, count: int = 3) -> Any:
    """`doc` with `count` values (anywhere in the tree) replaced by odd ones, or removed."""
    doc = copy.deepcopy(doc)
    for _ in range(count):
        node = doc
        while isinstance(node, dict | list) and node:
            keys = list(node.keys()) if isinstance(node, dict) else list(range(len(node)))
            key = rng.choice(keys)
            child = node[key]
            if not isinstance(child, dict | list) or not child or rng.random() < 0.3:
                if isinstance(node, dict) and rng.random() < 0.25:
                    del node[key]
                else:
                    node[key] = copy.deepcopy(rng.choice(ODD_VALUES))
                break
            node = child
    return doc


def documents() -> Iterator[tuple[str, Any, Env]]:
    data = generate_dataset(seed=5, revisions=120, repos=12, now=NOW)
    redactor = Redactor(b"test-key")
    history = [to_revision(item, redactor, "default", "$") for item in data.history]
    rng = random.Random(13)
    for revision in history:
        yield "settings", revision.settings, Env(NOW)
        yield "settings", perturbed(revision.settings, rng), Env(NOW)
    for before, after in pairwise(history):
        doc = change_document(before, after, with_changes=True)
        env = Env(NOW, (before.settings, after.settings))
        yield "change", doc, env
        odd_before, odd_after = perturbed(before.settings, rng), perturbed(after.settings, rng)
        doc = {**doc, "before": odd_before, "after": odd_after}
        yield "change", doc, Env(NOW, (odd_before, odd_after))
    model = load_readiness_model(None)
    for item in data.reports:
        view = readiness_view(to_report(item, redactor, "$"), model, NOW)
        yield "readiness", view, Env(NOW)
        yield "readiness", perturbed(view, rng), Env(NOW)


@pytest.mark.parametrize("target", ["settings", "change", "readiness"])
def test_status_only_equals_the_worded_verdict(target: str) -> None:
    chosen = [r for r in rules() if r.target == target]
    # One element memo per rule over the whole stream, as a run keeps it: an array element's
    # status reused from an earlier document (perturbed ones too) must still be its own.
    memos = [ElementMemo(r) for r in chosen]  # by position: the sample pack reuses ids
    # And a memoised rule, as the history walk and the change steps use it: its status cache
    # is keyed by what the status reads (an array's elements only by what the quantifier's
    # condition reads of them), narrower than the worded verdict's key.
    cached = [MemoRule(r) for r in chosen]
    seen: set[str] = set()
    checked = 0
    for kind, doc, env in documents():
        if kind != target:
            continue
        for n, rule in enumerate(chosen):
            expected = run_rule(rule, doc, env).status
            assert rule_status(rule, doc, env) == expected, (rule.id, doc)
            assert rule_status(rule, doc, env, memos[n]) == expected, (rule.id, doc)
            assert cached[n].status(doc, env) == expected, (rule.id, doc)
            seen.add(expected)
            checked += 1
    assert checked > 1000
    assert {"pass", "fail", "error"} <= seen, seen  # both sides, and broken documents


def test_a_document_changed_in_place_is_read_anew_by_the_next_evaluation() -> None:
    """Keys are made from each document once per evaluation (its environment): a caller that
    edits a document between two evaluations gets the status of the edited one."""
    rule = next(r for r in rules() if r.id == "BASE-CMD-005")
    memo = MemoRule(rule)
    doc: dict[str, Any] = {"commandAllowlist": ["ls", "git status"]}
    assert memo.status(doc, Env(NOW)) == "pass"
    doc["commandAllowlist"].append("sudo rm")
    assert memo.status(doc, Env(NOW)) == "fail"


def test_the_element_memo_stays_small() -> None:
    """A memoised element costs its key's own size: 2,000 distinct custom models (a short key
    each) and 2,000 long entries (a digest each) stay under 1 MB, far from 4 KB an entry."""
    base_url = next(r for r in rules() if r.id == "BASE-MOD-001")
    allow = next(r for r in rules() if r.id == "BASE-CMD-005")
    models, commands = ElementMemo(base_url), ElementMemo(allow)
    tracemalloc.start()
    try:
        for n in range(2000):
            doc = {"customModels": [{"id": f"m{n}", "baseUrl": f"https://m{n}.example/v1"}]}
            assert rule_status(base_url, doc, Env(NOW), models) == "pass"
            doc = {"commandAllowlist": [f"tool-{n}-" + "x" * 200]}
            assert rule_status(allow, doc, Env(NOW), commands) == "pass"
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert held < 1_000_000, held
