"""The PostgreSQL backend: a central store for many organizations (`--state postgresql://…`).

Takes a connection string and an organization, gives a `PgConnection` that runs the store's
SQLite-worded SQL (translated by `auditor.store.dialect`), holding the organization's run lock.
Each organization lives in its own PostgreSQL schema, `auditor_<org>`, so every stored row is
keyed by organization, two organizations never contend, and the store's queries (and any new
module's) need no organization filter. The run lock is a session advisory lock on that schema:
a second run for the same organization is refused (as with SQLite's lock file), runs for other
organizations go ahead. A schema holding tables but no `auditor_marker` table belongs to
another program and is never touched.

A session the server ends (a restart, a failover, `pg_terminate_backend`, an idle-transaction
timeout) is opened again once between transactions, set up as before, its lock taken again
(StoreError if another run took it meanwhile, or took it, wrote and let it go: `_mark_of`); a
write transaction it cut off is never sent again, and one whose COMMIT's answer was lost is
asked about on the new session (`PgConnection._call`).

A server that stops answering (hung, its processes stopped, a failover target that accepts and
says nothing) is noticed by auditor itself: the server never enforces its statement_timeout
then, its kernel answers TCP keepalives, and a unix socket has none. Every round trip is bounded
(`statement_bound`; `_Watch`): past the bound the session's socket is shut down, the waiting
read ends at once, and the session counts as lost, with the bound in its words.

The password is read by libpq from the URL, `PGPASSWORD` or `~/.pgpass` (`PG*` variables work
too) and never appears in a message: `display_url` drops it, `scrub` removes it from errors.
psycopg is imported only when a PostgreSQL store is opened (`pip install 'auditor[postgres]'`).
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import logging
import os
import re
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple
from urllib.parse import parse_qsl, unquote, urlsplit

from auditor.common.lazyre import lazy_regex
from auditor.errors import StoreError
from auditor.store.dialect import PgError, ddl_to_postgres, is_pragma, to_postgres

if TYPE_CHECKING:
    import socket  # (imported when a PostgreSQL store is opened: `_Watch.attach`)

SCHEMES = ("postgresql://", "postgres://")
MARKER_TABLE = "auditor_marker"
MARKER = "auditor state store"
CONNECT_TIMEOUT = 10  # seconds; every later statement is bounded by `statement_bound`
STATEMENT_TIMEOUT_MS = 300_000
# The server ends a statement past its statement_timeout, and says why; auditor waits this much
# longer for that answer (at most: as much again for a shorter statement_timeout), then gives up
# on a server that does not answer at all (`statement_bound`).
STATEMENT_MARGIN = 30.0
# Releasing the locks as a session closes waits this long (seconds): closing ends them anyway.
CLOSE_WITHIN = 5.0
# How often the watchdog looks at the round trips under way: a bound holds to within this.
WATCH_TICK = 0.5
# A lock another session holds on the store's tables (a DBA's LOCK TABLE or VACUUM FULL) is
# waited for this long, then the statement fails saying so (runs of one organization never
# wait on each other: the run lock refuses the second at once)
LOCK_TIMEOUT_MS = 60_000
# A session lost mid-command (a failover, a restart, a DBA's pg_terminate_backend, an
# idle_in_transaction_session_timeout) is opened again this many times at most; each time the
# server is tried again after these pauses (seconds) while it is still starting up.
RECONNECTS = 3
RECONNECT_PAUSES = (0.5, 1.0, 2.0, 4.0)
# ... and for this long at most in all: a try that gets no answer (a server that accepts the
# connection and says nothing, a firewall dropping packets) waits only what is left of it
# (libpq's connect_timeout bounds the whole handshake: TCP, TLS, login), never 10 s a try.
RECONNECT_WITHIN = 15.0
# A COMMIT whose answer was lost with the session: how long the new session waits for the
# lost one's transaction to end before it asks whether that transaction committed.
IN_DOUBT_WAIT = 5.0


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


_URL_PASSWORD = lazy_regex(
    globals(), "_URL_PASSWORD", r"(\b[a-z][a-z0-9+.-]*://[^\s:/@]*:)[^\s@]*@", re.IGNORECASE
)


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


# What an SQLSTATE means for the store, in plain words: the exact code first, then its class.
_CODES = {
    "42501": "the role lacks a privilege: a writing command needs CREATE on the database (or "
    "the schema created for it beforehand) and the right to write the schema's tables; a "
    "reading one, USAGE on the schema and SELECT on its tables",
    "57014": "the statement was cancelled: it ran longer than the session's statement_timeout "
    "(auditor's is 5 minutes unless PGOPTIONS or the URL's ?options= sets one), or an "
    "administrator cancelled it",
    "57P01": "an administrator or a server shutdown ended the session",
    "57P02": "the server stopped abruptly",
    "57P03": "the server is starting up or shutting down",
    "55P03": "another session holds a lock on the store's tables (a LOCK TABLE, a VACUUM FULL, "
    "another program's open transaction) longer than the session's lock_timeout",
    "25006": "the store is read-only here (a read-only transaction or a standby server)",
    "25P03": "the transaction waited longer than the server's idle_in_transaction_session_timeout",
    "40P01": "a deadlock with another session",
    "53300": "the server has no free connection slot",
    "3D000": "the database does not exist",
}
_CAUSES = {
    "53": "the server is out of disk space or memory",
    "08": "the connection to the server failed",
    "57": "the server ended the session or cancelled the statement",
    "55": "another session holds a lock",
    "40": "a conflict with another session",
    "25": "the store is read-only here",
    "42": "the store's tables are not as expected",
    "XX": "the server reports damaged data",
    "28": "the server refused the login",
}
_TRANSIENT = ("53", "08", "57", "55", "40")


def statement_bound(timeout_ms: int) -> float:
    """How long auditor waits for the server's answer to one statement (seconds), given the
    session's statement_timeout (ms; 0, off: auditor's own): that, and as much again, at most
    STATEMENT_MARGIN more. A server that works ends the statement first, saying why."""
    return _bound_of(timeout_ms, "")[0]


def _bound_of(timeout_ms: int, what: str) -> tuple[float, str]:
    """`statement_bound(timeout_ms)`, and why, as a message says it: `what` is bounded by
    (`the session's statement_timeout`) the limit and the margin."""
    limit = (timeout_ms if timeout_ms > 0 else STATEMENT_TIMEOUT_MS) / 1000
    bound = limit + min(limit, STATEMENT_MARGIN)
    return bound, f"auditor's bound on {what} of {limit:g} s, and {bound - limit:g} s more)"


class _Watch:
    """A client-side bound on the round trips of one session. A hung server neither answers
    nor closes, and libpq waits for it with no limit: so while a round trip is under way
    (`arm`), the watchdog thread (`_watch_all`) looks at it every WATCH_TICK, and past its
    bound shuts the session's socket down (a duplicate of it, so that the descriptor is never
    another file's), which ends libpq's wait at once ("server closed the connection"). Arming
    costs a clock read and a tuple: nothing next to a round trip."""

    def __init__(self) -> None:
        self.armed: tuple[float, float, str] | None = None  # (deadline, bound, why)
        self.fired: tuple[float, str] | None = None  # the bound that cut the last round trip
        self._socket: socket.socket | None = None
        self._guard = threading.Lock()  # (the socket is never shut down as it is replaced)

    def attach(self, conn: Any) -> None:
        """Watch `conn`'s socket from now on (None: no session; and the watch ends)."""
        import socket

        with self._guard:
            if self._socket is not None:
                self._socket.close()
            self._socket = None
            self.armed = None
            if conn is not None:
                with contextlib.suppress(Exception):  # (a closed connection: nothing to watch)
                    self._socket = socket.socket(fileno=os.dup(conn.fileno()))
        if conn is None:
            with _WATCHING:  # (the watchdog lists them under it: a set changed while it did
                _WATCHES.discard(self)  # so killed the thread, leaving nothing bounded: R46)
        else:
            _watching(self)

    def arm(self, bound: float, why: str) -> None:
        self.fired = None
        self.armed = (time.monotonic() + bound, bound, why)

    def check(self, now: float) -> None:
        """Cut the round trip under way if it is past its bound (the watchdog's thread)."""
        armed = self.armed
        if armed is None or now < armed[0]:
            return
        import socket

        with self._guard:
            if self.armed is not armed or self._socket is None:
                return  # (it ended meanwhile)
            self.armed = None
            self.fired = armed[1:]
            with contextlib.suppress(OSError):
                self._socket.shutdown(socket.SHUT_RDWR)


