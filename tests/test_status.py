"""Verdict first, words later (issue 13): the status-only evaluator gives exactly the status
`run_rule` gives, for every shipped rule (and the sample pack), over generated settings
histories, their change steps and readiness views, and over the same documents with values
randomly replaced by values of other JSON types (the error and missing paths) — with and
without the element memo a run keeps per rule; and, for rules the packs lack (clocks, refs, nested
quantifiers, select steps inside and around quantifiers), memoised evaluation over a history
shaped as the store reads it (revisions sharing what they left unchanged) equals a fresh one."""

from __future__ import annotations

import copy
import random
import tracemalloc
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from pathlib import Path
from typing import Any

import orjson
import pytest

from auditor.common.jsonutil import share_equal
from auditor.emulator import generate_dataset
from auditor.evaluate.change import change_document
from auditor.evaluate.conditions import Env
from auditor.evaluate.engine import evaluate
from auditor.evaluate.memo import MemoRule, _shared_status_key, status_key
from auditor.evaluate.model import Evaluation, EvaluationInputs
from auditor.evaluate.readiness import load_readiness_model, readiness_view
from auditor.evaluate.rule import run_rule
from auditor.evaluate.status import ElementMemo, rule_status
from auditor.fetch.decode import to_report, to_revision
from auditor.models import Revision, User
from auditor.policy import SHIPPED_POLICY_DIR, load_policies
from auditor.policy.loader import PolicySet
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


