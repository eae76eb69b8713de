"""The command line: parses argv, reads the environment and the clock, and hands them down.

Only this package (and `auditor.config`) reads the environment, the clock and argv. Each
subcommand's parser is built in `auditor.cli.parsers` (light: help and version import nothing
heavy) and its handler, `<function(args, ctx) -> int>`, lives in `auditor.cli.cmd_<name>`,
imported only when that command runs.
"""

from __future__ import annotations

import argparse
import codecs
import contextlib
import errno
import functools
import io
import os
import select
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TextIO, cast

from auditor import __version__
from auditor.cli import signals
from auditor.cli.parsers import REGISTER, SingleValue, value_problem
from auditor.cli.signals import interrupt_exit, sigterm_as_interrupt
from auditor.errors import EXIT_ERROR, OUT_OF_MEMORY

if TYPE_CHECKING:
    from _typeshed import SupportsWrite

#: stdout's reader went away (`auditor history | head`): 128 + SIGPIPE, as a shell reports a
#: command that pipe killed; nothing more is printed.
EXIT_BROKEN_PIPE = 141

COMMANDS = (
    "run",
    "review",
    "sync",
    "diff",
    "history",
    "policy",
    "export",
    "verify",
    "demo",
    "emulator",
)


def _utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass
class Context:
    """What a command may take from the outside world; tests pass their own."""

    env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    stdout: TextIO = field(default_factory=lambda: sys.stdout)
    stderr: TextIO = field(default_factory=lambda: sys.stderr)
    clock: Callable[[], datetime] = _utc_now
    cwd: str = field(default_factory=os.getcwd)
    #: The tokens the command has loaded (AUDITOR_TOKEN, a --token-file's, an organization's):
    #: never printed, whatever error carries them. Shared by the copies `replace` makes.
    tokens: set[str] = field(default_factory=set)
    #: The paths the command was given for its state file and report folder: in an error, a
    #: part of one that looks like a secret is left out (`auditor.cli.failure.hidden_paths`).
    paths: set[str] = field(default_factory=set)
    #: The SQLite state files the command was given, with the fingerprint key to open each:
    #: an error line leaves out what one of them remembers as a secret
    #: (`auditor.cli.failure.remembered_screen`). Shared by the copies `replace` makes.
    state_files: list[tuple[Path, bytes | None]] = field(default_factory=list)
    #: The service is this process's own emulator on a loopback port (`auditor demo`): it is
    #: reached directly, never through a configured proxy nor with a configured CA bundle.
    local_service: bool = False

    def secrets(self) -> set[str]:
        """Every token known so far, the environment's included."""
        return {self.env.get("AUDITOR_TOKEN", ""), *self.tokens}

    @property
    def interactive(self) -> bool:
        """True when stderr is a terminal (progress is shown only then)."""
        isatty = getattr(self.stderr, "isatty", None)
        return bool(isatty and isatty())


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The full argument parser with every subcommand registered (`only`: just that one, when
    argv names it, so a command imports only what it runs; its parsing is the same)."""
    parser = _Parser(
        prog="auditor",
        description="Audit an agent platform's enterprise control settings and readiness reports.",
    )
    parser.add_argument("--version", action="version", version=f"auditor {__version__}")
    parser.add_argument(
        "--debug",
        action="store_true",
        help="show the traceback of an unexpected error (anywhere on the line; or AUDITOR_DEBUG=1)",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in (only,) if only in COMMANDS else COMMANDS:
        REGISTER[name](sub)
    return parser


def main(argv: Sequence[str] | None = None, ctx: Context | None = None) -> int:
    """Run the command line; returns the exit code (design §9). Ctrl-C and SIGTERM are ignored
    from the command's last line on (`auditor.cli.signals.ignore_from_now`); for the `auditor`
    command until the process ends, for another caller (a test) until this returns."""
    try:
        return _main(argv, ctx)
    finally:
        if not signals.ignoring_until_exit:
            signals.heed_again()


def _main(argv: Sequence[str] | None, ctx: Context | None) -> int:
    ctx = ctx or Context()
    if ctx.stderr is None:  # closed (`2>&-`): nothing can say why, the exit code still does
        ctx = replace(ctx, stderr=open(os.devnull, "w"))  # noqa: SIM115 (the process's own)
    ctx = replace(ctx, stderr=cast(TextIO, _Stderr(ctx.stderr)))
    args_in = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args_in or ctx.env.get("AUDITOR_DEBUG", "") not in ("", "0")
    try:
        # Ctrl-C or SIGTERM while the arguments are read (a check of `-o pdf` loads WeasyPrint,
        # about a second) ends as it does in the command
        with sigterm_as_interrupt():
            parser = build_parser(_command_named(args_in))
            token = _TOKEN.set(ctx.env.get("AUDITOR_TOKEN", "").strip())
            try:
                args = parser.parse_args([a for a in args_in if a != "--debug"])
            finally:
                _TOKEN.reset(token)
    except SystemExit as exc:  # argparse exits 2 on usage errors, 0 on --help
        return _help_written(int(exc.code or 0), ctx)
    except OSError as exc:  # help or version could not be written (`_Parser`)
        return _help_unwritten(exc, ctx)
    except KeyboardInterrupt as exc:
        signals.ignore_from_now()  # the command ends here: its last line is next
        code, word = interrupt_exit(exc)
        print(f"auditor: exit {code}: {word}", file=ctx.stderr)
        return code
    args.debug = debug  # a command that reports failures itself (each --orgs organization)
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help(ctx.stderr)
        return EXIT_ERROR
    ctx = replace(ctx, stdout=cast(TextIO, _Stdout(ctx.stdout)))

    def command() -> int:
        try:
            code = int(handler(args, ctx))
        except KeyboardInterrupt:
            _run_interrupted_loading(args, ctx)
            raise
        ctx.stdout.flush()  # here, not at exit, so a full disk is reported (and exits 2)
        return code

    try:
        with sigterm_as_interrupt():
            code = _guarded(command, ctx, debug=debug)
        ctx.stderr.flush()
    except KeyboardInterrupt as exc:  # one in the few steps before `_guarded` ignores them
        signals.ignore_from_now()
        code, word = interrupt_exit(exc)
        print(f"auditor: exit {code}: {word}", file=ctx.stderr)
    except OSError:
        # stderr itself cannot be written (a full disk): nothing can say why, so the exit
        # code does, as for any error (not 1, which means findings, nor the interpreter's 120)
        _silence(sys.stderr)
        return EXIT_ERROR
    return code


class _Stderr:
    """The command's stderr, which ignores Ctrl-C and SIGTERM from the moment the command's
    last line (`auditor: exit N: …`, `auditor: error: …`) is written to it: a signal after that
    line changes neither the exit code nor the last line."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        if signals.is_last_line(text):
            signals.ignore_from_now()
        return self.stream.write(text)

    def __getattr__(self, name: str) -> Any:  # flush, isatty, fileno, encoding …
        return getattr(self.stream, name)


