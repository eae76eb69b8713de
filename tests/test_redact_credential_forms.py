"""Well-known credential forms the command-line and text detectors missed (tester T61 #2): an
API key given as curl's user with an empty password (`curl -u KEY:`), `SSHPASS=X` and other
variables named for a password by a word of their own (`DB_PASS`, `SONAR_LOGIN`, `GH_PAT`), a netrc
entry's `password X`, the text of an XML element named for a secret (`<password>X</password>`),
a secret-named entry assigned in code (`os.environ['API_KEY']='X'`), a password in an address
written without a scheme (`ci:X@proxy:3128`) and a Bearer value after an escaped space
(`--header=Authorization:Bearer\\ X`). Each is hidden in a hook command, in free text, in a
list entry and in API data, through every output; ordinary text of the same shapes stays."""

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

PW = "Rb7nKq2WmX4pTz9L"  # a generated password of the README's shape (`Zq8hVd2LmX0pWk7T`)

# `{pw}` is the password; each form as a user writes it.
FORMS = [
    # an API key as curl's user, its password empty (Stripe's idiom)
    "curl -u {pw}: https://api.stripe.example/v1/charges",
    "curl --user {pw}: https://api.stripe.example/v1/charges",
    "curl --user={pw}: https://api.stripe.example/v1/charges",
    "curl -s -u{pw}: https://api.stripe.example/v1/charges",
    # variables named for a password by a word of their own
    "SSHPASS={pw} sshpass -e ssh deploy@host",
    "export SSHPASS={pw}",
    "export SSHPASS='{pw}'",
    "DB_PASS={pw} ./migrate.sh",
    "SONAR_LOGIN={pw} ./gradlew sonar",
    "TF_TOKEN_app_terraform_io={pw} terraform init",
    "GH_PAT={pw} gh api user",
    "export GOOGLE_CREDENTIALS='{pw}'",
    # netrc, on one line, with printf's escapes, and on lines of its own
    "echo 'machine api.acme.example login ci password {pw}' > ~/.netrc",
    "printf 'machine api.acme.example\\n  login ci\\n  password {pw}\\n' > ~/.netrc",
    "machine api.acme.example\nlogin ci\npassword {pw}\n",
    # XML elements named for a secret
    "echo '<server><id>r</id><password>{pw}</password></server>' > ~/.m2/settings.xml",
    '<Token type="pat">{pw}</Token>',
    "<apiKey>{pw}</apiKey>",
    "<SECRET>\n  {pw}\n</SECRET>",
    '<add key="x"/><ns:password>{pw}</ns:password>',
    # a secret-named entry assigned in code
    "python -c \"import os; os.environ['API_KEY']='{pw}'\"",
    'os.environ["X_TOKEN"] = "{pw}"',
    # a password in an address with no scheme
    "HTTPS_PROXY=ci:{pw}@proxy.acme.example:3128 ./sync.sh",
    "ci:{pw}@proxy.acme.example",
    "connect to ci:{pw}@10.0.0.7:3128 first",
    "DSN=app:{pw}@tcp(db:3306)/app ./serve",
    # a Bearer value after a space escaped for the shell
    "curl --header=Authorization:Bearer\\ {pw} https://api.acme.example",
]
# (the high-entropy detector takes these whole, the variable's name with the value)
WHOLE = {"DB_PASS={pw} ./migrate.sh", "SONAR_LOGIN={pw} ./gradlew sonar"}
WHOLE |= {"TF_TOKEN_app_terraform_io={pw} terraform init"}


@pytest.fixture
def redactor() -> Redactor:
    return Redactor(b"credential-forms-key")


def _placed(place: str, text: str) -> dict[str, Any]:
    if place == "hook":
        hook = {"type": "command", "command": text}
        return {"hooks": {"SessionStart": [{"matcher": "", "hooks": [hook]}]}}
    if place == "free text":
        return {"svcRouterGuidance": text}
    return {"sandbox": {"network": {"allowedDomains": ["github.com", text]}}}


