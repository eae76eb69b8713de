"""What keeps `auditor run` within its memory at 100,000 revisions (issue 13) without changing
what it reads: the history read from the store a slice at a time, and the earlier evaluation
state handed to the engine once."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_store import fill

import auditor.workflows.run as run
from auditor.store.database import Store


@pytest.mark.parametrize(
    ("start", "end"), [(None, None), (None, 150), (5, None), (7, 7), (40, 41), (151, 400)]
)
def test_the_history_read_a_slice_at_a_time_is_the_history(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, start: int | None, end: int | None
) -> None:
    """Every stored revision within the bounds, once, in order, even one the list of revision
    numbers the slices are cut from does not name."""
    monkeypatch.setattr(run, "SLICE", 4)
    with Store.open(tmp_path / "state.db") as store:
        fill(store, range(1, 60))
        fill(store, range(100, 170, 3))  # a gap, then every third number
        numbers = store.revision_hashes()
        fill(store, range(60, 63))  # stored after the numbers were read
        whole = [r.revision for r in store.iter_revisions(start=start, end=end)]
        sliced = [r.revision for r in run.read_slices(store, numbers, start, end)]
    assert sliced == whole


def test_an_earlier_state_is_handed_over_once_and_keeps_its_keys() -> None:
    """The engine reads each rule's state once; the bytes are let go then (megabytes at
    100,000 revisions), and a second read finds none, so the rule would be evaluated afresh."""
    states = run._HandedOver({"rule-a": b"A", "rule-b": b"B"})
    assert len(states) == 2 and bool(states) and list(states) == ["rule-a", "rule-b"]
    assert states.get("rule-a") == b"A"
    assert states.get("rule-a") is None and "rule-a" not in states
    assert len(states) == 2 and "rule-b" in states and states.get("missing") is None
