"""An online `auditor run` audits under the memory of secrets the state file holds.

Once its sync has committed, `auditor run` lets go of the secret values the sync learned and
of the redactor's memos of every string it redacted (`Store.start_from_file`): a first run at
100,000 revisions held some 60 MB of them through its audit. The audit then reads the rows as
`auditor run --offline` in a new process would. These tests hold it to that: nothing secret
reaches an output, the findings are those of `sync` + `run --offline`, and a sync that failed
keeps what it learned (its rows may not be clean under the file's memory).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from auditor.emulator import start_emulator
from auditor.store import Store
from tests.conftest import FIXED_NOW, secret_forms
from tests.test_secrets_canary import Canaries, _append, _cli, _plant, _rotate, _wordy

KEY = "run-after-sync-fingerprint-key-0123456789"


def _history(k: Canaries, token: str) -> Any:
    """An emulator whose newest revisions hold the canaries: planted, then rotated with the
    old key pasted into a display name, then pasted again into a name and the author."""
    emu = start_emulator(tokens={token: "owner"}, now=FIXED_NOW, revisions=60, repos=6)
    data = emu.dataset
    planted = _plant(data.history[-1]["settings"], k)
    _append(data, planted, "admin")
    _append(data, _rotate(planted, k("new_api_key", _wordy("new")), k.c["old_api_key"]), "admin")
    again = copy.deepcopy(data.history[-1]["settings"])
    again["customModels"][-1]["displayName"] = f"gw {k.c['new_api_key']}"
    _append(data, again, f"bot {k.c['old_api_key']}")
    return emu


def _recorded(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """What each `Store.start_from_file` call gave (True: the memory was started anew)."""
    calls: list[bool] = []
    real = Store.start_from_file

    def recording(self: Store) -> bool:
        done = real(self)
        calls.append(done)
        return done

    monkeypatch.setattr(Store, "start_from_file", recording)
    return calls


def _env(emu: Any, token: str, state: Path) -> dict[str, str]:
    return {
        "AUDITOR_BASE_URL": emu.base_url,
        "AUDITOR_APP_URL": emu.app_url,
        "AUDITOR_TOKEN": token,
        "AUDITOR_STATE": str(state),
        "AUDITOR_FINGERPRINT_KEY": KEY,
    }


def _findings(out: Path) -> dict[str, Any]:
    """What a findings.json says of the settings and reports (not of the run itself)."""
    doc = json.loads((out / "findings.json").read_text())
    kept = ("summary", "rules", "findings", "resolved", "failing_by_revision", "readiness")
    return {key: doc[key] for key in kept} | {"inputs": doc["inputs"]["revisions_evaluated"]}


def test_a_first_online_run_hides_what_its_own_sync_learned(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    k = Canaries()
    token = k("api_token", "tok-" + "5e1f" * 8)
    emu = _history(k, token)
    calls = _recorded(monkeypatch)
    streams: list[str] = []
    # A rule whose title names the new key, in no detector's form: only the memory of secrets
    # (the file's, recalled) tells the audit to hide it.
    policy = tmp_path.parent / f"{tmp_path.name}-policy.yaml"
    policy.write_text(
        "rules:\n  - id: ROT-1\n"
        f"    title: the gateway key {k.c['new_api_key']} was rotated\n"
        "    severity: high\n    target: settings\n"
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
    # Both audits ran under the memory recalled from the file, not the sync's values.
    assert calls == [True, True]
    assert "ROT-1" in (tmp_path / "run" / "report.md").read_text()
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


def test_an_online_run_finds_what_sync_and_an_offline_run_find(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    k = Canaries()
    token = k("api_token", "tok-" + "7c2d" * 8)
    emu = _history(k, token)
    calls = _recorded(monkeypatch)
    try:
        one = _env(emu, token, tmp_path / "one.db")
        two = _env(emu, token, tmp_path / "two.db")
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
    k = Canaries()
    token = k("api_token", "tok-" + "a0b9" * 8)
    emu = _history(k, token)
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
