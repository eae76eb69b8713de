"""Quantifier outcomes: `each` / `some` entry of an array (and `none`, the negation of `some`).

Takes the per-entry outcomes of the inner condition and a description of it, gives one
`Outcome` worded for the array: `no entry of commandBlocklist matches /^rm/ (2 entries: "ls",
"cat")` with one evidence item, or the failing entries (capped) for `each` and `none`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from auditor.evaluate.outcome import (
    Outcome,
    OutcomeStatus,
    suffixed,
    turned,
    turned_status,
    with_flip,
)
from auditor.models import Evidence
from auditor.policy.phrasing import clip, short, show

#: Failing entries whose evidence a quantifier keeps; the rest are counted in the message.
ENTRY_EVIDENCE = 10
#: Entries a `some` failure lists in its message.
LISTED_ENTRIES = 5
#: Entries a `some` failure keeps in its evidence value.
KEPT_ENTRIES = 20


@dataclass(frozen=True)
class Quantified:
    """One quantifier run: the array, its entries' statuses, and how to word and describe them.

    Only the entries an outcome shows are worded (`word`, which builds an entry's outcome once
    and keeps it): the others are counted by their status."""

    where: str
    items: list[Any]
    groups: Mapping[OutcomeStatus, Sequence[int]]  # entries' indices by status, not negated
    word: Callable[[int], Outcome]  # entry i's outcome, worded (not negated)
    describe: Callable[[bool], str]  # the inner condition, third person; True: negated
    on_self: bool  # the inner condition reads the entry itself (`path: "@"`)
    flips: int = 0  # how often every entry's outcome is negated (worded only when shown)

    @property
    def negate(self) -> bool:
        """The entries' outcomes are negated."""
        return self.flips % 2 == 1

    def flipped(self) -> Quantified:
        """The same run with every entry's outcome negated."""
        return replace(self, flips=self.flips + 1)

    def entries(self, status: OutcomeStatus) -> Sequence[int]:
        """The indices of the entries whose negated status is `status` (negating twice is
        the identity, so they are the entries whose own status is `status` negated)."""
        return self.groups.get(turned_status(status, self.flips), ())


def grouped(statuses: Iterable[OutcomeStatus]) -> dict[OutcomeStatus, list[int]]:
    """The indices of the entries of each status, in order."""
    groups: dict[OutcomeStatus, list[int]] = {}
    for index, status in enumerate(statuses):
        found = groups.get(status)
        if found is None:
            groups[status] = [index]
        else:
            found.append(index)
    return groups


def each_outcome(q: Quantified) -> Outcome:
    """Every entry must pass: error > fail > missing > pass; `not each` is `some (not …)`."""
    flip: Callable[[], Outcome] = lambda: some_outcome(q.flipped())  # noqa: E731
    if not q.items:
        return with_flip(Outcome("pass", f"{show(q.where)} is empty"), flip)
    for status in ("error", "fail", "missing"):
        picked = q.entries(status)
        if picked:
            return with_flip(_entries(status, picked, q), flip)
    return with_flip(_entries("pass", q.entries("pass"), q), flip)


def some_outcome(q: Quantified) -> Outcome:
    """At least one entry must pass: error > pass > missing > fail; `not some` is `each (not …)`."""
    flip: Callable[[], Outcome] = lambda: each_outcome(q.flipped())  # noqa: E731
    for status in ("error", "pass", "missing"):
        picked = q.entries(status)
        if picked:
            return with_flip(_entries(status, picked, q), flip)
    return with_flip(_no_entry(q), flip)


def _entries(status: Any, picked: Sequence[int], q: Quantified) -> Outcome:
    """The first entry's message, how many more entries, and their evidence (capped).

    Only the entries shown are worded (and negated): the rest are counted."""
    shown = [turned(q.word(i), q.flips) for i in picked[:ENTRY_EVIDENCE]]
    head = shown[0].head
    evidence = [ev for o in shown for ev in o.evidence[:2]]
    if len(picked) > ENTRY_EVIDENCE:
        hidden = f"and {len(picked) - ENTRY_EVIDENCE} more entries not shown"
        evidence[-1] = replace(evidence[-1], note=hidden)
    text = suffixed(head, len(picked) - 1, "entries" if len(picked) > 2 else "entry")
    return Outcome(status, text, tuple(evidence), len(picked), clip(head))


def _no_entry(q: Quantified) -> Outcome:
    """`no entry of X matches /r/ (3 entries: …)` with one evidence item for the whole array."""
    what = q.describe(q.negate)
    if q.on_self:
        text = clip(f"no entry of {show(q.where)} {what} ({_listing(q.items)})")
    else:
        text = clip(f"{show(q.where)} has no entry where {what} ({_listing(q.items)})")
    lead = "an entry that" if q.on_self else "an entry where"
    ev = Evidence(q.where, q.items[:KEPT_ENTRIES], what, lead, True)
    return Outcome("fail", text, (ev,), 1, text)


def _listing(items: Sequence[Any]) -> str:
    if not items:
        return "the list is empty"
    shown = ", ".join(_entry(item) for item in items[:LISTED_ENTRIES])
    more = f", … {len(items) - LISTED_ENTRIES} more" if len(items) > LISTED_ENTRIES else ""
    noun = "entry" if len(items) == 1 else "entries"
    return f"{len(items)} {noun}: {shown}{more}"


def _entry(item: Any) -> str:
    ident = item.get("id") if isinstance(item, dict) else None
    return f"id {short(ident, 30)}" if isinstance(ident, str | int) else short(item, 30)
