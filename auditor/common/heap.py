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
"""

from __future__ import annotations

import os
import sys

#: `mallopt` parameters (glibc's `malloc.h`).
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
#: Blocks under this size come from the heap (page buffers of up to 1 MiB are reused).
MMAP_THRESHOLD = 4 * 1024 * 1024
#: Free memory at the heap's top kept for reuse rather than given back.
TRIM_THRESHOLD = 8 * 1024 * 1024
_TUNABLES = ("MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TOP_PAD_")

_done = False


def keep_freed_memory() -> bool:
    """Raise glibc's thresholds (once a process); True when they were set by this call."""
    global _done
    if _done:
        return False
    _done = True
    if sys.platform != "linux" or "glibc.malloc." in os.environ.get("GLIBC_TUNABLES", ""):
        return False
    if any(name in os.environ for name in _TUNABLES):
        return False
    try:
        if not os.confstr("CS_GNU_LIBC_VERSION"):  # musl and others have no such name
            return False
    except (ValueError, OSError):
        return False
    import ctypes  # only here: 2-3 ms of loading, paid by a sync of more than one page

    try:
        mallopt = ctypes.CDLL(None).mallopt  # the process's own symbols: glibc's
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(
        mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD)
    )
