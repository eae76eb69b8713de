"""What people read in the HTML and Markdown reports: values, changes and readiness as text.

Takes report records, gives plain (unescaped) display text; each renderer escapes it for its
format. Machine formats (JSON, SARIF, JUnit) keep the data as it is.
"""

from __future__ import annotations

import re
from typing import Any

from auditor.common.escape import show_value
from auditor.models import Change
from auditor.report.model import ReadinessRow

#: Shown where a value does not exist (the before of an addition, an unknown score).
ABSENT = "—"

_NO_BEFORE = frozenset({"added", "item_added"})
_NO_AFTER = frozenset({"removed", "item_removed"})
_CODE_SPAN = re.compile(r"`([^`\n]+)`")


def display_value(value: Any) -> str:
    """A JSON value for people: strings quoted but not JSON-escaped (a regex keeps one `\\`)."""
    if isinstance(value, str):
        return f'"{value}"'
    return show_value(value)


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
