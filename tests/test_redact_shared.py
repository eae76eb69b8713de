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


def _redacted(docs: list[Any]) -> tuple[list[Any], list[bytes], list[str]]:
    redactor = Redactor(KEY, [TOKEN])
    outs, blobs = [], []
    for doc in docs:
        out, blob = redactor.redact_canonical(doc, stream="settings")
        outs.append(typed(out))
        blobs.append(blob)
    return outs, blobs, redactor.memory.learned_since(0)


@given(histories(), st.lists(st.tuples(st.integers(0, 30), SECRETS), max_size=4))
@settings(max_examples=150, deadline=None)
def test_shared_documents_are_redacted_as_documents_parsed_apart(
    pages: list[dict[str, Any]], planted: list[tuple[int, str]]
) -> None:
    # Secrets planted under secret keys and in plain strings, some revisions on.
    items = [i for p in pages for i in p["changes"] if isinstance(i, dict)]
    for at, secret in planted:
        if items:
            item = items[at % len(items)]
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

    def settings_of(values: list[Any]) -> list[Any]:
        return [i["settings"] for v in values if v for i in v["changes"] if isinstance(i, dict)]

    docs = settings_of([s if s is not None else a for s, a in zip(shared, apart, strict=True)])
    assert _redacted(docs) == _redacted(settings_of(apart))


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
