"""The diff stage: two settings revisions (generic JSON) in, a list of `Change` records out.

Never assumes a settings shape. Subtrees are compared for type-strict equality first
(`==` then canonical bytes, so `[true]` vs `[1]` is seen) and only differing subtrees are
walked. Lists are compared by the `ListTable` (see `auditor.difftable`): as multisets, by an
identity field, or in order. Secrets are already markers when revisions come from the store;
pass a `Redactor` for raw data. `to_json_patch` exports the same difference as RFC 6902.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from difflib import SequenceMatcher

from auditor.common import paths
from auditor.diff.patch import to_json_patch
from auditor.diff.table import (
    DEFAULT_LIST_TABLE,
    ListTable,
    canon,
    identities,
    item_key,
    json_type,
    list_table_from_config,
    multiset_delta,
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

    Keyed lists whose identity field is missing, non-scalar or repeated in either revision are
    compared in order instead; set lists keep duplicates (multiset). Reordering a set or keyed
    list is not a change. Paths of items in order-compared lists use the index in `after`
    (in `before` for `item_removed`).
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
            for old, new in pair_renames(a, b, removed, added):
                self.out.append(
                    Change(
                        paths.render((*parts, new)),
                        "renamed",
                        a[old],
                        b[new],
                        old_path=paths.render((*parts, old)),
                    )
                )
                removed.remove(old)
                added.remove(new)
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
        ids_a, ids_b = identities(a, key), identities(b, key)
        if ids_a is None or ids_b is None:
            return False
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

    def ordered(self, a: list[JSON], b: list[JSON], parts: Parts, segs: Segs) -> None:
        matcher = SequenceMatcher(
            None, [item_key(x) for x in a], [item_key(x) for x in b], autojunk=False
        )
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            if tag == "equal":
                continue
            common = min(i2 - i1, j2 - j1) if tag == "replace" else 0
            for t in range(common):
                self.value(a[i1 + t], b[j1 + t], (*parts, j1 + t), segs)
            for i in range(i1 + common, i2):
                self.emit((*parts, i), "item_removed", a[i], None)
            for j in range(j1 + common, j2):
                self.emit((*parts, j), "item_added", None, b[j])
