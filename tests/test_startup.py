"""Commands start without loading the stacks they never run (`auditor sync`: no evaluation or
reports; `auditor run --offline`: no HTTP client or secret scanner), and parse as before."""

from __future__ import annotations

import contextlib
import importlib
import io
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from auditor.cli import COMMANDS, build_parser
from auditor.cli.parsers import DEFAULT_OUTPUT_NAMES, OUTPUT_NAMES

# `sync --help` loads no command at all (see test_help_and_version_load_no_command below):
# the probe also imports the handler's module, which is what running `auditor sync` loads.
_PROBE = """
import contextlib, io, sys
from auditor.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    main(["sync", "--help"])
import auditor.cli.cmd_sync
import auditor.workflows.sync
print(" ".join(sorted(m for m in sys.modules if m.startswith("auditor.") or m == "jsonschema")))
"""


def test_sync_does_not_import_evaluation_reports_or_jsonschema() -> None:
    out = subprocess.run(
        [sys.executable, "-c", _PROBE], capture_output=True, text=True, check=True
    ).stdout.split()
    assert "auditor.workflows.sync" in out  # the probe did load the sync command
    loaded = [
        m
        for m in out
        if m.startswith(("auditor.evaluate", "auditor.report", "auditor.policy", "jsonschema"))
        or m in ("auditor.workflows.run", "auditor.workflows.review", "auditor.workflows.export")
    ]
    assert loaded == []


_OFFLINE_PROBE = """
import sys
from auditor.cli import main
code = main(sys.argv[1:])
print(code)
print(" ".join(sorted(sys.modules)))
"""

# What only fetching or redacting something new needs: the HTTP client (and `rich`, which httpx
# loads for its command line), detect-secrets' plugins (and `requests`, which they load); and
# what an offline run into a SQLite file writing the five reports never needs: the PostgreSQL
# driver and the PDF renderer.
_FETCH_ONLY = (
    "httpx",
    "httpcore",
    "rich",
    "detect_secrets",
    "requests",
    "auditor.fetch",
    "psycopg",
    "weasyprint",
)


def test_run_offline_loads_no_http_client_secret_scanner_database_driver_or_pdf(
    emulator: Any, tmp_path: Path
) -> None:
    env = _emulator_env(emulator, tmp_path, os.environ)
    cli = [sys.executable, "-m", "auditor"]
    subprocess.run([*cli, "sync"], env=env, cwd=tmp_path, capture_output=True, check=True)
    out = tmp_path / "reports"
    argv = ["run", "--offline", "--soft-fail", "--quiet", "--out", str(out)]
    probe = _probed(argv, env, tmp_path)
    code, modules = probe[-2], probe[-1].split()
    assert code == "0" and (out / "findings.json").is_file()  # it did audit
    assert "auditor.workflows.run" in modules and "auditor.redact.redactor" in modules
    loaded = [m for m in modules if m.split(".")[0] in _FETCH_ONLY or m.startswith(_FETCH_ONLY)]
    assert loaded == []
    assert "auditor.workflows.sync" not in modules and "auditor.redact.values" not in modules


def _help(parser_args: list[str], only: str | None) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        build_parser(only).parse_args(parser_args)
    return out.getvalue()


@pytest.mark.parametrize("command", COMMANDS)
def test_a_command_parses_the_same_alone_as_with_every_command(command: str) -> None:
    assert _help([command, "--help"], command) == _help([command, "--help"], None)


def test_top_level_help_still_lists_every_command() -> None:
    text = _help(["--help"], None)
    assert all(name in text for name in COMMANDS)


# What reading the help or the version must not load: every stage below the command line (the
# rule engine, the report writers, the store, the fetch stack) and their libraries.
_HEAVY = (
    "auditor.workflows",
    "auditor.evaluate",
    "auditor.findings",
    "auditor.report",
    "auditor.policy",
    "auditor.store",
    "auditor.fetch",
    "auditor.redact",
    "auditor.diff",
    "auditor.emulator",
    "jinja2",
    "weasyprint",
    "psycopg",
    "httpx",
    "detect_secrets",
    "ruamel",
    "yaml",
    "jsonschema",
)

_MODULES_PROBE = """
import contextlib, io, sys
from auditor.cli import main
with contextlib.redirect_stdout(io.StringIO()) as out:
    try:
        code = main(sys.argv[1:])
    except SystemExit as exc:
        code = exc.code
print(code, len(out.getvalue()))
print(" ".join(sorted(sys.modules)))
"""


