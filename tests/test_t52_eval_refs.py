"""T52 #5: a `{ref: …}` inside `each:` is type-checked once per document, not once per element.

The shipped rule BASE-MOD-009 compares every custom model's `baseUrl` with the list at
`modelPolicy.allowedBaseUrls`. The list's type check read all M URLs again for each of the N
models, so a 1.7 MB proposed file kept `auditor review` busy for six minutes.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from auditor.evaluate import refs
from auditor.evaluate.conditions import Env
from auditor.evaluate.rule import run_rule
from auditor.evaluate.status import rule_status
from auditor.operators import BUILTIN_ENUMS
from auditor.policy import SHIPPED_POLICY_DIR, load_policies
from auditor.policy.compile import Compiler
from auditor.policy.model import Rule
from tests.conftest import run_cli

ENV = Env(datetime(2026, 11, 1, tzinfo=UTC))


def _models(n: int, m: int, *, url: str = "https://zz.example/") -> dict[str, Any]:
    return {
        "sandbox": {"enabled": True},
        "modelPolicy": {"allowedBaseUrls": [f"https://ok{i}.example/" for i in range(m)]},
        "customModels": [{"id": f"custom:m{i}", "baseUrl": url} for i in range(n)],
    }


def _shipped(rule_id: str) -> Rule:
    (rule,) = [r for r in load_policies([SHIPPED_POLICY_DIR]).rules if r.id == rule_id]
    return rule


def _rule(raw: Any) -> Rule:
    compiler = Compiler("settings", BUILTIN_ENUMS)
    cond = compiler.compile(raw, ("assert",))
    assert not compiler.problems and cond is not None, compiler.problems
    return Rule("R-1", "t", "high", "settings", cond)


@pytest.fixture
def checks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many times `refs.conforms` ran (its recursion into the list's items included)."""
    calls = [0]
    real = refs.conforms

    def counted(schema: Any, value: Any) -> bool:
        calls[0] += 1
        return real(schema, value)

    monkeypatch.setattr(refs, "conforms", counted)
    return calls


def test_shipped_base_url_rule_reads_the_allowlist_once(checks: list[int]) -> None:
    n, m = 300, 2000
    doc = _models(n, m)
    rule = _shipped("BASE-MOD-009")
    verdict = run_rule(rule, doc, ENV)
    assert verdict.status == "fail"
    assert verdict.count == n
    assert rule_status(rule, doc, ENV) == "fail"
    # both runs (with words and without) together: about M + N, never N x M (600,000)
    assert checks[0] < 3 * (n + m), checks[0]


def test_a_list_checked_against_itself_is_read_once(checks: list[int]) -> None:
    n = 3000
    rule = _rule({"each": "a", "assert": {"path": "@", "starts_with_any": {"ref": "a"}}})
    doc = {"a": [f"s{i}" for i in range(n)]}
    assert run_rule(rule, doc, ENV).status == "pass"
    assert rule_status(rule, doc, ENV) == "pass"
    assert checks[0] < 6 * n, checks[0]


@pytest.mark.parametrize(
    ("allowed", "status", "message"),
    [
        pytest.param(
            "https://x", "error", 'ref modelPolicy.allowedBaseUrls is string "https://x"; '
            "`starts_with_any` at customModels[?id=='custom:m{i}'].baseUrl needs a list of "
            "strings", id="string",
        ),
        pytest.param(
            ["https://ok.example/", 7], "error", "ref modelPolicy.allowedBaseUrls is array "
            '["https://ok.example/",7]; `starts_with_any` at customModels[?id==\'custom:m{i}\']'
            ".baseUrl needs a list of strings", id="array-with-a-number",
        ),
        pytest.param(
            None, "fail", "ref modelPolicy.allowedBaseUrls (for "
            "customModels[?id=='custom:m{i}'].baseUrl) is absent", id="absent",
        ),
    ],
)  # fmt: skip
def test_a_wrong_ref_gives_every_element_its_own_result_as_before(
    allowed: Any, status: str, message: str
) -> None:
    doc = _models(3, 0)
    if allowed is None:
        del doc["modelPolicy"]["allowedBaseUrls"]
    else:
        doc["modelPolicy"]["allowedBaseUrls"] = allowed
    rule = _shipped("BASE-MOD-009")
    for i, model in enumerate(doc["customModels"]):  # each model alone: its own message
        one = {**doc, "customModels": [model]}
        verdict = run_rule(rule, one, ENV)
        assert (verdict.status, verdict.message) == (status, message.format(i=i))
    verdict = run_rule(rule, doc, ENV)
    assert (verdict.status, verdict.count) == (status, 3)
    assert rule_status(rule, doc, ENV) == status


def test_a_list_grown_in_place_is_checked_again() -> None:
    doc = _models(2, 3)
    rule = _shipped("BASE-MOD-009")
    assert run_rule(rule, doc, ENV).status == "fail"
    doc["modelPolicy"]["allowedBaseUrls"].append(7)
    assert run_rule(rule, doc, ENV).status == "error"
    assert rule_status(rule, doc, ENV) == "error"


def test_review_of_many_models_and_urls_checks_each_list_once(
    tmp_path: Path, checks: list[int]
) -> None:
    """The tester's mod_2000.json (330 KB: 2,000 models, 8,000 URLs) reviewed with the shipped
    packs: 32 million type checks before (about 11 s), about 8,000 per side now (1.5 s)."""
    (tmp_path / "mod.json").write_text(json.dumps(_models(2000, 8000)))
    (tmp_path / "live.json").write_text(json.dumps({"sandbox": {"enabled": True}}))
    argv = ["review", str(tmp_path / "mod.json"), "--against", str(tmp_path / "live.json")]
    argv += ["--out", str(tmp_path / "out"), "-q", "-o", "json"]
    code, _, err = run_cli(argv, {}, tmp_path)
    assert code == 1, err
    findings = json.loads((tmp_path / "out" / "findings.json").read_text())
    assert "BASE-MOD-009" in json.dumps(findings)
    assert checks[0] < 10 * (2000 + 8000), checks[0]  # linear in the file, not 2,000 x 8,000
