"""The emulator over real HTTP: paging, validation, auth, faults, data realism, determinism."""

from __future__ import annotations

import base64
import contextlib
import functools
import io
import json
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import orjson
import pytest
from ruamel.yaml import YAML

from auditor.cli import Context, main
from auditor.emulator import Dataset, Emulator, FaultController, generate_dataset, start_emulator
from auditor.emulator.data_reports import UNKNOWN_CRITERION
from auditor.emulator.faults import parse_fault

NOW = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
OWNER = "owner-token-0123456789"
MEMBER = "member-token-0123456789"
HISTORY = "/api/v0/organization/enterprise-controls/history"
REPORTS = "/api/organization/agent-readiness-reports"
TOKENS_URL = "/api/v1/analytics/tokens"
USERS_URL = "/api/v1/analytics/users"
DATES = {"startDate": "2026-10-01", "endDate": "2026-10-07"}
V0_KEYS = {"detail", "status", "title", "metadata"}
V1_KEYS = {"title", "detail", "status", "requestId"}
JsonObj = dict[str, Any]


@pytest.fixture(scope="module")
def emu() -> Iterator[Emulator]:
    with start_emulator(tokens={OWNER: "owner", MEMBER: "member"}, now=NOW) as running:
        yield running


@pytest.fixture
def fresh() -> Iterator[Emulator]:
    """An emulator of its own, for tests that change its data."""
    with start_emulator(tokens={OWNER: "owner"}, now=NOW, revisions=30, repos=3) as running:
        yield running


@pytest.fixture(autouse=True)
def _no_faults(request: pytest.FixtureRequest) -> Iterator[None]:
    yield
    if "emu" in request.fixturenames:
        running: Emulator = request.getfixturevalue("emu")
        running.faults.clear()
        assert running.errors == []


@pytest.fixture(scope="module")
def client() -> Iterator[httpx.Client]:
    with httpx.Client(headers={"Authorization": f"Bearer {OWNER}"}, timeout=10) as http:
        yield http


def history_page(client: httpx.Client, emu: Emulator, **params: str) -> JsonObj:
    response = client.get(emu.base_url + HISTORY, params=params)
    assert response.status_code == 200, response.text
    body: JsonObj = response.json()
    return body


def all_revisions(client: httpx.Client, emu: Emulator, limit: str | None) -> list[int]:
    params = {"limit": limit} if limit else {}
    seen: list[int] = []
    while True:
        body = history_page(client, emu, **params)
        seen += [c["revision"] for c in body["changes"]]
        if not body["pagination"]["hasMore"]:
            return seen
        params["cursor"] = body["pagination"]["nextCursor"]


# --- history paging and validation -------------------------------------------------------------


@pytest.mark.parametrize("limit", [None, "1", "7", "100"], ids=["default", "1", "7", "100"])
def test_paging_to_the_end_gives_every_revision_once_descending(
    client: httpx.Client, emu: Emulator, limit: str | None
) -> None:
    expected = [c["revision"] for c in reversed(emu.dataset.history)]
    assert all_revisions(client, emu, limit) == expected


def test_default_page_is_20_full_snapshots(client: httpx.Client, emu: Emulator) -> None:
    body = history_page(client, emu)
    change = body["changes"][0]
    assert len(body["changes"]) == 20
    assert set(change) == {"revision", "settings", "user", "updatedAt"}
    assert set(change["user"]) == {"id", "email", "name"}
    assert datetime.fromisoformat(change["updatedAt"].replace("Z", "+00:00")) <= NOW
    assert "sandbox" in change["settings"] and "customModels" in change["settings"]


@pytest.mark.parametrize("limit", ["0", "101", "abc", "-1", "1.5", "", " 5"])
def test_bad_limit_is_a_400_problem(client: httpx.Client, emu: Emulator, limit: str) -> None:
    response = client.get(emu.base_url + HISTORY, params={"limit": limit})
    assert response.status_code == 400
    assert set(response.json()) == V0_KEYS
    assert "limit" in response.json()["detail"]