@pytest.mark.parametrize("place", ["hook", "free text", "list entry"])
@pytest.mark.parametrize("form", FORMS)
def test_the_password_of_each_form_is_hidden_and_remembered(
    redactor: Redactor, form: str, place: str
) -> None:
    text = form.format(pw=PW)
    out = json.dumps(redactor.redact_json(_placed(place, text)))
    assert not [f for f in secret_forms(PW) if f in out], out
    if form not in WHOLE:  # the password alone is replaced, the rest stays readable
        assert out == json.dumps(_placed(place, form.format(pw=redactor.marker(PW))))
    # remembered: written alone later, it is hidden too
    assert redactor.redact_text(f"later {PW} here") == f"later {redactor.marker(PW)} here"


@pytest.mark.parametrize(
    "text",
    [
        "git clone git@github.com:acme/repo.git",
        "mail jane.doe@acme.example or mailto:jsmith1987@acme.example",
        "owner:jane.doe@acme.example reviewer:alice@acme.example",
        "ssh deploy@host.acme.example 'uptime'",
        "curl http://localhost:8080/health; nc proxy.acme.example 3128",
        "npm install lodash@npm:lodash@4.17.21",
        "docker pull nginx:1.25@sha256:" + "0123456789abcdef" * 4,
        "open icon:retina@2x.png at 10:30@home",
        "curl -u ci: https://api.acme.example/v1",  # a user's name with an empty password
        "curl -u deploy https://api.acme.example/v1",
        "ANSIBLE_ASK_PASS=true ansible-playbook site.yml",
        "fetch --credentials=include --with_pat=include https://api.acme.example",
        "the machine learning password reset page",
        "<key>CFBundleIdentifier</key><Key>photos/2006/x.jpg</Key>",
        "<passwordPolicy>strict-12</passwordPolicy><tokenUrl>https://id.acme.example</tokenUrl>",
        "<password>${MAVEN_PASSWORD}</password>",
        "os.environ['PATH'] = '/usr/local/bin'",
        "if os.environ['API_KEY'] == 'test': pass",
        "machine api.acme.example login ci password ${NETRC_PASSWORD}",
    ],
)
@pytest.mark.parametrize("place", ["hook", "free text", "list entry"])
def test_ordinary_text_of_the_same_shapes_stays_readable(
    redactor: Redactor, text: str, place: str
) -> None:
    doc = _placed(place, text)
    assert redactor.redact_json(doc) == doc
    assert not redactor.memory  # nothing remembered either (it would be scrubbed everywhere)


def test_a_variable_named_for_a_password_is_a_secret_key(redactor: Redactor) -> None:
    """`SSHPASS` and `SONAR_LOGIN` as keys: their value is hidden wherever the key is."""
    doc = {"customModels": [{"id": "m", "extraArgs": {"SSHPASS": PW, "sonar_login": PW + "x"}}]}
    args = redactor.redact_json(doc)["customModels"][0]["extraArgs"]
    assert is_marker(args["SSHPASS"]) and is_marker(args["sonar_login"])


# Long strings built against the new patterns, each read in linear time (about a second), in a
# child process so that a hang fails rather than stalls.
_HOSTILE = [
    "<password " * 60000 + " <password>{pw}</password>",
    "<token>" * 60000 + " <token>{pw}</token>",
    "machine h login u " * 30000 + " machine h login u password {pw}",
    "u:Kq2W@" * 60000 + " ci:{pw}@proxy.acme.example",
    "a:" * 200000 + "@x.example ci:{pw}@proxy.acme.example",
    "a_" * 200000 + "= DB_PASS={pw}",
    "curl -u a" * 50000 + " ; curl -u {pw}: https://x.example",
]


@pytest.mark.parametrize("text", _HOSTILE, ids=lambda t: t[:8])
def test_long_repetitive_look_alikes_are_read_without_hanging(text: str) -> None:
    assert PW in secrets_found_in_a_child(text.format(pw=PW))


def _all_outputs(tmp_path: Path, outputs: list[tuple[int, str, str]]) -> list[str]:
    texts = [t for _, out, err in outputs for t in (out, err)]
    files = [p for p in tmp_path.rglob("*") if p.is_file() and p.suffix != ".yaml"]
    return texts + [p.read_bytes().decode("utf-8", "replace") for p in files]


def _planted(forms: list[str]) -> tuple[list[str], list[str]]:
    """Each form with a password of its own: (the texts, the passwords)."""
    passwords = [f"Vd{n:02d}qLmWz8KtR5nLp" for n in range(len(forms))]
    return [f.format(pw=p) for f, p in zip(forms, passwords, strict=True)], passwords


