"""`auditor sync` starts without loading the stacks it never runs, and parses as before."""

from __future__ import annotations

import contextlib
import io
import subprocess
import sys

import pytest

from auditor.cli import COMMANDS, build_parser

_PROBE = """
import contextlib, io, sys
from auditor.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    main(["sync", "--help"])
print(" ".join(sorted(m for m in sys.modules if m.startswith("auditor.") or m == "jsonschema")))
"""


def test_sync_does_not_import_evaluation_reports_or_jsonschema() -> None:
    out = subprocess.run(
        [sys.executable, "-c", _PROBE], capture_output=True, text=True, check=True
    ).stdout.split()
    assert "auditor.workflows.sync" in out  # the probe did load the sync command
    loaded = [
        m
        for m in out
        if m.startswith(("auditor.evaluate", "auditor.report", "auditor.policy", "jsonschema"))
        or m in ("auditor.workflows.run", "auditor.workflows.review", "auditor.workflows.export")
    ]
    assert loaded == []


def _help(parser_args: list[str], only: str | None) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        build_parser(only).parse_args(parser_args)
    return out.getvalue()


@pytest.mark.parametrize("command", COMMANDS)
def test_a_command_parses_the_same_alone_as_with_every_command(command: str) -> None:
    assert _help([command, "--help"], command) == _help([command, "--help"], None)


def test_top_level_help_still_lists_every_command() -> None:
    text = _help(["--help"], None)
    assert all(name in text for name in COMMANDS)
