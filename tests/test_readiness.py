"""Readiness model: the 80 % gate, skipped and unknown criteria, partial credit, org aggregates."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from auditor.errors import ConfigError, PolicyError
from auditor.evaluate.readiness import (
    Criterion,
    ReadinessModel,
    latest_per_repo,
    load_readiness_model,
    org_view,
    readiness_view,
    unreported_criteria,
)
from auditor.models import ReadinessReport

NOW = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)

MODEL_YAML = """\
levels: {1: Functional, 2: Documented, 3: Standardized}
unlock_threshold: 0.8
criteria:
  a1: {level: 1, scope: repository, pillar: Docs}
  a2: {level: 1, scope: repository, pillar: Docs}
  a3: {level: 1, scope: repository, pillar: Docs}
  a4: {level: 1, scope: repository, pillar: Docs}
  a5: {level: 1, scope: application, pillar: Testing}
  b1: {level: 2, scope: repository, pillar: Security, skippable: true}
  b2: {level: 2, scope: repository, pillar: Security}
"""


@pytest.fixture
def model(tmp_path: Path) -> ReadinessModel:
    path = tmp_path / "model.yaml"
    path.write_text(MODEL_YAML)
    return load_readiness_model(path)


def crit(num: int | None, den: int = 1) -> dict[str, Any]:
    return {"numerator": num, "denominator": den, "rationale": "r"}


def make_report(
    criteria: Mapping[str, dict[str, Any]],
    *,
    repo: str = "https://github.com/acme/api",
    age_days: float = 1.0,
    report_id: str = "r-1",
    **extra: Any,
) -> ReadinessReport:
    created = NOW - timedelta(days=age_days)
    data = {
        "reportId": report_id,
        "repoUrl": repo,
        "createdAt": int(created.timestamp() * 1000),
        "apps": {".": {"description": "root"}},
        "report": dict(criteria),
        **extra,
    }
    return ReadinessReport(report_id, repo, created, data, "hash-" + report_id)


def level1(passing: int, total: int = 5) -> dict[str, dict[str, Any]]:
    ids = ["a1", "a2", "a3", "a4", "a5"][:total]
    return {cid: crit(1 if i < passing else 0) for i, cid in enumerate(ids)}


@pytest.mark.parametrize(
    ("criteria", "level"),
    [
        pytest.param(level1(3), 1, id="60pct-stays-at-1"),
        pytest.param(level1(4), 2, id="exactly-80pct-unlocks"),
        pytest.param(level1(5), 2, id="all-level1-but-no-level2-evaluated"),
        pytest.param({**level1(5), "b1": crit(1), "b2": crit(1)}, 3, id="all-pass-top-level"),
        pytest.param({**level1(5), "b1": crit(1), "b2": crit(0)}, 2, id="level2-50pct"),
        pytest.param({**level1(5), "b1": crit(None), "b2": crit(1)}, 3, id="skipped-excluded"),
        pytest.param({**level1(3, 4), "a5": crit(None)}, 1, id="3-of-4-evaluated-is-75pct"),
        pytest.param({}, 1, id="empty-report-starts-at-1"),
        pytest.param({"zz": crit(1)}, 1, id="unknown-only"),
    ],
)
def test_level_gate(model: ReadinessModel, criteria: dict[str, Any], level: int) -> None:
    view = readiness_view(make_report(criteria), model, NOW)
    assert view["$level"] == level


def test_gate_at_threshold_is_exact_with_fractions(model: ReadinessModel) -> None:
    # fraction credits 0.6 + 0.7 + 0.8 + 0.9 + 1.0 = 4.0 = 80 % exactly; float sums give 0.7999…
    criteria = {"a1": crit(6, 10), "a2": crit(7, 10), "a3": crit(8, 10), "a4": crit(9, 10)}
    criteria["a5"] = crit(10, 10)
    fraction = dataclasses.replace(model, partial_credit="fraction")
    assert readiness_view(make_report(criteria), fraction, NOW)["$level"] == 2


def test_score_excludes_skipped_and_counts_unknown(model: ReadinessModel) -> None:
    criteria = {"a1": crit(1), "a2": crit(0), "b1": crit(None), "custom_x": crit(1)}
    view = readiness_view(make_report(criteria), model, NOW)
    assert view["$score"] == pytest.approx(2 / 3)
    assert view["criteria"]["b1"] == {
        "passed": None, "numerator": None, "denominator": 1, "skipped": True,
        "credit": None, "level": 2, "pillar": "Security",
    }  # fmt: skip
    assert view["criteria"]["custom_x"]["level"] is None
    assert view["criteria"]["custom_x"]["passed"] is True


def test_score_none_when_nothing_evaluated(model: ReadinessModel) -> None:
    view = readiness_view(make_report({"a1": crit(None)}), model, NOW)
    assert view["$score"] is None
    assert view["$level"] == 1


@pytest.mark.parametrize(
    ("mode", "level", "score"),
    [
        pytest.param("all_or_nothing", 1, 0.6, id="all-or-nothing"),
        pytest.param("fraction", 2, (3 + 2 / 3 + 0.5) / 5, id="fraction"),
    ],
)
def test_app_scoped_partial_credit(
    model: ReadinessModel, mode: str, level: int, score: float
) -> None:
    # 3 full passes, one app-scoped 2/3, one 1/2: all-or-nothing 3/5, fraction 4.17/5 (83 %)
    criteria = {**level1(3, 3), "a4": crit(2, 3), "a5": crit(1, 2)}
    view = readiness_view(
        make_report(criteria), dataclasses.replace(model, partial_credit=mode), NOW
    )
    assert view["$level"] == level
    assert view["$score"] == pytest.approx(score)
    assert view["criteria"]["a4"]["passed"] is False


@pytest.mark.parametrize(
    ("flags", "clean"),
    [
        pytest.param({"hasLocalChanges": False, "hasNonRemoteCommits": False}, True, id="clean"),
        pytest.param({"hasLocalChanges": True, "hasNonRemoteCommits": False}, False, id="dirty"),
        pytest.param({"hasNonRemoteCommits": True}, False, id="unpushed-other-absent"),
        pytest.param({"hasLocalChanges": False}, None, id="one-absent-unknown"),
        pytest.param({}, None, id="both-absent-unknown"),
    ],
)
def test_clean(model: ReadinessModel, flags: dict[str, Any], clean: bool | None) -> None:
    assert readiness_view(make_report({}, **flags), model, NOW)["$clean"] is clean


def test_age_is_in_days_to_two_decimals_so_runs_minutes_apart_agree(
    model: ReadinessModel,
) -> None:
    """A report's age was worded to the microsecond (`$age_days is 35.983565965046296`), so two
    runs 60 ms apart on the same data gave different findings in every report format."""
    report = make_report({}, age_days=35.983565965046296)
    ages = [
        readiness_view(report, model, NOW + timedelta(milliseconds=ms))["$age_days"]
        for ms in (0, 60, 60_000)
    ]
    assert ages == [35.98, 35.98, 35.98]


def test_view_keeps_report_fields_and_age(model: ReadinessModel) -> None:
    report = make_report({"a1": crit(1)}, age_days=2.5, branch="main", commitHash="abc")
    view = readiness_view(report, model, NOW)
    assert view["$age_days"] == pytest.approx(2.5)
    assert view["branch"] == "main"
    assert view["commitHash"] == "abc"
    assert view["report"]["a1"]["numerator"] == 1
    assert view["repoUrl"] == "https://github.com/acme/api"


@pytest.mark.parametrize(
    "entry",
    [
        pytest.param("yes", id="not-an-object"),
        pytest.param({"numerator": 2, "denominator": 1}, id="numerator-above-denominator"),
        pytest.param({"numerator": 1, "denominator": 0}, id="zero-denominator"),
        pytest.param({"numerator": "1", "denominator": 1}, id="string-numerator"),
    ],
)
def test_malformed_criterion_is_flagged_not_scored(model: ReadinessModel, entry: Any) -> None:
    view = readiness_view(make_report({"a1": crit(1), "a2": entry}), model, NOW)
    assert "passed" not in view["criteria"]["a2"]  # a rule on it is `on_missing`, not a fail
    assert "problem" in view["criteria"]["a2"]
    assert view["$score"] == 1.0
    assert "$level" not in view  # 1 of 1 or 2 of 2 level-1 criteria: level 1 or 2


def test_latest_per_repo_picks_newest_and_sorts() -> None:
    old = make_report({}, repo="https://github.com/acme/b", age_days=10, report_id="1")
    new = make_report({}, repo="https://github.com/acme/b", age_days=2, report_id="2")
    other = make_report({}, repo="https://github.com/acme/a", age_days=50, report_id="3")
    assert [r.report_id for r in latest_per_repo([old, new, other])] == ["3", "2"]


def test_org_view_aggregates(model: ReadinessModel) -> None:
    top = {**level1(5), "b1": crit(1), "b2": crit(1)}
    reports = [
        make_report(top, repo="https://x/a", age_days=3, report_id="1",
                    hasLocalChanges=False, hasNonRemoteCommits=False),
        make_report(level1(5), repo="https://x/b", age_days=20, report_id="2"),
        make_report(level1(0), repo="https://x/c", age_days=60, report_id="3"),
        make_report(level1(0), repo="https://x/c", age_days=100, report_id="4"),
        make_report(level1(0), repo="https://x/d", age_days=200, report_id="5"),
    ]  # fmt: skip
    org = org_view(reports, model, NOW)
    assert org["levels"] == {"https://x/a": 3, "https://x/b": 2, "https://x/c": 1, "https://x/d": 1}
    assert org["$level"] == 1  # floor(7 / 4)
    assert org["repo_count"] == 4
    assert org["fresh_share_7d"] == 0.25
    assert org["fresh_share_30d"] == 0.5
    assert org["fresh_share_90d"] == 0.75
    assert org["below_level_2"] == 2
    assert org["below_level_3"] == 3
    assert org["clean_share"] == 0.25


def test_org_floor_of_mean(model: ReadinessModel) -> None:
    top = {**level1(5), "b1": crit(1), "b2": crit(1)}
    reports = [
        make_report(top, repo="https://x/a", report_id="1"),
        make_report(top, repo="https://x/b", report_id="2"),
        make_report(level1(5), repo="https://x/c", report_id="3"),
    ]
    assert org_view(reports, model, NOW)["$level"] == 2  # floor(8 / 3 = 2.67)


@pytest.mark.parametrize(
    "entry",
    [crit(0, 0), crit(5, 1), crit(-1, 1), "yes"],
    ids=["0-of-0", "5-of-1", "minus-1-of-1", "not-an-object"],
)
def test_level_is_unknown_only_where_a_criterion_not_evaluable_could_change_it(
    model: ReadinessModel, entry: Any
) -> None:
    """3 of 4 level-1 criteria pass and the fifth is not a score: level 1 (3 of 5) or 2 (4 of
    5). Counted out, it made 3 of 4 (level 1); at 4 of 4, level 2 whatever the fifth is."""
    unsure = make_report({**level1(3, 4), "a5": entry}, repo="https://x/a", report_id="1")
    view = readiness_view(unsure, model, NOW)
    assert "$level" not in view
    assert "passed" not in view["criteria"]["a5"]
    sure = make_report({**level1(4, 4), "a5": entry}, repo="https://x/b", report_id="2")
    assert readiness_view(sure, model, NOW)["$level"] == 2
    # the organization: levels 1..2 and 2 -> floor of 1.5 or 2: absent; with a third
    # repository at level 1, 4/3 or 5/3: 1 either way
    org = org_view([unsure, sure], model, NOW)
    assert org["levels"] == {"https://x/b": 2}  # a's level unknown: not in the map
    assert "$level" not in org
    assert "below_level_2" not in org  # 0 or 1
    assert org["below_level_3"] == 2
    third = make_report(level1(0), repo="https://x/c", report_id="3")
    assert org_view([unsure, sure, third], model, NOW)["$level"] == 1


def test_local_changes_null_is_not_recorded(model: ReadinessModel) -> None:
    report = make_report(level1(5), hasLocalChanges=None, hasNonRemoteCommits=False)
    view = readiness_view(report, model, NOW)
    assert "hasLocalChanges" not in view
    assert view["hasNonRemoteCommits"] is False
    assert view["$clean"] is None


def test_org_view_without_reports(model: ReadinessModel) -> None:
    org = org_view([], model, NOW)
    assert org["$level"] is None
    assert org["repo_count"] == 0
    assert org["fresh_share_30d"] is None


def test_shipped_model_loads() -> None:
    model = load_readiness_model()
    assert model.levels[1] == "Functional"
    assert model.levels[5] == "Autonomous"
    assert model.unlock_threshold == 0.8
    assert model.partial_credit == "all_or_nothing"
    assert model.criteria["secret_scanning"].level == 3
    assert model.criteria["branch_protection"].skippable is True


def test_a_criterion_id_of_100_characters_loads(tmp_path: Path) -> None:
    """The limit is a rule id's: 100 characters load, 101 do not."""
    path = tmp_path / "m.yaml"
    for size, loads in ((100, True), (101, False)):
        path.write_text(MODEL_YAML + f"  {'c' * size}: {{level: 1, scope: repository}}\n")
        if loads:
            assert "c" * size in load_readiness_model(path).criteria
        else:
            with pytest.raises(ConfigError, match="is 101 characters long; a criterion id is at"):
                load_readiness_model(path)


