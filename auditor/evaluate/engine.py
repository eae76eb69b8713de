"""The evaluate stage: a `PolicySet` and `EvaluationInputs` in, an `Evaluation` out.

Settings rules run on the revision under test (with attribution from the history, see
`history`), change rules on each stored step (`change`), readiness rules on each repository's
latest report and org rules on the aggregates (computed by `readiness`). A rule whose
target has no input is listed in `not_evaluated`, never passed silently. Results come in rule
order, then subject. `history` and `steps` are streamed (each walked once per target), and a
rule's verdict is reused whenever the values it reads repeat (`memo`); `memoise=False`
turns that reuse off (results are identical either way).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any, TypeVar

from auditor.evaluate import readiness
from auditor.evaluate.change import ChangeRun, Steps, change_document
from auditor.evaluate.conditions import Env
from auditor.evaluate.history import evaluate_settings
from auditor.evaluate.model import Evaluation, EvaluationInputs, RuleResult
from auditor.evaluate.rule import Verdict, run_rule
from auditor.evaluate.usage import evaluate_usage
from auditor.models import Subject
from auditor.policy import PolicySet
from auditor.policy.model import Rule

__all__ = ["Steps", "change_document", "evaluate"]

T = TypeVar("T")

_NO_INPUT = {
    "settings": "no settings revision",
    "change": "no revision steps (fewer than two revisions)",
    "readiness": "no readiness reports",
    "org": "no readiness reports",
    "usage": "no usage analytics",  # said once, by `evaluate_usage`
}


def evaluate(policy: PolicySet, inputs: EvaluationInputs) -> Evaluation:
    """Evaluate every rule against the inputs its target reads."""
    env = Env(inputs.now)
    by_target = {t: [r for r in policy.rules if r.target == t] for t in _NO_INPUT}
    results: list[RuleResult] = []
    missing: list[str] = []
    failing: tuple[tuple[int, int], ...] = ()
    memo = inputs.memoise
    if by_target["settings"] and inputs.settings is not None:
        history = _reiterable(inputs.history or (inputs.settings,), "history")
        current, per_revision, failing = evaluate_settings(
            by_target["settings"],
            inputs.settings,
            history,
            env,
            all_revisions=inputs.all_revisions,
            memo=memo,
        )
        results += current + per_revision
    steps = 0
    if by_target["change"]:
        run = ChangeRun(
            by_target["change"],
            env,
            memo=memo,
            every_step=inputs.all_revisions,
            table=inputs.list_table,
        )
        results += run.results(_reiterable(inputs.steps, "steps"))
        steps = run.steps
    if inputs.reports:
        results += _readiness(by_target["readiness"], by_target["org"], inputs, env)
    if by_target["usage"]:
        history = inputs.history or ((inputs.settings,) if inputs.settings else ())
        usage_results, why = evaluate_usage(
            by_target["usage"], inputs.usage, _reiterable(history, "history"), inputs.now
        )
        results += usage_results
        missing += [why] if why else []
    for target, rules in by_target.items():
        if rules and target != "usage" and not _has_input(target, inputs, steps):
            missing += [f"{r.id}: not evaluated ({_NO_INPUT[target]})" for r in rules]
    order = {rule.id: i for i, rule in enumerate(policy.rules)}
    results.sort(key=lambda r: (order[r.rule.id], _subject_order(r.subject)))
    return Evaluation(tuple(results), tuple(missing), failing)


def _reiterable(items: Iterable[T], name: str) -> Iterable[T]:
    # A one-shot iterator would silently look empty the second time it is walked.
    if iter(items) is items:
        raise TypeError(f"EvaluationInputs.{name} must be re-iterable, not a one-shot iterator")
    return items


def _has_input(target: str, inputs: EvaluationInputs, steps: int) -> bool:
    if target == "settings":
        return inputs.settings is not None
    if target == "change":
        return steps > 0
    return bool(inputs.reports)


def _subject_order(subject: Subject) -> tuple[int, int, str]:
    return (0 if "@" not in subject.key else 1, subject.revision or 0, subject.key)


def _readiness(
    repo_rules: Sequence[Rule], org_rules: Sequence[Rule], inputs: EvaluationInputs, env: Env
) -> Iterator[RuleResult]:
    model = inputs.readiness_model or readiness.load_readiness_model(None)
    for report in readiness.latest_per_repo(inputs.reports) if repo_rules else ():
        view = readiness.readiness_view(report, model, inputs.now)
        subject = Subject("readiness", report.repo_url, report.repo_url, repo_url=report.repo_url)
        yield from (_run(rule, view, env, subject) for rule in repo_rules)
    if org_rules:
        view = readiness.org_view(inputs.reports, model, inputs.now)
        subject = Subject("org", "org", "organization")
        yield from (_run(rule, view, env, subject) for rule in org_rules)


def _run(rule: Rule, doc: Any, env: Env, subject: Subject) -> RuleResult:
    verdict: Verdict = run_rule(rule, doc, env)
    return verdict.result(rule, subject)
