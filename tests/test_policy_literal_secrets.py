"""A leaked key a rule checks for, written in a policy in no detector's form: a literal
compared with a value secret by its place (`apiKey not_in [OLD]`, `env.X not_equals OLD`, a
change's `after` where its `path` names an `env` value or an `apiKey`) is its marker in that
rule's own texts (its arguments as shown, `default:`, title, description, remediation), in
the bundle's copy of the file that holds the rule and in `policy test`'s line about the rule,
so it reaches no output of `run`, `review` (online, offline, `--against FILE`) or `export`, in
any form; it is learned by nothing (not the state file's memory, not the run's redactor), so a
path, a selector, an enum, an id and every other rule stay as written and no verdict changes;
and an ordinary literal (`true`, `production`, `${VAR}`, a key's prefix) stays as written."""

from __future__ import annotations

import base64
import json
import re
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from auditor.policy.loader import load_policies
from auditor.policy.redacted import secret_literals
from tests.conftest import FIXED_NOW, OWNER_TOKEN, emulator_env, run_cli, secret_forms

# No detector's form: only their place can hide them.
OLD_KEY = "orange-leaked-battery-424242-staple"
OLD_PHRASE = "Zq8hVd2LmX0pRt7Yw3Ns"
OLD_PROXY = "Kp3xVd9qLmW2zTr8Hq"
OLD_TO = "Wd4Rt8Lm2Qz9Xp3Vbn"
SECRETS = (OLD_KEY, OLD_PHRASE, OLD_PROXY, OLD_TO)

POLICY = f"""rules:
  - id: LK-1
    title: the leaked gateway key is not in use
    severity: critical
    target: settings
    assert: {{each: customModels, assert: {{path: apiKey, not_in: ["{OLD_KEY}"]}}}}
  - id: LK-2
    title: the deploy phrase is not the leaked one
    severity: critical
    target: settings
    on_missing: pass
    assert: {{path: env.DEPLOY_PHRASE, not_equals: "{OLD_PHRASE}"}}
  - id: LK-3
    title: the proxy is the rotated one
    severity: high
    target: settings
    assert: {{path: env.HTTPS_PROXY, equals: "{OLD_PROXY}"}}
  - id: LK-4
    title: no step sets the proxy to the leaked one
    severity: high
    target: change
    assert:
      none: changes
      assert:
        all:
          - {{path: path, equals: "$.env.HTTPS_PROXY"}}
          - {{path: after, equals: "{OLD_TO}"}}
"""

_PLAIN = ("production", "true", "us-east-1", "${LLM_PROXY_URL}", "")
ORDINARY = "rules:\n" + "".join(
    f"  - id: OK-{n}\n    title: t\n    severity: low\n    target: settings\n"
    f"    assert: {{path: env.HTTPS_PROXY, equals: {json.dumps(text)}}}\n"
    for n, text in enumerate(_PLAIN)
)


def _forms(secret: str) -> list[str]:
    """`secret_forms`, and base64 at every alignment, hex and either case."""
    forms = [*secret_forms(secret), secret.lower(), secret.upper(), secret.encode().hex()]
    for lead in (b"a", b"ab"):
        encoded = base64.b64encode(lead + secret.encode()).decode()
        forms.append(encoded[4:-4])
    return forms


def _leaks(folder: Path, *streams: str) -> dict[str, list[str]]:
    """Each secret and the outputs (files under `folder`, streams) holding it in any form."""
    texts = {str(p): p.read_bytes().decode("utf-8", "replace") for p in _files(folder)}
    texts.update({f"stream {n}": s for n, s in enumerate(streams)})
    found: dict[str, list[str]] = {}
    for secret in SECRETS:
        for name, text in texts.items():
            if any(form in text for form in _forms(secret)):
                found.setdefault(secret, []).append(name)
    return found


def _files(folder: Path) -> Iterator[Path]:
    return (p for p in sorted(folder.rglob("*")) if p.is_file() and p.suffix != ".pdf")


@pytest.fixture(scope="module")
def emu() -> Iterator[Any]:
    from auditor.emulator import start_emulator

    with start_emulator(tokens={OWNER_TOKEN: "owner"}, now=FIXED_NOW, revisions=6, repos=1) as e:
        yield e


def _policy(tmp_path: Path) -> Path:
    folder = tmp_path / "pol"
    folder.mkdir()
    (folder / "leaked.yaml").write_text(POLICY)
    return folder