# Rules the shipped packs do not have: clock operators, refs, nested quantifiers, a select step,
# `@`, `when` and `on_missing` inside and around quantifiers, change rules reading a change's
# values and refs — each a way an array element's memoised status could be stale.
CUSTOM = """
defaults: {on_missing: fail}
rules:
  - {id: Q-CLK-1, title: t, severity: low, target: settings,
     assert: {each: models, assert: {path: updatedAt, within_days: 30}}}
  - {id: Q-CLK-2, title: t, severity: low, target: settings, on_missing: pass,
     assert: {none: models, assert: {path: updatedAt, older_than_days: 100,
                                     default: "2026-01-01T00:00:00Z"}}}
  - {id: Q-REF-1, title: t, severity: low, target: settings,
     assert: {each: models, assert: {path: url, starts_with_any: {ref: allowed}}}}
  - {id: Q-NEST-1, title: t, severity: low, target: settings,
     when: {path: on, equals: true, default: true},
     assert: {any: [{none: hooks, assert: {some: list,
                                          assert: {path: "@", matches: "^rm", default: ""}}},
                    {path: on, equals: 1}]}}
  - {id: Q-SEL-1, title: t, severity: low, target: settings, on_missing: pass,
     assert: {some: "models[id=a].tags", assert: {path: "@", in: [x, y, 1]}}}
  - {id: Q-SELF-1, title: t, severity: low, target: settings,
     assert: {each: flags, assert: {path: "@", type: boolean}}}
  - {id: Q-LOGIC-1, title: t, severity: low, target: settings,
     assert: {all: [{each: models, assert: {all: [{path: id, not_equals: bad},
                                                  {not: {path: n, gt: 3}}]}},
                    {path: models, length: {lte: 4}}]}}
  - {id: Q-LOGIC-2, title: t, severity: low, target: settings,
     assert: {some: models, assert: {any: [{path: id, equals: a}, {path: n, lte: 3}]}}}
  - {id: Q-CHG-1, title: t, severity: low, target: change,
     assert: {none: changes, assert: {all: [{path: kind, in: [added, item_added, changed]},
                                            {path: path, matches: '^\\$\\.models'}]}}}
  - {id: Q-CHG-2, title: t, severity: low, target: change, on_missing: pass,
     assert: {none: changes, assert: {path: after, equals: "rm -rf", default: ""}}}
  - {id: Q-CHG-3, title: t, severity: low, target: change,
     assert: {each: changes, assert: {path: path, not_equals: {ref: after.forbidden}}}}
  - {id: Q-CHG-4, title: t, severity: low, target: change, on_missing: pass,
     assert: {none: changes, assert: {path: after, older_than_days: 100}}}
  # paths read only for their shape (type, length, emptiness, presence), alone and beside a
  # reader of the whole value; a hidden value's length is its marker's `len:`
  - {id: Q-SHP-1, title: t, severity: low, target: settings,
     assert: {all: [{path: models, type: array}, {path: models, length: {lte: 3}},
                    {path: allowed, empty: false, default: []}, {path: on, type: integer},
                    {path: flags, exists: true}]}}
  - {id: Q-SHP-2, title: t, severity: low, target: settings,
     assert: {all: [{path: models, length: {gte: 1}},
                    {each: models, assert: {path: id, type: string}}]}}
  - {id: Q-SHP-6, title: t, severity: low, target: settings,
     assert: {all: [{path: models, length: {lte: 4}},
                    {each: models, assert: {path: url, starts_with_any: {ref: allowed}}}]}}
  # read for its shape by one leaf and whole by another: a ref, a change leaf (review R61-1)
  - {id: Q-SHP-7, title: t, severity: low, target: settings,
     assert: {all: [{path: allowed, length: {lte: 1}},
                    {each: models, assert: {path: url, starts_with_any: {ref: allowed}}}]}}
  - {id: Q-SHP-8, title: t, severity: low, target: change,
     assert: {all: [{path: before.allowed, type: array}, {path: allowed, changed: false}]}}
  - {id: Q-SHP-3, title: t, severity: low, target: settings, on_missing: pass,
     assert: {any: [{path: allowed, length: {gte: 30}}, {path: allowed, type: array}]}}
  - {id: Q-SHP-4, title: t, severity: low, target: change,
     assert: {all: [{none: changes, assert: {all: [{path: kind, equals: item_added},
                                                   {path: after, type: object}]}},
                    {not: {path: before.models, type: array, default: null}},
                    {path: after.models, empty: false, default: []}]}}
  - {id: Q-SHP-5, title: t, severity: low, target: change,
     assert: {none: changes, assert: {all: [{path: before, length: {gte: 2}},
                                            {path: path, starts_with: "$.models"}]}}}
"""
_TIMES = ["2026-10-25T00:00:00Z", "2026-09-01T00:00:00Z", "2025-01-01T00:00:00Z", "soon", 7]
#: Two hidden values whose markers are as long as each other but stand for different lengths.
_HIDDEN = ["[secret fp:1a2b3c4d len:40]", "[secret fp:1a2b3c4d len:20]"]
_ODD: list[Any] = [None, True, False, 0, 1, 1.0, -0.0, 3, 5.0, "x", "a", "bad", ["x"], {}]


def _model(rng: random.Random) -> Any:
    if rng.random() < 0.1:
        return copy.deepcopy(rng.choice(_ODD))
    choices: dict[str, list[Any]] = {
        "id": ["a", "b", "bad", None, 1],
        "n": [1, 3, 4, 5.0, True, "4"],
        "url": ["https://ok/v1", "https://no/v1", 3],
        "updatedAt": _TIMES,
        "tags": [["x"], ["z"], [1], [True], ["y", "z"], "x"],
    }
    return {k: copy.deepcopy(rng.choice(v)) for k, v in choices.items() if rng.random() < 0.85}


def _settings(rng: random.Random) -> dict[str, Any]:
    doc: dict[str, Any] = {}
    if rng.random() < 0.9:
        doc["models"] = [_model(rng) for _ in range(rng.randint(0, 5))]
    if rng.random() < 0.8:
        doc["allowed"] = copy.deepcopy(
            rng.choice([["https://ok"], ["https://"], [], "x", None, *_HIDDEN])
        )
    if rng.random() < 0.8:
        doc["hooks"] = [
            {"list": [rng.choice(["ls", "rm -rf", 1, None]) for _ in range(rng.randint(0, 2))]}
            for _ in range(rng.randint(0, 3))
        ]
    if rng.random() < 0.5:
        doc["on"] = rng.choice([True, 1, 1.0, False, None])
    if rng.random() < 0.7:
        doc["flags"] = [rng.choice([True, False, 1, 0, None]) for _ in range(rng.randint(0, 3))]
    if rng.random() < 0.3:
        doc["forbidden"] = rng.choice(["$.models", "$.on", "$.flags"])
    return doc


