"""The state store: redaction at ingestion, immutability, locking, keys, runs — each test on
both backends (an SQLite file and a PostgreSQL database on a throwaway server) where it applies."""

from __future__ import annotations

import builtins
import errno
import gc
import hashlib
import os
import random
import re
import sqlite3
import sys
from collections.abc import Callable
from contextlib import closing
from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import orjson
import pytest
from pgcluster import raw_sql, stored_bytes

from auditor.errors import StoreError
from auditor.evaluate.readiness import latest_per_repo
from auditor.fetch.decode import to_report, to_revision
from auditor.models import Revision
from auditor.store.database import FindingRecord, Store
from auditor.store.schema import RunRecord

T0 = datetime(2026, 10, 1, 12, 0, tzinfo=UTC)
API_KEY = "sk-live0123456789abcdefghij"


def raw_change(rev: int, model: str = "m1", api_key: str = API_KEY) -> dict[str, Any]:
    return {
        "revision": rev,
        "settings": {
            "customModels": [{"id": "custom:x", "model": model, "apiKey": api_key}],
            "env": {"HOME_TOKEN": "${VAULT_TOKEN}", "LITERAL": "plain-secret-value"},
            "maxAutonomyLevel": "low",
        },
        "user": {"id": "u1", "email": "a@b.c", "name": None},
        "updatedAt": (T0 + timedelta(days=rev)).isoformat().replace("+00:00", "Z"),
    }


def revision(store: Store, rev: int, **kw: Any) -> Revision:
    return to_revision(raw_change(rev, **kw), store.ingest_redactor(), "default", "$")


def fill(store: Store, revs: range) -> None:
    with store.transaction():
        for rev in revs:
            store.ingest_revision(revision(store, rev), 1, T0)


@pytest.fixture(params=["sqlite", "postgres"])
def state_path(request: pytest.FixtureRequest, tmp_path: Path) -> Path | str:
    """Where the store lives: an SQLite file, or a fresh PostgreSQL database's URL."""
    if request.param == "sqlite":
        return tmp_path / "state.db"
    return str(request.getfixturevalue("pg_url"))


def no_table(table: str) -> str:
    """The backend's words for a missing table (SQLite's or PostgreSQL's)."""
    return f'no such table: {table}|relation "{table}" does not exist'


@pytest.fixture
def store(state_path: Path) -> Any:
    with Store.open(state_path) as s:
        yield s


def test_no_secret_reaches_the_file_and_env_references_stay(store: Store, state_path: Path) -> None:
    fill(store, range(1, 4))
    stored = store.get_revision(2)
    assert stored is not None
    model = stored.settings["customModels"][0]
    assert model["apiKey"] == store.redactor.marker(API_KEY)
    assert stored.settings["env"]["HOME_TOKEN"] == "${VAULT_TOKEN}"
    assert stored.user.name == ""
    store.close()
    raw = stored_bytes(state_path)
    assert b"customModels" in raw  # the check reads the stored settings
    assert API_KEY.encode() not in raw and b"plain-secret-value" not in raw


def test_reading_revisions(store: Store) -> None:
    fill(store, range(1, 8))
    assert store.revision_numbers() == list(range(1, 8))
    assert [r.revision for r in store.iter_revisions(start=3, end=5)] == [3, 4, 5]
    assert [r.revision for r in store.iter_revisions(start=6)] == [6, 7]
    latest = store.latest_revision()
    assert latest is not None and latest.revision == 7
    assert store.count_revisions() == 7
    in_force = store.revision_at(T0 + timedelta(days=4, hours=5))
    assert in_force is not None and in_force.revision == 4
    assert store.revision_at(T0) is None
    assert store.get_revision(99) is None


