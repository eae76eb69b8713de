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

from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, MutableSequence, Sequence
from dataclasses import dataclass, field
from itertools import accumulate, compress, repeat
from operator import is_not, itemgetter
from typing import Any

from auditor.common.pairs import RevisionCounts, appended
from auditor.diff.table import strict_equal
from auditor.evaluate.conditions import Env
from auditor.evaluate.memo import MemoRule
from auditor.evaluate.model import RuleResult
from auditor.evaluate.projection import strict_json
from auditor.evaluate.rule import Verdict
from auditor.models import Attribution, Revision, Subject
from auditor.operators import MISSING
from auditor.operators.core import evaluation_scope
from auditor.policy.conditions import root_paths
from auditor.policy.model import Rule


@dataclass
class _Node:
    """A key of the dependency trie: rules that read this whole subtree, and everything below."""

    children: dict[str, _Node] = field(default_factory=dict)
    whole: bool = False
    below: set[int] = field(default_factory=set)
    # The values of two or more `children` keys as a tuple (`itemgetter`), made once the trie
    # is built (`_seal`)
    fetch: Callable[[dict[str, Any]], tuple[Any, ...]] | None = None
    nodes: tuple[_Node, ...] = ()  # the children in the same order
    keys: tuple[str, ...] = ()  # and their keys
    sparse: bool = False  # a key of `fetch` was once missing: fetched with `get` instead
    held: tuple[Any, bytes] | None = None  # a value `affected` last saw, and its bytes


def _seal(node: _Node) -> _Node:
    if len(node.children) > 1:
        node.fetch = itemgetter(*node.children)
        node.nodes = tuple(node.children.values())
        node.keys = tuple(node.children)
    for child in node.children.values():
        _seal(child)
    return node


def build_trie(rules: Sequence[Rule]) -> _Node:
    """The trie of every rule's leading path keys (rule positions at and below each key)."""
    reads = []
    for rule in rules:
        conds = [c for c in (rule.when, rule.condition) if c is not None]
        reads.append([p.deps for c in conds for p in root_paths(c)])
    return trie_of(reads)


def trie_of(reads: Sequence[Iterable[tuple[str, ...]]]) -> _Node:
    """The trie of the leading keys each rule (by position) reads."""
    root = _Node()
    for index, paths in enumerate(reads):
        for deps in paths:
            node = root
            node.below.add(index)
            for key in deps:
                node = node.children.setdefault(key, _Node())
                node.below.add(index)
            node.whole = True
    return _seal(root)


def affected(node: _Node, a: Any, b: Any, out: set[int]) -> None:
    """Add to `out` the rules whose inputs differ between documents `a` and `b`."""
    if node.below <= out or a is b:
        return
    if node.whole or not (isinstance(a, dict) and isinstance(b, dict)):
        if a is MISSING or b is MISSING or not (_same_bytes(node, a, b) or strict_equal(a, b)):
            out |= node.below
        return
    # In C: the watched values of both sides, and which of them are not the very same object
    # (an unchanged boolean or None, a value shared between revisions is): only those are
    # looked at below. Plain dicts only (a subclass may answer a missing key). A node whose
    # keys were once found missing fetches with `get` from then on (no KeyError each time).
    if node.fetch is not None and type(a) is dict and type(b) is dict:
        before: Sequence[Any] | None = None
        after: Sequence[Any] = ()
        if not node.sparse:
            try:
                before, after = node.fetch(a), node.fetch(b)
            except KeyError:
                node.sparse = True
        if before is None:
            keys = node.keys
            before = list(map(a.get, keys, repeat(MISSING)))
            after = list(map(b.get, keys, repeat(MISSING)))
        nodes = node.nodes
        for index in compress(range(len(nodes)), map(is_not, before, after)):
            _changed(nodes[index], before[index], after[index], out)
        return
    for key, child in node.children.items():
        _changed(child, a.get(key, MISSING), b.get(key, MISSING), out)


def _same_bytes(node: _Node, a: Any, b: Any) -> bool:
    """True when the type-strict bytes (`strict_json`) of two objects or arrays are equal,
    which `strict_equal` would find equal too; False when they differ or cannot be made (the
    caller then asks `strict_equal`). The walk goes revision to revision, so each node keeps
    the bytes of its last `b`, the next pair's `a`: every value is serialized once."""
    if type(a) is not type(b) or type(a) not in _CONTAINERS:
        return False
    held = node.held
    try:
        before = held[1] if held is not None and held[0] is a else strict_json(a)
        after = strict_json(b)
    except TypeError:  # not JSON, or not type-strict: `strict_equal` decides
        return False
    node.held = (b, after)
    return before == after


def _changed(child: _Node, va: Any, vb: Any, out: set[int]) -> None:
    # Inline fast path: most watched leaves are unchanged scalars.
    if va is vb or (type(va) is type(vb) and type(va) in _SCALARS and va == vb):
        return
    affected(child, va, vb, out)


