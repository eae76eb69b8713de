"""Response validation: "fast yes, slow why".

Takes a parsed page and the name of a shipped JSON Schema, gives nothing or a DataError naming
the JSON path. Each schema is compiled once into a cheap predicate that only says yes when
jsonschema would; on anything else jsonschema walks the page and words the error, so the schemas
stay the one source of what is valid and of every message.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from importlib import resources
from typing import Any

from auditor.common import paths
from auditor.common.jsonutil import loads
from auditor.errors import DataError

_JSON_TYPES = {
    dict: "object",
    list: "array",
    str: "string",
    bool: "boolean",
    int: "integer",
    float: "number",
    type(None): "null",
}


Check = Callable[[Any], bool]

# Exact Python types per JSON type: `type(x) in ...` never admits bool as a number, nor a subclass.
_PY_TYPES: dict[str, frozenset[type]] = {
    "object": frozenset({dict}),
    "array": frozenset({list}),
    "string": frozenset({str}),
    "boolean": frozenset({bool}),
    "integer": frozenset({int}),
    "number": frozenset({int, float}),
    "null": frozenset({type(None)}),
}
_ANY_JSON: frozenset[type] = frozenset().union(*_PY_TYPES.values())
_ANNOTATIONS = frozenset({"$schema", "$id", "$comment", "title", "description", "examples"})
_KEYWORDS = frozenset(
    {
        "type",
        "required",
        "properties",
        "additionalProperties",
        "items",
        "minLength",
        "minimum",
        "maximum",
        "enum",
    }
)


class _Unsupported(Exception):
    """The schema uses a keyword the fast checker does not know; jsonschema does all the work."""


@cache
def _validator(name: str) -> Any:
    import jsonschema  # type: ignore[import-untyped]  # the slow path only: 0.1 s to import

    cls = jsonschema.validators.validator_for(_schema(name))
    return cls(_schema(name))


@cache
def _schema(name: str) -> Any:
    return loads(resources.files("auditor.schemas").joinpath(name).read_bytes())


@cache
def fast_check(name: str) -> Check:
    """The named schema's quick test: True only if jsonschema accepts; False means "ask it"."""
    return compile_check(_schema(name)) or _never


def compile_check(schema: Any) -> Check | None:
    """Compile a schema into a predicate that never accepts what jsonschema rejects.

    None when the schema uses a keyword outside the small subset understood here; callers then
    leave all the work to jsonschema. A False answer is never an error by itself: the caller asks
    jsonschema, which decides and words the message.
    """
    try:
        return _compile(schema)
    except _Unsupported:
        return None


def _never(_value: Any) -> bool:
    return False


def _always(_value: Any) -> bool:
    return True


def _compile(schema: Any) -> Check:
    if isinstance(schema, bool):
        return _always if schema else _never
    if not isinstance(schema, dict):
        raise _Unsupported(f"schema must be an object, got {type(schema).__name__}")
    unknown = schema.keys() - _KEYWORDS - _ANNOTATIONS
    if unknown:
        raise _Unsupported(f"keyword {sorted(unknown)[0]!r}")
    allowed = _allowed_types(schema.get("type"))
    if "enum" in schema:
        return _enum_check(schema["enum"], allowed, _keyword_checks(schema).get(str))
    by_type = _keyword_checks(schema)
    if not by_type:
        return _type_check(allowed)
    if allowed == {dict} and by_type.keys() == {dict}:  # an object of keywords: no lookup
        of_object = by_type[dict]
        return lambda value: type(value) is dict and of_object(value)

    def check(value: Any) -> bool:
        kind = type(value)
        if kind not in allowed:
            return False
        keywords = by_type.get(kind)
        return keywords is None or keywords(value)

    return check


#: The checks `_type_check` made, with the types each allows (`_object_check` tests those
#: types itself, not calling the check for each property).
_TYPE_ONLY: dict[Check, frozenset[type]] = {}


def _type_check(allowed: frozenset[type]) -> Check:
    """A schema of a type alone: any value of one of `allowed` types."""
    check: Check = lambda value: type(value) in allowed  # noqa: E731
    _TYPE_ONLY[check] = allowed
    return check


def _allowed_types(declared: Any) -> frozenset[type]:
    if declared is None:
        return _ANY_JSON
    names = [declared] if isinstance(declared, str) else declared
    if not isinstance(names, list) or not all(n in _PY_TYPES for n in names):
        raise _Unsupported(f"type {declared!r}")
    return frozenset().union(*(_PY_TYPES[n] for n in names))


