"""Secrets by construction: canaries planted in API data and proposed files never come out.

Every command a user runs (sync twice, diff in every format, history, run, review online,
offline, against a file and with GITHUB_STEP_SUMMARY, export, a failing sync) and the raw
bytes of the state file and its journal are searched for each canary in raw, JSON-escaped,
URL-encoded and base64 forms. A table test checks that ordinary values stay readable.
"""

from __future__ import annotations

import base64
import copy
import http.server
import io
import json
import re
import secrets
import shutil
import threading
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from pgcluster import stored_bytes

from auditor.cli import Context, main
from auditor.emulator import start_emulator
from auditor.redact import Redactor
from auditor.store import Store
from tests.conftest import FIXED_NOW, ProblemAnswer, secret_forms

pytestmark = pytest.mark.e2e


def _hex(n: int = 20) -> str:
    return secrets.token_hex(n // 2)


def _lower_escapes(text: str) -> str:
    """Percent-encoding with its hex digits in lower case (`%2b`), as some clients write it."""
    return re.sub(r"%[0-9A-F]{2}", lambda m: m[0].lower(), text)


def _digits() -> str:
    """An 11-digit PIN or numeric key, planted as a number (what YAML reads unquoted)."""
    return str(10**10 + secrets.randbelow(9 * 10**10))


def _wordy(tag: str) -> str:
    """A secret no detector can see (low entropy, no known format): only memory catches it."""
    return f"orange-{tag}-battery-{secrets.randbelow(10**6):06d}-staple"


def _pem(body: str) -> str:
    return f"-----BEGIN RSA PRIVATE KEY-----\nMIIEow{body}\n-----END RSA PRIVATE KEY-----"


class Canaries:
    """Unique values, each planted in one place where a secret can hide."""

    def __init__(self) -> None:
        self.c: dict[str, str] = {}

    def __call__(self, name: str, value: str | None = None) -> str:
        self.c[name] = value or f"cnry{name.replace('_', '')}{_hex()}"
        return self.c[name]


def _plant(settings: dict[str, Any], k: Canaries) -> dict[str, Any]:
    s = copy.deepcopy(settings)
    model = {
        "id": "custom:canary",
        "model": "gpt-4.1",
        "provider": "openai",
        "baseUrl": f"https://u:{k('url_password')}@llm.example/v1?api_key={k('query_key')}",
        "apiKey": k("old_api_key", _wordy("old")),
        "apiKeys": [k("list_key_1"), k("list_key_2")],
        "displayName": "Canary gateway",
        "maxOutputTokens": 8192,
        "extraHeaders": {
            "X-Org": k("header_value"),
            "Authorization": f"Bearer {k('bearer')}",
            "X-Pin": int(k("header_pin", _digits())),
        },
        "hosted": {"cloudProfile": "prod", "cloudCredentialExport": k("cloud_export")},
        "extraArgs": {
            "tokenValue": k("token_value"),
            "secretValue": k("secret_value"),
            "pwd": k("pwd_value"),
            "encryptionKey": k("encryption_key"),
            "storageAccountKey": k("account_key"),
            "subscriptionKey": k("subscription_key"),
            "connectionString": f"Server=db;Database=app;User Id=ci;{k('conn_string')}",
            "totpSeed": k("totp_seed"),
            "apiKey": int(k("numeric_api_key", _digits())),
            "apiSecret": float(k("float_secret", repr(secrets.randbelow(10**10) / 1000 + 0.5))),
            "authToken": k("slashy_token", f"Mango+Papaya/{_hex(8)}=Kiwi"),
            "notes": _pem(k("pem_body", _hex(40))),
            "aws": k("aws_key", "AKIA" + secrets.token_hex(8).upper()),
            "gh": k("github_token", "ghp_" + secrets.token_hex(18)),
            "slack": k("slack_token", "xoxb-" + "1234567890-" + secrets.token_hex(12)),
            "stripe": k("stripe_key", "sk_live_" + secrets.token_hex(12)),
            "jwt": k("jwt", _jwt()),
            "db_passwd": k("db_passwd"),
            "Cookie": f"session={k('cookie')}",
            "sshKey": _pem(k("pem_body_2", _hex(40))).replace("RSA ", "OPENSSH "),
            "basicAuth": "Basic "
            + k("basic_b64", base64.b64encode(b"ci:" + _hex().encode()).decode()),
        },
    }
    s["customModels"] = [*s.get("customModels", []), model]
    s["env"] = {
        **s.get("env", {}),
        "CANARY_ENV": k("env_value"),
        "CANARY_PIN": int(k("env_pin", _digits())),
    }
    s["mcpAutonomyOverrides"] = {
        **s.get("mcpAutonomyOverrides", {}),
        f"https://mcp.example/sse?token={k('key_url_token')}": "low",
        k("key_is_token", "ghp_" + secrets.token_hex(18)): "high",
    }
    hooks = [
        f"sshpass -p {k('sshpass')} ssh deploy@host",
        f"mysql -u root -p{k('mysql_pw')} -e 'select 1'",
        f"deploy --password {k('password_arg')} --yes",
        f"curl -H 'Authorization: Bearer {k('hook_bearer')}' https://audit.example",
        f"docker login -u ci -p {k('docker_login')} registry.example.com",
        f"echo {k('stdin_password')} | podman login -u ci --password-stdin quay.io",
        f"smbclient //files/share -U ci%{k('smb_password')} -c ls",
        f"openssl rsa -in key.pem -passin pass:{k('openssl_pass')} -out plain.pem",
        f"docker login -u docker -p {k('user_named_docker')} registry.example.com",
        f"vault login {k('vault_positional')}",
        f"npm config set //npm.example/:_authToken {k('npm_setting')}",
        f"echo {k('sudo_stdin')} | sudo -S systemctl restart agent",
        # a password made of a word given to `--token` (T99 #2: shown in every report)
        f"notify --token={k('token_word', _word() + str(1000 + secrets.randbelow(9000)))} --yes",
        f"notify --token {k('token_passphrase', _word() + _word() + _word())}",
    ]
    s.setdefault("hooks", {})["SessionStart"] = [
        {"matcher": "", "hooks": [{"type": "command", "command": c, "timeout": 5} for c in hooks]}
    ]
    s["hooks"].pop("SessionEnd", None)
    _plant_commands(s, k, "")
    return s


def _word() -> str:
    """Seven random lower-case letters: a word, as far as any detector can tell."""
    return "".join(secrets.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(7))


def _pw() -> str:
    """A 16-character random password: below the entropy detector's threshold, so only its
    place on a command line (or in an argv array) gives it away."""
    alphabet = "abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789"
    while True:  # mixed case and a digit, as a generated password has (never a word)
        value = "".join(secrets.choice(alphabet) for _ in range(16))
        if sum(c.isupper() for c in value) >= 3 and any(c.isdigit() for c in value):
            return value


def _plant_commands(settings: dict[str, Any], k: Canaries, tag: str) -> None:
    """Passwords in the command-line forms that need more than one word's reading: a line
    continuation between option and value, a password written into a command that reads it on
    standard input, a Basic header's `user:X` piped to `base64`, an attached `sqlcmd -PX`; and
    argv-style arrays (an option and its value as two elements)."""

    def pw(name: str) -> str:
        return k(f"{tag}{name}", _pw())

    commands: list[Any] = [
        f"docker login -u ci -p \\\n  {pw('cont_docker')} registry.example.com",
        f"sshpass -p \\\n{pw('cont_sshpass')} ssh deploy@host",
        f"deploy --password \\\n {pw('cont_password')} --yes",
        f"deploy --password=\\\n{pw('cont_password_eq')} --yes",
        f"curl -u ci:\\\n{pw('cont_curl')} https://x.example",
        f"printf %s {pw('printf_stdin')} | docker login -u ci --password-stdin quay.io",
        f"printf '{pw('printf_newline')}\\n' | docker login -u ci --password-stdin quay.io",
        f"cat <<< {pw('cat_here')} | podman login -u ci --password-stdin quay.io",
        f"gh auth login --with-token <<< {pw('gh_here')}",
        f'curl -H "Authorization: Basic $(echo -n ci:{pw("basic_sub")} | base64)" https://x',
        f"sqlcmd -S h -U sa -P{pw('sqlcmd_attached')} -Q 'select 1'",
    ]
    hooks = [{"type": "command", "command": c, "timeout": 5} for c in commands]
    settings.setdefault("hooks", {}).setdefault("SessionEnd", []).append(
        {"matcher": "", "hooks": hooks}
    )
    settings["mcpServers"] = {
        **settings.get("mcpServers", {}),
        f"canary{tag}": {"command": "docker", "args": ["login", "-u", "ci", "-p", pw("argv_mcp")]},
    }
    model = settings["customModels"][-1]
    model["extraArgs"] = {
        **model.get("extraArgs", {}),
        "launcher": ["gw-proxy", "--api-key", pw("argv_launcher")],
        # (not a hook's `command`: the shipped hook rules read it as a string, and an array
        # there is an `error` of its own, which the hidden-values test would count)
        "tunnel": ["sshpass", "-p", pw("argv_sshpass"), "ssh", "deploy@host"],
    }


def _jwt() -> str:
    def part(obj: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")

    return f"{part({'alg': 'HS256'})}.{part({'sub': _hex()})}.{_hex(32)}"


def _append(dataset: Any, settings: dict[str, Any], name: str) -> None:
    with dataset.lock:
        last = dataset.history[-1]
        dataset.history.append(
            {
                "revision": last["revision"] + 1,
                "settings": settings,
                "user": {"id": "usr_canary", "email": "c@acme.example", "name": name},
                "updatedAt": last["updatedAt"],
            }
        )


def _rotate(settings: dict[str, Any], new_key: str, pasted: str) -> dict[str, Any]:
    s = copy.deepcopy(settings)
    model = s["customModels"][-1]
    model["apiKey"] = new_key
    model["displayName"] = f"Canary gateway (was {pasted})"
    return s


def _cli(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    ctx = Context(env=env, stdout=out, stderr=err, clock=lambda: FIXED_NOW, cwd=str(cwd))
    return main(argv, ctx), out.getvalue(), err.getvalue()


def _keep_journals(monkeypatch: pytest.MonkeyPatch, into: Path) -> list[Path]:
    """Copy the state file's rollback journal / WAL as each write transaction ends (before
    its commit or rollback deletes them), so their raw bytes are searched too."""
    copies: list[Path] = []
    opened = Store.transaction

    @contextmanager
    def transaction(store: Store) -> Iterator[None]:
        with opened(store):
            try:
                yield
            finally:
                for suffix in ("-journal", "-wal"):
                    live = Path(f"{store.path}{suffix}")
                    if live.exists():
                        into.mkdir(exist_ok=True)
                        copies.append(into / f"{len(copies)}{suffix}")
                        shutil.copyfile(live, copies[-1])

    monkeypatch.setattr(Store, "transaction", transaction)
    return copies


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_no_canary_reaches_any_output_or_the_state_file(
    tmp_path: Path, backend: str, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = tmp_path / "state.db" if backend == "sqlite" else request.getfixturevalue("pg_url")
    journals = _keep_journals(monkeypatch, tmp_path / "journals")
    k = Canaries()
    token = k("api_token", "tok-" + _hex(32))
    emu = start_emulator(tokens={token: "owner"}, now=FIXED_NOW, revisions=60, repos=6)
    streams: list[str] = []
    try:
        data = emu.dataset
        planted = _plant(data.history[-1]["settings"], k)
        _append(data, planted, "admin")
        # rotated in the next revision, the old key pasted into a display name (one sync)
        _append(
            data, _rotate(planted, k("new_api_key", _wordy("new")), k.c["old_api_key"]), "admin"
        )
        env = {
            "AUDITOR_BASE_URL": emu.base_url,
            "AUDITOR_APP_URL": emu.app_url,
            "AUDITOR_TOKEN": token,
            "AUDITOR_STATE": str(state),
            "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"),
        }

        def run(*argv: str, **extra: str) -> None:
            _, out, err = _cli(list(argv), {**env, **extra}, tmp_path)
            streams.extend([out, err])

        run("sync")
        # across syncs: both keys pasted again, into a name and a user name
        again = _rotate(data.history[-1]["settings"], k.c["new_api_key"], k.c["old_api_key"])
        again["customModels"][-1]["displayName"] = f"gw {k.c['new_api_key']}"
        # a remembered secret in a URL, percent-encoded with lower-case hex digits
        slashy = _lower_escapes(urllib.parse.quote(k.c["slashy_token"], safe=""))
        again["customModels"][-1]["baseUrl"] = f"http://llm.example/v1/{slashy}/chat"
        _append(data, again, f"bot {k.c['old_api_key']}")
        run("sync")
        proposed = tmp_path / "in" / "proposed.json"
        proposed.parent.mkdir()
        p_settings = _plant(data.history[-1]["settings"], Canaries())
        p_settings["svcRouterGuidance"] = f"use {token} and {k.c['old_api_key']}"
        p_settings["customModels"][-1]["apiKey"] = k("proposed_key")
        _plant_commands(p_settings, k, "proposed_")
        proposed.write_text(json.dumps(p_settings))
        for fmt in ("text", "json", "patch", "md"):
            run("diff", "--format", fmt)
        run("history")
        run("history", "--format", "json")
        run("run", "--out", str(tmp_path / "run"))
        run("review", str(proposed), "--out", str(tmp_path / "review"))
        run("review", str(proposed), "--offline", "--out", str(tmp_path / "review-offline"))
        # Two files, no state file (so no memory of secrets learned by syncs): the token
        # pasted into the proposed file is scrubbed all the same.
        against = tmp_path / "in" / "live.json"
        against.write_text(json.dumps({"svcRouterGuidance": "none"}))
        pasted = tmp_path / "in" / "pasted.json"
        pasted.write_text(json.dumps({"svcRouterGuidance": f"use {token} here"}))
        run("review", str(pasted), "--against", str(against), "--out", str(tmp_path / "rf"))
        run("export", "--out", str(tmp_path / "evidence"))
        emu.faults.add("history", "settings_not_object", page=1, value=f"x {token}")
        _append(data, again, "admin")
        run("sync")
    finally:
        emu.stop()
    assert (tmp_path / "summary.md").exists() and (tmp_path / "run" / "findings.json").exists()
    if backend == "sqlite":  # every sync wrote through a journal, and it is searched below
        assert len(journals) >= 3
    files = [p for p in tmp_path.rglob("*") if p.is_file() and p.parent.name != "in"]
    blobs = streams + [p.read_bytes().decode("utf-8", "replace") for p in files]
    if backend == "postgres":  # every value of every table of the store
        stored = stored_bytes(state).decode("utf-8", "replace")
        assert "customModels" in stored
        blobs.append(stored)
    assert len(k.c) >= 30
    leaks = [
        (name, form, i)
        for name, value in k.c.items()
        for form in secret_forms(value)
        for i, text in enumerate(blobs)
        if form in text
    ]
    assert not leaks, leaks[:5]


class _EchoingService(ProblemAnswer):
    """Refuses every request with a problem body that echoes the caller's token in every form."""

    def problem(self, token: str) -> dict[str, Any]:
        detail = " | ".join(
            [
                f"raw {token}",
                f"base64 {base64.b64encode(token.encode()).decode()}",
                f"urlsafe {base64.urlsafe_b64encode(token.encode()).decode().rstrip('=')}",
                f"url {urllib.parse.quote(token, safe='')}",
                f"basic {base64.b64encode(f'user:{token}'.encode()).decode()}",
            ]
        )
        return {"status": 401, "title": "Unauthorized", "detail": detail}


def test_an_error_body_echoing_the_token_in_any_encoding_prints_none_of_it(
    tmp_path: Path,
) -> None:
    token = "tok-" + _hex(32)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _EchoingService)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        env = {
            "AUDITOR_BASE_URL": f"http://127.0.0.1:{server.server_address[1]}",
            "AUDITOR_TOKEN": token,
            "AUDITOR_STATE": str(tmp_path / "state.db"),
        }
        code, out, err = _cli(["sync"], env, tmp_path)
    finally:
        server.shutdown()
        server.server_close()
    assert (code, out) == (2, "")
    assert "401 Unauthorized" in err and err.count("\n") == 1
    assert "[secret fp:" in err  # the echoes are replaced, not the whole message dropped
    files = [p.read_bytes().decode("utf-8", "replace") for p in tmp_path.rglob("*") if p.is_file()]
    basic = base64.b64encode(f"user:{token}".encode()).decode()
    forms = [*secret_forms(token), basic[: len(basic) // 4 * 4 - 4]]  # the encoded pair, unpadded
    leaks = [form for form in forms for text in [out, err, *files] if form in text]
    assert not leaks, leaks


READABLE = [
    pytest.param({"model": "claude-sonnet-4-5-20250929"}, id="model-id"),
    pytest.param({"baseUrl": "https://api.example.com/v1/chat/completions"}, id="url"),
    pytest.param({"id": "123e4567-e89b-12d3-a456-426614174000"}, id="uuid"),
    pytest.param({"sha": "0123456789abcdef0123456789abcdef01234567"}, id="commit-hash"),
    pytest.param({"templateId": "tmpl_01HZX8Q9V3K2J7M5N4P6R8T0W2"}, id="template-id"),
    pytest.param({"maxOutputTokens": 8192, "thinkingMaxTokens": 4096}, id="token-counts"),
    pytest.param({"tokenUsage": {"inputTokens": 12, "outputTokens": 3}}, id="token-usage"),
    pytest.param({"env": {"API_KEY": "${OPENAI_API_KEY}"}}, id="env-reference"),
    pytest.param(
        {"hosted": {"cloudProfile": "acme-prod", "cloudRegion": "us-east-1"}}, id="hosted"
    ),
    pytest.param({"command": "mkdir -p /tmp/build && ssh -p 2222 host"}, id="dash-p-not-pw"),
    pytest.param({"command": "docker run -p 8080:80 app && docker login r.io"}, id="docker-p"),
    pytest.param({"command": "pytest -p no:cacheprovider && zip -r out.zip d"}, id="p-plugin"),
    pytest.param({"command": "openssl req -new -key key.pem -out csr.pem"}, id="key-file"),
    pytest.param({"command": "deploy --ssh-key ~/.ssh/id_ed25519 --key c.pem"}, id="key-path"),
    pytest.param({"command": "openssl rsa -in k.pem -passin env:KEY_PW"}, id="pass-env-name"),
    pytest.param({"command": "printf %s hello | wc -c"}, id="printf-not-piped-to-login"),
    pytest.param({"command": "echo hi | base64 && cat <<< done | tr a-z A-Z"}, id="piped"),
    pytest.param({"command": "ssh \\\n  -p 2222 host && mkdir -p \\\n /tmp/b"}, id="continued"),
    pytest.param({"command": "gh auth login --with-token < token.txt"}, id="token-from-file"),
    pytest.param({"command": "sqlcmd -S h -U sa -Q 'select 1'"}, id="sqlcmd-no-password"),
    pytest.param({"args": ["ssh", "-p", "2222", "deploy@host"]}, id="argv-ssh-port"),
    pytest.param({"args": ["docker", "run", "-p", "8080:80", "app"]}, id="argv-docker-port"),
    pytest.param({"args": ["login", "-u", "ci", "--password-stdin"]}, id="argv-stdin"),
    pytest.param({"args": ["deploy", "--password", "${DB_PASSWORD}"]}, id="argv-env-ref"),
    pytest.param({"args": ["deploy", "--ssh-key", "~/.ssh/id_ed25519"]}, id="argv-key-path"),
    pytest.param({"restrictApiKeyCreationToManagers": True}, id="boolean-setting"),
    pytest.param(
        {
            "encryptionKeyId": "kms-key-7",
            "encryptionKeyAlgorithm": "AES-256-GCM",
            "masterKeyArn": "arn:aws:kms:us-east-1:123456789012:key/k-1",
            "publicKey": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5",
        },
        id="key-metadata",
    ),
    pytest.param({"authorName": "Priya Raman", "email": "priya@acme.example"}, id="author"),
]


@pytest.mark.parametrize("doc", READABLE)
def test_ordinary_values_stay_readable(doc: dict[str, Any]) -> None:
    assert Redactor(b"k", ["tok-" + _hex(32)]).redact_json(doc) == doc
