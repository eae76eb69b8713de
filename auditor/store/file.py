"""Opening a state file: the exclusive lock, the schema check and the fingerprint key.

Takes a path and an SQLite connection, gives a locked, schema-checked file and its HMAC key.
The key is random per file (kept in `meta`) unless `AUDITOR_FINGERPRINT_KEY` supplies one, in
which case only a check value is stored and the file cannot be opened without the key.
"""

from __future__ import annotations

import errno
import fcntl
import glob
import hashlib
import hmac
import os
import re
import resource
import secrets
import sqlite3
import stat
import weakref
from collections.abc import Callable, Mapping
from contextlib import closing, suppress
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from auditor.common.lazyre import lazy_regex
from auditor.errors import StoreError
from auditor.store import schema
from auditor.store.dialect import PgError, ddl_statements, has_table, meta_text, meta_value

if TYPE_CHECKING:
    from auditor.redact import SecretMemory

_KEY_CHECK_LABEL = b"auditor fingerprint key check"
APPLICATION_ID = 0x41554454  # "AUDT" in the SQLite header: this file is an auditor state file
_HEADER_SIZE = 100  # SQLite's file header: the application id at bytes 68-71, big-endian


def _key_check(key: bytes) -> str:
    return hmac.new(key, _KEY_CHECK_LABEL, hashlib.sha256).hexdigest()


