"""A secret in a readiness model's criterion ids or pillars is never printed.

A criterion id is a name the findings, the readiness rows and the reports go by, shown as
written. One holding a value the audited settings hold as a secret (an API key the sync
learned, written into an id) used to be printed in every output and on stderr, online and
offline. Such a model is now refused as a rule id holding a secret is: a policy error (exit 2)
at the id's `file:line:col`, the value not shown, and a sync that ran first keeps what it
stored. A pillar is prose in each criterion's view, which rules read and findings quote: a
secret in it (a token pasted there, a remembered key) is shown as its marker, as in a waiver's
reason, and nothing is refused for it (`Token: GitHub`), nor the shipped model when a
remembered password is one of its words.
"""

from __future__ import annotations

import copy
import json
import re
import sqlite3
from pathlib import Path

from auditor.evaluate.readiness import DEFAULT_MODEL_PATH
from auditor.store import Store
from tests.conftest import secret_forms
from tests.test_run_after_sync import KEY, _env, _history
from tests.test_secrets_canary import _append, _cli

#: The shipped model's head (levels, threshold) and two of its criteria, each placed below.
HEAD = DEFAULT_MODEL_PATH.read_text().split("criteria:\n")[0] + "criteria:\n"


def _model(tmp_path: Path, lines: list[str], head: str = HEAD) -> Path:
    path = tmp_path / "model.yaml"
    path.write_text(head + "".join(f"  {line}\n" for line in lines))
    return path


def _outputs(out: Path) -> str:
    return "".join(p.read_text() for p in sorted(out.glob("*")) if p.is_file())


def test_an_online_run_refuses_a_criterion_id_holding_a_key_its_sync_learned(
    tmp_path: Path,
) -> None:
    k, token, emu = _history("7c3a")
    key = k.c["new_api_key"]
    # Glued to letters, only the key's value finds it (a fingerprint is matched between word
    # boundaries): the sync's memory, before the run starts again from the state file's.
    model = _model(
        tmp_path,
        [
            "lint_config: {level: 1, scope: application, pillar: Style}",
            f"crit_gw{key}x: {{level: 2, scope: repository, pillar: Security}}",
        ],
    )
    state, out = tmp_path / "state.db", tmp_path / "out"
    with emu:
        env = _env(emu, token, state)
        argv = ["run", "--readiness-model", str(model), "--out", str(out), "--soft-fail"]
        code, stdout, stderr = _cli(argv, env, tmp_path)
    assert code == 2, stderr
    assert (
        "model.yaml:15:3: error: $.criteria: the id of this criterion holds a value the state "
        "file remembers as a secret (not shown)"
    ) in stderr
    for text in (stdout, stderr, _outputs(out) if out.exists() else ""):
        assert key not in text and key[4:16] not in text
    # the sync had committed: what it stored stays, clean of the key
    with sqlite3.connect(state) as db:
        assert db.execute("SELECT count(*) FROM revisions").fetchone()[0] == 63
    assert key.encode() not in state.read_bytes()


def test_an_offline_run_refuses_an_id_holding_a_remembered_secret_at_its_place(
    tmp_path: Path,
) -> None:
    k, token, emu = _history("9d1e")
    key, old = k.c["new_api_key"], k.c["old_api_key"]
    state = tmp_path / "state.db"
    with emu:
        env = _env(emu, token, state)
        assert _cli(["sync"], env, tmp_path)[0] == 0
    # A new process knows the keys by their fingerprints alone: found as whole words.
    model = _model(
        tmp_path,
        [
            f"{key}: {{level: 1, scope: application, pillar: Style}}",
            f"readme: {{level: 1, scope: repository, pillar: 'docs {old}'}}",
            f"{old}: {{level: 2, scope: repository, pillar: Documentation}}",
        ],
    )
    out = tmp_path / "out"
    argv = ["run", "--offline", "--readiness-model", str(model), "--out", str(out)]
    code, stdout, stderr = _cli(argv, {**env, "AUDITOR_TOKEN": token}, tmp_path)
    assert code == 2, stderr
    problems = [line for line in stderr.splitlines() if "model.yaml:" in line]
    assert [re.match(r".*model\.yaml:(\d+:\d+): ", line)[1] for line in problems] == [
        "14:3",
        "16:3",
    ], problems
    assert "$.criteria: the id of this criterion holds a value the state file remembers" in stderr
    assert not out.exists() or not list(out.glob("*.json"))
    for text in (stdout, stderr):
        assert key not in text and old not in text
    # `review` checks the model as `run` does.
    proposed = tmp_path / "proposed.json"
    proposed.write_text(json.dumps(emu.dataset.history[-1]["settings"]))
    argv = ["review", str(proposed), "--offline", "--readiness-model", str(model)]
    code, stdout, stderr = _cli([*argv, "--out", str(tmp_path / "r")], env, tmp_path)
    assert code == 2, stderr
    assert "model.yaml:14:3: error: $.criteria: the id of this criterion holds a value" in stderr
    assert key not in stdout + stderr and old not in stdout + stderr


