"""Small helpers shared by the benchmark scripts: timing, parse baselines, child processes, results.

Every script prints its targets through `result()`, one line each, in the same shape:

    RESULT | what was measured | measured figure | target | met

`bench/run` collects those lines from every script into one table.
"""

from __future__ import annotations

import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

import orjson

T = TypeVar("T")

MB = 1_000_000
MIB = 2**20


def timed(fn: Callable[[], T], repeat: int = 1) -> tuple[float, T]:
    """Best wall time in seconds over `repeat` runs, and the last result."""
    best = float("inf")
    result: T
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


def row(label: str, seconds: float, baseline: float | None = None) -> str:
    """One line of a figures table: label, time, and ratio to the baseline if given."""
    ratio = f"{seconds / baseline:8.2f}x" if baseline else " " * 9
    return f"{label:<58} {seconds * 1000:10.1f} ms {ratio}"


def result(what: str, measured: str, target: str, met: bool | None) -> None:
    """Print one target line: what, the measured figure, the target, met / missed / not measured."""
    verdict = "not measured" if met is None else ("met" if met else "missed")
    print(f"RESULT | {what} | {measured} | {target} | {verdict}", flush=True)


@dataclass(frozen=True)
class ParseBaseline:
    """Seconds to parse the same pages one at a time, nothing kept (best of N), per library."""

    json_s: float
    orjson_s: float
    pages: int
    size: int

    def print(self, label: str) -> None:
        """Print both baselines as rows of the figures table."""
        what = f"{label}: {self.pages:,} pages, {self.size / MB:.1f} MB, one at a time"
        print(what)
        print(row("  json.loads of every page (baseline)", self.json_s))
        print(row("  orjson.loads of every page", self.orjson_s, self.json_s))


def parse_baseline(pages: Iterable[bytes], repeat: int = 3) -> ParseBaseline:
    """Time json.loads and orjson.loads over `pages`, one page at a time, dropping each result.

    Holding every parsed page (a list comprehension) is 3-4x slower on large histories and
    flattered every ratio measured against it, so the baseline drops each page as it goes.
    """
    blobs = list(pages)

    def each(loads: Callable[[bytes], object]) -> None:
        for blob in blobs:
            loads(blob)

    json_s, _ = timed(lambda: each(json.loads), repeat)
    orjson_s, _ = timed(lambda: each(orjson.loads), repeat)
    return ParseBaseline(json_s, orjson_s, len(blobs), sum(map(len, blobs)))


# VmHWM, not ru_maxrss: Linux carries ru_maxrss across exec from the (large) parent.
_CHILD = """
import re, sys
from auditor.__main__ import entry  # as the `auditor` command starts
code = entry()
status = open("/proc/self/status").read()
print(int(re.search(r"VmHWM:\\s+(\\d+)", status).group(1)) * 1024)
raise SystemExit(code)
"""


@dataclass(frozen=True)
class Child:
    """One `auditor` command run in its own process."""

    code: int
    seconds: float
    peak: int | None  # bytes (VmHWM); None when stopped at the memory cap
    stderr: str
    #: CPU seconds (user + system) the command used: on a shared machine, steadier than
    #: `seconds` (other jobs on the cores stretch the wall time, hardly the CPU time)
    cpu: float | None = None

    @property
    def stopped(self) -> bool:
        """True when the command was killed for passing the memory cap."""
        return self.peak is None


def emulator_env(emu: Any, token: str, state: object) -> dict[str, str]:
    """The variables that point a child `auditor` at a running emulator and a state file."""
    return {
        "AUDITOR_BASE_URL": emu.base_url,
        "AUDITOR_APP_URL": emu.app_url,
        "AUDITOR_TOKEN": token,
        "AUDITOR_STATE": str(state),
    }


def run_cli(argv: list[str], env: dict[str, str], cwd: str, cap: int | None = None) -> Child:
    """Run `auditor ARGV` in a child process and measure its time and peak memory.

    With `cap` (bytes), the child is killed as soon as its resident memory passes the cap, so a
    benchmark of something unbounded reports "over the cap" instead of exhausting the machine.
    """
    _compiled()
    # Output goes to files, not pipes: a chatty child must not block on a full pipe while the
    # parent polls its memory.
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        before = _children_cpu()
        start = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-c", _CHILD, *argv],
            env={**os.environ, **env},
            cwd=cwd,
            stdout=out,
            stderr=err,
            text=True,
        )
        over = cap is not None and _watch(proc, cap)
        if over:
            proc.kill()
        proc.wait()
        seconds = time.perf_counter() - start
        cpu = _children_cpu() - before
        out.seek(0)
        err.seek(0)
        lines, stderr = out.read().strip().splitlines(), err.read()
    if over:
        return Child(-9, seconds, None, stderr, cpu)
    peak = int(lines[-1]) if lines and lines[-1].isdigit() else 0
    return Child(proc.returncode, seconds, peak, stderr, cpu)


def _children_cpu() -> float:
    """User + system CPU seconds of the children this process has waited for so far."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


_COMPILED: list[bool] = []


def _compiled() -> None:
    """Write auditor's bytecode once before the first timed child, as an installed package has it.

    `pip install` compiles a package's modules; a checkout run with PYTHONDONTWRITEBYTECODE=1
    (set by some CI images and shells) would otherwise compile every changed module from source
    in every child and time that instead (about 0.08 s of a 0.8 s nightly run here)."""
    if _COMPILED:
        return
    import compileall
    import importlib.util

    spec = importlib.util.find_spec("auditor")
    if spec is not None and spec.submodule_search_locations:
        for folder in spec.submodule_search_locations:
            compileall.compile_dir(folder, quiet=1)
    _COMPILED.append(True)


def _watch(proc: subprocess.Popen[str], cap: int) -> bool:
    """Poll the child's resident memory until it exits; True if it passed `cap` first."""
    while proc.poll() is None:
        try:
            with open(f"/proc/{proc.pid}/status") as f:
                found = re.search(r"VmRSS:\s+(\d+)", f.read())
        except OSError:
            return False
        if found and int(found.group(1)) * 1024 > cap:
            return True
        time.sleep(0.05)
    return False


def mb(n: float) -> str:
    """Bytes as MB (10^6, the unit the targets use)."""
    return f"{n / MB:,.0f} MB"
