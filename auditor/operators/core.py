"""The operator registry's core: the one `REGISTRY`, the `@operator` decorator and shared helpers.

Takes nothing; gives the registry the concept modules (`compare`, `text`, `shape`, `timing`,
`change`) register into, the MISSING marker, JSON type names, policy equality, and the scope
of one evaluation (`enter_scope`) in which a long list is looked in by an index (`member`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Literal

Kind = Literal["value", "presence", "time", "change"]


class _Missing:
    """The marker for an absent key (distinct from a JSON null)."""

    _instance: _Missing | None = None

    def __new__(cls) -> _Missing:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()

#: Ordered enums every policy may use; files may declare more under `enums:`.
BUILTIN_ENUMS: dict[str, tuple[str, ...]] = {
    "autonomy": ("off", "low", "medium", "high"),
    "reasoning_effort": ("none", "off", "minimal", "low", "medium", "high", "xhigh", "max"),
}


class OperandTypeError(Exception):
    """The actual value has a type the operator cannot compare."""

    def __init__(self, wanted: str, actual: Any = None, detail: str = "", side: str = "") -> None:
        self.wanted = wanted
        self.actual = actual
        self.detail = detail
        self.side = side  # a change operator's side at fault: "before", "after" or ""
        super().__init__(detail or f"needs {wanted}, got {json_type(actual)}")


@dataclass(frozen=True)
class Ordered:
    """A prepared argument for ordered-enum operators: the enum and a level (or None)."""

    enum: str
    levels: tuple[str, ...]
    value: str | None = None

    def rank(self, level: Any) -> int:
        """The position of `level` in the enum; OperandTypeError if it is not a level."""
        if isinstance(level, str) and level in self.levels:
            return self.levels.index(level)
        order = " < ".join(self.levels)
        raise OperandTypeError(
            f"a level of {self.enum}", level, f"not a level of {self.enum} ({order})"
        )


Prepare = Callable[[Any, Mapping[str, tuple[str, ...]]], Any]


def _keep(arg: Any, enums: Mapping[str, tuple[str, ...]]) -> Any:
    return arg


@dataclass(frozen=True)
class Operator:
    """A registered operator: its function, argument schema and how it reads its arguments."""

    name: str
    fn: Callable[..., bool]
    schema: Mapping[str, Any]
    expect: str  # the expectation after "expected": `to match /{arg}/`; `{noun}`: list, string…
    kind: Kind = "value"
    prepare: Prepare = _keep
    doc: str = field(default="")
    ref: bool = False  # the argument may be `{ref: <path>}`, read from the document at run time
    negated: str = ""  # the expectation under `not` (for boolean arguments: the `false` form)


REGISTRY: dict[str, Operator] = {}


def operator(
    name: str,
    schema: Mapping[str, Any],
    expect: str,
    negated: str,
    *,
    kind: Kind = "value",
    prepare: Prepare = _keep,
    ref: bool = False,
) -> Callable[[Callable[..., bool]], Callable[..., bool]]:
    """Register the decorated pure function as the policy operator `name`."""

    def register(fn: Callable[..., bool]) -> Callable[..., bool]:
        # one line, whatever indentation the docstring had: CPython 3.13 strips it when
        # compiling, 3.11 keeps it, and the policy schema (and its digest) must be the same
        doc = " ".join((fn.__doc__ or "").split())
        run = fn
        if kind in ("value", "time"):  # a redacted value is judged by its fingerprint
            from auditor.operators.hidden import guarded

            run = guarded(name, fn)
        elif kind == "change":
            from auditor.operators.hidden import guarded_change

            run = guarded_change(name, fn)
        REGISTRY[name] = Operator(name, run, schema, expect, kind, prepare, doc, ref, negated)
        return fn

    return register


def json_type(value: Any) -> str:
    """The JSON type name of a value: null, boolean, integer, number, string, array, object."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def is_number(value: Any) -> bool:
    """A JSON number (booleans excluded)."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def same(a: Any, b: Any) -> bool:
    """Policy equality: numbers by value, everything else type-strict (`true` is not `1`)."""
    kind = type(a)
    if kind is not type(b):
        return is_number(a) and is_number(b) and bool(a == b)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return bool(a == b)


def member(value: Any, items: Any) -> bool:
    """`value` equals (policy equality) one of `items`. A list looked in a second time within
    one evaluation is looked in by its index (`_Index`): `{each: a, assert: {path: "@", in:
    {ref: b}}}` over 40,000 entries of each list was 800 million comparisons."""
    if type(items) is list and len(items) >= INDEX_FROM:
        index = _index_of(items)
        found = None if index is None else index.holds(value)
        if found is not None:
            return found
    return any(same(value, item) for item in items)


#: Lists shorter than this are looked in one item after another.
INDEX_FROM = 16
#: Lists one evaluation keeps (an index, or the sighting that may lead to one) before it
#: starts over (bounds memory: a list a redacted value's items were read into is new on
#: every call).
SCOPE_LISTS = 4096


class Scope:
    """What one evaluation of one document worked out about the values it read, by their
    identity: each entry holds the objects it was worked out for, so no identity is reused
    while it is kept, and the evaluation reads the document without changing it. The scope
    ends with the evaluation (`run_rule`, `rule_status`): a document changed in place between
    two evaluations is read afresh. A module-wide cache by `id()` was stale on a list
    changed in place at the same length."""

    __slots__ = ("memos",)

    def __init__(self) -> None:
        self.memos: dict[str, dict[Any, Any]] = {}


_SCOPE: ContextVar[Scope | None] = ContextVar("auditor_evaluation_scope", default=None)


def enter_scope() -> Any:
    """Begin one evaluation's scope (None when one is already open: the outer one serves);
    give the token to `leave_scope` when the evaluation ends, however it ends."""
    if _SCOPE.get() is not None:
        return None
    return _SCOPE.set(Scope())


def leave_scope(token: Any) -> None:
    """End the scope `enter_scope` began (nothing when it gave None)."""
    if token is not None:
        _SCOPE.reset(token)


@contextmanager
def evaluation_scope() -> Iterator[None]:
    """One scope for every rule evaluated on one document (a revision's settings, a
    repository's readiness view): what one rule worked out about the document's lists (an
    index, a `{ref: …}`'s type check) serves the next, instead of each rule working it out
    again (100 rules on one 40,000-entry list: 8 million type checks, not 40,000). The
    document is not changed while the scope lasts (the engine only reads it)."""
    token = enter_scope()
    try:
        yield
    finally:
        leave_scope(token)


def scoped(name: str) -> dict[Any, Any] | None:
    """The open evaluation's memo called `name` (empty at first), or None outside one."""
    scope = _SCOPE.get()
    if scope is None:
        return None
    memo = scope.memos.get(name)
    if memo is None:
        memo = scope.memos[name] = {}
    return memo


def _index_of(items: list[Any]) -> _Index | None:
    """The index of `items` when this evaluation looked in it before (built now if not yet);
    None the first time, and outside an evaluation."""
    memo = scoped("member")
    if memo is None:
        return None
    found = memo.get(id(items))
    if found is None or found[0] is not items:
        if len(memo) >= SCOPE_LISTS:
            memo.clear()
        memo[id(items)] = (items, None)
        return None
    index: _Index | None = found[1]
    if index is None:
        index = _Index(items)
        memo[id(items)] = (items, index)
    return index


class _Unkeyed(Exception):
    """A value with no canonical key (see `canonical`)."""


class _HoldsNaN(_Unkeyed):
    """A value holding a NaN, which `same` finds equal to nothing."""


def canonical(value: Any) -> Any:
    """A hashable key equal to another's exactly when `same` holds between the two values:
    a number is itself (Python's `1 == 1.0`, and their hashes agree, integers compared
    exactly), a string and null are themselves, a boolean is tagged (`true` is not `1`), an
    array is the tuple of its items' keys, an object the set of its (key, value's key) pairs
    (key order does not count). `_Unkeyed` for a value holding anything else: a NaN
    (`_HoldsNaN`), a type other than JSON's (`same` compares it by its own rules)."""
    kind = type(value)
    if kind is str or kind is int or value is None:
        return value
    if kind is float:
        if value != value:
            raise _HoldsNaN
        return value
    if kind is bool:
        return (_BOOL, value)
    if kind is list:
        return (_LIST, *[canonical(v) for v in value])
    if kind is dict:
        if not all(type(k) is str for k in value):
            raise _Unkeyed
        return (_DICT, frozenset([(k, canonical(v)) for k, v in value.items()]))
    raise _Unkeyed


_BOOL, _LIST, _DICT = object(), object(), object()  # tags no other value's key can equal


def _json_only(value: Any) -> bool:
    """`value` is made of JSON's types only (objects keyed by strings)."""
    kind = type(value)
    if kind is list:
        return all(_json_only(v) for v in value)
    if kind is dict:
        return all(type(k) is str and _json_only(v) for k, v in value.items())
    return kind in (str, int, float, bool) or value is None


def _never_equal(value: Any) -> bool:
    """`value` holds a NaN and only JSON's types: `same` finds it equal to no JSON value."""
    try:
        canonical(value)
    except _HoldsNaN:
        pass
    except (_Unkeyed, RecursionError):
        return False
    else:
        return False
    try:
        return _json_only(value)
    except RecursionError:
        return False


class _Index:
    """A list's items by canonical key: one set lookup answers `member` as comparing with
    every item would. Items without a key are kept to compare one by one (`rest`), except a
    JSON value holding a NaN, equal to no JSON value."""

    __slots__ = ("keys", "rest")

    def __init__(self, items: list[Any]) -> None:
        self.keys: set[Any] = set()
        self.rest: list[Any] = []
        for item in items:
            try:
                self.keys.add(canonical(item))
            except (_Unkeyed, RecursionError):
                if not _never_equal(item):
                    self.rest.append(item)

    def holds(self, value: Any) -> bool | None:
        """Whether `value` equals an item (`same`); None when the index cannot tell (a value
        without a key): the items are then compared one by one."""
        try:
            key = canonical(value)
        except (_Unkeyed, RecursionError):
            return False if not self.rest and _never_equal(value) else None
        return key in self.keys or any(same(value, item) for item in self.rest)


def need_list(actual: Any) -> list[Any]:
    """The value as an array, or OperandTypeError."""
    if not isinstance(actual, list):
        raise OperandTypeError("an array", actual)
    return actual


def need_number(actual: Any) -> float:
    """The value as a number, or OperandTypeError. An integer stays one: Python compares an
    integer with an integer or a float exactly (`float()` would make 2**53 + 1 equal 2**53)."""
    if not is_number(actual):
        raise OperandTypeError("a number", actual)
    number: float = actual
    if number != number:  # NaN: every comparison is false, and `not` would make that a pass
        raise OperandTypeError("a number", actual, "NaN is not a number that can be compared")
    return number


def need_substrings(op: str, actual: str, wanted: list[Any]) -> list[str]:
    """The arguments as substrings of the string `actual`; OperandTypeError for one that is
    not a string (`contains: {k: 1}` on a string is a mismatch, not a `false` that `not`
    or `excludes` would turn into a pass)."""
    for item in wanted:
        if not isinstance(item, str):
            raise OperandTypeError(
                "a string argument",
                actual,
                f"a string holds substrings; `{op}` was given {json_type(item)} to look for",
            )
    return wanted


def need_string(actual: Any) -> str:
    """The value as a string, or OperandTypeError."""
    if not isinstance(actual, str):
        raise OperandTypeError("a string", actual)
    return actual


ANY: dict[str, Any] = {}
ARRAY: dict[str, Any] = {"type": "array"}
BOOL: dict[str, Any] = {"type": "boolean"}
NUMBER: dict[str, Any] = {"type": "number"}
STRING: dict[str, Any] = {"type": "string"}
STRING_LIST: dict[str, Any] = {"type": "array", "items": STRING}
STRINGS: dict[str, Any] = {
    "anyOf": [STRING, {"type": "array", "items": STRING}],
    "x-expects": "a string or a list of strings",
}
