"""What a condition sees besides the node it reads: the clock, the change sides, the root."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from auditor.diff import DEFAULT_LIST_TABLE, ListTable
from auditor.operators import MISSING


@dataclass(frozen=True)
class Env:
    """What a condition sees besides the node: the clock and, for change rules, the two sides."""

    now: datetime
    change: tuple[Any, Any] | None = None
    root: Any = MISSING  # the document `{ref: …}` arguments are read from
    table: ListTable = DEFAULT_LIST_TABLE  # how change operators compare lists (`diff_keys`)
