"""Secrets by memory, in the forms a tester found missed (t17): base64 right after a `/`, `-`,
`_` or `+`; URL-encoded or JSON-escaped twice; a basic-auth URL's percent-encoded password;
a password inside a value hidden whole by meaning (`env`); `Basic X` written in a command. And
two values that must stay readable: `Bearer ${VAR}` under a header, a cookie `tz=Europe/Berlin`.
"""

from __future__ import annotations

import base64
import copy
import json
import urllib.parse
from pathlib import Path
from typing import Any

import pytest

from auditor.redact import Redactor
from tests.conftest import FIXED_NOW, emulator_env, run_cli

TOKEN = "tok-0123456789abcdef0123456789abcdef"
PW = "CLTT4185z+bcg=Q7"  # no detector sees it by its form: only memory does


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def _b64url(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def _q(text: str) -> str:
    return urllib.parse.quote(text, safe="")


def _taught(secret: str = PW) -> Redactor:
    r = Redactor(b"k" * 16, [TOKEN])
    r.redact_json({"customModels": [{"id": "m", "apiKey": secret}]})
    return r


def _text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


@pytest.mark.parametrize("prefix", ["u-", "u_", "u/", "u+", "https://host.example/acme/", "usr_"])
@pytest.mark.parametrize("encode", [_b64, _b64url])
def test_base64_after_a_separator_is_scrubbed(prefix: str, encode: Any) -> None:
    form = encode(PW)
    for r in (_taught(), _recalled()):
        out = r.redact_json(
            {"svcRouterGuidance": prefix + form, "userModelPolicies": {prefix + form: 1}}
        )
        assert form.rstrip("=") not in _text(out), (prefix, out)


def test_only_the_base64_after_a_prefix_is_its_marker() -> None:
    for r in (_taught(), _recalled()):
        for prefix in ("u-", "usr_"):
            out = r.redact_json({"svcRouterGuidance": prefix + _b64url(PW)})["svcRouterGuidance"]
            assert out.startswith(prefix + "[secret fp:") and out.endswith("]"), out


def _recalled() -> Redactor:
    """A redactor that knows PW only by its fingerprint (a later run, from the state file)."""
    r = Redactor(b"k" * 16, [TOKEN])
    r.memory.recall(_taught().memory.drain())
    return r


def test_base64_pieces_leave_ordinary_values_alone() -> None:
    r = _taught()
    values = {
        "repoUrl": "https://github.com/acme/ledger-terraform",
        "path": "/usr/local/share/auditor-policies/base-model",
        "other": "u-" + _b64("another-value-12"),
        "id": "usr_01HZX3K9Q8ABCDEF",
    }
    assert r.redact_json(values) == values


def test_url_encoded_twice_is_scrubbed() -> None:
    r = _taught()
    for text in (
        f"see {_q(_q(PW))}",
        f"see {_q(_q(PW)).lower()}",
        f"cb={_q('https://x/?pw=' + _q(PW))}",
    ):
        out = r.redact_json({"svcRouterGuidance": text})["svcRouterGuidance"]
        assert "CLTT4185z" not in out, out
    # the rest of the text stays readable
    assert r.redact_json({"svcRouterGuidance": f"see {_q(_q(PW))} ok"})[
        "svcRouterGuidance"
    ].startswith("see [secret")


def test_json_escaped_twice_is_scrubbed() -> None:
    for secret in ("YEXv3jsB9éqKdVHW", "GEXt1fVlt\\fw6U79", 'Qx7k"9LmPz2W'):
        r = _taught(secret)
        text = json.dumps(json.dumps({"k": secret}))
        out = r.redact_json({"user": {"name": f"bot {text}"}})
        assert secret[:9] not in _text(out), out


@pytest.mark.parametrize(
    ("teach", "echo"),
    [
        # 9: a basic-auth URL's password that needs percent-encoding
        (
            {"customModels": [{"id": "m", "baseUrl": "https://ci:Kp3%40Vd9qLmW2z@llm.example/v1"}]},
            "Kp3@Vd9qLmW2z",
        ),
        ({"env": {"DATABASE_URL": "postgres://app:Hq7%2BzLw2Px9@db/app"}}, "Hq7+zLw2Px9"),
        # 12: a password inside a value hidden whole by meaning
        (
            {"env": {"HTTPS_PROXY": "http://ci:NQBNP36227bfbwtb@proxy.acme.example:3128"}},
            "NQBNP36227bfbwtb",
        ),
        ({"env": {"DEPLOY_CMD": "deploy --password Hj5kLp9wQr2tXz"}}, "Hj5kLp9wQr2tXz"),
        # 7: `Basic X` written in a hook command or a text
        (
            {
                "hooks": {
                    "PreToolUse": [
                        {
                            "matcher": "",
                            "hooks": [
                                {
                                    "type": "command",
                                    "command": "curl -H 'Authorization: Basic "
                                    + _b64("ci:Rk4pZt8qWm")
                                    + "' https://x",
                                }
                            ],
                        }
                    ]
                }
            },
            "Rk4pZt8qWm",
        ),
        (
            {
                "customModels": [
                    {"id": "m", "displayName": "send Authorization: Basic " + _b64("ci:Rk4pZt8qWm")}
                ]
            },
            "Rk4pZt8qWm",
        ),
    ],
)
def test_the_password_inside_is_remembered(teach: dict[str, Any], echo: str) -> None:
    r = Redactor(b"k" * 16, [TOKEN])
    assert echo not in _text(r.redact_json(teach))
    out = r.redact_json({"svcRouterGuidance": f"pw {echo} ok"})["svcRouterGuidance"]
    assert out == f"pw {r.marker(echo)} ok"


def test_env_values_of_one_token_stay_hidden_whole() -> None:
    r = Redactor(b"k" * 16, [TOKEN])
    out = r.redact_json(
        {"env": {"PROXY": "http://proxy.acme.example:3128", "API_KEY": "Zx81mQ4pLw7tNs2v"}}
    )
    assert out["env"]["API_KEY"] == r.marker("Zx81mQ4pLw7tNs2v")
    # a word of an ordinary value hidden whole is not remembered on its own
    assert r.redact_json({"svcRouterGuidance": "proxy.acme.example:3128"}) == {
        "svcRouterGuidance": "proxy.acme.example:3128"
    }


@pytest.mark.parametrize(
    "header",
    [
        "Bearer ${LLM_TOKEN}",
        "Token $LLM_TOKEN",
        "Basic {env:LLM_AUTH}",
        "bearer ${{ secrets.LLM }}",
    ],
)
def test_a_scheme_and_a_reference_stay_as_written(header: str) -> None:
    r = Redactor(b"k" * 16, [TOKEN])
    doc = {"customModels": [{"id": "m", "extraHeaders": {"Authorization": header}}]}
    assert r.redact_json(doc) == doc


def test_a_scheme_and_a_literal_are_hidden() -> None:
    r = Redactor(b"k" * 16, [TOKEN])
    for header in ("Bearer Zx81mQ4pLw7tNs2v", "Bearer ${LLM_TOKEN} Zx81mQ4pLw7tNs2v"):
        out = r.redact_json(
            {"customModels": [{"id": "m", "extraHeaders": {"Authorization": header}}]}
        )
        assert out["customModels"][0]["extraHeaders"]["Authorization"].startswith("[secret fp:")


@pytest.mark.parametrize(
    "value",
    [
        "Bearer ${LLM_TOKEN-Zq8hVd2LmX0pP3}",
        "Token ${T:+Zq8hVd2LmX0pP4}",
        "Basic ${B-Y2k6WnE4aFZkMkxtWDBwUDU=}",
        "Bearer ${LLM_TOKEN:-Zq8hVd2LmX0pM1}",
        "Bearer ${LLM_TOKEN:=Zq8hVd2LmX0pM1}",
        "${LLM_TOKEN-Zq8hVd2LmX0pP6}",
        "${LLM_TOKEN:-Zq8hVd2LmX0pP6}",
    ],
)
def test_a_reference_with_a_literal_default_is_hidden_whole(value: str) -> None:
    """A shell default or alternative (`${VAR-X}`, `${VAR:+X}`) carries a literal credential:
    no reference, hidden whole (one marker, not `${VAR:[secret …]`) under a header, an `env`
    value and an `apiKey` (tester r11 #3)."""
    r = Redactor(b"k" * 16, [TOKEN])
    out = r.redact_json(
        {
            "customModels": [
                {"id": "m", "apiKey": value, "extraHeaders": {"Authorization": value}}
            ],
            "env": {"K": value},
        }
    )
    assert out["customModels"][0]["apiKey"] == r.marker(value)
    assert out["customModels"][0]["extraHeaders"]["Authorization"] == r.marker(value)
    assert out["env"]["K"] == r.marker(value)


@pytest.mark.parametrize(
    "value",
    [
        "${K}", "${K:-}", "${K:?unset}", "${K:-$OTHER}",
        "${OPENAI_API_KEY:-$FALLBACK_KEY}",  # (R13: read as a field `…KEY:` with a value)
        # an ordinary default is no credential (R13: `${PORT:-8080}` under `env` was hidden and
        # remembered, so a hook's `--port ${PORT:-8080}` read as a marker and failed BASE-HOK-003)
        "${PORT:-8080}", "${LOG_LEVEL:-info}", "${REGION=eu-central-1}",
        "${API_URL:-https://api.example.com/v1}",
    ],
)  # fmt: skip
def test_a_reference_without_a_literal_credential_stays(value: str) -> None:
    r = Redactor(b"k" * 16, [TOKEN])
    doc = {"customModels": [{"id": "m", "apiKey": value}], "env": {"K": value}}
    assert r.redact_json(doc) == doc
    hook = {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": f"run --x {value}"}]}]}}
    assert r.redact_json(hook) == hook


def test_a_percent_encoded_reference_in_a_url_is_not_remembered() -> None:
    """A URL password that decodes to a reference (`%24%7BVAR%7D`) does not teach `${VAR}`:
    a later `apiKey: ${VAR}` stays a reference (tester r11 #5)."""
    r = Redactor(b"k" * 16, [TOKEN])
    r.redact_json({"env": {"HTTPS_PROXY": "http://ci:%24%7BLLM_KEY%7D@proxy.corp:3128"}})
    r.redact_json({"customModels": [{"id": "m", "baseUrl": "https://ci:%24%7BLLM_KEY%7D@h/v1"}]})
    doc = {"customModels": [{"id": "m", "apiKey": "${LLM_KEY}"}], "note": "uses ${LLM_KEY}"}
    assert r.redact_json(doc) == doc


@pytest.mark.parametrize(
    "zone", ["Europe/Berlin", "America/Los_Angeles", "America/Argentina/Buenos_Aires"]
)
def test_a_time_zone_cookie_is_not_remembered(zone: str) -> None:
    """A time zone name is no credential, however long (`America/Los_Angeles`: r11 #11)."""
    r = Redactor(b"k" * 16, [TOKEN])
    r.redact_json(
        {
            "customModels": [
                {
                    "id": "m",
                    "extraHeaders": {"Cookie": f"session=Vb3nQw8xTy5u; theme=dark; tz={zone}"},
                }
            ]
        }
    )
    out = r.redact_json({"svcRouterGuidance": f"{zone} and Vb3nQw8xTy5u"})["svcRouterGuidance"]
    assert out == f"{zone} and {r.marker('Vb3nQw8xTy5u')}"


# -- end to end: the state file's bytes and `diff --format json` ------------------------------


def _echoes() -> list[tuple[str, Any, Any]]:
    """(secret, teach(settings), echo(settings)): each secret taught in one revision and
    written in another form in the next."""
    hook = {
        "type": "command",
        "command": "curl -H 'Authorization: Basic " + _b64("ci:Rk4pZt8qWm") + "' https://x",
    }
    return [
        (
            PW,
            lambda s: s["customModels"][0].__setitem__("apiKey", PW),
            lambda s: s["userModelPolicies"].__setitem__("u-" + _b64(PW), {"x": 1}),
        ),
        (
            PW,
            lambda s: None,
            lambda s: s.__setitem__(
                "svcRouterGuidance",
                "see https://host.example/acme/" + _b64url(PW) + " and " + _q(_q(PW)),
            ),
        ),
        (
            "Kp3@Vd9qLmW2z",
            lambda s: s["customModels"][0].__setitem__(
                "baseUrl", "https://ci:Kp3%40Vd9qLmW2z@llm.example/v1"
            ),
            lambda s: s["commandAllowlist"].append("login Kp3@Vd9qLmW2z"),
        ),
        (
            "NQBNP36227bfbwtb",
            lambda s: s["env"].__setitem__(
                "HTTPS_PROXY", "http://ci:NQBNP36227bfbwtb@proxy.acme.example:3128"
            ),
            lambda s: s["commandAllowlist"].append("proxy NQBNP36227bfbwtb"),
        ),
        (
            "Hj5kLp9wQr2tXz",
            lambda s: s["env"].__setitem__("DEPLOY_CMD", "deploy --password Hj5kLp9wQr2tXz"),
            lambda s: s["commandAllowlist"].append("pw Hj5kLp9wQr2tXz"),
        ),
        (
            "Rk4pZt8qWm",
            lambda s: s["hooks"]["PreToolUse"][0]["hooks"].append(hook),
            lambda s: s["commandAllowlist"].append("basic Rk4pZt8qWm"),
        ),
    ]


def _forms(secret: str) -> set[str]:
    return {
        secret,
        _q(secret),
        _q(_q(secret)),
        _b64(secret).rstrip("="),
        _b64url(secret),
        json.dumps(secret)[1:-1],
    }


@pytest.mark.e2e
def test_sync_scrubs_the_forms_from_the_state_file_and_diff(tmp_path: Path) -> None:
    from auditor.emulator import start_emulator

    with start_emulator(tokens={TOKEN: "owner"}, now=FIXED_NOW, revisions=12, repos=2) as emu:
        env = emulator_env(emu, tmp_path / "state.db", TOKEN)
        history = emu.dataset.history
        for step in (0, 1):  # teach, then echo (the apiKey rotated to a reference)
            settings = copy.deepcopy(history[-1]["settings"])
            for _secret, teach, echo in _echoes():
                (teach, echo)[step](settings)
            if step:
                settings["customModels"][0]["apiKey"] = "${ROTATED}"
            last = history[-1]
            history.append({**last, "revision": last["revision"] + 1, "settings": settings})
            assert run_cli(["sync"], env, tmp_path)[0] == 0
        code, diff, _err = run_cli(["diff", "--format", "json"], env, tmp_path)
    assert code == 0 and "[secret fp:" in diff
    stored = (tmp_path / "state.db").read_bytes().decode("utf-8", "replace")
    for secret, _teach, _echo in _echoes():
        for form in _forms(secret):
            assert form not in diff, (secret, form)
            assert form not in stored, (secret, form)


@pytest.mark.e2e
def test_rows_stored_before_the_secret_was_learned_are_scrubbed(tmp_path: Path) -> None:
    from auditor.emulator import start_emulator

    secret, other = "SDKFgtLiV&Rnl7Yo", "YEXv3jsB9éqKdVHW"
    with start_emulator(tokens={TOKEN: "owner"}, now=FIXED_NOW, revisions=12, repos=2) as emu:
        env = emulator_env(emu, tmp_path / "state.db", TOKEN)
        data = emu.dataset
        report = copy.deepcopy(data.reports[-1])
        report["repoUrl"] = f"https://github.com/acme/{_b64url(secret)}"
        report["reportId"] = "11111111-2222-4333-8444-555555555555"
        report["createdAt"] += 1000
        data.reports.append(report)
        last = data.history[-1]
        user = {
            **last["user"],
            "id": f"usr_{_b64url(secret)}",
            "name": f"bot {json.dumps(json.dumps({'k': other}))}",
        }
        data.history.append({**last, "revision": last["revision"] + 1, "user": user})
        assert run_cli(["sync"], env, tmp_path)[0] == 0
        settings = copy.deepcopy(data.history[-1]["settings"])
        settings["customModels"][0]["apiKey"] = secret
        settings["customModels"][1 % len(settings["customModels"])]["extraHeaders"] = {
            "X-Api-Key": other
        }
        data.history.append(
            {**data.history[-1], "revision": last["revision"] + 2, "settings": settings}
        )
        assert run_cli(["sync"], env, tmp_path)[0] == 0
        code, shown, _err = run_cli(["history", "--format", "json"], env, tmp_path)
    assert code == 0
    stored = (tmp_path / "state.db").read_bytes().decode("utf-8", "replace")
    for form in (_b64url(secret), "YEXv3jsB9"):
        assert form not in stored, _where_held(tmp_path / "state.db", form)
        assert form not in shown, "in `history --format json`'s output"


def _where_held(path: Path, form: str) -> str:
    """Where in the state file `form` is: each table and column of a row holding it, or that
    no row does (then it is in bytes SQLite left behind), for a failure to say."""
    import sqlite3

    found = []
    with sqlite3.connect(path) as db:
        tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        for table in tables:
            columns = [r[1] for r in db.execute(f'PRAGMA table_info("{table}")')]
            for row in db.execute(f'SELECT * FROM "{table}"'):
                for column, value in zip(columns, row, strict=True):
                    text = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
                    if isinstance(text, str) and form in text:
                        at = text.index(form)
                        found.append(f"{table}.{column}: ...{text[max(0, at - 80) : at + 40]!r}")
    return "; ".join(found) or "in no row: in free space of the file"


@pytest.mark.e2e
@pytest.mark.parametrize(
    ("header", "status"),
    [
        ("Bearer ${LLM_TOKEN}", "pass"),
        ("Bearer Zx81mQ4pLw7tNs2vQ", "fail"),
        ("Bearer ${LLM_TOKEN-Kp3Vd9qLmW2zQx}", "fail"),  # the default is a literal credential
    ],
)
def test_review_passes_a_bearer_reference_header(tmp_path: Path, header: str, status: str) -> None:
    import yaml

    live = Path(__file__).resolve().parent.parent / "examples" / "live-settings.yaml"
    proposed = yaml.safe_load(live.read_text())
    proposed["customModels"] = [
        {
            "id": "custom:gw",
            "model": "gpt-4o",
            "provider": "openai",
            "baseUrl": "https://llm.example/v1",
            "apiKey": "${LLM_KEY}",
            "displayName": "gw",
            "extraHeaders": {"Authorization": header},
        }
    ]
    out = tmp_path / "out"
    assert _reviewed(tmp_path, proposed, live, "BASE-MOD-008") == [status]
    for written in out.iterdir():  # no report holds the literal a reference's default carries
        assert "Kp3Vd9qLmW2zQx" not in written.read_text(errors="replace"), written.name


@pytest.mark.e2e
@pytest.mark.parametrize(
    ("key", "status"), [("${LLM_KEY}", "pass"), ("${LLM_KEY-Kp3Vd9qLmW2zQ}", "fail")]
)
def test_review_fails_a_key_reference_with_a_literal_default(
    tmp_path: Path, key: str, status: str
) -> None:
    import yaml

    live = Path(__file__).resolve().parent.parent / "examples" / "live-settings.yaml"
    proposed = yaml.safe_load(live.read_text())
    proposed["customModels"] = [
        {"id": "custom:gw", "model": "gpt-4o", "baseUrl": "https://llm.example/v1", "apiKey": key}
    ]
    assert _reviewed(tmp_path, proposed, live, "BASE-MOD-003") == [status]


def _reviewed(tmp_path: Path, proposed: Any, live: Path, rule: str) -> list[str]:
    """`auditor review` of `proposed` against `live`, into `tmp_path/out`: the statuses of
    `rule`'s results."""
    (tmp_path / "proposed.json").write_text(json.dumps(proposed))
    env = {"AUDITOR_FINGERPRINT_KEY": "0123456789abcdef01"}
    out = tmp_path / "out"
    argv = ["review", str(tmp_path / "proposed.json"), "--against", str(live), "--out", str(out)]
    run_cli(argv, env, tmp_path)
    findings = json.loads((out / "findings.json").read_text())["findings"]
    return [f["status"] for f in findings if f["rule_id"] == rule]


# -- time: a password glued after `-p`, repeated (tester r11 #8) -------------------------------


@pytest.mark.parametrize("unit", ["docker login -p", "mysql -pdocker1-"])
def test_a_repeated_glued_password_is_redacted_in_linear_time(unit: str) -> None:
    """1 MB of `docker login -p` repeated makes thousands of secrets each shown as a marker
    joined to more text; checking that none learned later overlaps one took time quadratic in
    the string (200 KB: 13-19 s, 400 KB: 40 s, so 1 MB minutes; linear, a few seconds). In a
    child process, so that such a stall fails after 60 s instead of stalling the suite; its
    result is checked, not its time."""
    import subprocess
    import sys

    code = (
        "import sys, json; from auditor.redact import Redactor; "
        "unit = sys.stdin.read(); s = (unit * (1_000_000 // len(unit) + 1))[:1_000_000]; "
        "print(json.dumps(Redactor(b'k' * 32).redact_json({'note': s})))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], input=unit, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    note = json.loads(done.stdout)["note"]
    assert "[secret fp:" in note  # the passwords glued after `-p` are hidden
    assert note.count("[secret fp:") > 60_000, note[:200]  # (62,500 and 66,667 passwords)
