"""The scrub index (`auditor.store.scrubindex`): a secret new to the state file is searched for
in the distinct pieces of stored text, and stored rows are read only when a piece holds it; the
rows end exactly as a search of every row leaves them, and the index never keeps a secret."""

from __future__ import annotations

import base64
import hashlib
import json
import tempfile
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from pgcluster import raw_sql, stored_bytes

from auditor.common.jsonutil import canonical
from auditor.errors import StoreError
from auditor.fetch.decode import to_report, to_revision
from auditor.redact import Redactor
from auditor.store import scrubindex
from auditor.store.database import Store

T0 = datetime(2026, 10, 1, 12, 0, tzinfo=UTC)
LATER = "plainwordlatersecretvalue"  # no detector sees it: only memory does, once learned
KEY = b"k" * 32


@pytest.fixture(params=["sqlite", "postgres"])
def state_path(request: pytest.FixtureRequest, tmp_path: Path) -> Path | str:
    """Where the store lives: an SQLite file, or a fresh PostgreSQL database's URL."""
    if request.param == "sqlite":
        return tmp_path / "state.db"
    return str(request.getfixturevalue("pg_url"))


def _raw(rev: int, note: str, name: str = "Ann") -> dict[str, Any]:
    return {
        "revision": rev,
        "settings": {"notes": {"text": note, "n": rev}, "model": "m1"},
        "user": {"id": "u1", "email": "a@b.c", "name": name},
        "updatedAt": f"2026-10-{rev:02d}T12:00:00Z",
    }


def _sync(
    store: Store,
    raws: list[dict[str, Any]],
    learned: tuple[str, ...] = (),
    later: tuple[str, ...] = (),
) -> int:
    """One sync as `workflows.sync` makes it: rows, then the scrub, the memory, the record.
    `learned` secrets are found before the rows are redacted, `later` ones after."""
    with store.transaction():
        sync_id = store.begin_sync(T0, "https://api")
        for value in learned:
            store.register_secret(value)
        for raw in raws:
            rev = to_revision(raw, store.ingest_redactor(), "default", "$")
            store.ingest_revision(rev, sync_id, T0)
        for value in later:
            store.register_secret(value)
        fixed = store.scrub_stored()
        store.remember_secrets()
        store.finish_sync(sync_id, T0, revisions_new=len(raws), reports_new=0, pages=1)
    return fixed


def _pieces(store: Store) -> list[bytes]:
    return scrubindex.stored(store._db)


