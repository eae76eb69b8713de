"""The shipped policy packs: lint clean, every test case passes, every rule is documented,
mapped to controls and covered by at least one passing and one failing case."""

from __future__ import annotations

import argparse
import io
import re
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from auditor.cli import Context
from auditor.cli.parsers import register_policy
from auditor.evaluate.conditions import Env
from auditor.evaluate.rule import run_rule
from auditor.findings.waivers import load_waivers
from auditor.policy import load_policies
from auditor.policy.phrasing import MESSAGE_LIMIT

ROOT = Path(__file__).resolve().parent.parent
POLICIES = ROOT / "policies"
NOW = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
PACKS = {
    # pack: (minimum rule count, rule id prefix, target of its rules)
    "baseline": (30, "BASE-", {"settings"}),
    "changes": (10, "CHG-", {"change"}),
    "readiness": (8, "RDY-", {"readiness", "org"}),
    "usage": (10, "USE-", {"usage"}),
}
CONTROL = re.compile(r"^(SOC2:(CC|C|A|PI|P)\d+\.\d+|ISO27001:A\.[5-8]\.\d+)$")


def run_cli(tmp_path: Path, *argv: str) -> tuple[int, str]:
    parser = argparse.ArgumentParser(prog="auditor")
    register_policy(parser.add_subparsers())
    args = parser.parse_args(list(argv))
    out = io.StringIO()
    ctx = Context(env={}, stdout=out, stderr=io.StringIO(), clock=lambda: NOW, cwd=str(tmp_path))
    code = args.handler(args, ctx)
    return int(code), out.getvalue()


def test_lint_is_clean(tmp_path: Path) -> None:
    code, out = run_cli(tmp_path, "policy", "lint", str(POLICIES))
    assert code == 0, out
    assert out == ""


def test_every_case_passes(tmp_path: Path) -> None:
    code, out = run_cli(tmp_path, "policy", "test", str(POLICIES))
    failed = [line for line in out.splitlines() if line.startswith("FAIL")]
    assert failed == []
    assert code == 0
    assert re.search(r"^\d{2,} passed, 0 failed$", out, re.M), out


@pytest.mark.parametrize("pack", sorted(PACKS))
def test_pack_size_ids_and_targets(pack: str) -> None:
    minimum, prefix, targets = PACKS[pack]
    rules = load_policies([POLICIES / f"{pack}.yaml"]).rules
    assert len(rules) >= minimum
    assert all(r.id.startswith(prefix) for r in rules)
    assert {r.target for r in rules} == targets


def shipped_rules() -> list[Any]:
    return list(load_policies([POLICIES]).rules)


@pytest.mark.parametrize("rule", shipped_rules(), ids=lambda r: r.id)
def test_rule_is_documented_and_mapped(rule: Any) -> None:
    assert rule.title and rule.description.strip() and rule.remediation.strip()
    assert rule.controls, "no controls"
    assert [c for c in rule.controls if not CONTROL.match(c)] == []
    assert any(c.startswith("SOC2:") for c in rule.controls)
    assert any(c.startswith("ISO27001:") for c in rule.controls)


def expected_statuses() -> dict[str, set[str]]:
    seen: dict[str, set[str]] = defaultdict(set)
    for path in sorted(POLICIES.glob("*.tests.yaml")):
        for case in YAML(typ="safe").load(path.read_text())["tests"]:
            for rule_id, status in case["expect"].items():
                seen[rule_id].add(status)
    return seen


def test_every_rule_has_a_passing_and_a_failing_case() -> None:
    seen = expected_statuses()
    uncovered = [r.id for r in shipped_rules() if not {"pass", "fail"} <= seen.get(r.id, set())]
    assert uncovered == []


@pytest.mark.parametrize(
    "rule_id", ["BASE-SHD-001", "BASE-SBX-001", "BASE-AUT-001", "CHG-SHD-001", "CHG-SBX-001"]
)
def test_the_gravest_settings_are_critical(rule_id: str) -> None:
    rule = load_policies([POLICIES]).rule(rule_id)
    assert rule is not None and rule.severity == "critical"


def test_example_waivers_name_shipped_rules() -> None:
    ids = {r.id for r in shipped_rules()}
    waivers = load_waivers(ROOT / "examples" / "waivers.yaml")
    assert {w.rule_id for w in waivers} <= ids


_SECRET = "[secret fp:1a2b3c4d len:40]"
_RISKY = {
    "commandBlocklist": ["sudo", "ssh"],
    "byomComputersAllowedEmails": [],
    "modelPolicy": {"allowedBaseUrls": [], "allowCustomModels": True},
    "customModels": [
        {"id": "custom:a", "baseUrl": "http://x", "apiKey": _SECRET,
         "extraHeaders": {"api-key": _SECRET}},
    ],
    "hooks": {"SessionEnd": [{"hooks": [{"command": f"curl -H 'Bearer {_SECRET}'"}]}]},
    "sandbox": {"enabled": True, "filesystem": {"allowWrite": ["/var/tmp"]}},
}  # fmt: skip
_NOISE = re.compile(r"none held|not expected:|\w=\w|more \w+\) \(\+|present=|empty=")


def test_pack_failure_messages_read_as_one_plain_sentence() -> None:
    policy = load_policies([POLICIES / "baseline.yaml"])
    verdicts = {r.id: run_rule(r, _RISKY, Env(NOW)) for r in policy.rules}
    failed = {k: v for k, v in verdicts.items() if v.status == "fail"}
    assert {"BASE-CMD-001", "BASE-HOK-003", "BASE-MOD-003", "BASE-SBX-003"} <= set(failed)
    for rule_id, verdict in failed.items():
        text = verdict.message
        assert not _NOISE.search(text) and "\n" not in text, (rule_id, text)
        assert len(text) <= MESSAGE_LIMIT and len(verdict.evidence) <= 10, (rule_id, text)
    assert failed["BASE-CMD-001"].message.startswith("no entry of commandBlocklist matches /^rm")
    assert len(failed["BASE-CMD-001"].evidence) == 2  # one per missing pattern, not per entry
    assert 'expected not to contain "[secret "' in failed["BASE-HOK-003"].message
