"""Files the one safe way: input read only from a regular file under a size cap, output
written atomically so a reader never sees half a report."""

from __future__ import annotations

import os
import stat
import tempfile
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any


@contextmanager
def atomic_open(path: Path, *, binary: bool = False) -> Iterator[IO[Any]]:
    """A file opened for writing beside `path` (text as UTF-8 with `\\n` line ends, or bytes)
    that replaces `path` only when the block ends without an exception: readers see the old
    file or the whole new one, and a failed write leaves no temporary file behind.

    The file's mode is what any tool's would be: a new file's is 0666 less the umask (0644
    under the usual 022), and a file rewritten keeps its mode (a report made group-readable
    stays so; see `_own_mode` for what is not kept). mkstemp's own 0600 made every report and
    bundle file private whatever the umask, and each rewrite reset a mode set by hand."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, _mode_for(path))
        fh: IO[Any] = (
            os.fdopen(fd, "wb") if binary else os.fdopen(fd, "w", encoding="utf-8", newline="\n")
        )
        with fh:
            yield fh
        os.replace(tmp, path)
    except BaseException:  # (a kept mode stays kept: the file is written again, the same mode)
        Path(tmp).unlink(missing_ok=True)
        raise
    with _KEPT_LOCK:  # taken by the file now there
        _KEPT_MODES.pop(os.path.abspath(path), None)


#: The modes of files removed to be written again (an earlier run's reports, which `run` and
#: `review` clear first): the new file takes its predecessor's mode, as a file rewritten does.
#: An entry lives for one command: taken by the file written there once it is in place
#: (`atomic_open`: a write that failed or was interrupted leaves it for the file written
#: again, marked incomplete, after a full disk or an interrupt), or dropped when the command
#: ends (`forget_modes`), so a later run in the same process never gets a mode from an older
#: one.
_KEPT_MODES: dict[str, int] = {}
_KEPT_LOCK = threading.Lock()  # `run --orgs` clears and writes organizations' folders at once


def keep_mode(path: Path) -> None:
    """Remember the mode of `path` (a regular file the process's user owns; never a symlink's
    target) before it is removed, for the file `atomic_open` writes there next."""
    key = os.path.abspath(path)
    mode = _own_mode(path)
    with _KEPT_LOCK:
        if mode is None:
            _KEPT_MODES.pop(key, None)
        else:
            _KEPT_MODES[key] = mode


def forget_modes(folder: Path) -> None:
    """Drop the kept modes of files in `folder`: the run that cleared them is over (or a new
    one starts), and what it did not write again starts anew, 0666 less the umask."""
    inside = os.path.join(os.path.abspath(folder), "")  # its subfolders too (`run --orgs`)
    with _KEPT_LOCK:
        for key in [k for k in _KEPT_MODES if k.startswith(inside)]:
            del _KEPT_MODES[key]


@contextmanager
def modes_forgotten_after(folder: Path) -> Iterator[None]:
    """`forget_modes(folder)` when the block ends, however it ends: a command that cleared the
    reports there (`clear_old_reports`, keeping their modes) lets no kept mode outlive it. The
    block is the whole command: every report it writes again (marked incomplete, after a full
    disk or an interrupt) is written inside it, so each keeps its predecessor's mode."""
    try:
        yield
    finally:
        forget_modes(folder)


def _own_mode(path: Path) -> int | None:
    """The mode a file written at `path` keeps from what is there: only a regular file (not
    followed through a symlink: a link's target may be anyone's file and is never touched, so
    its mode is not copied either) owned by the process's user (another user's mode is not
    ours to copy). Never execute bits, and write for others only where the umask would give
    it to a new file: a report is evidence, and a file anyone can write (a `chmod 777` once,
    or one made under `umask 0`) is not carried from run to run. Group write is kept, the
    team-sharing `chmod 664` README describes."""
    try:
        info = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISREG(info.st_mode):
        return None
    geteuid = getattr(os, "geteuid", None)
    if geteuid is not None and info.st_uid != geteuid():
        return None
    return stat.S_IMODE(info.st_mode) & (0o664 | (0o002 & ~_umask()))


def _mode_for(path: Path) -> int:
    """The permission bits the file written at `path` gets: those of the file there now or
    cleared before (`keep_mode`), as `_own_mode` allows, else a new file's: 0666 less the
    umask (also in place of a symlink, which the new file replaces)."""
    with _KEPT_LOCK:  # (left kept until the file is in place: `atomic_open`)
        kept = _KEPT_MODES.get(os.path.abspath(path))
    try:
        os.lstat(path)
    except OSError:
        return kept if kept is not None else 0o666 & ~_umask()
    mode = _own_mode(path)  # something is there now: it decides, not an older run's file
    return mode if mode is not None else 0o666 & ~_umask()


