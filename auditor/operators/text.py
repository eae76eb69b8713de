"""String operators: matches / not_matches (RE2), starts_with, starts_with_any, ends_with.

Takes the actual value and the prepared argument, gives a bool (registered in `core.REGISTRY`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import re2

from auditor.common.escape import printable
from auditor.operators.core import STRING, STRING_LIST, STRINGS, need_string, operator

# RE2's own refusals of lookaround (`(?=`, `(?<!`, …) and backreferences (`\1`).
_UNSUPPORTED_RE = re.compile(r"invalid perl operator: \(\?<?[=!]|invalid escape sequence: \\[1-9]")


def prepare_regex(arg: Any, enums: Mapping[str, tuple[str, ...]]) -> Any:
    """Compile an RE2 pattern (linear time); lookaround and backreferences are refused."""
    if not isinstance(arg, str):
        raise ValueError("a regular expression must be a string")
    options = re2.Options()
    options.log_errors = False
    try:
        return re2.compile(arg, options)
    except re2.error as exc:
        reason = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        shown = printable(arg)  # as the policy writes it, one line
        if _UNSUPPORTED_RE.match(reason):
            raise ValueError(
                f"regex /{shown}/ uses lookaround or a backreference, which RE2 (linear time) "
                "does not support"
            ) from None
        raise ValueError(f"invalid regex /{shown}/: {reason}") from None


@operator("matches", STRING, "to match /{arg}/", "not to match /{arg}/", prepare=prepare_regex)
def matches(actual: Any, expected: Any) -> bool:
    """The string contains a match of the RE2 pattern (anchor with ^…$ for a full match)."""
    return expected.search(need_string(actual)) is not None


@operator("not_matches", STRING, "not to match /{arg}/", "to match /{arg}/", prepare=prepare_regex)
def not_matches(actual: Any, expected: Any) -> bool:
    """The string contains no match of the RE2 pattern."""
    return expected.search(need_string(actual)) is None


@operator("starts_with", STRINGS, "to start with {arg}", "not to start with {arg}", ref=True)
def starts_with(actual: Any, expected: str | list[str]) -> bool:
    """The string starts with the prefix (or one of the listed prefixes)."""
    prefixes = tuple(expected) if isinstance(expected, list) else (expected,)
    return need_string(actual).startswith(prefixes)


@operator("ends_with", STRINGS, "to end with {arg}", "not to end with {arg}", ref=True)
def ends_with(actual: Any, expected: str | list[str]) -> bool:
    """The string ends with the suffix (or one of the listed suffixes)."""
    suffixes = tuple(expected) if isinstance(expected, list) else (expected,)
    return need_string(actual).endswith(suffixes)


@operator(
    "starts_with_any",
    STRING_LIST,
    "to start with one of {arg}",
    "to start with none of {arg}",
    ref=True,
)
def starts_with_any(actual: Any, expected: list[str]) -> bool:
    """The string starts with one of the listed prefixes (an empty list matches nothing)."""
    return need_string(actual).startswith(tuple(expected))
