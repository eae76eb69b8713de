"""T52 #9: `--config` and `--orgs` name a file's real problem, and the kind of file it is.

A symlink loop read "a symbolic link to a missing file" (every other input says `Too many
levels of symbolic links`), and every problem of an `--orgs` file read "cannot read config
file"."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from tests.conftest import run_cli

LOOP = os.strerror(errno.ELOOP)  # "Too many levels of symbolic links"


def _make(tmp_path: Path, kind: str) -> Path:
    where = tmp_path / "f.toml"
    if kind == "loop":
        (tmp_path / "other.toml").symlink_to(where)
        where.symlink_to(tmp_path / "other.toml")
    elif kind == "dangling":
        where.symlink_to(tmp_path / "nowhere.toml")
    elif kind == "fifo":
        os.mkfifo(where)
    elif kind == "folder":
        where.mkdir()
    elif kind == "latin-1":
        where.write_bytes(b'[[org]]\nname = "caf\xe9"\n')
    return where


CAUSES = {
    "loop": f": {LOOP}",
    "dangling": ": a symbolic link to a missing file",
    "fifo": ": a named pipe (FIFO), not a regular file",
    "folder": ": a directory, not a regular file",
}


def _error(argv: list[str], tmp_path: Path) -> str:
    code, _, err = run_cli(argv, {}, tmp_path)
    assert code == 2, err
    return err.splitlines()[-1]


@pytest.mark.parametrize("kind", list(CAUSES))
def test_an_orgs_file_problem_names_its_cause_and_the_orgs_file(tmp_path: Path, kind: str) -> None:
    _make(tmp_path, kind)
    line = _error(["run", "--orgs", "f.toml", "--offline", "-q"], tmp_path)
    assert line == f"auditor: error: f.toml: cannot read --orgs file{CAUSES[kind]}"


@pytest.mark.parametrize("kind", list(CAUSES))
def test_a_config_file_problem_names_its_cause(tmp_path: Path, kind: str) -> None:
    _make(tmp_path, kind)
    line = _error(["policy", "lint", "--config", "f.toml"], tmp_path)
    assert line == f"auditor: error: f.toml: cannot read config file{CAUSES[kind]}"


def test_a_pyproject_in_a_loop_names_the_loop(tmp_path: Path) -> None:
    (tmp_path / "other.toml").symlink_to(tmp_path / "pyproject.toml")
    (tmp_path / "pyproject.toml").symlink_to(tmp_path / "other.toml")
    line = _error(["history", "--state", "s.db"], tmp_path)
    assert line == f"auditor: error: pyproject.toml: cannot read config file: {LOOP}"


def test_missing_and_not_utf8_name_the_orgs_file(tmp_path: Path) -> None:
    line = _error(["run", "--orgs", "nowhere.toml", "--offline", "-q"], tmp_path)
    assert line == "auditor: error: nowhere.toml: --orgs file not found"
    _make(tmp_path, "latin-1")
    line = _error(["run", "--orgs", "f.toml", "--offline", "-q"], tmp_path)
    assert line == (
        "auditor: error: f.toml:2:12: --orgs file is not UTF-8 text (byte 0xe9 at offset 19)"
    )
