"""The operator registry's core: the one `REGISTRY`, the `@operator` decorator and shared helpers.

Takes nothing; gives the registry the concept modules (`compare`, `text`, `shape`, `timing`,
`change`) register into, the MISSING marker, JSON type names and policy equality.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
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
    """`value` equals (policy equality) one of `items`."""
    return any(same(value, item) for item in items)


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
