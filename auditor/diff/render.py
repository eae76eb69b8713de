"""Render a list of `Change` records for people: one-line summaries, terminal text, Markdown.

Takes Changes (values already redacted: secrets are markers), gives strings. Data is never
trusted: control, escape and bidi characters are shown escaped, and Markdown output escapes
table pipes, backticks, HTML and neutralises @mentions and #123 references. No CLI concerns.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import orjson

from auditor.common import escape
from auditor.common.escape import terminal_text
from auditor.models import JSON, Change
from auditor.redact import MARKER_RE, marker_fingerprint

_MAX_VALUE = 60
_MAX_SUMMARY_PARTS = 4
_SIGN = {
    "added": "+",
    "removed": "-",
    "changed": "~",
    "type_changed": "~",
    "item_added": "+",
    "item_removed": "-",
    "renamed": ">",
}
_COLOR = {"+": "\x1b[32m", "-": "\x1b[31m", "~": "\x1b[33m", ">": "\x1b[36m"}
_RESET = "\x1b[0m"
_KIND_LABEL: dict[str, str] = {
    "added": "added",
    "removed": "removed",
    "changed": "changed",
    "type_changed": "type changed",
    "item_added": "item added",
    "item_removed": "item removed",
    "renamed": "renamed",
}


def _short(text: str, limit: int = _MAX_VALUE) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _clip_pair(before: str, after: str, limit: int) -> tuple[str, str]:
    """Both texts cut to `limit` characters so that where they differ stays in view.

    A text that fits is left whole. Otherwise both keep the same window: a few characters of
    their common beginning (`…` before them when the rest of it is cut), then what follows, up
    to `limit`. Two texts that differ therefore never read the same once cut.
    """
    if len(before) <= limit and len(after) <= limit:
        return before, after
    common = 0
    for x, y in zip(before, after, strict=False):
        if x != y:
            break
        common += 1
    keep = max(limit // 4, 3)  # of the common beginning, shown before the difference
    start = 0 if common <= limit - keep else common - keep

    def window(text: str) -> str:
        if start == 0:
            return _short(text, limit)
        return "…" + _short(text[start:], limit - 1)

    return window(before), window(after)


def _value_text(value: JSON) -> tuple[str, bool]:
    """The whole display of a value before cutting, and whether it is text that may be cut
    (a quoted string or a short list); otherwise it is already short (`{3 keys}`, `true`)."""
    if isinstance(value, str):
        fp = marker_fingerprint(value)
        if fp is not None:
            return f"secret fp:{fp}", False
        shown = MARKER_RE.sub(lambda m: f"[secret fp:{m['fp']}]", value)
        return orjson.dumps(shown).decode(), True
    if isinstance(value, dict):
        return (f"{{{len(value)} keys}}" if len(value) != 1 else "{1 key}"), False
    if isinstance(value, list):
        if len(value) <= 3 and all(not isinstance(v, dict | list) for v in value):
            return orjson.dumps(value).decode(), True
        return (f"[{len(value)} items]" if len(value) != 1 else "[1 item]"), False
    return orjson.dumps(value).decode(), False


def describe_value(value: JSON) -> str:
    """Short one-line display of a value; a secret marker shows as `secret fp:1a2b3c4d`."""
    text, cut = _value_text(value)
    return terminal_text(_short(text)) if cut else text


def describe_pair(before: JSON, after: JSON, limit: int = _MAX_VALUE) -> tuple[str, str]:
    """Both values of a change displayed, each at most `limit` characters: when long text has
    to be cut, the cut keeps where the two differ in view (see `_clip_pair`)."""
    (old, old_cut), (new, new_cut) = _value_text(before), _value_text(after)
    if old_cut and new_cut:
        old, new = _clip_pair(old, new, limit)
    else:
        old, new = (
            (_short(old, limit) if old_cut else old),
            (_short(new, limit) if new_cut else new),
        )
    return (terminal_text(old) if old_cut else old), (terminal_text(new) if new_cut else new)


def _is_secret_change(change: Change) -> bool:
    return (
        isinstance(change.before, str)
        and isinstance(change.after, str)
        and marker_fingerprint(change.before) is not None
        and marker_fingerprint(change.after) is not None
    )


def describe_change(change: Change) -> str:
    """The value part of a change: `true → false`, `+ "x"`, `secret changed (fp:a → fp:b)`.

    A rename reads `from old.path`, and `from old.path (secret fp:…, unchanged)` when the value
    moved is a secret (a rename keeps its value: nothing changed but the name)."""
    if change.kind == "renamed":
        moved = f"from {short_path(change.old_path or '')}"
        fp = marker_fingerprint(change.after) if isinstance(change.after, str) else None
        return moved + (f" (secret fp:{fp}, unchanged)" if fp is not None else "")
    if _is_secret_change(change):
        old, new = marker_fingerprint(change.before), marker_fingerprint(change.after)
        return f"secret changed (fp:{old} → fp:{new})"
    kind = change.kind
    if kind in ("added", "item_added"):
        return "+ " + describe_value(change.after)
    if kind in ("removed", "item_removed"):
        return "- " + describe_value(change.before)
    before, after = describe_pair(change.before, change.after)
    arrow = f"{before} → {after}"
    return arrow + (" (type changed)" if kind == "type_changed" else "")


def short_path(path: str) -> str:
    """A path without its leading `$.` (as shown in summaries), sanitized."""
    return terminal_text(path[2:] if path.startswith("$.") else path)


def _counts(group: Sequence[Change]) -> str:
    added = sum(c.kind == "item_added" for c in group)
    removed = sum(c.kind == "item_removed" for c in group)
    return " ".join(t for t in (f"+{added}" * bool(added), f"\u2212{removed}" * bool(removed)) if t)


def _is_set_item(change: Change) -> bool:
    """An entry added to or removed from a set list (its path is the list's, not an item's)."""
    return change.kind in ("item_added", "item_removed") and not change.path.endswith("]")


def _summary_part(path: str, group: Sequence[Change]) -> str:
    change = group[0]
    if _is_set_item(change):
        return f"{short_path(path)} {_counts(group)}"  # a set list: how many in, how many out
    if change.kind == "renamed":
        return f"{short_path(change.old_path or '')}→{short_path(path)} renamed"
    if _is_secret_change(change):
        return f"{short_path(path)} secret changed"
    if change.kind in ("changed", "type_changed"):
        before, after = describe_pair(change.before, change.after, 20)
        return f"{short_path(path)} {before}→{after}"
    return f"{short_path(path)} {change.kind.removeprefix('item_')}"


def change_summary(changes: Sequence[Change]) -> str:
    """One line, e.g. `sandbox.enabled true→false; commandDenylist +1 -2` (with a minus sign).

    The entries added to and removed from one set list are counted together; every other change
    is its own part, even where two share a path (an entry added at `[0]` of an ordered list and
    another removed from the old `[0]`)."""
    if not changes:
        return "no changes"
    groups: dict[str | int, list[Change]] = {}
    for n, change in enumerate(changes):
        groups.setdefault(change.path if _is_set_item(change) else n, []).append(change)
    parts = [_summary_part(g[0].path, g) for g in groups.values()]
    more = len(parts) - _MAX_SUMMARY_PARTS
    shown = "; ".join(parts[:_MAX_SUMMARY_PARTS])
    return shown + (f"; … {more} more" if more > 0 else "")


def _counted(kind: str, count: int) -> str:
    """A kind's label after its count: `2 items removed`, `1 item added`, `3 changed`."""
    label = _KIND_LABEL[kind]
    return label.replace("item ", "items ", 1) if count != 1 else label


