"""The redactor's whole-document check (a document with nothing to redact is handed back as
it is, with its canonical JSON) gives exactly what walking it gives: the same copy, the same
canonical bytes, the same secrets remembered in the same order, document after document."""

from __future__ import annotations

import copy
import operator
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from auditor.common.jsonutil import canonical
from auditor.redact import Redactor

KEY = b"fast-path-test-key"


class _Walking(Redactor):
    """The redactor with the whole-document check switched off: every document is walked."""

    def _unchanged(self, value: Any, option: int) -> bytes | None:
        return None


_PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAq8vLr2pWx7nTb4kYc1mZq8vLr2pWx7nTb4kYc1m"
    "\n-----END RSA PRIVATE KEY-----"
)
_JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ"
    ".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)
# Key names: plain ones, secret names, secret maps, the hosted block and its plain keys, names
# that only look like secrets, and keys that are secrets themselves or need JSON escapes.
_PLAIN_KEYS = st.sampled_from(["a", "b", "n", "rationale", "numerator"])
_KEYS = st.sampled_from(
    [
        "a",
        "b",
        "n",
        "rationale",
        "apiKey",
        "token",
        "password",
        "extraHeaders",
        "env",
        "hosted",
        "cloudRegion",
        "maxTokens",
        "tokenUsage",
        "é",
        'q"uote',
        "back\\slash",
        "line\nbreak",
        "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
    ]
)
_PLAIN = st.sampled_from(["x", "plain text", "ünïcødé ✓ \U0001f600", 'q " \\ \n'])
_STRINGS = st.sampled_from(
    [
        "x",
        "",
        "plain text",
        "apiKey",  # secret names as values (then maybe as keys)
        "env",
        "hosted",
        "a rationale about tokens and secrets, nothing to hide",
        "AKIAIOSFODNN7EXAMPLE",
        "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
        f"token {_JWT} in a sentence",
        _PEM,
        "https://user:hunter2hunter2@example.com/repo.git",
        "https://example.com/repo.git",
        "hunter2hunter2",  # a secret once it was seen under `password`
        "--api-key",  # argv arrays: an option's value is a secret (`["--api-key", X]`)
        "sshpass",
        "-p",
        "login",
        "saw hunter2hunter2 here",
        "${OPENAI_API_KEY}",
        "[secret fp:1a2b3c4d len:40]",
        'quote " and back \\ slash',
        "tab\tnew\nline\u0001ctl",
        "ünïcødé ✓ \U0001f600",
    ]
) | st.text(max_size=6)
_LEAVES = (
    st.none()
    | st.booleans()
    | st.sampled_from([0, 1, -1, 0.0, 1.0, 2.5, 1e300, 2**70])  # 2**70: orjson refuses it
    | _PLAIN
    | _STRINGS
)
_DOCS = st.recursive(
    _LEAVES,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(_PLAIN_KEYS | _PLAIN_KEYS | _KEYS | _STRINGS, inner, max_size=4)
    ),
    max_leaves=12,
)


def _typed(value: Any) -> str:
    """A text that differs when the values, their types or the key order differ."""
    return repr(value)


def _state(redactor: Redactor) -> tuple[Any, ...]:
    memory = redactor.memory
    return (
        memory.learned_since(0),
        memory.generation,
        sorted(memory.unrecalled),
        memory.drain(),
        redactor.stale_secrets(),
    )


def _derived(docs: list[Any], data: st.DataObject) -> list[Any]:
    """Documents that come back whole, or with one value changed, as readiness reports and
    revisions do, so that most of them hold only strings seen before."""
    out = [docs[0]]
    for doc in docs[1:]:
        how = data.draw(st.sampled_from(["new", "same", "changed"]))
        prev = out[-1]
        if how == "same":
            doc = copy.deepcopy(prev)
        elif how == "changed" and isinstance(prev, dict):
            doc = dict(prev)
            doc[data.draw(_KEYS)] = data.draw(_LEAVES | _DOCS)
        out.append(doc)
    return out


@given(st.lists(_DOCS, min_size=1, max_size=8), st.data())
@settings(max_examples=400, deadline=None)
def test_a_document_handed_back_whole_is_what_the_walk_gives(
    docs: list[Any], data: st.DataObject
) -> None:
    fast, walking = Redactor(KEY), _Walking(KEY)
    for doc in _derived(docs, data):
        stream = data.draw(st.sampled_from(["settings", "report", ""]))
        canonical_too = data.draw(st.booleans())
        results = []
        for redactor in (fast, walking):
            mine = copy.deepcopy(doc)
            try:
                if canonical_too:
                    out, body = redactor.redact_canonical(mine, stream=stream)
                else:
                    out, body = redactor.redact_json(mine, stream=stream), b""
            except TypeError as exc:  # an integer past 64 bits has no canonical text
                out, body = None, str(exc).encode()
            results.append((_typed(out), body, _state(redactor)))
        assert results[0] == results[1]


