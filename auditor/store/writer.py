"""The store's writer thread: a page's new revisions are written while the caller goes on.

Takes a function of no arguments that writes through the store's connection; runs it in one
daemon thread (started with the first write, ended when the store closes or is dropped), one
write at a time; gives it back through `wait`, which blocks until it has ended and raises its
exception there. The pattern of `auditor.fetch.ahead.Worker` (which the store cannot import),
cut to what a store needs: at most one write is pending, so memory stays bounded, and the
caller leaves the connection alone until it has waited (the store makes sure: see
`Store._db`). The thread gains where the write does not hold the interpreter lock: SQLite's
`sqlite3_step` and hashlib's hashing of buffers over 2 KB release it, so both run beside the
caller's redaction of the next page on a second core.
"""

from __future__ import annotations

import queue
import threading
import weakref
from collections.abc import Callable


class _Job:
    def __init__(self, work: Callable[[], None]) -> None:
        self.work = work
        self.done = threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self.work()
        except BaseException as exc:  # handed to the caller when it waits
            self.error = exc
        finally:
            self.work = _nothing  # the rows are not held once written
            self.done.set()


def _nothing() -> None:
    return None


def _serve(jobs: queue.SimpleQueue[_Job | None]) -> None:
    while (job := jobs.get()) is not None:
        job.run()


class Writer:
    """One daemon thread running a store's writes, at most one pending at a time."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._started = False
        self._pending: _Job | None = None

    @property
    def pending(self) -> bool:
        """Whether a write was handed over and not yet waited for."""
        return self._pending is not None

    def submit(self, work: Callable[[], None]) -> None:
        """Start `work` in the writer's thread (the write before it must have been waited for)."""
        if self._pending is not None:
            raise RuntimeError("a write is still pending")
        job = _Job(work)
        self._pending = job
        self._jobs.put(job)
        if not self._started:
            self._started = True
            threading.Thread(
                target=_serve, args=(self._jobs,), name="auditor-store-writer", daemon=True
            ).start()
            weakref.finalize(self, self._jobs.put, None)  # the thread ends with its writer

    def wait(self) -> None:
        """Wait for the pending write (if any) to end; raise its exception here.

        An interruption (Ctrl-C, SIGTERM) while waiting is raised at once; the write stays
        pending, and `wait_all` (which the error paths call) waits for it."""
        job = self._pending
        if job is None:
            return
        job.done.wait()
        self._pending = None
        if job.error is not None:
            error, job.error = job.error, None
            raise error

    def wait_all(self) -> BaseException | None:
        """Wait for the pending write (if any) to end, through any interruption; gives its
        exception instead of raising it (for error paths: a rollback must come after it)."""
        job = self._pending
        if job is None:
            return None
        while True:
            try:
                job.done.wait()
                break
            except BaseException:  # an interruption: the write ends all the same
                continue
        self._pending = None
        error, job.error = job.error, None
        return error

    def close(self) -> None:
        """End the thread (after the pending write, which is waited for)."""
        self.wait_all()
        if self._started:
            self._jobs.put(None)