_SCALARS = frozenset({str, int, float, bool, type(None)})
_CONTAINERS = (dict, list)


def attribution(revision: Revision) -> Attribution:
    """Who and when of a revision."""
    return Attribution(
        revision.revision, revision.updated_at, revision.user.email, revision.user.name
    )


def subject_of(revision: Revision, key: str = "settings") -> Subject:
    """The subject a settings result is about."""
    label = f"settings revision {revision.revision}"
    return Subject("settings", key, label, revision=revision.revision)


_FAIL, _NOT_FAILING = Verdict("fail", ""), Verdict("pass", "")


@dataclass(frozen=True)
class Span:
    """A stretch of revisions in which a settings rule failed: from `start` (who made it fail)
    up to `end`, the first revision at which it no longer failed (None: still failing)."""

    start: Attribution
    end: int | None = None


@dataclass(frozen=True)
class Resume:
    """Where an earlier run left a rule: the statuses and failing spans at revision `last`."""

    last: int
    failing: bool
    spans: tuple[Span, ...]


@dataclass
class _Walk:
    """The state carried from one revision to the next."""

    verdicts: list[Verdict]  # resumed: placeholders carrying only the status
    previous: Revision


class HistoryRun:
    """Evaluates settings rules revision by revision, re-running only affected rules.

    Started fresh (the first revision it sees is evaluated in full) or resumed from where an
    earlier run left off (`resume`, all rules at the same revision `last`: the walk starts at
    the revision after it, diffing against revision `last` itself). Each rule's failing
    spans are kept (a few per rule), not per-revision results; `keep_all` keeps those too.
    """

    def __init__(
        self,
        rules: Sequence[Rule],
        env: Env,
        *,
        keep_all: bool = False,
        memo: bool = True,
        resume: Sequence[Resume] | None = None,
    ) -> None:
        self.rules = rules
        self.memos = [MemoRule(rule, enabled=memo, steady=True) for rule in rules]
        self.env = env
        self.trie = build_trie(rules)
        self.keep_all = keep_all
        self.all_results: list[RuleResult] = []
        self.spans: list[list[Span]] = (
            [list(r.spans) for r in resume] if resume else [[] for _ in rules]
        )
        self.resume = resume
        self.last = resume[0].last if resume else None
        self.state: _Walk | None = None

    def step(self, revision: Revision) -> None:
        """Advance to the next revision of the history (resumed: skip up to `last`)."""
        if self.last is not None and revision.revision <= self.last:
            if revision.revision == self.last and self.resume is not None:
                placeholders = [_FAIL if r.failing else _NOT_FAILING for r in self.resume]
                self.state = _Walk(placeholders, revision)
            return
        if self.state is None:
            if self.last is not None:
                raise RuntimeError(f"resumed history walk did not meet revision {self.last}")
            with evaluation_scope():
                verdicts = [self._verdict(m, revision) for m in self.memos]
            for index, verdict in enumerate(verdicts):
                if verdict.status == "fail":
                    self.spans[index].append(Span(attribution(revision)))
            self.state = _Walk(verdicts, revision)
        else:
            self._advance(self.state, revision)
        if self.keep_all:
            self._keep(self.state, revision)

    def _advance(self, state: _Walk, revision: Revision) -> None:
        changed: set[int] = set()
        affected(self.trie, state.previous.settings, revision.settings, changed)
        with evaluation_scope():
            fresh = [(i, self._verdict(self.memos[i], revision)) for i in sorted(changed)]
        for index, verdict in fresh:
            fails, was = verdict.status == "fail", state.verdicts[index].status == "fail"
            state.verdicts[index] = verdict
            if fails == was:
                continue
            spans = self.spans[index]
            if fails:
                spans.append(Span(attribution(revision)))
            else:
                spans[-1] = Span(spans[-1].start, revision.revision)
        state.previous = revision

    def _verdict(self, memo: MemoRule, revision: Revision) -> Verdict:
        """The words only when every revision's results are kept; else the status alone."""
        if self.keep_all:
            return memo.verdict(revision.settings, self.env)
        status = memo.status(revision.settings, self.env)
        return _FAIL if status == "fail" else _NOT_FAILING

    def since(self, index: int) -> Attribution | None:
        """Where rule `index` started failing, if it fails at the revision walked last."""
        spans = self.spans[index]
        return spans[-1].start if spans and spans[-1].end is None else None

    def _keep(self, state: _Walk, revision: Revision) -> None:
        subject = subject_of(revision, f"settings@{revision.revision}")
        for index, (memo, verdict) in enumerate(zip(self.memos, state.verdicts, strict=True)):
            when = self.since(index) if verdict.status == "fail" else None
            self.all_results.append(verdict.result(memo.rule, subject, since=when))


