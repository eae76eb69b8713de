"""Evidence bundle at scale: `auditor export` and `auditor verify` of a long history.

Starts the emulator with N revisions (default 10,000) and M repositories (default 500), syncs
it with `auditor sync`, then runs `auditor export --out DIR` and `auditor verify DIR`, each in
its own child process, and prints the wall time, the peak memory (VmHWM) and the bundle's size.
With `--all-revisions` it also runs `auditor export --all-revisions` and `verify` of that bundle
(at 10,000 revisions a bundle of about 2.4 GB on disk, and as much again while `verify` writes
the re-run's reports one at a time to a scratch folder: give it room in `TMPDIR`). A child that
passes `--cap` MB is stopped and reported as over it. Everything is written to a temporary
folder, removed at the end.

Targets (README "Scale"): export and verify peak <= 150 MB at 10,000 and 100,000 revisions, as
`sync` and `run`; the `--all-revisions` pair <= 300 MB at 10,000, as `run --all-revisions`.

    python bench/bench_bundle.py [--revisions 10000] [--repos 500] [--all-revisions] [--cap 1500]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _util import MB, emulator_env, mb, result, run_cli

from auditor.emulator import generate_dataset, start_emulator

TOKEN = "bench-owner-token-0123456789abcdef"


def _size(folder: Path) -> int:
    """The bytes of every file under `folder`."""
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def _largest(folder: Path) -> str:
    """The three largest files of a bundle, with their sizes."""
    files = sorted((p for p in folder.rglob("*") if p.is_file()), key=lambda p: -p.stat().st_size)
    return ", ".join(f"{p.relative_to(folder)} {mb(p.stat().st_size)}" for p in files[:3])


def command(argv: list[str], env: dict[str, str], tmp: str, cap: int) -> float:
    """Run one auditor command (exit 0 expected); print its time and peak; return the peak in
    bytes (inf when stopped at the cap)."""
    child = run_cli(argv, env, tmp, cap)
    shown = " ".join("DIR/" + Path(a).name if a.startswith(tmp) else a for a in argv)
    if child.stopped:
        print(f"  auditor {shown}: stopped at the {mb(cap)} cap after {child.seconds:.1f} s")
        return float("inf")
    if child.code != 0:
        raise SystemExit(f"auditor {shown} failed ({child.code}): {child.stderr[-2000:]}")
    print(f"  auditor {shown:<44} {child.seconds:8.2f} s  peak {mb(child.peak or 0)}", flush=True)
    return float(child.peak or 0)


def pair(
    env: dict[str, str], tmp: str, cap: int, name: str, *extra: str
) -> tuple[float, float, int]:
    """export (with `extra`) into DIR/name, then verify it: the two peaks and the bundle's
    bytes; the bundle is removed afterwards."""
    out = Path(tmp) / name
    exported = command(["export", "--out", str(out), *extra], env, tmp, cap)
    size = _size(out) if out.exists() else 0
    if out.exists():
        print(f"  bundle: {mb(size)} ({_largest(out)})")
    verified = (
        command(["verify", str(out)], env, tmp, cap) if exported != float("inf") else exported
    )
    shutil.rmtree(out, ignore_errors=True)
    return exported, verified, size


def measured(peak: float, cap: int) -> str:
    return f"> {mb(cap)} (stopped)" if peak == float("inf") else mb(peak)


def main(argv: list[str] | None = None) -> None:
    """Run the bundle benchmark and print its figures and results."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--revisions", type=int, default=10_000)
    parser.add_argument("--repos", type=int, default=500)
    parser.add_argument(
        "--all-revisions", action="store_true", help="also export --all-revisions and verify it"
    )
    parser.add_argument("--cap", type=int, default=1500, help="MB at which a command is stopped")
    args = parser.parse_args(argv)
    cap = args.cap * MB
    n = args.revisions
    dataset = generate_dataset(revisions=n, repos=args.repos)
    print(f"{n:,} revisions, {len(dataset.reports):,} readiness reports, {args.repos} repos")
    with (
        start_emulator(dataset=dataset, tokens={TOKEN: "owner"}) as emu,
        tempfile.TemporaryDirectory(prefix="bench-bundle-") as tmp,
    ):
        env = {**emulator_env(emu, TOKEN, Path(tmp) / "state.db"), "TMPDIR": tmp}
        command(["sync", "-q"], env, tmp, cap)
        state = Path(tmp) / "state.db"
        print(f"  state file: {mb(state.stat().st_size)}")
        export_peak, verify_peak, _ = pair(env, tmp, cap, "evidence")
        every = (
            pair(env, tmp, cap, "evidence-all", "--all-revisions") if args.all_revisions else None
        )
    for what, peak in (("export", export_peak), ("verify", verify_peak)):
        result(
            f"peak memory of {what} at {n:,}", measured(peak, cap), "<= 150 MB", peak <= 150 * MB
        )
    if every is None:
        for what in ("export --all-revisions", "verify of an --all-revisions bundle"):
            result(f"peak memory of {what} at {n:,}", "not measured", "<= 300 MB", None)
        return
    for what, peak in (
        ("export --all-revisions", every[0]),
        ("verify of an --all-revisions bundle", every[1]),
    ):
        result(
            f"peak memory of {what} at {n:,}", measured(peak, cap), "<= 300 MB", peak <= 300 * MB
        )
    print(f"  --all-revisions bundle: {mb(every[2])}, {every[2] / n / 1000:,.0f} KB a revision")


if __name__ == "__main__":
    main()
