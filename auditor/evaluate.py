"""The evaluate stage: a `PolicySet` and `EvaluationInputs` in, an `Evaluation` out.

Settings rules run on the revision under test (with attribution from the history, see
`evaluate_history`), change rules on each stored step, readiness rules on each repository's
latest report and org rules on the aggregates (computed by `auditor.readiness`). A rule whose
target has no input is listed in `not_evaluated`, never passed silently. Results come in rule
order, then subject.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from auditor import readiness
from auditor.diff import diff_revisions
from auditor.evaluate_history import attribution, evaluate_settings
from auditor.evaluate_rule import Verdict, run_rule
from auditor.models import Evaluation, EvaluationInputs, Revision, Rule, RuleResult, Subject
from auditor.policy import PolicySet
from auditor.policy.conditions import root_paths
from auditor.policy.outcome import Env

__all__ = ["evaluate"]

_NO_INPUT = {
    "settings": "no settings revision",
    "change": "no revision steps (fewer than two revisions)",
    "readiness": "no readiness reports",
    "org": "no readiness reports",
}


def evaluate(policy: PolicySet, inputs: EvaluationInputs) -> Evaluation:
    """Evaluate every rule against the inputs its target reads."""
    env = Env(inputs.now)
    by_target = {t: [r for r in policy.rules if r.target == t] for t in _NO_INPUT}
    results: list[RuleResult] = []
    missing: list[str] = []
    failing: tuple[tuple[int, int], ...] = ()
    if by_target["settings"] and inputs.settings is not None:
        history = inputs.history or (inputs.settings,)
        current, per_revision, failing = evaluate_settings(
            by_target["settings"], inputs.settings, history, env, all_revisions=inputs.all_revisions
        )
        results += current + per_revision
    if by_target["change"] and inputs.steps:
        results += _changes(by_target["change"], inputs.steps, env)
    if inputs.reports:
        results += _readiness(by_target["readiness"], by_target["org"], inputs, env)
    for target, rules in by_target.items():
        if rules and not _has_input(target, inputs):
            missing += [f"{r.id}: not evaluated ({_NO_INPUT[target]})" for r in rules]
    order = {rule.id: i for i, rule in enumerate(policy.rules)}
    results.sort(key=lambda r: (order[r.rule.id], _subject_order(r.subject)))
    return Evaluation(tuple(results), tuple(missing), failing)


def _has_input(target: str, inputs: EvaluationInputs) -> bool:
    if target == "settings":
        return inputs.settings is not None
    if target == "change":
        return bool(inputs.steps)
    return bool(inputs.reports)


def _subject_order(subject: Subject) -> tuple[int, int, str]:
    return (0 if "@" not in subject.key else 1, subject.revision or 0, subject.key)


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


def _reads_changes(rules: Sequence[Rule]) -> bool:
    conds = [c for r in rules for c in (r.when, r.condition) if c is not None]
    return any(p.deps[:1] in ((), ("changes",)) for c in conds for p in root_paths(c))


def _changes(
    rules: Sequence[Rule], steps: Sequence[tuple[Revision, Revision]], env: Env
) -> Iterator[RuleResult]:
    with_changes = _reads_changes(rules)
    for before, after in steps:
        doc = change_document(before, after, with_changes=with_changes)
        step_env = Env(env.now, (before.settings, after.settings))
        key = f"change:{before.revision}..{after.revision}"
        subject = Subject("change", key, f"revision {before.revision} -> {after.revision}",
                          revision=after.revision)  # fmt: skip
        for rule in rules:
            yield run_rule(rule, doc, step_env).result(rule, subject, since=attribution(after))


def _readiness(
    repo_rules: Sequence[Rule], org_rules: Sequence[Rule], inputs: EvaluationInputs, env: Env
) -> Iterator[RuleResult]:
    model = inputs.readiness_model or readiness.load_readiness_model(None)
    every = bool(inputs.options.get("all_reports"))
    reports = inputs.reports if every else readiness.latest_per_repo(inputs.reports)
    for report in reports if repo_rules else ():
        view = readiness.readiness_view(report, model, inputs.now)
        key = f"{report.repo_url}@{report.report_id}" if every else report.repo_url
        subject = Subject("readiness", key, report.repo_url, repo_url=report.repo_url)
        yield from (_run(rule, view, env, subject) for rule in repo_rules)
    if org_rules:
        view = readiness.org_view(inputs.reports, model, inputs.now)
        subject = Subject("org", "org", "organization")
        yield from (_run(rule, view, env, subject) for rule in org_rules)


def _run(rule: Rule, doc: Any, env: Env, subject: Subject) -> RuleResult:
    verdict: Verdict = run_rule(rule, doc, env)
    return verdict.result(rule, subject)
