"""The scrub index: every distinct piece of text the stored rows hold, to search instead of them.

Takes stored row values (canonical JSON blobs and plain text columns) and an open store
connection, SQLite or PostgreSQL (owned by `auditor.store.Store`); gives the encoded forms of
new secrets that some stored row may hold. A sync that learns a secret new to the state file
must scrub it from every row earlier syncs stored (`Store.scrub_stored`); reading all of them
(93 MB at 10,000 revisions) every night cost 0.45 s. Consecutive revisions share nearly all
their text, so the distinct pieces are few (a few MB at most): they are searched instead, and
the rows are read only when a piece holds a form of the new secret.

A *piece* of a JSON column is its canonical text cut after each `},"` (an object's end and the
next key), then each part after each `,"` (a comma and the opening quote of the next key or
array string); the separator stays with the piece before the cut. Inside a JSON string a `"`
is always escaped, so a separator found inside one ends it: its `"` is the string's closing
quote (`"a,"` or `"x\\","`), and the string, cut after it, stays whole. So every string token's
text, key or value, lies whole in one piece, and a form of a secret found in a row's text is
found in one of its pieces unless the match crosses from one token into the next (which no
redaction acts on: the redactor looks inside strings). A plain text column (user id, e-mail,
name; a report's repository URL) is one piece as it is. So a search of the pieces finds every
row the old search of the rows' text found.

The index is kept complete (a superset of the pieces of every row): pieces of each row written
are added when the transaction commits. It is made exact again (pieces no row holds are
removed) whenever a search hit it or a stored row was rewritten, so a piece that held a secret
learned since leaves it with the rows that held it (`PRAGMA secure_delete` zeroes its bytes on
SQLite); it holds only text the rows held after redaction. Plain SQL only: `dialect` adapts it.
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Hashable, Iterable, Sequence
from typing import Any

from auditor.redact.memory import literal_matcher
from auditor.store.dialect import stream
from auditor.store.schema import SCRUB_INDEX_DDL as DDL

# The stored columns a secret is searched for in: per table, its JSON columns and its plain
# text columns (what `Store.scrub_stored` searched before the index, and still searches on a hit).
INDEXED: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = (
    ("revisions", ("settings",), ("user_id", "user_email", "user_name")),
    ("reports", ("data",), ("repo_url",)),
    ("analytics_days", ("data",), ()),
    ("history_staged", ("settings",), ("user_id", "user_email", "user_name")),
)
SEPARATOR = b',"'
OBJECT_END = b'},"'  # split at first: consecutive revisions share nearly all of these parts
# Each cut is made after its separator, which stays with the piece before it: the `,"` may be a
# string's last character and its closing quote (`"a,"`), and that string stays whole. Canonical
# JSON holds no raw newline (control characters are escaped), so one marks the cuts.
_SEPARATOR_CUT = SEPARATOR + b"\n"
_FEW_FORMS = 48  # up to this many forms, one `in` each beats building an automaton
_WRITE_BATCH = 2_000


def as_bytes(value: Any) -> bytes:
    """A stored value (BLOB or TEXT, from either backend) as bytes."""
    if isinstance(value, bytes):
        return value
    if isinstance(value, bytearray | memoryview):
        return bytes(value)
    return str(value).encode("utf-8", "surrogatepass")


class Splitter:
    """The pieces of canonical JSON values (see the module docstring), each part (between
    `},"`) split only the first time it is met: the settings of consecutive revisions share
    nearly all their parts (at 10,000 revisions, 178,000 parts, 10,371 distinct), so a first
    sync splits a few MB, not 93. The parts met are held up to `limit` bytes, then forgotten
    (met again, split again)."""

    def __init__(self, limit: int = 8 * 2**20) -> None:
        self._met: set[Hashable] = set()
        # The parts `joined` met: first, between two others, last, and a settings' only one.
        self._places: tuple[set[bytes], set[bytes], set[bytes], set[bytes]] = (
            set(),
            set(),
            set(),
            set(),
        )
        self._texts: set[str] = set()  # the plain text columns `plain` met
        self._held = 0
        self._limit = limit

    def _hold(self, size: int) -> None:
        """Count `size` more bytes held; past the limit, forget every part met first."""
        if self._held > self._limit:
            self._met.clear()
            self._texts.clear()
            for met in self._places:
                met.clear()
            self._held = 0
        self._held += size

    def pieces(self, blob: Any) -> list[bytes]:
        """The pieces of `blob`'s parts not met before (the others' are already given)."""
        found: list[bytes] = []
        met = self._met
        parts = as_bytes(blob).split(OBJECT_END)
        last = len(parts) - 1
        for at, part in enumerate(parts):
            key: Hashable = part if at < last else (part,)  # the last one has no `},"`
            if key in met:
                continue
            self._hold(len(part))
            met.add(key)
            text = part + OBJECT_END if at < last else part
            found += text.replace(SEPARATOR, _SEPARATOR_CUT).split(b"\n")
        return found

    def plain(self, texts: Iterable[Any]) -> list[bytes]:
        """The pieces of plain text columns (each one piece, `as_bytes`; None: no value) not
        met before: a history's authors are few."""
        found: list[bytes] = []
        met = self._texts
        for text in texts:
            if type(text) is str:
                if text in met:
                    continue
                self._hold(len(text))
                met.add(text)
            elif text is None:
                continue
            found.append(as_bytes(text))
        return found

    def joined(self, parts: Sequence[bytes]) -> list[bytes]:
        """`pieces(b"{" + b",".join(parts) + b"}")`, from the parts of an object's canonical
        JSON (each a `"key":value` text, `Redactor.redact_canonical_parts`), without the
        whole text: consecutive revisions share nearly all their parts (the same objects, so
        a part met before is known by its hash, kept by the object, and an identity test).

        Every cut falls after a `,"`, and the `,` between two parts and the next part's
        opening quote make one: the text from a part's second byte to the next part's quote
        (with the `{` before the first, the `}` after the last) is cut on its own, as it is
        in the whole text. Its pieces are given the first time the part is met at its place
        (first, between two others, last, alone); the empty piece after a `},"`, as `pieces`
        gives it, with the part that holds that `},"`."""
        if not parts:
            return self.pieces(b"{}")
        found: list[bytes] = []
        last = len(parts) - 1
        first, between, end, alone = self._places
        if last == 0:
            if parts[0] not in alone:
                found += self._cut(b"{" + parts[0] + b"}", alone, parts[0])
            return found
        if parts[0] not in first:
            found += self._cut(b"{" + parts[0] + b',"', first, parts[0])
        for part in itertools.filterfalse(between.__contains__, parts[1:last]):
            found += self._cut(part[1:] + b',"', between, part)
        if parts[last] not in end:
            found += self._cut(parts[last][1:] + b"}", end, parts[last])
        return found

    def _cut(self, text: bytes, met: set[bytes], part: bytes) -> list[bytes]:
        """The pieces of `text`, cut after each `,"`, and the empty one when it holds a
        `},"` (as `pieces` gives it); `part` is met now."""
        self._hold(len(part))
        met.add(part)
        found = text.replace(SEPARATOR, _SEPARATOR_CUT).split(b"\n")
        if not found[-1]:
            found.pop()
        if OBJECT_END in text:
            found.append(b"")
        return found


