"""The local state: one SQLite file (default `.auditor/state.db`), the only module running SQL.

Takes `Revision` / `ReadinessReport` models (decoded by `auditor.fetch.decode`, never API
items) and run results, gives them back streamed, plus integrity issues, sync and run records.
The file never holds a secret: values are replaced at ingestion by markers with a *keyed*
fingerprint (HMAC with a random per-file key kept in the `meta` table, or
`AUDITOR_FINGERPRINT_KEY`), so the state file is safe to hand around as a CI artifact. An
exclusive lock on `<state>.lock` keeps two runs from sharing one file; writes happen in
transactions, so a failed sync leaves the file as it was, but for the history pages it kept on
the way (`stage_page`: never read as history; the next sync goes on from them). The same
`Store` runs on PostgreSQL (`Store.open("postgresql://…", org=…)`: `auditor.store.postgres`),
from the same SQL.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import hmac
import itertools
import json
import os
import shlex
import sqlite3
from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from types import TracebackType
from typing import IO, Any, Concatenate, Literal, ParamSpec, TypeVar

from auditor import __version__
from auditor.common.interrupts import check_cancelled
from auditor.common.jsonutil import EqualPool, Sharing, canonical, loads
from auditor.common.lazyre import lazy_regex
from auditor.common.pairs import HashPairs
from auditor.errors import StoreError, StoreWriteError
from auditor.models import JSON, DataWarning, FindingRecord, ReadinessReport, Revision, User
from auditor.redact import MARKER_RE, MARKER_START, RULES_VERSION, Redactor, encoded_forms
from auditor.redact.memory import decoded_holding, literal_matcher
from auditor.store import analytics as store_analytics
from auditor.store import evalstate, postgres, rewrites, scrubindex
from auditor.store import runs as store_runs
from auditor.store.analytics import AnalyticsAccess
from auditor.store.dialect import has_table, meta_text, meta_value, stream
from auditor.store.file import (
    DAMAGED_HINT,
    acquire_lock,
    build_new,
    check_regular,
    connect,
    create_new,
    damage_hint,
    describe,
    is_damage,
    is_lock,
    is_transient,
    lock_file_itself,
    lock_path,
    open_existing,
    prepare,
    release_lock,
    rollback,
)
from auditor.store.schema import (
    INSERT_SQL,
    KEY_COLUMN,
    REPORT_COLUMNS,
    REPORT_SEEN_DDL,
    REPORT_SEEN_INDEX,
    REVISION_COLUMNS,
    SECRET_MEMORY_DDL,
    IntegrityIssue,
    RunRecord,
    SyncRecord,
    from_text,
    issue_from_row,
    report_from_row,
    report_row,
    revision_from_row,
    revision_row,
    to_text,
)

__all__ = [
    "FindingRecord",
    "Ingested",
    "IntegrityIssue",
    "RunRecord",
    "Store",
    "SyncRecord",
]

_BATCH = 64
_MOVE_BATCH = 256  # kept revisions moved into `revisions` at a time (`commit_staged`)
_WINDOW_BATCH = 500  # revision numbers a query of `iter_revisions_in_window` names
# The redaction the stored rows went through: this release's, under these rules (see
# `Store.redact_to_current_rules`).
REDACTION = f"{__version__}/{RULES_VERSION}"
_INSERT_NEW = {
    t: f"{sql} ON CONFLICT ({KEY_COLUMN[t]}) DO NOTHING" for t, sql in INSERT_SQL.items()
}
_DAMAGE = (sqlite3.Error, ValueError, TypeError)  # SQL errors; rows that no longer decode

_P = ParamSpec("_P")
_R = TypeVar("_R")


def _close(cursor: Any) -> None:
    """Close a walk's cursor. A walk let go of after its store was closed (a run stopped by
    SIGTERM or Ctrl-C: its generators are finalized last) has nothing left to free: the error
    SQLite gives then would be printed as "Exception ignored in …" with a traceback."""
    with contextlib.suppress(sqlite3.ProgrammingError):
        cursor.close()


def _reads(method: Callable[Concatenate[Store, _P], _R]) -> Callable[Concatenate[Store, _P], _R]:
    """A read outside a transaction: a damaged file is a StoreError, not a traceback."""

    @functools.wraps(method)
    def wrapper(store: Store, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        check_cancelled()  # (`run --orgs`: an interrupted organization's audit stops here)
        with store.reading():
            return method(store, *args, **kwargs)

    return wrapper


@dataclass(frozen=True)
class Ingested:
    """What happened to one item offered to the store."""

    status: Literal["new", "same", "conflict"]
    known_before: bool  # stored by an earlier sync (not just earlier in this one)
    issue: IntegrityIssue | None = None
    # `same` for an item sent with fields the stored copy does not have (kept as first
    # stored): the data-quality note that says so (`rewrites.judge`)
    note: DataWarning | None = None
    # `same` for the same value in another JSON form: the stored row's content hash
    kept_hash: str | None = None


# A table of stored rows the scrub rewrites: revisions, reports, and the revisions a sync that
# did not finish kept (`history_staged`, rows as in `revisions`).
_Table = Literal["revisions", "reports", "history_staged"]
_ROW_KEYS: dict[str, _Table] = {
    "revisions": "revisions",
    "reports": "reports",
    "history_staged": "history_staged",
}
# The columns the scrub reads, per table and its key: the scrub index's (analytics rows are
# `store_analytics.scrub`'s), so the two never drift apart.
_SCRUBBED_COLUMNS: tuple[tuple[_Table, str, tuple[str, ...]], ...] = tuple(
    (_ROW_KEYS[indexed], KEY_COLUMN[indexed], blobs + texts)
    for indexed, blobs, texts in scrubindex.INDEXED
    if indexed in _ROW_KEYS
)
# The `meta` key of the record that says where kept history pages go on (`Store.stage_page`).
_RESUME_KEY = "history_resume"


_SCRUB_BATCH = 2_000  # secrets per automaton when stored rows are searched (about 15 MB)


def _stored_forms(secret: str) -> list[str]:
    """The text a stored JSON row holds where one of its strings holds `secret` in one of its
    `encoded_forms`: the form, or the form JSON-escaped once more (a JSON-escaped copy pasted
    into a string is stored as `\\"`, which no form matched: such rows were missed). Plain
    text columns hold the forms as they are."""
    forms = encoded_forms(secret)
    again = (json.dumps(f, ensure_ascii=False)[1:-1] for f in forms)
    return list(dict.fromkeys([*forms, *again]))


#: A JSON string's text between its quotes (escapes kept), in compact JSON.
_JSON_STRING = lazy_regex(globals(), "_JSON_STRING", r'"((?:[^"\\]|\\.)*)"')


#: auditor's own folder: the state file's default (`.auditor/state.db`), and the pre-commit
#: hook's reports (`.auditor/pre-commit-review/`).
OWN_FOLDER = ".auditor"
# Written into a `.auditor/` auditor makes (for its state file or for reports), as pytest,
# mypy and ruff do in their caches: nothing in it is for version control, so the state file
# (which holds the fingerprint key unless AUDITOR_FINGERPRINT_KEY is set) and the hook's
# reports stay out of `git add -A`.
GITIGNORE = "# Made by auditor with this folder: nothing in it is for version control.\n*\n"
# gitignore's special characters and edge spaces: a name holding one gets no line (rare;
# written plainly it could ignore other files)
_GLOB_CHARS = lazy_regex(globals(), "_GLOB_CHARS", r"[*?\[\]\\!#]|^\s|\s$")


def first_missing(folder: Path) -> Path | None:
    """The outermost of `folder` and its parents that does not exist yet (None: it exists),
    the one `folder.mkdir(parents=True)` makes first."""
    missing = None
    for each in (folder, *folder.parents):
        if os.path.lexists(each):
            break
        missing = each
    return missing


def ignore_in_git(folder: Path, text: str = GITIGNORE) -> None:
    """Write `text` as `folder/.gitignore`, never replacing a file (nor following a link)
    there; a folder it cannot be written in is left as it is (the state file works without)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(folder / ".gitignore", flags, 0o644)
    except OSError:
        return
    with contextlib.suppress(OSError), os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(text)


# The outermost folders this process made on the way to a report folder: a state file put
# in one later (`--out compliance/reports --state compliance/state.db`) is in a folder
# auditor made as much as when `Store.open` makes it.
_MADE_BEFORE: set[Path] = set()


def ignore_made_folders(made: Path | None, folder: Path, state: str | None = None) -> None:
    """After `folder.mkdir(parents=True)` made `made` (the outermost new folder; None: none,
    or one made earlier for reports, `_MADE_BEFORE`): a `.auditor/` among the folders made
    gets `GITIGNORE` (all of it is auditor's); else, for a state file named `state` in
    `folder` (made), a `.gitignore` of the state files alone (`_state_ignored`), so what
    the user keeps beside them (reports they commit) stays theirs. A folder that was there
    gets nothing."""
    here = Path(os.path.abspath(folder))
    if made is None:
        made = next((f for f in _MADE_BEFORE if f == here or f in here.parents), None)
        if made is None:
            return
    made_abs = Path(os.path.abspath(made))
    if state is None:
        _MADE_BEFORE.add(made_abs)
    for each in (*reversed(here.parents), here):
        if (each == made_abs or made_abs in each.parents) and each.name == OWN_FOLDER:
            ignore_in_git(each)
            return
    if state is not None:
        ignore_in_git(here, _state_ignored(state))


def _state_ignored(state: str) -> str:
    """The `.gitignore` of a folder made for the state file `state`: every file of its
    suffix there, with their companions (`-wal`, `-shm`, `-journal`, `.lock`), which covers
    the state files of every organization of an `--orgs` run (`state-<org>.db`,
    `config.org_config`: the first organization's worker to open its file writes it for
    all), and no report (`.html`, `.md`, `.json`, `.sarif`, `.xml`, `.pdf`). A name with no
    suffix is named itself; one with a glob character gets `*` (written plainly it could
    ignore other files, or fail to ignore this one)."""
    if _GLOB_CHARS.search(state):
        return GITIGNORE
    stem, _, suffix = state.rpartition(".")
    if stem and suffix and suffix.lower() not in _REPORT_SUFFIXES:
        names = [f"*.{suffix}"]
    elif stem:  # another organization's: `state-<org>.json`
        names = [state, f"{stem}-*.{suffix}"]
    else:
        names = [state, f"{state}-*"]  # (`state-*` holds the companions too)
    lines = [f"/{name}{end}" for name in names for end in ("", "-*", ".lock")]
    return "# Made by auditor with this folder: its state files.\n" + "\n".join(lines) + "\n"


# The suffixes of auditor's reports: a state file named like one is ignored by its name only.
_REPORT_SUFFIXES = frozenset({"html", "md", "json", "sarif", "xml", "pdf", "csv", "jsonl"})


def _remove_created(path: Path) -> None:
    """Remove a state file `Store.open` created and could not finish (through a symlink, the
    file at its target, never the link), with the rollback journal it may have left."""
    target = path.resolve()
    for leftover in (target, Path(f"{target}-journal"), Path(f"{target}-wal")):
        with contextlib.suppress(OSError):
            leftover.unlink()


def _by_lock(exc: StoreError) -> bool:
    """Whether a read or write gave up on another program's lock: the sqlite3 (or PostgreSQL)
    error the StoreError was raised over (`transaction`, `reading`)."""
    cause = exc.__context__
    return isinstance(cause, sqlite3.Error) and is_lock(cause)