def test_a_leaked_key_a_rule_checks_for_reaches_no_output_of_a_review_against_a_file(
    tmp_path: Path,
) -> None:
    pol = _policy(tmp_path)
    model = {"id": "gw", "model": "m", "provider": "openai", "apiKey": "Yh6Tr3Kw9Bm2Qx7Lp4Vz"}
    proposed = {"customModels": [model], "env": {"HTTPS_PROXY": "Nm5Bv8Cx2Zl4Kj7Hg"}}
    (tmp_path / "proposed.json").write_text(json.dumps(proposed))
    (tmp_path / "live.json").write_text("{}")
    argv = ["review", str(tmp_path / "proposed.json"), "--against", str(tmp_path / "live.json")]
    argv += [
        "--policy",
        str(pol),
        "--author",
        "a@b.example",
        "--out",
        str(tmp_path / "out"),
        "-o",
        "html,md,json,sarif,junit,oscal",
    ]
    code, out, err = run_cli(argv, env={}, cwd=tmp_path)
    assert code in (0, 1), err  # LK-3 fails (on the live file too): its literal is in the message
    assert _leaks(tmp_path / "out", out, err) == {}
    data = json.loads((tmp_path / "out" / "findings.json").read_text())
    lk3 = next(f for f in data["findings"] if f["rule_id"] == "LK-3")
    assert lk3["status"] == "fail"
    assert 'expected "[secret fp:' in lk3["message"], lk3["message"]


def test_the_literal_is_the_marker_the_settings_value_has_when_they_are_equal(
    tmp_path: Path,
) -> None:
    """The rule still judges by fingerprint: the key in use fails LK-1, and the literal and the
    value read as one marker."""
    pol = _policy(tmp_path)
    model = {"id": "gw", "model": "m", "provider": "openai", "apiKey": OLD_KEY}
    (tmp_path / "proposed.json").write_text(json.dumps({"customModels": [model]}))
    (tmp_path / "live.json").write_text("{}")
    argv = ["review", str(tmp_path / "proposed.json"), "--against", str(tmp_path / "live.json")]
    argv += [
        "--policy",
        str(pol),
        "--author",
        "a@b.example",
        "--out",
        str(tmp_path / "out"),
        "-o",
        "json,md,sarif",
    ]
    code, out, err = run_cli(argv, env={}, cwd=tmp_path)
    assert code == 1, err
    assert _leaks(tmp_path / "out", out, err) == {}
    data = json.loads((tmp_path / "out" / "findings.json").read_text())
    lk1 = next(f for f in data["findings"] if f["rule_id"] == "LK-1")
    assert lk1["status"] == "fail"
    markers = set(re.findall(r"\[secret fp:[0-9a-f]{8} len:35\]", lk1["message"]))
    assert len(markers) == 1, lk1["message"]


def _secret_memory(state: Path) -> set[str]:
    with closing(sqlite3.connect(state)) as db:  # `with` alone commits, never closes
        return {str(fp) for (fp,) in db.execute("SELECT fingerprint FROM secret_memory")}


def _memory_fingerprints(state: Path) -> set[str]:
    """The fingerprints of the secrets under the state file's key."""
    from auditor.store import Store

    with Store.open(state) as store:
        return {store.redactor.memory.fingerprint(s) for s in SECRETS}


def test_run_review_and_export_hide_the_literal_and_keep_it_out_of_the_state_file(
    emu: Any, tmp_path: Path
) -> None:
    pol = _policy(tmp_path)
    state = tmp_path / "state.db"
    env = emulator_env(emu, state)
    argv = ["run", "--policy", str(pol), "--no-usage", "--out", str(tmp_path / "run")]
    code, out, err = run_cli([*argv, "-o", "html,md,json,sarif,junit,oscal"], env=env, cwd=tmp_path)
    assert code == 1, err  # LK-3 fails on the emulator's proxy
    outputs = [(tmp_path / "run", out, err)]
    data = json.loads((tmp_path / "run" / "findings.json").read_text())
    assert {f["rule_id"]: f["status"] for f in data["findings"]}["LK-3"] == "fail"
    live = emu.dataset.history[-1]["settings"]
    (tmp_path / "proposed.json").write_text(json.dumps(live))
    for extra in ([], ["--offline"]):
        folder = f"review{len(extra)}"
        argv = ["review", str(tmp_path / "proposed.json"), "--policy", str(pol)]
        argv += [
            "--author",
            "a@b.example",
            *extra,
            "--out",
            str(tmp_path / folder),
            "-o",
            "html,md,json,sarif,junit,oscal",
        ]
        code, out, err = run_cli(argv, env=env, cwd=tmp_path)
        assert code in (0, 1), err
        outputs.append((tmp_path / folder, out, err))
    code, out, err = run_cli(
        ["export", "--policy", str(pol), "--out", str(tmp_path / "ev")], env=env, cwd=tmp_path
    )
    assert code == 0, err
    outputs.append((tmp_path / "ev", out, err))
    copy = (tmp_path / "ev" / "inputs" / "policies" / "001-leaked.yaml").read_text()
    assert copy.count("[secret fp:") == 4, copy
    code, out, err = run_cli(["verify", str(tmp_path / "ev")], env=env, cwd=tmp_path)
    assert code == 0, out + err
    outputs.append((tmp_path / "ev", out, err))
    for folder, out, err in outputs:
        assert _leaks(folder, out, err) == {}, folder
    # learned for the run only: nothing of them in the state file's memory
    assert _secret_memory(state) & _memory_fingerprints(state) == set()


