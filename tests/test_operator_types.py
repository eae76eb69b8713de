"""A literal of another JSON type than the value is an `error`, never a `false`.

`not_equals: "false"` on the boolean `false` was "not equal", so the rule passed on every
revision; `not_in: [gpt-5-codex]` on a `[*]` path's gathered array likewise, and a review
adding a blocked model exited 0. A `false` read from a mismatch is a silent pass under `not`,
`none`, `when`, `not_equals`, `not_in`, `excludes` or a change rule's `not: {to: …}`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from auditor.operators import BUILTIN_ENUMS, MISSING, REGISTRY, OperandTypeError, compare
from tests.conftest import run_cli

ERR = "error"


def _call(name: str, *values: Any) -> Any:
    op = REGISTRY[name]
    *data, raw = values
    try:
        return op.fn(*data, op.prepare(raw, BUILTIN_ENUMS))
    except OperandTypeError:
        return ERR


@pytest.mark.parametrize(
    ("name", "actual", "arg", "expected"),
    [
        # a quoted literal on a boolean or a number
        ("equals", False, "false", ERR),
        ("not_equals", False, "false", ERR),
        ("not_equals", 0, "0", ERR),
        ("in", 32000, ["32000"], ERR),
        ("not_in", 0, ["0", "1"], ERR),
        ("not_equals", True, 1, ERR),  # a boolean is never a number
        # an object or a gathered array against strings
        ("not_in", {"GITHUB_TOKEN": "x"}, ["GITHUB_TOKEN"], ERR),
        ("not_in", ["gpt-5-codex", "gpt-4o"], ["gpt-5-codex"], ERR),
        ("not_equals", ["gpt-5-codex"], "gpt-5-codex", ERR),
        # an array that can hold none of the literals
        ("excludes", [22, 80], ["22"], ERR),
        ("excludes", [22, 80], "22", ERR),
        ("contains", [22, 80], "22", ERR),
        ("contains_any", [22, 80], ["22", "80"], ERR),
        ("contains_all", [22, 80], ["22"], ERR),
        ("subset_of", [22, 80], ["22", "80"], ERR),
        # an object or array literal with a value of another type inside it
        ("not_equals", {"enabled": False}, {"enabled": "false"}, ERR),
        ("equals", {"sandbox": {"ports": [22]}}, {"sandbox": {"ports": ["22"]}}, ERR),
        ("not_in", {"level": 2}, [{"level": "2"}, {"level": "3"}], ERR),
        ("not_equals", [22, 443], ["22", "443"], ERR),
        # what still compares
        ("not_equals", {"enabled": False}, {"enabled": True}, True),
        ("not_equals", {"enabled": False}, {"mode": "x"}, True),  # no key in common
        ("not_equals", {"enabled": None}, {"enabled": "x"}, True),  # null compares
        ("not_equals", [22, 443], ["22"], True),  # arrays of unequal length: no place to match
        ("not_in", {"level": 2}, [{"level": "2"}, {"level": 3}], True),  # one literal fits
        ("not_equals", "off", "on", True),
        ("not_equals", 1, 1.5, True),  # an integer and a fraction are both numbers
        ("equals", 2, 2.0, True),
        ("not_equals", None, "x", True),  # null is a value a rule may test for
        ("equals", "x", None, False),
        ("not_in", None, ["a"], True),
        ("not_in", "c", [], True),  # no literal: nothing to compare with
        ("not_in", "c", ["a", 1], True),  # one literal of the value's type is enough
        ("in", ["a"], [["a"], "b"], True),
        ("excludes", [], ["22"], True),  # an empty array holds nothing of any type
        ("excludes", [22, "x"], ["22"], True),  # a string element: comparable
        ("contains_any", [22, 80], ["22", 80], True),
        ("subset_of", [], ["a"], True),
    ],
)
def test_a_literal_of_another_type_is_an_error_not_a_false(
    name: str, actual: Any, arg: Any, expected: Any
) -> None:
    assert _call(name, actual, arg) == expected


def test_a_redacted_value_may_hide_a_number() -> None:
    """The marker `hidden` hands over when no literal is the hidden value differs from a
    number literal (a hidden PIN), as from a string one: not a type error."""
    marker = "[secret fp:1a2b3c4d len:4]"
    assert compare.not_equals(marker, 1234) is True
    assert compare.not_in(marker, [1234, 5678]) is True
    assert compare.excludes([marker], [1234]) is True
    with pytest.raises(OperandTypeError):
        compare.not_equals(marker, True)


@pytest.mark.parametrize(
    ("name", "before", "after", "arg", "expected"),
    [
        ("to", True, False, "false", ERR),
        ("from", True, False, "true", ERR),
        ("to", MISSING, 0, "0", ERR),
        ("to", True, False, False, True),
        ("from", MISSING, False, "true", False),  # nothing before: not "from", whatever type
        ("to", 1, MISSING, "1", False),
        ("to", None, "x", "x", True),
    ],
)
def test_change_operators_compare_types_too(
    name: str, before: Any, after: Any, arg: Any, expected: Any
) -> None:
    assert _call(name, before, after, arg) == expected


POLICY = """\
defaults: {severity: high, target: settings, on_missing: fail}
rules:
  - {id: Y-1, title: Sandbox is not off, assert: {path: sandbox.enabled, not_equals: "false"}}
  - {id: Y-2, title: Retention is not zero, assert: {path: sessionRetentionDays, not_in: ["0"]}}
  - id: Y-3
    title: No model allows 32000 tokens
    assert: {none: customModels, assert: {path: maxOutputTokens, in: ["32000"]}}
  - {id: Y-4, title: Sandbox not disabled, assert: {not: {path: sandbox.enabled, equals: "false"}}}
  - {id: Y-5, title: No GITHUB_TOKEN in env, assert: {path: env, not_in: [GITHUB_TOKEN]}}
  - id: Y-6
    title: No blocked model
    assert: {path: "customModels[*].model", not_in: {ref: modelPolicy.blockedModelIds}}
  - {id: Y-7, title: No ssh port, assert: {path: ports, excludes: ["22"]}}
  - id: Y-8
    title: Sandbox when managed
    when: {path: managedComputersEnabled, equals: "true"}
    assert: {path: sandbox.enabled, equals: true}
