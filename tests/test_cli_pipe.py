"""`auditor … | head`: when stdout's reader goes away, the command ends quietly with 141
(128 + SIGPIPE, what a shell reports for a command that pipe ended), not with
`auditor: error: unexpected BrokenPipeError` and exit 2."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

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
    """A state file (empty: history prints its header and `(no matching revisions)`)."""
    from auditor.store import Store

    path = tmp_path / "state.db"
    Store.open(path, create=True).close()
    return path
