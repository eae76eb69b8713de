"""`auditor … | head`: when stdout's reader goes away, the command ends quietly with 141
(128 + SIGPIPE, what a shell reports for a command that pipe ended), not with
`auditor: error: unexpected BrokenPipeError` and exit 2."""

from __future__ import annotations

import errno
import io
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest


@pytest.mark.parametrize(
    "argv",
    [["policy", "schema"], ["policy", "test"], ["history", "--state", "{state}"]],
    ids=["policy-schema", "policy-test", "history"],
)
def test_a_reader_that_goes_away_ends_the_command_quietly(
    tmp_path: Path, argv: list[str], small_state: Path
) -> None:
    argv = [a.replace("{state}", str(small_state)) for a in argv]
    env = {k: v for k, v in os.environ.items() if k != "AUDITOR_DEBUG"}
    with subprocess.Popen(
        [sys.executable, "-m", "auditor", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=tmp_path,
        env=env,
    ) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        proc.stdout.close()  # the reader is gone before anything is written
        err = proc.stderr.read().decode()
        code = proc.wait(timeout=60)
    assert (code, err) == (141, ""), err


@pytest.fixture
def small_state(tmp_path: Path) -> Path:
    """A state file a sync found nothing for (history prints its header and `(no matching
    revisions)`; one no sync completed into is refused)."""
    from datetime import UTC, datetime

    from auditor.store import Store

    path = tmp_path / "state.db"
    now = datetime(2026, 11, 1, tzinfo=UTC)
    with Store.open(path, create=True) as store, store.transaction():
        sync_id = store.begin_sync(now, "http://127.0.0.1:1")
        store.finish_sync(sync_id, now, revisions_new=0, reports_new=0, pages=1)
    return path


# A stdout that cannot be written (a full disk; `/dev/full` fails every write with ENOSPC):
# one line naming it and exit 2, buffered or not. The interpreter's own flush at exit used to
# print "Exception ignored … OSError" and exit 120, after `run` had said "exit 0".
_FULL_STDOUT = {
    "help": ["--help"],
    "version": ["--version"],
    "history-help": ["history", "--help"],
    "policy-schema": ["policy", "schema"],
    "history": ["history", "--state", "{state}"],
    "run": ["run", "--offline", "--soft-fail", "--state", "{state}", "--out", "{out}"],
}
# unbuffered: argparse printing help and version itself ignored the write's error (exit 0)
_UNBUFFERED = tuple(_FULL_STDOUT)


@pytest.mark.parametrize(
    ("argv", "buffered"),
    [pytest.param(argv, True, id=f"{name}-buffered") for name, argv in _FULL_STDOUT.items()]
    + [pytest.param(_FULL_STDOUT[name], False, id=f"{name}-unbuffered") for name in _UNBUFFERED],
)
def test_a_full_disk_on_stdout_is_one_error_line_and_exit_2(
    tmp_path: Path, argv: list[str], small_state: Path, buffered: bool
) -> None:
    out = tmp_path / "reports"
    argv = [a.replace("{state}", str(small_state)).replace("{out}", str(out)) for a in argv]
    env = {k: v for k, v in os.environ.items() if k not in ("AUDITOR_DEBUG", "PYTHONUNBUFFERED")}
    if not buffered:
        env["PYTHONUNBUFFERED"] = "1"
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [sys.executable, "-m", "auditor", *argv],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            cwd=tmp_path,
            env=env,
            timeout=120,
        )
    last = done.stderr.splitlines()[-1]
    assert done.returncode == 2, done.stderr
    assert last == "auditor: error: cannot write to standard output: No space left on device"
    assert "Exception ignored" not in done.stderr and "Traceback" not in done.stderr
    if argv[0] == "run":  # what was written stays: the reports are there
        assert (out / "findings.json").is_file()


