"""Change rules over revision steps, streamed and memoised.

Takes the change rules and a re-iterable of (before, after) revision pairs, gives the results a
user acts on: one per rule and step that did not pass (the subject `change:<before>..<after>`,
`since` the step's own revision), and for a rule that nothing failed one summary result on the
subject `change:all` — a long history would otherwise bury its few findings under tens of
thousands of passes. `every_step=True` (`--all-revisions`) keeps every step's result. The
step document holds both sides, the Change list (computed only when a rule reads it), the
author and the time; a rule's verdict is reused whenever its projection of that document
repeats (see `memo`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from itertools import pairwise
from typing import Any

from auditor.diff.engine import DEFAULT_LIST_TABLE, ListTable, diff_revisions
from auditor.evaluate.changewords import explain_step
from auditor.evaluate.conditions import Env
from auditor.evaluate.history import affected, attribution, trie_of
from auditor.evaluate.memo import MemoRule
from auditor.evaluate.model import RuleResult
from auditor.evaluate.sieve import Evaluate, change_gates, idle
from auditor.evaluate.status import condition_status
from auditor.models import QUIET_STATUSES, Attribution, Evidence, Revision, Status, Subject
from auditor.policy.model import Rule
from auditor.redact.plain import MARKER_START

Step = tuple[Revision, Revision]
_SIDES = (("before",), ("after",))


@dataclass(frozen=True)
class Steps:
    """Consecutive (before, after) pairs of a re-iterable history, derived on every iteration."""

    history: Iterable[Revision]

    def __iter__(self) -> Iterator[Step]:
        return pairwise(self.history)


def change_document(
    before: Revision,
    after: Revision,
    *,
    with_changes: bool,
    table: ListTable = DEFAULT_LIST_TABLE,
) -> dict[str, Any]:
    """What a change rule sees: both sides, the Change list, the author and the time."""
    changes = diff_revisions(before.settings, after.settings, table=table) if with_changes else []
    return {
        "before": before.settings,
        "after": after.settings,
        "changes": [
            {"path": c.path, "kind": c.kind, "before": c.before, "after": c.after,
             "old_path": c.old_path}
            for c in changes
        ],
        **_author(after),
        "revision": after.revision,
        "previous_revision": before.revision,
        "updated_at": after.updated_at.isoformat(),
    }  # fmt: skip


def _author(after: Revision) -> dict[str, str]:
    """The author's email and name; an unknown author is absent, so author rules give `unknown`
    (their `on_missing`) rather than fail on an empty or placeholder address. So is one the
    redactor hid, whole or in part (a service account's random id that the detectors take for a
    token): nobody can tell who it is, and a test of it (`matches`) would be an `error` on every
    run from then on, which no waiver clears."""
    user = after.user
    return {
        k: v
        for k, v in (("author", user.email), ("author_name", user.name))
        if v and MARKER_START not in v
    }


def step_subject(before: Revision, after: Revision) -> Subject:
    """The subject of one step's results."""
    key = f"change:{before.revision}..{after.revision}"
    label = f"revision {before.revision} -> {after.revision}"
    return Subject("change", key, label, revision=after.revision)


@dataclass
class Tally:
    """One change rule's steps so far: how many, each status's count, the revisions spanned and
    the results a user acts on (every step that did not pass). An earlier run's tally is
    where a resumed rule starts (see `auditor.evaluate.incremental`)."""

    steps: int = 0
    counts: Counter[str] = field(default_factory=Counter)
    first: int | None = None  # the `before` revision of the first step
    last: int | None = None  # the `after` revision of the last step
    open: list[RuleResult] = field(default_factory=list)
    new_open: int = 0  # of `open`, how many this run found (the rest an earlier run did)
    #: Gives the JSON text the earlier run's state holds of the rest (`incremental.load_tally`),
    #: written again as it is (None: each result is dumped anew).
    stored: Callable[[], bytes] | None = None

    def add(self, status: Status, before: int, after: int, result: RuleResult | None) -> None:
        """Count one step's status (and keep its result when it did not pass)."""
        self.steps += 1
        self.counts[status] += 1
        self.first = before if self.first is None else self.first
        self.last = after
        if status not in QUIET_STATUSES and result is not None:
            self.open.append(result)
            self.new_open += 1


