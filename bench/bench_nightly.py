"""Where the nightly's time goes: the online `auditor run` after 10 new revisions, phase by phase.

Figures only, no target (`bench_scale.py` measures issue 13's nightly target; this script says
what that nightly spends its CPU on, so a change to one part can be weighed against the rest).
One emulator history (default 10,000 revisions, 500 repositories) and one first online
`auditor run` into a state file; then 10 new revisions, and `--rounds` nightly runs, each on a
copy of the state the first run left, each in its own process with timers around the parts of
the run (CPU seconds: other jobs on a shared machine stretch wall time far more). The first
part, "imports", is the CPU the process used before the command began (the interpreter, the
modules the command line loads, the timers' own imports of modules the run loads anyway).

With `--against DIR` (another checkout, such as the main branch's worktree), each round runs
the nightly with both code bases in turn, alternating which goes first, on the same history
and state, with the same fixed clock, and checks that they write the same five reports, byte
for byte: an A/B of a change on the same machine at the same time. The table gives each
part's median and range over the rounds.

    python bench/bench_nightly.py [--revisions 10000] [--repos 500] [--rounds 3]
                                  [--against ../main]
"""

from __future__ import annotations

import argparse
import filecmp
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _util import emulator_env, run_cli

from auditor.emulator import generate_dataset, start_emulator

TOKEN = "bench-owner-token-0123456789abcdef"
NIGHTLY = 10
ROOT = Path(__file__).resolve().parents[1]
REPORTS = ("report.html", "report.md", "findings.json", "findings.sarif", "junit.xml")

# The child: timers around the parts of the run (each by module, attribute and, for a method,
# its class; a part whose function is not found is left out), the clock fixed at
# `BENCH_NIGHTLY_NOW` (so that two code bases write the same reports, run id and times
# included), then the command as `auditor` runs it. It prints its parts as
# one JSON line on stderr, after `PARTS `.
_CHILD = r"""
import atexit, dataclasses, importlib, json, os, sys, time
from datetime import datetime

parts = {}

def add(label, cpu):
    parts[label] = parts.get(label, 0.0) + cpu

def timed(label, fn):
    def run(*args, **kwargs):
        start = time.process_time()
        try:
            return fn(*args, **kwargs)
        finally:
            add(label(args) if callable(label) else label, time.process_time() - start)
    return run

def wrap(module, name, label, owner=None):
    try:
        holder = importlib.import_module(module)
        holder = getattr(holder, owner) if owner else holder
        setattr(holder, name, timed(label, getattr(holder, name)))
    except (ImportError, AttributeError):
        pass

import auditor.cli as cli
import auditor.cli.cmd_run as cmd_run

NOW = datetime.fromisoformat(os.environ["BENCH_NIGHTLY_NOW"])

class _Fixed(datetime):
    @classmethod
    def now(cls, tz=None):
        return NOW

if hasattr(cli, "datetime"):
    cli.datetime = _Fixed

started = cmd_run.run_command

def run_command(*args, **kwargs):
    add("imports", time.process_time())
    return started(*args, **kwargs)

cmd_run.run_command = run_command
wrap("auditor.cli.cmd_run", "sync_store", "sync")
try:
    import auditor.workflows.sync as sync
    for feed, label in (("_HISTORY_FEED", "sync: history page"),
                        ("_READINESS_FEED", "sync: readiness page")):
        f = getattr(sync, feed)
        setattr(sync, feed, dataclasses.replace(f, ingest=timed(label, f.ingest)))
except (ImportError, AttributeError, TypeError):
    pass
wrap("auditor.workflows.sync", "sync_usage", "sync: usage analytics")
wrap("auditor.store.database", "scrub_stored", "sync: scrub stored rows", "Store")
wrap("auditor.workflows.run", "redacted_inputs", "audit: policy texts redacted")
wrap("auditor.workflows.run", "read", "audit: state and inputs read", "_Known")
wrap("auditor.workflows.run", "_inputs", "audit: state and inputs read")
wrap("auditor.evaluate.engine", "evaluate", "audit: evaluate")
wrap("auditor.workflows.run", "remember", "audit: evaluation state saved", "_Known")
for name in ("findings_from_pending", "continued", "compare_runs"):
    wrap("auditor.findings", name, "audit: findings made, compared, recorded")
for name in ("previous_complete_run", "finish_run"):
    wrap("auditor.store.database", name, "audit: findings made, compared, recorded", "Store")
wrap("auditor.report", "_write", lambda args: "reports: " + str(args[1]))
wrap("auditor.store.database", "complete_run", "run recorded complete", "Store")

def report():
    parts["total"] = time.process_time()
    print("PARTS " + json.dumps(parts), file=sys.stderr, flush=True)

atexit.register(report)
from auditor.__main__ import entry
sys.argv = ["auditor", *sys.argv[1:]]
raise SystemExit(entry())
"""


