"""End-to-end scale: sync a large history from the emulator over HTTP, then audit it offline.

Prints, in one run: the time to parse the same API pages a sync fetches (history and readiness
reports, one page at a time, nothing kept, with `json` and `orjson`), a full `auditor sync`, an
offline `auditor run` (shipped packs + five reports), the nightly (10 new revisions: sync + run
again), and `run --all-revisions`, each command in its own process so its peak memory (VmHWM)
is its own. `--big N` repeats sync + run, and the nightly (10 new revisions: sync + run), at N
revisions for their peak memory alone.

The nightly target is measured the way the shipped workflow (`examples/github/nightly.yml`)
runs it: one online `auditor run` (sync + evaluate + reports in one process) into a state file
of its own, first from empty, then again after the 10 new revisions, `--nightly-rounds` times
(default 3), each on a copy of the state the first run left: the ratio takes the median, and
the range is printed. The two-process figure (`auditor sync` then `auditor run --offline`) is
printed beside it. Each command's CPU time (user + system, from the kernel's account of the
child) is printed beside its wall time, and the nightly's ratio in CPU time beside the target's
wall-time ratio: other jobs on a shared machine stretch the wall time of one run more than
another's, hardly the CPU time.

Targets (issue 13): run ≤ 3x json.loads of the same pages; nightly `auditor run` ≤ 5 % of the
first `auditor run`; peak memory of sync and run ≤ 150 MB (at 10,000 and 100,000 revisions);
`run --all-revisions` ≤ 300 MB (stopped at `--cap` MB so an unbounded run cannot exhaust the host;
the higher of two runs in a row, the second comparing with the first's finding records).
The run's peak is the higher of the first run's and the nightly run's (it reads the evaluation
state back).

    python bench/bench_scale.py [--revisions 10000] [--repos 500] [--big 100000] [--cap 1500]
                                [--nightly-rounds 3]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _util import MB, ParseBaseline, emulator_env, mb, parse_baseline, result, run_cli

from auditor.emulator import Emulator, generate_dataset, start_emulator
from auditor.fetch import HISTORY_PATH, REPORTS_PATH

TOKEN = "bench-owner-token-0123456789abcdef"
PAGE = 100  # the sync's default page size
NIGHTLY = 10


def fetch_pages(emu: Emulator) -> Iterator[bytes]:
    """The raw bodies of every history and readiness-report page, as a sync pages them."""
    auth = {"Authorization": f"Bearer {TOKEN}"}
    with httpx.Client(headers=auth, timeout=60) as client:
        params: dict[str, str] = {"limit": str(PAGE)}
        while True:
            body = client.get(emu.base_url + HISTORY_PATH, params=params).content
            yield body
            pagination = orjson.loads(body)["pagination"]
            if not pagination.get("hasMore"):
                break
            params = {"limit": str(PAGE), "cursor": pagination["nextCursor"]}
        params = {"limit": str(PAGE)}
        while True:
            body = client.get(emu.app_url + REPORTS_PATH, params=params).content
            yield body
            reports = orjson.loads(body)["reports"]
            if len(reports) < PAGE:
                break
            params = {"limit": str(PAGE), "startAfter": reports[-1]["reportId"]}


@contextmanager
def scene(revisions: int, repos: int) -> Iterator[tuple[Emulator, dict[str, str], str]]:
    """A running emulator with the history, and the environment pointing auditor at it."""
    dataset = generate_dataset(revisions=revisions, repos=repos)
    print(f"{revisions:,} revisions, {len(dataset.reports):,} readiness reports, {repos} repos")
    with (
        start_emulator(dataset=dataset, tokens={TOKEN: "owner"}) as emu,
        tempfile.TemporaryDirectory() as tmp,
    ):
        env = emulator_env(emu, TOKEN, Path(tmp) / "state.db")
        yield emu, env, tmp


#: The CPU seconds (user + system) of each command `command` ran, by its label.
CPU: dict[str, float] = {}


def command(
    argv: list[str], env: dict[str, str], tmp: str, cap: int | None = None, label: str = ""
) -> tuple[float, float]:
    """Run one auditor command; print its time, CPU time and peak; return (seconds, peak bytes
    or inf); its CPU seconds are kept in `CPU` under `label`, when given."""
    child = run_cli(argv, env, tmp, cap)
    shown = " ".join("DIR" if a.startswith(tmp) else a for a in argv)
    if label and child.cpu is not None:
        CPU[label] = child.cpu
    if child.stopped:
        print(f"  auditor {shown}: stopped at the {mb(cap or 0)} cap")
        return child.seconds, float("inf")
    if child.code not in (0, 1):
        raise SystemExit(f"auditor {shown} failed ({child.code}): {child.stderr}")
    cpu = f"cpu {child.cpu:6.2f} s  " if child.cpu is not None else ""
    print(f"  auditor {shown:<48} {child.seconds:8.2f} s  {cpu}peak {mb(child.peak or 0)}")
    return child.seconds, float(child.peak or 0)


def run_argv(tmp: str, name: str, *extra: str) -> list[str]:
    """`run --offline` writing its reports to a fresh folder."""
    return ["run", "--offline", "--soft-fail", "--out", str(Path(tmp) / name), *extra]


def online_argv(tmp: str, name: str) -> list[str]:
    """`run` as the nightly workflow runs it (sync + evaluate + reports), to a fresh folder."""
    return ["run", "--soft-fail", "--out", str(Path(tmp) / name)]


def nightly_runs(env: dict[str, str], tmp: str, rounds: int) -> float:
    """The online nightly `rounds` times, each on a copy of the state the first run left (the
    same 10 new revisions synced each time, as the night would): the median seconds. A shared
    machine moves one run by 0.3 s, a quarter of a nightly; the range is printed."""
    times, cpus = [], []
    for n in range(rounds):
        if n:
            shutil.copy(Path(tmp) / "one-first.db", Path(tmp) / "one.db")
            for extra in ("one.db-wal", "one.db-journal"):
                (Path(tmp) / extra).unlink(missing_ok=True)
        seconds, _ = command(online_argv(tmp, f"nightly-online-{n}"), env, tmp, label="nightly")
        times.append(seconds)
        cpus.append(CPU.get("nightly", 0.0))
    median = statistics.median(times)
    CPU["nightly"] = statistics.median(cpus)
    if rounds > 1:
        print(f"  nightly auditor run, {rounds} rounds: {min(times):.2f}-{max(times):.2f} s, "
              f"median {median:.2f} s; cpu {min(cpus):.2f}-{max(cpus):.2f} s, "
              f"median {CPU['nightly']:.2f} s")  # fmt: skip
    return median


def measure(revisions: int, repos: int, cap: int, rounds: int = 3) -> None:
    """Baseline, full sync + run, nightly (`rounds` times), --all-revisions: print figures and
    results."""
    with scene(revisions, repos) as (emu, env, tmp):
        base = parse_baseline(fetch_pages(emu))
        base.print("the API pages a full sync reads")
        sync_s, sync_peak = command(["sync"], env, tmp)
        run_s, run_peak = command(run_argv(tmp, "full"), env, tmp)
        # What the shipped nightly workflow runs: one `auditor run`, its own state file.
        one = {**env, "AUDITOR_STATE": str(Path(tmp) / "one.db")}
        first_s, _ = command(online_argv(tmp, "first-online"), one, tmp, label="first")
        shutil.copy(Path(tmp) / "one.db", Path(tmp) / "one-first.db")
        emu.add_revisions(NIGHTLY)
        again_s, _ = command(["sync"], env, tmp)
        night_s, night_peak = command(run_argv(tmp, "nightly"), env, tmp)
        nightly_s = nightly_runs(one, tmp, rounds)
        _, all_first = command(run_argv(tmp, "all", "--all-revisions"), env, tmp, cap)
        # Again: the second compares with the first's 100,000s of finding records.
        _, all_again = command(run_argv(tmp, "all-again", "--all-revisions"), env, tmp, cap)
    all_peak = max(all_first, all_again)
    print(
        f"  nightly as two processes: sync + run --offline {again_s + night_s:.2f} s against "
        f"{sync_s + run_s:.2f} s ({(again_s + night_s) / (sync_s + run_s):.0%})"
    )
    if "first" in CPU and "nightly" in CPU:  # steadier than the wall times on a shared machine
        print(f"  nightly auditor run in CPU time: {CPU['nightly']:.2f} s against the first "
              f"run's {CPU['first']:.2f} s ({CPU['nightly'] / CPU['first']:.0%})")  # fmt: skip
    report(revisions, base, run_s, nightly_s / first_s)
    report_memory(revisions, sync_peak, run_peak, night_peak)
    measured = (
        f"> {mb(cap)} (stopped)"
        if all_peak == float("inf")
        else f"{mb(all_peak)} (first {mb(all_first)}, again {mb(all_again)})"
    )
    result(f"peak memory of run --all-revisions at {revisions:,}", measured, "<= 300 MB",
           all_peak <= 300 * MB)  # fmt: skip


def report(revisions: int, base: ParseBaseline, run_s: float, nightly: float) -> None:
    """The time targets."""
    ratio, vs_orjson = run_s / base.json_s, run_s / base.orjson_s
    result(
        f"run --offline at {revisions:,} vs json.loads of the same pages",
        f"{ratio:.1f}x (orjson: {vs_orjson:.1f}x)",
        "<= 3x",
        ratio <= 3,
    )
    result(
        f"nightly auditor run after {NIGHTLY} new revisions vs the first auditor run "
        "(one process each)",
        f"{nightly:.0%}",
        "<= 5 %",
        nightly <= 0.05,
    )


def report_memory(
    revisions: int, sync_peak: float | None, run_peak: float | None, night: float | None = None
) -> None:
    """The peak-memory targets of sync and run at one size (None: not measured). The run's is
    the higher of the first run and the nightly's (which reads the evaluation state back)."""
    for name, peak in (("sync", sync_peak), ("run", run_peak)):
        measured = "not measured" if peak is None else mb(peak)
        if name == "run" and peak is not None and night is not None:
            measured = f"{mb(max(peak, night))} (first {mb(peak)}, nightly {mb(night)})"
            peak = max(peak, night)
        met = None if peak is None else peak <= 150 * MB
        result(f"peak memory of {name} at {revisions:,}", measured, "<= 150 MB", met)