def _both(docs: list[tuple[str, Any]]) -> None:
    """Each (stream, document) through a redactor and a walking one: the same at every step."""
    fast, walking = Redactor(KEY), _Walking(KEY)
    for stream, doc in docs:
        got = [
            (_typed(r.redact_canonical(copy.deepcopy(doc), stream=stream)), _state(r))
            for r in (fast, walking)
        ]
        assert got[0] == got[1]


@pytest.mark.parametrize(
    "docs",
    [
        # a short value under a secret name is a secret too, though too short to remember:
        # the same string seen as a plain value elsewhere does not make it plain
        [("s", {"apiKey": "x1", "a": "x1"})] * 2,
        [("s", {"env": {"HOME": "x1"}, "a": "x1"})] * 2,
        [("s", {"hosted": {"model": "x1"}, "a": "x1"})] * 2,
        [("s", {"a": "x1"}), ("s", {"a": "x1", "extraHeaders": ["x1"]})],
        # a secret name seen as a plain value first, then as a key
        [("s", {"a": "password", "b": "x1"})] * 2
        + [("s", {"password": "x1", "a": "password", "b": "x1"})],
        [("s", {"a": ["env", "x1"]}), ("t", {"a": ["env", "x1"]}), ("u", {"env": {"a": "x1"}})],
        # a secret learned in another stream, in a string memoised as plain before
        [
            ("s", {"a": "saw hunter2hunter2 here"}),
            ("t", {"password": "hunter2hunter2"}),
            ("s", {"a": "saw hunter2hunter2 here"}),
        ],
        # ... and seen first in a third stream (the memo of the string is what is checked)
        [
            ("s", {"a": "saw hunter2hunter2 here"}),
            ("t", {"password": "hunter2hunter2"}),
            ("u", {"a": "saw hunter2hunter2 here"}),
        ],
        # and one pasted as a key
        [
            ("s", {"hunter2hunter2": 1}),
            ("t", {"token": "hunter2hunter2"}),
            ("s", {"hunter2hunter2": 1}),
        ],
    ],
    ids=[
        "secret-name",
        "secret-map",
        "hosted",
        "added-map",
        "name-as-value-then-key",
        "map-name-as-value-then-key",
        "learned-since",
        "learned-since-new-stream",
        "learned-key",
    ],
)
def test_a_document_that_holds_a_secret_is_walked(docs: list[tuple[str, Any]]) -> None:
    _both(docs)


def test_a_report_seen_before_comes_back_as_it_is_with_its_canonical_text() -> None:
    report = {
        "repoUrl": "https://example.com/r.git",
        "report": {
            f"c{i}": {"numerator": i % 2, "denominator": 1, "rationale": "ok"} for i in range(5)
        },
        "score": 0.5,
    }
    redactor = Redactor(KEY)
    first, body = redactor.redact_canonical(report, stream="report")
    redactor.redact_canonical(copy.deepcopy(report), stream="report")  # (not tried after a miss)
    again = copy.deepcopy(report)
    second, body2 = redactor.redact_canonical(again, stream="report")
    assert second is again  # nothing in it to redact: no copy made
    assert body2 == body == canonical(report)
    assert second == first


def test_a_secret_name_or_a_secret_learned_since_still_takes_the_walk() -> None:
    redactor = Redactor(KEY)
    doc = {"name": "Zq8vLr2pWx7nTb4kYc1mQ", "other": "x"}
    assert redactor.redact_json(doc, stream="s") == doc
    assert redactor.redact_json(copy.deepcopy(doc), stream="s") == doc
    # the same strings under a secret name: the value is a secret, whatever the memo says
    secret = {"apiKey": "Zq8vLr2pWx7nTb4kYc1mQ", "other": "x"}
    out = redactor.redact_json(secret, stream="s")
    assert out["apiKey"] == redactor.marker("Zq8vLr2pWx7nTb4kYc1mQ")
    # and the document seen first is now scrubbed of it
    assert redactor.redact_json(copy.deepcopy(doc), stream="s")["name"] == out["apiKey"]


