"""Redaction: no secret value survives; markers keep rotations visible; env references stay."""

from __future__ import annotations

import json

import pytest

from auditor.redact import Redactor, is_env_reference, is_marker, marker_fingerprint

KEY = b"test-key"


@pytest.fixture
def redactor() -> Redactor:
    return Redactor(KEY)


SECRET_PLACES = [
    pytest.param(
        {"customModels": [{"id": "m", "apiKey": "sk-live-0123456789abcdef"}]},
        "sk-live-0123456789abcdef",
        id="custom-model-api-key",
    ),
    pytest.param(
        {"customModels": [{"extraHeaders": {"X-Org": "org-secret-42"}}]},
        "org-secret-42",
        id="header-value",
    ),
    pytest.param({"env": {"DB_URL": "hunter2hunter2"}}, "hunter2hunter2", id="env-value"),
    pytest.param(
        {
            "hooks": {
                "Stop": [
                    {
                        "hooks": [
                            {"command": "curl -H 'Authorization: Bearer tok_abcdef123' https://x"}
                        ]
                    }
                ]
            }
        },
        "tok_abcdef123",
        id="bearer-in-hook-command",
    ),
    pytest.param(
        {"x": {"baseUrl": "https://api.example.com/v1?api_key=qwertyuiop"}},
        "qwertyuiop",
        id="token-in-url-query",
    ),
    pytest.param(
        {"x": {"baseUrl": "https://bob:pa55word99@example.com/"}},
        "pa55word99",
        id="password-in-url",
    ),
    pytest.param(
        {
            "hooks": {
                "Stop": [{"hooks": [{"command": "GITHUB_TOKEN=ghp_abcdefghijklmnopqrstuv run"}]}]
            }
        },
        "ghp_abcdefghijklmnopqrstuv",
        id="env-assignment-in-command",
    ),
    pytest.param(
        {"notes": "deploy with sk-proj-ABCDEFGHIJKLMNOPQRST"},
        "sk-proj-ABCDEFGHIJKLMNOPQRST",
        id="well-known-token-anywhere",
    ),
]


@pytest.mark.parametrize(("doc", "secret"), SECRET_PLACES)
def test_secret_never_survives(redactor: Redactor, doc: object, secret: str) -> None:
    out = json.dumps(redactor.redact_json(doc))
    assert secret not in out
    assert "[secret fp:" in out


def test_secret_pasted_elsewhere_is_scrubbed_too(redactor: Redactor) -> None:
    key = "sk-abcdefghijklmnop1234"
    doc = {"customModels": [{"apiKey": key, "displayName": f"GPT ({key})"}]}
    out = redactor.redact_json(doc)
    assert key not in json.dumps(out)
    assert out["customModels"][0]["displayName"] == f"GPT ({redactor.marker(key)})"


@pytest.mark.parametrize("ref", ["${OPENAI_API_KEY}", "$TOKEN", "${{ secrets.KEY }}", "{env:K}"])
def test_env_references_are_kept_verbatim(redactor: Redactor, ref: str) -> None:
    assert is_env_reference(ref)
    doc = {"customModels": [{"apiKey": ref}], "env": {"A": ref}}
    assert redactor.redact_json(doc) == doc


def test_rotation_changes_the_fingerprint_but_not_the_length(redactor: Redactor) -> None:
    old = redactor.redact_json({"apiKey": "a" * 40})["apiKey"]
    new = redactor.redact_json({"apiKey": "b" * 40})["apiKey"]
    assert is_marker(old) and is_marker(new)
    assert marker_fingerprint(old) != marker_fingerprint(new)
    assert old.endswith("len:40]") and new.endswith("len:40]")


def test_fingerprint_is_keyed() -> None:
    assert Redactor(b"one").fingerprint("s3cret") != Redactor(b"two").fingerprint("s3cret")


def test_redaction_is_idempotent(redactor: Redactor) -> None:
    doc = {
        "customModels": [
            {"apiKey": "sk-abcdefghijklmnop1234", "baseUrl": "https://u:pw123456@h/?token=abcdefgh"}
        ]
    }
    once = redactor.redact_json(doc)
    assert redactor.redact_json(once) == once


def test_non_string_values_under_secret_keys_are_kept(redactor: Redactor) -> None:
    doc = {"maxOutputTokens": 4096, "cloudAuthRefresh": True, "token": None}
    assert redactor.redact_json(doc) == doc


def test_registered_secret_is_scrubbed_from_messages(redactor: Redactor) -> None:
    redactor.register("my-api-token-123")
    msg = redactor.redact_text("GET /x failed for my-api-token-123")
    assert "my-api-token-123" not in msg
    assert redactor.marker("my-api-token-123") in msg


def test_empty_key_is_refused() -> None:
    with pytest.raises(ValueError):
        Redactor(b"")
