"""Two JSON values compared as values, not as the text they were written in.

Takes the value the store holds for a revision's settings or a readiness report and the value
the service sends for it now; gives the paths where they differ: changed (another value, type
or list length), removed (stored, no longer sent) and added (sent, never stored). Numbers are
equal as numbers (`30` and `30.0`, compared exactly: no float rounding of a big integer); with
`null_is_absent`, a field that is `null` is the same as a field that is not there (but a stored
`null` that now has a value is changed: the item said `null`, and now says another thing).
Only paths are given, never a value (values may be secrets; a key the store holds is already
redacted).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from auditor.common import paths

#: How many paths of each kind a difference names; the rest are counted.
NAMED_PATHS = 5


@dataclass
class Difference:
    """Where two JSON values differ: the first `NAMED_PATHS` paths of each kind and counts."""

    changed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    added: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=lambda: {"changed": 0, "removed": 0, "added": 0})

    @property
    def same(self) -> bool:
        """Equal as values."""
        return not any(self.counts.values())

    @property
    def only_added(self) -> bool:
        """Every stored field still there with an equal value, and fields added."""
        return self.counts["added"] > 0 and not self.counts["changed"] + self.counts["removed"]

    def _note(self, kind: str, path: str) -> None:
        self.counts[kind] += 1
        named: list[str] = getattr(self, kind)
        if len(named) < NAMED_PATHS:
            named.append(path)

    def named(self, kind: str) -> str:
        """`$.a, $.b and 3 more`: the paths of one kind, the rest counted."""
        shown: list[str] = getattr(self, kind)
        more = self.counts[kind] - len(shown)
        return ", ".join(shown) + (f" and {more} more" if more > 0 else "")

    def describe(self) -> str:
        """`$.a changed; $.b removed; $.c added` (the kinds found, in that order)."""
        return "; ".join(
            f"{self.named(kind)} {kind}"
            for kind in ("changed", "removed", "added")
            if self.counts[kind]
        )


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _scalar_equal(a: Any, b: Any) -> bool:
    if _is_number(a) and _is_number(b):
        return bool(a == b)  # int and float compare exactly in Python, big integers too
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    return type(a) is type(b) and a == b


def compare(stored: Any, seen: Any, *, null_is_absent: bool = False, base: str = "$") -> Difference:
    """Where `seen` differs from `stored` (see the module's description)."""
    diff = Difference()
    todo: list[tuple[str, Any, Any]] = [(base, stored, seen)]
    while todo:
        path, a, b = todo.pop()
        if isinstance(a, dict) and isinstance(b, dict):
            for key, value in a.items():
                here = paths.join(path, str(key))
                if null_is_absent and (value is None) != (b.get(key) is None):
                    # a value now where `null` was stored (a skipped criterion's numerator
                    # filled in) is a changed value, not a field added; a value now `null`
                    # or gone, one removed
                    diff._note("changed" if value is None else "removed", here)
                elif key in b:
                    todo.append((here, value, b[key]))
                elif not (null_is_absent and value is None):
                    diff._note("removed", here)
            for key, value in b.items():
                if key not in a and not (null_is_absent and value is None):
                    diff._note("added", paths.join(path, str(key)))
        elif isinstance(a, list) and isinstance(b, list):
            if len(a) != len(b):
                diff._note("changed", path)
            else:
                pairs = enumerate(zip(a, b, strict=True))
                todo.extend((paths.join(path, i), x, y) for i, (x, y) in pairs)
        elif isinstance(a, dict | list) or isinstance(b, dict | list) or not _scalar_equal(a, b):
            diff._note("changed", path)  # another type, or another value
    for kind in ("changed", "removed", "added"):
        getattr(diff, kind).sort()
    return diff