def _keyword_checks(schema: dict[str, Any]) -> dict[type, Check]:
    """Checks of the keywords that apply to each Python type (jsonschema skips the others)."""
    by_type: dict[type, Check] = {}
    if {"required", "properties", "additionalProperties"} & schema.keys():
        by_type[dict] = _object_check(schema)
    if "items" in schema:
        by_type[list] = _items_check(_compile(schema["items"]))
    if "minLength" in schema:
        by_type[str] = _min_length_check(schema["minLength"])
    bounds = [_bound_check(schema[k], k) for k in ("minimum", "maximum") if k in schema]
    if bounds:
        by_type[int] = by_type[float] = bounds[0] if len(bounds) == 1 else _both(*bounds)
    return by_type


def _enum_check(values: Any, allowed: frozenset[type], more: Check | None) -> Check:
    """`enum` of strings only (jsonschema's equality of numbers and booleans is subtler):
    a string among them, of an allowed type, that passes the string keywords."""
    if not isinstance(values, list) or not all(type(v) is str for v in values):
        raise _Unsupported(f"enum {values!r}")
    if str not in allowed:
        return _never
    members = frozenset(values)
    if more is None:
        return lambda value: type(value) is str and value in members
    return lambda value: type(value) is str and value in members and more(value)


def _both(first: Check, second: Check) -> Check:
    return lambda value: first(value) and second(value)


def _object_check(schema: dict[str, Any]) -> Check:
    required = schema.get("required", [])
    properties = schema.get("properties", {})
    if not isinstance(required, list) or not isinstance(properties, dict):
        raise _Unsupported("required or properties of an unexpected shape")
    props = {key: _compile(sub) for key, sub in properties.items()}
    extra = _compile(schema.get("additionalProperties", True))
    # a property of a type alone is tested here (most are), the others by their check
    typed = [(key, _TYPE_ONLY[sub]) for key, sub in props.items() if sub in _TYPE_ONLY]
    known = [(key, sub) for key, sub in props.items() if sub not in _TYPE_ONLY]

    def check(value: dict[str, Any]) -> bool:
        for key in required:
            if key not in value:
                return False
        for key, types in typed:
            if key in value and type(value[key]) not in types:
                return False
        for key, sub in known:
            if key in value and not sub(value[key]):
                return False
        if extra is not _always:
            for key, item in value.items():
                if key not in props and not extra(item):
                    return False
        return True

    return check


def _items_check(item: Check) -> Check:
    return lambda value: all(map(item, value))


def _min_length_check(limit: Any) -> Check:
    if type(limit) is not int:
        raise _Unsupported(f"minLength {limit!r}")
    return lambda value: len(value) >= limit


def _bound_check(limit: Any, keyword: str) -> Check:
    if type(limit) not in (int, float):
        raise _Unsupported(f"{keyword} {limit!r}")
    if keyword == "minimum":
        return lambda value: not value < limit
    return lambda value: not value > limit


def schema_errors(value: Any, schema: str) -> list[Any]:
    """Every jsonschema error of `value` against the named schema, in path order."""
    errors = _validator(schema).iter_errors(value)
    return sorted(errors, key=lambda e: (paths.render(e.absolute_path), str(e.validator)))


def describe_error(error: Any) -> str:
    """A message that never repeats the offending value (it may be a secret)."""
    if error.validator == "type":
        expected = error.validator_value
        wanted = " or ".join(expected) if isinstance(expected, list) else str(expected)
        return f"expected {wanted}, got {_JSON_TYPES.get(type(error.instance), 'unknown')}"
    if error.validator == "required" and isinstance(error.instance, dict):
        missing = [k for k in error.validator_value if k not in error.instance]
        return f"missing required key {missing[0]!r}" if missing else "missing required key"
    return f"fails {error.validator} {error.validator_value!r}"


def validate(body: Any, schema: str, where: str) -> None:
    """Raise `DataError` naming the JSON path and `where` if `body` does not match `schema`."""
    if fast_check(schema)(body):
        return
    import jsonschema

    error = jsonschema.exceptions.best_match(_validator(schema).iter_errors(body))
    if error is not None:
        path = paths.render(error.absolute_path)
        raise DataError(f"{path}: {describe_error(error)} ({where})")
