"""`auditor demo`: the whole nightly job against the built-in emulator, in one command.

Starts the emulator on free loopback ports with its seeded data, runs `auditor run` against it
over real HTTP with a fresh state file, writes the five reports (default `reports/demo/`) and
prints where the HTML is. Exits 0 when the audit ran, whatever it found (it says what a nightly
run would have exited with), 2 when it could not run.
"""

from __future__ import annotations

import argparse
import contextlib
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from auditor.cli.common import check_sizes
from auditor.cli.parsers import DEMO_ORGS
from auditor.cli.signals import EXIT_TERMINATED
from auditor.cli.summary import main_report
from auditor.errors import EXIT_ERROR, EXIT_INTERRUPTED, EXIT_OK, UsageError

if TYPE_CHECKING:
    from auditor.cli import Context

DEMO_TOKEN = "demo-owner-token"


def demo_command(args: argparse.Namespace, ctx: Context) -> int:
    """Handler: emulator up, `auditor run`, emulator down."""
    from auditor.cli import main
    from auditor.emulator import start_emulator

    check_sizes(args.revisions, args.repos)
    if args.orgs is not None and not 1 <= args.orgs <= len(DEMO_ORGS):
        raise UsageError(f"--orgs must be between 1 and {len(DEMO_ORGS)}")
    out = args.out or Path(ctx.cwd) / "reports" / "demo"
    if args.orgs:
        return _demo_orgs(args, ctx, out)
    with (
        start_emulator(
            seed=args.seed, revisions=args.revisions, repos=args.repos, now=ctx.clock()
        ) as emu,
        tempfile.TemporaryDirectory(prefix="auditor-demo-") as tmp,
    ):
        if not args.quiet:
            print(f"demo: emulator serving {emu.base_url} and {emu.app_url}", file=ctx.stderr)
        env = {
            **_without_network(ctx, args),
            "AUDITOR_BASE_URL": emu.base_url,
            "AUDITOR_APP_URL": emu.app_url,
            "AUDITOR_TOKEN": DEMO_TOKEN,
            "AUDITOR_STATE": args.state or str(Path(tmp) / "state.db"),
        }
        code = main(_run_argv(["run"], out, args), replace(ctx, env=env, local_service=True))
    return _finish(code, str(main_report(out, args.outputs)), args, ctx)


#: The variables that say how to reach a remote service, which the demo's emulator is not.
_NETWORK_VARIABLES = ("AUDITOR_PROXY", "AUDITOR_CA_BUNDLE")


def _without_network(ctx: Context, args: argparse.Namespace) -> dict[str, str]:
    """The environment without `AUDITOR_PROXY` and `AUDITOR_CA_BUNDLE`: the emulator listens on
    this machine's loopback, which a proxy elsewhere cannot reach (and a stale bundle would stop
    the demo for nothing). Says so when one was set."""
    env = dict(ctx.env)
    dropped = [name for name in _NETWORK_VARIABLES if env.pop(name, "")]
    if dropped and not args.quiet:
        print(
            f"demo: {' and '.join(dropped)} not used: the emulator runs on this machine",
            file=ctx.stderr,
        )
    return env


def _run_argv(head: list[str], out: Path, args: argparse.Namespace) -> list[str]:
    """The `auditor run` command line the demo runs."""
    argv = [*head, "--out", str(out), "--output", ",".join(args.outputs)]
    return [*argv, *(["--quiet"] if args.quiet else [])]


def _finish(code: int, shown: str, args: argparse.Namespace, ctx: Context) -> int:
    """The demo's exit: 0 when the audit ran (saying what a nightly run would have exited)."""
    if code in (EXIT_ERROR, EXIT_INTERRUPTED, EXIT_TERMINATED):  # (SIGTERM: 143, not 0)
        return code
    if not args.quiet:
        print(f"demo: open {shown} (a nightly run would have exited {code})", file=ctx.stdout)
    return EXIT_OK


def _demo_orgs(args: argparse.Namespace, ctx: Context, out: Path) -> int:
    """`--orgs N`: N emulators (seeds `--seed`, `--seed`+1 …), one organization each, audited
    together by `auditor run --orgs` into `<out>/<organization>/`."""
    from auditor.cli import main
    from auditor.emulator import Emulator, start_emulator

    names = DEMO_ORGS[: args.orgs]
    with contextlib.ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="auditor-demo-")))
        emulators: list[Emulator] = []
        for n in range(len(names)):
            emulators.append(
                stack.enter_context(
                    start_emulator(
                        seed=args.seed + n,
                        revisions=args.revisions,
                        repos=args.repos,
                        now=ctx.clock(),
                    )
                )
            )
        lines = []
        for name, emu in zip(names, emulators, strict=True):
            if not args.quiet:
                print(f"demo: {name}: emulator serving {emu.base_url}", file=ctx.stderr)
            lines += [
                "[[org]]",
                f'name = "{name}"',
                f'base_url = "{emu.base_url}"',
                f'app_url = "{emu.app_url}"',
                'token_env = "AUDITOR_DEMO_TOKEN"',
                "",
            ]
        orgs_file = tmp / "orgs.toml"
        orgs_file.write_text("\n".join(lines), encoding="utf-8")
        env = {
            **_without_network(ctx, args),
            "AUDITOR_DEMO_TOKEN": DEMO_TOKEN,
            "AUDITOR_STATE": args.state or str(tmp / "state.db"),
        }
        argv = _run_argv(["run", "--orgs", str(orgs_file)], out, args)
        code = main(argv, replace(ctx, env=env, local_service=True))
    return _finish(code, f"{out}/<organization>/", args, ctx)