def _digest(piece: bytes) -> bytes:
    return hashlib.blake2b(piece, digest_size=16).digest()


def stored(db: Any) -> list[bytes]:
    """Every piece in the index."""
    return [as_bytes(r[0]) for r in db.execute("SELECT piece FROM scrub_index")]


def stored_text(db: Any) -> bytes:
    """Every piece in the index, one text (a line each: see `forms_held`)."""
    return b"\n".join(stored(db))


def add(db: Any, pieces: Iterable[bytes]) -> None:
    """Add pieces (those already there are left as they are)."""
    batch: list[tuple[bytes, bytes]] = []
    for piece in pieces:
        batch.append((_digest(piece), piece))
        if len(batch) >= _WRITE_BATCH:
            _insert(db, batch)
            batch = []
    if batch:
        _insert(db, batch)


def _insert(db: Any, rows: list[tuple[bytes, bytes]]) -> None:
    db.executemany(
        "INSERT INTO scrub_index (digest, piece) VALUES (?, ?) ON CONFLICT DO NOTHING", rows
    )


def row_pieces(db: Any, sync_id: int | None = None) -> set[bytes]:
    """The pieces of every stored row (of sync `sync_id`, if given), as the index must hold
    them."""
    found: set[bytes] = set()
    splitter = Splitter()
    where, args = ("", ()) if sync_id is None else (" WHERE sync_id = ?", (sync_id,))
    for table, blobs, texts in INDEXED:
        for row in stream(db, f"SELECT {', '.join(blobs + texts)} FROM {table}{where}", args):
            for blob in row[: len(blobs)]:
                found.update(splitter.pieces(blob))
            found.update(as_bytes(t) for t in row[len(blobs) :] if t is not None)
    return found


def refresh(db: Any) -> None:
    """Make the index exactly the pieces the stored rows hold now (one read of every row):
    pieces no row holds any more are deleted, missing ones added."""
    db.execute(DDL)
    want = row_pieces(db)
    have = set(stored(db))
    gone = [(_digest(p),) for p in have - want]
    for at in range(0, len(gone), _WRITE_BATCH):
        db.executemany("DELETE FROM scrub_index WHERE digest = ?", gone[at : at + _WRITE_BATCH])
    add(db, want - have)


def forms_held(forms: list[str], text: bytes) -> list[str]:
    """The forms that some piece of `text` (pieces joined by newlines) holds; a form found
    across two pieces is reported too (the caller reads the rows then, as before the index)."""
    if not text or not forms:
        return []
    if len(forms) <= _FEW_FORMS:
        return [f for f in forms if f.encode("utf-8", "surrogatepass") in text]
    decoded = text.decode("utf-8", "replace")  # as the rows are searched (`meta_text`)
    return sorted({decoded[s : s + n] for s, n in literal_matcher(forms).spans(decoded)})
