"""The stored history's (revision, content hash) index, held compactly (issue 13): it reads
back exactly the pairs it was given, whatever the hashes look like."""

from __future__ import annotations

import hashlib

import pytest

from auditor.common.pairs import HashPairs, RevisionCounts

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
    assert list(held.numbers()) == [n for n, _ in pairs]
    assert held == pairs and held == tuple(pairs) and held == HashPairs(pairs)
    if pairs:
        assert held[-1] == pairs[-1]
        assert held != pairs[:-1]
        with pytest.raises(IndexError):
            held[len(pairs)]


def test_revision_counts_read_as_the_pairs_they_hold() -> None:
    """How many rules fail at each revision, 16 bytes a pair (as tuples, 100,000 revisions'
    counts were 9 MB held to the last report): equal to the same pairs as tuples, either way
    round, sliced as a tuple is."""
    pairs = tuple((n, n % 7) for n in range(3, 3000, 3))
    counts = RevisionCounts([n for n, _ in pairs], [c for _, c in pairs])
    assert counts == pairs and pairs == counts and counts == list(pairs)
    assert counts != pairs[:-1] and counts != (*pairs[:-1], (2997, 99))
    assert list(counts) == list(pairs) and len(counts) == len(pairs)
    assert counts[0] == (3, 3) and counts[-1] == pairs[-1]
    assert counts[10:20] == pairs[10:20] and isinstance(counts[10:20], RevisionCounts)
    assert RevisionCounts.of(pairs) == counts and hash(RevisionCounts.of(pairs)) == hash(pairs)
    assert not RevisionCounts() and RevisionCounts() == ()
    assert counts.ascending and RevisionCounts().ascending
    assert not RevisionCounts([1, 3, 2], [0, 0, 0]).ascending  # a chart sorts these
    assert not RevisionCounts.of([(1, 0), (1, 2)]).ascending
    assert not counts[::-1].ascending and counts[::-1] == pairs[::-1]
    with pytest.raises(ValueError, match="a count for each"):
        RevisionCounts([1, 2], [0])
