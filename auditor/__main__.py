"""`python -m auditor` and the `auditor` command: the command line, with Ctrl-C while the
program is still loading ending as any interrupt does (exit 130, one line, no traceback)."""

from __future__ import annotations

try:  # a Ctrl-C while this module's own imports load (its first ~20 ms): one line, exit 130
    import _thread
    import contextlib
    import gc
    import os
    import signal
    import sys
    import threading
    from collections.abc import Callable
    from types import FrameType
    from typing import Any

    from auditor.errors import OUT_OF_MEMORY  # (no import of its own)
except KeyboardInterrupt:  # (T99 #8: Python's traceback through `from typing import Any`)
    import sys

    print("auditor: exit 130: interrupted", file=sys.stderr)
    raise SystemExit(130) from None


class _Terminated(KeyboardInterrupt):
    """SIGTERM while the command line loads (`auditor.cli.signals.Terminated` is not loaded
    yet: importing it loads the command line)."""


def _raise_terminated(_signum: int, _frame: FrameType | None) -> None:
    raise _Terminated


def entry() -> int:
    """Load the command line and run it; a Ctrl-C during the loading exits 130, a SIGTERM
    143, each with its one line (SIGTERM ended the process without a word: a CI job cancelled
    as it started)."""
    sys.unraisablehook = _unraisable
    previous = _handle(signal.SIGTERM, _raise_terminated)
    try:
        with _loading():
            _fix_mmap_threshold()
            _load_orjson()
            from auditor.cli import main, signals

            signals.ignoring_until_exit = True  # from the command's last line on
    except BaseException as exc:  # before `main` guards anything: imports take 0.1 s
        interrupt = _interrupt(exc)
        if interrupt is None:
            return _failed(exc)
        # `auditor.errors.EXIT_INTERRUPTED` and `auditor.cli.signals.EXIT_TERMINATED` (not
        # imported: loading is what stopped), and their words
        terminated = isinstance(interrupt, _Terminated)
        word = "143: terminated (SIGTERM)" if terminated else "130: interrupted"
        print(f"auditor: exit {word}", file=sys.stderr)
        return 143 if terminated else 130
    finally:
        if previous is not None:  # `main` installs its own (a SIGTERM in between: the default)
            signal.signal(signal.SIGTERM, previous)
    try:
        code = main()
    except Exception as exc:  # outside the command's guard (argv read under a memory limit)
        code = _failed(exc)
    global _command_ended
    _command_ended = True
    _ignore_late_signals()
    # What is alive now lives until the process ends: set aside, the collections the
    # interpreter makes as it shuts down do not walk it all (a nightly's ~1 million objects,
    # 20-40 ms). Nothing is left unwritten by it: reports, the state file and the HTTP
    # connections are closed by the commands themselves, and standard output is flushed by
    # the interpreter whatever the collector does.
    gc.freeze()
    if _outlived():
        # A `run --orgs` worker an interrupt left in a step with no check point (named on
        # stderr) would be stopped by the interpreter's shutdown where it stands: inside
        # RE2's C++ that aborts the process (`terminate called without an active exception`,
        # exit 134 after the command's last line). Its outputs flushed, the process ends now.
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(code)
    return code


def _fix_mmap_threshold() -> None:
    """`auditor.common.heap.fix_thresholds`, first of all (it loads `ctypes` for glibc's
    `mallopt`, 2-3 ms, and nothing where that cannot be loaded)."""
    from auditor.common.heap import fix_thresholds

    fix_thresholds()


def _outlived() -> bool:
    """A thread that may outlive the command (`auditor.common.interrupts.may_outlive`) is
    still running a moment after it ended (not imported: only `run --orgs` starts one)."""
    interrupts = sys.modules.get("auditor.common.interrupts")
    return interrupts is not None and bool(interrupts.still_running(0.2))


