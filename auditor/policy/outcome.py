"""What evaluating a condition gives: a four-valued `Outcome` with a message and evidence.

Takes operator results, gives `pass | fail | missing | error` plus a one-line message. Combining
never hides an error and never turns an absent path into a silent false.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

import orjson

from auditor import paths
from auditor.models import Evidence
from auditor.operators import MISSING, OperandTypeError, json_type

OutcomeStatus = Literal["pass", "fail", "missing", "error"]
MAX_EVIDENCE = 20


@dataclass(frozen=True)
class Env:
    """What a condition sees besides the node: the clock and, for change rules, the two sides."""

    now: datetime
    change: tuple[Any, Any] | None = None
    root: Any = MISSING  # the document `{ref: …}` arguments are read from


def short(value: Any, limit: int = 60) -> str:
    """A short, one-line rendering of a value for messages (never a whole document)."""
    if value is MISSING:
        return "absent"
    try:
        text = orjson.dumps(value, default=str).decode()
    except TypeError:
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def show_arg(raw: Any) -> str:
    """An operator argument as written in messages (`"medium" (autonomy)` for enum levels)."""
    if isinstance(raw, dict) and set(raw) == {"enum", "value"}:
        return f"{short(raw['value'])} ({raw['enum']})"
    return short(raw)


def show(where: str) -> str:
    """A path as written in messages: `sandbox.enabled` rather than `$.sandbox.enabled`."""
    return where[2:] if where.startswith("$.") else where


def element_base(where: str, index: int, item: Any) -> str:
    """The evidence path of an array element: by `id` when it has one, else by position."""
    ident = item.get("id") if isinstance(item, dict) else None
    part = paths.Match("id", ident) if isinstance(ident, str | int) else index
    return where + paths.render_component(part)


@dataclass(frozen=True)
class Outcome:
    """The result of one condition on one node."""

    status: OutcomeStatus
    message: str
    evidence: tuple[Evidence, ...] = ()

    @classmethod
    def plain(
        cls, status: OutcomeStatus, message: str, evidence: tuple[Evidence, ...] = ()
    ) -> Outcome:
        """An outcome from its parts."""
        return cls(status, message, evidence[:MAX_EVIDENCE])

    @classmethod
    def passed(cls, where: str, value: Any, evidence: tuple[Evidence, ...]) -> Outcome:
        """A leaf that held."""
        return cls("pass", f"{show(where)} is {short(value)}", evidence)

    @classmethod
    def failed(cls, where: str, value: Any, expected: str, evidence: Evidence) -> Outcome:
        """A leaf that did not hold."""
        return cls("fail", f"{show(where)} is {short(value)}; expected {expected}", (evidence,))

    @classmethod
    def missing(cls, where: str) -> Outcome:
        """A leaf whose path is absent (the rule's `on_missing` decides)."""
        return cls("missing", f"{show(where)} is absent", (Evidence(where, None, None, "", False),))

    @classmethod
    def error(cls, message: str, evidence: Evidence | None = None) -> Outcome:
        """The data cannot be checked (wrong shape)."""
        return cls("error", message, (evidence,) if evidence else ())

    @classmethod
    def type_error(
        cls, where: str, value: Any, op: str, exc: OperandTypeError, evidence: Evidence
    ) -> Outcome:
        """An operator met a value of the wrong type: name the path and both types."""
        if exc.detail:
            text = f"{show(where)} is {short(value)}: {exc.detail}"
        else:
            text = f"{show(where)} is {json_type(value)} {short(value)}; `{op}` needs {exc.wanted}"
        return cls("error", text, (evidence,))

    def negated(self) -> Outcome:
        """`not`: pass and fail swap; missing and error stay."""
        if self.status == "pass":
            return Outcome("fail", f"not expected: {self.message}", self.evidence)
        if self.status == "fail":
            return Outcome("pass", self.message, self.evidence)
        return self


def _summary(picked: Sequence[Outcome], noun: str) -> str:
    first = picked[0].message
    return first if len(picked) == 1 else f"{first} (+{len(picked) - 1} more {noun})"


def _gather(picked: Sequence[Outcome]) -> tuple[Evidence, ...]:
    return tuple(ev for o in picked for ev in o.evidence)[:MAX_EVIDENCE]


def _pick(outcomes: Sequence[Outcome], status: str) -> list[Outcome]:
    return [o for o in outcomes if o.status == status]


def combine_all(outcomes: Sequence[Outcome], empty: str = "nothing to check") -> Outcome:
    """Every outcome must pass: error > fail > missing > pass."""
    if not outcomes:
        return Outcome("pass", empty)
    for status, noun in (("error", "errors"), ("fail", "failures"), ("missing", "absent")):
        picked = _pick(outcomes, status)
        if picked:
            return Outcome(status, _summary(picked, noun), _gather(picked))  # type: ignore[arg-type]
    return Outcome("pass", _summary(outcomes, "checks"), _gather(outcomes))


def combine_any(outcomes: Sequence[Outcome], empty: str = "nothing to check") -> Outcome:
    """At least one outcome must pass: error > pass > missing > fail."""
    if not outcomes:
        return Outcome("fail", empty)
    for status in ("error", "pass", "missing"):
        picked = _pick(outcomes, status)
        if picked:
            return Outcome(status, _summary(picked, "more"), _gather(picked))
    return Outcome("fail", "none held: " + _summary(outcomes, "failures"), _gather(outcomes))