class StdoutError(Exception):
    """Standard output could not be written: a full disk, `/dev/full`, an I/O error."""


class _Stdout:
    """The command's stdout, whose write errors other than a broken pipe (`| head`, handled
    apart) are a `StdoutError`, so the guard can say what could not be written.

    A large text is handed to the text layer in pieces whose encoded size fits its chunk and
    its buffer. CPython's `TextIOWrapper` drops the count its buffered write returns, and that
    count comes up short without an error (a full disk, a reader gone) when one write is larger
    than the buffer and goes to the file directly: `auditor history --format json > full/file`
    exited 0, cut short. A piece that fits is buffered, and the buffer's flush writes again from
    where a short write stopped, so the real error is raised. Everything goes through the text
    layer: its encoding state (one BOM for utf-8-sig or utf-16), its newline translation, its
    line buffering, and the order of whatever else is written to the same stream.

    An unbuffered stdout (`PYTHONUNBUFFERED=1`, `python -u`: the text layer writes straight to
    the file, and drops each short count) is written through a text layer of its own, with the
    same encoding and a checked buffer, flushed after each write as the unbuffered one would be.
    A closed stdout (`>&-`, `sys.stdout` is None) is an error too.
    """

    def __init__(self, stream: TextIO | None) -> None:
        self.stream = stream
        self._writer = stream  # what is written to: the stream, or its checked text layer
        self._escape_for = _not_utf(getattr(stream, "encoding", None))
        # a stream that writes a file name's undecodable bytes back as they were (`LC_ALL=C`)
        self._escape = ESCAPE_KEEPING_BYTES if _keeps_bytes(stream) else ESCAPE
        self._file: _Unclosed | None = None  # an unbuffered stdout's file, under our buffer
        raw = getattr(stream, "buffer", None) if isinstance(stream, io.TextIOWrapper) else None
        if isinstance(raw, io.RawIOBase) and stream is not None:
            self._file = _Unclosed(raw)
            self._writer = io.TextIOWrapper(
                io.BufferedWriter(self._file),
                encoding=stream.encoding,
                errors=stream.errors,
                line_buffering=bool(stream.line_buffering),
            )

    def write(self, text: str) -> int:
        with _as_stdout_error():
            writer = self._writer
            if writer is None:
                raise OSError(errno.EBADF, os.strerror(errno.EBADF))
            if self._escape_for is not None:  # what it cannot hold, as `\uXXXX` escapes
                if not text.isascii():
                    text = _lossless(text, self._escape_for)
                encoded = text.encode(self._escape_for, self._escape)
                text = encoded.decode(self._escape_for, "surrogateescape")
            for start in range(0, len(text), _PIECE):
                writer.write(text[start : start + _PIECE])
            if self._file is not None:  # unbuffered: flushed as the original would be
                writer.flush()
            return len(text)

    def flush(self) -> None:
        if self._writer is None:
            return  # nothing was written (a write would have failed)
        with _as_stdout_error():
            self._writer.flush()

    def __del__(self) -> None:
        if self._file is not None:  # what a failed write left in its buffer is dropped
            self._file.dropping = True

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


