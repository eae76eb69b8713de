"""The evidence bundle judges as the run did, or names each result it judges otherwise: the
copy of a policy file hides a rule's secret literal in every whole scalar of that rule's item,
so no secret reaches the bundle (reviewer R25 #2), and a result that then flips is named in
manifest.json's `notReproduced` (R23 #1), as is one a literal compared with a value hidden by
its place flips without any copy hidden (R25 #1); a value the data taught as a secret, written
in another rule's pattern, is an escaped marker there, still a pattern of the same text (R23
#2). `run`, `export` and `verify` end to end, against the emulator; each rule's status in the
run's findings.json and the bundle's is compared."""

from __future__ import annotations

import copy
import json
import re
import shutil
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from tests.conftest import FIXED_NOW, OWNER_TOKEN, emulator_env, run_cli

SONNET = "claude-sonnet-4-5"


def _statuses(folder: Path) -> dict[str, str]:
    data = json.loads((folder / "findings.json").read_text())
    return {f["rule_id"]: f["status"] for f in data["findings"]}


def _run_export_verify(
    tmp_path: Path, policy: str, edit: Callable[[dict[str, Any]], None], formats: str = "json"
) -> dict[str, Any]:
    """Plant a revision (`edit` of the newest settings), sync, `run --offline` (writing
    `formats`), `export`, `verify`: each command's (exit, stdout, stderr) and their `streams`,
    the run's and the bundle's statuses (`ran`, `bundled`) and findings.json (`ran_json`,
    `bundled_json`), the manifest's `notReproduced` (`listed`) and the bundle's copy of the
    policy (`copy`)."""
    from auditor.emulator import start_emulator
    from tests.test_secrets_canary import _append

    (tmp_path / "p.yaml").write_text(policy)
    got: dict[str, Any] = {}
    with start_emulator(tokens={OWNER_TOKEN: "owner"}, now=FIXED_NOW, revisions=6, repos=1) as e:
        settings = copy.deepcopy(e.dataset.history[-1]["settings"])
        edit(settings)
        _append(e.dataset, settings, "admin")
        env = emulator_env(e, tmp_path / "state.db")
        code, out, err = run_cli(["sync"], env=env, cwd=tmp_path)
        assert code == 0, out + err
        pol = ["--policy", "p.yaml"]
        for name, argv in (
            ("run", ["run", "--offline", *pol, "--out", "run", "-o", formats]),
            ("export", ["export", *pol, "--out", "ev"]),
            ("verify", ["verify", "ev"]),
        ):
            got[name] = run_cli(argv, env=env, cwd=tmp_path)
    got["streams"] = [s for name in ("run", "export", "verify") for s in got[name][1:]]
    got["ran"] = _statuses(tmp_path / "run")
    got["bundled"] = _statuses(tmp_path / "ev" / "reports")
    got["ran_json"] = json.loads((tmp_path / "run" / "findings.json").read_text())
    got["bundled_json"] = json.loads((tmp_path / "ev" / "reports" / "findings.json").read_text())
    got["listed"] = json.loads((tmp_path / "ev" / "manifest.json").read_text()).get("notReproduced")
    got["copy"] = (tmp_path / "ev" / "inputs" / "policies" / "001-p.yaml").read_text()
    return got


SAME_RULE = f"""rules:
  - id: NO-SONNET
    title: sonnet 4.5 is neither the default model nor ANTHROPIC_MODEL
    severity: medium
    target: settings
    assert:
      all:
        - {{path: sessionDefaultSettings.model, not_equals: {SONNET}}}
        - {{path: env.ANTHROPIC_MODEL, not_equals: {SONNET}, default: unset}}
"""


