"""The `usage` target: a day of analytics beside the settings in force that day.

Takes the usage rules, the stored analytics days (`UsageInputs`) and the settings history
(ascending, streamed once), gives one `RuleResult` per (rule, day). A day's document is

- `date`, and the day's rows: `tokens`, `tools`, `activity`, `productivity` (one row each, as
  the API sends it) and `users` (the per-user rows);
- `settings`: the settings in force that day; `$revision`, `$author`: which revision and who;
- computed fields: `$trailing_median_billable` (median of `tokens.billable_tokens` over the up
  to 14 stored days before, absent with fewer than 7), `$billable_vs_median` (the day's
  figure divided by it), `$custom_model_ids` (`settings.customModels[*].id`) and
  `$managed_hook_commands` (every command of `settings.hooks`).

Analytics are daily totals, so a day on which a revision was saved is judged under each
settings version in force that day: the same result under all of them stands; a result that
differs (usage allowed before the change, refused after) is `unknown`, saying so, because the
figures cannot tell whether the use came before or after the change. Days of the window
that are not stored (a sync that started later, a gap, `--at` before the first stored day)
are named in one `not_evaluated` line, so the run is incomplete rather than silently short.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from auditor.common.dates import date_ranges
from auditor.evaluate.conditions import Env
from auditor.evaluate.memo import MemoRule
from auditor.evaluate.model import RuleResult, UsageInputs
from auditor.evaluate.rule import Verdict
from auditor.models import JSON, Attribution, Revision, Subject, make_attribution, make_subject
from auditor.policy.model import Rule
from auditor.redact.plain import author_of

TRAILING_DAYS = 14
MIN_TRAILING = 7
SERIES_KEYS = ("tokens", "tools", "activity", "productivity", "users")


@dataclass
class _Day:
    day: str
    doc: dict[str, Any]
    versions: list[Revision] = field(default_factory=list)  # in force during the day, in order
    # with `_Judging`: each version's verdict per rule (the versions then hold no settings)
    verdicts: list[list[Verdict]] = field(default_factory=list)


def _start(day: str) -> datetime:
    return datetime.combine(date.fromisoformat(day), time(), tzinfo=UTC)


def _next_start(day: str) -> datetime:
    """The start of the day after `day` (9999-12-31, a policy test's day, has none: the end of
    time stands in)."""
    try:
        return _start(day) + timedelta(days=1)
    except OverflowError:
        return datetime.max.replace(tzinfo=UTC)


def _managed_commands(settings: Any) -> list[str]:
    hooks = settings.get("hooks") if isinstance(settings, dict) else None
    found: list[str] = []
    for entries in (hooks or {}).values() if isinstance(hooks, dict) else ():
        for entry in entries if isinstance(entries, list) else ():
            inner = entry.get("hooks") if isinstance(entry, dict) else None
            for hook in inner if isinstance(inner, list) else ():
                command = hook.get("command") if isinstance(hook, dict) else None
                if isinstance(command, str) and command not in found:
                    found.append(command)
    return found


def _custom_ids(settings: Any) -> list[str]:
    models = settings.get("customModels") if isinstance(settings, dict) else None
    return [
        m["id"]
        for m in (models if isinstance(models, list) else ())
        if isinstance(m, dict) and isinstance(m.get("id"), str)
    ]


def _billable(series: Mapping[str, JSON]) -> float | None:
    tokens = series.get("tokens")
    return count_value(tokens.get("billable_tokens") if isinstance(tokens, dict) else None)


_MAX_COUNT = 2**63 - 1  # the analytics schemas' maximum of a count or figure


def count_value(value: object) -> float | None:
    """An analytics count or figure as a number, None when it is none: not a number, or one no
    count can be (not finite, above 2^63 - 1). A sync refuses those since 0.3.0 (a data-quality
    warning); a state file an earlier release wrote may still hold one (`1e308`, which a chart
    summed to infinity)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if not math.isfinite(value) or abs(value) > _MAX_COUNT:  # exact, before float() rounds
        return None
    return float(value)


