"""SIGTERM handled like Ctrl-C: CI runners send it on cancel or timeout, and a job must still
leave its partial reports and an honest exit code (143 = 128 + SIGTERM)."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

from auditor.errors import EXIT_INTERRUPTED

EXIT_TERMINATED = 128 + signal.SIGTERM


class Terminated(KeyboardInterrupt):
    """Raised in the main thread when SIGTERM arrives; caught wherever Ctrl-C is."""


def _raise_terminated(_signum: int, _frame: FrameType | None) -> None:
    raise Terminated


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """While inside, SIGTERM raises `Terminated` (only the main thread can install handlers)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def interrupt_exit(exc: KeyboardInterrupt) -> tuple[int, str]:
    """The exit code and the word for an interruption: 143 `terminated` or 130 `interrupted`."""
    if isinstance(exc, Terminated):
        return EXIT_TERMINATED, "terminated (SIGTERM)"
    return EXIT_INTERRUPTED, "interrupted"
