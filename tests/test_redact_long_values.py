"""A long value of many short words (`a-a-a-…`, 4 MB in a reviewed file) is redacted in memory
that does not grow with its words: reviewing one took 416 MB (the list and set of its 4 million
word boundaries, tried for remembered fingerprints; the list of its 2 million words, tried as a
key name), 1.6 GB projected at the 16 MB input limit. Peak Python allocations are counted
(tracemalloc), not time."""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable
from typing import Any

from auditor.redact.memory import SecretMemory
from auditor.redact.names import is_secret_key, names_a_secret

TEXT = "a-" * 500_000  # 1 MB, a million boundaries, half a million words


def peak_mb(call: Callable[[], Any]) -> float:
    tracemalloc.start()
    try:
        call()
        return tracemalloc.get_traced_memory()[1] / 1e6
    finally:
        tracemalloc.stop()


def test_finding_remembered_secrets_in_a_long_text_does_not_list_its_boundaries() -> None:
    memory = SecretMemory(b"key")
    memory.recall([(SecretMemory(b"key").fingerprint("hunter2hunter2"), 14)])  # a state's
    assert memory.find("a-a hunter2hunter2-a") == {"hunter2hunter2"}
    assert peak_mb(lambda: memory.find(TEXT)) < 8  # was 70 MB


def test_a_long_text_is_judged_as_a_key_name_without_listing_its_words() -> None:
    assert peak_mb(lambda: is_secret_key.__wrapped__(TEXT)) < 8  # was 33 MB
    assert peak_mb(lambda: names_a_secret.__wrapped__(TEXT)) < 8
    assert is_secret_key.__wrapped__(TEXT + "Password") is True
    assert is_secret_key.__wrapped__(TEXT + "PasswordMaxAgeTokens") is False