def _umask() -> int:
    """The process's umask, read without changing it where the system says it (Linux's
    /proc/self/status); elsewhere set and put back at once."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_atomic(path: Path, data: str | bytes | Iterable[str]) -> None:
    """Write text (UTF-8, or a stream of text chunks) or exact bytes (a PDF, a copied input
    file) through `atomic_open`."""
    with atomic_open(path, binary=isinstance(data, bytes)) as fh:
        if isinstance(data, bytes | str):
            fh.write(data)
        else:
            fh.writelines(data)


class UnreadableFile(Exception):
    """An input file refused before or while reading; `reason` says why, without the path."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def _open_input(path: Path, max_bytes: int) -> int:
    """An open descriptor of `path`, a regular file of at most `max_bytes` by its size;
    UnreadableFile otherwise (nothing left open).

    Opened without blocking, so a FIFO is refused instead of waiting for a writer; the type
    is checked on the open descriptor (a symlink to /dev/zero is judged by its target). The
    size the system gives may be wrong (0 for /proc files): the reader holds the cap too.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise UnreadableFile(exc.strerror or str(exc)) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise UnreadableFile(f"{_kind(info.st_mode)}, not a regular file")
        if info.st_size > max_bytes:
            raise UnreadableFile(f"file is {info.st_size} bytes; the limit is {max_bytes}")
    except OSError as exc:
        os.close(fd)
        raise UnreadableFile(exc.strerror or str(exc)) from None
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_input(path: Path, *, max_bytes: int) -> bytes:
    """The bytes of a regular file of at most `max_bytes`; UnreadableFile otherwise.

    Checked as `_open_input` checks it (a FIFO is refused, not waited on; a symlink to
    /dev/zero is judged by its target), and the cap holds while reading, for files whose
    size the system does not know (/proc).
    """
    fd = _open_input(path, max_bytes)
    try:
        return _read_capped(fd, max_bytes)
    except OSError as exc:
        raise UnreadableFile(exc.strerror or str(exc)) from None
    finally:
        os.close(fd)


def _read_capped(fd: int, max_bytes: int) -> bytes:
    chunks: list[bytes] = []
    total = 0
    while chunk := os.read(fd, min(1 << 20, max_bytes + 1 - total)):
        total += len(chunk)
        if total > max_bytes:
            raise UnreadableFile(f"file is larger than the limit of {max_bytes} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


@contextmanager
def input_lines(
    path: Path, *, max_bytes: int, line_max: int | None = None
) -> Iterator[Iterator[bytes]]:
    """The lines of a regular file of at most `max_bytes` (each with its `\\n`), read a block
    at a time, for a file too large to hold whole; UnreadableFile otherwise, before or while
    reading: `read_input`'s checks (`_open_input`), and the cap held while reading. With
    `line_max`, a line longer than that (its `\\n` apart) is `LineTooLong` once its first
    `line_max + 1` bytes are read (never held whole)."""
    with os.fdopen(_open_input(path, max_bytes), "rb") as fh:
        yield _capped_lines(fh, max_bytes, line_max)


class LineTooLong(UnreadableFile):
    """A line of an input file longer than the caller's `line_max` (`input_lines`)."""


def _capped_lines(fh: IO[bytes], max_bytes: int, line_max: int | None) -> Iterator[bytes]:
    total = 0
    try:
        while line := fh.readline(
            min(max_bytes + 1 - total, (line_max or max_bytes) + 1),
        ):
            total += len(line)
            if total > max_bytes:
                raise UnreadableFile(f"file is larger than the limit of {max_bytes} bytes")
            if line_max is not None and len(line) > line_max and not line.endswith(b"\n"):
                raise LineTooLong(f"a line longer than the limit of {line_max:,} bytes")
            yield line
    except OSError as exc:
        raise UnreadableFile(exc.strerror or str(exc)) from None


def byte_position(raw: bytes, index: int) -> tuple[int, int]:
    """The 1-based line and column (in characters, as an editor counts them) of byte `index`
    of `raw`, whose bytes before it are UTF-8: where a file stops being UTF-8 text. A
    byte-order mark at the start is not a column."""
    start = raw.rfind(b"\n", 0, index) + 1
    before = raw[start:index].decode("utf-8", "replace")
    if start == 0:
        before = before.removeprefix("\ufeff")
    return raw.count(b"\n", 0, index) + 1, len(before) + 1


def path_under(real: str, root: str) -> str | None:
    """`real` (a resolved path) from `root` (`deploy/ec.yaml`) when it lies below it; None
    when not, when it is `root` itself, or when there is no root."""
    if not root:
        return None
    base = os.path.realpath(root)
    if os.path.commonpath((base, real)) == base and real != base:
        return Path(os.path.relpath(real, base)).as_posix()
    return None
