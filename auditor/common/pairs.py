"""(revision, content hash) pairs held compactly: the index of a long history, 40 bytes a pair.

Takes (int, str) pairs, gives a read-only sequence of the same pairs. A run at 100,000 revisions
keeps every stored revision's number and SHA-256 for the evidence appendix and the evaluation
state's history digest: as tuples of an int and a 64-character string that is about 22 MB; as
a number array and the digests' bytes, 4 MB. Hashes that are not 64 lowercase hex digits are
kept as text (the sequence then holds them all as text), so every pair reads back exactly.
"""

from __future__ import annotations

import itertools
import re
from array import array
from collections.abc import Iterable, Iterator, MutableSequence, Sequence
from typing import Any, overload

_HEX64 = re.compile(r"[0-9a-f]{64}")
_HEX = re.compile(r"[0-9a-f]*")
_CHUNK = 4096  # pairs read at once (a list of them at most: the tuples are what is saved)
_WIDTH = 32  # bytes of one SHA-256 digest


class HashPairs(Sequence[tuple[int, str]]):
    """The pairs, in the order given; compares equal to any sequence of the same pairs."""

    __slots__ = ("_digests", "_numbers", "_texts")

    def __init__(self, pairs: Iterable[tuple[int, str]] = ()) -> None:
        self._numbers = array("q")
        self._digests = bytearray()
        self._texts: list[str] | None = None  # set once a hash is not 64 hex digits
        given = iter(pairs)
        while chunk := list(itertools.islice(given, _CHUNK)):
            if self._texts is None:  # the usual case, a chunk at once: 64 hex digits each
                texts = [text for _number, text in chunk]
                if all(type(t) is str and len(t) == 2 * _WIDTH for t in texts):
                    joined = "".join(texts)
                    if _HEX.fullmatch(joined):
                        self._numbers.extend(number for number, _text in chunk)
                        self._digests += bytes.fromhex(joined)
                        continue
            for number, text in chunk:
                self._add(number, text)

    def _add(self, number: int, text: str) -> None:
        self._numbers.append(number)
        if self._texts is None and _HEX64.fullmatch(text):
            self._digests += bytes.fromhex(text)
            return
        if self._texts is None:
            self._texts = [self._hash(i) for i in range(len(self._numbers) - 1)]
            self._digests = bytearray()
        self._texts.append(text)

    def _hash(self, index: int) -> str:
        if self._texts is not None:
            return self._texts[index]
        return self._digests[index * _WIDTH : (index + 1) * _WIDTH].hex()

    def __len__(self) -> int:
        return len(self._numbers)

    @overload
    def __getitem__(self, index: int) -> tuple[int, str]: ...

    @overload
    def __getitem__(self, index: slice) -> list[tuple[int, str]]: ...

    def __getitem__(self, index: int | slice) -> tuple[int, str] | list[tuple[int, str]]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError("HashPairs index out of range")
        return self._numbers[index], self._hash(index)

    def __iter__(self) -> Iterator[tuple[int, str]]:
        if self._texts is not None:
            return zip(self._numbers, self._texts, strict=True)
        return zip(self._numbers, self._hexed(), strict=True)

    def _hexed(self) -> Iterator[str]:
        """The digests as hex text, `_CHUNK` converted at once (not one call per pair, and not
        all at once: at 100,000 revisions that text alone was 6.4 MB at the run's peak)."""
        digests, width, step = self._digests, 2 * _WIDTH, _CHUNK * _WIDTH
        for start in range(0, len(digests), step):
            hexed = digests[start : start + step].hex()
            yield from (hexed[i : i + width] for i in range(0, len(hexed), width))

    def numbers(self) -> Sequence[int]:
        """The revision numbers, in order: a copy, 8 bytes each (a list of them was 4 MB at
        100,000 revisions, held through the evaluation)."""
        return array("q", self._numbers)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, HashPairs):
            return (self._numbers, self._texts, self._digests) == (
                other._numbers,
                other._texts,
                other._digests,
            )
        same = _equal_pairs(self, other)
        return NotImplemented if same is None else same

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return f"HashPairs({list(self)!r})"


def _equal_pairs(pairs: Sequence[tuple[int, Any]], other: object) -> bool | None:
    """`pairs == other` for any other sequence (the same pairs in the same order); None when
    `other` is not a sequence of pairs."""
    if isinstance(other, Sequence) and not isinstance(other, str | bytes):
        return len(other) == len(pairs) and all(a == b for a, b in zip(pairs, other, strict=True))
    return None


def held_numbers(numbers: Sequence[int]) -> Sequence[int]:
    """Revision numbers as an array of 8-byte ones, or as a list when one does not fit: the
    API's run up to 2^63-1 (`fetch.decode`), and a review's proposal, the revision after the
    live one (`workflows.review.proposed_revision`), is 2^63 after the last of them. Numbers
    that all fit are always an array, so equal numbers are held alike (an array never
    compares equal to a list)."""
    numbers = numbers if isinstance(numbers, Sequence) else list(numbers)  # (read twice)
    try:
        return array("q", numbers)
    except OverflowError:
        return list(numbers)


def appended(numbers: MutableSequence[int], number: int) -> MutableSequence[int]:
    """`numbers` with `number` at its end: the same array, or a list of its numbers and then
    `number` when that one is beyond 8 bytes (`held_numbers`)."""
    try:
        numbers.append(number)
    except OverflowError:
        return [*numbers, number]
    return numbers


class RevisionCounts(Sequence[tuple[int, int]]):
    """(revision, count) pairs, 16 bytes a pair: how many rules fail at each revision of the
    history, and how many of those a waiver covers. As a tuple of tuples, 100,000 revisions'
    counts were 9 MB held from the evaluation to the last report. Compares equal to any
    sequence of the same pairs."""

    __slots__ = ("_counts", "_numbers", "ascending")

    def __init__(self, numbers: Sequence[int] = (), counts: Iterable[int] = ()) -> None:
        self._numbers = held_numbers(numbers)
        self._counts = array("q", counts)
        if len(self._numbers) != len(self._counts):
            raise ValueError("a count for each revision")
        #: the revisions in ascending order, as a history gives them (a chart need not sort)
        self.ascending = all(a < b for a, b in itertools.pairwise(self._numbers))

    @classmethod
    def of(cls, pairs: Iterable[tuple[int, int]]) -> RevisionCounts:
        """The counts of (revision, count) pairs."""
        numbers: MutableSequence[int] = array("q")
        counts = array("q")
        for number, count in pairs:
            numbers = appended(numbers, number)
            counts.append(count)
        return cls(numbers, counts)

    @property
    def numbers(self) -> Sequence[int]:
        return self._numbers

    def __len__(self) -> int:
        return len(self._numbers)

    @overload
    def __getitem__(self, index: int) -> tuple[int, int]: ...
    @overload
    def __getitem__(self, index: slice) -> RevisionCounts: ...
    def __getitem__(self, index: int | slice) -> tuple[int, int] | RevisionCounts:
        if isinstance(index, slice):
            return RevisionCounts(self._numbers[index], self._counts[index])
        return self._numbers[index], self._counts[index]

    def __iter__(self) -> Iterator[tuple[int, int]]:
        return zip(self._numbers, self._counts, strict=True)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, RevisionCounts):
            return (self._numbers, self._counts) == (other._numbers, other._counts)
        same = _equal_pairs(self, other)
        return NotImplemented if same is None else same

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return f"RevisionCounts({list(self)!r})"
