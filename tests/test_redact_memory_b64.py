"""A value seen by this process, base64-encoded inside a long stored text, is still found when
`holds_value` rules base64 runs out by what every encoding of a value holds (`b64_cores`)."""

from __future__ import annotations

import base64

import pytest

from auditor.redact.memory import SecretMemory, b64_cores

VALUES = ["hunter2-secret", "sk_live_9x8y7z", "p@ss-wörd-42", "tok_abcdefghij", "123456789012"]
FILLER = " ".join(base64.b64encode(f"nothing here {i}".encode()).decode() for i in range(400))


def _memory() -> SecretMemory:
    memory = SecretMemory(b"k" * 32)
    for value in VALUES:
        assert memory.add(value)
    assert memory.holds_value(FILLER) is False  # long enough: the cores are used from here on
    assert memory._cores is not None
    return memory


@pytest.mark.parametrize("value", VALUES)
@pytest.mark.parametrize("before", ["", "x", "xy", "user:", "a long prefix of bytes "])
@pytest.mark.parametrize("urlsafe", [False, True])
def test_a_value_in_a_base64_run_is_found_whatever_comes_before_it(
    value: str, before: str, urlsafe: bool
) -> None:
    memory = _memory()
    data = (before + value + "?>~").encode()
    run = (base64.urlsafe_b64encode if urlsafe else base64.b64encode)(data).decode().rstrip("=")
    assert memory.holds_value(f"{FILLER} {run} {FILLER}") is True
    assert memory.holds_value(f"{FILLER} https://host/acme/{run} {FILLER}") is True


def test_base64_of_other_text_holds_no_value() -> None:
    memory = _memory()
    other = base64.b64encode(b"hunter3-secret sk_live_9x8y7Z").decode()
    assert memory.holds_value(f"{FILLER} {other} {FILLER}") is False


def test_every_alignment_has_a_core() -> None:
    assert b64_cores("abcdef") == ["YWJjZGVm", "YmNk", "Y2Rl"]
    assert b64_cores("abcd") == []
