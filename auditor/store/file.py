"""Opening a state file: the exclusive lock, the schema check and the fingerprint key.

Takes a path and an SQLite connection, gives a locked, schema-checked file and its HMAC key.
The key is random per file (kept in `meta`) unless `AUDITOR_FINGERPRINT_KEY` supplies one, in
which case only a check value is stored and the file cannot be opened without the key.
"""

from __future__ import annotations

import fcntl
import hashlib
import hmac
import os
import secrets
import sqlite3
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

from auditor.errors import StoreError
from auditor.store.schema import DDL, SCHEMA_VERSION

_KEY_CHECK_LABEL = b"auditor fingerprint key check"


def _key_check(key: bytes) -> str:
    return hmac.new(key, _KEY_CHECK_LABEL, hashlib.sha256).hexdigest()


def acquire_lock(path: Path) -> IO[str]:
    """Take the exclusive lock on `<path>.lock` (and write our pid), or raise StoreError."""
    try:
        handle = open(f"{path}.lock", "a+", encoding="utf-8")  # noqa: SIM115 - held until close()
    except OSError as exc:
        raise StoreError(f"cannot lock state file {path}: {exc.strerror}") from None
    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.seek(0)
        holder = handle.read().strip() or "unknown"
        handle.close()
        raise StoreError(
            f"state file {path} is locked by another auditor run (pid {holder})"
        ) from None
    handle.seek(0)
    handle.truncate()
    handle.write(str(os.getpid()))
    handle.flush()
    return handle


def prepare(db: sqlite3.Connection, path: Path, override: bytes | None) -> bytes:
    """Create or check the schema in one transaction and return the fingerprint key."""
    db.execute("BEGIN IMMEDIATE")
    try:
        db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value BLOB)")
        meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
        key = _check(meta, path, override) if meta else _initialise(db, override)
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")
    return key


def _initialise(db: sqlite3.Connection, override: bytes | None) -> bytes:
    for statement in DDL.split(";"):
        if statement.strip():
            db.execute(statement)
    key = override or secrets.token_bytes(32)
    rows: list[tuple[str, Any]] = [
        ("schema_version", str(SCHEMA_VERSION)),
        ("key_check", _key_check(key)),
    ]
    if override is None:
        rows.append(("fingerprint_key", key))
    db.executemany("INSERT INTO meta (key, value) VALUES (?, ?)", rows)
    return key


def _check(meta: Mapping[str, Any], path: Path, override: bytes | None) -> bytes:
    try:
        version = int(meta.get("schema_version", 0))
    except (TypeError, ValueError):
        raise StoreError(f"state file {path} is damaged (unreadable schema version)") from None
    if version != SCHEMA_VERSION:
        raise StoreError(
            f"state file {path} has schema version {version}; this auditor reads version "
            f"{SCHEMA_VERSION}"
        )
    stored = meta.get("fingerprint_key")
    key = override or stored
    if key is None:
        raise StoreError(
            f"state file {path} was created with AUDITOR_FINGERPRINT_KEY: set it to open it"
        )
    if not hmac.compare_digest(_key_check(bytes(key)), str(meta.get("key_check", ""))):
        raise StoreError(
            f"AUDITOR_FINGERPRINT_KEY does not match the key state file {path} was made with"
        )
    return bytes(key)
