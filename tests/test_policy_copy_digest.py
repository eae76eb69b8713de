"""The digest a run records of a policy file that holds a secret (tester T61 #3).

report.md, findings.json (`policy_files[].sha256`) and the state file (`runs.policy_hashes`)
held the sha256 of the file as written. The bundle's copy (`auditor export`) differs from it
only at the secret's marker, which gives the secret's length: whoever held a report (or the
state file) and the bundle could test guesses of a weak secret offline, even with
AUDITOR_FINGERPRINT_KEY set. Such a file is now cited by the sha256 of its copy, the bytes
the bundle's `inputs/policies/` carries (its markers keyed: the digest still changes with the
secret); a file with nothing to hide keeps the sha256 of its bytes.
"""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from auditor.emulator import start_emulator
from auditor.emulator.data import generate_dataset
from tests.conftest import FIXED_NOW, OWNER_TOKEN, emulator_env, run_cli

KEY = "0123456789abcdef-my-ci-secret"
GUESS = "Summer2026!"  # a weak secret: a dictionary word, a year and a mark
POLICY = """rules:
  - id: ACME-LEAK-001
    title: the leaked gateway key is not in use
    severity: high
    target: settings
    assert:
      each: customModels
      assert:
        path: apiKey
        not_equals: "{secret}"
"""
PLAIN = POLICY.replace("ACME-LEAK-001", "ACME-PLAIN-001").replace("apiKey", "id")