def test_override_file_changes_levels(model: ReadinessModel) -> None:
    assert set(model.criteria) == {"a1", "a2", "a3", "a4", "a5", "b1", "b2"}
    assert model.criteria["a5"].scope == "application"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("levels: [1, 2]\ncriteria: {}\n", "`levels`", id="levels-list"),
        pytest.param(
            MODEL_YAML + "  c1: {level: 9, scope: repository, pillar: X}\n",
            "`criteria.c1.level`",
            id="unknown-level",
        ),
        pytest.param(
            MODEL_YAML + "  c2: {level: 1, scope: repo, pillar: X}\n",
            "`criteria.c2.scope`",
            id="bad-scope",
        ),
        pytest.param(MODEL_YAML + "partial_credit: half\n", "`partial_credit`", id="bad-mode"),
        pytest.param(MODEL_YAML.replace("0.8", "2"), "`unlock_threshold`", id="threshold"),
        pytest.param(
            MODEL_YAML + "levelz: 1\n",
            "`levelz`: unknown key (did you mean `levels`?)",
            id="unknown-key",
        ),
        pytest.param("levels: {1: [\n", "invalid YAML", id="syntax"),
        # No criterion: every repository would stay at level 1, its rules failing, unsaid.
        pytest.param(
            "levels: {1: a, 2: b}\ncriteria: {}\n",
            "bad.yaml:2:11: error: $.criteria: `criteria`: must be a non-empty mapping",
            id="no-criteria",
        ),
        # An id longer than a rule id may be, not shown: every report would copy it.
        pytest.param(
            MODEL_YAML + f"  {'ab' * 200}: {{level: 1, scope: repository, pillar: X}}\n",
            "bad.yaml:11:3: error: $.criteria: the id of this criterion is 400 characters "
            "long; a criterion id is at most 100, as a rule id is",
            id="long-id",
        ),
    ],
)
def test_bad_model_file(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_readiness_model(path)
    assert str(path) in str(info.value)
    assert message in str(info.value)
    assert "ab" * 60 not in str(info.value)  # (a long id is not shown)


@pytest.mark.parametrize(
    ("text", "line"),
    [
        pytest.param(
            MODEL_YAML + "  7: {level: 1, scope: repository, pillar: X}\n",
            "bad.yaml:11:3: error: $.criteria['7']: `criteria.7`: a criterion id must be a string",
            id="integer-criterion-id",
        ),
        pytest.param(
            MODEL_YAML + "  c1: {level: 1, scope: repository, pillar: [X]}\n",
            "bad.yaml:11:45: error: $.criteria.c1.pillar: `criteria.c1.pillar`: must be a string",
            id="pillar-not-a-string",
        ),
        pytest.param(
            MODEL_YAML + "  c1: &c {level: 1, scope: repository, pillar: X}\n  c2: *c\n",
            "bad.yaml:11:7: error: a YAML anchor (`&` and a name) is not allowed in auditor "
            "input files (quote a value that starts with `&`)",
            id="anchor",
        ),
        pytest.param(
            MODEL_YAML + "  ? [1, 2]\n  : {level: 1, pillar: X}\n",
            "bad.yaml:11:5: error: a mapping key must be a plain scalar",
            id="complex-key",
        ),
        pytest.param(
            MODEL_YAML + "levelz: 1\n",
            "bad.yaml:11:1: error: $.levelz: `levelz`: unknown key (did you mean `levels`?)",
            id="unknown-key-positioned",
        ),
    ],
)
def test_bad_model_file_problems_have_positions(tmp_path: Path, text: str, line: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_readiness_model(path)
    assert line in str(info.value).replace(f"{tmp_path}/", "").splitlines()


def test_oversized_model_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "big.yaml"
    path.write_text(MODEL_YAML + "# " + "x" * 1_000_000 + "\n")
    with pytest.raises(
        PolicyError, match=r"big\.yaml:1:1: error: cannot read readiness model: .*the limit is"
    ):
        load_readiness_model(path)


def test_missing_model_file(tmp_path: Path) -> None:
    with pytest.raises(PolicyError, match=r"absent\.yaml:1:1: error: cannot read readiness model"):
        load_readiness_model(tmp_path / "absent.yaml")


def test_a_report_dated_after_now_has_no_age_and_is_neither_fresh_nor_oldest(
    model: ReadinessModel,
) -> None:
    reports = [
        make_report(level1(5), repo="https://x/a", age_days=-30, report_id="1"),  # a month ahead
        make_report(level1(5), repo="https://x/b", age_days=-0.5, report_id="2"),  # clock skew
        make_report(level1(5), repo="https://x/c", age_days=40, report_id="3"),
    ]
    assert readiness_view(reports[0], model, NOW)["$age_days"] is None
    assert readiness_view(reports[1], model, NOW)["$age_days"] == -0.5
    org = org_view(reports, model, NOW)
    assert org["oldest_report_days"] == 40.0
    assert org["fresh_share_7d"] == pytest.approx(1 / 3)  # only the half-day skewed one


def test_model_criteria_no_report_holds_are_named_ten_at_most(model: ReadinessModel) -> None:
    many = {f"crit_{i:02}": Criterion(f"crit_{i:02}", 1, "repository", "P") for i in range(12)}
    wide = dataclasses.replace(model, criteria={**model.criteria, **many})
    held = {**level1(5), "b1": crit(1), "b2": crit(None), "crit_00x": crit(1)}  # b2 skipped: held
    reports = [make_report(held)]
    warnings = unreported_criteria(wide, reports)
    assert [w.path for w in warnings] == [
        *(f"$.criteria.crit_{i:02}" for i in range(10)),
        "$.criteria",
    ]
    assert "(did you mean `crit_00x`?)" in warnings[0].problem
    assert (
        warnings[-1].problem
        == "2 more criteria of the model are in none of the 1 report, not named"
    )
    assert unreported_criteria(model, reports) == []
