"""The two store backends side by side: `auditor sync` then `auditor run --offline` at N
revisions into an SQLite file and into PostgreSQL (a throwaway local cluster, as the tests
start it), each command in its own process (time and peak memory). The targets: PostgreSQL
within 2x SQLite's time for the sync and 1.5x for the run (a central store must not make the
nightly job slow), and the same peak memory within 1.5x (rows are streamed on both).

`--dialect` adds the measurement behind the choice of psycopg 3 with shared SQL over SQLAlchemy
Core: the ingest loop (SELECT by key + INSERT per revision, one transaction) in raw sqlite3 /
raw psycopg, through the store's dialect layer, and through SQLAlchemy Core (if installed; it
is not a dependency: `pip install sqlalchemy` to measure it).

    python bench/bench_store.py [--revisions 10000] [--dialect]
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _util import emulator_env, mb, result, run_cli

from auditor.emulator import start_emulator

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
import pgcluster

TOKEN = "bench-owner-token-0123456789abcdef"
SYNC_TARGET, RUN_TARGET, PEAK_TARGET = 2.0, 1.5, 1.5


def measure(state: str, emu: Any, tmp: Path) -> dict[str, Any]:
    """sync, sync again (nothing new), then run --offline, into `state`: Child per step."""
    env = emulator_env(emu, TOKEN, state)
    sync = run_cli(["sync"], env, str(tmp))
    if sync.code != 0:
        raise SystemExit(f"sync into {state.split('@')[-1]} failed: {sync.stderr[-500:]}")
    again = run_cli(["sync"], env, str(tmp))  # nothing new: the nightly case
    out = tmp / f"out-{len(list(tmp.iterdir()))}"
    run = run_cli(["run", "--offline", "--quiet", "--out", str(out)], env, str(tmp))
    if run.code not in (0, 1):
        raise SystemExit(f"run on {state.split('@')[-1]} failed: {run.stderr[-500:]}")
    return {"sync": sync, "sync again": again, "run": run}


def side_by_side(revisions: int, repos: int) -> None:
    bindir = pgcluster.find_bin()
    if bindir is None:
        result("store backends side by side", "PostgreSQL not installed", "-", None)
        return
    cluster = pgcluster.start_cluster(bindir)
    try:
        with (
            start_emulator(revisions=revisions, repos=repos, tokens={TOKEN: "owner"}) as emu,
            tempfile.TemporaryDirectory(prefix="bench-store-") as tmp,
        ):
            print(f"{revisions:,} revisions, {repos} repositories", file=sys.stderr)
            lite = measure(str(Path(tmp) / "state.db"), emu, Path(tmp))
            pg = measure(cluster.create_database("bench"), emu, Path(tmp))
    finally:
        cluster.stop()
    print(f"{'':<10} {'SQLite':>22} {'PostgreSQL':>22} {'ratio':>7}")  # 'sync again': no news
    for step, target in (("sync", SYNC_TARGET), ("sync again", SYNC_TARGET), ("run", RUN_TARGET)):
        a, b = lite[step], pg[step]
        ratio = b.seconds / a.seconds
        print(
            f"{step:<10} {a.seconds:8.1f} s {mb(a.peak or 0):>10} "
            f"{b.seconds:8.1f} s {mb(b.peak or 0):>10} {ratio:6.2f}x"
        )
        result(
            f"{step} at {revisions:,} revisions: PostgreSQL / SQLite time",
            f"{ratio:.2f}x ({b.seconds:.1f} s / {a.seconds:.1f} s)",
            f"<= {target}x",
            ratio <= target,
        )
        peak = (b.peak or 0) / max(a.peak or 1, 1)
        result(
            f"{step} at {revisions:,} revisions: PostgreSQL / SQLite peak memory",
            f"{peak:.2f}x ({mb(b.peak or 0)} / {mb(a.peak or 0)})",
            f"<= {PEAK_TARGET}x",
            peak <= PEAK_TARGET,
        )


# -- the dialect measurement ------------------------------------------------------------------

ROWS = [(n, "acme", f"2026-01-01T00:00:{n % 60:02d}", b'{"k": "%d"}' % n) for n in range(10_000)]
DDL = "CREATE TABLE r (revision INTEGER PRIMARY KEY, org TEXT, at TEXT, body BLOB)"
SELECT = "SELECT at FROM r WHERE revision = ?"
INSERT = "INSERT INTO r (revision, org, at, body) VALUES (?, ?, ?, ?)"


def _loop(execute: Callable[[str, tuple[Any, ...]], Any], select: str, insert: str) -> None:
    for row in ROWS:
        if execute(select, (row[0],)).fetchone() is None:
            execute(insert, row)


def _best(fn: Callable[[], None], repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def dialect_compare() -> None:
    from auditor.store.dialect import to_postgres
    from auditor.store.postgres import PgConnection

    times: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:

        def raw_sqlite() -> None:
            db = sqlite3.connect(Path(tmp) / f"a{time.monotonic_ns()}.db", isolation_level=None)
            db.execute(DDL)
            db.execute("BEGIN")
            _loop(db.execute, SELECT, INSERT)
            db.execute("COMMIT")
            db.close()

        times["sqlite3 (the store's SQLite path)"] = _best(raw_sqlite)
        sqlalchemy = _sqlalchemy()
        if sqlalchemy is not None:

            def sa_sqlite() -> None:
                engine = sqlalchemy.create_engine(f"sqlite:///{tmp}/b{time.monotonic_ns()}.db")
                _sa_loop(sqlalchemy, engine)

            times["SQLAlchemy Core on SQLite"] = _best(sa_sqlite)
        bindir = pgcluster.find_bin()
        if bindir is not None:
            import psycopg

            cluster = pgcluster.start_cluster(bindir)
            try:
                url = cluster.url()

                def raw_pg() -> None:
                    with psycopg.connect(url, autocommit=True) as db:
                        db.execute("DROP TABLE IF EXISTS r")
                        db.execute(DDL.replace("BLOB", "BYTEA").replace("INTEGER", "BIGINT"))
                        db.execute("BEGIN")
                        _loop(db.execute, to_postgres(SELECT), to_postgres(INSERT))
                        db.execute("COMMIT")

                def layer_pg() -> None:
                    with psycopg.connect(url, autocommit=True) as conn:
                        db = PgConnection(conn, "public", [])
                        db.execute("DROP TABLE IF EXISTS r")
                        db.execute(DDL)
                        db.execute("BEGIN IMMEDIATE")
                        _loop(db.execute, SELECT, INSERT)
                        db.execute("COMMIT")

                times["psycopg 3, SQL written for it"] = _best(raw_pg)
                times["psycopg 3 through the store's dialect layer"] = _best(layer_pg)
                if sqlalchemy is not None:
                    engine = sqlalchemy.create_engine(
                        url.replace("postgresql", "postgresql+psycopg")
                    )

                    def sa_pg() -> None:
                        with engine.begin() as c:
                            c.exec_driver_sql("DROP TABLE IF EXISTS r")
                        _sa_loop(sqlalchemy, engine, pg=True)

                    times["SQLAlchemy Core on psycopg 3"] = _best(sa_pg)
            finally:
                cluster.stop()
    print(f"ingest loop, {len(ROWS):,} rows (SELECT by key + INSERT each, one transaction):")
    for label, seconds in times.items():
        print(f"  {label:<48} {seconds * 1000:8.0f} ms")
    base = times["sqlite3 (the store's SQLite path)"]
    sa = times.get("SQLAlchemy Core on SQLite")
    result(
        "SQLAlchemy Core / sqlite3, ingest loop",
        f"{sa / base:.2f}x" if sa else "SQLAlchemy not installed",
        "informative",
        None if sa is None else True,
    )
    layer = times.get("psycopg 3 through the store's dialect layer")
    raw = times.get("psycopg 3, SQL written for it")
    if layer and raw:
        result(
            "dialect layer / raw psycopg 3, ingest loop",
            f"{layer / raw:.2f}x",
            "<= 1.1x",
            layer / raw <= 1.1,
        )


def _sqlalchemy() -> Any:
    try:
        import sqlalchemy
    except ImportError:
        return None
    return sqlalchemy


def _sa_loop(sa: Any, engine: Any, pg: bool = False) -> None:
    meta = sa.MetaData()
    table = sa.Table(
        "r",
        meta,
        sa.Column("revision", sa.BigInteger, primary_key=True, autoincrement=False),
        sa.Column("org", sa.Text),
        sa.Column("at", sa.Text),
        sa.Column("body", sa.LargeBinary),
    )
    meta.create_all(engine)
    select = sa.select(table.c.at).where(table.c.revision == sa.bindparam("n"))
    with engine.begin() as conn:
        for n, org, at, body in ROWS:
            if conn.execute(select, {"n": n}).fetchone() is None:
                conn.execute(table.insert(), {"revision": n, "org": org, "at": at, "body": body})
    engine.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--revisions", type=int, default=10_000)
    parser.add_argument("--repos", type=int, default=50)
    parser.add_argument("--dialect", action="store_true", help="also the dialect measurement")
    parser.add_argument("--only-dialect", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if not args.only_dialect:
        side_by_side(args.revisions, args.repos)
    if args.dialect or args.only_dialect:
        dialect_compare()


if __name__ == "__main__":
    main()
