"""`/users` rows whose `user_id` is no text (a number, null, a list): read as absent with a
warning naming the row by its JSON, never matched together on a re-fetch (tester T95 #2,
#5). Matched as one user `None`, every stored row took the largest figures of any user and the
union of everyone's languages, with a false "sent less" warning, though the service sent the
same data both nights."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from auditor.common.jsonutil import loads
from auditor.emulator import data_analytics, start_emulator
from tests.conftest import FIXED_NOW, emulator_env, run_cli

TOKEN = "tok-0123456789abcdef0123456789abcdef"


def _users(state: Path) -> dict[str, list[Any]]:
    with sqlite3.connect(state) as db:
        rows = db.execute("SELECT day, data FROM analytics_days WHERE series = 'users'")
        return {day: loads(data) for day, data in rows}


@pytest.mark.e2e
@pytest.mark.parametrize(("given", "shown"), [("number", "user 7"), ("null", "user null")])
def test_users_without_a_text_id_are_kept_as_sent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, given: str, shown: str
) -> None:
    user_row = data_analytics.user_row

    def row(facts: Any, user: Any) -> Any:
        out = user_row(facts, user)
        number = int(out["user_id"][-4:], 16) % 1000 if given == "number" else None
        return {**out, "user_id": 7 if out["user_id"] == FIRST else number}

    FIRST = data_analytics.analytics_users()[0]["user_id"]
    monkeypatch.setattr(data_analytics, "user_row", row)
    state = tmp_path / "state.db"
    with start_emulator(tokens={TOKEN: "owner"}, now=FIXED_NOW, revisions=12, repos=2) as emu:
        env = emulator_env(emu, state, TOKEN)
        code, out, err = run_cli(["sync"], env, tmp_path)
        assert code == 0, err
        assert f"({shown} on " in out + err  # as JSON, not Python's repr (`None`)
        first = _users(state)
        code, out, err = run_cli(["sync"], env, tmp_path)
    assert code == 0, err
    assert "sent less" not in out + err
    assert "'None'" not in out + err
    assert _users(state) == first  # the same answer: the same rows, none merged into another


@pytest.mark.e2e
def test_a_day_series_answer_without_meta_is_read_and_users_pages_need_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`meta` is not read for the day series (a wrong `start_date` was taken as sent): an
    answer without it is read too, where it failed the whole sync, readiness reports and all
    (tester T95 #3). /users pages by `meta.has_more`: a page without it is an error naming it."""
    from auditor.emulator import endpoints_analytics

    faulted = endpoints_analytics.faulted

    def without_meta(users_too: bool, odd: Any = ...) -> Any:
        """Day series' `meta` left out (or `odd` in its place); /users' too if `users_too`."""

        def strip(body: Any) -> Any:
            paged = "has_more" in body["meta"]  # a /users page
            if paged and not users_too:
                return body
            kept = {k: v for k, v in body.items() if k != "meta"}
            return kept if odd is ... else {**kept, "meta": odd}

        return lambda req, kind, page, build: faulted(req, kind, page, lambda k: strip(build(k)))

    state = tmp_path / "state.db"
    with start_emulator(tokens={TOKEN: "owner"}, now=FIXED_NOW, revisions=12, repos=2) as emu:
        env = emulator_env(emu, state, TOKEN)
        monkeypatch.setattr(endpoints_analytics, "faulted", without_meta(users_too=False))
        code, out, err = run_cli(["sync"], env, tmp_path)
        assert code == 0, err
        assert "30 of 30 days stored" in out
        # nor is an odd `meta` checked (reviewer R84 #2): each day fetched again reads it
        for odd in (None, {"has_more": "no", "next_cursor": 0}):
            monkeypatch.setattr(endpoints_analytics, "faulted", without_meta(False, odd))
            code, out, err = run_cli(["sync"], env, tmp_path)
            assert code == 0 and "2 fetched again" in out, err
        monkeypatch.setattr(endpoints_analytics, "faulted", without_meta(users_too=True))
        code, out, err = run_cli(["sync"], env, tmp_path)
    assert code == 2
    assert "missing required key 'meta'" in err and "analytics/users" in err, err


@pytest.mark.e2e
def test_an_analytics_refusal_echoing_the_token_names_it_token(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 403 whose detail echoes the caller's token reads `[token]` in the sync's summary and
    the run's reports, as every other error names it, not as its marker (tester T95 #4)."""
    from auditor.emulator import endpoints_analytics
    from auditor.emulator.endpoints import Problem

    def refused(req: Any, kind: str, page: int, build: Any) -> Any:
        raise Problem(403, f"token {TOKEN} lacks the analytics role")

    monkeypatch.setattr(endpoints_analytics, "faulted", refused)
    with start_emulator(tokens={TOKEN: "owner"}, now=FIXED_NOW, revisions=12, repos=2) as emu:
        env = emulator_env(emu, tmp_path / "state.db", TOKEN)
        code, out, err = run_cli(["sync"], env, tmp_path)
    assert code == 0, err
    assert "403 Forbidden: token [token] lacks the analytics role" in out
    assert TOKEN not in out + err and "[secret" not in out
