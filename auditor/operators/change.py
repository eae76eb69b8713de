"""Change operators (change targets only): changed, added, removed, from, to, increased, decreased.

Takes the value before, the value after (either may be MISSING), the argument and where the
value sits (`ListsAt`), gives a bool. A list is judged as the diff judges it (`ListTable`): a
set list as a multiset, an identity list by identity and content, any other list in order, so
a step that only reorders `commandAllowlist` is no change for `changed`, as it is for `diff`,
`history`, `changes[]` and `review`. Numbers compare by value, as everywhere in the policy
language (`1` and `1.0` are one value).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Mapping
from typing import Any

from auditor.common import paths
from auditor.diff.table import DEFAULT_LIST_TABLE, ListTable
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


class ListsAt:
    """Where a change leaf's value sits (its JSON path, `$.sandbox.network`) and how the run
    compares lists there and below (the diff's table, with `diff_keys` merged in)."""

    __slots__ = ("table", "where")

    def __init__(self, where: str, table: ListTable = DEFAULT_LIST_TABLE) -> None:
        self.where = where
        self.table = table


def _equal(a: Any, b: Any, at: ListsAt | None) -> bool:
    """`same`, except that lists the table calls sets or identity lists are compared as the
    diff compares them (the walk is made only when `same` finds a difference in a container)."""
    if same(a, b):
        return True
    if at is None or type(a) is not type(b) or not isinstance(a, dict | list):
        return False
    try:
        segs = tuple(p for p in paths.parse(at.where) if isinstance(p, str))
    except ValueError:  # not one place (a `[*]` path's matches): compared in order
        return False
    return bool(_normal(a, segs, at.table) == _normal(b, segs, at.table))


_LIST, _BAG, _DICT, _BOOL = object(), object(), object(), object()  # tags no value can equal


def _normal(value: Any, segs: tuple[str, ...], table: ListTable) -> Hashable:
    """A key equal to another's exactly when the two values are the same for a change rule:
    numbers by value, other scalars type-strict, objects by key whatever their key order, a set
    list of scalars as a multiset, an identity list of objects as a multiset of its entries (the
    diff matches them by identity, then by content: either way a move is not a change), any
    other list in order (a set list of objects too, as the diff compares it)."""
    kind = type(value)
    if kind is dict:
        return (_DICT, frozenset([(k, _normal(v, (*segs, k), table)) for k, v in value.items()]))
    if kind is list:
        items = [_normal(v, segs, table) for v in value]
        mode, _ = table.mode(".".join(segs))
        if (mode == "set" and not any(isinstance(v, dict | list) for v in value)) or (
            mode == "keyed" and all(type(v) is dict for v in value)
        ):
            return (_BAG, frozenset(Counter(items).items()))
        return (_LIST, *items)
    if kind is bool:
        return (_BOOL, value)
    if kind is float and value != value:
        return object()  # NaN: the same as nothing, as `same` finds it
    return value  # type: ignore[no-any-return]


def _differs(before: Any, after: Any, at: ListsAt | None = None) -> bool:
    if before is MISSING or after is MISSING:
        return before is not after
    return not _equal(before, after, at)


# A list only reordered where the diff calls that no change (a set or identity list) is
# unchanged (`_equal`); the docstring is the policy schema's text, kept as the shipped
# packs' record of the schema digest has it.
@operator("changed", BOOL, "to change", "to stay the same", kind="change")
def changed(before: Any, after: Any, expected: bool, at: ListsAt | None = None) -> bool:
    """(change targets) The value differs between before and after (`false`: unchanged)."""
    return _differs(before, after, at) is expected


@operator("added", BOOL, "to be added", "not to be added", kind="change")
def added(before: Any, after: Any, expected: bool, at: ListsAt | None = None) -> bool:
    """(change targets) The key is absent before and present after."""
    return (before is MISSING and after is not MISSING) is expected


@operator("removed", BOOL, "to be removed", "not to be removed", kind="change")
def removed(before: Any, after: Any, expected: bool, at: ListsAt | None = None) -> bool:
    """(change targets) The key is present before and absent after."""
    return (before is not MISSING and after is MISSING) is expected


@operator("from", ANY, "to change from {arg}", "not to change from {arg}", kind="change")
def from_(before: Any, after: Any, expected: Any, at: ListsAt | None = None) -> bool:
    """(change targets) The value was the argument before and is different after (a value
    before of another type is an error, not a `false`)."""
    if before is MISSING:
        return False
    if not _equal(before, expected, at):
        comparable("from", before, (expected,), result=False, side="before")
        return False
    return _differs(before, after, at)


@operator("to", ANY, "to change to {arg}", "not to change to {arg}", kind="change")
def to(before: Any, after: Any, expected: Any, at: ListsAt | None = None) -> bool:
    """(change targets) The value is the argument after and was different before (a value
    after of another type is an error, not a `false`)."""
    if after is MISSING:
        return False
    if not _equal(after, expected, at):
        comparable("to", after, (expected,), result=False)
        return False
    return _differs(before, after, at)


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
def increased(before: Any, after: Any, expected: Ordered | None, at: ListsAt | None = None) -> bool:
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
def decreased(before: Any, after: Any, expected: Ordered | None, at: ListsAt | None = None) -> bool:
    """(change targets) The number or level is lower after than before."""
    ranks = _ranks(before, after, expected)
    return ranks is not None and ranks[1] < ranks[0]