_WATCHES: weakref.WeakSet[_Watch] = weakref.WeakSet()
_WATCHING = threading.Lock()
_watcher: list[threading.Thread] = []  # the watchdog's thread while any session is open


def _watching(watch: _Watch) -> None:
    with _WATCHING:
        _WATCHES.add(watch)
        if not any(t.is_alive() for t in _watcher):
            _watcher[:] = [
                threading.Thread(target=_watch_all, name="auditor-pg-watch", daemon=True)
            ]
            _watcher[0].start()


def _watch_all() -> None:
    """The watchdog: one thread for every session of the process, ending with the last."""
    while True:
        time.sleep(WATCH_TICK)
        with _WATCHING:
            watches = list(_WATCHES)
            if not watches:
                _watcher.clear()
                return
        now = time.monotonic()
        for watch in watches:
            watch.check(now)


def _no_answer(fired: tuple[float, str]) -> PgError:
    bound, why = fired
    return PgError(
        f"the server did not answer within {bound:g} s, {why}: it is hung or unreachable; "
        "auditor closed the connection",
        "",
        "",
        transient=True,
    )


def _error(exc: Exception, secrets: Sequence[str], *, lost: bool = False) -> PgError:
    state = str(getattr(exc, "sqlstate", "") or "")
    diag = getattr(exc, "diag", None)
    primary = getattr(diag, "message_primary", None) if diag is not None else None
    text = " ".join(str(primary or exc).split()) or type(exc).__name__
    cause = _CODES.get(state) or _CAUSES.get(state[:2], "")
    if lost and not state:  # libpq's words only ("the connection is closed", …)
        text = f"{text} (the connection to the server was lost)"
    return PgError(
        scrub(text, secrets), state, cause, transient=state[:2] in _TRANSIENT or not state
    )


