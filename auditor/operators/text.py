"""String operators: matches / not_matches (RE2), starts_with, starts_with_any, ends_with.

Takes the actual value and the prepared argument, gives a bool (registered in `core.REGISTRY`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import re2

from auditor.common.escape import printable
from auditor.operators.core import STRING, STRING_LIST, STRINGS, need_string, operator

# RE2's own refusals of lookaround (`(?=`, `(?<!`, …) and backreferences (`\1`).
_UNSUPPORTED_RE = re.compile(r"invalid perl operator: \(\?<?[=!]|invalid escape sequence: \\[1-9]")
_TOO_LARGE = "pattern too large"
#: `{,N}` and `{,}`: Python's `re` (what a pattern is often tried with) reads a repeat from
#: zero, RE2 the text `{,3}` itself, so `^x{,3}$` matched no `xx` and `not_matches` passed
#: everything (T74 #7). Found outside a class (`[{,3}]`) and not escaped (`\{,3}`).
_OMITTED_MIN = re.compile(r"\\.|\[(?:\^?\])?(?:\\.|[^\]])*\]|(\{,\d*\})", re.DOTALL)

#: The memory RE2 may use for one pattern: RE2's own default, 8 MiB. A name of up to 64
#: letters or digits of any script (`^[\p{L}\p{N} ._-]{1,64}$`, 86,000 instructions, 30 ms)
#: compiles, and so does `\pL{150}` (179,000 instructions, about 1 MB kept, 70 ms); `\pL{1000}`
#: is refused. (A 1 MiB limit refused that 64-letter check: reviewer R29a #4.) The shipped
#: packs' largest pattern compiles into 167 instructions.
MAX_REGEX_MEMORY = 8 << 20
#: The most RE2 instructions all the patterns of one policy set (`regex_budget`) compile into
#: together, about 2 s of compiling and some tens of MB: 2,000 rules of `\pL{150}` took
#: minutes and gigabytes (T52 #6). A pattern refused as too large counts as `REFUSED_COST`
#: (the work of trying it, about 80 ms); once the budget is spent, each later pattern is only
#: tried with `_PROBE_MEMORY` (a fraction of a millisecond, refused or not).
MAX_REGEX_TOTAL = 5_000_000
REFUSED_COST = 200_000
#: What a pattern is compiled with first; one that does not fit is compiled again with
#: `MAX_REGEX_MEMORY` (`\pL{25}`, 29,905 instructions, fits).
_SMALL_MEMORY = 1 << 20
_PROBE_MEMORY = 64 << 10


class RegexBudget:
    """What is left of one policy set's RE2 instructions, and the rule being compiled."""

    def __init__(self, total: int = MAX_REGEX_TOTAL) -> None:
        self.total = total
        self.left = total
        self.rule = ""  # the id of the rule whose patterns are compiled, for the messages


_BUDGET: ContextVar[RegexBudget | None] = ContextVar("auditor_regex_budget", default=None)


@contextmanager
def regex_budget(total: int = MAX_REGEX_TOTAL) -> Iterator[RegexBudget]:
    """The patterns compiled inside share one budget of `total` RE2 instructions (a policy
    set's: `load_policies`); outside, each pattern has only its own limit."""
    budget = RegexBudget(total)
    token = _BUDGET.set(budget)
    try:
        yield budget
    finally:
        _BUDGET.reset(token)


def prepare_regex(arg: Any, enums: Mapping[str, tuple[str, ...]]) -> Any:
    """Compile an RE2 pattern (linear time); lookaround and backreferences are refused, and
    so is a pattern beyond `MAX_REGEX_MEMORY`, or beyond what is left of the policy set's
    budget (`regex_budget`)."""
    if not isinstance(arg, str):
        raise ValueError("a regular expression must be a string")
    budget = _BUDGET.get()
    spent = budget is not None and budget.left < 0
    options = re2.Options()
    options.log_errors = False
    shown = printable(arg)  # as the policy writes it, one line
    if "{," in arg:
        _refuse_omitted_minimum(arg, shown)
    # 1 MB first, RE2's 8 MB only for a pattern that needs it: the memory a pattern may use
    # bounds its matching (the DFA's cache) as well as its compiling, and 600 small patterns of
    # large automata at 8 MB each took gigabytes to match a long value (reviewer R30 #7)
    tries = (_PROBE_MEMORY,) if spent else (_SMALL_MEMORY, MAX_REGEX_MEMORY)
    for at, memory in enumerate(tries, start=1):
        options.max_mem = memory
        try:
            compiled = re2.compile(arg, options)
            break
        except re2.error as exc:
            reason = (
                exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else str(exc)
            )
            if _UNSUPPORTED_RE.match(reason):
                raise ValueError(
                    f"regex /{shown}/ uses lookaround or a backreference, which RE2 (linear "
                    "time) does not support"
                ) from None
            if not reason.startswith(_TOO_LARGE):
                raise ValueError(f"invalid regex /{shown}/: {reason}") from None
            if at < len(tries):
                continue
            if budget is not None and spent:
                raise ValueError(_over_budget(shown, budget)) from None
            if budget is not None:
                budget.left -= REFUSED_COST
            raise ValueError(
                f"regex /{shown}/{_whose(budget)} is too large: RE2 needs more than "
                f"{MAX_REGEX_MEMORY:,} bytes to compile it, the limit for one pattern (a "
                "counted repeat of a large class, such as `\\pL{1000}`, is the usual cause: "
                "use `+` or a smaller count)"
            ) from None
    if budget is not None:
        budget.left -= compiled.programsize
        if budget.left < 0:
            raise ValueError(_over_budget(shown, budget))
    return compiled


def _refuse_omitted_minimum(arg: str, shown: str) -> None:
    for found in _OMITTED_MIN.finditer(arg):
        if found[1]:
            repeat = found[1]
            raise ValueError(
                f"regex /{shown}/: RE2 reads `{repeat}` as the text `{repeat}`, not as a "
                f"repeat from zero as Python's re does; write `{{0{repeat[1:]}` for the "
                f"repeat, or `\\{repeat}` for the text"
            )


def _whose(budget: RegexBudget | None) -> str:
    return f" of rule `{budget.rule}`" if budget is not None and budget.rule else ""


def _over_budget(shown: str, budget: RegexBudget) -> str:
    return (
        f"regex /{shown}/{_whose(budget)} is refused: with it, the regexes of these policy "
        f"files compile into more than {budget.total:,} RE2 instructions, the limit for one set "
        f"of policies (a pattern refused as too large counts as {REFUSED_COST:,}); shorten or "
        "share patterns"
    )


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
