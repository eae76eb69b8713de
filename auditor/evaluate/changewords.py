"""What a change rule's result says: the change it objects to, in words.

Takes a change step's result and its change document, gives the result with a message such as
"added `curl … | sh` to commandAllowlist by a@b.c in rev 412" in place of the condition's
internals (`changes[0].kind is "item_added"`), naming the command, server or model added or
removed; each piece of evidence about a change carries that change's words as its note.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from auditor.common import paths
from auditor.evaluate.model import RuleResult
from auditor.models import Evidence
from auditor.policy.phrasing import clip, short

_CHANGE_INDEX = re.compile(r"^\$\.changes\[(\d+)\]")
_AUTHOR_PATHS = frozenset({"$.author", "$.author_name"})
_SHOWN_CHANGES = 3


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
    told = list(words.values())
    more = max(count, len(told)) - _SHOWN_CHANGES
    text = "; ".join(told[:_SHOWN_CHANGES]) + (f" (+{more} more)" if more > 0 else "")
    return replace(result, message=clip(text + by_whom(doc)), evidence=evidence)


def about_unknown_author(evidence: tuple[Evidence, ...]) -> bool:
    """True when a result's evidence is only the change's author, absent (nobody knows it)."""
    return bool(evidence) and all(e.path in _AUTHOR_PATHS and not e.present for e in evidence)


def _indices(result: RuleResult) -> list[int]:
    found: dict[int, None] = {}
    for ev in result.evidence:
        m = _CHANGE_INDEX.match(ev.path)
        if m:
            found[int(m.group(1))] = None
    return list(found)


def _noted(ev: Evidence, words: dict[int, str]) -> Evidence:
    """The evidence about a change with the change's words as its note (a note it had, such
    as "and 19990 more entries not shown", kept after them)."""
    m = _CHANGE_INDEX.match(ev.path)
    if not m or int(m.group(1)) not in words:
        return ev
    said = words[int(m.group(1))]
    return replace(ev, note=f"{said}; {ev.note}" if ev.note else said)


def by_whom(doc: dict[str, Any]) -> str:
    """` by a@b.c in rev 412` (` by an unknown author …` when the step has none)."""
    author = doc.get("author") or doc.get("author_name") or "an unknown author"
    return f" by {author} in rev {doc.get('revision')}"


def describe_step_change(change: dict[str, Any]) -> str:
    """One change of a change document in words: `added `x` to commandAllowlist`."""
    kind, path = change.get("kind"), str(change.get("path", "$"))
    before, after = change.get("before"), change.get("after")
    where, name = _split_item(path)
    if kind == "item_added":
        return f"added {_thing(after, name)} to {where}"
    if kind == "item_removed":
        return f"removed {_thing(before, name)} from {where}"
    if kind == "added":
        if name is not None:
            return f"added {_thing(after, name)} to {where}"
        return f"added {_place(path)} with {_contents(after)}"
    if kind == "removed":
        if name is not None:
            return f"removed {_thing(before, name)} from {where}"
        return f"removed {_place(path)} (was {_value(before)})"
    if kind == "renamed":
        return f"renamed {_place(str(change.get('old_path') or '$'))} to {_place(path)}"
    types = " (a different type)" if kind == "type_changed" else ""
    return f"changed {_place(path)} from {_value(before)} to {_value(after)}{types}"


def _split_item(path: str) -> tuple[str, str | None]:
    """A path ending in `[?id=='x']` as (the list, `x`); any other path as (itself, None)."""
    try:
        parts = paths.parse(path)
    except ValueError:
        return _place(path), None
    if parts and isinstance(parts[-1], paths.Match):
        return _place(paths.render(parts[:-1])), str(parts[-1].value)
    return _place(path), None


def _thing(value: Any, name: str | None) -> str:
    """An added or removed item: its identity when it has one, else its value."""
    if name is not None:
        return f"`{_clip(name)}`"
    if isinstance(value, dict):
        for key in ("id", "name", "command", "url"):
            if isinstance(value.get(key), str):
                return f"`{_clip(value[key])}`"
    return _contents(value)


def _contents(value: Any) -> str:
    """A new object or list by the commands it runs (hooks), else by its value."""
    commands = list(_commands(value))
    if not commands:
        return _value(value)
    more = f" (+{len(commands) - 1} more)" if len(commands) > 1 else ""
    return f"command `{_clip(commands[0])}`{more}"


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


def _value(value: Any) -> str:
    if isinstance(value, str):
        return f"`{_clip(value)}`"
    return short(value)


def _clip(text: str) -> str:
    return clip(text, 60)


def _place(path: str) -> str:
    return path[2:] if path.startswith("$.") else path