def test_a_literal_hidden_in_a_plain_condition_too_flips_a_result_that_is_named(
    tmp_path: Path,
) -> None:
    """R23 #1 as 0.3.0 leaves it: the copy hides the rule's literal in both conditions (R25
    #2: kept in clear in the plain one, it reached the bundle's reports), so the plain model
    is compared with a marker: run `fail`, bundle `pass`, and `export` names that result."""

    def edit(settings: dict[str, Any]) -> None:
        settings["sessionDefaultSettings"] = {"model": SONNET}
        settings.get("env", {}).pop("ANTHROPIC_MODEL", None)

    got = _run_export_verify(tmp_path, SAME_RULE, edit)
    assert got["run"][0] == 1, got["run"]
    assert got["export"][0] == 0, got["export"]
    assert got["ran"] == {"NO-SONNET": "fail"}
    assert got["bundled"] == {"NO-SONNET": "pass"}
    assert got["listed"] == [
        {"rule": "NO-SONNET", "subject": "settings", "run": "fail", "bundle": "pass"}
    ]
    assert "NO-SONNET on settings: fail in the run, pass in the bundle" in got["export"][2]
    assert SONNET not in got["copy"]
    marker = r'"\[secret fp:[0-9a-f]{8} len:17\]"'
    assert re.search(rf"sessionDefaultSettings\.model, not_equals: {marker}", got["copy"])
    assert re.search(rf"env\.ANTHROPIC_MODEL, not_equals: {marker}", got["copy"])
    assert got["verify"][0] == 0, got["verify"]
    # verify gives the run's verdict as manifest.json's word: it cannot check it (T97 #2)
    assert (
        "NO-SONNET on settings: pass in the bundle, fail in the run as manifest.json states"
        in got["verify"][2]
    )


LEAKED = "orange-leaked-battery-424242-staple"
LEAKED_RULE = f"""rules:
  - id: NO-LEAKED-KEY
    title: the leaked deploy key is used nowhere
    severity: high
    target: settings
    assert:
      all:
        - {{path: env.DEPLOY_KEY, not_equals: {LEAKED}, default: none}}
        - {{path: sessionDefaultSettings.model, not_equals: {LEAKED}}}
"""


def test_a_leaked_key_a_rule_compares_with_a_plain_place_too_is_nowhere_in_the_bundle(
    tmp_path: Path,
) -> None:
    """R25 #2: the copy kept the leaked key in clear in the condition on a plain place, and
    the bundle's evaluation found it at no secret place, so its reports (findings.json,
    report.html, findings.oscal.json) showed it; `run`'s reports hide it."""

    def edit(settings: dict[str, Any]) -> None:
        settings.setdefault("env", {})["DEPLOY_KEY"] = "rotated-key-7a1c9e55-b2d04f-8812"
        settings["sessionDefaultSettings"] = {"model": SONNET}

    got = _run_export_verify(tmp_path, LEAKED_RULE, edit)
    assert got["export"][0] == 0, got["export"]
    assert got["ran"] == got["bundled"] == {"NO-LEAKED-KEY": "pass"}
    for folder in ("run", "ev"):
        for path in (tmp_path / folder).rglob("*"):
            if path.is_file():
                assert LEAKED not in path.read_text(errors="replace"), path
    assert got["verify"][0] == 0, got["verify"]


PATTERN = f"""rules:
  - id: NO-SONNET-DEFAULT
    title: the default model is no sonnet 4.5
    severity: medium
    target: settings
    assert: {{path: sessionDefaultSettings.model, not_matches: "{SONNET}"}}
"""


def test_a_secret_the_data_taught_is_an_escaped_marker_in_another_rule_s_pattern(
    tmp_path: Path,
) -> None:
    """R23 #2: `env.ANTHROPIC_MODEL` holds the model, so it is a secret the store learned; the
    copy wrote it into the pattern as `[secret fp:… len:17]`, a character class matching the
    `c` of `claude-opus-4-1`: run `pass`, bundle `fail`, `verify` exit 0."""

    def edit(settings: dict[str, Any]) -> None:
        settings["sessionDefaultSettings"] = {"model": "claude-opus-4-1"}
        settings.setdefault("env", {})["ANTHROPIC_MODEL"] = SONNET

    got = _run_export_verify(tmp_path, PATTERN, edit)
    assert got["export"][0] == 0, got["export"]
    assert got["ran"]["NO-SONNET-DEFAULT"] == "pass"
    assert got["bundled"] == got["ran"]
    assert SONNET not in got["copy"]
    pattern = r'not_matches: "\\\\\[secret\\\\ fp:[0-9a-f]{8}\\\\ len:17\\\\\]"'
    assert re.search(pattern, got["copy"]), got["copy"]
    assert got["verify"][0] == 0, got["verify"]


