"""`auditor history`: a timeline of stored settings revisions, one line each.

Takes date bounds, path patterns and an author, gives revision, time, author and a one-line
summary of what changed (text) or the same with the change list (JSON). `--path 'sandbox.*'`
answers "who touched the sandbox, and when". Streams the store: memory stays flat.
"""

from __future__ import annotations

import argparse
import fnmatch
import functools
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, TextIO

from auditor.cli.common import config_from_args, open_store, parse_when
from auditor.common import paths
from auditor.common.escape import terminal_text
from auditor.common.jsonutil import dumps_pretty
from auditor.diff import ListTable, change_as_json, change_summary, diff_revisions
from auditor.diff.table import item_key
from auditor.errors import EXIT_OK, UsageError
from auditor.models import JSON, Change, Revision, User
from auditor.redact.plain import author_of, shown_author

if TYPE_CHECKING:
    from auditor.cli import Context
    from auditor.store.database import Store


@dataclass(frozen=True)
class Filters:
    """What `auditor history` keeps."""

    since: datetime | None = None
    until: datetime | None = None
    patterns: tuple[PathPattern, ...] = ()
    author: str | None = None

    def in_window(self, rev: Revision) -> bool:
        """True when the revision's time is within the bounds and its author matches."""
        if self.since and rev.updated_at < self.since:
            return False
        if self.until and rev.updated_at > self.until:
            return False
        return self.author is None or fnmatch.fnmatchcase(_who(rev.user).lower(), self.author)

    def relevant(self, changes: Sequence[Change]) -> list[Change]:
        """The changes a `--path` pattern selects (all of them without patterns)."""
        if not self.patterns:
            return list(changes)
        return [c for c in changes if any(p.selects(c) for p in self.patterns)]


# One part of a `--path` pattern: a bracket (`[0]`, `[*]`, `[?id=='x']`, `['odd key']`; a
# quoted string may hold `]` or `.`) or a key, glob characters allowed (`sandbox`, `allow*`).
_PART = re.compile(r"\[(?:'(?:[^'\\]|\\.)*'|[^\]'])*\]|[^.\[\]]+")
# Any one bracket of a rendered path (what `[*]` stands for).
_ANY_BRACKET = r"\[(?:'(?:[^'\\]|\\.)*'|[^\]'])*\]"


class PathPattern:
    """One `--path` pattern, and which changes it selects.

    A pattern is a path as `diff` and `history` print it, with or without `$.`
    (`customModels[?id=='custom:x'].apiKey`, `hooks.Stop[0]`, `$['odd key']`), or its dotted
    form without list brackets (`customModels.apiKey`). `*` and `?` are glob characters in keys
    (`*` also spans dots: `sandbox.*` is everything under `sandbox`, and the `sandbox` object
    itself); `[*]` is any one list entry. Brackets are not character classes.

    A change is selected when the pattern names its path, a path above it (`sandbox` selects a
    change of `sandbox.enabled`) or a path below it that the change added, removed or replaced
    (`sandbox.enabled` selects the removal of a `sandbox` object that held `enabled`).
    """

    def __init__(self, text: str) -> None:
        body = text.removeprefix("$.") if text.startswith("$.") else text.removeprefix("$")
        parts: list[str] = []
        pos = 0
        while pos < len(body):
            dot = parts and body[pos] == "." and not body.startswith(".[", pos)
            if dot:
                pos += 1  # the dot before a key
            m = _PART.match(body, pos) if pos < len(body) else None
            if m is not None and parts and not dot and not m.group().startswith("["):
                m = None  # a key straight after a bracket (`['a']b`): no path reads so
            if m is None:
                where = f"at {body[pos:]!r}" if pos < len(body) else "at its end"
                raise UsageError(
                    f"--path {text!r}: cannot read it {where} (expected a path as diff and "
                    "history print it, e.g. sandbox.enabled or customModels[?id=='x'].apiKey)"
                )
            parts.append(m.group())
            pos = m.end()
        if not parts:
            raise UsageError(f"--path {text!r}: an empty path")
        self.parts = tuple(parts)
        self.steps = tuple(_step(text, p) for p in parts)
        self._dotted = not any(isinstance(step, _Bracket) for step in self.steps)
        # A pattern's first k parts, as a regular expression, by k, each made when first asked
        # for (`_head`): all of them, up front, were k = 1 … n expressions of up to n parts,
        # time and memory quadratic in the pattern's length (5,000 parts: over a minute).
        self._heads: dict[int, re.Pattern[str]] = {}

    def _head(self, k: int) -> re.Pattern[str]:
        """The pattern's first k parts as a regular expression."""
        head = self._heads.get(k)
        if head is None:
            head = self._heads[k] = re.compile(_regex(self.parts[:k]))
        return head

    def selects(self, change: Change) -> bool:
        """Whether the change touches what the pattern names (see the class).

        The pattern's first k parts match only a printed path with at least k - 2 separators
        (`.` or `[`: each part after the first starts with one, but a last `*` part, which
        may match nothing), so the longer heads are never made for shallower paths."""
        whole = len(self.parts)
        for path in (change.path, change.old_path):
            if path is None:
                continue
            shown = _forms(path)
            room = max(map(_separators, shown), default=0) + 2  # the most parts a form can match
            if whole <= room and any(self._head(whole).fullmatch(s) for s in shown):
                return True  # the change's path, or a path above it
            # The change's own path, printed; dotted too for a pattern without brackets (a
            # dotted path does not say which entry of a list it is in, a bracket would).
            here = shown[-2:] if self._dotted else shown[-2:-1]
            room = max(map(_separators, here), default=0) + 2
            for k in range(1, min(whole - 1, room) + 1):
                if any(self._head(k).fullmatch(s) for s in here) and self._below(change, path, k):
                    return True
        return False

    def _below(self, change: Change, path: str, k: int) -> bool:
        """Whether a value of the change holds something at the pattern's parts after k."""
        rest = self.steps[k:]
        if change.kind in ("item_added", "item_removed") and not path.endswith("]"):
            if rest and isinstance(rest[0], _Bracket):  # the entry of a set list
                rest = rest[1:]
            else:
                return False
        return any(_holds(v, rest) for v in (change.before, change.after))