def _rows_read(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The forms each search of the stored rows looked for (and the one sync it searched)."""
    searches: list[Any] = []
    original = Store._scrub_rows_holding

    def spy(
        self: Store, forms: list[str], before_sync: int | None, only_sync: int | None = None
    ) -> int:
        searches.append(forms if only_sync is None else (forms, only_sync))
        return original(self, forms, before_sync, only_sync)

    monkeypatch.setattr(Store, "_scrub_rows_holding", spy)
    return searches


def test_a_secret_no_stored_piece_holds_reads_no_stored_row(
    state_path: Path | str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The nightly case: a secret new to the file, in no earlier row. Its forms are looked up
    in the index alone; no stored row is read."""
    with Store.open(state_path) as store:
        _sync(store, [_raw(r, f"note {r}") for r in range(1, 6)])
    searches = _rows_read(monkeypatch)
    with Store.open(state_path) as store:
        assert _sync(store, [_raw(6, "note 6")], learned=(LATER,)) == 0
    assert searches == []


def test_a_value_stored_in_plain_is_scrubbed_when_a_later_sync_learns_it(
    state_path: Path | str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Sync 1 stores a value in plain text (a note, a user name) that sync 2 learns as a
    secret: found through the index, scrubbed from sync 1's rows, and gone from the index
    and from every byte of the store."""
    with Store.open(state_path) as store:
        _sync(store, [_raw(1, f"see {LATER} here"), _raw(2, "nothing", name=LATER)])
        assert any(LATER.encode() in p for p in _pieces(store))
    searches = _rows_read(monkeypatch)
    with Store.open(state_path) as store:
        assert _sync(store, [_raw(3, "other")], learned=(LATER,)) == 2
        marker = store.redactor.marker(LATER)
        first, second = store.get_revision(1), store.get_revision(2)
        assert first is not None and second is not None
        assert first.settings["notes"]["text"] == f"see {marker} here"
        assert second.user.name == marker
        assert not [p for p in _pieces(store) if LATER.encode() in p]
        assert any(marker.encode() in p for p in _pieces(store))
    assert searches == [[LATER]]  # the rows were searched for the one form the index held
    assert LATER.encode() not in stored_bytes(state_path)


def test_a_secret_found_after_a_row_of_its_own_sync_held_it_reads_that_sync_only(
    state_path: Path | str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pages come newest first: a secret found in an older revision of the page may sit in a
    newer one already redacted. Only the rows of this sync are read for it when no earlier
    row holds it; it leaves them and the index."""
    with Store.open(state_path) as store:
        _sync(store, [_raw(r, f"note {r}") for r in range(1, 4)])
    searches = _rows_read(monkeypatch)
    with Store.open(state_path) as store:
        fixed = _sync(store, [_raw(4, f"uses {LATER}"), _raw(5, "n")], later=(LATER,))
        assert fixed == 1
        stored = store.get_revision(4)
        assert stored is not None
        assert stored.settings["notes"]["text"] == f"uses {store.redactor.marker(LATER)}"
        assert not [p for p in _pieces(store) if LATER.encode() in p]
        assert b'text":"note 1"}}' in b"\n".join(_pieces(store))
    assert searches == [([LATER], 2)]
    assert LATER.encode() not in stored_bytes(state_path)


def test_every_encoded_form_in_a_stored_piece_is_found(tmp_path: Path) -> None:
    """URL-encoded, base64 and JSON-escaped copies are pieces' text too."""
    value = 'quote"d/plus+later value'
    forms = [
        urllib.parse.quote(value, safe=""),
        base64.b64encode(value.encode()).decode(),
        json.dumps(value)[1:-1],
    ]
    with Store.open(tmp_path / "s.db") as store:
        _sync(store, [_raw(i + 1, f"x {form} y") for i, form in enumerate(forms)])
    with Store.open(tmp_path / "s.db") as store:
        assert _sync(store, [_raw(9, "n")], learned=(value,)) == 3
        texts = [str(r.settings) for r in store.iter_revisions()]
    assert not [t for t in texts for f in forms if f in t]
    data = (tmp_path / "s.db").read_bytes()
    assert not [f for f in forms if f.encode() in data]


def test_reports_and_analytics_are_indexed_too(state_path: Path | str) -> None:
    with Store.open(state_path) as store, store.transaction():
        sync_id = store.begin_sync(T0, "https://api")
        raw = {
            "reportId": "r1",
            "repoUrl": f"https://g/{LATER}",
            "createdAt": 1000,
            "report": {"x": {"rationale": f"uses {LATER}"}},
        }
        store.ingest_report(to_report(raw, store.ingest_redactor(), "$"), sync_id, T0)
        store.ingest_analytics("2026-10-01", "tools", {"top": [f"{LATER}-tool"]}, sync_id)
        store.finish_sync(sync_id, T0, revisions_new=0, reports_new=1, pages=1)
    with Store.open(state_path) as store:
        assert _sync(store, [], learned=(LATER,)) == 2  # the report and the analytics row
        assert not [p for p in _pieces(store) if LATER.encode() in p]
    assert LATER.encode() not in stored_bytes(state_path)


def _as_older_release(state_path: Path | str) -> None:
    """The store as this auditor's previous release left it: schema 3, no index."""
    raw_sql(state_path, "DROP TABLE scrub_index")
    raw_sql(state_path, "DELETE FROM meta WHERE key = 'scrub_index'")
    raw_sql(state_path, "UPDATE meta SET value = ? WHERE key = 'schema_version'", (b"3",))


def test_a_store_made_before_the_index_gains_it_on_its_first_writing_open(
    state_path: Path | str,
) -> None:
    with Store.open(state_path) as store:
        _sync(store, [_raw(1, f"see {LATER} here"), _raw(2, "plain note")])
    _as_older_release(state_path)
    with pytest.raises(StoreError, match="open it once for writing"):
        Store.open(state_path, readonly=True)  # as for every schema step
    with Store.open(state_path) as store:  # migrated and filled
        assert b'text":"plain note"}}' in b"\n".join(_pieces(store))
        assert _sync(store, [_raw(3, "n")], learned=(LATER,)) == 1
    assert LATER.encode() not in stored_bytes(state_path)


def test_rows_another_writer_synced_are_indexed_again(state_path: Path | str) -> None:
    """A sync the index did not see (a row written behind this auditor's back, by a sync it
    did not record) makes it read the rows again on opening, so the row is still searched."""
    with Store.open(state_path) as store:
        _sync(store, [_raw(1, "n")])
        body = b'{"notes":{"text":"by another writer ' + LATER.encode() + b'"}}'
    raw_sql(state_path, "INSERT INTO syncs (started, base_url) VALUES ('x', 'y')")
    raw_sql(
        state_path,
        "INSERT INTO revisions VALUES (2, 'default', ?, 'u', 'e', 'n', ?, ?, 2)",
        (T0.isoformat(), body, hashlib.sha256(body).hexdigest()),
    )
    with Store.open(state_path) as store:
        assert _sync(store, [_raw(3, "n")], learned=(LATER,)) == 1
    assert LATER.encode() not in stored_bytes(state_path)


def test_a_rewritten_rows_old_pieces_leave_the_index(tmp_path: Path) -> None:
    """A row redacted again (a secret learned since) takes its old pieces out of the index,
    as out of the file's bytes (zeroed where they were)."""
    path = tmp_path / "s.db"
    with Store.open(path) as store:
        _sync(store, [_raw(1, f"a {LATER}"), _raw(2, f"b {LATER}")])
    with Store.open(path) as store:
        before = set(_pieces(store))
        _sync(store, [], learned=(LATER,))
        after = set(_pieces(store))
        marker = store.redactor.marker(LATER)
    assert {p for p in before - after} == {p for p in before if LATER.encode() in p} and len(
        before - after
    ) == 2
    assert {p for p in after - before if marker.encode() in p}
    assert LATER.encode() not in path.read_bytes()


def test_a_failed_sync_leaves_the_index_as_it_was(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    with Store.open(path) as store:
        _sync(store, [_raw(1, "first")])
        before = sorted(_pieces(store))
        with pytest.raises(RuntimeError), store.transaction():
            sync_id = store.begin_sync(T0, "https://api")
            store.ingest_revision(
                to_revision(_raw(2, "second"), store.ingest_redactor(), "default", "$"),
                sync_id,
                T0,
            )
            raise RuntimeError("the API went away")
        assert sorted(_pieces(store)) == before
        _sync(store, [_raw(2, f"second {LATER}")])
        assert any(LATER.encode() in p for p in _pieces(store))


# -- the index searched == every row searched, on random histories ------------------------------

_WORDS = ["alpha", "beta", "gamma", "x", "-", " ", "/", ",", '"', "\\", "é", "+", "%", ":"]
_CANDIDATES = ["orangebattery1", "horse,staple9", 'qu"ote-secret', "back\\slash77", "ünïcode-pw"]


def _encode(value: str, how: int) -> str:
    if how == 1:
        return urllib.parse.quote(value, safe="")
    if how == 2:
        return base64.b64encode(value.encode()).decode()
    if how == 3:
        return json.dumps(value)[1:-1]
    return value


_leaf = st.one_of(
    st.lists(st.sampled_from(_WORDS), min_size=1, max_size=4).map("".join),
    st.tuples(
        st.sampled_from(_WORDS),
        st.sampled_from(_CANDIDATES),
        st.integers(0, 3),
        st.sampled_from(_WORDS),
    ).map(lambda t: t[0] + _encode(t[1], t[2]) + t[3]),
)
_settings = st.dictionaries(
    st.sampled_from(["a", "b", "c", 'k"ey', "d,e"]),
    st.one_of(_leaf, st.integers(0, 9), st.lists(_leaf, max_size=3)),
    max_size=4,
)
_syncs = st.lists(
    st.tuples(
        st.lists(st.tuples(_settings, _leaf), min_size=0, max_size=3),
        st.lists(st.sampled_from(_CANDIDATES), max_size=2, unique=True),
        st.booleans(),  # the secrets are found after the sync's rows were redacted
    ),
    min_size=1,
    max_size=4,
)


def _history(path: Path, syncs: list[Any], *, indexed: bool) -> tuple[list[Any], list[int]]:
    """Run the syncs on a new store; give every stored row and each sync's rows fixed."""
    fixed, number = [], 0
    for revisions, learned, late in syncs:
        raws = []
        for settings_, name in revisions:
            number += 1
            raws.append({**_raw(number % 28 + 1, ""), "revision": number, "settings": settings_})
            raws[-1]["user"]["name"] = name
        with Store.open(path, fingerprint_key=KEY) as store:
            found = tuple(learned)
            fixed.append(_sync(store, raws, () if late else found, found if late else ()))
    with Store.open(path, fingerprint_key=KEY) as store:
        rows = [(r.settings, r.user, r.content_hash) for r in store.iter_revisions()]
        if indexed:  # complete: every stored piece is in the index
            assert scrubindex.row_pieces(store._db) <= set(_pieces(store))
    return rows, fixed


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_syncs)
def test_searching_the_index_scrubs_what_searching_every_row_did(syncs: list[Any]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        indexed, fixed = _history(Path(folder) / "indexed.db", syncs, indexed=True)
        event(f"earlier rows scrubbed: {sum(fixed[1:]) > 0}")
        with _without_index():
            scanned, _ = _history(Path(folder) / "scanned.db", syncs, indexed=False)
    assert indexed == scanned


def _no_index(store: Store, *, readonly: bool) -> None:
    store._index_live = False


@contextmanager
def _without_index() -> Iterator[None]:
    """Every search reads the rows, as before the index (the index is never trusted)."""
    original = Store.build_scrub_index
    Store.build_scrub_index = _no_index  # type: ignore[method-assign]
    try:
        yield
    finally:
        Store.build_scrub_index = original  # type: ignore[method-assign]


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.text(max_size=12),
    lambda kids: (
        st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=8), kids, max_size=4)
    ),
    max_leaves=25,
)


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        for k, v in value.items():
            yield k
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)
    elif isinstance(value, str):
        yield value


