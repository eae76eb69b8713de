"""Passwords in the command-line forms a redaction missed (tester t17): between backslash-escaped
quotes (`bash -c "deploy --password=\\"X\\""`, `-p\\"X\\"`), in bash's ANSI-C quoting
(`$'X'`) and behind the usual nested single quotes (`'"'"'X'"'"'`); attached to a registry
login's `-p` (`docker login -pX`); after options named `--pass`, `--pin`, `--passcode`; under
keys named `pin` or `passcode`; in a JSON text whose key has a `\\u` escape and under a nested
YAML block. And the other way: an option named `auth`, `key` or `sig` given a word (`--auth
github`) in a command string does not make that word a secret scrubbed everywhere after."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from auditor.emulator import start_emulator
from auditor.redact import Redactor, is_marker
from tests.conftest import (
    FIXED_NOW,
    OWNER_TOKEN,
    emulator_env,
    run_cli,
    secret_forms,
    secrets_found_in_a_child,
)

PW = "LSAH0651/tvg~j"  # a generated password no detector sees by its form


@pytest.fixture
def redactor() -> Redactor:
    return Redactor(b"command-forms-key", ["tok-0123456789abcdef0123456789abcdef"])


def _hook(command: str) -> dict[str, Any]:
    return {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": command}]}]}}


def _hooked(redactor: Redactor, command: str) -> str:
    out = redactor.redact_json(_hook(command))
    return str(out["hooks"]["Stop"][0]["hooks"][0]["command"])


# `{pw}` is the password; each form as a user writes it in a settings file's hook.
NESTED_QUOTES = [
    'bash -c "deploy --password=\\"{pw}\\""',
    'bash -c "publish --token=\\"{pw}\\""',
    'bash -c "mysql -u root -p\\"{pw}\\" -e q"',
    'bash -c "sshpass -p \\"{pw}\\" ssh h"',
    'bash -c "curl -u ci:\\"{pw}\\" https://x.example"',
    'bash -c "export DB_PASSWORD=\\"{pw}\\"; ./run"',
    'deploy --password=\\"{pw}\\"',
    "deploy --password $'{pw}'",
    "deploy --password=$'{pw}'",
    "sshpass -p $'{pw}' ssh h",
    "bash -c 'docker login -u ci -p '\"'\"'{pw}'\"'\"' r.io'",
    "bash -c 'docker login -u ci -p '\\''{pw}'\\'' r.io'",
    'sh -c "bash -c \\"mysql -u root -p\\\\\\"{pw}\\\\\\" -e q\\""',
    'bash -c "sh -c \\"deploy --password={pw}\\""',
    # a shell's command line whose tool follows the quote, and a password quoted after `user:`
    'bash -c "curl -u ci:{pw}"',
    "sh -c 'curl --user ci:{pw} https://x.example'",
    'curl -u ci:"{pw}" https://x.example',
    "smbclient //files/share -U ci%'{pw}' -c ls",
]
ATTACHED_LOGIN = [
    "docker login -u ci -p{pw} registry.example.com",
    "docker login -u ci -p'{pw}' registry.example.com",
    'docker login -u ci -p"{pw}" registry.example.com',
    "podman login -u ci -p{pw} quay.io",
    "helm registry login r.example -u ci -p{pw}",
    "az acr login -n reg -u ci -p{pw}",
]
PASS_OPTIONS = [
    "mc admin user add local ci --pass {pw}",
    "tool --pass={pw}",
    "deploy --db-pass={pw} --yes",
    "openvpn --auth-pass {pw}",
    "unlock --pin {pw}",
    "unlock --pin={pw}",
    "unlock --passcode {pw}",
    "unlock --db_passcode={pw}",
]


@pytest.mark.parametrize("command", NESTED_QUOTES + ATTACHED_LOGIN + PASS_OPTIONS)
def test_the_password_is_the_only_part_replaced_and_is_remembered(
    redactor: Redactor, command: str
) -> None:
    assert _hooked(redactor, command.format(pw=PW)) == command.format(pw=redactor.marker(PW))
    assert redactor.redact_text(f"later {PW} here") == f"later {redactor.marker(PW)} here"


def _escaped(text: str) -> str:
    """`text` as written between double quotes."""
    return text.replace("\\", "\\\\").replace('"', '\\"')


def test_a_password_with_quotes_in_it_is_hidden_in_its_escaped_form(redactor: Redactor) -> None:
    secret = 'Kp3"Vd9\\qLm'
    once = _escaped(secret)
    assert _hooked(redactor, f'deploy --password="{once}"') == (
        f'deploy --password="{redactor.marker(once)}"'
    )
    fresh = Redactor(b"command-forms-key")  # (the first remembers `once`, JSON-escaped too)
    twice = _escaped(once)
    command = f'bash -c "deploy --password=\\"{twice}\\""'
    assert _hooked(fresh, command) == command.replace(twice, fresh.marker(twice))


def test_a_pin_option_keeps_a_version_and_hides_digits(redactor: Redactor) -> None:
    assert _hooked(redactor, "gh extension install o/r --pin v1.2.0") == (
        "gh extension install o/r --pin v1.2.0"
    )
    assert _hooked(redactor, "unlock --pin main") == "unlock --pin main"
    out = _hooked(redactor, "unlock --pin 48213377")
    assert out == f"unlock --pin {redactor.marker('48213377')}"


@pytest.mark.parametrize(
    "args",
    [
        ["--pass", PW],
        ["--pin", PW],
        ["--passcode", PW],
        ["--db-pass", PW],
        ["login", "-u", "ci", f"-p{PW}"],
        ["login", "-u", "ci", f"-p={PW}", "registry.example.com"],
    ],
)
def test_a_pass_option_in_an_array_hides_its_value(redactor: Redactor, args: list[str]) -> None:
    doc = {"mcpServers": {"s": {"command": "docker", "args": args}}}
    out = redactor.redact_json(doc)["mcpServers"]["s"]["args"]
    assert PW not in json.dumps(out)
    assert [a.replace(PW, redactor.marker(PW)) for a in args] == out


@pytest.mark.parametrize(
    "command",
    [
        "deploy --auth github",
        "sign --signature sha256",
        "deploy --key production",
        "deploy --auth=github",
        "deploy --token main --yes",
        "deploy --token github --yes",
        'deploy --auth "github"',
        "deploy --sig sha256",
    ],
)
def test_an_auth_option_given_a_word_leaves_it_readable_everywhere(
    redactor: Redactor, command: str
) -> None:
    """README: an option named `auth`, `key`, `token` or `sig` takes its value only when it may
    be a credential; a word remembered would be scrubbed from every key and value after."""
    doc = {
        **_hook(command),
        "mcpPolicy": {"allowlist": ["github", "sha256", "production", "main"]},
        "sandbox": {"network": {"allowedDomains": ["github.com"]}},
    }
    assert redactor.redact_json(doc) == doc
    assert redactor.redact_text("https://github.com/acme/main") == "https://github.com/acme/main"


def test_an_auth_option_given_a_credential_still_hides_it(redactor: Redactor) -> None:
    out = _hooked(redactor, f"deploy --auth {PW} --key Zx81Qw7Lp2Vd")
    assert out == f"deploy --auth {redactor.marker(PW)} --key {redactor.marker('Zx81Qw7Lp2Vd')}"


def test_an_mcp_servers_auth_word_in_args_stays(redactor: Redactor) -> None:
    doc = {
        "customModels": [
            {
                "id": "m",
                "extraArgs": {
                    "mcp": {"args": ["--auth", "github", "--signature", "sha256"]},
                    "hook": "deploy --auth github",
                },
            }
        ],
        "mcpPolicy": {"allowlist": ["github", "sha256"]},
    }
    assert redactor.redact_json(doc) == doc


SECRET_KEYS = ["pin", "PIN", "Pin", "dbPin", "db_pin", "userPin", "vaultPin", "DB_PIN"]
SECRET_KEYS += ["passcode", "Passcode", "PASSCODE", "db_passcode"]
# (`authentication` names a kind of credential, as `auth` does: a number under it is a setting)
SECRET_VALUES = [
    *((key, value) for key in SECRET_KEYS for value in (48213377912, "48213377912", "Hq7zLw2Px9")),
    ("Authentication", "Hq7zLw2Px9"),
    ("authentication", "48213377912"),
]


@pytest.mark.parametrize(("key", "value"), SECRET_VALUES)
def test_a_value_under_a_pin_or_passcode_key_is_a_marker(
    redactor: Redactor, key: str, value: object
) -> None:
    doc = {"customModels": [{"id": "m", "extraArgs": {key: value}}], "sandbox": {key: value}}
    out = redactor.redact_json(doc)
    assert is_marker(out["customModels"][0]["extraArgs"][key])
    assert is_marker(out["sandbox"][key])
    assert str(value) not in json.dumps(out)


LOOK_ALIKES = {
    "pinned": True,
    "pinnedVersion": "1.2.3",
    "pinnedModels": ["claude-sonnet-4-5"],
    "spinner": "dots",
    "pinCount": 3,
    "pinPolicy": "exact",
    "mapping": {"a": "b"},
    "shipping": "standard",
    "pinning": "strict",
    "authenticationMethod": "oauth",
    "authenticationRequired": True,
}


@pytest.mark.parametrize(
    "text",
    [
        "password:\n  enabled: true\n",  # the next line is a key of the block, no value
        "token:\n  - abcdefgh\n",
        "passwordPolicy:\n  minLength12\n",
        "tokens:\n  maxOutputTokens\n",
        "password:\n  - abcdefgh\n  - ijklmnop\n",  # a list, not a value
        "password:\nForgot it? Ask the admin.\n",  # prose
    ],
)
def test_a_line_under_a_secret_field_that_is_no_value_of_it_stays(
    redactor: Redactor, text: str
) -> None:
    assert redactor.redact_json({"svcRouterGuidance": text})["svcRouterGuidance"] == text


def test_keys_that_only_look_like_a_pin_stay_readable(redactor: Redactor) -> None:
    doc = {"customModels": [{"id": "m", "extraArgs": dict(LOOK_ALIKES)}]}
    assert redactor.redact_json(doc) == doc


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ('{"pass\\u0077ord": "Kp3Vd9qLmW2z"}', '{"pass\\u0077ord": "%s"}'),
        ('{"\\u0074oken": "Kp3Vd9qLmW2z"}', '{"\\u0074oken": "%s"}'),
        ("---\nauth:\n  token: Kp3Vd9qLmW2z\n", "---\nauth:\n  token: %s\n"),
        ("db:\n  password: Kp3Vd9qLmW2z\n", "db:\n  password: %s\n"),
        # the value alone on the next line (hidden before this round, then missed by its fix)
        ("password:\n  Kp3Vd9qLmW2z\n", "password:\n  %s\n"),
        ("db:\n  password:\n    Kp3Vd9qLmW2z\n", "db:\n  password:\n    %s\n"),
        ("api_key: |\n  Kp3Vd9qLmW2z\n", "api_key: |\n  %s\n"),
        ("- token: >-\r\n    Kp3Vd9qLmW2z\r\n", "- token: >-\r\n    %s\r\n"),
    ],
)
def test_a_secret_field_in_a_text_is_hidden_not_its_key(
    redactor: Redactor, text: str, kept: str
) -> None:
    out = redactor.redact_json({"svcRouterGuidance": text})["svcRouterGuidance"]
    assert out == kept % redactor.marker("Kp3Vd9qLmW2z")


@pytest.mark.parametrize(
    "command",
    [
        'bash -c "echo \\"hello world\\""',
        "printf $'a\\tb\\n'",
        "bash -c 'echo '\"'\"'quoted'\"'\"''",
        'bash -c "git commit -m \\"fix: pin deps\\""',
        "deploy --no-pin --yes",
        "gh extension install o/r --pin 1.4.0",
    ],
)
def test_nested_quotes_without_a_password_stay_readable(redactor: Redactor, command: str) -> None:
    assert _hooked(redactor, command) == command


# Long strings built against the reading of nested quotes: each read in linear time, in a child
# process so that a hang fails rather than stalls.
_HOSTILE = [
    "$'\\'" * 30000 + " ; deploy --password $'{pw}'",
    '"\\"' * 30000 + ' ; bash -c "deploy --password=\\"{pw}\\""',
    "'\"'\"'" * 20000 + " ; deploy --password $'{pw}'",
    'bash -c \\"' * 10000 + ' ; bash -c "deploy --password=\\"{pw}\\""',
    "-p" * 50000 + " ; docker login -u ci -p{pw} r",
    "--pass-" * 20000 + " ; tool --pass {pw}",
    # (R13: each over 30 s at 200 KB before, a YAML comment or a run read to its end per start)
    "password: #" * 40000 + " ; tool --pass {pw}",
    "password: | #" * 30000 + " ; tool --pass {pw}",
    "-c" + " " * 400000 + " ; tool --pass {pw}",
    "tool --pin " + "a" * 400000 + "1 ; tool --pass {pw}",
    "tool --pin " + "1.1." * 100000 + "! ; tool --pass {pw}",
]


@pytest.mark.parametrize("text", _HOSTILE, ids=lambda t: t[:8])
def test_long_repetitive_nested_quotes_are_read_without_hanging(text: str) -> None:
    """(In a child with a 60 s timeout: each of these takes about a second in linear time.)"""
    assert PW in secrets_found_in_a_child(text.format(pw=PW))


def test_passwords_in_these_forms_reach_no_output_end_to_end(tmp_path: Path) -> None:
    """One revision holding a password in each form (hooks) and PINs under `pin` / `passcode`
    keys, synced through the API: no form of any reaches the state file, `diff --format json`,
    `history --format json` or a run's reports."""
    emu = start_emulator(tokens={OWNER_TOKEN: "owner"}, now=FIXED_NOW, revisions=6, repos=2)
    planted: list[str] = []

    def pw(n: int) -> str:
        planted.append(f"Vd{n:02d}qLmW/z~jK")
        return planted[-1]

    forms = NESTED_QUOTES + ATTACHED_LOGIN + PASS_OPTIONS
    commands = [form.format(pw=pw(n)) for n, form in enumerate(forms)]
    pins = {"pin": 48213377912, "passcode": pw(90), "dbPin": 59324488023, "PASSCODE": 60435599134}
    pins["vault"] = {"db_pin": pw(91)}
    planted += [str(v) for v in pins.values() if isinstance(v, int)]
    try:
        data = emu.dataset
        with data.lock:
            last = data.history[-1]
            settings = copy.deepcopy(last["settings"])
            hooks = [{"type": "command", "command": c, "timeout": 5} for c in commands]
            settings.setdefault("hooks", {})["Stop"] = [{"matcher": "", "hooks": hooks}]
            model = {"id": "custom:pins", "model": "m", "provider": "openai", "extraArgs": pins}
            settings["customModels"] = [*settings.get("customModels", []), model]
            data.history.append({**last, "revision": last["revision"] + 1, "settings": settings})
        env = emulator_env(emu, tmp_path / "state.db")
        outputs = [run_cli(["sync"], env, tmp_path)]
        outputs.append(run_cli(["diff", "--format", "json"], env, tmp_path))
        outputs.append(run_cli(["history", "--format", "json"], env, tmp_path))
        outputs.append(run_cli(["run", "--out", str(tmp_path / "run")], env, tmp_path))
    finally:
        emu.stop()
    assert outputs[0][0] == 0, outputs[0]
    assert "--password" in outputs[1][1] and "[secret fp:" in outputs[1][1]
    assert (tmp_path / "run" / "findings.json").exists()
    assert (tmp_path / "state.db").exists()
    texts = [t for _, out, err in outputs for t in (out, err)]
    texts += [p.read_bytes().decode("utf-8", "replace") for p in tmp_path.rglob("*") if p.is_file()]
    leaks = [
        (s, form) for s in planted for form in secret_forms(s) if any(form in t for t in texts)
    ]
    assert not leaks, leaks