def test_garbage_cursor_is_a_400_problem(client: httpx.Client, emu: Emulator) -> None:
    response = client.get(emu.base_url + HISTORY, params={"cursor": "not-a-cursor"})
    assert response.status_code == 400
    assert response.json()["status"] == 400


# --- auth ---------------------------------------------------------------------------------------

AUTH_CASES = [
    ("history-no-token", "base", HISTORY, None, 401, V0_KEYS),
    ("history-unknown-token", "base", HISTORY, "nope", 401, V0_KEYS),
    ("history-member", "base", HISTORY, MEMBER, 403, V0_KEYS),
    ("analytics-no-token", "base", TOKENS_URL, None, 401, V1_KEYS),
    ("analytics-member", "base", TOKENS_URL, MEMBER, 403, V1_KEYS),
    ("users-member", "base", USERS_URL, MEMBER, 403, V1_KEYS),
    ("reports-no-token", "app", REPORTS, None, 401, V1_KEYS),
    ("reports-unknown-token", "app", REPORTS, "nope", 401, V1_KEYS),
]


@pytest.mark.parametrize(
    ("where", "path", "token", "status", "keys"),
    [c[1:] for c in AUTH_CASES],
    ids=[c[0] for c in AUTH_CASES],
)
def test_auth_errors_have_the_problem_shape_of_their_api(
    emu: Emulator, where: str, path: str, token: str | None, status: int, keys: set[str]
) -> None:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    base = emu.base_url if where == "base" else emu.app_url
    response = httpx.get(base + path, params=DATES, headers=headers)
    assert response.status_code == status
    assert set(response.json()) == keys
    assert response.json()["status"] == status


def test_member_can_read_reports(emu: Emulator) -> None:
    response = httpx.get(emu.app_url + REPORTS, headers={"Authorization": f"Bearer {MEMBER}"})
    assert response.status_code == 200
    assert response.json()["reports"]


@pytest.mark.parametrize(("owner_kind", "status"), [("user", 200), ("service_account", 403)])
def test_member_reads_own_computers_but_not_service_accounts(
    emu: Emulator, owner_kind: str, status: int
) -> None:
    target = next(c for c in emu.dataset.computers if c["ownerPrincipalKind"] == owner_kind)
    url = f"{emu.base_url}/api/v0/computers/{target['id']}"
    response = httpx.get(url, headers={"Authorization": f"Bearer {MEMBER}"})
    assert response.status_code == status


def test_unknown_computer_is_404(client: httpx.Client, emu: Emulator) -> None:
    response = client.get(f"{emu.base_url}/api/v0/computers/cmp_missing")
    assert response.status_code == 404
    assert set(response.json()) == V0_KEYS


def test_readiness_endpoint_lives_only_on_the_app_address(
    client: httpx.Client, emu: Emulator
) -> None:
    assert client.get(emu.base_url + REPORTS).status_code == 404


# --- readiness reports --------------------------------------------------------------------------


def all_reports(client: httpx.Client, emu: Emulator, **params: str) -> list[JsonObj]:
    reports: list[JsonObj] = []
    limit = int(params.get("limit", "20"))
    while True:
        page = client.get(emu.app_url + REPORTS, params=params).json()["reports"]
        reports += page
        if len(page) < limit:
            return reports
        params["startAfter"] = page[-1]["reportId"]


def test_readiness_paging_with_start_after_gives_each_report_once_newest_first(
    client: httpx.Client, emu: Emulator
) -> None:
    reports = all_reports(client, emu, limit="10")
    created = [r["createdAt"] for r in reports]
    assert len(reports) == len(emu.dataset.reports)
    assert len({r["reportId"] for r in reports}) == len(reports)
    assert created == sorted(created, reverse=True)


def test_readiness_filter_by_repo(client: httpx.Client, emu: Emulator) -> None:
    url = emu.dataset.reports[0]["repoUrl"]
    name = url.rsplit("/", 1)[1]
    expected = sum(1 for r in emu.dataset.reports if r["repoUrl"] == url)
    for repo_id in (url, f"acme/{name}"):
        reports = all_reports(client, emu, limit="2", repoId=repo_id)
        assert [r["repoUrl"] for r in reports] == [url] * expected