@settings(max_examples=300, deadline=None)
@given(st.lists(_JSON, min_size=1, max_size=6), st.integers(min_value=0, max_value=64))
def test_every_string_of_every_row_lies_whole_in_one_piece(docs: list[Any], limit: int) -> None:
    """The index's promise: each key and string value of a row, as the row's JSON writes it
    (between its quotes), is inside one piece, whichever rows came before it in the transaction
    (a part met before is not split again; past `limit` bytes the parts met are forgotten)."""
    splitter = scrubindex.Splitter(limit)
    pieces: set[bytes] = set()
    for doc in docs:
        blob = canonical(doc)
        pieces.update(splitter.pieces(blob))
        for text in _strings(doc):
            token = orjson.dumps(text)[1:-1]  # as the row writes it, between its quotes
            assert any(token in p for p in pieces), (text, blob)


@pytest.mark.parametrize("secret", ["pw-ending-in-a-comma,", 'pw-with-a-quote-then-comma",'])
def test_a_secret_ending_where_a_piece_is_cut_is_still_scrubbed_from_earlier_rows(
    state_path: Path | str, secret: str
) -> None:
    """A value ending in `,` (or `},`) at the end of a stored string puts the cut's separator
    right before the string's closing quote: the piece before the cut keeps the whole string,
    so a secret learned later is still found there and scrubbed from the row."""
    with Store.open(state_path, fingerprint_key=KEY) as store:
        _sync(store, [_raw(1, "n"), _raw(2, f"pasted {secret}")])
    with Store.open(state_path, fingerprint_key=KEY) as store:
        assert _sync(store, [_raw(3, "n")], learned=(secret,)) == 1
    escaped = orjson.dumps(secret)[1:-1]
    assert escaped not in stored_bytes(state_path)


