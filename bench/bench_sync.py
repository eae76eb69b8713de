"""Sync against a bare HTTP loop: is redaction (and the rest of a sync) cheap next to fetching?

Starts the emulator with N revisions (no readiness app, so both sides read the same history
pages), then in one run: a bare httpx loop (same pages and page size, GET + json parse, pages
not kept) and a full `auditor sync` into a fresh state file in its own process (so its peak
memory is measured alone). Prints the ratio (target ≤ 1.5x) and the peak RSS (target ≤ 150 MB).

    python bench/bench_sync.py [--revisions 10000]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import orjson

from auditor.emulator import generate_dataset, start_emulator
from auditor.fetch.paging import HISTORY_PATH

TOKEN = "bench-owner-token-0123456789abcdef"
PAGE = 100
_CHILD = """
import re, sys
from auditor.cli import main
code = main(sys.argv[1:])
status = open("/proc/self/status").read()
print(int(re.search(r"VmHWM:\\s+(\\d+)", status).group(1)) / 1024)
raise SystemExit(code)
"""


def bare_loop(base_url: str) -> tuple[float, int]:
    """GET + parse every history page as a sync would page it; nothing kept. (seconds, pages)"""
    start, pages, cursor = time.perf_counter(), 0, None
    with httpx.Client(base_url=base_url, headers={"Authorization": f"Bearer {TOKEN}"}) as c:
        while True:
            params = {"limit": PAGE, **({"cursor": cursor} if cursor else {})}
            body = orjson.loads(c.get(HISTORY_PATH, params=params).content)
            pages += 1
            if not body["pagination"].get("hasMore"):
                return time.perf_counter() - start, pages
            cursor = body["pagination"]["nextCursor"]


def child_sync(env: dict[str, str], cwd: str) -> tuple[float, float]:
    """`auditor sync` in a child process: (seconds, peak RSS in MiB)."""
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
    return seconds, float(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    """Run the benchmark and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--revisions", type=int, default=10_000)
    args = parser.parse_args()
    dataset = generate_dataset(revisions=args.revisions, repos=1)
    with (
        start_emulator(dataset=dataset, tokens={TOKEN: "owner"}) as emu,
        tempfile.TemporaryDirectory() as tmp,
    ):
        bare, pages = bare_loop(emu.base_url)
        env = {
            "AUDITOR_BASE_URL": emu.base_url,
            "AUDITOR_TOKEN": TOKEN,
            "AUDITOR_STATE": str(Path(tmp) / "state.db"),
            "AUDITOR_APP_URL": "",
        }
        env = {k: v for k, v in env.items() if v}
        synced, rss = child_sync(env, tmp)
    ratio = synced / bare
    print(f"{args.revisions} revisions, {pages} pages of {PAGE}")
    print(f"bare httpx loop (GET + parse)   {bare:8.2f} s")
    print(
        f"auditor sync (full)             {synced:8.2f} s   {ratio:5.2f}x   target <= 1.5x: "
        f"{'met' if ratio <= 1.5 else 'missed'}"
    )
    print(
        f"peak RSS of the sync process    {rss:8.1f} MiB  target <= 150 MB: "
        f"{'met' if rss * 1.048576 <= 150 else 'missed'}"
    )


if __name__ == "__main__":
    main()
