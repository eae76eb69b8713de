"""The command line: parses argv, reads the environment and the clock, and hands them down.

Only this package (and `auditor.config`) reads the environment, the clock and argv. Each
subcommand lives in its own module `auditor.cli.cmd_<name>` exposing `register(subparsers)`,
which adds its parser and sets `handler=<function(args, ctx) -> int>`.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TextIO

from auditor import __version__
from auditor.common.escape import terminal_text
from auditor.errors import EXIT_ERROR, EXIT_INTERRUPTED, AuditorError, PolicyError

COMMANDS = (
    "run",
    "review",
    "sync",
    "diff",
    "history",
    "policy",
    "export",
    "demo",
    "emulator",
)


def _utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass
class Context:
    """What a command may take from the outside world; tests pass their own."""

    env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    stdout: TextIO = field(default_factory=lambda: sys.stdout)
    stderr: TextIO = field(default_factory=lambda: sys.stderr)
    clock: Callable[[], datetime] = _utc_now
    cwd: str = field(default_factory=os.getcwd)

    @property
    def interactive(self) -> bool:
        """True when stderr is a terminal (progress is shown only then)."""
        isatty = getattr(self.stderr, "isatty", None)
        return bool(isatty and isatty())


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser with every subcommand registered."""
    parser = argparse.ArgumentParser(
        prog="auditor",
        description="Audit an agent platform's enterprise control settings and readiness reports.",
    )
    parser.add_argument("--version", action="version", version=f"auditor {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        module = importlib.import_module(f"auditor.cli.cmd_{name}")
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None, ctx: Context | None = None) -> int:
    """Run the command line; returns the exit code (design §9)."""
    ctx = ctx or Context()
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits 2 on usage errors, 0 on --help
        return int(exc.code or 0)
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help(ctx.stderr)
        return EXIT_ERROR
    try:
        return int(handler(args, ctx))
    except PolicyError as exc:
        for line in exc.problems:
            print(terminal_text(line), file=ctx.stderr)
        count = len(exc.problems)
        print(f"auditor: error: {count} problem(s) in input files (listed above)", file=ctx.stderr)
        return exc.exit_code
    except AuditorError as exc:
        print(f"auditor: error: {terminal_text(str(exc))}", file=ctx.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("auditor: interrupted", file=ctx.stderr)
        return EXIT_INTERRUPTED
