"""Readiness grades carried between runs (issue 13): a nightly reads back each report's
`$score` and `$level` (by its content hash, under the same readiness model) instead of grading
every criterion of every repository again, and works out only the criteria its rules read.

Whatever is read back, the results are those of an evaluation from an empty state: a
repository with a new report, another readiness model, a damaged or foreign stored entry all
get their grades worked out afresh.
"""

from __future__ import annotations

import atexit
import dataclasses
import functools
import hashlib
import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import auditor.evaluate.readiness as readiness
from auditor.evaluate import incremental
from auditor.evaluate.engine import evaluate
from auditor.evaluate.model import EvaluationInputs
from auditor.evaluate.readiness import ReadinessModel, load_readiness_model
from auditor.models import ReadinessReport
from auditor.policy import PolicySet, load_policies

NOW = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)

MODEL_YAML = """\
levels: {1: Functional, 2: Documented, 3: Standardized}
unlock_threshold: 0.8
criteria:
  a1: {level: 1, scope: repository, pillar: Docs}
  a2: {level: 1, scope: repository, pillar: Docs}
  a3: {level: 1, scope: repository, pillar: Docs}
  b1: {level: 2, scope: repository, pillar: Security}
  b2: {level: 2, scope: repository, pillar: Security}
"""

POLICY = """\
defaults:
  target: readiness
  on_missing: unknown
rules:
  - id: T-LVL
    title: Level 2 at least
    severity: medium
    assert: {path: $level, gte: 2}
  - id: T-SCORE
    title: Most criteria pass
    severity: low
    assert: {path: $score, gte: 0.7}
  - id: T-B1
    title: b1 passes
    severity: high
    assert: {path: criteria.b1.passed, equals: true}
  - id: T-AGE
    title: Recent report
    severity: low
    assert: {path: $age_days, lte: 30}
  - id: T-ORG
    title: Organization at level 2
    severity: low
    target: org
    assert: {path: $level, gte: 2}
"""


@pytest.fixture
def model(tmp_path: Path) -> ReadinessModel:
    path = tmp_path / "model.yaml"
    path.write_text(MODEL_YAML)
    return load_readiness_model(path)


@pytest.fixture
def policy(tmp_path: Path) -> PolicySet:
    path = tmp_path / "readiness.yaml"
    path.write_text(POLICY)
    return load_policies([path])


def content_hash(data: Any) -> str:
    """As the store hashes a report: sha256 of its canonical JSON."""
    return hashlib.sha256(orjson.dumps(data, option=orjson.OPT_SORT_KEYS)).hexdigest()


def report(repo: str, passing: Sequence[str], *, report_id: str, age: float = 2) -> ReadinessReport:
    entries = {
        cid: {"numerator": 1 if cid in passing else 0, "denominator": 1}
        for cid in ("a1", "a2", "a3", "b1", "b2")
    }
    data = {
        "reportId": report_id,
        "repoUrl": repo,
        "hasLocalChanges": False,
        "hasNonRemoteCommits": False,
        "report": entries,
    }
    return ReadinessReport(
        report_id,
        repo,
        NOW - timedelta(days=age),
        data,
        content_hash(data),
    )


REPORTS = (
    report("https://g/a", ["a1", "a2", "a3", "b1"], report_id="ra"),
    report("https://g/b", ["a1"], report_id="rb"),
    report("https://g/c", ["a1", "a2", "a3", "b1", "b2"], report_id="rc", age=40),
)


def run(
    policy: PolicySet,
    reports: tuple[ReadinessReport, ...],
    model: ReadinessModel,
    prior: Mapping[str, bytes],
    now: datetime = NOW,
) -> tuple[list[tuple[str, str, str, str]], dict[str, bytes]]:
    """The results (rule, subject, status, message) of one run and the state it leaves."""
    readiness.release_views()  # a run of its own: views are not shared with the last one
    evaluation = evaluate(
        policy,
        EvaluationInputs(
            now=now,
            reports=reports,
            readiness_model=model,
            prior=prior,
            tail=lambda start: (),
            revision_numbers=(),
            remember=True,
        ),
    )
    results = [(r.rule.id, r.subject.key, r.status, r.message) for r in evaluation.results]
    return results, dict(evaluation.state.items())