@pytest.fixture(scope="module")
def synced(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """One sync from the emulator into a state file made with AUDITOR_FINGERPRINT_KEY; the
    API key of a custom model in force (a literal a rule can find in use)."""
    work = tmp_path_factory.mktemp("digest")
    data = generate_dataset(revisions=20, repos=2, now=FIXED_NOW)
    models = data.history[-1]["settings"].get("customModels", [])
    in_use = [m["apiKey"] for m in models if not str(m.get("apiKey", "${")).startswith("${")]
    with start_emulator(dataset=data, tokens={OWNER_TOKEN: "owner"}) as emu:
        env = {**emulator_env(emu, work / "state.db"), "AUDITOR_FINGERPRINT_KEY": KEY}
        code, _, err = run_cli(["sync"], env, work)
        assert code == 0, err
    assert in_use, "the emulator's newest settings hold no custom model with a key"
    yield {"work": work, "env": env, "in_use": in_use[0]}


def _run(synced: dict[str, Any], out: str, policy: str = "p.yaml") -> dict[str, Any]:
    argv = ["run", "--offline", "--no-usage", "--policy", policy, "--out", out, "-o", "md,json"]
    code, _, err = run_cli(argv, synced["env"], synced["work"])
    assert code in (0, 1), err
    return dict(json.loads((synced["work"] / out / "findings.json").read_text()))


def _recorded(synced: dict[str, Any]) -> dict[str, str]:
    """The newest run's `policy_hashes` in the state file."""
    with closing(sqlite3.connect(synced["work"] / "state.db")) as db:
        rows = db.execute("SELECT policy_hashes FROM runs ORDER BY rowid").fetchall()
    return dict(json.loads(rows[-1][0]))


def _status(doc: dict[str, Any], rule: str) -> list[str]:
    return [f["status"] for f in doc["findings"] if f["rule_id"] == rule]


def test_the_digest_of_a_policy_holding_a_secret_is_its_bundle_copys(
    synced: dict[str, Any],
) -> None:
    work, env = synced["work"], synced["env"]
    text = POLICY.format(secret=GUESS)
    (work / "p.yaml").write_text(text)
    raw = hashlib.sha256(text.encode()).hexdigest()
    doc = _run(synced, "r1")
    (cited,) = [p["sha256"] for p in doc["policy_files"]]
    code, _, err = run_cli(["export", "--policy", "p.yaml", "--out", "b1"], env, work)
    assert code == 0, err
    copy = (work / "b1/inputs/policies/001-p.yaml").read_bytes()
    marker = re.search(rb"\[secret fp:[0-9a-f]+ len:11\]", copy)
    assert marker is not None  # the copy hides the literal: its length shows
    # what the reports cite is the bundle's copy, which an auditor can check
    assert cited == hashlib.sha256(copy).hexdigest()
    assert f"sha256 <code>{cited}</code>" in (work / "r1/report.md").read_text()
    assert _recorded(synced) == {"p.yaml": cited}
    bundled = json.loads((work / "b1/reports/findings.json").read_text())["policy_files"]
    assert [p["sha256"] for p in bundled] == [cited]
    # the guess the tester's script tried, the copy's marker swapped for it, no longer hits
    assert hashlib.sha256(copy.replace(marker.group(), GUESS.encode())).hexdigest() == raw
    written = [p.read_bytes() for d in ("r1", "b1") for p in (work / d).rglob("*") if p.is_file()]
    written.append((work / "state.db").read_bytes())
    assert not [w for w in written if raw.encode() in w]
    code, said, err = run_cli(["verify", "b1"], {}, work)
    assert (code, err) == (0, ""), err
    assert "byte for byte" in said


def test_a_review_with_such_a_policy_cites_no_digest_of_the_file_as_written(
    synced: dict[str, Any],
) -> None:
    work, env = synced["work"], synced["env"]
    text = POLICY.format(secret=GUESS)
    (work / "p.yaml").write_text(text)
    (work / "live.json").write_text('{"customModels": []}\n')
    live = str(work / "live.json")
    argv = ["review", live, "--against", live, "--offline", "--policy", str(work / "p.yaml")]
    code, _, err = run_cli([*argv, "--out", str(work / "rv"), "-o", "json,md"], env, work)
    assert code == 0, err
    (cited,) = [p["sha256"] for p in json.loads((work / "rv/findings.json").read_text())[
        "policy_files"]]  # fmt: skip
    assert re.fullmatch("[0-9a-f]{64}", cited)
    raw = hashlib.sha256(text.encode()).hexdigest()
    assert cited != raw
    assert not [p for p in (work / "rv").iterdir() if raw in p.read_text()]


def test_a_review_against_a_file_cites_no_user_policy_file_as_written(
    synced: dict[str, Any],
) -> None:
    """`review --against FILE` opens no state file, so nothing says which secrets the state
    learned from the data a policy file writes (a title naming an old password, which no
    detector knows by its shape): every user policy file is cited by a digest under a key
    kept nowhere (reviewer F9's note on R32 #1)."""
    work, env = synced["work"], synced["env"]
    text = PLAIN.format(secret="x").replace(
        "title: the leaked", "title: Tulip-Garden-7, the leaked"
    )
    (work / "q.yaml").write_text(text)
    (work / "live.json").write_text('{"customModels": []}\n')
    live = str(work / "live.json")
    argv = ["review", live, "--against", live, "--offline", "--policy", str(work / "q.yaml")]
    code, _, err = run_cli([*argv, "--out", str(work / "rq"), "-o", "json,md"], env, work)
    assert code == 0, err
    (cited,) = [p["sha256"] for p in json.loads((work / "rq/findings.json").read_text())[
        "policy_files"]]  # fmt: skip
    assert re.fullmatch("[0-9a-f]{64}", cited)
    raw = hashlib.sha256(text.encode()).hexdigest()
    assert cited != raw
    assert not [p for p in (work / "rq").iterdir() if raw in p.read_text()]


def test_a_changed_secret_changes_the_digest_and_the_rule_is_judged_again(
    synced: dict[str, Any],
) -> None:
    """The evaluation state keeps a rule's results by a digest of the rule as the run shows
    it (its literal a marker): a new literal is a new rule, judged afresh, its digest new."""
    work = synced["work"]
    digests, statuses = [], []
    for n, secret in enumerate((GUESS, synced["in_use"], GUESS)):
        (work / "p.yaml").write_text(POLICY.format(secret=secret))
        doc = _run(synced, f"c{n}")
        digests.append(doc["policy_files"][0]["sha256"])
        statuses.append(_status(doc, "ACME-LEAK-001"))
        assert _recorded(synced) == {"p.yaml": digests[-1]}
    assert statuses == [["pass"], ["fail"], ["pass"]]
    assert digests[0] != digests[1] and digests[2] == digests[0]
    for secret, digest in ((GUESS, digests[0]), (synced["in_use"], digests[1])):
        assert digest != hashlib.sha256(POLICY.format(secret=secret).encode()).hexdigest()


def test_a_policy_with_nothing_to_hide_keeps_the_digest_of_its_bytes(
    synced: dict[str, Any],
) -> None:
    work = synced["work"]
    text = PLAIN.format(secret="custom:none")
    (work / "plain.yaml").write_text(text)
    doc = _run(synced, "p1", "plain.yaml")
    raw = hashlib.sha256(text.encode()).hexdigest()
    assert [p["sha256"] for p in doc["policy_files"]] == [raw]
    assert _recorded(synced) == {"plain.yaml": raw}


def test_a_report_interrupted_before_the_evaluation_cites_no_digest_of_the_file_as_written(
    tmp_path: Path,
) -> None:
    """Interrupted before the state's key and memory were at hand, the partial reports name
    the files too: each of the user's own by a digest under a key kept nowhere (one with
    nothing to hide by its looks may hold a secret the state file knows: R32 #1)."""
    from auditor.cli.cmd_run import _files_cited
    from auditor.workflows.run import load_inputs

    text = POLICY.format(secret=GUESS)
    (tmp_path / "p.yaml").write_text(text)
    (tmp_path / "plain.yaml").write_text(PLAIN.format(secret="custom:none"))
    loaded = load_inputs([tmp_path / "p.yaml", tmp_path / "plain.yaml"], None, None, cwd=tmp_path)
    cited = {f.path: f.sha256 for f in _files_cited(loaded, None)}
    assert set(cited) == {"p.yaml", "plain.yaml"}
    for name, digest in cited.items():
        assert re.fullmatch("[0-9a-f]{64}", digest)
        assert digest != hashlib.sha256((tmp_path / name).read_bytes()).hexdigest()


# --- reviewer R32 #1: a run interrupted before its evaluation cited the file as written ---

LEARNED = "Tulip-Garden-7"  # a secret the state learns by its place in the data, env.DB_PASSWORD
TITLED = """rules:
  - id: ACME-HOOK-001
    title: the old database password {secret} is not used as a proxy
    severity: high
    target: settings
    assert:
      path: env.HTTPS_PROXY
      not_equals: "xyz"
"""


@pytest.fixture
def _sigint_as_in_a_terminal() -> Iterator[None]:
    """SIGINT as Ctrl-C sends it, even when the suite was started with it ignored."""
    import signal

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@pytest.fixture
def learned(tmp_path: Path, _sigint_as_in_a_terminal: None) -> Iterator[dict[str, Any]]:
    """A state file that learned `LEARNED` from the settings' env (no detector flags it by its
    looks), a policy file whose title writes it (its only secret) and one with nothing to
    hide; the emulator still running for the online runs."""
    data = generate_dataset(revisions=10, repos=2, now=FIXED_NOW)
    data.history[-1]["settings"].setdefault("env", {})["DB_PASSWORD"] = LEARNED
    (tmp_path / "pol.yaml").write_text(TITLED.format(secret=LEARNED))
    (tmp_path / "plain.yaml").write_text(PLAIN.format(secret="custom:none"))
    with start_emulator(dataset=data, tokens={OWNER_TOKEN: "owner"}) as emu:
        env = emulator_env(emu, tmp_path / "state.db")
        code, _, err = run_cli(["sync"], env, tmp_path)
        assert code == 0, err
        yield {"work": tmp_path, "env": env}


def _raw(work: Path, name: str) -> str:
    return hashlib.sha256((work / name).read_bytes()).hexdigest()


def _cited(work: Path, out: str) -> dict[str, str]:
    doc = json.loads((work / out / "findings.json").read_text())
    return {p["path"]: p["sha256"] for p in doc["policy_files"]}


def _interrupted_run(
    learned: dict[str, Any], out: str, monkeypatch: pytest.MonkeyPatch, where: str, offline: bool
) -> str:
    """`auditor run` interrupted by SIGINT as `where` (a module's function) is called; what it
    printed."""
    import importlib
    import os
    import signal

    module, name = where.rsplit(".", 1)
    owner = importlib.import_module(module)
    real = getattr(owner, name)

    def interrupted(*args: Any, **kwargs: Any) -> Any:
        os.kill(os.getpid(), signal.SIGINT)
        return real(*args, **kwargs)

    argv = ["run", "--policy", "pol.yaml", "--policy", "plain.yaml", "--out", out, "-o", "md,json"]
    with monkeypatch.context() as patched:
        patched.setattr(owner, name, interrupted)
        code, said, err = run_cli(
            [*argv, *(["--offline"] if offline else [])], learned["env"], learned["work"]
        )
    assert code == 130, err
    assert (
        "interrupted before the evaluation finished"
        in (learned["work"] / out / "report.md").read_text()
    )
    return said + err


@pytest.mark.parametrize(
    ("where", "offline"),
    [
        ("auditor.cli.cmd_run.sync_store", False),  # the state file open, its sync begun
        ("auditor.cli.cmd_run.open_store", True),  # the state file not yet open
        ("auditor.cli.cmd_run.check_at", False),  # synced, the evaluation not yet begun
    ],
)
def test_a_run_interrupted_before_its_evaluation_cites_no_policy_file_as_written(
    learned: dict[str, Any], monkeypatch: pytest.MonkeyPatch, where: str, offline: bool
) -> None:
    """Which secrets a file holds is not known before the evaluation begins: every policy file
    of the user's own is cited by a digest that tells nothing (a key kept nowhere). The file
    whose only secret the state learned from the data was cited by the sha256 of its bytes,
    and the bundle's copy shows the secret's marker and length: guesses could be tested."""
    work, env = learned["work"], learned["env"]
    said = _interrupted_run(learned, "r2", monkeypatch, where, offline)
    code, _, err = run_cli(["export", "--policy", "pol.yaml", "--out", "b"], env, work)
    assert code == 0, err
    copy = (work / "b/inputs/policies/001-pol.yaml").read_bytes()
    assert re.search(rb"\[secret fp:[0-9a-f]+ len:14\]", copy)  # its length shows
    cited = _cited(work, "r2")
    raws = {_raw(work, "pol.yaml"), _raw(work, "plain.yaml")}
    assert set(cited) == {"pol.yaml", "plain.yaml"}
    assert all(re.fullmatch("[0-9a-f]{64}", d) for d in cited.values())
    assert not raws & set(cited.values())
    assert hashlib.sha256(copy).hexdigest() not in cited.values()  # no key the bundle has
    written = [p.read_bytes() for p in work.rglob("*") if p.is_file()]
    assert not [w for w in written for raw in raws if raw.encode() in w]
    assert not [raw for raw in raws if raw in said]


def test_a_run_interrupted_once_its_evaluation_began_cites_what_the_run_would(
    learned: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Synced, its state's memory whole: the digests a complete run and `export` give, the
    copy's for the file with a secret, the bytes' for the one with nothing to hide."""
    work, env = learned["work"], learned["env"]
    argv = ["run", "--offline", "--policy", "pol.yaml", "--policy", "plain.yaml", "-o", "md,json"]
    code, _, err = run_cli([*argv, "--out", "r1"], env, work)
    assert code in (0, 1), err
    complete = _cited(work, "r1")
    said = _interrupted_run(learned, "r2", monkeypatch, "auditor.workflows.run._run_audit", False)
    assert _cited(work, "r2") == complete
    assert complete["plain.yaml"] == _raw(work, "plain.yaml")
    raw = _raw(work, "pol.yaml")
    assert complete["pol.yaml"] != raw
    code, _, err = run_cli(["export", "--policy", "pol.yaml", "--out", "b"], env, work)
    assert code == 0, err
    copy = (work / "b/inputs/policies/001-pol.yaml").read_bytes()
    assert complete["pol.yaml"] == hashlib.sha256(copy).hexdigest()
    written = [p.read_bytes() for p in work.rglob("*") if p.is_file()]
    assert not [w for w in written if raw.encode() in w]
    assert raw not in said
