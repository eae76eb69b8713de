"""The five report files (HTML, Markdown, findings.json, SARIF, JUnit), on two kinds of findings.

1. The results of a real run: the emulator's `generate_dataset(revisions=10000, repos=500)`
   synced by `auditor sync` (its own process, over HTTP, into a temporary state file), then
   evaluated in this process with the shipped packs as `auditor run --offline` does (clock fixed
   an hour after the data's newest day, so the findings are the same run to run), the
   `ReportData` kept and written again and again. These findings carry what a nightly's do:
   evidence with JSON values, attribution, change steps, usage days, 500 repositories, and
   10,000 revisions in the appendix and the per-revision lists.
2. `--findings N` synthetic findings (`tests/report_fixture.build_large`, 50 rules), the
   issue's "50,000 findings under 3 s" bar; they are lighter than a real run's (one short
   evidence item, no attribution), so their time per finding flatters the writers.

Each writer's time is the best of three writes (the page template loaded by then); the first
write in the process is printed beside it.

    python bench/bench_report.py [--findings 50000] [--revisions 10000] [--repos 500]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from _util import emulator_env, result, row, run_cli, timed
from report_fixture import build_large

from auditor.models import OPEN_STATUSES
from auditor.report import (
    DEFAULT_OUTPUTS,
    OUTPUTS,
    REPORT_FILES,
    ReportData,
    gc_paused,
    write_reports,
)

COUNT = 50_000
BUDGET = 3.0
#: All five files for a 10,000-revision nightly's results (about 8,700, 5,400 of them open).
#: The nightly `auditor run` takes about 2.3 s, of which the reports are about 0.3 s CPU (0.39
#: before the page template shipped compiled); its 5 % target (0.47 s) cannot be met by the
#: reports alone, but they should not be most of it.
REAL_BUDGET = 0.3
TOKEN = "bench-owner-token-0123456789abcdef"


def real_run(revisions: int, repos: int) -> ReportData:
    """The `ReportData` of `run --offline` (shipped packs) over an emulator history."""
    from auditor.emulator import generate_dataset, start_emulator
    from auditor.store.database import Store
    from auditor.workflows.run import AuditOptions, load_inputs, run_audit

    dataset = generate_dataset(revisions=revisions, repos=repos)
    now = dataset.now + timedelta(hours=1)
    kept: list[ReportData] = []
    with (
        start_emulator(dataset=dataset, tokens={TOKEN: "owner"}) as emu,
        tempfile.TemporaryDirectory() as tmp,
    ):
        state = Path(tmp) / "state.db"
        env = emulator_env(emu, TOKEN, state)
        synced = run_cli(["sync"], env, tmp)
        if synced.code != 0:
            raise SystemExit(f"auditor sync failed ({synced.code}): {synced.stderr}")
        loaded = load_inputs([], None, None, cwd=Path(tmp))
        options = AuditOptions(run_id=f"{now:%Y%m%dT%H%M%SZ}", now=now, api_address=emu.base_url)
        with Store.open(state, create=False) as store:
            run_audit(store, loaded, options, publish=kept.append)
    return kept[0]


def measure(data: ReportData, repeat: int = 3) -> float:
    """Print the time and size of each of the five files and of all five written together
    (best of `repeat`, after a first write); return the latter."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        start = time.perf_counter()
        write_reports(data, out)
        first = time.perf_counter() - start
        for name in DEFAULT_OUTPUTS:
            seconds, _ = timed(lambda name=name: write_reports(data, out, [name]), repeat)  # type: ignore[misc]
            size = (out / OUTPUTS[name]).stat().st_size
            print(row(f"  {OUTPUTS[name]} ({size / 1e6:.1f} MB)", seconds))
        total, _ = timed(lambda: write_reports(data, out), repeat)
    print(row("  all five files, written atomically", total))
    print(row("  all five, the first write in this process", first))
    return total


def main(argv: list[str] | None = None) -> None:
    """Print each writer's time on a real run's findings and on synthetic ones, and the targets."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--findings", type=int, default=COUNT, help="synthetic findings")
    parser.add_argument("--revisions", type=int, default=10_000, help="the real run's history")
    parser.add_argument("--repos", type=int, default=500, help="the real run's repositories")
    args = parser.parse_args(argv)

    data = real_run(args.revisions, args.repos)
    results = len(data.findings)
    open_ = sum(1 for f in data.findings if f.status in OPEN_STATUSES)
    print(
        f"a real run: {args.revisions:,} revisions, {args.repos:,} repositories, shipped packs: "
        f"{results:,} results ({open_:,} open) of {len({f.rule_id for f in data.findings})} rules"
    )
    real = measure(data)
    print(f"  {real / results * 1e6:.1f} µs per result")
    del data

    count = args.findings
    synthetic = build_large(count)
    revisions = len(synthetic.failing_by_revision)
    print(f"{count:,} synthetic findings over 50 rules, {revisions:,} revisions")
    for name, render in list(REPORT_FILES.items())[:5]:
        with gc_paused():
            seconds, text = timed(lambda render=render: render(synthetic), repeat=2)  # type: ignore[misc]
        print(row(f"  {name} ({len(text) / 1e6:.1f} MB)", seconds))
    with tempfile.TemporaryDirectory() as tmp:
        total, _ = timed(lambda: write_reports(synthetic, Path(tmp)), repeat=2)
    print(row("  write_reports: all five files, written atomically", total))
    print(f"  {total / count * 1e6:.1f} µs per finding")

    result(
        f"all five files for a {args.revisions:,}-revision run's {results:,} results",
        f"{real:.2f} s ({real / results * 1e6:.0f} µs a result)",
        f"<= {REAL_BUDGET} s",
        real <= REAL_BUDGET,
    )
    result(
        f"{count:,} findings rendered to all five files",
        f"{total:.2f} s",
        f"<= {BUDGET:.0f} s",
        total <= BUDGET,
    )


if __name__ == "__main__":
    main()
