"""Usage evidence (issue 15): the analytics window, the sync of the analytics (paging,
incremental by date, 403 and 400), the `usage` target reading the settings of the day, and
`auditor run` end to end against the emulator over HTTP."""

from __future__ import annotations

import dataclasses
import io
import json
import shutil
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from datetime import UTC, date, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import httpx
import pytest

from auditor.cli import Context, main
from auditor.common.dates import date_ranges, usage_window
from auditor.common.jsonutil import content_hash
from auditor.emulator import start_emulator
from auditor.errors import DataError
from auditor.evaluate.engine import evaluate
from auditor.evaluate.model import EvaluationInputs, UsageInputs
from auditor.fetch import PlatformClient
from auditor.fetch.analytics import AnalyticsDenied, AnalyticsReader
from auditor.fetch.tolerant import DataQuality
from auditor.models import Revision, User
from auditor.policy import SHIPPED_POLICY_DIR, load_policies
from auditor.redact import Redactor
from auditor.store import Store
from auditor.workflows.sync import SyncOptions, sync_service
from tests.conftest import FIXED_NOW, MEMBER_TOKEN, OWNER_TOKEN

REPO = Path(__file__).resolve().parents[1]
AUDITOR_TOKEN = "test-auditor-token-0123456789"
USAGE_PACK = REPO / "policies" / "usage.yaml"


# -- the window ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("today", "first", "last"),
    [
        (date(2026, 11, 1), date(2026, 10, 2), date(2026, 10, 31)),  # ends yesterday
        (date(2026, 3, 1), date(2026, 1, 30), date(2026, 2, 28)),  # February, not a leap year
        (date(2028, 3, 1), date(2028, 1, 31), date(2028, 2, 29)),  # leap day
        (date(2027, 1, 1), date(2026, 12, 2), date(2026, 12, 31)),  # across the year end
        (date(2026, 5, 31), date(2026, 5, 1), date(2026, 5, 30)),  # a 31-day month
        (date(2026, 5, 1), date(2026, 4, 1), date(2026, 4, 30)),  # ends on a 30-day month end
    ],
)
def test_window_is_the_last_30_complete_days_ending_yesterday(
    today: date, first: date, last: date
) -> None:
    assert usage_window(today) == (first, last)
    assert (last - first).days == 29


def test_window_of_one_day_and_refusal_of_none() -> None:
    assert usage_window(date(2026, 11, 1), 1) == (date(2026, 10, 31), date(2026, 10, 31))
    with pytest.raises(ValueError):
        usage_window(date(2026, 11, 1), 0)


def test_date_ranges_merge_consecutive_days_across_month_ends() -> None:
    days = [date(2026, 10, 30), date(2026, 10, 31), date(2026, 11, 1), date(2026, 11, 5)]
    assert date_ranges(reversed(days)) == [
        (date(2026, 10, 30), date(2026, 11, 1)),
        (date(2026, 11, 5), date(2026, 11, 5)),
    ]


# -- the usage target reads the settings of the day -----------------------------------------


def _rev(number: int, when: str, settings: dict[str, Any], email: str) -> Revision:
    moment = datetime.fromisoformat(when.replace("Z", "+00:00"))
    return Revision(number, moment, User("u", email, ""), settings, content_hash(settings))


def _day(day: str, models: dict[str, int]) -> tuple[str, dict[str, Any]]:
    by_model = [{"model": m, "billable_tokens": n} for m, n in models.items()]
    return day, {"tokens": {"billable_tokens": sum(models.values()), "by_model": by_model}}


def _usage_results(history: tuple[Revision, ...], days: list[Any]) -> dict[str, Any]:
    policy = load_policies([USAGE_PACK])
    inputs = EvaluationInputs(
        now=FIXED_NOW,
        settings=history[-1],
        history=history,
        usage=UsageInputs(days=tuple(days)),
    )
    result = evaluate(policy, inputs)
    return {r.subject.key: r for r in result.results if r.rule.id == "USE-MOD-001"}


