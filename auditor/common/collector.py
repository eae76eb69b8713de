"""The cyclic garbage collector's pace while auditor makes many objects that stay alive.

CPython walks the young objects every 700 new containers, and those that survive again every
ten of those walks. Loading modules (functions, classes, tables that live as long as the
process) and an audit (results, findings, report data that live until the reports are written)
make 100,000s of such objects and hardly any cycles: each walk finds nothing to free.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

#: The thresholds while loading or auditing (the sync's too, `workflows.sync`): a young
#: collection every 50,000 new containers instead of 700.
FEW_COLLECTIONS = (50_000, 20, 20)


@contextmanager
def loading() -> Iterator[None]:
    """Fewer collections while modules are imported (~80 collections, 15-25 ms of a nightly
    run's start-up). At the end what was made goes to the oldest generation (frozen, then
    unfrozen): putting the threshold back does not set off a walk of it, and it is not walked
    again until a full collection. Left as it is when the thresholds are raised already, and
    not put back when something else changed them meanwhile. Meant for the process's main
    thread before any other work runs (it unfreezes what was frozen)."""
    found = gc.get_threshold()
    if found[0] >= FEW_COLLECTIONS[0]:
        yield
        return
    gc.set_threshold(*FEW_COLLECTIONS)
    try:
        yield
    finally:
        gc.freeze()
        if gc.get_threshold() == FEW_COLLECTIONS:
            gc.set_threshold(*found)
        gc.unfreeze()
