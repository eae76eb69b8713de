"""The garbage collector's pace while modules load and while an audit runs: raised for the
work, and the process's own thresholds back afterwards (an embedding program, the test
process, keeps what it set)."""

from __future__ import annotations

import gc
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from typing import Any

import pytest

from auditor.common.collector import FEW_COLLECTIONS, STARTUP_FROZEN, few_collections, loading


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
    # what was made is handed back to the collector: nothing frozen but the interpreter's own
    assert gc.get_freeze_count() <= STARTUP_FROZEN


def test_an_audit_sets_aside_what_is_alive_on_every_python() -> None:
    # CPython 3.12 starts with 375 objects of its own frozen (3.11 and 3.13 with none): they
    # are no freeze of a host program's, and the objects alive are set aside all the same
    with few_collections():
        assert gc.get_freeze_count() > STARTUP_FROZEN + 1000  # the test process's objects
    assert gc.get_freeze_count() <= STARTUP_FROZEN
    with few_collections():  # and again, once a full collection has run in between
        gc.collect()
        assert gc.get_freeze_count() > STARTUP_FROZEN + 1000
    gc.collect()
    assert gc.get_freeze_count() <= STARTUP_FROZEN


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
    first, second = few_collections(), few_collections()
    first.__enter__()
    assert gc.get_threshold() == FEW_COLLECTIONS
    second.__enter__()
    first.__exit__(None, None, None)
    assert gc.get_threshold() == FEW_COLLECTIONS  # the second audit is still running
    second.__exit__(None, None, None)
    assert gc.get_threshold() == (700, 10, 10)
    assert gc.get_freeze_count() <= STARTUP_FROZEN  # nothing of ours left frozen


def test_an_audit_during_a_sync_leaves_the_sync_its_thresholds() -> None:
    with few_collections():
        with few_collections():
            pass
        assert gc.get_threshold() == (50_000, 20, 20)
    assert gc.get_threshold() == (700, 10, 10)


def _in_thread(block: Callable[[], AbstractContextManager[None]]) -> tuple[Any, Any, Any]:
    """A thread that enters `block` when `go_in` is set and leaves when `go_out` is; `inside`
    and `left` say it has."""
    go_in, go_out, inside, left = (threading.Event() for _ in range(4))

    def work() -> None:
        go_in.wait(10)
        with block():
            inside.set()
            go_out.wait(10)
        left.set()

    thread = threading.Thread(target=work, daemon=True)
    thread.start()

    def step(event: threading.Event, done: threading.Event) -> None:
        event.set()
        assert done.wait(10)

    return thread, lambda: step(go_in, inside), lambda: step(go_out, left)


def test_an_audit_ending_inside_a_sync_in_another_thread_leaves_no_raised_thresholds() -> None:
    # `run --orgs`: one organization's audit starts, another's sync starts, the audit ends,
    # then the sync: the thresholds before are the thresholds after, nothing left frozen
    audit, audit_in, audit_out = _in_thread(few_collections)
    sync, sync_in, sync_out = _in_thread(few_collections)
    audit_in()
    sync_in()
    assert gc.get_threshold() == FEW_COLLECTIONS
    audit_out()
    assert gc.get_threshold() == FEW_COLLECTIONS  # the sync is still running
    sync_out()
    audit.join(10)
    sync.join(10)
    assert gc.get_threshold() == (700, 10, 10)
    assert gc.get_freeze_count() <= STARTUP_FROZEN  # nothing of ours left frozen


def test_a_sync_ending_inside_an_audit_and_loading_share_the_one_setting() -> None:
    sync, sync_in, sync_out = _in_thread(few_collections)
    audit, audit_in, audit_out = _in_thread(few_collections)
    sync_in()
    audit_in()
    with loading():
        sync_out()
        assert gc.get_threshold() == FEW_COLLECTIONS
    audit_out()
    sync.join(10)
    audit.join(10)
    assert gc.get_threshold() == (700, 10, 10)
    assert gc.get_freeze_count() <= STARTUP_FROZEN  # nothing of ours left frozen


def test_a_freeze_the_host_program_made_is_left_as_it_is() -> None:
    kept = [object() for _ in range(10)]  # the host's long-lived objects, frozen by it
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        assert frozen > 0
        with few_collections():
            assert gc.get_threshold() == FEW_COLLECTIONS
        with loading():
            pass
        # not unfrozen (0), nothing of ours added (a few of the host's may have been freed)
        assert frozen - 100 < gc.get_freeze_count() <= frozen
        assert gc.get_threshold() == (700, 10, 10)
    finally:
        gc.unfreeze()
    del kept
