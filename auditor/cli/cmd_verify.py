"""`auditor verify BUNDLE`: check an evidence bundle and re-run it (`auditor.workflows.verify`).

Exit 0: every file matches the manifest, the signature (with --key) matches, and the re-run
reproduced every report byte for byte. Exit 2: anything else, each problem on its own line.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from auditor.cli.failure import scrubbed
from auditor.common.escape import terminal_text
from auditor.errors import EXIT_ERROR, EXIT_OK
from auditor.workflows.verify import verify_bundle

if TYPE_CHECKING:
    from auditor.cli import Context


def run_verify(args: argparse.Namespace, ctx: Context) -> int:
    """Handler: verify, print every problem, exit 0 or 2."""
    bundle = Path(ctx.cwd) / args.bundle
    key = Path(ctx.cwd) / args.key if args.key else None
    result = verify_bundle(bundle, key=key, rerun=not args.no_rerun)
    tokens = ctx.secrets()  # a path typed as the token (`verify "$AUDITOR_TOKEN"`): `[token]`
    for note in result.notes:
        print(f"auditor: note: {terminal_text(scrubbed(note, tokens))}", file=ctx.stderr)
    if not result.ok:
        for problem in result.problems:
            print(f"auditor: verify: {terminal_text(scrubbed(problem, tokens))}", file=ctx.stderr)
        shown = scrubbed(str(bundle), tokens)
        print(
            f"auditor: exit 2: the bundle {shown} does not verify: "
            f"{len(result.problems)} problem(s)",
            file=ctx.stderr,
        )
        return EXIT_ERROR
    signed = ", signature valid" if result.signed else ""
    rerun = (
        f"; the re-run reproduced {', '.join(result.reports_reproduced)} byte for byte"
        if result.reports_reproduced
        else ""
    )
    print(
        f"Verified {scrubbed(str(bundle), tokens)}: {result.files_checked} files match "
        f"manifest.json{signed}{rerun}.",
        file=ctx.stdout,
    )
    return EXIT_OK
