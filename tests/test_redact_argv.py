"""Passwords on command lines in the forms a redaction missed: a line continuation between an
option and its value, a password written into a command that reads it on standard input
(`printf`, `cat <<<`, here-strings), a Basic header's `user:X` piped to `base64`, an attached
`sqlcmd -PX`; and argv-style arrays, where an option and its value are two elements
(`["sshpass", "-p", X]`). Each is hidden, remembered, and hidden wherever it shows up again;
the near misses (`printf %s hello`, `ssh -p 2222`) stay readable."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from auditor.emulator import start_emulator
from auditor.redact import Redactor, commands
from tests.conftest import (
    FIXED_NOW,
    OWNER_TOKEN,
    emulator_env,
    run_cli,
    secret_forms,
    secrets_found_in_a_child,
)

PW = "Zq7vLm2pXw9kRt4s"  # 16 random characters: below the entropy detector's threshold


@pytest.fixture
def redactor() -> Redactor:
    return Redactor(b"argv-test-key")


# `{pw}` is the password; `\\\n` a line continuation (backslash, line break).
CONTINUED = [
    "docker login -u ci -p \\\n  {pw} registry.example.com",
    "sshpass -p \\\n{pw} ssh deploy@host",
    "deploy --password \\\n {pw} --yes",
    "deploy --password=\\\n{pw} --yes",
    "deploy --password=\\\r\n    {pw} --yes",
    "curl -u ci:\\\n{pw} https://x.example",
    "mysql -u root \\\n  -p{pw} -e 'select 1'",
    "vault login \\\n  {pw}",
    'bash -c "docker login -u ci -p \\\n  {pw} r.io"',
]
PIPED = [
    "printf %s {pw} | docker login -u ci --password-stdin quay.io",
    "printf '%s' {pw} | podman login -u ci --password-stdin quay.io",
    "printf '%s\\n' \"{pw}\" | helm registry login r.io -u ci --password-stdin",
    "printf '{pw}\\n' | docker login -u ci --password-stdin quay.io",
    "printf {pw} | docker login -u ci --password-stdin quay.io",
    "cat <<< {pw} | docker login -u ci --password-stdin quay.io",
    "cat <<<'{pw}' | gh auth login --with-token",
    "gh auth login --with-token <<< {pw}",
    'docker login -u ci --password-stdin quay.io <<< "{pw}"',
    "sudo -S systemctl restart agent <<< {pw}",
    "printf '%s\\n' {pw} | sudo -u root -S true",
    'curl -H "Authorization: Basic $(echo -n ci:{pw} | base64)" https://x.example',
    "curl -H \"Authorization: Basic $(printf %s 'ci:{pw}' | base64 -w0)\" https://x.example",
    'AUTH=$(echo -n ci:{pw} | base64); curl -H "Authorization: Basic $AUTH" https://x',
    "sqlcmd -S h -U sa -P{pw} -Q 'select 1'",
    "bcp db.dbo.t out t.dat -S h -U sa -P{pw}",
    "ldapsearch -x -D cn=admin,dc=x -w{pw} -b dc=x",
]


@pytest.mark.parametrize("command", CONTINUED + PIPED)
def test_the_password_is_the_only_part_replaced_and_is_remembered(
    redactor: Redactor, command: str
) -> None:
    doc = {"hooks": {"Stop": [{"hooks": [{"command": command.format(pw=PW)}]}]}}
    out = redactor.redact_json(doc)["hooks"]["Stop"][0]["hooks"][0]["command"]
    assert out == command.format(pw=redactor.marker(PW))
    # pasted anywhere later, it is hidden there too
    assert redactor.redact_text(f"note: {PW}") == f"note: {redactor.marker(PW)}"


def test_a_continuation_inside_the_password_hides_all_of_it(redactor: Redactor) -> None:
    command = f"docker login -u ci -p {PW[:8]}\\\n{PW[8:]} r.io"
    out = redactor.redact_text(command)
    assert PW[:8] not in out and PW[8:] not in out
    assert out.startswith("docker login -u ci -p [secret fp:") and out.endswith(" r.io")


@pytest.mark.parametrize(
    "command",
    [
        "printf %s hello",
        "printf '%s\\n' done | tee out.txt",
        "printf %s hello | wc -c",
        "echo hi | base64",
        "echo -n payload | base64 -d",
        "cat <<< hello | tr a-z A-Z",
        "grep -c x <<< hello",
        "ssh -p 2222 host",
        "ssh \\\n  -p 2222 host",
        "mkdir -p \\\n  /tmp/build",
        "docker run -p 8080:80 app \\\n  && docker login r.io",
        "pg_dump -p 5432 -U app db",
        "redis-server --port 6380 \\\n  --save ''",
        "gh auth login --with-token < token.txt",
        "echo $PW | docker login -u ci --password-stdin r.io",
        'cat <<< "$TOKEN" | gh auth login --with-token',
        'gh auth login --with-token <<< "$(cat /run/secrets/gh)"',
        'curl -H "Authorization: Basic $(echo -n "$USER:$PASS" | base64)" https://x',
        "sqlcmd -S h -U sa -Q 'select 1'",
        'sqlcmd -S h -U sa -P "$SQL_PW"',
        "ldapsearch -x -H ldap://h -b dc=x",
        "ls \\\n  -la \\\n  /tmp",
    ],
)
def test_a_near_miss_stays_readable(redactor: Redactor, command: str) -> None:
    assert redactor.redact_text(command) == command
    doc = {"hooks": {"Stop": [{"hooks": [{"command": command}]}]}}
    assert redactor.redact_json(doc) == doc


# -- argv-style arrays ---------------------------------------------------------------------

ARRAYS = [
    pytest.param(["gw-proxy", "--api-key", "{pw}"], 2, id="long-option"),
    pytest.param(["gw-proxy", "--token", "{pw}", "--port", "8080"], 2, id="token"),
    pytest.param(["tool", "-storepass", "{pw}"], 2, id="dash-name"),
    pytest.param(["sshpass", "-p", "{pw}", "ssh", "deploy@host"], 2, id="sshpass"),
    pytest.param(["/usr/bin/sshpass", "-p", "{pw}", "ssh", "h"], 2, id="path-to-command"),
    pytest.param(["docker", "login", "-u", "ci", "-p", "{pw}", "r.io"], 5, id="docker-login"),
    pytest.param(["login", "-u", "ci", "-p", "{pw}"], 4, id="login-args"),
    pytest.param(["vault", "login", "{pw}"], 2, id="vault-positional"),
    pytest.param(["redis-cli", "-h", "cache", "-a", "{pw}", "ping"], 4, id="redis"),
]


@pytest.mark.parametrize(("argv", "at"), ARRAYS)
def test_an_option_value_element_becomes_a_marker_and_is_remembered(
    redactor: Redactor, argv: list[str], at: int
) -> None:
    args = [a.format(pw=PW) for a in argv]
    doc = {
        "mcpServers": {"gw": {"command": "gw", "args": args}},
        "customModels": [{"displayName": f"gw ({PW})"}],
    }
    out = redactor.redact_json(doc)
    expected = list(args)
    expected[at] = redactor.marker(PW)
    assert out["mcpServers"]["gw"]["args"] == expected
    assert out["customModels"][0]["displayName"] == f"gw ({redactor.marker(PW)})"
    assert PW not in json.dumps(out)
    assert redactor.redact_text(f"later {PW}") == f"later {redactor.marker(PW)}"


def test_an_attached_value_in_an_array_is_hidden(redactor: Redactor) -> None:
    out = redactor.redact_json({"args": ["mysql", "-u", "root", f"-p{PW}", "db"]})
    assert out == {"args": ["mysql", "-u", "root", f"-p{redactor.marker(PW)}", "db"]}


def test_a_hook_command_given_as_an_array_is_hidden(redactor: Redactor) -> None:
    doc = {"hooks": {"SessionStart": [{"hooks": [{"command": ["sshpass", "-p", PW, "ssh", "h"]}]}]}}
    out = redactor.redact_json(doc)
    assert out["hooks"]["SessionStart"][0]["hooks"][0]["command"][2] == redactor.marker(PW)


@pytest.mark.parametrize(
    "argv",
    [
        ["ssh", "-p", "2222", "deploy@host"],
        ["docker", "run", "-p", "8080:80", "app"],
        ["pytest", "-p", "no:cacheprovider"],
        ["deploy", "--ssh-key", "~/.ssh/id_ed25519", "--key", "c.pem"],
        ["deploy", "--password", "${DB_PASSWORD}"],
        ["deploy", "--token", "$TOKEN"],
        ["docker", "login", "-u", "ci", "--password-stdin", "r.io"],
        ["gh", "auth", "login", "--with-token"],
        ["deploy", "--token", "--yes"],
        ["login", "-u", "ci"],
        ["printf", "%s", "hello"],
        ["mkdir", "-p", "/tmp/build"],
    ],
)
def test_an_ordinary_argv_array_stays_readable(redactor: Redactor, argv: list[str]) -> None:
    doc = {"mcpServers": {"x": {"command": "x", "args": argv}}}
    assert redactor.redact_json(doc) == doc


def test_a_string_that_becomes_an_option_value_is_not_given_its_earlier_answer(
    redactor: Redactor,
) -> None:
    """A string's answer is reused where it moved to in the next document of the stream; once
    it is a password option's value, it is a marker there (and back: a plain answer again)."""
    short = "ab12c"  # too short to be remembered: only its place makes it a secret
    first = redactor.redact_json({"args": [PW, "--verbose", short, "x"]}, stream="s")
    assert first == {"args": [PW, "--verbose", short, "x"]}
    moved = redactor.redact_json({"args": ["--api-key", PW, "x"]}, stream="s")
    assert moved == {"args": ["--api-key", redactor.marker(PW), "x"]}
    same_place = redactor.redact_json({"args": [PW, "--verbose", short, "--password", short]}, "t")
    assert same_place["args"][4] == redactor.marker(short)
    back = redactor.redact_json({"args": [PW, "--verbose", short, "--other", short]}, "t")
    assert back["args"][4] == short  # what a fresh walk gives: not remembered, not a value
    assert back["args"][0] == redactor.marker(PW)  # remembered since the second document


