"""Rules on redacted values: a marker is judged by its keyed fingerprint, never by its text.

A value equal to a remembered secret is hidden wherever it is (an `env` value copied into
`dataRegion`); comparing the marker's text with a rule's literal gave wrong results both ways,
`dataRegion not_in [us-east-1]` passing on a hidden `us-east-1`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from auditor.operators import BUILTIN_ENUMS, REGISTRY, HiddenValueError, fingerprinting
from auditor.redact import Redactor
from tests.test_review import run_cli

R = Redactor(b"test-key-hidden-values")
HIDDEN = R.marker("us-east-1")
ERR = "error"


def _call(name: str, actual: Any, raw: Any, marker_of: Any = R.marker) -> Any:
    op = REGISTRY[name]
    arg = op.prepare(raw, BUILTIN_ENUMS)
    with fingerprinting(marker_of):
        try:
            return op.fn(actual, arg)
        except HiddenValueError as exc:
            assert "us-east-1" not in str(exc) and "redacted" in str(exc)
            return ERR


COMMAND = f"curl -H 'Authorization: Bearer {R.marker('ghp_0123456789abcdef')}' https://x"

TABLE = [
    # a whole hidden value: equality and membership are exact by fingerprint
    ("not_in", HIDDEN, ["us-east-1"], False),
    ("not_in", HIDDEN, ["eu-west-1"], True),
    ("in", HIDDEN, ["eu-west-1", "us-east-1"], True),
    ("equals", HIDDEN, "us-east-1", True),
    ("equals", HIDDEN, "us-east-2", False),
    ("not_equals", HIDDEN, "us-east-1", False),
    ("not_equals", R.marker("73918462051"), 73918462051, False),  # a hidden number
    ("contains", [HIDDEN, "eu-west-1"], "us-east-1", True),
    ("excludes", [HIDDEN], ["us-east-1"], False),
    ("subset_of", [HIDDEN], ["us-east-1", "eu-west-1"], True),
    ("subset_of", [HIDDEN], ["eu-west-1"], False),
    # content: exact when a literal is the hidden value, else not decided
    ("starts_with", HIDDEN, "us-east", ERR),
    ("starts_with", HIDDEN, "us-east-1", True),
    ("matches", HIDDEN, "^us-", ERR),
    ("not_matches", HIDDEN, "^us-", ERR),
    ("contains", HIDDEN, "east", ERR),
    ("gt", HIDDEN, 3, ERR),
    ("length", HIDDEN, 9, True),  # the marker carries the length
    ("type", HIDDEN, "string", ERR),  # it may have hidden a number
    ("type", R.marker("5"), "integer", ERR),
    ("type", COMMAND, "string", True),  # text around a marker is a string
    ("empty", HIDDEN, False, True),
    # rules about markers themselves read the marker's text (the shipped packs' rules)
    ("starts_with", HIDDEN, "[secret ", True),
    ("not_matches", HIDDEN, r"^\[secret ", False),
    ("contains", COMMAND, "[secret ", True),
    # a marker inside longer text
    ("contains", COMMAND, "ghp_0123456789abcdef", True),  # put back for the comparison
    ("excludes", COMMAND, "ghp_0123456789abcdef", False),
    ("excludes", COMMAND, "password", ERR),  # the hidden part may hold it
    ("not_matches", COMMAND, "ghp_", ERR),
    ("not_matches", COMMAND, "^curl", False),  # the visible text decides
    ("matches", COMMAND, "^curl", True),
    ("equals", COMMAND, "curl -H 'Authorization: Bearer ghp_0123456789abcdef' https://x", True),
    ("equals", COMMAND, "curl -H 'Authorization: Bearer ghp_0123456789abcdeX' https://x", False),
    ("not_in", COMMAND, ["curl -H 'Authorization: Bearer ghp_0123456789abcdef' https://x"], False),
    # a positive operator's `false` is not decided either: `not`, `none` and `when` flip it
    ("contains", COMMAND, "ghp_", ERR),
    ("contains", COMMAND, "fp:", ERR),  # a marker's own text is not the value's
    ("excludes", COMMAND, "secret fp", ERR),
    ("contains", COMMAND, "curl -H", True),
    ("excludes", COMMAND, "curl -H", False),
    ("starts_with", COMMAND, "curl -H 'Authorization: Bearer ghp_", ERR),
    ("starts_with", COMMAND, "wget", False),  # differs from the visible start
    ("starts_with_any", COMMAND, ["wget", "curl"], True),
    ("ends_with", COMMAND, "x", True),
    ("ends_with", COMMAND, "ghp_0123456789abcdef' https://x", ERR),
    ("ends_with", HIDDEN, "-1", ERR),
    ("matches", COMMAND, "ghp_", ERR),
    ("matches", COMMAND, "Bearer", True),  # wholly in the visible text
    ("matches", COMMAND, r"Bearer \S+'", ERR),  # runs over the marker
    ("length", f"ab{HIDDEN}", 11, True),  # the hidden part counts by its length
    # arrays and objects holding a marker: compared leaf by leaf, by fingerprint
    ("equals", [HIDDEN], ["us-east-1"], True),
    ("not_equals", [HIDDEN], ["us-east-1"], False),
    ("not_equals", [HIDDEN], ["eu-west-1"], True),
    ("not_in", [HIDDEN], [["us-east-1"]], False),
    ("in", [HIDDEN, "b"], [["us-east-1", "b"]], True),
    ("not_equals", {"region": HIDDEN}, {"region": "us-east-1"}, False),
    ("equals", {"region": HIDDEN, "n": 1}, {"region": "us-east-1", "n": 2}, False),
    ("excludes", [{"region": HIDDEN}], [{"region": "us-east-1"}], False),
    ("contains", [{"region": HIDDEN}], {"region": "us-east-1"}, True),
    ("contains", [[HIDDEN]], ["us-east-1"], True),
    ("subset_of", [{"region": HIDDEN}], [{"region": "eu-west-1"}], False),
]


@pytest.mark.parametrize(
    ("name", "actual", "arg", "expected"), TABLE, ids=[f"{r[0]}-{i}" for i, r in enumerate(TABLE)]
)
def test_an_operator_on_a_hidden_value(name: str, actual: Any, arg: Any, expected: Any) -> None:
    assert _call(name, actual, arg) == expected


@pytest.mark.parametrize("name", ["equals", "not_equals", "in", "not_in"])
def test_without_the_key_a_comparison_with_a_hidden_value_is_not_decided(name: str) -> None:
    arg = "us-east-1" if "equals" in name else ["us-east-1"]
    assert _call(name, HIDDEN, arg, marker_of=None) == ERR


CHANGES = [
    ("to", "eu-west-1", HIDDEN, "us-east-1", True),
    ("to", R.marker("eu-west-1"), HIDDEN, "us-east-1", True),
    ("to", HIDDEN, HIDDEN, "us-east-1", False),  # unchanged
    ("to", "eu-west-1", HIDDEN, "eu-central-1", False),
    ("from", R.marker("eu-west-1"), HIDDEN, "eu-west-1", True),
    ("from", R.marker("eu-west-1"), R.marker("eu-west-1"), "eu-west-1", False),
    ("from", R.marker("eu-west-1"), "x", "us-east-1", False),
    ("to", {"region": "a"}, {"region": HIDDEN}, {"region": "us-east-1"}, True),
    ("changed", R.marker("eu-west-1"), HIDDEN, True, True),
    ("increased", R.marker("73918462051"), 5, True, ERR),
]


@pytest.mark.parametrize(
    ("name", "before", "after", "arg", "expected"),
    CHANGES,
    ids=[f"{r[0]}-{i}" for i, r in enumerate(CHANGES)],
)
def test_a_change_operator_on_a_hidden_value(
    name: str, before: Any, after: Any, arg: Any, expected: Any
) -> None:
    op = REGISTRY[name]
    with fingerprinting(R.marker):
        try:
            got = op.fn(before, after, op.prepare(arg, BUILTIN_ENUMS))
        except HiddenValueError:
            got = ERR
    assert got == expected


def test_without_the_key_a_change_to_a_hidden_value_is_not_decided() -> None:
    with fingerprinting(None), pytest.raises(HiddenValueError):
        REGISTRY["to"].fn("eu-west-1", HIDDEN, "us-east-1")


KEYLESS = [
    ("equals", [HIDDEN], ["us-east-1"], ERR),
    ("equals", [HIDDEN, "a"], ["us-east-1", "b"], False),  # a visible item differs
    ("equals", {"region": HIDDEN}, {"zone": "us-east-1"}, False),  # other keys
    ("not_equals", COMMAND, "wget x", True),  # the visible text differs
    ("excludes", [{"cmd": COMMAND, "n": 1}], [{"cmd": "x", "n": 2}], True),
    ("contains", [{"cmd": COMMAND}], {"cmd": "curl"}, False),
    ("contains", [HIDDEN], "us-east-1", ERR),
]


@pytest.mark.parametrize(
    ("name", "actual", "arg", "expected"),
    KEYLESS,
    ids=[f"{r[0]}-{i}" for i, r in enumerate(KEYLESS)],
)
def test_without_the_key_only_what_the_visible_parts_decide_is_decided(
    name: str, actual: Any, arg: Any, expected: Any
) -> None:
    """`auditor policy test` has no key: a marker is compared with nothing, but another shape,
    a visible leaf or visible text that differs still decides (as before the leaf walk)."""
    assert _call(name, actual, arg, marker_of=None) == expected


def _review(tmp_path: Path, proposed: dict[str, Any]) -> tuple[int, dict[str, str], str]:
    policy = tmp_path / "p.yaml"
    policy.write_text(
        """rules:
  - id: T-REGION
    title: Data stays out of us-east-1
    severity: high
    target: settings
    assert: {path: dataRegion, not_in: ["us-east-1"]}
    remediation: r
  - id: T-PROXY
    title: Traffic goes through the corporate proxy
    severity: high
    target: settings
    assert: {path: networkPolicy.egressProxy, starts_with: "http://proxy.acme.example"}
    remediation: r
