"""`auditor run`: the nightly job — sync, evaluate, compare with the last run, write five reports.

Takes the configuration and the clock, gives `reports/<run-id>/` (or `--out`), a short summary on
stdout, and the exit code of design §9 with its reason as the last line on stderr.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from auditor.cli.common import (
    add_common_options,
    add_usage_option,
    config_from_args,
    open_store,
    parse_when,
    require_remote,
    sync_store,
)
from auditor.cli.signals import interrupt_exit
from auditor.cli.summary import (
    add_audit_options,
    decide_exit,
    make_run_id,
    print_summary,
    unique_dir,
    with_report_options,
)
from auditor.common.escape import terminal_text
from auditor.config import Config
from auditor.errors import AuditorError, UsageError
from auditor.fetch.analytics import DEFAULT_DAYS
from auditor.report import prepare_out_dir, write_reports
from auditor.report.build import RunHeader, build_report_data
from auditor.report.model import ReportData
from auditor.workflows.run import AuditOptions, AuditOutcome, LoadedPolicy, load_inputs, run_audit

if TYPE_CHECKING:
    from datetime import datetime

    from auditor.cli import Context
    from auditor.store import Store


def register(subparsers: Any) -> None:
    """Add the `run` subcommand."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "run",
        help="nightly audit: sync, evaluate the policies, write the reports",
        description=(
            "Sync what is new (unless --offline), evaluate the policies against the settings, "
            "their changes and the readiness reports, compare with the previous complete run, "
            "and write report.html, report.md, findings.json, findings.sarif and junit.xml."
        ),
    )
    add_common_options(parser)
    add_audit_options(parser)
    parser.add_argument(
        "--at",
        metavar="DATE",
        help="audit the settings in force at DATE (YYYY-MM-DD: end of day, UTC)",
    )
    parser.add_argument(
        "--all-revisions", action="store_true", help="also report every stored revision's results"
    )
    add_usage_option(parser)
    parser.set_defaults(handler=run_command)


def run_command(args: argparse.Namespace, ctx: Context) -> int:
    """Handler: the whole nightly job."""
    config = config_from_args(args, ctx)
    now = ctx.clock()
    at = parse_when(args.at, "--at", end_of_day=True) if args.at else None
    if at and at > now:
        raise UsageError(f"--at {at.isoformat()} is in the future")
    loaded = load_inputs(config.policies, config.waivers, config.readiness_model, cwd=Path(ctx.cwd))
    run_id = make_run_id(now)
    out_dir = config.out_dir or unique_dir(Path(ctx.cwd) / "reports", run_id)
    options = AuditOptions(
        run_id=run_id,
        now=now,
        api_address=config.base_url or "(offline)",
        at=at,
        all_revisions=args.all_revisions,
        fail_on=config.fail_on,
        list_table=config.list_table,
        usage_days=None if args.no_usage else DEFAULT_DAYS,
    )

    def publish(data: ReportData) -> None:  # before the run is recorded complete
        write_reports(with_report_options(data, args, config.org), out_dir, args.outputs)

    try:
        outcome = _audit(
            config,
            loaded,
            options,
            out_dir,
            publish,
            offline=args.offline,
            quiet=args.quiet,
            ctx=ctx,
        )
    except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM (see auditor.cli.signals)
        _write_interrupted(loaded, options, out_dir, args.outputs)
        code, word = interrupt_exit(exc)
        print(f"auditor: {word}; partial reports in {out_dir}", file=ctx.stderr)
        print(f"auditor: exit {code}: {word}", file=ctx.stderr)
        return code
    if not args.quiet:
        print_summary(outcome.data, out_dir, ctx, args.outputs)
    return decide_exit(outcome.errors, outcome.failing, config.fail_on, args.soft_fail, ctx)


def _audit(
    config: Config,
    loaded: LoadedPolicy,
    options: AuditOptions,
    out_dir: Path,
    publish: Callable[[ReportData], None],
    *,
    offline: bool,
    quiet: bool = False,
    ctx: Context,
) -> AuditOutcome:
    problems: list[str] = []
    if not offline:
        require_remote(config)  # a missing address or token is a usage error, not a failed sync
    with open_store(config, create=not offline) as store:
        prepare_out_dir(out_dir)  # an unusable folder stops the run before it is recorded
        if not offline:
            try:
                usage = options.usage_days is not None
                summary = sync_store(store, config, ctx, quiet=quiet, usage=usage)
                options = replace(options, data_quality=summary.data_quality)
                if not quiet:
                    print(
                        f"synced: {summary.revisions_new} new revisions, "
                        f"{summary.reports_new} new reports",
                        file=ctx.stderr,
                    )
            except AuditorError as exc:  # keep what is stored; the run is marked incomplete
                print(
                    f"auditor: sync failed, auditing the stored data: {terminal_text(str(exc))}",
                    file=ctx.stderr,
                )
                problems.append(f"sync failed: {exc}")
        if problems:
            options = replace(options, not_evaluated=tuple(problems))
        _check_at(store, options.at)
        return run_audit(store, loaded, options, publish=publish)


def _check_at(store: Store, at: datetime | None) -> None:
    """`--at` before the first stored revision: one clear error, not a list of rules that
    could not be evaluated (nothing was in force then)."""
    if at is None or store.revision_at(at) is not None:
        return
    numbers = store.revision_numbers()
    first = store.get_revision(numbers[0]) if numbers else None
    if first is not None:
        raise UsageError(
            f"--at {at.isoformat()} is before the first stored settings revision "
            f"(rev {first.revision}, {first.updated_at.isoformat()}): nothing to audit"
        )


def _write_interrupted(
    loaded: LoadedPolicy, options: AuditOptions, out_dir: Path, outputs: Sequence[str]
) -> None:
    header = RunHeader(options.run_id, options.now, "run", options.api_address, options.fail_on)
    interrupted = ("interrupted before the evaluation finished",)
    data = build_report_data(header, loaded.policy.files, (), interrupted)
    write_reports(data, out_dir, outputs)
