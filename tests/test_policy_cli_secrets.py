"""`auditor policy lint` and `policy test` quote no secret, as a user runs them.

A state file a sync filled remembers an `env` value and a Bearer header's credential (values
no detector sees by their looks: only their place, then the memory, hides them). A policy with
mistakes quoting them is linted with that state file named (`--state`, `AUDITOR_STATE`) or
found (`.auditor/state.db`): its errors and its history warnings show
`<not shown: looks like a secret>`, as `run --offline` does on the same files. A policy test
case named with the key its own settings hold prints the name with the key left out.
"""

from __future__ import annotations

import copy
import secrets
import shutil
import string
from collections.abc import Iterator
from pathlib import Path

import pytest

from auditor.emulator import start_emulator
from tests.conftest import FIXED_NOW, OWNER_TOKEN, emulator_env, run_cli, secret_forms

pytestmark = pytest.mark.e2e

NOT_SHOWN = "<not shown: looks like a secret>"


def _wordy() -> str:
    """A secret no detector sees (low entropy, no known format): only its place, then the
    memory of secrets, hides it."""
    return f"orange-probe-battery-{secrets.randbelow(10**6):06d}-staple"


def _plain(n: int = 20) -> str:
    """A credential of letters and digits (a Bearer header's), no known format."""
    alphabet = string.ascii_letters + string.digits
    # a letter first: it is also written as a path's key (`env.<it>`), which a digit cannot start
    return secrets.choice(string.ascii_letters) + "".join(
        secrets.choice(alphabet) for _ in range(n - 1)
    )


PHRASE = _wordy()  # an `env` value: secret by its place
BEARER = _plain()  # the credential of a custom model's `Authorization: Bearer …` header


def _absent(text: str, *values: str) -> None:
    for value in values:
        for form in secret_forms(value):
            assert form not in text, f"{value!r} shown (as {form!r}):\n{text}"


