"""History pages read in pieces (`auditor.fetch.pieces`): the same value and the same warnings
and errors as a page parsed whole, and the parts an item did not change shared with the item
before it (the same objects)."""

from __future__ import annotations

import sqlite3
import sys
import tracemalloc
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from auditor.errors import DataError
from auditor.fetch import HISTORY, PlatformClient, pieces, shape
from auditor.fetch.paging import Page
from auditor.fetch.pieces import Pieces
from auditor.fetch.retry import Budget, Fetched, Requester, RetryPolicy
from auditor.redact import Redactor
from auditor.store.database import Store
from auditor.workflows.sync import sync
from tests.conftest import FIXED_NOW, OWNER_TOKEN

WHERE = "GET http://svc.test/h page 1"
# One client for every requester made here: `Requester.decode` never sends a request, and a
# new httpx.Client (its TLS context loaded) took 40 ms, most of the time of the tests below.
_CLIENT = httpx.Client()


def _requester() -> Requester:
    policy = RetryPolicy()
    return Requester(_CLIENT, policy, Redactor(b"k" * 32), Budget(1.0, policy.clock))


def decode(body: bytes, reader: Pieces | None) -> Any:
    """What `Requester.decode` gives for a 200 JSON answer of `body`: the value (typed, see
    `typed`) and the warnings, or the error's message."""
    request = httpx.Request("GET", "http://svc.test/h")
    headers = {"content-type": "application/json"}
    response = httpx.Response(200, headers=headers, content=body, request=request)
    try:
        value, found = _requester().decode(
            Fetched(response, body, request, "GET /h", WHERE), reader
        )
    except DataError as exc:
        return f"error: {exc}"
    return typed(value), found


def typed(value: Any) -> Any:
    """`value` with every type and key order spelled out (`1 == 1.0 == True` for `==`)."""
    if isinstance(value, dict):
        return ("dict", [(k, typed(v)) for k, v in value.items()])
    if isinstance(value, list):
        return ("list", [typed(v) for v in value])
    return (type(value).__name__, repr(value))


# -- generated pages ---------------------------------------------------------------------------

_KEYS = st.sampled_from(["a", "b", "model", "allowlist", "n", "é", "k\n", "x\u2028"])
_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=6)
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_KEYS, inner, max_size=3),
    max_leaves=8,
)