@pytest.fixture
def graded(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many reports had their criteria graded (`$score` and `$level` worked out)."""
    calls = [0]
    real: Callable[..., Any] = readiness._score_and_level

    def counting(*args: Any) -> Any:
        calls[0] += 1
        return real(*args)

    monkeypatch.setattr(readiness, "_score_and_level", counting)
    return calls


def test_unchanged_reports_are_not_graded_again(
    policy: PolicySet, model: ReadinessModel, graded: list[int]
) -> None:
    _, state = run(policy, REPORTS, model, {})
    assert graded[0] == len(REPORTS)
    later = NOW + timedelta(days=1)
    again, _ = run(policy, REPORTS, model, state, later)
    assert graded[0] == len(REPORTS)  # every grade read back
    scratch, _ = run(policy, REPORTS, model, {}, later)
    assert again == scratch
    assert {r[0] for r in again} == {"T-LVL", "T-SCORE", "T-B1", "T-AGE", "T-ORG"}


def test_a_repository_gaining_a_report_gets_a_fresh_view(
    policy: PolicySet, model: ReadinessModel, graded: list[int]
) -> None:
    _, state = run(policy, REPORTS, model, {})
    # Repository b's new report passes everything: level 3, score 1, b1 passes.
    newer = report("https://g/b", ["a1", "a2", "a3", "b1", "b2"], report_id="rb2", age=0.5)
    reports = (*REPORTS, newer)
    graded[0] = 0
    again, _ = run(policy, reports, model, state)
    assert graded[0] == 1  # only the new report
    scratch, _ = run(policy, reports, model, {})
    assert again == scratch
    b = {rule: status for rule, subject, status, _ in again if subject == "https://g/b"}
    assert b == {"T-LVL": "pass", "T-SCORE": "pass", "T-B1": "pass", "T-AGE": "pass"}


def test_another_readiness_model_grades_every_report_again(
    policy: PolicySet, model: ReadinessModel, graded: list[int]
) -> None:
    _, state = run(policy, REPORTS, model, {})
    lenient = dataclasses.replace(model, unlock_threshold=0.3)
    graded[0] = 0
    again, _ = run(policy, REPORTS, lenient, state)
    assert graded[0] == len(REPORTS)
    scratch, _ = run(policy, REPORTS, lenient, {})
    assert again == scratch
    levels = {subject: status for rule, subject, status, _ in again if rule == "T-LVL"}
    assert levels["https://g/b"] == "pass"  # 1 of 3 level-1 criteria unlocks level 2 at 0.3


@pytest.mark.parametrize(
    "entry",
    [
        pytest.param([0.1, 9], id="level-not-in-model"),
        pytest.param([1.5, 2], id="score-above-one"),
        pytest.param(["0.5", 2], id="score-as-text"),
        pytest.param([0.5, True], id="level-as-boolean"),
        pytest.param([0.5, 2.0], id="level-as-float"),
        pytest.param([0.5], id="too-short"),
    ],
)
def test_a_damaged_grade_is_worked_out_again(
    policy: PolicySet, model: ReadinessModel, graded: list[int], entry: list[Any]
) -> None:
    first, state = run(policy, REPORTS, model, {})
    key = incremental.grades_key(model)
    stored = orjson.loads(state[key])
    assert len(stored["grades"]) == len(REPORTS)
    stored["grades"] = [[g[0], *entry] for g in stored["grades"]]
    graded[0] = 0
    again, _ = run(policy, REPORTS, model, {**state, key: orjson.dumps(stored)})
    assert graded[0] == len(REPORTS)
    assert again == first


@pytest.mark.parametrize("data", [b"{", b'{"grades": 3}', b"[]", b'{"other": []}'])
def test_a_damaged_grades_row_is_worked_out_again(
    policy: PolicySet, model: ReadinessModel, graded: list[int], data: bytes
) -> None:
    first, state = run(policy, REPORTS, model, {})
    graded[0] = 0
    again, _ = run(policy, REPORTS, model, {**state, incremental.grades_key(model): data})
    assert graded[0] == len(REPORTS)
    assert again == first


def test_verdicts_that_read_the_age_of_a_report_are_not_kept(
    policy: PolicySet, model: ReadinessModel
) -> None:
    """`$age_days` differs on every run, so such verdicts would never be read back: storing
    them was work for nothing (the other readiness rules' verdicts are kept)."""
    _, state = run(policy, REPORTS, model, {})
    kept = {incremental.verdicts_key(r, policy.enums): r.id for r in policy.rules}
    stored = sorted(kept[k] for k in state if k in kept)
    assert stored == ["T-B1", "T-LVL", "T-SCORE"]


_IDS = ("a1", "a2", "a3", "b1", "b2", "zz")
_ENTRY = st.one_of(
    st.builds(
        lambda num, den: {"numerator": num, "denominator": den},
        st.one_of(st.none(), st.integers(0, 3), st.sampled_from([0.5, 1.0])),
        st.integers(0, 3),
    ),
    st.just("not an object"),
)
_CRITERIA = st.dictionaries(st.sampled_from(_IDS), _ENTRY, max_size=len(_IDS))
_REPOS = ("https://g/a", "https://g/b", "https://g/c")


def _reports(
    entries: Sequence[dict[str, Any] | None], tag: str, age: float = 2.0
) -> tuple[ReadinessReport, ...]:
    """A report of each repository with entries (None: no report of that repository)."""
    out = []
    for repo, report_entries in zip(_REPOS, entries, strict=False):
        if report_entries is None:
            continue
        data = {"reportId": f"{tag}-{repo[-1]}", "repoUrl": repo, "report": report_entries}
        when = NOW - timedelta(days=age)
        out.append(ReadinessReport(data["reportId"], repo, when, data, content_hash(data)))
    return tuple(out)


@functools.cache
def _fixed() -> tuple[PolicySet, ReadinessModel]:
    folder = Path(tempfile.mkdtemp(prefix="auditor-grades-"))
    atexit.register(shutil.rmtree, folder, True)  # (read once, kept for the whole session)
    (folder / "model.yaml").write_text(MODEL_YAML)
    (folder / "readiness.yaml").write_text(
        POLICY
        + """\
  - id: T-ZZ
    title: zz is not skipped
    severity: low
    when: {path: criteria.zz.skipped, equals: false, default: false}
    assert: {path: criteria.zz.passed, equals: true}
"""
    )
    return load_policies([folder / "readiness.yaml"]), load_readiness_model(folder / "model.yaml")


@settings(max_examples=250, deadline=None)
@given(
    first=st.lists(_CRITERIA, min_size=1, max_size=3),
    changed=st.lists(st.one_of(st.none(), _CRITERIA), min_size=3, max_size=3),
    threshold=st.sampled_from([None, 0.3, 1.0]),
    rewritten=st.booleans(),
)
def test_read_back_grades_give_the_results_from_scratch(
    first: list[dict[str, Any]],
    changed: list[dict[str, Any] | None],
    threshold: float | None,
    rewritten: bool,
) -> None:
    """Over random reports (skipped, malformed, fractional and unknown criteria), a second
    run reading the first run's state, after some repositories got a new report (or had
    theirs stored again with other content under the same id) and maybe another readiness
    model, gives the results of a run from an empty state."""
    policy, model = _fixed()
    _, state = run(policy, _reports(first, "first"), model, {})
    changed = changed[: len(first)]
    if rewritten:  # the same report ids, other content
        kept = [old if new is None else None for old, new in zip(first, changed, strict=True)]
        reports = (*_reports(kept, "first"), *_reports(changed, "first"))
    else:  # a newer report of each changed repository
        reports = (*_reports(first, "first"), *_reports(changed, "later", age=1.0))
    if threshold is not None:
        model = dataclasses.replace(model, unlock_threshold=threshold)
    again, _ = run(policy, reports, model, state)
    assert again == run(policy, reports, model, {})[0]
