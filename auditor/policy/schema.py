"""The JSON Schema of policy files, built from the operator registry, and its error messages.

Takes nothing (the registry), gives the schema dict that ships as
`auditor/schemas/policy.schema.json` (for editors; a test keeps the file equal to
`build_schema()`), and turns jsonschema errors into `(yaml path, message, at_key)` problems.
Regenerate the file with `python -m auditor.policy.schema`.
"""

from __future__ import annotations

import functools
import hashlib
import json
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from auditor.models import SEVERITIES, TARGETS
from auditor.operators import REGISTRY, Operator, json_type
from auditor.policy.phrasing import short
from auditor.policy.refs import REF_SCHEMA, expects
from auditor.policy.yamlsafe import suggest

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator, ValidationError  # type: ignore[import-untyped]

SCHEMA_PATH = Path(__file__).resolve().parents[1] / "schemas" / "policy.schema.json"
ON_MISSING = ("unknown", "fail", "pass", "not_applicable")
_STR: dict[str, Any] = {"type": "string"}
_STRS: dict[str, Any] = {"type": "array", "items": _STR}
_COND: dict[str, Any] = {"$ref": "#/$defs/condition"}
_CONDS: dict[str, Any] = {"type": "array", "items": _COND, "minItems": 1}
_CONTROL: dict[str, Any] = {
    "type": "string",
    "pattern": r"^[A-Za-z0-9_.-]+:\S+$",
    "x-expects": "a control id FRAMEWORK:ID such as SOC2:CC6.1",
}
_COMMON: dict[str, Any] = {
    "severity": {"enum": list(SEVERITIES), "description": "critical, high, medium, low or info"},
    "target": {
        "enum": list(TARGETS),
        "description": "settings (a revision), change (revision n-1 -> n), readiness (a repo's "
        "latest report), org (aggregates across repos), usage (a day of analytics with the "
        "settings in force that day)",
    },
    "on_missing": {
        "enum": list(ON_MISSING),
        "description": "result when a path the rule needs is absent (default: unknown)",
    },
    "controls": {
        "type": "array",
        "items": _CONTROL,
        "description": "framework controls, e.g. SOC2:CC6.1, ISO27001:A.8.2",
    },
    "tags": _STRS,
}


_OWN = ("id", "title", "when", "assert", "description", "remediation")  # not in `defaults:`


def _condition() -> dict[str, Any]:
    props: dict[str, Any] = {
        "path": {
            "anyOf": [_STR, {"type": "array", "items": _STR, "minItems": 1}],
            "x-expects": "a path or a list of alternative paths",
            "description": "dotted path with [*] and [key=value]; a list means alternatives "
            "(first present wins); inside each/some/none, relative to the element",
        },
        "default": {"description": "value used when the path is absent"},
        "enum": {**_STR, "description": "ordered enum for at_most/at_least/increased/decreased"},
        "all": {**_CONDS, "description": "every condition holds"},
        "any": {**_CONDS, "description": "at least one condition holds"},
        "not": {**_COND, "description": "the condition does not hold"},
        "each": {**_STR, "description": "array path: `assert` holds for every element"},
        "some": {**_STR, "description": "array path: `assert` holds for at least one element"},
        "none": {**_STR, "description": "array path: `assert` holds for no element"},
        "assert": {**_COND, "description": "the condition checked on each element"},
    }
    for name, op in sorted(REGISTRY.items()):
        props[name] = {**_argument(op), "description": op.doc}
    return {
        "type": "object",
        "minProperties": 1,
        "additionalProperties": False,
        "properties": props,
    }


def _argument(op: Operator) -> Mapping[str, Any]:
    """An operator's argument schema, with the `{ref: <path>}` form where it is accepted."""
    if not op.ref or not op.schema:
        return op.schema
    wanted = f"{expects(op.schema)}, or {{ref: <path>}}"
    return {"anyOf": [dict(op.schema), REF_SCHEMA], "x-expects": wanted, "x-ref": True}


