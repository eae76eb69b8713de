"""The credential in a secret header value is remembered on its own, not only with its frame.

`Cookie: session=X` was remembered as the whole `session=X`: `X` pasted alone later (a waiver's
`owner`) was shown in clear in the reports and the evidence bundle. So were `X` of
`Authorization: Bearer X` and of `Basic X`.
"""

from __future__ import annotations

import base64
import json
import secrets
from pathlib import Path

import pytest

from auditor.emulator import start_emulator
from auditor.redact import Redactor
from tests.conftest import FIXED_NOW, emulator_env, secret_forms
from tests.test_secrets_canary import _append, _cli


def _wordy(tag: str) -> str:
    """No detector sees it (low entropy, no known form): only the memory can."""
    return f"orange-{tag}-battery/staple+{secrets.randbelow(10**6):06d}"


def _headers() -> tuple[dict[str, object], dict[str, str]]:
    c = {t: _wordy(t) for t in ("cookie", "second", "set", "bearer", "token", "basic", "user")}
    basic = base64.b64encode(f"ci:{c['basic']}".encode()).decode()
    doc = {
        "customModels": [
            {
                "id": "custom:gw",
                "extraHeaders": {
                    "Cookie": f"session={c['cookie']}; theme={c['second']}",
                    "Set-Cookie": f'id="{c["set"]}"; Path=/; Domain=gw.example.com; HttpOnly',
                    "Authorization": f"Bearer {c['bearer']}",
                    "X-Auth": f"Token {c['token']}",
                    "Proxy-Authorization": f"Basic {basic}",
                },
                "extraArgs": {"sessionCookie": f"sid={c['user']}"},
            }
        ]
    }
    return doc, c


@pytest.mark.parametrize("recalled", [False, True], ids=["same-process", "from-the-state"])
def test_each_cookie_and_credential_alone_is_scrubbed_later(recalled: bool) -> None:
    doc, canaries = _headers()
    learner = Redactor(b"header-parts-key")
    learner.redact_json(doc)
    redactor = learner
    if recalled:  # a later command knows them by the fingerprints the state file keeps
        redactor = Redactor(b"header-parts-key")
        redactor.memory.recall(learner.memory.drain())
    for name, secret in canaries.items():
        for form in secret_forms(secret):
            shown = redactor.redact_text(f"owner: {form} (on call)")
            assert form not in shown and "[secret fp:" in shown, (name, form)
    # a Set-Cookie's attributes and the cookies' names are no secrets
    assert redactor.redact_text("gw.example.com session theme") == "gw.example.com session theme"


@pytest.mark.e2e
def test_a_cookie_value_pasted_as_a_waiver_owner_reaches_no_report(tmp_path: Path) -> None:
    token = "tok-" + secrets.token_hex(16)
    cookie = _wordy("cookie")
    emu = start_emulator(tokens={token: "owner"}, now=FIXED_NOW, revisions=10, repos=2)
    try:
        settings = dict(emu.dataset.history[-1]["settings"])
        settings["customModels"] = [
            *settings.get("customModels", []),
            {
                "id": "custom:gw",
                "model": "gpt-4.1",
                "provider": "openai",
                "baseUrl": "https://gw.example/v1",
                "extraArgs": {"Cookie": f"session={cookie}"},
            },
        ]
        _append(emu.dataset, settings, "admin")
        env = emulator_env(emu, tmp_path / "state.db", token)
        assert _cli(["sync"], env, tmp_path)[0] == 0
    finally:
        emu.stop()
    waivers = tmp_path / "in" / "waivers.yaml"
    waivers.parent.mkdir()
    waivers.write_text(
        "waivers:\n  - rule: BASE-AUT-001\n    subject: settings\n    reason: accepted\n"
        f"    owner: {cookie}\n    expires: 2099-01-01\n"
    )
    run = ["run", "--offline", "--waivers", str(waivers), "--out", str(tmp_path / "run")]
    streams = list(_cli(run, env, tmp_path)[1:])
    export = ["export", "--waivers", str(waivers), "--out", str(tmp_path / "evidence")]
    streams += list(_cli(export, env, tmp_path)[1:])
    outputs = [p for p in tmp_path.rglob("*") if p.is_file() and p.parent.name != "in"]
    names = {p.name for p in outputs}
    assert {"report.html", "report.md", "findings.json", "waivers.yaml"} <= names
    blobs = streams + [p.read_bytes().decode("utf-8", "replace") for p in outputs]
    leaks = [form for form in secret_forms(cookie) for text in blobs if form in text]
    assert not leaks, leaks


