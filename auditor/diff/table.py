"""Which settings lists are sets and which are keyed by an identity field, plus the comparison
primitives the diff and the JSON Patch walkers share.

Takes list paths in dotted form (`sandbox.network.allowedDomains`, `hooks.PreToolUse`), gives
how to compare the list there. A pattern is a dotted path with list indices and `[?k=='v']`
selectors stripped; a `*` segment matches exactly one key (`hooks.*` matches `hooks.Stop`, not
`hooks.Stop.hooks`). The most specific pattern wins (fewest `*`, then the longest). A list the
table does not name is compared in order.
"""

from __future__ import annotations

import difflib
from collections import Counter
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

import orjson

from auditor.errors import ConfigError
from auditor.models import JSON

ListMode = Literal["set", "keyed", "ordered"]

_DEFAULT_SETS = (
    "commandAllowlist",
    "commandDenylist",
    "commandBlocklist",
    "disabledSkills",
    "managedComputersAllowedEmails",
    "byomComputersAllowedEmails",
    "modelPolicy.*",
    "mcpPolicy.allowlist",
    "missionPolicy.allowedUserIds",
    "networkPolicy.allowedIps",
    "sandbox.filesystem.*",
    "sandbox.network.allowedDomains",
    "sandbox.network.allowUnixSockets",
    "personaSettings.enabledRoles",
)
_DEFAULT_KEYED = {
    "customModels": "id",
    "strictKnownMarketplaces": "repo",
    "mcpAutonomyUrlOverrides": "urlPattern",
    "hooks.*": "matcher",
    "svcRouterRules": "when",
}


def _pattern_problem(pattern: object) -> str | None:
    if not isinstance(pattern, str) or not pattern:
        return "must be a non-empty string"
    if any(not seg for seg in pattern.split(".")):
        return "has an empty segment"
    if "[" in pattern or "]" in pattern:  # `customModels[0]` names an entry, not the list
        return "has a bracket: patterns are dotted paths without indices (`customModels`)"
    return None


@dataclass(frozen=True)
class ListTable:
    """How to compare lists: `sets` patterns compare as multisets, `keyed` maps pattern → id field.

    `ordered` patterns force order-aware comparison (to override a default entry).
    """

    sets: frozenset[str]
    keyed: Mapping[str, str]
    ordered: frozenset[str] = frozenset()
    _rules: tuple[tuple[tuple[str, ...], ListMode, str], ...] = field(
        init=False, repr=False, compare=False
    )
    _cache: dict[str, tuple[ListMode, str]] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        rules: list[tuple[tuple[str, ...], ListMode, str]] = []
        rules += [(tuple(p.split(".")), "ordered", "") for p in self.ordered]
        rules += [(tuple(p.split(".")), "keyed", k) for p, k in self.keyed.items()]
        rules += [(tuple(p.split(".")), "set", "") for p in self.sets]
        # Most specific first: fewest wildcards, then most segments; ties keep the order above.
        rules.sort(key=lambda r: (sum(s == "*" for s in r[0]), -len(r[0])))
        object.__setattr__(self, "_rules", tuple(rules))
        object.__setattr__(self, "_cache", {})

    def mode(self, dotted: str) -> tuple[ListMode, str]:
        """How to compare the list at `dotted`: ("set", ""), ("keyed", field) or ("ordered", "")."""
        hit = self._cache.get(dotted)
        if hit is None:
            hit = self._lookup(tuple(dotted.split(".")) if dotted else ())
            self._cache[dotted] = hit
        return hit

    def _lookup(self, segs: tuple[str, ...]) -> tuple[ListMode, str]:
        for pattern, mode, key in self._rules:
            if len(pattern) == len(segs) and all(
                p in ("*", s) for p, s in zip(pattern, segs, strict=True)
            ):
                return mode, key
        return "ordered", ""


DEFAULT_LIST_TABLE = ListTable(
    sets=frozenset(_DEFAULT_SETS), keyed=MappingProxyType(dict(_DEFAULT_KEYED))
)


def _string_list(value: object, where: str) -> list[str]:
    if not isinstance(value, list):
        raise ConfigError(f"{where}: expected a list of list paths, got {type(value).__name__}")
    for i, item in enumerate(value):
        problem = _pattern_problem(item)
        if problem:
            raise ConfigError(f"{where}[{i}]: list path {problem}")
    return list(value)


def _keyed_map(value: object, where: str) -> dict[str, str]:
    if not isinstance(value, Mapping):
        raise ConfigError(f"{where}: expected a mapping of list path to identity field")
    for pattern, key in value.items():
        problem = _pattern_problem(pattern)
        if problem:
            raise ConfigError(f"{where}: list path {pattern!r} {problem}")
        if not isinstance(key, str) or not key:
            raise ConfigError(f"{where}.{pattern}: identity field must be a non-empty string")
    return dict(value)


