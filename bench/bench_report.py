"""Render 50,000 findings in each report format; the issue's bar is under 3 s (HTML usable)."""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from _util import result, row, timed
from report_fixture import build_large

from auditor.report import REPORT_FILES, gc_paused, write_reports

COUNT = 50_000
BUDGET = 3.0


def main(argv: list[str] | None = None) -> None:
    """Print the time and size of each renderer, then of write_reports (all five files)."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--findings", type=int, default=COUNT)
    count = parser.parse_args(argv).findings
    data = build_large(count)
    print(f"{count:,} findings over 50 rules, {len(data.failing_by_revision):,} revisions")
    for name, render in REPORT_FILES.items():
        with gc_paused():
            seconds, text = timed(lambda render=render: render(data), repeat=2)  # type: ignore[misc]
        print(row(f"{name} ({len(text) / 1e6:.1f} MB)", seconds))
    with tempfile.TemporaryDirectory() as tmp:
        total, _ = timed(lambda: write_reports(data, Path(tmp)), repeat=2)
    print(row("write_reports: all five files, written atomically", total))
    result(
        f"{count:,} findings rendered to all five files",
        f"{total:.2f} s",
        f"<= {BUDGET:.0f} s",
        total <= BUDGET,
    )


if __name__ == "__main__":
    main()
