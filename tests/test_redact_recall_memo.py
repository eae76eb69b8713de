"""A fingerprint recalled (from the state file) after the redactor saw a string holding its
secret: what it memoised before is not handed back as it was (documents of a stream, free
texts), and a text scrubbed before the recall still counts for `stale_secrets`."""

from __future__ import annotations

import copy

from auditor.redact.redactor import Redactor

KEY = b"m" * 32
S = "plainlookingvalue12345"  # not found by any detector: a secret only once recalled


def _recall(redactor: Redactor, secret: str = S) -> None:
    redactor.memory.recall([(redactor.memory.fingerprint(secret), len(secret))])


def test_a_document_like_the_last_of_its_stream_is_redacted_again_after_a_recall() -> None:
    redactor = Redactor(KEY)
    document = {"password": "hunter2hunter2xx", "note": S}
    assert redactor.redact_json(document, stream="s")["note"] == S
    _recall(redactor)
    out = redactor.redact_json(copy.deepcopy(document), stream="s")
    assert out["note"] == redactor.marker(S)


def test_a_text_redacted_before_a_recall_hides_the_secret_after_it() -> None:
    redactor = Redactor(KEY)
    assert redactor.redact_text("msg " + S) == "msg " + S
    _recall(redactor)
    assert redactor.redact_text("msg " + S) == "msg " + redactor.marker(S)


def test_a_text_scrubbed_before_a_recall_hides_the_secret_after_it() -> None:
    redactor = Redactor(KEY)
    assert redactor.scrub_known("msg " + S) == "msg " + S
    _recall(redactor)
    assert redactor.scrub_known("msg " + S) == "msg " + redactor.marker(S)


def test_a_text_scrubbed_before_a_recall_still_counts_for_stale_secrets() -> None:
    # The text holding `later` was redacted (and maybe stored) before a recall; `later` is
    # learned after it: the store must still be scrubbed of it.
    redactor = Redactor(KEY)
    later = "anotherplainvalue98765"
    assert redactor.redact_text("msg " + later) == "msg " + later
    _recall(redactor)
    redactor.redact_text("another message")  # the recall is seen here
    redactor.register(later)
    assert redactor.stale_secrets() == {later}
