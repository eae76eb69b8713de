"""`auditor sync`: fetch new settings revisions and readiness reports into the state file.

Takes the configuration, gives a one-paragraph summary on stdout (with `-q`, only when it names
integrity issues or data-quality warnings); exit 0, or 2 with one line on stderr (nothing saved
but the history pages kept on the way, which the line names and the next sync goes on from).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from auditor.cli.common import (
    api_address,
    config_from_args,
    require_remote,
    store_kept_only_if_synced,
    sync_store,
)
from auditor.common.escape import terminal_text
from auditor.errors import EXIT_OK

if TYPE_CHECKING:
    from auditor.cli import Context


def run_sync(args: argparse.Namespace, ctx: Context) -> int:
    """Handler: sync and print the summary."""
    config = config_from_args(args, ctx)
    require_remote(config)  # no address: a usage error before the store is touched
    with store_kept_only_if_synced(config) as store:  # a failed first sync leaves no file
        summary = sync_store(store, config, ctx, quiet=args.quiet, usage=not args.no_usage)
    from auditor.workflows.sync import format_summary  # after sync_store: see its httpx note

    # `-q`, as `run -q`: no warnings, no progress, no summary; but one that names integrity
    # issues or data-quality warnings is shown still (no report carries this sync's)
    if not args.quiet or summary.integrity_issues or summary.data_quality:
        print(terminal_text(format_summary(summary, api_address(config))), file=ctx.stdout)
    return EXIT_OK