def _next(doc: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    """The next revision: a few edits, mostly to one entry of `models` (what repeats)."""
    doc = copy.deepcopy(doc)
    for _ in range(rng.randint(1, 3)):
        models = doc.get("models")
        if isinstance(models, list) and models and rng.random() < 0.6:
            at = rng.randrange(len(models))
            if isinstance(models[at], dict) and rng.random() < 0.6:
                key = rng.choice(["id", "n", "url", "updatedAt", "tags"])
                models[at][key] = copy.deepcopy(rng.choice([*_ODD, *_TIMES, "https://ok/"]))
            else:
                models[at] = _model(rng)
        else:
            fresh = _settings(rng)
            key = rng.choice(["models", "allowed", "hooks", "on", "flags", "forbidden"])
            if key in fresh:
                doc[key] = fresh[key]
            else:
                doc.pop(key, None)
    return doc


def _history(seed: int, length: int = 50) -> list[bytes]:
    rng = random.Random(seed)
    doc = _settings(rng)
    out = []
    for _ in range(length):
        doc = _next(doc, rng) if rng.random() < 0.9 else _settings(rng)
        out.append(orjson.dumps(doc))
    return out


def _as_stored(texts: list[bytes]) -> list[Revision]:
    """The revisions as the store's history reader gives them: each shares with the one
    before it the objects it left unchanged (`share_equal`)."""
    out: list[Revision] = []
    previous: Any = None
    for number, text in enumerate(texts, start=1):
        settings = orjson.loads(text)
        share_equal(previous, settings)
        previous = settings
        when = NOW - timedelta(days=len(texts) - number)
        out.append(Revision(number, when, User("u", "a@corp.example", "A"), settings, str(number)))
    return out


def _custom(tmp_path: Path) -> PolicySet:
    path = tmp_path / "custom.yaml"
    path.write_text(CUSTOM)
    return load_policies([path])


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_memoised_statuses_over_a_shared_history_equal_a_fresh_evaluation(
    tmp_path: Path, seed: int
) -> None:
    """A memoised rule walked over a history as the history walk does (one environment, the
    revisions sharing unchanged objects) gives, revision after revision, the status `run_rule`
    gives on a fresh copy — clocks, refs, nested quantifiers and select steps included."""
    chosen = [r for r in _custom(tmp_path).rules if r.target == "settings"]
    texts = _history(seed)
    env = Env(NOW)
    memos = [MemoRule(rule) for rule in chosen]
    seen: set[str] = set()
    for text, revision in zip(texts, _as_stored(texts), strict=True):
        for memo in memos:
            expected = run_rule(memo.rule, orjson.loads(text), Env(NOW)).status
            assert memo.status(revision.settings, env) == expected, (memo.rule.id, text)
            seen.add(expected)
            if memo.narrow is not None:  # the per-document key is the one `status_key` makes
                shared = _shared_status_key(revision.settings, env, memo.narrow, memo.numbers)
                assert shared == status_key(revision.settings, memo.narrow)
    assert {"pass", "fail", "error", "not_applicable"} <= seen, seen


def test_a_path_read_for_its_shape_is_told_apart_by_what_the_rule_can_see(
    tmp_path: Path,
) -> None:
    """A rule that reads a path only for its type, length or emptiness is reused across
    documents whose values there differ but look alike to it; never across two whose values
    it tells apart: other lengths or types, or two hidden values of one marker length that
    stand for different lengths (`length` reads the marker's `len:`)."""
    rules = {r.id: r for r in _custom(tmp_path).rules}
    docs: list[dict[str, Any]] = [
        {"allowed": _HIDDEN[0]},
        {"allowed": _HIDDEN[1]},
        {"allowed": "y" * 27},
        {"allowed": "y" * 31},
        {"allowed": ["a"] * 31},
        {"allowed": 1},
        {"allowed": 1.0},
        {"models": [], "allowed": [], "on": 1, "flags": []},
        {"models": [{}], "allowed": [1], "on": 1.0, "flags": []},
        {"models": [{}], "allowed": "x", "on": 2, "flags": None},
        {"models": [{}, {}, {}, {}], "allowed": {"a": 1}, "on": 2},
    ]
    for rule_id in ("Q-SHP-1", "Q-SHP-3"):
        memo = MemoRule(rules[rule_id])
        assert memo.narrow is not None, rule_id  # (read by shape: the narrow key is made)
        statuses = set()
        for doc in docs * 2:
            expected = run_rule(memo.rule, copy.deepcopy(doc), Env(NOW)).status
            assert memo.status(doc, Env(NOW)) == expected, (rule_id, doc)
            statuses.add(expected)
        assert {"pass", "fail"} <= statuses, (rule_id, statuses)
    # a path read for its shape by one leaf and whole by another (a ref, a change leaf): the
    # whole value is in the key (review R61-1)
    memo = MemoRule(rules["Q-SHP-7"])
    for allowed in (["https://ok"], ["https://"], ["https://ok"]):
        doc = {"models": [{"url": "https://no/v1"}], "allowed": allowed}
        expected = run_rule(memo.rule, copy.deepcopy(doc), Env(NOW)).status
        assert memo.status(doc, Env(NOW)) == expected, doc
    memo = MemoRule(rules["Q-SHP-8"])
    seen = set()
    for was in (["a"], ["b"], ["a"], ["b"]):
        before = {"allowed": was}
        doc = {"before": before, "after": {"allowed": ["a"]}}
        env = Env(NOW, (before, doc["after"]))
        expected = run_rule(memo.rule, copy.deepcopy(doc), env).status
        assert memo.status(doc, env) == expected, doc
        seen.add(expected)
    assert seen == {"pass", "fail"}, seen


def _results(evaluation: Evaluation) -> list[tuple[Any, ...]]:
    return [
        (r.rule.id, r.subject.key, r.status, r.message, r.evidence, r.since)
        for r in evaluation.results
    ]


@pytest.mark.parametrize(("seed", "all_revisions"), [(4, True), (5, True), (6, False)])
def test_every_revision_and_step_of_a_memoised_run_equals_a_fresh_one(
    tmp_path: Path, seed: int, all_revisions: bool
) -> None:
    """The whole evaluation (`--all-revisions`, change steps) over the stored-shape history,
    memoised, equals the unmemoised one over unshared copies, result for result (words,
    evidence, attribution); and each revision's result is `run_rule`'s on that revision alone."""
    policy = _custom(tmp_path)
    texts = _history(seed, 60)

    def run(revisions: list[Revision], memoise: bool) -> Evaluation:
        inputs = EvaluationInputs(
            now=NOW,
            settings=revisions[-1],
            history=tuple(revisions),
            all_revisions=all_revisions,
            steps=tuple(pairwise(revisions)),
            memoise=memoise,
        )
        return evaluate(policy, inputs)

    fresh = [
        replace(r, settings=orjson.loads(t)) for r, t in zip(_as_stored(texts), texts, strict=True)
    ]
    memoised = run(_as_stored(texts), True)
    assert _results(memoised) == _results(run(fresh, False))
    checked = 0
    for result in memoised.results:
        if result.rule.target == "settings" and result.subject.revision is not None:
            alone = run_rule(
                result.rule, orjson.loads(texts[result.subject.revision - 1]), Env(NOW)
            )
            assert (result.status, result.message) == (alone.status, alone.message)
            checked += 1
    assert checked >= (8 * len(texts) if all_revisions else 8)  # and the latest once more