"""

SETTINGS = {
    "managedComputersEnabled": True,
    "sandbox": {"enabled": False},
    "sessionRetentionDays": 0,
    "customModels": [{"id": "custom:a", "model": "gpt-5-codex", "maxOutputTokens": 32000}],
    "modelPolicy": {"blockedModelIds": ["gpt-5-codex"]},
    "env": {"GITHUB_TOKEN": "x"},
    "ports": [22, 80],
}


def test_policy_test_reports_each_mismatch_as_an_error_with_both_types(tmp_path: Path) -> None:
    """`auditor policy test`, as a rule author runs it: every rule above passed before."""
    (tmp_path / "p.yaml").write_text(POLICY)
    ids = [f"Y-{n}" for n in range(1, 9)]
    case = {"name": "everything off", "settings": SETTINGS, "expect": dict.fromkeys(ids, "error")}
    (tmp_path / "p.tests.yaml").write_text(orjson.dumps({"tests": [case]}).decode())
    code, out, err = run_cli(["policy", "test", "p.yaml"], {}, tmp_path)
    assert code == 0, out + err
    # and what the author reads when expecting `fail`: the path, both types, what to do
    case["expect"] = dict.fromkeys(ids, "fail")
    (tmp_path / "p.tests.yaml").write_text(orjson.dumps({"tests": [case]}).decode())
    code, out, err = run_cli(["policy", "test", "p.yaml"], {}, tmp_path)
    assert code == 1
    assert (
        "Y-1: expected fail, got error (sandbox.enabled is false: `not_equals` compares a "
        "boolean with a string, which it can never equal (a quoted literal is a string: to "
        "compare booleans, write it unquoted))"
    ) in out
    assert "customModels[*].model is" in out
    assert "(to test each element of an array, use `each:` or `none:`)" in out
    assert "`excludes` looks in an array of numbers for a string" in out


def test_a_quoted_value_inside_an_object_literal_is_an_error(tmp_path: Path) -> None:
    """`not_equals: {enabled: "false"}` on `{enabled: false}` passed on every revision, as the
    scalar `not_equals: "false"` did: the message names the key inside and the remedy."""
    policy = (
        "rules:\n"
        "  - id: Y-OBJ\n    title: sandbox object\n    severity: high\n    target: settings\n"
        '    assert: {path: sandbox, not_equals: {enabled: "false"}}\n'
    )
    (tmp_path / "p.yaml").write_text(policy)
    case = {"name": "off", "settings": {"sandbox": {"enabled": False}}, "expect": {"Y-OBJ": "fail"}}
    (tmp_path / "p.tests.yaml").write_text(orjson.dumps({"tests": [case]}).decode())
    code, out, err = run_cli(["policy", "test", "p.yaml"], {}, tmp_path)
    assert code == 1, out + err
    assert (
        'Y-OBJ: expected fail, got error (sandbox is {"enabled":false}: `not_equals` compares '
        "objects that can never be equal: `enabled` is a boolean here, a string in the literal "
        "(a quoted literal is a string"
    ) in out, out
    # written unquoted, the rule decides: the sandbox's object is the one it must not be
    (tmp_path / "p.yaml").write_text(policy.replace('"false"', "false"))
    code, out, err = run_cli(["policy", "test", "p.yaml"], {}, tmp_path)
    assert code == 0, out + err


def test_a_ref_argument_is_not_told_to_unquote_a_literal(tmp_path: Path) -> None:
    """Values a `{ref: …}` reads from the settings are no literal in the rule: the message
    names both types but not the remedy for a quoted literal, which the author cannot apply."""
    policy = (
        "rules:\n"
        "  - id: Y-REF\n    title: ref of strings\n    severity: high\n    target: settings\n"
        "    assert: {path: sandbox.enabled, not_in: {ref: allowed}}\n"
    )
    (tmp_path / "p.yaml").write_text(policy)
    settings = {"sandbox": {"enabled": False}, "allowed": ["false", "true"]}
    case = {"name": "ref", "settings": settings, "expect": {"Y-REF": "fail"}}
    (tmp_path / "p.tests.yaml").write_text(orjson.dumps({"tests": [case]}).decode())
    code, out, err = run_cli(["policy", "test", "p.yaml"], {}, tmp_path)
    assert code == 1, out + err
    assert (
        "Y-REF: expected fail, got error (sandbox.enabled is false: `not_in` compares a boolean "
        "with a string, which it can never equal)"
    ) in out, out
    assert "unquoted" not in out


def test_the_same_rules_with_literals_of_the_right_type_fail(tmp_path: Path) -> None:
    """The remedy the messages name gives the verdict the author meant."""
    fixed = (
        POLICY.replace('"false"', "false")
        .replace('["0"]', "[0]")
        .replace('["32000"]', "[32000]")
        .replace("{path: env, not_in: [GITHUB_TOKEN]}", "{path: env.GITHUB_TOKEN, equals: null}")
        .replace(
            '{path: "customModels[*].model", not_in: {ref: modelPolicy.blockedModelIds}}',
            "{none: customModels, assert: {path: model, in: {ref: modelPolicy.blockedModelIds}}}",
        )
        .replace('["22"]', "[22]")
        .replace('equals: "true"', "equals: true")
    )
    (tmp_path / "p.yaml").write_text(fixed)
    case = {"name": "off", "settings": SETTINGS, "expect": {f"Y-{n}": "fail" for n in range(1, 9)}}
    (tmp_path / "p.tests.yaml").write_text(orjson.dumps({"tests": [case]}).decode())
    code, out, err = run_cli(["policy", "test", "p.yaml"], {}, tmp_path)
    assert code == 0, out + err


def test_a_review_adding_a_blocked_model_is_not_a_silent_pass(tmp_path: Path) -> None:
    """`auditor review` of a change that adds a blocked model under the natural `[*]` rule
    exited 0 with "no findings introduced"; now the rule is an evaluation error: exit 2."""
    (tmp_path / "p.yaml").write_text(
        "defaults: {severity: high, target: settings, on_missing: fail}\nrules:\n"
        "  - id: SEC-MOD-010\n    title: No custom model uses a blocked model id\n"
        "    remediation: Use an allowed model.\n"
        '    assert: {path: "customModels[*].model", not_in: {ref: modelPolicy.blockedModelIds}}\n'
    )
    live = {"customModels": [{"id": "custom:a", "model": "gpt-4o"}], **_blocked()}
    proposed = {"customModels": [{"id": "custom:a", "model": "gpt-5-codex"}], **_blocked()}
    (tmp_path / "live.json").write_bytes(orjson.dumps(live))
    (tmp_path / "proposed.json").write_bytes(orjson.dumps(proposed))
    argv = ["review", str(tmp_path / "proposed.json"), "--against", str(tmp_path / "live.json")]
    argv += ["--policy", str(tmp_path / "p.yaml"), "--out", str(tmp_path / "o"), "-o", "json"]
    code, out, err = run_cli(argv, {}, tmp_path)
    assert code == 2, out + err
    assert "SEC-MOD-010" in err and "`not_in` compares an array with a string" in err


def _blocked() -> dict[str, Any]:
    return {"modelPolicy": {"blockedModelIds": ["gpt-5-codex"]}}


CHANGES_POLICY = """\
defaults: {severity: high, target: change}
rules:
  - id: MY-SBX-001
    title: no step turns the sandbox off
    assert:
      none: changes
      assert:
        all:
          - {path: path, equals: "$.sandbox.enabled"}
          - {path: after, equals: false}
  - id: MY-RET-001
    title: retention is never set to a quoted zero
    assert:
      none: changes
      assert:
        all:
          - {path: path, equals: "$.sessionRetentionDays"}
          - {path: after, in: ["0"]}
