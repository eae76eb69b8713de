"""A PostgreSQL session lost at the worst moments (review R27), through a TCP proxy that drops
the connection right after a statement reached the server (the server acts on it, the client
never hears back), holds a statement back, or answers nothing at all: another run that ran and
finished meanwhile stops this one; a COMMIT whose answer was lost is asked about; a loss on a
finished read's CLOSE or on a session SET is opened again; a silent server is tried for a
bounded time."""

from __future__ import annotations

import io
import os
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest
from pgcluster import PASSWORD

from auditor.cli import Context, main
from auditor.errors import StoreError
from auditor.store import Store
from tests.test_store_postgres import (
    _env,  # the emulator and this state, for a CLI in its own process
)

NOW = datetime.now(UTC)  # (the runs in their own process read the real clock)
TOKEN = "demo-owner-token"


class Proxy:
    """127.0.0.1:port -> the test server, reading what the client sends. `cut(match)`: the
    connection is dropped right after the first statement for which `match` is true reached
    the server; `hold(match)`: that statement (and every answer) waits until `release()`;
    `blackhole`: new connections are accepted and never answered."""

    def __init__(self, target: int) -> None:
        self.target = target
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.statements: list[str] = []
        self.cuts: list[str] = []
        self.blackhole = False
        self._cut: Callable[[str], bool] | None = None
        self._before = False
        self._hold: Callable[[str], bool] | None = None
        self.held = threading.Event()
        self._released = threading.Event()
        self._sockets: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def url(self, pg_url: str) -> str:
        head, _, database = pg_url.rpartition("/")
        head = head.rsplit(":", 1)[0]
        return f"{head}:{self.port}/{database}?sslmode=disable&gssencmode=disable"

    def cut(self, match: Callable[[str], bool], *, before: bool = False) -> None:
        """`before`: the statement never reaches the server (dropped with the connection)."""
        self._cut, self._before = match, before

    def hold(self, match: Callable[[str], bool]) -> None:
        self._hold = match

    def release(self) -> None:
        self._released.set()

    def drop_all(self) -> None:
        for s in self._sockets:
            with _quiet():
                s.shutdown(socket.SHUT_RDWR)
            with _quiet():
                s.close()

    def close(self) -> None:
        self.release()
        self.drop_all()
        with _quiet():
            self.listener.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            self._sockets.append(client)
            if self.blackhole:
                continue  # accepted, never answered
            server = socket.create_connection(("127.0.0.1", self.target))
            self._sockets.append(server)
            dropped = threading.Event()
            threading.Thread(target=self._up, args=(client, server, dropped), daemon=True).start()
            threading.Thread(target=self._down, args=(server, client, dropped), daemon=True).start()

    def _up(self, client: socket.socket, server: socket.socket, dropped: threading.Event) -> None:
        buffer, started = bytearray(), False
        while data := _recv(client):
            buffer += data
            found, started = _statements(buffer, started)
            self.statements += found
            hold = self._hold
            if hold is not None and any(hold(s) for s in found):
                self._hold = None
                self.held.set()
                self._released.wait(120)
            cut = self._cut
            if cut is not None and any(cut(s) for s in found):
                self._cut = None
                self.cuts += found
                dropped.set()  # its answer never reaches the client
                if not self._before:
                    server.sendall(data)
                    time.sleep(0.3)  # the server acts on it
                for s in (client, server):
                    with _quiet():
                        s.shutdown(socket.SHUT_RDWR)
                return
            with _quiet():
                server.sendall(data)

    def _down(self, server: socket.socket, client: socket.socket, dropped: threading.Event) -> None:
        while data := _recv(server):
            if self._hold is None and self.held.is_set():
                self._released.wait(120)
            if dropped.is_set():
                return
            with _quiet():
                client.sendall(data)
        with _quiet():
            client.shutdown(socket.SHUT_RDWR)


class _quiet:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> bool:
        return exc[0] is not None and issubclass(exc[0], OSError)  # type: ignore[arg-type]