def _failed(exc: BaseException) -> int:
    """Exit 2 and one fixed line for an error the command line's own guard never saw (the
    loading ran out of memory: `ulimit -v`), not Python's traceback and exit 1, which means
    findings; the traceback with `--debug` or AUDITOR_DEBUG=1. Nothing is imported for it."""
    if _debug():
        raise exc
    mapped = isinstance(exc, ImportError) and "failed to map segment" in str(exc.msg)
    if isinstance(exc, MemoryError) or mapped:  # `auditor.cli.out_of_memory` (not imported)
        line = OUT_OF_MEMORY
    else:
        line = f"unexpected {type(exc).__name__} (rerun with --debug or AUDITOR_DEBUG=1 for the "
        line += "traceback)"
    exc.__traceback__ = None
    try:
        print(f"auditor: error: {line}", file=sys.stderr)
    except Exception:  # no memory left to print it: the bytes made at start-up, unbuffered
        with contextlib.suppress(Exception):
            sys.stderr.flush()
            os.write(2, _OUT_OF_MEMORY)
    return 2  # `auditor.errors.EXIT_ERROR`


_OUT_OF_MEMORY = f"auditor: error: {OUT_OF_MEMORY}\n".encode()  # (made at start-up)


def _interrupt(exc: BaseException) -> KeyboardInterrupt | None:
    """The Ctrl-C or SIGTERM behind `exc`: itself, or the cause it carries. Python 3.11 wraps
    one that lands while a class is made (a dataclass's fields, `__set_name__`) in
    `RuntimeError: Error calling __set_name__ …`, which ended the loading with a traceback
    and exit 1."""
    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None or isinstance(seen, KeyboardInterrupt):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


def _unraisable(info: sys.UnraisableHookArgs) -> None:
    """A Ctrl-C that lands in a callback Python cannot raise from (a weak reference's, a
    `__del__`, run by the garbage collector) was printed as `Exception ignored in: …
    Traceback …` and lost: it is delivered again, where the command handles it (exit 130)."""
    if isinstance(info.exc_value, KeyboardInterrupt):
        _thread.interrupt_main()  # (nothing if SIGINT is ignored by then: the command ended)
        return
    if _ended() and not _debug():
        # Its last line said, the command's reason stays the last line: a cleanup's error from
        # a finalizer run after it (an interrupted transaction's generator collected once its
        # database was closed: `Exception ignored … Cannot operate on a closed database` after
        # `auditor: exit 143`) is printed with --debug only.
        return
    sys.__unraisablehook__(info)


_command_ended = False  # `main` has returned (set by `entry`)


def _ended() -> bool:
    """The command has said its last line, or returned."""
    signals = sys.modules.get("auditor.cli.signals")
    return _command_ended or bool(signals is not None and signals.last_line_said())


def _debug() -> bool:
    """`--debug` on the command line, or AUDITOR_DEBUG=1."""
    return "--debug" in sys.argv[1:] or os.environ.get("AUDITOR_DEBUG", "") not in ("", "0")


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


def _handle(signum: int, handler: Callable[[int, FrameType | None], None]) -> Any:
    """Install `handler` for `signum` and give the handler it replaces; None, and nothing
    installed, when the signal is ignored from the start (a background job: it stays ignored),
    its handler was not set from Python (it could not be put back) or this is not the main
    thread (only it may set one)."""
    previous = signal.getsignal(signum)
    if (
        threading.current_thread() is not threading.main_thread()
        or previous is signal.SIG_IGN
        or previous is None
    ):
        return None
    signal.signal(signum, handler)
    return previous


def _load_orjson() -> None:
    """Import orjson with Ctrl-C and SIGTERM held until it is loaded: interrupted while its
    extension module sets itself up, the process crashed (SIGSEGV, orjson 3.13 on CPython
    3.11). A signal held is sent again once it is loaded, to the handler it had."""
    held: list[int] = []

    def hold(signum: int, _frame: FrameType | None) -> None:
        held.append(signum)

    previous = {signum: _handle(signum, hold) for signum in (signal.SIGINT, signal.SIGTERM)}
    try:
        import orjson  # noqa: F401
    finally:
        for signum, handler in previous.items():
            if handler is not None:
                signal.signal(signum, handler)
    for again in dict.fromkeys(held):  # each once, now its own handler is back
        signal.raise_signal(again)


if __name__ == "__main__":
    raise SystemExit(entry())
