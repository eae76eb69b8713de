"""RFC 6902 JSON Patch export: two JSON documents in, the operations that turn one into the other.

Follows the same list table as the diff (see `auditor.difftable`) so a set or keyed list gives
a few `add`/`remove` operations instead of index shifts; renamed keys become `move`. Operations
address list items by index, so within a list they are emitted from the end backwards (removals
in descending index order) and every pointer is valid at the moment its operation applies.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

from auditor.common.paths import to_pointer
from auditor.diff.table import (
    DEFAULT_LIST_TABLE,
    ListTable,
    identities,
    item_key,
    multiset_delta,
    ordered_opcodes,
    pair_renames,
    strict_equal,
)
from auditor.models import JSON, Change

Ptr = tuple[str | int, ...]
Segs = tuple[str, ...]
Op = dict[str, Any]


def to_json_patch(
    before: JSON,
    after: JSON,
    changes: Sequence[Change] | None = None,
    *,
    table: ListTable = DEFAULT_LIST_TABLE,
) -> list[Op]:
    """RFC 6902 operations that, applied to `before`, yield `after` (lists included, in order).

    `changes` is accepted for symmetry with `diff_revisions` but not needed: the patch is always
    computed from the documents, because it must also reproduce reorderings the diff ignores.
    """
    del changes
    ops: list[Op] = []
    _Patcher(table, ops).value(before, after, (), ())
    return ops


class _Patcher:
    """Walks two JSON values together, appending the operations that make the first the second."""

    def __init__(self, table: ListTable, ops: list[Op]) -> None:
        self.table = table
        self.ops = ops

    def op(self, op: str, ptr: Ptr, value: JSON = None, *, source: Ptr | None = None) -> None:
        entry: Op = {"op": op, "path": to_pointer(ptr)}
        if source is not None:
            entry["from"] = to_pointer(source)
        elif op != "remove":
            entry["value"] = value
        self.ops.append(entry)

    def value(self, a: JSON, b: JSON, ptr: Ptr, segs: Segs) -> None:
        if strict_equal(a, b):
            return
        if isinstance(a, dict) and isinstance(b, dict):
            self.mapping(a, b, ptr, segs)
        elif isinstance(a, list) and isinstance(b, list):
            self.sequence(a, b, ptr, segs)
        else:
            self.op("replace", ptr, b)

    def mapping(self, a: Mapping[str, JSON], b: Mapping[str, JSON], ptr: Ptr, segs: Segs) -> None:
        for key, va in a.items():
            if key in b:
                self.value(va, b[key], (*ptr, key), (*segs, key))
        removed = [k for k in a if k not in b]
        added = [k for k in b if k not in a]
        renames = pair_renames(a, b, removed, added) if removed and added else []
        for old, new in renames:
            self.op("move", (*ptr, new), source=(*ptr, old))
        gone, came = {old for old, _ in renames}, {new for _, new in renames}
        removed = [k for k in removed if k not in gone]
        added = [k for k in added if k not in came]
        for k in removed:
            self.op("remove", (*ptr, k))
        for k in added:
            self.op("add", (*ptr, k), b[k])

    def sequence(self, a: list[JSON], b: list[JSON], ptr: Ptr, segs: Segs) -> None:
        mode, key = self.table.mode(".".join(segs))
        done = False
        if mode == "set":
            done = self.as_set(a, b, ptr)
        elif mode == "keyed":
            done = self.as_keyed(a, b, key, ptr, segs)
        if not done:
            self.ordered(a, b, ptr, segs)

    def as_set(self, a: list[JSON], b: list[JSON], ptr: Ptr) -> bool:
        delta = multiset_delta(a, b)
        if delta is None:
            return False
        removed, added = delta
        gone, new = _occurrences(a, removed), _occurrences(b, added)
        kept = [item_key(x) for i, x in enumerate(a) if i not in gone]
        if kept != [item_key(x) for j, x in enumerate(b) if j not in new]:
            return False  # reordered as well: let the ordered walk produce exact operations
        self.splice(b, ptr, gone, new)
        return True

    def as_keyed(self, a: list[JSON], b: list[JSON], key: str, ptr: Ptr, segs: Segs) -> bool:
        ids_a, ids_b = identities(a, key), identities(b, key)
        if ids_a is None or ids_b is None:
            return self.permutation(a, b, ptr) or self.subsequence(a, b, ptr)
        keys_a, keys_b = [item_key(i) for i in ids_a], [item_key(i) for i in ids_b]
        set_a, set_b = set(keys_a), set(keys_b)
        if [k for k in keys_a if k in set_b] != [k for k in keys_b if k in set_a]:
            return False
        gone = {i for i, k in enumerate(keys_a) if k not in set_b}
        new = {j for j, k in enumerate(keys_b) if k not in set_a}
        kept = [i for i in range(len(a)) if i not in gone]
        matched = [j for j in range(len(b)) if j not in new]
        for i in sorted(gone, reverse=True):
            self.op("remove", (*ptr, i))
        for pos, (i, j) in enumerate(zip(kept, matched, strict=True)):
            self.value(a[i], b[j], (*ptr, pos), segs)
        for j in sorted(new):
            self.op("add", (*ptr, j), b[j])
        return True

    def permutation(self, a: list[JSON], b: list[JSON], ptr: Ptr) -> bool:
        """`move` operations when `b` only reorders `a` (items matched by content), else False.

        For keyed lists whose identity is repeated, where items equal on both sides are one item.
        The longest run of items already in order stays put and each other item moves once, next
        to the item that precedes it in `b` (a rotation is one move, not one per item). Each move
        scans the list, so a reorder that would cost more than `_MOVE_BUDGET` item steps (a
        reversed list of 2,100 items) replaces the list in one operation instead.
        """
        if len(a) != len(b):
            return False
        keys_a, keys_b = [item_key(x) for x in a], [item_key(x) for x in b]
        if Counter(keys_a) != Counter(keys_b):
            return False
        src, stay = _moves(keys_a, keys_b)
        if (len(src) - len(stay)) * len(src) > _MOVE_BUDGET:
            self.op("replace", ptr, b)  # one operation, where removes and adds would be 1,000s
            return True
        cur = list(range(len(a)))  # the old indices, in the order the patch has put them so far
        for j, s in enumerate(src):
            if s in stay:
                continue
            frm = cur.index(s)
            del cur[frm]
            to = 0 if j == 0 else cur.index(src[j - 1]) + 1
            cur.insert(to, s)
            self.op("move", (*ptr, to), source=(*ptr, frm))
        return True

    def subsequence(self, a: list[JSON], b: list[JSON], ptr: Ptr) -> bool:
        """`remove`s (or `add`s) when `b` is `a` with items taken out (or put in), else False.

        In one pass, where the ordered walk compares every pair of equal items (20,000 equal
        hook entries and one removed: 50 s)."""
        short, long = (b, a) if len(b) <= len(a) else (a, b)
        keys = [item_key(x) for x in short]
        extra: set[int] = set()
        k = 0
        for i, x in enumerate(long):
            if k < len(keys) and item_key(x) == keys[k]:
                k += 1
            else:
                extra.add(i)
        if k < len(keys):
            return False
        if long is a:
            self.splice(b, ptr, extra, set())
        else:
            self.splice(b, ptr, set(), extra)
        return True

    def splice(self, b: list[JSON], ptr: Ptr, gone: set[int], new: set[int]) -> None:
        """Remove indices `gone` of the old list (descending), then add `b[j]` for `j` in `new`."""
        for i in sorted(gone, reverse=True):
            self.op("remove", (*ptr, i))
        for j in sorted(new):
            self.op("add", (*ptr, j), b[j])

    def ordered(self, a: list[JSON], b: list[JSON], ptr: Ptr, segs: Segs) -> None:
        keys_a, keys_b = [item_key(x) for x in a], [item_key(x) for x in b]
        # Back to front, so indices before the block being edited still mean the old list.
        for tag, i1, i2, j1, j2 in reversed(ordered_opcodes(keys_a, keys_b)):
            common = min(i2 - i1, j2 - j1) if tag == "replace" else 0
            for i in range(i2 - 1, i1 + common - 1, -1):
                self.op("remove", (*ptr, i))
            for t in range(common):
                self.value(a[i1 + t], b[j1 + t], (*ptr, i1 + t), segs)
            for t in range(common, j2 - j1):
                self.op("add", (*ptr, i1 + t), b[j1 + t])


_MOVE_BUDGET = 4_000_000  # items moved x list length: about 0.1 s
_PAIRS_BUDGET = 1_000_000  # equal-item pairs tried for the fewest moves


def _moves(keys_a: Sequence[Hashable], keys_b: Sequence[Hashable]) -> tuple[list[int], set[int]]:
    """For `b` a reordering of `a`: where each item of `b` was in `a`, and the old indices of
    the items that stay put (the rest move once each).

    The items that stay are a longest common subsequence of the two (Hunt-Szymanski: each
    item of `b` tried against the old positions of its equal items), so equal items are paired
    to move as few as possible; past `_PAIRS_BUDGET` tries (10,000s of equal items) equal items
    are paired first to first and the longest increasing run of that pairing stays."""
    where: dict[Hashable, list[int]] = {}
    for i, k in enumerate(keys_a):
        where.setdefault(k, []).append(i)
    if sum(len(where[k]) for k in keys_b) > _PAIRS_BUDGET:
        taken = {k: iter(v) for k, v in where.items()}
        src = [next(taken[k]) for k in keys_b]
        return src, _increasing_run(src)
    tails: list[int] = []  # tails[n]: the smallest old index ending a common run of n + 1
    ends: list[tuple[int, int, object]] = []  # (old index, new index, previous link) per tails
    for j, k in enumerate(keys_b):
        for i in reversed(where[k]):  # downwards, so one item of `b` extends a run only once
            n = bisect_left(tails, i)
            link = (i, j, ends[n - 1] if n else None)
            if n == len(tails):
                tails.append(i)
                ends.append(link)
            else:
                tails[n], ends[n] = i, link
    kept: dict[int, int] = {}  # new index -> old index, for the items that stay
    node: object = ends[-1] if ends else None
    while isinstance(node, tuple):
        kept[node[1]] = node[0]
        node = node[2]
    kept_old = set(kept.values())
    free = {k: [i for i in v if i not in kept_old] for k, v in where.items()}
    src = [kept[j] if j in kept else free[k].pop() for j, k in enumerate(keys_b)]
    return src, kept_old


def _increasing_run(src: Sequence[int]) -> set[int]:
    """The values of one longest increasing subsequence of `src` (patience sorting)."""
    tails: list[int] = []  # tails[k]: position in src of the smallest tail of a run of k + 1
    back = [-1] * len(src)
    for j, s in enumerate(src):
        k = _lower_bound(src, tails, s)
        back[j] = tails[k - 1] if k else -1
        if k == len(tails):
            tails.append(j)
        else:
            tails[k] = j
    out: set[int] = set()
    j = tails[-1] if tails else -1
    while j >= 0:
        out.add(src[j])
        j = back[j]
    return out


def _lower_bound(src: Sequence[int], tails: Sequence[int], s: int) -> int:
    lo, hi = 0, len(tails)
    while lo < hi:
        mid = (lo + hi) // 2
        if src[tails[mid]] < s:
            lo = mid + 1
        else:
            hi = mid
    return lo


def _occurrences(items: Sequence[JSON], wanted: Sequence[JSON]) -> set[int]:
    """Indices of the first occurrences in `items` of each value in `wanted` (multiset)."""
    left: dict[Hashable, int] = {}
    for w in wanted:
        k = item_key(w)
        left[k] = left.get(k, 0) + 1
    out = set()
    for i, item in enumerate(items):
        k = item_key(item)
        if left.get(k, 0) > 0:
            left[k] -= 1
            out.add(i)
    return out