@pytest.mark.parametrize("buffered", [True, False], ids=["buffered", "unbuffered"])
def test_a_full_disk_on_stderr_exits_2_not_1_or_120(
    tmp_path: Path, small_state: Path, buffered: bool
) -> None:
    # Nothing can say why, so the exit code does: 1 would read as findings in a CI gate, and
    # the interpreter's failing flush at exit gave 120.
    env = {k: v for k, v in os.environ.items() if k not in ("AUDITOR_DEBUG", "PYTHONUNBUFFERED")}
    if not buffered:
        env["PYTHONUNBUFFERED"] = "1"
    argv = ["run", "--offline", "--soft-fail", "--state", str(small_state), "--out", "reports"]
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [sys.executable, "-m", "auditor", *argv],
            stdout=subprocess.DEVNULL,
            stderr=full,
            cwd=tmp_path,
            env=env,
            timeout=120,
        )
    assert done.returncode == 2
    assert (tmp_path / "reports" / "findings.json").is_file()


class _ShortWrites(io.RawIOBase):
    """A stdout's file on a full disk or with its reader gone, under CPython's own buffer and
    text layers: a write returns a short count with no error, and only the next write raises.
    The text layer drops the count of a write larger than the buffer (which goes to the file
    directly): `history --format json > full/file` exited 0, cut short."""

    def __init__(self, room: int, error: OSError, fd: int | None = None) -> None:
        self.room, self.error, self.fd, self.got = room, error, fd, bytearray()

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        if not self.room:
            raise self.error
        count = min(len(data), self.room)
        self.got += bytes(data[:count])
        self.room -= count
        return count

    def fileno(self) -> int:
        if self.fd is None:
            raise io.UnsupportedOperation("fileno")
        return self.fd


def _main_with_stdout(
    argv: list[str], raw: _ShortWrites, *, unbuffered: bool = True
) -> tuple[int, str]:
    from auditor.cli import Context, main

    if unbuffered:  # `PYTHONUNBUFFERED=1`, `python -u`, CI images: text layer on the file
        out = io.TextIOWrapper(raw, encoding="utf-8", write_through=True)
    else:
        out = io.TextIOWrapper(io.BufferedWriter(raw), encoding="utf-8")
    err = io.StringIO()
    return main(argv, Context(env={}, stdout=out, stderr=err)), err.getvalue()


_NOSPC = os.strerror(errno.ENOSPC)


@pytest.mark.parametrize("unbuffered", [True, False], ids=["unbuffered", "buffered"])
def test_a_short_write_on_stdout_is_one_error_line_and_exit_2(unbuffered: bool) -> None:
    # `policy schema` writes 21 kB at once, as `history`, `diff` and every `--format json` do
    disk = _ShortWrites(5000, OSError(errno.ENOSPC, _NOSPC))
    code, err = _main_with_stdout(["policy", "schema"], disk, unbuffered=unbuffered)
    assert (code, err) == (2, "auditor: error: cannot write to standard output: " + _NOSPC + "\n")
    assert len(disk.got) == 5000


def test_a_reader_gone_in_the_middle_of_a_large_write_exits_141() -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)  # `| head -c 10`: the reader took what it wanted and left
    try:
        pipe = _ShortWrites(10, BrokenPipeError(errno.EPIPE, "Broken pipe"), fd=write_end)
        code, err = _main_with_stdout(["policy", "schema"], pipe)
    finally:
        os.close(write_end)
    assert (code, err) == (141, "")


@pytest.mark.parametrize(
    "argv",
    [["history", "--state", "{state}"], ["policy", "schema"], ["--help"], ["--version"]],
    ids=["history", "policy-schema", "help", "version"],
)
def test_a_closed_stdout_is_one_error_line_and_exit_2(
    tmp_path: Path, argv: list[str], small_state: Path
) -> None:
    # `auditor history >&-`: Python's `sys.stdout` is None ("unexpected AttributeError" before)
    argv = [a.replace("{state}", str(small_state)) for a in argv]
    env = {k: v for k, v in os.environ.items() if k != "AUDITOR_DEBUG"}
    done = subprocess.run(
        ["sh", "-c", 'exec "$0" -m auditor "$@" >&-', sys.executable, *argv],
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=120,
    )
    assert (done.returncode, done.stderr) == (
        2,
        "auditor: error: cannot write to standard output: Bad file descriptor\n",
    )


