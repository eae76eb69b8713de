"""A PostgreSQL server that stops answering mid-command (tester T72): its processes stopped
(SIGSTOP), its kernel still accepts connections and, over TCP, acknowledges data and answers
keepalives, so neither the server's statement_timeout nor TCP's own timers ever end the wait.
auditor bounds every round trip itself: the command ends in one line naming the store and the
bound, exit 2, and what earlier syncs stored is kept."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pgcluster
import pytest
from pgcluster import PASSWORD

from auditor.emulator import start_emulator
from auditor.store import Store

NOW = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
TOKEN = "demo-owner-token"
# the session's statement_timeout in the tests (ms): auditor's bound on one statement is then
# 1 s + 1 s (`postgres.statement_bound`), instead of 5 min 30 s
OPTIONS = "-c statement_timeout=1000"
WAIT = 90  # seconds the stopped server is given to be noticed (the bound, reconnecting: ~5 s)
# The command as `python -m auditor`, connecting again after the session is lost tried for 3 s
# (`RECONNECT_WITHIN`, 15 s by default, which each case waited out whole): what is checked is
# that the command ends and what it says; that the window bounds a hung server's reconnect, in
# test_store_postgres_r27.
AUDITOR = (
    "import runpy, auditor.store.postgres as pg; assert hasattr(pg, 'RECONNECT_WITHIN'); "
    "pg.RECONNECT_WITHIN = 3.0; "
    "runpy.run_module('auditor', run_name='__main__', alter_sys=True)"
)


@pytest.fixture(scope="module")
def cluster() -> Iterator[pgcluster.Cluster]:
    """A server of this module's own: stopping the session's would stall the other tests."""
    with pgcluster.throwaway() as server:
        yield server


def _processes(server: pgcluster.Cluster) -> list[int]:
    """The cluster's postmaster and its children: never another cluster's processes."""
    postmaster = int((server.data / "postmaster.pid").read_text().split()[0])
    children = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == postmaster:
                children.append(int(stat.parent.name))
    return [postmaster, *children]


@contextlib.contextmanager
def _stopped(server: pgcluster.Cluster) -> Iterator[None]:
    """The server hung: every process of the cluster stopped until the block ends."""
    pids = _processes(server)
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)


def _url(server: pgcluster.Cluster, database: str, via: str) -> str:
    if via == "unix socket":  # (local connections need no password: initdb --auth-local=trust)
        return f"postgresql://postgres@/{database}?host={server.folder}&port={server.port}"
    return server.url(database)


def _env(emu: Any, state: str) -> dict[str, str]:
    return {
        **os.environ,
        "AUDITOR_BASE_URL": emu.base_url,
        "AUDITOR_APP_URL": emu.app_url,
        "AUDITOR_TOKEN": TOKEN,
        "AUDITOR_STATE": state,
        "PGOPTIONS": OPTIONS,
    }


def _cli(argv: list[str], env: dict[str, str], cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", AUDITOR, *argv],
        env=env,
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _ended(command: subprocess.Popen[str]) -> str:
    """The command's stderr once it ended; fails the test if it waits on the stopped server."""
    try:
        return command.communicate(timeout=WAIT)[1]
    except subprocess.TimeoutExpired:
        command.kill()
        command.communicate()
        pytest.fail(f"still waiting on the stopped server after {WAIT} s")


@pytest.mark.parametrize(
    ("via", "argv", "org"),
    [
        ("unix socket", ["sync"], "default"),
        ("TCP", ["run", "--out", "r1"], "default"),
        ("TCP", ["run", "--orgs", "orgs.toml", "--out", "r1"], "acme"),  # its worker
    ],
)
def test_a_server_that_stops_answering_mid_sync_ends_the_command(
    cluster: pgcluster.Cluster, via: str, argv: list[str], org: str, tmp_path: Path
) -> None:
    database = f"t_{uuid.uuid4().hex[:16]}"
    cluster.create_database(database)
    url = _url(cluster, database, via)
    with start_emulator(tokens={TOKEN: "owner"}, now=NOW, revisions=30, repos=3) as emu:
        (tmp_path / "orgs.toml").write_text(
            f'[[org]]\nname = "{org}"\nbase_url = "{emu.base_url}"\n'
            f'app_url = "{emu.app_url}"\ntoken_env = "AUDITOR_TOKEN"\n'
        )
        env = _env(emu, url)
        first = _cli(["sync", "--org", org], env, tmp_path)
        err = first.communicate(timeout=120)[1]
        assert first.returncode == 0, err
        emu.add_revisions(3)
        emu.requests.clear()
        emu.faults.add("history", "delay", times=1, seconds=2)
        command = _cli(argv, env, tmp_path)
        until = time.monotonic() + 60
        while not any("history" in path for _, path in emu.requests):
            if time.monotonic() > until or command.poll() is not None:
                command.kill()  # (never waited on without a bound: the server may be stopped)
                pytest.fail(f"no history page asked for: {command.communicate(timeout=30)}")
            time.sleep(0.02)
        with _stopped(cluster):  # while the sync waits for the page, then writes it
            err = _ended(command)
    assert command.returncode == 2, err
    assert err.strip().splitlines()[-1].startswith("auditor: "), err
    said = [line for line in err.splitlines() if "did not answer within 2 s" in line]
    assert said, err
    assert f"/{database} (schema auditor_{org})" in said[-1], err
    assert PASSWORD not in err
    with Store.open(cluster.url(database), org=org, readonly=True) as store:
        assert store.count_revisions() == 30  # the first sync's, all kept


def test_long_healthy_work_is_not_taken_for_a_hung_server(
    cluster: pgcluster.Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Review R46: under a 1 s statement_timeout (a 2 s bound, kept to within half a second),
    600 quick rows written in one `executemany` (each row's statement sleeps 5 ms: 3 s at
    least in all), and a query whose rows the server makes in 3 s at least as its cursor's
    transaction commits (which statement_timeout does not bound), were cut off as a hung
    server; each statement within the server's limits ends as it would without auditor's."""
    from auditor.store import postgres

    database = f"t_{uuid.uuid4().hex[:16]}"
    cluster.create_database(database)
    monkeypatch.setenv("PGOPTIONS", OPTIONS)
    db = postgres.connect(cluster.url(database), "acme")
    try:
        db.execute('CREATE SCHEMA IF NOT EXISTS "auditor_acme"')
        postgres.lock(db, "store (schema auditor_acme)", "acme")
        db.execute("CREATE TABLE t (a INTEGER, b TEXT)")
        db.execute("BEGIN")
        rows = ((i, "x" * 40) for i in range(600))
        slowed = "INSERT INTO t (a, b) SELECT ?, ? FROM pg_sleep(0.005)"
        assert db.executemany(slowed, rows).rowcount == 600
        db.execute("COMMIT")
        query = "SELECT g, pg_sleep(0.01) IS NULL FROM generate_series(1, 300) g"
        assert len(list(db.stream(query))) == 300
    finally:
        db.close()
