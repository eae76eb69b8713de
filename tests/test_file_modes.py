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


def _run_with(state: Path, out: Path, *extra: str) -> None:
    err = io.StringIO()
    argv = ["run", "--offline", "--soft-fail", "-q", "--state", str(state), "--out", str(out)]
    ctx = Context(env={}, stdout=io.StringIO(), stderr=err, clock=lambda: FIXED_NOW, cwd="/")
    main([*argv, *extra], ctx)
    assert (out / "findings.json").is_file(), err.getvalue()


NOBODY = 65534


@pytest.mark.skipif(os.geteuid() != 0, reason="chown to another user needs root")
@pytest.mark.parametrize("cleared", [True, False], ids=["auditor-report", "other-file"])
def test_a_symlink_s_target_gives_the_new_report_no_mode(
    tmp_path: Path, state: Path, umask: None, cleared: bool
) -> None:
    # report.md a link to another user's world-writable, executable file: the new report is a
    # regular file of 0666 less the umask, and the target keeps its content and mode
    out = tmp_path / "reports"
    _run(state, out)
    target = tmp_path / "theirs.md"
    target.write_bytes((out / "report.md").read_bytes() if cleared else b"# notes\n")
    os.chown(target, NOBODY, NOBODY)
    target.chmod(0o777)
    before = target.read_bytes()
    (out / "report.md").unlink()
    (out / "report.md").symlink_to(target)
    _run(state, out)
    assert not (out / "report.md").is_symlink()
    assert _mode(out / "report.md") == 0o644
    assert _mode(target) == 0o777 and target.read_bytes() == before


@pytest.mark.skipif(os.geteuid() != 0, reason="chown to another user needs root")
def test_another_user_s_report_gives_no_mode(tmp_path: Path, state: Path, umask: None) -> None:
    out = tmp_path / "reports"
    _run(state, out)
    os.chown(out / "report.md", NOBODY, NOBODY)
    (out / "report.md").chmod(0o666)
    _run(state, out)
    assert _mode(out / "report.md") == 0o644


@pytest.mark.parametrize(("mask", "kept"), [(0o022, 0o664), (0o000, 0o666)])
def test_a_kept_mode_has_no_execute_bits_and_no_write_for_all_unless_the_umask_allows(
    tmp_path: Path, state: Path, umask: None, mask: int, kept: int
) -> None:
    os.umask(mask)
    out = tmp_path / "reports"
    _run(state, out)
    (out / "report.md").chmod(0o777)
    (out / "junit.xml").chmod(0o640)
    _run(state, out)
    assert _mode(out / "report.md") == kept
    assert _mode(out / "junit.xml") == 0o640  # a mode set by hand that is safe: kept


def test_a_cleared_report_not_written_again_leaves_no_mode_for_a_later_run(
    tmp_path: Path, state: Path, umask: None
) -> None:
    out = tmp_path / "reports"
    _run(state, out)
    (out / "report.md").chmod(0o600)
    _run_with(state, out, "-o", "json")  # report.md cleared (its mode noted), not written
    assert not (out / "report.md").exists()
    _run_with(state, out, "-o", "json,md")  # the same process, later: a new report.md
    assert _mode(out / "report.md") == 0o644