def check_regular(path: Path) -> None:
    """StoreError unless `path` (after symlinks) is a regular file: SQLite would wait forever on
    a named pipe and misreport a folder or a device as an I/O error."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise StoreError(_loop(path)) from None
        raise StoreError(f"cannot open state file {path}: {exc.strerror}") from None
    if not stat.S_ISREG(mode):
        raise StoreError(
            f"{path} is {_KINDS.get(stat.S_IFMT(mode), 'not a regular file')}, not a state "
            "file: choose another --state"
        )


def exposed_warning(path: Path, shown: Callable[[], str]) -> str | None:
    """One line when the state file at `path` (`shown()`: as a message names it) may be read by
    accounts other than its owner and group (o+r, or o+w): it holds the fingerprint key (the
    HMAC key of every secret's marker, unless AUDITOR_FINGERPRINT_KEY supplies it: the line
    says which) and the redacted history. A new file is made 0600; one made before 0.3.0
    (0644 under the usual umask 022) keeps its mode. Sharing with a group (`chmod 640`) is
    supported: nothing said. None when it is fine, missing, not an auditor state file or
    cannot be looked at (its opening says why)."""
    try:
        info = path.stat()
        mode = stat.S_IMODE(info.st_mode)
        if not stat.S_ISREG(info.st_mode) or not mode & (stat.S_IROTH | stat.S_IWOTH):
            return None
        with path.open("rb") as handle:
            header = handle.read(_HEADER_SIZE)
    except (OSError, ValueError):
        return None
    if header[:16] != b"SQLite format 3\0" or header[68:72] != APPLICATION_ID.to_bytes(4, "big"):
        return None  # another program's file (refused when opened), or an empty one
    name = shown()
    held = _holds_fingerprint_key(path)
    what = (
        "it holds the fingerprint key of the secrets' markers"
        if held
        else "it holds the redacted settings history (the fingerprint key is not in it: "
        "AUDITOR_FINGERPRINT_KEY gives it)"
        if held is False
        else "it may hold the fingerprint key of the secrets' markers"
    )
    return (
        f"state file {name} is open to every local account (mode {mode:04o}), and {what}: "
        f"`chmod 600 {name}` (or `chmod 640` to share it with a group); a file made before "
        "auditor 0.3.0 keeps the mode it was made with"
    )


def _holds_fingerprint_key(path: Path) -> bool | None:
    """Whether the state file keeps its own fingerprint key (made without
    AUDITOR_FINGERPRINT_KEY); None when that cannot be read (opened read-only, nothing
    written: a file in WAL mode without its `-shm` beside it is not read)."""
    import sqlite3
    from urllib.parse import quote

    try:
        uri = f"file:{quote(str(path.resolve()))}?mode=ro"
        db = sqlite3.connect(uri, uri=True, timeout=0.5)
        try:
            row = db.execute("SELECT 1 FROM meta WHERE key = 'fingerprint_key'").fetchone()
        finally:
            db.close()
    except (sqlite3.Error, OSError):
        return None
    return row is not None


def _loop(path: Path) -> str:
    return (
        f"cannot open state file {path}: it is a symbolic link that leads back to itself "
        "(a loop): choose another --state"
    )


_KINDS = {
    stat.S_IFDIR: "a folder",
    stat.S_IFIFO: "a named pipe (FIFO)",
    stat.S_IFCHR: "a device",
    stat.S_IFBLK: "a device",
    stat.S_IFSOCK: "a socket",
}


def lock_path(path: Path) -> Path:
    """`<file>.lock` beside the file itself: every name of one file (a symlink, a relative
    path) shares one lock. StoreError for a symlink loop at `path`."""
    try:
        real = path.resolve()
    except RuntimeError:  # Python < 3.13: "Symlink loop from …"
        raise StoreError(_loop(path)) from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise StoreError(_loop(path)) from None
        raise StoreError(f"cannot open state file {path}: {exc.strerror}") from None
    return Path(f"{real}.lock")


#: The lock files held by a writer (a reader's handle is opened for writing too, to create
#: the file, but never writes in it).
_WRITERS: weakref.WeakSet[IO[str]] = weakref.WeakSet()
#: The most bytes of an existing lock file read to tell it is auditor's (a pid, or nothing).
_LOCK_HEAD = 64
_LOCK_CONTENT = re.compile(r"\A[0-9]*\s*\Z")


def acquire_lock(path: Path, *, shared: bool = False) -> IO[str] | None:
    """Lock `<file>.lock`, or raise StoreError naming the holder. A writer takes it exclusively
    (and writes its pid in it); readers (`shared`) take it together, so two read-only commands
    run side by side but never beside a writer, and never write in it. A reader of a file in a
    folder it cannot write (a read-only mount) runs without the lock (None): nothing can write
    there either.

    The lock file is opened without following a symlink and must be a regular file of one name
    holding a pid or nothing (what auditor writes there): a symlink, a named pipe, a device, a
    folder, a hard link to another file or a file holding anything else is refused, never
    truncated (a symlink at `<file>.lock` made every command empty the file it points to).
    A new lock file gets the state file's permissions (0600 for a new state file)."""
    where = lock_path(path)
    _refuse_foreign(path, where, os.lstat)
    opener = _lock_opener(path)
    try:  # (the handle is held until `release_lock`)
        handle = open(where, "a+", encoding="utf-8", opener=opener)  # noqa: SIM115
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # a symlink made since it was looked at
            raise StoreError(_foreign(path, where, "a symbolic link")) from None
        if shared and exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
            try:
                handle = open(where, encoding="utf-8", opener=opener)  # noqa: SIM115
            except (FileNotFoundError, PermissionError):
                # none, or one this user may not open (a state file shared with a group by
                # `chmod 640`, its lock made 0600 with it): as in a folder it cannot write,
                # SQLite's own shared lock keeps the reads whole beside a writer
                return None
            except OSError as again:
                if again.errno == errno.ELOOP:
                    raise StoreError(_foreign(path, where, "a symbolic link")) from None
                raise StoreError(f"cannot lock state file {path}: {exc.strerror}") from None
        elif exc.errno in _FULL:
            raise StoreError(_full(path, where, "create", exc)) from None
        else:
            raise StoreError(f"cannot lock state file {path}: {exc.strerror}") from None
    try:
        _refuse_foreign(path, where, lambda _: os.fstat(handle.fileno()))  # what was opened
        _take(handle, path, shared=shared)
        _check_content(handle, path, where)
        if not shared:  # a writer's pid; a reader never writes in the lock file
            handle.seek(0)
            handle.truncate()
            _write_pid(handle, path, where)
            _WRITERS.add(handle)
    except BaseException:
        with suppress(OSError):  # (nothing is left buffered to write: `_write_pid`)
            handle.close()
        raise
    return handle


#: A disk (or the user's quota) too full to write on.
_FULL = (errno.ENOSPC, errno.EDQUOT)


