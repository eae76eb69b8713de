"""Sync against a bare HTTP loop: is redaction (and the rest of a sync) cheap next to fetching?

Starts the emulator with N revisions (no readiness app, so both sides read the same history
pages), then in one run, each in its own child process and timed from start to exit (so both
pay for starting Python and importing what they use, and neither shares the emulator's
interpreter lock): a bare httpx loop (same pages and page size, GET + orjson parse, pages not
kept) and a full `auditor sync` into a fresh state file (its peak memory is its own). With
`--repeat R` both run R times, alternating, and the best time of each is kept (other work on
the machine only ever adds time). Prints the ratio (target <= 1.5x), the peak RSS (target
<= 150 MB) and the state file's size.

    python bench/bench_sync.py [--revisions 10000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from auditor.emulator import generate_dataset, start_emulator
from auditor.fetch.paging import HISTORY_PATH

TOKEN = "bench-owner-token-0123456789abcdef"
PAGE = 100
_CHILD = """
import re, sys
from auditor.__main__ import entry  # as the `auditor` command starts
code = entry()
status = open("/proc/self/status").read()
print(int(re.search(r"VmHWM:\\s+(\\d+)", status).group(1)) / 1024)
raise SystemExit(code)
"""


_BARE = """
import sys, time
import httpx, orjson
base_url, path, token, page = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
start, pages, cursor = time.perf_counter(), 0, None
with httpx.Client(base_url=base_url, headers={"Authorization": f"Bearer {token}"}) as c:
    while True:
        params = {"limit": page, **({"cursor": cursor} if cursor else {})}
        body = orjson.loads(c.get(path, params=params).content)
        pages += 1
        if not body["pagination"].get("hasMore"):
            break
        cursor = body["pagination"]["nextCursor"]
print(pages, time.perf_counter() - start)
"""


def _child_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def bare_loop(base_url: str) -> tuple[float, float, int, float]:
    """GET + parse every history page as a sync would page it, nothing kept, in a child
    process: (seconds from start to exit, seconds of the loop alone, pages, CPU seconds)."""
    cpu = _child_cpu()
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", _BARE, base_url, HISTORY_PATH, TOKEN, str(PAGE)],
        capture_output=True,
        text=True,
        check=True,
    )
    seconds = time.perf_counter() - start
    pages, loop = proc.stdout.split()
    return seconds, float(loop), int(pages), _child_cpu() - cpu


def child_sync(env: dict[str, str], cwd: str) -> tuple[float, float, float]:
    """`auditor sync` in a child process: (seconds, peak RSS in MiB, CPU seconds)."""
    cpu = _child_cpu()
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, "sync", "--no-usage"],  # the pages the baseline reads
        env={**os.environ, **env},
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"sync failed: {proc.stderr.strip()}")
    return seconds, float(proc.stdout.strip().splitlines()[-1]), _child_cpu() - cpu


def main() -> None:
    """Run the benchmark and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--revisions", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=1, help="runs of each side; best kept")
    args = parser.parse_args()
    dataset = generate_dataset(revisions=args.revisions, repos=1)
    bare, loop, synced, rss, cpu, size = [], [], [], [], [], []
    with (
        start_emulator(dataset=dataset, tokens={TOKEN: "owner"}) as emu,
        tempfile.TemporaryDirectory() as tmp,
    ):
        for attempt in range(args.repeat):
            seconds, inside, pages, bare_cpu = bare_loop(emu.base_url)
            bare.append(seconds)
            loop.append(inside)
            env = {
                "AUDITOR_BASE_URL": emu.base_url,
                "AUDITOR_TOKEN": TOKEN,
                "AUDITOR_STATE": str(Path(tmp) / f"state-{attempt}.db"),
            }
            seconds, peak, sync_cpu = child_sync(env, tmp)
            synced.append(seconds)
            rss.append(peak)
            size.append(Path(env["AUDITOR_STATE"]).stat().st_size / 1e6)
            cpu.append(sync_cpu / bare_cpu)
            print(
                f"run {attempt + 1}: bare {bare[-1]:.2f} s (loop alone {loop[-1]:.2f} s, "
                f"CPU {bare_cpu:.2f} s), sync {synced[-1]:.2f} s (CPU {sync_cpu:.2f} s), "
                f"{synced[-1] / bare[-1]:.2f}x, peak {peak:.1f} MiB, state file {size[-1]:.1f} MB",
                file=sys.stderr,
            )
    ratio = min(synced) / min(bare)
    print(f"{args.revisions} revisions, {pages} pages of {PAGE}, best of {args.repeat}")
    print(
        f"bare httpx loop (GET + parse)   {min(bare):8.2f} s   (the loop alone {min(loop):.2f} s)"
    )
    print(
        f"auditor sync (full)             {min(synced):8.2f} s   {ratio:5.2f}x   target <= 1.5x: "
        f"{'met' if ratio <= 1.5 else 'missed'}"
    )
    # The bare loop's time moves with the machine more than the sync's (orjson building every
    # page's objects anew, which the sync does not: it parses only what changed), so the
    # ratio of each run is printed too: the target's ratio takes each side's best.
    each = sorted(s / b for s, b in zip(synced, bare, strict=True))
    print(
        f"ratio run by run: median {statistics.median(each):.2f}x "
        f"(from {each[0]:.2f}x to {each[-1]:.2f}x over {len(each)} runs)"
    )
    print(f"CPU time of the sync process / of the bare loop's: {min(cpu):.2f}x (best run)")
    print(f"state file after the sync        {max(size):8.1f} MB")
    print(
        f"peak RSS of the sync process    {max(rss):8.1f} MiB  target <= 150 MB: "
        f"{'met' if max(rss) * 1.048576 <= 150 else 'missed'}"
    )


if __name__ == "__main__":
    main()
