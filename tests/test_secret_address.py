"""A service address with a secret in its path (`https://host/bot<token>/`, a key pasted into
`base_url`) is shown nowhere: not in the sync's summary, the "last synced from" warning, the
state file, a report of any format, nor an evidence bundle. Served by a proxy in front of the
emulator that takes the secret path prefix off, so the sync succeeds through that address."""

from __future__ import annotations

import http.server
import json
import sqlite3
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

import pytest
from conftest import OWNER_TOKEN, emulator_env, run_cli, secret_forms, serve_http

KEY = "AKIAQ7ZK3M5N8P2R4T6W"  # an AWS access key id, as the value detectors know it
PREFIX = f"/v/{KEY}"


@pytest.fixture(scope="module")
def proxy(emu: Any) -> Iterator[str]:
    """`http://127.0.0.1:PORT/v/<KEY>`, serving the emulator's history API under that path."""

    class Proxy(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if not self.path.startswith(PREFIX):
                self.send_error(404)
                return
            request = urllib.request.Request(
                emu.base_url + self.path.removeprefix(PREFIX),
                headers={"Authorization": self.headers["Authorization"] or ""},
            )
            try:
                with urllib.request.urlopen(request) as answer:
                    code, body = answer.status, answer.read()
            except urllib.error.HTTPError as exc:
                code, body = exc.code, exc.read()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    with contextmanager(serve_http)(Proxy) as address:
        yield address + PREFIX


def _holders(secret: str, folder: Path, *texts: str) -> list[str]:
    """The files under `folder` (state file and its journal included) and the texts that hold
    `secret` in any of its forms."""
    forms = [f.encode() for f in secret_forms(secret)]
    found = [
        str(p.relative_to(folder))
        for p in sorted(folder.rglob("*"))
        if p.is_file() and any(f in p.read_bytes() for f in forms)
    ]
    return found + [f"text {n}" for n, t in enumerate(texts) if any(f.decode() in t for f in forms)]


def test_a_secret_in_the_address_path_reaches_no_output(
    emu: Any, proxy: str, tmp_path: Path
) -> None:
    env = {**emulator_env(emu, tmp_path / "state.db"), "AUDITOR_BASE_URL": proxy}
    texts: list[str] = []
    code, out, err = run_cli(["sync"], env, tmp_path)
    assert code == 0, err
    texts += [out, err]
    assert out.startswith("Synced http://127.0.0.1:")  # the summary still names the address
    assert "/v/<not shown: looks like a secret>" in out
    code, out, err = run_cli(
        ["run", "--offline", "-o", "html,md,json,sarif,junit,oscal", "--out", "reports"],
        env,
        tmp_path,
    )
    assert code in (0, 1), err
    texts += [out, err]
    shown = json.loads((tmp_path / "reports" / "findings.json").read_text())["run"]["api_address"]
    assert shown == f"{proxy.removesuffix(KEY)}<not shown: looks like a secret>"
    code, out, err = run_cli(["export", "--out", "evidence"], env, tmp_path)
    assert code == 0, err
    texts += [out, err]
    # offline, the bundle names the address the state file was last synced from
    offline = {k: v for k, v in env.items() if k != "AUDITOR_BASE_URL"}
    code, out, err = run_cli(["export", "--out", "evidence-offline"], offline, tmp_path)
    assert code == 0, err
    texts += [out, err]
    # a sync from another address warns, naming the earlier one without its secret
    code, out, err = run_cli(["sync"], {**env, "AUDITOR_BASE_URL": emu.base_url}, tmp_path)
    assert code == 0, err
    texts += [out, err]
    assert "was last synced from http://127.0.0.1:" in err
    assert _holders(KEY, tmp_path, *texts) == []


def test_the_same_address_again_is_not_taken_for_another(
    emu: Any, proxy: str, tmp_path: Path
) -> None:
    """The sync records the address as shown; the next one through the same address compares
    equal to it (no "last synced from" warning), as does one recorded by an earlier version
    (the address as given, key and all), and the next sync's record holds it no more."""
    env = {**emulator_env(emu, tmp_path / "state.db"), "AUDITOR_BASE_URL": proxy}
    assert run_cli(["sync"], env, tmp_path)[0] == 0
    code, _out, err = run_cli(["sync"], env, tmp_path)
    assert code == 0, err
    assert "last synced from" not in err
    with (
        closing(sqlite3.connect(tmp_path / "state.db")) as db,
        db,
    ):  # as an earlier version recorded it
        db.execute("UPDATE syncs SET base_url = ?", (proxy,))
    code, _out, err = run_cli(["sync"], env, tmp_path)
    assert code == 0, err
    assert "last synced from" not in err and KEY not in err
    assert _holders(KEY, tmp_path) == []  # the earlier record was rewritten as shown


def test_the_commands_token_in_the_address_reads_token(emu: Any, tmp_path: Path) -> None:
    """A token put into the address's path (a service that takes it there) reads `[token]`
    wherever the address is shown; the request itself fails (the emulator has no such path)."""
    env = {
        **emulator_env(emu, tmp_path / "state.db"),
        "AUDITOR_BASE_URL": f"{emu.base_url}/t/{OWNER_TOKEN}",
    }
    code, out, err = run_cli(["run", "-o", "md,json,oscal", "--out", "reports"], env, tmp_path)
    assert code == 2, err  # the sync failed: the run audits what is stored and is incomplete
    shown = json.loads((tmp_path / "reports" / "findings.json").read_text())["run"]["api_address"]
    assert shown == f"{emu.base_url}/t/[token]"
    assert _holders(OWNER_TOKEN, tmp_path, out, err) == []
