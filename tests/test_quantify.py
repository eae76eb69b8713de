"""Quantifier and negation messages: one readable sentence and compact evidence per failure."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from auditor.evaluate.conditions import Env, evaluate_condition
from auditor.evaluate.outcome import Outcome
from auditor.evaluate.quantify import ENTRY_EVIDENCE
from auditor.operators import BUILTIN_ENUMS
from auditor.policy.compile import Compiler
from auditor.policy.phrasing import MESSAGE_LIMIT

ENV = Env(datetime(2026, 11, 1, tzinfo=UTC))
RM = "^rm( -(rf|fr))?( /)?$"
BLOCK = ["sudo", "shutdown", "dd if=", "ssh", "mkfs"]
DOC: dict[str, Any] = {
    "commandBlocklist": BLOCK,
    "emails": [],
    "allowWrite": ["./", "/var/tmp", "/etc/x"],
    "hooks": [{"command": "curl -H 'Bearer [secret fp:1a2b3c4d len:36]'"}, {"command": "ls"}],
    "models": [{"id": f"m{i}", "url": f"http://m{i}"} for i in range(15)],
    "changes": [{"path": "$.commandBlocklist", "kind": "item_removed"}],
    "sandbox": {"enabled": False},
}


def _run(raw: Any, doc: Any = None) -> Outcome:
    compiler = Compiler("settings", BUILTIN_ENUMS)
    cond = compiler.compile(raw, ("assert",))
    assert not compiler.problems and cond is not None, compiler.problems
    return evaluate_condition(cond, DOC if doc is None else doc, "$", ENV)


def _some(pattern: str) -> dict[str, Any]:
    return {"some": "commandBlocklist", "assert": {"path": "@", "matches": pattern}}


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        pytest.param(
            _some(RM),
            f'no entry of commandBlocklist matches /{RM}/ (5 entries: "sudo", "shutdown", '
            '"dd if=", "ssh", "mkfs")',
            id="some-one-sentence",
        ),
        pytest.param(
            {"all": [_some(RM), _some("^git push")]},
            f'no entry of commandBlocklist matches /{RM}/ (5 entries: "sudo", "shutdown", '
            '"dd if=", "ssh", "mkfs") (+1 more failure)',
            id="all-of-somes-one-suffix",
        ),
        pytest.param(
            {"some": "commandBlocklist", "assert": {"any": [
                {"path": "@", "matches": "^rm"}, {"path": "@", "equals": "reboot"}]}},
            'no entry of commandBlocklist matches /^rm/ or is "reboot" (5 entries: "sudo", '
            '"shutdown", "dd if=", "ssh", "mkfs")',
            id="some-any",
        ),
        pytest.param(
            {"some": "models", "assert": {"path": "url", "starts_with": "https://"}},
            'models has no entry where url starts with "https://" (15 entries: id "m0", id "m1", '
            'id "m2", id "m3", id "m4", … 10 more)',
            id="some-relative-path",
        ),
        pytest.param(
            {"path": "emails", "empty": False},
            "emails is []; expected a non-empty list",
            id="not-empty",
        ),
        pytest.param(
            {"path": "sandbox.mode", "exists": True},
            "sandbox.mode is absent; expected to be present",
            id="exists",
        ),
        pytest.param(
            {"none": "hooks", "assert": {"path": "command", "contains": "[secret "}},
            "hooks[0].command is \"curl -H 'Bearer [secret fp:1a2b3c4d len:36]'\"; "
            'expected not to contain "[secret "',
            id="none-negates-the-phrase",
        ),
        pytest.param(
            {"not": {"path": "hooks[0].command", "contains": "[secret "}},
            "hooks[0].command is \"curl -H 'Bearer [secret fp:1a2b3c4d len:36]'\"; "
            'expected not to contain "[secret "',
            id="not-contains",
        ),
        pytest.param(
            {"none": "allowWrite", "assert": {"path": "@", "matches": "^/(etc|var)"}},
            'allowWrite[1] is "/var/tmp"; expected not to match /^/(etc|var)/ (+1 more entry)',
            id="none-counts-entries",
        ),
        pytest.param(
            {"none": "changes", "assert": {"all": [
                {"path": "path", "equals": "$.commandBlocklist"},
                {"path": "kind", "in": ["item_removed", "removed"]}]}},
            'not allowed: changes[0].path is "$.commandBlocklist" and '
            'changes[0].kind is "item_removed"',
            id="none-of-a-conjunction",
        ),
        pytest.param(
            {"each": "models", "assert": {"path": "url", "starts_with": "https://"}},
            'models[?id==\'m0\'].url is "http://m0"; expected to start with "https://" '
            "(+14 more entries)",
            id="each-counts-entries",
        ),
    ],
)  # fmt: skip
def test_failure_messages(raw: Any, message: str) -> None:
    outcome = _run(raw)
    assert (outcome.status, outcome.message) == ("fail", message)


def test_some_failure_has_one_evidence_item_for_the_array() -> None:
    (ev,) = _run(_some(RM)).evidence
    assert (ev.path, ev.actual, ev.operator, ev.expected) == (
        "$.commandBlocklist", BLOCK, "an entry that", f"matches /{RM}/",
    )  # fmt: skip


def test_each_failure_evidence_is_capped_and_counts_the_rest() -> None:
    raw = {"each": "models", "assert": {"path": "url", "starts_with": "https://"}}
    evidence = _run(raw).evidence
    assert len(evidence) == ENTRY_EVIDENCE
    assert evidence[0].path == "$.models[?id=='m0'].url"
    assert evidence[-1].note == "and 5 more entries not shown"


def test_none_failure_evidence_is_the_offending_entries() -> None:
    raw = {"none": "allowWrite", "assert": {"path": "@", "matches": "^/(etc|var)"}}
    evidence = _run(raw).evidence
    assert [(e.path, e.actual, e.operator) for e in evidence] == [
        ("$.allowWrite[1]", "/var/tmp", "not to match"),
        ("$.allowWrite[2]", "/etc/x", "not to match"),
    ]


def test_negated_leaf_evidence_reads_as_a_negation() -> None:
    (ev,) = _run({"not": {"path": "hooks[0].command", "contains": "[secret "}}).evidence
    assert (ev.operator, ev.expected) == ("not to contain", "[secret ")


def test_phrase_without_argument_leaves_expected_empty() -> None:
    (ev,) = _run({"path": "emails", "empty": False}).evidence
    assert (ev.operator, ev.expected, ev.actual) == ("a non-empty list", None, [])


def test_double_negation_restores_the_original() -> None:
    raw = {"not": {"not": {"path": "sandbox.enabled", "equals": True}}}
    assert _run(raw).message == "sandbox.enabled is false; expected true"


def test_messages_stay_one_line_and_short() -> None:
    doc = {"xs": ["line one\nline two " + "y" * 400] * 30}
    for raw in (
        {"each": "xs", "assert": {"path": "@", "equals": "z"}},
        {"some": "xs", "assert": {"path": "@", "matches": "^z" + "q" * 300}},
        {"none": "xs", "assert": {"path": "@", "contains": "line"}},
    ):
        message = _run(raw, doc).message
        assert "\n" not in message and len(message) <= MESSAGE_LIMIT, message