def test_every_rule_of_a_file_whose_copy_hides_a_secret_is_evaluated_again(
    tmp_path: Path, monkeypatch: Any
) -> None:
    """`export` evaluates again over the state file only the rules whose results the bundle
    may judge otherwise (`_rules_may_differ`): each rule of a policy file whose copy hides a
    secret is one, though it reads no secret place. Here the copy writes the model the data
    taught as a secret into NO-SONNET-DEFAULT's pattern (R23 #2): it and SHIELD, of the same
    file, are evaluated again; the shipped packs' rules are not (no copy of theirs is made)."""
    from auditor.workflows import export

    calls: list[Any] = []
    real = export._run_statuses
    monkeypatch.setattr(export, "_run_statuses", lambda *a: calls.append(a) or real(*a))
    policy = (
        PATTERN
        + """  - id: SHIELD
    title: the shield is on
    severity: low
    target: settings
    assert: {path: enableAgentShield, equals: true, default: false}
"""
    )

    def edit(settings: dict[str, Any]) -> None:
        settings["sessionDefaultSettings"] = {"model": "claude-opus-4-1"}
        settings.setdefault("env", {})["ANTHROPIC_MODEL"] = SONNET

    got = _run_export_verify(tmp_path, policy, edit)
    assert got["export"][0] == 0, got["export"]
    assert SONNET not in got["copy"]
    assert [c[2] for c in calls] == [{"NO-SONNET-DEFAULT", "SHIELD"}]
    assert got["bundled"] == got["ran"] and not got["listed"]
    assert got["verify"][0] == 0, got["verify"]


TOKEN = "hunter2-abcdef-0123-xyz"
PREFIX = TOKEN[:19]  # a part literal of 16 characters or more: hidden at a secret place
FLIPS = f"""rules:
  - id: TOKEN-PREFIX
    title: the deploy token is the team's
    severity: medium
    target: settings
    assert: {{path: env.MY_TOKEN, starts_with: "{PREFIX}"}}
  - id: DEF-MODEL
    title: the default model is sonnet
    severity: low
    target: settings
    assert: {{path: sessionDefaultSettings.model, equals: {SONNET}}}
"""


def test_export_names_a_result_the_bundle_cannot_reproduce_and_verify_notes_it(
    tmp_path: Path,
) -> None:
    """A literal compared with a part of a hidden value (`starts_with`): `run` gives `error`
    (a prefix cannot be compared with a marker), the bundle compares the copy's marker as
    text (`fail`). `export` warns and manifest.json's `notReproduced` names that result, and
    no other (DEF-MODEL is the same in both); `verify` notes it and still exits 0; a
    `notReproduced` edited out of shape or naming another verdict than the re-run's does not
    verify (reviewer R24 #1, #2: the reverted `verdictsDiffer` flagged an unchanged result and
    missed a flipped one)."""
    from auditor.emulator import start_emulator
    from tests.test_secrets_canary import _append

    (tmp_path / "p.yaml").write_text(FLIPS)
    with start_emulator(tokens={OWNER_TOKEN: "owner"}, now=FIXED_NOW, revisions=6, repos=1) as e:
        settings = copy.deepcopy(e.dataset.history[-1]["settings"])
        settings["sessionDefaultSettings"] = {"model": SONNET}
        settings.setdefault("env", {})["MY_TOKEN"] = TOKEN
        _append(e.dataset, settings, "admin")
        env = emulator_env(e, tmp_path / "state.db")
        assert run_cli(["sync"], env=env, cwd=tmp_path)[0] == 0
        argv = ["run", "--offline", "--policy", "p.yaml", "--out", "run", "-o", "json"]
        run_cli(argv, env=env, cwd=tmp_path)
        code, out, err = run_cli(
            ["export", "--policy", "p.yaml", "--out", "ev"], env=env, cwd=tmp_path
        )
        assert code == 0, out + err
    ran, bundled = _statuses(tmp_path / "run"), _statuses(tmp_path / "ev" / "reports")
    assert ran == {"TOKEN-PREFIX": "error", "DEF-MODEL": "pass"}, ran
    assert bundled == {"TOKEN-PREFIX": "fail", "DEF-MODEL": "pass"}, bundled
    manifest = json.loads((tmp_path / "ev" / "manifest.json").read_text())
    assert manifest["notReproduced"] == [
        {"rule": "TOKEN-PREFIX", "subject": "settings", "run": "error", "bundle": "fail"}
    ]
    assert (
        "auditor: warning: 1 result(s) not reproducible from this bundle because it holds "
        "secrets as markers it has no key to read (a literal compared with a secret, or hidden "
        "as one in a policy copy, is compared with its marker's text there): " in err
    ), err
    assert "TOKEN-PREFIX on settings: error in the run, fail in the bundle" in err
    assert "DEF-MODEL" not in err
    assert PREFIX not in err + (tmp_path / "ev" / "inputs" / "policies" / "001-p.yaml").read_text()
    code, out, err = run_cli(["verify", "ev"], env={}, cwd=tmp_path)
    assert code == 0, out + err
    assert (
        "auditor: note: 1 result(s) not reproducible from this bundle because it holds secrets"
        in err
    )
    assert (
        "TOKEN-PREFIX on settings: fail in the bundle, error in the run as manifest.json states"
        in err
    )
    for edited in ({"rule": "TOKEN-PREFIX"}, [{**manifest["notReproduced"][0], "bundle": "pass"}]):
        copy_ = tmp_path / f"ev-{len(str(edited))}"
        shutil.copytree(tmp_path / "ev", copy_)
        changed = {**manifest, "notReproduced": edited}
        (copy_ / "manifest.json").write_text(json.dumps(changed, indent=2))
        code, out, err = run_cli(["verify", copy_.name], env={}, cwd=tmp_path)
        assert code == 2, out + err
        assert "manifest: notReproduced" in err, err