def test_a_cookie_header_in_a_hook_command_is_hidden_and_remembered() -> None:
    first, second = _wordy("first"), _wordy("second")
    command = f'curl -H "Cookie: session={first}; theme={second}" https://audit.example'
    redactor = Redactor(b"header-parts-key")
    out = redactor.redact_json({"hooks": {"SessionStart": [{"command": command}]}})
    shown = json.dumps(out)
    assert first not in shown and second not in shown
    assert 'curl -H \\"Cookie: session=[secret fp:' in shown and "https://audit.example" in shown
    for secret in (first, second):
        assert secret not in redactor.redact_text(f"owner {secret}")


@pytest.mark.parametrize(
    "template",
    [
        "curl -H 'Cookie: session=\"{a}\"; theme={b}' https://audit.example",  # quoted value
        'curl -H "Cookie: session=\\"{a}\\"; theme={b}" https://audit.example',  # escaped
        "curl -b 'session={a}; theme={b}' https://audit.example",
        "curl -s --cookie session={a} --cookie theme={b} https://audit.example",
        "curl --cookie='session={a}' -bTheme={b} https://audit.example",
        "printf 'Set-Cookie: session={a}, theme={b}' > headers.txt",  # folded Set-Cookie
        'bash -c "curl -b session={a} https://audit.example"; curl -sb theme={b} -s x',
        "cd /tmp;/usr/bin/curl -sSb 'session={a}' https://audit.example\\\n  -b theme={b}",
        "echo|curl.exe --cookie session={a} https://audit.example&&curl -vb theme={b}",
    ],
    ids=[
        "quoted",
        "escaped-quotes",
        "curl-b",
        "curl-cookie",
        "attached",
        "folded-set-cookie",
        "inside-quotes-combined-flags",
        "path-continued-line",
        "exe-after-pipe",
    ],
)
def test_cookies_on_a_command_line_are_hidden_and_remembered(template: str) -> None:
    # A cookie's value in quotes, given to `curl -b`/`--cookie`, or the second of two
    # Set-Cookie headers folded into one line, stayed in clear in hook commands.
    first, second = _wordy("first"), _wordy("second")
    command = template.format(a=first, b=second)
    redactor = Redactor(b"header-parts-key")
    out = redactor.redact_json({"hooks": {"SessionStart": [{"command": command}]}})
    shown = json.dumps(out)
    assert first not in shown and second not in shown, shown
    assert "https://audit.example" in shown or "headers.txt" in shown
    for secret in (first, second):
        assert secret not in redactor.redact_text(f"owner {secret}")


def test_a_comma_in_a_cookie_header_and_short_settings_are_not_remembered() -> None:
    # A Cookie header is never folded (a comma is its value's), and values shaped like
    # settings (a region, a locale, a version, a bot's name) are not remembered: remembered,
    # they were scrubbed from every later string, and a rule on `dataRegion` judged a marker.
    r = Redactor(b"test-key-cookie-comma")
    r.redact_json(
        {
            "hooks": [
                "curl -s -H 'Cookie: consent=none, region=us-east-1' https://intranet.example",
                "curl -b lang=en_US.UTF-8 https://intranet.example",
            ],
            "extraHeaders": {"Authorization": "Basic " + base64.b64encode(b"ci-bot-2").decode()},
        }
    )
    later = {
        "hooks": ["aws s3 sync ./logs s3://audit-logs --region us-east-1", "LC_ALL=en_US.UTF-8"],
        "dataRegion": "us-east-1",
        "owner": "ci-bot-2",
        "version": "v2.3.1",
    }
    assert r.redact_json(later) == later