class _Count:
    """What `executemany` gives: how many rows it wrote."""

    def __init__(self, rowcount: int) -> None:
        self.rowcount = rowcount


#: Rows sent in one round trip by `executemany`, each round trip bounded on its own.
_MANY = 100


def _default_bound() -> tuple[float, str]:
    """The bound on one statement under the default statement_timeout (`statement_bound`)."""
    return _bound_of(0, "reading a query's rows (its default statement_timeout")


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

    def __init__(self, cursor: Any, db: PgConnection) -> None:
        self._cursor = cursor
        self._db = db
        # every row was read (or the read failed): psycopg does not mark a cursor closed when
        # its CLOSE failed (the session was lost on it), so this says no row is left to read
        self._done = False

    def fetchmany(self, size: int = 256) -> list[Any]:
        import psycopg

        if self._done or self._cursor.closed:
            return []
        try:
            rows: list[Any] = self._db.bounded(lambda: self._cursor.fetchmany(size))
        except psycopg.Error as exc:
            error = self._db.failure(exc)  # (before `close`, whose round trip forgets a bound
            self.close()  # that cut this one: R46)
            raise error from None
        if len(rows) < size:
            self.close()  # (a session lost on this CLOSE is opened again by the next statement)
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

        self._done = True
        with contextlib.suppress(psycopg.Error):
            self._db.bounded(self._cursor.close)


class InDoubt(PgError):
    """A COMMIT whose answer was lost with the session, and the server could not be asked
    afterwards whether it committed: the write may or may not be stored."""


def _mark_of(conn: Any, schema: str) -> tuple[Any, ...] | None:
    """What says whether another run or sync wrote to the store: the newest sync's id and the
    newest run's row (None while the store has no such tables). Read on a psycopg connection."""
    syncs, runs = f'"{schema}".syncs', f'"{schema}".runs'
    found = conn.execute(
        "SELECT to_regclass(%s) IS NOT NULL AND to_regclass(%s) IS NOT NULL", (syncs, runs)
    ).fetchone()
    if not found[0]:
        return None
    row = conn.execute(f"SELECT (SELECT MAX(id) FROM {syncs}), (SELECT MAX(rowid) FROM {runs})")
    return tuple(row.fetchone())


