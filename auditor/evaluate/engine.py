"""The evaluate stage: a `PolicySet` and `EvaluationInputs` in, an `Evaluation` out.

Settings rules run on the revision under test (with attribution from the history, see
`history`), change rules on each stored step (`change`), readiness rules on each repository's
latest report and org rules on the aggregates (computed by `readiness`). A rule whose
target has no input is listed in `not_evaluated`, never passed silently. Results come in rule
order, then subject. `history` and `steps` are streamed — when the steps are the history's own
consecutive pairs, one pass over it feeds both — and a rule's verdict is reused whenever the
values it reads repeat (`memo`); `memoise=False` turns that reuse off (results are identical
either way). With `prior` (an earlier run's state, see `incremental`) only what is new is
evaluated, reading the history from `tail(n)`; with `remember` the new state is returned.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import TypeVar

from auditor.evaluate import incremental, readiness
from auditor.evaluate.change import ChangeRun, Step, Steps, Tally, change_document
from auditor.evaluate.conditions import Env
from auditor.evaluate.history import Resume, SettingsOutcome, SettingsWalk
from auditor.evaluate.memo import MemoRule
from auditor.evaluate.model import Evaluation, EvaluationInputs, RuleResult
from auditor.evaluate.rule import Verdict, run_rule
from auditor.evaluate.usage import evaluate_usage
from auditor.models import Evidence, Revision, Subject, make_subject
from auditor.operators.core import evaluation_scope
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
    failing: Sequence[tuple[int, int]] = ()
    failing_spans: tuple[tuple[str, tuple[tuple[int, int | None], ...]], ...] = ()
    memo = inputs.memoise
    state = _State(policy, inputs)
    walk: SettingsWalk | None = None
    if by_target["settings"] and inputs.settings is not None:
        rules = by_target["settings"]
        walk = SettingsWalk(
            rules,
            inputs.settings,
            env,
            all_revisions=inputs.all_revisions,
            memo=memo,
            resume=[state.resume(r) for r in rules],
            numbers=inputs.revision_numbers,
        )
        # The verdicts on the revision under test an earlier run worded, read back by the
        # projection they were made for.
        state.seed(walk.memos)
    run: ChangeRun | None = None
    if by_target["change"]:
        run = ChangeRun(
            by_target["change"],
            env,
            memo=memo,
            every_step=inputs.all_revisions,
            table=inputs.list_table,
            resume=state.tallies(by_target["change"]),
        )
    history = inputs.history or _one(inputs.settings)
    if walk is not None:
        _reiterable(history, "history")
    if run is not None:
        _reiterable(inputs.steps, "steps")
    if walk is not None and run is not None and _same_walk(inputs):
        # One pass over the history feeds both: it is read (and parsed) once per run.
        starts = (walk.start, run.start if state.prior else None)
        begin = None if None in starts else min(s for s in starts if s is not None)
        results += _both(walk, run, _from(history, begin, inputs.tail))
    else:
        if walk is not None:
            for revision in _from(history, walk.start, inputs.tail):
                walk.push(revision)
        if run is not None:
            results += run.results(state.steps(inputs, run.start))
    if walk is not None and inputs.settings is not None:
        walked = walk.finish()
        # `--all-revisions` reports each revision once, as `settings@N`, the one under test
        # included: its findings keep their fingerprints from one such run to the next when
        # newer revisions arrive (it never compares with a plain run, whose subject is
        # `settings`). `walked.current` still feeds the state kept below.
        results += walked.per_revision if inputs.all_revisions else walked.current
        failing = walked.failing
        failing_spans = tuple(
            (rule.id, tuple((s.start.revision, s.end) for s in spans))
            for rule, spans in zip(by_target["settings"], walked.spans, strict=True)
            if spans
        )
        state.keep_settings(by_target["settings"], walked, inputs.settings.revision)
        state.keep_verdicts(walk.memos)
    steps_seen = 0
    if run is not None:
        steps_seen = run.total_steps
        state.keep_change(by_target["change"], run)
        alone = None if steps_seen else _alone(inputs)
        if alone is not None:  # nothing to judge, and so nothing left unjudged
            results += [_no_step(rule, alone) for rule in by_target["change"]]
            by_target["change"] = []
    if inputs.reports:
        repo_memos = state.memos(by_target["readiness"])
        results += _readiness(repo_memos, by_target["org"], inputs, env, state)
        state.keep_verdicts(repo_memos)
    if by_target["usage"]:
        usage_memos = state.memos(by_target["usage"])
        usage_results, why = evaluate_usage(
            by_target["usage"],
            inputs.usage,
            _reiterable(history, "history"),
            inputs.now,
            history_from=inputs.history_from if inputs.history else None,
            memos=usage_memos,
        )
        state.keep_verdicts(usage_memos)
        results += usage_results
        missing += [why] if why else []
    for target, rules in by_target.items():
        if rules and target != "usage" and not _has_input(target, inputs, steps_seen):
            missing += [f"{r.id}: not evaluated ({_NO_INPUT[target]})" for r in rules]
    # Rule order, then subject order: two stable passes whose keys are shared per subject and
    # per rule, so `--all-revisions`' 100,000s of results need no key tuple each.
    subjects: dict[int, tuple[int, int, str]] = {}
    results.sort(key=lambda r: subjects.get(id(r.subject)) or _order_of(subjects, r.subject))
    order = {rule.id: i for i, rule in enumerate(policy.rules)}
    results.sort(key=lambda r: order[r.rule.id])
    return Evaluation(
        tuple(results),
        tuple(missing),
        failing,
        state=state.new,
        state_revision=state.revision,
        failing_spans=failing_spans,
    )


#: Why a change rule is `not_applicable` on a history of one revision (see `_alone`).
NO_STEP = (
    "no change step to judge: the stored history holds one revision (rev {}); a change rule "
    "judges each step from one revision to the next"
)


def _alone(inputs: EvaluationInputs) -> Revision | None:
    """The revision under test when it is the only one of the history the steps are drawn
    from (a new organization's first sync, `--at` before the second revision): there is no
    step, and a change rule has nothing to judge, which is no gap in the audit. None
    otherwise: no revision at all, or steps given apart from the history (a review, a test
    case), whose absence is a gap, and a stored history that lost rows (the one revision left
    of two once revision 1 is deleted "resolved" a finding of their step: review R68). Called
    only when no step was seen, so the history holds at most one revision and reading it
    again costs one."""
    settings = inputs.settings
    if settings is None or inputs.history is None or not _same_walk(inputs):
        return None
    walked = [r.revision for r in islice(inputs.history, 2)]
    if walked != [settings.revision]:
        return None
    if inputs.check_history is not None:
        inputs.check_history()
    return settings


def _no_step(rule: Rule, alone: Revision) -> RuleResult:
    """A change rule's result on a history of one revision: not applicable, once."""
    label = f"no steps (revision {alone.revision} alone)"
    subject = Subject("change", "change:all", label)
    return RuleResult(rule, subject, "not_applicable", NO_STEP.format(alone.revision))


def _one(settings: Revision | None) -> tuple[Revision, ...]:
    return (settings,) if settings is not None else ()


def _same_walk(inputs: EvaluationInputs) -> bool:
    """The steps are the consecutive pairs of the history itself (not, say, a proposal)."""
    return isinstance(inputs.steps, Steps) and inputs.steps.history is inputs.history


def _from(
    history: Iterable[Revision], start: int | None, tail: Callable[[int], Iterable[Revision]] | None
) -> Iterable[Revision]:
    return tail(start) if start is not None and tail is not None else history


def _both(walk: SettingsWalk, run: ChangeRun, revisions: Iterable[Revision]) -> list[RuleResult]:
    results: list[RuleResult] = []
    previous: Revision | None = None
    for revision in revisions:
        walk.push(revision)
        if previous is not None:
            results += run.push(previous, revision)
        previous = revision
    results += run.finish()
    return results


class _State:
    """The incremental state read in (`inputs.prior`) and written out (with `remember`)."""

    def __init__(self, policy: PolicySet, inputs: EvaluationInputs) -> None:
        usable = inputs.tail is not None and inputs.revision_numbers is not None
        self.on = (inputs.remember or bool(inputs.prior)) and not inputs.all_revisions
        self.prior = inputs.prior if self.on and usable else {}
        self.remember = self.on and inputs.remember
        self.keys = (
            {r.id: incremental.rule_key(r, policy.enums, inputs.list_table) for r in policy.rules}
            if self.on
            else {}
        )
        self.memoise = inputs.memoise
        self.verdict_keys = (
            {r.id: incremental.verdicts_key(r, policy.enums) for r in policy.rules}
            if self.on and inputs.memoise
            else {}
        )
        self.new = incremental.StateDumps()
        self.revision = inputs.settings.revision if inputs.settings is not None else None

    def _load(self, rule: Rule, load: Callable[[bytes], T]) -> T | None:
        """The rule's state from an earlier run, read by `load`; None when there is none or it
        cannot be read (a damaged row): the state is only a cache, so the rule is evaluated
        afresh."""
        key = self.keys.get(rule.id)
        return self._load_key(key, load) if key is not None else None

    def _load_key(self, key: str, load: Callable[[bytes], T]) -> T | None:
        try:
            data = self.prior.get(key)
            return load(data) if data is not None else None
        except (ValueError, KeyError, TypeError, IndexError, AttributeError):
            return None

    def memos(self, rules: Sequence[Rule]) -> list[MemoRule]:
        """Verdict caches of usage or readiness rules, each rule's verdicts from an earlier run
        read back into its cache, and kept (`MemoRule.keep`) when they are to be remembered.
        Repositories and days share many values (levels, flags, settings): a verdict is
        reused across them, as for revisions, when the values a rule reads repeat."""
        out = [MemoRule(rule, enabled=self.memoise) for rule in rules]
        self.seed(out)
        return out

    def seed(self, memos: Sequence[MemoRule]) -> None:
        """Each rule's verdicts from an earlier run read back into its cache, and the rule's
        verdicts kept (`MemoRule.keep`) when they are to be remembered."""
        for memo in memos:
            key = self.verdict_keys.get(memo.rule.id)
            if key is not None:
                seed = self._load_key(key, incremental.load_verdicts)
                if self.remember or seed:
                    memo.keep(seed)

    def keep_verdicts(self, memos: Sequence[MemoRule]) -> None:
        """Remember the verdicts the rules handed out this run (`memos` as `memos` gave them)."""
        if not self.remember:
            return
        for memo in memos:
            key = self.verdict_keys.get(memo.rule.id)
            if key is not None and memo.used is not None:
                self.new.add(key, _verdicts_dump(memo))

    def grades(self, model: readiness.ReadinessModel) -> readiness.Grades | None:
        """The readiness grades of report contents an earlier run left under `model` (none
        when there are none or they cannot be read), kept for the next run with this run's;
        None when no state is read or written."""
        if not self.on:
            return None
        key = incremental.grades_key(model)
        grades = readiness.Grades(self._load_key(key, incremental.load_grades))
        if self.remember:
            used = grades.used
            self.new.add(key, lambda: incremental.dump_grades(used))
        return grades

    def resume(self, rule: Rule) -> Resume | None:
        """The settings rule's state from an earlier run, if there is one."""
        return self._load(rule, incremental.load_resume)

    def tallies(self, rules: Sequence[Rule]) -> list[Tally | None]:
        """The change rules' tallies from an earlier run, where there are any; the values
        their results repeat are shared between them (`incremental.Shared`)."""
        shared = incremental.Shared()
        return [self._tally(rule, shared) for rule in rules]

    def _tally(self, rule: Rule, shared: incremental.Shared) -> Tally | None:
        # how to have the stored state again when the tally is stored (`load_tally`)
        key, keeper = self.keys.get(rule.id), getattr(self.prior, "again", None)
        again = keeper(key) if keeper is not None and key is not None else None
        tally = self._load(rule, lambda data: incremental.load_tally(data, rule, shared, again))
        # A tally that runs past the revision under test (`--at`) cannot be cut back: its
        # counts are totals. The rule is evaluated afresh.
        if tally is None or self.revision is None or (tally.last or 0) > self.revision:
            return None
        return tally

    def steps(self, inputs: EvaluationInputs, start: int | None) -> Iterable[Step]:
        """Every step, or those from revision `start` on when no change rule needs more."""
        if start is None or inputs.tail is None or not self.prior:
            return inputs.steps
        return Steps(_Tail(inputs.tail, start))

    def keep_settings(self, rules: Sequence[Rule], walked: SettingsOutcome, at: int) -> None:
        """Remember the settings rules' spans, when the walk ended at the revision under test."""
        if not self.remember or walked.last != at:
            return
        for rule, spans in zip(rules, walked.spans, strict=True):
            key = self.keys.get(rule.id)
            if key is not None:
                failing = bool(spans) and spans[-1].end is None
                self.new.add(key, _ready(incremental.dump_resume(at, failing, spans)))

    def keep_change(self, rules: Sequence[Rule], run: ChangeRun) -> None:
        """Remember the change rules' tallies that reach the revision under test."""
        if not self.remember:
            return
        for rule, tally in zip(rules, run.tallies, strict=True):
            key = self.keys.get(rule.id)
            if key is None or tally.steps < 2 or tally.last != self.revision:
                continue
            self.new.add(key, _tally_dump(tally, rule))


def _ready(data: bytes) -> Callable[[], bytes | None]:
    """A state already dumped (a settings rule's spans: a few hundred bytes)."""
    return lambda: data


def _verdicts_dump(memo: MemoRule) -> Callable[[], bytes | None]:
    """The rule's verdicts handed out this run, dumped when the state is stored."""
    used, seeded = memo.used or {}, memo.seeded
    return lambda: incremental.dump_verdicts(used, seeded)


def _tally_dump(tally: Tally, rule: Rule) -> Callable[[], bytes | None]:
    """The tally's dump, made when the state is stored (not held with all the others)."""
    return lambda: incremental.dump_tally(tally, rule)


@dataclass(frozen=True)
class _Tail:
    """The history from one revision on, streamed anew on every iteration."""

    tail: Callable[[int], Iterable[Revision]]
    start: int

    def __iter__(self) -> Iterator[Revision]:
        return iter(self.tail(self.start))


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


def _order_of(known: dict[int, tuple[int, int, str]], subject: Subject) -> tuple[int, int, str]:
    known[id(subject)] = found = _subject_order(subject)
    return found


def _subject_order(subject: Subject) -> tuple[int, int, str]:
    return (0 if "@" not in subject.key else 1, subject.revision or 0, subject.key)


def _readiness(
    memos: Sequence[MemoRule],
    org_rules: Sequence[Rule],
    inputs: EvaluationInputs,
    env: Env,
    state: _State | None = None,
) -> list[RuleResult]:
    """The readiness rules' results (`memos`: one per rule, see `_State.memos`), then the org
    rules'."""
    return list(_readiness_results(memos, org_rules, inputs, env, state))


def _readiness_results(
    memos: Sequence[MemoRule],
    org_rules: Sequence[Rule],
    inputs: EvaluationInputs,
    env: Env,
    state: _State | None,
) -> Iterator[RuleResult]:
    model = inputs.readiness_model or readiness.load_readiness_model(None)
    if memos:
        # Each view holds the criteria the rules can see; a report's grades are read back
        # when its content was graded under this model before (`readiness.Grades`).
        wanted = readiness.criteria_read(deps for m in memos for deps in m.reads)
        grades = state.grades(model) if state is not None else None
        views = readiness.repo_views(inputs.reports, model, inputs.now, wanted, grades)
    else:
        views = []
    for report, view in views:
        url = report.repo_url
        subject = make_subject("readiness", url, url, None, url)
        future = None if view["$age_days"] is not None else readiness.future_dated(report, env.now)
        if future is not None:  # a report dated after now: never judged (an error)
            evidence = (Evidence("$.createdAt", view.get("createdAt"), None, "", True),)
            yield from (Verdict("error", future, evidence).result(m.rule, subject) for m in memos)
            continue
        with evaluation_scope():  # one scope for every rule on this view
            done = [m.verdict(view, env).result(m.rule, subject) for m in memos]
        yield from done
    if org_rules:
        view = readiness.org_view(inputs.reports, model, inputs.now)
        subject = Subject("org", "org", "organization")
        with evaluation_scope():
            done = [run_rule(rule, view, env).result(rule, subject) for rule in org_rules]
        yield from done
