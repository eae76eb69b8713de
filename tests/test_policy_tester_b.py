"""Fixes for what tester B found in the policy language: each test fails without its fix."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from auditor.errors import PolicyError
from auditor.evaluate.change import change_document
from auditor.evaluate.env import Env
from auditor.evaluate.rule import run_rule
from auditor.evaluate.status import rule_status
from auditor.evaluate.testing import run_policy_tests
from auditor.models import Revision, User
from auditor.policy import cases as case_files
from auditor.policy import load_policies
from auditor.policy.model import Rule
from auditor.policy.phrasing import clip


def _problems(path: Path) -> list[str]:
    with pytest.raises(PolicyError) as info:
        load_policies([path])
    return [line.replace(f"{path.parent}/", "") for line in info.value.problems]


@pytest.mark.parametrize(
    ("written", "number"), [("1.10", "1.1"), ("2.50", "2.5"), ("1.0", "1.0"), ("3.", "3.0")]
)
def test_an_unquoted_version_that_yaml_reads_as_a_number_is_refused(
    tmp_path: Path, written: str, number: str
) -> None:
    """`version_at_least: 1.10` unquoted is the float 1.1 to YAML, so `1.9.0` passed."""
    path = tmp_path / "v.yaml"
    path.write_text(
        "defaults: {severity: high, target: settings}\nrules:\n"
        "  - id: VER-001\n    title: t\n"
        f"    assert: {{path: cliVersion, version_at_least: {written}}}\n"
    )
    assert _problems(path) == [
        f"v.yaml:5:50: error: $.rules[0].assert.version_at_least: version_at_least: {written} "
        f"was read as the number {number}; quote the version: '{written}'"
    ]


@pytest.mark.parametrize("operand", ["'1.10'", '"1.10"', "2"])
def test_a_quoted_version_or_a_whole_number_loads(tmp_path: Path, operand: str) -> None:
    path = tmp_path / "v.yaml"
    path.write_text(
        "defaults: {severity: high, target: settings}\nrules:\n"
        f"  - id: VER-001\n    title: t\n    assert: {{path: v, version_at_least: {operand}}}\n"
    )
    assert [r.id for r in load_policies([path]).rules] == ["VER-001"]


def test_a_duplicate_id_is_reported_beside_the_first_rules_own_error(tmp_path: Path) -> None:
    """Every problem at once: the duplicate was only shown once the typo was fixed."""
    path = tmp_path / "dup.yaml"
    path.write_text(
        "defaults: {severity: low, target: settings}\nrules:\n"
        "  - {id: R1, title: t, assert: {path: a, equal: 1}}\n"
        "  - {id: R1, title: t2, assert: {path: a, equals: 2}}\n"
    )
    assert _problems(path) == [
        "dup.yaml:3:42: error: $.rules[0].assert.equal: unknown key `equal` "
        "(did you mean `equals`?)",
        "dup.yaml:4:10: error: $.rules[1].id: duplicate rule id `R1` (first at dup.yaml:3:5)",
    ]


# --- on_missing on a change leaf absent on both sides, and on an absent `when` path ----------

NOW = datetime(2026, 11, 1, tzinfo=UTC)


def _rule(tmp_path: Path, body: str, defaults: str = "severity: high") -> Rule:
    path = tmp_path / "p.yaml"
    path.write_text(f"defaults: {{{defaults}}}\nrules:\n  - id: R-1\n    title: t\n{body}")
    return load_policies([path]).rules[0]


def _verdict(rule: Rule, before: Any, after: Any = None) -> tuple[str, str]:
    """The rule's status and message (and the fast status path agrees)."""
    if rule.target == "change":
        revs = [
            Revision(n, NOW, User("u", "a@b.c", "A"), s, "") for n, s in ((1, before), (2, after))
        ]
        doc = change_document(*revs, with_changes=True)
        env = Env(NOW, (before, after))
    else:
        doc, env = before, Env(NOW)
    verdict = run_rule(rule, doc, env)
    assert rule_status(rule, doc, env) == verdict.status
    return verdict.status, verdict.message