@dataclass(frozen=True)
class _Bracket:
    """A bracket part: None for `[*]`, else the path component it reads as."""

    part: paths.Component | None


def _step(text: str, part: str) -> str | _Bracket:
    if not part.startswith("["):
        return part
    if part == "[*]":
        return _Bracket(None)
    try:
        (component,) = paths.parse("$" + part)
    except ValueError:
        raise UsageError(f"--path {text!r}: cannot read {part!r}") from None
    return _Bracket(component)


def _regex(parts: Sequence[str]) -> str:
    """The pattern's parts as one regular expression. Stars become what `fnmatch.translate`
    makes of them: each stretch between two stars is found by an atomic, lazy `(?>.*?…)` and
    only the last star is a plain `.*`, so a pattern of many stars that does not match fails in
    linear time (a `.*` per star backtracked through every split: `*?*?*?*?*?*?*Z` took 21 s
    on a small history)."""
    units: list[str | None] = []  # None: a star
    tail = ""
    for n, part in enumerate(parts):
        if part == "[*]":
            units.append(_ANY_BRACKET)
        elif part.startswith("["):
            units.append(re.escape(part))
        elif part == "*" and n == len(parts) - 1 and n > 0:
            tail = r"(?:\..*)?"  # `sandbox.*`: also the `sandbox` object itself
        else:
            if n:
                units.append(r"\.")
            units += [None if ch == "*" else "." if ch == "?" else re.escape(ch) for ch in part]
    out: list[str] = []
    stars = [i for i, u in enumerate(units) if u is None]
    last = stars[-1] if stars else -1
    i = 0
    while i < len(units):
        if units[i] is not None:
            out.append(str(units[i]))
            i += 1
            continue
        while i < len(units) and units[i] is None:  # `**` is `*`
            i += 1
        chunk = []
        while i < len(units) and units[i] is not None:
            chunk.append(str(units[i]))
            i += 1
        if i > last:  # the last star: its stretch ends the pattern
            out.append(".*" + "".join(chunk))
        else:
            out.append("(?>.*?" + "".join(chunk) + ")")
    return "".join(out) + tail


def _separators(shown: str) -> int:
    """How many `.` and `[` a printed path holds: at most that many parts of a pattern after
    its first (and a last `*`) can match it."""
    return shown.count(".") + shown.count("[")


@functools.lru_cache(maxsize=4096)  # each `--path` pattern asks for every change's path
def _forms(path: str) -> tuple[str, ...]:
    """Every path above `path` and `path` itself, each printed (without `$.`) and dotted."""
    parts = paths.parse(path)
    out = []
    for n in range(1, len(parts) + 1):
        shown = paths.render(parts[:n])
        out.append(shown[2:] if shown.startswith("$.") else shown[1:])
        out.append(".".join(p for p in parts[:n] if isinstance(p, str)))
    return tuple(out)


def _holds(value: JSON, steps: Sequence[str | _Bracket]) -> bool:
    """Whether `value` has something at `steps` (a key step also looks into each list entry,
    as a dotted pattern leaves list brackets out)."""
    if not steps:
        return True
    step, rest = steps[0], steps[1:]
    if isinstance(value, list) and not isinstance(step, _Bracket):
        return any(_holds(item, steps) for item in value)
    if isinstance(value, dict):
        if isinstance(step, str):
            return any(fnmatch.fnmatchcase(k, step) and _holds(v, rest) for k, v in value.items())
        if isinstance(step.part, str):
            return step.part in value and _holds(value[step.part], rest)
        return False
    if not isinstance(value, list) or not isinstance(step, _Bracket):
        return False
    part = step.part
    if part is None:
        return any(_holds(item, rest) for item in value)
    if isinstance(part, int):
        return -len(value) <= part < len(value) and _holds(value[part], rest)
    if isinstance(part, paths.Match):
        field, wanted = part.field, item_key(part.value)
        return any(
            isinstance(item, dict)
            and field in item
            and item_key(item[field]) == wanted
            and _holds(item, rest)
            for item in value
        )
    return False


