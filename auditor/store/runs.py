"""Runs and their findings in the state file, so `auditor run` can tell new / persisting / resolved.

Takes an open SQLite connection (owned by `auditor.store.Store`), gives and records `RunRecord`s.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any

from auditor.common.jsonutil import canonical
from auditor.errors import StoreError
from auditor.models import FindingRecord, finding_record
from auditor.store.schema import RunRecord, from_text, to_text

_FINDING_COLUMNS = "fingerprint, rule_id, subject_key, status, severity, first_seen_run"


def start_run(
    db: Any,
    run_id: str,
    *,
    started: datetime,
    tool_version: str,
    policy_hashes: Mapping[str, str],
    scope: str = "",
) -> str:
    """Record that a run began (not complete until `complete_run`); returns its id: `run_id`,
    or `run_id-2`, `-3` … when a run of that id is already stored (two runs in one second)."""
    unique, n = run_id, 1
    while db.execute("SELECT 1 FROM runs WHERE run_id = ?", (unique,)).fetchone():
        n += 1
        unique = f"{run_id}-{n}"
    db.execute(
        "INSERT INTO runs (run_id, started, finished, complete, tool_version, policy_hashes,"
        " scope) VALUES (?, ?, NULL, 0, ?, ?, ?)",
        (unique, to_text(started), tool_version, canonical(_named(policy_hashes)).decode(), scope),
    )
    return unique


def _named(policy_hashes: Mapping[str, str]) -> dict[str, str]:
    """The policy files' names as the state file keeps them: a byte of a name that is not
    UTF-8 (a Latin-1 file name, which Python carries as an escape JSON cannot hold) written
    as `\\xNN`, never dropped."""
    return {
        name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace"): digest
        for name, digest in policy_hashes.items()
    }


def complete_run(db: Any, run_id: str) -> None:
    """Mark a finished run complete: it becomes the baseline the next run compares with."""
    updated = db.execute("UPDATE runs SET complete = 1 WHERE run_id = ?", (run_id,))
    if updated.rowcount != 1:
        raise StoreError(f"no run {run_id!r} was started in this state file")
    _drop_superseded(db, run_id)


def _drop_superseded(db: Any, run_id: str, *, incomplete_only: bool = False) -> None:
    """Drop the finding records of the runs of `run_id`'s scope recorded before it, now that
    it is complete: only the newest complete run of a scope is ever compared with (a nightly
    kept every night's records, about 1.1 MB a night at 5,800 findings, which nothing read).
    With `incomplete_only` (`run_id` has recorded its findings, not yet complete), those of
    the earlier incomplete runs only: no run ever compares with one (a nightly that is never
    complete kept each night's). The runs themselves stay (id, times, release, policy
    digests): a record's `first_seen_run` still names one. Runs of other scopes keep theirs."""
    db.execute(
        "DELETE FROM findings WHERE run_id IN (SELECT run_id FROM runs WHERE scope = "
        "(SELECT scope FROM runs WHERE run_id = ?) AND rowid < "
        "(SELECT rowid FROM runs WHERE run_id = ?)"
        + (" AND complete = 0)" if incomplete_only else ")"),
        (run_id, run_id),
    )


def finish_run(
    db: Any,
    run_id: str,
    *,
    finished: datetime,
    complete: bool,
    findings: Iterable[FindingRecord],
    like: tuple[str, Sequence[FindingRecord]] | None = None,
) -> None:
    """Record the end of a run and every finding it produced (caller holds a transaction).

    With `like` (the id of a stored run and the records stored for it), the findings are
    written as a delta: that run's rows are copied in SQL, then only the records that differ
    from them are written and the ones this run no longer has are dropped. A nightly run has
    thousands of records, nearly all as the night before left them."""
    updated = db.execute(
        "UPDATE runs SET finished = ?, complete = ? WHERE run_id = ?",
        (to_text(finished), int(complete), run_id),
    )
    if updated.rowcount != 1:
        raise StoreError(f"no run {run_id!r} was started in this state file")
    rows: Iterable[FindingRecord] = findings
    gone: dict[str, FindingRecord] = {}
    if like is not None:
        base, records = like
        db.execute(
            f"INSERT INTO findings (run_id, {_FINDING_COLUMNS}) SELECT ?, {_FINDING_COLUMNS} "
            "FROM findings WHERE run_id = ?",
            (run_id, base),
        )
        gone = {r.fingerprint: r for r in records}
        rows = _changed(findings, gone)
    db.executemany(
        f"INSERT INTO findings (run_id, {_FINDING_COLUMNS}) VALUES (?,?,?,?,?,?,?) "
        "ON CONFLICT (run_id, fingerprint) DO UPDATE SET rule_id = excluded.rule_id, "
        "subject_key = excluded.subject_key, status = excluded.status, "
        "severity = excluded.severity, first_seen_run = excluded.first_seen_run",
        (
            (
                run_id,
                f.fingerprint,
                f.rule_id,
                f.subject_key,
                f.status,
                f.severity,
                f.first_seen_run,
            )
            for f in rows
        ),
    )
    if gone:  # filled in as `rows` was written: the copied rows this run did not produce
        db.executemany(
            "DELETE FROM findings WHERE run_id = ? AND fingerprint = ?",
            ((run_id, fingerprint) for fingerprint in gone),
        )
    _drop_superseded(db, run_id, incomplete_only=not complete)


def _changed(
    findings: Iterable[FindingRecord], copied: dict[str, FindingRecord]
) -> Iterator[FindingRecord]:
    """The records not already among the `copied` ones, each one met taken out of `copied`
    (so what is left there is what this run no longer has)."""
    for f in findings:
        old = copied.pop(f.fingerprint, None)
        if old is not f and old != f:  # (`records_for_store` gives back an unchanged record)
            yield f


def _findings(db: Any, run_id: str) -> tuple[FindingRecord, ...]:
    rows = db.execute(
        f"SELECT {_FINDING_COLUMNS} FROM findings WHERE run_id = ? ORDER BY fingerprint",
        (run_id,),
    )
    # One string object per distinct rule, subject, status, severity and first run: an
    # `--all-revisions` run has 100,000s of records sharing a few hundred of each (58 MB of
    # repeated text at 166,000 records).
    shared: dict[str, str] = {}
    one = shared.setdefault
    return tuple(
        finding_record(fp, one(rule, rule), one(subject, subject), one(st, st), one(sev, sev),
                       one(first, first))
        for fp, rule, subject, st, sev, first in rows
    )  # fmt: skip


def previous_complete_run(db: Any, before_run_id: str, scope: str = "") -> RunRecord | None:
    """The newest complete run of the same `scope` recorded before `before_run_id` (any
    when that run is not recorded).

    Runs of another scope (other policies, `--at`, `--all-revisions`) evaluate other things:
    comparing with them would call every finding new or resolved. "Before" is the order the
    runs were recorded in, not their clock times: a run whose clock is behind the previous
    run's (a clock put back) still compares with the run just before it, whose records are
    the ones kept (`_drop_superseded`)."""
    row = db.execute("SELECT rowid FROM runs WHERE run_id = ?", (before_run_id,)).fetchone()
    before, args = ("AND rowid < ? ", (scope, row[0])) if row else ("", (scope,))
    found = db.execute(
        "SELECT run_id, started, finished, tool_version FROM runs WHERE complete = 1 "
        f"AND scope = ? {before}ORDER BY rowid DESC LIMIT 1",
        args,
    ).fetchone()
    if found is None:
        return None
    run_id, started, finished, tool_version = found
    started_at = from_text(started)
    assert started_at is not None
    return RunRecord(
        run_id, started_at, from_text(finished), True, _findings(db, run_id), tool_version or ""
    )