def list_table_from_config(extra: Mapping[str, Any], base: ListTable | None = None) -> ListTable:
    """Merge `{"sets": [...], "keyed": {path: key}, "ordered": [...]}` over the default table.

    A path named in the extra table is removed from the other two categories first, so a
    user can turn a default set into a keyed or ordered list. Bad shape → ConfigError.
    """
    base = base or DEFAULT_LIST_TABLE
    if not isinstance(extra, Mapping):
        raise ConfigError("diff_keys: expected a mapping with 'sets', 'keyed' and/or 'ordered'")
    unknown = sorted(set(extra) - {"sets", "keyed", "ordered"})
    if unknown:
        raise ConfigError(
            f"diff_keys: unknown entry {unknown[0]!r} (expected sets, keyed, ordered)"
        )
    sets = _string_list(extra.get("sets", []), "diff_keys.sets")
    keyed = _keyed_map(extra.get("keyed", {}), "diff_keys.keyed")
    ordered = _string_list(extra.get("ordered", []), "diff_keys.ordered")
    for one, other, shared in (
        ("sets", "keyed", set(sets) & set(keyed)),
        ("sets", "ordered", set(sets) & set(ordered)),
        ("keyed", "ordered", set(keyed) & set(ordered)),
    ):
        if shared:  # a list is compared one way: which one would be a guess
            raise ConfigError(
                f"diff_keys: list path {min(shared)!r} is under both {one} and {other}; "
                "name it under one"
            )
    named = set(sets) | set(keyed) | set(ordered)
    merged_keyed = {p: k for p, k in base.keyed.items() if p not in named} | keyed
    return ListTable(
        sets=frozenset((base.sets - named) | set(sets)),
        keyed=MappingProxyType(merged_keyed),
        ordered=frozenset((base.ordered - named) | set(ordered)),
    )


# ---- comparison primitives shared by the diff and the patch walkers -------------------------


def canon(value: JSON) -> bytes:
    """Type-strict serialization for equality (`true` and `1` differ; key order is not sorted)."""
    return orjson.dumps(value)


def strict_equal(a: JSON, b: JSON) -> bool:
    """Type-strict JSON equality: `True != 1`, `[True] != [1]`, `1 != 1.0`."""
    if a is b and type(a) in _CONTAINERS:
        return True  # one object or array (a history shares what a revision left unchanged)
    if type(a) is not type(b) or a != b:
        return False
    if isinstance(a, dict | list):
        try:
            return canon(a) == canon(b) or _deep_strict_equal(a, b)
        except TypeError:  # an integer beyond 64 bits (a YAML document): walk instead
            return _deep_strict_equal(a, b)
    return True


_CONTAINERS = (dict, list)