def test_the_whole_document_shortcut_does_not_pass_an_argv_secret(redactor: Redactor) -> None:
    """Every string of the document is one seen clean before: the shortcut that hands such a
    document back as it is must walk it when an array holds a password option."""
    redactor.redact_json({"a": ["gw-proxy", "--verbose", PW], "b": "--api-key"}, stream="s")
    out = redactor.redact_json({"a": ["gw-proxy", "--api-key", PW], "b": "x"}, stream="s")
    assert out["a"][2] == redactor.marker(PW)
    # `--api-key` seen as a key only, then as an element: walked as well
    other = Redactor(b"argv-test-key-2")
    other.redact_json({"--api-key": "x", "a": ["gw-proxy", "--verbose", PW]}, stream="s")
    out = other.redact_json({"--api-key": "y", "a": ["gw-proxy", "--api-key", PW]}, stream="s")
    assert out["a"][2] == other.marker(PW)


def test_an_argv_secret_in_revisions_synced_through_the_api_is_stored_hidden(
    tmp_path: Path,
) -> None:
    """Revisions with nothing else to hide (the kind the whole-document shortcut hands back as
    it is), then two holding the same argv arrays, the second differing only in an unrelated
    leaf: no form of the password reaches the state file, `history`, or an evidence bundle."""
    emu = start_emulator(tokens={OWNER_TOKEN: "owner"}, now=FIXED_NOW, revisions=6, repos=2)
    try:
        data = emu.dataset
        with data.lock:
            for n, item in enumerate(data.history):
                item["settings"] = {"svcRouterGuidance": f"plain {n}", "args": ["run", "-v"]}
            last = data.history[-1]
            settings = {
                "mcpServers": {
                    "gw": {"command": "docker", "args": ["login", "-u", "ci", "-p", PW]}
                },
                "customModels": [
                    {"id": "custom:gw", "extraArgs": {"launcher": ["gw", "--api-key", PW]}}
                ],
                "hooks": {
                    "SessionStart": [
                        {"hooks": [{"type": "command", "command": ["sshpass", "-p", PW, "h"]}]}
                    ]
                },
            }
            for n, note in enumerate(["first", "second"], start=1):
                doc = {**copy.deepcopy(settings), "svcRouterGuidance": note}
                data.history.append({**last, "revision": last["revision"] + n, "settings": doc})
        env = emulator_env(emu, tmp_path / "state.db")
        outputs = [run_cli(["sync"], env, tmp_path)]
        outputs.append(run_cli(["history", "--format", "json"], env, tmp_path))
        outputs.append(run_cli(["export", "--out", str(tmp_path / "ev")], env, tmp_path))
    finally:
        emu.stop()
    assert outputs[0][0] == 0, outputs[0]
    texts = [t for _, out, err in outputs for t in (out, err)]
    texts += [p.read_bytes().decode("utf-8", "replace") for p in tmp_path.rglob("*") if p.is_file()]
    assert any("svcRouterGuidance" in t for t in texts)
    leaks = [form for form in secret_forms(PW) for text in texts if form in text]
    assert not leaks, leaks


