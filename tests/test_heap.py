"""`auditor.common.heap`: a sync's page buffers come from the heap and are reused, not mapped
and zeroed afresh page after page.

Each case runs in a child process, as the allocator's thresholds are the process's; glibc's
`mallinfo2` says how many blocks are mapped on their own (`hblks`)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from auditor.common.heap import TRIM_THRESHOLD

_CHILD = """
import ctypes, sys
from auditor.common.heap import fix_thresholds, keep_freed_memory

class Info(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
        "fordblks", "keepcost")]

mallinfo2 = ctypes.CDLL(None).mallinfo2
mallinfo2.restype = Info
said = [keep_freed_memory() for _ in range(2)] if sys.argv[1] == "tuned" else []
said = [fix_thresholds()] if sys.argv[1] == "fixed" else said
before = mallinfo2().hblks
buffer = bytearray(3_000_000)  # a page body's buffer, or three
print(said, mallinfo2().hblks - before)
"""


def _glibc() -> bool:
    """glibc 2.33 or later (`mallinfo2`, which the child reads, came with it)."""
    try:
        version = os.confstr("CS_GNU_LIBC_VERSION") if sys.platform.startswith("linux") else None
    except (ValueError, OSError):  # musl and others have no such name
        return False
    if not version:
        return False
    major, minor = (int(n) for n in version.split()[-1].split(".")[:2])
    return (major, minor) >= (2, 33)


pytestmark = pytest.mark.skipif(not _glibc(), reason="the thresholds are glibc's (2.33+)")


def _run(script: str, mode: str, **env: str) -> str:
    """What `script` prints in a child process given `mode`, under `env` and none of the
    allocator's own settings from this process's environment."""
    environ = {k: v for k, v in os.environ.items() if "MALLOC" not in k and k != "GLIBC_TUNABLES"}
    done = subprocess.run(
        [sys.executable, "-c", script, mode],
        env={**environ, **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stdout.strip()


def _child(mode: str, **env: str) -> str:
    return _run(_CHILD, mode, **env)


def test_a_page_sized_buffer_comes_from_the_heap_once_the_thresholds_are_raised() -> None:
    """glibc maps each block of 128 KiB or more on its own (until such a block is freed), and
    gives it back when it is freed: every page's buffers were faulted in afresh (90,000-110,000
    page faults in a sync of 10,000 revisions, against 12,000). Raised once per process."""
    assert _child("default") == "[] 1"
    assert _child("tuned") == "[True, False] 0"


@pytest.mark.parametrize(
    "env",
    [
        {"GLIBC_TUNABLES": "glibc.malloc.trim_threshold=0"},
        {"MALLOC_MMAP_THRESHOLD_": "131072"},
        {"MALLOC_TRIM_THRESHOLD_": "131072"},
    ],
)
def test_the_operators_own_allocator_settings_are_left_as_they_are(env: dict[str, str]) -> None:
    assert _child("tuned", **env) == "[False, False] 1"
    assert _child("fixed", **env) == "[False] 1" and _child("fixed") == "[True] 1"


# A large block freed (left to itself, glibc then raises its thresholds to that size and
# twice that), then 12 MB of 300 KB blocks, each followed by a small block that stays, then
# those 12 MB freed: how much of them the process still holds, in kB. `command` runs the
# `auditor` command (`--version`) to its end in this process first.
_FREED = """
import sys
if sys.argv[1] == "fixed":
    from auditor.common.heap import fix_thresholds
    assert fix_thresholds()
if sys.argv[1] == "command":
    from auditor.__main__ import entry
    sys.argv = ["auditor", "--version"]
    assert entry() == 0
def held():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096
big = bytes(8 << 20)
del big
before = held()
blocks, pins = [], []
for i in range(40):
    blocks.append(bytes(300_000) + b"x")
    pins.append(bytes(1000) + str(i).encode())
del blocks
print((held() - before) // 1000)
"""


def _held_after_freeing(mode: str) -> int:
    return int(_run(_FREED, mode).split()[-1])


def test_the_auditor_command_gives_freed_blocks_back_to_the_system() -> None:
    """Left to itself, glibc raised its thresholds as large blocks were freed, and the heap
    kept the holes of the megabyte blocks an audit frees: the online nightly at 100,000
    revisions peaked at 155 MB. The `auditor` command fixes the threshold first."""
    assert _held_after_freeing("default") > 10_000  # the 12 MB stay
    # at most `TRIM_THRESHOLD` (8 MiB) kept free at the heap's top for reuse
    assert _held_after_freeing("fixed") < TRIM_THRESHOLD // 1000
    assert _held_after_freeing("command") < TRIM_THRESHOLD // 1000


def test_a_python_without_ctypes_still_runs_the_command() -> None:
    """A CPython built without libffi has no `_ctypes`: the command runs with glibc's own
    thresholds (it failed with `unexpected ModuleNotFoundError`, exit 2, even for --version)."""
    code = (
        "import sys; sys.modules['_ctypes'] = None\n"
        "from auditor.__main__ import entry\n"
        "sys.argv = ['auditor', '--version']\n"
        "raise SystemExit(entry())\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    assert done.stdout.startswith("auditor ")


_TOP = """
import sys
if sys.argv[1] == "fixed":
    from auditor.common.heap import fix_thresholds
    assert fix_thresholds()
def held():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096
before = held()
blocks = [bytes(100_000) + str(i).encode() for i in range(40)]  # 4 MB at the heap's top
del blocks
print((held() - before) // 1000)
"""


def test_freed_memory_at_the_heaps_top_is_kept_for_reuse() -> None:
    """With the mmap threshold fixed, glibc keeps only 128 KiB free at the heap's top: the
    heap shrank and grew again all run long (34,000-36,000 page faults in a nightly at 10,000
    revisions instead of 19,000-20,000). Up to `TRIM_THRESHOLD` is kept."""
    assert int(_run(_TOP, "default")) < 1_000  # given back at once
    assert int(_run(_TOP, "fixed")) > 3_000
