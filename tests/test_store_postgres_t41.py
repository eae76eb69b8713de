"""A PostgreSQL state store when its session goes away mid-run, and the messages about it
(tester T41): the run reconnects once, takes its lock again and audits what is stored; a server
that stays away, or a lock taken meanwhile, ends in one line naming the store."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
import pytest
from pgcluster import PASSWORD

from auditor.cli import Context, main
from auditor.errors import StoreError
from auditor.store import Store, postgres
from auditor.store.postgres import _lock_key, schema_name
from tests.test_store_postgres import (
    _env,  # the emulator and this state, for a CLI in its own process
)

NOW = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
TOKEN = "demo-owner-token"


def _run(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(argv, Context(env=env, stdout=out, stderr=err, clock=lambda: NOW, cwd=str(cwd)))
    return code, out.getvalue(), err.getvalue()


def _cli(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[int, str, str]:
    """The CLI in its own process: its stderr as a user sees it (psycopg's log lines too)."""
    done = subprocess.run(
        [sys.executable, "-m", "auditor", *argv],
        env={**os.environ, **env},
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return done.returncode, done.stdout, done.stderr


def _auditor_sessions(admin: Any) -> list[int]:
    rows = admin.execute(
        "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
        "AND pid <> pg_backend_pid() AND application_name LIKE 'auditor pid %'"
    ).fetchall()
    return [int(r[0]) for r in rows]


def _kill_during_history_page(
    emu: Any, url: str, then: Any = None, listing: str = "history"
) -> threading.Thread:
    """Once the run asks for a page of `listing` (held back by the emulator), end its database
    session as a failover or a DBA's pg_terminate_backend would; then call `then(admin)`."""

    def kill() -> None:
        deadline = time.monotonic() + 30
        while not any(listing in path for _, path in emu.requests):
            if time.monotonic() > deadline:
                return
            time.sleep(0.02)
        with psycopg.connect(url, autocommit=True) as admin:
            for pid in _auditor_sessions(admin):
                admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
            if then is not None:
                then(admin)

    thread = threading.Thread(target=kill, daemon=True)
    thread.start()
    return thread


def _clean_stderr(err: str) -> None:
    assert "error: unexpected" not in err, err
    assert "Traceback" not in err and "psycopg" not in err and "Pipeline" not in err, err
    assert PASSWORD not in err


@pytest.fixture
def served() -> Any:
    from auditor.emulator import start_emulator

    with start_emulator(revisions=30, repos=3, now=NOW) as emu:
        yield emu


def _first_night(served: Any, pg_url: str, tmp_path: Path) -> dict[str, str]:
    env = _env(served, pg_url)
    code, _, err = _run(["run", "--out", str(tmp_path / "r0")], env, tmp_path)
    assert code == 1, err
    served.add_revisions(3)
    served.requests.clear()
    return env


def test_a_session_lost_mid_sync_reconnects_and_audits_what_is_stored(
    served: Any, pg_url: str, tmp_path: Path
) -> None:
    env = _first_night(served, pg_url, tmp_path)
    served.faults.add("history", "delay", times=1, seconds=2)
    killer = _kill_during_history_page(served, pg_url)
    code, _, err = _cli(["run", "--out", str(tmp_path / "r1")], env, tmp_path)
    killer.join()
    _clean_stderr(err)
    assert code in (1, 2), err
    assert (tmp_path / "r1" / "findings.json").exists(), err  # the stored data was audited
    if code == 2:  # the sync's write was cut: said so, the run marked incomplete
        assert "sync failed, auditing the stored data" in err, err
    # the next night is complete and finds the new revisions
    code, _, err = _run(["run", "--out", str(tmp_path / "r2")], env, tmp_path)
    assert code == 1, err
    with Store.open(pg_url, readonly=True) as s:
        assert s.count_revisions() == 33


def test_a_server_that_stays_away_ends_in_one_line_naming_the_store(
    served: Any, pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The server is tried again for 3 s (three tries), not 15 s: what the run says once it
    # gives up is checked here; that it gives up in time, in test_store_postgres_r27.
    monkeypatch.setattr(postgres, "RECONNECT_WITHIN", 3.0)
    env = _first_night(served, pg_url, tmp_path)
    database = pg_url.rsplit("/", 1)[1]
    served.faults.add("history", "delay", times=1, seconds=2)

    def refuse(admin: Any) -> None:  # no new session may start on this database
        with psycopg.connect(pg_url.rsplit("/", 1)[0] + "/postgres", autocommit=True) as other:
            other.execute(f'ALTER DATABASE "{database}" ALLOW_CONNECTIONS false')

    killer = _kill_during_history_page(served, pg_url, refuse)
    try:
        code, _, err = _run(["run", "--out", str(tmp_path / "r1")], env, tmp_path)
    finally:
        killer.join()
        with psycopg.connect(pg_url.rsplit("/", 1)[0] + "/postgres", autocommit=True) as other:
            other.execute(f'ALTER DATABASE "{database}" ALLOW_CONNECTIONS true')
    _clean_stderr(err)
    assert code == 2, err
    last = err.strip().splitlines()[-1]
    assert last.startswith("auditor: error: "), err
    assert f"/{database} (schema auditor_default)" in last, err
    assert "connection" in last and "not currently accepting connections" in last, err
    code, _, err = _run(["run", "--out", str(tmp_path / "r2")], env, tmp_path)
    assert code == 1, err  # nothing stored was lost; the next night is complete


def test_a_lock_taken_while_the_session_was_gone_stops_the_run(
    served: Any, pg_url: str, tmp_path: Path
) -> None:
    env = _first_night(served, pg_url, tmp_path)
    served.faults.add("history", "delay", times=1, seconds=2)
    taken = threading.Event()
    release = threading.Event()
    key = _lock_key(schema_name("default"))

    def hold(admin: Any) -> None:  # another run took the lock the lost session held
        admin.execute("SET application_name = 'auditor pid 777'")
        admin.execute("SELECT pg_advisory_lock(%s)", (key,))
        taken.set()
        release.wait(60)

    killer = _kill_during_history_page(served, pg_url, hold)
    try:
        code, _, err = _run(["run", "--out", str(tmp_path / "r1")], env, tmp_path)
    finally:
        release.set()
        killer.join()
    assert taken.is_set()
    _clean_stderr(err)
    assert code == 2, err
    last = err.strip().splitlines()[-1]
    assert "connection" in last and "lost" in last, err
    assert "locked by another auditor run (auditor pid 777" in last, err
    code, _, err = _run(["run", "--out", str(tmp_path / "r2")], env, tmp_path)
    assert code == 1, err


def _terminate(url: str) -> None:
    with psycopg.connect(url, autocommit=True) as admin:
        for pid in _auditor_sessions(admin):
            admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        deadline = time.monotonic() + 10
        while _auditor_sessions(admin) and time.monotonic() < deadline:
            time.sleep(0.02)


def test_a_read_after_the_session_was_ended_runs_on_a_new_one_with_the_lock(
    pg_url: str,
) -> None:
    from auditor.errors import StoreWriteError

    Store.open(pg_url).close()
    with Store.open(pg_url, readonly=True) as s:
        _terminate(pg_url)
        assert s.count_revisions() == 0  # read again on a new session (was: PgError)
        assert s.revision_at(NOW) is None
        with pytest.raises(StoreError, match="is locked by another auditor"):
            Store.open(pg_url)  # the new session holds the readers' lock again
        with pytest.raises(StoreError, match="read-only"), s.transaction():
            s.set_report_order("x")  # and is read-only, as the lost one was
    with Store.open(pg_url) as s:
        with (
            pytest.raises(StoreWriteError, match="cannot write, nothing was changed"),
            s.transaction(),
        ):
            s.set_report_order("first")
            _terminate(pg_url)  # the write is lost with its session: never sent again
            s.set_report_order("second")
        assert s.report_order() is None  # read on a new session: nothing of it was kept
        with s.transaction():
            s.set_report_order("third")
    with Store.open(pg_url, readonly=True) as s:
        assert s.report_order() == "third"


def test_a_session_ended_by_the_servers_idle_transaction_timeout_says_so(
    served: Any, pg_url: str, tmp_path: Path
) -> None:
    env = _first_night(served, pg_url, tmp_path)
    database = pg_url.rsplit("/", 1)[1]
    with psycopg.connect(pg_url, autocommit=True) as admin:
        admin.execute(
            f"ALTER DATABASE \"{database}\" SET idle_in_transaction_session_timeout = '1s'"
        )
    # (the readiness page: the history's pages are read before the sync's transaction begins,
    # which is open while the readiness reports and the usage analytics are read)
    served.faults.add("reports", "delay", times=1, seconds=2.5)
    code, _, err = _run(["run", "--out", str(tmp_path / "r1")], env, tmp_path)
    _clean_stderr(err)
    assert code == 2, err
    assert "idle_in_transaction_session_timeout of 1 s" in err, err
    assert (tmp_path / "r1" / "findings.json").exists(), err  # what is stored was audited


def test_the_lock_holder_named_is_in_this_database_and_a_reader_is_called_one(
    pg_cluster: Any, pg_url: str, tmp_path: Path
) -> None:
    """Org `default` has the same lock key in every database: a holder in another database
    is not named; a reader holding the lock is "another auditor command reading it"."""
    import uuid

    other_url = pg_cluster.create_database(f"t_{uuid.uuid4().hex[:16]}")
    key = _lock_key(schema_name("default"))
    Store.open(pg_url).close()
    with (
        psycopg.connect(other_url, autocommit=True, application_name="auditor pid 111") as there,
        psycopg.connect(pg_url, autocommit=True, application_name="auditor pid 222") as reader,
    ):
        there.execute("SELECT pg_advisory_lock(%s)", (key,))  # a run in another database
        reader.execute("SELECT pg_advisory_lock_shared(%s)", (key,))  # an `export` here
        with pytest.raises(StoreError) as refused:
            Store.open(pg_url)
        text = str(refused.value)
        assert "locked by another auditor command reading it (auditor pid 222" in text, text
        assert "111" not in text
        reader.execute("SELECT pg_advisory_unlock_all()")
        reader.execute("SELECT pg_advisory_lock(%s)", (key,))  # a run here
        code, _, err = _run(["history"], {"AUDITOR_STATE": pg_url}, tmp_path)
        assert code == 2, err
        assert "is locked by another auditor run (auditor pid 222 at 127.0.0.1)" in err, err
        assert "111" not in err and PASSWORD not in err


def test_pgoptions_is_used_as_libpq_uses_it(
    served: Any, pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A CI login role that must `SET ROLE` to the group holding the grants, through
    PGOPTIONS (as psql does); the URL's `?options=` replaces PGOPTIONS, as in libpq."""
    import uuid

    tag = uuid.uuid4().hex[:8]
    login, group = f"ci_{tag}", f"auditors_{tag}"
    database = pg_url.rsplit("/", 1)[1]
    with psycopg.connect(pg_url, autocommit=True) as admin:
        admin.execute(f"CREATE ROLE {login} LOGIN NOINHERIT PASSWORD 'ci-pw-{tag}'")
        admin.execute(f"CREATE ROLE {group} NOLOGIN")
        admin.execute(f"GRANT {group} TO {login}")
        admin.execute(f'REVOKE CREATE, TEMPORARY ON DATABASE "{database}" FROM PUBLIC')
        admin.execute(f'GRANT CREATE ON DATABASE "{database}" TO {group}')
    url = pg_url.replace(f"postgres:{PASSWORD}@", f"{login}:ci-pw-{tag}@")
    monkeypatch.setenv("PGOPTIONS", f"-c role={group}")
    code, _, err = _run(["sync"], _env(served, url), tmp_path)
    assert code == 0, err  # was: permission denied for database (SQLSTATE 42501)
    with psycopg.connect(pg_url, autocommit=True) as admin:
        owner = admin.execute(
            "SELECT nspowner::regrole::text FROM pg_namespace WHERE nspname = 'auditor_default'"
        ).fetchone()
    assert owner == (group,)
    monkeypatch.setenv("PGOPTIONS", f"-c role={group} -c default_transaction_read_only=on")
    code, _, err = _run(["sync"], _env(served, url), tmp_path)
    assert code == 2 and "read-only transaction" in err, err
    sep = "&" if "?" in url else "?"
    code, _, err = _run(
        ["history"], _env(served, f"{url}{sep}options=-c%20role%3D{group}"), tmp_path
    )
    assert code == 0, err  # the URL's options, PGOPTIONS not read (libpq's rule)
    assert f"ci-pw-{tag}" not in err


def _role(pg_url: str, *grants: str) -> tuple[str, str]:
    """A new login role with `grants` (formatted with {role} and {db}): its name and URL."""
    import uuid

    role = f"r_{uuid.uuid4().hex[:8]}"
    database = pg_url.rsplit("/", 1)[1]
    with psycopg.connect(pg_url, autocommit=True) as admin:
        admin.execute(f"CREATE ROLE {role} LOGIN PASSWORD 'pw-{role}'")
        admin.execute(f'REVOKE CREATE, TEMPORARY ON DATABASE "{database}" FROM PUBLIC')
        for grant in grants:
            admin.execute(grant.format(role=role, db=database))
    return role, pg_url.replace(f"postgres:{PASSWORD}@", f"{role}:pw-{role}@")


def test_a_missing_privilege_is_called_one_not_a_foreign_store(
    served: Any, pg_url: str, tmp_path: Path
) -> None:
    _, no_create = _role(pg_url)
    code, _, err = _run(["sync"], _env(served, no_create), tmp_path)
    assert code == 2, err
    assert "cannot be used: permission denied for database" in err, err
    assert "SQLSTATE 42501: the role lacks a privilege" in err and "CREATE on the database" in err
    assert "not a usable auditor store" not in err and "tables are not as expected" not in err
    code, _, err = _run(["sync"], _env(served, pg_url), tmp_path)
    assert code == 0, err
    role, reader = _role(
        pg_url,
        "GRANT USAGE ON SCHEMA auditor_default TO {role}",
        "GRANT SELECT ON ALL TABLES IN SCHEMA auditor_default TO {role}",
    )
    code, _, err = _run(["history"], _env(served, reader), tmp_path)
    assert code == 0, err  # a read-only role reads
    code, _, err = _run(["sync"], _env(served, reader), tmp_path)
    assert code == 2, err
    assert "cannot write, nothing was changed: permission denied for table" in err, err
    assert "the role lacks a privilege" in err and "tables are not as expected" not in err
    with psycopg.connect(pg_url, autocommit=True) as admin:
        admin.execute(f"REVOKE SELECT ON auditor_default.revisions FROM {role}")
    code, _, err = _run(["history"], _env(served, reader), tmp_path)
    assert code == 2, err
    assert "cannot be read: permission denied for table revisions" in err, err
    assert "is damaged" not in err  # a privilege, not damage


def test_a_statement_timeout_is_called_one() -> None:
    from auditor.store.file import describe
    from auditor.store.postgres import _error

    cancelled = psycopg.errors.QueryCanceled("canceling statement due to statement timeout")
    text = describe(_error(cancelled, []))
    assert "SQLSTATE 57014: the statement was cancelled: it ran longer than" in text, text
    assert "statement_timeout" in text and "shutting down" not in text


def test_a_table_locked_by_another_session_is_waited_for_a_while_then_said(
    served: Any, pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A DBA's LOCK TABLE (or VACUUM FULL) on the store's tables: the command waits the
    session's lock_timeout, then says it waited on a lock another session holds."""
    from auditor.store import postgres

    code, _, err = _run(["sync"], _env(served, pg_url), tmp_path)
    assert code == 0, err
    monkeypatch.setattr(postgres, "LOCK_TIMEOUT_MS", 1000, raising=False)
    bounded = f"{pg_url}?options=-c%20statement_timeout%3D8000"  # (main waited 300 s)
    with psycopg.connect(pg_url) as dba:
        dba.execute("LOCK TABLE auditor_default.revisions IN ACCESS EXCLUSIVE MODE")
        started = time.monotonic()
        code, _, err = _run(["history"], _env(served, bounded), tmp_path)
        waited = time.monotonic() - started
        dba.rollback()
    assert code == 2, err
    assert "canceling statement due to lock timeout (SQLSTATE 55P03: auditor waited 1 s" in err
    assert "a lock another session holds on the store's tables" in err, err
    assert waited < 6, waited


def test_a_server_back_within_seconds_is_connected_to_again(
    served: Any, pg_url: str, tmp_path: Path
) -> None:
    """A failover or restart: no new session is accepted for a second or so, then the server
    is back; the run waits for it, takes its lock again and audits what is stored."""
    env = _first_night(served, pg_url, tmp_path)
    database = pg_url.rsplit("/", 1)[1]
    admin_url = pg_url.rsplit("/", 1)[0] + "/postgres"
    served.faults.add("reports", "delay", times=1, seconds=1)  # (in the sync's transaction)

    def allow(yes: bool) -> None:
        with psycopg.connect(admin_url, autocommit=True) as other:
            other.execute(f'ALTER DATABASE "{database}" ALLOW_CONNECTIONS {str(yes).lower()}')

    def restart(admin: Any) -> None:
        allow(False)
        threading.Timer(2.0, allow, (True,)).start()

    killer = _kill_during_history_page(served, pg_url, restart, "readiness")
    try:
        code, _, err = _run(["run", "--out", str(tmp_path / "r1")], env, tmp_path)
    finally:
        killer.join()
        time.sleep(2.1)
        allow(True)
    _clean_stderr(err)
    assert code == 2, err
    assert "sync failed, auditing the stored data" in err, err
    assert err.strip().splitlines()[-1].startswith("auditor: exit 2: the audit is incomplete")
    assert (tmp_path / "r1" / "findings.json").exists(), err
