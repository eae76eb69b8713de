"""The evaluation state in the state file: what a nightly `auditor run` reads back.

Takes an open connection, SQLite or PostgreSQL (owned by `auditor.store.Store`), and gives
back, per rule key, the bytes `auditor.evaluate.incremental` stored and the revision they were
computed at, together with a digest of the stored history up to that revision. A row whose
history digest no longer matches (a revision was re-synced with other content, or an older one
filled a gap) is not handed out: the rule is simply evaluated afresh. Plain, portable SQL.
"""

from __future__ import annotations

import hashlib
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True)
class EvalStateRow:
    """One rule's stored evaluation state."""

    rule_key: str
    revision: int  # the last revision the state covers
    history: str  # digest of the stored (revision, content hash) pairs up to `revision`
    data: bytes  # as stored: see `pack` and `unpack`

    @property
    def state(self) -> bytes:
        """The state's bytes as they were given to `save`."""
        return unpack(self.data)


class States(Protocol):
    """Rule states to store, by rule key: a dict, or states dumped one at a time as they are
    written (`items`), so a run never holds all of them as bytes at once."""

    def __len__(self) -> int: ...

    def items(self) -> Iterable[tuple[str, bytes]]: ...


def history_digests(pairs: Iterable[tuple[int, str]], wanted: Iterable[int]) -> dict[int, str]:
    """The digest of the (revision, content hash) pairs up to each wanted revision (ascending
    pairs; a revision that is not among them gets no digest)."""
    targets = set(wanted)
    digest = hashlib.sha256()
    out: dict[int, str] = {}
    for number, content in pairs:
        digest.update(f"{number}:{content}\n".encode())
        if number in targets:
            out[number] = digest.hexdigest()
    return out


def pack(data: bytes) -> bytes:
    """A rule's state as it is stored: zlib-compressed (level 1). At 100,000 revisions a change
    rule's state is megabytes of JSON that compresses about tenfold, and the database copies
    what it is given while it stores it and hands all rows back at once when they are read."""
    return zlib.compress(data, 1)


def unpack(data: bytes) -> bytes:
    """A stored state's bytes as `pack` was given them. A row stored before states were
    compressed is JSON as it is (it starts with `{`, never with zlib's `x`). ValueError when
    the row is damaged."""
    try:
        return zlib.decompress(data) if data[:1] == b"x" else data
    except zlib.error as exc:
        raise ValueError(f"damaged evaluation state: {exc}") from None


def load(db: Any) -> list[EvalStateRow]:
    """Every stored row (the table came with schema version 3, `schema.MIGRATIONS`)."""
    rows = db.execute("SELECT rule_key, revision, history, data FROM eval_state")
    return [EvalStateRow(str(k), int(r), str(h), bytes(d)) for k, r, h, d in rows]


def save(db: Any, revision: int, history: str, states: States) -> None:
    """Store `states` (by rule key) as computed at `revision` over the history `history`.

    Rows at other revisions or over another history are dropped (they could only be used by
    a run of another policy at an older view); rows of other keys at this one are kept, so two
    policies audited against one state file do not undo each other's state. When none of
    `states` can be stored (each dumped only here, see `States`), nothing is dropped either:
    the rows already stored still let the next run resume."""
    stale = True
    for key, data in states.items():  # one state at a time: they can be large (100,000s of steps)
        if stale:
            db.execute(
                "DELETE FROM eval_state WHERE revision <> ? OR history <> ?", (revision, history)
            )
            stale = False
        db.execute("DELETE FROM eval_state WHERE rule_key = ?", (key,))
        db.execute(
            "INSERT INTO eval_state (rule_key, revision, history, data) VALUES (?, ?, ?, ?)",
            (key, revision, history, pack(data)),
        )