@pytest.mark.parametrize("on_missing", ["unknown", "fail", "pass"])
def test_a_change_path_absent_on_both_sides_is_no_change_and_decides_compositions(
    tmp_path: Path, on_missing: str
) -> None:
    """ "Absent before and after" is known: no change. Read as missing (a try of this
    session, reverted after review), it outranked the other leaf's decided answer: this
    rule's `fail` became `pass` under `on_missing: pass` and `unknown` under `unknown`.
    A mistyped path is `policy lint --state`'s to find (the test below)."""
    rule = _rule(
        tmp_path,
        f"    target: change\n    on_missing: {on_missing}\n"
        "    assert: {not: {all: [{path: a, changed: false}, {path: b, changed: true}]}}\n",
    )
    assert _verdict(rule, {"b": 1}, {"b": 2})[0] == "fail"
    assert _verdict(rule, {"b": 1}, {"b": 1})[0] == "pass"


@pytest.mark.parametrize("on_missing", ["fail", "unknown", None])
def test_an_absent_when_path_is_a_precondition_not_met(
    tmp_path: Path, on_missing: str | None
) -> None:
    """Whatever `on_missing` says (the README: give the leaf a `default:`)."""
    own = f"    on_missing: {on_missing}\n" if on_missing else ""
    rule = _rule(
        tmp_path,
        f"    target: settings\n{own}"
        "    when: {not: {path: mcpPolicy.enabled, equals: false}}\n"
        "    assert: {path: mcpPolicy.allowlist, exists: true}\n",
        "severity: high, on_missing: fail",
    )
    assert _verdict(rule, {}) == (
        "not_applicable",
        "precondition not met: mcpPolicy.enabled is absent",
    )


def test_lint_warns_about_every_settings_path_a_change_rule_reads(tmp_path: Path) -> None:
    """Change-operator paths, `after.…` paths and `{ref: …}` paths were never checked."""
    from tests.test_policy_cli import _store_with, run

    state = tmp_path / "state.db"
    _store_with(state, [{"sandbox": {"enabled": True}}, {"sandbox": {"enabled": False}}])
    policy = tmp_path / "c.yaml"
    policy.write_text(
        "defaults: {severity: high, target: change}\nrules:\n"
        "  - {id: C-1, title: t, assert: {not: {path: sandbox.enabeld, from: true}}}\n"
        "  - {id: C-2, title: t, assert: {path: after.sandbox.enabeld, equals: true}}\n"
        "  - {id: C-3, title: t, assert: {path: after.sandbox.enabled,"
        " equals: {ref: before.sandbox.enabeld}}}\n"
        "  - {id: C-4, title: t, assert: {not: {path: sandbox.enabled, from: true}}}\n"
        "  - {id: S-1, title: t, target: settings,"
        " assert: {path: sandbox.enabled, equals: {ref: sandbox.enabeld}}}\n"
    )
    code, out, _ = run(tmp_path, "lint", str(policy), "--state", str(state))
    tail = "`sandbox.enabeld` appears in none of the 2 stored revisions (typo or renamed key?)"
    assert code == 0
    assert [line.replace(f"{policy}:", "") for line in out.splitlines()] == [
        f"3:46: warning: $.rules[0].assert.not.path: rule C-1: {tail}",
        f"4:40: warning: $.rules[1].assert.path: rule C-2: {tail}",
        f"5:77: warning: $.rules[2].assert.equals.ref: rule C-3: {tail}",
        f"7:89: warning: $.rules[4].assert.equals.ref: rule S-1: {tail}",
    ]


def test_a_message_keeps_each_character_of_a_quoted_value(tmp_path: Path) -> None:
    """Runs of spaces were squeezed: `cmd is "rm -rf /"; expected "rm -rf /"`."""
    rule = _rule(tmp_path, "    target: settings\n    assert: {path: cmd, equals: 'rm -rf /'}\n")
    assert _verdict(rule, {"cmd": "rm  -rf /"}) == (
        "fail",
        'cmd is "rm  -rf /"; expected "rm -rf /"',
    )
    rule = _rule(tmp_path, "    target: settings\n    assert: {path: cmd, matches: '^a  b'}\n")
    status, message = _verdict(rule, {"cmd": "x"})
    assert status == "fail" and "/^a  b/" in message


