"""The reports and bundle files get the mode any tool's files get: a new file 0666 less the
umask, a file rewritten keeps its mode (mkstemp made every one 0600, and reset a chmod)."""

from __future__ import annotations

import io
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from auditor.cli import Context, main
from tests.conftest import FIXED_NOW


@pytest.fixture
def umask() -> Iterator[None]:
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _run(state: Path, out: Path) -> None:
    err = io.StringIO()
    argv = ["run", "--offline", "--soft-fail", "-q", "--state", str(state), "--out", str(out)]
    ctx = Context(env={}, stdout=io.StringIO(), stderr=err, clock=lambda: FIXED_NOW, cwd="/")
    main(argv, ctx)  # exit 2: an empty state file has nothing to evaluate; the reports say so
    assert (out / "report.md").is_file(), err.getvalue()


@pytest.fixture
def state(tmp_path: Path) -> Path:
    from auditor.store import Store

    path = tmp_path / "state.db"
    Store.open(path, create=True).close()
    return path


@pytest.mark.parametrize("mask", [0o022, 0o027, 0o002, 0o077])
def test_new_reports_get_0666_less_the_umask(
    tmp_path: Path, state: Path, umask: None, mask: int
) -> None:
    os.umask(mask)
    out = tmp_path / "reports"
    _run(state, out)
    files = [p for p in out.rglob("*") if p.is_file()]
    assert len(files) >= 4
    assert {p.name: _mode(p) for p in files} == {p.name: 0o666 & ~mask for p in files}


def test_a_report_rewritten_keeps_its_mode(tmp_path: Path, state: Path, umask: None) -> None:
    out = tmp_path / "reports"
    _run(state, out)
    (out / "report.md").chmod(0o664)  # shared with the team by hand
    (out / "findings.json").chmod(0o600)
    _run(state, out)
    assert _mode(out / "report.md") == 0o664
    assert _mode(out / "findings.json") == 0o600
    assert _mode(out / "junit.xml") == 0o644
