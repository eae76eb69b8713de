"""The PostgreSQL backend: a central store for many organizations (`--state postgresql://…`).

Takes a connection string and an organization, gives a `PgConnection` that runs the store's
SQLite-worded SQL (translated by `auditor.store.dialect`), holding the organization's run lock.
Each organization lives in its own PostgreSQL schema, `auditor_<org>`, so every stored row is
keyed by organization, two organizations never contend, and the store's queries (and any new
module's) need no organization filter. The run lock is a session advisory lock on that schema:
a second run for the same organization is refused (as with SQLite's lock file), runs for other
organizations go ahead. A schema holding tables but no `auditor_marker` table belongs to
another program and is never touched.

The password is read by libpq from the URL, `PGPASSWORD` or `~/.pgpass` (`PG*` variables work
too) and never appears in a message: `display_url` drops it, `scrub` removes it from errors.
psycopg is imported only when a PostgreSQL store is opened (`pip install 'auditor[postgres]'`).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, NamedTuple
from urllib.parse import parse_qsl, unquote, urlsplit

from auditor.errors import StoreError
from auditor.store.dialect import PgError, ddl_to_postgres, is_pragma, to_postgres

SCHEMES = ("postgresql://", "postgres://")
MARKER_TABLE = "auditor_marker"
MARKER = "auditor state store"
CONNECT_TIMEOUT = 10  # seconds; every later statement is bounded by statement_timeout
STATEMENT_TIMEOUT_MS = 300_000


def is_database_url(text: object) -> bool:
    """True for a PostgreSQL connection string (`postgresql://…` or `postgres://…`)."""
    return isinstance(text, str) and text.lower().startswith(SCHEMES)


def url_secrets(url: str) -> list[str]:
    """The passwords in `url` (as written and decoded): user-info's, and the value of every
    query parameter whose name holds `password` (`password`, libpq's `sslpassword`)."""
    parts = urlsplit(url)
    found = []
    raw_password = parts.netloc.rpartition("@")[0].partition(":")[2] if "@" in parts.netloc else ""
    found += [raw_password, unquote(raw_password)]
    found += [v for k, v in parse_qsl(parts.query) if "password" in k.lower()]
    # libpq quotes a query value as written when it cannot decode it (`forbidden value %00 in
    # percent-encoded value: "…"`), and parse_qsl's form differs from that one (`%00`, `+`)
    for pair in parts.query.split("&"):
        key, _, value = pair.partition("=")
        if "password" in unquote(key).lower():
            found += [value, unquote(value)]
    return [s for s in found if s]


def display_url(url: str) -> str:
    """`url` safe to print: scheme, user, host, port and database; never the password or query."""
    parts = urlsplit(url)
    user = unquote(parts.username) if parts.username else ""
    host = parts.hostname or ""
    try:
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        port = ""
    where = f"{user}@{host}{port}" if user else f"{host}{port}"
    return f"{parts.scheme}://{where}{parts.path}"


def scrub(text: str, secrets: Sequence[str]) -> str:
    """`text` with every secret replaced by `***`."""
    for secret in sorted(secrets, key=len, reverse=True):
        text = text.replace(secret, "***")
    return text


_URL_PASSWORD = re.compile(r"(\b[a-z][a-z0-9+.-]*://[^\s:/@]*:)[^\s@]*@", re.IGNORECASE)


def scrub_url_passwords(text: str) -> str:
    """`text` with the password of any URL in it (`scheme://user:password@…`) replaced."""
    return _URL_PASSWORD.sub(r"\1***@", text)


def schema_name(org: str) -> str:
    """The PostgreSQL schema of an organization: `auditor_` and the name in lower-case letters,
    digits and `_`, with a short hash when that changed the name (so `A` and `a` differ)."""
    slug = re.sub(r"[^a-z0-9_]", "_", org.lower())[:40]
    if slug != org:
        slug += "_" + hashlib.sha256(org.encode()).hexdigest()[:8]
    return f"auditor_{slug}"


def _lock_key(schema: str) -> int:
    digest = hashlib.sha256(f"auditor run lock {schema}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


_CAUSES = {
    "53": "the server is out of disk space or memory",
    "08": "the connection to the server failed",
    "57": "the server is shutting down or cancelled the statement",
    "55": "another session holds a lock",
    "40": "a conflict with another session",
    "25": "the store is read-only here",
    "42": "the store's tables are not as expected",
    "XX": "the server reports damaged data",
    "28": "the server refused the login",
}
_TRANSIENT = ("53", "08", "57", "55", "40")


def _error(exc: Exception, secrets: Sequence[str]) -> PgError:
    state = str(getattr(exc, "sqlstate", "") or "")
    diag = getattr(exc, "diag", None)
    primary = getattr(diag, "message_primary", None) if diag is not None else None
    text = " ".join(str(primary or exc).split()) or type(exc).__name__
    cause = _CAUSES.get(state[:2], "")
    return PgError(
        scrub(text, secrets), state, cause, transient=state[:2] in _TRANSIENT or not state
    )


class _NoRows:
    rowcount = 0

    def fetchone(self) -> None:
        return None

    def fetchall(self) -> list[Any]:
        return []

    def fetchmany(self, size: int = 0) -> list[Any]:
        return []

    def __iter__(self) -> Any:
        return iter(())


class _Stream:
    """Rows of a server-side cursor: fetchmany, fetchone, iteration; closed when done."""

    def __init__(self, cursor: Any, secrets: Sequence[str]) -> None:
        self._cursor = cursor
        self._secrets = secrets

    def fetchmany(self, size: int = 256) -> list[Any]:
        import psycopg

        if self._cursor.closed:
            return []
        try:
            rows: list[Any] = self._cursor.fetchmany(size)
        except psycopg.Error as exc:
            self.close()
            raise _error(exc, self._secrets) from None
        if len(rows) < size:
            self.close()
        return rows

    def fetchone(self) -> Any:
        rows = self.fetchmany(1)
        return rows[0] if rows else None

    def __iter__(self) -> Iterator[Any]:
        while rows := self.fetchmany(256):
            yield from rows

    def close(self) -> None:
        """Free the server-side cursor (a closed connection frees it too)."""
        import psycopg

        with contextlib.suppress(psycopg.Error):
            self._cursor.close()


class PgConnection:
    """What the store uses of an `sqlite3.Connection`, over psycopg (autocommit; `BEGIN` and
    `COMMIT` are sent as statements, as with SQLite). Errors come out as `PgError`."""

    def __init__(self, conn: Any, schema: str, secrets: Sequence[str]) -> None:
        self._conn = conn
        self.schema = schema
        self._secrets = list(secrets)
        self._streams = 0

    def execute(self, sql: str, parameters: Sequence[Any] = ()) -> Any:
        """Run one statement; gives a cursor (fetchone, fetchmany, fetchall, rowcount, iter)."""
        if is_pragma(sql):
            return _NoRows()
        import psycopg

        try:
            return self._conn.execute(to_postgres(ddl_to_postgres(sql)), tuple(parameters))
        except psycopg.Error as exc:
            raise _error(exc, self._secrets) from None

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> Any:
        """Run one statement for each row."""
        import psycopg

        try:
            cursor = self._conn.cursor()
            cursor.executemany(to_postgres(sql), rows)
        except psycopg.Error as exc:
            raise _error(exc, self._secrets) from None
        return cursor

    def stream(self, sql: str, parameters: Sequence[Any] = ()) -> _Stream:
        """Run a SELECT whose rows are fetched in batches from a server-side cursor (as SQLite
        steps through rows), so a long history is never held in memory at once."""
        import psycopg

        self._streams += 1
        cursor = self._conn.cursor(name=f"auditor_rows_{self._streams}", withhold=True)
        try:
            cursor.execute(to_postgres(sql), tuple(parameters))
        except psycopg.Error as exc:
            cursor.close()
            raise _error(exc, self._secrets) from None
        return _Stream(cursor, self._secrets)

    @property
    def in_transaction(self) -> bool:
        """Whether a transaction is open (or failed and not yet rolled back)."""
        from psycopg.pq import TransactionStatus

        return bool(self._conn.info.transaction_status != TransactionStatus.IDLE)

    def has_table(self, name: str) -> bool:
        """Whether this organization's schema holds table `name`."""
        sql = "SELECT 1 FROM information_schema.tables WHERE table_schema = ? AND table_name = ?"
        return self.execute(sql, (self.schema, name)).fetchone() is not None

    def tables(self) -> list[str]:
        """Every table in this organization's schema, sorted."""
        rows = self.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = ? ORDER BY 1",
            (self.schema,),
        )
        return [str(r[0]) for r in rows]

    def close(self) -> None:
        """Release the advisory locks, then close the session. (Closing alone releases them
        only once the server's backend has ended, which lags the client's close: a run that
        opened the store right after could find it still locked, seen under load.)"""
        # (a session gone, or in a failed transaction: closing it ends the locks all the same)
        with contextlib.suppress(Exception):
            self._conn.execute("SELECT pg_advisory_unlock_all()")
        self._conn.close()


def connect(url: str, org: str) -> PgConnection:
    """A session for the organization's store (not yet locked: `lock`); StoreError if the
    server cannot be reached or refuses the login."""
    shown = display_url(url)
    secrets = url_secrets(url)  # libpq never echoes a password; this is a second guard
    try:
        import psycopg
    except ImportError:
        raise StoreError(
            f"state {shown} is a PostgreSQL store, and psycopg is not installed: "
            "pip install 'auditor[postgres]'"
        ) from None
    schema = schema_name(org)
    try:
        given = psycopg.conninfo.conninfo_to_dict(url)
        conn = psycopg.connect(
            url,
            autocommit=True,
            connect_timeout=given.get("connect_timeout") or CONNECT_TIMEOUT,
            application_name=f"auditor pid {os.getpid()}",
            # the server ends a statement after 5 minutes; a dead network is noticed within
            # about a minute (TCP keepalives, unacknowledged data) instead of never
            options=f"-c statement_timeout={STATEMENT_TIMEOUT_MS} {given.get('options') or ''}",
            keepalives=1,
            keepalives_idle=30,
            keepalives_interval=10,
            keepalives_count=3,
            tcp_user_timeout=60_000,
        )
    except (psycopg.Error, ValueError) as exc:
        raise StoreError(f"cannot connect to {shown}: {_error(exc, secrets)}") from None
    return PgConnection(conn, schema, secrets)


def damaged_hint(schema: str) -> str:
    """What to do when a row of the organization's schema is damaged (the file's advice, to
    move it aside, does not apply to a schema in a shared database)."""
    return (
        f"; restore the schema {schema} from a backup taken before it was damaged, or drop it "
        f'(DROP SCHEMA "{schema}" CASCADE) and run `auditor sync` to start a new one (the '
        "history is fetched again; earlier runs are not kept)"
    )


def lock(db: PgConnection, shown: str, org: str, *, shared: bool = False) -> None:
    """Take the organization's run lock (or StoreError naming its holder) and make its schema
    the session's `search_path`. Readers (`shared`) take it together, never beside a writer."""
    key = _lock_key(db.schema)
    take = "pg_try_advisory_lock_shared" if shared else "pg_try_advisory_lock"
    if not db.execute(f"SELECT {take}(?)", (key,)).fetchone()[0]:
        raise StoreError(
            f"the store of organization {org!r} in {shown} is locked by another auditor run "
            f"({_holder(db, key)})"
        )
    db.execute(f'SET search_path TO "{db.schema}"')


def _holder(db: PgConnection, key: int) -> str:
    """Who holds the advisory lock `key`: its application name (`auditor pid N`) and host."""
    high, low = (key >> 32) & 0xFFFFFFFF, key & 0xFFFFFFFF
    row = db.execute(
        "SELECT a.application_name, a.client_addr FROM pg_locks l JOIN pg_stat_activity a "
        "ON a.pid = l.pid WHERE l.locktype = 'advisory' AND l.granted "
        "AND l.classid = ?::bigint::oid AND l.objid = ?::bigint::oid",
        (high, low),
    ).fetchone()
    if row is None:
        return "unknown"
    return f"{row[0] or 'unknown'}" + (f" at {row[1]}" if row[1] else "")


def identify(db: PgConnection, shown: str) -> bool:
    """True for an auditor store, False for an absent or empty schema; StoreError (before
    anything is written) for a schema of another program."""
    tables = db.tables()
    if MARKER_TABLE in tables:
        return True
    if not tables:
        return False
    listed = ", ".join(tables[:5]) + (", …" if len(tables) > 5 else "")
    raise StoreError(
        f"schema {db.schema} in {shown} is not an auditor store (it holds tables of another "
        f"program: {listed}); it was left untouched: choose another database or organization"
    )


class Made(NamedTuple):
    """What opening a store created (`Store.discard_created`): its tables, in the schema it
    created, or in one that was there, holding no table, before (then `schema` is None)."""

    schema: str | None


def schema_exists(db: PgConnection) -> bool:
    """Whether the organization's schema exists (maybe empty: created for a role without
    `CREATE` on the database)."""
    sql = "SELECT 1 FROM pg_catalog.pg_namespace WHERE nspname = ?"
    return db.execute(sql, (db.schema,)).fetchone() is not None


def create_marker(db: PgConnection) -> None:
    """Create the schema and its marker table (inside the creating transaction)."""
    db.execute(f'CREATE SCHEMA IF NOT EXISTS "{db.schema}"')
    db.execute(f"CREATE TABLE {MARKER_TABLE} (application TEXT NOT NULL)")
    db.execute(f"INSERT INTO {MARKER_TABLE} (application) VALUES (?)", (MARKER,))


def set_readonly(db: PgConnection) -> None:
    """Every later transaction of this session is read-only."""
    db.execute("SET default_transaction_read_only = on")