#: The codec error handler that writes a character an encoding cannot hold as `\uXXXX` (a
#: surrogate pair beyond U+FFFF), as JSON escapes it: on a stdout that is not UTF (an ASCII or
#: Latin-1 locale, `PYTHONIOENCODING=ascii`) JSON stays valid JSON, equal to the UTF-8 one,
#: and text stays readable; `history` and `diff` (`…`, `→`) exited 2 there with "unexpected
#: UnicodeEncodeError".
ESCAPE = "auditor.uescape"
#: The same, but a byte Python read from an undecodable file name (U+DC80..U+DCFF, as
#: `surrogateescape` carries it) is written back as that byte, as the stream's own
#: `surrogateescape` would.
ESCAPE_KEEPING_BYTES = "auditor.uescape-surrogateescape"


def _uescape(exc: UnicodeError) -> tuple[str, int]:
    return _escaped(exc, keep_bytes=False)


def _uescape_keeping_bytes(exc: UnicodeError) -> tuple[str | bytes, int]:
    return _escaped(exc, keep_bytes=True)


def _escaped(exc: UnicodeError, *, keep_bytes: bool) -> tuple[Any, int]:
    if not isinstance(exc, UnicodeEncodeError):
        raise exc
    chars = exc.object[exc.start : exc.end]
    # the leading run of one kind (bytes kept, or escaped); the codec calls again for the rest
    kept = [keep_bytes and 0xDC80 <= ord(ch) <= 0xDCFF for ch in chars]
    run = next((i for i, k in enumerate(kept) if k != kept[0]), len(chars))
    if kept[0]:
        return bytes(ord(ch) - 0xDC00 for ch in chars[:run]), exc.start + run
    return _json_escapes(chars[:run]), exc.start + run


