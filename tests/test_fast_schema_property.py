"""The fast shape check never accepts what jsonschema refuses, over generated instances
for every shipped schema (and for hand-made schemas using `enum`, `maximum` and `minimum`)."""

from __future__ import annotations

from importlib import resources
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from auditor.common.jsonutil import loads
from auditor.fetch.schema import compile_check

SCHEMAS = sorted(
    p.name for p in resources.files("auditor.schemas").iterdir() if p.name.endswith(".json")
)

_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([0, 1, 0.0, 1.0, -0.0, 2, 0.5, 1.5, True, False, 10**30, "", "x"]),
    st.text(max_size=12),
)
_json = st.recursive(
    _scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)


def _near(schema: Any, draw: Any, depth: int = 0) -> Any:
    """A value shaped by the schema, now and then replaced by anything JSON."""
    if depth > 6 or not isinstance(schema, dict) or draw(st.integers(0, 9)) == 0:
        return draw(_json)
    if "enum" in schema and draw(st.booleans()):
        return draw(st.sampled_from(list(schema["enum"]) or [None]))
    kinds = schema.get("type")
    kinds = [kinds] if isinstance(kinds, str) else (kinds or ["object"])
    kind = draw(st.sampled_from(kinds))
    if kind == "object":
        out = {}
        for key, sub in schema.get("properties", {}).items():
            if draw(st.integers(0, 3)):
                out[key] = _near(sub, draw, depth + 1)
        if draw(st.booleans()):
            out[draw(st.text(max_size=4))] = _near(
                schema.get("additionalProperties", {}), draw, depth + 1
            )
        return out
    if kind == "array":
        return [
            _near(schema.get("items", {}), draw, depth + 1) for _ in range(draw(st.integers(0, 3)))
        ]
    if kind in ("number", "integer"):
        lims = [schema[k] for k in ("minimum", "maximum") if k in schema]
        extra = [v for x in lims for v in (x, x - 1, x + 1, x - 0.5, x + 0.5, float(x), -x)]
        return draw(st.sampled_from(extra) | _scalars) if extra else draw(_scalars)
    if kind == "string":
        return draw(st.text(max_size=12) | st.sampled_from(schema.get("enum", ["", "x"])))
    return draw(_scalars)


def _agree(schema: Any, value: Any) -> None:
    check = compile_check(schema)
    if check is None:
        return
    if check(value):
        validator = jsonschema.validators.validator_for(schema)(schema)
        assert validator.is_valid(value), (schema, value)


@pytest.mark.parametrize("name", SCHEMAS)
@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_fast_check_never_accepts_what_jsonschema_refuses(name: str, data: Any) -> None:
    schema = loads(resources.files("auditor.schemas").joinpath(name).read_bytes())
    _agree(schema, _near(schema, data.draw))


_limit = st.one_of(
    st.integers(-5, 5),
    st.floats(allow_nan=False, allow_infinity=False, min_value=-5, max_value=5),
    st.sampled_from([2**64, -(2**64), 1e300, 0.5, True, False]),
)
_mini = st.fixed_dictionaries(
    {},
    optional={
        "type": st.sampled_from(
            [
                "number",
                "integer",
                "string",
                "boolean",
                "null",
                ["string", "null"],
                ["number", "null"],
            ]
        ),
        "minimum": _limit,
        "maximum": _limit,
        "enum": st.lists(st.one_of(st.text(max_size=3), _scalars), max_size=4),
        "minLength": st.integers(0, 3),
    },
)


@settings(max_examples=400, deadline=None)
@given(schema=_mini, value=_json)
def test_fast_check_agrees_on_keyword_mixes(schema: dict[str, Any], value: Any) -> None:
    _agree(schema, value)
    _agree({"type": "object", "properties": {"a": schema}}, {"a": value})
