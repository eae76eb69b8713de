"""report.pdf at two history sizes: pages, seconds and peak memory of `auditor run -o pdf`.

Syncs the emulator's history (as bench_scale.py does: N revisions, N/20 repositories), then runs
`auditor run --offline -o pdf` in its own process at each size and prints its pages, seconds,
seconds per page and peak memory (VmHWM). WeasyPrint lays a table out again for every page it
runs onto, so one long table made the time grow faster than the pages; the PDF now prints no
table longer than `auditor.report.pdf.TABLE_ROWS` rows and lists fewer results per rule than
report.html (`PDF_CAPS`), so pages, time and memory stay bounded as the history grows.

Targets: at the large size `run --offline -o pdf` takes <= 120 s and <= 500 MB peak, and the
seconds per page at the large size are <= 1.5x those at the small size (flat: linear growth).
With `--before`, the same run is also timed the way main rendered the PDF before this change
(the HTML page's caps, every table whole), side by side.

    python bench/bench_pdf.py [--small 1000] [--large 10000] [--before]

Takes several minutes (WeasyPrint is slow); not part of `bench/run`.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _util
from _util import MB, mb, result, run_cli
from bench_scale import scene

# `run --offline -o pdf` rendered as main did before the PDF had its own caps and cut tables:
# the HTML page's caps, every table whole.
_BEFORE = """
import auditor.report as r
import auditor.report.pdf as p
from auditor.report.html import Caps
r.PDF_CAPS = Caps()
p.split_tables = lambda html, rows=0: html
"""


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_patched(
    argv: list[str], env: dict[str, str], cwd: str, patch: str
) -> tuple[_util.Child, float]:
    """`auditor ARGV` in its own process after `patch` (Python run first): (wall seconds and
    peak memory, CPU seconds). CPU seconds are what the targets use: on a shared machine the
    wall time says as much about the other processes as about this one."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        cpu = _cpu()
        start = time.perf_counter()
        code = subprocess.call(
            [sys.executable, "-c", patch + _util._CHILD, *argv],
            env={**os.environ, **env},
            cwd=cwd,
            stdout=out,
            stderr=err,
        )
        seconds = time.perf_counter() - start
        out.seek(0)
        err.seek(0)
        lines = out.read().strip().splitlines()
        peak = int(lines[-1]) if lines and lines[-1].isdigit() else 0
        return _util.Child(code, seconds, peak, err.read()), _cpu() - cpu


def pages(pdf: Path) -> int:
    """Pages of a PDF, as poppler's `pdfinfo` counts them (poppler-utils, as the PDF tests)."""
    tool = shutil.which("pdfinfo")
    if tool is None:
        raise SystemExit("bench_pdf needs pdfinfo: apt-get install poppler-utils")
    info = subprocess.run([tool, str(pdf)], capture_output=True, text=True, check=True).stdout
    found = re.search(r"^Pages:\s+(\d+)", info, re.M)
    if found is None:
        raise SystemExit(f"pdfinfo gave no page count for {pdf}")
    return int(found.group(1))


def measure(revisions: int, before: bool) -> dict[str, tuple[int, float, float]]:
    """Sync a history of `revisions`, then `run --offline -o pdf`: name -> (pages, CPU s,
    peak)."""
    out: dict[str, tuple[int, float, float]] = {}
    with scene(revisions, max(4, revisions // 20)) as (_, env, tmp):
        child = run_cli(["sync"], env, tmp)
        if child.code != 0:
            raise SystemExit(f"auditor sync failed ({child.code}): {child.stderr}")
        runs = {"now": ""} | ({"before": _BEFORE} if before else {})
        for name, patch in runs.items():
            folder = Path(tmp) / name
            argv = ["run", "--offline", "--soft-fail", "-o", "pdf", "--out", str(folder)]
            child, cpu = run_patched(argv, env, tmp, patch)
            if child.code not in (0, 1):
                raise SystemExit(f"auditor run -o pdf failed ({child.code}): {child.stderr}")
            n = pages(folder / "report.pdf")
            peak = float(child.peak or 0)
            out[name] = (n, cpu, peak)
            print(
                f"  {revisions:>7,} revisions  {name:<6} {n:5,} pages  {cpu:7.1f} s CPU "
                f"({child.seconds:.1f} s wall, load {os.getloadavg()[0]:.1f})  "
                f"{cpu / n:5.2f} s/page  peak {mb(peak)}",
                flush=True,
            )
    return out


def main(argv: list[str] | None = None) -> None:
    """Measure both sizes and print the targets."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=int, default=1000)
    parser.add_argument("--large", type=int, default=10_000)
    parser.add_argument("--before", action="store_true", help="also time main's old rendering")
    args = parser.parse_args(argv)
    small = measure(args.small, args.before)
    large = measure(args.large, args.before)
    (sp, ss, _), (lp, ls, lpeak) = small["now"], large["now"]
    growth = (ls / lp) / (ss / sp)
    if args.before:
        bp, bs, bpeak = large["before"]
        print(
            f"  at {args.large:,}: before {bp:,} pages {bs:.1f} s peak {mb(bpeak)}; "
            f"now {lp:,} pages {ls:.1f} s peak {mb(lpeak)} (CPU seconds; {bs / ls:.1f}x faster)"
        )
    result(
        f"run --offline -o pdf at {args.large:,} revisions", f"{ls:.0f} s", "<= 120 s", ls <= 120
    )
    result(
        f"peak memory of run -o pdf at {args.large:,}", mb(lpeak), "<= 500 MB", lpeak <= 500 * MB
    )
    result(
        f"CPU seconds per page at {args.large:,} vs {args.small:,} revisions",
        f"{growth:.2f}x ({ls / lp:.2f} vs {ss / sp:.2f} s/page; {lp:,} vs {sp:,} pages)",
        "<= 1.5x",
        growth <= 1.5,
    )


if __name__ == "__main__":
    main()
