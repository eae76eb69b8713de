"""A server that echoes the caller's token as its base32 or as hex with its bytes apart
(tester T82 #1): a 403 whose problem detail holds `ORXWWX22…======` (which decodes straight
back to the token) and `74:6f:6b:5f:…`. `auditor run` on the state file of an earlier sync
audits the stored data and names the failed sync in its error line and in findings.json,
findings.sarif, junit.xml and report.html: the token was shown in clear in all of them, where
its plain hex and base64 read `[token]`. The README says the command's own token is hidden
in every form."""

from __future__ import annotations

import base64
import binascii
import contextlib
import html
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from auditor.emulator import start_emulator
from tests.conftest import FIXED_NOW, ProblemAnswer, emulator_env, run_cli, serve_http

TOKEN = "tok_Zq8XvR2mK9pL4sT7wY1nB6cD3fH5jG0a"
RAW = TOKEN.encode()
#: The forms the server echoes, and none of them may be shown.
ECHOED = {
    "base32": base64.b32encode(RAW).decode(),
    "base32 lower case, unpadded": base64.b32encode(RAW).decode().lower().rstrip("="),
    "hex with `:`": RAW.hex(":"),
    "HEX with `-`": RAW.hex("-").upper(),
}


class _EchoingTheTokenApart(ProblemAnswer):
    def problem(self, text: str) -> dict[str, Any]:
        token = text.encode()
        detail = (
            f"credential {base64.b32encode(token).decode()} (base32) is not allowed here; "
            f"its fingerprint {token.hex(':')} and {token.hex('-').upper()} were logged, "
            f"and {base64.b32encode(token).decode().lower().rstrip('=')}"
        )
        return {"title": "Forbidden", "status": 403, "detail": detail}


@pytest.fixture
def hostile() -> Iterator[str]:
    yield from serve_http(_EchoingTheTokenApart)


def _runs(data: bytes) -> list[bytes]:
    return [data[i : i + 12] for i in range(len(data) - 11)]


_BASE32 = re.compile(r"[A-Za-z2-7]{8,}=*")
_HEX_APART = re.compile(r"[0-9A-Fa-f]{2}(?:[:\- ][0-9A-Fa-f]{2})+")


def _decoded(text: str) -> list[bytes]:
    """What each base32-looking run of `text` decodes to, from each of its first 8 characters
    (wherever the encoding started), and the bytes each run of hex pairs apart spells."""
    found = []
    for m in _BASE32.finditer(text):
        run = m[0].rstrip("=").upper()
        for start in range(min(8, len(run))):
            piece = run[start:][: len(run[start:]) // 8 * 8]
            if piece:
                with contextlib.suppress(binascii.Error):
                    found.append(base64.b32decode(piece))
    found += [bytes.fromhex(re.sub(r"[:\- ]", "", m[0])) for m in _HEX_APART.finditer(text)]
    return found


@pytest.mark.e2e
def test_run_shows_the_token_echoed_as_base32_or_hex_apart_nowhere(
    tmp_path: Path, hostile: str
) -> None:
    state = tmp_path / "state.db"
    with start_emulator(tokens={TOKEN: "owner"}, now=FIXED_NOW, revisions=20, repos=2) as emu:
        code, _out, err = run_cli(["sync", "--no-usage"], emulator_env(emu, state, TOKEN), tmp_path)
        assert code == 0, err
    env = {"AUDITOR_BASE_URL": hostile, "AUDITOR_APP_URL": hostile, "AUDITOR_TOKEN": TOKEN,
           "AUDITOR_STATE": str(state)}  # fmt: skip
    argv = ["run", "--no-usage", "--out", "reports", "-o", "md,json,html,sarif,junit"]
    code, _out, err = run_cli(argv, env, tmp_path)
    assert code == 2, err  # the sync failed; the stored data was audited
    assert "403 Forbidden: credential [token] (base32) is not allowed here; its fingerprint " \
           "[token] and [token] were logged, and [token]" in err, err  # fmt: skip
    texts = {"stderr": err}
    texts |= {p.name: p.read_text() for p in (tmp_path / "reports").iterdir()}
    assert {"findings.json", "findings.sarif", "junit.xml", "report.html"} <= set(texts)
    for name, text in texts.items():
        assert "fingerprint" in text, name  # the error is there
        text = html.unescape(text)
        low = text.lower()
        assert not [form for form in ECHOED.values() if form.lower() in low], name
        for data in _decoded(text):
            assert not [run for run in _runs(RAW) if run in data], (name, data)
