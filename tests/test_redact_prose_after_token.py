"""A word of prose after `token`, `Bearer` or `Basic` is no credential (tester T93 #4).

A rule titled "token absent" read `token [secret fp:… len:6]` in every report, `policy lint`
told its author to rotate the word, and the memory learned "absent": every text holding it,
in that run and in every later one (the state file keeps what is learned), hid the word.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from auditor.redact import Redactor
from tests.conftest import run_cli

PROSE = ["token absent", "env token unchanged", "Token Rotation Required", "echo token rotation"]


@pytest.mark.parametrize("text", PROSE)
def test_a_word_of_prose_after_token_is_shown_and_learned_by_nothing(text: str) -> None:
    redactor = Redactor(b"k" * 16)
    assert redactor.redact_text(text) == text
    assert redactor.redact_json({"command": text}) == {"command": text}
    word = text.split()[-1]
    later = f"the field is {word} here"
    assert redactor.redact_text(later) == later  # nothing was learned from it


@pytest.mark.parametrize(
    "secret",
    [
        "correct_horse_battery_staple",  # a passphrase of words
        "correct-horse-battery-staple",
        "hunter22",  # a word with digits
        "AbCdEfGhIj",  # capitals inside
        "abcdefghijklmnopqrstuvwxyz",  # longer than a word
    ],
)
@pytest.mark.parametrize("word", ["token", "Bearer"])
def test_a_credential_after_token_is_still_hidden(word: str, secret: str) -> None:
    redactor = Redactor(b"k" * 16)
    out = redactor.redact_text(f"{word} {secret} was rejected")
    assert secret not in out and out.startswith(f"{word} [secret fp:"), out


@pytest.mark.parametrize(
    "text",
    [
        "curl -H 'Authorization: Bearer sunshine' https://x.example",
        "Authorization: token sunshine",  # GitHub's header form
        "Proxy-Authorization: Basic changeme",
        "Bearer changeme",
        "git config http.extraHeader 'Authorization: token letmein'",
        # review R71: where `token` begins a value, not running text
        'H="token supersecret"; curl -H "Authorization: $H"',
        'curl -H "X-Auth: token sunshine"',
        '{"headers": {"Authorization":\n  "token sunshine"}}',
        "Authorization:\n  token sunshine\n",
        "[auth]\ntoken sunshine",
    ],
)
def test_a_word_after_bearer_basic_or_in_a_header_is_a_credential(text: str) -> None:
    """Review R67 #2: a hand-set credential may be one word (`Bearer changeme`): the prose
    word is only one after `token` outside a header."""
    redactor = Redactor(b"k" * 16)
    word = next(w for w in ("sunshine", "supersecret", "changeme", "letmein") if w in text)
    for out in (redactor.redact_text(text), redactor.redact_json({"h": text})["h"]):
        assert word not in out and "[secret fp:" in out, out


def test_a_rule_titled_token_absent_reads_as_written_in_lint_and_in_a_review(
    tmp_path: Path,
) -> None:
    policy = tmp_path / "pol.yaml"
    policy.write_text(
        "rules:\n"
        "  - id: ORG-TOK-001\n"
        "    title: token absent from the env of every hook\n"
        "    description: Token Rotation Required when the env token is absent.\n"
        "    severity: high\n"
        "    target: settings\n"
        "    assert: {path: sessionRetentionDays, lte: 30}\n",
        encoding="utf-8",
    )
    code, out, err = run_cli(["policy", "lint", str(policy)], {}, tmp_path)
    assert code == 0, err
    assert "secret" not in out + err and "rotate" not in out + err, out + err

    live = tmp_path / "live.json"
    live.write_text(json.dumps({"sessionRetentionDays": 30}), encoding="utf-8")
    proposed = tmp_path / "proposed.json"
    proposed.write_text(json.dumps({"sessionRetentionDays": 90}), encoding="utf-8")
    argv = ["review", str(proposed), "--against", str(live), "--offline", "--policy", str(policy)]
    code, _, err = run_cli([*argv, "--out", str(tmp_path / "r"), "-o", "md,json"], {}, tmp_path)
    assert code == 1, err
    report = (tmp_path / "r" / "report.md").read_text(encoding="utf-8")
    findings = (tmp_path / "r" / "findings.json").read_text(encoding="utf-8")
    for text in (report, findings):
        assert "token absent from the env of every hook" in text
        assert "[secret" not in text
    assert "Token Rotation Required when the env token is absent." in findings
