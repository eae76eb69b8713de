"""`auditor history`: a timeline of stored settings revisions, one line each.

Takes date bounds, path globs and an author, gives revision, time, author and a one-line
summary of what changed (text) or the same with the change list (JSON). `--path 'sandbox.*'`
answers "who touched the sandbox, and when". Streams the store: memory stays flat.
"""

from __future__ import annotations

import argparse
import fnmatch
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from auditor.cli.common import config_from_args, open_store, parse_when
from auditor.common.escape import terminal_text
from auditor.common.jsonutil import dumps_pretty
from auditor.diff import ListTable, change_as_json, change_summary, changed_paths, diff_revisions
from auditor.errors import EXIT_OK, UsageError
from auditor.models import JSON, Change, Revision

if TYPE_CHECKING:
    from auditor.cli import Context
    from auditor.store.database import Store


@dataclass(frozen=True)
class Filters:
    """What `auditor history` keeps."""

    since: datetime | None = None
    until: datetime | None = None
    globs: tuple[str, ...] = ()
    author: str | None = None

    def in_window(self, rev: Revision) -> bool:
        """True when the revision's time is within the bounds and its author matches."""
        if self.since and rev.updated_at < self.since:
            return False
        if self.until and rev.updated_at > self.until:
            return False
        return self.author is None or fnmatch.fnmatchcase(rev.user.email.lower(), self.author)

    def relevant(self, changes: Sequence[Change]) -> list[Change]:
        """The changes a `--path` glob selects (all of them without globs)."""
        if not self.globs:
            return list(changes)
        return [c for c in changes if any(map(self._matches, changed_paths([c])))]

    def _matches(self, dotted_path: str) -> bool:
        # 'sandbox.*' also selects a change of the whole `sandbox` object.
        return any(
            fnmatch.fnmatchcase(dotted_path, g)
            or (g.endswith(".*") and fnmatch.fnmatchcase(dotted_path, g[:-2]))
            for g in self.globs
        )


@dataclass(frozen=True)
class Entry:
    """One line of the timeline."""

    revision: Revision
    changes: tuple[Change, ...]
    first: bool


def timeline(store: Store, filters: Filters, table: ListTable) -> Iterator[Entry]:
    """Stream the stored revisions that pass the filters, each with its changes."""
    previous: JSON = None
    for rev in store.iter_revisions():
        first, before, previous = previous is None, previous, rev.settings
        if not filters.in_window(rev):
            continue
        changes = filters.relevant(diff_revisions(before or {}, rev.settings, table=table))
        if filters.globs and not changes:
            continue
        yield Entry(rev, tuple(changes), first)


def _summary(entry: Entry) -> str:
    if entry.first and not entry.changes:
        return "first stored revision"
    text = change_summary(entry.changes)
    return f"first stored revision: {text}" if entry.first else text


def _as_json(entry: Entry) -> dict[str, JSON]:
    user = entry.revision.user
    return {
        "revision": entry.revision.revision,
        "updatedAt": entry.revision.updated_at.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "author": {"id": user.id, "email": user.email, "name": user.name},
        "first": entry.first,
        "summary": _summary(entry),
        "changes": [change_as_json(c) for c in entry.changes],
    }


def _text_line(entry: Entry) -> str:
    rev = entry.revision
    when = rev.updated_at.strftime("%Y-%m-%d %H:%M")
    return f"{rev.revision:>6}  {when}  {terminal_text(rev.user.email):<28}  {_summary(entry)}"


def run_history(args: argparse.Namespace, ctx: Context) -> int:
    """Handler: print the filtered timeline."""
    config = config_from_args(args, ctx)
    table = config.list_table
    filters = Filters(
        since=parse_when(args.since, "--since", end_of_day=False) if args.since else None,
        until=parse_when(args.until, "--until", end_of_day=True) if args.until else None,
        globs=tuple(g.removeprefix("$.") for g in args.path),
        author=args.author.lower() if args.author else None,
    )
    if filters.since and filters.until and filters.since > filters.until:
        raise UsageError(  # an empty timeline would read as "nobody changed anything"
            f"--since {args.since} is after --until {args.until}: no time lies between them"
        )
    with open_store(config, readonly=True) as store:
        if args.format == "json":
            ctx.stdout.write(dumps_pretty([_as_json(e) for e in timeline(store, filters, table)]))
            return EXIT_OK
        ctx.stdout.write(f"{'REV':>6}  {'TIME (UTC)':<16}  {'AUTHOR':<28}  CHANGES\n")
        count = 0
        for entry in timeline(store, filters, table):
            ctx.stdout.write(_text_line(entry) + "\n")
            count += 1
    if count == 0:
        ctx.stdout.write("(no matching revisions)\n")
    return EXIT_OK
