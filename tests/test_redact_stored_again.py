"""A stored row redacted again is what its item gives: a marker in a key names no secret.

When a sync learns a secret after it stored a row holding it, the row is redacted again
(`Store.scrub_stored`), from the stored copy, whose keys may already hold markers. The
marker's own words (`[secret fp:… len:…]`: `secret`) made such a key read as one naming a
secret, so the value under it was hidden too (`{"ghp_…": "high"}` stored as `{"[secret …]":
"[secret … len:4]"}`), while the item itself gives `high`. The next sync, reading the same
revision again, found it "changed after it was stored": a false AUDITOR-INTEGRITY-001
(critical) every night after.
"""

from __future__ import annotations

import json
import secrets
from pathlib import Path
from typing import Any

import pytest

from auditor.redact import Redactor
from tests.test_run_after_sync import _env, _history
from tests.test_secrets_canary import _cli


def test_a_document_redacted_again_is_as_redacted_once() -> None:
    token = "ghp_" + secrets.token_hex(18)
    doc = {
        "mcpAutonomyOverrides": {
            token: "high",
            "https://mcp.example/sse?token=cnrykeyurltoken0123456789abcdef": "low",
        },
        "env": {"API_KEY": "orange-stored-battery-314159-staple", "DB": "orange-x-battery-id"},
        # a key whose last word (`id`) names no secret, until its secret is a marker: left
        # `password-`, whose values were hidden (and learned) when the row was redacted again
        "servers": {"password-orange-x-battery-id": {"mode": "read-write", "port": 5432}},
        "hooks": [{"command": f"curl -H 'X-Key: {token}' https://x.example"}],
    }
    redactor = Redactor(b"k" * 32)
    once = redactor.redact_json(doc, stream="settings")
    assert once["mcpAutonomyOverrides"][redactor.marker(token)] == "high"  # (as the item gives)
    assert {"mode": "read-write", "port": 5432} in once["servers"].values()
    assert redactor.redact_json(once, stream="stored revisions", again=True) == once


TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
WORDY = "orange-stored-battery-314159-staple"
LOW = "hunter2hunter2"
FAKE = "[secret fp:deadbeef len:40]"  # marker text in the API's own data


@pytest.mark.parametrize(
    "doc",
    [
        {"apiKey_" + TOKEN: LOW},
        {TOKEN + "_password": 987654321},
        {"x-" + TOKEN + "-y": {"mode": "rw", "n": 5}},
        {"hosted": {TOKEN: {"a": LOW, "n": 42, "arr": [LOW, 7]}, "cloudRegion": "eu"}},
        {"env": {TOKEN: LOW, "K": 123456}},
        {"x-" + TOKEN: ["sshpass", "-p", LOW, "ssh", "host"]},
        {"env": {"DB_PASSWORD": WORDY}, "s": {WORDY + "-pin": 4321, "apiKey-" + WORDY: LOW}},
        # a key of the data holding marker text is judged by its words, as it always was
        {"apiKey " + FAKE: LOW},
        {"dbPassword[secret fp:": LOW},
        {"hosted": {FAKE: LOW, "token " + FAKE: 1234567}},
    ],
)
def test_redacted_again_each_place_is_as_redacted_once(doc: dict[str, Any]) -> None:
    """A stored copy redacted again (its keys holding markers) is what the item gave, and no
    value the item's keys hid is shown (a review, R82, found both ways to go wrong)."""
    redactor = Redactor(b"k" * 32)
    once = redactor.redact_json(doc, stream="settings")
    twice = redactor.redact_json(once, stream="stored revisions", again=True)
    assert twice == once
    assert not any(s in json.dumps(once) for s in (TOKEN, WORDY, LOW, "1234567", "4321"))


def test_two_syncs_of_a_history_with_a_token_as_a_key_find_no_change(tmp_path: Path) -> None:
    """The newest revisions hold a token as an `mcpAutonomyOverrides` key; the sync learns
    other secrets after storing them, and redacts them again. The second sync reads them again
    and finds each as stored."""
    _, token, emu = _history("8c4e")
    with emu:
        env = _env(emu, token, tmp_path / "state.db")
        assert [_cli(["sync"], env, tmp_path)[0] for _ in range(2)] == [0, 0]
        out = tmp_path / "out"
        code, _, stderr = _cli(
            ["run", "--offline", "--soft-fail", "--out", str(out)], env, tmp_path
        )
        assert code == 0, stderr
    found = json.loads((out / "findings.json").read_text())["findings"]
    assert not [f for f in found if f["rule_id"] == "AUDITOR-INTEGRITY-001"], stderr
