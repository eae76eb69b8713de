"""Shape operators: exists, empty, type, length.

Takes the actual value (or MISSING) and the argument, gives a bool (registered in `core.REGISTRY`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from auditor.operators.core import BOOL, MISSING, NUMBER, OperandTypeError, json_type, operator


@operator("exists", BOOL, "to be present", "to be absent", kind="presence")
def exists(actual: Any, expected: bool) -> bool:
    """The key is present (`true`) or absent (`false`); a null value is present."""
    return (actual is not MISSING) is expected


@operator("empty", BOOL, "an empty {noun}", "a non-empty {noun}")
def empty(actual: Any, expected: bool) -> bool:
    """An array, object or string has no content (null counts as empty)."""
    if actual is not None and not isinstance(actual, list | dict | str):
        raise OperandTypeError("an array, object, string or null", actual)
    return (not actual) is expected


TYPE_NAMES = ("null", "boolean", "integer", "number", "string", "array", "object")


def schema_type(value: Any) -> str:
    """A value's JSON type as `type` reads it: `integer` for a number without a fractional
    part however written (`30` or `30.0`, as in JSON Schema), `number` for any other. The
    memo's status keys read a value by it too (`evaluate.memo.shape_of`)."""
    found = json_type(value)
    return "integer" if found == "number" and value.is_integer() else found


@operator("type", {"enum": list(TYPE_NAMES)}, "to be of type {arg}", "not to be of type {arg}")
def type_(actual: Any, expected: str) -> bool:
    """The JSON type is the named one (`integer`: a number without a fractional part, `30`
    or `30.0`, as in JSON Schema; `number` also accepts integers)."""
    found = schema_type(actual)
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


@operator("length", LENGTH_ARG, "to have length {arg}", "not to have length {arg}")
def length(actual: Any, expected: int | Mapping[str, float]) -> bool:
    """An array, object or string has the given length (or satisfies the bounds)."""
    if not isinstance(actual, list | dict | str):
        raise OperandTypeError("an array, object or string", actual)
    bounds = expected if isinstance(expected, Mapping) else {"equals": expected}
    return all(_LENGTH_OPS[op](len(actual), bound) for op, bound in bounds.items())
