"""Equality, membership and ordering operators: equals, in, contains…, subset_of, gt…, at_most.

Takes the actual value and the prepared argument, gives a bool (registered in `core.REGISTRY`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from auditor.operators.core import (
    ANY,
    ARRAY,
    INDEX_FROM,
    MISSING,
    NUMBER,
    SCOPE_LISTS,
    STRING,
    OperandTypeError,
    Ordered,
    json_type,
    member,
    need_list,
    need_number,
    need_substrings,
    operator,
    same,
    scoped,
)
from auditor.redact import MARKER_START


def _kind(value: Any) -> str:
    """The JSON type a value compares as (an integer and a fraction are both numbers)."""
    kind = json_type(value)
    return "number" if kind == "integer" else kind


def _kinds(literals: Iterable[Any]) -> frozenset[str]:
    return frozenset(_kind(x) for x in literals if x is not None)


def _literal_kinds(literals: Iterable[Any]) -> frozenset[str]:
    """`_kinds(literals)`, worked out once per list in one evaluation (`core.scoped`):
    `not_in` with 300 literals passes on most values, and its kinds were counted every call.
    Kept only while the evaluation lasts, so a list changed in place is counted again."""
    if type(literals) is not list or len(literals) < INDEX_FROM:
        return _kinds(literals)
    memo = scoped("kinds")
    if memo is None:
        return _kinds(literals)
    known = memo.get(id(literals))
    if known is not None and known[0] is literals:
        return known[1]  # type: ignore[no-any-return]
    kinds = _kinds(literals)
    if len(memo) >= SCOPE_LISTS:
        memo.clear()
    memo[id(literals)] = (literals, kinds)
    return kinds


#: How the remedy for a quoted literal starts: a `{ref: …}` argument is no literal
#: (`LiteralMismatch.from_ref` drops it).
QUOTED = " (a quoted literal is a string"


class LiteralMismatch(OperandTypeError):
    """A value of another JSON type than every literal it is compared with. `result` is what
    the comparison gives all the same (`not_equals`: true), which a leaf whose values vary in
    type by design takes (`Leaf.loose`: a change's `before`/`after` in `changes[]`); any
    other leaf is an `error`."""

    def __init__(
        self, wanted: str, actual: Any, detail: str, side: str = "", *, result: bool
    ) -> None:
        super().__init__(wanted, actual, detail, side)
        self.result = result

    def from_ref(self) -> LiteralMismatch:
        """The same mismatch where the values compared came from a `{ref: …}`, not a literal
        written in the rule: without the remedy for a quoted literal."""
        detail = self.detail.split(QUOTED, 1)[0]
        return LiteralMismatch(self.wanted, self.actual, detail, self.side, result=self.result)


def comparable(
    op: str, actual: Any, literals: Iterable[Any], *, result: bool, side: str = ""
) -> None:
    """LiteralMismatch when `actual` can equal none of `literals` by its JSON type alone:
    `not_equals: "false"` on the boolean `false`, `in: ["32000"]` on the number 32000, a
    `[*]` path's gathered array under `not_in: [gpt-5-codex]`. Such a literal is never equal,
    so the rule's `false` would be a silent pass under `not`, `none`, `when` or `not_in`
    itself. Called only once the comparison came out unequal. Null on either side compares
    (a key set to null is a value a rule may test for, `equals: null`); no literal (`in: []`)
    is nothing to compare with; a string holding a redacted value's marker may hide a
    number (`hidden` decides those)."""
    if actual is None or actual is MISSING:
        return
    wanted = _literal_kinds(literals)
    kind = _kind(actual)
    if not wanted:
        return
    if kind in wanted:
        if kind in ("object", "array"):
            _inside(op, actual, _clash(actual, literals, kind), result, side)
        return
    if kind == "string" and "number" in wanted and MARKER_START in actual:
        return
    detail = _mismatch(op, kind, wanted)
    raise LiteralMismatch(" or ".join(sorted(wanted)), actual, detail, side, result=result)


def _inside(
    op: str, actual: Any, clash: tuple[str, str, str] | None, result: bool, side: str
) -> None:
    """LiteralMismatch when an object or array literal, of the value's own type, has inside it
    a value of another JSON type than the value's at the same place, for each such literal
    (`clash`, the first one's place and types: see `_clash`): `not_equals: {enabled:
    "false"}` on `{enabled: false}` (no such object is ever equal)."""
    if clash is None:
        return
    where, got, want = clash
    detail = (
        f"`{op}` compares {_kind(actual)}s that can never be equal: `{where}` is "
        f"{_article(got)} {got} here, {_article(want)} {want} in the literal"
    )
    if want == "string" and got in ("boolean", "number"):
        detail += f"{QUOTED}: to compare {got}s, write it unquoted)"
    raise LiteralMismatch(
        f"{_article(want)} {want} at `{where}`", actual, detail, side, result=result
    )


def _clash(actual: Any, literals: Iterable[Any], kind: str) -> tuple[str, str, str] | None:
    """The first literal's `_nested` place and types when every literal of `kind` (the
    value's own) has one; None when one of them has none, or there is none. A long list's
    answer is kept, in one evaluation, by the value's `_shape` (all `_nested` reads of it):
    `each` over 40,000 objects against a `{ref: …}` list of 40,000 compared each with all."""
    memo = scoped("clash") if type(literals) is list and len(literals) >= INDEX_FROM else None
    if memo is None:
        return _first_clash(actual, literals, kind)
    try:
        key = (id(literals), _shape(actual))
    except RecursionError:
        return _first_clash(actual, literals, kind)
    found = memo.get(key)
    if found is not None and found[0] is literals:
        return found[1]  # type: ignore[no-any-return]
    clash = _first_clash(actual, literals, kind)
    if len(memo) >= SCOPE_LISTS:
        memo.clear()
    memo[key] = (literals, clash)
    return clash


def _first_clash(actual: Any, literals: Iterable[Any], kind: str) -> tuple[str, str, str] | None:
    first = None
    for literal in literals:
        if _kind(literal) != kind:
            continue
        found = _nested(actual, literal, "")
        if found is None:
            return None
        first = first or found
    return first


def _shape(value: Any) -> Any:
    """What `_nested` reads of a value: its keys, lengths and the JSON type at each place
    (a null, and a string holding a redacted value's marker, apart)."""
    if value is None:
        return None
    if isinstance(value, dict):
        return ("object", tuple([(k, _shape(v)) for k, v in value.items()]))
    if isinstance(value, list):
        return ("array", tuple([_shape(v) for v in value]))
    if isinstance(value, str):
        return "marker" if MARKER_START in value else "string"
    return _kind(value)


def _nested(actual: Any, literal: Any, where: str) -> tuple[str, str, str] | None:
    """The first place (`enabled`, `ports[0]`) inside `literal` where `actual` holds a value of
    another JSON type (neither null, nor a redacted marker that may hide a number), with the
    two types; None when there is none. Keys one side lacks and arrays of unequal length
    compare nothing there."""
    if isinstance(actual, dict) and isinstance(literal, dict):
        pairs: Iterable[tuple[str, Any, Any]] = (
            (f"{where}.{k}" if where else str(k), actual[k], v)
            for k, v in literal.items()
            if k in actual
        )
    elif isinstance(actual, list) and isinstance(literal, list) and len(actual) == len(literal):
        pairs = (
            (f"{where}[{i}]", a, v) for i, (a, v) in enumerate(zip(actual, literal, strict=True))
        )
    else:
        return None
    for place, a, v in pairs:
        if a is None or v is None:
            continue
        got, want = _kind(a), _kind(v)
        if got != want:
            if got == "string" and want == "number" and MARKER_START in a:
                continue
            return place, got, want
        found = _nested(a, v, place)
        if found is not None:
            return found
    return None


def holds(op: str, items: list[Any], literals: Iterable[Any], *, result: bool) -> None:
    """LiteralMismatch when a (non-empty) array can hold none of `literals` by the types of
    its elements: `excludes: ["22"]` on `[22, 80]` (an array of numbers never holds a string,
    and `excludes` would pass)."""
    wanted = _literal_kinds(literals)
    present = _kinds(items)
    if not wanted or not present or wanted & present:
        return
    if (
        "string" in present
        and "number" in wanted
        and any(isinstance(i, str) and MARKER_START in i for i in items)
    ):
        return
    shown = " or ".join(f"{_article(k)} {k}" for k in sorted(wanted))
    held = " and ".join(f"{k}s" for k in sorted(present))
    detail = f"`{op}` looks in an array of {held} for {shown}, which it can never hold"
    if "string" in wanted and present & {"boolean", "number"}:
        detail += f"{QUOTED}: write it unquoted)"
    raise LiteralMismatch(f"an array holding {shown}", items, detail, result=result)


def _mismatch(op: str, kind: str, wanted: frozenset[str]) -> str:
    them = " or ".join(f"{_article(k)} {k}" for k in sorted(wanted))
    text = f"`{op}` compares {_article(kind)} {kind} with {them}, which it can never equal"
    if "string" in wanted and kind in ("boolean", "number"):
        text += f"{QUOTED}: to compare {kind}s, write it unquoted)"
    elif kind == "array":
        text += " (to test each element of an array, use `each:` or `none:`)"
    return text


def _article(kind: str) -> str:
    return "an" if kind[0] in "aeiou" else "a"


@operator("equals", ANY, "{arg}", "not to be {arg}", ref=True)
def equals(actual: Any, expected: Any) -> bool:
    """The value equals the argument (numbers by value, otherwise type-strict; a value of
    another type is an error, not a `false`)."""
    if same(actual, expected):
        return True
    comparable("equals", actual, (expected,), result=False)
    return False


@operator("not_equals", ANY, "not to be {arg}", "{arg}", ref=True)
def not_equals(actual: Any, expected: Any) -> bool:
    """The value differs from the argument (a value of another type is an error)."""
    if same(actual, expected):
        return False
    comparable("not_equals", actual, (expected,), result=True)
    return True


@operator("in", ARRAY, "to be one of {arg}", "not to be one of {arg}", ref=True)
def in_(actual: Any, expected: list[Any]) -> bool:
    """The value is one of the listed values (a value of a type none has is an error)."""
    if member(actual, expected):
        return True
    comparable("in", actual, expected, result=False)
    return False


@operator("not_in", ARRAY, "not to be one of {arg}", "to be one of {arg}", ref=True)
def not_in(actual: Any, expected: list[Any]) -> bool:
    """The value is none of the listed values (a value of a type none has is an error)."""
    if member(actual, expected):
        return False
    comparable("not_in", actual, expected, result=True)
    return True


@operator("contains", ANY, "to contain {arg}", "not to contain {arg}", ref=True)
def contains(actual: Any, expected: Any) -> bool:
    """An array holds the element, or a string holds the substring."""
    if isinstance(actual, str):
        return need_substrings("contains", actual, [expected])[0] in actual
    items = need_list(actual)
    if member(expected, items):
        return True
    holds("contains", items, (expected,), result=False)
    return False


@operator("contains_all", ARRAY, "to contain all of {arg}", "to lack one of {arg}", ref=True)
def contains_all(actual: Any, expected: list[Any]) -> bool:
    """The array holds every listed element."""
    items = need_list(actual)
    if all(member(e, items) for e in expected):
        return True
    holds("contains_all", items, expected, result=False)
    return False


@operator("contains_any", ARRAY, "to contain one of {arg}", "to contain none of {arg}", ref=True)
def contains_any(actual: Any, expected: list[Any]) -> bool:
    """The array holds at least one listed element."""
    items = need_list(actual)
    if any(member(e, items) for e in expected):
        return True
    holds("contains_any", items, expected, result=False)
    return False


@operator("excludes", ANY, "to contain none of {arg}", "to contain some of {arg}", ref=True)
def excludes(actual: Any, expected: Any) -> bool:
    """The array holds none of the given element(s); a string, none of the substrings."""
    unwanted = expected if isinstance(expected, list) else [expected]
    if isinstance(actual, str):
        return not any(u in actual for u in need_substrings("excludes", actual, unwanted))
    items = need_list(actual)
    if any(member(u, items) for u in unwanted):
        return False
    holds("excludes", items, unwanted, result=True)
    return True


@operator(
    "subset_of", ARRAY, "to hold only values from {arg}", "to hold a value outside {arg}", ref=True
)
def subset_of(actual: Any, expected: list[Any]) -> bool:
    """Every element of the array is one of the listed values."""
    items = need_list(actual)
    if all(member(item, expected) for item in items):
        return True
    for item in items:
        if not member(item, expected):
            comparable("subset_of", item, expected, result=False)
    return False


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
