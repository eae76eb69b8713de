"""The search of stored rows for a secret new to the state file (`Store.scrub_stored`), with the
scrub index and without it (every row read, as before the index), on one synced state file.

A real `auditor sync` of the emulator's history (N revisions, N/20 repositories) makes the file;
then, in this process and alternately for R rounds, a nightly-like transaction on it learns one
secret and runs `scrub_stored`, and is rolled back (the file never changes): once for a secret
no stored row holds (the nightly case: the index alone is read) and once for a value revision 5
holds (the fewest rows hold of its strings: a hit; the rows are read for it, and the index is
made exact again before commit). Also:
filling the index of a store made before it (the one-time migration), and the file's size
with and without the index (`VACUUM INTO` copies). Figures only; not in `bench/run`.

    python bench/bench_scrub.py [--revisions 10000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from _util import emulator_env, result, run_cli

from auditor.emulator import generate_dataset, start_emulator
from auditor.store import scrubindex
from auditor.store.database import Store

TOKEN = "bench-owner-token-0123456789abcdef"
ABSENT = "plainwordnewsecretvalue-absent"


class _Rollback(Exception):
    pass


def _scrub_once(path: Path, secret: str, indexed: bool) -> float:
    """Seconds of `scrub_stored` in a transaction that learns `secret`, rolled back."""
    with Store.open(path) as store:
        if not indexed:
            store._index_live = False  # every row is read, as before the index
        took = 0.0
        try:
            with store.transaction():
                store.begin_sync(datetime.now(UTC), "bench")
                store.register_secret(secret)
                start = time.perf_counter()
                store.scrub_stored()
                store._write_scrub_index()  # the hit case makes the index exact before commit
                took = time.perf_counter() - start
                raise _Rollback
        except _Rollback:
            pass
        return took


def _rare_value(store: Store) -> str:
    """A string of revision 5's settings (6 characters or more) that the fewest rows hold."""
    old = store.get_revision(5)
    assert old is not None
    strings: list[str] = []

    def walk(value: object) -> None:
        if isinstance(value, dict):
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)
        elif isinstance(value, str) and len(value) >= 6 and "[secret" not in value:
            strings.append(value)

    walk(old.settings)
    count = "SELECT COUNT(*) FROM revisions WHERE instr(settings, ?) > 0"
    held = {v: store._db.execute(count, (v.encode(),)).fetchone()[0] for v in set(strings)}
    value = min(held, key=lambda v: (held[v], v))
    print(f"  the value found in earlier rows is in {held[value]} of them", file=sys.stderr)
    return value


def _size_without_index(path: Path, tmp: Path) -> tuple[int, int]:
    with_index, without = tmp / "with.db", tmp / "without.db"
    for target in (with_index, without):
        target.unlink(missing_ok=True)
    db = sqlite3.connect(path)
    db.execute(f"VACUUM INTO '{with_index}'")
    db.close()
    db = sqlite3.connect(with_index)
    db.execute(f"VACUUM INTO '{without}'")
    db.close()
    db = sqlite3.connect(without)
    db.execute("DROP TABLE scrub_index")
    db.execute("VACUUM")
    db.close()
    return with_index.stat().st_size, without.stat().st_size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--revisions", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    dataset = generate_dataset(revisions=args.revisions, repos=max(1, args.revisions // 20))
    with (
        tempfile.TemporaryDirectory() as folder,
        start_emulator(dataset=dataset, tokens={TOKEN: "owner"}) as emu,
    ):
        tmp = Path(folder)
        path = tmp / "state.db"
        env = emulator_env(emu, TOKEN, path)
        sync = run_cli(["sync"], env, folder)
        if sync.code != 0:
            raise SystemExit(f"sync failed: {sync.stderr[-500:]}")
        with Store.open(path) as store:
            present = _rare_value(store)  # a value earlier rows hold, learned as a secret now
            pieces = scrubindex.stored(store._db)
        print(f"{args.revisions:,} revisions; index: {len(pieces):,} pieces, "
              f"{sum(map(len, pieces)) / 1e6:.2f} MB", file=sys.stderr)  # fmt: skip
        times: dict[tuple[str, bool], list[float]] = {}
        for _ in range(args.rounds):
            for case, secret in (("absent", ABSENT), ("present", present)):
                for indexed in (True, False):
                    took = _scrub_once(path, secret, indexed)
                    times.setdefault((case, indexed), []).append(took)
        for (case, indexed), runs in sorted(times.items()):
            how = "index" if indexed else "every row"
            print(f"  secret {case:<8} searched through {how:<10}: "
                  f"{min(runs):.3f}-{max(runs):.3f} s, median {statistics.median(runs):.3f} s",
                  file=sys.stderr)  # fmt: skip
        db = sqlite3.connect(path)
        db.execute("DELETE FROM scrub_index")
        db.commit()
        start = time.perf_counter()
        scrubindex.refresh(db)
        db.commit()
        build = time.perf_counter() - start
        db.close()
        print(f"  filling the index from the rows (migration): {build:.2f} s", file=sys.stderr)
        with_index, without = _size_without_index(path, tmp)
        print(f"  file size: {with_index / 1e6:.1f} MB with the index, {without / 1e6:.1f} MB "
              f"without (+{(with_index - without) / without:.1%})", file=sys.stderr)  # fmt: skip
        new = statistics.median(times[("absent", True)])
        baseline = statistics.median(times[("absent", False)])
        result(
            f"search for a secret new to the file at {args.revisions:,}: index / every row",
            f"{new / baseline:.3f}x ({new:.3f} s / {baseline:.3f} s)",
            "<= 0.1x",
            new / baseline <= 0.1,
        )


if __name__ == "__main__":
    main()
