"""End-to-end scale: sync a large history from the emulator over HTTP, then audit it offline.

Prints, in one run: the time to json-parse every history page (the floor), the time of a full
`auditor sync` (HTTP + validation + redaction + SQLite), a second, incremental sync after a few
new revisions, and an offline `auditor run` (evaluation of the shipped packs + five reports),
each with its ratio to the parse time, and the peak memory (max RSS) after each step.

    python bench/bench_scale.py [--revisions 10000] [--repos 500]
"""

from __future__ import annotations

import argparse
import io
import resource
import sys
import tempfile
import time
from pathlib import Path

from auditor.cli import Context, main
from auditor.emulator import generate_dataset, start_emulator
from auditor.jsonutil import loads

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _util import row, timed

TOKEN = "bench-owner-token"


def _rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _parse_pages(history: list[dict[str, object]]) -> float:
    import orjson

    pages = [
        orjson.dumps({"changes": history[i : i + 100], "pagination": {"hasMore": True}})
        for i in range(0, len(history), 100)
    ]
    seconds, _ = timed(lambda: [loads(p) for p in pages], repeat=3)
    return seconds


def _cli(argv: list[str], env: dict[str, str], cwd: str) -> int:
    ctx = Context(env=env, stdout=io.StringIO(), stderr=io.StringIO(), cwd=cwd)
    return main(argv, ctx)


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
        base_rss = _rss_mib()
        start = time.perf_counter()
        assert _cli(["sync"], env, tmp) == 0
        sync_s = time.perf_counter() - start
        print(row("auditor sync, full history over HTTP", sync_s, parse))
        print(f"{'  peak RSS growth during the sync':<58} {_rss_mib() - base_rss:10.1f} MiB")
        emu.add_revisions(3)
        start = time.perf_counter()
        assert _cli(["sync"], env, tmp) == 0
        print(
            row("auditor sync, incremental (3 new revisions)", time.perf_counter() - start, parse)
        )
        base_rss = _rss_mib()
        start = time.perf_counter()
        code = _cli(["run", "--offline", "--soft-fail", "--out", str(Path(tmp) / "r")], env, tmp)
        run_s = time.perf_counter() - start
        print(row(f"auditor run --offline (exit {code}): evaluate + 5 reports", run_s, parse))
        print(f"{'  peak RSS growth during the run':<58} {_rss_mib() - base_rss:10.1f} MiB")


if __name__ == "__main__":
    main_bench()
