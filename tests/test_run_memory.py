"""What keeps `auditor run` within its memory at 100,000 revisions (issue 13) without changing
what it reads: the history parsed a revision at a time as it is read, and the earlier
evaluation state handed to the engine once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from test_store import fill

import auditor.workflows.run as run
from auditor.store import database
from auditor.store.database import Store


def test_the_history_is_parsed_a_revision_at_a_time_as_it_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A walk of the stored history never holds a batch of parsed settings beside what it
    keeps (at 100,000 revisions 256 of them were ~10 MB at the peak of a run): a row is parsed
    when it is reached, and every stored revision within the bounds comes once, in order."""
    parsed: list[int] = []
    real = database.revision_from_row

    def counting(row: Any) -> Any:
        parsed.append(1)
        return real(row)

    with Store.open(tmp_path / "state.db") as store:
        fill(store, range(1, 200))
        monkeypatch.setattr(database, "revision_from_row", counting)
        walk = store.iter_revisions()
        assert next(walk).revision == 1 and len(parsed) == 1
        assert next(walk).revision == 2 and len(parsed) == 2
        assert [r.revision for r in walk] == list(range(3, 200))
        assert [r.revision for r in store.iter_revisions(start=40, end=41)] == [40, 41]


def test_an_earlier_state_is_handed_over_once_and_keeps_its_keys() -> None:
    """The engine reads each rule's state once; the bytes are let go then (megabytes at
    100,000 revisions), and a second read finds none, so the rule would be evaluated afresh."""
    states = run._HandedOver({"rule-a": b"A", "rule-b": b"B"})
    assert len(states) == 2 and bool(states) and list(states) == ["rule-a", "rule-b"]
    assert states.get("rule-a") == b"A"
    assert states.get("rule-a") is None and "rule-a" not in states
    assert len(states) == 2 and "rule-b" in states and states.get("missing") is None