def test_ordinary_literals_at_secret_places_stay_as_written(tmp_path: Path) -> None:
    folder = tmp_path / "pol"
    folder.mkdir()
    (folder / "ok.yaml").write_text(ORDINARY)
    model = {"id": "gw", "model": "m", "provider": "openai", "apiKey": "Yh6Tr3Kw9Bm2Qx7Lp4Vz"}
    proposed = {"customModels": [model], "env": {"HTTPS_PROXY": "Nm5Bv8Cx2Zl4Kj7Hg"}}
    (tmp_path / "proposed.json").write_text(json.dumps(proposed))
    (tmp_path / "live.json").write_text("{}")
    argv = ["review", str(tmp_path / "proposed.json"), "--against", str(tmp_path / "live.json")]
    argv += [
        "--policy",
        str(folder),
        "--author",
        "a@b.example",
        "--out",
        str(tmp_path / "out"),
        "-o",
        "json",
    ]
    code, _out, err = run_cli(argv, env={}, cwd=tmp_path)
    assert code in (0, 1), err  # each fails, on the live file too (absent there)
    findings = json.loads((tmp_path / "out" / "findings.json").read_text())["findings"]
    messages = {f["rule_id"]: f["message"] for f in findings}
    for n, text in enumerate(_PLAIN):
        assert messages[f"OK-{n}"].endswith(f"expected {json.dumps(text)}"), messages


def test_what_the_redactor_takes_as_a_secret_literal() -> None:
    """Only what may be a credential (`credential_like`), no reference, no marker's text; a
    part of a value (a prefix) from 16 characters on. Hiding one learns nothing: the
    redactor's memory stays empty (it was learned before, and then hid paths and selectors)."""
    from auditor.redact.redactor import Redactor, compared_secret

    for text in ("", "true", "production", "us-east-1", "${LLM_TOKEN}", "YOUR_API_KEY"):
        assert not compared_secret(text), text
    assert not compared_secret("[secret fp:12345678 len:40]")
    assert not compared_secret("[secret fp:", True)
    assert not compared_secret("sk-live-", True)
    assert compared_secret("sk-live-", False)
    assert compared_secret(OLD_KEY, True)
    redactor = Redactor(b"k" * 32)
    hide = redactor.literals_hidden([OLD_KEY])
    assert hide is not None
    assert hide(f"x {OLD_KEY} y") == f"x {redactor.marker(OLD_KEY)} y"
    assert redactor.scrub_known(f"x {OLD_KEY} y") == f"x {OLD_KEY} y"
    assert redactor.memory.learned == 0
    assert redactor.literals_hidden(["abc"]) is None  # shorter than any secret kept


def _literals(tmp_path: Path, assertion: str, target: str = "settings") -> list[tuple[str, bool]]:
    (tmp_path / "p.yaml").write_text(
        f"rules:\n  - id: X-1\n    title: t\n    severity: low\n    target: {target}\n"
        f"    assert: {assertion}\n"
    )
    return secret_literals(load_policies([tmp_path / "p.yaml"]).rules[0])