def measure_big(revisions: int, repos: int) -> None:
    """At a large size, for peak memory only: the first online `auditor run` (sync and audit in
    one process, as the shipped workflow's first night runs it, into a state file of its own),
    sync + run --offline, then the nightly (10 new revisions) both ways."""
    sync_peak = run_peak = night_peak = online_peak = online_night = None
    try:
        with scene(revisions, repos) as (emu, env, tmp):
            one = {**env, "AUDITOR_STATE": str(Path(tmp) / "one.db")}
            _, online_peak = command(online_argv(tmp, "big-online"), one, tmp)
            _, sync_peak = command(["sync"], env, tmp)
            _, run_peak = command(run_argv(tmp, "big"), env, tmp)
            emu.add_revisions(NIGHTLY)
            command(["sync"], env, tmp)
            _, night_peak = command(run_argv(tmp, "big-nightly"), env, tmp)
            _, online_night = command(online_argv(tmp, "big-online-nightly"), one, tmp)
    except SystemExit as failed:  # e.g. the sync's deadline at 100,000: report, don't crash
        print(failed)
    report_memory(revisions, sync_peak, run_peak, night_peak)
    if online_peak is not None and online_night is not None:
        peak = max(online_peak, online_night)
        measured = f"{mb(peak)} (first {mb(online_peak)}, nightly {mb(online_night)})"
        result(f"peak memory of one online auditor run (sync + audit) at {revisions:,}",
               measured, "<= 150 MB", peak <= 150 * MB)  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    """Run the scale benchmark and print its figures and results."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--revisions", type=int, default=10_000)
    parser.add_argument("--repos", type=int, default=500)
    parser.add_argument("--big", type=int, default=0, help="also measure memory at N (0: skip)")
    parser.add_argument("--cap", type=int, default=1500, help="MB at which --all-revisions stops")
    parser.add_argument(
        "--nightly-rounds",
        type=int,
        default=3,
        help="nightly runs, each on the same state (median)",
    )
    args = parser.parse_args(argv)
    measure(args.revisions, args.repos, args.cap * MB, max(1, args.nightly_rounds))
    if args.big:
        measure_big(args.big, args.repos)
    else:
        report_memory(100_000, None, None)


if __name__ == "__main__":
    main()
