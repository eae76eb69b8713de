"""Usage analytics fetched again (tester T42): a re-fetch whose figures shrink keeps what is
stored, value by value and entry by entry, with a warning naming the day, the JSON path, both
figures and the request (#1); a day stored while its figures still lagged is fetched again
after a missed night (#4); a breakdown entry sent twice is read once, or fails the sync when
the two differ (#7); a /users page's error names the day and the cursor (#8). Run as a user
runs them: the CLI against the emulator, whose analytics rows a test rewrites."""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable, Iterator
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from auditor.emulator import endpoints_analytics, start_emulator
from auditor.fetch.analytics import DayRows
from auditor.fetch.tolerant import DataQuality
from auditor.redact import Redactor
from auditor.store import Store
from auditor.workflows.usage import kept_evidence, may_be_short
from tests.conftest import FIXED_NOW, OWNER_TOKEN, emulator_env, run_cli, secret_forms

REPO = Path(__file__).resolve().parents[1]
USAGE_PACK = str(REPO / "policies" / "usage.yaml")
DAY = "2026-10-31"  # the window's last day at FIXED_NOW: fetched again by the next sync
Rewrite = Callable[[dict[str, Any]], None]


@pytest.fixture
def emu() -> Iterator[Any]:
    with start_emulator(tokens={OWNER_TOKEN: "owner"}, now=FIXED_NOW, revisions=80, repos=4) as e:
        yield e


def _rewrite(monkeypatch: pytest.MonkeyPatch, series: str) -> dict[str, Rewrite]:
    """The emulator's `series` rows, each passed to the function under its date (if any) in
    the dict given, which the test changes between syncs."""
    hooks: dict[str, Rewrite] = {}
    row_fn, *rest = endpoints_analytics.SERIES[series]

    def rows(facts: Any) -> dict[str, Any]:
        row = row_fn(facts)
        hook = hooks.get(facts.day.isoformat())
        if hook is not None:
            hook(row)
        return row

    monkeypatch.setitem(endpoints_analytics.SERIES, series, (rows, *rest))
    return hooks


def _run(env: dict[str, str], tmp_path: Path, out: str) -> tuple[int, Any, str]:
    """`auditor run --policy usage.yaml --out tmp/OUT`: exit code, findings.json, all output."""
    where = tmp_path / out
    code, stdout, err = run_cli(["run", "--policy", USAGE_PACK, "--out", str(where)], env, tmp_path)
    assert code in (0, 1), err
    return code, json.loads((where / "findings.json").read_text()), stdout + err


def _status(data: Any, rule: str, day: str = DAY) -> str:
    (found,) = [
        f["status"]
        for f in data["findings"]
        if f["rule_id"] == rule and f["subject"]["key"] == f"usage@{day}"
    ]
    return str(found)


def _kept_warnings(data: Any, series: str = "tools") -> list[dict[str, Any]]:
    return [
        w
        for w in data.get("data_quality") or []
        if w["item"] == f"{series} {DAY}"
        and ("than is stored" in w["problem"] or "than are stored" in w["problem"])
    ]


def _add_server(name: str, invocations: int) -> Rewrite:
    return lambda row: row["mcp_by_server"].append({"server": name, "invocations": invocations})


# -- #1: a re-fetch never leaves less evidence than is stored --------------------------------


@pytest.mark.e2e
@pytest.mark.parametrize(
    ("second", "kept"),
    [
        # the rogue server's count drops to 0
        (
            lambda rogue: _add_server(rogue, 0),
            "mcp_by_server[?server=='{rogue}'].invocations: 0 sent, 40 stored",
        ),
        # the rogue entry swapped for another: as many entries as stored
        (
            lambda rogue: _add_server("docs-mcp", 3),
            "mcp_by_server[?server=='{rogue}']: left out, invocations 40 stored",
        ),
    ],
    ids=["count-drops-to-0", "entry-swapped"],
)
def test_a_refetch_whose_figures_shrink_keeps_the_stored_evidence_and_says_so(
    emu: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    second: Callable[[str], Rewrite],
    kept: str,
) -> None:
    """T42 #1: the re-fetched day's `invocations: 40` came back 0 (or the entry came back as
    another server's): the stored row was replaced without a word and the high-severity
    USE-MCP-001 finding was listed as resolved."""
    hooks = _rewrite(monkeypatch, "tools")
    rogue = "exfil-mcp"
    hooks[DAY] = _add_server(rogue, 40)
    env = emulator_env(emu, tmp_path / "state.db")
    code, first, _ = _run(env, tmp_path, "out1")
    assert code == 1 and _status(first, "USE-MCP-001") == "fail"
    hooks[DAY] = second(rogue)
    code, again, shown = _run(env, tmp_path, "out2")
    assert code == 1 and _status(again, "USE-MCP-001") == "fail"
    assert (again["summary"]["resolved"], again["resolved"]) == (0, [])
    (warning,) = _kept_warnings(again)
    assert kept.format(rogue=rogue) in warning["problem"]
    assert f"the API sent less for {DAY} than is stored" in warning["problem"]
    assert warning["path"] == f"$.data[?date=='{DAY}']"
    assert f"tools?startDate=2026-10-30&endDate={DAY}" in warning["where"]
    assert "DATA QUALITY: 1 warning(s)" in shown


