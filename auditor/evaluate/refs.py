"""Reading `{ref: <path>}` arguments: the value at the path in the root document, checked.

Takes a compiled `Ref` and the operator it feeds, gives the referenced value read from the ROOT
document being evaluated (the settings document for settings rules, the change document for
change rules, so `after.modelPolicy.x` works), checked against the operator's argument schema,
so a wrong type is an error naming both paths and an absent one is `missing`.

The type check reads the whole referenced value (every URL of an allowlist), and a ref inside
`each:` is resolved once per element: the answer is kept for the document being evaluated
(`_Checked`), so N elements against a list of M values cost N + M, not N x M.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from auditor.evaluate.outcome import Outcome
from auditor.models import Evidence
from auditor.operators import MISSING, Operator, json_type
from auditor.policy.pathexpr import PathTypeError
from auditor.policy.phrasing import short, show
from auditor.policy.refs import Ref, expects


class RefError(Exception):
    """The referenced value cannot serve as the operator's argument (wrong type, bad shape)."""


def resolve_ref(ref: Ref, op: Operator, root: Any, where: str) -> tuple[Any, str]:
    """The referenced value (or MISSING) and its location; RefError when it does not fit `op`."""
    try:
        value, at = ref.path.resolve(root)
    except PathTypeError as exc:
        raise RefError(f"ref {show(exc.where)} (for {show(where)}): {exc}") from None
    if value is not MISSING and not _conforms_once(op.schema, value, root):
        found = "null" if value is None else f"{json_type(value)} {short(value)}"
        raise RefError(
            f"ref {show(at)} is {found}; `{op.name}` at {show(where)} needs {expects(op.schema)}"
        )
    return value, at


class _Checked(threading.local):
    """The type checks made on the document last evaluated (one per thread: organizations are
    audited side by side): by the identity of the referenced value and of the schema, each held
    so that neither identity is reused while the answer is kept (the document too, till the
    next one, as `memo._LAST` holds it). Documents are not changed once read (each revision,
    proposed file and change step is its own object); a value's length is part of the key all
    the same, so one grown in place between two evaluations is checked again (an element
    replaced in place, at the same length, would not be)."""

    def __init__(self) -> None:
        self.root: Any = MISSING
        self.seen: dict[tuple[int, int, int], tuple[Any, Mapping[str, Any], bool]] = {}


_CHECKED = _Checked()


def _conforms_once(schema: Mapping[str, Any], value: Any, root: Any) -> bool:
    """`conforms(schema, value)`, computed once per value and schema while `root` is the
    document evaluated (a new document starts afresh). Only containers are kept: a scalar
    costs nothing to check."""
    if not isinstance(value, list | dict):
        return conforms(schema, value)
    held = _CHECKED
    if held.root is not root:
        held.root, held.seen = root, {}
    key = (id(value), id(schema), len(value))
    found = held.seen.get(key)
    if found is not None and found[0] is value and found[1] is schema:
        return found[2]
    ok = conforms(schema, value)
    held.seen[key] = (value, schema, ok)
    return ok


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


def show_ref(ref: Ref, value: Any) -> str:
    """A referenced argument as written in messages: `modelPolicy.allowedBaseUrls (["…"])`."""
    return f"{ref.text} ({short(value)})"


def dereference(
    ref: Ref, op: Operator, where: str, root: Any, ev: Evidence
) -> Outcome | tuple[Any, str, Evidence]:
    """The referenced argument (value, how to show it, evidence), or the outcome instead."""
    try:
        value, at = resolve_ref(ref, op, root, where)
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
