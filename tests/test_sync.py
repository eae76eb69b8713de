"""Sync, `auditor sync` and `auditor export`: against in-process fakes and the real emulator."""

from __future__ import annotations

import functools
import hashlib
import io
import json
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from auditor.cli import Context, main
from auditor.errors import ApiError, DataError
from auditor.fetch import HISTORY_PATH, PlatformClient, paging
from auditor.store.database import Store
from auditor.workflows.sync import format_summary, sync

NOW = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
TOKEN = "tok-Qx7distinctive-sync-42aa"
API_KEY = "sk-live0123456789abcdefghij"


class FakeService:
    """A small in-memory service: history revisions 1..n (newest first) and readiness reports."""

    def __init__(self, revisions: int, reports: int = 0) -> None:
        self.revisions: dict[int, dict[str, Any]] = {}
        self.add_revisions(revisions)
        self.reports = [self._report(n) for n in range(reports)]
        self.requests: list[httpx.Request] = []
        self.fail_at: dict[int, httpx.Response] = {}  # request index → response

    def add_revisions(self, n: int) -> None:
        start = len(self.revisions) + 1
        for rev in range(start, start + n):
            self.revisions[rev] = {
                "revision": rev,
                "settings": {"customModels": [{"id": "c", "apiKey": API_KEY}], "n": rev},
                "user": {"id": "u", "email": f"user{rev}@corp.example", "name": "U"},
                "updatedAt": f"2026-10-{1 + rev % 28:02d}T08:00:00Z",
            }

    @staticmethod
    def _report(n: int) -> dict[str, Any]:
        return {
            "reportId": f"r{n:04d}",
            "createdAt": 1_790_000_000_000 - n,
            "repoUrl": f"https://git/repo{n % 4}",
            "report": {"lint": {"numerator": 1, "denominator": 1, "rationale": "ok"}},
        }

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        if len(self.requests) - 1 in self.fail_at:
            return self.fail_at[len(self.requests) - 1]
        limit = int(request.url.params["limit"])
        if request.url.path == HISTORY_PATH:
            return self._history(limit, int(request.url.params.get("cursor", "0")))
        after = request.url.params.get("startAfter")
        ids = [r["reportId"] for r in self.reports]
        start = ids.index(after) + 1 if after else 0
        return httpx.Response(200, json={"reports": self.reports[start : start + limit]})

    def _history(self, limit: int, start: int) -> httpx.Response:
        numbers = sorted(self.revisions, reverse=True)
        page = [self.revisions[r] for r in numbers[start : start + limit]]
        more = start + limit < len(numbers)
        pagination = {"hasMore": more, "nextCursor": str(start + limit) if more else None}
        return httpx.Response(200, json={"changes": page, "pagination": pagination})

    def history_requests(self) -> int:
        return sum(r.url.path == HISTORY_PATH for r in self.requests)


def client_for(service: FakeService, *, app: bool = True) -> PlatformClient:
    return PlatformClient(
        base_url="https://svc.test",
        app_url="https://app.test" if app else None,
        token=TOKEN,
        page_size=10,
        transport=httpx.MockTransport(service),
        sleep=lambda _s: None,
    )


@pytest.fixture
def store(state_path: Path) -> Iterator[Store]:
    with Store.open(state_path) as s:
        s.register_secret(TOKEN)
        yield s


def run_sync(store: Store, service: FakeService, **kw: Any) -> Any:
    with client_for(service, **kw) as client:
        return sync(store, client, clock=lambda: NOW)


def test_first_sync_stores_everything_redacted(store: Store) -> None:
    service = FakeService(25, reports=12)
    summary = run_sync(store, service)
    assert (summary.revisions_new, summary.revisions_total) == (25, 25)
    assert (summary.reports_new, summary.reports_total, summary.repositories) == (12, 12, 4)
    assert summary.pages == 3 + 2
    latest = store.latest_revision()
    assert latest is not None and latest.revision == 25
    assert latest.settings["customModels"][0]["apiKey"].startswith("[secret fp:")
    record = store.last_sync()
    assert record is not None and record.revisions_new == 25


class _Timed(FakeService):
    """Answers after `delay` seconds, and records which thread asked for each history page."""

    def __init__(self, revisions: int, delay: float) -> None:
        super().__init__(revisions)
        self.delay = delay
        self.threads: list[bool] = []  # per history request: asked from the main thread?

    def __call__(self, request: httpx.Request) -> httpx.Response:
        if request.url.path == HISTORY_PATH:
            self.threads.append(threading.current_thread() is threading.main_thread())
        time.sleep(self.delay)
        return super().__call__(request)


def test_a_service_that_keeps_requests_waiting_gets_the_next_page_asked_for_ahead(
    store: Store,
) -> None:
    """Against a slow service the next page travels while this one is stored: every page
    after the first is asked for from the thread that fetches ahead."""
    service = _Timed(45, delay=0.05)
    summary = run_sync(store, service, app=False)
    assert summary.revisions_new == 45
    assert service.threads == [True, False, False, False, False]