@pytest.mark.parametrize(
    ("assertion", "target", "expected"),
    [
        ("{path: apiKey, equals: K}", "settings", [("K", False)]),
        ("{path: baseUrl, equals: K}", "settings", []),
        ("{path: env.X, in: [A, B]}", "settings", [("A", False), ("B", False)]),
        ("{path: env, equals: {X: A}}", "settings", [("A", False)]),
        ("{path: extraHeaders.Authorization, starts_with: K}", "settings", [("K", True)]),
        ("{path: hosted.cloudCredentialExport, not_equals: K}", "settings", [("K", False)]),
        ("{path: hosted.cloudRegion, not_equals: K}", "settings", []),
        (
            "{some: customModels, assert: {path: apiKey, matches: '^K\\.1$'}}",
            "settings",
            [("K.1", False)],
        ),
        ("{some: customModels, assert: {path: apiKey, matches: 'K[0-9]+'}}", "settings", []),
        (
            "{path: 'customModels[id=gw].apiKey', not_equals: K, default: D}",
            "settings",
            [("K", False), ("D", False)],
        ),
        ("{path: apiKey, equals: {ref: other}}", "settings", []),
        ("{path: env.X, to: K}", "change", [("K", False)]),
        ("{path: after.env.X, equals: K}", "change", [("K", False)]),
        (
            "{none: changes, assert: {all: [{path: path, equals: '$.env.X'}, "
            "{path: after, equals: K}]}}",
            "change",
            [("K", False)],
        ),
        (
            "{none: changes, assert: {all: [{path: path, equals: '$.sandbox.enabled'}, "
            "{path: after, equals: K}]}}",
            "change",
            [],
        ),
        (
            "{none: \"changes[path='$.env.X']\", assert: {path: before, equals: K}}",
            "change",
            [("K", False)],
        ),
        (
            "{none: changes, assert: {all: [{path: path, ends_with: .apiKey}, "
            "{path: after, equals: K}]}}",
            "change",
            [("K", False)],
        ),
        (
            '{none: changes, assert: {all: [{path: path, ends_with: "\'].apiKey"}, '
            "{path: after, equals: K}]}}",
            "change",
            [("K", False)],
        ),
        (
            "{none: changes, assert: {all: [{path: path, ends_with: .env.X}, "
            "{path: after, equals: K}]}}",
            "change",
            [("K", False)],
        ),
        (
            "{none: changes, assert: {all: [{path: path, ends_with: .enabled}, "
            "{path: after, equals: K}]}}",
            "change",
            [],
        ),
        (
            "{none: changes, assert: {all: [{path: path, matches: '^\\$\\.env\\.X$'}, "
            "{path: after, equals: K}]}}",
            "change",
            [("K", False)],
        ),
        (
            "{none: changes, assert: {all: [{path: path, not_matches: '\\.apiKey$'}, "
            "{path: after, equals: K}]}}",
            "change",
            [("K", False)],
        ),
        (
            "{none: changes, assert: {all: [{path: path, matches: '^\\$\\.model$'}, "
            "{path: after, equals: K}]}}",
            "change",
            [],
        ),
        (
            "{none: changes, assert: {all: [{path: path, matches: '^\\$\\.env\\.[A-Z]+$'}, "
            "{path: after, equals: K}]}}",
            "change",
            [],
        ),
        # R22 #2: a leaf reading a change chosen by its `[path=…]` selector
        ("{path: 'changes[path=$.env.X].after', not_equals: K}", "change", [("K", False)]),
        (
            "{path: 'changes[kind=changed][path=$.env.X].before', equals: K}",
            "change",
            [("K", False)],
        ),
        ("{path: 'changes[path=$.model].after', equals: K}", "change", []),
        # R22 #3: an alternation of plain texts, the marker alternative lint advises too
        (
            "{path: env.X, not_matches: '^K1$|^\\[secret '}",
            "settings",
            [("K1", False), ("[secret ", True)],
        ),
        ("{path: env.X, matches: '^A$|^B'}", "settings", [("A", False), ("B", True)]),
        ("{path: env.X, matches: '^A$|B[0-9]'}", "settings", []),
    ],
)
def test_which_literals_sit_at_a_secret_place(
    tmp_path: Path, assertion: str, target: str, expected: list[tuple[str, bool]]
) -> None:
    assert _literals(tmp_path, assertion, target) == expected


def test_a_redacted_literal_under_changes_keeps_comparing_loosely(tmp_path: Path) -> None:
    """A change's `after` holds values of every type (`loose`): a leaf whose literal the
    redactor hid (a `ghp_…` key) compares an object `after` as unequal, as before it was
    hidden, not as an `error` (the redacted leaf lost `loose`: the rule was never judged)."""
    key = "ghp_Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56Qr78"
    (tmp_path / "p.yaml").write_text(
        "rules:\n  - id: C-1\n    title: t\n    severity: high\n    target: change\n"
        "    assert:\n      none: changes\n      assert:\n        all:\n"
        "          - {path: path, equals: '$.env.TOKEN'}\n"
        f"          - {{path: after, equals: '{key}'}}\n"
    )
    (tmp_path / "live.json").write_text("{}")
    (tmp_path / "proposed.json").write_text(json.dumps({"env": {"TOKEN": "Nm5Bv8Cx2Zl4Kj7Hg"}}))
    argv = ["review", str(tmp_path / "proposed.json"), "--against", str(tmp_path / "live.json")]
    argv += ["--policy", str(tmp_path / "p.yaml"), "--author", "a@b.example"]
    argv += ["--out", str(tmp_path / "out"), "-o", "json"]
    code, _out, err = run_cli(argv, env={}, cwd=tmp_path)
    assert code == 0, err
    findings = json.loads((tmp_path / "out" / "findings.json").read_text())["findings"]
    assert [f["status"] for f in findings] == ["pass"]
    assert key not in json.dumps(findings)


