"""Names told apart: the first of `base`, then `base` numbered 2, 3 … that is not yet taken."""

from __future__ import annotations

from collections.abc import Callable


def first_free(base: str, taken: set[str], numbered: Callable[[str, int], str]) -> str:
    """`base`, or `numbered(base, n)` for the lowest n from 2 not in `taken`; added to `taken`."""
    name, n = base, 1
    while name in taken:
        n += 1
        name = numbered(base, n)
    taken.add(name)
    return name