def test_a_message_stays_one_line_and_shows_what_does_not_print() -> None:
    assert clip("a\nb\tc\x00\u200b  d ") == "a\\nb\\tc\\u0000\\u200b  d "


def test_a_path_error_inside_star_names_the_element(tmp_path: Path) -> None:
    """`a[*].v` on `a: [1]` said `$ is integer, so it has no key 'v'`."""
    rule = _rule(tmp_path, "    target: settings\n    assert: {path: 'a[*].v', contains: 1}\n")
    assert _verdict(rule, {"a": [{"v": 1}, 2]}) == (
        "error",
        "$.a[1] is integer, so it has no key `v`",
    )


def test_a_ref_to_null_says_null_once(tmp_path: Path) -> None:
    rule = _rule(tmp_path, "    target: settings\n    assert: {path: n, lte: {ref: max}}\n")
    assert _verdict(rule, {"n": 1, "max": None}) == (
        "error",
        "ref max is null; `lte` at n needs a number",
    )


# --- `policy test` cases -----------------------------------------------------------------------

_CHANGE_POLICY = (
    "defaults: {severity: low, target: change, on_missing: unknown}\nrules:\n"
    "  - {id: C1, title: t, assert: {not: {path: a, from: true}}}\n"
    "  - {id: C3, title: t, assert: {path: author, equals: someone@example.com}}\n"
)


def _case_problems(tmp_path: Path, written: str) -> list[str]:
    (tmp_path / "c.yaml").write_text(_CHANGE_POLICY)
    (tmp_path / "c.tests.yaml").write_text("tests:\n" + written)
    return [
        line.replace(f"{tmp_path}/", "")
        for line in case_files.test_file_problems(
            [tmp_path / "c.tests.yaml"], load_policies([tmp_path]), NOW
        )
    ]


def test_a_case_cannot_expect_waived(tmp_path: Path) -> None:
    got = _case_problems(
        tmp_path, "  - name: w\n    before: {a: 1}\n    after: {a: 2}\n    expect: {C1: waived}\n"
    )
    assert got == [
        "c.tests.yaml:5:18: error: $.tests[0].expect.C1: `waived` cannot come out of a test "
        "case (a case reads no waivers): expect the status the rule gives"
    ]


def test_a_change_case_gives_both_sides(tmp_path: Path) -> None:
    """`before:` alone was judged against `after: {}` (a removal the author never wrote)."""
    got = _case_problems(
        tmp_path,
        "  - name: b\n    before: {a: true}\n    expect: {C1: pass}\n"
        "  - name: a\n    after: {a: true}\n    expect: {C1: pass}\n",
    )
    assert got == [
        "c.tests.yaml:3:5: error: $.tests[0].before: `before:` without `after:`: a change case "
        "gives both sides (write `after: {}` for empty settings)",
        "c.tests.yaml:6:5: error: $.tests[1].after: `after:` without `before:`: a change case "
        "gives both sides (write `before: {}` for empty settings)",
    ]


def test_a_case_without_author_has_no_author(tmp_path: Path) -> None:
    """A missing `author:` was `test@example.com`, which appeared in messages."""
    (tmp_path / "c.yaml").write_text(_CHANGE_POLICY)
    (tmp_path / "c.tests.yaml").write_text(
        "tests:\n  - name: n\n    before: {a: 1}\n    after: {a: 2}\n    expect: {C3: unknown}\n"
    )
    [result] = run_policy_tests([tmp_path], now=NOW)
    assert result.passed, result


def test_a_precondition_message_stays_within_the_message_limit(tmp_path: Path) -> None:
    """ "precondition not met: " was put before a message already cut to the limit (272
    characters against 240, the review)."""
    from auditor.policy.phrasing import MESSAGE_LIMIT

    key = "k" * 300
    rule = _rule(
        tmp_path,
        f"    target: settings\n    when: {{path: '{key}', equals: true}}\n"
        "    assert: {path: x, exists: true}\n",
        "severity: high",
    )
    status, message = _verdict(rule, {key: False})
    assert status == "not_applicable"
    assert message.startswith("precondition not met: ") and len(message) <= MESSAGE_LIMIT
