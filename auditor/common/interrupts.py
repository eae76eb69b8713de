"""Ctrl-C and SIGTERM held over a short step that must not be cut in half, for every stage
(the CLI's `auditor.cli.signals` handles SIGTERM like Ctrl-C, raising `Terminated`; a sync's
last scrub of the pages it kept, `auditor.workflows.sync`, holds them too); and the
interrupt carried to the threads of `run --orgs`, which no signal reaches (`Cancel`)."""

from __future__ import annotations

import signal
import sys
import threading
import time
import weakref
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from contextvars import ContextVar
from types import FrameType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import socket

#: The signals a command ends on: Ctrl-C, and SIGTERM (a CI runner's cancel or timeout).
LATE_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Terminated(KeyboardInterrupt):
    """Raised in the main thread when SIGTERM arrives; caught wherever Ctrl-C is."""


@contextmanager
def held() -> Iterator[None]:
    """Ctrl-C and SIGTERM held while inside: a short step that must not be cut in half (the
    reports a run wrote complete, removed once it is interrupted). One that came is raised as
    its interrupt when the step ends (unless the step ends with an exception of its own); one
    ignored (a background job, or after the last line) stays ignored. In another thread (one
    organization's of `run --orgs`), its `Cancel` is held so (`Cancelled` when the step ends)."""
    if threading.current_thread() is not threading.main_thread():
        _HOLDING.depth = getattr(_HOLDING, "depth", 0) + 1
        try:
            yield
        finally:
            _HOLDING.depth -= 1
        check_cancelled()
        return
    came: list[int] = []

    def hold(signum: int, _frame: FrameType | None) -> None:
        came.append(signum)

    previous: dict[int, Any] = {}
    for signum in LATE_SIGNALS:
        handler = signal.getsignal(signum)
        if handler is not signal.SIG_IGN and handler is not None:
            previous[signum] = signal.signal(signum, hold)
    try:
        yield
    finally:
        for held_signum, handler in previous.items():
            signal.signal(held_signum, handler)
    if came:
        raise Terminated if came[0] == signal.SIGTERM else KeyboardInterrupt


class Cancelled(KeyboardInterrupt):
    """Raised in a thread that audits one organization of `run --orgs` once the main thread
    got Ctrl-C or SIGTERM (`Cancel`): caught wherever Ctrl-C is, so the organization's sync
    and store end in that thread as a single run's interrupt ends them (its write rolled back,
    a first sync's store removed, its lock cleared)."""


class Cancel:
    """The interrupt of one organization's thread in `run --orgs`: only the main thread gets
    signals, and a thread's SQLite or PostgreSQL connection is its own, so the main thread
    sets this and the thread raises `Cancelled` itself at its next check point (`check`: a
    page, a store read or write; `check_network`: a network read or write, a wait between
    retries). The sockets it reads from (`watch`) are shut down at once, so a read waiting on
    a service that does not answer returns (shutting a socket down from another thread is
    safe: closing it is not)."""

    def __init__(self) -> None:
        self._set = threading.Event()
        self.cancelled = False  # (`_set`'s state, read as a plain value: checked per item)
        self._lock = threading.Lock()
        self._sockets: weakref.WeakSet[socket.socket] = weakref.WeakSet()
        self._raised: set[int] = set()  # the threads `Cancelled` was raised in

    def cancel(self) -> None:
        """Ask the thread to stop (from the main thread): its sockets are shut down."""
        import socket

        with self._lock:
            self.cancelled = True
            self._set.set()
            sockets = list(self._sockets)
        for sock in sockets:
            with suppress(OSError):  # (one closed meanwhile)
                # the socket's own, not an `SSLSocket`'s (which drops the TLS state the
                # thread is reading with)
                socket.socket.shutdown(sock, socket.SHUT_RDWR)

    def check(self) -> None:
        """`Cancelled` once `cancel` has been called: once in each thread, as one Ctrl-C
        raises one KeyboardInterrupt, and neither inside `held` nor while an exception is
        handled (what the thread does to end, rolling back and removing a first sync's store,
        is not cut short in turn)."""
        if not self.cancelled or _holding() or sys.exc_info()[0] is not None:
            return
        me = threading.get_ident()
        with self._lock:
            if me in self._raised:
                return
            self._raised.add(me)
        raise Cancelled

    def check_network(self) -> None:
        """`Cancelled` whenever `cancel` has been called: no request is made after it (the
        sockets are shut down), and none is part of how a thread ends."""
        if self.cancelled:
            raise Cancelled

    def watch(self, sock: socket.socket) -> None:
        """Shut `sock` down on `cancel` (`Cancelled` at once if it came already)."""
        with self._lock:
            if not self._set.is_set():
                self._sockets.add(sock)
                return
        raise Cancelled

    def wait(self, seconds: float) -> None:
        """Sleep `seconds` (between a request's tries), `Cancelled` once `cancel` is called."""
        if self._set.wait(seconds):
            raise Cancelled


#: How deep the current thread is in `held` steps (`run --orgs`' threads: their `Cancel` waits).
_HOLDING = threading.local()


def _holding() -> bool:
    depth: int = getattr(_HOLDING, "depth", 0)
    return depth > 0


#: The `Cancel` of the organization the current thread audits (`run --orgs`), or None; the
#: thread that fetches a page ahead runs in its caller's context, so it has it too.
_CANCEL: ContextVar[Cancel | None] = ContextVar("auditor_cancel", default=None)


@contextmanager
def cancellable(cancel: Cancel) -> Iterator[None]:
    """The work inside (one organization's audit, in its thread) stops at `cancel`."""
    token = _CANCEL.set(cancel)
    try:
        yield
    finally:
        _CANCEL.reset(token)


def check_cancelled() -> None:
    """`Cancelled` when the current thread's organization has been cancelled (a check point);
    nothing outside `cancellable` (a single run: Ctrl-C itself reaches its thread)."""
    cancel = _CANCEL.get()
    if cancel is not None:
        cancel.check()


def check_network() -> None:
    """`Cancelled` when the current thread's organization has been cancelled, every time
    (`Cancel.check_network`: a network read or write)."""
    cancel = _CANCEL.get()
    if cancel is not None:
        cancel.check_network()


def watch_socket(sock: socket.socket | None) -> None:
    """Shut `sock` down when the current thread's organization is cancelled (`Cancel.watch`)."""
    cancel = _CANCEL.get()
    if cancel is not None and sock is not None:
        cancel.watch(sock)


def pause(seconds: float) -> None:
    """`time.sleep`, cut short by the current thread's cancel (`Cancelled`)."""
    cancel = _CANCEL.get()
    if cancel is None:
        time.sleep(seconds)
    else:
        cancel.wait(seconds)


#: Threads that may still run when the command has ended: `run --orgs`' workers, one of
#: which an interrupt can leave in a step with no check point (named on stderr).
_OUTLIVING: weakref.WeakSet[threading.Thread] = weakref.WeakSet()


def may_outlive(thread: threading.Thread) -> threading.Thread:
    """`thread` (a daemon) may still be running when the command ends (`still_running`)."""
    _OUTLIVING.add(thread)
    return thread


def still_running(wait: float) -> bool:
    """A thread of `may_outlive` is still running after `wait` seconds in all (those ending
    are waited for)."""
    deadline = time.monotonic() + wait
    threads = list(_OUTLIVING)
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    return any(thread.is_alive() for thread in threads)
