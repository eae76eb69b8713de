"""A server that echoes the command's own token in an error body (`401: bad token …`): the
error, report.md and findings.json name it `[token]`, as every other error does, never by a
fingerprint and length of the caller's token."""

from __future__ import annotations

import io
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

from auditor.cli import Context, main
from tests.conftest import FIXED_NOW, ProblemAnswer, serve_http

TOKEN = "demo-owner-token"  # 16 characters: its marker read `[secret fp:… len:16]`


class _EchoingTheToken(ProblemAnswer):
    detail = "bad token {token}"

    def problem(self, token: str) -> dict[str, Any]:
        return {"detail": self.detail.format(token=token), "status": 401}


class _EchoingTheTokenAtTheCut(_EchoingTheToken):
    # the detail is cut at 1000 characters, the token's marker (27) starts at 975: the cut fell
    # inside it and left `[secret fp:1968eec4 len:1… (42 more characters)`
    detail = "x" * (1000 - 26) + " {token} and the rest of the message"


@pytest.fixture
def echoing() -> Iterator[str]:
    yield from _serve(_EchoingTheToken)


@pytest.fixture
def echoing_at_the_cut() -> Iterator[str]:
    yield from _serve(_EchoingTheTokenAtTheCut)


def _serve(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    yield from serve_http(handler)


def _said(tmp_path: Path, url: str, command: str) -> dict[str, str]:
    """`command` (run or sync) against `url`, which fails it (exit 2): stderr, and run's
    report.md and findings.json, Markdown's escapes of brackets undone."""
    env = {"AUDITOR_BASE_URL": url, "AUDITOR_TOKEN": TOKEN}
    out = tmp_path / "reports"
    argv = [command, "--state", str(tmp_path / "state.db"), "--no-usage"]
    argv += ["--out", str(out)] if command == "run" else []
    err = io.StringIO()
    ctx = Context(env=env, stdout=io.StringIO(), stderr=err, clock=lambda: FIXED_NOW,
                  cwd=str(tmp_path))  # fmt: skip
    assert main(argv, ctx) == 2
    texts = {"stderr": err.getvalue()}
    if command == "run":
        texts |= {name: (out / name).read_text() for name in ("report.md", "findings.json")}
    return {k: v.replace("\\[", "[").replace("\\]", "]") for k, v in texts.items()}


@pytest.mark.parametrize("command", ["run", "sync"])
def test_the_callers_token_echoed_by_the_server_reads_token(
    tmp_path: Path, echoing: str, command: str
) -> None:
    for name, said in _said(tmp_path, echoing, command).items():
        assert "401 Unauthorized: bad token [token]" in said, name
        assert f"len:{len(TOKEN)}]" not in said and TOKEN not in said, name


@pytest.mark.parametrize("command", ["run", "sync"])
def test_a_token_cut_off_with_the_servers_message_leaves_no_marker(
    tmp_path: Path, echoing_at_the_cut: str, command: str
) -> None:
    texts = _said(tmp_path, echoing_at_the_cut, command)
    for name, said in texts.items():
        assert "401 Unauthorized: " + "x" * 10 in said, name  # report.md cuts it shorter
        assert "secret fp:" not in said and f"len:{len(TOKEN)}" not in said, name
        assert TOKEN not in said and " and the rest" not in said, name
    # cut before the token, never inside its marker
    assert "x" * 974 + " … (" in texts["stderr"]
