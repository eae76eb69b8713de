"""How messages word an expectation: operator phrases, their negations and third-person forms.

Takes an operator, its argument (as written and as shown) and whether it is negated, gives the
phrase that follows "expected" (`to match /^rm/`, `not to contain "[secret "`, `a non-empty
list`) and the split the evidence carries (phrase without the argument, argument value).
"""

from __future__ import annotations

from functools import cache
from typing import Any

from auditor.operators import MISSING, Operator, json_type

#: Message and description length caps (characters); messages are one line.
MESSAGE_LIMIT = 240
_NOUNS = {"array": "list", "object": "object", "string": "string"}
_IRREGULAR = {"be": "is", "have": "has"}


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
    """One line, at most `limit` characters (an ellipsis marks the cut)."""
    # Whitespace other than a single inner space is never printable, so most texts are
    # already one line and skip the split.
    if not text.isprintable() or "  " in text or text[:1] == " " or text[-1:] == " ":
        text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


_BOUNDS = {"equals": "exactly", "gt": "more than", "gte": "at least", "lt": "less than"}


def show_bounds(raw: Any) -> str | None:
    """`{gte: 1, lte: 10}` as `at least 1 and at most 10` (None when `raw` is not bounds)."""
    if not isinstance(raw, dict) or not raw or not set(raw) <= {*_BOUNDS, "lte"}:
        return None
    return " and ".join(f"{_BOUNDS.get(k, 'at most')} {v}" for k, v in raw.items())
