"""The command's own token echoed by a server in other forms than the memory's (tester T61 #4):
as hex (either case), in capitals, split in two by a space or a line break, with a character
written as an HTML character reference (`&#x74;ok_…`, `&#116;ok_…`), reversed, or only a run of
12 of its characters; and (tester T71 #5) the base64 of its hex or of its UTF-16LE text
(PowerShell's `-EncodedCommand`), which the memory, reading base64 as UTF-8, missed. The README
says the command's own token is always hidden, in every form: each of these reads `[token]` in
an error, and no run of 12 of its characters reaches stderr or a report. A secret the data holds
is not hidden by parts (a part may be ordinary text), nor is a word of a token made of words
(`demo-owner-token`)."""

from __future__ import annotations

import base64
import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from auditor.cli import Context, main
from auditor.redact import Redactor
from tests.conftest import FIXED_NOW, ProblemAnswer, serve_http

TOKEN = "tok_4625b059281d06138c9bb22f"  # as `tok_` + secrets.token_hex(12) makes one


def _echoes(token: str) -> dict[str, str]:
    """The forms a server may echo `token` in, by name."""
    hexed = token.encode().hex()
    return {
        "hex": hexed,
        "HEX": hexed.upper(),
        "upper": token.upper(),
        "split by a space": f"{token[:10]} {token[10:]}",
        "split by a line break": f"{token[:5]}\n{token[5:]}",
        "split by CRLF and indent": f"{token[:14]}\r\n    {token[14:]}",
        "hex entity": "&#x74;" + token[1:],
        "decimal entity": "&#116;" + token[1:],
        "an entity inside": token[:9] + f"&#{ord(token[9])};" + token[10:],
        "reversed": token[::-1],
        "a run of 12": token[8:20],
        "a run of 13": token[2:15],
        # tester T71 #5: encodings of another text than the token's own UTF-8
        "base64 of its hex": base64.b64encode(hexed.encode()).decode(),
        "base64 of its HEX": base64.b64encode(hexed.upper().encode()).decode(),
        "UTF-16LE base64": base64.b64encode(token.encode("utf-16-le")).decode(),  # PowerShell's
        "UTF-16LE base64url": base64.urlsafe_b64encode(token.encode("utf-16-le")).decode(),
    }


def _runs(token: str, n: int = 12) -> list[str]:
    return [token[i : i + n] for i in range(len(token) - n + 1)]


