"""`auditor verify BUNDLE`: check an evidence bundle and re-run it (`auditor.workflows.verify`).

Exit 0: every file matches the manifest, so do the manifest's own facts, the signature (with
--key) matches, and the re-run reproduced every report and CSV file byte for byte. Exit 2:
anything else, each problem on its own line.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from auditor.cli.failure import hidden_paths, problem_lines, scrubbed
from auditor.common.escape import terminal_text
from auditor.errors import EXIT_ERROR, EXIT_OK
from auditor.redact.shown import printed_path
from auditor.workflows.verify import verify_bundle

if TYPE_CHECKING:
    from auditor.cli import Context

#: The most lines of one problem's list `verify` prints (a model with 40 mistakes: the first
#: 20, then how many more; `auditor run --readiness-model FILE` lists them all).
DETAIL_LINES = 20
#: The most problems `verify` prints, then how many more: a manifest of 150,000 made-up
#: entries printed 150,000 lines (T97 #5). The exit line counts them all.
PROBLEM_LINES = 200


def run_verify(args: argparse.Namespace, ctx: Context) -> int:
    """Handler: verify, print every problem, exit 0 or 2."""
    bundle = Path(ctx.cwd) / args.bundle
    key = Path(ctx.cwd) / args.key if args.key else None
    ctx.paths.add(str(bundle))  # a part of it that looks like a secret is not shown in an error
    tokens = ctx.secrets()  # a value of the bundle a problem quotes: `[token]` before it is
    # shortened (after, the first 40 characters of a long one showed: review R63 #1)
    result = verify_bundle(bundle, key=key, rerun=not args.no_rerun, tokens=tokens)
    # a path typed as the token (`verify "$AUDITOR_TOKEN"`): `[token]`, and a name in it that
    # the detectors flag not shown, as every command's lines show a path
    shown = terminal_text(printed_path(bundle, tokens))  # (a line break in it: one line)
    for note in _screened(result.notes, tokens, bundle):
        print(f"auditor: note: {note}", file=ctx.stderr)
    if not result.ok:
        for index, problem in enumerate(result.problems[:PROBLEM_LINES]):  # may name a file
            at = result.quoting.get(index, 0)  # (after a lead of verify's own words)
            shown_problem = "".join(_screened([problem[:at], problem[at:]], tokens, bundle))
            print(f"auditor: verify: {shown_problem}", file=ctx.stderr)
            lines = result.details.get(index, [])
            # one mistake a line, as `run` lists an input file's (a value it quotes judged too)
            for line in _screened(lines[:DETAIL_LINES], tokens, bundle):
                print(f"auditor: verify:   {line}", file=ctx.stderr)
            if len(lines) > DETAIL_LINES:
                more = len(lines) - DETAIL_LINES
                print(f"auditor: verify:   … and {more} more line(s)", file=ctx.stderr)
        if len(result.problems) > PROBLEM_LINES:
            more = len(result.problems) - PROBLEM_LINES
            print(f"auditor: verify: … and {more:,} more problem(s), not shown", file=ctx.stderr)
        print(
            f"auditor: exit 2: the bundle {shown} does not verify: "
            f"{len(result.problems)} problem(s)",
            file=ctx.stderr,
        )
        return EXIT_ERROR
    signed = ", signature valid" if result.signed else ""
    rerun = (
        f"; the re-run reproduced {', '.join(result.reproduced)} byte for byte"
        if result.reproduced
        else ""
    )
    print(
        f"Verified {shown}: {result.files_checked} files match manifest.json{signed}{rerun}.",
        file=ctx.stdout,
    )
    return EXIT_OK


def _screened(lines: list[str], tokens: set[str], bundle: Path) -> list[str]:
    """Lines of the verification as printed: each as `run` shows an input file's problem
    (`problem_lines`: a value or key of the bundle it quotes that looks like a secret not
    shown, the command's tokens as `[token]`), every one, as no reader of the bundle judges
    every value it quotes (a `diffKeys` key: review R67 #1). The bundle's path is shown apart,
    as `printed_path` shows it: read as text, a path with a space took the file's name with it
    to a name that looks like a secret (review R63 #3)."""
    path = str(bundle)
    mark = _MARK  # stands for the path while the rest is judged: one no line holds
    while any(mark in line for line in lines):
        mark += _MARK
    shown = [line.replace(path, mark) for line in lines]
    if any(shown):  # (no detector is loaded for a verified bundle)
        shown = problem_lines(shown, tokens)
    named = terminal_text(hidden_paths(scrubbed(path, tokens), [path]))
    return [line.replace(mark, named) for line in shown]


_MARK = "§"  # printable, no word: the detectors read no secret through it