@pytest.fixture(scope="module")
def state(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A state file one sync filled from an emulator whose latest revision holds both."""
    folder = tmp_path_factory.mktemp("lintstate")
    with start_emulator(tokens={OWNER_TOKEN: "owner"}, now=FIXED_NOW, revisions=5, repos=1) as e:
        data = e.dataset
        with data.lock:
            last = copy.deepcopy(data.history[-1])
            last["revision"] += 1
            last["settings"].setdefault("env", {})["DEPLOY_PHRASE"] = PHRASE
            last["settings"]["customModels"] = [
                {
                    "id": "c",
                    "model": "m",
                    "provider": "openai",
                    "extraHeaders": {"Authorization": f"Bearer {BEARER}"},
                }
            ]
            data.history.append(last)
        code, _out, err = run_cli(["sync"], emulator_env(e, folder / "state.db"), folder)
        assert code == 0, err
    yield folder / "state.db"


# A rule file someone pasted the values into by mistake: every line quotes one back.
ERRORS = f"""\
rules:
  - id: L-1
    title: t
    severity: high
    target: change
    assert: {{none: changes, assert: {{path: kind, in: ["{PHRASE}"]}}}}
  - id: L-2
    title: t
    severity: high
    target: settings
    assert: {{path: maxAutonomyLevel, at_most: {{enum: autonomy, value: "{BEARER}"}}}}
  - id: L-3
    title: t
    severity: high
    target: settings
    assert: {{path: sandbox.enabled, matches: "{PHRASE}("}}
  - id: L-4
    title: t
    severity: "{BEARER}"
    target: settings
    assert: {{path: sandbox.enabled, exists: true}}
    "{PHRASE}": an unknown key
"""

# Valid rules whose paths name the values: the history check warns of each, quoting it.
WARNINGS = f"""\
rules:
  - id: W-1
    title: t
    severity: high
    target: settings
    assert: {{path: "env.{BEARER}", exists: true}}
  - id: W-2
    title: t
    severity: high
    target: settings
    assert: {{path: "customModels[id={PHRASE}].model", exists: true}}
"""


def _policies(folder: Path) -> Path:
    pol = folder / "pol"
    pol.mkdir()
    (pol / "errors.yaml").write_text(ERRORS)
    (pol / "warnings.yaml").write_text(WARNINGS)
    return pol


def test_lint_state_flag_hides_remembered_secrets_in_errors(state: Path, tmp_path: Path) -> None:
    pol = _policies(tmp_path)
    code, out, err = run_cli(
        ["policy", "lint", str(pol / "errors.yaml"), "--state", str(state)], {}, tmp_path
    )
    assert code == 2, out + err
    _absent(out + err, PHRASE, BEARER)
    assert "is not a change kind" in out
    assert "is not a level of autonomy" in out
    assert "invalid regex" in out
    assert "unknown key" in out
    assert out.count(NOT_SHOWN) >= 5, out


def test_lint_state_flag_hides_remembered_secrets_in_history_warnings(
    state: Path, tmp_path: Path
) -> None:
    pol = _policies(tmp_path)
    code, out, err = run_cli(
        ["policy", "lint", str(pol / "warnings.yaml"), "--state", str(state)], {}, tmp_path
    )
    assert code == 0, out + err
    _absent(out + err, PHRASE, BEARER)
    assert f"`env.{NOT_SHOWN}` appears in none of the" in out, out
    assert "matches no entry in any of the" in out, out
    assert "0 error(s), 2 warning(s)" in err


def test_lint_with_auditor_state_hides_remembered_secrets(state: Path, tmp_path: Path) -> None:
    pol = _policies(tmp_path)
    for name in ("errors.yaml", "warnings.yaml"):
        code, out, err = run_cli(
            ["policy", "lint", str(pol / name)], {"AUDITOR_STATE": str(state)}, tmp_path
        )
        assert code in (0, 2), out + err
        _absent(out + err, PHRASE, BEARER)
        assert NOT_SHOWN in out, out


def test_lint_with_the_default_state_file_hides_remembered_secrets(
    state: Path, tmp_path: Path
) -> None:
    # no flag, no variable: `.auditor/state.db` in the folder it runs in, as `run` finds it
    (tmp_path / ".auditor").mkdir()
    shutil.copy(state, tmp_path / ".auditor" / "state.db")
    pol = _policies(tmp_path)
    code, out, err = run_cli(["policy", "lint", str(pol)], {}, tmp_path)
    assert code == 2, out + err
    _absent(out + err, PHRASE, BEARER)
    assert out.count(NOT_SHOWN) >= 4, out


def test_lint_and_run_offline_show_the_same_lines(state: Path, tmp_path: Path) -> None:
    pol = _policies(tmp_path)
    errors = str(pol / "errors.yaml")
    _code, linted, _err = run_cli(["policy", "lint", errors, "--state", str(state)], {}, tmp_path)
    argv = ["run", "--offline", "--state", str(state), "--policy", errors, "--out", "out"]
    code, _out, ran = run_cli(argv, {}, tmp_path)
    assert code == 2
    _absent(linted + ran, PHRASE, BEARER)
    problems = [line for line in ran.splitlines() if ": error: $." in line]
    assert problems and set(problems) == set(linted.splitlines()), (linted, ran)


def _case_files(folder: Path, key: str, note: str) -> Path:
    pt = folder / "pt"
    pt.mkdir()
    (pt / "q.yaml").write_text(
        "rules:\n  - id: Q-1\n    title: t\n    severity: high\n    target: settings\n"
        '    assert: {path: note, equals: "ok"}\n'
    )
    (pt / "q.tests.yaml").write_text(
        f'tests:\n  - name: "rotated key {key}"\n'
        f'    settings: {{customModels: [{{id: m, apiKey: "{key}"}}], note: "{note}"}}\n'
        "    expect: {Q-1: pass}\n"
    )
    return pt


def test_policy_test_failing_case_name_hides_its_settings_secret(tmp_path: Path) -> None:
    key = _wordy()
    pt = _case_files(tmp_path, key, key)  # fails: `note` quotes the key, as its marker
    code, out, err = run_cli(["policy", "test", str(pt)], {}, tmp_path)
    assert code == 1, out + err
    _absent(out + err, key)
    assert f"FAIL {pt}/q.tests.yaml: rotated key {NOT_SHOWN}: Q-1: expected pass" in out, out
    assert "[secret fp:" in out  # the message's value, as a run stores it


def test_policy_test_passing_case_name_hides_its_settings_secret(tmp_path: Path) -> None:
    key = _wordy()
    pt = _case_files(tmp_path, key, "ok")
    code, out, err = run_cli(["policy", "test", str(pt)], {}, tmp_path)
    assert code == 0, out + err
    _absent(out + err, key)
    assert f"PASS {pt}/q.tests.yaml: rotated key {NOT_SHOWN}" in out, out
