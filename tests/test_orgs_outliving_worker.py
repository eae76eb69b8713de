"""A `run --orgs` worker that an interrupt leaves running (a step with no check point, named
on stderr) ended the process with exit 134 after its last line: the interpreter's shutdown
stopped the thread inside RE2's C++ (`terminate called without an active exception`), and a
CI saw an abort instead of the command's exit code (review R43 #6). The command now ends
with its own exit code, its outputs flushed."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

# A child process: a thread marked as `run --orgs` marks its workers (`may_outlive`), busy in
# RE2 (as a worker evaluating policies is) when the command itself, `auditor --version`, ends.
CHILD = textwrap.dedent(
    """
    import sys, threading, time
    import re2
    from auditor.__main__ import entry
    from auditor.common.interrupts import may_outlive

    TEXT, PATTERN = "a" * 2_000_000, re2.compile(r"(a|aa)*c")
    busy = threading.Event()

    def evaluate():
        busy.set()
        while True:
            PATTERN.search(TEXT)

    for n in range(2):
        may_outlive(threading.Thread(target=evaluate, name=f"auditor-org-{n}", daemon=True)).start()
    busy.wait()
    time.sleep(0.1)
    sys.argv = ["auditor", "--version"]
    raise SystemExit(entry())
    """
)


@pytest.mark.e2e
def test_a_worker_still_busy_when_the_command_ends_does_not_abort_the_process() -> None:
    for _ in range(3):  # (the abort came in every run of this child before)
        done = subprocess.run(
            [sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith("auditor "), done.stdout
        assert "terminate called" not in done.stderr
        assert "Fatal Python error" not in done.stderr


def test_run_orgs_workers_are_the_threads_the_end_of_the_command_looks_for() -> None:
    """The guard above looks at the threads marked `may_outlive`: `audit_orgs`' workers are."""
    import threading

    from auditor.common import interrupts
    from auditor.workflows.orgs import OrgResult, audit_orgs

    marked: list[bool] = []

    def audit_one(name: str) -> OrgResult:
        marked.append(threading.current_thread() in set(interrupts._OUTLIVING))
        return OrgResult(name, 0, "clean")

    audit_orgs(["a", "b", "c"], audit_one, workers=2)
    assert marked == [True, True, True]
