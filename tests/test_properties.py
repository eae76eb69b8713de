"""Properties over generated input (hypothesis, bounded so the suite stays fast): the file
loaders refuse anything with our own errors, never a crash; a JSON Patch of any edit replays
exactly; a history's revisions share only what is the same JSON, types and key order included;
a report never lets a generated string out of its context."""

from __future__ import annotations

import contextlib
import copy
import json
import re
import secrets
import unicodedata
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

import jsonpatch
import orjson
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from report_fixture import build_report_data
from test_report_escaping import HTML_TAGS, RAW_CONTROLS

from auditor.common.escape import html_inline, md_inline, terminal_text, xml_text
from auditor.common.jsonutil import EqualPool, Sharing, canonical, share_equal
from auditor.diff import to_json_patch
from auditor.errors import AuditorError
from auditor.findings import load_waivers
from auditor.policy import load_policies
from auditor.redact import Redactor
from auditor.report import render_html, render_junit, render_markdown
from auditor.workflows.review import load_settings_file

BOUNDED = settings(
    max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)

# Words the loaders look for, so generated documents reach past the first check.
WORDS = [
    "rules",
    "id",
    "title",
    "severity",
    "target",
    "assert",
    "path",
    "equals",
    "gte",
    "in",
    "not",
    "all",
    "any",
    "each",
    "matches",
    "waivers",
    "rule",
    "subject",
    "expires",
    "reason",
    "owner",
    "defaults",
    "enums",
    "version",
    "settings",
    "revision",
    "high",
    "low",
    "2026-01-01",
    "settings.x",
    "$.a",
]


def _values(integers: st.SearchStrategy[int]) -> st.SearchStrategy[Any]:
    scalars = (
        st.none()
        | st.booleans()
        | integers
        | st.floats(allow_nan=False, allow_infinity=False)
        | st.sampled_from(WORDS)
        | st.text(max_size=20)
    )
    return st.recursive(
        scalars,
        lambda inner: (
            st.lists(inner, max_size=4)
            | st.dictionaries(st.sampled_from(WORDS) | st.text(max_size=8), inner, max_size=5)
        ),
        max_leaves=25,
    )


json_values = _values(st.integers(-(10**30), 10**30))  # files may hold numbers JSON cannot
api_values = _values(st.integers(-(2**63), 2**63 - 1))  # what the API and the store carry
yaml_lines = st.lists(
    st.tuples(
        st.integers(0, 3),
        st.sampled_from(WORDS),
        st.sampled_from(["", " ", " - ", " [", " {", " &a", " *a", " !!python/none", " |"]),
        st.sampled_from(WORDS) | st.text(max_size=10),
    ).map(lambda t: f"{'  ' * t[0]}{t[1]}:{t[2]}{t[3]}"),
    max_size=12,
).map("\n".join)
documents = (
    st.text(max_size=200)
    | json_values.map(json.dumps)
    | yaml_lines
    | st.binary(max_size=100).map(lambda b: b.decode("latin-1"))
)


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / f"{secrets.token_hex(6)}.yaml"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    return path


def _only_our_errors(load: Any, path: Path) -> None:
    with contextlib.suppress(AuditorError):  # anything else (TypeError, …) fails the test
        load(path)


REDACTOR = Redactor(b"k" * 32)
LOADERS = {
    "policy": lambda p: load_policies([p]),
    "waivers": load_waivers,
    "settings": lambda p: load_settings_file(p, REDACTOR),
}


@pytest.mark.parametrize("loader", LOADERS)
@BOUNDED
@given(text=documents)
@example(text="?")  # {null: null}: a key that is not text
@example(text='{"a": "\\uD800"}')  # half a UTF-16 pair
@example(text="a: " + "9" * 5000)  # longer than int() converts
def test_loaders_raise_only_our_errors(tmp_path: Path, loader: str, text: str) -> None:
    _only_our_errors(LOADERS[loader], _write(tmp_path, text))


def _edited(doc: Any, draw: Any) -> Any:
    """`doc` after a few random edits (what consecutive revisions look like)."""
    out = copy.deepcopy(doc)
    for _ in range(draw(st.integers(0, 4))):
        if isinstance(out, dict) and out and draw(st.booleans()):
            key = draw(st.sampled_from(sorted(out)))
            out[key] = draw(api_values) if draw(st.booleans()) else _edited(out[key], draw)
        elif isinstance(out, list) and out and draw(st.booleans()):
            del out[draw(st.integers(0, len(out) - 1))]
        elif isinstance(out, dict):
            out[draw(st.sampled_from(WORDS))] = draw(api_values)
        elif isinstance(out, list):
            out.insert(draw(st.integers(0, len(out))), draw(api_values))
        else:
            out = draw(api_values)
    return out