@st.composite
def histories(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Pages of consecutive revisions: each item's settings the previous one's with a leaf
    or two changed, added or removed; now and then a settings or an item that is no object."""
    current: dict[str, Any] = draw(st.dictionaries(_KEYS, _VALUES, max_size=6))
    pages = []
    revision = 100
    for _ in range(draw(st.integers(1, 3))):
        items: list[Any] = []
        for _ in range(draw(st.integers(0, 4))):
            current = dict(current)
            for _ in range(draw(st.integers(0, 2))):
                key = draw(_KEYS)
                if draw(st.booleans()) or key not in current:
                    current[key] = draw(_VALUES)
                else:
                    del current[key]
            odd = draw(st.sampled_from(["", "", "", "", "", "settings", "item"]))
            user = {"id": "u1", "email": "u@corp.example"}
            item: Any = {
                "revision": revision,
                "settings": draw(_SCALARS) if odd == "settings" else current,
                "user": user,
                "updatedAt": 1_790_000_000_000 - revision,
            }
            items.append(draw(_SCALARS) if odd == "item" else item)
            revision -= 1
        pages.append({"changes": items, "pagination": {"hasMore": False, "nextCursor": None}})
    return pages


ODD = [
    "",  # orjson's own writing
    "dup",  # a key twice
    "space",  # a space after a colon
    "escape",  # a key's first character written as a `\u` escape
    "float",  # an integer written `1e5`
    "wide",  # an integer beyond 64 bits
    "utf8",  # a byte that is not UTF-8 in a string
    "surrogate",  # a lone surrogate escape
    "deep",  # nested past the limit
    "deeper",  # nested past orjson's own limit
    "lead",  # whitespace before the body
]


def render(value: Any, odd: str, at: int) -> bytes:
    """`value` as orjson writes it, but for the `at`-th object (in document order, modulo the
    number of objects) written with `odd`'s oddity."""
    count = [0]
    objects = _objects(value)
    target = at % objects if objects else -1

    def write(v: Any) -> bytes:
        if isinstance(v, list):
            return b"[" + b",".join(map(write, v)) + b"]"
        if not isinstance(v, dict):
            return orjson.dumps(v)
        number, count[0] = count[0], count[0] + 1
        members = [orjson.dumps(k) + b":" + write(x) for k, x in v.items()]
        if number == target:
            members = _oddity(v, members, odd)
        return b"{" + b",".join(members) + b"}"

    body = write(value)
    return b" \n" + body if odd == "lead" else body


def _objects(v: Any) -> int:
    if isinstance(v, dict):
        return 1 + sum(map(_objects, v.values()))
    if isinstance(v, list):
        return sum(map(_objects, v))
    return 0


def _oddity(v: dict[str, Any], members: list[bytes], odd: str) -> list[bytes]:
    first = next(iter(v), "z")
    extra = {
        "dup": orjson.dumps(first) + b":0",
        "float": b'"f":1e5',
        "wide": b'"w":18446744073709551617',
        "utf8": b'"u":"a\xffb"',
        "surrogate": b'"u":"\\ud800"',
        "deep": b'"d":' + b"[" * 70 + b"]" * 70,
        "deeper": b'"d":' + b"[" * 1100 + b"]" * 1100,
    }
    if odd in extra:
        return [extra[odd], *members]
    if odd == "space" and members:
        return [members[0].replace(b":", b": ", 1), *members[1:]]
    if odd == "escape" and members:
        escaped = b'"\\u%04x' % ord(first[0]) + orjson.dumps(first)[1 + len(first[0].encode()) :]
        return [escaped + members[0][len(orjson.dumps(first)) :], *members[1:]]
    return members


@given(histories(), st.lists(st.sampled_from(ODD), min_size=3, max_size=3), st.integers(0, 50))
@settings(max_examples=200, deadline=None)
def test_a_page_read_in_pieces_is_the_page_parsed_whole(
    pages: list[dict[str, Any]], odds: list[str], at: int
) -> None:
    reader = Pieces("changes", "settings")
    for value, odd in zip(pages, odds, strict=False):
        body = render(value, odd, at)
        before = reader.pages_read
        assert decode(body, reader) == decode(body, None)
        # In pieces exactly when the page is orjson's writing of a history page's shape
        # (an oddity in an empty object may leave it so: `"z":0` added, say).
        assert (reader.pages_read > before) == _compact_history(body)
        if odd == "":
            assert reader.pages_read > before or not _compact_history(body)


def _compact_history(body: bytes) -> bool:
    try:
        value = orjson.loads(body)
    except ValueError:
        return False
    return (
        orjson.dumps(value) == body
        and not shape.deeper_than(body)
        and isinstance(value, dict)
        and isinstance(value.get("changes"), list)
        and all(isinstance(i, dict) for i in value["changes"])
        and all(isinstance(i.get("settings", {}), dict) for i in value["changes"])
    )


def _nested(levels: int) -> Any:
    value: Any = []
    for _ in range(levels - 1):
        value = [value]
    return value


@pytest.mark.parametrize("place", ["page", "item", "settings"])
@pytest.mark.parametrize("extra", [0, 1])
def test_a_page_nested_to_the_limit_is_read_in_pieces_and_one_level_more_is_not(
    place: str, extra: int
) -> None:
    # The depth is checked on each piece against what is left of the limit at its place (the
    # page is level 1, a member of `pagination` 3, an item's field 4, a settings member 5): a
    # page exactly `MAX_DEPTH` deep is read in pieces, one level more is read whole (the usual
    # path names where), on the page's second item too (its pieces mostly shared with the first).
    deep = _nested(shape.MAX_DEPTH - {"page": 2, "item": 3, "settings": 4}[place] + extra)
    first, second = _item(9), _item(8)
    if place == "item":
        second["deep"] = deep
    elif place == "settings":
        second["settings"] = {**second["settings"], "deep": deep}
    paging: dict[str, Any] = {"hasMore": False, "nextCursor": None}
    page = {"changes": [first, second], "pagination": paging}
    if place == "page":
        paging["deep"] = deep
    body = orjson.dumps(page)
    assert shape.deeper_than(body) == bool(extra)
    reader = Pieces("changes", "settings")
    got = decode(body, reader)
    assert reader.pages_read == 1 - extra
    assert got == decode(body, None)
    if extra:
        assert "nested deeper than 64 levels" in got
    else:
        assert got[0] == typed(page)


# -- sharing -------------------------------------------------------------------------------------


def _page(items: list[dict[str, Any]]) -> bytes:
    return orjson.dumps({"changes": items, "pagination": {"hasMore": True, "nextCursor": "c"}})


def _item(revision: int, **changed: Any) -> dict[str, Any]:
    settings = {"models": {"allowed": ["a", "b"], "n": 1}, "limits": [1, 2.5, True], "name": "x"}
    return {
        "revision": revision,
        "settings": {**settings, **changed},
        "user": {"id": "u"},
        "updatedAt": 1_790_000_000_000 - revision,
    }


def test_unchanged_settings_parts_are_the_same_objects_across_items_and_pages() -> None:
    reader = Pieces("changes", "settings")
    first = reader.read(_page([_item(9), _item(8, name="y")]))
    second = reader.read(
        _page([_item(7, limits=[1, 2.5, 1]), _item(6, limits=[1, 2.5, 1], extra={"k": 1})])
    )
    assert reader.pages_read == 2
    a, b = (i["settings"] for i in first["changes"])
    c, d = (i["settings"] for i in second["changes"])
    assert a["models"] is b["models"] is c["models"] is d["models"]
    assert a["limits"] is b["limits"] and c["limits"] is not b["limits"]  # `True` became `1`
    assert c["limits"] is d["limits"] and c["limits"] == b["limits"]
    assert list(d) == ["models", "limits", "name", "extra"]
    assert first["changes"][0]["user"] is second["changes"][1]["user"]


def _other_shapes() -> list[bytes]:
    """History pages each of a shape other than `_page`'s of `_item`s."""
    moved = {"settings": _item(5)["settings"], **{k: v for k, v in _item(5).items()}}
    return [
        _page([{**_item(5), "extra": 1}]),  # a field not learned
        _page([moved]),  # the fields in another order
        _page([{k: v for k, v in _item(5).items() if k != "user"}]),  # a field missing
        _page([{**_item(5), "settings": None}]),  # the shared object not an object
        _page([{**_item(5), "user": None}, _item(6)]),  # a field of another type
        orjson.dumps({"changes": [_item(5)], "pagination": 3}),  # a member of another type
        orjson.dumps({"pagination": {}, "changes": [_item(5)]}),  # the members moved
        orjson.dumps({"changes": [_item(5)]}),  # a member missing
        orjson.dumps({"changes": [_item(5)], "pagination": {}, "more": "x"}),  # one more
        _page([]),
        _page([{}]),
    ]


@pytest.mark.parametrize("at", range(len(_other_shapes())))
def test_a_page_of_another_shape_than_the_pages_before_is_read_as_any(at: int) -> None:
    # Pages of one shape are split by msgspec in one pass, items' shared objects included
    # (`pieces._Shape`); one of any other shape is refused or rebuilds other bytes, and is
    # read as before: the same value as the page parsed whole, in pieces exactly when a reader
    # that never learns a shape reads it in pieces.
    reader, plain = Pieces("changes", "settings"), Pieces("changes", "settings")
    plain._reshapes = 0
    bodies = [_page([_item(1), _item(2)]), _page([_item(3), _item(4)])]
    bodies += [_page([_item(7 + n)]) if n % 2 else _other_shapes()[at] for n in range(9)]
    for n, body in enumerate(bodies):
        assert decode(body, reader) == decode(body, None) == decode(body, plain)
        assert reader.pages_read == plain.pages_read
        assert n != 1 or reader._shape is not None  # page 2 was split in the shape of page 1
    assert plain._shape is None


def test_a_page_not_read_in_pieces_changes_nothing_remembered() -> None:
    # A piece that does not round trip on page 2 (a key twice in one settings value, after
    # the item's `revision` was read) sends page 2 the usual way: nothing of it is kept (not
    # the fields read before the bad member either), page 3 still shares page 1's parts.
    reader = Pieces("changes", "settings")
    one = reader.read(_page([_item(9)]))
    bad = _page([_item(8, name="z")]).replace(b'"models":{"allowed"', b'"models":{"n":0,"allowed"')
    held = sys.getrefcount(bad)
    assert reader.read(bad) is None
    assert sys.getrefcount(bad) == held  # no piece of page 2 points into it
    three = reader.read(_page([_item(7)]))
    assert three["changes"][0]["settings"]["models"] is one["changes"][0]["settings"]["models"]
    assert three == orjson.loads(_page([_item(7)]))


def test_a_page_refused_on_its_second_item_leaves_nothing_of_its_first() -> None:
    # Page 2's first item (a new field) is read, its second's settings hold `1.0e0` (not
    # orjson's writing): what the first item left (its fields, pointing into page 2) and the
    # second's settings keys are dropped, what page 1 left is kept.
    reader = Pieces("changes", "settings")
    assert reader.read(_page([_item(9)])) is not None
    names = list(reader._names)
    bad = _page([{**_item(8), "extra": "e" * 100}, _item(7, c=1.0)]).replace(b"1.0}", b"1.0e0}")
    assert b'"c":1.0e0}' in bad
    held = sys.getrefcount(bad)
    assert reader.read(bad) is None
    assert sys.getrefcount(bad) == held  # nothing read from page 2 points into it
    assert reader._names == names and "extra" not in reader._fields
    assert reader.pages_read == 1


@pytest.mark.parametrize("where", ["reading", "keeping"])
def test_a_page_interrupted_leaves_nothing_of_it(
    monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    # Ctrl-C while page 2's second item is read, or memory running out while the last item's
    # pieces are kept: the error goes on, and what the reader keeps is page 1's, as it was.
    reader = Pieces("changes", "settings")
    assert reader.read(_page([_item(9)])) is not None
    names = list(reader._names)
    bad = _page([{**_item(8), "extra": "e" * 100}, _item(7, c=1.5)])
    parsed = pieces._parsed

    def interrupted(raw: Any, depth: int) -> Any:
        if bytes(raw) == b"1.5":
            raise KeyboardInterrupt
        return parsed(raw, depth)

    def full(value: Any, limit: int) -> int:
        raise MemoryError

    if where == "reading":
        monkeypatch.setattr(pieces, "_parsed", interrupted)
    else:
        monkeypatch.setattr(pieces, "_size", full)
    held = sys.getrefcount(bad)
    try:
        reader.read(bad)
    except (KeyboardInterrupt, MemoryError):
        pass
    else:
        pytest.fail("not raised")
    assert sys.getrefcount(bad) == held  # nothing read from page 2 points into it
    assert reader._names == names and "extra" not in reader._fields
    monkeypatch.undo()
    three = reader.read(_page([_item(6)]))
    assert three == orjson.loads(_page([_item(6)])) and reader.pages_read == 2


# -- memory ---------------------------------------------------------------------------------------


def test_no_page_is_kept_alive_by_what_the_reader_remembers() -> None:
    # A piece read from a page points into the whole page: what is kept for the next page is
    # a copy, and a field the next item lacks is forgotten.
    reader = Pieces("changes", "settings")
    first = _page([{**_item(9), "extra": 1, "note": "n" * 1000}])
    held = sys.getrefcount(first)
    value = reader.read(first)
    assert value is not None and sys.getrefcount(first) == held
    second = reader.read(_page([_item(8)]))
    assert second["changes"][0]["settings"]["models"] is value["changes"][0]["settings"]["models"]
    assert reader.pages_read == 2


def test_a_listing_of_big_pages_with_fields_that_come_and_go_holds_one_item() -> None:
    # 40 pages of 400 kB, each item with a field the next ones lack: between pages the reader
    # holds the last item (parsed, and a copy of its bytes), not every page (16 MB before).
    reader = Pieces("changes", "settings")
    size = 400_000
    pieces._msgspec()  # its import, once
    held = []
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        for n in range(40):
            item = {**_item(1000 - n), f"extra{n}": n, "note": "x" * size + str(n)}
            body = _page([item])
            value = reader.read(body)
            assert value is not None and value["changes"][0]["note"].endswith(str(n))
            del body, value, item
            held.append(tracemalloc.get_traced_memory()[0] - start)
    finally:
        tracemalloc.stop()
    assert reader.pages_read == 40
    assert max(held) < 3 * size  # the last item's note: parsed, and its bytes


def test_the_last_items_pieces_kept_are_bounded() -> None:
    # A piece past the bound is not kept for the next page: that page parses it again.
    reader = Pieces("changes", "settings")
    big = {"models": {"allowed": ["m" * (1 << 20)]}}  # past the bound, 1 MiB
    one = reader.read(_page([{**_item(9), "settings": big, "user": {"id": "u"}}]))
    two = reader.read(_page([{**_item(8), "settings": big, "user": {"id": "u"}}]))
    assert reader.pages_read == 2 and two == orjson.loads(_page([{**_item(8), "settings": big}]))
    assert two["changes"][0]["settings"]["models"] is not one["changes"][0]["settings"]["models"]
    assert two["changes"][0]["user"] is one["changes"][0]["user"]


def _held_after(pages: Iterator[bytes]) -> int:
    """Most bytes one reader holds (tracemalloc) once each page and its value are dropped."""
    reader = Pieces("changes", "settings")
    pieces._msgspec()  # its import, once
    most = 0
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        for body in pages:
            value = reader.read(body)
            assert value == orjson.loads(body) or value is None
            del body, value
            most = max(most, tracemalloc.get_traced_memory()[0] - start)
    finally:
        tracemalloc.stop()
    return most


_BOUND = 2 << 20  # the 1 MiB kept, the key cache's 1 MiB at most, and slack


def test_a_huge_settings_key_is_not_kept_across_pages() -> None:
    # Its name and how it is written were kept whatever their size (42 MB held for 20 MB).
    assert _held_after(iter([_page([_item(9, **{"k" * 20_000_000: 0})])])) < _BOUND


def test_a_huge_field_name_is_not_kept_across_pages() -> None:
    # Only the field's value was counted, not its name (21 MB held for a 20 MB name).
    assert _held_after(iter([_page([{**_item(9), "f" * 20_000_000: 0}])])) < _BOUND


def test_many_small_fields_growing_page_by_page_are_not_all_kept() -> None:
    # Each page's item has twice the fields of the one before (`"fN":0`, 64,000 at the end):
    # each field's bytes are few, but the entries are many (13 MB held before).
    def pages() -> Iterator[bytes]:
        for n in range(7):
            yield _page([{**_item(9 - n), **{f"f{j}": 0 for j in range(1000 << n)}}])

    assert _held_after(pages()) < _BOUND


def test_a_small_piece_of_many_small_containers_is_counted_as_parsed() -> None:
    # 900 kB of `[{},{},...]` fit the bound as bytes, but its parsed list holds 22 MB.
    item = {**_item(9), "note": [{}] * 300_000}  # 900 kB
    assert _held_after(iter([_page([item])])) < _BOUND


# -- pages pieces cannot pay for -----------------------------------------------------------------


def _settings_page(settings: list[dict[str, Any]]) -> bytes:
    return _page([{**_item(100 - n), "settings": s} for n, s in enumerate(settings)])


@pytest.mark.parametrize(
    "body",
    [
        # a settings object with more top-level keys than pieces pay for (1,000)
        _settings_page([{f"k{j}": j for j in range(1_001)}]),
        # items whose settings share nothing with the item before
        _settings_page([{f"k{i}-{j}": j for j in range(500)} for i in range(10)]),
        # the same keys, in another order each time
        _settings_page([{f"k{(i * 7 + j) % 900}": j for j in range(900)} for i in range(10)]),
    ],
    ids=["many keys", "all new", "moving keys"],
)
def test_a_page_pieces_cannot_pay_for_is_read_whole_with_the_same_value(body: bytes) -> None:
    reader = Pieces("changes", "settings")
    assert reader.read(_page([_item(200)])) is not None
    assert reader.read(body) is None  # the caller reads it whole
    assert decode(body, reader) == decode(body, None)
    assert reader.pages_read == 1
    again = reader.read(_page([_item(199)]))  # what was kept is page 1's
    assert again is not None and reader.pages_read == 2


# -- a hostile page ------------------------------------------------------------------------------


def _service(bodies: list[bytes]) -> httpx.MockTransport:
    def handle(request: httpx.Request) -> httpx.Response:
        page = int(request.url.params.get("cursor", "0"))
        return httpx.Response(
            200, headers={"content-type": "application/json"}, content=bodies[page]
        )

    return httpx.MockTransport(handle)


def _read(bodies: list[bytes]) -> tuple[list[Page], int]:
    """Every page of the history `bodies` make, and how many were read in pieces."""
    client = PlatformClient(
        base_url="http://svc.test",
        app_url=None,
        token="tok-pieces-0123456789",
        transport=_service(bodies),
    )
    with client:
        pages = client.pages(HISTORY)
        got = list(pages)
    assert pages.pieces is not None
    return got, pages.pieces.pages_read


def test_a_key_twice_in_a_settings_value_on_page_3_is_todays_warning(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    bodies = []
    for page in range(4):
        items = [_item(100 - 2 * page - i, name=f"n{page}{i}") for i in range(2)]
        more = {"hasMore": page < 3, "nextCursor": str(page + 1) if page < 3 else None}
        bodies.append(orjson.dumps({"changes": items, "pagination": more}))
    twice = b'"models":{"allowed":[],"allowed"'
    bodies[2] = bodies[2].replace(b'"models":{"allowed"', twice, 1)
    got, read = _read(bodies)
    assert read == 3
    assert [p.duplicates for p in got[:2] + got[3:]] == [(), (), ()]
    (dup,) = got[2].duplicates
    assert (dup.path, dup.key) == (("changes", 0, "settings", "models"), "allowed")
    monkeypatch.setattr(pieces, "ENABLED", False)
    whole, none = _read(bodies)
    assert none == 0 and got == whole


# -- end to end ----------------------------------------------------------------------------------


def _rows(path: Path) -> dict[str, list[Any]]:
    with closing(sqlite3.connect(path)) as db, db:
        tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return {
            t: db.execute(f"SELECT * FROM {t}").fetchall()
            for t in tables
            if t != "syncs"  # when it ran
        }


@pytest.fixture
def both_ways(
    emulator: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[Path, Path, list[int]]]:
    read: list[int] = []
    real = Pieces.read

    def counted(self: Pieces, body: bytes) -> Any:
        value = real(self, body)
        read.append(value is not None)
        return value

    monkeypatch.setattr(Pieces, "read", counted)
    paths = []
    for enabled in (False, True):
        monkeypatch.setattr(pieces, "ENABLED", enabled)
        path = tmp_path / f"{enabled}.db"
        with (
            Store.open(path, fingerprint_key=b"f" * 32) as store,
            PlatformClient(
                base_url=emulator.base_url, app_url=None, token=OWNER_TOKEN, page_size=25
            ) as client,
        ):
            sync(store, client, clock=lambda: FIXED_NOW)
        paths.append(path)
    yield paths[0], paths[1], read


def test_a_sync_read_in_pieces_stores_the_same_rows(
    both_ways: tuple[Path, Path, list[int]],
) -> None:
    whole, in_pieces, read = both_ways
    pages = len(read) // 2
    assert pages > 2 and read == [False] * pages + [True] * pages
    assert _rows(whole) == _rows(in_pieces)
    assert _rows(whole)["revisions"]