# -- fk-cmdline2: regressions of this round's command-line changes (review r11) ---------------


@pytest.mark.parametrize(
    "option",
    [
        "--secret-key",
        "--encryption-key",
        "--master-key",
        "--auth-key",
        "--signing-key",
        "--client-key",
        "--storage-account-key",
        "--api-token",
        "--auth-token",
        "--access-token",
    ],
)
@pytest.mark.parametrize("word", ["opensesame", "hunter22"])
def test_an_option_named_for_a_secret_or_a_key_hides_a_word_password(
    redactor: Redactor, option: str, word: str
) -> None:
    """README: one named for a password or a key takes any value; only the bare `--auth`,
    `--key`, `--token`, `--sig` judge it (`--secret-key opensesame` was shown this round)."""
    for command in (f"tool {option} {word}", f"tool {option}={word} --yes"):
        assert _hooked(redactor, command) == command.replace(word, redactor.marker(word))
    doc = {"mcpServers": {"s": {"command": "tool", "args": [option, word, "--yes"]}}}
    assert redactor.redact_json(doc)["mcpServers"]["s"]["args"] == [
        option,
        redactor.marker(word),
        "--yes",
    ]


SECRET_LATER_LINE = [
    "password:\n\n  {pw}\n",
    "Temporary password:\n{pw}\n",
    "token:\n{pw}\n",
    "secret:\n  {pw} # ci\n",
    "api_key:   \n   \n  {pw}\n",
    "password:\r\n\r\n  {pw}\r\n",
    'password:\n  "{pw}"\n',
    "password: # set by ops\n  {pw}\n",
    "password: !!str\n  {pw}\n",
    "auth:\n  token: {pw}\n",
    "password: |\n  {pw}\n  {pw2}\nnext: value\n",
]