@pytest.mark.e2e
def test_a_ratio_sent_again_is_taken_and_said_when_no_count_grew(
    emu: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ratio is no amount: none of its values is less evidence than another. A re-fetch that
    raises `auto_high` while no count of the day grew shows a violation, and is taken (keeping
    the stored 0.0 hid it, reviewer R26 #1); one that lowers it is taken too. Either way the
    day did not catch up, so the sync says so; when its counts grew, it says nothing."""
    hooks = _rewrite(monkeypatch, "tools")
    env = emulator_env(emu, tmp_path / "state.db")

    def autonomy(high: float, more_calls: int) -> Rewrite:
        def rewrite(row: dict[str, Any]) -> None:
            row["tool_autonomy_level_ratio"]["auto_high"] = high
            row["tool_calls"] += more_calls

        return rewrite

    hooks[DAY] = autonomy(0.0, 0)
    _, first, _ = _run(env, tmp_path, "out1")
    assert _status(first, "USE-AUT-001") == "pass"
    hooks[DAY] = autonomy(0.4, 0)  # nothing grew, the share of high autonomy rose
    _, again, _ = _run(env, tmp_path, "out2")
    assert _status(again, "USE-AUT-001") == "fail"
    (warning,) = _kept_warnings(again)
    assert f"the API sent other values for {DAY} than are stored" in warning["problem"]
    assert "tool_autonomy_level_ratio.auto_high: 0.4 sent, 0.0 stored" in warning["problem"]
    assert warning["problem"].endswith("the values sent are taken")
    hooks[DAY] = autonomy(0.0, 0)  # and fell again, nothing grew: taken, said
    _, lower, _ = _run(env, tmp_path, "out3")
    assert _status(lower, "USE-AUT-001") == "pass"
    (warning,) = _kept_warnings(lower)
    assert "tool_autonomy_level_ratio.auto_high: 0.0 sent, 0.4 stored" in warning["problem"]
    hooks[DAY] = autonomy(0.4, 500)  # the day caught up: 500 more calls
    _, later, _ = _run(env, tmp_path, "out4")
    assert _status(later, "USE-AUT-001") == "fail"
    assert _kept_warnings(later) == []


@pytest.mark.e2e
def test_a_secret_in_a_shrunk_entry_never_reaches_a_warning(
    emu: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The warnings name entries by their stored (redacted) names, and pass the screening
    every warning passes."""
    hooks = _rewrite(monkeypatch, "tools")
    secret = "ghp_" + secrets.token_hex(18)
    hooks[DAY] = _add_server(secret, 40)
    env = emulator_env(emu, tmp_path / "state.db")
    _run(env, tmp_path, "out1")
    hooks[DAY] = _add_server(secret, 1)
    _, again, shown = _run(env, tmp_path, "out2")
    (warning,) = _kept_warnings(again)
    assert "invocations: 1 sent, 40 stored" in warning["problem"]
    assert "mcp_by_server[?server=='[secret" in warning["problem"]  # named by its marker
    texts = [shown] + [p.read_text() for p in (tmp_path / "out2").iterdir() if p.is_file()]
    for form in secret_forms(secret):
        assert not any(form in text for text in texts), form


def _rows(series: str, data: Any) -> DayRows:
    return DayRows(DAY, series, data, "GET https://svc.test/api/v1/analytics/x")


def test_what_less_means_per_kind_of_value() -> None:
    """Counts: lower is less. Entries: matched by name, one left out is less. A list of names
    or a map of counts: an item or key left out is less. What grew is taken."""
    stored = {
        "date": DAY,
        "sessions": 10,
        "by_model": [{"model": "a", "billable_tokens": 5}, {"model": "b", "billable_tokens": 7}],
        "daily_active_users_by_client": {"cli": 4, "web": 2},
    }
    new = {
        "date": DAY,
        "sessions": 12,
        "by_model": [{"model": "b", "billable_tokens": 9}, {"model": "c", "billable_tokens": 1}],
        "daily_active_users_by_client": {"cli": 3},
    }
    quality = DataQuality()
    kept = kept_evidence(_rows("tokens", new), stored, quality)
    assert kept == {
        "date": DAY,
        "sessions": 12,
        "by_model": [
            {"model": "b", "billable_tokens": 9},
            {"model": "c", "billable_tokens": 1},
            {"model": "a", "billable_tokens": 5},
        ],
        "daily_active_users_by_client": {"cli": 4, "web": 2},
    }
    (warning,) = quality.warnings(Redactor(b"k"))
    assert warning.problem == (
        f"the API sent less for {DAY} than is stored (by_model[?model=='a']: left out, "
        "billable_tokens 5 stored; daily_active_users_by_client.cli: 3 sent, 4 stored; "
        "daily_active_users_by_client.web: left out, 2 stored); those stored values are kept"
    )
    # per user: a lower count and a user's primary model changed while nothing grew
    users = [{"user_id": "u1", "billable_tokens": 9, "primary_model": "blocked"}]
    quality = DataQuality()
    sent = [{"user_id": "u1", "billable_tokens": 2, "primary_model": "allowed"}]
    # the count stays as stored; the text is taken (no text is less than another), and said
    merged = [{"user_id": "u1", "billable_tokens": 9, "primary_model": "allowed"}]
    assert kept_evidence(_rows("users", sent), users, quality) == merged
    problems = [w.problem for w in quality.warnings(Redactor(b"k"))]
    (less,) = [p for p in problems if p.startswith("the API sent less")]
    (changed,) = [p for p in problems if p.startswith("the API sent other values")]
    assert "user 'u1': billable_tokens: 2 sent, 9 stored" in less
    assert "user 'u1': primary_model: 'allowed' sent, 'blocked' stored" in changed
    assert "though none of its counts grew" in changed
    # and the other way, a blocked model sent again while nothing grew: taken (R26 #1)
    blocked = [{"user_id": "u1", "billable_tokens": 9, "primary_model": "blocked"}]
    assert kept_evidence(_rows("users", blocked), merged, DataQuality()) == blocked
    # a breakdown an earlier release stored with one model twice alike: read once (R26 #3)
    doubled = {"date": DAY, "by_model": [{"model": "a", "billable_tokens": 5}] * 2}
    quality = DataQuality()
    same = {"date": DAY, "by_model": [{"model": "a", "billable_tokens": 5}]}
    assert kept_evidence(_rows("tokens", same), doubled, quality) == same
    assert quality.warnings(Redactor(b"k")) == ()
    grown = [{"user_id": "u1", "billable_tokens": 30, "primary_model": "allowed"}]
    assert kept_evidence(_rows("users", grown), users, DataQuality()) == grown
    # a hook configured twice: two entries of one name, matched in turn
    hooks = [{"event": "E", "matcher": "", "command": "c", "count": n} for n in (5, 6)]
    twice = {"date": DAY, "hooks_by_event": hooks}
    fewer = {"date": DAY, "hooks_by_event": [{**hooks[0], "count": 8}]}
    quality = DataQuality()
    assert kept_evidence(_rows("tools", fewer), twice, quality) == {
        "date": DAY,
        "hooks_by_event": [{**hooks[0], "count": 8}, hooks[1]],
    }
    (warning,) = quality.warnings(Redactor(b"k"))
    assert "hooks_by_event[1]: left out, count 6 stored" in warning.problem


def test_a_stored_count_no_count_is_replaced_by_the_new_one_without_a_word() -> None:
    """A state file of an earlier release may hold `1e308` or a count as text, which the rules
    and the chart read as none: a re-fetch's count takes its place (it is not "less")."""
    stored = {"date": DAY, "billable_tokens": 1e308, "input_tokens": "18262400", "sessions": -5}
    new = {"date": DAY, "billable_tokens": 5, "input_tokens": 18262400, "sessions": 0}
    quality = DataQuality()
    assert kept_evidence(_rows("tokens", new), stored, quality) == new
    assert quality.warnings(Redactor(b"k")) == ()


# -- #4: a day stored while it lagged is fetched again after a missed night ------------------


@pytest.mark.e2e
def test_a_day_first_fetched_short_is_fetched_again_after_a_missed_night(
    emu: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """T42 #4: the sync of Nov 1 stores Oct 31 as yesterday, short (the API lags); the next
    sync runs on Nov 3 (a night missed) and fetched again only Nov 1 and 2: Oct 31 kept its
    half figures for good."""
    clock = {"now": FIXED_NOW}
    full: dict[str, int] = {}

    def lagging(row: dict[str, Any]) -> None:
        full.setdefault(row["date"], row["billable_tokens"])
        if row["date"] == (clock["now"].date() - timedelta(days=1)).isoformat():
            row["billable_tokens"] //= 2  # yesterday is half done

    hooks = _rewrite(monkeypatch, "tokens")
    for offset in range(40):
        hooks[(date(2026, 10, 1) + timedelta(days=offset)).isoformat()] = lagging
    state = tmp_path / "state.db"
    env = emulator_env(emu, state)

    def sync(now: datetime) -> str:
        clock["now"] = now
        code, out, err = run_cli(["sync"], env, tmp_path, now)
        assert code == 0, err
        return out

    def stored(day: str) -> Any:
        with Store.open(state) as store:
            days = dict(store.iter_analytics())
        return days[day]["tokens"]["billable_tokens"]

    sync(FIXED_NOW)
    assert stored(DAY) == full[DAY] // 2
    out = sync(FIXED_NOW + timedelta(days=2))
    assert "(2 new, 1 fetched again)" in out  # Nov 1 and 2 new, Oct 31 again
    assert stored(DAY) == full[DAY]
    # fetched well after it ended, it is not asked for again: only the newest two days are
    out = sync(FIXED_NOW + timedelta(days=3))
    assert "(1 new, 1 fetched again)" in out
    assert stored("2026-11-02") == full["2026-11-02"]


def test_a_day_whose_fetch_time_is_unknown_is_fetched_again_only_near_the_end() -> None:
    end = date(2026, 10, 31)
    fetched = {
        "2026-10-01": None,  # unknown, 30 days back: not asked for again
        "2026-10-28": None,  # unknown, among the newest 7
        "2026-10-20": datetime.fromisoformat("2026-10-21T23:59:00+00:00"),  # within a day
        "2026-10-21": datetime.fromisoformat("2026-10-23T00:00:00+00:00"),  # settled
    }
    assert may_be_short(fetched, end) == {"2026-10-28", "2026-10-20"}


# -- #7: a breakdown entry sent twice ---------------------------------------------------------


@pytest.mark.e2e
def test_a_model_listed_twice_is_read_once_or_fails_the_sync_when_they_differ(
    emu: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """T42 #7: a model listed twice in a day's by_model was summed twice in the chart, with
    no warning. As a user sent twice: the same entry again is read once (with a warning), one
    with other figures fails the sync, naming it, the day and the request."""
    hooks = _rewrite(monkeypatch, "tokens")
    day = "2026-10-20"
    hooks[day] = lambda row: row["by_model"].append(dict(row["by_model"][0]))
    state = tmp_path / "state.db"
    env = emulator_env(emu, state)
    code, out, err = run_cli(["sync"], env, tmp_path)
    assert code == 0, err
    with Store.open(state) as store:
        tokens = dict(store.iter_analytics())[day]["tokens"]
    models = [m["model"] for m in tokens["by_model"]]
    assert len(models) == len(set(models))
    assert sum(m["billable_tokens"] for m in tokens["by_model"]) == tokens["billable_tokens"]
    assert f"sent again as by_model[0] was; read once (tokens {day}, GET " in out

    def other(row: dict[str, Any]) -> None:
        row["by_model"].append({**row["by_model"][0], "billable_tokens": 1})

    hooks[day] = other
    code, out, err = run_cli(["sync"], emulator_env(emu, tmp_path / "new.db"), tmp_path)
    assert code == 2
    assert "a second entry for model '" in err and f"' on {day}, with other figures" in err
    assert "by_model[" in err and "tokens?startDate=2026-10-02&endDate=2026-10-31" in err


# -- #8: a /users page's messages name the day and the cursor ---------------------------------


@pytest.mark.e2e
def test_a_users_page_error_names_the_day_and_the_cursor(emu: Any, tmp_path: Path) -> None:
    """T42 #8: `GET …/analytics/users page 1` did not say which of the 30 per-day listings."""
    emu.faults.add("analytics", "repeat_cursor", page=2)
    config = tmp_path / "auditor.toml"
    config.write_text("page_size = 20\n")
    env = emulator_env(emu, tmp_path / "state.db")
    code, _, err = run_cli(["sync", "--config", str(config)], env, tmp_path)
    assert code == 2
    assert "the API repeated an earlier cursor" in err
    assert "/api/v1/analytics/users?startDate=2026-10-02&endDate=2026-10-02 page 2 (cursor '" in (
        err
    )
