"""The nightly's recognition of the reports it has, on the PostgreSQL store as on a state file
(see test_sync): recognised unredacted the next night, a secret a new revision taught scrubbed
from the rows it recognised, never stored; and a secret learned later scrubbed from a report on
a page no longer re-read."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pgcluster import stored_bytes
from test_sync import TOKEN, FakeService, _count_report_redactions, run_sync

from auditor.store import Store


def test_postgres_store_recognises_reports_and_never_keeps_a_secret_learned_since(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    later = "sk-live9876543210zyxwvutsrq"
    plain = "plainwordlatersecretvalue"
    service = FakeService(3, reports=12)
    service.reports[11]["report"]["lint"]["rationale"] = f"key {later}"
    service.reports[1]["report"]["lint"]["rationale"] = f"uses {plain} here"
    with Store.open(pg_url) as s:
        s.register_secret(TOKEN)
        assert run_sync(s, service).reports_new == 12
    stored = stored_bytes(pg_url)
    assert later.encode() not in stored and plain.encode() in stored  # not a secret yet
    redacted = _count_report_redactions(monkeypatch)
    with Store.open(pg_url) as s:
        s.register_secret(TOKEN)
        again = run_sync(s, service)
    assert (redacted, again.reports_new, again.integrity_issues) == ([], 0, ())
    service.add_revisions(1)  # a new revision teaches the plain word as a secret
    service.revisions[4]["settings"]["env"] = {"DB_URL": plain}
    with Store.open(pg_url) as s:
        s.register_secret(TOKEN)
        summary = run_sync(s, service)
        assert summary.integrity_issues == ()
        data: list[Any] = [r.data for r in s.iter_reports()]
    assert not any(plain in json.dumps(d) for d in data)
    assert plain.encode() not in stored_bytes(pg_url)
    with Store.open(pg_url) as s:  # the rescrubbed row is still "same" the next night
        s.register_secret(TOKEN)
        assert run_sync(s, service).integrity_issues == ()
    assert plain.encode() not in stored_bytes(pg_url)


def test_a_secret_learned_later_is_scrubbed_from_a_report_no_longer_re_read(tmp_path: Any) -> None:
    plain = "plainwordlatersecretvalue"
    state_path = tmp_path / "state.db"
    service = FakeService(3, reports=12)
    service.reports[11]["report"]["lint"]["rationale"] = f"uses {plain} here"  # second page
    with Store.open(state_path) as s:
        s.register_secret(TOKEN)
        run_sync(s, service)
    assert plain.encode() in state_path.read_bytes()  # not a secret yet
    service.add_revisions(1)
    service.revisions[4]["settings"]["env"] = {"DB_URL": plain}
    with Store.open(state_path) as s:
        s.register_secret(TOKEN)
        run_sync(s, service)
    assert plain.encode() not in state_path.read_bytes()


def test_secrets_new_to_the_file_are_searched_for_in_batches(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A sync that learns more secrets than one automaton takes searches earlier rows batch by
    # batch: a row holding a value of the last batch is scrubbed as well as one of the first.
    import auditor.store.database as database

    monkeypatch.setattr(database, "_SCRUB_BATCH", 1)
    first, second = "plainwordlatersecretvalue", "anotherplainwordlatersecret"
    state_path = tmp_path / "state.db"
    service = FakeService(3, reports=12)
    service.reports[11]["report"]["lint"]["rationale"] = f"uses {first} here"
    service.reports[10]["report"]["lint"]["rationale"] = f"uses {second} here"
    with Store.open(state_path) as s:
        s.register_secret(TOKEN)
        run_sync(s, service)
    assert first.encode() in state_path.read_bytes() and second.encode() in state_path.read_bytes()
    service.add_revisions(1)
    service.revisions[4]["settings"]["env"] = {"DB_URL": first, "CACHE_URL": second}
    with Store.open(state_path) as s:
        s.register_secret(TOKEN)
        run_sync(s, service)
    stored = state_path.read_bytes()
    assert first.encode() not in stored and second.encode() not in stored
