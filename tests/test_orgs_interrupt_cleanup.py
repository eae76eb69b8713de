"""`auditor run --orgs` interrupted (SIGTERM, Ctrl-C) while organizations sync: each one's store
is left as an interrupted single `auditor run` leaves its own (tester T72 #2). A first sync cut
off leaves no state file (no PostgreSQL schema), an existing store keeps what earlier syncs
stored and no `-journal` of the write that was open, and no lock file keeps the dead run's pid.
Each organization's thread ends its own store (review R43: the main thread ending it on the
thread's connection crashed the process and committed half a write).

Each test runs the command as a user does (a process of its own) and sends it the signal."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from auditor.store import Store
from tests.conftest import emulator_env

NOW = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
TOKEN = "demo-owner-token"
CODES = {signal.SIGTERM: 143, signal.SIGINT: 130}


@pytest.fixture
def sigint_as_in_a_terminal() -> Iterator[None]:
    """Python's own Ctrl-C handler here, so the command started has Ctrl-C's default (run as a
    background job, `pytest &`, SIGINT comes ignored, and the command would ignore it too)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@pytest.fixture
def emulator() -> Iterator[Any]:
    from auditor.emulator import start_emulator

    emu = start_emulator(seed=1, revisions=30, repos=5, now=NOW)
    try:
        yield emu
    finally:
        emu.stop()


def _orgs_file(tmp_path: Path, emu: Any, names: tuple[str, ...] = ("slow",)) -> Path:
    path = tmp_path / "orgs.toml"
    path.write_text(
        "".join(
            f'[[org]]\nname = "{name}"\nbase_url = "{emu.base_url}"\n'
            f'app_url = "{emu.app_url}"\ntoken_env = "TOK"\n'
            for name in names
        )
    )
    return path


def _run_orgs(tmp_path: Path, orgs: Path, state: str, *more: str) -> subprocess.Popen[str]:
    argv = ["run", "--orgs", str(orgs), "--state", state, "--out", "r", *more]
    return subprocess.Popen(
        [sys.executable, "-m", "auditor", *argv],
        env={**os.environ, "TOK": TOKEN, "PYTHONFAULTHANDLER": "1"},
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # (Ctrl-C heeded even when the tests run as a background job, which ignores it)
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def _interrupt(
    proc: subprocess.Popen[str], ready: Callable[[], bool], signum: int, after: float = 1.0
) -> str:
    """Send `signum` once `ready()`, `after` s later; the run's stderr."""
    deadline = time.monotonic() + 60
    while not ready():
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.02)
    time.sleep(after)
    proc.send_signal(signum)
    return proc.communicate(timeout=60)[1]


def _left(folder: Path) -> list[str]:
    """The state files in `folder` (its `.gitignore`, made with the folder, aside)."""
    if not folder.is_dir():
        return []
    return sorted(p.name for p in folder.iterdir() if p.name != ".gitignore")


def _summary(tmp_path: Path) -> dict[str, Any]:
    body: dict[str, Any] = json.loads((tmp_path / "r" / "summary.json").read_text())
    return body


def _count(db: Path, table: str) -> int:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as con:
        count: int = con.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
    con.close()
    return count


@pytest.mark.usefixtures("sigint_as_in_a_terminal")
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_first_sync_cut_off_leaves_no_state_file(
    emulator: Any, tmp_path: Path, signum: int
) -> None:
    """Two organizations whose service never answers their first page; the run is interrupted:
    no `state-<org>.db` (nor its lock, nor a `-journal`) is left, as a single run leaves no
    `state.db`, and the summary says each was interrupted."""
    emulator.faults.add("history", "delay", times=0, seconds=60)
    orgs = _orgs_file(tmp_path, emulator, ("slow", "slower"))
    st = tmp_path / "st"
    proc = _run_orgs(tmp_path, orgs, "st/state.db")
    begun = lambda: (st / "state-slow.db").exists() and (st / "state-slower.db").exists()  # noqa: E731
    err = _interrupt(proc, begun, signum)
    assert proc.returncode == CODES[signum], err
    assert _left(st) == [], err
    assert "Traceback" not in err and "not ended its store" not in err, err
    summary = _summary(tmp_path)
    assert summary["exit_code"] == CODES[signum]
    assert [o["status"] for o in summary["organizations"]] == ["interrupted", "interrupted"]