def test_a_service_that_answers_at_once_is_paged_from_one_thread(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No second thread where there is no waiting to hide (it would cost the sync more CPU in
    handing the interpreter lock back and forth than it saves), and every revision arrives.
    (The bar is raised from 10 ms to 1 s here: an in-process answer is instant, but a busy
    machine may hold the test's thread off the CPU for 10 ms.)"""
    monkeypatch.setattr(paging, "WAIT_WORTH_HIDING", 1.0)
    service = _Timed(45, delay=0)
    summary = run_sync(store, service, app=False)
    assert summary.revisions_new == 45
    assert service.threads == [True] * 5
    assert store.revision_numbers() == list(range(1, 46))


def test_second_sync_fetches_only_the_first_history_page(store: Store) -> None:
    service = FakeService(25, reports=12)
    run_sync(store, service)
    service.add_revisions(3)
    service.requests.clear()
    summary = run_sync(store, service)
    assert service.history_requests() == 1
    assert (summary.revisions_new, summary.revisions_total) == (3, 28)
    assert summary.reports_new == 0
    assert store.revision_numbers() == list(range(1, 29))


def test_sync_with_nothing_new_is_one_request_per_endpoint(store: Store) -> None:
    service = FakeService(25, reports=25)
    run_sync(store, service)
    service.requests.clear()
    summary = run_sync(store, service)
    assert (summary.revisions_new, summary.reports_new, len(service.requests)) == (0, 0, 2)


def test_failure_midway_keeps_the_new_pages_aside_and_says_what_it_got(store: Store) -> None:
    service = FakeService(25)
    run_sync(store, service)
    before = [(r.revision, r.content_hash) for r in store.iter_revisions()]
    service.add_revisions(30)
    service.requests.clear()
    problem = {"status": 403, "title": "Forbidden", "detail": f"bad key {TOKEN}"}
    service.fail_at[2] = httpx.Response(403, json=problem)
    with pytest.raises(ApiError) as info:
        run_sync(store, service)
    message = str(info.value)
    assert message.startswith(
        "sync failed, kept 2 pages (20 revisions); the next sync continues from there "
        "(fetched 2 history pages / 20 revisions and 0 report pages"
    )
    assert "→ 403 Forbidden: bad key" in message and TOKEN not in message
    # the pages kept are no history: the stored revisions and the last sync are as they were
    assert [(r.revision, r.content_hash) for r in store.iter_revisions()] == before
    assert store.last_sync() is not None and store.last_sync().revisions_new == 25  # type: ignore[union-attr]
    # the next sync reads the head page, meets the kept pages, and goes on after them
    service.fail_at.clear()
    service.requests.clear()
    summary = run_sync(store, service)
    assert (summary.revisions_new, summary.revisions_total) == (30, 55)
    # the head (it meets the kept pages), the last kept page again (it must come back the same),
    # then the two after it (the second meets the stored revisions)
    assert service.history_requests() == 4
    assert store.revision_numbers() == list(range(1, 56))


def test_changed_known_revision_is_reported_not_overwritten(store: Store) -> None:
    service = FakeService(5)
    run_sync(store, service)
    original = store.get_revision(5)
    service.revisions[5]["settings"]["n"] = "tampered"
    service.add_revisions(2)
    summary = run_sync(store, service)
    [issue] = summary.integrity_issues
    assert issue.revision == 5 and original is not None
    assert issue.stored_hash == original.content_hash != issue.seen_hash
    assert store.get_revision(5) == original
    assert store.integrity_issues() == [issue]
    text = format_summary(summary, "https://svc.test")
    assert "1 integrity issue." in text and "revision 5 changed after it was stored" in text


def test_one_listing_contradicting_itself_is_an_error(store: Store) -> None:
    service = FakeService(15)
    clash = json.loads(json.dumps(service.revisions[12]))
    clash["settings"]["n"] = "other"
    real = service._history

    def history_with_clash(limit: int, start: int) -> httpx.Response:
        response = real(limit, start)
        if start == 0:
            return response
        body = json.loads(response.content)
        body["changes"].insert(0, clash)
        return httpx.Response(200, json=body)

    service._history = history_with_clash  # type: ignore[method-assign]
    with pytest.raises(DataError) as caught:
        run_sync(store, service)
    # named as every other page error is: its JSON path and the request (tester T62 LOW-3)
    assert str(caught.value).endswith(
        "$.changes[0]: the API sent revision 12 (history page 2) twice in one listing with "
        "different content; cannot tell which is true "
        f"(GET https://svc.test{HISTORY_PATH} page 2)"
    )
    assert store.count_revisions() == 0


def test_a_report_sent_twice_with_other_content_names_its_path_and_request(store: Store) -> None:
    service = FakeService(3, reports=3)
    clash = json.loads(json.dumps(service.reports[0]))
    clash["repoUrl"] = "https://git/other"
    service.reports.insert(1, clash)
    with pytest.raises(DataError) as caught:
        run_sync(store, service)
    assert str(caught.value).endswith(
        "$.reports[1]: the API sent report r0000 (readiness page 1) twice in one listing with "
        "different content; cannot tell which is true "
        f"(GET https://app.test{paging.REPORTS_PATH} page 1)"
    )


def _reordered(service: FakeService, edit: Any) -> None:
    """Let `edit(start, body)` change each history page's body as the service sends it."""
    real = service._history

    def history(limit: int, start: int) -> httpx.Response:
        body = json.loads(real(limit, start).content)
        edit(start, body)
        return httpx.Response(200, json=body)

    service._history = history  # type: ignore[method-assign]


def test_a_history_that_is_not_newest_first_fails_the_sync(store: Store) -> None:
    """Revisions 30..21 then 10..1 then 20..11: the sync stops at the first stored revision,
    so taking this order would have lost 11..20 on a later sync; it was accepted, exit 0."""
    service = FakeService(30)
    slices = {0: range(30, 20, -1), 10: range(10, 0, -1), 20: range(20, 10, -1)}

    def swap(start: int, body: dict[str, Any]) -> None:
        body["changes"] = [service.revisions[r] for r in slices[start]]

    _reordered(service, swap)
    with pytest.raises(DataError) as info:
        run_sync(store, service)
    assert str(info.value) == (
        "sync failed, kept 2 pages (20 revisions); the next sync continues from there (fetched "
        "2 history pages / 20 revisions and 0 report pages "
        "/ 0 reports before): $.changes[0].revision: 20 after revision 1: the history is not "
        f"newest first, so a sync cannot tell what it has (GET https://svc.test{HISTORY_PATH} "
        "page 3)"
    )
    assert store.count_revisions() == 0


def test_paging_that_only_repeats_revisions_is_stopped(store: Store) -> None:
    """Each page repeats revision 5 under a new cursor: it paged until the deadline."""

    def same_page(start: int, body: dict[str, Any]) -> None:
        body["changes"] = body["changes"][:1]
        body["pagination"] = {"hasMore": True, "nextCursor": str(start + 1)}

    service = FakeService(5)
    real = service._history
    service._history = lambda limit, start: real(limit, 0)  # type: ignore[method-assign]
    _reordered(service, same_page)
    with pytest.raises(DataError, match=r"history page 2 only repeated revisions sent on"):
        run_sync(store, service)
    assert service.history_requests() <= 4 and store.count_revisions() == 0  # one ahead


def test_an_overlapping_page_is_still_read(store: Store) -> None:
    """A page that starts with the previous page's last revision (offset paging while new
    revisions arrive) is no error."""

    def overlap(start: int, body: dict[str, Any]) -> None:
        if start:
            body["changes"].insert(0, service.revisions[31 - start])

    service = FakeService(30)
    _reordered(service, overlap)
    assert run_sync(store, service).revisions_new == 30


def test_a_history_that_went_back_is_a_warning_and_keeps_what_is_stored(store: Store) -> None:
    """The service's newest revision is now older than the newest stored: it was silent."""
    service = FakeService(25)
    run_sync(store, service)
    for rev in (25, 24):
        del service.revisions[rev]
    summary = run_sync(store, service)
    assert summary.revisions_total == 25 and summary.latest.revision == 25
    assert [w.describe() for w in summary.data_quality] == [
        "$.changes[0].revision: the service's newest revision is 23, but revision 25 is "
        "stored: its history went back; the stored revisions are kept and audited "
        f"(revision 23, GET https://svc.test{HISTORY_PATH} page 1)"
    ]


def test_bad_timestamp_names_path_and_page(store: Store) -> None:
    service = FakeService(15)
    service.revisions[3]["updatedAt"] = "last tuesday"
    with pytest.raises(DataError) as info:
        run_sync(store, service)
    assert str(info.value).endswith(
        "$.changes[2].updatedAt: not an ISO-8601 date-time "
        f"(GET https://svc.test{HISTORY_PATH} page 2)"
    )
    assert store.count_revisions() == 0


def test_without_app_url_reports_are_skipped(store: Store) -> None:
    summary = run_sync(store, FakeService(3, reports=5), app=False)
    assert summary.reports_skipped and summary.reports_total == 0
    text = format_summary(summary, "https://svc.test")
    assert text.startswith("Synced https://svc.test: 3 revisions (3 new), latest rev 3 at ")
    assert "by user3@corp.example; readiness reports skipped (no app URL configured); 0 " in text


def test_a_revision_whose_user_is_no_object_is_summed_up_without_a_by(store: Store) -> None:
    """A `user` given as a string is read as absent (a data-quality warning): the summary said
    `… at 2026-10-04 by ;`."""
    service = FakeService(3)
    service.revisions[3]["user"] = "someone"
    text = format_summary(run_sync(store, service, app=False), "https://svc.test")
    assert ", latest rev 3 at 2026-10-04; readiness reports skipped" in text, text


# -- the command line ----------------------------------------------------------------------


@pytest.fixture(autouse=True)
def _only_data_commands(monkeypatch: pytest.MonkeyPatch) -> None:
    """Build the parser from this part's commands, so the tests do not hinge on other commands."""
    monkeypatch.setattr("auditor.cli.COMMANDS", ("sync", "export"))


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def cli(
    tmp_path: Path, *argv: str, env: dict[str, str] | None = None, stderr: io.StringIO | None = None
) -> tuple[int, str, str]:
    out, err = io.StringIO(), stderr or io.StringIO()
    ctx = Context(
        env=env if env is not None else {"AUDITOR_TOKEN": TOKEN},
        stdout=out,
        stderr=err,
        clock=lambda: NOW,
        cwd=str(tmp_path),
    )
    code = main(list(argv), ctx)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def fake_cli(monkeypatch: pytest.MonkeyPatch) -> FakeService:
    service = FakeService(25, reports=6)
    patched = functools.partial(
        PlatformClient, transport=httpx.MockTransport(service), sleep=lambda _s: None
    )
    monkeypatch.setattr("auditor.workflows.sync.PlatformClient", patched)
    return service


def test_cli_sync_summary_on_stdout_progress_only_on_terminal(
    tmp_path: Path, fake_cli: FakeService
) -> None:
    args = ("sync", "--no-usage", "--base-url", "https://svc.test", "--app-url", "https://app.test")
    code, out, err = cli(tmp_path, *args)
    assert (code, err) == (0, "")
    assert out.startswith("Synced https://svc.test: 25 revisions (25 new), latest rev 25 at ")
    assert "6 readiness reports (6 new) for 4 repositories; 0 integrity issues." in out
    assert (tmp_path / ".auditor" / "state.db").exists()
    terminal = Terminal()
    code, out, _ = cli(tmp_path, *args, stderr=terminal)
    assert code == 0 and "history: page 1" in terminal.getvalue()
    assert "25 revisions (0 new)" in out


@pytest.mark.parametrize(
    ("argv", "env", "message"),
    [
        pytest.param(("sync",), {"AUDITOR_TOKEN": TOKEN}, "no service address", id="no-url"),
        pytest.param(("sync", "--base-url", "https://svc.test"), {}, "no API token", id="no-token"),
        pytest.param(
            ("sync", "--base-url", "gopher://x"),
            {"AUDITOR_TOKEN": TOKEN},
            "expected an http:// or https:// URL",
            id="bad-url",
        ),
    ],
)
def test_cli_sync_configuration_errors(
    tmp_path: Path, argv: tuple[str, ...], env: dict[str, str], message: str
) -> None:
    code, out, err = cli(tmp_path, *argv, env=env)
    assert (code, out) == (2, "")
    assert err.startswith("auditor: error: ") and message in err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_cli_sync_api_error_exits_2_without_the_token(
    tmp_path: Path, fake_cli: FakeService
) -> None:
    problem = {"status": 401, "title": "Unauthorized", "detail": f"invalid key {TOKEN}"}
    fake_cli.fail_at[0] = httpx.Response(401, json=problem)
    code, out, err = cli(tmp_path, "sync", "--base-url", "https://svc.test")
    assert (code, out) == (2, "")
    assert "→ 401 Unauthorized: invalid key [token]" in err  # as README says of every error
    assert TOKEN not in err and err.count("\n") == 1


def test_cli_sync_refuses_a_locked_state_file(tmp_path: Path, fake_cli: FakeService) -> None:
    state = tmp_path / "s.db"
    with Store.open(state):
        code, _, err = cli(
            tmp_path, "sync", "--base-url", "https://svc.test", "--state", str(state)
        )
    assert code == 2
    assert f"state file {state} is locked by another auditor run (pid " in err
    assert fake_cli.requests == []


def test_cli_export_writes_a_bundle_with_a_manifest(tmp_path: Path, fake_cli: FakeService) -> None:
    assert (
        cli(
            tmp_path,
            "sync",
            "--no-usage",
            "--base-url",
            "https://svc.test",
            "--app-url",
            "https://app.test",
        )[0]
        == 0
    )
    code, out, err = cli(tmp_path, "export", "--out", "bundle")
    assert (code, err) == (0, "")
    assert "25 revisions, 6 readiness reports, 0 integrity issues" in out
    bundle = tmp_path / "bundle"
    manifest = json.loads((bundle / "manifest.json").read_text())
    listed = set(manifest["files"])
    assert {"revisions.jsonl", "reports.jsonl", "integrity.json", "revisions.csv"} <= listed
    for name, entry in manifest["files"].items():
        assert hashlib.sha256((bundle / name).read_bytes()).hexdigest() == entry["sha256"]
        assert (bundle / name).stat().st_size == entry["bytes"]
    on_disk = {p.relative_to(bundle).as_posix() for p in bundle.rglob("*") if p.is_file()}
    assert on_disk == listed | {"manifest.json"}  # no temporary files left behind
    lines = (bundle / "revisions.jsonl").read_text().splitlines()
    assert [json.loads(line)["revision"] for line in lines] == list(range(1, 26))
    everything = b"".join(p.read_bytes() for p in bundle.rglob("*") if p.is_file())
    assert API_KEY.encode() not in everything and TOKEN.encode() not in everything


def test_cli_export_without_state_file(tmp_path: Path) -> None:
    code, _, err = cli(tmp_path, "export")
    assert code == 2 and "run `auditor sync` first" in err


# -- against the real emulator over HTTP -----------------------------------------------------

OK, FAIL = "completes", "exit 2"

FAULTS = [
    pytest.param("history", "429", {"retry_after": 1}, OK, "", id="history-429"),
    pytest.param("history", "429", {"retry_after_date": True}, OK, "", id="history-429-date"),
    pytest.param(
        "history",
        "500",
        {},
        FAIL,
        "→ 500 Internal Server Error: Internal server error",
        id="history-500",
    ),
    pytest.param("history", "502", {}, OK, "", id="history-502"),
    pytest.param("history", "503", {}, OK, "", id="history-503"),
    pytest.param("history", "delay", {"seconds": 0.5}, OK, "", id="history-delay"),
    pytest.param("history", "truncated_json", {}, FAIL, "invalid JSON", id="history-truncated"),
    pytest.param(
        "history",
        "wrong_content_type",
        {},
        FAIL,
        "expected JSON, got text/html",
        id="history-wrong-content-type",
    ),
    pytest.param(
        "history",
        "repeat_cursor",
        {},
        FAIL,
        "repeated an earlier cursor",
        id="history-repeat-cursor",
    ),
    # an empty page with hasMore and a new cursor is followed (T15 #5): nothing is lost
    pytest.param("history", "empty_has_more", {}, OK, "", id="history-empty-has-more"),
    pytest.param("history", "duplicate_revision", {}, OK, "", id="history-duplicate"),
    pytest.param(
        "history",
        "conflicting_revision",
        {},
        FAIL,
        "twice in one listing",
        id="history-conflicting",
    ),
    pytest.param(
        "history",
        "settings_not_object",
        {},
        FAIL,
        "$.changes[0].settings: expected object, got string",
        id="history-not-object",
    ),
    pytest.param("reports", "429", {}, OK, "", id="reports-429"),
    pytest.param("reports", "500", {}, FAIL, "→ 500 Internal Server Error", id="reports-500"),
    pytest.param("reports", "502", {}, OK, "", id="reports-502"),
    pytest.param("reports", "503", {"retry_after": 2}, OK, "", id="reports-503"),
    pytest.param("reports", "delay", {"seconds": 0.5}, OK, "", id="reports-delay"),
    pytest.param("reports", "truncated_json", {}, FAIL, "invalid JSON", id="reports-truncated"),
    pytest.param(
        "reports",
        "wrong_content_type",
        {},
        FAIL,
        "expected JSON, got text/html",
        id="reports-wrong-content-type",
    ),
    pytest.param(
        "reports", "repeat_cursor", {}, FAIL, "paging would loop", id="reports-repeat-cursor"
    ),
    # reports:empty_has_more is not listed: the readiness endpoint has no has-more flag, so an
    # empty page is, by the API's own contract, the end of the listing.
]

# What each failing fault keeps. The history case: 30 new revisions on a stored state, the
# fault on page 2. A page the service answers wrong keeps the complete pages before it (1);
# a repeated cursor is seen when page 3 is asked for (2); a conflicting revision fails once a
# page meets the stored history, in the sync's transaction, after the pages before it were kept
# (2). The reports case: a first sync, whose whole history (6 pages) is kept before the
# readiness listing fails.
KEPT = {
    ("history", "500"): "kept 1 page (10 revisions)",
    ("history", "truncated_json"): "kept 1 page (10 revisions)",
    ("history", "wrong_content_type"): "kept 1 page (10 revisions)",
    ("history", "repeat_cursor"): "kept 2 pages (20 revisions)",
    ("history", "conflicting_revision"): "kept 2 pages (20 revisions)",
    ("history", "settings_not_object"): "kept 1 page (10 revisions)",
    **{
        ("reports", kind): "kept 6 pages (60 revisions)"
        for kind in ("500", "truncated_json", "wrong_content_type", "repeat_cursor")
    },
}

EMU_TOKEN = "test-owner-token-0123456789"  # as tests/conftest.py OWNER_TOKEN
MEMBER_TOKEN = "test-member-token-0123456789"


@pytest.fixture
def small_emulator() -> Iterator[Any]:
    """A real emulator with a small dataset (60 revisions, 8 repositories): fast fault tests."""
    from auditor.emulator import start_emulator

    emu = start_emulator(
        revisions=60, repos=8, tokens={EMU_TOKEN: "owner", MEMBER_TOKEN: "member"}, now=NOW
    )
    try:
        yield emu
    finally:
        emu.stop()


def emu_client(emu: Any, **kw: Any) -> PlatformClient:
    options: dict[str, Any] = {
        "base_url": emu.base_url,
        "app_url": emu.app_url,
        "token": EMU_TOKEN,
        "page_size": 10,
        "timeout": 0.4,
        "sleep": lambda _s: None,
    }
    options.update(kw)
    return PlatformClient(**options)


def emu_sync(store: Store, emu: Any) -> Any:
    with emu_client(emu) as client:
        return sync(store, client, clock=lambda: NOW)


def snapshot(store: Store) -> tuple[Any, ...]:
    revisions = [(r.revision, r.content_hash) for r in store.iter_revisions()]
    reports = [(r.report_id, r.content_hash) for r in store.iter_reports()]
    return revisions, reports, store.integrity_issues(), store.last_sync()


@pytest.mark.parametrize(("endpoint", "kind", "params", "outcome", "message"), FAULTS)
def test_emulator_faults(
    small_emulator: Any,
    state_path: Path,
    endpoint: str,
    kind: str,
    params: dict[str, Any],
    outcome: str,
    message: str,
) -> None:
    emu = small_emulator
    expected_reports = sorted(r["reportId"] for r in emu.dataset.reports)
    with Store.open(state_path) as store:
        if endpoint == "history":  # a stored state, then enough news for several pages
            emu_sync(store, emu)
            emu.add_revisions(30)
        before = snapshot(store)
        emu.faults.add(endpoint, kind, page=2, **params)
        if outcome == OK:
            summary = emu_sync(store, emu)
            latest = store.latest_revision()
            assert latest is not None
            assert store.revision_numbers() == list(range(1, latest.revision + 1))
            assert summary.revisions_total == latest.revision >= 60
            assert sorted(r.report_id for r in store.iter_reports()) == expected_reports
        else:
            with pytest.raises((ApiError, DataError)) as info:
                emu_sync(store, emu)
            # (the new history pages read before the fault are kept aside, never as history)
            kept = KEPT[endpoint, kind]
            assert str(info.value).startswith(
                f"sync failed, {kept}; the next sync continues from there (fetched "
            ), str(info.value)
            assert message in str(info.value)
            assert EMU_TOKEN not in str(info.value)
            assert snapshot(store) == before
    assert any(f[1] == kind for f in emu.faults.fired), "the fault never fired"


def test_emulator_incremental_sync_is_one_history_request(
    small_emulator: Any, state_path: Path
) -> None:
    emulator = small_emulator
    with Store.open(state_path) as store:
        first = emu_sync(store, emulator)
        emulator.add_revisions(3)
        emulator.requests.clear()
        second = emu_sync(store, emulator)
    history = [r for r in emulator.requests if HISTORY_PATH in str(r)]
    assert len(history) == 1
    assert (second.revisions_new, second.revisions_total) == (3, first.revisions_total + 3)


def test_emulator_secrets_never_reach_the_state_file(small_emulator: Any, state_path: Path) -> None:
    canaries = small_emulator.dataset.plant_canaries()
    api_keys = {
        model["apiKey"]
        for change in small_emulator.dataset.history
        for model in change["settings"].get("customModels", [])
        if isinstance(model.get("apiKey"), str) and not model["apiKey"].startswith("$")
    }
    assert canaries and api_keys
    with Store.open(state_path) as store:
        emu_sync(store, small_emulator)
    raw = state_path.read_bytes()
    for secret in [EMU_TOKEN, *canaries, *api_keys]:
        assert secret.encode() not in raw, secret


def test_emulator_cli_sync_and_member_token(
    small_emulator: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    emulator = small_emulator
    patched = functools.partial(PlatformClient, sleep=lambda _s: None)
    monkeypatch.setattr("auditor.workflows.sync.PlatformClient", patched)
    env = {
        "AUDITOR_BASE_URL": emulator.base_url,
        "AUDITOR_APP_URL": emulator.app_url,
        "AUDITOR_TOKEN": EMU_TOKEN,
    }
    code, out, err = cli(tmp_path, "sync", env=env)
    assert (code, err) == (0, "")
    assert out.startswith(f"Synced {emulator.base_url}: 60 revisions (60 new), latest rev 60")
    member = {**env, "AUDITOR_TOKEN": MEMBER_TOKEN, "AUDITOR_STATE": "m.db"}
    code, out, err = cli(tmp_path, "sync", env=member)
    assert (code, out) == (2, "")
    assert f"GET {HISTORY_PATH}?limit=100 → 403" in err
    assert MEMBER_TOKEN not in err and not (tmp_path / "m.db").exists()


# -- secrets and out-of-range data on the sync path ------------------------------------------

GHS = "ghs_abcdefghijklmnopqrstuvwxyz0123"
GHP = "ghp_ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"


def test_tokens_in_identity_fields_never_reach_the_state_file(
    store: Store, state_path: Path
) -> None:
    service = FakeService(3, reports=2)
    service.reports[0]["repoUrl"] = f"https://x-access-token:{GHS}@github.com/o/r"
    service.revisions[2]["user"]["name"] = f"deploy bot {GHP}"
    run_sync(store, service)
    [report] = [r for r in store.iter_reports() if r.report_id == "r0000"]
    assert report.repo_url.endswith("@github.com/o/r") and GHS not in report.repo_url
    name = store.get_revision(2).user.name  # type: ignore[union-attr]
    assert name.startswith("deploy bot [secret fp:")
    store.close()
    raw = state_path.read_bytes()
    assert GHS.encode() not in raw and GHP.encode() not in raw


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        pytest.param("revision", 2**63 + 5, "$.changes[0].revision: expected a whole", id="2^63+5"),
        pytest.param("revision", 1e300, "$.changes[0].revision: expected a whole", id="1e300"),
        pytest.param(
            "updatedAt",
            "0001-01-01T00:00:00+01:00",
            "$.changes[0].updatedAt: not an ISO-8601 date-time",
            id="before-year-1-in-utc",
        ),
    ],
)
def test_cli_sync_out_of_range_values_exit_2_and_change_nothing(
    tmp_path: Path, fake_cli: FakeService, field: str, value: Any, message: str
) -> None:
    args = ("sync", "--no-usage", "--base-url", "https://svc.test", "--state", "s.db")
    assert cli(tmp_path, *args)[0] == 0
    before = (tmp_path / "s.db").read_bytes()
    fake_cli.add_revisions(1)
    fake_cli.revisions[26][field] = value
    code, out, err = cli(tmp_path, *args)
    assert (code, out) == (2, "")
    assert err.startswith("auditor: error: sync failed, nothing saved") and message in err
    assert f"(GET https://svc.test{HISTORY_PATH} page 1)" in err and "Traceback" not in err
    assert (tmp_path / "s.db").read_bytes() == before


def test_failed_first_sync_leaves_no_state_file(tmp_path: Path, fake_cli: FakeService) -> None:
    fake_cli.fail_at[0] = httpx.Response(401, json={"status": 401, "title": "Unauthorized"})
    code, _, err = cli(tmp_path, "sync", "--base-url", "https://svc.test", "--state", "s.db")
    assert code == 2 and "401 Unauthorized" in err
    assert not (tmp_path / "s.db").exists() and not (tmp_path / "s.db.lock").exists()


def test_failed_first_sync_through_a_dangling_symlink_keeps_the_symlink(
    tmp_path: Path, fake_cli: FakeService
) -> None:
    """`--state` a symlink to a file not made yet (a state folder on another disk): the failed
    first sync removes the file it created at the symlink's target and keeps the user's symlink
    (it used to unlink the symlink and leave the empty file behind)."""
    target = tmp_path / "disk" / "s.db"
    target.parent.mkdir()
    link = tmp_path / "s.db"
    link.symlink_to(target)
    fake_cli.fail_at[0] = httpx.Response(401, json={"status": 401, "title": "Unauthorized"})
    code, _, err = cli(tmp_path, "sync", "--base-url", "http://svc.test", "--state", "s.db")
    assert code == 2 and "401 Unauthorized" in err
    assert link.is_symlink() and not target.exists()
    assert not Path(f"{target}.lock").exists()


def test_failed_first_sync_keeps_a_file_another_run_created_meanwhile(
    tmp_path: Path, fake_cli: FakeService, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another run creates the file (and ends) between this sync's look and its lock: the file
    is not this sync's, so its failure leaves it."""
    from auditor.cli.common import open_store as real_open

    state = tmp_path / "s.db"

    def open_after_the_other_run(config: Any, *, create: bool = False) -> Store:
        Store.open(state).close()
        return real_open(config, create=create)

    monkeypatch.setattr("auditor.cli.common.open_store", open_after_the_other_run)
    fake_cli.fail_at[0] = httpx.Response(401, json={"status": 401, "title": "Unauthorized"})
    code, _, err = cli(tmp_path, "sync", "--base-url", "http://svc.test", "--state", str(state))
    assert code == 2 and "401 Unauthorized" in err
    assert state.exists()


def test_run_losing_the_lock_race_keeps_the_winners_new_file(
    tmp_path: Path, fake_cli: FakeService, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another run creates the file and takes the lock just before this one opens it."""
    from auditor.cli.common import open_store as real_open

    state = tmp_path / "s.db"
    winner: list[Store] = []

    def open_after_the_other_run(config: Any, *, create: bool = False) -> Store:
        winner.append(Store.open(state))
        return real_open(config, create=create)

    monkeypatch.setattr("auditor.cli.common.open_store", open_after_the_other_run)
    assert not state.exists()
    code, _, err = cli(tmp_path, "sync", "--base-url", "https://svc.test", "--state", str(state))
    try:
        assert code == 2 and "is locked by another auditor run" in err
        assert state.exists() and Path(f"{state}.lock").exists()
        assert winner[0].count_revisions() == 0  # the winner's file is still usable
    finally:
        winner[0].close()
    assert fake_cli.requests == []


def test_cli_export_of_a_damaged_state_file_is_one_line(
    tmp_path: Path, fake_cli: FakeService
) -> None:
    assert cli(tmp_path, "sync", "--no-usage", "--base-url", "https://svc.test")[0] == 0
    with closing(sqlite3.connect(tmp_path / ".auditor" / "state.db")) as db, db:
        db.execute("UPDATE revisions SET settings = 'not json' WHERE revision = 7")
    code, out, err = cli(tmp_path, "export")
    assert (code, out) == (2, "")
    assert err.startswith("auditor: error: state file ") and "is damaged: " in err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_each_item_is_serialized_once_at_ingestion(
    store: Store, state_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Hashing and storing share one canonical serialization (the hot path of a first sync),
    and the parts of a revision reused from the one before are not serialized again."""
    written: list[int] = []
    real = orjson.dumps

    def counting(*args: Any, **kwargs: Any) -> bytes:
        out = real(*args, **kwargs)
        if kwargs.get("option", 0) & orjson.OPT_SORT_KEYS:  # canonical JSON, not redaction scans
            written.append(len(out))
        return out

    monkeypatch.setattr(orjson, "dumps", counting)
    summary = run_sync(store, FakeService(30, reports=20))
    assert (summary.revisions_new, summary.reports_new) == (30, 20)
    with closing(sqlite3.connect(state_path)) as db, db:
        (stored,) = db.execute(
            "SELECT (SELECT SUM(LENGTH(settings)) FROM revisions)"
            " + (SELECT SUM(LENGTH(data)) FROM reports)"
        ).fetchone()
    assert 0 < sum(written) < stored  # less than one serialization of each item


def test_overlapping_syncs_restore_the_garbage_collector_when_the_last_ends() -> None:
    """`run --orgs` syncs organizations at once: one ending must not undo the setting another
    still runs under, and the last to end restores the process's thresholds."""
    import gc

    from auditor.common.collector import few_collections

    before = gc.get_threshold()
    first, second = few_collections(), few_collections()
    first.__enter__()
    second.__enter__()
    first.__exit__(None, None, None)
    assert gc.get_threshold() == (50_000, 20, 20)  # the second sync is still running
    second.__exit__(None, None, None)
    assert gc.get_threshold() == before


def _count_report_redactions(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The report ids redacted from now on (each call of the redactor on a report item)."""
    from auditor.redact import Redactor

    redacted: list[str] = []
    real = Redactor._redact  # what redact_json and redact_canonical both call

    def counting(self: Redactor, value: Any, stream: str, *args: Any, **kwargs: Any) -> Any:
        if stream == "report":
            redacted.append(str(value.get("reportId")))
        return real(self, value, stream, *args, **kwargs)

    monkeypatch.setattr(Redactor, "_redact", counting)
    return redacted


def test_a_report_sent_again_is_recognised_unredacted_and_a_changed_one_is_still_caught(
    store: Store, state_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The nightly sync re-reads a page of reports it has: the very same items are known by a
    keyed fingerprint of their raw content without being redacted again; a report whose
    content changed is redacted, compared and reported as an integrity issue as before."""
    service = FakeService(3, reports=4)
    run_sync(store, service)
    before = {r.report_id: r.content_hash for r in store.iter_reports()}
    redacted = _count_report_redactions(monkeypatch)
    again = run_sync(store, service)
    assert (redacted, again.reports_new, again.integrity_issues) == ([], 0, ())
    service.reports[2]["report"]["lint"]["rationale"] = "changed upstream"
    changed = run_sync(store, service)
    assert redacted == ["r0002"]
    [issue] = changed.integrity_issues
    assert issue.report_id == "r0002" and issue.stored_hash == before["r0002"] != issue.seen_hash
    assert {r.report_id: r.content_hash for r in store.iter_reports()} == before
    assert len(run_sync(store, service).integrity_issues) == 1  # caught every time, as before
    service.reports[2]["report"]["lint"]["rationale"] = "ok"  # back to what is stored
    redacted.clear()
    assert run_sync(store, service).integrity_issues == () and redacted == []
    with closing(sqlite3.connect(state_path)) as db, db:
        seen = db.execute("SELECT fingerprint FROM report_seen").fetchall()
    assert len(seen) == 4 and all(len(fp) == 64 for (fp,) in seen)


def test_reports_are_recognised_the_next_night_after_a_later_page_taught_a_secret(
    store: Store, state_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A secret first seen on a later page of reports (here the second one) grows the secret
    memory after the first page was stored: the first page's reports, whose rows do not hold
    it, are still recognised by the next sync (the nightly re-reads that page) instead of all
    being redacted again every night; the secret never reaches the file."""
    later = "sk-live9876543210zyxwvutsrq"
    service = FakeService(3, reports=12)  # two pages of reports (10 + 2)
    service.reports[11]["report"]["lint"]["rationale"] = f"key {later}"
    first = run_sync(store, service)
    assert first.reports_new == 12
    assert later.encode() not in state_path.read_bytes()
    redacted = _count_report_redactions(monkeypatch)
    again = run_sync(store, service)
    assert (redacted, again.reports_new, again.integrity_issues) == ([], 0, ())
    service.reports[3]["report"]["lint"]["rationale"] = f"now {later}"  # changed upstream
    changed = run_sync(store, service)
    assert redacted == ["r0003"] and len(changed.integrity_issues) == 1
    assert later.encode() not in state_path.read_bytes()


def test_a_stored_report_rescrubbed_for_a_later_secret_is_redacted_again_not_trusted(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A report stored before a value in it was known as a secret is scrubbed when the secret
    is learned; its raw item, sent again, no longer matches the stored row's fingerprint record,
    so it is redacted with what is known now (and found the same), never stored unredacted."""
    later = "plainwordlatersecretvalue"
    service = FakeService(1, reports=2)
    service.reports[1]["report"]["lint"]["rationale"] = f"uses {later}"
    run_sync(store, service)
    assert any(later in json.dumps(r.data) for r in store.iter_reports())  # not a secret yet
    service.add_revisions(1)
    service.revisions[2]["settings"]["customModels"][0]["apiKey"] = later  # now it is
    redacted = _count_report_redactions(monkeypatch)
    summary = run_sync(store, service)  # the memory grew: every report is redacted again
    assert sorted(redacted) == ["r0000", "r0001"] and summary.integrity_issues == ()
    assert not any(later in json.dumps(r.data) for r in store.iter_reports())
    redacted.clear()
    assert run_sync(store, service).integrity_issues == () and redacted == []
    assert not any(later in json.dumps(r.data) for r in store.iter_reports())


def _synced_with_a_later_secret_in_a_report(state_path: Path, later: str) -> FakeService:
    """A state file synced from a service whose second report holds `later`, not yet known as
    a secret (only the API token is); returns the service for the next sync."""
    service = FakeService(1, reports=2)
    service.reports[1]["report"]["lint"]["rationale"] = f"uses {later} here"
    with Store.open(state_path) as s:
        s.register_secret(TOKEN)
        run_sync(s, service)
    return service


@pytest.mark.parametrize("learned", ["token", "env"])
def test_a_report_sent_again_unchanged_is_scrubbed_of_a_secret_known_only_since(
    state_path: Path, learned: str
) -> None:
    """A report stored while a value in it was not yet known as a secret, sent again unchanged
    by a later sync that knows it (the API token after a rotation, or a value found under `env`
    in a new revision), leaves the state file without it, as when it was redacted again: being
    recognised by its raw fingerprint must not keep the stored row as it was."""
    later = "plainwordlatersecretvalue"
    service = _synced_with_a_later_secret_in_a_report(state_path, later)
    assert later.encode() in state_path.read_bytes()  # not a secret yet
    if learned == "env":
        service.add_revisions(1)
        service.revisions[2]["settings"]["env"] = {"DB_URL": later}
    with Store.open(state_path) as s:
        s.register_secret(TOKEN if learned == "env" else later)
        assert run_sync(s, service).integrity_issues == ()
        assert not any(later in json.dumps(r.data) for r in list(s.iter_reports()))
        assert run_sync(s, service).integrity_issues == ()  # the rescrubbed row is still "same"
    assert later.encode() not in state_path.read_bytes()


def test_a_nightly_that_learns_a_secret_from_a_new_revision_still_recognises_its_reports(
    state_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The next night's process learns a new secret from a new revision before it re-reads
    the page of reports it has: those reports are recognised all the same (what it learned,
    it knows as a value, and looks for in the rows it recognised) rather than all redacted
    again; a report that holds the new secret is still scrubbed of it."""
    new = "plainwordnewsecretvalue42"
    service = FakeService(3, reports=4)
    with Store.open(state_path) as s:
        s.register_secret(TOKEN)
        run_sync(s, service)
    service.add_revisions(1)
    service.revisions[4]["settings"]["env"] = {"DB_URL": new}
    redacted = _count_report_redactions(monkeypatch)
    with Store.open(state_path) as s:
        s.register_secret(TOKEN)
        summary = run_sync(s, service)
    assert (redacted, summary.revisions_new, summary.integrity_issues) == ([], 1, ())
    assert new.encode() not in state_path.read_bytes()
    service.add_revisions(1)  # and the night after, which learns another one
    service.revisions[5]["settings"]["env"] = {"DB_URL": new + "-rotated"}
    with Store.open(state_path) as s:
        s.register_secret(TOKEN)
        summary = run_sync(s, service)
    assert (redacted, summary.revisions_new, summary.integrity_issues) == ([], 1, ())


def test_a_report_sent_again_after_a_sync_that_learned_a_secret_in_it_is_scrubbed(
    state_path: Path,
) -> None:
    """A report stored before a value in it was known as a secret, not read by the sync that
    learned it (it was not on the pages read then), and sent again unchanged by a later sync
    that knows the secret only by its fingerprint, is redacted again (as before the raw
    fingerprint existed, and recognised since): the state file is left without the secret."""
    later = "plainwordlatersecretvalue"
    service = _synced_with_a_later_secret_in_a_report(state_path, later)
    held = service.reports.pop(1)  # not sent by the sync that learns the secret
    service.add_revisions(12)  # revision 2 is not on the first page read by the next sync
    service.revisions[2]["settings"]["env"] = {"DB_URL": later}
    with Store.open(state_path) as s:
        s.register_secret(TOKEN)
        run_sync(s, service)
    # not read by this sync, the stored report is scrubbed all the same (the secret was new to
    # the file's memory, so every stored row was searched for it)
    assert later.encode() not in state_path.read_bytes()
    service.reports.append(held)
    with Store.open(state_path) as s:
        s.register_secret(TOKEN)
        assert run_sync(s, service).integrity_issues == ()
        assert run_sync(s, service).integrity_issues == ()
    assert later.encode() not in state_path.read_bytes()


def _settings_history(service: FakeService, first: int, last: int, note: str = "") -> None:
    """Revisions `first`..`last` whose settings change at their first key, their last key, a
    key between (now and then gone), and hold text with the index's separators in it."""
    for rev in range(first, last + 1):
        settings: dict[str, Any] = {
            "aFirst": rev % 3,
            "customModels": [{"id": "c", "apiKey": API_KEY}],  # redacted: each one is walked
            "middle": {"x": 'a},"b' if rev % 2 else 'c,"d', "list": ["p,", "q"]},
            "notes": note if rev == first else "steady",
            "zLast": [rev % 4, {"k": "v"}],
        }
        if rev % 5:
            settings["moving"] = {"n": rev % 2}
        service.revisions[rev] = {
            "revision": rev,
            "settings": settings,
            "user": {"id": "u", "email": "a@corp.example", "name": f"N{rev % 2}"},
            "updatedAt": f"2026-10-{1 + rev % 28:02d}T08:00:00Z",
        }


def test_a_syncs_new_revisions_are_indexed_as_their_stored_text_splits(
    state_path: Path,
) -> None:
    """The scrub index after a sync holds exactly the pieces of the stored rows (the sync
    splits only the parts of each settings it has not met), and a value stored in plain that a
    later sync learns as a secret is found through it and scrubbed from the earlier rows."""
    from auditor.store import scrubindex

    plain = "plainwordlatersecretvalue"
    service = FakeService(0)
    _settings_history(service, 1, 24, note=f"see {plain}")
    with Store.open(state_path) as store:
        run_sync(store, service)
        assert set(scrubindex.stored(store._db)) == scrubindex.row_pieces(store._db)
        assert any(plain.encode() in p for p in scrubindex.stored(store._db))
    service.revisions[25] = {**service.revisions[24], "revision": 25}
    service.revisions[25]["settings"] = {"apiKey": plain}
    with Store.open(state_path) as store:
        run_sync(store, service)
        first = store.get_revision(1)
        assert first is not None
        assert first.settings["notes"] == f"see {store.redactor.marker(plain)}"
        assert set(scrubindex.stored(store._db)) == scrubindex.row_pieces(store._db)
    assert plain.encode() not in state_path.read_bytes()


_PASTED = "orangebattery1x"  # a secret only its place (`apiKey`) tells
_AUTHOR = {"id": "u", "email": "a@b.c", "name": "N"}


@pytest.mark.parametrize(
    ("before", "revisions"),
    [
        pytest.param(  # the revision that reveals it holds it too, in a second sync
            [({"note": "hello"}, _AUTHOR)],
            [
                ({"apiKey": _PASTED, "note": "x" + _PASTED}, _AUTHOR),
                ({"note": "x" + _PASTED}, _AUTHOR),
            ],
            id="settings-second-sync",
        ),
        pytest.param(  # ... in a first sync
            [],
            [
                ({"apiKey": _PASTED, "note": "x" + _PASTED}, _AUTHOR),
                ({"note": "x" + _PASTED}, _AUTHOR),
            ],
            id="settings-first-sync",
        ),
        pytest.param(  # ... in the author's e-mail
            [],
            [
                ({"apiKey": _PASTED}, {**_AUTHOR, "email": "x" + _PASTED}),
                ({}, {**_AUTHOR, "email": "x" + _PASTED}),
            ],
            id="email",
        ),
    ],
)
def test_a_secret_pasted_into_a_newer_revision_and_the_one_revealing_it_is_never_stored_plain(
    state_path: Path,
    before: list[tuple[dict[str, Any], dict[str, str]]],
    revisions: list[tuple[dict[str, Any], dict[str, str]]],
) -> None:
    """History comes newest first: a newer revision holding `x<key>` is redacted (and stored)
    before the older one whose `apiKey` reveals the key. When the revealing revision held
    `x<key>` too, its redaction replaced the memo entry that said an earlier answer held the
    key, and the newer row stayed in plain text in the state file (found by a review)."""
    service = FakeService(0)

    def add(settings: dict[str, Any], user: dict[str, str]) -> None:
        n = len(service.revisions) + 1
        service.revisions[n] = {
            "revision": n,
            "settings": settings,
            "user": user,
            "updatedAt": "2026-10-01T08:00:00Z",
        }

    for item in before:
        add(*item)
    if before:
        with Store.open(state_path) as store:
            run_sync(store, service)
    for item in revisions:
        add(*item)
    with Store.open(state_path) as store:
        run_sync(store, service)
        newest = store.get_revision(len(service.revisions))
        assert newest is not None
        assert _PASTED not in json.dumps([newest.settings, newest.user.email])
    raw = b"".join(p.read_bytes() for p in state_path.parent.glob(state_path.name + "*"))
    assert _PASTED.encode() not in raw


def test_an_empty_history_after_stored_revisions_is_a_warning(store: Store) -> None:
    """A first page without revisions, though revisions are stored (a wrong organization, a
    stub in front of the service), is the went-back warning, not a quiet sync."""
    service = FakeService(3)
    run_sync(store, service)
    service.revisions.clear()
    summary = run_sync(store, service)
    assert summary.revisions_total == 3 and summary.revisions_new == 0
    assert [w.describe() for w in summary.data_quality] == [
        "$.changes: the service's history is empty, but revision 3 is stored: its history "
        "went back; the stored revisions are kept and audited "
        f"(the page, GET https://svc.test{HISTORY_PATH} page 1)"
    ]


def test_an_empty_history_of_a_new_state_file_is_no_warning(store: Store) -> None:
    assert run_sync(store, FakeService(0)).data_quality == ()


def test_a_huge_author_is_cut_in_the_summary(store: Store) -> None:
    """A 2 MB `user.id` made a 2 MB summary line; the stored revision keeps it whole."""
    service = FakeService(1)
    service.revisions[1]["user"] = {"id": "x" * 2_000_000}
    summary = run_sync(store, service)
    text = format_summary(summary, "https://svc.test")
    assert f"latest rev 1 at 2026-10-02 by {'x' * 254}… (1999746 more characters);" in text
    assert len(text) < 1000
    assert summary.latest.user.id == "x" * 2_000_000


def test_many_unknown_fields_are_named_up_to_a_cap_and_counted(store: Store) -> None:
    """20,000 unknown keys were 20,000 warnings (2.9 MB of summary, 8.2 MB of reports)."""
    service = FakeService(2)
    for rev in (1, 2):
        service.revisions[rev].update({f"k{i:05d}": 1 for i in range(20_000)})
    summary = run_sync(store, service)
    described = [w.describe() for w in summary.data_quality]
    assert len(described) == 21
    where = f"GET https://svc.test{HISTORY_PATH} page 1"
    assert described[0] == (
        f"$.changes[0].k00000: unknown field, kept as data (revision 2, {where}; 1 more items "
        "like it)"
    )
    assert described[-1] == (
        "$.changes[0].k00020: unknown field, kept as data; 39960 more warnings of this problem "
        f"in other fields are counted, not named (at most 20 fields are) (revision 2, {where})"
    )
    assert len(format_summary(summary, "https://svc.test")) < 10_000


def test_a_huge_unknown_key_is_cut_in_its_warning(store: Store) -> None:
    service = FakeService(1)
    service.revisions[1]["k" * 1_000_000] = 1
    (warning,) = run_sync(store, service).data_quality
    assert warning.path == f"$.changes[0].{'k' * 287}… (999713 more characters)"
    assert warning.describe().endswith(f"(revision 1, GET https://svc.test{HISTORY_PATH} page 1)")