def test_a_bundle_that_reproduces_the_run_names_no_result(tmp_path: Path) -> None:
    """The copy hides the literal (R23 #1's rule), the run's verdicts are compared, and every
    result is the run's: no `notReproduced`, no warning."""

    def edit(settings: dict[str, Any]) -> None:
        settings["sessionDefaultSettings"] = {"model": SONNET}
        settings.setdefault("env", {})["ANTHROPIC_MODEL"] = SONNET

    got = _run_export_verify(tmp_path, SAME_RULE, edit)
    assert got["export"][0] == 0, got["export"]
    assert '"redacted": true' in (tmp_path / "ev" / "run-parameters.json").read_text()
    assert got["bundled"] == got["ran"] == {"NO-SONNET": "fail"}
    assert "notReproduced" not in json.loads((tmp_path / "ev" / "manifest.json").read_text())
    assert "not reproducible" not in got["export"][2] + got["verify"][2]


CONTROLS = f"""defaults:
  controls: ["{TOKEN}:CC6.1"]
rules:
  - id: TOKEN-SET
    title: the deploy token is set
    severity: medium
    target: settings
    controls: ["SOC2:{TOKEN}"]
    assert: {{path: env.MY_TOKEN, exists: true}}
"""


def test_a_secret_in_a_control_id_is_copied_as_a_control_id_the_loader_takes(
    tmp_path: Path,
) -> None:
    """R24 #3: `run` worked, `export` exited 2 on its own copy (`"SOC2:[secret fp:… len:23]"
    is not valid; expected a control id`), so no bundle could be made."""

    def edit(settings: dict[str, Any]) -> None:
        settings.setdefault("env", {})["MY_TOKEN"] = TOKEN

    got = _run_export_verify(tmp_path, CONTROLS, edit)
    assert got["run"][0] == 0, got["run"]
    assert got["export"][0] == 0, got["export"]
    assert got["verify"][0] == 0, got["verify"]
    assert got["bundled"] == got["ran"] == {"TOKEN-SET": "pass"}
    text = got["copy"]
    marker = r"\[secret_fp:[0-9a-f]{8}_len:23\]"
    assert re.search(rf'controls: \["SOC2:{marker}"\]', text), text
    assert re.search(rf'controls: \["redacted:{marker}"\]', text), text
    for path in (tmp_path / "ev").rglob("*"):
        if path.is_file():
            assert TOKEN not in path.read_text(errors="replace"), path
    findings = json.loads((tmp_path / "ev" / "reports" / "findings.json").read_text())
    assert findings["rules"][0]["controls"] == [
        re.search(rf"redacted:{marker}", text)[0],  # type: ignore[index]
        re.search(rf"SOC2:{marker}", text)[0],  # type: ignore[index]
    ]