def _json_escapes(chars: str) -> str:
    """`chars` as JSON writes them escaped: `\\uXXXX` each, a surrogate pair beyond U+FFFF."""
    data = chars.encode("utf-16-be", "surrogatepass")
    return "".join(f"\\u{data[i] << 8 | data[i + 1]:04x}" for i in range(0, len(data), 2))


codecs.register_error(ESCAPE, _uescape)
codecs.register_error(ESCAPE_KEEPING_BYTES, _uescape_keeping_bytes)


def _lossless(text: str, encoding: str) -> str:
    """`text` with each character `encoding` writes as another one escaped as JSON escapes
    it: Shift_JIS and EUC-JP write the yen sign as the byte of a backslash and the overline
    as a tilde, without calling any error handler, so `"echo <yen>100"` became the invalid
    JSON `"echo <backslash>100"`."""
    lossy = {ch for ch in set(text) if not ch.isascii() and _changes(ch, encoding)}
    if not lossy:
        return text
    return "".join(_json_escapes(ch) if ch in lossy else ch for ch in text)


@functools.lru_cache(maxsize=4096)
def _changes(char: str, encoding: str) -> bool:
    """`encoding` holds `char` only as another character (it reads its bytes back otherwise)."""
    try:
        return char.encode(encoding).decode(encoding) != char
    except UnicodeError:
        return False  # not held at all: the error handler escapes it


def _keeps_bytes(stream: Any) -> bool:
    return getattr(stream, "errors", None) == "surrogateescape"


def _not_utf(encoding: str | None) -> str | None:
    """`encoding` if it is one that cannot hold every character (not UTF-8, -16 or -32)."""
    if not encoding:
        return None  # a text stream of str (StringIO): nothing is encoded
    try:
        name = codecs.lookup(encoding).name
    except LookupError:
        return None  # the stream would have failed to open with it
    return None if name.startswith("utf") else name


class _Unclosed(io.RawIOBase):
    """An unbuffered stdout's file under `_Stdout`'s own buffer, which never closes it."""

    def __init__(self, raw: io.RawIOBase) -> None:
        self.raw = raw
        self.dropping = False  # `_Stdout` is gone: its buffer's last flush writes nothing

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int | None:
        return len(data) if self.dropping else self.raw.write(data)

    def fileno(self) -> int:
        return self.raw.fileno()

    def isatty(self) -> bool:
        return self.raw.isatty()


#: The most characters handed to stdout's text layer at once: encoded (at most 16 bytes a
#: character, `\n` as utf-32 `\r\n`, a `\U0010ffff` escaped), no more than CPython's text
#: chunk and buffer (8192 bytes), so no piece skips the buffer's checked flush.
_PIECE = min(io.DEFAULT_BUFFER_SIZE, 8192) // 16


@contextlib.contextmanager
def _as_stdout_error() -> Iterator[None]:
    try:
        yield
    except BrokenPipeError:
        raise
    except OSError as exc:
        raise StdoutError(exc.strerror or str(exc)) from exc


#: The caller's own token while the arguments are read (`_Parser.error` never shows it).
_TOKEN: ContextVar[str] = ContextVar("auditor_cli_token", default="")