def test_an_evaluation_error_on_an_array_shows_it_redacted(tmp_path: Path) -> None:
    proposed = tmp_path / "proposed.json"
    hook = {"type": "command", "timeout": 5, "command": ["sshpass", "-p", PW, "ssh", "h"]}
    proposed.write_text(json.dumps({"hooks": {"SessionStart": [{"hooks": [hook]}]}}))
    live = tmp_path / "live.json"
    live.write_text('{"hooks": {}}')
    argv = ["review", str(proposed), "--against", str(live), "--out", str(tmp_path / "out")]
    _, out, err = run_cli([*argv, "-o", "html,md,json"], {}, tmp_path)
    assert "command is array" in err and "[secret fp:" in err
    texts = [out, err] + [p.read_text() for p in (tmp_path / "out").iterdir() if p.is_file()]
    assert not [t for t in texts if PW in t]


# Long strings built against the new readings (continuations, pipes, here-strings, `sudo`
# options): each is read in linear time, in a child process so that a hang fails, not stalls.
_HOSTILE = [
    "docker login -u ci -p \\\n  {pw} " * 5000,
    "x \\\n" * 30000 + " --password {pw}",
    "printf %s x | " * 30000 + "printf %s {pw} | docker login --password-stdin",
    "sudo -x " * 30000 + "; echo {pw} | sudo -S ls",
    "cat <<< " * 30000 + "; gh auth login --with-token <<< {pw}",
    "echo -n a:b | base64 | " * 20000 + "; echo -n ci:{pw} | base64",
]


