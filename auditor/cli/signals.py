"""SIGTERM handled like Ctrl-C: CI runners send it on cancel or timeout, and a job must still
leave its partial reports and an honest exit code (143 = 128 + SIGTERM)."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

# (defined below the stages, for every one of them; the CLI's names for them)
from auditor.common.interrupts import LATE_SIGNALS
from auditor.common.interrupts import Terminated as Terminated
from auditor.common.interrupts import held as held
from auditor.errors import EXIT_INTERRUPTED

EXIT_TERMINATED = 128 + signal.SIGTERM

#: The handlers SIGINT and SIGTERM had before the command's last line was said
#: (`ignore_from_now`), to put back when `main` returns to a caller that goes on (a test).
_BEFORE_LAST_LINE: dict[int, Any] = {}
_LATE_SIGNALS = LATE_SIGNALS


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
        if signal.SIGTERM in _BEFORE_LAST_LINE:  # ignored since the last line: it stays so
            _BEFORE_LAST_LINE[signal.SIGTERM] = previous
        else:
            signal.signal(signal.SIGTERM, previous)


#: Set by the `auditor` command (`auditor.__main__`): once ignored, Ctrl-C and SIGTERM stay
#: ignored until the process ends (`main` does not put their handlers back).
ignoring_until_exit = False


def ignore_from_now() -> None:
    """The command's last line (`auditor: exit N: …`, `auditor: error: …`) is being said: from
    now on Ctrl-C and SIGTERM are ignored, so one that lands after it (a wrapper forwarding a
    cancel, a second Ctrl-C) changes neither the exit code nor the last line: it was a
    `KeyboardInterrupt` traceback, a second `exit 143` line, exit 1 or death by the signal."""
    if threading.current_thread() is not threading.main_thread():
        return  # (only the main thread may set a handler; it says the last line)
    for signum in _LATE_SIGNALS:
        if signum not in _BEFORE_LAST_LINE:
            _BEFORE_LAST_LINE[signum] = signal.signal(signum, signal.SIG_IGN)


def last_line_said() -> bool:
    """The command's last line has been said (and Ctrl-C and SIGTERM are ignored)."""
    return bool(_BEFORE_LAST_LINE)


def heed_again() -> None:
    """Put back the handlers `ignore_from_now` replaced (`main` returning to a caller that goes
    on; the `auditor` command itself keeps them ignored until the process ends)."""
    while _BEFORE_LAST_LINE:
        signum, handler = _BEFORE_LAST_LINE.popitem()
        if handler is not None:  # (one not set from Python cannot be put back)
            signal.signal(signum, handler)


def is_last_line(text: str) -> bool:
    """`text` (one write to stderr) is a command's last line."""
    return text.startswith(("auditor: exit ", "auditor: error: "))


def interrupt_exit(exc: KeyboardInterrupt) -> tuple[int, str]:
    """The exit code and the word for an interruption: 143 `terminated` or 130 `interrupted`."""
    if isinstance(exc, Terminated):
        return EXIT_TERMINATED, "terminated (SIGTERM)"
    return EXIT_INTERRUPTED, "interrupted"
