"""Reading `{ref: <path>}` arguments: the value at the path in the root document, checked.

Takes a compiled `Ref` and the operator it feeds, gives the referenced value read from the ROOT
document being evaluated (the settings document for settings rules, the change document for
change rules, so `after.modelPolicy.x` works), checked against the operator's argument schema,
so a wrong type is an error naming both paths and an absent one is `missing`.

The type check reads the whole referenced value (every URL of an allowlist), and a ref inside
`each:` is resolved once per element: the answer is kept for the evaluation of the document
(`_conforms_once`), so N elements against a list of M values cost N + M, not N x M.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

from auditor.evaluate.outcome import Outcome
from auditor.models import Evidence
from auditor.operators import MISSING, Operator, json_type
from auditor.operators.core import SCOPE_LISTS, scoped
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
    if value is not MISSING and not _conforms_once(op.schema, value):
        found = "null" if value is None else f"{json_type(value)} {short(value)}"
        raise RefError(
            f"ref {show(at)} is {found}; `{op.name}` at {show(where)} needs {expects(op.schema)}"
        )
    return value, at


def _conforms_once(schema: Mapping[str, Any], value: Any) -> bool:
    """`conforms(schema, value)`, computed once per value and schema in one evaluation of one
    document (`core.scoped`, which ends with the evaluation: a value changed in place between
    two evaluations, even at the same length, is checked again). Each answer holds the value
    and the schema, so neither identity is reused while it is kept. Only containers are kept:
    a scalar costs nothing to check."""
    if not isinstance(value, list | dict):
        return conforms(schema, value)
    seen = scoped("conforms")
    if seen is None:
        return conforms(schema, value)
    key = (id(value), id(schema))
    found = seen.get(key)
    if found is not None and found[0] is value and found[1] is schema:
        return found[2]  # type: ignore[no-any-return]
    ok = conforms(schema, value)
    if len(seen) >= SCOPE_LISTS:
        seen.clear()
    seen[key] = (value, schema, ok)
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
    # one text for each place (a note on 100,000s of evidence items in `--all-revisions`)
    note = sys.intern(f"argument from ref {show(at)}")
    if value is MISSING:
        gone = Evidence(at, None, {"ref": ref.text}, op.name, False, f"ref for {show(where)}")
        return Outcome.plain("missing", f"ref {show(at)} (for {show(where)}) is absent", (gone,))
    return (
        value,
        show_ref(ref, value),
        Evidence(ev.path, ev.actual, value, op.name, ev.present, note),
    )
