"""`auditor diff`: the difference between two stored settings revisions.

Takes `--from`/`--to` revision numbers (default: the latest step) and a format, gives the
change list on stdout as text (coloured on a terminal unless NO_COLOR), Markdown, JSON or an
RFC 6902 JSON Patch. A revision that is not stored is an error (exit 2) naming what is.
"""

from __future__ import annotations

import argparse
import bisect
from collections.abc import Sequence
from typing import TYPE_CHECKING

from auditor.cli.common import config_from_args, open_store
from auditor.common.escape import terminal_text
from auditor.common.jsonutil import dumps_pretty
from auditor.diff.engine import ListTable, diff_revisions, to_json_patch
from auditor.diff.render import (
    change_as_json,
    md_escape,
    render_changes_markdown,
    render_changes_text,
)
from auditor.errors import EXIT_OK, UsageError
from auditor.models import Change, Revision
from auditor.redact.plain import author_of

if TYPE_CHECKING:
    from auditor.cli import Context
    from auditor.store.database import Store


def describe_stored(numbers: Sequence[int], max_ranges: int = 6) -> str:
    """Stored revision numbers as ranges, e.g. `1-240` or `1-10, 12, 20-30` (en dashes)."""
    if not numbers:
        return "none"
    ranges: list[tuple[int, int]] = []
    for n in numbers:
        if ranges and n == ranges[-1][1] + 1:
            ranges[-1] = (ranges[-1][0], n)
        else:
            ranges.append((n, n))
    shown = [f"{lo}\u2013{hi}" if lo != hi else str(lo) for lo, hi in ranges[:max_ranges]]
    if len(ranges) > max_ranges:
        shown.append(f"… ({len(numbers)} revisions)")
    return ", ".join(shown)


def require_revision(store: Store, number: int, numbers: Sequence[int]) -> Revision:
    """The stored revision `number`, or a UsageError naming the stored ones."""
    revision = store.get_revision(number) if number in numbers else None
    if revision is None:
        raise UsageError(f"revision {number} is not stored; stored: {describe_stored(numbers)}")
    return revision


def select_step(
    store: Store, from_rev: int | None, to_rev: int | None
) -> tuple[Revision | None, Revision]:
    """The (before, after) revisions to compare; before is None for the first stored revision."""
    numbers = store.revision_numbers()
    if not numbers:
        raise UsageError("no revisions stored: run `auditor sync` first")
    after = require_revision(store, numbers[-1] if to_rev is None else to_rev, numbers)
    if from_rev is not None:
        before = require_revision(store, from_rev, numbers)
        if from_rev > after.revision:  # `--from` is the older revision: no silent reverse diff
            raise UsageError(
                f"--from {from_rev} is after --to {after.revision}: --from is the older "
                f"revision (for the change from {after.revision} to {from_rev}, "
                f"use --from {after.revision} --to {from_rev})"
            )
        return before, after
    index = bisect.bisect_left(numbers, after.revision)
    return (store.get_revision(numbers[index - 1]) if index else None), after


def _heading(before: Revision | None, after: Revision) -> str:
    when = after.updated_at.strftime("%Y-%m-%d %H:%M UTC")
    author = terminal_text(author_of(after.user.email, after.user.name))
    if before is None:
        step = f"revision {after.revision} (first stored; compared with an empty document)"
    else:
        step = f"revision {before.revision} → {after.revision}"
    return f"{step} · {when} · {author}"


def render(
    fmt: str,
    before: Revision | None,
    after: Revision,
    changes: Sequence[Change],
    table: ListTable,
    *,
    color: bool,
) -> str:
    """The output of `auditor diff` in one format."""
    if fmt == "json":
        return dumps_pretty([change_as_json(c) for c in changes])
    if fmt == "patch":
        old = before.settings if before is not None else {}
        return dumps_pretty(to_json_patch(old, after.settings, changes, table=table))
    heading = _heading(before, after)
    if fmt == "md":
        return f"### Settings diff: {md_escape(heading)}\n\n" + render_changes_markdown(changes)
    bold = ("\x1b[1m", "\x1b[0m") if color else ("", "")
    return f"{bold[0]}{heading}{bold[1]}\n" + render_changes_text(changes, color=color)


def use_color(ctx: Context) -> bool:
    """Colour only when stdout is a terminal and NO_COLOR is unset or empty."""
    isatty = getattr(ctx.stdout, "isatty", None)
    return bool(isatty and isatty()) and not ctx.env.get("NO_COLOR")


def run_diff(args: argparse.Namespace, ctx: Context) -> int:
    """Handler: read two revisions from the store, diff them, print in the chosen format."""
    config = config_from_args(args, ctx)
    table = config.list_table
    with open_store(config, readonly=True) as store:
        before, after = select_step(store, args.from_rev, args.to_rev)
    old = before.settings if before is not None else {}
    changes = diff_revisions(old, after.settings, table=table)
    ctx.stdout.write(render(args.format, before, after, changes, table, color=use_color(ctx)))
    return EXIT_OK