def test_policy_test_hides_the_literal_though_no_case_holds_it(tmp_path: Path) -> None:
    """`auditor policy test` printed the leaked key in clear (`expected "orange-leaked-…"`)
    when no case's settings held it: the case's data was the only thing its messages were
    redacted by."""
    (tmp_path / "p.yaml").write_text(POLICY)
    case = {
        "name": "another key",
        "settings": {
            "env": {
                "DEPLOY_PHRASE": "plum-other-value-9911-kettle",
                "HTTPS_PROXY": "plum-proxy-value-1177-kettle",
            }
        },
        "expect": {"LK-2": "fail", "LK-3": "pass"},
    }
    (tmp_path / "p.tests.yaml").write_text(json.dumps({"tests": [case]}))
    code, out, err = run_cli(["policy", "test", "p.yaml"], {}, tmp_path)
    assert code == 1, out + err
    assert "LK-2: expected fail, got pass" in out and "LK-3: expected pass, got" in out, out
    assert "[secret fp:" in out
    for secret in (OLD_PHRASE, OLD_PROXY):
        assert not [form for form in secret_forms(secret) if form in out + err], out


# R20 #1, #2: model ids compared with an `env` value pass the credential filter. Learned as
# secrets, they hid a selector (the rule then matched nothing and passed), other rules' titles
# and an enum's level (the policy was refused).
MODEL_SETTINGS = {
    "sessionDefaultSettings": {"model": "claude-sonnet-4-5"},
    "customModels": [
        {
            "id": "custom:local-llama",
            "model": "meta-llama/Llama-3.3-70B-Instruct",
            "useInRouter": True,
        }
    ],
    "env": {"HTTPS_PROXY": "http://proxy.acme.example:3128"},
}
LLAMA = "meta-llama/Llama-3.3-70B-Instruct"
TEAM = f"""rules:
  - id: ENV-LOCAL
    title: LOCAL_MODEL, when set, is the pool's llama
    severity: low
    target: settings
    on_missing: pass
    assert: {{path: env.LOCAL_MODEL, equals: {LLAMA}}}
  - id: DEFAULT-MODEL
    title: the default model is claude-sonnet-4-5
    severity: medium
    target: settings
    assert: {{path: sessionDefaultSettings.model, equals: claude-sonnet-4-5}}
  - id: ENV-MODEL
    title: ANTHROPIC_MODEL, when set, is claude-sonnet-4-5
    severity: low
    target: settings
    on_missing: pass
    assert: {{path: env.ANTHROPIC_MODEL, equals: claude-sonnet-4-5}}
  - id: LLAMA-ROUTER
    title: the local llama stays out of the router
    severity: high
    target: settings
    on_missing: pass
    assert: {{path: "customModels[model={LLAMA}].useInRouter", equals: false}}
"""
ENV_MODEL = """rules:
  - id: ENV-MODEL
    title: ANTHROPIC_MODEL, when set, is the sonnet
    severity: low
    target: settings
    on_missing: pass
    assert: {path: env.ANTHROPIC_MODEL, equals: claude-sonnet-4-5}
"""
TIER = """enums:
  modeltier: [claude-haiku-4-5, claude-sonnet-4-5, claude-opus-4-1]
rules:
  - id: TIER
    title: the default model is at most claude-sonnet-4-5
    severity: medium
    target: settings
    assert:
      path: sessionDefaultSettings.model
      at_most: {enum: modeltier, value: claude-sonnet-4-5}
"""


def _review(
    tmp_path: Path, policy: Path, proposed: Any, live: Any, formats: str
) -> tuple[int, str, str]:
    (tmp_path / "proposed.json").write_text(json.dumps(proposed))
    (tmp_path / "live.json").write_text(json.dumps(live))
    argv = ["review", str(tmp_path / "proposed.json"), "--against", str(tmp_path / "live.json")]
    argv += ["--policy", str(policy), "--author", "a@b.example"]
    argv += ["--out", str(tmp_path / "out"), "-o", formats]
    return run_cli(argv, env={}, cwd=tmp_path)


def _findings(folder: Path) -> dict[str, dict[str, Any]]:
    data = json.loads((folder / "findings.json").read_text())
    return {f["rule_id"]: f for f in data["findings"]}


