"""Calls run in the background: how the next page travels while the caller works on this one.

Takes functions of no arguments, gives for each a handle whose `result()` waits for the call to
end and returns its value or raises its exception, there and not earlier. The calls of one
`Worker` run one after another in one daemon thread, started with the first call (starting a
thread per page costs the caller a wait for the new thread to be scheduled, long on a busy
machine), each in its caller's context (so the request's deadline holds there too).
`auditor.fetch.paging` runs only the network part of the next page's request this way (send,
wait, read the bytes); the parsing and the checks stay in the caller's thread, which would hold
the interpreter lock for them anyway, so the two threads hardly ever wait for each other; the
sync sends a page ahead only once the service has kept a request waiting (`Pages.waits`), as
the lock still changes hands for every read of the body.
"""

from __future__ import annotations

import contextvars
import queue
import threading
import weakref
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from auditor.common.interrupts import check_cancelled

T = TypeVar("T")


class Pending(Generic[T]):
    """One call handed to a `Worker`: its result once run."""

    def __init__(self, work: Callable[[], T]) -> None:
        self._work = work
        self._context = contextvars.copy_context()  # the caller's (e.g. its deadline)
        self._done = threading.Event()
        self._value: T | None = None
        self._error: BaseException | None = None

    def run(self) -> None:
        """Run the call (in the worker's thread) and keep its value or exception."""
        try:
            self._value = self._context.run(self._work)
        except BaseException as exc:  # handed to the caller when it asks for the result
            self._error = exc
        finally:
            self._done.set()

    def result(self) -> T:
        """The call's value, or the exception it raised (raised here); `Cancelled` first when
        the caller's organization is (`run --orgs`: a page fetched ahead is not worked on)."""
        check_cancelled()
        self._done.wait()
        if self._error is not None:
            error, self._error = self._error, None
            raise error
        value, self._value = self._value, None
        return value  # type: ignore[return-value]  # set unless the call raised


def _serve(jobs: queue.SimpleQueue[Pending[Any] | None]) -> None:
    while (job := jobs.get()) is not None:
        job.run()


class Worker:
    """One daemon thread running calls in order; it ends when the worker is dropped."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[Pending[Any] | None] = queue.SimpleQueue()
        self._started = False

    def submit(self, work: Callable[[], T]) -> Pending[T]:
        """Start `work` in the background (after the calls submitted before it)."""
        job = Pending(work)
        self._jobs.put(job)
        if not self._started:
            self._started = True
            threading.Thread(target=_serve, args=(self._jobs,), daemon=True).start()
            weakref.finalize(self, self._jobs.put, None)  # the thread ends with its worker
        return job