def _unwritten(exc: StoreError) -> str:
    """Why the state file could not be written, in a few words, from the StoreError a write
    raised (`transaction`): the sqlite3 (or PostgreSQL) error it was raised over."""
    cause = exc.__context__
    if _by_lock(exc):
        return "another program held the state file's lock"
    if isinstance(cause, sqlite3.Error):
        return f"the state file could not be written: {describe(cause)}"
    return "the state file could not be written"


def _drop_made(db: postgres.PgConnection, made: postgres.Made) -> None:
    """Drop what opening a PostgreSQL store made (`Store.discard_created`): the schema, or the
    tables made in a schema that was there; best effort."""
    with contextlib.suppress(sqlite3.Error):
        rollback(db)
        db.execute("BEGIN")
        if made.schema is not None:
            db.execute(f'DROP SCHEMA "{made.schema}" CASCADE')
        else:  # the schema held no table before (`postgres.identify`)
            for table in db.tables():
                quoted = table.replace('"', '""')
                db.execute(f'DROP TABLE IF EXISTS "{quoted}" CASCADE')
        db.execute("COMMIT")
    rollback(db)


def _share_criteria(data: Any, pool: EqualPool) -> None:
    """Each criterion entry of a readiness report's data (its `report` object, just parsed)
    made the equal one `pool` holds, if any."""
    entries = data.get("report") if type(data) is dict else None
    if type(entries) is dict:
        for cid, entry in entries.items():
            entries[cid] = pool.shared(entry)


