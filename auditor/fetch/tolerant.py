"""The tolerant reader: an odd value in a field the audit can do without is a warning, not an error.

Takes one page-valid item (the page schema already holds what the audit cannot do without: the
revision number, the settings object, the report id, its repository, its time and the criterion
scores) and the name of its item schema (the shape the service documents), gives the item with
each odd value removed, so rules see the field as absent, and one `DataWarning` per difference.
An unknown field is kept as data and named. `DataQuality` gathers the warnings of a sync,
grouping the same problem in the same field of many items into one line with a count.
"""

from __future__ import annotations

import copy
import functools
import re
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from auditor.common import paths
from auditor.fetch.paging import Item, Listing, Page
from auditor.fetch.retry import redacted_cut
from auditor.fetch.schema import describe_error, fast_check, schema_errors
from auditor.fetch.shape import Duplicate
from auditor.models import DataWarning
from auditor.redact import Redactor

HISTORY_ITEM = "api-history-item.schema.json"
READINESS_ITEM = "api-readiness-item.schema.json"

#: Receives each warning of one item (`where` is filled in by `DataQuality.on`).
Warn = Callable[[DataWarning], None]

_ITEM_INDEX = re.compile(r"^(\$\.\w+)\[\d+\]")
#: The end of a problem naming what one item's value was read as (`a Unix time in seconds, not
#: ISO 8601; read as 2026-10-01T10:00:00+00:00`): items are grouped by what comes before it, so
#: a page of 100 such times is one warning with a count (the first item's value shown), not 100.
_READ_AS_VALUE = re.compile(r"; read as (?!absent\Z).*\Z", re.DOTALL)


def tolerate(raw: Item, schema: str, base: str, item: str, warn: Warn | None) -> Item:
    """`raw` without its odd values (a copy when any), each reported to `warn`."""
    if fast_check(schema)(raw):
        return raw
    cleaned = raw
    for error in schema_errors(raw, schema):
        parts = tuple(error.absolute_path)
        path = paths.join(base, *parts)
        if error.validator == "additionalProperties":
            for key in _unknown_keys(error):
                _tell(warn, paths.join(path, key), "unknown field, kept as data", item)
            continue
        if error.validator == "required":
            _tell(warn, path, f"{describe_error(error)}; read as absent", item)
            continue
        if cleaned is raw:
            cleaned = copy.deepcopy(raw)
        _remove(cleaned, parts)
        _tell(warn, path, f"{describe_error(error)}; read as absent", item)
    return cleaned


def _tell(warn: Warn | None, path: str, problem: str, item: str) -> None:
    if warn is not None:
        warn(DataWarning(path=path, problem=problem, item=item))


def _unknown_keys(error: Any) -> list[str]:
    known = error.schema.get("properties", {})
    return sorted(k for k in error.instance if k not in known)


def _remove(value: Any, parts: tuple[Any, ...]) -> None:
    """Drop the value at `parts` (a list element becomes null: indexes stay meaningful)."""
    if not parts:
        return
    parent = value
    for part in parts[:-1]:
        parent = parent[part]
    if isinstance(parent, dict):
        parent.pop(parts[-1], None)
    else:
        parent[parts[-1]] = None


#: How many fields one problem is named in (`unknown field, kept as data`: 20,000 unknown keys
#: were 20,000 warnings, 2.9 MB of the sync's summary); the rest are counted in one more.
NAMED_PER_PROBLEM = 20
#: The longest path, item or page a warning shows, and the longest problem: a key or an id the
#: service sends can be 1 MB (redacted, then cut with a count: `retry.redacted_cut`).
_SHOWN = 300
_SHOWN_PROBLEM = 1000


class DataQuality:
    """The data-quality warnings of one sync, the same problem in the same field counted once,
    at most `NAMED_PER_PROBLEM` fields named per problem."""

    def __init__(self) -> None:
        self._groups: dict[tuple[str, str], DataWarning] = {}
        self._named: dict[str, int] = {}  # per problem: the fields named
        self._more: dict[str, DataWarning] = {}  # per problem: the first not named, counted

    def add(self, warning: DataWarning) -> None:
        """Record one warning (or count it against the first one like it)."""
        problem = _READ_AS_VALUE.sub("", warning.problem)  # the problem, not one item's value
        key = (_ITEM_INDEX.sub(r"\1[*]", warning.path), problem)
        first = self._groups.get(key)
        if first is not None:
            self._groups[key] = replace(first, count=first.count + 1)
            return
        named = self._named.get(problem, 0)
        if named < NAMED_PER_PROBLEM:
            self._named[problem] = named + 1
            self._groups[key] = warning
            return
        more = self._more.get(problem)
        self._more[problem] = warning if more is None else replace(more, count=more.count + 1)

    def on(self, page: Page) -> Warn:
        """A `Warn` that records warnings as coming from `page`."""
        return lambda warning: self.add(replace(warning, where=page.where))

    def add_duplicates(self, page: Page, listing: Listing, name: Callable[[Item], str]) -> None:
        """One warning per key `page` sent twice, naming its item (the last value was kept);
        per item, one for its strings that were not UTF-8 (the first named, the others
        counted)."""
        repaired: dict[str, list[Duplicate]] = {}
        for dup in page.duplicates:
            item = "the page"
            if len(dup.path) > 1 and dup.path[0] == listing.items:
                index = dup.path[1]
                if isinstance(index, int) and 0 <= index < len(page.items):
                    item = name(page.items[index])
            if dup.repaired:
                repaired.setdefault(item, []).append(dup)
                continue
            problem = dup.problem or f"key {dup.key!r} sent twice; the last value is used"
            self.add(DataWarning(paths.render(dup.path), problem, item, page.where))
        for item, found in repaired.items():
            first = min(found, key=lambda d: paths.render(d.path))
            more = len(found) - 1
            problem = first.problem + (
                f"; {more} more {'string' if more == 1 else 'strings'} of it read the same way"
                if more
                else ""
            )
            self.add(DataWarning(paths.render(first.path), problem, item, page.where))

    def warnings(self, redactor: Redactor) -> tuple[DataWarning, ...]:
        """Every warning, redacted (a key or a URL can carry a secret) and cut to a line's
        length, in path order; per problem, the fields past `NAMED_PER_PROBLEM` as one
        warning counting them."""
        found = list(self._groups.values())
        for more in self._more.values():
            found.append(
                replace(
                    more,
                    problem=f"{more.problem}; {more.count} more warnings of this problem in other "
                    f"fields are counted, not named (at most {NAMED_PER_PROBLEM} fields are)",
                    count=1,
                )
            )
        found.sort(key=lambda w: (w.where, w.path, w.problem))
        # The same page, path or item is named by many warnings: each text redacted once (the
        # redactor learns nothing from a text only shown, so it answers the same each time).
        redact = functools.cache(redactor.redact_shown)

        return tuple(
            replace(
                w,
                path=redacted_cut(w.path, _SHOWN, redact),
                problem=redacted_cut(w.problem, _SHOWN_PROBLEM, redact),
                item=redacted_cut(w.item, _SHOWN, redact),
                where=redacted_cut(w.where, _SHOWN, redact),
            )
            for w in found
        )