@pytest.mark.e2e
def test_a_review_shows_none_of_these_passwords_in_any_output(tmp_path: Path) -> None:
    """A proposed settings file holding every form in a hook command, in free text and in
    `allowedDomains`: no output of `review` (stdout, stderr, the step summary, each report
    format, the state file) holds any password in any form."""
    import yaml

    live = {"env": {"LOG_LEVEL": "info"}, "sandbox": {"network": {"allowedDomains": []}}}
    texts, passwords = _planted(FORMS * 3)
    third = len(FORMS)
    hooks = [{"type": "command", "timeout": 5, "command": t} for t in texts[:third]]
    proposed = {
        "env": {"LOG_LEVEL": "info"},
        "hooks": {"SessionStart": [{"matcher": "", "hooks": hooks}]},
        "svcRouterGuidance": "\n".join(texts[third : 2 * third]),
        "sandbox": {"network": {"allowedDomains": ["github.com", *texts[2 * third :]]}},
    }
    (tmp_path / "live.yaml").write_text(yaml.safe_dump(live))
    (tmp_path / "proposed.yaml").write_text(yaml.safe_dump(proposed))
    env = {"GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md")}
    argv = ["review", str(tmp_path / "proposed.yaml"), "--against", str(tmp_path / "live.yaml")]
    argv += ["--offline", "--state", str(tmp_path / "state.db"), "--out", str(tmp_path / "out")]
    argv += ["-o", "html,md,json,sarif,junit"]
    result = run_cli(argv, env, tmp_path)
    assert result[0] in (0, 1), result
    written = {p.name for p in (tmp_path / "out").iterdir()}
    assert {"report.html", "report.md", "findings.json", "junit.xml"} <= written
    assert "[secret fp:" in (tmp_path / "out" / "report.md").read_text()
    outputs = _all_outputs(tmp_path, [result])
    leaks = [(p, f) for p in passwords for f in secret_forms(p) if any(f in t for t in outputs)]
    assert not leaks, leaks


@pytest.mark.e2e
def test_these_passwords_in_api_data_reach_no_output(tmp_path: Path) -> None:
    """The forms served by the API (a hook command, free text, an `allowedDomains` entry):
    no form of any password reaches the state file, `diff`, `history --format json`, a run's
    reports or the evidence bundle."""
    emu = start_emulator(tokens={OWNER_TOKEN: "owner"}, now=FIXED_NOW, revisions=6, repos=2)
    texts, passwords = _planted(FORMS * 3)
    third = len(FORMS)
    try:
        data = emu.dataset
        with data.lock:
            last = data.history[-1]
            settings = copy.deepcopy(last["settings"])
            hooks = [{"type": "command", "command": t, "timeout": 5} for t in texts[:third]]
            settings.setdefault("hooks", {})["Stop"] = [{"matcher": "", "hooks": hooks}]
            settings["svcRouterGuidance"] = "\n".join(texts[third : 2 * third])
            network = settings.setdefault("sandbox", {}).setdefault("network", {})
            network["allowedDomains"] = ["github.com", *texts[2 * third :]]
            data.history.append({**last, "revision": last["revision"] + 1, "settings": settings})
        env = emulator_env(emu, tmp_path / "state.db")
        outputs = [run_cli(["sync"], env, tmp_path)]
        outputs.append(run_cli(["diff", "--format", "json"], env, tmp_path))
        outputs.append(run_cli(["history", "--format", "json"], env, tmp_path))
        outputs.append(run_cli(["run", "--out", str(tmp_path / "run")], env, tmp_path))
        outputs.append(run_cli(["export", "--out", str(tmp_path / "bundle")], env, tmp_path))
    finally:
        emu.stop()
    assert outputs[0][0] == 0, outputs[0]
    assert "allowedDomains" in outputs[1][1] and "[secret fp:" in outputs[1][1]
    assert (tmp_path / "run" / "findings.json").exists()
    assert (tmp_path / "bundle" / "manifest.json").exists()
    found = _all_outputs(tmp_path, outputs)
    leaks = [(p, f) for p in passwords for f in secret_forms(p) if any(f in t for t in found)]
    assert not leaks, leaks