WORD = """rules:
  - id: NOT-DEBUG
    title: debug logging is off
    severity: high
    target: settings
    assert: {path: env.LOG_LEVEL, not_equals: debug}
  - id: MODE-PROD
    title: the mode is prod
    severity: low
    target: settings
    assert: {path: env.MODE, equals: prod}
  - id: DEF-MODEL
    title: the default model is sonnet
    severity: low
    target: settings
    assert: {path: sessionDefaultSettings.model, equals: claude-sonnet-4-5}
"""


def test_a_word_compared_with_a_value_hidden_by_its_place_flips_a_result_that_is_named(
    tmp_path: Path,
) -> None:
    """R25 #1: a short word at an `env` place is no credential, so the copy keeps it and is
    not redacted, but the stored value is a marker: `run` reads it by the state's key, the
    bundle compares `debug` with the marker's text. No `notReproduced`, no warning, no note
    were given: the results are named now."""

    def edit(settings: dict[str, Any]) -> None:
        settings.setdefault("env", {}).update(LOG_LEVEL="debug", MODE="prod")
        settings["sessionDefaultSettings"] = {"model": SONNET}

    got = _run_export_verify(tmp_path, WORD, edit)
    assert "redacted" not in (tmp_path / "ev" / "run-parameters.json").read_text()
    assert got["ran"] == {"NOT-DEBUG": "fail", "MODE-PROD": "pass", "DEF-MODEL": "pass"}
    assert got["bundled"] == {"NOT-DEBUG": "pass", "MODE-PROD": "fail", "DEF-MODEL": "pass"}
    assert got["listed"] == [
        {"rule": "MODE-PROD", "subject": "settings", "run": "pass", "bundle": "fail"},
        {"rule": "NOT-DEBUG", "subject": "settings", "run": "fail", "bundle": "pass"},
    ]
    assert "2 result(s) not reproducible from this bundle" in got["export"][2]
    assert got["verify"][0] == 0, got["verify"]
    assert (
        "NOT-DEBUG on settings: pass in the bundle, fail in the run as manifest.json states"
        in got["verify"][2]
    )


def test_a_shipped_pack_export_evaluates_twice_for_the_rules_that_judge_a_changes_value(
    tmp_path: Path, monkeypatch: Any
) -> None:
    """Two shipped rules compare a literal with a change's `after` under `changes[]` (which may
    be any place, a secret one too): CHG-AUT-003 (an override's level, `off` … `high`) and
    CHG-HOK-002 (a hook's `timeout` set to 0). Every other shipped rule compares only a
    marker's own text (`[secret `) with a value hidden by its place. So `export` of the
    shipped packs evaluates again over the state file (as it does for such a policy of your
    own) and, on the emulator's data, the bundle reproduces every verdict."""
    from auditor.emulator import start_emulator
    from auditor.policy import SHIPPED_POLICY_DIR, load_policies
    from auditor.policy.redacted import compares_secret_place
    from auditor.workflows import export

    shipped = load_policies([SHIPPED_POLICY_DIR])
    comparing = {r.id for r in shipped.rules if compares_secret_place(replace(shipped, rules=(r,)))}
    assert comparing == {"CHG-AUT-003", "CHG-HOK-002"}
    (tmp_path / "p.yaml").write_text(WORD)
    assert compares_secret_place(load_policies([tmp_path / "p.yaml"]))
    calls: list[Any] = []
    real = export._run_statuses
    monkeypatch.setattr(export, "_run_statuses", lambda *a: calls.append(a) or real(*a))
    with start_emulator(tokens={OWNER_TOKEN: "owner"}, now=FIXED_NOW, revisions=6, repos=1) as e:
        env = emulator_env(e, tmp_path / "state.db")
        assert run_cli(["sync"], env=env, cwd=tmp_path)[0] == 0
        code, out, err = run_cli(["export", "--out", "ev"], env=env, cwd=tmp_path)
        assert code == 0, out + err
        assert len(calls) == 1
        assert calls[0][2] == comparing  # those two alone are evaluated again
        assert "not reproducible" not in err
        manifest = json.loads((tmp_path / "ev" / "manifest.json").read_text())
        assert not manifest.get("notReproduced")


