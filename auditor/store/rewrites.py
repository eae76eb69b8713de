"""What a re-read item's other content changed: told from the same data in another JSON form.

Takes the stored (redacted) JSON of a revision's settings or a readiness report and the
(redacted) JSON the service sends for it now, when their content hashes differ; gives what the
store does with it (`judge`): the same value written another way (`30` as `30.0`, a report's
optional field `null` instead of absent, keys in another order), fields only added (every
stored field still there with an equal value: a data-quality note, the stored copy kept), or
a rewrite (a value changed or a field removed: an integrity issue naming the paths). Paths
only, as the store keeps them (a settings key that held a secret is its marker): never a
value. The content hashes are not touched: a state file verifies as before.

Also the table that keeps each issue's changed paths (`CHANGES_DDL`, made on first use, so a
state file of an earlier version gains it when an issue is first named) and the issue that
names them (`NamedIssue`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from auditor.common.jsonsame import Difference, compare
from auditor.common.jsonutil import loads
from auditor.models import DataWarning
from auditor.store.schema import IntegrityIssue

#: Per integrity issue (item, stored and seen content), the paths its other content changed or
#: removed (never a value). Created on first use.
CHANGES_DDL = (
    "CREATE TABLE IF NOT EXISTS integrity_changes (revision INTEGER, report_id TEXT, "
    "stored_hash TEXT NOT NULL, seen_hash TEXT NOT NULL, changes TEXT NOT NULL)"
)

#: The longest text of changed paths kept for one issue (a key can be 1 MB).
MAX_CHANGES = 1000


@dataclass(frozen=True)
class NamedIssue(IntegrityIssue):
    """An integrity issue that names what the other content changed (`$.a changed; $.b
    removed`), when that is known (recorded by a sync of 0.3.0 or later)."""

    changes: str = ""

    def describe(self) -> str:
        """One line for people: which item, what changed (paths only) and both hashes."""
        if not self.changes:
            return super().describe()
        what = (
            f"revision {self.revision}"
            if self.report_id is None
            else f"readiness report {self.report_id}"
        )
        return (
            f"{what} changed after it was stored: {self.changes} (stored sha256 "
            f"{self.stored_hash[:12]}, API now sends {self.seen_hash[:12]}); the stored copy "
            "was kept"
        )


def cut(text: str, limit: int = MAX_CHANGES) -> str:
    """`text`, cut at `limit` characters with a count of the rest."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text) - limit} more characters)"


@dataclass(frozen=True)
class Judged:
    """What a re-read item with another content hash is: `same` (the same value written
    another way), `added` (fields only added: `note` says which) or `rewritten` (`changes`
    names the paths changed or removed)."""

    kind: Literal["same", "added", "rewritten"]
    changes: str = ""
    note: DataWarning | None = None
    stored_hash: str | None = None  # the stored row's content hash (filled in by the store)


#: The data-quality note of an item re-read with fields added (the same for every item, so
#: that 100 reports that gained one field are one note with a count).
ADDED = (
    "now carried by an item already stored, which did not have it: kept as first stored, "
    "the new data left out of it (the service added data, which is not a rewrite)"
)


def judge(
    table: Literal["revisions", "reports"], name: str, stored: bytes | str, seen: bytes | str
) -> Judged:
    """Compare the stored JSON of item `name` (`revision 4`, `report r1`) with the JSON seen
    now (both as the store writes them: redacted, canonical)."""
    report = table == "reports"
    base = "$" if report else "$.settings"
    diff: Difference = compare(loads(stored), loads(seen), null_is_absent=report, base=base)
    if diff.same:
        return Judged("same")
    if diff.only_added:
        return Judged("added", note=DataWarning(cut(diff.named("added")), ADDED, name))
    return Judged("rewritten", changes=cut(diff.describe()))
