"""T51 #2: with the state file's disk completely full, `auditor run` died taking the state
file's lock (the pid it writes in `<file>.lock` refused, then refused again when the file was
closed): `auditor: error: unexpected OSError: [Errno 28] No space left on device` and no
report. The README (nightly job, step 1): when the store refuses to record the run (a full
disk) "the reports are still written, from what is stored, with the line `the state file could
not record this run …`", exit 2."""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import auditor.store.file
from auditor.errors import StoreError
from auditor.store import Store
from tests.conftest import missing_tool, run_cli

REPO = Path(__file__).resolve().parent.parent
REPORTS = {"report.html", "report.md", "findings.json", "findings.sarif", "junit.xml"}


@pytest.fixture
def synced(env: dict[str, str], tmp_path: Path) -> dict[str, str]:
    code, _, stderr = run_cli(["sync", "-q"], env, tmp_path)
    assert code == 0, stderr
    return env


@pytest.fixture
def pid_refused(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The lock file's writes refused with ENOSPC, as on a full disk, once it is locked and
    emptied for the pid: its descriptor is then pointed at /dev/full (the locked file is kept
    open beside it, so the lock stays held)."""
    real = auditor.store.file._check_content
    kept: list[int] = []

    def check(handle: Any, *args: Any) -> None:
        real(handle, *args)
        truncate = handle.truncate

        def emptied(*size: Any) -> Any:
            done = truncate(*size)
            kept.append(os.dup(handle.fileno()))  # the locked file, still open: still locked
            full = os.open("/dev/full", os.O_WRONLY)
            os.dup2(full, handle.fileno())
            os.close(full)
            handle.truncate = truncate  # (release_lock's own goes to /dev/full: refused)
            return done

        handle.truncate = emptied

    monkeypatch.setattr(auditor.store.file, "_check_content", check)
    try:
        yield
    finally:
        for fd in kept:
            os.close(fd)


def test_a_lock_file_the_full_disk_cannot_write_the_pid_in_still_gives_the_reports(
    synced: dict[str, str], tmp_path: Path, pid_refused: None
) -> None:
    out = tmp_path / "r"
    code, _, stderr = run_cli(["run", "--offline", "--out", str(out)], synced, tmp_path)
    assert "unexpected" not in stderr
    assert code in (0, 1), stderr
    assert {p.name for p in out.iterdir()} == REPORTS


def test_a_lock_file_the_full_disk_cannot_make_is_one_line_naming_it(
    env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = tmp_path / "state.db"
    Store.open(state, create=True).close()
    (tmp_path / "state.db.lock").unlink()

    def opener(path: Path) -> Callable[[str, int], int]:
        def refuse(name: str, how: int) -> int:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), name)

        return refuse

    monkeypatch.setattr(auditor.store.file, "_lock_opener", opener)
    code, _, stderr = run_cli(["run", "--offline", "--out", str(tmp_path / "r")], env, tmp_path)
    assert code == 2
    assert stderr.strip().splitlines()[-1] == (
        f"auditor: error: cannot lock state file {state}: cannot create its lock file "
        f"{state.resolve()}.lock: No space left on device (the disk is full: free space there)"
    )


def test_a_held_lock_without_a_pid_names_a_run_not_a_reader(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    path = tmp_path / "state.db"
    Store.open(path, create=True).close()
    request.getfixturevalue("pid_refused")  # for the writer below
    with Store.open(path), pytest.raises(StoreError) as info:  # its pid refused by the disk
        Store.open(path, readonly=True)
    assert str(info.value) == f"state file {path} is locked by another auditor run"


def _can_mount() -> bool:
    if shutil.which("unshare") is None or not sys.platform.startswith("linux"):
        return False
    probe = "mount -t tmpfs -o size=64k tmpfs /mnt 2>/dev/null || mount -t tmpfs tmpfs /tmp"
    done = subprocess.run(["unshare", "-rm", "sh", "-c", probe], capture_output=True, check=False)
    return done.returncode == 0


def test_a_state_file_on_a_completely_full_disk_gives_the_reports_and_the_could_not_record_line(
    synced: dict[str, str], tmp_path: Path
) -> None:
    """The real thing: the state file on a tmpfs filled to its last byte (in a mount namespace
    of its own, as an unprivileged user may make one)."""
    if not _can_mount():  # in CI a failure: .ci/run's machine can (util-linux, root)
        missing_tool("needs `unshare -rm` to mount a small tmpfs", "UNSHARE", "FULL-DISK TEST")
    full, out = tmp_path / "full", tmp_path / "r"
    full.mkdir()
    script = (
        'mount -t tmpfs -o size=$(( $(stat -c %s "$1") / 1024 + 512 ))k tmpfs "$2" && '
        'cp "$1" "$2"/state.db && (head -c 100000000 /dev/zero > "$2"/filler 2>/dev/null; true) '
        '&& cd "$3" && exec "$4" -m auditor run --offline --state "$2"/state.db --out "$5"'
    )
    state = synced["AUDITOR_STATE"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("AUDITOR_")}
    env["PYTHONPATH"] = str(REPO)
    argv = ["unshare", "-rm", "sh", "-c", script, "sh", state, str(full), str(tmp_path)]
    done = subprocess.run(
        [*argv, sys.executable, str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        check=False,
    )
    assert "unexpected" not in done.stderr
    assert done.returncode == 2, done.stderr
    assert {p.name for p in out.iterdir()} == REPORTS
    line = "the state file could not record this run, so no later run compares with it"
    assert line in done.stderr
    assert line in (out / "report.md").read_text()
