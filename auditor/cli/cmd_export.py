"""`auditor export`: write an evidence bundle from the state file (`auditor.workflows.export`)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from auditor.cli.common import (
    add_common_options,
    add_usage_option,
    check_at,
    config_from_args,
    open_store,
    parse_at,
)
from auditor.cli.summary import make_run_id
from auditor.common.dates import DEFAULT_DAYS
from auditor.config import FAIL_ON_VALUES
from auditor.errors import EXIT_OK
from auditor.workflows.export import ExportRequest, export_bundle

if TYPE_CHECKING:
    from auditor.cli import Context


def register(subparsers: Any) -> None:
    """Add the `export` subcommand."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "export",
        help="write an evidence bundle an auditor can check and re-run (`auditor verify`)",
        description=(
            "Write the evidence bundle: every stored revision and readiness report (JSON lines "
            "and CSV, with every change step in words), the run parameters, the exact policy, "
            "waiver and readiness-model files, the reports of evaluating the bundle itself, and "
            "a sha256 manifest, optionally signed with an Ed25519 key. Reads the state file "
            "only (run `auditor sync` first)."
        ),
    )
    add_common_options(parser)
    parser.add_argument(
        "--out", metavar="DIR", type=Path, default=None, help="output folder, new or empty "
        "(default ./evidence)"
    )  # fmt: skip
    group = parser.add_argument_group("evaluation (as for `auditor run`)")
    group.add_argument(
        "--policy", dest="policies", metavar="PATH", type=Path, action="append",
        help="policy file or folder (repeatable; default: the shipped packs)",
    )  # fmt: skip
    group.add_argument("--waivers", metavar="FILE", type=Path, help="waivers YAML file")
    group.add_argument("--readiness-model", metavar="FILE", type=Path, help="readiness model YAML")
    group.add_argument(
        "--at", metavar="DATE", help="audit the settings in force at DATE (YYYY-MM-DD: end of day)"
    )
    group.add_argument(
        "--all-revisions", action="store_true", help="also report every revision's results"
    )
    group.add_argument("--fail-on", choices=FAIL_ON_VALUES, help="recorded in the reports")
    add_usage_option(group)
    parser.add_argument(
        "--sign-key", metavar="PEM", type=Path,
        help="sign manifest.json with this Ed25519 private key (writes manifest.sig; needs "
        "pip install 'auditor[sign]')",
    )  # fmt: skip
    parser.set_defaults(handler=run_export)


def run_export(args: argparse.Namespace, ctx: Context) -> int:
    """Handler: export the bundle and say where it went."""
    config = config_from_args(args, ctx)
    now = ctx.clock()
    at = parse_at(args.at, now)
    out: Path = Path(ctx.cwd) / (args.out or "evidence")
    with open_store(config, readonly=True) as store:
        check_at(store, at)  # as `run`: nothing was in force before the first revision
        synced = store.last_sync()  # the address the stored data came from, when not given
        request = ExportRequest(
            run_id=make_run_id(now),
            now=now,
            api_address=config.base_url or (synced.base_url if synced else "(offline)"),
            org=config.org,
            policies=config.policies,
            waivers=config.waivers,
            readiness_model=config.readiness_model,
            cwd=Path(ctx.cwd),
            at=at,
            all_revisions=args.all_revisions,
            fail_on=config.fail_on,
            diff_keys=dict(config.diff_keys),
            sign_key=Path(ctx.cwd) / args.sign_key if args.sign_key else None,
            usage_days=None if args.no_usage else DEFAULT_DAYS,
        )
        manifest = export_bundle(store, out, request)
    signed = " and signed (manifest.sig)" if args.sign_key else ""
    print(
        f"Wrote evidence bundle to {out}: {manifest['revisions']} revisions, "
        f"{manifest['reports']} readiness reports, {manifest['integrityIssues']} integrity "
        f"issues, {manifest['findings']} results; sha256 of every file in manifest.json{signed}. "
        f"Check it with: auditor verify {out}",
        file=ctx.stdout,
    )
    return EXIT_OK