class _Parser(argparse.ArgumentParser):
    """argparse, except that a help or version text it cannot write is an error: argparse
    ignores the write's OSError, so `auditor --help > /dev/full` said nothing and exited 0
    when stdout was unbuffered (`PYTHONUNBUFFERED=1`); and that a usage error never shows an
    argument that looks like a secret."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # A flag that takes one value, given twice, is a usage error, not the last one kept
        # (the registry is shared with the argument groups; subcommands are `_Parser`s too).
        self.register("action", None, SingleValue)
        self.register("action", "store", SingleValue)

    def _get_value(self, action: argparse.Action, arg_string: str) -> Any:
        problem = value_problem(action, arg_string)
        if problem is not None:
            raise argparse.ArgumentError(action, problem)
        return super()._get_value(action, arg_string)

    def _print_message(self, message: str, file: SupportsWrite[str] | None = None) -> None:
        if message:
            if file is None:  # argparse's `sys.stdout`, closed (`auditor --help >&-`)
                raise OSError(errno.EBADF, os.strerror(errno.EBADF))
            file.write(message)

    def error(self, message: str) -> NoReturn:
        """argparse's usage error, with any word that looks like a secret (or is the caller's
        token) left out: a token typed as a word of the command (`auditor sync $TOKEN`, or
        after a flag that takes none) was echoed, `unrecognized arguments: ghp_…`, to the
        CI log."""
        from auditor.config import unshown  # only on a usage error

        super().error(unshown(message, (_TOKEN.get(),)))


def _help_written(code: int, ctx: Context) -> int:
    """`code`, once what argparse printed (help, version) is flushed; a full disk is an error
    (exit 2), a reader gone (`auditor --help | head -1`) exit 141, quietly."""
    try:
        if sys.stdout is not None:  # None: stdout closed (`>&-`), `_Parser` said so
            sys.stdout.flush()
    except OSError as exc:
        return _help_unwritten(exc, ctx)
    try:  # a usage error went to stderr: one that cannot be written is still exit 2, not 1
        if sys.stderr is not None:
            sys.stderr.flush()
    except OSError:
        _silence(sys.stderr)
        return EXIT_ERROR
    return code


def _help_unwritten(exc: OSError, ctx: Context) -> int:
    """Help or version text that could not be written: 141 quietly for a reader gone, else
    one line and exit 2."""
    _silence(sys.stdout)  # argparse writes to the process's stdout, whatever `ctx` holds
    if isinstance(exc, BrokenPipeError):
        return EXIT_BROKEN_PIPE
    return _stdout_unwritable(exc.strerror or str(exc), ctx)


def _stdout_unwritable(reason: str, ctx: Context) -> int:
    """stdout cannot be written (a full disk): one line, exit 2. What was written to the state
    file or reports stays; what stdout still holds is dropped (pointed at /dev/null), so the
    interpreter's flush at exit cannot fail again."""
    _silence(ctx.stdout)
    try:
        print(f"auditor: error: cannot write to standard output: {reason}", file=ctx.stderr)
    except OSError:  # stderr failed (argparse's usage error to a full disk): the code says it
        _silence(ctx.stderr)
    return EXIT_ERROR


def _command_named(args: Sequence[str]) -> str | None:
    """The subcommand argv names (its first word not starting with `-`), if any."""
    return next((a for a in args if not a.startswith("-")), None)


def _guarded(command: Callable[[], int], ctx: Context, *, debug: bool) -> int:
    """Every way a command can end becomes an exit code and one line on stderr (never 1 for
    an error, never a traceback unless --debug / AUDITOR_DEBUG=1 asks for it)."""
    try:
        return command()
    except KeyboardInterrupt as exc:
        # The command ends with this interrupt: a second one (Ctrl-C twice) before its last
        # line is out would end with a traceback
        signals.ignore_from_now()
        code, word = interrupt_exit(exc)
        print(f"auditor: exit {code}: {word}", file=ctx.stderr)
        return code
    except BrokenPipeError as exc:
        if _stdout_gone(ctx):  # `auditor history | head`: the reader has all it wanted
            return EXIT_BROKEN_PIPE
        return _reported(exc, ctx, debug=debug)
    except StdoutError as exc:
        return _stdout_unwritable(str(exc), ctx)
    except Exception as exc:
        return _reported(exc, ctx, debug=debug)


def _run_interrupted_loading(args: argparse.Namespace, ctx: Context) -> None:
    """`auditor run --out DIR` interrupted while its modules loaded (0.2 s), before its handler
    began: the earlier run's reports in DIR go, as its handler does for an interrupt while it
    loads the inputs (`auditor.cli.cmd_run.clear_if_not_begun`); they stayed, findings.sarif
    and `"complete": true`, beside exit 130."""
    out = getattr(args, "out_dir", None)
    if args.command != "run" or getattr(args, "run_begun", False) or not out or args.orgs:
        return
    with signals.held():  # (the import: a tenth of a second; a second signal waits for it)
        from auditor.cli.cmd_run import clear_if_not_begun

        clear_if_not_begun(Path(ctx.cwd) / out)