@pytest.mark.parametrize("text", SECRET_LATER_LINE)
def test_a_secret_fields_value_on_a_later_line_is_hidden(redactor: Redactor, text: str) -> None:
    """The stop-35 head hid these (`NAME:\\s*X`); this round's nested-block fix showed them."""
    pw, pw2 = "Zq8hVd2LmX0pF1", "Zq8hVd2LmX0pF2"
    out = redactor.redact_json({"note": text.format(pw=pw, pw2=pw2)})["note"]
    assert out == text.format(pw=redactor.marker(pw), pw2=redactor.marker(pw2))


SHELL_FORMS = [
    'sh -lc "{inner}"',
    "sh -lc '{inner}'",
    'bash -xc "{inner}"',
    'bash -ec "{inner}"',
    'bash -c  "{inner}"',
    'bash -c\t"{inner}"',
    'BASH -C "{inner}"',
    '["bash","-c","{inner}"]',
    '["sh", "-lc", "{inner}"]',
]
INNER_COMMANDS = [
    "curl -u ci:{pw} https://h",
    "htpasswd -b f u {pw}",
    "smbclient -U ci%{pw} //h/s",
    "mysql -u r -p{pw} db",
]


@pytest.mark.parametrize("outer", SHELL_FORMS)
@pytest.mark.parametrize("inner", INNER_COMMANDS)
def test_a_shell_command_line_is_read_again_whatever_its_flags_and_spacing(
    redactor: Redactor, outer: str, inner: str
) -> None:
    pw = "Zq8hVd2LmX0pA7"
    command = outer.format(inner=inner.format(pw=pw))
    assert _hooked(redactor, command) == command.replace(pw, redactor.marker(pw))


