"""A call run in the background: how the next page travels while the caller works on this one.

Takes a function of no arguments, gives a handle whose `result()` waits for the call to end and
returns its value or raises its exception, there and not earlier. The call runs in a daemon
thread in the caller's context (so the request's deadline holds there too). `auditor.fetch.paging`
runs only the network part of the next page's request this way (send, wait, read the bytes); the
parsing and the checks stay in the caller's thread, which would hold the interpreter lock for
them anyway, so the two threads hardly ever wait for each other.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class Background(Generic[T]):
    """One call of `work`, started at once in its own daemon thread."""

    def __init__(self, work: Callable[[], T]) -> None:
        self._work = work
        self._done = threading.Event()
        self._value: T | None = None
        self._error: BaseException | None = None
        context = contextvars.copy_context()  # the caller's context (e.g. its deadline)
        thread = threading.Thread(target=context.run, args=(self._run,), daemon=True)
        thread.start()

    def _run(self) -> None:
        try:
            self._value = self._work()
        except BaseException as exc:  # handed to the caller when it asks for the result
            self._error = exc
        finally:
            self._done.set()

    def result(self) -> T:
        """The call's value, or the exception it raised (raised here)."""
        self._done.wait()
        if self._error is not None:
            error, self._error = self._error, None
            raise error
        value, self._value = self._value, None
        return value  # type: ignore[return-value]  # set unless the call raised
