"""Change rules over revision steps, streamed and memoised.

Takes the change rules and a re-iterable of (before, after) revision pairs, gives one result per
rule and step (the subject `change:<before>..<after>`, `since` the step's own revision). The
step document holds both sides, the Change list (computed only when a rule reads it), the
author and the time; a rule's verdict is reused whenever its projection of that document
repeats (see `evaluate_memo`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

from auditor.diff import diff_revisions
from auditor.evaluate_history import attribution
from auditor.evaluate_memo import MemoRule
from auditor.models import Revision, Rule, RuleResult, Subject
from auditor.policy.outcome import Env

Step = tuple[Revision, Revision]


@dataclass(frozen=True)
class Steps:
    """Consecutive (before, after) pairs of a re-iterable history, derived on every iteration."""

    history: Iterable[Revision]

    def __iter__(self) -> Iterator[Step]:
        return pairwise(self.history)


def change_document(before: Revision, after: Revision, *, with_changes: bool) -> dict[str, Any]:
    """What a change rule sees: both sides, the Change list, the author and the time."""
    changes = diff_revisions(before.settings, after.settings) if with_changes else []
    return {
        "before": before.settings,
        "after": after.settings,
        "changes": [
            {"path": c.path, "kind": c.kind, "before": c.before, "after": c.after,
             "old_path": c.old_path}
            for c in changes
        ],
        "author": after.user.email,
        "author_name": after.user.name,
        "revision": after.revision,
        "previous_revision": before.revision,
        "updated_at": after.updated_at.isoformat(),
    }  # fmt: skip


def step_subject(before: Revision, after: Revision) -> Subject:
    """The subject of one step's results."""
    key = f"change:{before.revision}..{after.revision}"
    label = f"revision {before.revision} -> {after.revision}"
    return Subject("change", key, label, revision=after.revision)


class ChangeRun:
    """Evaluates change rules step by step, counting the steps seen."""

    def __init__(self, rules: Sequence[Rule], env: Env, *, memo: bool = True) -> None:
        self.rules = [MemoRule(rule, enabled=memo) for rule in rules]
        self.env = env
        self.with_changes = any(d[:1] in ((), ("changes",)) for r in self.rules for d in r.reads)
        self.steps = 0

    def results(self, steps: Iterable[Step]) -> Iterator[RuleResult]:
        """Every rule's result on every step, step by step."""
        for before, after in steps:
            self.steps += 1
            yield from self._step(before, after)

    def _step(self, before: Revision, after: Revision) -> Iterator[RuleResult]:
        doc = change_document(before, after, with_changes=self.with_changes)
        env = Env(self.env.now, (before.settings, after.settings))
        subject, since = step_subject(before, after), attribution(after)
        for memo in self.rules:
            yield memo.verdict(doc, env).result(memo.rule, subject, since=since)