@pytest.mark.parametrize(
    "script",
    [
        'bash -c "curl -u ci:{pw} https://h; {body}"',
        "bash -c 'htpasswd -b f u {pw}; {body}'",
        'bash -c "mysql -p{pw} db; {body}"',
    ],
)
def test_a_long_script_given_to_a_shell_is_read_to_its_end(redactor: Redactor, script: str) -> None:
    """Past the 4,000 characters a quoted stretch was read at most, the tool after the quote
    (`bash -c "curl -u ci:X …"`) leaked."""
    pw = "Zq8hVd2LmX0pR2"
    command = script.format(pw=pw, body="echo step; " * 500)
    assert _hooked(redactor, command) == command.replace(pw, redactor.marker(pw))


@pytest.mark.parametrize(
    "command",
    [
        "tool --pin 4f2a9c1e",
        "tool --pin 4f2a9c1e0b7d6a5c4b3a29180706f5e4d3c2b1a0",
        "pip-compile --pin requests==2.31.0",
        "uv tool install --pin ruff@0.4.1",
        "tool --pin node-20",
        "tool --pin release/2024-01",
        "tool --pin latest-stable",
        "tool --pin ^1.2.0",
        "tool --pin ~=1.4",
        "tool --pin HEAD~1",
        "asdf --pin python-3.12.1",
        "mise use --pin node@20",
        "mise use -g --pin --verbose python@3.12",
        "git checkout --pin feature/pin-deps",
        "make --pass --keyring-backend us-east-1",
        "ansible-playbook -i hosts site.yml --ask-become-pass --check",
        "ansible-playbook site.yml --ask-pass deploy",
        "HandBrakeCLI -i in.mkv -o out.mp4 --two-pass --turbo",
        "render --render-pass shadows",
        "lint --lint-pass strict",
        "encode --multi-pass enabled",
    ],
)
def test_a_version_pin_or_a_pass_flag_leaves_the_next_word_readable(
    redactor: Redactor, command: str
) -> None:
    """A ref or version given to `--pin`, and the word after a flag whose last word is `pass`,
    are no secrets: remembered, they were scrubbed from every later text."""
    assert _hooked(redactor, command) == command
    words = command.split()
    doc = {"mcpServers": {"s": {"command": words[0], "args": words[1:]}}}
    assert redactor.redact_json(doc) == doc
    note = {"note": " ".join(words[1:])}
    assert redactor.redact_json(note) == note


