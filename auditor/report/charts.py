"""Inline SVG chart geometry, computed from numbers only.

Takes `(revision, failing rule count)` pairs, gives a `Chart` of coordinates and integer tick
labels that the HTML template draws (autoescaped like everything else; no markup is built here),
and the same figures as text for the table beside the chart: runs of consecutive revisions with
the same count (`Span`), every revision evaluated, not the chart's downsampled points.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from operator import itemgetter

from auditor.common.pairs import RevisionCounts

WIDTH = 720
HEIGHT = 220
_LEFT, _RIGHT, _TOP, _BOTTOM = 44, 12, 12, 30
MAX_POINTS = 360


@dataclass(frozen=True)
class Tick:
    """One axis tick: its position in pixels and its (integer) label."""

    pos: float
    label: int


@dataclass(frozen=True)
class Span:
    """Consecutive revisions (`first` to `last`) with the same count of failing rules: one row
    of the table that gives the chart's figures as text."""

    first: int
    last: int
    failing: int


@dataclass(frozen=True)
class Chart:
    """A line-and-area chart of failing rules per revision."""

    width: int
    height: int
    line: str  # SVG polyline points, "x,y x,y …"
    area: str  # SVG polygon points closing the line to the baseline
    x_ticks: tuple[Tick, ...]
    y_ticks: tuple[Tick, ...]
    plot_left: int
    plot_right: int
    plot_top: int
    plot_bottom: int
    first: int
    last: int
    latest: int
    peak: int
    spans: tuple[Span, ...] = ()  # every revision's count, oldest first, as runs


def downsample(points: Sequence[tuple[int, int]], limit: int = MAX_POINTS) -> list[tuple[int, int]]:
    """At most `limit` points: buckets keep their worst (highest) count, so no peak is lost."""
    return list(_downsample(sorted(points), limit))


def _downsample(
    pts: Sequence[tuple[int, int]], limit: int = MAX_POINTS
) -> Sequence[tuple[int, int]]:
    """`downsample` of points sorted already."""
    if len(pts) <= limit:
        return pts
    size = -(-len(pts) // limit)
    return [
        (bucket[-1][0], max(map(_COUNT, bucket)))  # the counts read in C, not by a generator
        for bucket in (pts[i : i + size] for i in range(0, len(pts), size))
    ]


_COUNT = itemgetter(1)


def spans(points: Sequence[tuple[int, int]]) -> list[Span]:
    """The counts as runs of consecutive revisions with the same count, oldest first (a gap in
    the revisions or a change of count starts a new run)."""
    return _spans(sorted(points))


def _spans(pts: Sequence[tuple[int, int]]) -> list[Span]:
    """`spans` of points sorted already. A run's bounds are kept as numbers and its `Span` made
    once, when the run ends (not made anew for each revision that extends it: a 10,000-revision
    history made 10,000 of them for a few hundred runs)."""
    runs: list[Span] = []
    if not pts:
        return runs
    first, last, failing = pts[0][0], pts[0][0], pts[0][1]
    for rev, count in pts[1:]:
        if failing == count and last + 1 == rev:
            last = rev
        else:
            runs.append(Span(first, last, failing))
            first = last = rev
            failing = count
    runs.append(Span(first, last, failing))
    return runs


def _nice_max(peak: int) -> int:
    for step in (1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000, 2000, 5000, 10000):
        if peak <= step * 4:
            return step * 4
    return -(-peak // 4) * 4


def failing_chart(points: Sequence[tuple[int, int]]) -> Chart | None:
    """Chart of failing rules per revision; None when there are fewer than two revisions."""
    # once, for the chart's points and the table's runs (counts of revisions are in order:
    # not made again as 100,000 tuples)
    ordered = points if isinstance(points, RevisionCounts) and points.ascending else sorted(points)
    pts = _downsample(ordered)
    if len(pts) < 2:
        return None
    top = _nice_max(max(1, max(map(_COUNT, pts))))
    first, last = pts[0][0], pts[-1][0]
    span = max(1, last - first)
    bottom, right = HEIGHT - _BOTTOM, WIDTH - _RIGHT

    def x(rev: int) -> float:
        return round(_LEFT + (right - _LEFT) * (rev - first) / span, 1)

    def y(count: int) -> float:
        return round(bottom - (bottom - _TOP) * count / top, 1)

    line = " ".join(f"{x(r)},{y(c)}" for r, c in pts)
    area = f"{x(first)},{bottom} {line} {x(last)},{bottom}"
    x_ticks = tuple(Tick(x(r), r) for r in _spread([r for r, _ in pts], 6))
    y_ticks = tuple(Tick(y(v), v) for v in range(0, top + 1, top // 4))
    return Chart(
        WIDTH,
        HEIGHT,
        line,
        area,
        x_ticks,
        y_ticks,
        _LEFT,
        right,
        _TOP,
        bottom,
        first,
        last,
        pts[-1][1],
        max(map(_COUNT, ordered)),
        tuple(_spans(ordered)),
    )


def _spread(values: list[int], count: int) -> list[int]:
    if len(values) <= count:
        return values
    step = (len(values) - 1) / (count - 1)
    return sorted({values[round(i * step)] for i in range(count)})
