"""The redactor on documents that share the objects a revision did not change (a history page
read in pieces, `auditor.fetch.pieces`): the same redacted copies, canonical texts and secrets
learned, in the same order, as for the same documents parsed apart; a value that is the
previous document's object is not compared or written again."""

from __future__ import annotations

from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from auditor.fetch.pieces import Pieces
from auditor.redact import redactor as redactor_module
from auditor.redact.redactor import Redactor
from tests.test_fetch_pieces import histories, typed

KEY = b"r" * 32
TOKEN = "tok-shared-0123456789abcdef"
SECRETS = st.sampled_from(
    ["sk-live0123456789abcdefghij", TOKEN, "AKIAIOSFODNN7EXAMPLE", "x", "ghp_" + "a1" * 18]
)


def _redacted(items: list[Any], alone: bool = False) -> tuple[list[Any], list[bytes], list[str]]:
    """Each item's settings and user redacted as a sync does (`encode_revision`); `alone`:
    each in a stream of its own (nothing reused from the document before)."""
    redactor = Redactor(KEY, [TOKEN])
    outs, blobs = [], []
    for n, item in enumerate(items):
        stream = f" {n}" if alone else ""
        out, blob = redactor.redact_canonical(item["settings"], stream="settings" + stream)
        user = redactor.redact_json(item["user"], stream="user" + stream)
        outs += [typed(out), typed(user)]
        blobs.append(blob)
    return outs, blobs, redactor.memory.learned_since(0)


@given(
    histories(),
    st.lists(st.tuples(st.integers(0, 30), SECRETS), max_size=4),
    st.lists(st.sampled_from([1, 1.0, True]), min_size=1, max_size=4),
)
@settings(max_examples=150, deadline=None)
def test_shared_documents_are_redacted_as_documents_parsed_apart(
    pages: list[dict[str, Any]], planted: list[tuple[int, str]], ones: list[Any]
) -> None:
    # Every settings holds a list equal by `==` from one revision to the next, but not always
    # the same JSON (`1`, `1.0`, `true`).
    for page in pages:
        for n, item in enumerate(page["changes"]):
            if isinstance(item, dict) and isinstance(item["settings"], dict):
                item["settings"] = {**item["settings"], "ones": [ones[n % len(ones)], 2]}
    # Secrets planted under secret keys and in plain strings (a user's name too), some
    # revisions on.
    items = [i for p in pages for i in p["changes"] if isinstance(i, dict)]
    for at, secret in planted:
        if items:
            item = items[at % len(items)]
            item["user"] = {"id": "u2", "name": f"pasted {secret}"}
            if isinstance(item["settings"], dict):
                item["settings"] = {
                    **item["settings"],
                    "apiKey": secret,
                    "note": f"key {secret} here",
                    "n": {"pin": 1234, "on": True},
                }
    bodies = [orjson.dumps(p) for p in pages]
    reader = Pieces("changes", "settings")
    shared = [reader.read(b) for b in bodies]
    apart = [orjson.loads(b) for b in bodies]
    assert reader.pages_read == sum(
        all(isinstance(i, dict) and isinstance(i["settings"], dict) for i in p["changes"])
        for p in pages
    )

    def items_of(values: list[Any]) -> list[Any]:
        return [i for v in values for i in v["changes"] if isinstance(i, dict)]

    docs = items_of([s if s is not None else a for s, a in zip(shared, apart, strict=True)])
    assert _redacted(docs) == _redacted(items_of(apart)) == _redacted(docs, alone=True)


def test_the_same_user_again_is_not_serialized_again(monkeypatch: Any) -> None:
    user = {"id": "u1", "email": "dev@corp.example", "name": "Dev"}
    redactor = Redactor(KEY, [TOKEN])
    first = redactor.redact_json(user, stream="user")
    calls: list[Any] = []
    real = Redactor._unchanged

    def unchanged(self: Redactor, value: Any, option: int) -> bytes | None:
        calls.append(value)
        return real(self, value, option)

    monkeypatch.setattr(Redactor, "_unchanged", unchanged)
    assert redactor.redact_json(user, stream="user") is user is first
    assert calls == []
    again = dict(user)  # equal, not the same object: looked at again
    assert redactor.redact_json(again, stream="user") is again and calls == [again]
    redactor.register("dev@corp.example")  # learned since: the same object is looked at again
    assert redactor.redact_json(again, stream="user")["email"].startswith("[secret fp:")


def test_a_value_shared_with_the_previous_document_is_not_written_again(
    monkeypatch: Any,
) -> None:
    written: list[Any] = []
    real = redactor_module._texts

    def texts(values: tuple[Any, ...]) -> list[bytes | None]:
        written.extend(values)
        return real(values)

    monkeypatch.setattr(redactor_module, "_texts", texts)
    limits = {"max": 5, "ratio": 0.5, "on": True}
    models = {"allowed": ["a", "b"], "n": 1}
    key = "sk-live0123456789abcdefghij"  # under a secret name: each document is walked
    docs = [{"limits": limits, "models": models, "apiKey": key, "v": n} for n in range(5)]
    docs.append({"limits": {**limits, "max": 6}, "models": models, "apiKey": key, "v": 5})
    redactor = Redactor(KEY, [TOKEN])
    for doc in docs:
        out, _ = redactor.redact_canonical(doc, stream="settings")
        assert out["apiKey"] == redactor.marker(key)
    # the first document's values holding numbers once, then only the one that changed
    assert written == [limits, models, {**limits, "max": 6}]
