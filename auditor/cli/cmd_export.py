"""`auditor export`: write an evidence bundle from the state file (`auditor.workflows.export`)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from auditor.cli.common import add_common_options, config_from_args, open_store
from auditor.errors import EXIT_OK
from auditor.store.schema import to_text
from auditor.workflows.export import export_bundle

if TYPE_CHECKING:
    from auditor.cli import Context


def register(subparsers: Any) -> None:
    """Add the `export` subcommand."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "export",
        help="write an evidence bundle (JSON files + sha256 manifest) from the state file",
        description="Write revisions, readiness reports and integrity issues with a manifest.",
    )
    add_common_options(parser)
    parser.add_argument(
        "--out", metavar="DIR", type=Path, default=None, help="output folder (default ./evidence)"
    )
    parser.set_defaults(handler=run_export)


def run_export(args: argparse.Namespace, ctx: Context) -> int:
    """Handler: export the bundle and say where it went."""
    config = config_from_args(args, ctx)
    out: Path = Path(ctx.cwd) / (args.out or "evidence")
    with open_store(config, readonly=True) as store:
        manifest = export_bundle(store, out, generated=to_text(ctx.clock()))
    print(
        f"Wrote evidence bundle to {out}: {manifest['revisions']} revisions, "
        f"{manifest['reports']} readiness reports, {manifest['integrityIssues']} integrity issues "
        "(sha256 of each file in manifest.json).",
        file=ctx.stdout,
    )
    return EXIT_OK