def test_an_open_write_is_rolled_back_and_the_lock_cleared(emulator: Any, tmp_path: Path) -> None:
    """An existing store whose sync holds its write transaction (the readiness reports are on
    their way) when the run is interrupted: no `-journal` is left beside it, its lock file
    holds no pid, and it keeps what the earlier sync stored (a reader is not refused)."""
    orgs = _orgs_file(tmp_path, emulator)
    st = tmp_path / "st"
    db = st / "state-slow.db"
    first = subprocess.run(
        [
            sys.executable,
            "-m",
            "auditor",
            "sync",
            "--org",
            "slow",
            "--state",
            str(db),
            "--no-usage",
        ],
        env={**os.environ, **emulator_env(emulator, db, TOKEN)},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert first.returncode == 0, first.stderr
    assert (_count(db, "syncs"), _count(db, "revisions")) == (1, 30)
    emulator.faults.add("reports", "delay", times=0, seconds=60)
    proc = _run_orgs(tmp_path, orgs, "st/state.db", "--no-usage")
    err = _interrupt(proc, (st / "state-slow.db-journal").exists, signal.SIGTERM, after=0.5)
    assert proc.returncode == 143, err
    assert _left(st) == ["state-slow.db", "state-slow.db.lock"], err
    assert (st / "state-slow.db.lock").read_text() == ""
    assert (_count(db, "syncs"), _count(db, "revisions")) == (1, 30)
    history = subprocess.run(
        [sys.executable, "-m", "auditor", "history", "--state", str(db)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert history.returncode == 0, history.stderr
    assert _summary(tmp_path)["organizations"][0]["status"] == "interrupted"


@pytest.mark.usefixtures("sigint_as_in_a_terminal")
@pytest.mark.parametrize("after", [0.0, 0.15, 0.4])
def test_interrupted_at_any_moment_each_store_is_whole_or_gone(
    tmp_path: Path, after: float
) -> None:
    """Three organizations syncing pages as they come (each page kept, the store written),
    interrupted a moment after their syncs began: the run ends 130 with its summary, no
    process crash, and each store is either gone (a first sync that kept nothing), or holds
    the pages it kept for the next sync, or its whole completed sync; never a `-journal`
    or a pid left (review R43: the main thread rolled back a worker's connection under it)."""
    from auditor.emulator import start_emulator

    emu = start_emulator(seed=3, revisions=1500, repos=5, now=NOW)
    try:
        emu.faults.add("history", "delay", times=0, seconds=0.05)
        orgs = _orgs_file(tmp_path, emu, ("a", "b", "c"))
        st = tmp_path / "st"
        proc = _run_orgs(tmp_path, orgs, "st/state.db")
        err = _interrupt(proc, (st / "state-a.db").exists, signal.SIGINT, after=after)
    finally:
        emu.stop()
    assert proc.returncode in (130, 0, 1), err  # (0, 1: it had ended before the signal)
    assert "Fatal Python error" not in err and "Traceback" not in err, err
    assert _summary(tmp_path)["exit_code"] == proc.returncode
    assert all(name.endswith((".db", ".db.lock")) for name in _left(st)), (_left(st), err)
    for name in _left(st):
        if name.endswith(".lock"):
            assert (st / name).read_text() == "", name
            continue
        syncs, staged = _count(st / name, "syncs"), _count(st / name, "history_staged")
        assert syncs == 1 or staged > 0, (name, err)
        if syncs == 1:
            assert _count(st / name, "revisions") == 1500
        else:  # whole pages of 100 kept, never part of a batch (R43: 1,003 rows)
            assert staged % 100 == 0, (name, staged, err)


def test_a_first_sync_cut_off_leaves_no_postgresql_schema(
    emulator: Any, tmp_path: Path, pg_url: str
) -> None:
    """PostgreSQL: the schema `auditor_slow` the interrupted first sync created is dropped
    again, as a single run drops its own."""
    emulator.faults.add("history", "delay", times=0, seconds=60)
    orgs = _orgs_file(tmp_path, emulator)
    proc = _run_orgs(tmp_path, orgs, pg_url)
    err = _interrupt(proc, lambda: Store.exists(pg_url, org="slow"), signal.SIGTERM)
    assert proc.returncode == 143, err
    assert not Store.exists(pg_url, org="slow"), err


def test_pages_kept_before_a_secret_was_learned_are_scrubbed(tmp_path: Path) -> None:
    """A value kept unlabelled with the first pages (revision 140) that a later page names an
    `apiKey` (revision 30): the run is interrupted while the page after that is on its way.
    The pages stay kept for the next sync, without any form of the value, as an interrupted
    single run keeps them (review R43 #3: in clear when the main thread ended the store)."""
    from tests.conftest import secret_forms
    from tests.test_sync_resume import KEY, PAGE, TOKEN, Service, change, serving, state_bytes

    value = "opaquevalueXyzzyPlugh4821"
    service = Service(145)
    service.revisions[140] = change(140, note=f"see {value} for the model")
    service.revisions[30]["settings"]["customModels"] = [{"id": "m", "apiKey": value}]
    asked = threading.Event()
    answer = service.answer

    def held_back(path: str, query: dict[str, str]) -> tuple[int, bytes]:
        if query.get("cursor") == "130":  # the page after revision 30's
            asked.set()
            time.sleep(20)
        return answer(path, query)

    service.answer = held_back  # type: ignore[method-assign]
    with serving(service) as url:
        (tmp_path / "auditor.toml").write_text(f"page_size = {PAGE}\ntimeout = 30\n")
        (tmp_path / "orgs.toml").write_text(
            f'[[org]]\nname = "late"\nbase_url = "{url}"\napp_url = "{url}"\ntoken_env = "TOK"\n'
        )
        argv = ["run", "--orgs", "orgs.toml", "--state", "st/state.db", "--out", "r"]
        argv += ["--no-usage", "--no-readiness", "--config", "auditor.toml"]
        proc = subprocess.Popen(
            [sys.executable, "-m", "auditor", *argv],
            env={**os.environ, "TOK": TOKEN, "AUDITOR_FINGERPRINT_KEY": KEY},
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        err = _interrupt(proc, asked.is_set, signal.SIGTERM, after=0.5)
    assert proc.returncode == 143, err
    state = tmp_path / "st" / "state-late.db"
    assert _count(state, "history_staged") > 0, err  # kept for the next sync
    raw = state_bytes(state)
    assert [form for form in secret_forms(value) if form.encode() in raw] == []
    assert (tmp_path / "st" / "state-late.db.lock").read_text() == ""


def test_a_store_made_as_its_organization_is_cancelled_is_dropped_again(pg_url: str) -> None:
    """The interrupt came while an organization's thread made its PostgreSQL store: the thread
    stops at the store's first read (`Cancelled`), and the schema it made is dropped again, as
    a file made so is removed (three empty schemas were left in a loop of interrupts)."""
    from auditor.common.interrupts import Cancel, Cancelled, cancellable

    cancel = Cancel()
    cancel.cancel()
    raised: list[BaseException] = []

    def open_store() -> None:
        try:
            with cancellable(cancel):
                Store.open(pg_url, create=True, org="made").close()
        except BaseException as exc:  # (for the test's thread to say)
            raised.append(exc)

    thread = threading.Thread(target=open_store)
    thread.start()
    thread.join(timeout=60)
    assert [type(exc) for exc in raised] == [Cancelled]
    assert not Store.exists(pg_url, org="made")