class PgConnection:
    """What the store uses of an `sqlite3.Connection`, over psycopg (autocommit; `BEGIN` and
    `COMMIT` are sent as statements, as with SQLite). Errors come out as `PgError`."""

    def __init__(
        self,
        conn: Any,
        schema: str,
        secrets: Sequence[str],
        reopen: Callable[[float], Any] | None = None,
    ) -> None:
        self._conn = conn
        self.schema = schema
        self._secrets = list(secrets)
        self._streams = 0
        # Opening the session again after it was lost (`_reconnect`): a new psycopg
        # connection, then what `lock` and `set_readonly` set up on the lost one.
        self._reopen = reopen
        self.shown = ""  # the store as messages name it (set by `lock`)
        self._org = ""
        self._lock: tuple[int, bool] | None = None  # (key, shared) once `lock` took it
        self._session: list[str] = []  # SET statements to give a new session
        self._open = False  # a transaction was open at the end of the last statement
        self.reconnects = 0
        self._why = "the server ended the session"  # what the lost session last said
        self._failed = ""  # why opening the session again failed
        self._last = time.monotonic()  # when the last statement ended
        # the server's idle_in_transaction_session_timeout for this session (ms; 0: none),
        # read by `lock`: a sync's transaction waits on the API between its statements
        self.idle_limit_ms = 0
        self.lock_limit_ms = 0  # its lock_timeout (ms; 0: none), read by `lock`
        # the store as this command last saw it (`_mark_of`), read by `lock` and at each COMMIT
        # of this session's writes: a session opened again after a loss finds the same, or
        # another run or sync wrote meanwhile (it took the lock the lost session let go of)
        self.mark: tuple[Any, ...] | None = None
        self._marked = False  # `mark` was read
        # a COMMIT whose answer was lost: (its transaction's id, the mark if it committed)
        self._doubt: tuple[int, tuple[Any, ...] | None] | None = None
        self._committed: bool | None = None  # what the new session found of it (None: unknown)
        # how long one statement waits for the server (`statement_bound`; set again by `lock`
        # from the session's statement_timeout), and why, as a message says it
        self._bound = (0.0, "")
        self.set_bound(STATEMENT_TIMEOUT_MS)
        self._watch = _Watch()
        self._watch.attach(conn)
        self._pid = _backend_pid(conn)  # the server's process of this session
        self._started = self.bounded(lambda: _session_start(conn))  # (with the pid: the process)

    def set_bound(self, timeout_ms: int) -> None:
        """Bound each statement by the session's statement_timeout (`statement_bound`)."""
        self._bound = _bound_of(timeout_ms, "one statement (the session's statement_timeout")

    def bounded(self, run: Callable[[], Any], bound: tuple[float, str] | None = None) -> Any:
        """`run()`, a round trip to the server cut off past `bound` (a statement's: `_bound`),
        when it raises the connection's error (`failure` words it)."""
        watch = self._watch
        limit, why = bound or self._bound
        watch.fired = None
        watch.armed = (time.monotonic() + limit, limit, why)  # (`_Watch.arm`, inline: hot path)
        try:
            return run()
        finally:
            watch.armed = None

    def failure(self, exc: Exception) -> PgError:
        """`exc`, psycopg's error, as the store reports it (a round trip cut off by its bound
        says so: libpq only saw the connection closed)."""
        fired = self._watch.fired
        if fired is not None:
            return _no_answer(fired)
        return _error(exc, self._secrets, lost=self._lost())

    def _lost(self) -> bool:
        """Whether the session is gone (the server ended it, or the network did)."""
        return bool(self._conn.closed or self._conn.broken)

    def _reconnect(self, why: str) -> None:
        """Open the session again after it was lost between transactions, with the store's
        settings and its organization's lock; StoreError if that cannot be done. Nothing is
        replayed: a transaction open on the lost session is gone (and said so by its caller);
        only a statement outside any transaction is run again (`_retryable`)."""
        where = self.shown or self.schema
        lost = f"the connection to the state database {where} was lost ({why})"
        if self._failed:  # tried and failed once: the server is not waited for again
            raise StoreError(self._failed)
        if self._reopen is None or self.reconnects >= RECONNECTS:
            raise StoreError(f"{lost}; it is not opened again: the command stopped")
        self.reconnects += 1
        try:
            self._connect_again(lost)
        except StoreError as exc:
            self._failed = str(exc)
            raise

    def _connect_again(self, lost: str) -> None:
        """A new session in `self._conn`, set up as the lost one was; StoreError if not."""
        import psycopg

        reopen = self._reopen
        assert reopen is not None  # (checked by `_reconnect`)
        with contextlib.suppress(Exception):
            self._conn.close()
        self._watch.attach(None)
        conn = None
        failure = ""
        deadline = time.monotonic() + RECONNECT_WITHIN
        for pause in (*RECONNECT_PAUSES, None):
            try:
                conn = reopen(deadline - time.monotonic())
                break
            except (psycopg.Error, ValueError) as exc:
                failure = str(_error(exc, self._secrets))
                if pause is None or time.monotonic() + pause > deadline - 1:
                    break
                time.sleep(pause)
        if conn is None:
            raise StoreError(f"{lost}, and connecting again failed: {failure}")
        # setting the new session up is bounded as connecting is (it takes a few round trips,
        # and at most twice IN_DOUBT_WAIT waiting for the lost one to end)
        self._watch.attach(conn)
        self._watch.arm(
            RECONNECT_WITHIN + 2 * IN_DOUBT_WAIT, "auditor's bound on setting up a new session"
        )
        try:
            self._end_lost_session(conn)
            marks = [self.mark]  # what the store may hold if nobody else wrote
            if self._doubt is not None:
                self._committed = _committed(conn, self._doubt[0])
                if self._committed:
                    self.mark = marks[0] = self._doubt[1]
                elif self._committed is None:  # (the transaction's own rows, or not)
                    marks.append(self._doubt[1])
                self._doubt = None
            if self._lock is not None:
                key, shared = self._lock
                take = "pg_try_advisory_lock_shared" if shared else "pg_try_advisory_lock"
                if not conn.execute(f"SELECT {take}(%s)", (key,)).fetchone()[0]:
                    holder = _holder_of(conn, key)
                    raise StoreError(
                        f"{lost}; connected again, the store of organization {self._org!r} "
                        f"is locked by {holder}, which started meanwhile: this command "
                        "stopped; run it again once that one has finished"
                    )
            for statement in self._session:
                conn.execute(statement)
            found = _mark_of(conn, self.schema) if self._marked else None
            if self._marked and found not in marks:
                raise StoreError(
                    f"{lost}; connected again, another auditor run or sync of organization "
                    f"{self._org!r} wrote to the store meanwhile (it took the lock the lost "
                    "session let go of): this command stopped, so that what it had done is not "
                    "mixed with that; run it again"
                )
            self.mark = found
            started = _session_start(conn)
        except BaseException as exc:
            with contextlib.suppress(Exception):
                conn.close()
            self._watch.attach(None)
            if not isinstance(exc, psycopg.Error):
                raise
            fired = self._watch.fired
            why = _no_answer(fired) if fired else _error(exc, self._secrets)
            raise StoreError(f"{lost}, and connecting again failed: {why}") from None
        self._watch.armed = None
        self._conn = conn
        self._pid = _backend_pid(conn)
        self._started = started
        self._open = False

    def _end_lost_session(self, conn: Any) -> None:
        """End the lost session's server process if the server has not noticed yet that it is
        gone (a network loss): it would hold the lock, and its transaction, for minutes."""
        import psycopg

        if not self._pid or self._started is None or self._pid == _backend_pid(conn):
            return
        with contextlib.suppress(psycopg.Error):  # (a role may not end it: it ends on its own)
            self._end_session(conn, self._pid, self._started)

    @staticmethod
    def _end_session(conn: Any, pid: int, started: Any) -> None:
        # the process is the lost session's only if it started when that one did: after a
        # server restart a pid is handed out again, to another organization's session of the
        # same `run --orgs` (same application_name) too (reviewer R29b #1)
        name = f"auditor pid {os.getpid()}"
        alive = (
            "SELECT 1 FROM pg_catalog.pg_stat_activity "
            "WHERE pid = %s AND application_name = %s AND backend_start = %s"
        )
        if conn.execute(alive, (pid, name, started)).fetchone() is None:
            return
        conn.execute("SELECT pg_catalog.pg_terminate_backend(%s)", (pid,))
        until = time.monotonic() + IN_DOUBT_WAIT
        while conn.execute(alive, (pid, name, started)).fetchone() is not None:
            if time.monotonic() > until:
                return
            time.sleep(0.05)

    def _before_commit(self) -> None:
        """On a write transaction about to commit: its id and the store's mark as it will be
        once committed (nobody else writes: this session holds the lock), for `_commit_lost`."""
        import psycopg

        self._doubt = None
        conn = self._conn
        try:
            xid = self.bounded(
                lambda: conn.execute("SELECT txid_current_if_assigned()").fetchone()
            )[0]
            if xid is not None:
                self._doubt = (int(xid), self.bounded(lambda: _mark_of(conn, self.schema)))
        except psycopg.Error:
            self._doubt = None  # (the COMMIT then fails, or rolls back a failed transaction)

    def _call(
        self, sql: str, run: Callable[[], Any], bound: tuple[float, str] | None = None
    ) -> Any:
        """`run()` (one statement, `sql` in PostgreSQL's words), on a session opened again if
        the last one was lost between transactions; a statement that cannot change anything
        (`_retryable`) is run again once when the session is lost under it."""
        import psycopg

        head = sql.lstrip()[:8].upper()
        committing = head.startswith("COMMIT") and not self._lost() and self._status_open()
        if committing:
            self._before_commit()
        if self._lost():
            if head.startswith(("ROLLBACK", "COMMIT")) or self._open:
                # the lost session's transaction is gone with it: nothing to roll back; a
                # statement inside it, or its COMMIT, fails (below) as the write it was part of
                self._open = not head.startswith("ROLLBACK")
                if not self._open:
                    return _NoRows()
            else:
                self._reconnect(self._why)
        idle = time.monotonic() - self._last
        try:
            result = self.bounded(run, bound)
        except psycopg.Error as exc:
            self._last = time.monotonic()
            error = self.failure(exc)
            if error.sqlstate == "55P03" and self.lock_limit_ms:
                error = _waited(error, self.lock_limit_ms)
            if self._lost():
                if self._open and 0 < self.idle_limit_ms <= idle * 1000:
                    error = _idled_out(error, idle, self.idle_limit_ms)
                self._why = describe_lost(error)
            if committing and self._lost() and self._doubt is not None:
                return self._commit_lost(error)
            if committing:
                self._doubt = None  # (refused by the server: not in doubt)
            if not (self._lost() and not self._open and _retryable(head)):
                if not self._lost():  # (a lost session keeps what was open when lost)
                    self._open = self._status_open()
                raise error from None
            self._reconnect(self._why)
            try:
                result = self.bounded(run, bound)  # (a stream's own bound again: review R47)
            except psycopg.Error as again:
                if not self._lost():
                    self._open = self._status_open()
                raise self.failure(again) from None
        if committing and self._doubt is not None:
            self.mark, self._marked = self._doubt[1], True
        self._doubt = None
        self._open = self._status_open()
        self._last = time.monotonic()
        return result

    def _commit_lost(self, error: PgError) -> Any:
        """A COMMIT sent, its answer lost with the session: the server may have committed.
        A new session asks it (`_connect_again`): committed, the COMMIT succeeded; not, the
        error as any lost write; unknown, `InDoubt`."""
        self._committed = None
        self._reconnect(self._why)  # StoreError if it cannot be opened again
        if self._committed:
            self._last = time.monotonic()
            return _NoRows()
        if self._committed is None:
            raise InDoubt(
                f"{error}; the server could not tell whether it recorded the transaction (it "
                "may have): the store may hold this write",
                error.sqlstate,
                error.cause,
                transient=True,
            ) from None
        raise error from None

    def _status_open(self) -> bool:
        from psycopg.pq import TransactionStatus

        return bool(self._conn.info.transaction_status != TransactionStatus.IDLE)

    def execute(self, sql: str, parameters: Sequence[Any] = ()) -> Any:
        """Run one statement; gives a cursor (fetchone, fetchmany, fetchall, rowcount, iter)."""
        if is_pragma(sql):
            return _NoRows()
        statement = to_postgres(ddl_to_postgres(sql))
        return self._call(statement, lambda: self._conn.execute(statement, tuple(parameters)))

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> Any:
        """Run one statement for each row, `_MANY` rows a round trip, each bounded as one
        statement is (the server times each row's statement: bounded together, 200,000 quick
        rows under a 1 s statement_timeout were cut off as a hung server: review R46)."""
        statement = to_postgres(sql)

        def run() -> _Count:
            cursor = self._conn.cursor()
            done, left = 0, iter(rows)
            while chunk := list(itertools.islice(left, _MANY)):
                self._watch.arm(*self._bound)
                cursor.executemany(statement, chunk)
                done += max(cursor.rowcount, 0)
            return _Count(done)

        return self._call(statement, run)

    def stream(self, sql: str, parameters: Sequence[Any] = ()) -> _Stream:
        """Run a SELECT whose rows are fetched in batches from a server-side cursor (as SQLite
        steps through rows), so a long history is never held in memory at once."""
        import psycopg

        statement = to_postgres(sql)

        def run() -> Any:
            self._streams += 1
            cursor = self._conn.cursor(name=f"auditor_rows_{self._streams}", withhold=True)
            try:
                cursor.execute(statement, tuple(parameters))
            except psycopg.Error:
                with contextlib.suppress(psycopg.Error):
                    cursor.close()
                raise
            return cursor

        # The rows of a cursor WITH HOLD are made as its transaction commits, which the
        # server's statement_timeout does not bound: a healthy server may take longer than a
        # statement may (R46), so a hung one is waited for as long as with the default.
        opened = self._call(statement, run, max(self._bound, _default_bound()))
        return _Stream(opened, self)

    @property
    def in_transaction(self) -> bool:
        """Whether a transaction is open (or failed and not yet rolled back); on a lost
        session, whether one was open when it was lost."""
        if self._lost():
            return self._open
        return self._status_open()

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

    def mark_store(self) -> None:
        """Read the store's mark (`_mark_of`), to compare with after a session is opened again."""
        self.mark = self._call("SELECT", lambda: _mark_of(self._conn, self.schema))
        self._marked = True

    def close(self) -> None:
        """Release the advisory locks, then close the session. (Closing alone releases them
        only once the server's backend has ended, which lags the client's close: a run that
        opened the store right after could find it still locked, seen under load.)"""
        # (a session gone, or in a failed transaction: closing it ends the locks all the same)
        conn = self._conn
        if not self._lost():
            with contextlib.suppress(Exception):
                unlock = (CLOSE_WITHIN, "auditor's bound on releasing the locks as it closes")
                self.bounded(lambda: conn.execute("SELECT pg_advisory_unlock_all()"), unlock)
        with contextlib.suppress(Exception):
            conn.close()
        self._watch.attach(None)