@dataclass(frozen=True)
class Entry:
    """One line of the timeline."""

    revision: Revision
    changes: tuple[Change, ...]
    first: bool


def timeline(store: Store, filters: Filters, table: ListTable) -> Iterator[Entry]:
    """Stream the stored revisions that pass the filters, each with its changes."""
    previous: JSON = None
    # Only the revisions in the time window and the one before each (its changes are against
    # it) are read; the first one read has none before it only when it is the first stored.
    for rev in store.iter_revisions_in_window(filters.since, filters.until):
        first, before, previous = previous is None, previous, rev.settings
        if not filters.in_window(rev):
            continue
        changes = filters.relevant(diff_revisions(before or {}, rev.settings, table=table))
        if filters.patterns and not changes:
            continue
        yield Entry(rev, tuple(changes), first)


def _summary(entry: Entry) -> str:
    if entry.first and not entry.changes:
        return "first stored revision"
    text = change_summary(entry.changes)
    return f"first stored revision: {text}" if entry.first else text


def _timestamp(when: datetime) -> str:
    """ISO-8601 in UTC with `Z`, keeping a fraction of a second (milliseconds when that is all
    there is: `23:59:59.600Z`), none when there is none (`10:00:00Z`)."""
    text = when.strftime("%Y-%m-%dT%H:%M:%S")
    if when.microsecond:
        fraction = f"{when.microsecond:06d}"
        text += "." + (fraction[:3] if fraction.endswith("000") else fraction)
    return text + "Z"


def _who(user: User) -> str:
    """Who made a revision: the email, else the name (else nothing is known; blanks are
    none); `--author` matches it, so what it selects is what the line shows."""
    return author_of(user.email, user.name)


def _author(user: User) -> str:
    """`_who` as every output shows an author (`shown_author`: cut past its length)."""
    return terminal_text(shown_author(_who(user)))


def _as_json(entry: Entry) -> dict[str, JSON]:
    user = entry.revision.user
    return {
        "revision": entry.revision.revision,
        "updatedAt": _timestamp(entry.revision.updated_at),
        "author": {"id": user.id, "email": user.email, "name": user.name},
        "first": entry.first,
        "summary": _summary(entry),
        "changes": [change_as_json(c) for c in entry.changes],
    }


def _text_line(entry: Entry) -> str:
    rev = entry.revision
    when = rev.updated_at.strftime("%Y-%m-%d %H:%M")
    return f"{rev.revision:>6}  {when}  {_author(rev.user):<28}  {_summary(entry)}"


def _write_json(out: TextIO, entries: Iterator[Entry]) -> None:
    """The entries as one JSON array, written entry by entry: the same text as `dumps_pretty`
    of the whole list (sorted keys, two-space indent, a final newline), but each entry is
    written before the next revision is read, and memory stays flat. When reading stops at a damaged
    stored revision, the array is left open after the entries before it (exit 2): a JSON
    reader then fails too, and never takes the part for the whole history."""
    opened = False
    for entry in entries:
        text = dumps_pretty(_as_json(entry))[:-1].replace("\n", "\n  ")
        out.write((",\n  " if opened else "[\n  ") + text)
        opened = True
    out.write("\n]\n" if opened else "[]\n")


def run_history(args: argparse.Namespace, ctx: Context) -> int:
    """Handler: print the filtered timeline."""
    config = config_from_args(args, ctx)
    table = config.list_table
    filters = Filters(
        since=parse_when(args.since, "--since", end_of_day=False) if args.since else None,
        until=parse_when(args.until, "--until", end_of_day=True) if args.until else None,
        patterns=tuple(PathPattern(p) for p in args.path),
        author=args.author.lower() if args.author else None,
    )
    if filters.since and filters.until and filters.since > filters.until:
        raise UsageError(  # an empty timeline would read as "nobody changed anything"
            f"--since {args.since} is after --until {args.until}: no time lies between them"
        )
    with open_store(config, readonly=True) as store:
        if args.format == "json":
            _write_json(ctx.stdout, timeline(store, filters, table))
            return EXIT_OK
        ctx.stdout.write(f"{'REV':>6}  {'TIME (UTC)':<16}  {'AUTHOR':<28}  CHANGES\n")
        count = 0
        for entry in timeline(store, filters, table):
            ctx.stdout.write(_text_line(entry) + "\n")
            count += 1
    if count == 0:
        ctx.stdout.write("(no matching revisions)\n")
    return EXIT_OK
