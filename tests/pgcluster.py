"""A throwaway PostgreSQL cluster for the tests and benchmarks: `initdb` in a temp folder, a
server on a free 127.0.0.1 port and a unix socket in that folder, stopped and removed after.

Debian's `postgresql` package puts the binaries under /usr/lib/postgresql/<version>/bin (not on
PATH); `AUDITOR_PG_BIN` names another folder. `initdb` refuses to run as root, so as root the
cluster runs as the `postgres` user (created by the Debian package) through `runuser`.
Password authentication (scram) is on for TCP, so the tests exercise PGPASSWORD and .pgpass.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

SUPERUSER = "postgres"
PASSWORD = "pw-Secret-0123456789"  # a test value; the tests check it never reaches any output


def find_bin() -> Path | None:
    """The folder holding initdb and pg_ctl, or None when PostgreSQL is not installed."""
    configured = os.environ.get("AUDITOR_PG_BIN")
    candidates = [configured] if configured else []
    candidates += sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)
    on_path = shutil.which("initdb")
    if on_path:
        candidates.append(str(Path(on_path).parent))
    for folder in candidates:
        if folder and (Path(folder) / "initdb").exists() and (Path(folder) / "pg_ctl").exists():
            return Path(folder)
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Cluster:
    """A running cluster; `url(db)` gives a connection string with the password in it."""

    folder: Path
    port: int
    bindir: Path
    as_user: list[str]

    @property
    def data(self) -> Path:
        return self.folder / "data"

    def url(self, database: str = "postgres", *, password: bool = True) -> str:
        secret = f":{PASSWORD}" if password else ""
        return f"postgresql://{SUPERUSER}{secret}@127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str) -> str:
        """A new empty database; gives its URL."""
        import psycopg

        with psycopg.connect(self.url(), autocommit=True) as db:
            db.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def stop(self) -> None:
        subprocess.run(
            [
                *self.as_user,
                str(self.bindir / "pg_ctl"),
                "-D",
                str(self.data),
                "-m",
                "immediate",
                "-w",
                "stop",
            ],
            capture_output=True,
            check=False,
        )
        shutil.rmtree(self.folder, ignore_errors=True)


def start_cluster(bindir: Path) -> Cluster:
    """initdb and start; raises RuntimeError with the server's own words if it cannot."""
    folder = Path(tempfile.mkdtemp(prefix="auditor-pg-"))
    as_user: list[str] = []
    if os.geteuid() == 0:
        as_user = ["runuser", "-u", SUPERUSER, "--"]
        shutil.chown(folder, SUPERUSER)
    folder.chmod(0o700)
    pwfile = folder / "pw"
    pwfile.write_text(PASSWORD + "\n")
    if as_user:
        shutil.chown(pwfile, SUPERUSER)

    def run(*args: str) -> None:
        done = subprocess.run([*as_user, *args], capture_output=True, text=True, check=False)
        if done.returncode:
            shutil.rmtree(folder, ignore_errors=True)
            raise RuntimeError(f"{Path(args[0]).name} failed: {done.stderr.strip()[-800:]}")

    run(
        str(bindir / "initdb"),
        "-D",
        str(folder / "data"),
        "-U",
        SUPERUSER,
        "-A",
        "scram-sha-256",
        "--auth-local=trust",
        f"--pwfile={pwfile}",
        "-E",
        "UTF8",
        "--locale=C.UTF-8",
        "--no-sync",
    )
    port = _free_port()
    options = f"-p {port} -h 127.0.0.1 -k {folder} -c fsync=off -c max_connections=60"
    run(
        str(bindir / "pg_ctl"),
        "-D",
        str(folder / "data"),
        "-o",
        options,
        "-l",
        str(folder / "server.log"),
        "-w",
        "-t",
        "60",
        "start",
    )
    return Cluster(folder, port, bindir, as_user)


@contextmanager
def throwaway() -> Iterator[Cluster]:
    """A server started for the caller and stopped after. Without PostgreSQL installed the
    tests that need it skip, saying so; in CI (CI=true) they fail instead."""
    import pytest

    bindir = find_bin()
    if bindir is None:
        why = "PostgreSQL is not installed (apt-get install postgresql; .ci/run does)"
        if os.environ.get("CI") == "true":
            pytest.fail(f"{why}: CI must run the PostgreSQL tests")
        pytest.skip(why)
    cluster = start_cluster(bindir)
    try:
        yield cluster
    finally:
        cluster.stop()


def _pg_connect(url: str, org: str = "default") -> object:
    import psycopg

    from auditor.store.postgres import schema_name

    db = psycopg.connect(url, autocommit=True)
    db.execute(f'SET search_path TO "{schema_name(org)}"')
    return db


def raw_sql(location: object, sql: str, params: tuple[object, ...] = ()) -> None:
    """Run one statement on a store behind its back (SQLite file or PostgreSQL URL), to damage
    or age it; text meant for the `meta` table's BLOB column is sent as bytes to PostgreSQL."""
    import sqlite3
    from contextlib import closing

    from auditor.store.dialect import to_postgres

    if isinstance(location, Path):
        with closing(sqlite3.connect(location)) as db, db:
            db.execute(sql, params)
        return
    if sql.startswith("DROP TABLE"):
        sql += " CASCADE"  # PostgreSQL keeps the foreign keys SQLite does not enforce
    db = _pg_connect(str(location))
    try:
        db.execute(to_postgres(sql), params)  # type: ignore[attr-defined]
    finally:
        db.close()  # type: ignore[attr-defined]


def stored_bytes(location: object, org: str = "default") -> bytes:
    """Everything a store holds, as bytes: the SQLite file, or every value of every table in
    the organization's PostgreSQL schema (bytea values raw, the rest as text)."""
    if isinstance(location, Path):
        return location.read_bytes()
    from auditor.store.postgres import schema_name

    db = _pg_connect(str(location), org)
    out = []
    try:
        tables = db.execute(  # type: ignore[attr-defined]
            "SELECT table_name FROM information_schema.tables WHERE table_schema = %s",
            (schema_name(org),),
        ).fetchall()
        for (table,) in tables:
            for row in db.execute(f'SELECT * FROM "{table}"'):  # type: ignore[attr-defined]
                for value in row:
                    out.append(value if isinstance(value, bytes) else str(value).encode())
    finally:
        db.close()  # type: ignore[attr-defined]
    return b"\n".join(out)