"""
    )
    live = {
        "dataRegion": "eu-west-1",
        "networkPolicy": {"egressProxy": "http://proxy.acme.example"},
    }
    (tmp_path / "live.json").write_text(json.dumps(live))
    (tmp_path / "prop.json").write_text(json.dumps(proposed))
    argv = ["review", str(tmp_path / "prop.json"), "--against", str(tmp_path / "live.json")]
    argv += ["--policy", str(policy), "--out", str(tmp_path / "o"), "--author", "a@b.example"]
    code, out, err = run_cli(argv, env={}, cwd=tmp_path)
    data = json.loads((tmp_path / "o" / "findings.json").read_text())
    found = {f["rule_id"]: f["status"] for f in data["findings"]}  # a rule that passed: none
    return code, found, out + err


def test_a_value_equal_to_an_env_secret_is_judged_by_fingerprint_not_passed(
    tmp_path: Path,
) -> None:
    """`env` values are secret by place; the same value elsewhere is hidden too. The region
    rule fails as it should (it passed), the proxy rule cannot be decided (it failed falsely)."""
    proposed = {
        "dataRegion": "us-east-1",
        "env": {"AWS_REGION": "us-east-1", "HTTPS_PROXY": "http://proxy.acme.example:3128"},
        "networkPolicy": {"egressProxy": "http://proxy.acme.example:3128"},
    }
    code, status, output = _review(tmp_path, proposed)
    assert status.get("T-REGION", "pass") == "fail"
    assert status.get("T-PROXY", "pass") == "error"
    assert "is redacted" in output
    assert code == 2


_WRAPPED = """rules:
  - id: T-AGE
    title: passwords expire within 90 days
    severity: high
    target: settings
    assert: {path: sso.passwordMaxAge, lte: 90}
    remediation: r
  - id: T-ATTEMPTS
    title: lockout after a whole number of attempts
    severity: high
    target: settings
    assert: {path: sso.maxAuthAttempts, type: integer}
    remediation: r
  - id: T-NOT
    title: the hook sends no GitHub token
    severity: high
    target: settings
    assert: {not: {path: hooks.cmd, contains: "ghp_"}}
    remediation: r
  - id: T-NONE
    title: no command sends a GitHub token
    severity: high
    target: settings
    assert: {none: cmds, assert: {path: "$", ends_with: "ghp_"}}
    remediation: r
  - id: T-WHEN
    title: a hook sending a GitHub token is approved
    severity: high
    target: settings
    when: {path: hooks.cmd, contains: "ghp_"}
    assert: {path: hooks.approved, equals: true}
    remediation: r
  - id: T-LIST
    title: regions are not only us-east-1
    severity: high
    target: settings
    assert: {path: regions, not_equals: ["us-east-1"]}
    remediation: r
  - id: T-OBJECT
    title: placement is not us-east-1
    severity: high
    target: settings
    assert: {path: placement, not_equals: {region: "us-east-1"}}
    remediation: r
  - id: T-TO
    title: data does not move to us-east-1
    severity: high
    target: change
    assert: {not: {path: dataRegion, to: "us-east-1"}}
    remediation: r
  - id: T-FROM
    title: data does not leave eu-west-1
    severity: high
    target: change
    assert: {not: {path: dataRegion, from: "eu-west-1"}}
    remediation: r
