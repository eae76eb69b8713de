"""How messages word things: values, paths, arguments, operator phrases and their negations.

Takes values, paths and an operator with its argument (as written and as shown) and whether it
is negated, gives one-line texts: a value (`short`), a path (`show`), an argument (`shown_arg`),
the phrase that follows "expected" (`to match /^rm/`, `not to contain "[secret "`, `a non-empty
list`) and the split the evidence carries (phrase without the argument, argument value). Both
the language (descriptions, schema messages) and the interpreter (outcome messages) use it.
"""

from __future__ import annotations

import functools
import json
from functools import cache
from typing import Any

import orjson

from auditor.common.escape import printable
from auditor.operators import MISSING, Operator, json_type
from auditor.policy.refs import is_ref

#: Message and description length caps (characters); messages are one line.
MESSAGE_LIMIT = 240
_NOUNS = {"array": "list", "object": "object", "string": "string"}
_IRREGULAR = {"be": "is", "have": "has"}


def short(value: Any, limit: int = 60) -> str:
    """A short, one-line rendering of a value for messages (never a whole document)."""
    if value is MISSING:
        return "absent"
    try:
        text = orjson.dumps(value, default=str).decode()
    except TypeError:
        text = repr(value)
    if "null" in text and value is not None:
        text = _non_finite(value, text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _non_finite(value: Any, text: str) -> str:
    """`text`, or, when `value` holds an infinite or NaN float (which orjson writes as
    `null`), the text with `Infinity`, `-Infinity` and `NaN` in their places (a YAML `.inf`
    shown as `null` would read as a different value)."""
    dump = functools.partial(json.dumps, default=str, ensure_ascii=False, separators=(",", ":"))
    try:
        dump(value, allow_nan=False)  # raises ValueError only for a non-finite float
    except ValueError:
        return dump(value)
    except (TypeError, RecursionError):
        pass
    return text


def show(where: str) -> str:
    """A path as written in messages: `sandbox.enabled` rather than `$.sandbox.enabled`."""
    return where[2:] if where.startswith("$.") else where


def show_arg(raw: Any) -> str:
    """An operator argument as written in messages (`"medium" (autonomy)` for enum levels)."""
    if isinstance(raw, dict) and set(raw) == {"enum", "value"}:
        return f"{short(raw['value'])} ({raw['enum']})"
    return short(raw)


def shown_arg(op: Operator, raw: Any) -> str:
    """An argument as a message shows it (`at least 1 and at most 3` for length bounds)."""
    if is_ref(raw):
        return show_ref_text(raw)
    if ("/{arg}/" in op.expect or op.name == "version_at_least") and isinstance(raw, str):
        return clip(raw, 80)
    bounds = show_bounds(raw) if op.name == "length" else None
    return bounds or show_arg(raw)


def show_ref_text(raw: Any) -> str:
    """A `{ref: path}` argument as descriptions show it."""
    return f"the value at {raw['ref']}"


def is_flag(op: Operator) -> bool:
    """A boolean-argument operator (`exists: false`): the argument picks the phrase."""
    return op.schema.get("type") == "boolean"


def template(op: Operator, raw: Any, negate: bool) -> str:
    """The phrase template for this use of `op` (`{arg}` and `{noun}` still to fill)."""
    flip = negate != (raw is False and is_flag(op))
    return op.negated if flip else op.expect


def noun(actual: Any) -> str:
    """What kind of thing the value is, for phrases such as `a non-empty list`."""
    if actual is MISSING:
        return "value"
    return _NOUNS.get(json_type(actual), "value")


def phrase(op: Operator, raw: Any, shown: str, negate: bool = False, actual: Any = None) -> str:
    """The expectation after "expected": `to match /^rm/`, `a non-empty list`."""
    text = template(op, raw, negate)
    if "{noun}" in text:
        text = text.replace("{noun}", noun(actual))
    return text.replace("{arg}", shown)


def phrase_parts(text: str, actual: Any) -> tuple[str, bool]:
    """A template split for Evidence: (phrase without the argument, whether it has one)."""
    return _split(text, noun(actual) if "{noun}" in text else "")


@cache
def _split(text: str, noun: str) -> tuple[str, bool]:
    text = text.replace("{noun}", noun)
    if "{arg}" not in text:
        return text, False
    return text.split("{arg}")[0].rstrip(" /") or "to be", True


def third_person(text: str) -> str:
    """`to match /x/` -> `matches /x/`; `not to be 3` -> `is not 3`; other phrases -> `is …`."""
    words = text.split(" ")
    if words[:2] == ["not", "to"] and len(words) > 2:
        verb = words[2]
        head = f"{_IRREGULAR[verb]} not" if verb == "be" else f"does not {verb}"
        return " ".join([head, *words[3:]])
    if words[0] == "to" and len(words) > 1:
        return " ".join([_conjugate(words[1]), *words[2:]])
    return f"is {text}"


def _conjugate(verb: str) -> str:
    if verb in _IRREGULAR:
        return _IRREGULAR[verb]
    return verb + ("es" if verb.endswith(("ch", "sh", "s", "x")) else "s")


def clip(text: str, limit: int = MESSAGE_LIMIT) -> str:
    """One line, at most `limit` characters (an ellipsis marks the cut). Every character is
    kept as it is (`"rm  -rf /"` keeps its two spaces), but one that does not print (a line
    break, a tab, a control or format character) is written as its escape (`\\n`, `\\t`,
    `\\u200b`), so the line shows what the value holds."""
    text = printable(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


_BOUNDS = {"equals": "exactly", "gt": "more than", "gte": "at least", "lt": "less than"}


def show_bounds(raw: Any) -> str | None:
    """`{gte: 1, lte: 10}` as `at least 1 and at most 10` (None when `raw` is not bounds)."""
    if not isinstance(raw, dict) or not raw or not set(raw) <= {*_BOUNDS, "lte"}:
        return None
    return " and ".join(f"{_BOUNDS.get(k, 'at most')} {v}" for k, v in raw.items())
