"""`python -m auditor` and the `auditor` command: the command line, with Ctrl-C while the
program is still loading ending as any interrupt does (exit 130, one line, no traceback)."""

from __future__ import annotations

import _thread
import contextlib
import gc
import signal
import sys
import threading
from types import FrameType


def entry() -> int:
    """Load the command line and run it; a Ctrl-C during the loading exits 130."""
    sys.unraisablehook = _unraisable
    try:
        with _loading():
            _load_orjson()
            from auditor.cli import main
    except KeyboardInterrupt:  # before `main` guards anything: imports take a tenth of a second
        print("auditor: exit 130: interrupted", file=sys.stderr)
        return 130  # `auditor.errors.EXIT_INTERRUPTED`, not imported: loading is what stopped
    code = main()
    _ignore_late_signals()
    # What is alive now lives until the process ends: set aside, the collections the
    # interpreter makes as it shuts down do not walk it all (a nightly's ~1 million objects,
    # 20-40 ms). Nothing is left unwritten by it: reports, the state file and the HTTP
    # connections are closed by the commands themselves, and standard output is flushed by
    # the interpreter whatever the collector does.
    gc.freeze()
    return code


def _unraisable(info: sys.UnraisableHookArgs) -> None:
    """A Ctrl-C that lands in a callback Python cannot raise from (a weak reference's, a
    `__del__`, run by the garbage collector) was printed as `Exception ignored in: …
    Traceback …` and lost: it is delivered again, where the command handles it (exit 130)."""
    if isinstance(info.exc_value, KeyboardInterrupt):
        _thread.interrupt_main()  # (nothing if SIGINT is ignored by then: the command ended)
        return
    sys.__unraisablehook__(info)


def _loading() -> contextlib.AbstractContextManager[None]:
    """`auditor.common.collector.loading`: fewer garbage collections while the command line
    loads."""
    from auditor.common.collector import loading

    return loading()


def _ignore_late_signals() -> None:
    """The command has ended and its exit code is set: Ctrl-C or SIGTERM while the interpreter
    shuts down (tens of milliseconds) is ignored, so it cannot turn a finished command (an
    export whose bundle is complete) into a process killed by the signal, or a traceback."""
    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, signal.SIG_IGN)


def _load_orjson() -> None:
    """Import orjson with Ctrl-C held until it is loaded: interrupted while its extension
    module sets itself up, the process crashed (SIGSEGV, orjson 3.13 on CPython 3.11)."""
    held: list[int] = []

    def hold(signum: int, _frame: FrameType | None) -> None:
        held.append(signum)

    previous = signal.getsignal(signal.SIGINT)
    # Ignored from the start (a background job) it stays ignored; a handler not set from Python
    # (None) cannot be put back, and only the main thread may set one: left alone then
    main_thread = threading.current_thread() is threading.main_thread()
    holding = main_thread and previous is not signal.SIG_IGN and previous is not None
    if holding:
        signal.signal(signal.SIGINT, hold)
    try:
        import orjson  # noqa: F401
    finally:
        if holding:
            signal.signal(signal.SIGINT, previous)
    if held:
        raise KeyboardInterrupt


if __name__ == "__main__":
    raise SystemExit(entry())
