"""An online `auditor run` evaluates under the memory of secrets the state file holds.

Once its sync has committed and its policy and waivers are redacted under everything the sync
learned, `auditor run` lets go of the secret values the sync learned and of the redactor's memos
of every string it redacted (`Store.start_from_file`): a first run at 100,000 revisions held
some 60 MB of them through its audit. The evaluation then reads the rows as `auditor run
--offline` in a new process would. These tests hold it to that: nothing secret reaches an
output (a learned key glued to letters in a rule's title, the caller's token in its other
forms, a token learned in the sync's last transaction), the findings are those of `sync` +
`run --offline`, and a sync that failed keeps what it learned (its rows may not be clean under
the file's memory).
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest

from auditor.emulator import start_emulator
from auditor.store import Store
from auditor.workflows.run import AuditOptions, load_inputs, run_audit
from tests.conftest import FIXED_NOW, emulator_env, secret_forms
from tests.test_secrets_canary import Canaries, _append, _cli, _plant, _rotate, _wordy

KEY = "run-after-sync-fingerprint-key-0123456789"
MARKER, MARK = re.compile(r"\[secret fp:[0-9a-f]{8} len:\d+\]"), "[secret]"


def _history(tag: str) -> tuple[Canaries, str, Any]:
    """The canaries, the caller's token (`tok-` and `tag`), and an emulator whose newest
    revisions hold the canaries: planted, then rotated with the old key pasted into a display
    name, then pasted again into a name and the author."""
    k = Canaries()
    token = k("api_token", "tok-" + tag * 8)
    emu = start_emulator(tokens={token: "owner"}, now=FIXED_NOW, revisions=60, repos=6)
    data = emu.dataset
    planted = _plant(data.history[-1]["settings"], k)
    _append(data, planted, "admin")
    _append(data, _rotate(planted, k("new_api_key", _wordy("new")), k.c["old_api_key"]), "admin")
    again = copy.deepcopy(data.history[-1]["settings"])
    again["customModels"][-1]["displayName"] = f"gw {k.c['new_api_key']}"
    _append(data, again, f"bot {k.c['old_api_key']}")
    # A token in a readiness report alone: the sync's last transaction learns it.
    entry = next(iter(data.reports[-1]["report"].values()))
    entry["rationale"] = f"found {k('report_token', 'ghp_' + 'Zq8hVd2LmX0pRt7Yw3Ns' * 2)}"
    return k, token, emu


#: What the redactor started anew hides of the caller's token written reversed, in capitals,
#: as a run of 12 of its characters (`OwnSecrets`, as when the file is opened).
SHOWN = "reversed {r} upper {u} run x{p}x"


def _recorded(
    monkeypatch: pytest.MonkeyPatch, token: str = "", values: list[frozenset[str]] | None = None
) -> list[Any]:
    """What each `Store.start_from_file` call gave (True: the memory was started anew), and
    after it, what its redactor shows of `token`'s other forms (`SHOWN`); into `values`, the
    secret values its memory then holds."""
    calls: list[Any] = []
    real = Store.start_from_file

    def recording(self: Store, taught: Any = ()) -> bool:
        done = real(self, taught)
        calls.append(done)
        if token:
            forms = SHOWN.format(r=token[::-1], u=token.upper(), p=token[3:15])
            calls.append(self.redactor.redact_shown(forms))
        if values is not None:
            values.append(self.redactor.memory.values)
        return done

    monkeypatch.setattr(Store, "start_from_file", recording)
    return calls


def _env(emu: Any, token: str, state: Path | str) -> dict[str, str]:
    """`emulator_env`, every state file under one fingerprint key (equal markers)."""
    return {**emulator_env(emu, state, token), "AUDITOR_FINGERPRINT_KEY": KEY}


def _findings(out: Path) -> dict[str, Any]:
    """What a findings.json says of the settings and reports (not of the run itself)."""
    doc = json.loads((out / "findings.json").read_text())
    kept = ("summary", "rules", "findings", "resolved", "failing_by_revision", "readiness")
    return {key: doc[key] for key in kept} | {"inputs": doc["inputs"]["revisions_evaluated"]}


def test_a_first_online_run_hides_what_its_own_sync_learned(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    k, token, emu = _history("5e1f")
    values: list[frozenset[str]] = []
    calls = _recorded(monkeypatch, token, values)
    streams: list[str] = []
    # Rules whose titles name the new key, in no detector's form: only the memory of secrets
    # tells the audit to hide it. Glued to letters (`gw<key>x`), only its value finds it: the
    # policy is redacted before the memory is started anew from the file's fingerprints,
    # which are matched between word boundaries.
    policy = tmp_path.parent / f"{tmp_path.name}-policy.yaml"
    policy.write_text(
        "rules:\n"
        + "".join(
            f"  - id: ROT-{n}\n    title: the gateway key {text} was rotated\n"
            "    severity: high\n    target: settings\n"
            "    assert: {path: customModels, type: object}\n"
            for n, text in enumerate(
                [k.c["new_api_key"], f"gw{k.c['new_api_key']}x", f"gw{k.c['old_api_key']}x"]
            )
        )
        # A key only the policy holds, which a detector finds: learned from the policy, never
        # in the file; the memory is started anew all the same, and it stays hidden.
        + "  - id: ROT-9\n    title: no old AWS key\n    severity: low\n    target: settings\n"
        f"    description: the old key was {k('policy_key', 'AKIA' + 'Q7ZB3XK2M9PL4TRW')}\n"
        "    assert: {path: customModels, type: object}\n"
    )
    try:
        env = _env(emu, token, tmp_path / "state.db")
        for argv in (["run"], ["run", "--all-revisions"]):
            out_dir = ["--out", str(tmp_path / argv[-1]), "--policy", str(policy)]
            code, out, err = _cli([*argv, *out_dir], env, tmp_path)
            assert code in (0, 1), err
            streams += [out, err]
    finally:
        emu.stop()
    # Both audits ran under the memory recalled from the file, not the sync's values (the
    # second's sync learned nothing new), the caller's own token hidden in its other forms.
    hidden = SHOWN.format(r=MARK, u=MARK, p=MARK)
    assert [c if c is True else MARKER.sub(MARK, c) for c in calls] == [True, hidden] * 2
    # The values the sync learned are let go; the key only the policy holds is learned again.
    assert all(k.c["policy_key"] in v and k.c["new_api_key"] not in v for v in values), values
    shown = (tmp_path / "run" / "report.html").read_text()
    assert "ROT-2" in shown and "the old key was [secret fp:" in shown
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert len(files) >= 11  # five reports each, and the state file
    blobs = streams + [p.read_bytes().decode("utf-8", "replace") for p in files]
    leaks = [
        (name, form)
        for name, value in k.c.items()
        for form in secret_forms(value)
        if any(form in text for text in blobs)
    ]
    assert not leaks, leaks[:5]


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_an_online_run_finds_what_sync_and_an_offline_run_find(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest, backend: str
) -> None:
    """(In PostgreSQL too, whose connection is in autocommit between transactions: the
    memory starts anew there as well.)"""
    _, token, emu = _history("7c2d")
    calls = _recorded(monkeypatch)
    if backend == "sqlite":
        states: list[Any] = [tmp_path / "one.db", tmp_path / "two.db"]
    else:
        cluster = request.getfixturevalue("pg_cluster")
        states = [cluster.create_database(f"t_after_sync_{n}_{tmp_path.name[-8:]}") for n in "12"]
    try:
        one, two = (_env(emu, token, state) for state in states)
        assert (
            _cli(["run", "--soft-fail", "--out", str(tmp_path / "online")], one, tmp_path)[0] == 0
        )
        assert _cli(["sync"], two, tmp_path)[0] == 0
        argv = ["run", "--offline", "--soft-fail", "--out", str(tmp_path / "offline")]
        assert _cli(argv, two, tmp_path)[0] == 0
    finally:
        emu.stop()
    assert calls == [True]  # the online run's; `run --offline` has no sync to forget
    online, offline = _findings(tmp_path / "online"), _findings(tmp_path / "offline")
    assert online["findings"], "the history holds failing settings"
    assert online == offline


def test_a_failed_sync_keeps_what_it_learned_for_the_audit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    k, token, emu = _history("a0b9")
    calls = _recorded(monkeypatch)
    try:
        env = _env(emu, token, tmp_path / "state.db")
        assert _cli(["sync"], env, tmp_path)[0] == 0
        _append(emu.dataset, _plant(emu.dataset.history[-1]["settings"], k), "admin")
        emu.faults.add("history", "settings_not_object", page=1, value=f"x {token}")
        code, out, err = _cli(["run", "--out", str(tmp_path / "run")], env, tmp_path)
    finally:
        emu.stop()
    assert "sync failed, auditing the stored data" in err
    assert calls == []  # not started anew: the failed sync's secrets stay known
    blobs = [out, err, *(p.read_text() for p in (tmp_path / "run").iterdir())]
    leaks = [n for n, v in k.c.items() for f in secret_forms(v) if any(f in b for b in blobs)]
    assert code == 2 and not leaks, leaks[:5]  # (2: incomplete data, a failed sync)


@pytest.mark.parametrize(
    "case",
    [
        "searched",
        "taught",
        "not searched",
        "not saved",
        "in a sync",
        "in a transaction",
        "kept unscrubbed",
    ],
)
def test_the_memory_starts_anew_only_when_the_rows_are_clean_under_the_file_s(
    tmp_path: Path, case: str
) -> None:
    """A learned value must be in the file and searched for in its rows, or be one the run's
    inputs taught (learned again); never in the middle of a sync, nor after a failed one."""
    secret = "orange-guard-battery-271828-staple"
    with Store.open(tmp_path / "state.db") as store:
        store.redactor.learn(secret)
        if case != "taught":
            with store.transaction():
                if case != "not saved":
                    store.remember_secrets()  # (its fingerprint is in the file)
                if case != "not searched":
                    store.scrub_stored()
        if case == "kept unscrubbed":
            store.kept_unscrubbed = "the last scrub could not be written"
        if case == "in a sync":
            with store.transaction():
                store.begin_sync(FIXED_NOW, "http://127.0.0.1:1")
                assert not store.start_from_file()
            return
        if case == "in a transaction":  # (one that learns and remembers, not yet committed)
            with store.transaction():
                store.redactor.learn(secret + "-2")
                store.remember_secrets()
                store.scrub_stored()
                assert not store.start_from_file()
            return
        started = store.start_from_file(taught=[secret] if case == "taught" else ())
        assert started == (case in ("searched", "taught"))
        # The secret stays hidden whichever memory the store redacts with now.
        assert secret not in store.redactor.redact_text(f"key {secret} and gw{secret}x")


def test_an_integrity_issue_is_read_under_what_the_sync_learned(tmp_path: Path) -> None:
    """The paths kept with an integrity issue are redacted as they are read: an online run
    reads them before its memory starts anew, under the values its sync learned, so a key
    with a learned secret glued in (found by its value alone) is shown as its marker."""
    secret, state = "orange-issue-battery-161803-staple", tmp_path / "state.db"

    def learned(store: Store) -> None:  # as a sync that meets the secret learns it
        store.redactor.learn(secret)
        with store.transaction():
            store.remember_secrets()
            store.scrub_stored()

    with Store.open(state) as store:  # an earlier run: the file remembers its fingerprint
        learned(store)
    changes = f"extraArgs.k{secret}x added"
    with Store.open(state) as store, store.transaction():  # a later one, by fingerprint alone
        store.record_integrity_issue(1, None, "a" * 64, "b" * 64, FIXED_NOW, changes=changes)
    loaded = load_inputs([], None, None, cwd=tmp_path)
    with Store.open(state) as store:  # this run: its sync learns the secret by value again
        learned(store)
        options = AuditOptions(run_id="r1", now=FIXED_NOW)
        data = run_audit(store, loaded, options, after_sync=True).data
    shown = repr(data.findings)
    assert "extraArgs.k" in shown and secret not in shown