#: A token a value detector finds wherever it is written.
GITHUB = "ghp_" + "aB3dE5gH7jK9mN1pQ3sT5vX7zA9cE1gI3kM5"


def test_a_secret_in_a_pillar_is_shown_as_its_marker_in_every_output(tmp_path: Path) -> None:
    """A rule that quotes the pillars quotes a pasted token and a remembered key as their
    markers, in every report and in the evaluation state the state file keeps."""
    k, token, emu = _history("5b0d")
    old = k.c["old_api_key"]
    model = _model(
        tmp_path,
        [
            f"readme: {{level: 1, scope: repository, pillar: '{GITHUB}'}}",
            f"agents_md: {{level: 2, scope: repository, pillar: 'docs {old}'}}",
            "lint_config: {level: 1, scope: application, pillar: Style}",
        ],
    )
    policy = tmp_path / "pillar.yaml"
    policy.write_text(
        "rules:\n"
        + "".join(
            f"  - id: RDY-PIL-00{n}\n    title: the {cid} criterion is under Documentation\n"
            "    severity: low\n    target: readiness\n"
            f"    assert: {{path: criteria.{cid}.pillar, equals: Documentation}}\n"
            for n, cid in enumerate(["readme", "agents_md"])
        )
    )
    state, out = tmp_path / "state.db", tmp_path / "out"
    with emu:
        env = _env(emu, token, state)
        argv = ["run", "--readiness-model", str(model), "--policy", str(policy)]
        code, stdout, stderr = _cli([*argv, "--out", str(out), "--soft-fail"], env, tmp_path)
        assert code == 0, stderr
        again = ["run", "--offline", "--readiness-model", str(model), "--policy", str(policy)]
        code, more, err = _cli([*again, "--out", str(tmp_path / "b")], env, tmp_path)
        assert code == 1, err  # (the readme pillar fails, each night)
    found = (out / "findings.json").read_text()
    assert '"actual": "[secret fp:' in found and '"actual": "docs [secret fp:' in found
    with Store.open(state, fingerprint_key=KEY.encode()) as store:
        states = b"".join(row.state for row in store.eval_state())
    assert states, "the evaluation state is kept"
    texts = [stdout, stderr, more, err, _outputs(out), _outputs(tmp_path / "b")]
    texts += [states.decode("utf-8", "replace"), state.read_bytes().decode("latin-1")]
    for secret in (GITHUB, old):
        for form in secret_forms(secret):
            assert not any(form in text for text in texts), (secret, form)


def test_a_model_of_plain_names_is_judged_as_before(tmp_path: Path) -> None:
    """The check refuses no plain name: a model with ids and pillars of other shapes (prose
    the value detectors would take for a credential, `Token: GitHub`, among them) runs, and a
    rule reading a plain pillar quotes it as written."""
    _, token, emu = _history("2b8f")
    model = _model(
        tmp_path,
        [
            "lint_config: {level: 1, scope: application, pillar: Code Hygiene}",
            "readme: {level: 1, scope: repository, pillar: 'Docs & Onboarding'}",
            "Custom-Check.v2: {level: 2, scope: repository, pillar: 'Ops/CI (2026)'}",
            "vcs_cli_tools: {level: 2, scope: repository, pillar: 'Token: GitHub'}",
            "secret_scanning: {level: 2, scope: repository, pillar: 'Secret: Management'}",
        ],
    )
    policy = tmp_path / "pillar.yaml"
    policy.write_text(
        "rules:\n  - id: RDY-PIL-001\n    title: the readme criterion is under Documentation\n"
        "    severity: low\n    target: readiness\n"
        "    assert: {path: criteria.readme.pillar, equals: Documentation}\n"
    )
    out = tmp_path / "out"
    with emu:
        env = _env(emu, token, tmp_path / "state.db")
        argv = ["run", "--readiness-model", str(model), "--policy", str(policy)]
        code, _, stderr = _cli([*argv, "--out", str(out), "--soft-fail"], env, tmp_path)
    assert code == 0, stderr
    assert '"actual": "Docs & Onboarding"' in (out / "findings.json").read_text()


