"""The five GET /api/v1/analytics endpoints: a date range (and grouping or paging) in, rows out.

Envelope `{data, meta: {org_id, start_date, end_date, …}}`; `group_by` flattens a day's
breakdown into rows carrying `group_key`; /users pages by user id with `meta.has_more` and
`meta.next_cursor`.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, date, datetime
from typing import Any

from auditor.emulator import data_analytics as rows
from auditor.emulator.data_common import JsonObj
from auditor.emulator.endpoints import Problem, Reply, Request, faulted, int_param

MAX_DAYS = 366
RowFn = Callable[[rows.DayFacts], JsonObj]
# endpoint -> (row function, accepted group_by, breakdown field, breakdown item -> grouped row)
SERIES: dict[str, tuple[RowFn, str | None, str, Callable[[Any], JsonObj]]] = {
    "tokens": (
        rows.tokens_row,
        "model",
        "by_model",
        lambda m: {"group_key": m["model"], **{k: v for k, v in m.items() if k != "model"}},
    ),
    "tools": (
        rows.tools_row,
        "tool_name",
        "by_tool",
        lambda t: {"group_key": t["tool"], "tool_calls": t["invocations"]},
    ),
    "activity": (
        rows.activity_row,
        "client",
        "daily_active_users_by_client",
        lambda kv: {"group_key": kv[0], "daily_active_users": kv[1]},
    ),
    "productivity": (rows.productivity_row, None, "", lambda x: {}),
}


def _date(req: Request, name: str) -> date:
    text = req.query.get(name)
    if not text:
        raise Problem(400, f"Missing required query parameter '{name}' (YYYY-MM-DD)")
    try:
        if len(text) != 10:
            raise ValueError(text)
        return date.fromisoformat(text)
    except ValueError as exc:
        raise Problem(400, f"Invalid query parameter '{name}': expected YYYY-MM-DD") from exc


def _range(req: Request) -> tuple[date, date]:
    start, end = _date(req, "startDate"), _date(req, "endDate")
    if end < start:
        raise Problem(400, "Invalid date range: endDate is before startDate")
    if (end - start).days >= MAX_DAYS:
        raise Problem(400, f"Invalid date range: at most {MAX_DAYS} days")
    today = datetime.now(UTC).date()
    if end >= today:
        raise Problem(
            400,
            f"Invalid query parameter 'endDate': {end.isoformat()} is not a complete day; "
            "analytics are available up to yesterday (UTC)",
        )
    return start, end


def _meta(start: date, end: date, **extra: Any) -> JsonObj:
    return {
        "org_id": rows.ORG_ID,
        "start_date": start.isoformat(),
        "end_date": end.isoformat(),
        **extra,
    }


def _grouped(day_row: JsonObj, field: str, to_row: Callable[[Any], JsonObj]) -> list[JsonObj]:
    breakdown = day_row[field]
    items = breakdown.items() if isinstance(breakdown, dict) else breakdown
    return [{"date": day_row["date"], **to_row(item)} for item in items]


def series(req: Request, name: str) -> Reply:
    """GET /api/v1/analytics/{tokens,tools,activity,productivity}."""
    row_fn, group_value, field, to_row = SERIES[name]
    start, end = _range(req)
    group_by = req.query.get("group_by")
    if group_by is not None and group_by != group_value:
        allowed = f"'{group_value}'" if group_value else "no value (this endpoint does not group)"
        raise Problem(400, f"Invalid query parameter 'group_by': expected {allowed}")
    day_rows = [row_fn(req.dataset.day_facts(d)) for d in rows.days(start, end)]
    data = [r for d in day_rows for r in _grouped(d, field, to_row)] if group_by else day_rows
    meta = _meta(start, end, **({"group_by": group_by} if group_by else {}))
    return faulted(req, "analytics", 1, lambda kinds: {"data": data, "meta": meta})


_AGAIN = "again."


def users(req: Request) -> Reply:
    """GET /api/v1/analytics/users: per-user rows paged by user id."""
    start, end = _range(req)
    limit = int_param(req.query, "limit", 20, 100)
    people = req.dataset.analytics_users
    cursor = req.query.get("cursor") or None
    ids = [u["user_id"] for u in people]
    # `again.` before a cursor (or alone, for the first page): the page an `empty_has_more`
    # page sent the cursor of, where the empty page stood (a service that filters after paging)
    sent = cursor
    while cursor is not None and cursor.startswith(_AGAIN):
        cursor = cursor[len(_AGAIN) :] or None
    if cursor is not None and cursor not in ids:
        raise Problem(400, "Invalid query parameter 'cursor': unknown user id")
    pos = ids.index(cursor) + 1 if cursor else 0

    def build(kinds: dict[str, dict[str, Any]]) -> JsonObj:
        page = people[pos : pos + limit]
        has_more = pos + limit < len(people)
        next_cursor = page[-1]["user_id"] if has_more and page else None
        if "empty_has_more" in kinds:  # a new cursor, to the same place
            page, has_more, next_cursor = [], True, _AGAIN + (sent or "")
        elif "repeat_cursor" in kinds and sent:
            has_more, next_cursor = True, sent
        facts = req.dataset.day_facts(end)
        data = [rows.user_row(facts, u) for u in page]
        if "duplicate_row" in kinds and data:  # a service defect: one row twice on a page
            data.insert(1, data[0])
        meta = _meta(start, end, has_more=has_more, next_cursor=next_cursor)
        return {"data": data, "meta": meta}

    return faulted(req, "analytics", pos // limit + 1, build)
