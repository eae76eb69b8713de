"""The emulator's endpoints as plain functions: a parsed request in, a `Reply` out.

Covers the enterprise-controls history (opaque cursor, revision descending), readiness reports
(`startAfter` paging, no has-more flag) and computers; analytics lives in `endpoints_analytics`.
Faults armed on the `FaultController` are applied here, page by page.
"""

from __future__ import annotations

import base64
import binascii
import bisect
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from email.utils import format_datetime
from http import HTTPStatus
from typing import Any

import orjson

from auditor.emulator.data import Dataset
from auditor.emulator.data_common import JsonObj
from auditor.emulator.faults import STATUS_KINDS, Fault, FaultController

PRIVILEGED = frozenset({"owner", "manager"})
SSO_PAGE = (
    b"<!DOCTYPE html><html><head><title>Sign in - Acme SSO</title></head><body>"
    b"<form method='post' action='/sso/login'><input name='username'><input name='password' "
    b"type='password'><button>Sign in</button></form></body></html>"
)
GATEWAY_PAGE = (
    b"<html><head><title>502 Bad Gateway</title></head><body><center><h1>502 Bad Gateway</h1>"
    b"</center><hr><center>nginx</center></body></html>"
)
NOT_AN_OBJECT = '{"sessionRetentionDays": 30}'
_DIGITS = re.compile(r"[0-9]+")


@dataclass
class Reply:
    """An HTTP response to send."""

    status: int
    body: bytes
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)


class Problem(Exception):
    """An error the endpoint answers with a problem body."""

    def __init__(self, status: int, detail: str, headers: Mapping[str, str] | None = None) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.headers = dict(headers or {})


@dataclass
class Request:
    """What an endpoint needs: the parsed query, path parameters, caller role and state."""

    query: dict[str, str]
    dataset: Dataset
    faults: FaultController
    role: str = "owner"
    path_params: dict[str, str] = field(default_factory=dict)


def problem_body(flavor: str, status: int, detail: str, request_id: str) -> bytes:
    """A problem body: v0 `{detail,status,title,metadata}`, v1 `{title,detail,status,requestId}`."""
    title = HTTPStatus(status).phrase
    if flavor == "v0":
        body: JsonObj = {
            "detail": detail,
            "status": status,
            "title": title,
            "metadata": {"requestId": request_id},
        }
    else:
        body = {"title": title, "detail": detail, "status": status, "requestId": request_id}
    return orjson.dumps(body)


def int_param(query: Mapping[str, str], name: str, default: int, maximum: int | None) -> int:
    """A positive integer query parameter (digits only, 1..maximum) or a 400 problem."""
    text = query.get(name)
    if text is None:
        return default
    bounds = f"1 to {maximum}" if maximum else "a positive integer"
    if not _DIGITS.fullmatch(text) or not 1 <= int(text) <= (maximum or int(text)):
        raise Problem(400, f"Invalid query parameter '{name}': must be an integer from {bounds}")
    return int(text)


def _retry_after(fault: Fault, now: datetime) -> dict[str, str]:
    seconds = int(fault.params.get("retry_after", 1))
    if fault.params.get("retry_after_date"):
        return {"Retry-After": format_datetime(now + timedelta(seconds=seconds), usegmt=True)}
    if fault.kind == "429" or "retry_after" in fault.params:
        return {"Retry-After": str(seconds)}
    return {}


def _status_fault(fault: Fault, now: datetime) -> Reply:
    if fault.kind == "502":
        return Reply(502, GATEWAY_PAGE, "text/html")
    detail = {
        "429": "Rate limit exceeded, retry later",
        "500": "Internal server error",
        "503": "Service temporarily unavailable",
    }[fault.kind]
    raise Problem(int(fault.kind), detail, _retry_after(fault, now))


Builder = Callable[[dict[str, dict[str, Any]]], JsonObj]


def faulted(req: Request, endpoint: str, page: int, build: Builder) -> Reply:
    """Apply the faults armed for this page around `build(paging_faults)`."""
    faults = req.faults.take(endpoint, page)
    for fault in faults:
        if fault.kind == "delay":
            time.sleep(float(fault.params.get("seconds", 1.0)))
    kinds = {f.kind: f.params for f in faults}
    for fault in faults:
        if fault.kind in STATUS_KINDS:
            return _status_fault(fault, req.dataset.now)
    if "wrong_content_type" in kinds:
        return Reply(200, SSO_PAGE, "text/html; charset=utf-8")
    body = orjson.dumps(build(kinds))
    if "truncated_json" in kinds:
        body = body[: max(1, len(body) // 2)]
    return Reply(200, body)


@dataclass(frozen=True)
class Cursor:
    """Position in the history: revisions below `revision` (or at or below, when inclusive)."""

    revision: int
    page: int
    mode: str = "x"  # x: exclusive, i: inclusive (duplicate), c: inclusive with altered copy

    def encode(self) -> str:
        """The opaque form sent to clients."""
        raw = f"h1:{self.revision}:{self.page}:{self.mode}".encode()
        return base64.urlsafe_b64encode(raw).decode().rstrip("=")

    @staticmethod
    def decode(text: str) -> Cursor:
        """Parse a cursor from a client, or raise a 400 problem."""
        try:
            raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)).decode()
            tag, revision, page, mode = raw.split(":")
            if tag != "h1" or mode not in ("x", "i", "c"):
                raise ValueError(raw)
            return Cursor(int(revision), int(page), mode)
        except (ValueError, UnicodeDecodeError, binascii.Error) as exc:
            raise Problem(
                400, "Invalid query parameter 'cursor': unknown or expired cursor"
            ) from exc