def _session_start(conn: Any) -> Any:
    """When the server started the process of `conn`'s session (None: not known, and then
    no later session ends it: `PgConnection._end_lost_session`)."""
    with contextlib.suppress(Exception):
        row = conn.execute(
            "SELECT backend_start FROM pg_catalog.pg_stat_activity "
            "WHERE pid = pg_catalog.pg_backend_pid()"
        ).fetchone()
        return None if row is None else row[0]
    return None


def _backend_pid(conn: Any) -> int:
    with contextlib.suppress(Exception):
        return int(conn.info.backend_pid)
    return 0


def _committed(conn: Any, xid: int) -> bool | None:
    """Whether transaction `xid` committed, asked on a new session once the lost one's server
    process has ended (None: the server cannot tell, or it is still running)."""
    until = time.monotonic() + IN_DOUBT_WAIT
    while True:
        status = conn.execute("SELECT txid_status(%s)", (xid,)).fetchone()[0]
        if status in ("committed", "aborted"):
            return bool(status == "committed")
        if status is None or time.monotonic() > until:
            return None
        time.sleep(0.05)


def _waited(error: PgError, limit_ms: int) -> PgError:
    """`error` (a lock timeout) saying how long it waited, on what, and what to do."""
    why = (
        f"auditor waited {limit_ms / 1000:g} s (the session's lock_timeout) for a lock another "
        "session holds on the store's tables (a LOCK TABLE, a VACUUM FULL, another program's "
        "open transaction): run it again once that session is done"
    )
    return PgError(str(error), error.sqlstate, why, transient=error.transient)