def test_a_literal_compared_with_an_env_value_hides_no_selector_and_no_other_rule(
    tmp_path: Path,
) -> None:
    """R20 #1: `review --against` gave exit 0, LLAMA-ROUTER passing on
    `customModels[?model=='[secret fp:…]']… is absent`, and `the default model is [secret …]`."""
    (tmp_path / "team.yaml").write_text(TEAM)
    live = json.loads(json.dumps(MODEL_SETTINGS))
    live["customModels"][0]["useInRouter"] = False
    code, out, err = _review(tmp_path, tmp_path / "team.yaml", MODEL_SETTINGS, live, "json,md")
    assert code == 1, out + err  # as at bc07728: LLAMA-ROUTER is introduced
    found = _findings(tmp_path / "out")
    router = found["LLAMA-ROUTER"]
    assert router["status"] == "fail", router
    assert router["message"] == (
        f"customModels[?model=='{LLAMA}'].useInRouter is true; expected false"
    ), router
    assert found["DEFAULT-MODEL"]["status"] == "pass"
    assert found["DEFAULT-MODEL"]["title"] == "the default model is claude-sonnet-4-5"
    assert found["ENV-LOCAL"]["title"] == "LOCAL_MODEL, when set, is the pool's llama"
    report = (tmp_path / "out" / "report.md").read_text()
    assert "LLAMA-ROUTER" in report and "[secret" not in report, report


def test_an_enum_level_equal_to_such_a_literal_is_no_refused_policy(tmp_path: Path) -> None:
    """R20 #2: a valid policy was refused (exit 2) because an enum level equals a literal
    another rule compares with an `env` value."""
    pol = tmp_path / "pol"
    pol.mkdir()
    (pol / "1-env.yaml").write_text(ENV_MODEL)
    (pol / "2-tier.yaml").write_text(TIER)
    live = json.loads(json.dumps(MODEL_SETTINGS))
    code, out, err = _review(tmp_path, pol, MODEL_SETTINGS, live, "json")
    assert code == 0, out + err
    assert "looks like a secret" not in out + err
    found = _findings(tmp_path / "out")
    assert {i: f["status"] for i, f in found.items()} == {"ENV-MODEL": "pass", "TIER": "pass"}
    assert found["TIER"]["title"] == "the default model is at most claude-sonnet-4-5"


def test_run_and_export_keep_other_files_and_enums_as_written(emu: Any, tmp_path: Path) -> None:
    """R20 #2 for `run` and `export` (both exit 2 before); the bundle's copy hides the literal
    in the file whose rule compares it with a secret place only."""
    pol = tmp_path / "pol"
    pol.mkdir()
    (pol / "1-env.yaml").write_text(ENV_MODEL)
    (pol / "2-tier.yaml").write_text(TIER)
    env = emulator_env(emu, tmp_path / "state.db")
    argv = ["run", "--policy", str(pol), "--no-usage", "--out", str(tmp_path / "run"), "-o", "json"]
    code, out, err = run_cli(argv, env=env, cwd=tmp_path)
    assert code in (0, 1), out + err
    assert "looks like a secret" not in out + err
    assert {"ENV-MODEL", "TIER"} <= set(_findings(tmp_path / "run"))
    argv = ["export", "--policy", str(pol), "--out", str(tmp_path / "ev")]
    code, out, err = run_cli(argv, env=env, cwd=tmp_path)
    assert code == 0, out + err
    copies = tmp_path / "ev" / "inputs" / "policies"
    assert (copies / "002-2-tier.yaml").read_text() == TIER
    env_copy = (copies / "001-1-env.yaml").read_text()
    assert "claude-sonnet-4-5" not in env_copy and env_copy.count("[secret fp:") == 1, env_copy
    assert env_copy.replace(re.findall(r'"\[secret fp:[^]]*\]"', env_copy)[0], "x") == (
        ENV_MODEL.replace("claude-sonnet-4-5", "x")
    )


CHANGES = f"""rules:
  - id: CH-1
    title: no step puts the leaked key back
    severity: high
    target: change
    assert:
      none: changes
      assert:
        all:
          - {{path: path, ends_with: ".apiKey"}}
          - {{path: after, equals: "{OLD_KEY}"}}
  - id: CH-2
    title: no step puts the leaked phrase back
    severity: high
    target: change
    assert:
      none: changes
      assert:
        all:
          - {{path: path, matches: '^\\$\\.env\\.DEPLOY_PHRASE$'}}
          - {{path: after, equals: "{OLD_PHRASE}"}}
"""


@pytest.mark.parametrize("back", [False, True])
def test_a_change_path_matched_by_its_end_or_a_pattern_hides_the_literal(
    tmp_path: Path, back: bool
) -> None:
    """R20 #3: `ends_with: .apiKey` and `matches: '^\\$\\.env\\.X$'` on a change's `path`
    were not taken for a secret place: the leaked key was in findings.json, report.html and
    OSCAL in clear. `back`: the step puts the leaked key and phrase back (both rules fail)."""
    (tmp_path / "chg.yaml").write_text(CHANGES)
    before = {"customModels": [{"id": "gw", "apiKey": "plum-rotated-cactus-777111-window"}],
              "env": {"DEPLOY_PHRASE": "Hn4Tq7Wm1Zx8Rc5Vb2"}}  # fmt: skip
    key, phrase = (OLD_KEY, OLD_PHRASE) if back else ("kiwi-fresh-555999", "Pw6Yk3Nd8Hs1Lq4Ct9")
    after = {"customModels": [{"id": "gw", "apiKey": key}], "env": {"DEPLOY_PHRASE": phrase}}
    formats = "html,md,json,sarif,junit,oscal"
    code, out, err = _review(tmp_path, tmp_path / "chg.yaml", after, before, formats)
    assert code == (1 if back else 0), out + err
    assert _leaks(tmp_path / "out", out, err) == {}
    found = _findings(tmp_path / "out")
    status = "fail" if back else "pass"
    assert {i: f["status"] for i, f in found.items()} == {"CH-1": status, "CH-2": status}