def test_the_rules_export_evaluates_again_judge_alone_as_in_the_whole_policy(
    tmp_path: Path, monkeypatch: Any
) -> None:
    """`export` evaluates again over the state file only the rules whose results the bundle
    may judge otherwise (`_rules_may_differ`), not the whole policy (at 10,000 revisions,
    `export --all-revisions` of the shipped packs evaluated the history twice: 372 MB where
    one evaluation takes 232). That holds because a rule's verdicts turn on nothing but its
    own conditions, the data and the inputs: here each result of those rules, over every
    revision and change step, is the one the evaluation of every shipped rule gives, and a policy
    whose copy hides a secret has each of its rules evaluated again."""
    from auditor.emulator import start_emulator
    from auditor.policy import SHIPPED_POLICY_DIR, load_policies
    from auditor.workflows import export

    every = frozenset(r.id for r in load_policies([SHIPPED_POLICY_DIR]).rules)
    got: list[tuple[frozenset[str], dict[Any, str], dict[Any, str]]] = []
    real = export._run_statuses

    def both(store: Any, request: Any, rules: frozenset[str]) -> Any:
        alone = real(store, request, rules)
        whole = real(store, request, every)
        got.append((rules, alone, {k: v for k, v in whole.items() if k[0] in rules}))
        return alone

    monkeypatch.setattr(export, "_run_statuses", both)
    with start_emulator(tokens={OWNER_TOKEN: "owner"}, now=FIXED_NOW, revisions=60, repos=2) as e:
        env = emulator_env(e, tmp_path / "state.db")
        assert run_cli(["sync"], env=env, cwd=tmp_path)[0] == 0
        code, out, err = run_cli(
            ["export", "--all-revisions", "--out", "ev"], env=env, cwd=tmp_path
        )
        assert code == 0, out + err
        (tmp_path / "p.yaml").write_text(LEADING_ZERO)
        code, out, err = run_cli(
            ["export", "--policy", "p.yaml", "--out", "ev2"], env=env, cwd=tmp_path
        )
    rules, alone, whole = got[0]
    assert rules == {"CHG-AUT-003", "CHG-HOK-002"}
    assert alone == whole
    assert len(alone) > 100  # every step of 60 revisions, judged by each
    assert {k[0] for k in alone} == rules
    assert len(got) == 2 and got[1][0] == {"PIN-LEAKED", "QUOTA"}, got[1][0]


LEADING_ZERO = """rules:
  - id: PIN-LEAKED
    title: the deploy PIN is not the leaked one
    severity: high
    target: settings
    assert: {path: env.DEPLOY_PIN, not_in: [08374920193746512]}
  - id: QUOTA
    title: the token quota is large enough
    severity: low
    target: settings
    assert: {path: env.MAX_TOKENS_QUOTA, gte: 1000, default: 1000000000000000}
  - id: QUOTA-TYPE
    title: the token quota is a number
    severity: low
    target: settings
    assert: {path: env.MAX_TOKENS_QUOTA, type: number, default: 1000000000000000}
"""


def test_number_literals_are_judged_and_shown_as_written_and_the_bundle_verifies(
    tmp_path: Path,
) -> None:
    """R25 #3: a number written with a leading zero (`08374920193746512`, read as
    8374920193746512) was kept in clear in the copy, hidden in the bundle's reports under
    its scratch key, so a fresh bundle failed `verify` (exit 2). R25 #5: a 16-digit
    `default:` at an `env` place was evaluated as a marker text, `gte` and `type` gave
    `error` (run exit 2) where 0.2.0 gave `pass`. A number literal is shown as written (as
    in 0.2.0), and the flip the PIN's comparison gives (the value is a marker, the bundle
    has no key) is named."""

    def edit(settings: dict[str, Any]) -> None:
        settings.setdefault("env", {})["DEPLOY_PIN"] = "8374920193746512"
        settings["env"].pop("MAX_TOKENS_QUOTA", None)

    got = _run_export_verify(tmp_path, LEADING_ZERO, edit)
    assert got["ran"] == {"PIN-LEAKED": "fail", "QUOTA": "pass", "QUOTA-TYPE": "pass"}
    assert got["run"][0] == 1, got["run"]
    assert got["export"][0] == 0, got["export"]
    assert got["listed"] == [
        {"rule": "PIN-LEAKED", "subject": "settings", "run": "fail", "bundle": "pass"}
    ]
    assert got["verify"][0] == 0, got["verify"]


