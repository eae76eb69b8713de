"""`auditor emulator`: serve the platform API from seeded data on loopback until Ctrl-C.

Takes ports, seed, data sizes and `--fault` switches; prints `base_url=…`, `app_url=…` and
the demo tokens on stdout (one per line) once serving, and exits 0 when interrupted.
"""

from __future__ import annotations

import argparse
import signal
import threading
from types import FrameType
from typing import TYPE_CHECKING

from auditor.cli.common import check_sizes, parse_when
from auditor.errors import EXIT_OK, UsageError

if TYPE_CHECKING:
    from auditor.cli import Context
    from auditor.emulator.faults import FaultController


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def _faults(specs: list[str]) -> FaultController:
    """Arm every `--fault` switch, or fail with a usage error naming the bad one."""
    from auditor.emulator.faults import FaultController, parse_fault

    controller = FaultController()
    for spec in specs:
        try:
            endpoint, kind, options = parse_fault(spec)
            controller.add(endpoint, kind, **options)
        except (TypeError, ValueError) as exc:
            raise UsageError(f"--fault {spec}: {exc}") from exc
    return controller


def run(args: argparse.Namespace, ctx: Context) -> int:
    """Start the emulator, print its addresses and tokens, serve until interrupted."""
    from auditor.emulator import DEFAULT_TOKENS, start_emulator

    check_sizes(args.revisions, args.repos)
    faults, now = (
        _faults(args.fault),
        (parse_when(args.now, "--now", end_of_day=False) if args.now else None),
    )
    log = (lambda line: print(line, file=ctx.stderr, flush=True)) if args.log_requests else None
    try:
        emulator = start_emulator(
            seed=args.seed, revisions=args.revisions, repos=args.repos, now=now,
            host=args.host, port=args.port, app_port=args.app_port, log=log,
        )  # fmt: skip
    except OSError as exc:
        raise UsageError(
            f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}"
        ) from exc
    with emulator:
        emulator.faults = faults
        _announce(ctx, emulator.base_url, emulator.app_url, DEFAULT_TOKENS)
        _serve_until_interrupted()
    return EXIT_OK


def _announce(ctx: Context, base_url: str, app_url: str, tokens: dict[str, str]) -> None:
    print(f"base_url={base_url}", file=ctx.stdout)
    print(f"app_url={app_url}", file=ctx.stdout)
    for token, role in tokens.items():
        print(f"{role}_token={token}", file=ctx.stdout)
    ctx.stdout.flush()


def _serve_until_interrupted() -> None:
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _interrupt)
        signal.signal(signal.SIGINT, signal.default_int_handler)  # even if started in background
    forever = threading.Event()
    try:
        while not forever.wait(0.5):
            pass
    except KeyboardInterrupt:
        return