def build_schema() -> dict[str, Any]:
    """The policy file schema (JSON Schema 2020-12), operator list taken from the registry."""
    rule_props = {
        "id": {
            "type": "string",
            "pattern": r"^[A-Za-z0-9][A-Za-z0-9_.:-]*$",
            "x-expects": "an id of letters, digits and _ . : - (e.g. BASE-SBX-001)",
        },
        "title": _STR,
        **_COMMON,
        "when": {**_COND, "description": "precondition; when false the rule is not_applicable"},
        "assert": {**_COND, "description": "what must hold"},
        "description": _STR,
        "remediation": _STR,
    }
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "urn:auditor:policy-file:1",
        "title": "auditor policy file",
        "type": "object",
        "additionalProperties": False,
        "required": ["rules"],
        "properties": {
            "version": {"const": 1},
            "description": _STR,
            "defaults": {"type": "object", "additionalProperties": False, "properties": _COMMON},
            "enums": {
                "type": "object",
                "description": "ordered enums (lowest first) for at_most/at_least",
                "additionalProperties": {
                    "type": "array",
                    "items": _STR,
                    "minItems": 2,
                    "uniqueItems": True,
                },
            },
            "rules": {"type": "array", "items": {"$ref": "#/$defs/rule"}},
        },
        "$defs": {
            "rule": {
                "type": "object",
                "additionalProperties": False,
                "required": ["id", "title", "assert"],
                "properties": rule_props,
            },
            "condition": _condition(),
        },
    }


@functools.cache
def schema_digest() -> str:
    """The sha256 of the schema (keys sorted): what a shipped file's recorded verdict was
    reached under (`yamlsafe.SHIPPED_YAML`), so a changed schema makes it check again."""
    return hashlib.sha256(orjson.dumps(build_schema(), option=orjson.OPT_SORT_KEYS)).hexdigest()


@functools.cache
def _validator() -> Draft202012Validator:
    from jsonschema import Draft202012Validator  # about 0.05 s: only when a file is checked

    return Draft202012Validator(build_schema())


Problem = tuple[tuple[str | int, ...], str, bool]  # (yaml path, message, point at the key)


def schema_problems(data: Any) -> Iterator[Problem]:
    """Every schema violation of a policy document, as readable problems."""
    for error in _validator().iter_errors(data):
        yield from _explain(error)


def _explain(error: ValidationError) -> Iterator[Problem]:
    where = tuple(error.absolute_path)
    kind, value, instance = error.validator, error.validator_value, error.instance
    if kind == "anyOf" and error.schema.get("x-ref"):
        # Explain the branch the user meant: a mapping is a `{ref: …}`, anything else the value.
        branch = 1 if isinstance(instance, dict) else 0
        for sub in error.context or ():
            if sub.relative_schema_path[0] == branch:
                yield from _explain(sub)
    elif kind == "additionalProperties" and isinstance(instance, dict):
        known = error.schema.get("properties", {})
        for key in instance:
            if key in _OWN and where == ("defaults",):
                takes = ", ".join(_COMMON)
                yield (*where, key), f"`{key}` is each rule's own; `defaults:` takes {takes}", True
            elif key not in known:
                yield (*where, key), f"unknown key `{key}`{suggest(str(key), known)}", True
    elif kind == "required" and isinstance(instance, dict):
        for key in value:
            if key not in instance:
                yield where, f"missing required key `{key}`", False
    elif kind == "enum":
        hint = suggest(str(instance), [str(v) for v in value])
        yield where, f"{short(instance)} is not one of {', '.join(map(str, value))}{hint}", False
    elif kind == "type":
        yield where, f"expected {_types(value)}, got {json_type(instance)}", False
    elif kind == "minItems" and instance == [] and where and isinstance(where[-1], str):
        what = " of conditions" if where[-1] in ("all", "any") else ""
        yield where, f"`{where[-1]}` needs a non-empty list{what}", False
    elif kind in ("anyOf", "oneOf", "pattern") and "x-expects" in error.schema:
        yield where, f"{short(instance)} is not valid; expected {error.schema['x-expects']}", False
    else:
        yield where, error.message if len(error.message) < 160 else error.message[:159] + "…", False


def _types(value: Any) -> str:
    names = value if isinstance(value, list) else [value]
    return " or ".join({"array": "a list", "object": "a mapping"}.get(n, f"a {n}") for n in names)


def main() -> int:
    """Write the schema file (or check it with `--check`)."""
    text = json.dumps(build_schema(), indent=2, sort_keys=True) + "\n"
    if "--check" in sys.argv:
        return 0 if SCHEMA_PATH.read_text() == text else 1
    SCHEMA_PATH.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