def _full(path: Path, where: Path, what: str, exc: OSError) -> str:
    return (
        f"cannot lock state file {path}: cannot {what} its lock file {where}: {exc.strerror} "
        "(the disk is full: free space there)"
    )


def _write_pid(handle: IO[str], path: Path, where: Path) -> None:
    """Our pid in the lock file, which a command refused names, written unbuffered: a disk
    too full to take it (ENOSPC, a quota) leaves the lock held (taken before) and the file
    empty, and the command goes on, as it does when the state file cannot record the run
    (the reports are written, exit 2); the buffered write it was failed again when the file
    was closed, and the run ended on `unexpected OSError` with no report. Another error is a
    StoreError naming the lock file."""
    try:
        os.write(handle.fileno(), str(os.getpid()).encode("ascii"))
    except OSError as exc:
        if exc.errno in _FULL:
            return
        raise StoreError(
            f"cannot lock state file {path}: cannot write its lock file {where}: {exc.strerror}"
        ) from None


def _take(handle: IO[str], path: Path, *, shared: bool) -> None:
    """`flock` the lock file, or StoreError naming who holds it: a writer (its pid, which it
    wrote) or readers (they hold it shared, which a writer's probe can take too)."""
    fd = handle.fileno()
    try:
        fcntl.flock(fd, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
        return
    except OSError as exc:
        if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
            raise StoreError(f"cannot lock state file {path}: {exc.strerror}") from None
    readers = False
    if not shared:  # held by readers if a shared lock can be had (a writer excludes it)
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            pass
        else:
            readers = True
            fcntl.flock(fd, fcntl.LOCK_UN)
    holder = ""
    if not readers:
        with suppress(OSError, ValueError):
            handle.seek(0)
            holder = handle.read(_LOCK_HEAD).strip()
    by = (
        f"another auditor run (pid {holder})"
        if holder.isdigit()
        else "another auditor command reading it"
        if readers
        else "another auditor run"  # (its pid not written: a full disk, `_write_pid`)
    )
    raise StoreError(f"state file {path} is locked by {by}")


def _lock_opener(path: Path) -> Callable[[str, int], int]:
    """How `open` opens the lock file: never through a symlink, never waiting on a named pipe
    or taking a terminal; created with the state file's permissions (0600 when it is new),
    whatever the umask."""
    try:
        mode = stat.S_IMODE(path.stat().st_mode) & 0o666 | 0o600
    except OSError:
        mode = 0o600
    flags = os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK | os.O_NOCTTY

    def opener(name: str, how: int) -> int:
        if not how & os.O_CREAT:
            return os.open(name, how | flags)
        try:
            fd = os.open(name, how | flags | os.O_EXCL, mode)
        except FileExistsError:
            return os.open(name, (how & ~os.O_CREAT) | flags)
        with suppress(OSError):  # the umask took bits off; a file system without modes
            os.fchmod(fd, mode)
        return fd

    return opener


def _refuse_foreign(path: Path, where: Path, look: Callable[[Path], os.stat_result]) -> None:
    """StoreError unless `where` (looked at by `look`: lstat before opening, fstat after) is
    missing or a regular file of one name."""
    try:
        info = look(where)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise StoreError(f"cannot lock state file {path}: {exc.strerror}") from None
    kind = stat.S_IFMT(info.st_mode)
    if kind == stat.S_IFLNK:
        raise StoreError(_foreign(path, where, "a symbolic link"))
    if kind != stat.S_IFREG:
        raise StoreError(_foreign(path, where, _KINDS.get(kind, "not a regular file")))
    if info.st_nlink > 1:
        raise StoreError(_foreign(path, where, "a file with other names too (a hard link)"))


def _check_content(handle: IO[str], path: Path, where: Path) -> None:
    """StoreError unless the lock file holds what auditor writes there (a pid, or nothing):
    another file of that name is not emptied."""
    try:
        handle.seek(0)
        head = handle.read(_LOCK_HEAD + 1)
    except (OSError, ValueError):  # ValueError: not UTF-8
        head = "?"
    if len(head) > _LOCK_HEAD or not _LOCK_CONTENT.match(head):
        raise StoreError(_foreign(path, where, "a file holding something else"))


def _foreign(path: Path, where: Path, what: str) -> str:
    return (
        f"cannot lock state file {path}: its lock file {where} is {what}, not a lock file "
        "auditor made: move it aside (auditor makes its own)"
    )


def lock_file_itself(path: Path, *, shared: bool = False) -> int | None:
    """Lock the state file itself too (`flock`, taken as `acquire_lock` takes `<file>.lock`):
    a hard link is another name of the same file, with a `.lock` of its own beside it, so two
    runs through two names would otherwise both go ahead. Gives the descriptor to close once
    the database is closed (closing it earlier would drop SQLite's own locks on the file), or
    None where the file system has no `flock`."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError as exc:
        raise StoreError(f"cannot lock state file {path}: {exc.strerror}") from None
    try:
        fcntl.flock(fd, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
    except OSError as exc:
        os.close(fd)
        if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
            return None  # ENOLCK, EOPNOTSUPP: `<file>.lock` is the lock there
        raise StoreError(
            f"state file {path} is locked by another auditor command using another name of "
            "the same file (a hard link)"
        ) from None
    return fd


def release_lock(handle: IO[str]) -> None:
    """Clear our pid (a writer's) and unlock."""
    with suppress(OSError):
        if handle in _WRITERS:
            handle.seek(0)
            handle.truncate()
            handle.flush()
        fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
    handle.close()


def connect(path: Path, *, readonly: bool) -> sqlite3.Connection:
    """An autocommit connection to an existing state file (a new one is made whole first,
    0600, by `build_new`); a read-only one cannot change a byte of the file."""
    if readonly:
        return sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, isolation_level=None)
    return sqlite3.connect(path, isolation_level=None)


def _create_private(path: Path) -> None:
    """Create `path` (at a symlink's target), empty and 0600, unless something is there; an
    existing file keeps its permissions. Any failure is left to SQLite's open to report."""
    try:
        fd = os.open(
            path.resolve(),
            os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
            0o600,
        )
    except (OSError, RuntimeError):
        return
    try:
        with suppress(OSError):  # the umask may have taken bits off (0o277)
            os.fchmod(fd, 0o600)
    finally:
        os.close(fd)


def build_new(path: Path, override: bytes | None) -> None:
    """Make a new state file at `path` whole: its schema and key are written into a file
    beside it (0600), which is then linked in under the state file's name, so `path` never
    holds an empty file: one left by a process killed while the schema was written would be
    refused as a state file cut to nothing (`prepare`), every night of a workflow that cached
    it (review R96 #5). StoreError when another program took the name meanwhile."""
    target = path.resolve()
    scratch = target.with_name(f".{target.name}.{os.getpid()}.new")
    try:
        # what a process killed while making one left (the caller holds the state's lock, so
        # no other auditor is making one now)
        for left in target.parent.glob(f".{glob.escape(target.name)}.*.new*"):
            with suppress(OSError):
                left.unlink()
        _create_private(scratch)
        db = sqlite3.connect(scratch, isolation_level=None)
        try:
            create_new(db, override)
        finally:
            db.close()
        try:
            os.link(scratch, target)
        except FileExistsError:
            raise StoreError(
                f"{path} was made by another program while auditor made a new state file "
                "there; nothing was written to it: run the command again"
            ) from None
        except OSError:  # a file system without hard links: the name is still free (the lock)
            os.replace(scratch, target)
    finally:
        for leftover in (scratch, Path(f"{scratch}-journal")):
            with suppress(OSError):
                leftover.unlink()


def _identify(db: sqlite3.Connection, path: Path) -> bool:
    """True for an auditor state file, False for an empty one; StoreError (before anything is
    written) for any other SQLite database, so another program's file is never touched."""
    app_id = int(db.execute("PRAGMA application_id").fetchone()[0])
    if app_id == APPLICATION_ID:
        return True
    tables = sorted(r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'"))
    if app_id == 0 and not tables:
        return False
    if app_id == 0 and {"meta", "runs", "revisions"} <= set(tables):
        return True  # made before the application id was set
    shown = ", ".join(tables[:5]) + (", …" if len(tables) > 5 else "") or "none"
    raise StoreError(
        f"{path} is not an auditor state file (an SQLite database of another program: "
        f"application_id {app_id}, tables: {shown}); it was left untouched: choose another --state"
    )


def prepare(db: sqlite3.Connection, path: Path, override: bytes | None, *, readonly: bool) -> bytes:
    """Check an auditor state file and return the fingerprint key. An empty file is refused:
    auditor never leaves one (a new state file is made whole beside its name and linked in,
    `build_new`), so it is a state file cut to nothing (a failed copy or cache restore), and
    starting afresh there would lose the baseline silently (tester T100 #1)."""
    if _identify(db, path):
        key = open_existing(db, str(path), override, readonly=readonly)
        if not readonly and int(db.execute("PRAGMA application_id").fetchone()[0]) == 0:
            db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        return key
    raise StoreError(
        f"{path} is an empty file, not a state file: a state file cut to nothing (a failed "
        "copy or cache restore?) has no history, baseline or key to go on from; remove it "
        "to start a new state file (a new baseline and fingerprint key), or restore it"
    )


def open_existing(db: Any, where: str, override: bytes | None, *, readonly: bool) -> bytes:
    """Check a store's key and schema version, migrating an older schema forward (either
    backend); gives the fingerprint key."""
    meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
    key = _check(meta, where, override)
    _migrate(db, int(meta_text(meta["schema_version"])), where, readonly=readonly)
    return key


def create_new(db: Any, override: bytes | None, before: Callable[[], None] | None = None) -> bytes:
    """Create the schema in an empty store, all in one transaction (`before` runs first in
    it); gives the fingerprint key."""
    db.execute(f"PRAGMA page_size = {PAGE_SIZE}")  # outside the transaction, or it is ignored
    # The cache's size was turned into pages when this connection opened, for 4 KiB pages:
    # set again, or it keeps ~500 pages of 64 KiB (31 MB, measured); a connection that opens
    # the file later counts its pages right (2 MB).
    db.execute("PRAGMA cache_size = -2000")
    db.execute("BEGIN IMMEDIATE")
    try:
        if before is not None:
            before()
        key = _initialise(db, override)
    except BaseException:
        rollback(db)
        raise
    db.execute("COMMIT")
    return key


def run_ddl(db: Any, ddl: str) -> None:
    """Run a block of DDL (the dialect layer adapts it to PostgreSQL)."""
    for statement in ddl_statements(ddl):
        db.execute(statement)


def _migrate(db: Any, version: int, where: str, *, readonly: bool) -> None:
    """Bring a store made by an older auditor to this one's schema: each step of
    `schema.MIGRATIONS` after its version, in one transaction (forward only: a store made by
    a newer auditor is refused, never changed)."""
    current = schema.SCHEMA_VERSION
    if version == current:
        return
    if version > current or version < 1:
        raise StoreError(
            f"state file {where} has schema version {version}; this auditor reads version "
            f"{current}" + (" (upgrade auditor to open it)" if version > current else "")
        )
    steps = range(version + 1, current + 1)
    missing = [v for v in steps if v not in schema.MIGRATIONS]
    if missing:
        raise StoreError(f"state file {where}: no migration to schema version {missing[0]}")
    if readonly:
        raise StoreError(
            f"state file {where} has schema version {version}; this auditor reads version "
            f"{current}: open it once for writing to upgrade it (`auditor sync`, or "
            "`auditor run --offline`, which needs no service address or token)"
        )
    db.execute("BEGIN IMMEDIATE")
    try:
        for step in steps:
            run_ddl(db, schema.MIGRATIONS[step])
        db.execute(
            "UPDATE meta SET value = ? WHERE key = 'schema_version'",
            (meta_value(db, str(current)),),
        )
    except BaseException:
        rollback(db)
        raise
    db.execute("COMMIT")


def rollback(db: Any) -> None:
    """Roll back if a transaction is open; SQLite has already rolled back after some errors
    (disk full), and a failing ROLLBACK must not replace the error that caused it."""
    if db.in_transaction:
        with suppress(sqlite3.Error):
            db.execute("ROLLBACK")
    # After a write the disk refused midway (a file-size limit: EFBIG, an I/O error), SQLite
    # leaves its pages half written and the journal hot until the file is next read: a read
    # now puts the file back as it was, so it holds no torn pages for a cache step to save.
    if isinstance(db, sqlite3.Connection):
        with suppress(sqlite3.Error):
            db.execute("SELECT count(*) FROM sqlite_master").fetchone()


_CAUSES = {
    "SQLITE_FULL": "the disk is full",
    "SQLITE_READONLY_ROLLBACK": "a write to it was cut off (its -journal file is beside it): a "
    "read-only command cannot finish it; any writing command (`auditor sync`) rolls it back",
    "SQLITE_READONLY": "the file or its folder is read-only",
    "SQLITE_BUSY": "another program holds a lock on it",
    "SQLITE_LOCKED": "another program holds a lock on it",
    "SQLITE_CANTOPEN": "it cannot be opened",
    "SQLITE_IOERR": "an input/output error",
    "SQLITE_CORRUPT": "the file is damaged",
    "SQLITE_NOTADB": "it is not an SQLite database",
}


DAMAGED_HINT = (
    "; restore a copy saved before it was damaged, or move it aside and run `auditor sync` to "
    "start a new one (the history is fetched again; earlier runs are not kept)"
)


def damage_hint(exc: sqlite3.Error) -> str:
    """What to do about a damaged file (nothing for a lock, a full disk or a PostgreSQL error)."""
    return DAMAGED_HINT if is_damage(exc) else ""


def is_damage(exc: sqlite3.Error) -> bool:
    """SQLite found the file damaged: a malformed page, or a text cell that is not UTF-8 (which
    Python's sqlite3 reports with the cell's bytes and no error name)."""
    return _name(exc).startswith("SQLITE_CORRUPT") or _undecodable(exc) is not None


# Python's sqlite3 (not SQLite) on a TEXT cell that is not UTF-8: "Could not decode to UTF-8
# column 'content_hash' with text '<the cell's bytes>'"
_UNDECODABLE = lazy_regex(
    globals(), "_UNDECODABLE", r"Could not decode to UTF-8 column '([A-Za-z0-9_]{1,64})'"
)


def _undecodable(exc: sqlite3.Error) -> str | None:
    """The column named by an `_UNDECODABLE` error, else None (never a PostgreSQL error)."""
    if isinstance(exc, PgError):
        return None
    found = _UNDECODABLE.match(str(exc))
    return found.group(1) if found else None


def _name(exc: sqlite3.Error) -> str:
    return str(getattr(exc, "sqlite_errorname", "") or "")


def is_transient(exc: sqlite3.Error) -> bool:
    """A lock, a full disk or an I/O error: the file itself is not damaged."""
    if isinstance(exc, PgError):
        return exc.transient
    return _name(exc).startswith(("SQLITE_BUSY", "SQLITE_LOCKED", "SQLITE_FULL", "SQLITE_IOERR"))


def is_lock(exc: sqlite3.Error) -> bool:
    """Another connection holds a lock this one waited for in vain (SQLite's busy or locked;
    PostgreSQL's lock_not_available, what `lock_timeout` raises)."""
    if isinstance(exc, PgError):
        return exc.sqlstate == "55P03"
    return _name(exc).startswith(("SQLITE_BUSY", "SQLITE_LOCKED"))


def describe(exc: sqlite3.Error) -> str:
    """SQLite's own words plus the cause in plain words, e.g. `database or disk is full
    (SQLITE_FULL: the disk is full)`; PostgreSQL's with its SQLSTATE."""
    if isinstance(exc, PgError):
        why = f": {exc.cause}" if exc.cause else ""
        return f"{exc} (SQLSTATE {exc.sqlstate}{why})" if exc.sqlstate else str(exc)
    column = _undecodable(exc)
    if column is not None:  # never the cell's bytes: garbage, or whatever was written there
        why = _CAUSES["SQLITE_CORRUPT"]
        return f"column {column!r} holds bytes that are not UTF-8 text (SQLITE_CORRUPT: {why})"
    name = _name(exc)
    cause = _CAUSES.get(name) or _CAUSES.get("_".join(name.split("_")[:2]))
    if name in ("SQLITE_IOERR_WRITE", "SQLITE_FULL") and (limit := _size_limit()) is not None:
        # A write past it fails with EFBIG (Python ignores SIGXFSZ), which SQLite calls an I/O
        # error, or, a write cut short at the limit, a full disk: neither says the limit.
        plain = _CAUSES["SQLITE_FULL" if name == "SQLITE_FULL" else "SQLITE_IOERR"]
        cause = (
            f"a write past this process's file-size limit of {limit:,} bytes (`ulimit -f`: "
            f"raise it and run again), or {plain}"
        )
    return f"{exc} ({name}: {cause})" if cause else f"{exc} ({name})" if name else str(exc)


def _size_limit() -> int | None:
    """The largest file this process may write (RLIMIT_FSIZE, `ulimit -f`), None when any."""
    soft = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
    return None if soft == resource.RLIM_INFINITY else soft


# A new state file's page size, set before its first table (a file keeps the size it was made
# with). A revision's settings are ~9 KB: with 4 KiB pages each row is a chain of overflow pages.
PAGE_SIZE = 65536


def _initialise(db: Any, override: bytes | None) -> bytes:
    db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    run_ddl(db, schema.DDL)
    key = override or secrets.token_bytes(32)
    rows: list[tuple[str, Any]] = [
        ("schema_version", meta_value(db, str(schema.SCHEMA_VERSION))),
        ("key_check", meta_value(db, _key_check(key))),
    ]
    if override is None:
        rows.append(("fingerprint_key", key))
    db.executemany("INSERT INTO meta (key, value) VALUES (?, ?)", rows)
    return key


def _check(meta: Mapping[str, Any], path: str, override: bytes | None) -> bytes:
    try:
        int(meta_text(meta.get("schema_version", "")))
    except (TypeError, ValueError):
        # the caller says where, that it is damaged, and what to do (per backend)
        raise ValueError("unreadable schema version") from None
    stored = meta.get("fingerprint_key")
    if stored is not None and not isinstance(stored, bytes | bytearray | memoryview):
        # auditor stores the key as bytes (a BLOB): text or a number was written there behind
        # its back (`UPDATE meta SET value = 'zz'`), which no key opens (`bytes()` of text was
        # a TypeError, worded nowhere: "unexpected StoreError")
        kind = "text" if isinstance(stored, str) else "a number"
        raise ValueError(f"its fingerprint key is {kind}, not the bytes of a key auditor stores")
    key = override or stored
    if key is None:
        raise StoreError(
            f"state file {path} was created with AUDITOR_FINGERPRINT_KEY: set it to open it"
        )
    if not hmac.compare_digest(_key_check(bytes(key)), meta_text(meta.get("key_check", ""))):
        if override is not None and stored is not None:
            raise StoreError(
                f"state file {path} was created without AUDITOR_FINGERPRINT_KEY (its own random "
                "key is kept in it): unset AUDITOR_FINGERPRINT_KEY to open it, or start a new "
                "state file to use your key"
            )
        if override is None:  # no key was given: the stored key or its check value changed
            raise ValueError("its fingerprint key does not match the check value stored beside it")
        raise StoreError(
            f"AUDITOR_FINGERPRINT_KEY does not match the key state file {path} was made with"
        )
    return bytes(key)


def remembered_memory(path: Path, override: bytes | None) -> SecretMemory | None:
    """The secret memory of the SQLite state file at `path` (a `SecretMemory` holding its
    keyed fingerprints), read without a lock or a write, for an error line to leave out what
    the file remembers as a secret; None when there is none to read (no file, another
    program's, one locked mid-write, a key that does not open it)."""
    from urllib.parse import quote

    from auditor.redact import SecretMemory  # (the error path only: no start-up import)

    try:
        if not path.is_file():  # (a name too long for the system: OSError)
            return None
        uri = f"file:{quote(str(path))}?mode=ro"
        with closing(sqlite3.connect(uri, uri=True, timeout=0.5)) as db:
            meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
            key = _check(meta, str(path), override)
            if not has_table(db, "secret_memory"):
                return None
            rows = db.execute("SELECT fingerprint, length FROM secret_memory").fetchall()
    except (sqlite3.Error, StoreError, ValueError, TypeError, OSError):  # (a damaged row)
        return None
    memory = SecretMemory(key)
    memory.recall((str(fp), int(n)) for fp, n in rows)
    return memory