def _deep_strict_equal(a: JSON, b: JSON) -> bool:
    # Reached only when bytes differ but `==` holds: usually dict key order, so check by walking.
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(strict_equal(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(strict_equal(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def item_key(value: JSON) -> Hashable:
    """A hashable, type-strict identity of a value for multiset comparison (key order ignored)."""
    if type(value) is str:
        return value  # the common case, and no other kind of key below is a str
    if isinstance(value, dict | list):
        try:
            return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
        except TypeError:  # an integer beyond 64 bits (a YAML document)
            return _walked_key(value)
    return (type(value), value)


def _walked_key(value: JSON) -> Hashable:
    """`item_key` built by walking, for what orjson cannot write (tuples never equal its bytes)."""
    if isinstance(value, dict):
        return ("{}", tuple(sorted((k, _walked_key(v)) for k, v in value.items())))
    if isinstance(value, list):
        return ("[]", tuple(_walked_key(v) for v in value))
    return (type(value), value)


def json_type(value: JSON) -> str:
    """The JSON type name: null, boolean, number, string, array, object."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def is_scalar(value: JSON) -> bool:
    """True for null, booleans, numbers and strings."""
    return not isinstance(value, dict | list)


def multiset_delta(a: Sequence[JSON], b: Sequence[JSON]) -> tuple[list[JSON], list[JSON]] | None:
    """(removed, added) occurrences between two scalar lists in first-seen order.

    None when an item is an object or array: such a list is compared in order instead.
    """
    keys_a, keys_b = _scalar_keys(a), _scalar_keys(b)
    if keys_a is None or keys_b is None:
        return None
    ca, cb = Counter(keys_a), Counter(keys_b)
    return _take(a, keys_a, ca - cb), _take(b, keys_b, cb - ca)


def _scalar_keys(items: Sequence[JSON]) -> list[Hashable] | None:
    keys = [x if type(x) is str else item_key(x) for x in items]
    if any(type(k) is bytes for k in keys if type(k) is not str):
        return None
    return keys


def _take(items: Sequence[JSON], keys: Sequence[Hashable], wanted: Counter[Hashable]) -> list[JSON]:
    if not wanted:
        return []
    out = []
    for item, k in zip(items, keys, strict=True):
        if wanted[k] > 0:
            wanted[k] -= 1
            out.append(item)
    return out


def identities(items: Sequence[JSON], key: str) -> list[JSON] | None:
    """The identity values of a keyed list, or None if any is missing, non-scalar or repeated."""
    ids: list[JSON] = []
    seen: set[Hashable] = set()
    for item in items:
        if not isinstance(item, dict) or key not in item or not is_scalar(item[key]):
            return None
        marker = item_key(item[key])
        if marker in seen:
            return None
        seen.add(marker)
        ids.append(item[key])
    return ids


NO_IDENTITY: Hashable = ("no identity",)  # a tuple no `item_key` result equals


def identity_of(item: JSON, key: str) -> Hashable:
    """The hashable identity of one item of a keyed list, or NO_IDENTITY (missing, not scalar)."""
    if not isinstance(item, dict) or key not in item or not is_scalar(item[key]):
        return NO_IDENTITY
    return item_key(item[key])


def pair_renames(
    before: Mapping[str, JSON],
    after: Mapping[str, JSON],
    removed: Iterable[str],
    added: Iterable[str],
) -> list[tuple[str, str]]:
    """Pair removed with added keys of equal value (type-strict); closest name wins ties.

    Names are compared (`difflib`'s similarity, about 20 µs a pair) up to `_RENAME_BUDGET`
    pairs in all; past it (thousands of keys of one value renamed: 1,000 took 20 s, and it grew
    with the square) the rest are paired in name order."""
    free = sorted(added)
    by_value: dict[Hashable, list[str]] = {}
    for k in free:
        by_value.setdefault(item_key(after[k]), []).append(k)
    pairs = []
    spent = 0
    for old in sorted(removed):
        candidates = by_value.get(item_key(before[old]))
        if not candidates:
            continue
        spent += len(candidates)
        if len(candidates) == 1 or spent > _RENAME_BUDGET:
            best = candidates.pop(0)
        else:
            best = max(candidates, key=lambda c: difflib.SequenceMatcher(None, old, c).ratio())
            candidates.remove(best)
        pairs.append((old, best))
    return pairs


_RENAME_BUDGET = 20_000  # name pairs compared for renames: about 0.4 s


Opcode = tuple[str, int, int, int, int]
# Item pairs the in-order matcher may try (each step pure Python, about 0.1-0.2 µs): a list of
# thousands of repeated entries reordered took `difflib` minutes (800 entries of three kinds,
# reversed, 7 s; 2,500 of them 158 s), since every search scans every pair of equal items.
_MATCH_BUDGET = 2_000_000


class _OverBudget(Exception):
    pass


class _BoundedMatcher(difflib.SequenceMatcher[Hashable]):
    """`difflib`'s matcher that stops once its searches would try more than `_MATCH_BUDGET`
    pairs of equal items (a search over `a[alo:ahi]` tries each item's equals in `b`)."""

    def __init__(self, a: Sequence[Hashable], b: Sequence[Hashable]) -> None:
        super().__init__(None, a, b, autojunk=False)
        in_b = Counter(b)
        self._tries = [0]
        for key in a:
            self._tries.append(self._tries[-1] + in_b[key])
        self._spent = 0
        self._len_a = len(a)

    def find_longest_match(
        self, alo: int = 0, ahi: int | None = None, blo: int = 0, bhi: int | None = None
    ) -> difflib.Match:
        high = self._len_a if ahi is None else ahi
        self._spent += self._tries[high] - self._tries[alo]
        if self._spent > _MATCH_BUDGET:
            raise _OverBudget
        return super().find_longest_match(alo, high, blo, bhi)


def ordered_opcodes(keys_a: Sequence[Hashable], keys_b: Sequence[Hashable]) -> list[Opcode]:
    """How the items of an in-order list differ, as `difflib` opcodes other than `equal`
    (`replace`, `delete`, `insert` with old and new index ranges).

    The common head and tail are left out of the matcher (one edit among 10,000 equal entries
    is one `replace`). What is between is matched by `difflib`, within a budget of item pairs;
    past it (thousands of repeated entries reordered) the items are compared position by
    position: one `replace` of the whole stretch, which the walkers pair index by index."""
    short = min(len(keys_a), len(keys_b))
    head = 0
    while head < short and keys_a[head] == keys_b[head]:
        head += 1
    tail = 0
    while tail < short - head and keys_a[-1 - tail] == keys_b[-1 - tail]:
        tail += 1
    mid_a, mid_b = keys_a[head : len(keys_a) - tail], keys_b[head : len(keys_b) - tail]
    try:
        codes = _BoundedMatcher(mid_a, mid_b).get_opcodes()
    except _OverBudget:
        codes = [("replace", 0, len(mid_a), 0, len(mid_b))]
    return [
        (tag, i1 + head, i2 + head, j1 + head, j2 + head)
        for tag, i1, i2, j1, j2 in codes
        if tag != "equal" and (i1 != i2 or j1 != j2)
    ]
