"""Settings rules over a revision history, incrementally, with attribution.

Takes the settings rules, the revision under test and the ascending history, gives the results
for the revision under test (each failure carrying `since`: the revision where the rule last went
from not-failing to failing, with its author and time), optionally the results of every
revision, and the failing-rule count per revision. A rule is re-evaluated for a revision only
when a value at one of its paths changed: a trie of the rules' leading keys is walked over both
revisions with type-strict equality, so untouched subtrees cost one dict lookup; a rule whose
inputs did change reuses its verdict when its projection was seen before (`memo`).
The history is streamed: only the previous revision is held.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from auditor.diff.table import strict_equal
from auditor.evaluate.conditions import Env
from auditor.evaluate.memo import MemoRule
from auditor.evaluate.model import RuleResult
from auditor.evaluate.rule import Verdict, run_rule
from auditor.models import Attribution, Revision, Subject
from auditor.operators import MISSING
from auditor.policy.conditions import root_paths
from auditor.policy.model import Rule


@dataclass
class _Node:
    """A key of the dependency trie: rules that read this whole subtree, and everything below."""

    children: dict[str, _Node] = field(default_factory=dict)
    whole: bool = False
    below: set[int] = field(default_factory=set)


def build_trie(rules: Sequence[Rule]) -> _Node:
    """The trie of every rule's leading path keys (rule positions at and below each key)."""
    root = _Node()
    for index, rule in enumerate(rules):
        conds = [c for c in (rule.when, rule.condition) if c is not None]
        for path in (p for c in conds for p in root_paths(c)):
            node = root
            node.below.add(index)
            for key in path.deps:
                node = node.children.setdefault(key, _Node())
                node.below.add(index)
            node.whole = True
    return root


def affected(node: _Node, a: Any, b: Any, out: set[int]) -> None:
    """Add to `out` the rules whose inputs differ between documents `a` and `b`."""
    if node.below <= out or a is b:
        return
    if node.whole or not (isinstance(a, dict) and isinstance(b, dict)):
        if a is MISSING or b is MISSING or not strict_equal(a, b):
            out |= node.below
        return
    for key, child in node.children.items():
        va, vb = a.get(key, MISSING), b.get(key, MISSING)
        # Inline fast path: most watched leaves are unchanged scalars.
        if va is vb or (type(va) is type(vb) and type(va) in _SCALARS and va == vb):
            continue
        affected(child, va, vb, out)


_SCALARS = frozenset({str, int, float, bool, type(None)})


def attribution(revision: Revision) -> Attribution:
    """Who and when of a revision."""
    return Attribution(
        revision.revision, revision.updated_at, revision.user.email, revision.user.name
    )


def subject_of(revision: Revision, key: str = "settings") -> Subject:
    """The subject a settings result is about."""
    label = f"settings revision {revision.revision}"
    return Subject("settings", key, label, revision=revision.revision)


@dataclass
class _Walk:
    """The state carried from one revision to the next."""

    verdicts: list[Verdict]
    since: list[Revision | None]
    previous: Revision
    failing: int = 0


class HistoryRun:
    """Evaluates settings rules revision by revision, re-running only affected rules."""

    def __init__(
        self, rules: Sequence[Rule], env: Env, *, keep_all: bool = False, memo: bool = True
    ) -> None:
        self.rules = rules
        self.memos = [MemoRule(rule, enabled=memo) for rule in rules]
        self.env = env
        self.trie = build_trie(rules)
        self.keep_all = keep_all
        self.all_results: list[RuleResult] = []
        self.failing: list[tuple[int, int]] = []
        self.state: _Walk | None = None

    def step(self, revision: Revision) -> None:
        """Advance to the next revision of the history."""
        if self.state is None:
            verdicts = [m.verdict(revision.settings, self.env) for m in self.memos]
            since = [revision if v.status == "fail" else None for v in verdicts]
            failing = sum(v.status == "fail" for v in verdicts)
            self.state = _Walk(verdicts, since, revision, failing)
        else:
            self._advance(self.state, revision)
        self.failing.append((revision.revision, self.state.failing))
        if self.keep_all:
            self._keep(self.state, revision)

    def _advance(self, state: _Walk, revision: Revision) -> None:
        changed: set[int] = set()
        affected(self.trie, state.previous.settings, revision.settings, changed)
        for index in sorted(changed):
            verdict = self.memos[index].verdict(revision.settings, self.env)
            was_failing = state.verdicts[index].status == "fail"
            state.failing += (verdict.status == "fail") - was_failing
            state.verdicts[index] = verdict
            if verdict.status != "fail":
                state.since[index] = None
            elif not was_failing:
                state.since[index] = revision
        state.previous = revision

    def _keep(self, state: _Walk, revision: Revision) -> None:
        subject = subject_of(revision, f"settings@{revision.revision}")
        for rule, verdict, since in zip(self.rules, state.verdicts, state.since, strict=True):
            when = attribution(since) if since is not None else None
            self.all_results.append(verdict.result(rule, subject, since=when))


def evaluate_settings(
    rules: Sequence[Rule],
    current: Revision,
    history: Iterable[Revision],
    env: Env,
    *,
    all_revisions: bool = False,
    memo: bool = True,
) -> tuple[list[RuleResult], list[RuleResult], tuple[tuple[int, int], ...]]:
    """Results for `current`, per-revision results (if asked), and failing counts per revision."""
    run = HistoryRun(rules, env, keep_all=all_revisions, memo=memo)
    for revision in history:
        if revision.revision <= current.revision:
            run.step(revision)
    state = run.state
    same_as_last = state is not None and (state.previous.revision, state.previous.content_hash) == (
        current.revision,
        current.content_hash,
    )
    if state is not None and same_as_last:
        verdicts = state.verdicts
    else:
        verdicts = [run_rule(r, current.settings, env) for r in rules]
    results = []
    for index, (rule, verdict) in enumerate(zip(rules, verdicts, strict=True)):
        since = _since(state, index, current) if verdict.status == "fail" else None
        results.append(verdict.result(rule, subject_of(current), since=since))
    return results, run.all_results, tuple(run.failing)


def _since(state: _Walk | None, index: int, current: Revision) -> Attribution | None:
    # A proposed revision that fails a rule already failing in the history inherits its start.
    started = state.since[index] if state is not None else None
    return attribution(started) if started is not None else None
