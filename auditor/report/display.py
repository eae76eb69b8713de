"""What people read in the HTML and Markdown reports: values, changes and readiness as text.

Takes report records, gives plain (unescaped) display text; each renderer escapes it for its
format. `evidence_line` is the one wording of an evidence item, in every format that words one
(HTML, Markdown, JUnit, the SARIF message, OSCAL); `findings.json` keeps the raw fields.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, NamedTuple

from auditor.common.escape import printable, show_value
from auditor.models import Change, Evidence
from auditor.report.model import ReadinessRow, WaiverSummary, shared_parts

if TYPE_CHECKING:
    from auditor.findings.finding import Finding
    from auditor.models import Waiver

#: Shown where a value does not exist (the before of an addition, an unknown score).
ABSENT = "—"

_NO_BEFORE = frozenset({"added", "item_added"})
_NO_AFTER = frozenset({"removed", "item_removed"})
_CODE_SPAN = re.compile(r"`([^`\n]+)`")


def display_value(value: Any) -> str:
    """A JSON value for people: strings quoted but not JSON-escaped (a regex keeps one `\\`),
    and, as in the findings' messages (`printable`), a character that does not print written
    as its escape: a renderer's cleaning would drop a NUL or fold a line break, and a
    zero-width character would make two different values look alike."""
    if isinstance(value, str):
        return f'"{printable(value)}"'
    return printable(show_value(value))


def expected_value(value: Any) -> str:
    """An operator's argument for people: an ordered level (`at_most: medium` with `enum:
    autonomy`, held as `{"enum": "autonomy", "value": "medium"}`) as the finding's message
    words it, `"medium" (autonomy)`; any other value as `display_value` shows it."""
    if isinstance(value, dict) and set(value) == {"enum", "value"}:
        enum = value["enum"]
        if isinstance(enum, str):
            return f"{display_value(value['value'])} ({enum})"
    return display_value(value)


def change_before(c: Change) -> str | None:
    """The before value to show, or None when the change has no before (an addition)."""
    return None if c.kind in _NO_BEFORE else display_value(c.before)


def change_after(c: Change) -> str | None:
    """The after value to show, or None when the change has no after (a removal)."""
    return None if c.kind in _NO_AFTER else display_value(c.after)


def change_kind(c: Change) -> str:
    """`item added` for `item_added`."""
    return c.kind.replace("_", " ")


def operator_text(operator: str) -> str:
    """`starts with any` for `starts_with_any`."""
    return operator.replace("_", " ")


class EvidenceParts(NamedTuple):
    """One piece of evidence as plain display text, every format's words for it."""

    path: str
    found: str | None  # the value there; None when the path was absent
    operator: str | None  # the operator in words (`not in`); None when there is none
    expected: str | None  # the operator's argument; None when it shows none
    note: str | None  # e.g. `and 3 more entries not shown`; None when there is none


#: What evidence says when the path was absent, and between what was found and expected.
ABSENT_WORD = "absent"
EXPECTED_WORD = " — expected "


#: The most evidence items whose words `evidence_parts` keeps inside `shared_order` (emptied
#: when full; a 10,000-revision nightly's reports word about 2,500).
PARTS_LIMIT = 8192


def evidence_parts(e: Evidence) -> EvidenceParts:
    """The pieces every report shows for an evidence item (unshortened, unescaped). Inside
    `model.shared_order`, made once per item for every report: the words depend on the item's
    fields alone, and the item is kept with them, so its identity is not reused meanwhile."""
    known = shared_parts()
    if known is None:
        return _evidence_parts(e)
    found = known.get(id(e))
    if found is not None and found[0] is e:
        parts: EvidenceParts = found[1]
        return parts
    if len(known) >= PARTS_LIMIT:
        known.clear()
    parts = _evidence_parts(e)
    known[id(e)] = (e, parts)
    return parts


def _evidence_parts(e: Evidence) -> EvidenceParts:
    operator = operator_text(e.operator) if e.operator else None
    return EvidenceParts(
        e.path,
        display_value(e.actual) if e.present else None,
        operator,
        expected_value(e.expected) if operator is not None and e.shows_expected else None,
        e.note or None,
    )


def _same(text: str) -> str:
    return text


def evidence_line(
    e: Evidence,
    *,
    code: Callable[[str], str] = _same,
    text: Callable[[str], str] = _same,
    absent: Callable[[str], str] | None = None,
) -> str:
    """An evidence item in the words every format uses:
    `$.path: "x" — expected not in ["a"] (note)`, or `$.path: absent — expected …`.

    `code` marks up (escapes, shortens) the path and values, `text` the operator's words and
    the note, `absent` the word `absent` (default: `text`): each format gives its own markup,
    the default is plain text. The glue between them is the same constant text everywhere,
    with nothing any format would read as markup."""
    p = evidence_parts(e)
    found = code(p.found) if p.found is not None else (absent or text)(ABSENT_WORD)
    out = f"{code(p.path)}: {found}"
    if p.operator is not None:
        out += f"{EXPECTED_WORD}{text(p.operator)}"
        if p.expected is not None:
            out += f" {code(p.expected)}"
    if p.note is not None:
        out += f" ({text(p.note)})"
    return out


def level_text(row: ReadinessRow) -> str:
    """The readiness level, or an em dash when none could be computed."""
    return ABSENT if row.level is None else str(row.level)


def score_text(row: ReadinessRow) -> str:
    """`62 %`, or an em dash when nothing was evaluated."""
    return ABSENT if row.score is None else f"{row.score * 100:.0f} %"


def age_text(row: ReadinessRow) -> str:
    """Age in days with one decimal, or an em dash."""
    return ABSENT if row.age_days is None else f"{row.age_days:.1f}"


def clean_word(row: ReadinessRow) -> str:
    """`yes`, `no` or `unknown`."""
    return "unknown" if row.clean is None else ("yes" if row.clean else "no")


def code_spans(text: str) -> list[tuple[bool, str]]:
    """Split prose on `code` spans: (is_code, text) pieces, in order, none empty."""
    pieces: list[tuple[bool, str]] = []
    pos = 0
    for m in _CODE_SPAN.finditer(text):
        if m.start() > pos:
            pieces.append((False, text[pos : m.start()]))
        pieces.append((True, m.group(1)))
        pos = m.end()
    if pos < len(text):
        pieces.append((False, text[pos:]))
    return pieces


class ExpiredWaivers:
    """The expired waiver that waived a failing, unknown or error finding until it expired
    (its rule and subject), so every report can say why the finding counts again."""

    def __init__(self, expired: Sequence[Waiver]) -> None:
        self._by_rule: dict[str, list[Waiver]] = {}
        for w in expired:
            self._by_rule.setdefault(w.rule_id, []).append(w)
        #: No expired waiver: every finding's is None (a writer's loop need not ask)
        self.none = not self._by_rule

    def __call__(self, f: Finding) -> Waiver | None:
        if not self._by_rule:
            return None
        from auditor.findings.waivers import WAIVABLE, subject_matches

        if f.status not in WAIVABLE:
            return None
        for w in self._by_rule.get(f.rule_id, ()):
            if subject_matches(w, f.subject):
                return w
        return None


def expired_waiver_text(w: Waiver) -> str:
    """What a report says of a finding whose waiver expired."""
    ticket = f", {w.ticket}" if w.ticket else ""
    return f"Waiver expired on {w.expires:%Y-%m-%d} (owner {w.owner}{ticket}): no longer waived"


def expired_since_text(w: Waiver, as_of: datetime) -> str:
    """What a report says of a finding an `--at` run waived by a waiver that expired since."""
    ticket = f", {w.ticket}" if w.ticket else ""
    return (
        f"Waiver judged as of {as_of:%Y-%m-%d} (--at), when it was in force; it expired on "
        f"{w.expires:%Y-%m-%d} (owner {w.owner}{ticket}), before this report"
    )


def waivers_as_of_text(as_of: datetime, lapsed: int) -> str:
    """What every report says of an `--at` run's waivers."""
    since = f"; {lapsed} of them expired after that, before this report" if lapsed else ""
    return (
        f"Waivers judged as of {as_of:%Y-%m-%d %H:%M} UTC (--at): those in force then waive "
        f"this run's findings{since}"
    )


class WaiverNotes:
    """What a finding's row says of its waivers, beyond the one in force that waives it: the
    waiver that expired (the finding counts again: `expired_waiver_text`), or, in an `--at`
    run, that the waiver which waived it as of then has expired since (`expired_since_text`);
    "" for any other finding."""

    def __init__(self, waivers: WaiverSummary) -> None:
        self._expired = ExpiredWaivers(waivers.expired)
        self._as_of = waivers.as_of
        self._lapsed = {id(w) for w in waivers.expired_since_as_of}
        self._by_value = set(waivers.expired_since_as_of)
        #: No expired waiver and none expired since `--at`: every finding's note is ""
        self.none = self._expired.none and not self._lapsed

    def __call__(self, f: Finding) -> str:
        w = f.waiver
        if w is not None:
            lapsed = id(w) in self._lapsed or (bool(self._by_value) and w in self._by_value)
            if lapsed and self._as_of is not None:
                return expired_since_text(w, self._as_of)
            return ""
        expired = self._expired(f)
        return expired_waiver_text(expired) if expired is not None else ""
