"""Small helpers shared by the benchmark scripts: timing and printing figures."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


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
