"""The stored history's (revision, content hash) index, held compactly (issue 13): it reads
back exactly the pairs it was given, whatever the hashes look like."""

from __future__ import annotations

import hashlib

import pytest

from auditor.common.pairs import HashPairs

HEX = [(1, "0" * 64), (2, "ab" * 32), (5, "f" * 64), (9, "0123456789abcdef" * 4)]
# more pairs than are read (and turned into text) at once: 4,096, and then some
MANY = [(n, hashlib.sha256(str(n).encode()).hexdigest()) for n in range(1, 10_001)]


@pytest.mark.parametrize(
    "pairs",
    [
        [],
        HEX,
        [*HEX, (10, "not-a-sha256")],  # one odd hash: all are then kept as text
        [(3, "AB" * 32), *HEX],  # upper case is not the stored form: kept as given
        [(7, "")],
        MANY,
        [*MANY[:5000], (5001, "not-a-sha256"), *MANY[5001:]],
    ],
    ids=["empty", "hex", "odd-last", "odd-first", "empty-hash", "many", "many-odd"],
)
def test_pairs_read_back_exactly(pairs: list[tuple[int, str]]) -> None:
    held = HashPairs(pairs)
    assert list(held) == pairs
    assert len(held) == len(pairs)
    assert [held[i] for i in range(len(pairs))] == pairs
    assert held[1:3] == pairs[1:3] and held[:0] == []
    assert held.numbers() == [n for n, _ in pairs]
    assert held == pairs and held == tuple(pairs) and held == HashPairs(pairs)
    if pairs:
        assert held[-1] == pairs[-1]
        assert held != pairs[:-1]
        with pytest.raises(IndexError):
            held[len(pairs)]