def _leaks(token: str, text: str) -> list[str]:
    """Runs of 12 of the token's characters (or of its hex's 24) that `text` shows, in any
    case, or the base64 of its hex or of its UTF-16LE text (but the characters a neighbouring
    byte changes, at each of the 3 byte offsets the encoding may start at)."""
    low = text.lower()
    runs = _runs(token.lower()) + _runs(token.encode().hex(), 24) + _runs(token.lower()[::-1])
    hexed = token.encode().hex()
    for data in (hexed.encode(), hexed.upper().encode(), token.encode("utf-16-le")):
        for skip in range(3):
            core = base64.b64encode(data[skip : skip + (len(data) - skip) // 3 * 3]).decode()
            runs += [core.lower(), core.translate(str.maketrans("+/", "-_")).lower()]
    return [run for run in runs if run in low]


@pytest.mark.parametrize("form", list(_echoes(TOKEN)))
def test_each_echoed_form_of_the_callers_token_is_its_marker(form: str) -> None:
    redactor = Redactor(b"own-token-key", [TOKEN])
    text = f"403 Forbidden: invalid credentials {_echoes(TOKEN)[form]} (request 42)"
    for out in (redactor.redact_shown(text), redactor.redact_text(text)):
        assert out == f"403 Forbidden: invalid credentials {redactor.marker(TOKEN)} (request 42)"
    out = redactor.redact_json({"detail": text})["detail"]
    assert not _leaks(TOKEN, out), out


def test_a_run_shorter_than_12_characters_stays() -> None:
    redactor = Redactor(b"own-token-key", [TOKEN])
    text = f"request {TOKEN[3:14]} failed"  # 11 characters
    assert redactor.redact_shown(text) == text


def test_a_short_token_hides_runs_of_half_its_length_from_8() -> None:
    token = "Kq7zLw2Px9Vd4mTs"  # 16 characters: runs of 8
    redactor = Redactor(b"own-token-key", [token])
    assert redactor.redact_shown(f"x {token[5:13]} y") == f"x {redactor.marker(token)} y"
    assert redactor.redact_shown(f"x {token[5:12]} y") == f"x {token[5:12]} y"


def test_a_token_made_of_words_hides_no_word_of_it() -> None:
    redactor = Redactor(b"own-token-key", ["demo-owner-token"])
    text = "demo-member-token, the owner-token rotation, demo-owner-tokens"
    marker = redactor.marker("demo-owner-token")
    assert redactor.redact_shown(text) == text.replace("demo-owner-token", marker)
    assert redactor.redact_shown("the owner-token rotation") == "the owner-token rotation"


def test_a_secret_of_the_data_is_not_hidden_by_its_parts() -> None:
    """Only the command's own secrets are hidden by parts: a run of a secret the data holds
    (an `apiKey`, a password found in a hook) may be ordinary text elsewhere."""
    key = "Zq8hVd2LmX0pWk7TzR5n"
    redactor = Redactor(b"own-token-key", [TOKEN])
    redactor.redact_json({"customModels": [{"id": "m", "apiKey": key}]})
    assert key in redactor.memory.values
    assert redactor.redact_text(f"see {key[:13]}") == f"see {key[:13]}"
    # (its hex is the key, hidden as the key: tester T97 #3)
    assert redactor.redact_text(key.encode().hex()) == redactor.marker(key)


def test_a_secret_of_the_data_found_by_its_fingerprint_is_not_hidden_by_parts() -> None:
    """The state file's store learns a secret of the data found glued to other text
    (`SecretMemory.find_glued`, `Store._glued_secret_hidden`): hidden as itself, never taken
    for the command's own, whose parts are hidden too."""
    key = "Zq8hVd2LmX0pWk7TzR5n"
    redactor = Redactor(b"own-token-key")
    redactor.memory.recall([(redactor.memory.fingerprint(key), len(key))])
    for secret in redactor.memory.find_glued(f"x{key}", [len(key)]):
        redactor.learn(secret)
    assert redactor.redact_text(f"y{key}") == f"y{redactor.marker(key)}"
    assert redactor.redact_text(f"see {key[:13]}") == f"see {key[:13]}"
    redactor.register(key)  # the command's own: its parts go too
    assert redactor.redact_text(f"see {key[:13]}") != f"see {key[:13]}"


class _EchoingTheTokenEncoded(ProblemAnswer):
    def problem(self, token: str) -> dict[str, Any]:
        detail = "Invalid credentials: " + ", ".join(
            f"{name}={echo}" for name, echo in _echoes(token).items()
        )
        return {"detail": detail, "status": 403, "title": "Forbidden"}


@pytest.fixture
def echoing() -> Iterator[str]:
    yield from serve_http(_EchoingTheTokenEncoded)


@pytest.mark.e2e
def test_a_server_echoing_the_token_encoded_shows_it_nowhere(tmp_path: Path, echoing: str) -> None:
    env = {"AUDITOR_BASE_URL": echoing, "AUDITOR_APP_URL": echoing, "AUDITOR_TOKEN": TOKEN}
    out = tmp_path / "reports"
    argv = ["run", "--state", str(tmp_path / "state.db"), "--out", str(out)]
    argv += ["-o", "html,md,json,sarif,junit"]
    err = io.StringIO()
    ctx = Context(env=env, stdout=io.StringIO(), stderr=err, clock=lambda: FIXED_NOW,
                  cwd=str(tmp_path))  # fmt: skip
    assert main(argv, ctx) == 2
    stderr = err.getvalue()
    assert "403 Forbidden: Invalid credentials: hex=[token], HEX=[token]" in stderr, stderr
    assert "base64 of its hex=[token], base64 of its HEX=[token], UTF-16LE base64=[token]" in stderr
    texts = {"stderr": stderr}
    texts |= {p.name: p.read_text(errors="replace") for p in out.iterdir() if p.is_file()}
    assert "report.md" in texts and "findings.json" in texts
    for name, text in texts.items():
        assert not _leaks(TOKEN, text), (name, _leaks(TOKEN, text))


def test_every_run_of_a_random_token_is_hidden_in_an_echo() -> None:
    """Reviews R45 and R47: leaving aside the runs of a token made of words (`-owner-t` of
    `demo-owner-token`, which hid what users typed) must leave out no run of a random token:
    a test of each run alone let `-live-AbCdEf` show, and every run of a token in capitals (25
    of 48 characters in a server's echo). Over random tokens of the usual shapes (3 seeds),
    every run of a window that may be a credential is hidden, as before."""
    import random
    import string
    import uuid

    from auditor.redact.memory import credential_like
    from auditor.redact.own import pieces, window

    def every_run(token: str) -> list[str]:
        n = window(token)
        runs = [token] + [token[i : i + n] for i in range(len(token) - n + 1)] if n else []
        return [run for run in dict.fromkeys(runs) if credential_like(run)]

    b62 = string.ascii_letters + string.digits
    for seed in (7, 11, 2026):
        rng = random.Random(seed)

        def text(alphabet: str, n: int, rng: random.Random = rng) -> str:
            return "".join(rng.choice(alphabet) for _ in range(n))

        shapes = [
            lambda: "tok_" + text("0123456789abcdef", 24),
            lambda: "sk-live-" + text(b62, 24),
            lambda: "sk-proj-" + text(b62 + "-_", 40),
            lambda: text(b62 + "-_", 32),  # secrets.token_urlsafe(24)
            lambda: text(string.ascii_uppercase + string.digits, 32),
            lambda: text(string.ascii_uppercase, 48),
            lambda: "AKIA" + text(string.ascii_uppercase + string.digits, 16),
            lambda: str(uuid.UUID(text("0123456789abcdef", 32))),
            lambda: ".".join(text(b62 + "-_", n) for n in (36, 60, 43)),  # a JWT's shape
            lambda: "github_pat_" + text(b62, 22) + "_" + text(b62, 59),
            lambda: f"xoxb-{text(string.digits, 12)}-{text(string.digits, 12)}-{text(b62, 24)}",
        ]
        for shape in shapes:
            for _ in range(100):
                token = shape()
                assert pieces(token) == every_run(token), token
    assert pieces("demo-owner-token") == ["demo-owner-token"]  # its runs are words