def _tally(changes: Sequence[Change]) -> str:
    counts: Counter[str] = Counter(c.kind for c in changes)
    parts = [f"{counts[k]} {_counted(k, counts[k])}" for k in _KIND_LABEL if counts[k]]
    noun = "change" if len(changes) == 1 else "changes"
    return f"{len(changes)} {noun}: " + ", ".join(parts)


def render_changes_text(changes: Sequence[Change], *, color: bool) -> str:
    """A readable change list (sign, path, values) with a tally; ANSI colours when `color`."""
    if not changes:
        return "No changes.\n"
    width = min(max(len(terminal_text(c.path)) for c in changes), 60)
    lines = []
    for change in changes:
        sign = _SIGN[change.kind]
        line = f"{sign} {terminal_text(change.path):<{width}}  {describe_change(change)}"
        lines.append(f"{_COLOR[sign]}{line}{_RESET}" if color else line)
    lines.append(_tally(changes))
    return "\n".join(lines) + "\n"


def md_escape(text: str) -> str:
    """Escape text for a Markdown table cell: terminal-safe, then Markdown-inert."""
    return escape.md_escape(terminal_text(text))


def render_changes_markdown(changes: Sequence[Change], *, max_rows: int = 200) -> str:
    """A Markdown table fit for a PR comment, cut at `max_rows` with an explicit notice."""
    if not changes:
        return "_No changes._\n"
    lines = ["| | Path | Change |", "|---|---|---|"]
    for change in changes[:max_rows]:
        kind = _KIND_LABEL[change.kind]
        lines.append(
            f"| {kind} | {md_escape(change.path)} | {md_escape(describe_change(change))} |"
        )
    if len(changes) > max_rows:
        lines.append("")
        lines.append(f"… and {len(changes) - max_rows} more changes not shown.")
    lines.append("")
    lines.append(md_escape(_tally(changes)))
    return "\n".join(lines) + "\n"


def change_as_json(change: Change) -> dict[str, JSON]:
    """A Change as a JSON object (`old_path` only for renames); values stay redacted markers."""
    out: dict[str, JSON] = {
        "path": change.path,
        "kind": change.kind,
        "before": change.before,
        "after": change.after,
    }
    if change.old_path is not None:
        out["old_path"] = change.old_path
    return out