@pytest.mark.parametrize("params", [{"limit": "0"}, {"limit": "x"}, {"startAfter": "no-such-id"}])
def test_readiness_bad_parameters_are_400(
    client: httpx.Client, emu: Emulator, params: dict[str, str]
) -> None:
    response = client.get(emu.app_url + REPORTS, params=params)
    assert response.status_code == 400
    assert set(response.json()) == V1_KEYS


# --- analytics ----------------------------------------------------------------------------------


@pytest.mark.parametrize("series", ["tokens", "tools", "activity", "productivity"])
def test_analytics_series_has_one_row_per_day(
    client: httpx.Client, emu: Emulator, series: str
) -> None:
    body = client.get(f"{emu.base_url}/api/v1/analytics/{series}", params=DATES).json()
    assert body["data"][0]["date"] == "2026-10-01"
    assert len(body["data"]) == 7
    assert body["meta"]["start_date"] == "2026-10-01" and body["meta"]["end_date"] == "2026-10-07"


@pytest.mark.parametrize(
    ("series", "group_by"), [("tokens", "model"), ("tools", "tool_name"), ("activity", "client")]
)
def test_analytics_group_by_flattens_rows(
    client: httpx.Client, emu: Emulator, series: str, group_by: str
) -> None:
    body = client.get(
        f"{emu.base_url}/api/v1/analytics/{series}", params={**DATES, "group_by": group_by}
    ).json()
    assert len(body["data"]) > 7
    assert all("group_key" in row for row in body["data"])


@pytest.mark.parametrize(
    "params",
    [
        {},
        {"startDate": "2026-10-01"},
        {**DATES, "endDate": "2026-09-01"},
        {**DATES, "group_by": "colour"},
    ],
    ids=["no-dates", "no-end", "end-before-start", "bad-group-by"],
)
def test_analytics_bad_parameters_are_400(
    client: httpx.Client, emu: Emulator, params: dict[str, str]
) -> None:
    response = client.get(emu.base_url + TOKENS_URL, params=params)
    assert response.status_code == 400
    assert set(response.json()) == V1_KEYS


def test_analytics_users_pages_by_cursor(client: httpx.Client, emu: Emulator) -> None:
    params = {**DATES, "limit": "20"}
    ids: list[str] = []
    while True:
        body = client.get(emu.base_url + USERS_URL, params=params).json()
        ids += [row["user_id"] for row in body["data"]]
        if not body["meta"]["has_more"]:
            break
        params["cursor"] = body["meta"]["next_cursor"]
    assert ids == [u["user_id"] for u in emu.dataset.analytics_users]
    assert len(ids) > 20


# --- faults -------------------------------------------------------------------------------------


@functools.cache
def _owner_client() -> httpx.Client:
    return httpx.Client(headers={"Authorization": f"Bearer {OWNER}"}, timeout=10)


@pytest.fixture(scope="module", autouse=True)
def _close_owner_client() -> Iterator[None]:
    yield
    _owner_client().close()
    _owner_client.cache_clear()


def get(emu: Emulator, path: str, **params: str) -> httpx.Response:
    """GET as the owner on the address that serves `path`."""
    base = emu.app_url if path == REPORTS else emu.base_url
    return _owner_client().get(base + path, params=params)


STATUS_FAULTS = [
    ("429-seconds", "history", "429", {"retry_after": 3}, 429),
    ("500", "history", "500", {}, 500),
    ("503", "history", "503", {}, 503),
    ("429-reports", "reports", "429", {"retry_after": 2}, 429),
    ("500-analytics", "analytics", "500", {}, 500),
    ("503-computers", "computers", "503", {}, 503),
]
PATHS = {
    "history": HISTORY,
    "reports": REPORTS,
    "analytics": TOKENS_URL,
    "computers": "/api/v0/computers/",
}


