"""What a change rule's result says: the change it objects to, in words.

Takes a change step's result and its change document, gives the result with a message such as
"added `curl … | sh` to commandAllowlist by a@b.c in rev 412" in place of the condition's
internals (`changes[0].kind is "item_added"`), naming the command, server or model added or
removed; each piece of evidence about a change carries that change's words as its note.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from auditor.common import paths
from auditor.evaluate.model import RuleResult
from auditor.models import Evidence
from auditor.policy.phrasing import MESSAGE_LIMIT, clip, short

#: The change a change rule's evidence path is about (`$.changes[3].kind`: 3); also how
#: `auditor review` finds the change a finding points at.
CHANGE_INDEX = re.compile(r"^\$\.changes\[(\d+)\]")
_AUTHOR_PATHS = frozenset({"$.author", "$.author_name"})
_SHOWN_CHANGES = 3
#: How long a name or value inside a change's words may be: as written in evidence notes,
#: then shorter and shorter while a message would not hold the count and the author.
_WIDTHS = (60, 40, 24, 12)
_AUTHOR_LIMIT = 80


def explain_step(result: RuleResult, doc: dict[str, Any], count: int = 1) -> RuleResult:
    """The result of a change rule on one step, worded by the changes its evidence names.

    `count` is how many failing checks the result stands for (its outcome's count: one a
    failing change, so 20,000 when 20,000 changes failed though the evidence, capped, names
    ten): the message names three changes and counts all the others."""
    if result.status == "unknown" and about_unknown_author(result.evidence):
        return replace(result, message="the author of this change is unknown")
    changes: list[dict[str, Any]] = doc.get("changes") or []
    words = {i: describe_step_change(changes[i]) for i in _indices(result) if i < len(changes)}
    if not words:
        return result
    evidence = tuple(_noted(ev, words) for ev in result.evidence)
    named = [changes[i] for i in words]
    message = _message(list(words.values()), named, max(count, len(words)), by_whom(doc))
    return replace(result, message=message, evidence=evidence)


def _message(told: list[str], named: list[dict[str, Any]], total: int, whom: str) -> str:
    """Up to three changes in words, how many more failed, and who made them, in at most
    MESSAGE_LIMIT characters: the count and the author always stay; what gives way is the
    length of the names and values quoted (then how many changes are named), so a cut never
    leaves a quote open."""
    for shown in range(min(_SHOWN_CHANGES, len(told)), 0, -1):
        tail = _more(total - shown) + whom
        for width in _WIDTHS:
            words = told[:shown] if width == _WIDTHS[0] else _described(named[:shown], width)
            text = clip("; ".join(words) + tail, _UNCUT)
            if len(text) <= MESSAGE_LIMIT:
                return text
    # Even one change in its shortest words is too long (a very long key in its path): cut
    # its words, closing a quote the cut leaves open, and keep the count and the author.
    tail = _more(total - 1) + whom
    return (
        _cut(clip(_described(named[:1], _WIDTHS[-1])[0], _UNCUT), MESSAGE_LIMIT - len(tail)) + tail
    )


_UNCUT = 1 << 30  # `clip` to one line without cutting


def _more(more: int) -> str:
    return f" (+{more} more)" if more > 0 else ""


def _described(named: list[dict[str, Any]], width: int) -> list[str]:
    return [describe_step_change(c, width) for c in named]


def _cut(text: str, limit: int) -> str:
    """`text` in at most `limit` characters, an ellipsis marking a cut, and a quote (`) the
    cut leaves open closed."""
    if len(text) <= limit:
        return text
    kept = text[: limit - 1]
    if kept.count("`") % 2 == 0:
        return kept + "…"
    kept = kept[:-1]
    return kept + ("…`" if kept.count("`") % 2 else "…")


def about_unknown_author(evidence: tuple[Evidence, ...]) -> bool:
    """True when a result's evidence is only the change's author, absent (nobody knows it)."""
    return bool(evidence) and all(e.path in _AUTHOR_PATHS and not e.present for e in evidence)


def _indices(result: RuleResult) -> list[int]:
    found: dict[int, None] = {}
    for ev in result.evidence:
        m = CHANGE_INDEX.match(ev.path)
        if m:
            found[int(m.group(1))] = None
    return list(found)


def _noted(ev: Evidence, words: dict[int, str]) -> Evidence:
    """The evidence about a change with the change's words as its note (a note it had, such
    as "and 19990 more entries not shown", kept after them)."""
    m = CHANGE_INDEX.match(ev.path)
    if not m or int(m.group(1)) not in words:
        return ev
    said = words[int(m.group(1))]
    return replace(ev, note=f"{said}; {ev.note}" if ev.note else said)


def by_whom(doc: dict[str, Any]) -> str:
    """` by a@b.c in rev 412` (` by an unknown author …` when the step has none; a very long
    name cut)."""
    author = clip(
        str(doc.get("author") or doc.get("author_name") or "an unknown author"), _AUTHOR_LIMIT
    )
    return f" by {author} in rev {doc.get('revision')}"


def describe_step_change(change: dict[str, Any], width: int = _WIDTHS[0]) -> str:
    """One change of a change document in words: `added `x` to commandAllowlist` (a name or
    value quoted cut to `width` characters)."""
    kind, path = change.get("kind"), str(change.get("path", "$"))
    before, after = change.get("before"), change.get("after")
    where, name = _split_item(path)
    if kind == "item_added":
        return f"added {_thing(after, name, width)} to {where}"
    if kind == "item_removed":
        return f"removed {_thing(before, name, width)} from {where}"
    if kind == "added":
        if name is not None:
            return f"added {_thing(after, name, width)} to {where}"
        return f"added {_place(path)} with {_contents(after, width)}"
    if kind == "removed":
        if name is not None:
            return f"removed {_thing(before, name, width)} from {where}"
        return f"removed {_place(path)} (was {_value(before, width)})"
    if kind == "renamed":
        return f"renamed {_place(str(change.get('old_path') or '$'))} to {_place(path)}"
    types = " (a different type)" if kind == "type_changed" else ""
    return f"changed {_place(path)} from {_value(before, width)} to {_value(after, width)}{types}"


def _split_item(path: str) -> tuple[str, str | None]:
    """A path ending in `[?id=='x']` as (the list, `x`); any other path as (itself, None)."""
    try:
        parts = paths.parse(path)
    except ValueError:
        return _place(path), None
    if parts and isinstance(parts[-1], paths.Match):
        ident = parts[-1].value  # (an id of null, true or a number: as JSON spells it, not
        shown = ident if isinstance(ident, str) else json.dumps(ident)  # `None`: T98 #12)
        return _place(paths.render(parts[:-1])), shown
    return _place(path), None


def _thing(value: Any, name: str | None, width: int) -> str:
    """An added or removed item: its identity when it has one, else its value."""
    if name is not None:
        return f"`{clip(name, width)}`"
    if isinstance(value, dict):
        for key in ("id", "name", "command", "url"):
            if isinstance(value.get(key), str):
                return f"`{clip(value[key], width)}`"
    return _contents(value, width)


def _contents(value: Any, width: int) -> str:
    """A new object or list by the commands it runs (hooks), else by its value."""
    commands = list(_commands(value))
    if not commands:
        return _value(value, width)
    more = f" (+{len(commands) - 1} more)" if len(commands) > 1 else ""
    return f"command `{clip(commands[0], width)}`{more}"


def _commands(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        if isinstance(value.get("command"), str):
            yield value["command"]
        for key, item in value.items():
            if key != "command":
                yield from _commands(item)
    elif isinstance(value, list):
        for item in value:
            yield from _commands(item)


def _value(value: Any, width: int) -> str:
    if isinstance(value, str):
        return f"`{clip(value, width)}`"
    return short(value, width)


def _place(path: str) -> str:
    return path[2:] if path.startswith("$.") else path
