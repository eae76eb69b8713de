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
        assert f"auditor.errors.StoreError: state file {state} {DAMAGED}" in err
        assert "RuntimeError: the wording broke" in err
        assert OWNER_TOKEN not in err
        assert lines[-1] == "auditor: error: unexpected StoreError (the traceback is above)"