@pytest.mark.parametrize(
    ("endpoint", "kind", "params", "status"),
    [c[1:] for c in STATUS_FAULTS],
    ids=[c[0] for c in STATUS_FAULTS],
)
def test_status_fault_answers_a_problem_once_then_recovers(
    emu: Emulator, endpoint: str, kind: str, params: JsonObj, status: int
) -> None:
    path = PATHS[endpoint] + (emu.dataset.computers[0]["id"] if endpoint == "computers" else "")
    emu.faults.add(endpoint, kind, **params)
    failed = get(emu, path, **DATES)
    assert failed.status_code == status
    assert failed.json()["status"] == status
    if "retry_after" in params:
        assert failed.headers["Retry-After"] == str(params["retry_after"])
    assert get(emu, path, **DATES).status_code == 200


def test_429_with_an_http_date(emu: Emulator) -> None:
    emu.faults.add("history", "429", retry_after=30, retry_after_date=True)
    response = get(emu, HISTORY)
    assert response.status_code == 429
    assert parsedate_to_datetime(response.headers["Retry-After"]) == NOW + timedelta(seconds=30)


def test_502_is_a_gateway_html_page(emu: Emulator) -> None:
    emu.faults.add("history", "502")
    response = get(emu, HISTORY)
    assert response.status_code == 502
    assert response.headers["content-type"].startswith("text/html")


def test_delay(emu: Emulator) -> None:
    emu.faults.add("history", "delay", seconds=0.3)
    started = time.perf_counter()
    assert get(emu, HISTORY).status_code == 200
    assert time.perf_counter() - started >= 0.3


def test_truncated_json(emu: Emulator) -> None:
    emu.faults.add("history", "truncated_json")
    response = get(emu, HISTORY)
    assert response.status_code == 200 and response.content
    with pytest.raises(json.JSONDecodeError):
        json.loads(response.content)


@pytest.mark.parametrize("endpoint", ["history", "reports"])
def test_wrong_content_type(emu: Emulator, endpoint: str) -> None:
    emu.faults.add(endpoint, "wrong_content_type")
    response = get(emu, PATHS[endpoint])
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")


def test_fault_on_page_2_leaves_page_1_alone(emu: Emulator) -> None:
    emu.faults.add("history", "500", page=2)
    first = get(emu, HISTORY, limit="5")
    assert first.status_code == 200
    cursor = first.json()["pagination"]["nextCursor"]
    assert get(emu, HISTORY, limit="5", cursor=cursor).status_code == 500
    assert get(emu, HISTORY, limit="5", cursor=cursor).status_code == 200


def test_times_zero_fails_forever_and_clear_disarms(emu: Emulator) -> None:
    emu.faults.add("history", "503", times=0)
    assert [get(emu, HISTORY).status_code for _ in range(3)] == [503, 503, 503]
    emu.faults.clear()
    assert get(emu, HISTORY).status_code == 200


def test_repeat_cursor_sends_back_the_same_cursor(emu: Emulator) -> None:
    emu.faults.add("history", "repeat_cursor", page=2)
    cursor = get(emu, HISTORY, limit="5").json()["pagination"]["nextCursor"]
    second = get(emu, HISTORY, limit="5", cursor=cursor).json()["pagination"]
    assert second == {"hasMore": True, "nextCursor": cursor}


def test_empty_page_with_has_more_loses_nothing(emu: Emulator) -> None:
    emu.faults.add("history", "empty_has_more", page=1)
    empty = get(emu, HISTORY, limit="5").json()
    assert empty["changes"] == [] and empty["pagination"]["hasMore"] is True
    after = get(emu, HISTORY, limit="5", cursor=empty["pagination"]["nextCursor"]).json()
    assert after["changes"][0]["revision"] == emu.dataset.history[-1]["revision"]


@pytest.mark.parametrize(
    ("kind", "identical"), [("duplicate_revision", True), ("conflicting_revision", False)]
)
def test_same_revision_on_two_pages(emu: Emulator, kind: str, identical: bool) -> None:
    emu.faults.add("history", kind, page=1)
    first = get(emu, HISTORY, limit="5").json()
    second = get(emu, HISTORY, limit="5", cursor=first["pagination"]["nextCursor"]).json()
    last, repeated = first["changes"][-1], second["changes"][0]
    assert repeated["revision"] == last["revision"]
    assert (repeated["settings"] == last["settings"]) is identical


