"""Files the one safe way: input read only from a regular file under a size cap, output
written atomically so a reader never sees half a report."""

from __future__ import annotations

import os
import stat
import tempfile
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
    stays so). mkstemp's own 0600 made every report and bundle file private whatever the
    umask, and each rewrite reset a mode set by hand."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, _mode_for(path))
        fh: IO[Any] = (
            os.fdopen(fd, "wb") if binary else os.fdopen(fd, "w", encoding="utf-8", newline="\n")
        )
        with fh:
            yield fh
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


#: The modes of files removed to be written again (an earlier run's reports, which `run` and
#: `review` clear first): the new file takes its predecessor's mode, as a file rewritten does.
_KEPT_MODES: dict[str, int] = {}


def keep_mode(path: Path) -> None:
    """Remember the mode of `path` (a regular file, or one a symlink names) before it is
    removed, for the file `atomic_open` writes there next."""
    try:
        info = os.stat(path)
    except OSError:
        return
    if stat.S_ISREG(info.st_mode):
        _KEPT_MODES[os.path.abspath(path)] = stat.S_IMODE(info.st_mode) & 0o777


def _mode_for(path: Path) -> int:
    """The permission bits `path` keeps if it exists (a regular file, or one a symlink names)
    or had before it was cleared (`keep_mode`), else a new file's: 0666 less the umask."""
    kept = _KEPT_MODES.pop(os.path.abspath(path), None)
    try:
        info = os.stat(path)
    except OSError:
        info = None
    if info is not None and stat.S_ISREG(info.st_mode):
        return stat.S_IMODE(info.st_mode) & 0o777
    return kept if kept is not None else 0o666 & ~_umask()


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


def read_input(path: Path, *, max_bytes: int) -> bytes:
    """The bytes of a regular file of at most `max_bytes`; UnreadableFile otherwise.

    Opened without blocking, so a FIFO is refused instead of waiting for a writer; the type
    is checked on the open descriptor (a symlink to /dev/zero is judged by its target), and
    the cap holds while reading, for files whose size the system does not know (/proc).
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


def byte_position(raw: bytes, index: int) -> tuple[int, int]:
    """The 1-based line and column (in characters, as an editor counts them) of byte `index`
    of `raw`, whose bytes before it are UTF-8: where a file stops being UTF-8 text. A
    byte-order mark at the start is not a column."""
    start = raw.rfind(b"\n", 0, index) + 1
    before = raw[start:index].decode("utf-8", "replace")
    if start == 0:
        before = before.removeprefix("\ufeff")
    return raw.count(b"\n", 0, index) + 1, len(before) + 1
