"""Ctrl-C and SIGTERM held over a short step that must not be cut in half, for every stage
(the CLI's `auditor.cli.signals` handles SIGTERM like Ctrl-C, raising `Terminated`; a sync's
last scrub of the pages it kept, `auditor.workflows.sync`, holds them too)."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

#: The signals a command ends on: Ctrl-C, and SIGTERM (a CI runner's cancel or timeout).
LATE_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Terminated(KeyboardInterrupt):
    """Raised in the main thread when SIGTERM arrives; caught wherever Ctrl-C is."""


@contextmanager
def held() -> Iterator[None]:
    """Ctrl-C and SIGTERM held while inside: a short step that must not be cut in half (the
    reports a run wrote complete, removed once it is interrupted). One that came is raised as
    its interrupt when the step ends (unless the step ends with an exception of its own); one
    ignored (a background job, or after the last line) stays ignored."""
    if threading.current_thread() is not threading.main_thread():
        yield
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