@pytest.mark.parametrize(
    ("how", "between"),
    [
        ("learned on another stream", True),
        ("recalled from the state file", False),
        ("recalled from the state file", True),
    ],
)
def test_a_document_seen_clean_again_after_its_string_became_a_secret_is_redacted(
    how: str, between: bool
) -> None:
    # The same user object comes back (a page read in pieces shares a revision's unchanged
    # user): handed back whole the first time, it must not be handed back whole again once its
    # string is known to be a secret, with or without another document of the stream between.
    redactor = Redactor(KEY)
    user = {"id": "u1", "name": "plainlookingvalue12345"}
    assert redactor.redact_json(user, stream="user") is user
    if how == "learned on another stream":
        redactor.redact_json({"apiKey": "plainlookingvalue12345"}, stream="settings")
    else:
        fingerprint = redactor.memory.fingerprint("plainlookingvalue12345")
        redactor.memory.recall([(fingerprint, len("plainlookingvalue12345"))])
    if between:
        assert redactor.redact_json({"id": "u2"}, stream="user") == {"id": "u2"}
    marker = redactor.marker("plainlookingvalue12345")
    assert redactor.redact_json(user, stream="user") == {"id": "u1", "name": marker}
    out, body = redactor.redact_canonical(user, stream="user")
    assert out == {"id": "u1", "name": marker} and b"plainlooking" not in body


def test_settings_sent_again_unchanged_keep_the_parts_of_their_text() -> None:
    """The parts a settings' canonical JSON is put together from (one per top-level key) are
    kept across documents: settings equal to the previous ones give the same parts, and the
    next settings, one value changed, write that value's part only (the others are the same
    objects, which the scrub index then knows without splitting them again)."""
    redactor = Redactor(KEY)
    first = {"a": 1, "apiKey": "sk-live0123456789abcdefghij", "b": {"c": "x"}}  # walked
    _, blob, parts = redactor.redact_canonical_parts(first, stream="settings")
    assert parts is not None and b"{" + b",".join(parts) + b"}" == blob
    _, again, same = redactor.redact_canonical_parts(copy.deepcopy(first), stream="settings")
    assert again == blob and same is not None
    assert all(map(operator.is_, same, parts))
    _, changed, later = redactor.redact_canonical_parts({**first, "a": 2}, stream="settings")
    assert later is not None and b"{" + b",".join(later) + b"}" == changed
    assert later[0] == b'"a":2' and all(map(operator.is_, later[1:], parts[1:]))


def test_the_parts_given_are_the_redactors_and_cannot_be_changed() -> None:
    """The parts are not copied for the caller: the next settings of the stream are put
    together from them. They are a tuple, so a caller cannot change them, and with them the
    text stored for the next revision (a list was given before)."""
    redactor = Redactor(KEY)
    first = {"a": 1, "apiKey": "sk-live0123456789abcdefghij", "b": {"c": "x"}}  # walked
    _, _, parts = redactor.redact_canonical_parts(first, stream="settings")
    assert parts is not None
    with pytest.raises(TypeError):
        parts[2] = b'"b":"changed"'  # type: ignore[index]
    out, body, _ = redactor.redact_canonical_parts({**first, "a": 2}, stream="settings")
    assert body == canonical(out) and b"changed" not in body


def test_a_string_only_probed_by_the_fast_path_is_never_called_stale() -> None:
    """The fast path checks a document's new strings one by one (in set order, which the hash
    seed decides) and leaves it to the walk at the first one holding a secret: a string it
    checked before that (`hunter2hunter2`, a key, before the URL revealing it) had a memo
    entry no answer was handed out from, and the walk replacing it named the secret stale,
    which a walking redactor did not (a fresh-clone test run failed the property above on
    it). Each hash seed in a process of its own, so both orders are met."""
    import subprocess
    import sys

    code = (
        "import copy\n"
        "from tests.test_redact_fast_path import KEY, Redactor, _state, _typed, _Walking\n"
        "doc = {'a': 'https://user:hunter2hunter2@example.com/repo.git', 'hunter2hunter2': None}\n"
        "got = []\n"
        "for r in (Redactor(KEY), _Walking(KEY)):\n"
        "    out = r.redact_json(copy.deepcopy(doc), stream='settings')\n"
        "    got.append((_typed(out), _state(r)))\n"
        "print(got[0] == got[1])\n"
    )
    root = str(Path(__file__).resolve().parents[1])
    for seed in range(8):
        env = {**os.environ, "PYTHONHASHSEED": str(seed), "PYTHONPATH": root}
        done = subprocess.run(
            [sys.executable, "-c", code], env=env, cwd=root, capture_output=True, text=True
        )
        assert done.stdout.strip() == "True", (seed, done.stdout, done.stderr[-2000:])