def test_rules_read_the_settings_in_force_on_each_day() -> None:
    open_policy = {"modelPolicy": {"blockedModelIds": ["old-model"]}}
    blocked = {"modelPolicy": {"blockedModelIds": ["old-model", "gpt-5-codex"]}}
    history = (
        _rev(1, "2026-10-01T09:00:00Z", open_policy, "a@acme.example"),
        _rev(2, "2026-10-29T13:53:04Z", blocked, "priya@acme.example"),
    )
    days = [
        _day("2026-10-28", {"claude": 10, "gpt-5-codex": 500}),
        _day("2026-10-29", {"claude": 10, "gpt-5-codex": 300}),
        _day("2026-10-30", {"claude": 10, "gpt-5-codex": 200}),
        _day("2026-10-31", {"claude": 10}),
    ]
    got = _usage_results(history, days)
    assert got["usage@2026-10-28"].status == "pass"  # allowed then
    assert got["usage@2026-10-28"].since.revision == 1
    mixed = got["usage@2026-10-29"]
    assert mixed.status == "unknown"  # blocked at 13:53: the figures cannot say when
    assert "settings changed on 2026-10-29" in mixed.message and "rev 2" in mixed.message
    after = got["usage@2026-10-30"]
    assert after.status == "fail"
    assert (after.since.revision, after.since.author_email) == (2, "priya@acme.example")
    assert after.evidence[0].actual == 200 or any(e.actual == "gpt-5-codex" for e in after.evidence)
    assert got["usage@2026-10-31"].status == "pass"