def _recv(s: socket.socket) -> bytes:
    try:
        return s.recv(65536)
    except OSError:
        return b""


def _statements(buffer: bytearray, started: bool) -> tuple[list[str], bool]:
    """The SQL texts of the complete messages in `buffer` (consumed): simple and extended
    protocol; the startup message (no type byte) first."""
    found = []
    while True:
        if not started:
            if len(buffer) < 4 or len(buffer) < struct.unpack("!I", buffer[:4])[0]:
                break
            del buffer[: struct.unpack("!I", buffer[:4])[0]]
            started = True
            continue
        if len(buffer) < 5:
            break
        kind, size = chr(buffer[0]), struct.unpack("!I", buffer[1:5])[0]
        if len(buffer) < 1 + size:
            break
        body = bytes(buffer[5 : 1 + size])
        del buffer[: 1 + size]
        if kind == "Q":
            found.append(body.split(b"\0")[0].decode(errors="replace"))
        elif kind == "P":
            found.append(body.split(b"\0")[1].decode(errors="replace"))
    return found, started


@pytest.fixture
def proxy(pg_cluster: Any) -> Iterator[Proxy]:
    p = Proxy(pg_cluster.port)
    try:
        yield p
    finally:
        p.close()


@pytest.fixture
def served() -> Any:
    from auditor.emulator import start_emulator

    with start_emulator(revisions=30, repos=3, now=NOW) as emu:
        yield emu


