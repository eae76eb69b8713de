"""`auditor verify BUNDLE`: check an evidence bundle and re-run it (`auditor.workflows.verify`).

Exit 0: every file matches the manifest, the signature (with --key) matches, and the re-run
reproduced every report byte for byte. Exit 2: anything else, each problem on its own line.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from auditor.common.escape import terminal_text
from auditor.errors import EXIT_ERROR, EXIT_OK
from auditor.workflows.verify import verify_bundle

if TYPE_CHECKING:
    from auditor.cli import Context


def register(subparsers: Any) -> None:
    """Add the `verify` subcommand."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "verify",
        help="check an evidence bundle's hashes and signature and re-run its evaluation",
        description=(
            "Check every file of an evidence bundle against its manifest (naming any altered, "
            "missing or extra file), the manifest's Ed25519 signature with --key, and re-run "
            "the evaluation from the bundle alone, which must reproduce findings.json and the "
            "other reports byte for byte. Exit 0 when all holds, 2 otherwise."
        ),
    )
    parser.add_argument("bundle", metavar="BUNDLE", type=Path, help="the bundle's folder")
    parser.add_argument(
        "--key", metavar="PEM", type=Path,
        help="Ed25519 public key (PEM) the manifest must be signed with",
    )  # fmt: skip
    parser.add_argument("--no-rerun", action="store_true", help="check hashes and signature only")
    parser.set_defaults(handler=run_verify)


def run_verify(args: argparse.Namespace, ctx: Context) -> int:
    """Handler: verify, print every problem, exit 0 or 2."""
    bundle = Path(ctx.cwd) / args.bundle
    key = Path(ctx.cwd) / args.key if args.key else None
    result = verify_bundle(bundle, key=key, rerun=not args.no_rerun)
    for note in result.notes:
        print(f"auditor: note: {terminal_text(note)}", file=ctx.stderr)
    if not result.ok:
        for problem in result.problems:
            print(f"auditor: verify: {terminal_text(problem)}", file=ctx.stderr)
        print(
            f"auditor: exit 2: the bundle {bundle} does not verify: "
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
        f"Verified {bundle}: {result.files_checked} files match manifest.json{signed}{rerun}.",
        file=ctx.stdout,
    )
    return EXIT_OK
