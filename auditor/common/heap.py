"""The C allocator's pace of giving memory back, while a sync moves pages of about 1 MB.

glibc's malloc serves each allocation of 128 KiB or more with a fresh `mmap` (the threshold
rises only as such blocks are freed), and gives the top of its heap back to the system as soon
as more than twice that lies free there. A sync allocates and frees several buffers of
64 KiB-1 MiB for every page it reads (the HTTP library's receive buffers, the body, the
slices of the page): with those defaults they are handed back and asked for again page after
page, and the kernel maps and zeroes their memory again each time. In a full sync of 10,000
revisions that was 90,000-110,000 page faults and 0.5-0.8 s of system time; keeping up to
8 MiB free for reuse and serving blocks under 4 MiB from the heap makes it 12,000 faults and
0.2-0.3 s (`bench/README.md`), with the same peak memory (58-60 MiB).

Only the allocator's two thresholds change, once, for the rest of the process; nothing is
done on another C library, or when the environment sets the allocator's own tunables
(`glibc.malloc.*` in `GLIBC_TUNABLES`, `MALLOC_TRIM_THRESHOLD_`, `MALLOC_MMAP_THRESHOLD_`,
`MALLOC_TOP_PAD_`): those are the operator's choice and stay so.

Before any of that, the `auditor` command fixes both where they stay for the rest of an
audit (`fix_thresholds`: the mmap threshold at 1 MiB, the free top kept at 8 MiB): left to
itself, glibc raises the threshold to the size of each large block freed (up to 32 MiB) and the
top it keeps free to twice that, so the megabyte blocks an audit makes and frees (a rule's
stored state unpacked, a report's pieces) came from the heap and their holes stayed in the
process: the online nightly at 100,000 revisions peaked at 157 MB, over its 150 MB target,
and peaks at 141 MB with the changes beside it (README, Scale).
"""

from __future__ import annotations

import os
import sys
from typing import Any

#: `mallopt` parameters (glibc's `malloc.h`).
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
#: Blocks under this size come from the heap (page buffers of up to 1 MiB are reused).
MMAP_THRESHOLD = 4 * 1024 * 1024
#: Free memory at the heap's top kept for reuse rather than given back.
TRIM_THRESHOLD = 8 * 1024 * 1024
#: From the command's start: blocks of this size or more are mapped, and given back when freed.
FIXED_MMAP_THRESHOLD = 1024 * 1024
_TUNABLES = ("MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TOP_PAD_")

_done = False


def fix_thresholds() -> bool:
    """Fix glibc's mmap threshold at `FIXED_MMAP_THRESHOLD` and the free top it keeps at
    `TRIM_THRESHOLD`, so that glibc no longer raises them as large blocks are freed; True when
    they were set. (The threshold alone left the top at glibc's 128 KiB: the heap shrank and
    grew again all run long, 34,000-36,000 page faults in a nightly at 10,000 revisions
    instead of 19,000-20,000.)"""
    return _set(FIXED_MMAP_THRESHOLD)


def keep_freed_memory() -> bool:
    """Raise glibc's thresholds (once a process); True when they were set by this call."""
    global _done
    if _done:
        return False
    _done = True
    return _set(MMAP_THRESHOLD)


def _set(mmap_threshold: int) -> bool:
    """Set glibc's mmap threshold and, always with it, the free top it keeps
    (`TRIM_THRESHOLD`); True when both were set."""
    mallopt = _mallopt()
    return (
        mallopt is not None
        and bool(mallopt(_M_MMAP_THRESHOLD, mmap_threshold))
        and bool(mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD))
    )


def _mallopt() -> Any:
    """glibc's `mallopt`; None on another C library, or when the environment sets the
    allocator's tunables."""
    if sys.platform != "linux" or "glibc.malloc." in os.environ.get("GLIBC_TUNABLES", ""):
        return None
    if any(name in os.environ for name in _TUNABLES):
        return None
    try:
        if not os.confstr("CS_GNU_LIBC_VERSION"):  # musl and others have no such name
            return None
    except (ValueError, OSError):
        return None
    try:
        import ctypes  # only here: 2-3 ms of loading (a Python built without libffi has none)

        mallopt = ctypes.CDLL(None).mallopt  # the process's own symbols: glibc's
    except (ImportError, OSError, AttributeError):
        return None
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    return mallopt