class Store:
    """An open state file. Use `Store.open(...)` and close it (or use `with`)."""

    _this_sync: int | None  # the sync begun in the open transaction (`begin_sync`), if any

    def __init__(
        self, db: Any, path: Path | str, key: bytes, lock: IO[str] | None
    ):  # db: an sqlite3.Connection, or a postgres.PgConnection that reads the same SQL
        self._db = db
        self.path = path  # for PostgreSQL, the URL without its password, and the schema
        self._key = key
        self._lock: IO[str] | None = lock
        self._itself: int | None = None  # the file's own lock (`lock_file_itself`)
        # True when `open` made the file: it did not exist once the lock was held, so no other
        # auditor run made it (a failed first sync may remove it again, and only then)
        self.created = False
        self._made: postgres.Made | None = None  # what `open` created in PostgreSQL
        self._secrets: list[str] = []
        self.redactor = Redactor(key)
        self._report_seen: bool | None = None  # see `_report_seen_ready`
        self._skipped_reports: list[str] = []  # recognised by `known_report`, not redacted
        # `report_seen` rows of the open transaction, written when it commits: (report id, raw
        # fingerprint, content hash, the memory size the row is clean under; None: not known
        # until `scrub_stored` has searched it, and not written unless it has)
        self._seen_pending: list[tuple[str, str, str, int | None]] = []
        # True when the rows were redacted under other rules and the store is read-only: each
        # row is redacted again as it is read (see `redact_to_current_rules`)
        self._stale_rules = False
        self.redacted_again = 0  # rows that `redact_to_current_rules` rewrote
        # The scrub index (`auditor.store.scrubindex`): whether the stored one is complete
        # (checked on opening, made so on a writing one), the pieces of the rows written in the
        # open transaction (added when it commits), whether it must be made exact again before
        # then (a search hit it, or a stored row was rewritten), and the stored pieces as read
        # once per transaction
        self._index_live = False
        self._index_pending: set[bytes] = set()
        self._index_splitter = scrubindex.Splitter()  # what `_index_pending` has split
        self._index_dirty = False
        self._index_synced = False  # the open transaction recorded a sync
        self._index_read: bytes | None = None
        # the sync ids of the rows the open transaction inserted, and whether the pieces of
        # its sync's rows are to be read again before commit (they were redacted again)
        self._index_syncs: set[int] = set()
        self._index_resplit = False
        self._index_quiet = False  # rows of this sync are being redacted again (see above)
        # The open transaction moved kept history pages into `revisions` (`commit_staged`):
        # rows an earlier process wrote are now this sync's
        self._staged_moved = False
        self._staged_generation = -1  # the secret memory's when `stage_page` last scrubbed
        self._drained: list[tuple[str, int]] = []  # remembered in the open transaction
        self._staging = False  # `stage_page` scrubs: its kept rows are this sync's
        # Kept history pages were seen (a record read, or a page kept) by this process
        self._kept_seen = False
        #: Why a failed sync's last scrub could not be written ("" when it was, or was not
        #: needed): the kept history pages may hold, in clear, a value this process learned is
        #: a secret after they were kept (`forget_unsafe_resume`)
        self.kept_unscrubbed = ""
        # The last write gave up waiting for another program's lock (`transaction`), and the
        # wait to put back once the failed sync has said what it kept (`_wait_no_more`,
        # `wait_again`): it waits for such a lock once, not again for each write and read
        # that says what it kept
        self._lock_gave_up = False
        self._wait_back: int | None = None
        self._recall_secrets()

    @classmethod
    def open(
        cls,
        path: Path | str,
        *,
        create: bool = True,
        fingerprint_key: bytes | None = None,
        readonly: bool = False,
        org: str = "default",
        org_given: bool | None = None,
    ) -> Store:
        """Open (or create) the state file; StoreError if missing, locked, unreadable or not
        an auditor state file. `readonly` opens it so that not a byte of it can change.
        With `org_given` (None: no check), StoreError if the file holds another organization
        than `org` (`check_org`), before anything in it is brought up to date.

        `path` may be a PostgreSQL URL (`postgresql://…`): the store of organization `org` in
        that database is opened (locked for this organization only)."""
        if postgres.is_database_url(path):
            return cls._open_postgres(str(path), org, create, fingerprint_key, readonly, org_given)
        path = Path(path)
        check_regular(path)
        if not path.exists():
            if not create or readonly:
                raise StoreError(f"no state file at {path}: run `auditor sync` first")
            made = first_missing(path.parent)
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StoreError(f"cannot create {path.parent}: {exc.strerror}") from None
            ignore_made_folders(made, path.parent, path.name)
        lock_made = not lock_path(path).exists()
        handle = acquire_lock(path, shared=readonly)
        created = not path.exists()  # looked at under the lock; through a symlink to its target
        db: sqlite3.Connection | None = None
        itself: int | None = None
        linked = False  # this call linked a new state file in
        try:
            if created and not readonly:  # made whole beside it, then linked in: never empty
                build_new(path, fingerprint_key)
                linked = True
            db = connect(path, readonly=readonly)
            itself = lock_file_itself(path, shared=readonly)  # its hard links too
            key = prepare(db, path, fingerprint_key, readonly=readonly)
            if handle is None:
                # No lock (a folder this reader cannot write): a writer may start meanwhile, as
                # the lock file it creates is held by nobody. One read transaction for the
                # store's life keeps SQLite's shared lock: every read sees the same state, and
                # a writer cannot commit under it ("database is locked").
                db.execute("BEGIN")
                db.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
            store = cls(db, path, key, handle)  # reads the remembered secrets
            store._itself = itself  # closed by `close`, after the database
            if org_given is not None:  # refused before a byte of another's file changes
                store.check_org(org, given=org_given)
            store.redact_to_current_rules(readonly=readonly)
            store.build_scrub_index(readonly=readonly)
        except BaseException as exc:  # the lock is released on every way out
            if db is not None:
                db.close()
            if itself is not None:  # after the database (see `lock_file_itself`)
                os.close(itself)
            if linked:  # this call made the file: it holds nothing of the service's yet
                _remove_created(path)
            if handle is not None:
                if lock_made:  # (while held: `--state notes.yaml` leaves no `notes.yaml.lock`)
                    with contextlib.suppress(OSError):
                        lock_path(path).unlink()
                release_lock(handle)
            if isinstance(exc, sqlite3.Error) and is_damage(exc):  # (a torn copy): as later
                raise StoreError(
                    f"state file {path} is damaged: {describe(exc)}{damage_hint(exc)}"
                ) from None
            if isinstance(exc, sqlite3.Error) and is_transient(exc):  # a full disk, a lock
                raise StoreWriteError(
                    f"state file {path} cannot be used: {describe(exc)}"
                ) from None
            if isinstance(exc, sqlite3.Error):  # another program's file
                raise StoreError(
                    f"{path} is not a usable auditor state file: {describe(exc)}"
                ) from None
            if isinstance(exc, _DAMAGE):  # a meta value that no longer has its type
                raise StoreError(f"state file {path} is damaged: {exc}{DAMAGED_HINT}") from None
            raise
        store.created = created
        return store

    @staticmethod
    def exists(path: Path | str, *, org: str = "default") -> bool:
        """Whether there is a store to open: the SQLite file, or the organization's schema in
        the PostgreSQL database (StoreError if that server cannot be reached)."""
        if not postgres.is_database_url(path):
            return Path(path).exists()
        db = postgres.connect(str(path), org)
        try:
            return db.has_table(postgres.MARKER_TABLE)
        except sqlite3.Error as exc:
            raise StoreError(f"{postgres.display_url(str(path))}: {describe(exc)}") from None
        finally:
            db.close()

    @classmethod
    def _open_postgres(
        cls,
        url: str,
        org: str,
        create: bool,
        override: bytes | None,
        readonly: bool,
        org_given: bool | None,
    ) -> Store:
        db = postgres.connect(url, org)
        shown = f"{postgres.display_url(url)} (schema {db.schema})"
        made_here: postgres.Made | None = None
        try:
            postgres.lock(db, shown, org, shared=readonly)
            if postgres.identify(db, shown):
                key = open_existing(db, shown, override, readonly=readonly)
            elif not create or readonly:
                raise StoreError(
                    f"no auditor store for organization {org!r} in {shown}: "
                    "run `auditor sync` first"
                )
            else:
                made = None if postgres.schema_exists(db) else db.schema
                key = create_new(db, override, before=lambda: postgres.create_marker(db))
                made_here = postgres.Made(made)
            if readonly:
                postgres.set_readonly(db)
            store = cls(db, shown, key, None)  # reads the remembered secrets
            if org_given is not None:
                store.check_org(org, given=org_given)
            store.redact_to_current_rules(readonly=readonly)
            store.build_scrub_index(readonly=readonly)
            if made_here is not None:
                store.created, store._made = True, made_here
            return store
        except BaseException as exc:
            # (a Ctrl-C, or `run --orgs`' cancel, as the store just made was read: what this
            # call made goes, as `_remove_created` removes a file, so no empty store is left)
            if made_here is not None:
                _drop_made(db, made_here)
            db.close()  # and with the session, its advisory lock
            if not isinstance(exc, (sqlite3.Error, ValueError, TypeError)):
                raise
            error = exc
        if isinstance(error, sqlite3.Error):
            if postgres.not_the_store(error):  # a privilege, the server, a lock: not the tables
                raise StoreError(f"state file {shown} cannot be used: {describe(error)}") from None
            raise StoreError(f"{shown} is not a usable auditor store: {describe(error)}") from None
        hint = postgres.damaged_hint(db.schema)  # a meta value that is damaged
        raise StoreError(f"state file {shown} is damaged: {error}{hint}") from None

    def close(self) -> None:
        """Close the database and release the lock."""
        self._db.close()
        if self._itself is not None:  # after the database: see `lock_file_itself`
            os.close(self._itself)
            self._itself = None
        if self._lock is not None:
            release_lock(self._lock)
            self._lock = None

    def __enter__(self) -> Store:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Everything inside commits together, or (on any exception) not at all."""
        live = self._index_live
        # What the process knows of the rows and the secret memory, put back if the transaction
        # is rolled back: the secrets its scrub took as scrubbed, and those it was to remember,
        # are not (a failed sync then scrubs the pages it kept of them: `forget_unsafe_resume`)
        scrubbed, generation = set(self._scrubbed), self._staged_generation
        self._drained = []
        check_cancelled()  # (`run --orgs`: an interrupted organization writes nothing more)
        try:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield
                self._write_report_seen()
                self._write_scrub_index()
            except BaseException:
                rollback(self._db)
                self._index_live = live  # as the stored index is again
                self._undo(scrubbed, generation)
                raise
            finally:
                self._report_seen = None  # a table made inside exists only if committed
                self._skipped_reports = []
                self._seen_pending = []
                self._index_pending = set()
                self._index_splitter = scrubindex.Splitter()
                self._index_dirty = self._index_synced = self._index_resplit = False
                self._index_read = None
                self._index_syncs = set()
                self._staged_moved = False
                # the sync of this transaction, if one began in it: the next transaction's
                # scrub (a kept page's, in a second sync of this store) took the last one's as
                # its own and searched only its rows, and a secret learned on the page stayed
                # in clear in a kept row (found by tests/test_secrets_property.py)
                self._this_sync = None
            self._db.execute("COMMIT")
            self._lock_gave_up = False
        except sqlite3.Error as exc:
            self._lock_gave_up = is_lock(exc)
            if not self._lock_gave_up:
                rollback(self._db)  # a failed COMMIT (disk full) leaves the transaction open
            elif self._db.in_transaction:  # (nothing torn to put back by a read, which would
                # wait for the lock a second time: `rollback`)
                with contextlib.suppress(sqlite3.Error):
                    self._db.execute("ROLLBACK")
            self._index_live = live
            self._undo(scrubbed, generation)
            if is_damage(exc):  # a page read inside it is damaged: not a failed write
                raise StoreError(
                    f"state file {self.path} is damaged: {describe(exc)}{damage_hint(exc)}"
                ) from None
            if isinstance(exc, postgres.InDoubt):  # a COMMIT's answer lost with the session
                raise StoreWriteError(
                    f"state file {self.path}: the write may or may not be stored: {describe(exc)}"
                ) from None
            failed = StoreWriteError if is_transient(exc) else StoreError
            raise failed(
                f"state file {self.path}: cannot write, nothing was changed: {describe(exc)}"
            ) from None

    @contextmanager
    def reading(self) -> Iterator[None]:
        """SQL errors and rows that no longer decode become StoreError ("... is damaged")."""
        try:
            yield
        except sqlite3.Error as exc:
            readable = is_transient(exc) or postgres.not_the_store(exc)
            state = "cannot be read" if readable else "is damaged"
            raise StoreError(
                f"state file {self.path} {state}: {describe(exc)}{damage_hint(exc)}"
            ) from None
        except _DAMAGE as exc:
            raise StoreError(f"state file {self.path} is damaged: {exc}{self._hint()}") from None

    def _hint(self) -> str:
        """What to do about damage: a file is restored or moved aside, a schema restored or
        dropped (a database holds other organizations and other programs' data too)."""
        if isinstance(self._db, postgres.PgConnection):
            return postgres.damaged_hint(self._db.schema)
        return DAMAGED_HINT

    # -- secrets and the organization --------------------------------------------------------

    def register_secret(self, value: str) -> None:
        """Scrub `value` (e.g. the API token) from stored data and from any later message."""
        self.redactor.register(value)
        if value not in self._secrets:
            self._secrets.append(value)

    def ingest_redactor(self) -> Redactor:
        """The redactor for API items: it remembers every secret found so far, in any sync."""
        return self.redactor

    def marker(self, value: str) -> str:
        """The marker that stands in for `value` under the state's key."""
        return self.redactor.marker(value)

    def start_from_file(self, taught: Iterable[str] = ()) -> bool:
        """Start the secret memory again from the state file, as a process that opens it anew
        does (`run --offline`): the values of the secrets this process learned, with what is
        worked out of them, and the redactor's memos of every string it redacted (some 60 MB
        after a first sync of 100,000 revisions) are let go. The values `taught` (those the
        run's policy and waivers taught since the sync, as they teach a new process) are
        learned again. Done only between transactions, with every other value learned in the
        file and searched for in the rows (`scrub_stored`): the rows are then clean under the
        memory recalled. True when it was done; never inside a transaction, whose fingerprints
        are not in the file until it commits."""
        memory, taught = self.redactor.memory, list(taught)
        others = memory.values.difference(taught)
        if (
            self._this_sync is not None
            or self._db.in_transaction  # (drained fingerprints not yet committed)
            or self.kept_unscrubbed
            or not others <= self._scrubbed
            or not others.isdisjoint(memory.unsaved_values())
        ):
            return False
        self.redactor.drop_value_layers()  # (the value layers its successor would share)
        self.redactor = Redactor(self._key)
        self._recall_secrets()
        for value in self._secrets:  # after the recall, as when the file is opened
            self.redactor.register(value)
        for value in taught:
            self.redactor.learn(value)
        return True

    def _recall_secrets(self) -> None:
        """Load the fingerprints of secrets found by earlier syncs; freed space is zeroed, so a
        row rewritten by `scrub_stored` leaves no old bytes behind."""
        self._scrubbed: set[str] = set()
        self._this_sync = None
        with self.reading():
            self._db.execute("PRAGMA secure_delete = ON")
            if has_table(self._db, "secret_memory"):
                rows = self._db.execute("SELECT fingerprint, length FROM secret_memory")
                self.redactor.memory.recall((str(fp), int(n)) for fp, n in rows)
        # The memory the file holds: the size a `report_seen` record of the last sync carries.
        self._recalled = self.redactor.memory.size

    def _undo(self, scrubbed: set[str], generation: int) -> None:
        """A transaction was rolled back: what it scrubbed is not scrubbed, nor what it was to
        remember remembered."""
        self._scrubbed, self._staged_generation = scrubbed, generation
        self.redactor.memory.undrain(self._drained)
        self._drained = []

    def remember_secrets(self) -> None:
        """Keep the fingerprints of newly found secrets (inside the open transaction; kept to
        be written again if it is rolled back)."""
        learned = self.redactor.memory.drain()
        self._drained.extend(learned)
        if learned:
            self._db.execute(SECRET_MEMORY_DDL)
            self._db.executemany(
                "INSERT INTO secret_memory (fingerprint, length) VALUES (?, ?) "
                "ON CONFLICT DO NOTHING",
                learned,
            )

    def scrub_stored(self, *, every_new: bool = False) -> int:
        """Re-redact stored rows holding a secret learned after they were written (a key found
        in revision 5 that was pasted into revision 7, which arrived first); gives rows fixed.
        `every_new`: look for every secret learned since the last scrub, not only those the
        redactor saw in a string redacted before it learned them (`stale_secrets` walks every
        string redacted so far: 25 ms, too much for each page kept, `stage_page`; the scrub
        index makes a secret no row holds cheap to look for)."""
        fixed = self._scrub_skipped_reports()
        memory = self.redactor.memory
        stale = None if every_new else self.redactor.stale_secrets()
        fresh = memory.values - self._scrubbed if stale is None else stale
        # A secret new to the file's memory may sit in plain text in rows earlier syncs stored
        # (a value pasted into a report before it turned up under `env`): those rows are
        # searched for it too (this sync's rows hold it only where `stale_secrets` says).
        older = memory.unrecalled - self._scrubbed - fresh
        self._scrubbed |= memory.values
        if fresh:
            fixed += self._scrub_rows(fresh)
        if older and (self._this_sync is None or self._staged_moved):
            # (kept history pages, written by an earlier process, are staged rows, or rows of
            # this sync once it took them: every row is searched)
            fixed += self._scrub_rows(older)
        elif older and self._earlier_sync(self._this_sync):
            fixed += self._scrub_rows(older, before_sync=self._this_sync)
        if fresh or older:
            self._scrub_issue_changes()
        if not self._staging:  # a kept cursor may hold a secret learned now
            self._drop_unsafe_resume()
        # Every row is now clean of every secret remembered: a report row that a raw item gave
        # in this transaction, or that `known_report` recognised (and that the scrub left as it
        # was: same content hash), is what that item gives under the whole memory, so it is
        # recorded under its final size, and the next sync, which starts with that memory,
        # recognises it. (Recorded under the size at its ingestion, it was missed whenever a
        # later page taught a secret; left under the older size when recognised, every other
        # nightly that learns a secret redacted the page again.)
        size = self.redactor.memory.size
        self._seen_pending = [(r, f, h, size) for r, f, h, _ in self._seen_pending]
        return fixed

    def _scrub_issue_changes(self) -> None:
        """Redact again the paths kept with integrity issues (`integrity_changes`, a few rows):
        a key they name is one the stored row has, which a secret learned since may be."""
        if not has_table(self._db, "integrity_changes"):
            return
        rows = self._db.execute(
            "SELECT stored_hash, seen_hash, changes FROM integrity_changes"
        ).fetchall()
        for stored, seen, text in rows:
            shown = self.redactor.redact_shown(str(text))
            if shown != text:
                self._db.execute(
                    "UPDATE integrity_changes SET changes = ? WHERE stored_hash = ? AND "
                    "seen_hash = ? AND changes = ?",
                    (shown, stored, seen, text),
                )

    def _earlier_sync(self, sync_id: int | None) -> bool:
        """True when a sync before `sync_id` stored rows (a first sync has none to search: its
        every secret is new to the file, and an automaton of all their forms cost 75 MB at
        100,000 revisions)."""
        return (
            self._db.execute("SELECT 1 FROM syncs WHERE id < ? LIMIT 1", (sync_id,)).fetchone()
            is not None
        )

    def _scrub_rows(self, secrets: Iterable[str], before_sync: int | None = None) -> int:
        """Redact again the stored rows (of syncs before `before_sync`, if given) that hold one
        of `secrets` in any encoded form; gives rows fixed. One automaton over the forms of up
        to `_SCRUB_BATCH` secrets, so a sync that learns hundreds reads each row once, and one
        that learns tens of thousands holds a bounded automaton (one read per batch)."""
        ordered = sorted(secrets)
        fixed = 0
        for at in range(0, len(ordered), _SCRUB_BATCH):
            forms = [f for v in ordered[at : at + _SCRUB_BATCH] for f in _stored_forms(v)]
            if self._index_live:
                # a piece holding one written with other escapes (`%2D`) or base64 from
                # another byte is looked for as it is: no form of the secret is in it
                forms += self._decoded_pieces(ordered[at : at + _SCRUB_BATCH])
                fixed += self._scrub_indexed(forms, before_sync)
            else:
                fixed += self._scrub_rows_holding(forms, before_sync)
        return fixed

    def _decoded_pieces(self, secrets: list[str]) -> list[str]:
        """The pieces of the scrub index (stored and this transaction's) that hold one of
        `secrets` only in a form decoding finds (`memory.decoded_holding`)."""
        if self._index_read is None:
            self._index_read = scrubindex.stored_text(self._db)
        text = b"\n".join([self._index_read, *self._index_pending])
        return decoded_holding(secrets, text.decode("utf-8", "replace"))  # as rows are read

    def _scrub_indexed(self, forms: list[str], before_sync: int | None) -> int:
        """`_scrub_rows_holding` led by the scrub index. Only a form some piece holds can be in
        a row: usually none is, and no row is read. A form a piece stored before this
        transaction holds: the rows are searched for the forms found, and the index is made
        exact again before commit (the piece leaves with the secret). A form only rows of this
        transaction's sync hold (a secret found after a string holding it was redacted): only
        they are searched, and their pieces read again before commit."""
        if self._index_read is None:
            self._index_read = scrubindex.stored_text(self._db)
        earlier = scrubindex.forms_held(forms, self._index_read)
        now = scrubindex.forms_held(forms, b"\n".join(self._index_pending))
        if not earlier and not now:
            return 0
        this_sync = self._this_sync
        if earlier or self._index_dirty or this_sync is None or self._index_syncs - {this_sync}:
            # (a rewritten row, or rows filed under another sync: every row is searched)
            self._index_dirty = True
            return self._scrub_rows_holding(sorted({*earlier, *now}), before_sync)
        if before_sync is not None:  # no row written before it holds one
            return 0
        self._index_resplit = self._index_quiet = True
        try:
            return self._scrub_rows_holding(now, None, only_sync=this_sync)
        finally:
            self._index_quiet = False

    def build_scrub_index(self, *, readonly: bool) -> None:
        """Check the scrub index on opening, and fill it (one read of every stored row, in one
        transaction) when it is missing or out of date: a store made before it existed, or
        written since by another auditor release. A read-only store keeps it as it is (and
        never searches it)."""
        try:
            self._index_live = self._scrub_index_mark() == self._read_index_mark()
        except sqlite3.Error:  # a damaged file (a table dropped): the command that reads the
            return  # table says so; searches read the rows themselves meanwhile
        if self._index_live or readonly:
            return
        with self.transaction():
            self._index_dirty = True

    def _scrub_index_mark(self) -> str:
        """What `meta` holds under `scrub_index` while the index is complete: the redaction the
        rows went through and the newest sync, so rows written by a sync of anything else (an
        older auditor) or redacted under other rules are found out."""
        newest = self._db.execute("SELECT MAX(id) FROM syncs").fetchone()[0]
        return f"{REDACTION} {int(newest or 0)}"

    def _read_index_mark(self) -> str | None:
        row = self._db.execute("SELECT value FROM meta WHERE key = 'scrub_index'").fetchone()
        return None if row is None else meta_text(row[0])

    def _index_row(
        self,
        blob: Any,
        *texts: Any,
        sync_id: int | None = None,
        parts: Sequence[bytes] | None = None,
    ) -> None:
        """Keep the pieces of a row written in the open transaction, for the scrub index
        (`sync_id`: the sync it is filed under, when it was inserted; `parts`: what `blob`
        was put together from, when it was, `Splitter.joined`)."""
        if sync_id is not None:
            self._index_syncs.add(int(sync_id))
        if self._index_live:
            splitter, pending = self._index_splitter, self._index_pending
            pending.update(splitter.pieces(blob) if parts is None else splitter.joined(parts))
            pending.update(splitter.plain(texts))

    def _write_scrub_index(self) -> None:
        """Write the scrub index's changes of the open transaction (just before it commits):
        the pieces of the rows written, or, after a hit or a rewritten row, the exact pieces of
        every row; then the mark that says it is complete."""
        if self._index_dirty:
            scrubindex.refresh(self._db)
            self._index_live = True
        elif not self._index_live:
            return
        elif self._index_resplit and self._this_sync is not None:
            scrubindex.add(self._db, scrubindex.row_pieces(self._db, self._this_sync))
        elif self._index_pending:
            scrubindex.add(self._db, self._index_pending)
        elif not self._index_synced:
            return
        self._db.execute("DELETE FROM meta WHERE key = 'scrub_index'")
        self._db.execute(
            "INSERT INTO meta (key, value) VALUES ('scrub_index', ?)",
            (meta_value(self._db, self._scrub_index_mark()),),
        )

    def _scrub_rows_holding(
        self, forms: list[str], before_sync: int | None, only_sync: int | None = None
    ) -> int:
        matcher = literal_matcher(forms)
        where, args = ("", ()) if before_sync is None else (" WHERE sync_id < ?", (before_sync,))
        if only_sync is not None:
            where, args = " WHERE sync_id = ?", (only_sync,)
        fixed = 0
        for table, key, columns in _SCRUBBED_COLUMNS:
            query = f"SELECT {key}, {', '.join(columns)} FROM {table}{where}"
            hits = [
                row[0]
                for row in stream(self._db, query, args)
                if any(matcher.search(meta_text(c)) for c in row[1:])
            ]
            for item in hits:
                self._rescrub_row(table, item)
            fixed += len(hits)
        return fixed + store_analytics.scrub(
            self._db, self.redactor, forms, before_sync, only_sync=only_sync
        )

    def _scrub_skipped_reports(self) -> int:
        """Redact again the stored reports `known_report` let this sync skip that hold a secret
        this process knows: the row was written by an earlier sync, before the API token or a
        secret found since was known, and no redaction in this sync went through it (so
        `stale_secrets` cannot name it); gives rows fixed."""
        skipped, self._skipped_reports = self._skipped_reports, []
        memory = self.redactor.memory
        if not skipped or not memory.values:
            return 0
        fixed = 0
        for report_id in dict.fromkeys(skipped):
            found = self._db.execute(
                "SELECT data, repo_url FROM reports WHERE report_id = ?", (report_id,)
            ).fetchone()
            if found is not None and any(memory.holds_value(meta_text(c)) for c in found):
                self._rescrub_row("reports", report_id)
                fixed += 1
        return fixed

    def _rescrub_row(self, table: _Table, item: Any) -> str:
        """Redact one stored row again with everything remembered now; gives its new hash."""
        if table != "reports":
            rev = next(self._revisions("WHERE revision = ? LIMIT 1", (item,), table=table), None)
            assert rev is not None
            return self._rewrite(rev, table)[0]
        row = self._db.execute(
            f"SELECT {REPORT_COLUMNS} FROM reports WHERE report_id = ?", (item,)
        ).fetchone()
        with self.reading():  # a row changed behind our back is damage, not rewritten and rehashed
            report = report_from_row(row)
        return self._rewrite(report)[0]

    def _rewrite(
        self, stored: Revision | ReadinessReport, table: _Table = "revisions"
    ) -> tuple[str, bool]:
        """Redact a stored revision (of `table`: `revisions` or `history_staged`) or report
        again with everything remembered now and write it back if that changed it; gives its
        hash and whether it was written."""
        if isinstance(stored, Revision):
            again = self._revision_again(stored)
            user = (again.user.id, again.user.email, again.user.name)
            if again.content_hash == stored.content_hash and again.user == stored.user:
                return again.content_hash, False
            body = canonical(again.settings)
            self._db.execute(
                f"UPDATE {table} SET settings = ?, content_hash = ?, user_id = ?, user_email = ?,"
                " user_name = ? WHERE revision = ?",
                (body, again.content_hash, *user, stored.revision),
            )
            self._index_rewritten(body, *user)
            return again.content_hash, True
        report = self._report_again(stored)
        if report.content_hash == stored.content_hash and report.repo_url == stored.repo_url:
            return report.content_hash, False
        body = canonical(report.data)
        self._db.execute(
            "UPDATE reports SET data = ?, content_hash = ?, repo_url = ? WHERE report_id = ?",
            (body, report.content_hash, report.repo_url, stored.report_id),
        )
        self._index_rewritten(body, report.repo_url)
        return report.content_hash, True

    def _index_rewritten(self, blob: bytes, *texts: Any) -> None:
        """A stored row was rewritten: its old pieces may hold a secret found since, so the
        index is made exact again before commit (the new pieces are kept meanwhile)."""
        self._index_row(blob, *texts)
        if not self._index_quiet:  # (a row of this sync, whose pieces are read again)
            self._index_dirty = self._index_dirty or self._index_live

    def _revision_again(self, stored: Revision) -> Revision:
        """A stored revision redacted again with everything remembered now, under this
        auditor's rules, with the hash of what that gives."""
        settings = self.redactor.redact_json(stored.settings, stream="stored revisions", again=True)
        user = stored.user
        return dataclasses.replace(
            stored,
            settings=settings,
            content_hash=hashlib.sha256(canonical(settings)).hexdigest(),
            user=User(*(self.redactor.redact_text(v) for v in (user.id, user.email, user.name))),
        )

    def _report_again(self, stored: ReadinessReport) -> ReadinessReport:
        """`_revision_again` for a readiness report (its repository URL too)."""
        data = self.redactor.redact_json(stored.data)
        return dataclasses.replace(
            stored,
            data=data,
            content_hash=hashlib.sha256(canonical(data)).hexdigest(),
            repo_url=str(data.get("repoUrl", "")) if isinstance(data, dict) else stored.repo_url,
        )

    def redact_to_current_rules(self, *, readonly: bool) -> int:
        """Bring rows redacted under other rules (by an older auditor, or before a layer caught
        more) to this auditor's: every stored revision, report and analytics row is redacted
        again and written back where that changes it, with the evaluation state computed from
        the old rows, in one transaction; gives the rows rewritten. A read-only store cannot
        change: each row is redacted again as it is read instead."""
        with self.reading():
            row = self._db.execute("SELECT value FROM meta WHERE key = 'redaction'").fetchone()
        if row is not None and meta_text(row[0]) == REDACTION:
            return 0
        if readonly:
            self._stale_rules = True
            return 0
        with self.transaction():
            rewritten = self._rewrite_all("revisions") + self._rewrite_all("reports")
            rewritten += self._rewrite_all("history_staged")
            rewritten += store_analytics.redact_again(self._db, self.redactor)
            # rows redacted under other rules, maybe by another release: the index is made
            # anew from the rows before commit (a piece may hold what these rules call secret)
            self._index_dirty = True
            # a secret found only now (a `docker login -p` password) may be in a row the pass
            # went through before it was found: as after a sync, such rows are redacted again
            rewritten += self.scrub_stored()  # (and drops kept pages a cursor of which these
            # rules now redact: `_drop_unsafe_resume`)
            if rewritten and has_table(self._db, "eval_state"):
                self._db.execute("DELETE FROM eval_state")  # computed from the old rows
            self.remember_secrets()  # found in the rows just redacted again
            self._db.execute("DELETE FROM meta WHERE key = 'redaction'")
            self._db.execute(
                "INSERT INTO meta (key, value) VALUES ('redaction', ?)",
                (meta_value(self._db, REDACTION),),
            )
        self.redacted_again = rewritten
        return rewritten

    def _rewrite_all(self, table: _Table) -> int:
        """`_rewrite` every row of `table`, a batch at a time (no cursor stays open across the
        writes); gives the rows written."""
        key = KEY_COLUMN[table]
        columns = REPORT_COLUMNS if table == "reports" else REVISION_COLUMNS
        convert = report_from_row if table == "reports" else revision_from_row
        written, last = 0, None
        while True:
            after = "" if last is None else f"WHERE {key} > ? "
            with self.reading():
                rows = self._db.execute(
                    f"SELECT {columns} FROM {table} {after}ORDER BY {key} LIMIT {_BATCH}",
                    () if last is None else (last,),
                ).fetchall()
                batch = [convert(r) for r in rows]
            if not batch:
                return written
            for stored in batch:
                written += self._rewrite(stored, table)[1]
            last = rows[-1][0]

    def bind_org(self, org: str) -> None:
        """Record the organization on first use; StoreError if the file belongs to another one."""
        if self.stored_org() is None:
            self._db.execute(
                "INSERT INTO meta (key, value) VALUES ('org', ?)", (meta_value(self._db, org),)
            )
        self.check_org(org)

    @_reads
    def report_order(self) -> str | None:
        """What syncs learned of the readiness listing's order (`newest`, `other`), None
        before one learned it (`auditor.workflows.sync`)."""
        row = self._db.execute("SELECT value FROM meta WHERE key = 'report_order'").fetchone()
        return None if row is None else meta_text(row[0])

    def set_report_order(self, order: str) -> None:
        """Keep what a sync learned of the readiness listing's order (in its transaction)."""
        self._db.execute("DELETE FROM meta WHERE key = 'report_order'")
        self._db.execute(
            "INSERT INTO meta (key, value) VALUES ('report_order', ?)",
            (meta_value(self._db, order),),
        )

    @_reads
    def reports_read_whole(self) -> datetime | None:
        """When a sync last read the readiness listing to its end (no early stop), None before
        one did (or one recorded it: a state file from before 0.3.0), or when the value kept is
        not a time (`auditor.workflows.sync`)."""
        row = self._db.execute("SELECT value FROM meta WHERE key = 'reports_read_whole'").fetchone()
        if row is None:
            return None
        try:
            when = datetime.fromisoformat(meta_text(row[0]))
        except ValueError:
            return None  # damaged: the listing is read whole again, which records it anew
        return when if when.tzinfo is not None else when.replace(tzinfo=UTC)

    def set_reports_read_whole(self, when: datetime) -> None:
        """Keep when this sync read the readiness listing to its end (in its transaction)."""
        self._db.execute("DELETE FROM meta WHERE key = 'reports_read_whole'")
        self._db.execute(
            "INSERT INTO meta (key, value) VALUES ('reports_read_whole', ?)",
            (meta_value(self._db, when.astimezone(UTC).isoformat()),),
        )

    def set_history_recheck(self, rechecked: tuple[int, int] | None) -> None:
        """Keep which stored revisions this sync read again from the service and compared
        with the stored ones (oldest, newest; None: none), in its transaction: the reports
        state the integrity check's coverage from it."""
        value = "none" if rechecked is None else f"{rechecked[0]}-{rechecked[1]}"
        self._db.execute("DELETE FROM meta WHERE key = 'history_recheck'")
        self._db.execute(
            "INSERT INTO meta (key, value) VALUES ('history_recheck', ?)",
            (meta_value(self._db, value),),
        )

    @_reads
    def history_recheck(self) -> tuple[bool, tuple[int, int] | None]:
        """(recorded, range): whether the last sync recorded which stored revisions it read
        again (a state file synced by an older auditor did not, nor a damaged value), and
        that range (None: none)."""
        row = self._db.execute("SELECT value FROM meta WHERE key = 'history_recheck'").fetchone()
        if row is None:
            return False, None
        text = meta_text(row[0])
        if text == "none":
            return True, None
        low, _, high = text.partition("-")
        if not (low.isdigit() and high.isdigit()):
            return False, None
        return True, (int(low), int(high))

    @_reads
    def stored_org(self) -> str | None:
        """The organization the first sync recorded (None before one completed)."""
        row = self._db.execute("SELECT value FROM meta WHERE key = 'org'").fetchone()
        return None if row is None else meta_text(row[0])

    def check_org(self, org: str, *, given: bool = True) -> None:
        """StoreError if the store holds another organization's data than `org`; when `org`
        was not `given` (`default`), the message names the `--org` that goes on (a nightly
        whose `run --offline` step lacks the sync's AUDITOR_ORG)."""
        stored = self.stored_org()
        if stored is not None and stored != org:
            hint = (
                ""
                if given
                else "; no organization was given (--org, AUDITOR_ORG, org =): give "
                f"--org {shlex.quote(stored)} to use this one"
            )
            raise StoreError(
                f"state file {self.path} holds organization {stored!r}, not {org!r}: "
                f"use one state file per organization{hint}"
            )

    def discard_created(self) -> None:
        """Remove what `open` created in PostgreSQL (a first sync failed): the schema, when it
        made it, else the tables it made in a schema created beforehand (for a role without
        `CREATE` on the database), so an organization never synced has no store. Under the
        organization's run lock: no other auditor run used it meanwhile. Best effort (the
        connection may be what failed): the read-only commands refuse a store never synced."""
        made, self._made = self._made, None
        if made is not None and isinstance(self._db, postgres.PgConnection):
            _drop_made(self._db, made)

    # -- revisions ---------------------------------------------------------------------------

    def _revisions(
        self, where: str = "", params: tuple[Any, ...] = (), *, table: _Table = "revisions"
    ) -> Iterator[Revision]:
        return self._revisions_of([(where, params)], table=table)

    def _revisions_of(
        self, queries: Iterable[tuple[str, tuple[Any, ...]]], *, table: _Table = "revisions"
    ) -> Iterator[Revision]:
        """The rows each query (`WHERE …` and its parameters) selects, query after query (of
        `revisions`, or of the kept history pages, `history_staged`)."""
        with self.reading():
            sharing = Sharing()
            for where, params in queries:
                sql = f"SELECT {REVISION_COLUMNS} FROM {table} {where}"
                cursor = stream(self._db, sql, params)
                try:
                    while rows := cursor.fetchmany(_BATCH):
                        check_cancelled()  # (`run --orgs`: an interrupted walk stops here)
                        # A row is parsed only when it is reached: the batch stays raw bytes,
                        # so a walk never holds a batch of parsed settings beside what it keeps.
                        for row in rows:
                            revision = revision_from_row(row)
                            if self._stale_rules:
                                revision = self._revision_again(revision)
                            # Consecutive revisions share the objects one did not change (see
                            # `share_equal`): comparing them later costs an identity check.
                            sharing.share(revision.settings)
                            yield revision
                finally:
                    _close(cursor)  # when the caller stops early too

    def _one(self, where: str, params: tuple[Any, ...] = ()) -> Revision | None:
        return next(self._revisions(where + " LIMIT 1", params), None)

    def latest_revision(self) -> Revision | None:
        """The newest stored revision."""
        return self._one("ORDER BY revision DESC")

    def get_revision(self, number: int) -> Revision | None:
        """One revision by number."""
        return self._one("WHERE revision = ?", (number,))

    @_reads
    def revision_hashes(self, *, end: int | None = None) -> HashPairs:
        """(revision, content hash) of every stored revision up to `end`, ascending; no settings
        are read (for the evidence appendix). Held compactly: 40 bytes a revision."""
        rows = self._db.execute(
            "SELECT revision, content_hash FROM revisions WHERE revision <= ? ORDER BY 1",
            (2**63 - 1 if end is None else end,),
        )
        return HashPairs((int(n), str(h)) for n, h in rows)

    @_reads
    def revision_numbers(self) -> list[int]:
        """Every stored revision number, ascending."""
        return [r[0] for r in self._db.execute("SELECT revision FROM revisions ORDER BY 1")]

    def iter_revisions(
        self, *, start: int | None = None, end: int | None = None
    ) -> Iterator[Revision]:
        """Revisions in ascending order within inclusive bounds, streamed."""
        # The API's revision numbers run from 0 to 2^63-1 (`fetch.decode`): SQLite's whole range.
        low = start if start is not None else -(2**63)
        high = end if end is not None else 2**63 - 1
        return self._revisions("WHERE revision BETWEEN ? AND ? ORDER BY revision", (low, high))

    def iter_revisions_in_window(
        self, since: datetime | None = None, until: datetime | None = None
    ) -> Iterator[Revision]:
        """Ascending, streamed: every revision whose time lies within `since`..`until` (both
        inclusive, either open), each preceded by the stored revision just before it in number
        (what its changes are against; `auditor history` drops it again when it is outside);
        no other row is read, hash-checked or parsed. Times need not grow with the numbers: a
        revision out of order is read when its own time is in the window, wherever it stands.
        Without bounds, `iter_revisions()`. The numbers are found from the (updated_at,
        revision) index and the primary key alone (stored times are `to_text`'s fixed-width
        UTC text, whose string order is time order, as `revision_at` relies on too)."""
        if since is None and until is None:
            return self.iter_revisions()
        bounds = [(">=", since), ("<=", until)]
        params = tuple(to_text(when) for _, when in bounds if when is not None)
        inside = " AND ".join(f"w.updated_at {op} ?" for op, when in bounds if when is not None)
        before = "(SELECT MAX(p.revision) FROM revisions p WHERE p.revision < w.revision)"
        with self.reading():
            found = self._db.execute(
                f"SELECT w.revision FROM revisions w WHERE {inside}"
                f" UNION SELECT {before} FROM revisions w WHERE {inside}",
                params + params,
            )
            # Numbers, not rows: 8 bytes a revision (0.8 MB for a window of 100,000). The rows
            # are then read by number, a batch at a time, so neither backend's planner can
            # choose to read the table through (PostgreSQL's chose a sequential scan and a
            # sort for one `IN (subquery)`).
            numbers = array("q", sorted(int(n) for (n,) in found if n is not None))
        batches = (numbers[i : i + _WINDOW_BATCH] for i in range(0, len(numbers), _WINDOW_BATCH))
        return self._revisions_of(
            (f"WHERE revision IN ({','.join('?' * len(b))}) ORDER BY revision", tuple(b))
            for b in batches
        )

    @_reads
    def revision_at(self, when: datetime) -> Revision | None:
        """The revision in force at `when`: of those updated at or before it, the last in the
        service's order (the highest number), also where a later revision carries an earlier
        time (a skewed clock), so `--at` now judges what a run of the latest does. The number
        is read from the (updated_at, revision) index alone, then the one row: ordering the
        rows by number read them until one was old enough (0.2-0.4 s at 100,000 revisions)."""
        # (`SELECT MAX(revision)` reads the table by number instead: 95 ms at 10,000)
        row = self._db.execute(
            "SELECT revision FROM revisions WHERE updated_at <= ? ORDER BY revision DESC LIMIT 1",
            (to_text(when),),
        ).fetchone()
        return None if row is None else self.get_revision(int(row[0]))

    @_reads
    def check_rows_kept(self) -> None:
        """StoreError ("… is damaged") if a finished sync stored more revisions or reports than
        the file still holds from it: rows deleted behind auditor's back, which no later sync
        fetches again (history paging stops at the newest stored revision)."""
        for table, counted in (("revisions", "revisions_new"), ("reports", "reports_new")):
            left = dict(self._db.execute(f"SELECT sync_id, COUNT(*) FROM {table} GROUP BY sync_id"))
            for sync_id, finished, stored in self._db.execute(
                f"SELECT id, finished, {counted} FROM syncs WHERE finished IS NOT NULL ORDER BY id"
            ):
                kept = int(left.get(sync_id, 0))
                if kept < int(stored):
                    raise ValueError(
                        f"the sync finished {str(finished)[:19]} stored {stored} {table}; "
                        f"{kept} are left ({int(stored) - kept} deleted since)"
                    )

    @_reads
    def count_revisions(self) -> int:
        """How many revisions are stored."""
        return int(self._db.execute("SELECT COUNT(*) FROM revisions").fetchone()[0])

    def ingest_revision(
        self, rev: Revision, sync_id: int, seen_at: datetime, *, settings_json: bytes | None = None
    ) -> Ingested:
        """Insert a new revision; a known number with other content becomes an integrity issue.

        `settings_json` is `canonical(rev.settings)` when the caller already has it.
        """
        row = revision_row(rev, sync_id, settings_json)
        return self._ingest("revisions", rev.revision, None, rev.content_hash, row, seen_at)

    def insert_new_revisions(
        self, rows: list[tuple[Any, ...]], parts: Sequence[Sequence[bytes] | None] = ()
    ) -> None:
        """Insert `revision_row`s the caller knows are new (newer than every revision stored
        before this sync and each sent once), in one statement. `parts`, if given, has for
        each row the parts its settings JSON was put together from, or None
        (`Redactor.redact_canonical_parts`)."""
        inserted = self._db.executemany(_INSERT_NEW["revisions"], rows).rowcount
        each = parts or itertools.repeat(None, len(rows))
        for row, kept in zip(rows, each, strict=True):
            self._index_row(row[6], *row[3:6], sync_id=row[8], parts=kept)
        if inserted != len(rows):  # the caller's promise was wrong: nothing is committed
            raise StoreError(
                f"state file {self.path}: {len(rows) - inserted} of {len(rows)} revisions "
                "written as new were stored already"
            )

    # -- kept history pages (a sync that did not finish) --------------------------------------

    @_reads
    def staged_resume(self) -> dict[str, Any] | None:
        """The record of the kept history pages (`stage_page`), None when none are kept; `{}`
        when rows are kept without a record that can be read (the next sync drops them)."""
        row = self._db.execute(f"SELECT value FROM meta WHERE key = '{_RESUME_KEY}'").fetchone()
        if row is not None:
            self._kept_seen = True
            try:
                record = json.loads(meta_text(row[0]))
            except ValueError:
                return {}
            return record if isinstance(record, dict) else {}
        if not has_table(self._db, "history_staged"):
            return None
        if self._db.execute("SELECT 1 FROM history_staged LIMIT 1").fetchone() is None:
            return None
        self._kept_seen = True
        return {}

    @property
    def kept_seen(self) -> bool:
        """Whether this process saw kept history pages in the state file (read their record
        or rows, or kept a page), and none was committed or dropped since."""
        return self._kept_seen

    def has_staged(self) -> bool:
        """Whether history pages of a sync that did not finish are kept (StoreError if that
        cannot be read)."""
        return self.staged_resume() is not None

    @_reads
    def staged_numbers(self) -> set[int]:
        """The revision numbers the kept history pages hold."""
        return {int(r[0]) for r in self._db.execute("SELECT revision FROM history_staged")}

    def staged_hash(self, number: int) -> str | None:
        """The content hash of kept revision `number` redacted again with everything remembered
        now (what the service's copy, redacted now, hashes to when it is the same), None when
        it is not kept."""
        where = "WHERE revision = ? LIMIT 1"
        kept = next(self._revisions(where, (number,), table="history_staged"), None)
        return None if kept is None else self._revision_again(kept).content_hash

    def stage_page(
        self,
        rows: list[tuple[Any, ...]],
        parts: Sequence[Sequence[bytes] | None],
        resume: Mapping[str, Any],
    ) -> None:
        """Keep one history page's new `revision_row`s (newest first or not) and the record of
        where the listing goes on (`resume`), in a transaction of their own: a sync that fails
        later keeps them, and the next one goes on from there (`auditor.workflows.sync`). The
        rows are redacted as stored rows are, searched by the scrub (index) as they are, and a
        secret learned on this page is scrubbed from every row, kept or stored, and remembered
        now, as a finishing sync does."""
        with self.transaction():
            inserted = self._db.executemany(_INSERT_NEW["history_staged"], rows).rowcount
            for row, kept in zip(rows, parts or itertools.repeat(None, len(rows)), strict=True):
                self._index_row(row[6], *row[3:6], parts=kept)
            if inserted != len(rows):
                raise StoreError(
                    f"state file {self.path}: {len(rows) - inserted} of {len(rows)} revisions "
                    "kept as new were kept already"
                )
            self._scrub_kept()
            self.remember_secrets()
            record = dict(resume)
            if self._cursor_secret(record):
                # A cursor holding what is now known as a secret is never written: the rows
                # stay for this sync to finish with, but no later sync goes on from them
                # (`forget_unsafe_resume` drops them once this sync fails)
                record.update(cursor=None, last_cursor=None, unresumable=True)
            self._db.execute(f"DELETE FROM meta WHERE key = '{_RESUME_KEY}'")
            self._db.execute(
                f"INSERT INTO meta (key, value) VALUES ('{_RESUME_KEY}', ?)",
                (meta_value(self._db, json.dumps(record, sort_keys=True)),),
            )
        self._kept_seen = True

    def _scrub_kept(self) -> bool:
        """Inside the open transaction: when the secret memory learned some since the kept
        rows were last scrubbed, scrub every row, kept or stored, of what this sync learned
        (the kept rows are this sync's: scrubbed, not dropped); gives whether it did."""
        if self.redactor.memory.generation == self._staged_generation:
            return False
        self._staging = True
        try:
            self.scrub_stored(every_new=True)
        finally:
            self._staging = False
        self._staged_generation = self.redactor.memory.generation
        return True

    def _cursor_secret(self, record: Mapping[str, Any]) -> bool:
        """Whether a cursor of the kept pages' record would be changed by redaction with
        everything remembered now (a value a later page, or a later sync, named as a secret)."""
        return any(
            isinstance(token, str) and self.redactor.redact_shown(token) != token
            for token in (record.get("cursor"), record.get("last_cursor"))
        )

    def _drop_unsafe_resume(self) -> bool:
        """Inside the open transaction: drop the kept history pages when their record cannot be
        gone on from safely (a cursor holding a secret known now, or marked so by `stage_page`),
        so no secret stays in the file in any form; gives whether it did."""
        record = self.staged_resume()
        if not record or not (record.get("unresumable") is True or self._cursor_secret(record)):
            return False
        self._drop_staged_rows()
        return True

    def _drop_staged_rows(self) -> None:
        """Inside the open transaction: forget the kept history pages and their record."""
        if has_table(self._db, "history_staged"):
            self._db.execute("DELETE FROM history_staged")
        self._db.execute(f"DELETE FROM meta WHERE key = '{_RESUME_KEY}'")
        self._index_dirty = True

    def forget_unsafe_resume(self, *, wait: float | None = None) -> bool:
        """A sync failed or was interrupted, with what it learned on the way: in a transaction
        of its own, scrub the kept history pages of every secret learned since they were last
        scrubbed (a page read after the last batch was kept may name as a secret a value a
        kept page holds unlabelled) and remember those secrets, as keeping a batch does; then
        `_drop_unsafe_resume`. When that cannot be written (a full disk), drop the kept pages
        alone. Gives whether the kept pages were dropped.

        A lock another program holds on the state file is waited for once, at most `wait`
        seconds (None: the connection's own wait; an interrupted sync waits briefly), never
        again for the drop, nor at all when the write before this one gave up on it (a failed
        sync's pages held, kept as it failed) and there is nothing to scrub (a secret learned
        late waits its one chance: review R65 LOW-1). When neither could be written and the
        kept pages may hold a secret learned since their last scrub, `kept_unscrubbed` is set
        (StoreError raised); this store then waits no more for the lock: with `wait`, for good
        (the command is ending), else until the failed sync has said what it kept
        (`_wait_no_more`, `wait_again`)."""
        needed = self.redactor.memory.generation != self._staged_generation
        first: StoreError | None = None  # what stopped the scrub
        try:
            with self._lock_wait(0 if wait is None and self._lock_gave_up and not needed else wait):
                if self.staged_resume() is None:
                    return False
                try:
                    with self.transaction():
                        if self._scrub_kept():
                            self.remember_secrets()
                        dropped = self._drop_unsafe_resume()
                    self._kept_seen = self._kept_seen and not dropped
                    return dropped
                except StoreError as exc:  # (StoreWriteError among them)
                    if not needed:  # (clean kept pages: kept, whatever stopped this write)
                        raise
                    first = exc
            # A full disk may still let rows be deleted; a lock is not waited for twice
            with self._lock_wait(0), self.transaction():
                self._drop_staged_rows()
            self._kept_seen = False
            return True
        except StoreError as exc:
            if needed and (first or self._kept_seen):  # (unread: kept, as far as it knows)
                self.kept_unscrubbed = _unwritten(first or exc)
            if wait is not None:  # (whatever it had to scrub: what the command says next, that
                # it kept pages or none, and whether a first sync's file goes, reads the store:
                # each read waited 5 s more for the lock, 14.5 s after Ctrl-C: tester T73 MED-1)
                with contextlib.suppress(sqlite3.Error):
                    self._set_lock_wait(1)
            elif _by_lock(first or exc):  # (a failed sync's say waited 26 s: review R60 LOW-1)
                self._wait_no_more()
            raise

    def _wait_no_more(self) -> None:
        """A failed sync's last write gave up on another program's lock: the store waits for
        it no more until `wait_again`, so that what the failed sync says next (the pages
        kept) does not wait for it again read after read."""
        if self._wait_back is not None:
            return
        with contextlib.suppress(sqlite3.Error):
            before = self._lock_wait_ms()
            self._set_lock_wait(1)
            self._wait_back = before

    def wait_again(self) -> None:
        """The failed sync has said what it kept: the store waits for a lock as before
        (`_wait_no_more`), so the audit `run` makes of what is stored after its sync failed
        waits for another program's lock as every read and write does (it failed at once,
        under an exclusive lock let go seconds later: review R65 MED-1)."""
        if self._wait_back is None:
            return
        back, self._wait_back = self._wait_back, None
        with contextlib.suppress(sqlite3.Error):
            self._set_lock_wait(back)

    @contextmanager
    def _lock_wait(self, seconds: float | None) -> Iterator[None]:
        """Inside, a lock another program holds on the state file (SQLite's busy wait,
        PostgreSQL's lock_timeout) is waited for at most `seconds` (None: as the connection
        does); the wait is as before afterwards."""
        if seconds is None:
            yield
            return
        try:
            before = self._lock_wait_ms()
            self._set_lock_wait(max(1, int(seconds * 1000)))
        except sqlite3.Error:  # (a session lost: what follows meets it and says so)
            yield
            return
        try:
            yield
        finally:
            with contextlib.suppress(sqlite3.Error):
                self._set_lock_wait(before)

    def _lock_wait_ms(self) -> int:
        if isinstance(self._db, postgres.PgConnection):
            return self._db.lock_limit_ms
        return int(self._db.execute("PRAGMA busy_timeout").fetchone()[0])

    def _set_lock_wait(self, ms: int) -> None:
        """Wait at most `ms` milliseconds for a lock from now on (to PostgreSQL, 0 is for
        ever; to SQLite, not at all)."""
        if isinstance(self._db, postgres.PgConnection):
            self._db.execute(f"SET lock_timeout = {ms}")
            self._db.lock_limit_ms = ms
        else:
            self._db.execute(f"PRAGMA busy_timeout = {ms}")

    def commit_staged(self, sync_id: int) -> int:
        """Move the kept history pages into `revisions` as rows of sync `sync_id` (inside its
        transaction), and forget the record; gives the revisions moved."""
        if self.staged_resume() is None:
            return 0
        numbers = sorted(self.staged_numbers())
        columns = f"{REVISION_COLUMNS}, sync_id"
        moved = 0
        # A batch at a time, each deleted once moved: the next batch is written into the pages
        # the last one freed, so the file does not grow by the whole history twice over.
        for at in range(0, len(numbers), _MOVE_BATCH):
            check_cancelled()  # (inside the sync's transaction, which an interrupt rolls back)
            low, high = numbers[at], numbers[min(at + _MOVE_BATCH, len(numbers)) - 1]
            moved += self._db.execute(
                f"insert INTO revisions ({columns}) SELECT {REVISION_COLUMNS}, ? "
                "FROM history_staged WHERE revision BETWEEN ? AND ? ORDER BY revision",
                (sync_id, low, high),
            ).rowcount
            self._db.execute(
                "DELETE FROM history_staged WHERE revision BETWEEN ? AND ?", (low, high)
            )
        if moved != len(numbers):
            raise StoreError(
                f"state file {self.path}: {len(numbers) - moved} of {len(numbers)} kept "
                "revisions were stored already"
            )
        self._db.execute(f"DELETE FROM meta WHERE key = '{_RESUME_KEY}'")
        self._staged_moved = True
        return moved

    def drop_staged(self) -> None:
        """Forget the kept history pages (in a transaction of its own); the scrub index is
        made exact again, so their pieces leave it with them."""
        with self.transaction():
            self._drop_staged_rows()
        self._kept_seen = False

    def _ingest(
        self,
        table: Literal["revisions", "reports"],
        revision: int | None,
        report_id: str | None,
        digest: str,
        row: tuple[Any, ...],
        seen_at: datetime,
    ) -> Ingested:
        """Insert `row` if its key is new; compare hashes if not (the row ends with sync_id)."""
        # One statement for the usual case (a new item); the stored row is read only if not.
        if self._db.execute(_INSERT_NEW[table], row).rowcount == 1:
            if table == "revisions":
                self._index_row(row[6], *row[3:6], sync_id=row[-1])
            else:
                self._index_row(row[3], row[1], sync_id=row[-1])
            return Ingested("new", known_before=False)
        found = self._db.execute(
            f"SELECT content_hash, sync_id FROM {table} WHERE {KEY_COLUMN[table]} = ?",
            (revision if report_id is None else report_id,),
        ).fetchone()
        stored_hash, stored_sync = found
        before = stored_sync != row[-1]
        if stored_hash == digest:
            return Ingested("same", known_before=before)
        key = revision if report_id is None else report_id
        if before and self._rescrub_row(table, key) == digest:
            return Ingested("same", known_before=True)  # stored before a secret in it was known
        if before and self._glued_secret_hidden(table, key, row, str(stored_hash)):
            return Ingested("same", known_before=True)  # the stored copy hid it: not a rewrite
        # Another hash is not yet other content: the same value in another JSON form (`30.0`,
        # a report's `null` for absent) is the same, fields only added are a note.
        judged = self._judge(table, key, row)
        if judged.kind == "same":
            return Ingested("same", known_before=before, kept_hash=judged.stored_hash)
        if judged.kind == "added":
            return Ingested("same", known_before=before, note=judged.note)
        if not before:  # the API contradicted itself within one sync: the caller decides
            return Ingested("conflict", known_before=False)
        issue = self.record_integrity_issue(
            revision, report_id, stored_hash, digest, seen_at, changes=judged.changes
        )
        return Ingested("conflict", known_before=True, issue=issue)

    def _glued_secret_hidden(
        self, table: Literal["revisions", "reports"], key: Any, row: tuple[Any, ...], stored: str
    ) -> bool:
        """Whether the re-read item is its stored copy but for a secret the copy hides and this
        one shows: one pasted glued to other text (`x<secret>`) that an earlier process learned,
        whose fingerprint alone (all the state file keeps) is looked for only between word
        boundaries. The stored copy says a secret is there (a marker): each string this item
        has and the copy has not is searched at every place (`SecretMemory.find_glued`), a
        secret found is remembered as a value (the rest of the sync scrubs it too), and the
        item, redacted again, is compared. The service did not change it: without this, a
        false integrity issue named the path, secret and all (tester R11)."""
        stored_text, _hash, seen = self._copies(table, key, row)
        if MARKER_START not in stored_text:
            return False
        seen_text = seen.decode() if isinstance(seen, bytes) else str(seen)
        shown = set(_JSON_STRING.findall(seen_text)) - set(_JSON_STRING.findall(stored_text))
        memory = self.redactor.memory
        # only the lengths of the secrets the stored copy hides (`len:N` of its markers), and
        # only in the strings it has not: the work is those strings' length times a few lengths
        lengths = {int(m["len"]) for m in MARKER_RE.finditer(stored_text)}
        found: set[str] = set()
        for text in shown:
            found |= memory.find_glued(loads(f'"{text}"') if "\\" in text else text, lengths)
        if not found:
            return False
        for secret in found:
            self.redactor.learn(secret)
        again = canonical(self.redactor.redact_json(loads(seen_text)))
        return hashlib.sha256(again).hexdigest() == stored

    def _judge(
        self, table: Literal["revisions", "reports"], key: Any, row: tuple[Any, ...]
    ) -> rewrites.Judged:
        """What the row offered for a stored item with another content hash is
        (`rewrites.judge`), against the stored row as it is now (redacted again above)."""
        stored, stored_hash, seen = self._copies(table, key, row)
        name = f"revision {key}" if table == "revisions" else f"report {key}"
        try:
            judged = rewrites.judge(table, name, stored, seen)
        except ValueError:  # a stored row that is no JSON (damaged): other content, unnamed
            judged = rewrites.Judged("rewritten")
        return dataclasses.replace(judged, stored_hash=stored_hash)

    def _copies(
        self, table: Literal["revisions", "reports"], key: Any, row: tuple[Any, ...]
    ) -> tuple[str, str, Any]:
        """The stored copy of an item re-read (its JSON text and content hash) and the JSON the
        service sends for it now (`row`'s settings or data)."""
        column = "settings" if table == "revisions" else "data"
        stored, stored_hash = self._db.execute(
            f"SELECT {column}, content_hash FROM {table} WHERE {KEY_COLUMN[table]} = ?", (key,)
        ).fetchone()
        return meta_text(stored), str(stored_hash), row[6] if table == "revisions" else row[3]

    def record_integrity_issue(
        self,
        revision: int | None,
        report_id: str | None,
        stored: str,
        seen: str,
        at: datetime,
        *,
        changes: str = "",
    ) -> IntegrityIssue:
        """Record an integrity issue (a sync's, or an evidence bundle's in its scratch state)
        once per item and content seen: a later sync served the same other content again adds
        no row, and the issue keeps when it was first seen. `changes`: the paths the other
        content changed or removed (`rewrites.judge`; never a value), kept with the issue."""
        known = self._issue_row("seen_at", "integrity_issues", revision, report_id, stored, seen)
        named = self._issue_changes(revision, report_id, stored, seen)
        if changes and named is None:
            self._db.execute(rewrites.CHANGES_DDL)
            self._db.execute(
                "INSERT INTO integrity_changes (revision, report_id, stored_hash, seen_hash, "
                "changes) VALUES (?, ?, ?, ?, ?)",
                (revision, report_id, stored, seen, self.redactor.redact_shown(changes)),
            )
        shown = self.redactor.redact_shown(named or changes)
        if known is not None:
            when = datetime.fromisoformat(known[0])
            return rewrites.NamedIssue(revision, stored, seen, when, report_id, changes=shown)
        self._db.execute(
            "INSERT INTO integrity_issues (revision, report_id, stored_hash, seen_hash, seen_at)"
            " VALUES (?, ?, ?, ?, ?)",
            (revision, report_id, stored, seen, to_text(at)),
        )
        return rewrites.NamedIssue(revision, stored, seen, at, report_id, changes=shown)

    def _issue_changes(
        self, revision: int | None, report_id: str | None, stored: str, seen: str
    ) -> str | None:
        """The changed paths recorded with an integrity issue, if any were."""
        if not has_table(self._db, "integrity_changes"):
            return None
        found = self._issue_row("changes", "integrity_changes", revision, report_id, stored, seen)
        return None if found is None else str(found[0])

    def _issue_row(
        self,
        value: str,
        table: str,
        revision: int | None,
        report_id: str | None,
        stored: str,
        seen: str,
    ) -> Any:
        """The first row of `table` about this item (a revision or a report) and this stored
        and seen content, its column `value` (None when there is none)."""
        column, key = ("revision", revision) if report_id is None else ("report_id", report_id)
        first = " ORDER BY id" if table == "integrity_issues" else ""  # the first recorded
        return self._db.execute(
            f"SELECT {value} FROM {table} WHERE {column} = ? AND stored_hash = ? "
            f"AND seen_hash = ?{first} LIMIT 1",
            (key, stored, seen),
        ).fetchone()

    @_reads
    def integrity_issues(self) -> list[IntegrityIssue]:
        """Every integrity issue ever recorded, oldest first, each (item, stored and seen
        content) once (a store written before 0.3.0 may hold one row per sync that met it:
        the first is kept), a report's with its repository (`repo_url`)."""
        changes = (
            "(SELECT c.changes FROM integrity_changes c WHERE c.stored_hash = i.stored_hash "
            "AND c.seen_hash = i.seen_hash AND (c.revision = i.revision OR "
            "c.report_id = i.report_id) LIMIT 1)"
            if has_table(self._db, "integrity_changes")
            else "''"
        )
        rows = self._db.execute(
            "SELECT i.revision, i.report_id, i.stored_hash, i.seen_hash, i.seen_at, r.repo_url, "
            f"{changes} FROM integrity_issues i LEFT JOIN reports r "
            "ON r.report_id = i.report_id ORDER BY i.id"
        )
        issues: dict[tuple[int | None, str | None, str, str], IntegrityIssue] = {}
        for *row, named in rows:
            issue = issue_from_row(row)
            key = (issue.revision, issue.report_id, issue.stored_hash, issue.seen_hash)
            shown = self.redactor.redact_shown(str(named or ""))  # a secret learned since
            issues.setdefault(key, rewrites.NamedIssue(**vars(issue), changes=shown))
        return list(issues.values())

    # -- readiness reports -------------------------------------------------------------------

    def _reports(
        self, tail: str, args: tuple[Any, ...] = (), pool: EqualPool | None = None
    ) -> Iterator[ReadinessReport]:
        """The reports `tail` selects; with `pool`, their criterion entries (`report`) share
        the equal ones of every report read through the same pool."""
        with self.reading():
            cursor = stream(self._db, f"SELECT {REPORT_COLUMNS} FROM reports r {tail}", args)
            try:
                while rows := cursor.fetchmany(_BATCH):
                    reports = [report_from_row(r) for r in rows]
                    if self._stale_rules:
                        reports = [self._report_again(r) for r in reports]
                    if pool is not None:
                        for report in reports:
                            _share_criteria(report.data, pool)
                    yield from reports
            finally:
                _close(cursor)

    def iter_reports(self) -> Iterator[ReadinessReport]:
        """Every report, by repository then creation time."""
        return self._reports("ORDER BY repo_url, created_at, report_id")

    @_reads
    def latest_reports(self, at: datetime | None = None) -> list[ReadinessReport]:
        """The newest report of each repository (created at or before `at`, if given), sorted
        by repository URL; only those rows are read and decoded. Reports that tie on the newest
        time are all given: `latest_per_repo` breaks ties by report id in Python's order (the
        database's collation need not be it)."""
        args: tuple[str, ...] = () if at is None else (to_text(at),)
        bound = "" if at is None else " AND s.created_at <= ?"
        query = (
            "WHERE created_at = (SELECT MAX(created_at) FROM reports s"
            f" WHERE s.repo_url = r.repo_url{bound}) ORDER BY repo_url, report_id"
        )
        # 500 repositories' reports held 12.7 MB through a first run's evaluation; most of it
        # criterion entries that recur from report to report (the same score and rationale).
        return list(self._reports(query, args, EqualPool()))

    @_reads
    def count_reports(self, at: datetime | None = None) -> int:
        """How many reports are stored (created at or before `at`, if given)."""
        if at is None:
            return int(self._db.execute("SELECT COUNT(*) FROM reports").fetchone()[0])
        query = "SELECT COUNT(*) FROM reports WHERE created_at <= ?"
        return int(self._db.execute(query, (to_text(at),)).fetchone()[0])

    @_reads
    def count_repositories(self) -> int:
        """How many repositories have at least one report."""
        return int(self._db.execute("SELECT COUNT(DISTINCT repo_url) FROM reports").fetchone()[0])

    def report_fingerprint(self, raw: Mapping[str, Any]) -> str | None:
        """The keyed fingerprint of a raw API report item (see `known_report`), bound to the
        tool version. `report_seen` keeps it bound to the secret memory too (`_seen_key`):
        once a secret is learned (by any sync), a report recorded before is redacted again,
        as it may hold that secret."""
        return self.redactor.raw_fingerprint(f"report {__version__}", raw)

    def _seen_key(self, fingerprint: str, size: int) -> str:
        """What `report_seen` records: a raw fingerprint bound to the size of the secret memory
        the stored row is clean under (it only grows: an equal size means the same memory)."""
        return hmac.new(
            self._key, f"report seen {size}\0{fingerprint}".encode(), hashlib.sha256
        ).hexdigest()

    def known_report(self, fingerprint: str | None, sync_id: int) -> tuple[str, Ingested] | None:
        """The stored report a raw item with this fingerprint was redacted into, with the
        outcome `ingest_report` would give (`same`), while the stored row is still exactly what
        that item gave (its content hash unchanged since); None when it must be redacted and
        compared as usual. Gives the stored (redacted) report id, for messages. A row so
        recognised is searched by `scrub_stored` for any secret this process knows (a rotated
        API token, a secret found since it was stored), as redacting it again would have.

        The row must be clean under the whole memory the file holds (recorded under its size)
        or under everything known now: what this process learned beyond the file's memory it
        knows as values, which `scrub_stored` looks for in the row. A secret another sync
        learned since the row was recorded grew the file's memory: then it is redacted again."""
        if fingerprint is None or not self._report_seen_ready():
            return None
        keys = {self._seen_key(fingerprint, n) for n in (self._recalled, self.redactor.memory.size)}
        row = self._db.execute(
            "SELECT r.report_id, r.sync_id, r.content_hash FROM report_seen f JOIN reports r "
            "ON r.report_id = f.report_id AND r.content_hash = f.content_hash "
            f"WHERE f.fingerprint IN ({', '.join('?' * len(keys))}) LIMIT 1",
            tuple(keys),
        ).fetchone()
        if row is None:
            return None
        self._skipped_reports.append(str(row[0]))  # checked by `scrub_stored` before commit
        self._seen_pending.append((str(row[0]), fingerprint, str(row[2]), None))
        return str(row[0]), Ingested("same", known_before=row[1] != sync_id)

    def _report_seen_ready(self) -> bool:
        """Whether the `report_seen` table exists, looked up again after every transaction
        (a table made inside one that is rolled back is gone)."""
        if self._report_seen is None:
            self._report_seen = has_table(self._db, "report_seen")
        return self._report_seen

    def _remember_report(self, report_id: str, fingerprint: str, content_hash: str) -> None:
        """Record which raw item (by keyed fingerprint) the stored report row came from, when
        the transaction commits (`_write_report_seen`), under the memory it is clean under:
        the size now, or the final one if `scrub_stored` runs after it."""
        self._seen_pending.append((report_id, fingerprint, content_hash, self.redactor.memory.size))

    def _write_report_seen(self) -> None:
        """Write the `report_seen` rows of the open transaction (just before it commits)."""
        pending = [entry for entry in self._seen_pending if entry[3] is not None]
        self._seen_pending = []
        if not pending:
            return
        if not self._report_seen_ready():
            self._db.execute(REPORT_SEEN_DDL)
            self._db.execute(REPORT_SEEN_INDEX)
        self._db.executemany(
            "INSERT INTO report_seen (report_id, fingerprint, content_hash) VALUES (?, ?, ?) "
            "ON CONFLICT (report_id) DO UPDATE SET fingerprint = excluded.fingerprint, "
            "content_hash = excluded.content_hash",
            [(r, self._seen_key(f, size or 0), h) for r, f, h, size in pending],
        )

    def ingest_report(
        self,
        report: ReadinessReport,
        sync_id: int,
        seen_at: datetime,
        *,
        data_json: bytes | None = None,
        fingerprint: str | None = None,
    ) -> Ingested:
        """Insert a report by id; known id with other content becomes an integrity issue.

        `data_json` is `canonical(report.data)` when the caller already has it; `fingerprint`
        is `report_fingerprint` of the raw item it was redacted from, recorded when the stored
        row is (now) what that item gives, so the next sync can skip redacting it.
        """
        row = report_row(report, sync_id, data_json)
        outcome = self._ingest("reports", None, report.report_id, report.content_hash, row, seen_at)
        # (an item with fields added is redacted and compared again next time: its note stays)
        if fingerprint is not None and outcome.status in ("new", "same") and outcome.note is None:
            kept = outcome.kept_hash or report.content_hash  # the row stored, not the item's form
            self._remember_report(report.report_id, fingerprint, kept)
        return outcome

    # -- syncs -------------------------------------------------------------------------------

    def begin_sync(self, started: datetime, base_url: str) -> int:
        """Record a sync in the open transaction and return its id."""
        cursor = self._db.execute(
            "INSERT INTO syncs (started, base_url) VALUES (?, ?) RETURNING id",
            (to_text(started), base_url),
        )
        self._this_sync = int(cursor.fetchone()[0])
        self._index_synced = True
        return self._this_sync

    def reshow_sync_addresses(self, show: Callable[[str], str]) -> None:
        """Rewrite the sync records whose address is not as `show` gives it (inside the sync's
        transaction): an earlier version recorded the address as given, a secret in its path
        too (freed bytes are zeroed: `secure_delete`)."""
        stored = self._db.execute("SELECT DISTINCT base_url FROM syncs").fetchall()
        for (url,) in stored:
            shown = None if url is None else show(str(url))
            if shown is not None and shown != url:
                self._db.execute("UPDATE syncs SET base_url = ? WHERE base_url = ?", (shown, url))

    def finish_sync(
        self, sync_id: int, finished: datetime, *, revisions_new: int, reports_new: int, pages: int
    ) -> None:
        """Complete the sync record (still inside the sync's transaction)."""
        self._db.execute(
            "UPDATE syncs SET finished = ?, revisions_new = ?, reports_new = ?, pages = ? "
            "WHERE id = ?",
            (to_text(finished), revisions_new, reports_new, pages, sync_id),
        )

    @_reads
    def last_sync(self) -> SyncRecord | None:
        """The newest finished sync."""
        row = self._db.execute(
            "SELECT started, finished, base_url, revisions_new, reports_new, pages FROM syncs "
            "WHERE finished IS NOT NULL ORDER BY id DESC LIMIT 1"
        ).fetchone()
        if row is None:
            return None
        started, finished, base, revs, reports, pages = row
        return SyncRecord(
            from_text(started) or datetime.min, from_text(finished), base, revs, reports, pages
        )

    # -- usage analytics ---------------------------------------------------------------------

    @_reads
    def analytics_days_stored(self, start: date, end: date, series: int) -> set[str]:
        """The dates from `start` to `end` for which all `series` analytics series are stored."""
        return store_analytics.stored_days(self._db, start, end, series)

    @_reads
    def analytics_fetched_at(self, start: date, end: date) -> dict[str, datetime | None]:
        """When each stored date from `start` to `end` was fetched (`analytics.fetched_at`)."""
        return store_analytics.fetched_at(self._db, start, end)

    def ingest_analytics(self, day: str, series: str, data: JSON, sync_id: int) -> None:
        """Store one redacted analytics series of one day (inside the sync's transaction)."""
        check_cancelled()  # (`run --orgs`: the transaction is rolled back)
        body = store_analytics.put_day(self._db, day, series, data, sync_id)
        self._index_row(body, sync_id=sync_id)

    def current_analytics(self, start: date, end: date) -> Iterator[tuple[str, dict[str, JSON]]]:
        """`iter_analytics`, each series redacted again with everything remembered now: what a
        day fetched again is compared with and may keep (`kept_evidence`). A copy stored before
        a secret in it was learned (a key in a model's name, `custom:<key>`, that a later
        revision's `apiKey` named) would otherwise differ from the answer that now hides it, be
        kept as "left out", and be written back in clear under this sync, whose own rows the
        scrub of an older secret does not search (tester T95 #1). A secret learned later in
        this sync that a kept value holds is one this redactor gave an answer for before it
        learned it: `stale_secrets` names it, and every row is searched for it."""
        for day, series in self.iter_analytics(start, end):
            yield day, {k: self.redactor.redact_json(v) for k, v in series.items()}

    def iter_analytics(
        self, start: date | None = None, end: date | None = None
    ) -> Iterator[tuple[str, dict[str, JSON]]]:
        """(date, {series: data}) for every stored date in the range, ascending."""
        with self.reading():
            for day, series in store_analytics.iter_days(self._db, start, end):
                if self._stale_rules:
                    series = {k: self.redactor.redact_json(v) for k, v in series.items()}
                yield day, series

    def set_analytics_access(self, status: str, detail: str = "") -> None:
        """Record whether this sync could read the analytics (inside its transaction)."""
        store_analytics.set_access(self._db, AnalyticsAccess(status, detail))

    @_reads
    def analytics_access(self) -> AnalyticsAccess | None:
        """What the last sync found about the analytics, or None if none tried."""
        return store_analytics.get_access(self._db)

    # -- runs --------------------------------------------------------------------------------

    def start_run(
        self,
        run_id: str,
        *,
        started: datetime,
        tool_version: str,
        policy_hashes: Mapping[str, str],
        scope: str = "",
    ) -> str:
        """Record that a run began and return its id (`run_id`, or `run_id-2` … if taken);
        `scope` says which runs it can be compared with."""
        with self.transaction():
            return store_runs.start_run(
                self._db,
                run_id,
                started=started,
                tool_version=tool_version,
                policy_hashes=policy_hashes,
                scope=scope,
            )

    def finish_run(
        self,
        run_id: str,
        *,
        finished: datetime,
        complete: bool,
        findings: Iterable[FindingRecord],
        like: tuple[str, Sequence[FindingRecord]] | None = None,
    ) -> None:
        """Record a run's end and its findings (with `like`, as a delta from a stored run's
        records: see `runs.finish_run`)."""
        with self.transaction():
            store_runs.finish_run(
                self._db, run_id, finished=finished, complete=complete, findings=findings, like=like
            )

    def complete_run(self, run_id: str) -> None:
        """Mark a finished run complete (after its reports are written)."""
        with self.transaction():
            store_runs.complete_run(self._db, run_id)

    @_reads
    def previous_complete_run(self, before_run_id: str, scope: str = "") -> RunRecord | None:
        """The newest complete run of `scope` before `before_run_id`, with its findings."""
        return store_runs.previous_complete_run(self._db, before_run_id, scope)

    # -- incremental evaluation state --------------------------------------------------------

    def eval_state(self) -> list[evalstate.EvalStateRow]:
        """Every rule's stored evaluation state (see `auditor.store.evalstate`)."""
        with self.reading():
            return evalstate.load(self._db)

    def save_eval_state(self, revision: int, history: str, states: evalstate.States) -> None:
        """Store the rules' evaluation state computed at `revision` over `history`."""
        with self.transaction():
            evalstate.save(self._db, revision, history, states)