def _heavy(modules: list[str]) -> list[str]:
    return [m for m in modules if m in _HEAVY or m.startswith(tuple(f"{h}." for h in _HEAVY))]


@pytest.mark.parametrize(
    "argv",
    [
        ["--version"],
        ["--help"],
        *([command, "--help"] for command in COMMANDS),
        ["policy", "lint", "--help"],
        ["--debug", "run", "--help"],
    ],
    ids=" ".join,
)
def test_help_and_version_load_no_command(argv: list[str]) -> None:
    probe = subprocess.run(
        [sys.executable, "-c", _MODULES_PROBE, *argv],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    (code, printed), modules = probe[-2].split(), probe[-1].split()
    assert code == "0" and int(printed) > 0  # it did print the help or the version
    assert _heavy(modules) == []


# An online run stops at its first connection (before anything is sent) and lists what it has
# loaded by then: policies loaded and validated, the store open, the sync starting.
_FIRST_REQUEST_PROBE = """
import os, socket, sys
def first_connection(self, address):
    print(" ".join(sorted(sys.modules)), flush=True)
    os._exit(0)
socket.socket.connect = first_connection
from auditor.cli import main
main(sys.argv[1:])
print("no connection")
"""


def test_an_online_run_starts_its_sync_before_loading_the_evaluation(tmp_path: Path) -> None:
    env = {
        **{k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")},
        "AUDITOR_BASE_URL": "http://127.0.0.1:9",
        "AUDITOR_APP_URL": "http://127.0.0.1:9",
        "AUDITOR_TOKEN": "startup-probe-token-0123",
        "AUDITOR_STATE": str(tmp_path / "state.db"),
    }
    argv = ["run", "--quiet", "--out", str(tmp_path / "reports")]
    modules = _probed(argv, env, tmp_path, _FIRST_REQUEST_PROBE)[-1].split()
    assert "httpx" in modules and "auditor.policy.loader" in modules  # it was about to sync
    # the rule engine comes after the sync; httpx's own command line (click, rich) never
    late = ("auditor.evaluate.engine", "rich", "click", "pygments", "psycopg", "weasyprint")
    assert [m for m in modules if m.split(".")[0] in late or m in late] == []


def test_the_help_names_the_outputs_the_report_writers_know() -> None:
    from auditor.report import DEFAULT_OUTPUTS, OUTPUTS

    assert tuple(OUTPUTS) == OUTPUT_NAMES
    assert DEFAULT_OUTPUTS == DEFAULT_OUTPUT_NAMES


def test_policy_lint_does_not_load_the_rule_engine() -> None:
    shipped = Path(__file__).resolve().parents[1] / "policies"
    probe = subprocess.run(
        [sys.executable, "-c", _MODULES_PROBE, "policy", "lint", str(shipped)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    code, modules = probe[-2].split()[0], probe[-1].split()
    assert code == "0" and "auditor.policy.loader" in modules  # it did lint the packs
    assert [m for m in modules if m.startswith("auditor.evaluate")] == []


@pytest.mark.parametrize(
    "package", ["auditor.findings", "auditor.evaluate", "auditor.workflows", "auditor.policy"]
)
def test_the_lazily_loaded_names_are_listed_by_dir(package: str) -> None:
    """These packages load their names on first use; `dir()` (a REPL's completion, pydoc)
    still lists them."""
    module = importlib.import_module(package)
    assert set(module.__all__) <= set(dir(module))


def test_a_sync_loads_httpx_without_its_command_line(tmp_path: Path) -> None:
    """`auditor sync` is spared httpx's own command line (click, rich, pygments), as a run is
    (`cli.common._without_httpx_command_line`): its handler loads the sync workflow, and with
    it httpx, only after that."""
    env = {**os.environ, "AUDITOR_TOKEN": "probe-token-1234"}
    argv = ["sync", "--base-url", "http://127.0.0.1:1", "--state", str(tmp_path / "s.db")]
    out = _probed(argv, env, tmp_path)
    assert out[0] == "2"  # nothing listens on port 1: the sync failed after loading httpx
    loaded = set(out[1].split())
    assert "httpx" in loaded
    assert loaded & {"click", "rich", "pygments"} == set()


def _emulator_env(emulator: Any, tmp_path: Path, base: Mapping[str, str]) -> dict[str, str]:
    """`base` and the variables that point auditor at the test emulator and a fresh state."""
    from tests.conftest import OWNER_TOKEN

    return {
        **base,
        "AUDITOR_BASE_URL": emulator.base_url,
        "AUDITOR_APP_URL": emulator.app_url,
        "AUDITOR_TOKEN": OWNER_TOKEN,
        "AUDITOR_STATE": str(tmp_path / "state.db"),
    }


def test_policy_test_of_usage_rules_loads_no_httpx_command_line(tmp_path: Path) -> None:
    """`policy test` reads a case's usage rows through the sync's tolerant reader, whose package
    (`auditor.fetch`) imports httpx: it is spared httpx's own command line (click, rich,
    pygments; about 0.2 s of a loaded machine's start-up, reviewer R26 #4) as a sync is."""
    policies = Path(__file__).resolve().parents[1] / "policies"
    argv = ["policy", "test", str(policies / "usage.yaml"), str(policies / "usage.tests.yaml")]
    *_, code, modules = _probed(argv, dict(os.environ), tmp_path)  # the cases' lines first
    assert code == "0"
    loaded = set(modules.split())
    assert "auditor.fetch.tolerant" in loaded
    assert loaded & {"click", "rich", "pygments"} == set()


def _probed(argv: list[str], env: dict[str, str], cwd: Path, probe: str | None = None) -> list[str]:
    """The lines `probe` (`_OFFLINE_PROBE`: the exit code, then the modules loaded) prints for
    `auditor argv`."""
    return subprocess.run(
        [sys.executable, "-c", probe or _OFFLINE_PROBE, *argv],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()


# What an online run (the nightly) with the shipped packs never uses: `requests` (urllib3,
# charset_normalizer), which detect-secrets' plugins import only to verify a found secret online
# (`lazy.deferring`); the YAML parser and the JSON Schema validator, since the shipped packs and
# readiness model are read from the build's record of them (`yamlsafe.SHIPPED_YAML`).
_NIGHTLY_UNUSED = ("urllib3", "charset_normalizer", "requests.", "ruamel", "jsonschema")


def test_an_online_run_loads_no_requests_yaml_parser_or_schema_validator(
    emulator: Any, tmp_path: Path
) -> None:
    unproxied = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    env = _emulator_env(emulator, tmp_path, unproxied)
    out = tmp_path / "reports"
    probe = _probed(["run", "--soft-fail", "--quiet", "--out", str(out)], env, tmp_path)
    code, modules = probe[-2], probe[-1].split()
    assert code == "0" and (out / "findings.json").is_file()  # it did sync and audit
    assert "auditor.redact.values" in modules  # the secret scanner did run, on what it fetched
    assert "auditor.policy.loader" in modules and "auditor.evaluate.readiness" in modules
    assert [m for m in modules if m.startswith(_NIGHTLY_UNUSED)] == []


def test_a_deferred_module_is_the_real_one_when_used() -> None:
    """`requests`, deferred under detect-secrets, is there when something does use it (a
    plugin's online verification, another library)."""
    probe = """
import sys
import auditor.redact.values
from detect_secrets.plugins import base
assert "urllib3" not in sys.modules
error = base.requests.exceptions.RequestException
import requests.adapters
from requests import Session
print(error.__module__, Session.__module__, type(sys.modules["requests"]).__name__)
"""
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout.split()
    assert out == ["requests.exceptions", "requests.sessions", "module"]


def test_a_library_importing_requests_later_gets_one_copy_of_each_module() -> None:
    """An embedder (or a library) that imports `requests.exceptions` after auditor loaded
    detect-secrets gets the same classes `requests` raises, and a patch by dotted name reaches
    the code `requests` runs: no module of it is loaded twice."""
    probe = """
import sys
from unittest import mock
import auditor.redact.values
assert "requests" not in sys.modules or type(sys.modules["requests"]).__name__ == "module"
import requests.exceptions, requests
assert requests.exceptions is sys.modules["requests.exceptions"]
assert requests.exceptions.ConnectionError is requests.ConnectionError
try:
    requests.get("http://127.0.0.1:9/", timeout=2)
except requests.exceptions.ConnectionError:
    pass
with mock.patch("requests.adapters.HTTPAdapter.send", side_effect=RuntimeError("patched")):
    try:
        requests.get("http://127.0.0.1:9/", timeout=2)
    except RuntimeError as exc:
        print(exc)
from detect_secrets.plugins import base
print(base.requests.Session is requests.Session)
"""
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout.split()
    assert out == ["patched", "True"]