def failing_counts(numbers: Sequence[int], spans: Iterable[Sequence[Span]]) -> RevisionCounts:
    """(revision, how many rules fail there) for each revision number (ascending)."""
    delta = [0] * (len(numbers) + 1)
    for span in (s for rule_spans in spans for s in rule_spans):
        delta[bisect_left(numbers, span.start.revision)] += 1
        delta[len(numbers) if span.end is None else bisect_left(numbers, span.end)] -= 1
    return RevisionCounts(numbers, accumulate(delta[:-1]))


@dataclass
class SettingsOutcome:
    """What the settings walk gives: results for the revision under test (subject `settings`),
    per-revision results (`--all-revisions`: every revision walked, the one under test included,
    as `settings@N`), failing counts per revision and each rule's spans (to resume from)."""

    current: list[RuleResult]
    per_revision: list[RuleResult]
    failing: RevisionCounts
    spans: list[tuple[Span, ...]]
    last: int | None = None  # the last revision walked


class SettingsWalk:
    """Every settings rule walked over the history up to `current`, one revision at a time
    (`push`): rules with a `resume` entry from the revision after it, the others from the
    first revision. `start` says from which revision the walk needs the history (None: all
    of it); `finish` gives the outcome."""

    def __init__(
        self,
        rules: Sequence[Rule],
        current: Revision,
        env: Env,
        *,
        all_revisions: bool = False,
        memo: bool = True,
        resume: Sequence[Resume | None] = (),
        numbers: Sequence[int] | None = None,
    ) -> None:
        self.rules, self.current, self.env, self.numbers = rules, current, env, numbers
        resume = [_up_to(r, current.revision) for r in resume] or [None] * len(rules)
        self.groups: dict[int | None, list[int]] = {}
        for index, prior in enumerate(resume):
            self.groups.setdefault(prior.last if prior is not None else None, []).append(index)
        self.runs = {
            last: HistoryRun(
                [rules[i] for i in members],
                env,
                keep_all=all_revisions,
                memo=memo,
                resume=None if last is None else [resume[i] for i in members],  # type: ignore[misc]
            )
            for last, members in self.groups.items()
        }
        # The revisions walked, as 8-byte numbers: a list of ints held 4 MB at 100,000. A
        # list after all when a review's proposal follows revision 2^63-1 (`appended`).
        self.seen: MutableSequence[int] = array("q")

    @property
    def memos(self) -> list[MemoRule]:
        """Each rule's verdict cache, in rule order (the one `finish` words its result with)."""
        out: list[MemoRule] = [None] * len(self.rules)  # type: ignore[list-item]
        for last, members in self.groups.items():
            for memo, index in zip(self.runs[last].memos, members, strict=True):
                out[index] = memo
        return out

    @property
    def start(self) -> int | None:
        """The first revision the walk needs (None: the whole history)."""
        if None in self.runs or self.numbers is None:
            return None
        return min(k for k in self.runs if k is not None)

    def push(self, revision: Revision) -> None:
        """Walk one more revision (those after the revision under test are ignored)."""
        if revision.revision > self.current.revision:
            return
        self.seen = appended(self.seen, revision.revision)
        for run in self.runs.values():
            run.step(revision)

    def finish(self) -> SettingsOutcome:
        """The results for the revision under test (worded), per-revision results (if asked),
        failing counts per revision and each rule's spans."""
        current, env = self.current, self.env
        where = {
            i: (run, n) for last, run in self.runs.items() for n, i in enumerate(self.groups[last])
        }
        results, spans = [], []
        with evaluation_scope():
            verdicts = [where[i][0].memos[where[i][1]].verdict(current.settings, env)
                        for i in range(len(self.rules))]  # fmt: skip
        for index, rule in enumerate(self.rules):
            run, n = where[index]
            verdict = verdicts[index]
            since = run.since(n) if verdict.status == "fail" else None
            results.append(verdict.result(rule, subject_of(current), since=since))
            spans.append(tuple(run.spans[n]))
        per_revision = [r for run in self.runs.values() for r in run.all_results]
        counted = self.numbers if self.start is not None and self.numbers is not None else self.seen
        counted = counted[: bisect_right(counted, current.revision)]
        last = self.seen[-1] if self.seen else None
        return SettingsOutcome(results, per_revision, failing_counts(counted, spans), spans, last)


def _up_to(prior: Resume | None, revision: int) -> Resume | None:
    """A rule's state cut back to an earlier revision (`--at`): its spans as they stood then."""
    if prior is None or prior.last <= revision:
        return prior
    spans = tuple(
        Span(s.start, s.end if s.end is not None and s.end <= revision else None)
        for s in prior.spans
        if s.start.revision <= revision
    )
    return Resume(revision, bool(spans) and spans[-1].end is None, spans)