def not_the_store(exc: Exception) -> bool:
    """A PostgreSQL error that says nothing about the store's tables or rows: a privilege,
    the server, the connection, a lock, a timeout, a read-only session."""
    if not isinstance(exc, PgError):
        return False
    return exc.sqlstate == "42501" or exc.sqlstate[:2] not in ("42", "XX", "22", "23")


def _idled_out(error: PgError, idle: float, limit_ms: int) -> PgError:
    """`error` saying why the server most likely ended the session: its transaction waited
    longer than the server lets a transaction wait (libpq only says the connection closed)."""
    why = (
        f"{error} (the transaction had waited {idle:.0f} s, longer than the server's "
        f"idle_in_transaction_session_timeout of {limit_ms / 1000:g} s: a sync holds its "
        "transaction open while it fetches each API page; set a longer timeout for "
        "auditor's role, `ALTER ROLE … SET idle_in_transaction_session_timeout = '10min'`)"
    )
    return PgError(why, error.sqlstate, error.cause, transient=error.transient)


def describe_lost(error: PgError) -> str:
    """The server's or libpq's words for a lost session, with its SQLSTATE when it gave one."""
    return f"{error} (SQLSTATE {error.sqlstate})" if error.sqlstate else str(error)


def _retryable(head: str) -> bool:
    """A statement that may be sent again on a new session when the session is lost under
    it: one outside any transaction that changes nothing (a read; a transaction's BEGIN; a
    session setting, which a new session is given again anyway)."""
    return head.startswith(("SELECT", "BEGIN", "SET "))


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
    # psycopg's own warnings (`error ignored terminating <psycopg.Pipeline [BAD] …>` when a
    # session is lost mid-write) are not auditor's lines: the error itself is reported
    logging.getLogger("psycopg").addHandler(logging.NullHandler())

    def reopen(within: float | None = None) -> Any:
        """A new session; with `within`, its connect timeout (the whole handshake) is at most
        that many seconds (libpq's least is 2)."""
        given = psycopg.conninfo.conninfo_to_dict(url)
        timeout = int(given.get("connect_timeout") or CONNECT_TIMEOUT)
        if within is not None:
            timeout = max(2, min(timeout, int(within)))
        # the statement timeout is added before the user's options, which libpq takes from the
        # URL's `?options=` or else from PGOPTIONS (passing `options` replaces PGOPTIONS, so
        # it is read here as libpq would): a `-c` given later wins, so the user's do
        theirs = given.get("options") or os.environ.get("PGOPTIONS") or ""
        return psycopg.connect(
            url,
            autocommit=True,
            connect_timeout=timeout,
            application_name=f"auditor pid {os.getpid()}",
            # the server ends a statement after 5 minutes; a dead network is noticed within
            # about a minute (TCP keepalives, unacknowledged data) instead of never
            options=(
                f"-c statement_timeout={STATEMENT_TIMEOUT_MS} -c lock_timeout={LOCK_TIMEOUT_MS} "
                f"{theirs}"
            ).strip(),
            keepalives=1,
            keepalives_idle=30,
            keepalives_interval=10,
            keepalives_count=3,
            tcp_user_timeout=60_000,
        )

    try:
        conn = reopen()
    except (psycopg.Error, ValueError) as exc:
        raise StoreError(f"cannot connect to {shown}: {_error(exc, secrets)}") from None
    return PgConnection(conn, schema, secrets, reopen)


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
    db.shown, db._org = shown, org
    take = "pg_try_advisory_lock_shared" if shared else "pg_try_advisory_lock"
    if not db.execute(f"SELECT {take}(?)", (key,)).fetchone()[0]:
        holder = db.bounded(lambda: _holder_of(db._conn, key))
        raise StoreError(f"the store of organization {org!r} in {shown} is locked by {holder}")
    db._lock = (key, shared)
    settings = dict(
        db.execute(
            "SELECT name, setting FROM pg_catalog.pg_settings "
            "WHERE name IN ('idle_in_transaction_session_timeout', 'lock_timeout', "
            "'statement_timeout')"
        ).fetchall()
    )
    with contextlib.suppress(TypeError, ValueError):
        db.set_bound(int(settings.get("statement_timeout", STATEMENT_TIMEOUT_MS)))
    with contextlib.suppress(TypeError, ValueError):
        db.idle_limit_ms = int(settings.get("idle_in_transaction_session_timeout", 0))
    with contextlib.suppress(TypeError, ValueError):
        db.lock_limit_ms = int(settings.get("lock_timeout", 0))
    search_path = f'SET search_path TO "{db.schema}"'
    db.execute(search_path)
    db._session.append(search_path)
    db.mark_store()


