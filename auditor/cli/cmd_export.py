"""`auditor export`: write an evidence bundle from the state file (`auditor.workflows.export`)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from auditor.cli.common import (
    api_address,
    check_at,
    config_from_args,
    open_store,
    parse_at,
)
from auditor.cli.outdir import hold_out_dir
from auditor.cli.signals import held, ignore_from_now
from auditor.cli.summary import make_run_id
from auditor.common.dates import DEFAULT_DAYS
from auditor.common.escape import terminal_text
from auditor.config import org_label
from auditor.errors import EXIT_OK
from auditor.redact.shown import printed_path
from auditor.workflows.export import (
    ExportRequest,
    OutTaken,
    check_out,
    export_bundle,
    remove_bundle,
)

if TYPE_CHECKING:
    from auditor.cli import Context
    from auditor.models import JSON


def run_export(args: argparse.Namespace, ctx: Context) -> int:
    """Handler: export the bundle and say where it went."""
    config = config_from_args(args, ctx)
    now = ctx.clock()
    at = parse_at(args.at, now)
    out: Path = Path(ctx.cwd) / (args.out or "evidence")
    ctx.paths.add(str(out))  # a part of it that looks like a secret is not shown in an error
    store = open_store(config, readonly=True)
    closed = False
    try:
        check_at(store, at)  # as `run`: nothing was in force before the first revision
        synced = store.last_sync()  # the address the stored data came from, when not given
        request = ExportRequest(
            run_id=make_run_id(now),
            now=now,
            api_address=api_address(config, synced.base_url if synced else None),
            # given none, the organization the state file holds (never `default` for its data)
            org=config.org
            if config.org_given
            else org_label(store.stored_org() or config.org, f"state file {store.path}: org"),
            policies=config.policies,
            waivers=config.waivers,
            readiness_model=config.readiness_model,
            cwd=Path(ctx.cwd),
            tokens=tuple(ctx.secrets()),
            at=at,
            all_revisions=args.all_revisions,
            fail_on=config.fail_on,
            diff_keys=dict(config.diff_keys),
            sign_key=Path(ctx.cwd) / args.sign_key if args.sign_key else None,
            usage_days=None if args.no_usage else DEFAULT_DAYS,
            warn=lambda line: print(f"auditor: warning: {terminal_text(line)}", file=ctx.stderr),
        )

        def finish(manifest: dict[str, JSON]) -> None:
            """The store closed and the closing line out: until then, an interrupt removes the
            bundle (after it, nothing is left to do: from the line on, Ctrl-C and SIGTERM are
            ignored, as after any command's last line)."""
            nonlocal closed
            closed = True
            store.close()
            ignore_from_now()
            signed = " and signed (manifest.sig)" if args.sign_key else ""
            # the command's tokens as `[token]`, a name the detectors flag not shown
            shown = terminal_text(printed_path(out, ctx.secrets()))  # (a line break: escaped)
            print(
                f"Wrote evidence bundle to {shown}: {manifest['revisions']} revisions, "
                f"{manifest['reports']} readiness reports, {manifest['integrityIssues']} "
                f"integrity issues, {manifest['findings']} results; sha256 of every file in "
                f"manifest.json{signed}. Check it with: auditor verify {shown}",
                file=ctx.stdout,
            )
            ctx.stdout.flush()

        check_out(out)  # (in the export's words, before the folder is made to be held)
        # held as `run` holds its report folder: a second export (or run) into it is refused
        # at once, exit 2; two at once left one bundle, a mix, or none (T97 #1). The folders
        # made for it go again if the export fails (`remove_made`: each only if empty).
        with hold_out_dir(out, remove_if_failed=True):
            try:
                export_bundle(store, out, request, finish)
            except OutTaken:  # written to meanwhile: nothing there is this export's
                raise
            except BaseException:
                # An export that fails removes what it wrote; a second signal (Ctrl-C twice,
                # SIGINT then SIGTERM) cut that removal short and left a bundle, some `verify`
                # passed: what the removal left goes here, with the signals held.
                with held():
                    remove_bundle(out)
                raise
    finally:
        if not closed:
            store.close()
    return EXIT_OK