PLAIN_NUMBER = """rules:
  - id: MODEL-NOT-PIN
    title: the default model is not the deploy PIN
    severity: high
    target: settings
    assert: {path: sessionDefaultSettings.model, not_equals: 8374920193746512}
"""


def test_a_number_equal_to_a_remembered_secret_at_a_plain_place_flips_a_result_that_is_named(
    tmp_path: Path,
) -> None:
    """The `env` PIN is a secret the state file remembers, so the default model holding the
    same digits is its marker too; `run` reads it by the key (`fail`), the bundle compares
    the number with the marker's text (`pass`). No rule compares a secret place and the copy
    writes the number as it is (not redacted), yet the result is named."""

    def edit(settings: dict[str, Any]) -> None:
        settings.setdefault("env", {})["DEPLOY_PIN"] = "8374920193746512"
        settings["sessionDefaultSettings"] = {"model": "8374920193746512"}

    got = _run_export_verify(tmp_path, PLAIN_NUMBER, edit)
    assert "redacted" not in (tmp_path / "ev" / "run-parameters.json").read_text()
    assert got["ran"] == {"MODEL-NOT-PIN": "fail"}
    assert got["bundled"] == {"MODEL-NOT-PIN": "pass"}
    assert got["listed"] == [
        {"rule": "MODEL-NOT-PIN", "subject": "settings", "run": "fail", "bundle": "pass"}
    ]
    assert got["verify"][0] == 0, got["verify"]


PHRASE = "Zq8hVd2LmX0pRt7Yw3Ns"
ID_PART_CONTROLS = f"""rules:
  - id: C1
    title: controls
    severity: medium
    target: settings
    controls: ["SOC2:password={PHRASE}", "ISO27001:https://u:{PHRASE}@grc.example/A.8.22"]
    assert: {{path: sessionDefaultSettings.model, exists: true}}
"""


def test_a_control_whose_id_part_still_reads_as_a_secret_keeps_its_framework(
    tmp_path: Path,
) -> None:
    """R25 #6: `SOC2:password=[secret_fp:…]` still reads as a secret to a detector, so the
    whole control became `redacted:[secret_fp:…]`: both frameworks were lost and the two
    controls became one, though the secret was in the id part."""

    def edit(settings: dict[str, Any]) -> None:
        settings["sessionDefaultSettings"] = {"model": SONNET}

    got = _run_export_verify(tmp_path, ID_PART_CONTROLS, edit)
    assert got["export"][0] == 0, got["export"]
    assert got["verify"][0] == 0, got["verify"]
    findings = json.loads((tmp_path / "ev" / "reports" / "findings.json").read_text())
    controls = findings["rules"][0]["controls"]
    marker = r"\[secret_fp:[0-9a-f]{8}_len:20\]"
    assert len(controls) == 2, controls
    assert re.fullmatch(rf"ISO27001:{marker}", controls[0]), controls
    assert re.fullmatch(rf"SOC2:{marker}", controls[1]), controls
    for path in (tmp_path / "ev").rglob("*"):
        if path.is_file():
            assert PHRASE not in path.read_text(errors="replace"), path


TWICE = """rules:
  - id: C1
    title: the db password=Zq8hVd2LmX0pRt7Yw3Ns is not used
    severity: medium
    target: settings
    assert: {path: sessionDefaultSettings.model, exists: true}
  - id: C2
    title: the model is not Zq8hVd2LmX0pRt7Yw3Ns
    severity: medium
    target: settings
    assert: {path: sessionDefaultSettings.model, not_equals: Zq8hVd2LmX0pRt7Yw3Ns}
"""


