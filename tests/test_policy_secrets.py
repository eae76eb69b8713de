"""A secret written into a policy file: a rule comparing a secret with it can fail, and the
secret reaches no output (its description, remediation and expectation pass through the run's
redactor); `auditor policy lint` warns without printing it."""

from __future__ import annotations

import json
from pathlib import Path

from auditor.policy import SHIPPED_POLICY_DIR, load_policies
from auditor.policy.lint import secret_warnings
from auditor.policy.redacted import _as_built
from tests.test_review import run_cli

KEY = "ghp_Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56Qr78"
POLICY = f"""rules:
  - id: T-LEAKED-KEY
    title: The leaked key is not in use
    severity: critical
    target: settings
    assert: {{each: customModels, assert: {{path: apiKey, not_equals: "{KEY}"}}}}
    remediation: Rotate {KEY} now.
    description: "Key {KEY} leaked on 2026-01-01"
"""


def test_a_rule_on_a_leaked_key_fails_and_the_key_reaches_no_output(tmp_path: Path) -> None:
    (tmp_path / "p.yaml").write_text(POLICY)
    (tmp_path / "live.json").write_text(json.dumps({"customModels": []}))
    proposed = {"customModels": [{"id": "custom:a", "apiKey": KEY}]}
    (tmp_path / "prop.json").write_text(json.dumps(proposed))
    argv = ["review", str(tmp_path / "prop.json"), "--against", str(tmp_path / "live.json")]
    argv += ["--policy", str(tmp_path / "p.yaml"), "--author", "a@b.example"]
    argv += ["--out", str(tmp_path / "o"), "-o", "json,html,sarif,oscal,md,junit"]
    code, out, err = run_cli(argv, env={}, cwd=tmp_path)
    assert code == 1  # the key is in use: the rule fails (it could never fail)
    data = json.loads((tmp_path / "o" / "findings.json").read_text())
    assert [f["status"] for f in data["findings"]] == ["fail"]
    written = [p.read_text() for p in (tmp_path / "o").iterdir()]
    assert len(written) == 6
    leaks = [text for text in [out, err, *written] if KEY in text or KEY[4:] in text]
    assert not leaks
    assert "[secret fp:" in data["rules"][0]["description"]


def test_policy_lint_warns_of_a_literal_that_looks_like_a_secret(tmp_path: Path) -> None:
    (tmp_path / "p.yaml").write_text(POLICY)
    code, out, err = run_cli(["policy", "lint", str(tmp_path / "p.yaml")], env={}, cwd=tmp_path)
    assert code == 0 and "3 warning(s)" in err
    assert "rules[0].assert.assert.not_equals" in out and "looks like a secret" in out
    assert "rules[0].description" in out and "rules[0].remediation" in out
    assert KEY not in out + err


def test_the_shipped_packs_hold_nothing_a_detector_finds_and_are_known_as_built() -> None:
    """What lets a run of the shipped packs skip the value detectors on their text."""
    policy = load_policies([SHIPPED_POLICY_DIR])
    assert secret_warnings(policy) == []
    assert _as_built(policy) == {rule.id for rule in policy.rules}


def test_a_secret_in_a_waivers_reason_owner_or_ticket_reaches_no_output(tmp_path: Path) -> None:
    """The reports show a waiver's reason, owner and ticket: a key pasted there is its marker,
    in a review as in a run (`tests/test_bundle.py` has the run)."""
    (tmp_path / "p.yaml").write_text(POLICY)
    (tmp_path / "w.yaml").write_text(
        "waivers:\n  - rule: T-LEAKED-KEY\n    subject: settings\n"
        f"    reason: Key {KEY} is accepted until rotation.\n    owner: sec+{KEY}@example.com\n"
        f"    expires: 2099-01-01\n    ticket: SEC-1 {KEY}\n"
    )
    (tmp_path / "live.json").write_text(json.dumps({"customModels": []}))
    proposed = {"customModels": [{"id": "custom:a", "apiKey": KEY}]}
    (tmp_path / "prop.json").write_text(json.dumps(proposed))
    argv = ["review", str(tmp_path / "prop.json"), "--against", str(tmp_path / "live.json")]
    argv += ["--policy", str(tmp_path / "p.yaml"), "--waivers", str(tmp_path / "w.yaml")]
    argv += ["--author", "a@b.example", "--out", str(tmp_path / "o")]
    argv += ["-o", "json,html,sarif,oscal,md,junit"]
    code, out, err = run_cli(argv, env={}, cwd=tmp_path)
    assert code == 0, err  # the failure is waived
    data = json.loads((tmp_path / "o" / "findings.json").read_text())
    assert [f["status"] for f in data["findings"]] == ["waived"]
    written = [p.read_text() for p in (tmp_path / "o").iterdir()]
    leaks = [text for text in [out, err, *written] if KEY in text or KEY[4:] in text]
    assert not leaks
    assert "[secret fp:" in json.dumps(data["findings"][0])


def test_a_comment_anywhere_in_a_copied_input_is_redacted_and_content_stays_content() -> None:
    """The bundle's copy of an input file (`redacted_source`): a comment after a block
    scalar's header, a flow collection, `---`, `...` or a key with no value is redacted; a
    `#` line in a block scalar's content is content (a secret there makes it a string)."""
    from auditor.policy.redacted import redacted_source
    from auditor.policy.yamlsafe import load_text

    def redact(text: str) -> str:
        return text.replace(KEY, "[secret]")

    text = (
        f"--- # {KEY}\n"
        f"a: | # old key {KEY}\n  line # one\n  # two\n"
        f"b: !!str >- # {KEY}\n  folded\n"
        f"c: [1, 2] # {KEY}\n"
        f"d: # {KEY}\n"
        f"e: |\n  # {KEY} is content\n"
        f"f: {{x: 1}}  # {KEY}\n"
        f"g: | # {KEY}\n  {KEY}\n"
        f"... # {KEY}\n"
    )
    copy = redacted_source(text, "p.yaml", redact)
    assert KEY not in copy and copy.count("[secret]") == 10
    assert copy.splitlines()[1:4] == ["a: | # old key [secret]", "  line # one", "  # two"]
    assert 'e: "# [secret] is content\\n"' in copy  # content, as a string
    assert 'g: "[secret]\\n" # [secret]\n' in copy  # the header's comment kept, redacted
    data = load_text(text, "p.yaml").data
    assert load_text(copy, "p.yaml").data == {
        **data,
        "e": "# [secret] is content\n",
        "g": "[secret]\n",
    }