def test_policy_test_learns_the_literals_once_and_hides_them_in_their_rule_s_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """R20 #6: the whole policy's literals were found again for every case (14x slower on
    1,000 cases); and a literal hid the same text in another rule's line."""
    import auditor.policy.redacted as redacted

    calls: list[str] = []
    real = redacted.secret_literals

    def counted(rule: Any) -> list[tuple[str, bool]]:
        calls.append(rule.id)
        return real(rule)

    monkeypatch.setattr(redacted, "secret_literals", counted)
    (tmp_path / "p.yaml").write_text(TEAM)
    cases = [
        {
            "name": f"case number {n}, a model",
            "settings": {
                "sessionDefaultSettings": {"model": "claude-haiku-4-5"},
                "env": {"ANTHROPIC_MODEL": "claude-opus-4-1"},
            },
            "expect": {"DEFAULT-MODEL": "pass", "ENV-MODEL": "pass"},
        }
        for n in range(6)
    ]
    (tmp_path / "p.tests.yaml").write_text(json.dumps({"tests": cases}))
    code, out, err = run_cli(["policy", "test", "p.yaml"], {}, tmp_path)
    assert code == 1, out + err
    assert sorted(calls) == sorted(["ENV-LOCAL", "DEFAULT-MODEL", "ENV-MODEL", "LLAMA-ROUTER"])
    lines = [line for line in out.splitlines() if line.startswith("FAIL ")]
    assert len(lines) == 6, out
    for line in lines:
        other, own = line.split("ENV-MODEL: expected pass, got fail")
        # another rule's literal: as written; its own, compared with an `env` value: its marker
        assert "DEFAULT-MODEL: expected pass, got fail" in other, line
        assert 'expected "claude-sonnet-4-5"' in other, line
        assert "claude-sonnet-4-5" not in own and 'expected "[secret fp:' in own, line


# R22 #1: the bundle's copy hid such a literal throughout its file: another rule of the file
# was judged against a marker (DEFAULT-MODEL: pass in `run`, fail in the bundle, and `verify`
# accepted it), and a `[field=value]` selector holding it made `export` exit 2.
BUNDLED = (
    TEAM
    + POLICY.removeprefix("rules:\n")
    + f"""  # the leaked phrase {OLD_PHRASE} stays out of a comment too
  - id: PX
    title: the proxy is not the leaked one
    severity: high
    target: settings
    assert: {{path: env.HTTPS_PROXY, not_matches: '^{OLD_PROXY}$|^\\[secret '}}
enums:
  modeltier: [claude-haiku-4-5, claude-sonnet-4-5, claude-opus-4-1]
"""
)


def _verdicts(folder: Path) -> dict[tuple[str, str], str]:
    data = json.loads((folder / "findings.json").read_text())
    return {(f["rule_id"], f["subject"]["key"]): f["status"] for f in data["findings"]}