def _holder_of(conn: Any, key: int) -> str:
    """Who holds the advisory lock `key` in this database (on a psycopg connection), as the
    state file's lock says it: `another auditor run (auditor pid N at host)` for a writer,
    `another auditor command reading it (…)` for readers. (An organization's key is the same
    in every database: a holder in another one is not this store's.)"""
    import psycopg

    high, low = (key >> 32) & 0xFFFFFFFF, key & 0xFFFFFFFF
    try:
        row = conn.execute(
            "SELECT a.application_name, a.client_addr, l.mode = 'ShareLock' "
            "FROM pg_catalog.pg_locks l JOIN pg_catalog.pg_stat_activity a ON a.pid = l.pid "
            "WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1 "
            "AND l.database = (SELECT oid FROM pg_catalog.pg_database "
            "WHERE datname = current_database()) "
            "AND l.classid = %s::bigint::oid AND l.objid = %s::bigint::oid "
            "ORDER BY l.mode = 'ShareLock', a.backend_start LIMIT 1",
            (high, low),
        ).fetchone()
    except psycopg.Error:
        row = None
    if row is None:
        return "another auditor run (unknown)"
    who = f"{row[0] or 'unknown'}" + (f" at {row[1]}" if row[1] else "")
    return (
        f"another auditor command reading it ({who})" if row[2] else f"another auditor run ({who})"
    )


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
    db._session.append("SET default_transaction_read_only = on")
