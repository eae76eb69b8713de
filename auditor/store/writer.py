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
        self.queued = False  # handed to the thread (set just after the `put`)
        self._state = "new"  # "new", "running" (or ended), "dropped" (never to run)
        self._lock = threading.Lock()

    def run(self) -> None:
        with self._lock:
            if self._state == "dropped":
                return
            self._state = "running"
        try:
            self.work()
        except BaseException as exc:  # handed to the caller when it waits
            self.error = exc
        finally:
            self.work = _nothing  # the rows (and the store) are not held once written
            self.done.set()

    def drop(self) -> bool:
        """True if the job has not started and now never will (the thread skips it)."""
        with self._lock:
            if self._state == "new":
                self._state = "dropped"
                self.work = _nothing
            return self._state == "dropped"


def _nothing() -> None:
    return None


def _serve(jobs: queue.SimpleQueue[_Job | None]) -> None:
    while True:
        job = jobs.get()
        if job is None:
            return
        job.run()
        del job  # not held while waiting for the next: its error may reference the store


def _no_cancel() -> None:
    return None


class Writer:
    """One daemon thread running a store's writes, at most one pending at a time.

    `cancel` ends the running write early (it then fails): called from the caller's thread when
    an interruption (Ctrl-C, SIGTERM) makes the write pointless, so that the caller does not
    wait for a write that is stuck (a lock held by another session, a slow disk)."""

    def __init__(self, cancel: Callable[[], None] = _no_cancel) -> None:
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._pending: _Job | None = None
        self._cancel = cancel
        self.abandoned = False  # a write was left running (a second interruption): see wait_all

    @property
    def pending(self) -> bool:
        """Whether a write was handed over and not yet waited for."""
        return self._pending is not None

    def submit(self, work: Callable[[], None]) -> None:
        """Start `work` in the writer's thread (the write before it must have been waited for).

        An interruption inside leaves nothing that `wait_all` would wait for forever: the
        thread is running before the job is pending, and a pending job that was not yet queued
        is dropped rather than waited for."""
        if self._pending is not None:
            raise RuntimeError("a write is still pending")
        if self._thread is None:
            jobs = self._jobs
            thread = threading.Thread(
                target=_serve, args=(jobs,), name="auditor-store-writer", daemon=True
            )
            try:
                thread.start()
            except BaseException:  # it may have started all the same: it ends, unused
                self._jobs = queue.SimpleQueue()
                jobs.put(None)
                raise
            self._thread = thread
            weakref.finalize(self, jobs.put, None)  # the thread ends with its writer
        job = _Job(work)
        self._pending = job
        self._jobs.put(job)
        job.queued = True

    def wait(self) -> None:
        """Wait for the pending write (if any) to end; raise its exception here.

        An interruption (Ctrl-C, SIGTERM) while waiting is raised at once; the write stays
        pending, and `wait_all` (which the error paths call) cancels it."""
        job = self._pending
        if job is None:
            return
        if not job.queued and job.drop():  # an interruption in `submit`: it never runs
            self._pending = None
            return
        job.done.wait()
        self._pending = None
        if job.error is not None:
            error, job.error = job.error, None
            raise error

    def wait_all(self, *, cancel: bool = False) -> BaseException | None:
        """Wait for the pending write (if any) to end, and give its exception instead of
        raising it (for error paths: a rollback must come after it). `cancel`: the write is
        not wanted (the caller is handling an interruption): it is cancelled first.

        An interruption while waiting cancels the write, and is raised once the write has
        ended (the caller rolls back on the way out). A second one stops the wait: the write
        is left to its thread (`abandoned`: the connection must not be used or closed; the
        process is ending) and the first interruption is raised."""
        job = self._pending
        if job is None:
            return None
        interrupted: BaseException | None = None
        if (cancel or not job.queued) and job.drop():  # not started: nothing to wait for
            self._pending = None
            return None
        while not job.done.is_set():
            try:
                if cancel or interrupted is not None:
                    # again now and then: a cancel that came between two of the write's
                    # statements ends none of them
                    self._cancel()
                    job.done.wait(1.0)
                else:
                    job.done.wait()
            except BaseException as exc:  # an interruption (in the wait, or in the cancel)
                if interrupted is not None:
                    self.abandoned = True
                    raise interrupted from None
                interrupted = exc
        self._pending = None
        error, job.error = job.error, None
        if interrupted is not None:
            raise interrupted
        return error

    def close(self) -> None:
        """End the thread (a write still pending is cancelled and waited for: there is none
        unless an error path was interrupted, and its error is of no use then)."""
        if self.abandoned:
            return  # the thread still uses the connection; it ends with the process
        self.wait_all(cancel=True)
        if self._thread is not None:
            self._jobs.put(None)