@BOUNDED
@given(data=st.data(), before=api_values)
def test_json_patch_of_any_edit_replays_exactly(data: st.DataObject, before: Any) -> None:
    after = _edited(before, data.draw)
    kept = canonical(before)
    patched = jsonpatch.apply_patch(before, to_json_patch(before, after))
    assert canonical(patched) == canonical(after)  # type-strict: [True] is not [1]
    assert canonical(before) == kept


# Values `==` holds for that JSON tells apart: what a shared object must never stand for.
_LOOKALIKES: list[list[Any]] = [[1, 1.0, True], [0, 0.0, -0.0, False], [2**64, 2**64 + 0.0]]


def _lookalike(doc: Any, draw: Any) -> Any:
    """`doc` with one scalar swapped for an `==`-equal one of another type or sign, or one
    object's keys reordered (the same values)."""
    if isinstance(doc, dict) and doc:
        if draw(st.booleans()):
            return dict(reversed(list(doc.items())))
        key = draw(st.sampled_from(list(doc)))
        return {**doc, key: _lookalike(doc[key], draw)}
    if isinstance(doc, list) and doc:
        at = draw(st.integers(0, len(doc) - 1))
        return [*doc[:at], _lookalike(doc[at], draw), *doc[at + 1 :]]
    for group in _LOOKALIKES:
        if any(type(doc) is type(v) and doc == v for v in group):
            return draw(st.sampled_from(group))
    return doc


def _typed(value: Any) -> Any:
    """A type-strict picture of a JSON value: `1`, `1.0`, `true`, `-0.0` and key order differ."""
    if isinstance(value, dict):
        return ("object", tuple((k, _typed(v)) for k, v in value.items()))
    if isinstance(value, list):
        return ("array", tuple(_typed(v) for v in value))
    return (type(value).__name__, repr(value))


def _shared_with(old: Any, new: Any, keyed: bool = True) -> Iterator[tuple[Any, Any, bool]]:
    """(old, new) values at the same place of both documents, and whether that place is
    reached through object keys only."""
    yield old, new, keyed
    if isinstance(old, dict) and isinstance(new, dict):
        for key in old.keys() & new.keys():
            yield from _shared_with(old[key], new[key], keyed)
    elif isinstance(old, list) and isinstance(new, list):
        for a, b in zip(old, new, strict=False):
            yield from _shared_with(a, b, False)


def _containers(value: Any) -> Iterator[Any]:
    if isinstance(value, dict | list):
        yield value
        for child in value.values() if isinstance(value, dict) else value:
            yield from _containers(child)


@BOUNDED
@given(data=st.data(), before=st.dictionaries(st.sampled_from(WORDS), json_values, max_size=6))
def test_a_revision_shares_only_what_is_the_same_json(data: st.DataObject, before: Any) -> None:
    """`share_equal` (the store's history reader): the next revision's value is exactly what
    was read, type for type and key for key; the previous one is untouched; an object is only
    ever shared at the place it held before; and what is the same is shared."""
    after = _edited(before, data.draw) if data.draw(st.booleans()) else copy.deepcopy(before)
    after = _lookalike(after, data.draw) if data.draw(st.booleans()) else after
    if not isinstance(after, dict):
        after = {"settings": after}
    old, new = _typed(before), _typed(after)
    share_equal(before, after)
    assert _typed(after) == new
    assert _typed(before) == old
    mine = {id(c) for c in _containers(before)}
    placed = {id(b) for a, b, _ in _shared_with(before, after) if a is b}
    assert {id(c) for c in _containers(after)} & mine <= placed
    for a, b, keyed in _shared_with(before, after):
        if keyed and type(a) is type(b) and type(a) in (dict, list) and b is not after:
            assert a is b or _typed(a) != _typed(b) or _unsharable(a), (a, b)


@BOUNDED
@given(data=st.data(), first=st.lists(api_values, max_size=6))
def test_reports_read_together_share_only_what_is_the_same_json(
    data: st.DataObject, first: list[Any]
) -> None:
    """`EqualPool` (the criterion entries of the reports a run reads): each value put through
    it comes back exactly as it was, type for type and key for key (`1`, `1.0` and `true`
    apart, keys in their order), as the very object put through first when they are the same
    JSON, and nothing put through is changed."""
    values = [*first, *(_lookalike(v, data.draw) for v in first), *copy.deepcopy(first)]
    pictures = [_typed(v) for v in values]
    pool = EqualPool()
    shared = [pool.shared(v) for v in values]
    assert [_typed(v) for v in shared] == pictures
    assert [_typed(v) for v in values] == pictures
    for value, got in zip(values, shared, strict=True):
        before = next(v for v in values if _orjson_bytes(v) == _orjson_bytes(value))
        assert got is before