def _reported(exc: Exception, ctx: Context, *, debug: bool) -> int:
    """`report_failure` of an error, or, when Ctrl-C or SIGTERM lands while the error is being
    worded (hiding a path that looks like a secret loads the value detectors, a tenth of a
    second), the interrupt's one line and exit code, never a traceback. An error the wording
    itself cannot get past (out of memory: its own imports fail) is a fixed line, exit 2."""
    if out_of_memory(exc) and not debug:
        # what the failed allocation's frames held goes now; nothing is imported to say it
        exc.__traceback__ = None
        return _last_resort(exc, ctx)
    try:
        # Imported when an error is worded, not at start-up (`auditor --version`): it loads
        # the escaping and URL-scrubbing helpers (inside the `try`, so Ctrl-C or SIGTERM while
        # it loads ends as any interrupt does).
        from auditor.cli.failure import report_failure

        return report_failure(
            exc, ctx.stderr, ctx.secrets(), debug=debug, paths=ctx.paths, states=ctx.state_files
        )
    except KeyboardInterrupt as again:
        signals.ignore_from_now()
        code, word = interrupt_exit(again)
        print(f"auditor: exit {code}: {word}", file=ctx.stderr)
        return code
    except Exception as failed:  # its imports, under a memory limit (`ulimit -v`): exit 1, a
        return _last_resort(exc, ctx, debug=debug, failed=failed)  # traceback


def out_of_memory(exc: BaseException) -> bool:
    """`exc` is the process running out of memory: a `MemoryError`, ENOMEM, a module's shared
    library that could not be mapped (`ImportError: … failed to map segment from shared
    object`, what a `ulimit -v` gives an import), or an error that carries orjson's words for
    a parse it had no memory for (a stored row it made read as damage, a bundle's line as not
    valid JSON)."""
    if isinstance(exc, MemoryError):
        return True
    if isinstance(exc, OSError) and exc.errno == errno.ENOMEM:  # `Cannot allocate memory`
        return True
    if isinstance(exc, ImportError) and "failed to map segment" in str(exc.msg):
        return True
    # orjson's words for the memory a parse could not have, wrapped by whatever read the JSON
    # (a stored row read as damage, a bundle's line as not valid JSON): not their fault
    try:
        return _NO_PARSE_MEMORY in str(exc)
    except MemoryError:  # its text could not be made either
        return True


_NO_PARSE_MEMORY = "Not enough memory to allocate buffer for parsing"


def _last_resort(
    exc: BaseException, ctx: Context, *, debug: bool = False, failed: BaseException | None = None
) -> int:
    """One fixed line for `exc` (its type's name only: its text may quote a token, and hiding
    one needs imports), exit 2: what is said when wording the error failed too. With `debug`,
    the traceback first (of `exc` and of what `failed` as it was worded), as `report_failure`
    shows one, when it can be (its tokens hidden: `_debug_traceback`); the line then asks for
    no `--debug` already given."""
    try:
        if out_of_memory(exc):
            line = f"auditor: error: {OUT_OF_MEMORY}"
        elif debug and _debug_traceback(ctx, exc, failed):
            line = f"auditor: error: unexpected {type(exc).__name__} (the traceback is above)"
        else:
            line = f"auditor: error: unexpected {type(exc).__name__} (rerun with --debug or "
            line += "AUDITOR_DEBUG=1 for the traceback)"
        print(line, file=ctx.stderr)
    except Exception:  # no memory left to make or print even that: the bytes made at start-up
        with contextlib.suppress(Exception):
            ctx.stderr.flush()
            os.write(ctx.stderr.fileno(), _OUT_OF_MEMORY_BYTES)
    return EXIT_ERROR