def test_settings_not_an_object(emu: Emulator) -> None:
    emu.faults.add("history", "settings_not_object")
    changes = get(emu, HISTORY).json()["changes"]
    assert not isinstance(changes[0]["settings"], dict)
    assert isinstance(changes[1]["settings"], dict)


def test_reports_repeat_and_empty_faults(emu: Emulator) -> None:
    first = get(emu, REPORTS, limit="5").json()["reports"]
    emu.faults.add("reports", "repeat_cursor", page=2)
    again = get(emu, REPORTS, limit="5", startAfter=first[-1]["reportId"]).json()["reports"]
    assert again == first
    emu.faults.add("reports", "empty_has_more")
    assert get(emu, REPORTS, limit="5").json() == {"reports": []}


@pytest.mark.parametrize(
    ("endpoint", "kind", "params"),
    [
        ("nowhere", "500", {}),
        ("history", "explode", {}),
        ("computers", "repeat_cursor", {}),
        ("history", "429", {"retry_afterr": 1}),
        ("history", "500", {"page": 0}),
        ("history", "delay", {"seconds": float("inf")}),
        ("history", "delay", {"seconds": float("nan")}),
        ("history", "delay", {"seconds": -1}),
        ("history", "429", {"retry_after": -5}),
        ("history", "429", {"retry_after": 1.5}),
        ("history", "429", {"retry_after": "soon"}),
    ],
    ids=[
        "unknown-endpoint",
        "unknown-kind",
        "kind-not-for-endpoint",
        "typo-param",
        "page-0",
        "delay-forever",
        "delay-nan",
        "delay-negative",
        "retry-after-negative",
        "retry-after-fraction",
        "retry-after-word",
    ],
)
def test_fault_switches_reject_nonsense(endpoint: str, kind: str, params: JsonObj) -> None:
    with pytest.raises(ValueError):
        FaultController().add(endpoint, kind, **params)


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (
            "history:429:page=2:times=3:retry_after=5",
            ("history", "429", {"page": 2, "times": 3, "retry_after": 5}),
        ),
        ("history:delay:seconds=0.5", ("history", "delay", {"seconds": 0.5})),
        ("history:429:retry_after_date=true", ("history", "429", {"retry_after_date": True})),
    ],
    ids=["page-times-param", "float", "bool"],
)
def test_parse_fault(spec: str, expected: tuple[str, str, JsonObj]) -> None:
    assert parse_fault(spec) == expected


@pytest.mark.parametrize("spec", ["history", "history:429:page", "history:500:page=two"])
def test_parse_fault_rejects_malformed(spec: str) -> None:
    with pytest.raises(ValueError):
        parse_fault(spec)


# --- data realism -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def data() -> Dataset:
    return generate_dataset(now=NOW)


