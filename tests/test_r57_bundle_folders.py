"""`verify` and a folder of the bundle it cannot list (R57 #2): Path.rglob (Python 3.11) passed
over such a folder without a word, so a file slipped into one of mode 100 or 300 went unseen
(`Verified … files match`, exit 0), and one of mode 000 was `unexpected PermissionError`. Now
the folder is named `unreadable: <folder>/ (…: its entries cannot be listed …)`, exit 2, and a
listed file in it that cannot be read is `unreadable: <file> (Permission denied)`."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.test_t92_input_files import cli_as_a_user

pytestmark = pytest.mark.e2e

CANNOT_LIST = "Permission denied: its entries cannot be listed"


@pytest.fixture
def bundle(exported: Path, tmp_path: Path) -> Iterator[Path]:
    """A copy of the bundle; every folder's mode put back afterwards, so it can be removed."""
    copy = tmp_path / "copy"
    shutil.copytree(exported, copy)
    try:
        yield copy
    finally:
        for name in (".", "reports", "inputs", "extra"):
            if (copy / name).is_dir():
                (copy / name).chmod(0o755)


def verify(bundle: Path, *more: str) -> tuple[int, str]:
    return cli_as_a_user(["verify", *more, str(bundle)], bundle.parent)


def _modes(bundle: Path, **modes: int) -> None:
    for name, mode in modes.items():
        (bundle / name).chmod(mode)


@pytest.mark.parametrize("mode", [0o100, 0o300], ids=oct)  # search only; write and search
@pytest.mark.parametrize("rerun", [False, True])
def test_an_unlisted_file_in_a_folder_that_cannot_be_listed_is_never_passed_over(
    bundle: Path, mode: int, rerun: bool
) -> None:
    """Its listed files are read and match: the folder is the one problem, named."""
    (bundle / "reports" / "evil.txt").write_text("x\n")
    _modes(bundle, reports=mode)
    code, out = verify(bundle, *([] if rerun else ["--no-rerun"]))
    assert code == 2, out
    assert f"unreadable: reports/ ({CANNOT_LIST}, so a file manifest.json" in out
    assert "does not verify: 1 problem(s)" in out
    assert "Verified" not in out and "unexpected" not in out


def test_a_folder_that_cannot_be_searched_names_it_and_each_file_in_it(bundle: Path) -> None:
    _modes(bundle, reports=0o000)
    code, out = verify(bundle, "--no-rerun")
    assert code == 2, out
    assert "unreadable: reports/findings.json (Permission denied)" in out
    assert f"unreadable: reports/ ({CANNOT_LIST}" in out
    assert "missing:" not in out and "unexpected" not in out


@pytest.mark.parametrize("mode", [0o000, 0o100, 0o400], ids=oct)
def test_a_new_folder_that_cannot_be_listed_is_named(bundle: Path, mode: int) -> None:
    (bundle / "extra").mkdir()
    (bundle / "extra" / "evil.txt").write_text("x\n")
    _modes(bundle, extra=mode)
    code, out = verify(bundle, "--no-rerun")
    assert code == 2, out
    assert f"unreadable: extra/ ({CANNOT_LIST}" in out
    assert "does not verify: 1 problem(s)" in out and "unexpected" not in out


def test_the_rerun_of_a_bundle_whose_inputs_cannot_be_read_is_a_problem(bundle: Path) -> None:
    """Its policies (under inputs/policies/) cannot be read: the file check names them, and
    the re-run, which would read them, is skipped and says so (T97 #3)."""
    _modes(bundle, inputs=0o000)
    code, out = verify(bundle)
    assert code == 2, out
    assert f"unreadable: inputs/ ({CANNOT_LIST}" in out
    assert "auditor: note: re-run skipped: it would read inputs/policies/" in out
    assert "unexpected" not in out


def test_a_bundle_folder_that_cannot_be_listed_is_named(bundle: Path) -> None:
    _modes(bundle, **{".": 0o100})
    code, out = verify(bundle, "--no-rerun")
    assert code == 2, out
    assert f"unreadable: ./ ({CANNOT_LIST}" in out and "Verified" not in out