def _debug_traceback(ctx: Context, exc: BaseException, failed: BaseException | None) -> bool:
    """Print the traceback of `exc`, then of what `failed` as it was worded, as
    `report_failure` prints one with `--debug`: the command's tokens, a database URL's password,
    a path's part that looks like a secret and what the state files remember as a secret left
    out. When the state files' memory cannot be read (what failed may be that very reading),
    the exceptions' texts are left out, their types and frames shown: a text may quote a
    remembered key. False, and nothing printed, when even that cannot be done (the imports it
    needs fail too)."""
    try:
        import traceback

        from auditor.cli.failure import hidden_paths, remembered_screen, scrubbed
        from auditor.common.escape import terminal_text

        # (`failed` raised while `exc` was handled holds it as its context: shown once)
        chain = [failed] if failed is not None and failed.__context__ is exc else [exc, failed]
        try:
            screen = remembered_screen(ctx.state_files)
        except Exception:
            texts = [line for one in chain if one is not None for line in _textless(one)]
        else:
            texts = [
                line
                for one in chain
                if one is not None
                for line in "".join(traceback.format_exception(one)).splitlines()
            ]
            if screen is not None:
                texts = screen("\n".join(texts)).splitlines()
        secrets = ctx.secrets()
        lines = [terminal_text(hidden_paths(scrubbed(line, secrets), ctx.paths)) for line in texts]
    except Exception:
        return False
    for line in lines:
        print(line, file=ctx.stderr)
    return True


def _textless(exc: BaseException) -> list[str]:
    """The traceback of `exc` (its cause or context first, as Python prints them) with each
    exception's type and frames and none of their texts."""
    import traceback

    lines: list[str] = []
    seen: set[int] = set()

    def add(one: BaseException) -> None:
        seen.add(id(one))
        if one.__cause__ is not None:
            link, words = one.__cause__, _CAUSE_WORDS
        elif one.__context__ is not None and not one.__suppress_context__:
            link, words = one.__context__, _CONTEXT_WORDS
        else:
            link = None
        if link is not None and id(link) not in seen:
            add(link)
            lines.extend(["", words, ""])
        if one.__traceback__ is not None:
            lines.append("Traceback (most recent call last):")
            lines.extend("".join(traceback.format_tb(one.__traceback__)).splitlines())
        kind, module = type(one), type(one).__module__
        named = (
            kind.__qualname__
            if module in ("builtins", "__main__")
            else f"{module}.{kind.__qualname__}"
        )
        lines.append(f"{named}: (its text not shown: {_UNSCREENED})")

    add(exc)
    return lines


#: How Python's traceback joins an exception to its cause or to its context.
_CAUSE_WORDS = "The above exception was the direct cause of the following exception:"
_CONTEXT_WORDS = "During handling of the above exception, another exception occurred:"
_UNSCREENED = "the state file's memory of secrets could not be read to screen it"


#: The out-of-memory line, encoded once at start-up: written with no allocation to speak of.
_OUT_OF_MEMORY_BYTES = f"auditor: error: {OUT_OF_MEMORY}\n".encode()


def _stdout_gone(ctx: Context) -> bool:
    """True when stdout's reader has gone away (then stdout is pointed at /dev/null, so the
    interpreter's own flush at exit does not complain about it either)."""
    try:
        fd = ctx.stdout.fileno()
    except (OSError, ValueError, AttributeError):
        return False  # an in-memory stream cannot lose its reader
    poller = select.poll()
    poller.register(fd, select.POLLOUT)
    if not any(events & select.POLLERR for _, events in poller.poll(0)):
        return False  # stdout is fine: the broken pipe was another one's
    _silence(ctx.stdout)
    return True


def _silence(stream: TextIO) -> None:
    """Point the process's stdout or stderr at /dev/null, when `stream` is (or wraps) it, so
    the interpreter's flush at exit does not fail again."""
    target = getattr(stream, "stream", stream)
    if target is not None and (target is sys.stdout or target is sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, target.fileno())
            os.close(devnull)
