"""Shared fixtures (a real emulator on loopback, a scratch state file, a fixed clock), the
`--update-golden` switch, and the `e2e` marker that separates the fast unit loop."""

from __future__ import annotations

import base64
import io
import json
import os
import re
import urllib.parse
from collections.abc import Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any, NoReturn

import pytest

FIXED_NOW = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
OWNER_TOKEN = "test-owner-token-0123456789"
MEMBER_TOKEN = "test-member-token-0123456789"

# Marked here rather than in each file, so the split is one list to review.
# Modules about the CLI or the emulator as a server: (nearly) every test drives one of them.
E2E_MODULES = frozenset(
    {
        "test_cli_diff_history",
        "test_cli_run",
        "test_emulator",
        "test_hostile_api",
        "test_hostile_files",
        "test_policy_cli",
        "test_report_browser",
        "test_signals",
        "test_state_file",
        "test_review",
        "test_review_pack_weakenings",
        "test_cli_outputs",
        "test_store_postgres",
        "test_orgs",
        "test_incremental",
    }
)
# In mixed modules (test_sync), the tests asking for a running emulator or the CLI on a fake API.
E2E_FIXTURES = frozenset({"emulator", "small_emulator", "fake_cli", "hostile"})


def missing_tool(message: str, missing: str, skipped: str) -> NoReturn:
    """A tool a test needs is not installed: a failure under CI (`.ci/run` installs it, so a
    validator that could not be installed fails loudly: `MISSING` IN CI), a skip saying so
    elsewhere (`SKIPPED`)."""
    if os.environ.get("CI"):
        pytest.fail(f"{missing} MISSING IN CI: {message}")
    pytest.skip(f"{skipped} SKIPPED: {message}")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden",
        action="store_true",
        default=False,
        help="rewrite golden files under tests/golden/ from the current output",
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark the end-to-end tests: whole E2E_MODULES, and any test using an E2E_FIXTURES fixture."""
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        if item.path.stem in E2E_MODULES or fixtures & E2E_FIXTURES:
            item.add_marker(pytest.mark.e2e)


@pytest.fixture
def update_golden(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--update-golden"))


@pytest.fixture
def fixed_now() -> datetime:
    return FIXED_NOW


@pytest.fixture
def state_path(tmp_path: Path) -> Path:
    return tmp_path / "state.db"


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[Any]:
    """A throwaway PostgreSQL server for the session (`pgcluster.throwaway`: without
    PostgreSQL installed the tests that need it skip, saying so; in CI they fail instead)."""
    import pgcluster

    with pgcluster.throwaway() as cluster:
        yield cluster


@pytest.fixture
def pg_url(pg_cluster: Any) -> str:
    """A fresh, empty database on the session's PostgreSQL server (its URL has the password)."""
    import uuid

    return str(pg_cluster.create_database(f"t_{uuid.uuid4().hex[:16]}"))


def run_cli(
    argv: list[str], env: dict[str, str], cwd: Path, now: datetime = FIXED_NOW
) -> tuple[int, str, str]:
    """The CLI run in this process with `env`, in `cwd`, its clock at `now`: (exit code,
    stdout, stderr)."""
    from auditor.cli import Context, main

    out, err = io.StringIO(), io.StringIO()
    ctx = Context(env=env, stdout=out, stderr=err, clock=lambda: now, cwd=str(cwd))
    return main(argv, ctx), out.getvalue(), err.getvalue()


def emulator_env(emu: Any, state: Path, token: str = OWNER_TOKEN) -> dict[str, str]:
    """The variables that point a command at a running emulator (as its owner, or the holder
    of `token`) and a state file."""
    return {
        "AUDITOR_BASE_URL": emu.base_url,
        "AUDITOR_APP_URL": emu.app_url,
        "AUDITOR_TOKEN": token,
        "AUDITOR_STATE": str(state),
    }