@pytest.mark.parametrize(
    ("redirect", "argv"),
    [
        ("2>&-", ["history", "--state", "missing.db"]),
        ("2>/dev/full", ["history", "--state", "missing.db"]),
        ("2>/dev/full", ["--no-such-option"]),
    ],
    ids=["closed-error", "full-error", "full-usage"],
)
def test_an_error_stderr_cannot_take_is_still_exit_2(
    tmp_path: Path, redirect: str, argv: list[str]
) -> None:
    """README: under a stderr nothing can be written to, nothing can say why and the exit code
    is still 2, never 1. A closed stderr (`2>&-`) gave exit 1 (the error line went to stdout,
    then `None.flush()`), and a usage error to a full disk exit 1 too."""
    env = {k: v for k, v in os.environ.items() if k != "AUDITOR_DEBUG"}
    done = subprocess.run(
        ["sh", "-c", f'exec "$0" -m auditor "$@" {redirect}', sys.executable, *argv],
        stdout=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=120,
    )
    assert (done.returncode, done.stdout) == (2, "")


def test_stdout_keeps_its_encoding_and_newline_translation() -> None:
    # written through the text layer: one BOM (utf-16, utf-8-sig), `newline="\r\n"` kept
    from auditor.cli import Context, main
    from auditor.policy.schema import SCHEMA_PATH

    got = io.BytesIO()
    out = io.TextIOWrapper(got, encoding="utf-16", newline="\r\n")
    out.close = lambda: None  # type: ignore[method-assign]
    assert main(["policy", "schema"], Context(env={}, stdout=out, stderr=io.StringIO())) == 0
    out.flush()
    data = got.getvalue()
    assert data.count("\ufeff".encode("utf-16-le")) == 1
    assert data.decode("utf-16") == SCHEMA_PATH.read_text().replace("\n", "\r\n")


@pytest.mark.parametrize("unbuffered", ["1", ""], ids=["unbuffered", "buffered"])
def test_stdout_with_a_bom_encoding_has_one_bom(small_state: Path, unbuffered: str) -> None:
    env = {k: v for k, v in os.environ.items() if k != "AUDITOR_DEBUG"}
    env.update(PYTHONIOENCODING="utf-8-sig", PYTHONUNBUFFERED=unbuffered)
    done = subprocess.run(
        [sys.executable, "-m", "auditor", "history", "--state", str(small_state)],
        capture_output=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.count(b"\xef\xbb\xbf") == 1
    assert done.stdout.startswith(b"\xef\xbb\xbf")
    assert done.stdout.count(b"\n") > 1


class _Raw(io.RawIOBase):
    def __init__(self) -> None:
        self.got = bytearray()

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        self.got += bytes(data)
        return len(data)


@pytest.mark.parametrize("unbuffered", [True, False], ids=["unbuffered", "buffered"])
def test_stdout_writes_keep_their_order_with_other_writes_and_a_progress_line(
    unbuffered: bool,
) -> None:
    # something else writing to the same stdout comes out where it was written (was 1, 3, 2),
    # and a `\r` progress line on a line-buffered terminal shows at once
    from auditor.cli import _Stdout

    raw = _Raw()
    if unbuffered:
        stream = io.TextIOWrapper(raw, encoding="utf-8", write_through=True)
    else:
        stream = io.TextIOWrapper(io.BufferedWriter(raw), encoding="utf-8", line_buffering=True)
    out = _Stdout(stream)
    out.write("1\n")
    stream.write("2\n")
    out.write("3\n")
    out.write("x" * 20_000 + "\n")
    stream.write("4\n")
    out.write("5\r")
    assert bytes(raw.got) == b"1\n2\n3\n" + b"x" * 20_000 + b"\n4\n5\r"


def test_an_unbuffered_stdout_stays_open_after_the_command() -> None:
    # `PYTHONUNBUFFERED=1`: the checked text layer over stdout's file closed that file when it
    # went away, and the next write (the interpreter's, or the next in-process command's) failed
    import gc

    from auditor.cli import Context, main

    raw = _Raw()
    stream = io.TextIOWrapper(raw, encoding="utf-8", write_through=True)
    ctx = Context(env={}, stdout=stream, stderr=io.StringIO())
    assert main(["policy", "schema"], ctx) == 0
    gc.collect()
    stream.write("after\n")
    assert not raw.closed and bytes(raw.got).endswith(b"}\nafter\n")