"""


def test_changes_before_and_after_of_any_type_compare_as_unequal(tmp_path: Path) -> None:
    """`changes[]` holds every change of a step, its `before`/`after` of every JSON type: a
    rule comparing `after` with `false` beside a change whose `after` is text was an `error`
    on that step (review R14), so every run was incomplete. There a literal of another type
    is unequal, as it was; a settings field (`Y-1` above) keeps the error."""
    (tmp_path / "c.yaml").write_text(CHANGES_POLICY)
    before = {"sandbox": {"enabled": True}, "maxAutonomyLevel": "low", "sessionRetentionDays": 30}
    cases = [
        {
            "name": "sandbox off and autonomy raised in one step",
            "before": before,
            "after": {**before, "sandbox": {"enabled": False}, "maxAutonomyLevel": "high"},
            "expect": {"MY-SBX-001": "fail", "MY-RET-001": "pass"},
        },
        {
            "name": "an unrelated change of text",
            "before": before,
            "after": {**before, "maxAutonomyLevel": "high", "sessionRetentionDays": 0},
            "expect": {"MY-SBX-001": "pass", "MY-RET-001": "pass"},
        },
    ]
    (tmp_path / "c.tests.yaml").write_text(orjson.dumps({"tests": cases}).decode())
    code, out, err = run_cli(["policy", "test", "c.yaml"], {}, tmp_path)
    assert code == 0, out + err


def test_changes_written_with_a_star_are_read_as_changes(tmp_path: Path) -> None:
    """`none: "changes[*]"` walks the same changes as `none: changes` (review R18: only the
    latter compared `after` of another type as unequal; the former was an `error`)."""
    (tmp_path / "c.yaml").write_text(CHANGES_POLICY.replace("none: changes", 'none: "changes[*]"'))
    before = {"sandbox": {"enabled": True}, "maxAutonomyLevel": "low", "sessionRetentionDays": 30}
    case = {
        "name": "sandbox off and autonomy raised in one step",
        "before": before,
        "after": {**before, "sandbox": {"enabled": False}, "maxAutonomyLevel": "high"},
        "expect": {"MY-SBX-001": "fail", "MY-RET-001": "pass"},
    }
    (tmp_path / "c.tests.yaml").write_text(orjson.dumps({"tests": [case]}).decode())
    code, out, err = run_cli(["policy", "test", "c.yaml"], {}, tmp_path)
    assert code == 0, out + err


def test_the_element_itself_keeps_the_type_check(tmp_path: Path) -> None:
    """`@`, the element itself, is a settings array's entry, of one type: `in: ["22"]` on
    its numbers is the quoted-literal mistake, an `error` (review R17: with `@` taken as of
    any type, `none: allowedPorts` with `{path: "@", in: ["22"]}` passed on `[22, 443]`)."""
    (tmp_path / "m.yaml").write_text(
        "defaults: {severity: high, target: settings}\nrules:\n"
        "  - id: PORT-001\n    title: t\n    assert:\n      none: ports\n"
        '      assert: {path: "@", in: ["22", "23"]}\n'
        "  - id: PORT-002\n    title: t\n    assert:\n      each: ports\n"
        '      assert: {path: "@", not_equals: "22"}\n'
    )
    case = {"name": "ssh", "settings": {"ports": [22, 443]}}
    case["expect"] = {"PORT-001": "error", "PORT-002": "error"}
    (tmp_path / "m.tests.yaml").write_text(orjson.dumps({"tests": [case]}).decode())
    code, out, err = run_cli(["policy", "test", "m.yaml"], {}, tmp_path)
    assert code == 0, out + err


def test_type_object_on_a_hidden_value_is_decided() -> None:
    """A marker stands for a string or a number, never an object: `type: object` on it is
    false (CHG-MOD-001 reads a change's `after` so), `type: string` stays undecidable."""
    from auditor.operators import HiddenValueError

    marker = "[secret fp:1a2b3c4d len:24]"
    assert REGISTRY["type"].fn(marker, "object") is False
    assert REGISTRY["type"].fn(marker, "boolean") is False
    with pytest.raises(HiddenValueError):
        REGISTRY["type"].fn(marker, "string")