def _at(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def _values(data: Dataset, pick: Callable[[JsonObj], Any]) -> list[Any]:
    return [pick(c["settings"]) for c in data.history]


def test_history_is_big_long_and_has_many_authors(data: Dataset) -> None:
    history = data.history
    assert len(history) >= 200
    assert [c["revision"] for c in history] == sorted({c["revision"] for c in history})
    assert _at(history[-1]["updatedAt"]) - _at(history[0]["updatedAt"]) >= timedelta(days=183)
    assert _at(history[-1]["updatedAt"]) <= NOW
    assert len({c["user"]["email"] for c in history}) >= 5


def test_key_renamed_between_api_versions(data: Dataset) -> None:
    has_old = _values(data, lambda s: "enableDroidShield" in s)
    has_new = _values(data, lambda s: "enableAgentShield" in s)
    switch = has_new.index(True)
    assert all(has_old[:switch]) and not any(has_old[switch:]) and all(has_new[switch:])


def _model(settings: JsonObj, model_id: str) -> JsonObj | None:
    return next((m for m in settings.get("customModels", []) if m["id"] == model_id), None)


def test_custom_model_key_rotated_and_base_url_changed(data: Dataset) -> None:
    models = [m for m in _values(data, lambda s: _model(s, "custom:acme-gpt")) if m]
    assert len({m["apiKey"] for m in models}) >= 3
    assert all(m["apiKey"].startswith("sk-") for m in models)
    assert len({m["baseUrl"] for m in models}) >= 2


def test_story_of_an_audit(data: Dataset) -> None:
    sandbox_on = _values(data, lambda s: s["sandbox"]["enabled"])
    first_on = sandbox_on.index(True)
    assert False in sandbox_on[first_on:]
    assert len(set(_values(data, lambda s: s["sandbox"]["mode"]))) >= 2
    assert "high" in _values(data, lambda s: s["maxAutonomyLevel"])
    assert any(_values(data, lambda s: "/" in s["sandbox"]["filesystem"]["allowWrite"]))
    assert len(set(_values(data, lambda s: s["sessionRetentionDays"]))) >= 2
    allowlists = {tuple(a) for a in _values(data, lambda s: s["mcpPolicy"]["allowlist"]) if a}
    assert len(allowlists) >= 2 and any(_values(data, lambda s: s["mcpPolicy"]["enabled"]))
    assert any(_values(data, lambda s: s["hooks"].get("PreToolUse")))
    for key in ("commandAllowlist", "commandDenylist", "commandBlocklist"):
        assert len({tuple(c["settings"][key]) for c in data.history}) >= 3


def test_latest_revision_still_has_weaknesses(data: Dataset) -> None:
    latest = data.history[-1]["settings"]
    models = latest["customModels"]
    assert any(m["baseUrl"].startswith("http://") for m in models)
    assert any(m.get("apiKey", "").startswith("sk-") for m in models)
    assert "${" in json.dumps(latest["env"]) or any(
        m.get("apiKey", "").startswith("${") for m in models
    )


def test_readiness_reports_are_realistic(data: Dataset) -> None:
    yaml_text = (Path(__file__).parents[1] / "auditor/data/readiness-criteria.yaml").read_text()
    known = set(YAML(typ="safe", pure=True).load(yaml_text)["criteria"])
    reports = data.reports
    scores = [s for r in reports for s in r["report"].values()]
    assert len({r["repoUrl"] for r in reports}) >= 30
    assert len(reports) > len({r["repoUrl"] for r in reports})
    assert {cid for r in reports for cid in r["report"]} <= known | {UNKNOWN_CRITERION}
    assert any(s["numerator"] is None for s in scores)
    assert any(r.get("hasLocalChanges") for r in reports)
    assert any("modelUsed" not in r for r in reports) and any("modelUsed" in r for r in reports)
    multi = [r for r in reports if len(r["apps"]) > 1]
    assert multi and all(r["report"]["lint_config"]["denominator"] == len(r["apps"]) for r in multi)


def test_generation_is_deterministic_for_a_seed() -> None:
    def dump(d: Dataset) -> bytes:
        return orjson.dumps([d.history, d.reports, d.computers])

    assert dump(generate_dataset(seed=3, now=NOW)) == dump(generate_dataset(seed=3, now=NOW))
    assert dump(generate_dataset(seed=3, now=NOW)) != dump(generate_dataset(seed=4, now=NOW))


def test_ten_thousand_revisions_generate_fast() -> None:
    started = time.perf_counter()
    big = generate_dataset(revisions=10_000, repos=50, now=NOW)
    assert len(big.history) == 10_000
    assert time.perf_counter() - started < 5


# --- growing data -------------------------------------------------------------------------------


def test_add_revisions_appear_on_top(fresh: Emulator) -> None:
    before = get(fresh, HISTORY, limit="1").json()["changes"][0]
    fresh.add_revisions(3)
    after = get(fresh, HISTORY, limit="3").json()["changes"]
    assert [c["revision"] for c in after] == [before["revision"] + i for i in (3, 2, 1)]
    assert all(_at(c["updatedAt"]) > _at(before["updatedAt"]) for c in after)


def test_plant_canaries_puts_each_where_promised(fresh: Emulator) -> None:
    canaries = fresh.dataset.plant_canaries()
    key, header, query, env_value, bearer = canaries
    assert len(set(canaries)) == 5 and all(len(c) >= 16 for c in canaries)
    settings = get(fresh, HISTORY, limit="1").json()["changes"][0]["settings"]
    model = next(m for m in settings["customModels"] if m.get("apiKey") == key)
    assert key in model["displayName"]
    assert any(header in v for v in model["extraHeaders"].values())
    assert parse_qs(urlsplit(model["baseUrl"]).query)["api_key"] == [query]
    assert env_value in settings["env"].values()
    commands = [
        h["command"]
        for e in settings["hooks"].values()
        if isinstance(e, list)
        for g in e
        for h in g["hooks"]
    ]
    assert any(f"Bearer {bearer}" in c for c in commands)
    assert fresh.dataset.plant_canaries()[0] != key


def test_requests_are_logged(fresh: Emulator) -> None:
    get(fresh, HISTORY, limit="2")
    assert fresh.requests[-1] == ("GET", HISTORY + "?limit=2")


def test_cursor_is_opaque(client: httpx.Client, emu: Emulator) -> None:
    cursor = history_page(client, emu, limit="3")["pagination"]["nextCursor"]
    assert (
        cursor.isascii()
        and "=" not in cursor
        and "h1:" in base64.urlsafe_b64decode(cursor + "==").decode()
    )


# --- command line -------------------------------------------------------------------------------

CLI = textwrap.dedent(
    """
    import argparse, sys
    from auditor.cli import Context
    from auditor.cli.parsers import register_emulator as register
    parser = argparse.ArgumentParser()
    register(parser.add_subparsers())
    args = parser.parse_args(sys.argv[1:])
    sys.exit(args.handler(args, Context()))
    """
)


def test_cli_serves_with_faults_until_interrupted() -> None:
    argv = [
        sys.executable,
        "-c",
        CLI,
        "emulator",
        "--revisions",
        "20",
        "--repos",
        "2",
        "--fault",
        "history:500:page=1",
    ]
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        assert proc.stdout is not None
        lines = dict(proc.stdout.readline().strip().split("=", 1) for _ in range(4))
        headers = {"Authorization": f"Bearer {lines['owner_token']}"}
        assert httpx.get(lines["base_url"] + HISTORY, headers=headers).status_code == 500
        assert len(httpx.get(lines["base_url"] + HISTORY, headers=headers).json()["changes"]) == 20
        assert httpx.get(lines["app_url"] + REPORTS, headers=headers).status_code == 200
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=10) == 0