def serve_http(handler: type[Any]) -> Iterator[str]:
    """A fixture body: `handler` (a `BaseHTTPRequestHandler`) served on a free loopback port
    by a thread, its `http://127.0.0.1:PORT` given; stopped after."""
    import threading
    from http.server import ThreadingHTTPServer

    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


class ProblemAnswer(BaseHTTPRequestHandler):
    """A hostile service's handler: every GET is answered with `problem(token)` (the
    caller's bearer token given) as an `application/problem+json` body with its `status`;
    nothing logged."""

    def problem(self, token: str) -> dict[str, Any]:
        raise NotImplementedError

    def do_GET(self) -> None:
        token = self.headers.get("authorization", "").removeprefix("Bearer ")
        problem = self.problem(token)
        body = json.dumps(problem).encode()
        self.send_response(int(problem["status"]))
        self.send_header("content-type", "application/problem+json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


def secrets_found_in_a_child(text: str) -> str:
    """`find_secrets(text)` printed by a child process, so that a read taking super-linear
    time on a long hostile input fails (after 60 s) instead of stalling the suite."""
    import subprocess
    import sys

    code = (
        "import sys; from auditor.redact.values import find_secrets; "
        "print(find_secrets(sys.stdin.read()))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        input=text,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stdout


def printed_by_a_fresh_interpreter(code: str) -> str:
    """What `code` prints, run by a new Python process in the tests' folder (so it imports
    the tests' helpers): a memory figure taken with tracemalloc there counts this code alone,
    not a test worker's other threads or the caches earlier tests filled."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=Path(__file__).parent,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    return done.stdout


def secret_forms(secret: str) -> list[str]:
    """The forms a secret is searched for in outputs: raw, JSON-escaped, URL-encoded (`+` for
    spaces too, and with lower-case escapes, as some clients write them), base64 (standard
    and URL-safe, without padding)."""
    raw = secret.encode()
    quoted = urllib.parse.quote(secret, safe="")
    return [
        secret,
        json.dumps(secret)[1:-1],
        quoted,
        urllib.parse.quote_plus(secret),
        base64.b64encode(raw).decode().rstrip("="),
        base64.urlsafe_b64encode(raw).decode().rstrip("="),
        re.sub(r"%[0-9A-F]{2}", lambda m: m[0].lower(), quoted),
    ]


@pytest.fixture
def emulator() -> Iterator[Any]:
    """A running emulator (default seed and size) on free loopback ports; stopped after."""
    from auditor.emulator import start_emulator

    emu = start_emulator(
        tokens={OWNER_TOKEN: "owner", MEMBER_TOKEN: "member"},
        now=FIXED_NOW,
    )
    try:
        yield emu
    finally:
        emu.stop()


@pytest.fixture(scope="module")
def emu() -> Iterator[Any]:
    """A small emulator (30 revisions, 3 repositories) for a test module's CLI runs; a module
    that needs another size defines its own `emu`."""
    from auditor.emulator import start_emulator

    with start_emulator(tokens={OWNER_TOKEN: "owner"}, now=FIXED_NOW, revisions=30, repos=3) as e:
        yield e


@pytest.fixture
def env(emu: Any, tmp_path: Path) -> dict[str, str]:
    """The `AUDITOR_*` variables for `emu`, with a state file in the test's folder."""
    return emulator_env(emu, tmp_path / "state.db")


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A bundle (`auditor export`) of one sync of the emulator (6 revisions, 2 repositories,
    organization `acme`), made once per test module."""
    from auditor.emulator import start_emulator

    work = tmp_path_factory.mktemp("exported")
    with start_emulator(tokens={OWNER_TOKEN: "owner"}, now=FIXED_NOW, revisions=6, repos=2) as e:
        env = {**emulator_env(e, work / "state.db"), "AUDITOR_ORG": "acme"}
        assert run_cli(["sync"], env, work)[0] == 0
        code, _, err = run_cli(["export", "--out", "bundle"], env, work)
    assert code == 0, err
    return work / "bundle"
