"""`auditor review` against the stored state: about as fast as a review of two files.

A review of the live settings attributes "violating since" for the live and the proposed
settings. It reads the evaluation state `auditor run` left for that, so its time should not grow
with the stored history. This script makes a history of `--revisions` in the emulator, then runs
`auditor sync` and `auditor run --offline` (which leaves the state). It then times, each in its
own process (best of `--rounds`), `auditor review proposed.json --offline` against the stored
history (the proposal adds one command to the latest settings). The baseline is
`auditor review proposed.json --against live.json` on the same two documents, which has no
history. Beside them it prints the same review on a copy of the state file whose evaluation
state is emptied (a state file never `run`: every stored revision is walked).

Target (README, Scale): a review of a file under 100 KB stays about 1-2 s, most of it starting
Python; the target line takes 2 s, at every history size.

    python bench/bench_review_state.py [--revisions 10000] [--repos 500] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _util import emulator_env, mb, result, run_cli

from auditor.emulator import generate_dataset, start_emulator

TOKEN = "bench-owner-token-0123456789abcdef"
TARGET_S = 2.0


def best(argv: list[str], env: dict[str, str], tmp: str, rounds: int) -> tuple[float, int]:
    """Best seconds of `rounds` runs of one auditor command, and its peak bytes."""
    times, peak = [], 0
    for n in range(rounds):
        child = run_cli([*argv, "--out", str(Path(tmp) / f"out-{n}")], env, tmp)
        if child.code not in (0, 1):
            raise SystemExit(f"auditor {' '.join(argv)} failed ({child.code}): {child.stderr}")
        times.append(child.seconds)
        peak = max(peak, child.peak or 0)
    shown = " ".join(Path(a).name if a.startswith(tmp) else a for a in argv)
    print(f"  auditor {shown:<58} {min(times):7.2f} s  peak {mb(peak)}")
    return min(times), peak


def main(argv: list[str] | None = None) -> None:
    """Print the review's figures and its target line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--revisions", type=int, default=10_000)
    parser.add_argument("--repos", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=3, help="runs of each review (best)")
    args = parser.parse_args(argv)
    dataset = generate_dataset(revisions=args.revisions, repos=args.repos)
    print(f"{args.revisions:,} revisions, {args.repos} repos")
    with (
        start_emulator(dataset=dataset, tokens={TOKEN: "owner"}) as emu,
        tempfile.TemporaryDirectory() as tmp,
    ):
        env = emulator_env(emu, TOKEN, Path(tmp) / "state.db")
        for step in (["sync", "-q"], ["run", "--offline", "--soft-fail", "-q", "--out", "run"]):
            child = run_cli(step, env, tmp)
            if child.code not in (0, 1):
                raise SystemExit(f"auditor {' '.join(step)} failed: {child.stderr}")
            print(f"  auditor {' '.join(step):<58} {child.seconds:7.2f} s")
        live = emu.dataset.history[-1]["settings"]
        proposed = json.loads(json.dumps(live))
        proposed.setdefault("commandAllowlist", []).append("rm -rf /tmp/foo")
        (Path(tmp) / "live.json").write_text(json.dumps(live, indent=2))
        (Path(tmp) / "proposed.json").write_text(json.dumps(proposed, indent=2))
        scratch = Path(tmp) / "no-state.db"
        shutil.copy(Path(tmp) / "state.db", scratch)
        with sqlite3.connect(scratch) as db:
            db.execute("DELETE FROM eval_state")
        review = ["review", str(Path(tmp) / "proposed.json"), "--author", "a@b.c", "-q"]
        files_s, _ = best(
            [*review, "--against", str(Path(tmp) / "live.json")], env, tmp, args.rounds
        )
        stored_s, peak = best([*review, "--offline"], env, tmp, args.rounds)
        no_state = {**env, "AUDITOR_STATE": str(scratch)}
        print("  (the same review on the state file with its evaluation state emptied:)")
        walked_s, _ = best([*review, "--offline"], no_state, tmp, 1)
    result(
        f"auditor review --offline of a {args.revisions:,}-revision history "
        "(vs --against FILE of the same files)",
        f"{stored_s:.2f} s, peak {mb(peak)} ({stored_s / files_s:.1f}x {files_s:.2f} s; "
        f"no state {walked_s:.2f} s)",
        f"<= {TARGET_S:.0f} s",
        stored_s <= TARGET_S,
    )


if __name__ == "__main__":
    main()
