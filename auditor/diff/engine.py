"""The diff stage: two settings revisions (generic JSON) in, a list of `Change` records out.

Never assumes a settings shape. Subtrees are compared for type-strict equality first
(`==` then canonical bytes, so `[true]` vs `[1]` is seen) and only differing subtrees are
walked. Lists are compared by the `ListTable` (see `auditor.difftable`): as multisets, by an
identity field, or in order. Secrets are already markers when revisions come from the store;
pass a `Redactor` for raw data. `to_json_patch` exports the same difference as RFC 6902.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Mapping, Sequence

from auditor.common import paths
from auditor.diff.patch import to_json_patch
from auditor.diff.table import (
    DEFAULT_LIST_TABLE,
    NO_IDENTITY,
    ListTable,
    canon,
    identities,
    identity_of,
    item_key,
    json_type,
    list_table_from_config,
    multiset_delta,
    ordered_opcodes,
    pair_renames,
    strict_equal,
)
from auditor.models import JSON, Change
from auditor.redact import Redactor

__all__ = [
    "DEFAULT_LIST_TABLE",
    "ListTable",
    "changed_paths",
    "diff_revisions",
    "dotted",
    "list_table_from_config",
    "to_json_patch",
]

Parts = tuple[paths.Component, ...]
Segs = tuple[str, ...]


def diff_revisions(
    before: JSON,
    after: JSON,
    *,
    table: ListTable = DEFAULT_LIST_TABLE,
    redactor: Redactor | None = None,
) -> list[Change]:
    """Every difference from `before` to `after`, sorted by path then kind.

    In a keyed list, items whose identity field is repeated, missing or non-scalar are matched
    by content (an item equal on both sides is the same item, moved or not) and the rest in
    order among items of the same identity; set lists keep duplicates (multiset). Reordering a
    set or keyed list is not a change. Paths of items in order-compared lists use the index in
    `after` (in `before` for `item_removed`).
    """
    if redactor is not None:
        before, after = redactor.redact_json(before), redactor.redact_json(after)
    out: list[Change] = []
    _Walker(table, out).value(before, after, (), ())
    out.sort(key=lambda c: (c.path, c.kind))
    return out


def dotted(path: str) -> str:
    """The dotted form of a path: keys only, no `$.`, indices and selectors dropped."""
    return ".".join(p for p in paths.parse(path) if isinstance(p, str))


def changed_paths(changes: Sequence[Change]) -> frozenset[str]:
    """Every dotted prefix the changes touch (`sandbox`, `sandbox.network`, …), old paths too."""
    out: set[str] = set()
    for change in changes:
        for path in (change.path, change.old_path):
            if path is None:
                continue
            keys = [p for p in paths.parse(path) if isinstance(p, str)]
            out.update(".".join(keys[:n]) for n in range(1, len(keys) + 1))
    return frozenset(out)


_MISSING = object()


class _Walker:
    """Walks two JSON values together, appending a Change for every difference found."""

    def __init__(self, table: ListTable, out: list[Change]) -> None:
        self.table = table
        self.out = out

    def emit(self, parts: Parts, kind: str, before: JSON = None, after: JSON = None) -> None:
        self.out.append(Change(paths.render(parts), kind, before, after))  # type: ignore[arg-type]

    def value(self, a: JSON, b: JSON, parts: Parts, segs: Segs) -> None:
        if strict_equal(a, b):
            return
        if isinstance(a, dict) and isinstance(b, dict):
            self.mapping(a, b, parts, segs)
        elif isinstance(a, list) and isinstance(b, list):
            self.sequence(a, b, parts, segs)
        elif json_type(a) != json_type(b):
            self.emit(parts, "type_changed", a, b)
        else:
            self.emit(parts, "changed", a, b)

    def mapping(
        self, a: Mapping[str, JSON], b: Mapping[str, JSON], parts: Parts, segs: Segs
    ) -> None:
        for key, va in a.items():
            vb = b.get(key, _MISSING)
            if vb is _MISSING or va is vb:
                continue
            # Inlined strict_equal: this loop is the hot path of a history-wide diff.
            if (
                type(va) is type(vb)
                and va == vb
                and (not isinstance(va, dict | list) or canon(va) == canon(vb))
            ):
                continue
            self.value(va, vb, (*parts, key), (*segs, key))
        if a.keys() != b.keys():
            self.keys_changed(a, b, parts)

    def keys_changed(self, a: Mapping[str, JSON], b: Mapping[str, JSON], parts: Parts) -> None:
        removed = [k for k in a if k not in b]
        added = [k for k in b if k not in a]
        if removed and added:
            renames = pair_renames(a, b, removed, added)
            for old, new in renames:
                self.out.append(
                    Change(
                        paths.render((*parts, new)),
                        "renamed",
                        a[old],
                        b[new],
                        old_path=paths.render((*parts, old)),
                    )
                )
            gone, came = {old for old, _ in renames}, {new for _, new in renames}
            removed = [k for k in removed if k not in gone]
            added = [k for k in added if k not in came]
        for k in removed:
            self.emit((*parts, k), "removed", a[k], None)
        for k in added:
            self.emit((*parts, k), "added", None, b[k])

    def sequence(self, a: list[JSON], b: list[JSON], parts: Parts, segs: Segs) -> None:
        mode, key = self.table.mode(".".join(segs))
        delta = multiset_delta(a, b) if mode == "set" else None
        if delta is not None:
            removed, added = delta
            for item in removed:
                self.emit(parts, "item_removed", item, None)
            for item in added:
                self.emit(parts, "item_added", None, item)
            return
        if mode == "keyed" and self.keyed(a, b, key, parts, segs):
            return
        self.ordered(a, b, parts, segs)

    def keyed(self, a: list[JSON], b: list[JSON], key: str, parts: Parts, segs: Segs) -> bool:
        """Match items by identity; items whose identity is not unique are matched by content.

        An identity that occurs at most once in each revision addresses its item by selector
        (`[?matcher=='Bash']`). The other items (identity repeated, missing or not a scalar) are
        the same item when equal on both sides, wherever they stand (a move is not a change in a
        keyed list); what is left is paired in order among items of the same identity, by index.
        """
        ids_a, ids_b = identities(a, key), identities(b, key)
        if ids_a is None or ids_b is None:
            return self.mixed(a, b, key, parts, segs)
        by_a = {item_key(i): (i, item) for i, item in zip(ids_a, a, strict=True)}
        by_b = {item_key(i): (i, item) for i, item in zip(ids_b, b, strict=True)}
        for k, (ident, item) in by_a.items():
            where = (*parts, paths.Match(key, ident))
            if k not in by_b:
                self.emit(where, "item_removed", item, None)
            else:
                self.value(item, by_b[k][1], where, segs)
        for k, (ident, item) in by_b.items():
            if k not in by_a:
                self.emit((*parts, paths.Match(key, ident)), "item_added", None, item)
        return True

    def mixed(self, a: list[JSON], b: list[JSON], key: str, parts: Parts, segs: Segs) -> bool:
        if not all(isinstance(x, dict) for x in a) or not all(isinstance(x, dict) for x in b):
            return False  # not a list of objects: compared in order
        ids_a, ids_b = [identity_of(x, key) for x in a], [identity_of(x, key) for x in b]
        count_a, count_b = Counter(ids_a), Counter(ids_b)

        def unique(k: Hashable) -> bool:
            return k is not NO_IDENTITY and count_a[k] <= 1 and count_b[k] <= 1

        rest_a = [i for i, k in enumerate(ids_a) if not unique(k)]
        rest_b = [j for j, k in enumerate(ids_b) if not unique(k)]
        unique_a = {k: i for i, k in enumerate(ids_a) if unique(k)}
        unique_b = {k: j for j, k in enumerate(ids_b) if unique(k)}
        for k, i in unique_a.items():
            where = (*parts, paths.Match(key, a[i][key]))
            if k in unique_b:
                self.value(a[i], b[unique_b[k]], where, segs)
            else:
                self.emit(where, "item_removed", a[i], None)
        for k, j in unique_b.items():
            if k not in unique_a:
                where = (*parts, paths.Match(key, b[j][key]))
                self.emit(where, "item_added", None, b[j])
        # Equal on both sides: the same item, moved or not (where it stood first, so an edit of
        # one of two equal entries reads at its own index). A duplicate added is an addition.
        keys_a = {i: item_key(a[i]) for i in rest_a}
        keys_b = {j: item_key(b[j]) for j in rest_b}
        in_place = {i for i in rest_a if i in keys_b and keys_a[i] == keys_b[i]}
        left: dict[Hashable, list[int]] = {}
        for i in rest_a:
            if i not in in_place:
                left.setdefault(keys_a[i], []).append(i)
        unmatched_b = []
        for j in rest_b:
            if j in in_place:
                continue
            same = left.get(keys_b[j])
            if same:
                same.pop(0)
            else:
                unmatched_b.append(j)
        unmatched_a = sorted(i for same in left.values() for i in same)
        # What is left differs: pair edits in order among items of the same identity.
        by_id: dict[Hashable, list[int]] = {}
        for i in unmatched_a:
            by_id.setdefault(ids_a[i], []).append(i)
        for j in unmatched_b:
            olds = by_id.get(ids_b[j])
            if olds:
                self.value(a[olds.pop(0)], b[j], (*parts, j), segs)
            else:
                self.emit((*parts, j), "item_added", None, b[j])
        for i in sorted(i for olds in by_id.values() for i in olds):
            self.emit((*parts, i), "item_removed", a[i], None)
        return True

    def ordered(self, a: list[JSON], b: list[JSON], parts: Parts, segs: Segs) -> None:
        keys_a, keys_b = [item_key(x) for x in a], [item_key(x) for x in b]
        for tag, i1, i2, j1, j2 in ordered_opcodes(keys_a, keys_b):
            common = min(i2 - i1, j2 - j1) if tag == "replace" else 0
            for t in range(common):
                self.value(a[i1 + t], b[j1 + t], (*parts, j1 + t), segs)
            for i in range(i1 + common, i2):
                self.emit((*parts, i), "item_removed", a[i], None)
            for j in range(j1 + common, j2):
                self.emit((*parts, j), "item_added", None, b[j])
