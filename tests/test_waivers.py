"""Waivers: loading with located problems, matching subjects, expiry, stale waivers."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

from auditor.errors import PolicyError
from auditor.evaluate.model import RuleResult
from auditor.findings.waivers import apply_waivers, load_waivers
from auditor.models import Status, Subject, Target, Waiver
from auditor.policy.model import Rule

NOW = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "waivers.yaml"

SUBJECTS: dict[str, Subject] = {
    "settings": Subject("settings", "settings", "settings in force"),
    "settings@412": Subject("settings", "settings@412", "revision 412", revision=412),
    "org": Subject("org", "org", "organization"),
    "change": Subject("change", "change:411..412", "411 → 412", revision=412),
    "legacy": Subject(
        "readiness", "https://github.com/acme/legacy-billing", "legacy-billing",
        repo_url="https://github.com/acme/legacy-billing",
    ),
    "api": Subject(
        "readiness", "https://github.com/acme/api", "api", repo_url="https://github.com/acme/api"
    ),
}  # fmt: skip


def result(rule_id: str, subject: str, status: Status = "fail") -> RuleResult:
    target: Target = SUBJECTS[subject].kind
    rule = Rule(rule_id, "title", "high", target, condition=None)
    return RuleResult(rule, SUBJECTS[subject], status, "message")


def waiver(rule_id: str, subject: str, expires: str = "2026-12-31") -> Waiver:
    day = datetime.fromisoformat(expires).replace(hour=23, minute=59, second=59, tzinfo=UTC)
    return Waiver(rule_id, subject, "reason", "owner@example.com", day)


@pytest.mark.parametrize(
    ("pattern", "subject", "waived"),
    [
        pytest.param("settings", "settings", True, id="settings-current"),
        pytest.param("settings", "settings@412", True, id="settings-historical"),
        pytest.param("settings@412", "settings@412", True, id="settings-exact-revision"),
        pytest.param("settings@411", "settings@412", False, id="other-revision"),
        pytest.param("settings", "org", False, id="settings-not-org"),
        pytest.param("org", "org", True, id="org"),
        pytest.param("change", "change", True, id="change-any"),
        pytest.param("change:411..412", "change", True, id="change-exact"),
        pytest.param("https://github.com/acme/legacy-*", "legacy", True, id="glob-match"),
        pytest.param("https://github.com/acme/legacy-*", "api", False, id="glob-miss"),
        pytest.param("https://github.com/acme/legacy-*", "settings", False, id="glob-not-settings"),
    ],
)
def test_subject_matching(pattern: str, subject: str, waived: bool) -> None:
    results, report = apply_waivers([result("R-1", subject)], [waiver("R-1", pattern)], NOW)
    assert (results[0].status == "waived") is waived
    assert (report.stale == ()) is waived


def test_waived_result_keeps_raw_status_and_waiver() -> None:
    w = waiver("R-1", "settings")
    results, report = apply_waivers([result("R-1", "settings", "unknown")], [w], NOW)
    assert results[0].status == "waived"
    assert results[0].raw_status == "unknown"
    assert results[0].original_status == "unknown"
    assert results[0].waiver == w
    assert report.in_force == (w,)


@pytest.mark.parametrize("status", ["pass", "not_applicable"])
def test_passing_results_are_not_waived(status: Status) -> None:
    w = waiver("R-1", "settings")
    results, report = apply_waivers([result("R-1", "settings", status)], [w], NOW)
    assert results[0].status == status
    assert results[0].waiver is None
    assert report.stale == (w,)


def test_other_rule_is_not_waived() -> None:
    results, _ = apply_waivers([result("R-2", "settings")], [waiver("R-1", "settings")], NOW)
    assert results[0].status == "fail"


def test_expired_waiver_does_not_waive_and_warns() -> None:
    w = waiver("R-1", "settings", expires="2026-10-31")
    results, report = apply_waivers([result("R-1", "settings")], [w], NOW)
    assert results[0].status == "fail"
    assert results[0].raw_status is None
    assert report.expired == (w,)
    assert report.in_force == ()
    assert any(
        "R-1" in text and "expired on 2026-10-31" in text and "owner@example.com" in text
        for text in report.warnings
    )


def test_waiver_holds_through_its_expiry_day(tmp_path: Path) -> None:
    path = tmp_path / "one.yaml"
    path.write_text(
        "waivers:\n  - {rule: R-1, subject: settings, reason: r, owner: o, expires: 2026-11-01}\n"
    )
    (w,) = load_waivers(path)
    end_of_day = datetime(2026, 11, 1, 23, 59, 59, tzinfo=UTC)
    results, _ = apply_waivers([result("R-1", "settings")], [w], end_of_day)
    assert results[0].status == "waived"
    after = datetime(2026, 11, 2, 0, 0, tzinfo=UTC)
    results, report = apply_waivers([result("R-1", "settings")], [w], after)
    assert results[0].status == "fail"
    assert report.expired == (w,)


def test_expiring_soon_and_long_term_warnings() -> None:
    soon = waiver("R-1", "settings", expires="2026-11-10")
    far = waiver("R-2", "settings", expires="2028-01-01")
    results = [result("R-1", "settings"), result("R-2", "settings")]
    _, report = apply_waivers(results, [soon, far], NOW)
    assert report.expiring_soon == (soon,)
    assert any("R-2" in text and "more than 365 days" in text for text in report.warnings)


def test_stale_waiver_reported() -> None:
    used, unused = waiver("R-1", "settings"), waiver("R-9", "org")
    _, report = apply_waivers([result("R-1", "settings")], [used, unused], NOW)
    assert report.stale == (unused,)
    assert any("R-9" in text and "matched no failing result" in text for text in report.warnings)


def test_a_waiver_of_a_rule_not_judged_here_is_not_stale() -> None:
    """A review judges only the settings and change rules: every waiver of a readiness, org
    or usage rule matched nothing and was listed as stale at the top of every PR comment,
    inviting someone to delete waivers the nightly depends on. A rule the loaded policies do
    not have is still stale (a typo in the waiver's rule id)."""
    judged = [result("SET-1", "settings")]
    readiness, typo = waiver("RDY-1", "https://github.com/acme/*"), waiver("RDY-9", "settings")
    _, report = apply_waivers(judged, [readiness, typo], NOW, untried={"RDY-1"})
    assert report.stale == (typo,)
    # tried, and no result (a readiness rule with no reports, in a nightly): still stale
    _, report = apply_waivers(judged, [readiness, typo], NOW)
    assert report.stale == (readiness, typo)


def test_load_valid_file(tmp_path: Path) -> None:
    path = tmp_path / "w.yaml"
    path.write_text(
        "waivers:\n"
        "  - rule: BASE-SBX-001\n"
        "    subject: https://github.com/acme/legacy-*\n"
        "    reason: migration\n"
        "    owner: sec@example.com\n"
        "    expires: 2026-12-31\n"
        "    ticket: SEC-1\n"
        "  - rule: RDY-ORG-001\n"
        "    subject: org\n"
        "    reason: ramping up\n"
        "    owner: sec@example.com\n"
        "    expires: '2027-01-15'\n"
        "    ticket: 4711\n"
    )
    first, second = load_waivers(path)
    assert first.rule_id == "BASE-SBX-001"
    assert first.expires == datetime(2026, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)
    assert first.ticket == "SEC-1"
    assert str(first.source) == f"{path}:2:5"
    assert second.expires.date().isoformat() == "2027-01-15"
    assert second.ticket == "4711"


def test_shipped_example_is_valid() -> None:
    waivers = load_waivers(EXAMPLE)
    assert len(waivers) >= 3
    assert {w.subject for w in waivers} >= {"settings", "org"}


BAD = """\
waivers:
  - rule: BASE-SBX-001
    subject: setings
    reason: ""
    owner: a@example.com
    expires: 2026-12-31
    tickt: X
  - rule: R-2
    subject: settings
    reason: r
    owner: o
    expires: next week
  - subject: org
    reason: r
    owner: o
    expires: 2026-12-31
  - rule: R-4
    subject: org
    reason: r
    owner: o
    expires: 2026-12-31
  - rule: R-4
    subject: org
    reason: r
    owner: o
    expires: 2027-01-31
"""


def test_invalid_file_reports_every_problem_with_position(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(BAD)
    with pytest.raises(PolicyError) as info:
        load_waivers(path)
    assert info.value.problems == [
        f"{path}:3:14: error: $.waivers[0].subject: subject `setings` is not `settings`, "
        "`settings@N`, `org`, `change`, `change:A..B`, `usage`, `usage@YYYY-MM-DD` or a "
        "repository URL glob such as https://github.com/acme/legacy-* (did you mean `settings`?)",
        f"{path}:4:13: error: $.waivers[0].reason: `reason` must be a non-empty string",
        f"{path}:7:5: error: $.waivers[0].tickt: unknown key `tickt` (did you mean `ticket`?)",
        f"{path}:12:14: error: $.waivers[1].expires: `expires` must be a calendar date "
        "YYYY-MM-DD, got 'next week'",
        f"{path}:13:5: error: $.waivers[2]: missing required field `rule`",
        f"{path}:22:5: error: duplicate waiver for rule R-4 and subject org (first at {path}:17:5)",
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("waivers: {}\n", ":1:1: error: $: a waivers file is a mapping", id="not-list"),
        pytest.param("waiver: []\n", ":1:1: error: $.waiver: unknown key `waiver`", id="typo"),
        pytest.param("waivers:\n  - x\n", ":2:5: error: $.waivers[0]: a waiver is", id="scalar"),
        pytest.param("waivers: [\n", "invalid YAML", id="syntax"),
        pytest.param(
            "waivers:\n  - {rule: R, subject: org, reason: r, owner: o, expires: 2026-02-30}\n",
            ":2:59: error: $.waivers[0].expires: `2026-02-30` is not a valid date/time (day is out "
            "of range for month)",
            id="impossible-date",
        ),
        pytest.param(
            "waivers:\n  - {rule: R, subject: 'change:5..3', reason: r, owner: o, "
            "expires: 2026-12-01}\n",
            ":2:24: error: $.waivers[0].subject: subject `change:5..3` runs backwards: a change "
            "is `change:A..B` from revision A to a later revision B (`change:3..5`?)",
            id="backwards-change",
        ),
        pytest.param(
            "waivers:\n  - {rule: R, subject: 'change:4..4', reason: r, owner: o, "
            "expires: 2026-12-01}\n",
            "subject `change:4..4` runs backwards: a change is `change:A..B` from revision A "
            "to a later revision B (`change:3..4`?)",
            id="empty-change",
        ),
    ],
)
def test_invalid_shapes(tmp_path: Path, text: str, expected: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(PolicyError) as info:
        load_waivers(path)
    assert any(expected in p and p.startswith(str(path)) for p in info.value.problems)


@pytest.mark.parametrize("subject", ["change:5..3", "change:4..4", "change:1..1", "change:0..0"])
def test_a_backwards_change_subjects_suggestion_is_a_valid_subject(
    tmp_path: Path, subject: str
) -> None:
    """The fix a backwards `change:A..B` is told is one a waiver may hold: `change:0..0` was
    told to write `change:0..0` (itself refused); there is no revision before 0: no suggestion."""
    entry = "waivers:\n  - {rule: R, subject: '%s', reason: r, owner: o, expires: 2026-12-01}\n"
    path = tmp_path / "bad.yaml"
    path.write_text(entry % subject)
    with pytest.raises(PolicyError) as info:
        load_waivers(path)
    (problem,) = info.value.problems
    suggested = re.findall(r"\(`(change:\d+\.\.\d+)`\?\)$", problem)
    assert suggested or subject == "change:0..0", problem
    assert not suggested or subject != "change:0..0", problem
    for fixed in suggested:
        path.write_text(entry % fixed)
        (waiver,) = load_waivers(path)
        assert waiver.subject == fixed
