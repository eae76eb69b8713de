"""The operator registry: every comparison a policy leaf can make, as a pure function.

Takes an actual value (already resolved from the data) and a prepared expected value, gives a
bool. Operators know nothing of paths: a value of the wrong type raises `OperandTypeError`,
and the evaluator turns it into an `error` result naming the JSON path. `@operator("name")`
above a function is the whole registration; the policy schema is built from `REGISTRY`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import Any, Literal

import re2

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

    def __init__(self, wanted: str, actual: Any = None, detail: str = "") -> None:
        self.wanted = wanted
        self.actual = actual
        self.detail = detail
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
    expect: str  # how a message states the expectation, `{arg}` is the argument
    kind: Kind = "value"
    prepare: Prepare = _keep
    doc: str = field(default="")


REGISTRY: dict[str, Operator] = {}


def operator(
    name: str,
    schema: Mapping[str, Any],
    expect: str,
    *,
    kind: Kind = "value",
    prepare: Prepare = _keep,
) -> Callable[[Callable[..., bool]], Callable[..., bool]]:
    """Register the decorated pure function as the policy operator `name`."""

    def register(fn: Callable[..., bool]) -> Callable[..., bool]:
        doc = (fn.__doc__ or "").strip()
        REGISTRY[name] = Operator(name, fn, schema, expect, kind, prepare, doc)
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


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def same(a: Any, b: Any) -> bool:
    """Policy equality: numbers by value, everything else type-strict (`true` is not `1`)."""
    if _is_number(a) and _is_number(b):
        return bool(a == b)
    if type(a) is not type(b):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return bool(a == b)


def _member(value: Any, items: Any) -> bool:
    return any(same(value, item) for item in items)


def _need_list(actual: Any) -> list[Any]:
    if not isinstance(actual, list):
        raise OperandTypeError("an array", actual)
    return actual


def _need_number(actual: Any) -> float:
    if not _is_number(actual):
        raise OperandTypeError("a number", actual)
    return float(actual)


def _need_string(actual: Any) -> str:
    if not isinstance(actual, str):
        raise OperandTypeError("a string", actual)
    return actual


ANY: dict[str, Any] = {}
ARRAY: dict[str, Any] = {"type": "array"}
BOOL: dict[str, Any] = {"type": "boolean"}
NUMBER: dict[str, Any] = {"type": "number"}
STRING: dict[str, Any] = {"type": "string"}
STRINGS: dict[str, Any] = {
    "anyOf": [STRING, {"type": "array", "items": STRING}],
    "x-expects": "a string or a list of strings",
}


@operator("equals", ANY, "{arg}")
def equals(actual: Any, expected: Any) -> bool:
    """The value equals the argument (numbers by value, otherwise type-strict)."""
    return same(actual, expected)


@operator("not_equals", ANY, "not {arg}")
def not_equals(actual: Any, expected: Any) -> bool:
    """The value differs from the argument."""
    return not same(actual, expected)


@operator("in", ARRAY, "one of {arg}")
def in_(actual: Any, expected: list[Any]) -> bool:
    """The value is one of the listed values."""
    return _member(actual, expected)


@operator("not_in", ARRAY, "none of {arg}")
def not_in(actual: Any, expected: list[Any]) -> bool:
    """The value is none of the listed values."""
    return not _member(actual, expected)


@operator("contains", ANY, "to contain {arg}")
def contains(actual: Any, expected: Any) -> bool:
    """An array holds the element, or a string holds the substring."""
    if isinstance(actual, str):
        return isinstance(expected, str) and expected in actual
    return _member(expected, _need_list(actual))


@operator("contains_all", ARRAY, "to contain all of {arg}")
def contains_all(actual: Any, expected: list[Any]) -> bool:
    """The array holds every listed element."""
    items = _need_list(actual)
    return all(_member(e, items) for e in expected)


@operator("contains_any", ARRAY, "to contain any of {arg}")
def contains_any(actual: Any, expected: list[Any]) -> bool:
    """The array holds at least one listed element."""
    items = _need_list(actual)
    return any(_member(e, items) for e in expected)


@operator("excludes", ANY, "to contain none of {arg}")
def excludes(actual: Any, expected: Any) -> bool:
    """The array holds none of the given element(s); a string, none of the substrings."""
    unwanted = expected if isinstance(expected, list) else [expected]
    if isinstance(actual, str):
        return not any(isinstance(u, str) and u in actual for u in unwanted)
    items = _need_list(actual)
    return not any(_member(u, items) for u in unwanted)


@operator("subset_of", ARRAY, "only values from {arg}")
def subset_of(actual: Any, expected: list[Any]) -> bool:
    """Every element of the array is one of the listed values."""
    return all(_member(item, expected) for item in _need_list(actual))


@operator("gt", NUMBER, "> {arg}")
def gt(actual: Any, expected: float) -> bool:
    """The number is greater than the argument."""
    return _need_number(actual) > expected


@operator("gte", NUMBER, ">= {arg}")
def gte(actual: Any, expected: float) -> bool:
    """The number is greater than or equal to the argument."""
    return _need_number(actual) >= expected


@operator("lt", NUMBER, "< {arg}")
def lt(actual: Any, expected: float) -> bool:
    """The number is less than the argument."""
    return _need_number(actual) < expected


@operator("lte", NUMBER, "<= {arg}")
def lte(actual: Any, expected: float) -> bool:
    """The number is less than or equal to the argument."""
    return _need_number(actual) <= expected


ORDERED_ARG: dict[str, Any] = {
    "anyOf": [
        STRING,
        {
            "type": "object",
            "properties": {"enum": STRING, "value": STRING},
            "required": ["enum", "value"],
            "additionalProperties": False,
        },
    ],
    "x-expects": "{enum: <ordered enum>, value: <level>}, or a level with `enum:` on the leaf",
}


def prepare_ordered(arg: Any, enums: Mapping[str, tuple[str, ...]]) -> Ordered:
    """Resolve `{enum: name, value: level}` (or `{enum: name}`) against the declared enums."""
    if not isinstance(arg, dict):
        raise ValueError("needs {enum: <ordered enum>, value: <level>} or `enum:` on the leaf")
    name = arg.get("enum")
    if not isinstance(name, str) or name not in enums:
        known = ", ".join(sorted(enums))
        raise ValueError(f"unknown ordered enum `{name}` (declared: {known})")
    ordered = Ordered(name, enums[name], arg.get("value"))
    if ordered.value is not None:
        try:
            ordered.rank(ordered.value)
        except OperandTypeError as exc:
            raise ValueError(f"`{ordered.value}` is {exc.detail}") from None
    return ordered


@operator("at_most", ORDERED_ARG, "at most {arg}", prepare=prepare_ordered)
def at_most(actual: Any, expected: Ordered) -> bool:
    """The level is at or below the argument in the ordered enum."""
    return expected.rank(actual) <= expected.rank(expected.value)


@operator("at_least", ORDERED_ARG, "at least {arg}", prepare=prepare_ordered)
def at_least(actual: Any, expected: Ordered) -> bool:
    """The level is at or above the argument in the ordered enum."""
    return expected.rank(actual) >= expected.rank(expected.value)


_UNSUPPORTED_RE = re.compile(r"\(\?<?[=!]|\\[1-9]")


def prepare_regex(arg: Any, enums: Mapping[str, tuple[str, ...]]) -> Any:
    """Compile an RE2 pattern (linear time); lookaround and backreferences are refused."""
    if not isinstance(arg, str):
        raise ValueError("a regular expression must be a string")
    if _UNSUPPORTED_RE.search(arg):
        raise ValueError(
            f"regex {arg!r} uses lookaround or a backreference, which RE2 (linear time) does "
            "not support"
        )
    options = re2.Options()
    options.log_errors = False
    try:
        return re2.compile(arg, options)
    except re2.error as exc:
        reason = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else exc
        raise ValueError(f"invalid regex {arg!r}: {reason}") from None


@operator("matches", STRING, "to match /{arg}/", prepare=prepare_regex)
def matches(actual: Any, expected: Any) -> bool:
    """The string contains a match of the RE2 pattern (anchor with ^…$ for a full match)."""
    return expected.search(_need_string(actual)) is not None


@operator("not_matches", STRING, "not to match /{arg}/", prepare=prepare_regex)
def not_matches(actual: Any, expected: Any) -> bool:
    """The string contains no match of the RE2 pattern."""
    return expected.search(_need_string(actual)) is None


@operator("starts_with", STRINGS, "to start with {arg}")
def starts_with(actual: Any, expected: str | list[str]) -> bool:
    """The string starts with the prefix (or one of the listed prefixes)."""
    prefixes = tuple(expected) if isinstance(expected, list) else (expected,)
    return _need_string(actual).startswith(prefixes)


@operator("ends_with", STRINGS, "to end with {arg}")
def ends_with(actual: Any, expected: str | list[str]) -> bool:
    """The string ends with the suffix (or one of the listed suffixes)."""
    suffixes = tuple(expected) if isinstance(expected, list) else (expected,)
    return _need_string(actual).endswith(suffixes)


@operator("exists", BOOL, "present={arg}", kind="presence")
def exists(actual: Any, expected: bool) -> bool:
    """The key is present (`true`) or absent (`false`); a null value is present."""
    return (actual is not MISSING) is expected


@operator("empty", BOOL, "empty={arg}")
def empty(actual: Any, expected: bool) -> bool:
    """An array, object or string has no content (null counts as empty)."""
    if actual is not None and not isinstance(actual, list | dict | str):
        raise OperandTypeError("an array, object, string or null", actual)
    return (not actual) is expected


TYPE_NAMES = ("null", "boolean", "integer", "number", "string", "array", "object")


@operator("type", {"enum": list(TYPE_NAMES)}, "of type {arg}")
def type_(actual: Any, expected: str) -> bool:
    """The JSON type is the named one (`number` also accepts integers)."""
    found = json_type(actual)
    return found == expected or (expected == "number" and found == "integer")


LENGTH_ARG: dict[str, Any] = {
    "anyOf": [
        {"type": "integer", "minimum": 0},
        {
            "type": "object",
            "properties": {k: NUMBER for k in ("equals", "gt", "gte", "lt", "lte")},
            "additionalProperties": False,
            "minProperties": 1,
        },
    ],
    "x-expects": "an exact length, or bounds such as {gte: 1, lte: 10}",
}
_LENGTH_OPS: dict[str, Callable[[float, float], bool]] = {
    "equals": lambda a, b: a == b,
    "gt": lambda a, b: a > b,
    "gte": lambda a, b: a >= b,
    "lt": lambda a, b: a < b,
    "lte": lambda a, b: a <= b,
}


@operator("length", LENGTH_ARG, "length {arg}")
def length(actual: Any, expected: int | Mapping[str, float]) -> bool:
    """An array, object or string has the given length (or satisfies the bounds)."""
    if not isinstance(actual, list | dict | str):
        raise OperandTypeError("an array, object or string", actual)
    bounds = expected if isinstance(expected, Mapping) else {"equals": expected}
    return all(_LENGTH_OPS[op](len(actual), bound) for op, bound in bounds.items())


def to_datetime(value: Any) -> datetime:
    """An ISO-8601 string, a date, or Unix milliseconds as a UTC datetime."""
    if isinstance(value, datetime):
        moment = value
    elif isinstance(value, date):
        moment = datetime(value.year, value.month, value.day)
    elif _is_number(value):
        moment = datetime.fromtimestamp(value / 1000, UTC)
    elif isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value)
        except ValueError:
            raise OperandTypeError(
                "an ISO-8601 timestamp", value, "not an ISO-8601 timestamp"
            ) from None
    else:
        raise OperandTypeError("a timestamp (ISO-8601 or Unix ms)", value)
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _age_days(actual: Any, now: datetime) -> float:
    return (now - to_datetime(actual)).total_seconds() / 86400


@operator("within_days", NUMBER, "within the last {arg} days", kind="time")
def within_days(actual: Any, expected: float, now: datetime) -> bool:
    """The timestamp is at most N days before now."""
    return _age_days(actual, now) <= expected


@operator("older_than_days", NUMBER, "older than {arg} days", kind="time")
def older_than_days(actual: Any, expected: float, now: datetime) -> bool:
    """The timestamp is more than N days before now."""
    return _age_days(actual, now) > expected


def parse_version(value: Any) -> tuple[int, ...]:
    """`v1.2.3` / `1.2` / `1.2.3-beta` as a tuple of ints (pre-release suffix ignored)."""
    text = _need_string(value) if not _is_number(value) else str(value)
    match = re.fullmatch(r"v?(\d+(?:\.\d+)*)(?:[-+].*)?", text.strip())
    if match is None:
        raise OperandTypeError("a version such as 1.2.3", value, "not a version such as 1.2.3")
    parts = [int(p) for p in match.group(1).split(".")]
    while len(parts) > 1 and parts[-1] == 0:
        parts.pop()
    return tuple(parts)


def prepare_version(arg: Any, enums: Mapping[str, tuple[str, ...]]) -> tuple[int, ...]:
    """Parse the minimum version once, at load."""
    try:
        return parse_version(arg)
    except OperandTypeError:
        raise ValueError(f"{arg!r} is not a version such as 1.2.3") from None


@operator(
    "version_at_least", {"type": ["string", "number"]}, "version >= {arg}", prepare=prepare_version
)
def version_at_least(actual: Any, expected: tuple[int, ...]) -> bool:
    """The dotted version is at least the argument (`1.10` > `1.9`)."""
    return parse_version(actual) >= expected


def _differs(before: Any, after: Any) -> bool:
    if before is MISSING or after is MISSING:
        return before is not after
    return not same(before, after)


@operator("changed", BOOL, "changed={arg}", kind="change")
def changed(before: Any, after: Any, expected: bool) -> bool:
    """(change targets) The value differs between before and after (`false`: unchanged)."""
    return _differs(before, after) is expected


@operator("added", BOOL, "added={arg}", kind="change")
def added(before: Any, after: Any, expected: bool) -> bool:
    """(change targets) The key is absent before and present after."""
    return (before is MISSING and after is not MISSING) is expected


@operator("removed", BOOL, "removed={arg}", kind="change")
def removed(before: Any, after: Any, expected: bool) -> bool:
    """(change targets) The key is present before and absent after."""
    return (before is not MISSING and after is MISSING) is expected


@operator("from", ANY, "to change from {arg}", kind="change")
def from_(before: Any, after: Any, expected: Any) -> bool:
    """(change targets) The value was the argument before and is different after."""
    return before is not MISSING and same(before, expected) and _differs(before, after)


@operator("to", ANY, "to change to {arg}", kind="change")
def to(before: Any, after: Any, expected: Any) -> bool:
    """(change targets) The value is the argument after and was different before."""
    return after is not MISSING and same(after, expected) and _differs(before, after)


DIRECTION_ARG: dict[str, Any] = {
    "anyOf": [
        {"const": True},
        {
            "type": "object",
            "properties": {"enum": STRING},
            "required": ["enum"],
            "additionalProperties": False,
        },
    ],
    "x-expects": "`true` (numbers) or {enum: <ordered enum>} (levels)",
}


def prepare_direction(arg: Any, enums: Mapping[str, tuple[str, ...]]) -> Ordered | None:
    """`true` compares numbers; `{enum: name}` compares levels of an ordered enum."""
    return None if arg is True else prepare_ordered(arg, enums)


def _ranks(before: Any, after: Any, order: Ordered | None) -> tuple[float, float] | None:
    if before is MISSING or after is MISSING:
        return None
    if order is None:
        return _need_number(before), _need_number(after)
    return order.rank(before), order.rank(after)


@operator("increased", DIRECTION_ARG, "to increase", kind="change", prepare=prepare_direction)
def increased(before: Any, after: Any, expected: Ordered | None) -> bool:
    """(change targets) The number or level is higher after than before."""
    ranks = _ranks(before, after, expected)
    return ranks is not None and ranks[1] > ranks[0]


@operator("decreased", DIRECTION_ARG, "to decrease", kind="change", prepare=prepare_direction)
def decreased(before: Any, after: Any, expected: Ordered | None) -> bool:
    """(change targets) The number or level is lower after than before."""
    ranks = _ranks(before, after, expected)
    return ranks is not None and ranks[1] < ranks[0]
