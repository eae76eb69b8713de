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
    """Interrupted before the state's key was at hand, the partial reports name the files
    too: one holding a secret by a digest under a key kept nowhere."""
    from auditor.cli.cmd_run import _files_cited
    from auditor.workflows.run import load_inputs

    text = POLICY.format(secret=GUESS)
    (tmp_path / "p.yaml").write_text(text)
    (tmp_path / "plain.yaml").write_text(PLAIN.format(secret="custom:none"))
    loaded = load_inputs([tmp_path / "p.yaml", tmp_path / "plain.yaml"], None, None, cwd=tmp_path)
    cited = {f.path: f.sha256 for f in _files_cited(loaded)}
    assert cited["plain.yaml"] == hashlib.sha256((tmp_path / "plain.yaml").read_bytes()).hexdigest()
    assert re.fullmatch("[0-9a-f]{64}", cited["p.yaml"])
    assert cited["p.yaml"] != hashlib.sha256(text.encode()).hexdigest()