@pytest.mark.parametrize("piece", [12345, "text"])
def test_a_piece_stored_as_another_type_is_searched_as_text(tmp_path: Path, piece: Any) -> None:
    """A piece SQLite holds as a number or text (a file edited by hand) is read as the text
    it is, like every stored value, not a Python error."""
    path = tmp_path / "s.db"
    with Store.open(path, fingerprint_key=KEY) as store:
        _sync(store, [_raw(1, "n"), _raw(2, f"pasted {LATER}")])
    raw_sql(
        path,
        "UPDATE scrub_index SET piece = ? WHERE digest = (SELECT MIN(digest) FROM scrub_index)",
        (piece,),
    )
    with Store.open(path, fingerprint_key=KEY) as store:
        assert _sync(store, [_raw(3, "n")], learned=(LATER,)) == 1
    assert LATER.encode() not in stored_bytes(path)


def test_overlapping_secrets_learned_later_are_scrubbed_from_earlier_rows_as_one_marker(
    state_path: Path | str,
) -> None:
    """A row stored before either secret was known holds `alpha-secret-1-beta-x`; once both
    are learned, the row is scrubbed again with no part of either left in clear."""
    text = "pasted alphaplainsecretvalue1-betaplainsecretvalue"
    first, second = "alphaplainsecretvalue1", "plainsecretvalue1-betaplainsecretvalue"
    with Store.open(state_path, fingerprint_key=KEY) as store:
        _sync(store, [_raw(1, "n"), _raw(2, text)])
    with Store.open(state_path, fingerprint_key=KEY) as store:
        assert _sync(store, [_raw(3, "n")], learned=(first, second)) == 1
    stored = stored_bytes(state_path)
    assert b"betaplain" not in stored and b"alphaplain" not in stored