def test_a_secret_a_detector_flags_once_is_hidden_wherever_the_policy_writes_it(
    tmp_path: Path,
) -> None:
    """R28 #3: a detector flags `password=…` in one title; `run` remembers the secret and hides
    it in the other rule's title and literal too. The copy hid only the flagged string, so the
    bundle's copy and reports showed the other in clear."""

    def edit(settings: dict[str, Any]) -> None:
        settings["sessionDefaultSettings"] = {"model": SONNET}

    got = _run_export_verify(tmp_path, TWICE, edit)
    assert got["export"][0] == 0, got["export"]
    assert got["ran"] == got["bundled"] == {"C1": "pass", "C2": "pass"}
    for folder in ("run", "ev"):
        for path in (tmp_path / folder).rglob("*"):
            if path.is_file():
                assert "Zq8hVd2LmX0pRt7Yw3Ns" not in path.read_text(errors="replace"), path
    assert got["verify"][0] == 0, got["verify"]


REF_AND_CHANGES = """rules:
  - id: LEVEL-MATCHES-SETTING
    title: env log level is the one in logLevel
    severity: high
    target: settings
    assert: {path: env.LOG_LEVEL, equals: {ref: logLevel}}
  - id: CHG-NO-TRACE
    title: no change sets anything to trace
    severity: high
    target: change
    assert: {none: changes, assert: {path: after, equals: trace}}
"""


def test_a_ref_or_a_literal_on_an_unpinned_change_flips_a_result_that_is_named(
    tmp_path: Path,
) -> None:
    """R28 #1: a `{ref: …}` compared with an `env` value, and a literal compared with `after`
    under a `changes[]` no selector or `path` literal pins to one place, compare a marker in
    the bundle as text: they were judged otherwise there, and nothing named them."""

    def edit(settings: dict[str, Any]) -> None:
        settings.setdefault("env", {}).update(LOG_LEVEL="debug", TRACE_LEVEL="trace")
        settings["logLevel"] = "debug"

    got = _run_export_verify(tmp_path, REF_AND_CHANGES, edit)
    assert got["export"][0] == 0, got["export"]
    ran, bundled = got["ran"], got["bundled"]
    assert ran["LEVEL-MATCHES-SETTING"] == "pass" and bundled["LEVEL-MATCHES-SETTING"] == "fail"
    assert ran.get("CHG-NO-TRACE") == "fail" and bundled.get("CHG-NO-TRACE") == "pass"
    listed = {(d["rule"], d["run"], d["bundle"]) for d in got["listed"] or []}
    assert ("LEVEL-MATCHES-SETTING", "pass", "fail") in listed
    assert any(rule == "CHG-NO-TRACE" and run == "fail" for rule, run, _ in listed)
    assert "not reproducible from this bundle" in got["export"][2]
    assert got["verify"][0] == 0, got["verify"]


def test_a_waivers_or_model_copy_that_hides_a_secret_has_every_rule_evaluated_again() -> None:
    """Any result may be waived by a waiver, or graded by the readiness model, whose copy
    hides a secret: `_rules_may_differ` then names every rule; with no copy hiding one, and
    no rule comparing a literal with a secret place or a remembered number, none."""
    from auditor.policy import SHIPPED_POLICY_DIR, load_policies
    from auditor.redact import Redactor
    from auditor.workflows.export import _rules_may_differ

    policy = load_policies([SHIPPED_POLICY_DIR])
    plain = replace(policy, rules=tuple(r for r in policy.rules if r.id.startswith("BASE-SBX")))
    redactor = Redactor(key=b"k" * 32)
    copies = [{"bundled": f"inputs/policies/{i}", "sha256": "0"} for i in policy.files]
    every = {r.id for r in plain.rules}
    assert len(every) > 3
    for waivers, model in (({"redacted": True}, {}), (None, {"redacted": True})):
        inputs = {"policies": copies, "waivers": waivers, "readinessModel": model}
        assert _rules_may_differ(inputs, plain, redactor) == every
    inputs = {"policies": copies, "waivers": {"sha256": "0"}, "readinessModel": {}}
    assert _rules_may_differ(inputs, plain, redactor) == set()