def test_the_bundle_s_copy_hides_a_literal_in_its_own_rule_and_keeps_every_verdict(
    tmp_path: Path,
) -> None:
    """Evaluating the bundle's copy gives the verdicts the policy gives in `run`; the copy
    differs from the file only in the rules that compare a literal with a secret place."""
    import copy

    from auditor.emulator import start_emulator
    from tests.test_secrets_canary import _append

    (tmp_path / "team.yaml").write_text(BUNDLED)
    with start_emulator(tokens={OWNER_TOKEN: "owner"}, now=FIXED_NOW, revisions=6, repos=1) as e:
        settings = copy.deepcopy(e.dataset.history[-1]["settings"])
        settings["sessionDefaultSettings"] = {"model": "claude-sonnet-4-5"}
        settings.setdefault("customModels", []).append(MODEL_SETTINGS["customModels"][0])
        _append(e.dataset, settings, "admin")
        env = emulator_env(e, tmp_path / "state.db")
        code, out, err = run_cli(["sync"], env=env, cwd=tmp_path)
        assert code == 0, out + err
        argv = ["run", "--offline", "--policy", "team.yaml", "--out", "run", "-o", "json"]
        code, out, err = run_cli(argv, env=env, cwd=tmp_path)
        assert code in (0, 1), out + err
        argv = ["export", "--policy", "team.yaml", "--out", "ev"]
        code, out, err = run_cli(argv, env=env, cwd=tmp_path)
        assert code == 0, out + err
        code, out, err = run_cli(["verify", "ev"], env=env, cwd=tmp_path)
        assert code == 0, out + err
    ran, bundled = _verdicts(tmp_path / "run"), _verdicts(tmp_path / "ev" / "reports")
    assert ran == bundled
    assert ran[("DEFAULT-MODEL", "settings")] == "pass", ran
    assert ran[("LLAMA-ROUTER", "settings")] == "fail", ran
    text = (tmp_path / "ev" / "inputs" / "policies" / "001-team.yaml").read_text()
    assert _leaks(tmp_path / "ev", out, err) == {}
    # the rest of the file as written: DEFAULT-MODEL, the selector, PHRASE-NOTE, the enum
    assert "assert: {path: sessionDefaultSettings.model, equals: claude-sonnet-4-5}" in text
    assert f'"customModels[model={LLAMA}].useInRouter"' in text
    assert "modeltier: [claude-haiku-4-5, claude-sonnet-4-5, claude-opus-4-1]" in text
    assert "the default model is claude-sonnet-4-5" in text
    markers = re.findall(r'"\[secret fp:[0-9a-f]{8} len:\d+\]"', text)
    assert len(markers) == 6, text  # the literals of ENV-LOCAL, ENV-MODEL and LK-1 to LK-4
    assert 'title: "ANTHROPIC_MODEL, when set, is [secret fp:' in text
    # a pattern's literal text: its marker's text, escaped (still a pattern, the same verdict)
    assert re.search(r"not_matches: \"\^\\\\\[secret\\\\ fp:[0-9a-f]{8}\\\\ len:18", text), text


# R22 #2, #3: a change chosen by `changes[path=…]` in a leaf's path, and a pattern with the
# `\[secret ` alternative `policy lint` advises, left the literal in clear in every report.
SELECTED = f"""rules:
  - id: S-1
    title: the deploy phrase step does not put the leaked phrase back
    severity: high
    target: change
    on_missing: pass
    assert: {{path: "changes[path=$.env.DEPLOY_PHRASE].after", not_equals: "{OLD_PHRASE}"}}
  - id: T-RX
    title: the proxy is not the leaked one
    severity: high
    target: settings
    assert: {{path: env.HTTPS_PROXY, not_matches: '^{OLD_PROXY}$|^\\[secret '}}
"""


@pytest.mark.parametrize("back", [False, True])
def test_a_change_selected_by_its_path_and_a_pattern_with_the_marker_alternative_hide_it(
    tmp_path: Path, back: bool
) -> None:
    (tmp_path / "sel.yaml").write_text(SELECTED)
    before = {"env": {"DEPLOY_PHRASE": "Hn4Tq7Wm1Zx8Rc5Vb2", "HTTPS_PROXY": "Nm5Bv8Cx2Zl4Kj7Hg"}}
    phrase, proxy = (OLD_PHRASE, OLD_PROXY) if back else ("Pw6Yk3Nd8Hs1Lq4Ct9", "Yh6Tr3Kw9Bm2Qx")
    after = {"env": {"DEPLOY_PHRASE": phrase, "HTTPS_PROXY": proxy}}
    formats = "html,md,json,sarif,junit,oscal"
    code, out, err = _review(tmp_path, tmp_path / "sel.yaml", after, before, formats)
    assert code in (0, 1), out + err
    assert _leaks(tmp_path / "out", out, err) == {}
    found = _findings(tmp_path / "out")
    assert found["S-1"]["status"] == ("fail" if back else "pass"), found["S-1"]
    assert "[secret fp:" in found["S-1"]["message"], found["S-1"]


def test_policy_test_hides_a_secret_literal_of_the_policy_in_a_case_s_name(
    tmp_path: Path,
) -> None:
    """R22 #7: a case named with the leaked key a rule checks for printed it in clear (learned
    by nothing since the literal is hidden in its rule's own line only)."""
    (tmp_path / "p.yaml").write_text(POLICY)
    case = {
        "name": f"the leaked {OLD_KEY} back",
        "settings": {"customModels": [{"id": "gw", "model": "m", "apiKey": OLD_PHRASE}]},
        "expect": {"LK-1": "fail"},
    }
    (tmp_path / "p.tests.yaml").write_text(json.dumps({"tests": [case]}))
    code, out, err = run_cli(["policy", "test", "p.yaml"], {}, tmp_path)
    assert code == 1, out + err
    assert "the leaked <not shown: looks like a secret> back: LK-1: expected fail" in out, out
    assert not [form for form in secret_forms(OLD_KEY) if form in out + err], out