def _orjson_bytes(value: Any) -> bytes:
    """orjson's bytes of a value (what `EqualPool` tells values apart by)."""
    return orjson.dumps(value)


def _sharing_picture(old: Any, new: Any) -> list[tuple[Any, ...]]:
    """Where `new` holds `old`'s very objects: (path, shared?) for each value of `new`."""
    out: list[tuple[Any, ...]] = []

    def walk(was: Any, value: Any, at: tuple[Any, ...]) -> None:
        if isinstance(value, dict):
            items = list(value.items())
            get = (lambda k: was.get(k, None)) if isinstance(was, dict) else (lambda k: None)
        elif isinstance(value, list):
            items = list(enumerate(value))
            get = (
                (lambda i: was[i] if i < len(was) else None)
                if isinstance(was, list)
                else (lambda i: None)
            )
        else:
            return
        for key, child in items:
            other = get(key)
            out.append((*at, key, child is other and isinstance(child, dict | list)))
            if child is not other:
                walk(other, child, (*at, key))

    walk(old, new, ())
    return out


@BOUNDED
@given(data=st.data(), first=st.dictionaries(st.sampled_from(WORDS), json_values, max_size=6))
def test_a_history_read_in_order_shares_what_share_equal_shares(
    data: st.DataObject, first: Any
) -> None:
    """`Sharing` (the store's history reader, each top-level value serialized once) shares
    exactly what `share_equal` shares, revision after revision, and leaves each revision the
    JSON that was read."""
    chain = [first]
    for _ in range(3):
        after = _edited(chain[-1], data.draw) if data.draw(st.booleans()) else chain[-1]
        after = _lookalike(after, data.draw) if data.draw(st.booleans()) else after
        chain.append(after if isinstance(after, dict) else {"settings": after})
    pairwise_docs = [copy.deepcopy(d) for d in chain]
    sharing_docs = [copy.deepcopy(d) for d in chain]
    sharing = Sharing()
    previous: Any = None
    for n, (a, b) in enumerate(zip(pairwise_docs, sharing_docs, strict=True)):
        share_equal(previous, a)
        sharing.share(b)
        assert _typed(b) == _typed(chain[n])
        before = None if n == 0 else pairwise_docs[n - 1]
        assert _sharing_picture(before, a) == _sharing_picture(
            None if n == 0 else sharing_docs[n - 1], b
        )
        previous = a


def _unsharable(value: Any) -> bool:
    """Values orjson cannot write (integers beyond 64 bits, lone surrogates): never shared."""
    try:
        orjson.dumps(value)
    except TypeError:
        return True
    return False


hostile_text = st.text(
    st.characters(codec="utf-8") | st.sampled_from(list("<>&\"'`|[]()@#*_\\\n\r\x1b\u202e")),
    min_size=1,
    max_size=60,
)


@BOUNDED
@given(text=hostile_text)
def test_escapers_keep_text_in_its_context(text: str) -> None:
    md = md_inline(text)
    assert "\n" not in md and "<" not in md and not re.search(r"(?<![\\])[`|]", md)
    html = html_inline(text)
    assert not set("<>\"'`\n") & set(html)
    term = terminal_text(text)
    assert all(c.isprintable() and unicodedata.category(c) != "Cf" for c in term)
    root = ET.fromstring(ET.tostring(ET.Element("x", a=xml_text(text))))
    assert root.get("a") is not None


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: set[str] = set()
        self.attrs: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        self.attrs.update(k for k, _ in attrs)


@settings(max_examples=25, deadline=None)
@given(taint=hostile_text)
def test_reports_never_let_a_string_out_of_its_context(taint: str) -> None:
    data = build_report_data(taint)
    parser = _Tags()
    parser.feed(render_html(data))
    assert parser.tags <= HTML_TAGS
    assert not {a for a in parser.attrs if a.startswith("on") or a in {"src", "srcdoc"}}
    md = render_markdown(data)
    assert {t.lower() for t in re.findall(r"</?([A-Za-z]+)", md)} <= {
        "details",
        "summary",
        "code",
        "b",
        "sub",
    }
    assert not re.search(r"(?<!\\)`", md), "unescaped backtick"
    assert not re.search(r"(?<!\\)\]\(", md), "a link could form"
    assert not RAW_CONTROLS.search(md)
    assert ET.fromstring(render_junit(data)).tag == "testsuites"
