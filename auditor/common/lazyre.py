"""Module-level regular expressions compiled on first use, not on import.

A command compiles only the patterns its input needs: the nightly `auditor run` used fewer than
half of the ~170 patterns its modules compiled at import (shell quoting, `printf` escapes, PIN
options and the like: ~17 ms of `re` compilation for patterns it never ran).

    _SPACE = lazy_regex(globals(), "_SPACE", r"\\s")

gives a stand-in that compiles the pattern the first time any of its attributes is read
(`_SPACE.search`) and then puts the compiled pattern in its place in the module (`globals()`
under that name), so a later use is the compiled pattern itself, at no cost. A reference
kept elsewhere (in a tuple, a dict, another module) goes on working through the stand-in.
"""

from __future__ import annotations

import re
from typing import Any, AnyStr, cast


class _Deferred:
    """A pattern not compiled yet (see the module's doc)."""

    __slots__ = ("_compiled", "_flags", "_name", "_namespace", "_pattern")

    def __init__(
        self, namespace: dict[str, Any], name: str, pattern: str | bytes, flags: int
    ) -> None:
        self._namespace = namespace
        self._name = name
        self._pattern = pattern
        self._flags = flags
        self._compiled: re.Pattern[Any] | None = None

    def __getattr__(self, attr: str) -> Any:
        compiled = self._compiled
        if compiled is None:
            compiled = self._compiled = re.compile(self._pattern, self._flags)
            if self._namespace.get(self._name) is self:
                self._namespace[self._name] = compiled
        return getattr(compiled, attr)

    def __repr__(self) -> str:
        return f"lazy_regex({self._pattern!r}, {self._flags})"


def lazy_regex(
    namespace: dict[str, Any], name: str, pattern: AnyStr, flags: int = 0
) -> re.Pattern[AnyStr]:
    """`re.compile(pattern, flags)` on first use, for the module-level name `name` of the
    module whose `globals()` is `namespace` (see the module's doc)."""
    return cast("re.Pattern[AnyStr]", _Deferred(namespace, name, pattern, flags))
