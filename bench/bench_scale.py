"""End-to-end scale: sync a large history from the emulator over HTTP, then audit it offline.

Prints, in one run: the time to json-parse every history page (the floor), the time of a full
`auditor sync` (HTTP + validation + redaction + SQLite), a second, incremental sync after a few
new revisions, and an offline `auditor run` (evaluation of the shipped packs + five reports),
each with its ratio to the parse time. Each command runs in its own process (as in CI), so its
peak memory (max RSS) is measured alone, next to the memory it would take to hold every parsed
revision (the design's "stream, don't hold" baseline).

    python bench/bench_scale.py [--revisions 10000] [--repos 500]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from auditor.common.jsonutil import loads
from auditor.emulator import generate_dataset, start_emulator

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _util import row, timed

TOKEN = "bench-owner-token"


def _parse_pages(history: list[dict[str, object]]) -> float:
    import orjson

    pages = [
        orjson.dumps({"changes": history[i : i + 100], "pagination": {"hasMore": True}})
        for i in range(0, len(history), 100)
    ]
    seconds, _ = timed(lambda: [loads(p) for p in pages], repeat=3)
    return seconds


def _cli(argv: list[str], env: dict[str, str], cwd: str) -> tuple[int, float, float]:
    """Run `auditor ARGV` in a child process: (exit code, seconds, the child's max RSS in MiB)."""
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, *argv],
        env={**os.environ, **env},
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )
    seconds = time.perf_counter() - start
    return proc.returncode, seconds, float(proc.stdout.strip().splitlines()[-1])


# VmHWM, not ru_maxrss: Linux carries ru_maxrss across exec from the (large) parent.
_CHILD = """
import re, sys
from auditor.cli import main
code = main(sys.argv[1:])
status = open("/proc/self/status").read()
print(int(re.search(r"VmHWM:\\s+(\\d+)", status).group(1)) / 1024)
raise SystemExit(code)
"""


def main_bench() -> None:
    """Run the scale benchmark and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--revisions", type=int, default=10_000)
    parser.add_argument("--repos", type=int, default=500)
    args = parser.parse_args()

    dataset = generate_dataset(revisions=args.revisions, repos=args.repos)
    parse = _parse_pages(dataset.history)
    print(f"{args.revisions} revisions, {len(dataset.reports)} readiness reports")
    print(row("json-parse every history page (baseline)", parse, parse))
    with (
        start_emulator(dataset=dataset, tokens={TOKEN: "owner"}) as emu,
        tempfile.TemporaryDirectory() as tmp,
    ):
        env = {
            "AUDITOR_BASE_URL": emu.base_url,
            "AUDITOR_APP_URL": emu.app_url,
            "AUDITOR_TOKEN": TOKEN,
            "AUDITOR_STATE": str(Path(tmp) / "state.db"),
        }
        held = _held_mib(dataset.history)
        print(f"{'holding every parsed revision would take':<58} {held:10.1f} MiB")
        code, sync_s, rss = _cli(["sync"], env, tmp)
        assert code == 0
        print(row("auditor sync, full history over HTTP", sync_s, parse))
        print(f"{'  peak RSS of the sync process':<58} {rss:10.1f} MiB")
        emu.add_revisions(3)
        code, again_s, _ = _cli(["sync"], env, tmp)
        assert code == 0
        print(row("auditor sync, incremental (3 new revisions)", again_s, parse))
        out = str(Path(tmp) / "r")
        code, run_s, rss = _cli(["run", "--offline", "--soft-fail", "--out", out], env, tmp)
        print(row(f"auditor run --offline (exit {code}): evaluate + 5 reports", run_s, parse))
        print(f"{'  peak RSS of the run process':<58} {rss:10.1f} MiB")


def _held_mib(history: list[dict[str, object]]) -> float:
    import tracemalloc

    import orjson

    blobs = [orjson.dumps(c) for c in history[:500]]
    tracemalloc.start()
    kept = [loads(b) for b in blobs]
    size, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del kept
    return size / len(blobs) * len(history) / 2**20


if __name__ == "__main__":
    main_bench()
