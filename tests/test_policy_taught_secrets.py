"""A value only the policy says is secret is hidden in the stored rows and every output.

A detector finds a key in a rule's remediation (`Authorization: Bearer <key>`): the run learns
it, and the policy's text shows its marker. The same key stored earlier in plain text, in a
display name no detector flags, was judged and quoted in clear by that very rule, in every
report and in the state file. The run now remembers what its inputs taught, as a sync does,
and redacts again the stored rows holding it before it judges them (`Store.remember_taught`).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

from auditor.emulator import start_emulator
from tests.conftest import FIXED_NOW, OWNER_TOKEN, emulator_env, secret_forms
from tests.test_secrets_canary import _append, _cli, _wordy


def _scene(tmp_path: Path) -> tuple[str, object, Path, Path]:
    """The key, an emulator whose newest revision shows it in a model's display name, a
    policy that names it in a remediation and one that does not."""
    key = _wordy("taught")
    emu = start_emulator(tokens={OWNER_TOKEN: "owner"}, now=FIXED_NOW, revisions=30, repos=3)
    settings = copy.deepcopy(emu.dataset.history[-1]["settings"])
    settings["customModels"][0]["displayName"] = f"gateway {key}"
    _append(emu.dataset, settings, "admin")
    rule = (
        "rules:\n  - id: GW-001\n    title: the gateway model is named plainly\n"
        "    severity: high\n    target: settings\n"
        "    assert: {path: 'customModels[0].displayName', equals: gateway}\n"
    )
    told, plain = tmp_path / "told.yaml", tmp_path / "plain.yaml"
    told.write_text(rule + f"    remediation: 'call it with Authorization: Bearer {key}'\n")
    plain.write_text(rule + "    remediation: rename it\n")
    return key, emu, told, plain


def _everything(out: Path, state: Path, *streams: str) -> str:
    files = [*sorted(out.glob("*")), *sorted(state.parent.glob(state.name + "*"))]
    return "".join(streams) + "".join(p.read_bytes().decode("latin-1") for p in files)


def _gateway(out: Path) -> str:
    """GW-001's finding, as findings.json writes it."""
    doc = json.loads((out / "findings.json").read_text())
    (found,) = [f for f in doc["findings"] if f["rule_id"] == "GW-001"]
    return json.dumps(found)


def test_an_offline_run_hides_a_stored_value_its_policy_says_is_secret(tmp_path: Path) -> None:
    key, emu, told, plain = _scene(tmp_path)
    state = tmp_path / "state.db"
    offline = ["run", "--offline", "--soft-fail", "--out"]
    with emu:
        env = emulator_env(emu, state)
        assert _cli(["sync"], env, tmp_path)[0] == 0
        # Nothing says the display name is secret: the rule quotes it.
        argv = [*offline, str(tmp_path / "a"), "--policy", str(plain)]
        code, _, stderr = _cli(argv, env, tmp_path)
        assert code == 0, stderr
        assert key in _gateway(tmp_path / "a")
        # The policy says so: the row is redacted again, the rule judges and quotes the marker.
        out = tmp_path / "b"
        code, stdout, stderr = _cli([*offline, str(out), "--policy", str(told)], env, tmp_path)
        assert code == 0, stderr
        assert "gateway [secret fp:" in _gateway(out)
        for form in secret_forms(key):
            assert form not in _everything(out, state, stdout, stderr), form
        # Remembered in the state file: the next night's revision, which shows it again, is
        # stored with its marker, and a run whose policy says nothing of it shows the marker.
        _append(emu.dataset, copy.deepcopy(emu.dataset.history[-1]["settings"]), "admin")
        assert _cli(["sync"], env, tmp_path)[0] == 0
        out = tmp_path / "c"
        code, stdout, stderr = _cli([*offline, str(out), "--policy", str(plain)], env, tmp_path)
        assert code == 0, stderr
        assert "gateway [secret fp:" in _gateway(out)
        code, shown, _ = _cli(["history", "--format", "json"], env, tmp_path)
        assert code == 0 and key not in shown and key not in _everything(out, state, stdout, stderr)


def test_a_first_online_run_hides_it_too(tmp_path: Path) -> None:
    key, emu, told, _ = _scene(tmp_path)
    state, out = tmp_path / "state.db", tmp_path / "out"
    with emu:
        env = emulator_env(emu, state)
        argv = ["run", "--soft-fail", "--out", str(out), "--policy", str(told)]
        code, stdout, stderr = _cli(argv, env, tmp_path)
    assert code == 0, stderr
    assert "gateway [secret fp:" in _gateway(out)
    for form in secret_forms(key):
        assert form not in _everything(out, state, stdout, stderr), form
