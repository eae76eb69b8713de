"""Cross-path references: an operator argument written `{ref: <path>}`, read from the document.

Takes the argument as written (compiled once at load, path syntax checked there), gives a `Ref`
that `resolve_ref` reads from the ROOT document being evaluated (the settings document for
settings rules, the change document for change rules, so `after.modelPolicy.x` works) and checks
against the operator's argument schema, so a wrong type is an error naming both paths.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from auditor.models import Evidence
from auditor.operators import MISSING, Operator, json_type
from auditor.policy.outcome import Env, Outcome, short, show
from auditor.policy.pathexpr import CompiledPath, PathTypeError

#: The JSON Schema of the reference form (added to every operator that accepts one).
REF_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "ref": {
            "type": "string",
            "description": "a path read from the root document (settings, or the change "
            "document: before.…, after.…)",
        }
    },
    "required": ["ref"],
    "additionalProperties": False,
}


@dataclass(frozen=True)
class Ref:
    """`{ref: <path>}`: the operator's argument is the value at `path` in the root document."""

    path: CompiledPath

    @property
    def text(self) -> str:
        """The path as written."""
        return self.path.text


class RefError(Exception):
    """The referenced value cannot serve as the operator's argument (wrong type, bad shape)."""


def is_ref(raw: Any) -> bool:
    """True for the reference form `{ref: …}` (a mapping whose only key is `ref`)."""
    return isinstance(raw, dict) and set(raw) == {"ref"}


def resolve_ref(ref: Ref, op: Operator, root: Any, where: str) -> tuple[Any, str]:
    """The referenced value (or MISSING) and its location; RefError when it does not fit `op`."""
    try:
        value, at = ref.path.resolve(root)
    except PathTypeError as exc:
        raise RefError(f"ref {show(exc.where)} (for {show(where)}): {exc}") from None
    if value is not MISSING and not conforms(op.schema, value):
        raise RefError(
            f"ref {show(at)} is {json_type(value)} {short(value)}; `{op.name}` at {show(where)} "
            f"needs {expects(op.schema)}"
        )
    return value, at


def conforms(schema: Mapping[str, Any], value: Any) -> bool:
    """Whether `value` has a type the (simple, registry-made) argument schema allows."""
    if "anyOf" in schema:
        return any(conforms(s, value) for s in schema["anyOf"])
    if "enum" in schema and value not in schema["enum"]:
        return False
    wanted = schema.get("type")
    if wanted is None:
        return True
    found = json_type(value)
    names = wanted if isinstance(wanted, list) else [wanted]
    if found not in names and not (found == "integer" and "number" in names):
        return False
    items = schema.get("items")
    return items is None or all(conforms(items, v) for v in value)


def expects(schema: Mapping[str, Any]) -> str:
    """How a message states what an argument schema wants."""
    if "x-expects" in schema:
        return str(schema["x-expects"])
    wanted = schema.get("type")
    if wanted == "array":
        items = schema.get("items", {}).get("type")
        return f"a list of {items}s" if items else "a list"
    return f"a {wanted}" if isinstance(wanted, str) else "a value"


def show_ref(ref: Ref, value: Any) -> str:
    """A referenced argument as written in messages: `modelPolicy.allowedBaseUrls (["…"])`."""
    return f"{ref.text} ({short(value)})"


def dereference(
    ref: Ref, op: Operator, where: str, env: Env, ev: Evidence
) -> Outcome | tuple[Any, str, Evidence]:
    """The referenced argument (value, how to show it, evidence), or the outcome instead."""
    try:
        value, at = resolve_ref(ref, op, env.root, where)
    except RefError as exc:
        return Outcome.error(str(exc), ev)
    note = f"argument from ref {show(at)}"
    if value is MISSING:
        gone = Evidence(at, None, {"ref": ref.text}, op.name, False, f"ref for {show(where)}")
        return Outcome.plain("missing", f"ref {show(at)} (for {show(where)}) is absent", (gone,))
    return (
        value,
        show_ref(ref, value),
        Evidence(ev.path, ev.actual, value, op.name, ev.present, note),
    )