"""


def test_not_none_when_and_change_rules_do_not_pass_on_a_hidden_value(tmp_path: Path) -> None:
    """A positive operator's `false` on a hidden value, flipped by `not`, `none` or `when`,
    passed silently; so did equality on arrays and objects and the change operators. Numbers
    under keys that only mention a secret (`passwordMaxAge`) are settings, judged as they are."""
    token = "ghp_0123456789abcdefABCD0123456789abcd"
    live = {"dataRegion": "eu-west-1", "env": {"AWS_REGION": "eu-west-1"}}
    proposed = {
        "dataRegion": "us-east-1",
        "env": {"X": token, "AWS_REGION": "us-east-1"},
        "hooks": {"cmd": f"curl -d {token} https://x", "approved": False},
        "cmds": [f"curl -d {token}"],
        "regions": ["us-east-1"],
        "placement": {"region": "us-east-1"},
        "sso": {"passwordMaxAge": 60, "maxAuthAttempts": 5},
    }
    (tmp_path / "p.yaml").write_text(_WRAPPED)
    (tmp_path / "live.json").write_text(json.dumps(live))
    (tmp_path / "prop.json").write_text(json.dumps(proposed))
    argv = ["review", str(tmp_path / "prop.json"), "--against", str(tmp_path / "live.json")]
    argv += ["--policy", str(tmp_path / "p.yaml"), "--out", str(tmp_path / "o")]
    code, out, err = run_cli([*argv, "--author", "a@b.example"], env={}, cwd=tmp_path)
    data = json.loads((tmp_path / "o" / "findings.json").read_text())
    status = {f["rule_id"]: f["status"] for f in data["findings"]}
    assert status == {
        "T-AGE": "pass",
        "T-ATTEMPTS": "pass",
        "T-NOT": "error",
        "T-NONE": "error",
        "T-WHEN": "error",
        "T-LIST": "fail",
        "T-OBJECT": "fail",
        "T-TO": "fail",
        "T-FROM": "fail",
    }
    assert token not in out + err and code == 2
