"""The garbage collector's pace while modules load and while an audit runs: raised for the
work, and the process's own thresholds back afterwards (an embedding program, the test
process, keeps what it set)."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from auditor.common.collector import FEW_COLLECTIONS, loading
from auditor.workflows.run import _objects_set_aside


@pytest.fixture(autouse=True)
def _thresholds() -> Iterator[None]:
    before = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    yield
    gc.set_threshold(*before)


def test_loading_raises_the_thresholds_and_puts_them_back() -> None:
    with loading():
        assert gc.get_threshold() == FEW_COLLECTIONS
    assert gc.get_threshold() == (700, 10, 10)
    assert gc.get_freeze_count() == 0  # what was made is handed back to the collector


def test_loading_leaves_thresholds_it_did_not_set() -> None:
    gc.set_threshold(*FEW_COLLECTIONS)
    with loading():
        pass
    assert gc.get_threshold() == FEW_COLLECTIONS  # raised by someone else: theirs to put back
    gc.set_threshold(700, 10, 10)
    with loading():
        gc.set_threshold(1000, 10, 10)  # changed meanwhile: kept
    assert gc.get_threshold() == (1000, 10, 10)


def test_overlapping_audits_put_the_thresholds_back_when_the_last_ends() -> None:
    first, second = _objects_set_aside(), _objects_set_aside()
    first.__enter__()
    assert gc.get_threshold() == FEW_COLLECTIONS
    second.__enter__()
    first.__exit__(None, None, None)
    assert gc.get_threshold() == FEW_COLLECTIONS  # the second audit is still running
    second.__exit__(None, None, None)
    assert gc.get_threshold() == (700, 10, 10)
    assert gc.get_freeze_count() == 0


def test_an_audit_during_a_sync_leaves_the_sync_its_thresholds() -> None:
    from auditor.workflows.sync import _few_collections

    with _few_collections():
        with _objects_set_aside():
            pass
        assert gc.get_threshold() == (50_000, 20, 20)
    assert gc.get_threshold() == (700, 10, 10)