def nightly(
    code: Path, state: Path, out: Path, env: dict[str, str], now: datetime
) -> dict[str, float]:
    """One nightly `auditor run` with `code` (a checkout) on a copy of `state`, its clock at
    `now`: its parts."""
    night = out.with_suffix(".db")
    shutil.copy(state, night)
    run_env = {
        **os.environ,
        **env,
        "AUDITOR_STATE": str(night),
        "BENCH_NIGHTLY_NOW": now.isoformat(),
        "PYTHONPATH": os.pathsep.join([str(code), os.environ.get("PYTHONPATH", "")]).rstrip(
            os.pathsep
        ),
    }
    run_env.pop("PYTHONDONTWRITEBYTECODE", None)
    argv = [sys.executable, "-c", _CHILD, "run", "--soft-fail", "--out", str(out)]
    proc = subprocess.run(argv, env=run_env, cwd=code, capture_output=True, text=True)
    found = [line for line in proc.stderr.splitlines() if line.startswith("PARTS ")]
    if proc.returncode not in (0, 1) or not found:
        raise SystemExit(f"nightly with {code} failed ({proc.returncode}): {proc.stderr[-2000:]}")
    parts: dict[str, float] = json.loads(found[-1][len("PARTS ") :])
    timed = sum(v for k, v in parts.items() if k != "total" and not k.startswith("sync: "))
    parts["other"] = max(0.0, parts["total"] - timed)
    return parts


def compiled(code: Path) -> None:
    """Write `code`'s bytecode, as an installed package has it (see `_util._compiled`)."""
    import compileall

    compileall.compile_dir(str(code / "auditor"), quiet=1)


def table(names: list[str], runs: dict[str, list[dict[str, float]]]) -> None:
    """Each part's median CPU seconds (and range) per code base."""
    keys: list[str] = []
    for rounds in runs.values():
        for parts in rounds:
            keys += [k for k in parts if k not in keys and k not in ("total", "other")]
    first = {k: i for i, k in enumerate(keys)}  # as met, each sync part under the sync
    keys.sort(key=lambda k: (first.get("sync", 0), 1) if k.startswith("sync: ") else (first[k], 0))
    keys += ["other", "total"]
    header = "".join(f"{n:>26}" for n in names)
    print(f"\n{'CPU seconds (median, range)':<44}{header}")
    for key in keys:
        cells = []
        for name in names:
            values = [p.get(key, 0.0) for p in runs[name]]
            med = statistics.median(values)
            cells.append(f"{med:8.3f} ({min(values):.3f}-{max(values):.3f})")
        shown = f"  {key[len('sync: ') :]}" if key.startswith("sync: ") else key  # within sync
        print(f"{shown:<44}" + "".join(f"{c:>26}" for c in cells))


def main(argv: list[str] | None = None) -> None:
    """Measure the nightly's parts (and, with `--against`, compare two code bases)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--revisions", type=int, default=10_000)
    parser.add_argument("--repos", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--against", type=Path, default=None, help="another checkout to compare")
    args = parser.parse_args(argv)
    codes = {"this checkout": ROOT}
    if args.against is not None:
        codes["--against"] = args.against.resolve()
    for code in codes.values():
        compiled(code)
    dataset = generate_dataset(revisions=args.revisions, repos=args.repos)
    print(f"{args.revisions:,} revisions, {len(dataset.reports):,} readiness reports, "
          f"{args.repos} repos; {args.rounds} nightly rounds")  # fmt: skip
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in codes}
    with (
        start_emulator(dataset=dataset, tokens={TOKEN: "owner"}) as emu,
        tempfile.TemporaryDirectory() as folder,
    ):
        tmp = Path(folder)
        env = emulator_env(emu, TOKEN, tmp / "first.db")
        first = run_cli(["run", "--soft-fail", "--out", str(tmp / "first")], env, folder)
        if first.code not in (0, 1):
            raise SystemExit(f"the first run failed ({first.code}): {first.stderr}")
        print(f"first auditor run: {first.seconds:.2f} s, cpu {first.cpu or 0:.2f} s")
        emu.add_revisions(NIGHTLY)
        now = datetime.now(UTC)  # every nightly's clock: the same run id, times and window
        names = list(codes)
        for n in range(args.rounds):
            order = names if n % 2 == 0 else names[::-1]
            outs = {}
            for name in order:
                outs[name] = tmp / f"night-{n}-{names.index(name)}"
                runs[name].append(nightly(codes[name], tmp / "first.db", outs[name], env, now))
            if len(outs) == 2:
                a, b = outs.values()
                differ = [f for f in REPORTS if not filecmp.cmp(a / f, b / f, shallow=False)]
                print(f"round {n + 1}: the two code bases' reports are "
                      + (f"DIFFERENT: {', '.join(differ)}" if differ
                         else "the same, byte for byte"))  # fmt: skip
        table(names, runs)


if __name__ == "__main__":
    main()