def test_usage_rules_read_only_the_history_from_the_revision_in_force_when_the_days_begin() -> None:
    """A run reads the history for usage rules from the revision in force when the first day
    began (`history_from`), not the whole history: the same results as walking it all."""
    open_policy = {"modelPolicy": {"blockedModelIds": ["old-model"]}}
    blocked = {"modelPolicy": {"blockedModelIds": ["old-model", "gpt-5-codex"]}}
    start = datetime(2026, 9, 1, 9, tzinfo=UTC)
    history = tuple(
        _rev(n, (start + timedelta(hours=13 * n)).isoformat(), blocked if (n // 6) % 2 else
             open_policy, f"u{n}@acme.example")
        for n in range(1, 120)
    )  # fmt: skip
    days = [_day(f"2026-10-{d:02d}", {"claude": 10, "gpt-5-codex": 100 * d}) for d in range(1, 31)]
    asked: list[datetime] = []

    def history_from(when: datetime) -> tuple[Revision, ...]:
        asked.append(when)
        in_force = [i for i, r in enumerate(history) if r.updated_at <= when]
        return history[in_force[-1] if in_force else 0 :]

    policy = load_policies([USAGE_PACK])
    usage = UsageInputs(days=tuple(days))
    full = evaluate(policy, EvaluationInputs(FIXED_NOW, history[-1], history, usage=usage))
    tail = evaluate(
        policy,
        EvaluationInputs(FIXED_NOW, history[-1], history, usage=usage, history_from=history_from),
    )
    assert asked == [datetime(2026, 10, 1, tzinfo=UTC)]
    assert history_from(asked[0])[0].updated_at < asked[0] < history_from(asked[0])[1].updated_at
    assert {r.status for r in full.results} >= {"pass", "fail", "unknown"}
    assert full.results == tail.results


def test_without_analytics_every_usage_rule_is_unknown_with_one_line() -> None:
    policy = load_policies([USAGE_PACK])
    rev = _rev(1, "2026-10-01T09:00:00Z", {}, "a@acme.example")
    why = "the analytics endpoints refused the token (manager or owner role needed): 403"
    for usage, text in (
        (None, "no usage analytics are stored"),
        (UsageInputs(unavailable=why), why),
    ):
        inputs = EvaluationInputs(now=FIXED_NOW, settings=rev, history=(rev,), usage=usage)
        result = evaluate(policy, inputs)
        assert {r.status for r in result.results} == {"unknown"}
        assert len(result.results) == len(policy.rules)
        assert len(result.not_evaluated) == 1 and text in result.not_evaluated[0]


def test_days_of_the_window_not_stored_make_the_run_incomplete_naming_them() -> None:
    policy = load_policies([USAGE_PACK])
    rev = _rev(1, "2026-09-01T09:00:00Z", {}, "a@acme.example")
    # Oct 1..10, with Oct 4 and Oct 6..7 missing
    days = [_day(f"2026-10-{d:02d}", {"m": 1}) for d in (1, 2, 3, 5, 8, 9, 10)]
    usage = UsageInputs(days=tuple(days), window=("2026-10-01", "2026-10-10"))
    result = evaluate(policy, EvaluationInputs(now=FIXED_NOW, settings=rev, usage=usage))
    assert result.not_evaluated == (
        "usage: 3 of 10 days of 2026-10-01..2026-10-10 not stored "
        "(2026-10-04, 2026-10-06..2026-10-07): not judged",
    )
    judged = {r.subject.key for r in result.results}
    assert judged == {f"usage@{d}" for d, _ in days}  # the stored days are still judged
    full = [_day(f"2026-10-{d:02d}", {"m": 1}) for d in range(1, 11)]
    usage = UsageInputs(days=tuple(full), window=("2026-10-01", "2026-10-10"))
    result = evaluate(policy, EvaluationInputs(now=FIXED_NOW, settings=rev, usage=usage))
    assert result.not_evaluated == ()


# -- the sync against the emulator over HTTP ------------------------------------------------


@pytest.fixture
def emu() -> Iterator[Any]:
    tokens = {OWNER_TOKEN: "owner", MEMBER_TOKEN: "member", AUDITOR_TOKEN: "auditor"}
    with start_emulator(tokens=tokens, now=FIXED_NOW, revisions=80, repos=4) as e:
        yield e


def _sync(
    emu: Any, state: Path, *, token: str = OWNER_TOKEN, now: datetime = FIXED_NOW, **kw: Any
) -> Any:
    options = SyncOptions(base_url=emu.base_url, app_url=emu.app_url, token=token, **kw)
    with Store.open(state) as store:
        return sync_service(store, options, clock=lambda: now)


def _analytics_requests(emu: Any) -> list[str]:
    return [path for _, path in emu.requests if path.startswith("/api/v1/analytics/")]


@pytest.mark.e2e
def test_sync_stores_30_days_pages_users_and_is_incremental(emu: Any, tmp_path: Path) -> None:
    state = tmp_path / "state.db"
    summary = _sync(emu, state, page_size=20)
    assert summary.usage.status == "ok"
    assert summary.usage.window == (date(2026, 10, 2), date(2026, 10, 31))
    assert (summary.usage.days_new, summary.usage.days_stored) == (30, 30)
    requests = _analytics_requests(emu)
    # one request per day series for the whole window, /users per day in pages of 20
    assert sum(p.startswith("/api/v1/analytics/tokens?") for p in requests) == 1
    users = [p for p in requests if p.startswith("/api/v1/analytics/users?")]
    people = len(emu.dataset.analytics_users)
    assert len(users) == 30 * -(-people // 20)
    assert any("cursor=" in p for p in users) and all("limit=20" in p for p in users)
    assert not any(FIXED_NOW.date().isoformat() in p for p in requests)  # never today
    with Store.open(state) as store:
        days = dict(store.iter_analytics())
    assert sorted(days) == [f"2026-10-{d:02d}" for d in range(2, 32)]
    assert {len(d["users"]) for d in days.values()} == {people}  # every page kept
    assert set(days["2026-10-30"]) == {"tokens", "tools", "activity", "productivity", "users"}
    # nothing new: only the newest two days are requested again (figures lag 24 hours), and
    # what comes back replaces what was stored; older days are not requested
    emu.requests.clear()
    serve = emu.dataset.day_facts
    emu.dataset.day_facts = lambda d: dataclasses.replace(serve(d), seed=serve(d).seed + 1)
    again = _sync(emu, state)
    emu.dataset.day_facts = serve
    assert (again.usage.days_new, again.usage.days_refetched) == (0, 2)
    assert "30 of 30 days stored (0 new, 2 fetched again)" in again.usage.describe()
    requests = _analytics_requests(emu)
    assert {p.split("?")[0] for p in requests} == {
        f"/api/v1/analytics/{s}" for s in days["2026-10-30"]
    }
    assert all(
        "startDate=2026-10-30&endDate=2026-10-31" in p for p in requests if "/users?" not in p
    )
    users = [p for p in requests if "/users?" in p]
    assert {p.split("startDate=")[1][:10] for p in users} == {"2026-10-30", "2026-10-31"}
    with Store.open(state) as store:
        refreshed = dict(store.iter_analytics())
    assert refreshed["2026-10-31"]["tokens"] != days["2026-10-31"]["tokens"]  # replaced
    assert refreshed["2026-10-30"]["tokens"] != days["2026-10-30"]["tokens"]
    assert refreshed["2026-10-29"] == days["2026-10-29"]  # older days not touched
    # a day later: the new day and the one before it
    emu.requests.clear()
    later = _sync(emu, state, now=FIXED_NOW + timedelta(days=1))
    assert (later.usage.days_new, later.usage.days_refetched, later.usage.days_stored) == (1, 1, 30)
    requests = [p for p in _analytics_requests(emu) if "/users?" not in p]
    assert requests and all("startDate=2026-10-31&endDate=2026-11-01" in p for p in requests)


@pytest.mark.e2e
def test_yesterday_is_taken_in_utc_whatever_the_clock_zone(emu: Any, tmp_path: Path) -> None:
    east = timezone(timedelta(hours=5))
    # 01:00 on Nov 1 at UTC+5 is still Oct 31 in UTC: the window ends Oct 30
    summary = _sync(emu, tmp_path / "a.db", now=datetime(2026, 11, 1, 1, 0, tzinfo=east))
    assert summary.usage.window == (date(2026, 10, 1), date(2026, 10, 30))
    # one second after midnight UTC, yesterday is complete
    summary = _sync(emu, tmp_path / "b.db", now=datetime(2026, 11, 1, 0, 0, 1, tzinfo=UTC))
    assert summary.usage.window == (date(2026, 10, 2), date(2026, 10, 31))


@pytest.mark.e2e
def test_a_token_without_the_role_gets_403_and_settings_still_sync(
    emu: Any, tmp_path: Path
) -> None:
    state = tmp_path / "state.db"
    summary = _sync(emu, state, token=AUDITOR_TOKEN)
    assert summary.revisions_new == 80  # settings and readiness synced
    assert summary.usage.status == "denied"
    assert "403" in summary.usage.detail and AUDITOR_TOKEN not in summary.usage.detail
    with Store.open(state) as store:
        access = store.analytics_access()
        assert access is not None and access.status == "denied"
        assert list(store.iter_analytics()) == []


@pytest.mark.e2e
def test_member_token_on_analytics_is_403_with_a_v1_problem_body(emu: Any) -> None:
    url = f"{emu.base_url}/api/v1/analytics/tokens?startDate=2026-10-01&endDate=2026-10-02"
    reply = httpx.get(url, headers={"Authorization": f"Bearer {MEMBER_TOKEN}"})
    assert reply.status_code == 403
    body = reply.json()
    assert {"title", "detail", "status", "requestId"} <= set(body) and body["status"] == 403
    client = PlatformClient(base_url=emu.base_url, app_url=None, token=MEMBER_TOKEN)
    reader = AnalyticsReader(client, Redactor(b"k"), DataQuality())
    with client, pytest.raises(AnalyticsDenied) as caught:
        list(reader.read(date(2026, 10, 1), date(2026, 10, 2)))
    assert "→ 403 Forbidden" in str(caught.value) and MEMBER_TOKEN not in str(caught.value)


@pytest.mark.e2e
def test_the_api_refuses_todays_date_with_400(emu: Any) -> None:
    today = datetime.now(UTC).date()
    for path in ("tokens", "users"):
        url = f"{emu.base_url}/api/v1/analytics/{path}"
        params = {
            "startDate": (today - timedelta(days=3)).isoformat(),
            "endDate": today.isoformat(),
        }
        reply = httpx.get(url, params=params, headers={"Authorization": f"Bearer {OWNER_TOKEN}"})
        assert reply.status_code == 400
        assert "up to yesterday" in reply.json()["detail"]


@pytest.mark.e2e
def test_a_400_from_the_api_fails_the_sync_and_saves_nothing(emu: Any, tmp_path: Path) -> None:
    state = tmp_path / "state.db"
    tomorrow = datetime.now(UTC) + timedelta(days=1)  # a clock ahead of the server's
    with pytest.raises(Exception) as caught:
        _sync(emu, state, now=tomorrow)
    # nothing saved but the history, read whole before the analytics, kept aside (no history)
    assert "sync failed, kept " in str(caught.value) and "400" in str(caught.value)
    assert "the next sync continues from there" in str(caught.value)
    with Store.open(state) as store:
        assert store.count_revisions() == 0 and list(store.iter_analytics()) == []


@pytest.mark.e2e
def test_analytics_rows_are_redacted_in_the_state_file(emu: Any, tmp_path: Path) -> None:
    canaries = emu.dataset.plant_canaries()  # a hook command carrying a bearer token
    state = tmp_path / "state.db"
    _sync(emu, state, now=FIXED_NOW + timedelta(days=3))
    raw = state.read_bytes()
    with closing(sqlite3.connect(state)) as db:
        rows = db.execute("SELECT data FROM analytics_days").fetchall()
    assert rows
    for canary in canaries:
        assert canary.encode() not in raw
        assert not any(canary.encode() in bytes(r[0]) for r in rows)


@pytest.mark.e2e
def test_odd_optional_fields_are_data_quality_warnings(emu: Any, tmp_path: Path) -> None:
    def odd(request: httpx.Request) -> httpx.Response:
        response = httpx.get(str(request.url), headers=dict(request.headers))
        if "/analytics/tools" not in request.url.path:
            return httpx.Response(
                response.status_code, content=response.content, headers=response.headers
            )
        body = response.json()
        body["data"][0]["tool_autonomy_level_ratio"] = "high"
        return httpx.Response(200, json=body)

    client = PlatformClient(
        base_url=emu.base_url, app_url=None, token=OWNER_TOKEN, transport=httpx.MockTransport(odd)
    )
    quality = DataQuality()
    with client:
        rows = list(
            AnalyticsReader(client, Redactor(b"k"), quality).read(
                date(2026, 10, 1), date(2026, 10, 2)
            )
        )
    tools = [r for r in rows if r.series == "tools"]
    assert len(tools) == 2 and "tool_autonomy_level_ratio" not in tools[0].data  # read as absent
    warnings = quality.warnings(Redactor(b"k"))
    assert any(
        w.path == "$.data[0].tool_autonomy_level_ratio" and "tools 2026-10-01" in w.item
        for w in warnings
    )


def test_a_count_beyond_64_bits_is_odd_not_a_figure() -> None:
    """`1e308` is a number at least 0: it was kept, and the report's chart of daily billable
    tokens summed it to infinity (`y="-inf"`, an axis label `infG`)."""

    def huge(request: httpx.Request) -> httpx.Response:
        row: dict[str, Any] = {"date": "2026-10-01"}
        if request.url.path.endswith("/tokens"):
            row["by_model"] = [
                {"model": "m", "billable_tokens": 1e308},
                {"model": "n", "billable_tokens": 2**63 - 1},
            ]
        if request.url.path.endswith("/users"):
            return httpx.Response(200, json={"data": [], "meta": {"has_more": False}})
        return httpx.Response(200, json={"data": [row], "meta": {}})

    client = PlatformClient(
        base_url="http://svc.test", app_url=None, token=OWNER_TOKEN,
        transport=httpx.MockTransport(huge),
    )  # fmt: skip
    quality = DataQuality()
    with client:
        rows = list(
            AnalyticsReader(client, Redactor(b"k"), quality).read(
                date(2026, 10, 1), date(2026, 10, 1)
            )
        )
    (tokens,) = [r.data for r in rows if r.series == "tokens"]
    assert tokens["by_model"] == [{"model": "m"}, {"model": "n", "billable_tokens": 2**63 - 1}]
    assert any(
        w.path == "$.data[0].by_model[0].billable_tokens" and "fails maximum" in w.problem
        for w in quality.warnings(Redactor(b"k"))
    )


def test_a_huge_count_an_earlier_release_stored_is_read_as_absent() -> None:
    """A state file a release before 0.3.0 wrote may hold `1e308` (the sync kept it): the
    chart summed it to infinity and the usage rules judged it. It is read as no figure, as
    the sync now reads it."""
    from auditor.evaluate.usage import count_value
    from auditor.report.usage import usage_view

    def day(n: float) -> dict[str, Any]:
        return {
            "tokens": {"billable_tokens": n, "by_model": [{"model": "m", "billable_tokens": n}]}
        }

    days = (("2026-10-01", day(1e308)), ("2026-10-02", day(float("inf"))), ("2026-10-03", day(7)))
    view = usage_view(UsageInputs(days=days, first_judged="2026-10-01"))
    assert view is not None
    assert [(d.total, d.by_model) for d in view.days] == [
        (None, ()),
        (None, ()),
        (7.0, (("m", 7.0),)),
    ]
    chart = view.chart
    assert chart is not None and "inf" not in repr(chart)
    # the usage rules' trailing median reads the same figures
    assert [count_value(v) for v in (1e308, float("inf"), -1e300, 2**63 - 1, True, "7")] == [
        None,
        None,
        None,
        float(2**63 - 1),
        None,
        None,
    ]


def test_an_analytics_series_too_wide_fails_once_not_asked_again() -> None:
    """A series is one request with no page size: a page too wide is asked for again with fewer
    items (history, readiness, users), but a series that wide fails as before, on one request."""
    asked: list[httpx.URL] = []

    def wide(request: httpx.Request) -> httpx.Response:
        asked.append(request.url)
        return httpx.Response(200, json={"data": [0] * 1_000_001})

    client = PlatformClient(
        base_url="http://svc.test", app_url=None, token=OWNER_TOKEN,
        transport=httpx.MockTransport(wide),
    )  # fmt: skip
    reader = AnalyticsReader(client, Redactor(b"k"), DataQuality())
    with client, pytest.raises(DataError, match="more than the 1000000 allowed for API data"):
        list(reader.read(date(2026, 10, 1), date(2026, 10, 2)))
    assert len(asked) == 1 and "limit" not in asked[0].params


# -- `auditor run` end to end ---------------------------------------------------------------


def run_cli(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    ctx = Context(env=env, stdout=out, stderr=err, clock=lambda: FIXED_NOW, cwd=str(cwd))
    return main(argv, ctx), out.getvalue(), err.getvalue()


def _env(emu: Any, tmp_path: Path, token: str) -> dict[str, str]:
    return {
        "AUDITOR_BASE_URL": emu.base_url,
        "AUDITOR_APP_URL": emu.app_url,
        "AUDITOR_TOKEN": token,
        "AUDITOR_STATE": str(tmp_path / "state.db"),
    }


@pytest.mark.e2e
def test_run_shows_usage_findings_with_the_setting_in_force(emu: Any, tmp_path: Path) -> None:
    out = tmp_path / "out"
    code, _, err = run_cli(["run", "--out", str(out)], _env(emu, tmp_path, OWNER_TOKEN), tmp_path)
    assert code == 1, err
    data = json.loads((out / "findings.json").read_text())
    usage = [f for f in data["findings"] if f["rule_id"].startswith("USE-")]
    failing = {(f["rule_id"], f["subject"]["key"]) for f in usage if f["status"] == "fail"}
    # gpt-5-codex is blocked by the story's revision; the team used it that day (a mixed day:
    # unknown) and the two days after (fail), then stopped
    block = next(c for c in emu.dataset.history if c["settings"]["modelPolicy"]["blockedModelIds"])
    day = date.fromisoformat(block["updatedAt"][:10])
    after = [f"usage@{day + timedelta(days=n)}" for n in (1, 2)]
    assert {("USE-MOD-001", key) for key in after} <= failing
    assert ("USE-MOD-001", f"usage@{day + timedelta(days=3)}") not in failing
    assert ("USE-MCP-001", "usage@2026-10-23") in failing  # postgres-prod, not allowlisted
    assert ("USE-MCP-001", "usage@2026-10-24") in failing
    assert sum(1 for rule, _ in failing if rule == "USE-MCP-001") == 2
    mixed = [
        f for f in usage if f["subject"]["key"] == f"usage@{day}" and f["rule_id"] == "USE-MOD-001"
    ]
    assert mixed[0]["status"] == "unknown"
    author = block["user"]["email"].split("@")[0]
    md = (out / "report.md").read_text()
    assert "### Usage" in md
    section = md.split("### Usage")[1].split("### Findings")[0]
    assert "| Day | Rule | Status | Observed | Setting in force |" in section
    assert f"| {after[0][6:]} | USE-MOD-001 | fail |" in section and f"by {author}@" in section
    html = (out / "report.html").read_text()
    assert '<h2 id="usage">Usage</h2>' in html and "Daily billable tokens by model" in html
    assert "<script" not in html


def _incomplete_run(args: list[str], env: dict[str, str], tmp_path: Path) -> Any:
    """`auditor run ARGS --out tmp/out`, which must exit 2 and be recorded incomplete."""
    out = tmp_path / "out"
    code, _, err = run_cli(["run", *args, "--out", str(out)], env, tmp_path)
    assert code == 2, err
    data = json.loads((out / "findings.json").read_text())
    assert data["complete"] is False
    return data


@pytest.mark.e2e
def test_run_with_a_token_lacking_the_role_is_incomplete_only_for_usage(
    emu: Any, tmp_path: Path
) -> None:
    env = _env(emu, tmp_path, AUDITOR_TOKEN)
    data = _incomplete_run([], env, tmp_path)  # usage rules were selected, not evaluated
    lines = [x for x in data["not_evaluated"] if "usage" in x]
    assert len(lines) == 1 and "refused the token" in lines[0] and "403" in lines[0]
    assert {f["status"] for f in data["findings"] if f["rule_id"].startswith("USE-")} == {"unknown"}
    assert any(f["rule_id"].startswith("BASE-") for f in data["findings"])  # settings audited
    # without the usage rules the same token gives a complete run
    out2 = tmp_path / "out2"
    code, _, err = run_cli(
        ["run", "--out", str(out2), "--policy", str(REPO / "policies" / "baseline.yaml")],
        env,
        tmp_path,
    )
    assert code == 1, err
    assert json.loads((out2 / "findings.json").read_text())["complete"] is True


@pytest.mark.e2e
def test_run_at_before_the_stored_analytics_is_incomplete_naming_the_days(
    emu: Any, tmp_path: Path
) -> None:
    env = _env(emu, tmp_path, OWNER_TOKEN)
    # the sync stores Oct 2..31; --at Oct 20 audits the window Sep 20..Oct 19
    data = _incomplete_run(["--at", "2026-10-20"], env, tmp_path)
    assert [x for x in data["not_evaluated"] if x.startswith("usage:")] == [
        "usage: 12 of 30 days of 2026-09-20..2026-10-19 not stored "
        "(2026-09-20..2026-10-01): not judged"
    ]
    keys = {f["subject"]["key"] for f in data["findings"] if f["rule_id"] == "USE-MOD-001"}
    assert keys == {f"usage@2026-10-{d:02d}" for d in range(2, 20)}
    md = (tmp_path / "out" / "report.md").read_text()
    assert "Analytics 2026-09-20..2026-10-19: 18 of 30 days stored." in md


@pytest.mark.e2e
def test_no_usage_skips_the_analytics_and_the_usage_rules(emu: Any, tmp_path: Path) -> None:
    out = tmp_path / "out"
    code, _, err = run_cli(
        ["run", "--no-usage", "--out", str(out)], _env(emu, tmp_path, AUDITOR_TOKEN), tmp_path
    )
    assert code == 1, err
    assert _analytics_requests(emu) == []
    data = json.loads((out / "findings.json").read_text())
    assert data["complete"] is True
    assert not any(f["rule_id"].startswith("USE-") for f in data["findings"])


@pytest.mark.e2e
@pytest.mark.parametrize(
    ("kind", "message"),
    [
        ("repeat_cursor", "$.meta.next_cursor: the API repeated an earlier cursor"),
        # an empty page with has_more and a new cursor is followed, as the history's is; one
        # that sends the cursor it was asked with is a repeated cursor
        # (tests/test_paging_tolerance.py)
    ],
)
def test_users_paging_guards_fail_the_sync_and_save_nothing(
    emu: Any, tmp_path: Path, kind: str, message: str
) -> None:
    emu.faults.add("analytics", kind, page=2)
    state = tmp_path / "state.db"
    with pytest.raises(Exception) as caught:
        _sync(emu, state, page_size=20)
    # nothing saved but the history, read whole before the analytics, kept aside (no history)
    assert message in str(caught.value) and "sync failed, kept " in str(caught.value)
    with Store.open(state) as store:
        assert store.count_revisions() == 0 and list(store.iter_analytics()) == []


def _users_reader(pages: list[list[dict[str, Any]]], asked: list[httpx.URL]) -> AnalyticsReader:
    """A reader whose /users sends `pages` in turn (the last one again, forever) and whose
    day series send nothing."""

    def serve(request: httpx.Request) -> httpx.Response:
        if not request.url.path.endswith("/users"):
            return httpx.Response(200, json={"data": [], "meta": {}})
        asked.append(request.url)
        n = min(len(asked), len(pages)) - 1
        rows = [{"user_id": u["user_id"], "date": "2026-10-01", **u} for u in pages[n]]
        meta = {"has_more": True, "next_cursor": f"c{len(asked)}"}  # a listing never done
        if n == len(pages) - 1 and len(pages) > 1 and pages[n] != pages[n - 1]:
            meta = {"has_more": False, "next_cursor": None}
        return httpx.Response(200, json={"data": rows, "meta": meta})

    client = PlatformClient(
        base_url="http://svc.test", app_url=None, token=OWNER_TOKEN,
        transport=httpx.MockTransport(serve),
    )  # fmt: skip
    return AnalyticsReader(client, Redactor(b"k"), DataQuality())


def _users_of(reader: AnalyticsReader) -> list[Any]:
    with reader._client:
        rows = list(reader.read(date(2026, 10, 1), date(2026, 10, 1)))
    return [u["user_id"] for r in rows if r.series == "users" for u in r.data]


def test_a_users_page_that_never_ends_fails_on_its_second_repeat() -> None:
    """A listing that sends the same users with a new cursor went on to `max_pages` (10,000
    pages: 45 s and 1 GB for one day against a local server), every user kept each time. One
    page of repeats is an overlap; two in a row, and yet the listing goes on, is refused."""
    asked: list[httpx.URL] = []
    same = [{"user_id": "u1", "billable_tokens": 5}, {"user_id": "u2", "billable_tokens": 6}]
    with pytest.raises(DataError, match="pages 2 to 3 only repeated users sent on earlier"):
        _users_of(_users_reader([same], asked))
    assert len(asked) == 4


def test_one_users_page_of_repeats_between_new_ones_is_an_overlap_not_an_error() -> None:
    """Offset paging as rows shift, or an inclusive cursor with small pages, can send one page
    of users already sent before new ones: the sync failed on it with `paging makes no
    progress`."""
    a, b, c, d = ({"user_id": u, "billable_tokens": 5} for u in "abcd")
    assert _users_of(_users_reader([[a, b], [b], [c, d]], [])) == ["a", "b", "c", "d"]
    assert _users_of(_users_reader([[a, b], [a, b], [c, d]], [])) == ["a", "b", "c", "d"]


def test_a_user_sent_twice_in_a_day_is_read_once_or_refused_when_they_differ() -> None:
    a, b, c = ({"user_id": u, "billable_tokens": 5} for u in ("a", "b", "c"))
    assert _users_of(_users_reader([[a, b], [b, c]], [])) == ["a", "b", "c"]  # overlapping
    other = {**b, "billable_tokens": 9}
    with pytest.raises(DataError, match="a second row for user b on 2026-10-01, with other"):
        _users_of(_users_reader([[a, b], [other, c]], []))


@pytest.mark.e2e
def test_a_transient_500_on_analytics_is_retried(emu: Any, tmp_path: Path) -> None:
    emu.faults.add("analytics", "503", page=1)
    summary = _sync(emu, tmp_path / "state.db", page_size=20)
    assert summary.usage.days_stored == 30


# -- the usage section of the reports --------------------------------------------------------


def test_usage_section_renders_hostile_model_names_inert() -> None:
    from dataclasses import replace as with_

    from auditor.report.html import render_html
    from auditor.report.markdown import render_markdown
    from auditor.report.usage import usage_view
    from tests.report_fixture import build_report_data

    evil = '<script>alert(1)</script>"|`'
    days = tuple(
        _day(f"2026-10-{d:02d}", {"claude": 1000 * d, evil: 500, **{f"m{i}": i for i in range(7)}})
        for d in range(1, 31)
    )
    view = usage_view(UsageInputs(days=days, window=("2026-10-01", "2026-10-30")))
    assert view is not None
    chart = view.chart()
    assert chart is not None and len({b.x for b in chart.bars}) == 30
    assert [label.text for label in chart.legend][-1] == "other"  # 9 models: 6 shown + other
    data = with_(build_report_data(), usage=view)
    html = render_html(data)
    assert '<h2 id="usage">Usage</h2>' in html and "<script>" not in html
    assert "&lt;script&gt;" in html
    section = html.split('<h2 id="usage">Usage</h2>')[1].split("<h2")[0]
    assert 'style="' not in section  # colours are SVG attributes: the page's CSP holds
    md = render_markdown(data)
    assert "### Usage" in md and "<script>" not in md
    assert "Analytics 2026-10-01..2026-10-30: 30 of 30 days stored." in md


def test_a_policy_test_case_with_no_usage_day_is_a_test_file_error(tmp_path: Path) -> None:
    pack = tmp_path / "p"
    pack.mkdir()
    shutil.copy(SHIPPED_POLICY_DIR / "usage.yaml", pack / "usage.yaml")  # the shipped pack
    (pack / "usage.tests.yaml").write_text(
        "tests:\n  - name: no day\n    usage: []\n    expect: {USE-MOD-001: pass}\n"
    )
    out, err = io.StringIO(), io.StringIO()
    ctx = Context(env={}, stdout=out, stderr=err, clock=lambda: FIXED_NOW, cwd=str(tmp_path))
    code = main(["policy", "test", str(pack)], ctx)
    shown = out.getvalue() + err.getvalue()
    assert code == 2 and "unexpected" not in shown and "Traceback" not in shown
    assert "a usage day needs `date: YYYY-MM-DD`" in shown
