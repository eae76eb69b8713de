"""The shipped policy packs: lint clean, every test case passes, every rule is documented,
mapped to controls and covered by at least one passing and one failing case."""

from __future__ import annotations

import argparse
import io
import json
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


# --- The shipped packs as a review judges a pull request (tester T21) ----------------------

LIVE = ROOT / "examples" / "live-settings.yaml"


def _review_statuses(
    tmp_path: Path, proposed: str, *rule_ids: str, against: Path = LIVE
) -> tuple[int, dict[str, str]]:
    """`auditor review PROPOSED --against examples/live-settings.yaml --fail-on high` with the
    shipped packs, as the example PR workflow runs it: (exit code, {rule id: its status on
    the proposed settings, or on the change for a CHG- rule})."""
    from tests.conftest import run_cli as run_main

    (tmp_path / "proposed.yaml").write_text(proposed, encoding="utf-8")
    argv = ["review", str(tmp_path / "proposed.yaml"), "--against", str(against)]
    argv += ["--author", "priya.raman@acme.example", "--out", str(tmp_path / "out")]
    argv += ["-o", "json", "--fail-on", "high", "-q"]
    key = "AUDITOR_FINGERPRINT_KEY"
    code, _, err = run_main(argv, env={key: "0123456789abcdef0123"}, cwd=tmp_path)
    assert code in (0, 1), err
    data = json.loads((tmp_path / "out" / "findings.json").read_text(encoding="utf-8"))
    found = {f["rule_id"]: f["status"] for f in data["findings"] if f["rule_id"] in rule_ids}
    return code, found


def _edit(old: str, new: str) -> str:
    live = LIVE.read_text(encoding="utf-8")
    assert live.count(old) == 1, old
    return live.replace(old, new)


# the first model of the example, custom:acme-gpt, has `extraArgs: {}` and one header
_ACME_ARGS = (
    "  extraArgs: {}\n  noImageSupport: true\n  useInRouter: true\n"
    "  apiKey: sk-example-not-a-real-key-0001"
)
_ACME_HEADERS = "  extraHeaders:\n    X-Acme-Team: team-7c1f3a\n"


@pytest.mark.parametrize(
    "proposed",
    [
        _edit(_ACME_ARGS, _ACME_ARGS.replace("{}", "\n    temperature: 0.2")),
        _edit(_ACME_HEADERS, _ACME_HEADERS + "    X-Title: Acme Agents\n"),
        _edit(_ACME_HEADERS, _ACME_HEADERS + "    Authorization: Bearer ${LLM_TOKEN}\n"),
    ],
    ids=["extraArgs.temperature", "extraHeaders.X-Title", "extraHeaders.Authorization-ref"],
)
def test_a_field_added_inside_a_custom_model_passes_the_gate(tmp_path: Path, proposed: str) -> None:
    """CHG-MOD-001 ("Custom model endpoint added or moved") failed on any key added inside an
    existing model, so a temperature or a header blocked the PR at --fail-on high."""
    code, found = _review_statuses(tmp_path, proposed, "CHG-MOD-001")
    assert found == {"CHG-MOD-001": "pass"}
    assert code == 0


_NEW_MODEL = """\
- model: gpt-5
  provider: openai
  id: custom:new-gateway
  baseUrl: https://llm-gateway-v2.acme.example/openai/v1
  apiKey: ${NEW_GATEWAY_KEY}
"""


@pytest.mark.parametrize(
    "proposed",
    [
        _edit("customModels:\n", "customModels:\n" + _NEW_MODEL),
        _edit(
            "baseUrl: https://openrouter.ai/api/v1",
            "baseUrl: https://openrouter.other.example/api/v1",
        ),
        _edit(
            "    hostedBaseUrl: https://bedrock-runtime.us-east-1.amazonaws.com",
            "    hostedBaseUrl: https://bedrock-proxy.other.example",
        ),
    ],
    ids=["model-added", "baseUrl-moved", "hostedBaseUrl-moved"],
)
def test_a_new_or_moved_model_endpoint_fails_the_gate(tmp_path: Path, proposed: str) -> None:
    code, found = _review_statuses(tmp_path, proposed, "CHG-MOD-001")
    assert found == {"CHG-MOD-001": "fail"}
    assert code == 1


def _reference_patterns() -> list[str]:
    """The pattern BASE-MOD-003 reads an `apiKey` with, in each place it is written."""
    rule = YAML(typ="safe").load((POLICIES / "baseline.yaml").read_text(encoding="utf-8"))
    (mod3,) = [r for r in rule["rules"] if r["id"] == "BASE-MOD-003"]
    leaves = [a for a in mod3["assert"]["assert"]["any"] if "matches" in a]
    readme = (POLICIES / "README.md").read_text(encoding="utf-8")
    documented = re.findall(r"`(\^\\\$\\\{[^`]*)`", readme)
    return [leaf["matches"] for leaf in leaves] + documented


def test_the_reference_pattern_is_one_pattern_everywhere() -> None:
    """A pack file cannot share a pattern (anchors are refused): the rule's and the one
    policies/README.md documents as "an environment reference" are the same text."""
    patterns = _reference_patterns()
    assert len(patterns) == 2 and len(set(patterns)) == 1, patterns


@pytest.mark.parametrize(
    ("key", "as_key", "as_header"),
    [
        ("${LLM_KEY}", "pass", "pass"),
        ("${LLM_KEY:-}", "pass", "pass"),
        ("${LLM_KEY-}", "pass", "pass"),
        ("${LLM_KEY:?unset}", "pass", "pass"),
        ("${LLM_KEY:-$FALLBACK_KEY}", "pass", "pass"),
        ("${LLM_KEY:=eu-central-1}", "pass", "pass"),
        # a default that may be a credential: the redactor hides the value, one marker
        ("${LLM_KEY:-Zq8hVd2LmX0pQ7rT}", "fail", "fail"),
        ("${LLM_KEY:-${OTHER_KEY}}", "fail", "fail"),
        # kept as written (no secret), but no reference form BASE-MOD-003 accepts
        ("$LLM_KEY", "fail", "pass"),
        ("{env:LLM_KEY}", "fail", "pass"),
        ("sk-live-0123456789abcdefghij", "fail", "fail"),
    ],
)
def test_an_api_key_reference_in_the_forms_the_readme_names_passes_a_review(
    tmp_path: Path, key: str, as_key: str, as_header: str
) -> None:
    """README (Secrets): `${VAR:-}`, `${VAR:?unset}`, `${VAR:-$OTHER}` are "still a
    reference", but BASE-MOD-003 accepted `${NAME}` alone and failed a PR rewriting a key
    reference in such a form at high severity. Judged through a review, where the redactor
    hides a credential default before the rule reads it; the same default in a header fails
    BASE-MOD-008, an ordinary one passes it."""
    (tmp_path / "live.json").write_text(
        json.dumps({"customModels": [{"id": "custom:a", "apiKey": "${LLM_KEY}"}]})
    )
    model = {"id": "custom:a", "apiKey": key, "extraHeaders": {"X-Api-Key": key}}
    proposed = json.dumps({"customModels": [model]})
    code, found = _review_statuses(
        tmp_path, proposed, "BASE-MOD-003", "BASE-MOD-008", against=tmp_path / "live.json"
    )
    assert found == {"BASE-MOD-003": as_key, "BASE-MOD-008": as_header}
    assert code == (0 if as_key == as_header == "pass" else 1)
    written = "".join(p.read_text() for p in (tmp_path / "out").iterdir())
    assert "Zq8hVd2LmX0pQ7rT" not in written
