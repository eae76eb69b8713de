"""A state file whose fingerprint key was edited behind auditor's back into a TEXT value (tester
T72 #3): every command says the file is damaged and what to do, exit 2, in a single run and in
`run --orgs` alike (it was `unexpected StoreError`, and Python's `string argument without an
encoding`); and `--debug` shows the traceback it promises when an error cannot be worded."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import OWNER_TOKEN, emulator_env, run_cli

DAMAGED = "is damaged: its fingerprint key is text, not the bytes of a key auditor stores"
RESTORE = "; restore a copy saved before it was damaged"


@pytest.fixture(scope="module")
def synced(emu: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A state file synced from `emu`, then its key made text (`sqlite3 state.db "update …"`)."""
    folder = tmp_path_factory.mktemp("synced")
    state = folder / "state.db"
    code, _, err = run_cli(["sync", "-q"], emulator_env(emu, state), folder)
    assert code == 0, err
    with sqlite3.connect(state) as db:
        db.execute("UPDATE meta SET value = 'zz' WHERE key = 'fingerprint_key'")
    db.close()
    return state


@pytest.mark.parametrize(
    "argv",
    [
        ["history"],
        ["run", "--offline", "--out", "o"],
        ["sync"],
        ["--debug", "history"],
    ],
)
def test_a_text_key_is_said_damaged(
    emu: Any, synced: Path, tmp_path: Path, argv: list[str]
) -> None:
    state = tmp_path / "state.db"
    shutil.copy(synced, state)
    code, _, err = run_cli(argv, emulator_env(emu, state), tmp_path)
    assert code == 2, err
    last = err.rstrip().splitlines()[-1]
    assert last.startswith(f"auditor: error: state file {state} {DAMAGED}{RESTORE}"), err
    assert "unexpected" not in err and "Traceback" not in err


def test_a_text_key_is_said_damaged_in_run_orgs(emu: Any, synced: Path, tmp_path: Path) -> None:
    (tmp_path / "orgs.toml").write_text(
        f'[[org]]\nname = "acme"\nbase_url = "{emu.base_url}"\napp_url = "{emu.app_url}"\n'
        'token_env = "TOK"\n'
    )
    shutil.copy(synced, tmp_path / "state-acme.db")
    argv = ["run", "-q", "--orgs", "orgs.toml", "--state", "state.db", "--out", "r"]
    code, _, err = run_cli(argv, {"TOK": OWNER_TOKEN}, tmp_path)
    assert code == 2, err
    assert f"[acme] auditor: error: state file {tmp_path / 'state-acme.db'} {DAMAGED}" in err, err
    assert "without an encoding" not in err


def test_debug_shows_the_traceback_when_an_error_cannot_be_worded(
    emu: Any, synced: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The last resort (wording the error failed too) said `rerun with --debug … for the
    traceback`, and with `--debug` said the same, with no traceback."""
    state = tmp_path / "state.db"
    shutil.copy(synced, state)

    def broken(*_args: Any, **_kwargs: Any) -> Any:
        raise RuntimeError("the wording broke")

    monkeypatch.setattr("auditor.cli.failure.remembered_screen", broken)
    env = emulator_env(emu, state)
    code, _, err = run_cli(["history"], env, tmp_path)
    assert code == 2
    assert err.splitlines() == [
        "auditor: error: unexpected StoreError (rerun with --debug or AUDITOR_DEBUG=1 for the "
        "traceback)"
    ]
    for argv, extra in ((["--debug", "history"], {}), (["history"], {"AUDITOR_DEBUG": "1"})):
        code, _, err = run_cli(argv, {**env, **extra}, tmp_path)
        assert code == 2
        lines = err.splitlines()
        assert lines[0] == "Traceback (most recent call last):", err
        # What broke was reading the state file's memory of secrets, so no text is shown (one
        # may quote a key it remembers): the types and the frames are.
        assert f"auditor.errors.StoreError: (its text not shown: {UNSCREENED})" in lines, err
        assert f"RuntimeError: (its text not shown: {UNSCREENED})" in lines, err
        assert "During handling of the above exception, another exception occurred:" in lines
        assert any(line.strip().startswith('File "') for line in lines), err
        said = [line for line in lines if line and not line.startswith(" ")]  # not the code
        assert not [line for line in said if DAMAGED in line or "the wording broke" in line]
        assert OWNER_TOKEN not in err
        assert lines[-1] == "auditor: error: unexpected StoreError (the traceback is above)"


UNSCREENED = "the state file's memory of secrets could not be read to screen it"


def test_debug_s_last_resort_traceback_hides_what_the_state_file_remembers(
    emu: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A custom model's API key the state file remembers (caught by its place), quoted by an
    unexpected error whose wording then failed: `--debug`'s traceback left it in clear
    (review R43 #5), where `report_failure`'s own traceback hides it."""
    state = tmp_path / "state.db"
    env = emulator_env(emu, state)
    code, _, err = run_cli(["sync", "-q"], env, tmp_path)
    assert code == 0, err
    keys = [
        m["apiKey"]
        for r in emu.dataset.history
        for m in r["settings"].get("customModels", [])
        if isinstance(m, dict) and str(m.get("apiKey", "")).startswith("sk-")
    ]
    assert keys, "the emulator's history has a custom model with an API key"
    key = keys[-1]

    def quoting(*_args: Any, **_kwargs: Any) -> Any:
        raise LookupError(f"no such model with key {key}")

    def broken(*_args: Any, **_kwargs: Any) -> Any:
        raise RuntimeError("the wording broke")

    monkeypatch.setattr("auditor.cli.cmd_history.open_store", quoting)
    monkeypatch.setattr("auditor.cli.failure.report_failure", broken)
    code, _, err = run_cli(["--debug", "history"], env, tmp_path)
    assert code == 2
    lines = err.splitlines()
    assert lines[0] == "Traceback (most recent call last):", err
    assert "LookupError: no such model with key <not shown: looks like a secret>" in lines, err
    assert "RuntimeError: the wording broke" in lines, err
    assert key not in err and key[3:15] not in err
    assert lines[-1] == "auditor: error: unexpected LookupError (the traceback is above)"
