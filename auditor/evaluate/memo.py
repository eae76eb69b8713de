"""Verdict memoisation: a rule's verdict is a function of the values at the paths it reads.

Takes a compiled `Rule` and the documents it is run on, gives a type-strict key of the rule's
projection of each document (the values at the leading keys of every path it reads) and a
bounded cache from key to `Verdict`. Long histories repeat the same projections over and over
(most revisions leave most paths untouched, and values often return to earlier ones), so a
rule runs once per distinct projection instead of once per revision or step.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Generic, Literal, TypeVar

from auditor.evaluate import rule as evaluate_rule
from auditor.evaluate.conditions import Env
from auditor.evaluate.projection import (
    Deps,
    document_reads,
    element_reads,
    projection,
    strict_json,
)
from auditor.evaluate.rule import Verdict
from auditor.evaluate.status import ElementMemo, rule_status
from auditor.models import Status
from auditor.operators.shape import schema_type
from auditor.policy.conditions import Condition, Leaf, Logic, Quantifier
from auditor.policy.model import Rule
from auditor.policy.pathexpr import Key
from auditor.policy.refs import Ref
from auditor.redact.plain import MARKER_START

V = TypeVar("V")

#: Leading keys of change-document fields that differ on every step: a key holding them
#: would never repeat, so rules reading them are simply not cached.
PER_STEP_FIELDS = frozenset({"revision", "previous_revision", "updated_at"})
#: Bytes of keys one rule's cache may hold before it starts over (bounds memory): keys are
#: 32-byte digests, so this is 2,048 verdicts per rule, each of which may keep evidence alive.
CACHE_BUDGET = 32 * 2048


def rule_reads(rule: Rule) -> tuple[Deps, ...]:
    """The leading keys of every document path `rule` reads (change leaves read both sides)."""
    conds = [c for c in (rule.when, rule.condition) if c is not None]
    return tuple(sorted({deps for cond in conds for deps in document_reads(cond)}))


#: How much of a value a rule's status reads (see `shape_of`): its JSON type, or its type and
#: length (where the walk stopped is always read); `None`: all of it.
Shape = Literal["type", "length"]
#: How a rule's status reads one part of the document: all of it (`None`), only its `Shape`,
#: or, for an array a quantifier runs over, only what its inner condition reads of each element
#: (each of those whole or by its shape likewise).
Need = Shape | tuple[tuple[Deps, Shape | None], ...] | None
StatusRead = tuple[Deps, Need]
#: The operators that see no more of a value than its shape: what each reads.
SHAPE_OPERATORS: dict[str, Shape] = {
    "exists": "type",
    "type": "type",
    "empty": "length",
    "length": "length",
}


def status_reads(rule: Rule) -> tuple[StatusRead, ...]:
    """What a rule's status depends on: `rule_reads`, except that an array a top-level
    quantifier (on plain keys) runs over counts only by what its inner condition reads of each
    element, when that condition reads nothing outside the element (see `element_reads`), and
    a path only tested for its shape (`type`, `empty`, `length`, `exists`, on plain keys) counts
    only by that. Every change rule reads `changes` so: the path and kind of each change, not
    its values (and the type of a side a rule asks only the type of: a custom model added)."""
    conds = [c for c in (rule.when, rule.condition) if c is not None]
    shaped = _shape_only(conds)
    reads = {read for cond in conds for read in _status_reads(cond)}
    return tuple(
        sorted(((d, shaped.get(d) if need is None else need) for d, need in reads), key=repr)
    )


def _status_reads(cond: Condition) -> Iterator[StatusRead]:
    if isinstance(cond, Logic):
        for child in cond.children:
            yield from _status_reads(child)
        return
    if isinstance(cond, Quantifier) and all(isinstance(s, Key) for s in cond.path.steps):
        inner = element_reads(cond.condition)
        if inner is not None:
            shaped = _shape_only([cond.condition])
            yield cond.path.deps, tuple((d, shaped.get(d)) for d in inner)
            return
    yield from ((deps, None) for deps in document_reads(cond))


def _shape_only(conds: Sequence[Condition]) -> dict[Deps, Shape]:
    """The paths `conds` read only for their shape, and how much of it: every leaf that reads
    them (outside any quantifier's elements) has a path of plain keys and only
    `SHAPE_OPERATORS`, and nothing else reads them whole (a quantifier over them, a change
    leaf's side, a `{ref: …}`)."""
    shape: dict[Deps, Shape] = {}
    whole: set[Deps] = set()

    def walk(cond: Condition, top: bool) -> None:
        if isinstance(cond, Leaf):
            if cond.is_change:
                whole.update((side, *p.deps) for p in cond.paths for side in ("before", "after"))
            whole.update(arg.path.deps for _, arg, _ in cond.ops if isinstance(arg, Ref))
            if top:  # (below a quantifier, a leaf reads the quantifier's elements)
                need = _shape_leaf(cond)
                for path in cond.paths:
                    if need is None:
                        whole.add(path.deps)
                    elif shape.get(path.deps) != "length":
                        shape[path.deps] = need
        elif isinstance(cond, Logic):
            for child in cond.children:
                walk(child, top)
        else:
            if top:
                whole.add(cond.path.deps)
            walk(cond.condition, False)

    for cond in conds:
        walk(cond, True)
    return {deps: need for deps, need in shape.items() if deps not in whole}


def _shape_leaf(leaf: Leaf) -> Shape | None:
    """How much of its value a leaf reads, when it reads only its shape (else None)."""
    if leaf.is_change or not all(isinstance(s, Key) for p in leaf.paths for s in p.steps):
        return None
    needs = set()
    for op, arg, _ in leaf.ops:
        need = SHAPE_OPERATORS.get(op.name)
        if need is None or isinstance(arg, Ref):
            return None
        needs.add(need)
    return "length" if "length" in needs else "type"


def shape_of(value: Any, need: Shape) -> Any:
    """What the shape operators can tell of a value: its JSON type (`integer`, a whole number
    however written, apart from `number`), with `need="length"` its length too. A string
    holding a redaction marker is kept whole: `length` and `empty` read the marker's own
    `len:`, and `type` cannot tell a hidden number from a hidden string (an `error`) but can
    tell it from an object."""
    kind = type(value)
    if kind is str:
        if MARKER_START in value:
            return value
        return ["s", len(value)] if need == "length" else "s"
    if kind is list:
        return ["a", len(value)] if need == "length" else "a"
    if kind is dict:
        return ["o", len(value)] if need == "length" else "o"
    return schema_type(value)  # (30.0 is 30's; no other text: a marker's holds `[secret`)


def status_key(doc: Any, reads: Sequence[StatusRead]) -> bytes | None:
    """`projection_key` for `status_reads`: an array read by element is projected element by
    element (marked apart: a projection of all of it has at most two entries), and a path read
    for its shape by `shape_of`."""
    try:
        parts = [strict_json(_status_projection(doc, deps, need)) for deps, need in reads]
    except TypeError:  # not JSON, or not type-strict (see `strict_json`)
        return None
    return _joined(parts)


def _joined(parts: list[bytes]) -> bytes:
    """The parts' bytes joined by NUL (which JSON text never holds raw), as they are when
    short, else their digest (a 256-bit BLAKE2b: a collision is not a practical concern)."""
    data = b"\0".join(parts)
    return data if len(data) <= _SHORT_KEY else hashlib.blake2b(data, digest_size=32).digest()


#: The document and environment status keys were last made for, with the bytes of each read
#: (by the read's number, `_read_number`): the rules run on one document one after the other
#: and many read the same (every change rule reads `changes` by path and kind), so each read is
#: projected once per document.
_LAST: tuple[Any, Any, dict[int, bytes]] = (None, None, {})
#: Each distinct `StatusRead` by number (a nested tuple's hash is not kept: it was worked out
#: again on every lookup, for every rule on every step).
_READ_NUMBERS: dict[StatusRead, int] = {}


def _read_number(read: StatusRead) -> int:
    return _READ_NUMBERS.setdefault(read, len(_READ_NUMBERS))


def _shared_status_key(
    doc: Any, env: Env, reads: Sequence[StatusRead], numbers: Sequence[int]
) -> bytes | None:
    """`status_key(doc, reads)`, each read serialized once per document (`numbers`: each
    read's `_read_number`). The environment is part of the identity: every evaluation and
    every change step makes its own, so a document changed in place between two evaluations is
    projected anew."""
    global _LAST
    held = _LAST
    if held[0] is not doc or held[1] is not env:
        held = _LAST = (doc, env, {})
    parts = held[2]
    chunks = []
    try:
        for read, number in zip(reads, numbers, strict=True):
            part = parts.get(number)
            if part is None:
                part = parts[number] = strict_json(_status_projection(doc, *read))
            chunks.append(part)
    except TypeError:  # not JSON, or not type-strict (see `strict_json`)
        return None
    return _joined(chunks)


#: Status keys up to this many bytes are kept as they are (a digest costs more than it saves).
_SHORT_KEY = 96


def _status_projection(doc: Any, deps: Deps, need: Need) -> Any:
    seen = projection(doc, deps)
    if need is None or len(seen) < 2:
        return seen
    if need == "type" or need == "length":
        return seen if seen[0] < len(deps) else [seen[0], shape_of(seen[1], need)]
    if type(seen[1]) is not list or isinstance(need, str):
        return seen
    if any(d == () and n is None for d, n in need):
        return [seen[0], None, seen[1]]
    return [seen[0], None, [[_element_part(item, d, n) for d, n in need] for item in seen[1]]]


def _element_part(item: Any, deps: Deps, need: Shape | None) -> Any:
    seen = projection(item, deps)
    if need is None or len(seen) < 2 or seen[0] < len(deps):
        return seen
    return [seen[0], shape_of(seen[1], need)]


def cacheable(reads: Sequence[Deps]) -> bool:
    """False when a rule reads the whole document or a field that changes on every step."""
    return all(deps and deps[0] not in PER_STEP_FIELDS for deps in reads)


def projection_key(doc: Any, reads: Sequence[Deps]) -> bytes | None:
    """A digest of the type-strict bytes of the projection (None when it cannot be serialized).

    The bytes can be kilobytes (a whole `customModels` list); a 256-bit BLAKE2b digest keeps the
    cache small, and a collision is not a practical concern."""
    # Not sorted: insertion order shows in messages and evidence, so it belongs in the key.
    try:
        data = strict_json([projection(doc, deps) for deps in reads])
    except TypeError:  # not JSON, or not type-strict (see `strict_json`)
        return None
    return hashlib.blake2b(data, digest_size=32).digest()


class VerdictCache(Generic[V]):
    """Verdicts (or statuses) of one rule by projection key, starting over when its keys
    exceed the budget."""

    def __init__(self, budget: int = CACHE_BUDGET) -> None:
        self.verdicts: dict[bytes, V] = {}
        self.budget = budget
        self.size = 0

    def get(self, key: bytes, compute: Callable[[], V]) -> V:
        """The verdict cached under `key`, computing and storing it on a miss."""
        found = self.verdicts.get(key)
        if found is not None:
            return found
        verdict = compute()
        if self.size + len(key) > self.budget:
            self.verdicts.clear()
            self.size = 0
        self.verdicts[key] = verdict
        self.size += len(key)
        return verdict


class MemoRule:
    """A rule with the paths it reads and its verdict cache (when it can be cached)."""

    def __init__(self, rule: Rule, *, enabled: bool = True, steady: bool = False) -> None:
        self.rule = rule
        self.reads = rule_reads(rule)
        self.cache: VerdictCache[Verdict] | None = None
        self.statuses: VerdictCache[Status] | None = None
        # `steady`: the documents are revisions from the store, never changed once judged
        # (see `status.Steady`)
        self.elements = ElementMemo(rule, steady=steady) if enabled else None
        # The status key, when it is narrower than the verdict's (an array read by element).
        self.narrow: tuple[StatusRead, ...] | None = None
        self.numbers: tuple[int, ...] = ()  # each narrow read's `_read_number`
        # With `keep`: every verdict handed out, by key, and the keys `seed` gave (an earlier
        # run's verdicts, see `incremental.dump_verdicts`).
        self.used: dict[bytes, Verdict] | None = None
        self.seeded: frozenset[bytes] = frozenset()
        if enabled and cacheable(self.reads):
            narrow = status_reads(rule)
            self.narrow = narrow if any(need is not None for _, need in narrow) else None
            self.numbers = tuple(_read_number(read) for read in narrow)
            self.cache, self.statuses = VerdictCache(), VerdictCache()

    def keep(self, seed: Mapping[bytes, Verdict] | None = None) -> bool:
        """Remember every verdict handed out from now on (`used`), starting from `seed`'s
        (verdicts an earlier run handed out for the same rule: a verdict is a function of the
        projection, so they stand). False, and nothing kept, when the rule is not cached."""
        if self.cache is None:
            return False
        self.used = {}
        if seed:
            self.seeded = frozenset(seed)
            for key, verdict in seed.items():
                self.cache.get(key, lambda v=verdict: v)  # type: ignore[misc]
        return True

    def verdict(self, doc: Any, env: Env) -> Verdict:
        """The rule's verdict on `doc`, reused when the same projection was seen before."""
        key = None if self.cache is None else projection_key(doc, self.reads)
        if self.cache is None or key is None:
            return evaluate_rule.run_rule(self.rule, doc, env)
        verdict = self.cache.get(key, lambda: evaluate_rule.run_rule(self.rule, doc, env))
        if self.used is not None:
            self.used[key] = verdict
        return verdict

    def status(self, doc: Any, env: Env) -> Status:
        """The rule's status on `doc`, without words (`status.rule_status`), reused likewise."""
        if self.narrow is not None and self.statuses is not None:
            key = _shared_status_key(doc, env, self.narrow, self.numbers)
            if key is None:
                return rule_status(self.rule, doc, env, self.elements)
            return self.statuses.get(key, lambda: rule_status(self.rule, doc, env, self.elements))
        key = None if self.cache is None else projection_key(doc, self.reads)
        if self.cache is None or self.statuses is None or key is None:
            return rule_status(self.rule, doc, env, self.elements)
        known = self.cache.verdicts.get(key)
        if known is not None:
            return known.status
        return self.statuses.get(key, lambda: rule_status(self.rule, doc, env, self.elements))
