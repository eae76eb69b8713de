"""How `auditor review` reads its two settings files (PROPOSED and `--against`): through the
one opener every input goes through, `*.json` as JSON only, and never a file that holds what
auditor's own reports show in place of a value (a redaction marker, the history API's page)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from tests.conftest import run_cli

REPO = Path(__file__).resolve().parents[1]
LIVE = REPO / "examples" / "live-settings.yaml"
KEY = "0123456789abcdef0123"
MARKER = re.compile(r"\[secret fp:[0-9a-f]{8} len:\d+\]")
FIRST_KEY = "apiKey: sk-example-not-a-real-key-0001"  # line 111 of examples/live-settings.yaml


@pytest.fixture(autouse=True)
def _in_tmp_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Files named as a user names them, from the current folder (the lines start with it)."""
    monkeypatch.chdir(tmp_path)


def review(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    """`auditor review ARGS` in `tmp_path` (reports in a folder of their own): exit code and
    stdout + stderr."""
    argv = ["review", *args, "--author", "a@b.example", "--out", str(tmp_path / "out")]
    code, out, err = run_cli(
        [*argv, "-o", "json"], env or {"AUDITOR_FINGERPRINT_KEY": KEY}, tmp_path
    )
    return code, out + err


def _a_marker(tmp_path: Path) -> str:
    """A marker exactly as a report shows the first custom model's key (what a PR author sees
    and copies), from a review of the live settings against themselves."""
    code, shown = review(tmp_path, str(LIVE), "--against", str(LIVE))
    assert code == 0, shown
    text = (tmp_path / "out" / "findings.json").read_text()
    marker = next(m for m in MARKER.findall(text) if m.endswith(" len:30]"))
    return marker


# --- T21 #6: the one opener's refusals ------------------------------------------------------


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _loop(path: Path) -> None:
    path.symlink_to(path.name)


HOSTILE = {
    "fifo": (_fifo, "a named pipe (FIFO), not a regular file"),
    "folder": (Path.mkdir, "a directory, not a regular file"),
    "symlink loop": (_loop, "Too many levels of symbolic links"),
    "missing": (lambda p: None, "No such file or directory"),
}


@pytest.mark.parametrize("which", ["proposed", "against"])
@pytest.mark.parametrize("kind", HOSTILE)
def test_a_hostile_settings_file_gets_the_documented_line(tmp_path: Path, which: str, kind: str):
    make, reason = HOSTILE[kind]
    make(tmp_path / "bad.yaml")
    args = (
        ["bad.yaml", "--against", str(LIVE)]
        if which == "proposed"
        else [str(LIVE), "--against", "bad.yaml"]
    )
    code, shown = review(tmp_path, *args)
    assert code == 2
    # before: `auditor: error: bad.yaml: not a file` (a loop: `no such file`)
    assert f"bad.yaml:1:1: error: {reason}" in shown.splitlines(), shown
