"""Equality, membership and ordering operators: equals, in, contains…, subset_of, gt…, at_most.

Takes the actual value and the prepared argument, gives a bool (registered in `core.REGISTRY`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from auditor.operators.core import (
    ANY,
    ARRAY,
    NUMBER,
    STRING,
    OperandTypeError,
    Ordered,
    member,
    need_list,
    need_number,
    need_substrings,
    operator,
    same,
)


@operator("equals", ANY, "{arg}", "not to be {arg}", ref=True)
def equals(actual: Any, expected: Any) -> bool:
    """The value equals the argument (numbers by value, otherwise type-strict)."""
    return same(actual, expected)


@operator("not_equals", ANY, "not to be {arg}", "{arg}", ref=True)
def not_equals(actual: Any, expected: Any) -> bool:
    """The value differs from the argument."""
    return not same(actual, expected)


@operator("in", ARRAY, "to be one of {arg}", "not to be one of {arg}", ref=True)
def in_(actual: Any, expected: list[Any]) -> bool:
    """The value is one of the listed values."""
    return member(actual, expected)


@operator("not_in", ARRAY, "not to be one of {arg}", "to be one of {arg}", ref=True)
def not_in(actual: Any, expected: list[Any]) -> bool:
    """The value is none of the listed values."""
    return not member(actual, expected)


@operator("contains", ANY, "to contain {arg}", "not to contain {arg}", ref=True)
def contains(actual: Any, expected: Any) -> bool:
    """An array holds the element, or a string holds the substring."""
    if isinstance(actual, str):
        return need_substrings("contains", actual, [expected])[0] in actual
    return member(expected, need_list(actual))


@operator("contains_all", ARRAY, "to contain all of {arg}", "to lack one of {arg}", ref=True)
def contains_all(actual: Any, expected: list[Any]) -> bool:
    """The array holds every listed element."""
    items = need_list(actual)
    return all(member(e, items) for e in expected)


@operator("contains_any", ARRAY, "to contain one of {arg}", "to contain none of {arg}", ref=True)
def contains_any(actual: Any, expected: list[Any]) -> bool:
    """The array holds at least one listed element."""
    items = need_list(actual)
    return any(member(e, items) for e in expected)


@operator("excludes", ANY, "to contain none of {arg}", "to contain some of {arg}", ref=True)
def excludes(actual: Any, expected: Any) -> bool:
    """The array holds none of the given element(s); a string, none of the substrings."""
    unwanted = expected if isinstance(expected, list) else [expected]
    if isinstance(actual, str):
        return not any(u in actual for u in need_substrings("excludes", actual, unwanted))
    items = need_list(actual)
    return not any(member(u, items) for u in unwanted)


@operator(
    "subset_of", ARRAY, "to hold only values from {arg}", "to hold a value outside {arg}", ref=True
)
def subset_of(actual: Any, expected: list[Any]) -> bool:
    """Every element of the array is one of the listed values."""
    return all(member(item, expected) for item in need_list(actual))


@operator("gt", NUMBER, "to be greater than {arg}", "to be at most {arg}", ref=True)
def gt(actual: Any, expected: float) -> bool:
    """The number is greater than the argument."""
    return need_number(actual) > expected


@operator("gte", NUMBER, "to be at least {arg}", "to be less than {arg}", ref=True)
def gte(actual: Any, expected: float) -> bool:
    """The number is greater than or equal to the argument."""
    return need_number(actual) >= expected


@operator("lt", NUMBER, "to be less than {arg}", "to be at least {arg}", ref=True)
def lt(actual: Any, expected: float) -> bool:
    """The number is less than the argument."""
    return need_number(actual) < expected


@operator("lte", NUMBER, "to be at most {arg}", "to be greater than {arg}", ref=True)
def lte(actual: Any, expected: float) -> bool:
    """The number is less than or equal to the argument."""
    return need_number(actual) <= expected


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


def prepare_level(arg: Any, enums: Mapping[str, tuple[str, ...]]) -> Ordered:
    """Like `prepare_ordered`, but a level is required (the two forms the schema accepts)."""
    ordered = prepare_ordered(arg, enums)
    if ordered.value is None:
        raise ValueError(
            f"needs a level of {ordered.enum}: `{{enum: {ordered.enum}, value: <level>}}`, "
            f"or `<level>` with `enum: {ordered.enum}` on the leaf"
        )
    return ordered


@operator("at_most", ORDERED_ARG, "to be at most {arg}", "to be above {arg}", prepare=prepare_level)
def at_most(actual: Any, expected: Ordered) -> bool:
    """The level is at or below the argument in the ordered enum."""
    return expected.rank(actual) <= expected.rank(expected.value)


@operator(
    "at_least", ORDERED_ARG, "to be at least {arg}", "to be below {arg}", prepare=prepare_level
)
def at_least(actual: Any, expected: Ordered) -> bool:
    """The level is at or above the argument in the ordered enum."""
    return expected.rank(actual) >= expected.rank(expected.value)
