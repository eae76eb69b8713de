"""`auditor emulator`: serve the platform API from seeded data on loopback until Ctrl-C.

Takes ports, seed, data sizes and `--fault` switches; prints `base_url=…`, `app_url=…` and
the demo tokens on stdout (one per line) once serving, and exits 0 when interrupted.
"""

from __future__ import annotations

import argparse
import signal
import threading
from types import FrameType
from typing import TYPE_CHECKING, Any

from auditor.cli.common import check_sizes, parse_when
from auditor.errors import EXIT_OK, UsageError

if TYPE_CHECKING:
    from auditor.cli import Context
    from auditor.emulator.faults import FaultController


def _port(text: str) -> int:
    """A TCP port number, 0-65535 (0: any free one); argparse's usage error otherwise."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a port number 0-65535, got {text!r}") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"expected a port number 0-65535, got {port}")
    return port


def register(subparsers: Any) -> None:
    """Add the `emulator` subcommand."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "emulator",
        help="serve the platform API locally from seeded, realistic data",
        description="Serve the platform API on loopback from seeded data (for demos and tests). "
        "Prints the two addresses and the demo tokens, then serves until Ctrl-C.",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=_port, default=0, help="main API port (0 = any free port)")
    parser.add_argument(
        "--app-port", type=_port, default=0, help="readiness API port (0 = any free port)"
    )
    parser.add_argument("--seed", type=int, default=7, help="data seed (default 7)")
    parser.add_argument(
        "--revisions", type=int, default=240, help="settings revisions (default 240)"
    )
    parser.add_argument(
        "--repos", type=int, default=36, help="repositories with readiness reports (default 36)"
    )
    parser.add_argument(
        "--now", metavar="ISO", help="the data's present (default 2026-11-01T12:00:00Z)"
    )
    parser.add_argument(
        "--fault",
        action="append",
        default=[],
        metavar="ENDPOINT:KIND[:page=N][:times=N][:param=value]",
        help="arm a fault, e.g. history:429:page=2:retry_after=3 (repeatable)",
    )
    parser.add_argument("--log-requests", action="store_true", help="log each request on stderr")
    parser.set_defaults(handler=run)


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
