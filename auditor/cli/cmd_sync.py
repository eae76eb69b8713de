"""`auditor sync`: fetch new settings revisions and readiness reports into the state file.

Takes the configuration, gives a one-paragraph summary on stdout; exit 0, or 2 with one line
on stderr (nothing saved).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from auditor.cli.common import (
    add_common_options,
    add_usage_option,
    config_from_args,
    open_store,
    require_remote,
    sync_store,
)
from auditor.common.escape import terminal_text
from auditor.errors import EXIT_OK, StoreError
from auditor.store.database import Store
from auditor.store.file import lock_path
from auditor.workflows.sync import format_summary

if TYPE_CHECKING:
    from auditor.cli import Context


def register(subparsers: Any) -> None:
    """Add the `sync` subcommand."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "sync",
        help="fetch new revisions and readiness reports into the state file",
        description="Fetch what is new from the service into the state file (all or nothing).",
    )
    add_common_options(parser)
    add_usage_option(parser)
    parser.set_defaults(handler=run_sync)


def _never_synced(store: Store) -> bool:
    try:
        return store.last_sync() is None
    except StoreError:
        return False


def run_sync(args: argparse.Namespace, ctx: Context) -> int:
    """Handler: sync and print the summary."""
    config = config_from_args(args, ctx)
    base_url, _ = require_remote(config)
    # Only files this command creates may be removed again: a state file that was there before
    # (even one that turns out damaged, or one another run made since this one looked) is never
    # deleted by a failing sync, nor a symlink the user made to where the file is to be.
    lock = None if config.state_url is not None else lock_path(config.state_path)
    lock_made = lock is not None and not lock.exists()
    with open_store(config, create=True) as store:  # the lock is held from here on
        try:
            summary = sync_store(store, config, ctx, usage=not args.no_usage)
        except BaseException:
            if store.created and _never_synced(store):  # a failed first sync leaves no file
                config.state_path.resolve().unlink(missing_ok=True)
                if lock is not None and lock_made:
                    lock.unlink(missing_ok=True)
            raise
    print(terminal_text(format_summary(summary, base_url)), file=ctx.stdout)
    return EXIT_OK