def test_cli_rejects_a_bad_fault() -> None:
    argv = [
        sys.executable,
        "-c",
        CLI,
        "emulator",
        "--revisions",
        "5",
        "--repos",
        "0",
        "--fault",
        "history:explode",
    ]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode != 0
    assert "explode" in done.stderr


@pytest.mark.parametrize("flag", ["--port", "--app-port"])
@pytest.mark.parametrize("value", ["65536", "99999", "-1", "http"])
def test_cli_refuses_a_port_out_of_range_as_a_usage_error(flag: str, value: str) -> None:
    """`--port 99999` was `unexpected OverflowError: bind(): port must be 0-65535`."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = main(["emulator", flag, value], Context(stderr=err))
    assert code == 2
    assert f"argument {flag}: expected a port number 0-65535, got" in err.getvalue()
    assert "unexpected" not in err.getvalue()


def test_a_client_that_hangs_up_mid_answer_prints_nothing(
    fresh: Emulator, capfd: pytest.CaptureFixture[str]
) -> None:
    """A client gone before its answer was written (a run stopped by Ctrl-C or a timeout) was
    printed as `Exception occurred during processing of request …` and a BrokenPipeError's
    traceback on the emulator's stderr: in `auditor demo`, and into whatever a later test of
    the same process captured."""
    import socket
    import time
    from urllib.parse import urlsplit

    address = urlsplit(fresh.base_url)
    for _ in range(20):
        with socket.create_connection((address.hostname, address.port)) as client:
            client.setsockopt(
                socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00"
            )
            client.sendall(
                b"GET /api/v0/organization/enterprise-controls/history?limit=100 HTTP/1.1\r\n"
                b"Host: x\r\nAuthorization: Bearer " + OWNER.encode() + b"\r\n\r\n"
            )
        # closed with a reset, unread: the server's writes fail
    time.sleep(0.5)
    assert "Traceback" not in capfd.readouterr().err