def test_a_cookie_file_and_a_cookie_date_are_no_secrets() -> None:
    # `curl -b FILE` names the file curl reads cookies from; `Expires=Wed, 21 Oct …` is a date.
    r = Redactor(b"test-key-cookie-file")
    doc = {
        "hooks": [
            "curl -b cookies-for-audit.txt https://x.example | grep -b session-number-42",
            "Set-Cookie: id=kQzXwvTbnRpLmYs1; Expires=Wed, 21 Oct 2015 07:28:00 GMT; Path=/",
        ]
    }
    out = r.redact_json(doc)
    assert out["hooks"][0] == doc["hooks"][0]
    assert "kQzXwvTbnRpLmYs1" not in out["hooks"][1]
    assert out["hooks"][1].endswith("; Expires=Wed, 21 Oct 2015 07:28:00 GMT; Path=/")


def test_words_in_header_values_are_not_remembered_as_secrets() -> None:
    # A cookie's, a Bearer's or a Basic password that is a word, a setting or a placeholder
    # was remembered and then scrubbed everywhere, keys included (`defaultMode` became
    # `[secret …]Mode`): only what looks like a credential is remembered on its own.
    r = Redactor(b"test-key-header-words")
    r.redact_json(
        {
            "headers": {
                "Cookie": "session=abcdef123; theme=default; consent=accepted",
                "Authorization": "Bearer YOUR_API_KEY",
                "Proxy-Authorization": "Basic dXNlcjpwYXNzd29yZA==",  # user:password
            },
            "hooks": ["curl -H 'Cookie: lang=english; consent=accepted' https://x.example"],
        }
    )
    later = {
        "permissions": {"defaultMode": "acceptEdits", "passwordMaxAge": 3},
        "model": "default",
        "notes": "accepted in english; set YOUR_API_KEY",
    }
    assert r.redact_json(later) == later


def test_a_value_under_an_address_key_named_for_a_secret_stays_hidden() -> None:
    # The key's words still say what its value is, an address's too (`/:_authToken`, a
    # query's `api_key`): the value is hidden, the key's own secret by value.
    r = Redactor(b"test-key-address-keys")
    out = r.redact_json(
        {
            "https://registry.npmjs.org/:_authToken": "plainpassword12",
            "servers": {"https://mcp.example/sse?api_key=1": "hunter2pass"},
        }
    )
    assert "plainpassword12" not in str(out) and "hunter2pass" not in str(out)


@pytest.mark.parametrize(
    ("header", "value", "alone"),
    [
        (
            "Authorization",
            "Basic " + base64.b64encode(b"admin:Tr0ub4dor&3").decode(),
            "Tr0ub4dor&3",
        ),
        (
            "Authorization",
            "Basic " + base64.b64encode(b"admin:correct-horse-battery-staple").decode(),
            "correct-horse-battery-staple",
        ),
        (
            "Authorization",
            "Basic " + base64.b64encode(b"orange-user-battery/staple+1:").decode(),
            "orange-user-battery/staple+1",
        ),
        (
            "Proxy-Authorization",
            "Basic " + base64.b64encode(b"orange-alone-battery/staple+2").decode(),
            "orange-alone-battery/staple+2",
        ),
        ("Cookie", "sid=8374620193847561", "8374620193847561"),
        ("Authorization", "Bearer kQzXwvTbnRpLmYsHdGfJ", "kQzXwvTbnRpLmYsHdGfJ"),
        ("Cookie", "session=3f9a7c21b0e", "3f9a7c21b0e"),
    ],
)
def test_a_short_or_one_kind_credential_is_still_remembered(
    header: str, value: str, alone: str
) -> None:
    # Telling words from credentials must not drop real ones: an 11-character password, a
    # passphrase, a numeric session id, a letters-only token.
    r = Redactor(b"test-key-header-real")
    r.redact_json({"customModels": [{"id": "x", "extraHeaders": {header: value}}]})
    assert alone not in r.redact_text(f"owner: {alone} (on call)")