@pytest.mark.parametrize("text", _HOSTILE, ids=lambda t: t.split()[0][:12])
def test_long_repetitive_shell_input_is_read_without_hanging(text: str) -> None:
    assert PW in secrets_found_in_a_child(text.format(pw=PW))


def test_an_attached_value_no_longer_a_password_is_what_a_fresh_walk_gives() -> None:
    """`-pab12c` after `mysql` is a password (too short to be remembered: its place alone makes
    it one); after `echo` it is not, and the stream's answer is a fresh walk's, not the marker
    its earlier answer held (the same revision stored the same, whatever was synced before)."""
    stream = Redactor(b"argv-test-key-3")
    stream.redact_json({"a": ["mysql", "-u", "root", "-pab12c", "db"]}, stream="s")
    later = {"a": ["echo", "-u", "root", "-pab12c", "db"]}
    assert stream.redact_json(later, stream="s") == Redactor(b"argv-test-key-3").redact_json(later)
    assert stream.redact_json(later, stream="s")["a"][3] == "-pab12c"


def test_the_trigger_words_answers_kept_are_the_ones_read_afresh(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`is_argv_trigger` keeps its answers for short words (a history's arrays hold the same
    words revision after revision): asked again, it gives what reading the word gives; a long
    word is not kept, nor any past the cap, so the memo stays small."""
    monkeypatch.setattr(commands, "_TRIGGERS", {})
    monkeypatch.setattr(commands, "_KEPT_WORDS", 6)
    words = ["sshpass", "/usr/bin/mysql", "--api-key", "-storepass", "login", "echo", "-u", "ls"]
    first = [commands.is_argv_trigger(w) for w in words]
    assert first == [True, True, True, True, True, False, False, False]
    assert [commands.is_argv_trigger(w) for w in words] == first
    assert first == [commands._is_trigger(w) for w in words]
    assert len(commands._TRIGGERS) == 6  # the cap
    long = "docker" + " " * commands._KEPT_WORD
    assert commands.is_argv_trigger(long) == commands._is_trigger(long)
    assert long not in commands._TRIGGERS
    redactor = Redactor(b"argv-test-key-4")
    again = redactor.redact_json(["sshpass", "-p", PW, "ssh", "host"])
    assert PW not in json.dumps(again) and again[0] == "sshpass"
