"""Change operators (change targets only): changed, added, removed, from, to, increased, decreased.

Takes the value before, the value after (either may be MISSING) and the argument, gives a bool.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from auditor.operators.compare import comparable, prepare_ordered
from auditor.operators.core import (
    ANY,
    BOOL,
    MISSING,
    STRING,
    OperandTypeError,
    Ordered,
    need_number,
    operator,
    same,
)


def _differs(before: Any, after: Any) -> bool:
    if before is MISSING or after is MISSING:
        return before is not after
    return not same(before, after)


@operator("changed", BOOL, "to change", "to stay the same", kind="change")
def changed(before: Any, after: Any, expected: bool) -> bool:
    """(change targets) The value differs between before and after (`false`: unchanged)."""
    return _differs(before, after) is expected


@operator("added", BOOL, "to be added", "not to be added", kind="change")
def added(before: Any, after: Any, expected: bool) -> bool:
    """(change targets) The key is absent before and present after."""
    return (before is MISSING and after is not MISSING) is expected


@operator("removed", BOOL, "to be removed", "not to be removed", kind="change")
def removed(before: Any, after: Any, expected: bool) -> bool:
    """(change targets) The key is present before and absent after."""
    return (before is not MISSING and after is MISSING) is expected


@operator("from", ANY, "to change from {arg}", "not to change from {arg}", kind="change")
def from_(before: Any, after: Any, expected: Any) -> bool:
    """(change targets) The value was the argument before and is different after (a value
    before of another type is an error, not a `false`)."""
    if before is MISSING:
        return False
    if not same(before, expected):
        comparable("from", before, (expected,), result=False, side="before")
        return False
    return _differs(before, after)


@operator("to", ANY, "to change to {arg}", "not to change to {arg}", kind="change")
def to(before: Any, after: Any, expected: Any) -> bool:
    """(change targets) The value is the argument after and was different before (a value
    after of another type is an error, not a `false`)."""
    if after is MISSING:
        return False
    if not same(after, expected):
        comparable("to", after, (expected,), result=False)
        return False
    return _differs(before, after)


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
    return _rank(before, order, "before"), _rank(after, order, "after")


def _rank(value: Any, order: Ordered | None, side: str) -> float:
    """A side's number or level; OperandTypeError naming the side at fault."""
    try:
        return need_number(value) if order is None else order.rank(value)
    except OperandTypeError as exc:
        raise OperandTypeError(exc.wanted, value, exc.detail, side) from None


@operator(
    "increased",
    DIRECTION_ARG,
    "to increase",
    "not to increase",
    kind="change",
    prepare=prepare_direction,
)
def increased(before: Any, after: Any, expected: Ordered | None) -> bool:
    """(change targets) The number or level is higher after than before."""
    ranks = _ranks(before, after, expected)
    return ranks is not None and ranks[1] > ranks[0]


@operator(
    "decreased",
    DIRECTION_ARG,
    "to decrease",
    "not to decrease",
    kind="change",
    prepare=prepare_direction,
)
def decreased(before: Any, after: Any, expected: Ordered | None) -> bool:
    """(change targets) The number or level is lower after than before."""
    ranks = _ranks(before, after, expected)
    return ranks is not None and ranks[1] < ranks[0]