@pytest.mark.parametrize(
    "command",
    [
        "unlock --pin 482913",
        "unlock --pin=48291307",
        "tool --pass opensesame",
        "tool --db-pass hunter22",
        "tool --auth-pass opensesame",
        "tool --pass=opensesame --yes",
    ],
)
def test_a_pin_and_a_pass_option_still_hide_their_value(redactor: Redactor, command: str) -> None:
    value = command.split()[-1 if "--yes" not in command else 1].split("=")[-1]
    assert _hooked(redactor, command) == command.replace(value, redactor.marker(value))


def test_a_key_naming_a_version_pin_is_no_secret(redactor: Redactor) -> None:
    docs = [{"versionPin": "v1.2.0", "commitPin": "4f2a9c1e"}, {"about": "upgrade to v1.2.0"}]
    assert [redactor.redact_json(d) for d in docs] == docs
    assert is_marker(redactor.redact_json({"dbPin": "482913"})["dbPin"])


@pytest.mark.parametrize(
    "command",
    [
        'sh -ce "curl -u ci:{pw} https://h"',
        "bash -cex 'curl -u ci:{pw} https://h'",
        'bash -c -- "curl -u ci:{pw} https://h"',
    ],
)
def test_a_shell_flag_cluster_or_dashes_before_the_command_line(
    redactor: Redactor, command: str
) -> None:
    """`-ce`, `-cex` and `-c --` are `-c` too (R13: the password was in clear)."""
    assert PW not in _hooked(redactor, command.format(pw=PW))
