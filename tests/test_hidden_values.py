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
