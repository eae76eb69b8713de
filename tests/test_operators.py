"""The operator table: every registered operator, on values a policy meets, in one table."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from auditor.operators import BUILTIN_ENUMS, MISSING, REGISTRY, OperandTypeError
from auditor.policy.schema import build_schema

NOW = datetime(2026, 11, 1, tzinfo=UTC)
AUT = {"enum": "autonomy", "value": "medium"}
ERR = "type-error"

# (operator, actual, argument as written in YAML, expected: True / False / ERR)
TABLE: list[tuple[str, Any, Any, Any]] = [
    ("equals", True, True, True),
    ("equals", 1, True, ERR),  # type-strict: true is not 1, and never equal is an error
    ("equals", 1, 1.0, True),
    ("equals", None, None, True),
    ("equals", ["a"], ["a"], True),
    ("not_equals", "a", "b", True),
    ("not_equals", False, 0, ERR),  # a boolean is never a number: not a silent `true`
    ("in", "low", ["off", "low"], True),
    ("in", "high", ["off", "low"], False),
    ("not_in", "high", ["off", "low"], True),
    ("contains", ["a.com", "b.com"], "a.com", True),
    ("contains", "https://x", "://", True),
    ("contains", ["a"], "b", False),
    ("contains", 5, 5, ERR),
    ("contains", "abc", {"k": 1}, ERR),  # a string holds substrings only: not a `false`
    ("contains", "a5", 5, ERR),
    ("excludes", "abc", [1, "z"], ERR),
    ("gt", float("nan"), 1, ERR),  # NaN compares false both ways: `not` would pass it
    ("lte", float("inf"), 5, False),
    ("contains_all", ["a", "b", "c"], ["a", "c"], True),
    ("contains_all", ["a"], ["a", "c"], False),
    ("contains_all", "abc", ["a"], ERR),
    ("contains_any", ["a"], ["x", "a"], True),
    ("contains_any", [], ["x"], False),
    ("excludes", ["*", "a.com"], "*", False),
    ("excludes", ["a.com"], ["*", "*.com"], True),
    ("excludes", "rm -rf /", "sudo", True),
    ("excludes", {"a": 1}, "a", ERR),
    ("subset_of", ["a"], ["a", "b"], True),
    ("subset_of", ["a", "z"], ["a", "b"], False),
    ("subset_of", "a", ["a"], ERR),
    ("gt", 5, 4, True),
    ("gt", 4, 4, False),
    ("gte", 4, 4, True),
    ("gte", "5", 4, ERR),
    ("gte", True, 0, ERR),  # a boolean is not a number
    ("lt", 3.5, 4, True),
    ("lte", 5, 4, False),
    # integers compared exactly, not as floats (2**53 + 1 was 2**53; 2**63 - 2 > 2**63 - 1)
    ("lte", 2**53 + 1, 2**53, False),
    ("gt", 2**63 - 2, 2**63 - 1, False),
    ("gte", 2**53 + 1, 2**53 + 1, True),
    ("lt", 2**53, 2**53 + 1, True),
    ("lt", 2**53 + 1, 9007199254740992.0, False),  # an integer against a float: exact too
    ("at_most", "low", AUT, True),
    ("at_most", "high", AUT, False),
    ("at_most", "extreme", AUT, ERR),
    ("at_least", "medium", AUT, True),
    ("at_least", "off", AUT, False),
    ("matches", "https://api.example.com", r"^https://[a-z.]+\.example\.com$", True),
    ("matches", "http://x", "^https://", False),
    ("matches", 42, "4", ERR),
    ("not_matches", "AKIAxxxx", "^sk-", True),
    ("starts_with", "https://x", "https://", True),
    ("starts_with", "ftp://x", ["https://", "ssh://"], False),
    ("starts_with", None, "x", ERR),
    ("starts_with_any", "https://llm.corp/v1", ["https://api.x/", "https://llm.corp/"], True),
    ("starts_with_any", "https://llm.corp.evil/", ["https://llm.corp/"], False),
    ("starts_with_any", "https://x", [], False),
    ("starts_with_any", 3, ["3"], ERR),
    ("ends_with", "model.internal", ".internal", True),
    ("exists", MISSING, True, False),
    ("exists", None, True, True),  # null is a value: the key is present
    ("exists", MISSING, False, True),
    ("empty", [], True, True),
    ("empty", {"a": 1}, True, False),
    ("empty", None, True, True),
    ("empty", 0, True, ERR),
    ("type", 3, "integer", True),
    ("type", 3, "number", True),
    ("type", "3", "number", False),
    ("type", None, "null", True),
    ("length", ["a", "b"], 2, True),
    ("length", "abc", {"gte": 1, "lte": 2}, False),
    ("length", 12, 2, ERR),
    ("within_days", "2026-10-25T00:00:00Z", 30, True),
    ("within_days", "2026-08-01T00:00:00Z", 30, False),
    ("within_days", 1_760_000_000_000, 30, False),  # Unix ms (October 2025)
    # Unix seconds, told from milliseconds by size as the sync tells them (read as ms they were
    # January 1970: old, so `older_than_days` passed on a time a day old)
    ("within_days", 1_793_448_000, 7, True),  # 2026-10-31T12:00Z, a day before now
    ("older_than_days", 1_793_448_000, 30, False),
    ("older_than_days", 1_793_448_000_000, 30, False),  # the same time in milliseconds
    ("within_days", 4_102_444_800, 30, ERR),  # 2100 in Unix seconds: after now
    ("within_days", "last tuesday", 30, ERR),
    ("within_days", 1e20, 30, ERR),  # beyond the calendar: an error, not a crash
    ("within_days", float("nan"), 30, ERR),
    ("older_than_days", 10**400, 30, ERR),
    ("older_than_days", "2026-08-01", 30, True),
    ("older_than_days", "2026-10-31T12:00:00+00:00", 1, False),
    ("within_days", "2099-01-01T00:00:00Z", 30, ERR),  # after now: no age, not fresh
    ("within_days", 4_102_444_800_000, 30, ERR),  # 2100 in Unix ms
    ("within_days", "2026-11-01T20:00:00Z", 30, True),  # within the day of clock skew
    ("older_than_days", "2099-01-01T00:00:00Z", 30, ERR),
    ("version_at_least", "1.10.0", "1.9", True),
    ("version_at_least", "v2.0.0-beta", "2", False),  # a pre-release is below its release
    ("version_at_least", "2.0.0-rc1", "2.0.0", False),
    ("version_at_least", "1.10.0-beta", "1.10", False),
    ("version_at_least", "2.1.0-beta", "2", True),
    ("version_at_least", "2.0.0", "2.0.0-rc1", True),
    ("version_at_least", "1.0.0+build.7", "1.0", True),  # build metadata is ignored
    ("version_at_least", "1.2.3-", "1.0", ERR),  # an empty pre-release is no version
    ("version_at_least", "1.2", "1.2.1", False),
    ("version_at_least", "main", "1.0", ERR),
    ("version_at_least", 1.10, "1.2", ERR),  # a number has lost its zeros: 1.10 is 1.1
    ("version_at_least", 2, "1.10", True),  # a whole number is that version
    ("version_at_least", "\u0661.\u0663", "1.2", ERR),  # Arabic-Indic digits are no version
    ("version_at_least", "1.9.0.1", "1.9", True),  # any count of release numbers, part by part
    ("version_at_least", "1.9.0.1", "1.9.1", False),
    ("version_at_least", " 1.9 ", "1.9", True),  # blanks around it are ignored
]

# (operator, before, after, argument, expected)
CHANGE_TABLE: list[tuple[str, Any, Any, Any, Any]] = [
    ("changed", "low", "high", True, True),
    ("changed", "low", "low", True, False),
    ("changed", MISSING, None, True, True),  # absent -> null is a change
    ("changed", [1], [True], True, True),  # type-strict
    ("changed", "low", "low", False, True),
    ("added", MISSING, 1, True, True),
    ("added", 1, 1, True, False),
    ("removed", 1, MISSING, True, True),
    ("from", True, False, True, True),
    ("from", True, True, True, False),  # unchanged is not "from"
    ("to", True, False, False, True),
    ("to", MISSING, False, False, True),
    ("increased", "low", "high", {"enum": "autonomy"}, True),
    ("increased", "high", "low", {"enum": "autonomy"}, False),
    ("increased", 1, 3, True, True),
    ("increased", MISSING, 3, True, False),
    ("increased", "1", 3, True, ERR),
    ("increased", 2**53, 2**53 + 1, True, True),  # exact: as floats both were 2**53
    ("decreased", 2**63 - 1, 2**63 - 2, True, True),
    ("decreased", "high", "off", {"enum": "autonomy"}, True),
    ("decreased", "high", "ultra", {"enum": "autonomy"}, ERR),
]


def _call(name: str, *values: Any) -> Any:
    op = REGISTRY[name]
    *data, raw = values
    arg = op.prepare(raw, BUILTIN_ENUMS)
    try:
        return op.fn(*data, arg, NOW) if op.kind == "time" else op.fn(*data, arg)
    except OperandTypeError:
        return ERR


@pytest.mark.parametrize(
    ("name", "actual", "arg", "expected"),
    TABLE,
    ids=[f"{r[0]}-{i}" for i, r in enumerate(TABLE)],
)
def test_operator(name: str, actual: Any, arg: Any, expected: Any) -> None:
    assert _call(name, actual, arg) == expected


@pytest.mark.parametrize(
    ("name", "before", "after", "arg", "expected"),
    CHANGE_TABLE,
    ids=[f"{r[0]}-{i}" for i, r in enumerate(CHANGE_TABLE)],
)
def test_change_operator(name: str, before: Any, after: Any, arg: Any, expected: Any) -> None:
    assert _call(name, before, after, arg) == expected


#: SemVer 2.0 §11's example, lowest first.
SEMVER_ORDER = [
    "1.0.0-alpha",
    "1.0.0-alpha.1",
    "1.0.0-alpha.beta",
    "1.0.0-beta",
    "1.0.0-beta.2",
    "1.0.0-beta.11",
    "1.0.0-rc.1",
    "1.0.0",
    "1.0.1-0",
    "1.0.1",
]


@pytest.mark.parametrize("low", range(len(SEMVER_ORDER)))
def test_version_at_least_follows_semver_precedence(low: int) -> None:
    for high in range(len(SEMVER_ORDER)):
        got = _call("version_at_least", SEMVER_ORDER[high], SEMVER_ORDER[low])
        assert got is (high >= low), (SEMVER_ORDER[high], SEMVER_ORDER[low])


def test_every_registered_operator_is_in_the_tables() -> None:
    covered = {row[0] for row in TABLE} | {row[0] for row in CHANGE_TABLE}
    assert covered == set(REGISTRY)


def test_schema_operator_list_equals_the_registry() -> None:
    condition = build_schema()["$defs"]["condition"]["properties"]
    structural = {"path", "default", "enum", "all", "any", "not", "each", "some", "none", "assert"}
    assert set(condition) - structural == set(REGISTRY)


def test_at_least_the_issue_operators_exist() -> None:
    listed = [
        "equals",
        "not_equals",
        "in",
        "not_in",
        "contains",
        "contains_all",
        "contains_any",
        "excludes",
        "subset_of",
        "gt",
        "gte",
        "lt",
        "lte",
        "at_most",
        "at_least",
        "matches",
        "not_matches",
        "starts_with",
        "ends_with",
        "exists",
        "empty",
        "type",
        "length",
        "within_days",
        "older_than_days",
        "version_at_least",
        "changed",
        "from",
        "to",
        "increased",
        "decreased",
        "added",
        "removed",
    ]
    assert set(listed) <= set(REGISTRY)


@pytest.mark.parametrize(
    ("name", "arg", "message"),
    [
        pytest.param("matches", "(?<=a)b", "lookaround or a backreference", id="lookbehind"),
        pytest.param("matches", r"(x)\1", "lookaround or a backreference", id="backref"),
        pytest.param("matches", "a(?!b)", "lookaround or a backreference", id="lookahead"),
        pytest.param("not_matches", "a(", "invalid regex", id="unbalanced"),
        pytest.param("at_most", {"enum": "nope", "value": "x"}, "unknown ordered enum", id="enum"),
        pytest.param("at_most", {"enum": "autonomy", "value": "max"}, "not a level", id="lvl"),
        pytest.param("version_at_least", "latest", "not a version", id="version"),
        pytest.param("at_most", {"enum": "autonomy"}, "needs a level of autonomy", id="no-level"),
    ],
)
def test_bad_arguments_are_refused_at_load(name: str, arg: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        REGISTRY[name].prepare(arg, BUILTIN_ENUMS)


@pytest.mark.parametrize(
    ("pattern", "text", "found"),
    [
        pytest.param(r"\\1", "C:\\1", True, id="escaped-backslash-then-digit"),
        pytest.param(r"\\1", "1", False, id="needs-the-backslash"),
        pytest.param(r"\(\?=", "(?=x)", True, id="escaped-lookahead-text"),
    ],
)
def test_patterns_that_only_look_like_backreferences_are_accepted(
    pattern: str, text: str, found: bool
) -> None:
    compiled = REGISTRY["matches"].prepare(pattern, BUILTIN_ENUMS)
    assert REGISTRY["matches"].fn(text, compiled) is found


def test_regex_errors_do_not_reach_stderr(capfd: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(ValueError):
        REGISTRY["matches"].prepare("a(", BUILTIN_ENUMS)
    assert capfd.readouterr().err == ""
