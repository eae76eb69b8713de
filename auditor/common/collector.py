"""The cyclic garbage collector's pace while auditor makes many objects that stay alive.

CPython walks the young objects every 700 new containers, and those that survive again every
ten of those walks. Loading modules (functions, classes, tables that live as long as the
process) and an audit (results, findings, report data that live until the reports are written)
make 100,000s of such objects and hardly any cycles: each walk finds nothing to free.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager

#: The thresholds while loading or auditing (the sync's too, `workflows.sync`): a young
#: collection every 50,000 new containers instead of 700.
FEW_COLLECTIONS = (50_000, 20, 20)


@contextmanager
def few_collections(*, set_aside: bool = True) -> Iterator[None]:
    """`FEW_COLLECTIONS` while the block runs: the one setting the sync, the audit and the
    loading of modules share, as the process's thresholds are one. Any number of blocks may
    run at once, in any threads and in any order (`run --orgs` syncs one organization while it
    audits another): the first to enter saves the thresholds it finds and raises them (unless
    they are raised already), and the last to leave puts back what the first found (unless
    something else changed them meanwhile). Separate counters for syncs and audits used to
    leave the raised thresholds for the rest of the process when an audit ended inside a sync.

    `set_aside`: the objects alive on entering are frozen (`gc.freeze`): no collection walks
    them while the block runs; a frozen object is still freed when its last reference goes.
    The last to leave freezes what was made meanwhile too, so that putting the threshold back
    does not set off a walk of it, then unfreezes all of it into the oldest generation. When
    the host program had frozen objects of its own before the first entered (more than
    `STARTUP_FROZEN`), nothing is frozen or unfrozen (`gc.unfreeze` cannot tell its objects
    from ours, and would undo its freeze): only the thresholds change."""
    global _entered, _found, _freezing
    with _lock:
        if _entered == 0:
            found = gc.get_threshold()
            _found = found if found[0] < FEW_COLLECTIONS[0] else None
            _freezing = gc.get_freeze_count() <= STARTUP_FROZEN
            if _found is not None:
                gc.set_threshold(*FEW_COLLECTIONS)
        _entered += 1
        if set_aside and _freezing:
            gc.freeze()
    try:
        yield
    finally:
        with _lock:
            _entered -= 1
            if _entered == 0:
                if _freezing:
                    gc.freeze()
                if _found is not None and gc.get_threshold() == FEW_COLLECTIONS:
                    gc.set_threshold(*_found)
                if _freezing:
                    gc.unfreeze()


#: What was frozen when this module was loaded (auditor's command line loads it first thing):
#: the interpreter's own. CPython 3.12 keeps its immortal objects in the frozen generation (375
#: tuples at start-up; 3.11 and 3.13 freeze nothing): `gc.unfreeze` moves them to the oldest
#: generation, and the next full collection puts them back, so unfreezing them changes nothing.
#: Comparing with 0 read them as the host program's freeze and left the set-aside off on 3.12.
#: (A host program that freezes before auditor is loaded has its freeze counted here, and
#: undone when the last block leaves: load auditor first.)
STARTUP_FROZEN = gc.get_freeze_count()

_lock = threading.Lock()
_entered = 0  # blocks inside `few_collections` right now, in every thread
_found: tuple[int, int, int] | None = None  # what the first found, unless raised already
_freezing = True  # no freeze of the host program's was there when the first entered


def loading() -> AbstractContextManager[None]:
    """Fewer collections while modules are imported (~80 collections, 15-25 ms of a nightly
    run's start-up). Nothing is set aside on entering; at the end what was made goes to the
    oldest generation (`few_collections`): putting the threshold back does not set off a walk
    of it, and it is not walked again until a full collection."""
    return few_collections(set_aside=False)