class ChangeRun:
    """Evaluates change rules step by step, counting the steps seen.

    A rule with an earlier run's `Tally` (`resume`) is only run on the steps after its `last`
    revision; the others on every step."""

    def __init__(
        self,
        rules: Sequence[Rule],
        env: Env,
        *,
        memo: bool = True,
        every_step: bool = False,
        table: ListTable = DEFAULT_LIST_TABLE,
        resume: Sequence[Tally | None] = (),
    ) -> None:
        self.rules = [MemoRule(rule, enabled=memo, steady=True) for rule in rules]
        self.env = env
        self.with_changes = any(d[:1] in ((), ("changes",)) for r in self.rules for d in r.reads)
        self.every_step = every_step
        self.table = table
        self.steps = 0
        self.tallies = [t if t is not None else Tally() for t in (resume or [None] * len(rules))]
        self.resumed = [t is not None for t in (resume or [None] * len(rules))]
        self._first_quiet: list[RuleResult] = []
        # Skip what cannot change: a rule that reads only `before.…` / `after.…` settings
        # paths, none of which changed in this step or the one before, sees the very values
        # it saw then, so its status is the same (the trie says which rules' paths changed).
        self.pure = [
            m.cache is not None and bool(m.reads) and all(d[:1] in _SIDES for d in m.reads)
            for m in self.rules
        ]
        # And a rule whose changes are read only through quantifiers with a sieve: on a
        # step none of whose changes concerns it (each sieve tells every change fails), after
        # a step of the same kind, with its settings paths unmoved (`sieve.change_gates`).
        self.gates = [
            None if p or not memo else change_gates(m.rule)
            for m, p in zip(self.rules, self.pure, strict=True)
        ]
        self._idle: list[str | None] = [None] * len(self.rules)  # each rule's last step's `idle`
        # (without a pure rule, the gated rules' settings paths are watched all the same: a
        # file of change rules none of which is pure lost a failing step, reviewer R93 #1)
        self.watched = any(self.pure) or any(g is not None for g in self.gates)
        self.trie = trie_of(
            [
                [d[1:] for d in m.reads if d[:1] in _SIDES] if p or g is not None else []
                for m, p, g in zip(self.rules, self.pure, self.gates, strict=True)
            ]
        )
        self._steady: list[Status | None] = [None] * len(self.rules)
        self._evidence: dict[int, tuple[Evidence, ...]] = {}  # see `_kept`
        self._authors: dict[str, str] = {}  # see `_attribution`
        self._moved: set[int] = set()
        self._after: int | None = None

    @property
    def start(self) -> int | None:
        """The revision the steps must start from: None when a rule needs every step."""
        if not all(self.resumed):
            return None
        return min((t.last or 0 for t in self.tallies), default=None)

    @property
    def total_steps(self) -> int:
        """Steps evaluated, counting those an earlier run evaluated for resumed rules."""
        return max((t.steps for t in self.tallies), default=0)

    def results(self, steps: Iterable[Step]) -> Iterator[RuleResult]:
        """Each rule's open result on each step, then a summary for the rules nothing failed.

        A single step (a review) keeps all of its results: there is nothing to summarise."""
        for before, after in steps:
            yield from self.push(before, after)
        yield from self.finish()

    def push(self, before: Revision, after: Revision) -> list[RuleResult]:
        """Evaluate one more step; its results to report."""
        self.steps += 1
        shown: list[RuleResult] = []
        for index, status, result in self._step(before, after):
            self.tallies[index].add(status, before.revision, after.revision, result)
            if result is None:
                continue
            if self.every_step or status not in QUIET_STATUSES:
                shown.append(result)
            elif self.steps == 1 and not self.resumed[index]:
                self._first_quiet.append(result)
        return shown

    def finish(self) -> Iterator[RuleResult]:
        """The results an earlier run found (resumed rules), then the summaries."""
        for tally, resumed in zip(self.tallies, self.resumed, strict=True):
            if resumed:
                yield from tally.open[: len(tally.open) - tally.new_open]
        if self.total_steps == 1:
            yield from self._first_quiet
        if self.every_step or self.total_steps < 2:
            return
        for memo, tally in zip(self.rules, self.tallies, strict=True):
            if tally.steps and all(status in QUIET_STATUSES for status in tally.counts):
                yield self._summary(memo.rule, tally)

    def _summary(self, rule: Rule, tally: Tally) -> RuleResult:
        counts = tally.counts
        label = f"all {tally.steps} steps (revisions {tally.first} -> {tally.last})"
        subject = Subject("change", "change:all", label)
        status: Status = "pass" if counts["pass"] else "not_applicable"
        skipped = counts["not_applicable"]
        message = (
            f"{counts['pass']} of {tally.steps} steps pass, "
            f"{skipped} {'does' if skipped == 1 else 'do'} not apply; none fails"
        )
        return RuleResult(rule, subject, status, message)

    def _step(
        self, before: Revision, after: Revision
    ) -> Iterator[tuple[int, Status, RuleResult | None]]:
        """Each due rule's status on the step, with its worded result when it is shown: on
        every step with `every_step`, on the first step (a single step shows all), and
        otherwise only when it did not pass — the words of the rest are never built."""
        due = [
            i
            for i, tally in enumerate(self.tallies)
            if not self.resumed[i] or (tally.last is not None and after.revision > tally.last)
        ]
        if not due:
            return
        changed: set[int] = set()
        if self.watched:  # (the settings paths of the pure and the gated rules)
            affected(self.trie, before.settings, after.settings, changed)
        steady = self._after == before.revision  # the step follows the one walked last
        moved = changed | self._moved  # the rule's values differ from those a step ago
        self._moved, self._after = changed, after.revision
        doc = change_document(before, after, with_changes=self.with_changes, table=self.table)
        env = Env(self.env.now, (before.settings, after.settings), table=self.table)
        subject, since = step_subject(before, after), self._attribution(after)
        words = self.every_step or self.steps == 1
        evaluate: Evaluate = lambda cond, item: condition_status(cond, item, env)  # noqa: E731
        for index in due:
            memo = self.rules[index]
            gates, quiet = self.gates[index], None
            if gates is not None:
                was, self._idle[index] = self._idle[index], idle(gates, doc["changes"], evaluate)
                quiet = self._idle[index] is not None and self._idle[index] == was
            if not words:
                status = self._steady[index]
                unmoved = steady and index not in moved and (self.pure[index] or quiet)
                if status is None or not unmoved:
                    status = self._steady[index] = memo.status(doc, env)
                if status in QUIET_STATUSES:
                    yield index, status, None
                    continue
            verdict = memo.verdict(doc, env)
            result = verdict.result(memo.rule, subject, since=since)
            self._steady[index] = result.status
            quiet = result.status in QUIET_STATUSES
            shown = result if quiet else self._kept(result, doc, verdict.count)
            yield index, result.status, shown

    def _attribution(self, after: Revision) -> Attribution:
        """Who and when of the step, the author's address and name one text each: every
        failing step keeps them, and a history has far fewer authors than steps."""
        who = attribution(after)
        email = self._authors.setdefault(who.author_email, who.author_email)
        name = self._authors.setdefault(who.author_name, who.author_name)
        return Attribution(who.revision, who.updated_at, email, name)

    def _kept(self, result: RuleResult, doc: dict[str, Any], count: int = 1) -> RuleResult:
        """A result that did not pass, worded; its evidence is the one object for equal
        evidence (a long history's failing steps repeat a few hundred evidence lists, and
        every one of them is held until the reports are written)."""
        worded = explain_step(result, doc, count)
        if not worded.evidence:
            return worded
        # Equal by `repr`, which tells 1, 1.0 and True apart (`==` does not); filed under its
        # hash, so a history whose every step has new evidence does not hold it twice.
        text = repr(worded.evidence)
        found = self._evidence.setdefault(hash(text), worded.evidence)
        if found is worded.evidence or repr(found) != text:
            return worded
        return replace(worded, evidence=found)
