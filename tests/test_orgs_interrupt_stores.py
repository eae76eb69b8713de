"""`auditor run --orgs` interrupted (SIGTERM, Ctrl-C) while organizations sync: each one's store
is left as an interrupted single `auditor run` leaves it (tester T72 #2). A first sync cut off
leaves no state file (no PostgreSQL schema), an existing store keeps no `-journal` of the write
that was open, and no lock file keeps the dead run's pid.

Each test runs the command as a user does (a process of its own) and sends it the signal."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from auditor.store import Store

NOW = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
TOKEN = "demo-owner-token"


@pytest.fixture
def emulator() -> Iterator[Any]:
    from auditor.emulator import start_emulator

    emu = start_emulator(seed=1, revisions=30, repos=5, now=NOW)
    try:
        yield emu
    finally:
        emu.stop()


def _orgs_file(tmp_path: Path, emu: Any, name: str = "slow") -> Path:
    path = tmp_path / "orgs.toml"
    path.write_text(
        f'[[org]]\nname = "{name}"\nbase_url = "{emu.base_url}"\n'
        f'app_url = "{emu.app_url}"\ntoken_env = "TOK"\n'
    )
    return path


def _start(argv: list[str], tmp_path: Path, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "auditor", *argv],
        env={**os.environ, "TOK": TOKEN, "AUDITOR_TOKEN": TOKEN, **env},
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _interrupt_once(
    proc: subprocess.Popen[str], ready: Callable[[], bool], signum: int
) -> tuple[str, str]:
    """Send `signum` once `ready()` (then 1 s more: the sync is waiting on the service)."""
    deadline = time.monotonic() + 60
    while not ready():
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.05)
    time.sleep(1)
    proc.send_signal(signum)
    return proc.communicate(timeout=30)


def _left(folder: Path) -> list[str]:
    """The state files in `folder` (its `.gitignore`, made with the folder, aside)."""
    if not folder.is_dir():
        return []
    return sorted(p.name for p in folder.iterdir() if p.name != ".gitignore")


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_first_sync_cut_off_leaves_no_state_file_as_a_single_run(
    emulator: Any, tmp_path: Path, signum: int
) -> None:
    """The organization's service never answers its first page; the run is interrupted: no
    `state-slow.db` (nor its lock) is left, as a single run leaves no `state.db`."""
    emulator.faults.add("history", "delay", times=0, seconds=60)
    orgs = _orgs_file(tmp_path, emulator)
    st = tmp_path / "st"
    code = 143 if signum == signal.SIGTERM else 130
    argv = ["run", "--orgs", str(orgs), "--state", "st/state.db", "--out", "r"]
    proc = _start(argv, tmp_path, {})
    _, err = _interrupt_once(proc, (st / "state-slow.db").exists, signum)
    assert proc.returncode == code, err
    assert _left(st) == [], err
    # the single run, the same way: the behaviour `run --orgs` now shares
    single = tmp_path / "single"
    argv = ["run", "--org", "slow", "--state", "single/state.db", "--out", "r1"]
    argv += ["--base-url", emulator.base_url, "--app-url", emulator.app_url]
    proc = _start(argv, tmp_path, {})
    _, err = _interrupt_once(proc, (single / "state.db").exists, signum)
    assert proc.returncode == code, err
    assert _left(single) == [], err


def test_an_open_write_is_rolled_back_and_the_lock_cleared(emulator: Any, tmp_path: Path) -> None:
    """An existing store whose sync holds its write transaction (the analytics are on their
    way) when the run is interrupted: no `-journal` is left beside it, its lock file holds no
    pid, and it reads as before (a reader is not refused)."""
    orgs = _orgs_file(tmp_path, emulator)
    st = tmp_path / "st"
    argv = ["run", "--orgs", str(orgs), "--state", "st/state.db", "--out", "r"]
    first = subprocess.run(
        [sys.executable, "-m", "auditor", *argv],
        env={**os.environ, "TOK": TOKEN},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert first.returncode in (0, 1), first.stderr
    emulator.faults.add("analytics", "delay", times=0, seconds=60)
    journal = st / "state-slow.db-journal"
    proc = _start(argv, tmp_path, {})
    _, err = _interrupt_once(proc, journal.exists, signal.SIGTERM)
    assert proc.returncode == 143, err
    assert _left(st) == ["state-slow.db", "state-slow.db.lock"], err
    assert (st / "state-slow.db.lock").read_text() == ""
    history = subprocess.run(
        [sys.executable, "-m", "auditor", "history", "--state", "st/state-slow.db"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert history.returncode == 0, history.stderr


def test_a_first_sync_cut_off_leaves_no_postgresql_schema(
    emulator: Any, tmp_path: Path, pg_url: str
) -> None:
    """PostgreSQL: the schema `auditor_slow` the interrupted first sync created is dropped
    again, as a single run drops its own."""
    emulator.faults.add("history", "delay", times=0, seconds=60)
    orgs = _orgs_file(tmp_path, emulator)
    proc = _start(["run", "--orgs", str(orgs), "--state", pg_url, "--out", "r"], tmp_path, {})
    _, err = _interrupt_once(proc, lambda: Store.exists(pg_url, org="slow"), signal.SIGTERM)
    assert proc.returncode == 143, err
    assert not Store.exists(pg_url, org="slow"), err
