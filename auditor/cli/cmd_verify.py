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
    for note in result.notes:
        print(f"auditor: note: {_shown(note, tokens, bundle)}", file=ctx.stderr)
    if not result.ok:
        for index, problem in enumerate(result.problems):  # may name a file of the bundle
            at = result.quoting.get(index)
            if at is None:
                shown_problem = _shown(problem, tokens, bundle)
            else:  # an input file's error, as `run` shows it: a value it quotes judged too
                head = _shown(problem[:at], tokens, bundle)
                shown_problem = head + problem_lines([problem[at:]], tokens)[0]
            print(f"auditor: verify: {shown_problem}", file=ctx.stderr)
            lines = result.details.get(index, [])
            # one mistake a line, as `run` lists an input file's (a value it quotes judged too)
            for line in problem_lines(lines[:DETAIL_LINES], tokens):
                print(f"auditor: verify:   {line}", file=ctx.stderr)
            if len(lines) > DETAIL_LINES:
                more = len(lines) - DETAIL_LINES
                print(f"auditor: verify:   … and {more} more line(s)", file=ctx.stderr)
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


def _shown(line: str, tokens: set[str], bundle: Path) -> str:
    """A line of the verification as printed: the command's tokens as `[token]`, a name of
    the bundle's path that looks like a secret not shown (as `printed_path` shows the path)."""
    return terminal_text(hidden_paths(scrubbed(line, tokens), [str(bundle)]))