def _run(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(
        argv,
        Context(env=env, stdout=out, stderr=err, clock=lambda: datetime.now(UTC), cwd=str(cwd)),
    )
    return code, out.getvalue(), err.getvalue()


def _cli(argv: list[str], env: dict[str, str], cwd: Path) -> subprocess.Popen[str]:
    """The CLI in its own process (its own session, its own `auditor pid N` name)."""
    return subprocess.Popen(
        [sys.executable, "-m", "auditor", *argv],
        env={**os.environ, **env},
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _clean(err: str) -> None:
    assert "error: unexpected" not in err, err
    assert "Traceback" not in err and "psycopg" not in err, err
    assert PASSWORD not in err


def _first_night(served: Any, pg_url: str, tmp_path: Path) -> dict[str, str]:
    env = _env(served, pg_url)
    code, _, err = _run(["run", "--out", str(tmp_path / "r0")], env, tmp_path)
    assert code == 1, err
    return env


def _runs(pg_url: str) -> list[tuple[str, int]]:
    with psycopg.connect(pg_url) as db:
        rows = db.execute("SELECT run_id, complete FROM auditor_default.runs ORDER BY rowid")
        return [(str(r[0]), int(r[1])) for r in rows]


def _previous(out: Path) -> Any:
    import json

    return json.loads((out / "findings.json").read_text())["run"].get("previous_run_id")


def test_a_run_that_ran_and_finished_while_the_session_was_gone_stops_this_one(
    served: Any, pg_url: str, proxy: Proxy, tmp_path: Path
) -> None:
    """Run A's session is ended while it evaluates (its next statement held back); run B of
    the same organization starts and finishes meanwhile (the lock was free). A stops, rather
    than record a second complete run beside B's (was: both complete, same new findings)."""
    env = _first_night(served, pg_url, tmp_path)
    proxy.hold(lambda s: "eval_state" in s and s.lstrip().upper().startswith("SELECT"))
    a = _cli(
        ["run", "--offline", "--out", str(tmp_path / "a")],
        _env(served, proxy.url(pg_url)),
        tmp_path,
    )
    try:
        assert proxy.held.wait(60), a.communicate(timeout=5)
        with psycopg.connect(pg_url, autocommit=True) as admin:
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE application_name = %s",
                (f"auditor pid {a.pid}",),
            )
        time.sleep(1.1)  # (run ids are per second)
        b = _cli(["run", "--offline", "--out", str(tmp_path / "b")], env, tmp_path)
        _, b_err = b.communicate(timeout=120)
        assert b.returncode == 1, b_err
    finally:
        proxy.release()
    _, err = a.communicate(timeout=120)
    _clean(err)
    assert a.returncode == 2, err
    last = err.strip().splitlines()[-1]
    assert "was lost" in last and "another auditor run or sync" in last, err
    assert "wrote to the store meanwhile" in last and "this command stopped" in last, err
    runs = _runs(pg_url)
    assert [complete for _, complete in runs] == [1, 0, 1], runs  # first night, A, B
    code, _, err = _run(["run", "--offline", "--out", str(tmp_path / "c")], env, tmp_path)
    assert code == 1, err
    assert _previous(tmp_path / "c") == runs[2][0]  # B's, the one complete run since


def test_a_commit_whose_answer_was_lost_is_asked_about_and_found_stored(
    served: Any, pg_url: str, proxy: Proxy, tmp_path: Path
) -> None:
    """The network drops after the server committed the run's `complete` mark and before
    its answer arrived: the run asks on a new session, finds it stored and says complete
    (was: `could not record this run, so no later run compares with it`, exit 2, though the
    store held it complete and the next night compared with it)."""
    _first_night(served, pg_url, tmp_path)
    marked = []

    def completing(statement: str) -> bool:  # the COMMIT of `complete_run`
        if statement.upper().startswith("UPDATE RUNS SET COMPLETE"):
            marked.append(statement)
        return bool(marked) and statement.upper().startswith("COMMIT")

    proxy.cut(completing)
    code, _, err = _run(
        ["run", "--offline", "--out", str(tmp_path / "a")],
        _env(served, proxy.url(pg_url)),
        tmp_path,
    )
    assert proxy.cuts, proxy.statements[-5:]
    _clean(err)
    assert code == 1, err  # complete, as stored
    assert "could not record" not in err and "nothing was changed" not in err, err
    runs = _runs(pg_url)
    assert runs[-1][1] == 1, runs
    import json

    assert json.loads((tmp_path / "a" / "findings.json").read_text())["complete"] is True


def test_a_commit_whose_answer_was_lost_is_found_stored_by_the_store(
    pg_url: str, proxy: Proxy
) -> None:
    Store.open(pg_url).close()
    with Store.open(proxy.url(pg_url)) as s:
        proxy.cut(lambda st: st.upper().startswith("COMMIT"))
        with s.transaction():
            s.set_report_order("first")  # was: cannot write, nothing was changed (yet stored)
        assert proxy.cuts
        assert s.report_order() == "first"
        with s.transaction():
            s.set_report_order("second")
    with Store.open(pg_url, readonly=True) as s:
        assert s.report_order() == "second"


def test_a_commit_lost_before_the_server_got_it_is_said_not_stored(
    pg_url: str, proxy: Proxy
) -> None:
    from auditor.errors import StoreWriteError

    Store.open(pg_url).close()
    with Store.open(proxy.url(pg_url)) as s:
        proxy.cut(lambda st: st.upper().startswith("COMMIT"), before=True)
        with (
            pytest.raises(StoreWriteError, match="cannot write, nothing was changed"),
            s.transaction(),
        ):
            s.set_report_order("first")
        assert proxy.cuts
        assert s.report_order() is None  # asked on the new session: indeed not stored


def test_a_loss_on_a_finished_reads_close_is_opened_again(
    served: Any, pg_url: str, proxy: Proxy, tmp_path: Path
) -> None:
    """Every row of a read was fetched, and the session was lost on its CLOSE: the next
    statement runs on a new session (was: `cannot be read: the connection is lost`, exit 2)."""
    env = _first_night(served, pg_url, tmp_path)
    proxy.cut(lambda s: s.upper().startswith('CLOSE "AUDITOR_ROWS_'))
    code, _, err = _run(
        ["export", "--out", str(tmp_path / "x")],
        {**env, "AUDITOR_STATE": proxy.url(pg_url)},
        tmp_path,
    )
    assert proxy.cuts, proxy.statements[-5:]
    _clean(err)
    assert code == 0, err


@pytest.mark.parametrize("setting", ["SET search_path", "SET default_transaction_read_only"])
def test_a_loss_on_a_session_setting_while_opening_is_opened_again(
    served: Any, pg_url: str, proxy: Proxy, tmp_path: Path, setting: str
) -> None:
    """The session is lost right after one of the SETs that open the store: sent again on a
    new session (was: `cannot be used: … server closed the connection unexpectedly`, exit 2)."""
    env = _first_night(served, pg_url, tmp_path)
    proxy.cut(lambda s: s.startswith(setting))
    code, _, err = _run(["history"], {**env, "AUDITOR_STATE": proxy.url(pg_url)}, tmp_path)
    assert proxy.cuts, proxy.statements[:8]
    _clean(err)
    assert code == 0, err
    with Store.open(proxy.url(pg_url), readonly=True) as s:
        proxy.cut(lambda st: st.startswith(setting))
        s.count_revisions()
        with pytest.raises(StoreError, match="read-only"), s.transaction():
            s.set_report_order("x")  # the new session is read-only too


def test_a_server_that_accepts_but_never_answers_is_tried_for_a_bounded_time(
    pg_url: str, proxy: Proxy
) -> None:
    """The session is lost, and the server then accepts TCP connections but never answers (a
    hung failover target): the command stops within about 15 s (was: 5 tries of 10 s each
    and the pauses between, about a minute)."""
    Store.open(pg_url).close()
    with Store.open(proxy.url(pg_url)) as s:
        proxy.blackhole = True
        proxy.drop_all()
        started = time.monotonic()
        with pytest.raises(StoreError) as stopped:
            s.count_revisions()
        took = time.monotonic() - started
    text = str(stopped.value)
    assert "was lost" in text and "connecting again failed" in text, text
    assert PASSWORD not in text
    assert took < 20, took


def test_a_commit_the_server_cannot_tell_about_is_said_maybe_stored(
    pg_url: str, proxy: Proxy, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server cannot say whether the lost COMMIT's transaction committed (txid_status
    NULL: too old to tell): neither "nothing was changed" nor silence, but "may or may not"."""
    from auditor.errors import StoreWriteError
    from auditor.store import postgres

    Store.open(pg_url).close()
    monkeypatch.setattr(postgres, "_committed", lambda conn, xid: None, raising=False)
    with Store.open(proxy.url(pg_url)) as s:
        proxy.cut(lambda st: st.upper().startswith("COMMIT"))
        with (
            pytest.raises(StoreWriteError, match="the write may or may not be stored") as said,
            s.transaction(),
        ):
            s.set_report_order("first")
        assert "nothing was changed" not in str(said.value)
        assert s.report_order() == "first"  # (it was: the command may go on reading)


def test_a_lost_session_is_ended_only_if_it_is_the_same_process(pg_url: str) -> None:
    """R29b #1: after a server restart the lost session's pid can be another session's, one of
    the same `run --orgs` (same application_name): matched by pid and name alone, it was
    ended. The process is the lost session's only if it started when that one did."""
    from auditor.store.postgres import PgConnection, _session_start

    name = f"auditor pid {os.getpid()}"
    with (
        psycopg.connect(pg_url, autocommit=True, application_name=name) as other,
        psycopg.connect(pg_url, autocommit=True, application_name=name) as ours,
    ):
        pid, started = other.info.backend_pid, _session_start(other)
        assert started is not None
        # the same pid, another start: another process; left alone
        PgConnection._end_session(ours, pid, started - timedelta(seconds=1))
        assert other.execute("SELECT 1").fetchone() == (1,)
        # the very process: ended
        PgConnection._end_session(ours, pid, started)
        with pytest.raises(psycopg.OperationalError):
            other.execute("SELECT 1")