def test_a_remembered_password_that_is_a_word_of_the_shipped_model_refuses_nothing(
    tmp_path: Path,
) -> None:
    """The shipped model is public text: a password the settings hold that is one of its
    pillars (`Security`) or criterion ids (`readme`) says nothing there, and every run of
    the shipped model goes on as before."""
    _, token, emu = _history("4a6c")
    settings = copy.deepcopy(emu.dataset.history[-1]["settings"])
    settings["env"]["DB_PASSWORD"] = "Security"
    settings["env"]["API_PASSWORD"] = "readme"
    _append(emu.dataset, settings, "admin")
    state, out = tmp_path / "state.db", tmp_path / "out"
    with emu:
        env = _env(emu, token, state)
        code, _, stderr = _cli(["run", "--out", str(out), "--soft-fail"], env, tmp_path)
        assert code == 0, stderr
        argv = ["run", "--offline", "--out", str(tmp_path / "again"), "--soft-fail"]
        code, _, stderr = _cli(argv, env, tmp_path)
        assert code == 0, stderr
        # given by a copy of its bytes (a pinned one), it is the shipped model still
        copied = tmp_path / "pinned.yaml"
        copied.write_bytes(DEFAULT_MODEL_PATH.read_bytes())
        code, _, stderr = _cli([*argv, "--readiness-model", str(copied)], env, tmp_path)
        assert code == 0, stderr
    # (the passwords are remembered as secrets: the memory hides them as words)
    with Store.open(state, fingerprint_key=KEY.encode()) as store:
        assert store.redactor.scrub_known("pillar Security, id readme") == (
            f"pillar {store.marker('Security')}, id {store.marker('readme')}"
        )


def test_prose_in_a_pillar_that_a_detector_flags_changes_no_verdict(tmp_path: Path) -> None:
    """A pillar is redacted for display only: `Bearer tokens` (a detector reads `tokens` as
    the bearer's token) taught the run `tokens`, the shipped usage rules' path
    `tokens.by_model` became a marker that matched nothing, and 67 of their results turned
    `unknown`. With the shipped model's pillar so renamed, every result is as with it."""
    _, token, emu = _history("6e2a")
    shipped = DEFAULT_MODEL_PATH.read_text()
    assert shipped.count('pillar: "Testing"') > 1
    renamed = tmp_path / "bearer.yaml"
    renamed.write_text(shipped.replace('pillar: "Testing"', 'pillar: "Bearer tokens"'))
    with emu:
        env = _env(emu, token, tmp_path / "state.db")
        assert _cli(["sync"], env, tmp_path)[0] == 0
    found = []
    for name, extra in (("shipped", []), ("bearer", ["--readiness-model", str(renamed)])):
        out = tmp_path / name
        argv = ["run", "--offline", "--soft-fail", "--out", str(out), *extra]
        code, _, stderr = _cli(argv, env, tmp_path)
        assert code == 0, stderr
        doc = json.loads((out / "findings.json").read_text())
        found.append(([(r["id"], r["title"]) for r in doc["rules"]], doc["summary"]["by_status"]))
    assert found[0] == found[1]
    assert any(rule.startswith("USE-") for rule, _ in found[0][0])  # (the usage rules ran)


def _cited(findings: Path) -> str:
    """The sha256 the run's findings.json cites for the readiness model."""
    inputs = json.loads(findings.read_text())["inputs"]["files"]
    return next(f["sha256"] for f in inputs if f["role"] == "readiness model")


def test_a_secret_only_in_a_comment_of_the_model_changes_the_digest_cited(
    tmp_path: Path,
) -> None:
    """A model is cited by the sha256 of its copy with its secrets as markers, not of its
    bytes, which would let guesses of the secret be tested offline: a token or a remembered
    key written only in a comment counts (the copy is made only when something is to be
    hidden; deciding that from the data alone would miss a comment). A model with nothing
    to hide is cited by its bytes' sha256."""
    import hashlib

    k, token, emu = _history("c0a1")
    old = k.c["old_api_key"]
    state = tmp_path / "state.db"
    with emu:
        env = _env(emu, token, state)
        assert _cli(["sync"], env, tmp_path)[0] == 0
    lines = ["readme: {level: 1, scope: repository, pillar: Documentation}"]
    for n, comment in enumerate([f"# was {GITHUB}", f"# the old key: {old}", "# plain words"]):
        model = _model(tmp_path, [*lines, comment])
        out = tmp_path / f"out{n}"
        argv = ["run", "--offline", "--soft-fail", "--readiness-model", str(model)]
        code, stdout, stderr = _cli([*argv, "--out", str(out)], env, tmp_path)
        assert code == 0, stderr
        written = hashlib.sha256(model.read_bytes()).hexdigest()
        assert (_cited(out / "findings.json") == written) == (comment == "# plain words"), comment
        for secret in (GITHUB, old):
            assert secret not in stdout + stderr + _outputs(out)
