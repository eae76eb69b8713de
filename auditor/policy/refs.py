"""Cross-path references: an operator argument written `{ref: <path>}`.

Takes the argument as written, gives a `Ref` (its path compiled once at load, syntax checked
there) and the JSON Schema of the form. Reading the referenced value from the document under
evaluation is the interpreter's job (`auditor.evaluate.refs`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from auditor.policy.pathexpr import CompiledPath

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


def is_ref(raw: Any) -> bool:
    """True for the reference form `{ref: …}` (a mapping whose only key is `ref`)."""
    return isinstance(raw, dict) and set(raw) == {"ref"}


def expects(schema: Mapping[str, Any]) -> str:
    """How a message states what an argument schema wants."""
    if "x-expects" in schema:
        return str(schema["x-expects"])
    wanted = schema.get("type")
    if wanted == "array":
        items = schema.get("items", {}).get("type")
        return f"a list of {items}s" if items else "a list"
    return f"a {wanted}" if isinstance(wanted, str) else "a value"