def _conflicting(change: JsonObj) -> JsonObj:
    settings = change["settings"] if isinstance(change["settings"], dict) else {}
    days = settings.get("sessionRetentionDays")
    altered = {**settings, "sessionRetentionDays": (days if isinstance(days, int) else 30) + 1}
    return {**change, "settings": altered}


def _history_slice(
    ds: Dataset, limit: int, cursor: Cursor | None
) -> tuple[list[JsonObj], bool, int]:
    with ds.lock:
        history = ds.history
        top = history[-1]["revision"] + 1 if history else 1
        end = len(history)
        if cursor is not None:
            find = bisect.bisect_right if cursor.mode != "x" else bisect.bisect_left
            end = find(history, cursor.revision, key=lambda c: int(c["revision"]))
        start = max(0, end - limit)
        items = history[start:end][::-1]
    if (
        cursor is not None
        and cursor.mode == "c"
        and items
        and items[0]["revision"] == cursor.revision
    ):
        items[0] = _conflicting(items[0])
    return items, start > 0, top


def _history_page(
    ds: Dataset, limit: int, raw: str | None, kinds: dict[str, dict[str, Any]]
) -> JsonObj:
    cursor = Cursor.decode(raw) if raw else None
    page = cursor.page if cursor else 1
    items, has_more, top = _history_slice(ds, limit, cursor)
    next_cursor = Cursor(items[-1]["revision"], page + 1).encode() if has_more else None
    if "empty_has_more" in kinds:
        same = cursor or Cursor(top, page)
        items, has_more, next_cursor = [], True, Cursor(same.revision, page + 1, same.mode).encode()
    elif "repeat_cursor" in kinds:
        has_more, next_cursor = True, raw or Cursor(top, 1).encode()
    for kind, mode in (("duplicate_revision", "i"), ("conflicting_revision", "c")):
        if kind in kinds and items:
            has_more, next_cursor = True, Cursor(items[-1]["revision"], page + 1, mode).encode()
    if "settings_not_object" in kinds and items:
        items[0] = {
            **items[0],
            "settings": kinds["settings_not_object"].get("value", NOT_AN_OBJECT),
        }
    return {"changes": items, "pagination": {"hasMore": has_more, "nextCursor": next_cursor}}


def history(req: Request) -> Reply:
    """GET /api/v0/organization/enterprise-controls/history."""
    limit = int_param(req.query, "limit", 20, 100)
    raw = req.query.get("cursor") or None
    page = Cursor.decode(raw).page if raw else 1
    return faulted(
        req, "history", page, lambda kinds: _history_page(req.dataset, limit, raw, kinds)
    )


def _matches_repo(repo_url: str, repo_id: str) -> bool:
    return repo_url == repo_id or repo_url.rstrip("/").endswith("/" + repo_id.strip("/"))


def reports(req: Request) -> Reply:
    """GET /api/organization/agent-readiness-reports (app address)."""
    limit = int_param(req.query, "limit", 20, None)
    cap = req.dataset.report_limit_cap
    if cap is not None:
        limit = min(limit, cap)
    ordered, positions = req.dataset.reports_newest_first()
    repo_id = req.query.get("repoId")
    if repo_id:
        ordered = [r for r in ordered if _matches_repo(r["repoUrl"], repo_id)]
        positions = {r["reportId"]: i for i, r in enumerate(ordered)}
    after = req.query.get("startAfter")
    if after and after not in positions:
        raise Problem(400, "Invalid query parameter 'startAfter': unknown report id")
    pos = positions[after] + 1 if after else 0

    def build(kinds: dict[str, dict[str, Any]]) -> JsonObj:
        if "empty_has_more" in kinds:
            return {"reports": []}
        first = 0 if "repeat_cursor" in kinds else pos
        return {"reports": ordered[first : first + limit]}

    return faulted(req, "reports", pos // limit + 1, build)


def computer(req: Request) -> Reply:
    """GET /api/v0/computers/{computerId}."""
    wanted = req.path_params["computerId"]
    found = next((c for c in req.dataset.computers if c["id"] == wanted), None)
    if found is None:
        raise Problem(404, f"Computer {wanted} not found")
    if found["ownerPrincipalKind"] != "user" and req.role not in PRIVILEGED:
        raise Problem(403, "Reading service-account computers requires the manager role or higher")
    return faulted(req, "computers", 1, lambda kinds: found)
