"""How expectations are worded: every operator has a natural phrase and a natural negation."""

from __future__ import annotations

import re
from typing import Any

import pytest

from auditor.operators import MISSING, REGISTRY
from auditor.policy.phrasing import (
    clip,
    is_flag,
    phrase,
    phrase_parts,
    shown_arg,
    template,
    third_person,
)

_AUT = {"enum": "autonomy", "value": "medium"}
# Sample arguments as a policy writes them, per operator (boolean operators: `true`).
_SAMPLE: dict[str, Any] = {
    "at_most": _AUT,
    "at_least": _AUT,
    "length": 3,
    "type": "string",
    "within_days": 30,
    "older_than_days": 30,
    "version_at_least": "1.2",
    "increased": True,
    "decreased": True,
}
_OPENERS = ("to ", "not to ", "a ", "an ", "{arg}")


def _arg(name: str) -> Any:
    return True if is_flag(REGISTRY[name]) else _SAMPLE.get(name, "x")


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_every_operator_has_a_phrase_and_a_natural_negation(name: str) -> None:
    op = REGISTRY[name]
    yes, no = phrase(op, _arg(name), '"x"'), phrase(op, _arg(name), '"x"', negate=True)
    assert op.expect.startswith(_OPENERS) and op.negated.startswith(_OPENERS), (yes, no)
    assert yes != no
    for text in (yes, no):
        assert not re.search(r"[=<>_]|\bnot not\b|\bfalse\b|\btrue\b", text), text


@pytest.mark.parametrize(
    ("name", "raw", "negate", "actual", "wanted"),
    [
        pytest.param("contains", "[secret ", True, "", 'not to contain "[secret "', id="not-in"),
        pytest.param("empty", False, False, [], "a non-empty list", id="empty-false"),
        pytest.param("empty", False, False, "", "a non-empty string", id="empty-false-string"),
        pytest.param("empty", True, False, {}, "an empty object", id="empty-true"),
        pytest.param("empty", True, True, [], "a non-empty list", id="not-empty-true"),
        pytest.param("exists", False, False, MISSING, "to be absent", id="exists-false"),
        pytest.param("exists", False, True, MISSING, "to be present", id="not-exists-false"),
        pytest.param("type", "string", False, 1, 'to be of type "string"', id="type"),
        pytest.param(
            "length", {"gte": 1, "lte": 10}, False, [],
            "to have length at least 1 and at most 10", id="length-bounds",
        ),
        pytest.param("length", 2, True, [], "not to have length 2", id="not-length"),
        pytest.param("within_days", 30, False, "", "to be within the last 30 days", id="within"),
        pytest.param("within_days", 30, True, "", "to be more than 30 days old", id="not-within"),
        pytest.param("at_most", _AUT, False, "high", 'to be at most "medium" (autonomy)', id="le"),
        pytest.param("at_most", _AUT, True, "low", 'to be above "medium" (autonomy)', id="not-le"),
        pytest.param("gte", 2, True, 1, "to be less than 2", id="not-gte"),
        pytest.param("equals", True, False, False, "true", id="equals"),
        pytest.param("equals", True, True, True, "not to be true", id="not-equals"),
        pytest.param("matches", "^rm", True, "rm", "not to match /^rm/", id="not-matches"),
        pytest.param("changed", False, False, 1, "to stay the same", id="changed-false"),
        pytest.param("increased", True, True, 1, "not to increase", id="not-increased"),
        pytest.param("version_at_least", "1.2", False, "1", "to be version 1.2 or later", id="v"),
    ],
)  # fmt: skip
def test_phrases_read_naturally(
    name: str, raw: Any, negate: bool, actual: Any, wanted: str
) -> None:
    op = REGISTRY[name]
    assert phrase(op, raw, shown_arg(op, raw), negate, actual) == wanted


@pytest.mark.parametrize(
    ("name", "raw", "negate", "actual", "wanted"),
    [
        pytest.param("contains", "[secret ", True, "", ("not to contain", "[secret "), id="in"),
        pytest.param("matches", "^rm", False, "", ("to match", "^rm"), id="regex"),
        pytest.param("equals", True, False, False, ("to be", True), id="equals"),
        pytest.param("empty", False, False, [], ("a non-empty list", None), id="no-argument"),
    ],
)  # fmt: skip
def test_evidence_splits_phrase_and_argument(
    name: str, raw: Any, negate: bool, actual: Any, wanted: tuple[str, Any]
) -> None:
    lead, has_arg = phrase_parts(template(REGISTRY[name], raw, negate), actual)
    assert (lead, raw if has_arg else None) == wanted


@pytest.mark.parametrize(
    ("text", "wanted"),
    [
        ("to match /x/", "matches /x/"),
        ("not to match /x/", "does not match /x/"),
        ("to be absent", "is absent"),
        ("not to be one of [1]", "is not one of [1]"),
        ("to have length 2", "has length 2"),
        ("a non-empty list", "is a non-empty list"),
        ("true", "is true"),
    ],
)
def test_third_person(text: str, wanted: str) -> None:
    assert third_person(text) == wanted


def test_clip_keeps_one_line_within_the_limit() -> None:
    text = clip("a\nb " + "x" * 500, 50)
    assert "\n" not in text and len(text) == 50 and text.endswith("…")