def test_a_walk_let_go_after_the_store_closed_prints_nothing(
    state_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A run stopped by SIGTERM closes its store while a walk over the history (or the
    # reports) is still held by the stopped frames; the walk is finalized later. Closing its
    # cursor then must not raise: Python would print "Exception ignored in <generator …>"
    # and a traceback after the run's last line (it said the file "is damaged").
    ignored: list[Any] = []
    monkeypatch.setattr(sys, "unraisablehook", ignored.append)
    with Store.open(state_path) as store:
        fill(store, range(1, 4))
        with store.transaction():
            raw = {"reportId": "r1", "repoUrl": "https://g/a", "createdAt": 1000, "report": {}}
            store.ingest_report(to_report(raw, store.ingest_redactor(), "$"), 1, T0)
        walks = [store.iter_revisions(), store.iter_reports()]
        first_revision, first_report = (next(w) for w in walks)
        assert (first_revision.revision, first_report.report_id) == (1, "r1")
    del walks
    gc.collect()
    assert [str(u.exc_value) for u in ignored] == []


def test_a_streamed_history_shares_what_a_revision_left_unchanged(store: Store) -> None:
    """Consecutive revisions read as a history share the objects one did not change, and
    nothing that differs only in type (`1`, `true`, `1.0`) is mistaken for unchanged."""
    settings = [
        {"env": {"A": "x"}, "flags": [1, 2], "models": [{"id": 1}, {"id": 2}]},
        {"env": {"A": "x"}, "flags": [True, 2], "models": [{"id": 1}, {"id": 2}]},
        {"env": {"A": "y"}, "flags": [True, 2], "models": [{"id": 1.0}, {"id": 2}]},
    ]
    with store.transaction():
        for number, data in enumerate(settings, start=1):
            raw = {**raw_change(number), "settings": data}
            rev = to_revision(raw, store.ingest_redactor(), "default", "$")
            store.ingest_revision(rev, 1, T0)
    one, two, three = (r.settings for r in store.iter_revisions())
    for number, read in enumerate((one, two, three), start=1):
        alone = store.get_revision(number)
        assert alone is not None and orjson.dumps(read) == orjson.dumps(alone.settings)
    assert two["env"] is one["env"] and two["models"] is one["models"]
    assert two["flags"] is not one["flags"] and three["flags"] is two["flags"]
    assert three["env"] is not two["env"] and three["models"] is not two["models"]
    assert three["models"][0] is not two["models"][0] and three["models"][1] is two["models"][1]


def test_every_stored_revision_number_is_read_back_by_every_reader(store: Store) -> None:
    """The API's revision numbers run up to 2^63-1 (`fetch.decode`): one above 2^62 is stored,
    so listing the history (export's revisions.jsonl, `auditor history`, the policy check's
    history) must not leave it out while the index and `latest_revision` name it."""
    with store.transaction():
        for number in (1, 2**62 + 5, 2**63 - 1):
            store.ingest_revision(replace(revision(store, 1), revision=number), 1, T0)
    numbers = [1, 2**62 + 5, 2**63 - 1]
    assert store.revision_numbers() == numbers
    assert [n for n, _ in store.revision_hashes()] == numbers
    assert [r.revision for r in store.iter_revisions()] == numbers
    assert [r.revision for r in store.iter_revisions(start=2)] == numbers[1:]
    assert [r.revision for r in store.iter_revisions(end=2**62 + 5)] == numbers[:2]


def test_a_time_window_reads_its_revisions_and_the_one_before_each_only(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`auditor history --since/--until` reads through `iter_revisions_in_window`: every
    revision whose time is in the window, bounds included to the microsecond, also when times
    run out of order with the numbers, and the stored revision just before each (its changes
    are against it); no other row, in number order, across the batches it reads them in."""
    monkeypatch.setattr("auditor.store.database._WINDOW_BATCH", 7)
    rng = random.Random(11)
    numbers = sorted(rng.sample(range(1, 400), 60))
    times = {
        n: T0 + timedelta(hours=rng.randrange(48), microseconds=rng.choice([0, 1, 999_999]))
        for n in numbers
    }
    with store.transaction():
        for n in numbers:
            store.ingest_revision(
                replace(revision(store, 1), revision=n, updated_at=times[n]), 1, T0
            )
    stored = sorted(times.values())
    one_us = timedelta(microseconds=1)
    plus2 = timezone(timedelta(hours=2))
    windows: list[tuple[datetime | None, datetime | None]] = [
        (None, None),
        (stored[0], stored[-1]),
        (stored[10], None),
        (None, stored[40]),
        (stored[20], stored[20]),
        (stored[20] + one_us, stored[30] - one_us),
        (stored[-1] + one_us, None),
        (None, stored[0] - one_us),
        (stored[5].astimezone(plus2), stored[25].astimezone(plus2)),
    ]
    for _ in range(20):
        low, high = sorted(rng.sample(stored, 2))
        windows.append((low, high))
    for since, until in windows:
        after, upto = since or stored[0], until or stored[-1]
        inside = [n for n in numbers if after <= times[n] <= upto]
        before = {numbers[numbers.index(n) - 1] for n in inside if n != numbers[0]}
        read = [r.revision for r in store.iter_revisions_in_window(since, until)]
        assert read == sorted(set(inside) | before), (since, until)


def test_known_revision_with_other_content_is_an_issue_not_an_overwrite(store: Store) -> None:
    fill(store, range(1, 3))
    before = store.get_revision(2)
    with store.transaction():
        same = store.ingest_revision(revision(store, 2), 2, T0)
        other = store.ingest_revision(revision(store, 2, model="m2"), 2, T0)
    assert (same.status, same.known_before) == ("same", True)
    assert other.status == "conflict" and other.issue is not None
    assert store.get_revision(2) == before
    [issue] = store.integrity_issues()
    assert (issue.revision, issue.stored_hash) == (2, before.content_hash if before else "")
    assert "revision 2 changed after it was stored" in issue.describe()


def test_rotated_secret_shows_as_a_different_marker(store: Store) -> None:
    a = revision(store, 1)
    b = revision(store, 2, api_key="sk-live-rotated-0123456789abc")
    assert a.settings["customModels"][0]["apiKey"] != b.settings["customModels"][0]["apiKey"]
    assert a.content_hash != b.content_hash


def test_failed_transaction_leaves_the_store_unchanged(store: Store) -> None:
    fill(store, range(1, 3))
    with pytest.raises(RuntimeError), store.transaction():
        store.ingest_revision(revision(store, 3), 2, T0)
        raise RuntimeError("network went away")
    assert store.revision_numbers() == [1, 2]


def test_reports_latest_per_repo(store: Store) -> None:
    def report(rid: str, repo: str, ms: int) -> Any:
        raw = {
            "reportId": rid,
            "repoUrl": repo,
            "createdAt": ms,
            "report": {"x": {"numerator": 1, "denominator": 1, "rationale": f"token={API_KEY}"}},
        }
        return to_report(raw, store.ingest_redactor(), "$")

    with store.transaction():
        for rid, repo, ms in [
            ("a1", "https://g/a", 1000),
            ("a2", "https://g/a", 2000),
            ("b1", "https://g/b", 1500),
        ]:
            assert store.ingest_report(report(rid, repo, ms), 1, T0).status == "new"
        clash = store.ingest_report(report("a1", "https://g/a", 999), 2, T0)
    assert clash.status == "conflict"
    assert [r.report_id for r in store.latest_reports()] == ["a2", "b1"]
    assert [r.report_id for r in store.iter_reports()] == ["a1", "a2", "b1"]
    assert (store.count_reports(), store.count_repositories()) == (3, 2)
    assert API_KEY not in str(store.latest_reports()[0].data)


def test_latest_reports_as_of_a_time_are_what_the_whole_list_gives(store: Store) -> None:
    """The run reads only each repository's newest report (as of `--at`): the same reports as
    picking them from every stored one, ties on time included (broken by report id)."""
    rng = random.Random(7)
    rows = [
        (f"r{rng.randrange(10**6):06d}", f"https://g/{rng.choice('abcd')}", rng.choice(range(5)))
        for _ in range(60)
    ]
    with store.transaction():
        for rid, repo, minute in dict((r[0], r) for r in rows).values():
            raw = {"reportId": rid, "repoUrl": repo, "createdAt": 60_000 * minute, "report": {}}
            store.ingest_report(to_report(raw, store.ingest_redactor(), "$"), 1, T0)
    every = list(store.iter_reports())
    for at in [None, *(datetime.fromtimestamp(60 * m, UTC) for m in range(-1, 6))]:
        want = latest_per_repo(r for r in every if at is None or r.created_at <= at)
        got = latest_per_repo(store.latest_reports(at))
        assert [r.report_id for r in got] == [r.report_id for r in want], at
        assert store.count_reports(at) == sum(1 for r in every if at is None or r.created_at <= at)
    assert any(
        len({r.created_at for r in every if r.repo_url == u})
        < sum(1 for r in every if r.repo_url == u)
        for u in {r.repo_url for r in every}
    )  # ties met


def test_revision_hashes_are_read_from_an_index_new_and_migrated_stores_have(
    tmp_path: Path,
) -> None:
    """Every run reads each revision's content hash; from the table that walks every row's
    settings (the hash is stored after them), so a covering index holds the pair. A store
    made by the release before schema 4 gains it on its first writing open."""
    path = tmp_path / "s.db"
    query = "SELECT revision, content_hash FROM revisions WHERE revision <= 9 ORDER BY 1"

    def plan() -> str:
        with closing(sqlite3.connect(path)) as db, db:
            return str(db.execute("EXPLAIN QUERY PLAN " + query).fetchall())

    with Store.open(path) as store:
        fill(store, range(1, 4))
        hashes = list(store.revision_hashes())
    assert "COVERING INDEX revisions_hashes" in plan()
    raw_sql(path, "DROP INDEX revisions_hashes")
    raw_sql(path, "DROP TABLE scrub_index")
    raw_sql(path, "UPDATE meta SET value = ? WHERE key = 'schema_version'", (b"3",))
    assert "COVERING INDEX revisions_hashes" not in plan()
    with Store.open(path) as store:
        assert list(store.revision_hashes()) == hashes
    assert "COVERING INDEX revisions_hashes" in plan()


def test_missing_state_file(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match=r"no state file at .*: run `auditor sync` first"):
        Store.open(tmp_path / "none.db", create=False)


def test_lock_stops_a_second_run(state_path: Path) -> None:
    with Store.open(state_path), pytest.raises(StoreError) as info:
        Store.open(state_path)
    assert "is locked by another auditor run (" in str(info.value)
    assert f"pid {os.getpid()}" in str(info.value)
    Store.open(state_path).close()  # released on close


def test_not_a_database(tmp_path: Path) -> None:
    path = tmp_path / "junk.db"
    path.write_text("this is not sqlite " * 100)
    with pytest.raises(StoreError, match="not a usable auditor state file"):
        Store.open(path)


def test_unknown_schema_version(state_path: Path) -> None:
    Store.open(state_path).close()
    raw_sql(state_path, "UPDATE meta SET value = ? WHERE key = 'schema_version'", ("99",))
    with pytest.raises(StoreError, match="schema version 99"):
        Store.open(state_path)


def test_key_is_kept_so_markers_are_stable_across_opens(state_path: Path) -> None:
    with Store.open(state_path) as first:
        marker = first.redactor.marker(API_KEY)
    with Store.open(state_path) as second:
        assert second.redactor.marker(API_KEY) == marker


@pytest.mark.parametrize("readonly", [False, True])
def test_a_stored_key_that_fails_its_check_is_damage_not_a_wrong_environment_key(
    state_path: Path, readonly: bool
) -> None:
    """No AUDITOR_FINGERPRINT_KEY was given: a stored key that no longer matches its check
    value is damage (with what to do), not 'AUDITOR_FINGERPRINT_KEY does not match', which sent
    the user after a setting they never made (both backends)."""
    Store.open(state_path).close()
    raw_sql(state_path, "UPDATE meta SET value = ? WHERE key = 'fingerprint_key'", (b"x" * 32,))
    with pytest.raises(StoreError) as info:
        Store.open(state_path, readonly=readonly)
    text = str(info.value)
    assert "is damaged: its fingerprint key does not match the check value stored beside it" in text
    assert "AUDITOR_FINGERPRINT_KEY" not in text
    assert "run `auditor sync` to start a new one" in text


def test_external_fingerprint_key_is_not_stored(state_path: Path) -> None:
    key = b"k" * 32
    with Store.open(state_path, fingerprint_key=key) as s:
        fill(s, range(1, 2))
    assert key not in stored_bytes(state_path)
    with pytest.raises(StoreError, match="set it to open it"):
        Store.open(state_path)
    with pytest.raises(StoreError, match="does not match"):
        Store.open(state_path, fingerprint_key=b"x" * 32)
    Store.open(state_path, fingerprint_key=key).close()


def test_external_fingerprint_key_gives_the_same_markers_in_every_state_file(
    tmp_path: Path,
) -> None:
    key = b"k" * 32
    markers = []
    for name in ("a.db", "b.db"):
        with Store.open(tmp_path / name, fingerprint_key=key) as s:
            markers.append(s.redactor.marker(API_KEY))
    with Store.open(tmp_path / "random.db") as s:
        markers.append(s.redactor.marker(API_KEY))
    assert markers[0] == markers[1] != markers[2]
    # a random-key file keeps its key, and the refusal says so rather than "does not match"
    with pytest.raises(StoreError, match="was created without AUDITOR_FINGERPRINT_KEY") as info:
        Store.open(tmp_path / "random.db", fingerprint_key=key)
    assert "unset AUDITOR_FINGERPRINT_KEY to open it" in str(info.value)
    with pytest.raises(StoreError, match="does not match"):  # another key than its own
        Store.open(tmp_path / "a.db", fingerprint_key=b"x" * 32)


def test_org_binding(store: Store) -> None:
    store.bind_org("acme")
    store.bind_org("acme")
    with pytest.raises(StoreError, match="holds organization 'acme', not 'other'"):
        store.bind_org("other")


def test_runs_and_previous_complete_run(store: Store) -> None:
    finding = FindingRecord("fp1", "R1", "settings", "fail", "high", "run-1")
    for n, complete in [(1, True), (2, False), (3, False)]:
        store.start_run(
            f"run-{n}",
            started=T0 + timedelta(hours=n),
            tool_version="0.1.0",
            policy_hashes={"p.yaml": "abc"},
        )
        store.finish_run(
            f"run-{n}",
            finished=T0 + timedelta(hours=n, minutes=5),
            complete=complete,
            findings=[finding],
        )
    previous = store.previous_complete_run("run-3")  # run-2 ended incomplete
    assert previous is not None
    assert (previous.run_id, previous.complete, previous.findings) == ("run-1", True, (finding,))
    assert store.previous_complete_run("run-1") is None
    with pytest.raises(StoreError, match="no run 'nope'"):
        store.finish_run("nope", finished=T0, complete=True, findings=[])


def _records(store: Store) -> dict[str, int]:
    rows = store._db.execute("SELECT run_id, count(*) FROM findings GROUP BY run_id").fetchall()
    return {run_id: n for run_id, n in rows}


def test_a_complete_run_drops_the_records_no_run_compares_with(store: Store) -> None:
    """Nightly after nightly, the state file keeps the finding records of the newest complete
    run of each scope only (the next run's baseline), not every night's: the runs stay, and
    a run whose clock is behind the last one's still compares with it."""

    def night(
        run_id: str, hours: float, scope: str, findings: list[FindingRecord], complete: bool = True
    ) -> RunRecord | None:
        store.start_run(
            run_id,
            started=T0 + timedelta(hours=hours),
            tool_version="0.3.0",
            policy_hashes={"p.yaml": "abc"},
            scope=scope,
        )
        previous = store.previous_complete_run(run_id, scope)
        like = None if previous is None else (previous.run_id, list(previous.findings))
        store.finish_run(
            run_id,
            finished=T0 + timedelta(hours=hours),
            complete=False,
            findings=findings,
            like=like,
        )
        if complete:
            store.complete_run(run_id)
        return previous

    def found(run: str, n: int) -> list[FindingRecord]:
        return [FindingRecord(f"fp{i}", "R1", f"s{i}", "fail", "high", "n1") for i in range(n)]

    night("n1", 1, "nightly", found("n1", 4))
    night("adhoc", 1.5, "at:2026-09-01", found("adhoc", 2))
    for n in range(2, 6):
        previous = night(f"n{n}", n, "nightly", found(f"n{n}", 3 + n))
        assert previous is not None and previous.run_id == f"n{n - 1}"
        assert len(previous.findings) == 2 + n  # the night before's records, all of them
    night("broken", 6, "nightly", found("broken", 1), complete=False)  # ended with an error
    assert _records(store) == {"adhoc": 2, "n5": 8, "broken": 1}
    # a nightly that is never complete keeps the last one's records, not every night's
    night("broken-2", 6.5, "nightly", found("broken-2", 2), complete=False)
    assert _records(store) == {"adhoc": 2, "n5": 8, "broken-2": 2}
    # a clock put back an hour: the run still compares with n5, and n5's records are kept
    previous = night("late", 4, "nightly", found("late", 4))
    assert previous is not None and (previous.run_id, len(previous.findings)) == ("n5", 8)
    assert _records(store) == {"adhoc": 2, "late": 4}
    runs = {r for (r,) in store._db.execute("SELECT run_id FROM runs").fetchall()}
    assert runs == {"n1", "n2", "n3", "n4", "n5", "adhoc", "broken", "broken-2", "late"}
    # finished complete in one step (as `finish_run(complete=True)` allows): the same
    store.start_run(
        "once",
        started=T0 + timedelta(hours=9),
        tool_version="0.3.0",
        policy_hashes={},
        scope="nightly",
    )
    store.finish_run(
        "once", finished=T0 + timedelta(hours=9), complete=True, findings=found("once", 1)
    )
    assert _records(store) == {"adhoc": 2, "once": 1}


def test_a_run_written_as_a_delta_holds_the_same_findings(store: Store) -> None:
    """A run's findings written as a delta from the previous run's rows (`like`) are stored
    exactly as when every record is written: kept, changed (status, severity, first run),
    new, dropped and repeated records, over random pairs of runs."""
    rng = random.Random(13)
    for trial in range(6):

        def records(run: str) -> list[FindingRecord]:
            picked = rng.sample(range(40), rng.randint(0, 30))
            return [
                FindingRecord(
                    f"fp{i}", f"R{i % 3}", f"s{i}", rng.choice(["fail", "fail", "error"]),
                    rng.choice(["high", "high", "low"]), rng.choice([run, "first"]),
                )
                for i in picked
            ]  # fmt: skip

        before, delta, full = (f"t{trial}-{name}" for name in ("before", "delta", "full"))
        older = records(before)
        newer = records(delta)
        newer += rng.sample(newer, min(2, len(newer)))  # a record met twice
        for n, (run, kept, like) in enumerate(
            [(before, older, None), (delta, newer, (before, older)), (full, newer, None)]
        ):
            # (`full` in a scope of its own: completing it would drop `delta`'s records)
            scope = "full" if run == full else ""
            store.start_run(run, started=T0 + timedelta(hours=3 * trial + n),
                            tool_version="0.1.0", policy_hashes={}, scope=scope)  # fmt: skip
            store.finish_run(run, finished=T0, complete=True, findings=kept, like=like)
        last = {r.fingerprint: r for r in newer}
        expected = sorted(
            (r.fingerprint, r.rule_id, r.subject_key, r.status, r.severity, r.first_seen_run)
            for r in last.values()
        )
        assert _findings_of(store, delta) == _findings_of(store, full) == expected


def _findings_of(store: Store, run_id: str) -> list[tuple[Any, ...]]:
    from auditor.store import runs

    with store.reading():
        return sorted(
            (f.fingerprint, f.rule_id, f.subject_key, f.status, f.severity, f.first_seen_run)
            for f in runs._findings(store._db, run_id)
        )


def test_sync_records(store: Store) -> None:
    assert store.last_sync() is None
    with store.transaction():
        sync_id = store.begin_sync(T0, "https://svc")
        store.finish_sync(
            sync_id, T0 + timedelta(seconds=3), revisions_new=4, reports_new=2, pages=3
        )
    record = store.last_sync()
    assert record is not None
    assert (record.base_url, record.revisions_new, record.reports_new, record.pages) == (
        "https://svc",
        4,
        2,
        3,
    )


@pytest.mark.parametrize("value", ["one", "", "1.5x"])
def test_unreadable_schema_version_is_a_store_error(state_path: Path, value: str) -> None:
    Store.open(state_path).close()
    raw_sql(state_path, "UPDATE meta SET value = ? WHERE key = 'schema_version'", (value,))
    with pytest.raises(StoreError, match="is damaged: unreadable schema version; restore ") as e:
        Store.open(state_path)
    assert str(e.value).endswith("earlier runs are not kept)")  # what to do about it


def _damage(path: Path, statement: str) -> None:
    if statement.startswith("UPDATE revisions SET settings"):  # bytes, as both backends take them
        raw_sql(path, "UPDATE revisions SET settings = ?", (b"{{",))
        return
    raw_sql(path, statement)


DAMAGE = [
    pytest.param("DROP TABLE revisions", no_table("revisions"), id="dropped-table"),
    pytest.param("UPDATE revisions SET settings = x'7b7b'", "", id="settings-not-json"),
    pytest.param("UPDATE revisions SET updated_at = 'soon'", "", id="bad-timestamp"),
]


@pytest.mark.parametrize(("statement", "detail"), DAMAGE)
def test_reading_a_damaged_file_is_a_store_error(
    state_path: Path, statement: str, detail: str
) -> None:
    with Store.open(state_path) as s:
        fill(s, range(1, 4))
    _damage(state_path, statement)
    with Store.open(state_path) as s:
        for read in (
            s.latest_revision,
            lambda: list(s.iter_revisions()),
            lambda: s.get_revision(2),
        ):
            shown = re.escape(f"state file {s.path} is damaged: ")
            with pytest.raises(StoreError, match=shown) as info:
                read()
            assert re.search(detail, str(info.value))


@pytest.mark.parametrize("table", ["revisions", "integrity_issues", "syncs", "runs"])
def test_reading_from_a_dropped_table_is_a_store_error(state_path: Path, table: str) -> None:
    Store.open(state_path).close()
    _damage(state_path, f"DROP TABLE {table}")
    reads: dict[str, Callable[[Store], Any]] = {
        "revisions": lambda s: (s.count_revisions(), s.revision_numbers()),
        "integrity_issues": lambda s: s.integrity_issues(),
        "syncs": lambda s: s.last_sync(),
        "runs": lambda s: s.previous_complete_run("run-1"),
    }
    with Store.open(state_path) as s, pytest.raises(StoreError, match=no_table(table)):
        reads[table](s)


@pytest.mark.parametrize(
    "read",
    [
        pytest.param(lambda s: list(s.iter_reports()), id="iter"),
        pytest.param(lambda s: s.latest_reports(), id="latest"),
    ],
)
def test_reading_damaged_reports_is_a_store_error(state_path: Path, read: Any) -> None:
    with Store.open(state_path) as s:
        raw = {"reportId": "a", "repoUrl": "https://g/a", "createdAt": 1, "report": {}}
        with s.transaction():
            s.ingest_report(to_report(raw, s.ingest_redactor(), "$"), 1, T0)
    _damage(state_path, "UPDATE reports SET data = 'not json', created_at = 'x'")
    with Store.open(state_path) as s:
        assert list(s.iter_revisions()) == []
        with pytest.raises(StoreError, match="is damaged: "):
            read(s)
    _damage(state_path, "DROP TABLE reports")
    with Store.open(state_path) as s, pytest.raises(StoreError, match=no_table("reports")):
        read(s)
    with Store.open(state_path) as s, pytest.raises(StoreError, match=no_table("reports")):
        s.count_reports()


def test_stored_json_is_the_hashed_json(store: Store) -> None:
    fill(store, range(1, 3))
    rows = store._db.execute("SELECT settings, content_hash FROM revisions").fetchall()
    assert len(rows) == 2
    for settings, digest in rows:
        assert hashlib.sha256(bytes(settings)).hexdigest() == digest


def test_an_older_store_is_migrated_forward_in_one_step(
    state_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from auditor.store import schema

    now = schema.SCHEMA_VERSION  # this auditor's version; the test plays the next one
    with Store.open(state_path) as s:
        fill(s, range(1, 3))
    step = "CREATE TABLE extra (id INTEGER PRIMARY KEY, note TEXT NOT NULL, data BLOB)"
    monkeypatch.setattr(schema, "SCHEMA_VERSION", now + 1)
    monkeypatch.setattr(schema, "MIGRATIONS", {**schema.MIGRATIONS, now + 1: step})
    with pytest.raises(StoreError, match=rf"schema version {now}; .* open it once for writing"):
        Store.open(state_path, readonly=True)
    with Store.open(state_path) as s:  # migrated: the new table works, the old rows are kept
        assert s.count_revisions() == 2
        with s.transaction():
            s._db.execute("INSERT INTO extra (note, data) VALUES (?, ?)", ("n", b"\x00\xff"))
        assert s._db.execute("SELECT id, note, data FROM extra").fetchall() == [
            (1, "n", b"\x00\xff")
        ]
    monkeypatch.setattr(schema, "SCHEMA_VERSION", now)  # an older auditor: refused, not changed
    with pytest.raises(
        StoreError, match=rf"schema version {now + 1}; .* reads version {now} \(upgrade"
    ):
        Store.open(state_path)


def test_a_failed_migration_changes_nothing(
    state_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from auditor.store import schema

    now = schema.SCHEMA_VERSION
    Store.open(state_path).close()
    monkeypatch.setattr(schema, "SCHEMA_VERSION", now + 1)
    bad = "CREATE TABLE extra (x TEXT); CREATE TABLE revisions (y TEXT)"
    monkeypatch.setattr(schema, "MIGRATIONS", {**schema.MIGRATIONS, now + 1: bad})
    with pytest.raises(StoreError, match="not a usable auditor"):
        Store.open(state_path)
    monkeypatch.setattr(schema, "SCHEMA_VERSION", now)
    with Store.open(state_path) as s:  # still the old version, without the half-made table
        stored = s._db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        assert stored[0] in (str(now), str(now).encode())
        with pytest.raises(Exception, match=no_table("extra")):
            s._db.execute("SELECT * FROM extra")


def test_evaluation_state_round_trips_and_a_new_revision_replaces_it(store: Store) -> None:
    blob = bytes(range(256))  # the state is bytes: BLOB on SQLite, BYTEA on PostgreSQL
    store.save_eval_state(10, "h10", {"rule-a": blob, "rule-b": b"b"})
    rows = {r.rule_key: r for r in store.eval_state()}
    assert set(rows) == {"rule-a", "rule-b"}
    assert (rows["rule-a"].revision, rows["rule-a"].history, rows["rule-a"].state) == (
        10,
        "h10",
        blob,
    )
    store.save_eval_state(10, "h10", {"rule-c": b"c"})  # another policy's rules at the same view
    assert {r.rule_key for r in store.eval_state()} == {"rule-a", "rule-b", "rule-c"}
    store.save_eval_state(11, "h11", {"rule-a": b"new"})  # moved on: older rows are dropped
    assert [(r.rule_key, r.revision, r.state) for r in store.eval_state()] == [
        ("rule-a", 11, b"new")
    ]


def test_a_report_is_recognised_by_its_raw_fingerprint_only_while_its_row_is_unchanged(
    store: Store, state_path: Path
) -> None:
    """What lets a sync skip redacting a report it has (both backends): a keyed fingerprint of
    the raw item, never the item; recognised while the stored row is the one it gave."""
    from auditor.store import Ingested

    later = "plainwordlatersecretvalue"
    raw = {
        "reportId": "a1",
        "repoUrl": "https://g/a",
        "createdAt": 1000,
        "report": {"x": {"numerator": 1, "denominator": 1, "rationale": f"{API_KEY} {later}"}},
    }
    seen = store.report_fingerprint(raw)
    assert seen is not None and seen != store.report_fingerprint({**raw, "createdAt": 1001})
    assert store.known_report(seen, 1) is None  # nothing recorded yet
    with store.transaction():
        report = to_report(raw, store.ingest_redactor(), "$")
        assert store.ingest_report(report, 1, T0, fingerprint=seen).status == "new"
    assert store.known_report(seen, 1) == ("a1", Ingested("same", known_before=False))
    assert store.known_report(seen, 2) == ("a1", Ingested("same", known_before=True))
    assert API_KEY.encode() not in stored_bytes(state_path)
    with store.transaction():  # a secret learned later: the stored row is redacted again
        store.register_secret(later)
        assert store.scrub_stored() == 1
    assert store.known_report(seen, 2) is None  # so the raw item is redacted and compared again


def test_a_changed_report_row_is_damage_when_a_secret_learned_later_rewrites_it(
    state_path: Path,
) -> None:
    """Scrubbing a secret learned later rewrites a stored report and its SHA-256: a row changed
    behind the store's back must stop there as damage, not come out with a fresh hash that
    makes the change look stored by auditor (both backends)."""
    later = "plainwordlatersecretvalue"
    raw = {
        "reportId": "a1",
        "repoUrl": "https://g/a",
        "createdAt": 1000,
        "report": {"x": {"numerator": 1, "denominator": 1, "rationale": f"see {later}"}},
    }
    with Store.open(state_path) as store, store.transaction():
        seen = store.report_fingerprint(raw)
        store.ingest_report(to_report(raw, store.ingest_redactor(), "$"), 1, T0, fingerprint=seen)
    forged = {**raw, "report": {"x": {"numerator": 1, "denominator": 1, "rationale": later}}}
    raw_sql(state_path, "UPDATE reports SET data = ?", (orjson.dumps(forged),))
    damaged = "do not match their stored SHA-256"
    with Store.open(state_path) as store:
        assert store.known_report(seen, 2) is not None  # the next sync skips it (hash column kept)
        with pytest.raises(StoreError, match=damaged), store.transaction():
            store.register_secret(later)
            store.scrub_stored()
        with pytest.raises(StoreError, match=damaged):
            list(store.iter_reports())  # still damage: nothing was rewritten


def test_every_name_of_one_file_shares_its_lock(tmp_path: Path) -> None:
    """A symlink (or a path through one) is the same file: a second writer through it is
    refused as through the file's own name, instead of both writing at once."""
    real = tmp_path / "state.db"
    link = tmp_path / "link.db"
    Store.open(real).close()
    link.symlink_to(real)
    with Store.open(real), pytest.raises(StoreError, match="is locked by another auditor run"):
        Store.open(link)
    with Store.open(link), pytest.raises(StoreError, match="is locked by another auditor run"):
        Store.open(real, readonly=True)


def test_a_hard_link_to_the_file_shares_its_lock(tmp_path: Path) -> None:
    """A hard link is another name of the same file, with a `.lock` of its own beside it: a
    second writer through it is refused (two `auditor run`s through two names both went
    ahead, each marking the same findings new), a reader too while a writer holds the file;
    readers share it through both names, and the lock is gone once the store is closed."""
    real = tmp_path / "state.db"
    Store.open(real).close()
    other = tmp_path / "elsewhere" / "hard.db"
    other.parent.mkdir()
    os.link(real, other)
    message = "is locked by another auditor command using another name of the same file"
    with Store.open(real):
        with pytest.raises(StoreError, match=message):
            Store.open(other)
        with pytest.raises(StoreError, match=message):
            Store.open(other, readonly=True)
    third = tmp_path / "third.db"
    os.link(real, third)
    with (
        Store.open(other, readonly=True),
        Store.open(real, readonly=True),
        pytest.raises(StoreError, match=message),
    ):
        Store.open(third)
    with Store.open(other) as store:
        fill(store, range(1, 3))
    with Store.open(real, readonly=True) as store:
        assert store.count_revisions() == 2


def test_readers_share_the_file_and_writers_wait_for_none_of_them(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    Store.open(path).close()
    with Store.open(path, readonly=True) as one, Store.open(path, readonly=True) as two:
        assert one.count_revisions() == two.count_revisions() == 0
        with pytest.raises(StoreError) as info:
            Store.open(path)
        assert str(info.value) == (
            f"state file {path} is locked by another auditor command reading it"
        )
    with (
        Store.open(path),
        pytest.raises(StoreError, match=rf"another auditor run \(pid {os.getpid()}\)"),
    ):
        Store.open(path, readonly=True)
    with Store.open(path, readonly=True):  # a writer that has finished leaves no pid behind
        pass


def _lock_file_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: int, reason: str
) -> Path:
    """A state file of two revisions whose lock file cannot be created (`code`: a read-only
    mount, a folder another user owns)."""
    path = tmp_path / "state.db"
    with Store.open(path) as store:
        fill(store, range(1, 3))
    Path(f"{path}.lock").unlink()
    real_open = builtins.open

    def refused(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        if str(file).endswith(".lock") and mode != "r":
            raise OSError(code, reason)
        return real_open(file, mode, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", refused)
    return path


def test_a_reader_opens_a_state_file_in_a_folder_it_cannot_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A state file handed over on a read-only mount: `diff`, `history`, `export` read it
    without creating the lock file beside it; a writer is refused with the reason."""
    path = _lock_file_refused(tmp_path, monkeypatch, errno.EROFS, "Read-only file system")
    with Store.open(path, readonly=True) as store:
        assert store.count_revisions() == 2
    with pytest.raises(StoreError, match=r"cannot lock state file .*: Read-only file system"):
        Store.open(path)


def test_a_reader_without_the_lock_reads_one_snapshot_that_no_writer_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reader that cannot create the lock file (a folder another user owns) takes no lock,
    yet the folder's owner may start a writer meanwhile: the writer takes the lock nobody holds.
    The reader then holds SQLite's shared lock for its whole life, so everything it reads is one
    consistent state of the file (an export's revisions and reports from the same moment), and
    the writer cannot commit under it (SQLite says the database is locked) instead of
    changing the file between two of the reader's queries."""
    path = _lock_file_refused(tmp_path, monkeypatch, errno.EACCES, "Permission denied")
    with Store.open(path, readonly=True) as reader:
        assert reader.count_revisions() == 2
        writer = sqlite3.connect(path, timeout=0, isolation_level=None)
        with pytest.raises(sqlite3.OperationalError, match="database is locked"):
            writer.execute(
                "INSERT INTO revisions SELECT revision + 10, org, updated_at, user_id, "
                "user_email, user_name, settings, content_hash, sync_id FROM revisions"
            )
        writer.close()
        assert reader.count_revisions() == 2
        assert [r.revision for r in reader.iter_revisions()] == [1, 2]
    with (
        closing(sqlite3.connect(path)) as db,
        db,
    ):  # and once the reader is gone, the writer goes ahead
        assert db.execute("SELECT COUNT(*) FROM revisions").fetchone() == (2,)


@pytest.mark.parametrize("readonly", [True, False], ids=["reader", "writer"])
def test_a_damaged_meta_table_is_damage_and_leaves_the_lock_free(
    tmp_path: Path, readonly: bool
) -> None:
    """A meta row whose value no longer has its type (bit rot, an edit) was an "unexpected
    TypeError" holding the lock until the exception was freed: it is damage, said with what to
    do, and the lock is released before the error leaves `Store.open`."""
    path = tmp_path / "state.db"
    Store.open(path).close()
    raw_sql(path, "UPDATE meta SET value = 'text, not bytes' WHERE key = 'fingerprint_key'")
    _open_damaged_and_find_the_lock_free(path, readonly)


@pytest.mark.parametrize("readonly", [True, False], ids=["reader", "writer"])
def test_a_damaged_secret_memory_is_damage_and_leaves_the_lock_free(
    tmp_path: Path, readonly: bool
) -> None:
    """The remembered secrets are read as the store opens, after the key: damage there is
    named as damage too, and the lock is not left held by the half-made store."""
    from auditor.store.schema import SECRET_MEMORY_DDL

    path = tmp_path / "state.db"
    Store.open(path).close()
    raw_sql(path, SECRET_MEMORY_DDL)
    raw_sql(path, "INSERT INTO secret_memory (fingerprint, length) VALUES ('ab', 'many')")
    _open_damaged_and_find_the_lock_free(path, readonly)


def _open_damaged_and_find_the_lock_free(path: Path, readonly: bool) -> None:
    from auditor.store.file import acquire_lock, release_lock

    with pytest.raises(StoreError) as info:
        Store.open(path, readonly=readonly)
    assert str(info.value).startswith(f"state file {path} is damaged: ")
    assert "move it aside and run `auditor sync` to start a new one" in str(info.value)
    handle = acquire_lock(path)  # `info` still holds the traceback: nothing in it holds the lock
    assert handle is not None
    release_lock(handle)


def test_a_stored_revision_changed_behind_the_stores_back_is_damage_named_by_revision(
    tmp_path: Path,
) -> None:
    path = tmp_path / "state.db"
    with Store.open(path) as store:
        fill(store, range(1, 4))
    with closing(sqlite3.connect(path)) as db, db:
        (settings,) = db.execute("SELECT settings FROM revisions WHERE revision = 2").fetchone()
    changed = orjson.loads(settings) | {"extra": True}
    raw_sql(path, "UPDATE revisions SET settings = ? WHERE revision = 2", (orjson.dumps(changed),))
    with Store.open(path, readonly=True) as store:
        assert store.get_revision(1) is not None  # the others still read
        with pytest.raises(StoreError) as info:
            list(store.iter_revisions())
    assert str(info.value).startswith(
        f"state file {path} is damaged: the settings of revision 2 do not match their stored "
        "SHA-256 "
    )
    assert "it was changed after it was stored" in str(info.value)


# What an older auditor's rules let through (a `docker login -p` password in a hook, a report's
# free text): stored in plain text, under no record of the rules it was redacted with.
OLD_RULES_SECRET = "Qz7pLm2Rx9wK"
PARTLY = "horse battery staple"


def _stored_by_an_older_auditor(state_path: Path | str) -> None:
    with Store.open(state_path) as s:
        fill(s, range(1, 4))
        raw = {"reportId": "r1", "repoUrl": "https://g/a", "createdAt": 1000, "report": {}}
        with s.transaction():
            s.ingest_report(to_report(raw, s.ingest_redactor(), "$"), 1, T0)
    # 0.1.0 replaced only the first word of a quoted password (`PARTLY` shows what it left)
    partly = f'deploy --password "[secret fp:0123abcd len:7] {PARTLY}" --yes'
    settings = {
        "hooks": {
            "Stop": [
                {"command": f"docker login -u ci -p {OLD_RULES_SECRET} r.io"},
                {"command": partly},
            ]
        }
    }
    data = {**raw, "report": {"x": {"rationale": f"ran zip -P {OLD_RULES_SECRET} out.zip"}}}
    for table, column, key, value in [
        ("revisions", "settings", "revision = 2", settings),
        ("reports", "data", "report_id = 'r1'", data),
    ]:
        body = orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
        digest = hashlib.sha256(body).hexdigest()
        raw_sql(state_path, f"UPDATE {table} SET {column} = ?, content_hash = ? WHERE {key}",
                (body, digest))  # fmt: skip
    raw_sql(state_path, "INSERT INTO eval_state VALUES ('rule', 3, 'h', ?)", (b"evidence",))
    raw_sql(state_path, "DELETE FROM meta WHERE key = 'redaction'")
    assert OLD_RULES_SECRET.encode() in stored_bytes(state_path)


def test_rows_an_older_auditor_stored_are_redacted_again_when_opened_for_writing(
    state_path: Path,
) -> None:
    _stored_by_an_older_auditor(state_path)
    with Store.open(state_path) as s:
        assert s.redacted_again == 2  # revision 2 and the report; nothing else changed
        marker = s.redactor.marker(OLD_RULES_SECRET)
        stored = s.get_revision(2)
        assert stored is not None
        assert (
            stored.settings["hooks"]["Stop"][0]["command"] == f"docker login -u ci -p {marker} r.io"
        )
        assert s.eval_state() == []  # computed from the old rows
        assert PARTLY not in stored.settings["hooks"]["Stop"][1]["command"]
    assert OLD_RULES_SECRET.encode() not in stored_bytes(state_path)
    assert PARTLY.encode() not in stored_bytes(state_path)
    with Store.open(state_path) as again:  # done once: the next open rewrites nothing
        assert again.redacted_again == 0
        assert again.get_revision(2) == stored


def test_a_read_only_store_of_an_older_auditor_is_redacted_as_it_is_read(
    state_path: Path,
) -> None:
    _stored_by_an_older_auditor(state_path)
    before = stored_bytes(state_path)
    with Store.open(state_path, readonly=True) as s:
        marker = s.redactor.marker(OLD_RULES_SECRET)
        shown = [str(r.settings) for r in s.iter_revisions()] + [
            str(r.data) for r in s.iter_reports()
        ]
        assert not [text for text in shown if OLD_RULES_SECRET in text or PARTLY in text]
        assert sum(marker in text for text in shown) == 2
    assert stored_bytes(state_path) == before  # nothing in a read-only store changes


def test_a_secret_the_newer_rules_find_is_redacted_from_earlier_rows_too(
    state_path: Path,
) -> None:
    """A password the newer rules find in revision 2 (`docker login -p`) is also gone from
    revision 1, where only the value itself shows it is one (a note): as a sync would do."""
    _stored_by_an_older_auditor(state_path)
    note = {"notes": f"rotate {OLD_RULES_SECRET} soon"}
    body = orjson.dumps(note, option=orjson.OPT_SORT_KEYS)
    raw_sql(state_path, "UPDATE revisions SET settings = ?, content_hash = ? WHERE revision = 1",
            (body, hashlib.sha256(body).hexdigest()))  # fmt: skip
    with Store.open(state_path) as s:
        first = s.get_revision(1)
        assert first is not None
        assert first.settings["notes"] == f"rotate {s.redactor.marker(OLD_RULES_SECRET)} soon"
    assert OLD_RULES_SECRET.encode() not in stored_bytes(state_path)


def test_an_empty_state_file_auditor_did_not_make_is_refused_not_started_afresh(
    tmp_path: Path,
) -> None:
    """Tester T100 #1: a state file cut to 0 bytes (a failed copy or cache restore) was taken
    for a new one by `sync` and `run`: a new fingerprint key and baseline, silently (nothing
    new, nothing resolved). auditor never leaves an empty file (one it made and could not
    finish is removed), so every command refuses one, exit 2, and leaves it as it is."""
    from tests.conftest import run_cli

    state = tmp_path / "state.db"
    state.write_bytes(b"")
    for readonly in (False, True):
        with pytest.raises(StoreError) as info:
            Store.open(state, readonly=readonly)
        assert str(info.value).startswith(f"{state} is an empty file, not a state file")
        assert "remove it to start a new state file" in str(info.value)
    assert state.read_bytes() == b"" and sorted(p.name for p in tmp_path.iterdir()) == [state.name]
    argv = ["run", "--offline", "--state", str(state), "--out", "o"]
    code, _out, err = run_cli(argv, {}, tmp_path)
    assert code == 2 and "is an empty file, not a state file" in err, err
    assert state.read_bytes() == b""
    fresh = tmp_path / "new.db"
    with Store.open(fresh) as store:  # one auditor makes: a new state file
        assert store.created


def test_a_first_open_killed_while_the_schema_is_written_leaves_no_empty_state_file(
    tmp_path: Path,
) -> None:
    """Review R96 #5: SQLite makes the file as it connects, so a process killed (SIGKILL, out
    of memory) before the new schema was committed left a 0-byte state file, which every
    later command refuses as a state file cut to nothing (a workflow would cache it and exit
    2 every night). A new state file is made whole beside its name and linked in: a kill
    leaves no file under the name, and the next open makes one (and clears what was left)."""
    import subprocess
    import textwrap

    state = tmp_path / "state.db"
    script = textwrap.dedent(f"""
        import os, signal, sys
        sys.path.insert(0, {str(Path(__file__).resolve().parents[1])!r})
        import auditor.store.file as f
        real = f.create_new
        def killed(db, *a, **k):
            real(db, *a, **k)
            os.kill(os.getpid(), signal.SIGKILL)  # the schema written, not linked in yet
        f.create_new = killed
        from auditor.store.database import Store
        Store.open({str(state)!r})
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=120)
    assert done.returncode == -9, done.stderr
    assert not state.exists()
    with Store.open(state) as store:
        assert store.created
    assert os.stat(state).st_mode & 0o777 == 0o600
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".new")] == []


def test_a_name_another_program_takes_while_a_new_state_file_is_made_is_one_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The new state file is linked in under its name last (`build_new`): when another program
    made a file there meanwhile, the command says so in one line (it was `unexpected
    FileExistsError`), leaves that file alone and no scratch file behind."""
    from auditor.store import file as store_file

    state = tmp_path / "state.db"

    def taken(src: object, dst: object) -> None:
        state.write_bytes(b"another program's")
        raise FileExistsError(17, "File exists")

    monkeypatch.setattr(store_file.os, "link", taken)
    with pytest.raises(StoreError) as info:
        Store.open(state)
    assert "was made by another program while auditor made a new state file" in str(info.value)
    assert state.read_bytes() == b"another program's"
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".new")] == []
