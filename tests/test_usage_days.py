"""The usage rules judge each settings version as the history is read (issue 13: a day's
revisions are let go once it is judged). Checked against the plain definition over random
histories and days: a day is judged under the revision in force when it began and each one
saved during it; the results are the same, rule by rule and day by day."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from auditor.common.jsonutil import content_hash
from auditor.evaluate import usage
from auditor.evaluate.conditions import Env
from auditor.evaluate.memo import MemoRule
from auditor.evaluate.model import RuleResult, UsageInputs
from auditor.models import Revision, User
from auditor.policy import load_policies
from tests.test_usage import USAGE_PACK

_RULES = [r for r in load_policies([USAGE_PACK]).rules if r.target == "usage"]
_NOW = datetime(2026, 11, 1, 12, tzinfo=UTC)
_FIRST_DAY = datetime(2026, 10, 1, tzinfo=UTC)
_VARIANTS: list[dict[str, Any]] = [
    {"modelPolicy": {"blockedModelIds": ["old-model"]}},
    {
        "modelPolicy": {"blockedModelIds": ["old-model", "gpt-5-codex"]},
        "customModels": [{"id": "x"}],
    },
    {"hooks": {"SessionEnd": [{"hooks": [{"command": "curl x"}]}]}},
    {},
]


def _plainly(usage_in: UsageInputs, history: tuple[Revision, ...]) -> list[RuleResult]:
    """Each judged day with every version in force during it, each judged afresh."""
    days = [d for d in usage.day_documents(usage_in.days) if d.day >= usage_in.first_judged]
    for day in days:
        start = datetime.fromisoformat(day.day).replace(tzinfo=UTC)
        before = [r for r in history if r.updated_at <= start]
        during = [r for r in history if start < r.updated_at < start + timedelta(days=1)]
        day.versions = before[-1:] + during
        day.verdicts = [
            [MemoRule(rule, enabled=False).verdict(usage._with_settings(day.doc, rev), Env(_NOW))
             for rule in _RULES]
            for rev in day.versions
        ]  # fmt: skip
    return [usage._judge(rule, i, day) for i, rule in enumerate(_RULES) for day in days]


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 40),
            st.sampled_from([0, 9, 23]),
            st.sampled_from([0, 30]),
            st.integers(0, 3),
        ),
        max_size=25,
    ),
    st.sets(st.integers(0, 34), min_size=1, max_size=20),
    st.lists(st.integers(0, 1000), min_size=35, max_size=35),
    st.integers(0, 34),
    st.booleans(),
)
def test_each_day_is_judged_under_every_version_in_force_during_it(
    saved: list[tuple[int, int, int, int]],
    day_numbers: set[int],
    figures: list[int],
    judged_from: int,
    from_the_day: bool,
) -> None:
    """Revisions before the first day, at a day's very start (midnight), during it, spanning
    days, between stored days (gaps) and after the last one; the history read whole or from
    the first judged day on."""
    origin = datetime(2026, 9, 26, tzinfo=UTC)
    history = tuple(
        Revision(n + 1, origin + timedelta(days=d, hours=h, minutes=m),
                 User("u", f"u{n % 3}@a.ex", ""), _VARIANTS[v], content_hash(_VARIANTS[v]))
        for n, (d, h, m, v) in enumerate(sorted(saved))
    )  # fmt: skip
    by_model = [
        {"model": "gpt-5-codex", "billable_tokens": 0},
        {"model": "claude", "billable_tokens": 1},
    ]
    days = tuple(
        ((_FIRST_DAY + timedelta(days=d)).date().isoformat(),
         {"tokens": {"billable_tokens": figures[d] + 1,
                     "by_model": [{**by_model[0], "billable_tokens": figures[d]}, by_model[1]]}})
        for d in sorted(day_numbers)
    )  # fmt: skip
    usage_in = UsageInputs(
        days=days, first_judged=(_FIRST_DAY + timedelta(days=judged_from)).date().isoformat()
    )

    def history_from(when: datetime) -> tuple[Revision, ...]:
        in_force = [i for i, r in enumerate(history) if r.updated_at <= when]
        return history[in_force[-1] if in_force else 0 :]

    got, _ = usage.evaluate_usage(
        _RULES, usage_in, history, _NOW, history_from=history_from if from_the_day else None
    )
    order = {rule.id: i for i, rule in enumerate(_RULES)}
    assert sorted(got, key=lambda r: order[r.rule.id]) == _plainly(usage_in, history)