# -- the pieces of a settings, from the parts the redactor put its text together from ----------

_PART_KEYS = st.sampled_from(["a", "b", "m", 'k"ey', "d,e", 'z},"', "zz"])
_PART_VALUES = st.recursive(
    st.none() | st.integers(0, 9) | _leaf,
    lambda kids: st.lists(kids, max_size=3) | st.dictionaries(_PART_KEYS, kids, max_size=3),
    max_leaves=8,
)


@st.composite
def _streams(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Consecutive settings as a history page read in pieces gives them: each the one before
    with a value or two changed, added or removed, the others the same objects."""
    current: dict[str, Any] = draw(st.dictionaries(_PART_KEYS, _PART_VALUES, max_size=5))
    docs = [current]
    for _ in range(draw(st.integers(0, 6))):
        current = dict(current)
        for key in draw(st.lists(_PART_KEYS, max_size=2)):
            if draw(st.booleans()) or key not in current:
                current[key] = draw(_PART_VALUES)
            else:
                del current[key]
        docs.append(current if draw(st.integers(0, 4)) else dict(docs[-1]))  # or the same again
    return docs


@settings(max_examples=300, deadline=None)
@given(_streams(), st.sampled_from([0, 40, 2**20]), st.sampled_from(["", *_CANDIDATES[:2]]))
def test_a_settings_split_from_its_parts_gives_the_pieces_of_its_text(
    docs: list[dict[str, Any]], limit: int, learned: str
) -> None:
    """What a sync indexes for its new revisions (`Splitter.joined`, from the parts the
    redactor wrote each settings' JSON from) is what splitting every stored text gives
    (`Splitter.pieces`, which `refresh` and `row_pieces` use): the same pieces, the empty one
    included, whichever parts were met before (and forgotten past `limit` bytes)."""
    redactor = Redactor(KEY)
    if learned:
        redactor.register(learned)
    from_parts, from_text = scrubindex.Splitter(limit), scrubindex.Splitter(limit)
    joined: set[bytes] = set()
    split: set[bytes] = set()
    for doc in docs:
        out, blob, parts = redactor.redact_canonical_parts(doc, stream="settings")
        assert blob == canonical(out)
        event(f"parts given: {parts is not None}")
        if parts is not None:
            assert b"{" + b",".join(parts) + b"}" == blob
            joined.update(from_parts.joined(parts))
        else:
            joined.update(from_parts.pieces(blob))
        split.update(from_text.pieces(blob))
    assert joined == split