def day_documents(days: Sequence[tuple[str, Mapping[str, JSON]]]) -> list[_Day]:
    """The day documents without settings (added per version): rows and trailing figures."""
    out: list[_Day] = []
    figures: list[float | None] = [_billable(series) for _, series in days]
    for index, (day, series) in enumerate(days):
        doc: dict[str, Any] = {"date": day}
        doc.update({k: series[k] for k in SERIES_KEYS if k in series})
        before = [
            f
            for (d, _), f in zip(
                days[max(0, index - TRAILING_DAYS) : index],
                figures[max(0, index - TRAILING_DAYS) : index],
                strict=True,
            )
            if f is not None
            # a difference of dates, never a date TRAILING_DAYS before (year 1 has none)
            and (date.fromisoformat(day) - date.fromisoformat(d)).days <= TRAILING_DAYS
        ]
        if len(before) >= MIN_TRAILING:
            median = statistics.median(before)
            doc["$trailing_median_billable"] = median
            if median > 0 and figures[index] is not None:
                doc["$billable_vs_median"] = round(float(figures[index] or 0) / median, 4)
        out.append(_Day(day, doc))
    return out


class _Judging:
    """Each usage rule's verdict on a day under one settings version, taken as the version is
    added to the day: a busy history saves 100s of revisions a day, and holding a day's (or
    the window's) settings until the day was judged was a run's largest transient."""

    def __init__(self, memos: Sequence[MemoRule], env: Env) -> None:
        self.memos = memos
        self.env = env

    def add(self, day: _Day, rev: Revision) -> None:
        """`rev` was in force during `day`: its verdicts, then the version without settings."""
        doc = _with_settings(day.doc, rev)
        day.verdicts.append([memo.verdict(doc, self.env) for memo in self.memos])
        day.versions.append(replace(rev, settings=None))


def _with_versions(
    days: list[_Day], history: Iterable[Revision], judging: _Judging
) -> Iterator[_Day]:
    """Each day with the revisions in force during it, as soon as the (ascending) history
    passes its end (one pass over it)."""
    if not days:
        return
    bounds = [(_start(d.day), _next_start(d.day)) for d in days]
    current: Revision | None = None
    index = 0
    for rev in history:
        while index < len(days) and rev.updated_at >= bounds[index][1]:
            _close(days[index], current, judging)
            yield days[index]
            index += 1
        if index >= len(days):
            current = rev
            continue
        if rev.updated_at <= bounds[index][0]:  # saved before (or at) the day began
            current = rev
            continue
        if not days[index].versions and current is not None:
            judging.add(days[index], current)  # in force when the day began
        judging.add(days[index], rev)
        current = rev
    while index < len(days):
        _close(days[index], current, judging)
        yield days[index]
        index += 1


def _close(day: _Day, current: Revision | None, judging: _Judging) -> None:
    if not day.versions and current is not None:
        judging.add(day, current)


def _with_settings(doc: dict[str, Any], rev: Revision) -> dict[str, Any]:
    return {
        **doc,
        "settings": rev.settings,
        "$revision": rev.revision,
        "$author": rev.user.email or rev.user.name,
        "$custom_model_ids": _custom_ids(rev.settings),
        "$managed_hook_commands": _managed_commands(rev.settings),
    }


def _attribution(rev: Revision) -> Attribution:
    return make_attribution(rev.revision, rev.updated_at, rev.user.email, rev.user.name)


def _subject(day: str, rev: Revision | None) -> Subject:
    return make_subject("usage", f"usage@{day}", f"usage on {day}", rev.revision if rev else None)


