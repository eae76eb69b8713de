"""What evaluating a condition gives: a four-valued `Outcome` with a message and evidence.

Takes operator results, gives `pass | fail | missing | error` plus a one-line message. Combining
never hides an error and never turns an absent path into a silent false.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from auditor.models import Evidence
from auditor.operators import OperandTypeError, json_type
from auditor.policy.phrasing import MESSAGE_LIMIT, clip, short, show

OutcomeStatus = Literal["pass", "fail", "missing", "error"]
MAX_EVIDENCE = 20


@dataclass(slots=True)
class Outcome:
    """The result of one condition on one node.

    Never changed once built (not frozen only because conditions build hundreds of thousands
    of them and frozen construction costs four times as much); it never leaves the package.
    """

    status: OutcomeStatus
    message: str
    evidence: tuple[Evidence, ...] = ()
    count: int = 1  # how many failing checks this outcome stands for ("+N more")
    core: str = ""  # the message without its "(+N more …)" suffix
    subject: str = ""  # a leaf's `path is value`, so `any` can merge expectations
    expects: str = ""  # a leaf's expectation phrase, the part after "expected"
    flip: Callable[[], Outcome] | None = field(default=None, compare=False, repr=False)
    _negation: Outcome | None = field(default=None, compare=False, repr=False)

    @property
    def head(self) -> str:
        """The message without a "(+N more …)" suffix."""
        return self.core or self.message

    @classmethod
    def plain(
        cls, status: OutcomeStatus, message: str, evidence: tuple[Evidence, ...] = ()
    ) -> Outcome:
        """An outcome from its parts."""
        return cls(status, clip(message), evidence[:MAX_EVIDENCE])

    @classmethod
    def passed(cls, where: str, value: Any, evidence: tuple[Evidence, ...]) -> Outcome:
        """A leaf that held."""
        subject = subject_of(where, value)
        return cls("pass", clip(subject), evidence, subject=subject)

    @classmethod
    def failed(cls, where: str, value: Any, expected: str, evidence: Evidence) -> Outcome:
        """A leaf that did not hold."""
        subject = subject_of(where, value)
        text = clip(failing(subject, expected))
        return cls("fail", text, (evidence,), subject=subject, expects=expected)

    @classmethod
    def missing(cls, where: str) -> Outcome:
        """A leaf whose path is absent (the rule's `on_missing` decides)."""
        return cls("missing", f"{show(where)} is absent", (Evidence(where, None, None, "", False),))

    @classmethod
    def error(cls, message: str, evidence: Evidence | None = None) -> Outcome:
        """The data cannot be checked (wrong shape)."""
        return cls("error", clip(message), (evidence,) if evidence else ())

    @classmethod
    def type_error(
        cls, where: str, value: Any, op: str, exc: OperandTypeError, evidence: Evidence
    ) -> Outcome:
        """An operator met a value of the wrong type: name the path and both types."""
        if exc.detail:
            text = f"{show(where)} is {short(value)}: {exc.detail}"
        else:
            found = "null" if value is None else f"{json_type(value)} {short(value)}"
            text = f"{show(where)} is {found}; `{op}` needs {exc.wanted}"
        return cls("error", clip(text), (evidence,))

    def negated(self) -> Outcome:
        """`not`: pass and fail swap (with the negated wording); missing and error stay, but
        one with a `flip` words its evidence's expectation negated, as the rule states it."""
        if self.flip is None and self.status not in ("pass", "fail"):
            return self
        if self._negation is None:
            self._negation = self._negate()
        return self._negation

    def _negate(self) -> Outcome:
        if self.flip is not None:
            return self.flip()
        if self.status == "pass":
            return Outcome("fail", clip(f"not expected: {self.message}"), self.evidence)
        return Outcome("pass", self.message, self.evidence)


def subject_of(where: str, value: Any) -> str:
    """`path is value`: what a leaf's message begins with."""
    return f"{show(where)} is {short(value)}"


def failing(subject: str, expected: str) -> str:
    """A failed leaf's message: `path is value; expected …` (unclipped)."""
    return f"{subject}; expected {expected}"


def paired(first: Outcome, second: Outcome) -> Outcome:
    """`first`, whose negation is `second` (and the negation of that is `first` again)."""
    return lazy_pair(first, lambda: second)


def lazy_pair(first: Outcome, build: Callable[[], Outcome]) -> Outcome:
    """`first`, whose negation `build` words only when asked (negating that gives `first`)."""

    def flip() -> Outcome:
        second = build()
        second.flip = lambda: first
        return second

    first.flip = flip
    return first


def with_flip(outcome: Outcome, flip: Callable[[], Outcome]) -> Outcome:
    """The outcome (just built, not yet shared), negated lazily by `flip`."""
    outcome.flip = flip
    return outcome


def suffixed(head: str, more: int, noun: str) -> str:
    """`head (+N more noun)`, or just `head` when there is nothing more."""
    if more <= 0:
        return clip(head)
    word = noun[:-1] if more == 1 and noun.endswith(("failures", "errors")) else noun
    return with_suffix(head, f" (+{more} more {word})")


def with_suffix(head: str, suffix: str) -> str:
    """`head` (clipped to leave room for `suffix`) then `suffix`, as `suffixed` words it."""
    return clip(head, MESSAGE_LIMIT - 30) + suffix if suffix else clip(head)


_SUFFIX = re.compile(r" \(\+\d+ more [a-z]+\)$")


def suffix_of(message: str) -> str:
    """The ` (+N more noun)` a message worded by `suffixed` ends with; empty if none."""
    found = _SUFFIX.search(message)
    return found.group() if found else ""


def _summary(status: OutcomeStatus, picked: Sequence[Outcome], noun: str) -> Outcome:
    total = sum(o.count for o in picked)
    head = picked[0].head
    core = clip(head)
    text = core if total <= 1 else suffixed(head, total - 1, noun)
    return Outcome(status, text, _gather(picked), total, core)


def _gather(picked: Sequence[Outcome]) -> tuple[Evidence, ...]:
    if len(picked) == 1:
        return picked[0].evidence[:MAX_EVIDENCE]
    return tuple(ev for o in picked for ev in o.evidence)[:MAX_EVIDENCE]


_OPPOSITE: dict[str, OutcomeStatus] = {"pass": "fail", "fail": "pass"}


def turned(outcome: Outcome, flips: int) -> Outcome:
    """The outcome negated `flips` times (each negation is worded once, then remembered)."""
    for _ in range(flips):
        outcome = outcome.negated()
    return outcome


def turned_status(status: OutcomeStatus, flips: int) -> OutcomeStatus:
    """The status of an outcome negated `flips` times, without wording the negation."""
    return _OPPOSITE.get(status, status) if flips % 2 else status


def pick(outcomes: Sequence[Outcome], status: str, flips: int = 0) -> list[Outcome]:
    """The outcomes (negated `flips` times) that have `status`; only those are worded."""
    if not flips:
        return [o for o in outcomes if o.status == status]
    return [turned(o, flips) for o in outcomes if turned_status(o.status, flips) == status]


_ALL_ORDER: tuple[tuple[OutcomeStatus, str], ...] = (
    ("error", "errors"),
    ("fail", "failures"),
    ("missing", "absent"),
)
_ANY_ORDER: tuple[tuple[OutcomeStatus, str], ...] = (
    ("error", "errors"),
    ("pass", "passing"),
    ("missing", "absent"),
)


_NOTHING = "nothing to check"


def combine_all(outcomes: Sequence[Outcome]) -> Outcome:
    """Every outcome must pass: error > fail > missing > pass."""
    return _all(outcomes, 0)


def combine_any(outcomes: Sequence[Outcome]) -> Outcome:
    """At least one outcome must pass: error > pass > missing > fail."""
    return _any(outcomes, 0)


def _all(outcomes: Sequence[Outcome], flips: int) -> Outcome:
    """`combine_all` of the outcomes negated `flips` times."""
    if not outcomes:
        return Outcome("pass", _NOTHING)
    flip = lambda: _not_all(outcomes, flips)  # noqa: E731
    for status, noun in _ALL_ORDER:
        picked = pick(outcomes, status, flips)
        if picked:
            return with_flip(_summary(status, picked, noun), flip)
    return with_flip(_summary("pass", pick(outcomes, "pass", flips), "checks"), flip)


def _not_all(outcomes: Sequence[Outcome], flips: int) -> Outcome:
    """`not all`: when every part held, say that the combination is not allowed."""
    out = _any(outcomes, flips + 1)
    if out.status != "fail" or len(outcomes) < 2:
        return out
    said = dict.fromkeys(o.subject or o.head for o in (turned(o, flips) for o in outcomes))
    text = clip("not allowed: " + " and ".join(said))
    return Outcome(out.status, text, out.evidence, out.count, text, flip=out.flip)


def _any(outcomes: Sequence[Outcome], flips: int) -> Outcome:
    """`combine_any` of the outcomes negated `flips` times."""
    if not outcomes:
        return Outcome("fail", _NOTHING)
    flip = lambda: _all(outcomes, flips + 1)  # noqa: E731
    for status, noun in _ANY_ORDER:
        picked = pick(outcomes, status, flips)
        if picked:
            return with_flip(_summary(status, picked, noun), flip)
    return with_flip(_none_held([turned(o, flips) for o in outcomes]), flip)


def _none_held(outcomes: Sequence[Outcome]) -> Outcome:
    """`a is 1; expected 2 or 3` when the failures share a subject, else each in turn."""
    groups: dict[str, list[str]] = {}
    for o in outcomes:
        key = o.subject if o.subject and o.expects else o.head
        groups.setdefault(key, []).extend([o.expects] if o.subject and o.expects else [])
    parts = [f"{s}; expected {' or '.join(e)}" if e else s for s, e in groups.items()]
    text = clip("; or ".join(parts))
    return Outcome("fail", text, _gather(outcomes), 1, text)