def _judge(rule: Rule, index: int, day: _Day) -> RuleResult:
    """Rule number `index`'s result on the day, from its verdicts under each version."""
    if not day.versions:
        subject = _subject(day.day, None)
        message = f"no settings revision was in force on {day.day}; nothing to compare with"
        return Verdict("unknown", message).result(rule, subject)
    # A verdict is reused where what the rule reads is the same (a revision that changed
    # nothing the rule reads, the same figures on another day): `MemoRule`'s exact key.
    verdicts = [(rev, each[index]) for rev, each in zip(day.versions, day.verdicts, strict=True)]
    statuses = {v.status for _, v in verdicts}
    first_rev, first = verdicts[0]
    if len(statuses) == 1:
        return first.result(rule, _subject(day.day, first_rev), since=_attribution(first_rev))
    if "error" in statuses:
        rev, verdict = next((r, v) for r, v in verdicts if v.status == "error")
        return verdict.result(rule, _subject(day.day, rev), since=_attribution(rev))
    shown = "; ".join(
        f"under rev {rev.revision} ({rev.updated_at:%Y-%m-%d %H:%M} "
        f"by {author_of(rev.user.email, rev.user.name)}): {v.status}"
        for rev, v in verdicts
    )
    failing = next(((r, v) for r, v in verdicts if v.status == "fail"), verdicts[-1])
    message = (
        f"the settings changed on {day.day} ({shown}); daily figures cannot tell whether "
        f"the use came before or after the change: {failing[1].message}"
    )
    subject = _subject(day.day, failing[0])
    return Verdict("unknown", message, failing[1].evidence).result(
        rule, subject, since=_attribution(failing[0])
    )


NOT_SYNCED = (
    "no usage analytics are stored (sync with a manager or owner token, without --no-usage)"
)


def evaluate_usage(
    rules: Sequence[Rule],
    usage: UsageInputs | None,
    history: Iterable[Revision],
    now: datetime,
    *,
    history_from: Callable[[datetime], Iterable[Revision]] | None = None,
    memos: Sequence[MemoRule] | None = None,
) -> tuple[list[RuleResult], str]:
    """One result per (usage rule, stored day), and the one line saying why none could be
    judged (every rule is then `unknown` on the subject `usage`).

    `history_from(t)`, when given, streams `history` from the revision in force at `t` on:
    only the revisions from the one in force when the first day began are read, not the whole
    history (a nightly run would otherwise parse every stored revision for 30 days of use).
    `memos`, one per rule, are the rules' verdict caches (an earlier run's verdicts read back
    into them, see `incremental.dump_verdicts`)."""
    reason = (usage.unavailable if usage else "") or ("" if usage and usage.days else NOT_SYNCED)
    if reason:
        subject = Subject("usage", "usage", "usage analytics")
        results = [Verdict("unknown", reason).result(rule, subject) for rule in rules]
        line = f"{len(rules)} usage rules not evaluated: {reason}"
        return results, line
    assert usage is not None
    memos = memos if memos is not None else [MemoRule(rule) for rule in rules]
    judged = list(_judge_days(rules, usage, history, now, history_from, memos))
    return judged, missing_days(usage)


def missing_days(usage: UsageInputs) -> str:
    """The one line naming the days of the window that are not stored (they are not judged,
    so the run is incomplete), or "" when every day is there."""
    if usage.window is None:
        return ""
    first, last = (date.fromisoformat(d) for d in usage.window)
    stored = {day for day, _ in usage.days}
    wanted = [first + timedelta(days=i) for i in range((last - first).days + 1)]
    absent = [d for d in wanted if d.isoformat() not in stored]
    if not absent:
        return ""
    ranges = [f"{a}..{b}" if a != b else f"{a}" for a, b in date_ranges(absent)]
    shown = ", ".join(ranges[:5]) + (f" and {len(ranges) - 5} more" if len(ranges) > 5 else "")
    return (
        f"usage: {len(absent)} of {len(wanted)} days of {first}..{last} not stored "
        f"({shown}): not judged"
    )


def _judge_days(
    rules: Sequence[Rule],
    usage: UsageInputs,
    history: Iterable[Revision],
    now: datetime,
    history_from: Callable[[datetime], Iterable[Revision]] | None,
    memos: Sequence[MemoRule],
) -> Iterator[RuleResult]:
    # Every stored day feeds the trailing median; only the window's days are judged, so only
    # they need the settings in force (read from the first judged day's revision on).
    judged = [d for d in day_documents(usage.days) if d.day >= usage.first_judged]
    if judged and history_from is not None:
        history = history_from(_start(judged[0].day))
    judging = _Judging(memos, Env(now))
    # Day by day, each version judged as it is read: the engine sorts the results.
    for day in _with_versions(judged, history, judging):
        yield from (_judge(rule, i, day) for i, rule in enumerate(rules))
        day.versions, day.verdicts = [], []
