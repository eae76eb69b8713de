"""The caller's own token echoed as hex in the other notations a dump is written in, as its
base32hex, or URL-encoded beside a value a detector took (review R51 #2 and #3): `74, 6f, …`,
`0x74 0x6f …`, `0x74,0x6f,…` (a C array, `xxd -i`), `\\x74\\x6f…`, `746f.6b5f.…`, base32hex
(`EHNMMNQQ…`), and `Ab12cd34%255FQw9rT5%255F…` once or twice percent-encoded in free text. Each
was shown in full (the URL-encoded one up to its first escape); the README says the command's
own token is hidden in every form: each reads as the token's marker (`[token]` in an error),
and no run of 12 of its bytes shows in any notation. A MAC address, an IPv6 address, a SHA
fingerprint, a date or a UUID that holds no such run stays as it is."""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import html
import re
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from auditor.redact import Redactor
from tests.conftest import ProblemAnswer, run_cli, serve_http

TOKEN = "tok_Zq8XvR2mK9pL4sT7wY1nB6cD3fH5jG0a"
RAW = TOKEN.encode()


def _pairs(data: bytes, fmt: str, sep: str) -> str:
    return sep.join(fmt.format(b) for b in data)


def _notations(token: str) -> dict[str, str]:
    """The token as hex dumps and base32hex write it, by name."""
    raw = token.encode()
    hexed = raw.hex()
    b32hex = base64.b32hexencode(raw).decode()
    return {
        "comma and space": _pairs(raw, "{:02x}", ", "),
        "0x and space": _pairs(raw, "0x{:02x}", " "),
        "C array": _pairs(raw, "0x{:02X}", ","),
        "xxd -i": ",\n  ".join(_pairs(raw[i : i + 12], "0x{:02x}", ", ") for i in (0, 12, 24)),
        "\\x": _pairs(raw, "\\x{:02x}", ""),
        "\\x in capitals": _pairs(raw, "\\x{:02X}", ""),
        "dot-grouped": ".".join(hexed[i : i + 4] for i in range(0, len(hexed), 4)),
        # PowerShell's `-join ';'`, and the other separators a dump is written with (R58 #3)
        "semicolons": _pairs(raw, "{:02x}", ";"),
        "bars": _pairs(raw, "{:02x}", "|"),
        "slashes": _pairs(raw, "{:02x}", "/"),
        "underscores": _pairs(raw, "{:02X}", "_"),
        "base32hex": b32hex,
        "base32hex lower case, unpadded": b32hex.lower().rstrip("="),
        "base32 of its hex": base64.b32encode(hexed.encode()).decode(),
        "base32 of its HEX, unpadded": base64.b32encode(hexed.upper().encode())
        .decode()
        .rstrip("="),
    }


def _base32_decodings(text: str) -> list[bytes]:
    """What each base32- or base32hex-looking run of `text` decodes to, from each of its first
    8 characters (wherever the encoding started)."""
    found = []
    for pattern, decode in ((r"[0-9A-Va-v]{8,}=*", base64.b32hexdecode),
                            (r"[A-Za-z2-7]{8,}=*", base64.b32decode)):  # fmt: skip
        for m in re.finditer(pattern, text):
            run = m[0].rstrip("=").upper()
            for start in range(min(8, len(run))):
                piece = run[start:][: len(run[start:]) // 8 * 8]
                if piece:
                    with contextlib.suppress(binascii.Error):
                        found.append(decode(piece).lower())
    return found


def _shown_runs(token: str, text: str) -> list[bytes]:
    """The runs of 12 of the token's bytes that `text` shows: as characters (URL-decoded
    twice too), as hex whatever stands between its pairs, in base32hex, or its hex in
    base32."""
    raw = token.encode()
    runs = [raw[i : i + 12] for i in range(len(raw) - 11)]
    low = text.lower()
    hex_digits = re.sub(r"0x|\\x|[^0-9a-f]", "", low)  # every separator and prefix gone
    decoded = urllib.parse.unquote(urllib.parse.unquote(text)).lower()
    base32 = _base32_decodings(text)
    return [
        run
        for run in runs
        if run.decode().lower() in decoded
        or run.hex() in hex_digits
        or any(run in data or run.hex().encode() in data for data in base32)
    ]


@pytest.mark.parametrize("name", list(_notations(TOKEN)))
def test_the_token_in_another_hex_notation_or_in_base32_reads_as_its_marker(name: str) -> None:
    redactor = Redactor(b"own-token-key", [TOKEN])
    marker = redactor.marker(TOKEN)
    text = f"403 Forbidden: credential {_notations(TOKEN)[name]} (request 42)"
    for out in (redactor.redact_shown(text), redactor.redact_text(text)):
        if name.startswith("base32 of its"):  # a detector takes a part: fewer than 12 show
            assert marker in out and out.endswith(f"{marker} (request 42)"), out
            assert not _shown_runs(TOKEN, out), out
        else:
            assert out == f"403 Forbidden: credential {marker} (request 42)", out
    out = redactor.redact_json({"detail": text})["detail"]
    assert not _shown_runs(TOKEN, out), out


@pytest.mark.parametrize("sep", [":", "-", ",", " ", ";"])
@pytest.mark.parametrize("width", [16, 20, 32, 35, 40])
def test_a_fingerprint_wrapped_at_any_width_shows_no_run_of_12(sep: str, width: int) -> None:
    """Review R58 #1: wrapped (as `fold` or a log viewer wraps it) before a separator
    (`32⏎:6d`) or inside a byte (`5a:7⏎1`), the hex with its bytes apart showed 22 bytes of
    the token: the bytes were joined only where white space came after a separator."""
    redactor = Redactor(b"own-token-key", [TOKEN])
    dump = _pairs(RAW, "{:02x}", sep)
    for wrapped in (
        "\n".join(dump[i : i + width] for i in range(0, len(dump), width)),  # inside a byte too
        f"\n{sep}".join(dump.split(sep)) if sep.strip() else dump,  # before each separator
        f" {sep} ".join(dump.split(sep)) if sep.strip() else dump,  # white space around it
    ):
        text = f"fingerprint:\n{wrapped}\n(request 42)"
        for out in (redactor.redact_shown(text), redactor.redact_text(text)):
            assert not _shown_runs(TOKEN, out), (wrapped, out)


@pytest.mark.parametrize("token", ["4820193756120398475612", "iK2ZWeqh", TOKEN])
@pytest.mark.parametrize("lead", ["and", "n=7", "total 1,234,567", "74", "fingerprint:"])
def test_a_wrapped_dump_after_a_word_ending_in_a_hex_digit_shows_no_run(
    token: str, lead: str
) -> None:
    """Review R62 #1: after a line ending in a hex digit (`and`, `1,234,567`), the joined
    dump lost its first byte, and a token whose only hidden piece is the whole token (an
    all-digit one, an 8-character one) showed whole: `and⏎69:4b:32:5a:57:6⏎5:71:68`."""
    redactor = Redactor(b"own-token-key", [token])
    dump = _pairs(token.encode(), "{:02x}", ":")
    for width in (16, 19, 32):
        wrapped = "\n".join(dump[i : i + width] for i in range(0, len(dump), width))
        for text in (f"{lead}\n{wrapped}\nand more", f"{lead} {dump} and more"):
            out = redactor.redact_shown(text)
            assert redactor.marker(token) in out, (text, out)
            assert not _shown_runs(token, out), (text, out)


@pytest.mark.parametrize("before", range(5))
def test_the_tokens_base32hex_reads_as_its_marker_wherever_it_starts(before: int) -> None:
    """The base32hex of the token after 0 to 4 other bytes: only characters that carry no bit
    of the token may stay (those of the bytes before it), and the padding."""
    redactor = Redactor(b"own-token-key", [TOKEN])
    encoded = base64.b32hexencode(b"\x01\x02\x03\x04"[:before] + RAW).decode()
    for out in (redactor.redact_shown(f"echo {encoded} end"), redactor.redact_text(encoded)):
        assert not _shown_runs(TOKEN, out), out
        assert len(out.removeprefix("echo ").split("[", 1)[0]) <= 8 * before // 5, out
        assert "]" in out and not re.search(r"\][0-9A-V]", out), out


@pytest.mark.parametrize(
    "token",
    [
        "Ab12cd34_Qw9rT5_Zq8XvR2mK9pL4sT7wY1nB6cD3f",
        "Zq8XvR2mK9pL4sT7wY1nB6cD3fH5jG0a_Qw9rT5_Ab12cd34",
    ],
)
@pytest.mark.parametrize("times", [1, 2])
def test_a_url_encoded_token_shows_no_run_of_12_around_its_escapes(token: str, times: int) -> None:
    """A token URL-encoded once or twice (`%5F`, `%255F`) in free text: a detector takes the
    value from an escape on, and the token's characters before it (and after the last escape)
    were shown, 15 of them here."""
    encoded = "".join(c if c.isalnum() else f"%{ord(c):02X}" for c in token)
    if times == 2:
        encoded = encoded.replace("%", "%25")
    redactor = Redactor(b"own-token-key", [token])
    for context in ("x {} y", "pct={}", "detail=tok {} end"):
        text = context.format(encoded)
        for out in (redactor.redact_shown(text), redactor.redact_json({"d": text})["d"]):
            assert not _shown_runs(token, out), (text, out)
            assert "[secret fp:" in out, out


def test_a_url_encoded_token_with_a_slash_and_a_plus_shows_no_run_of_12() -> None:
    token = "Ab12cd34/Qw9rT5+Zq8XvR2mK9pL4sT7wY1nB6cD3f"
    redactor = Redactor(b"own-token-key", [token])
    text = f"x {urllib.parse.quote(token, safe='')} y"
    out = redactor.redact_shown(text)
    assert out.startswith(f"x {redactor.marker(token)}") and out.endswith(" y"), out
    assert not _shown_runs(token, out), out


_SHA = hashlib.sha256(b"a public key").hexdigest()
_UNRELATED = [
    "MAC aa:bb:cc:dd:ee:ff, AA-BB-CC-DD-EE-FF and 00:11:22:33:44:55:66:77",
    "IPv6 fe80::1ff:fe23:4567:890a and 2001:0db8:85a3:0000:0000:8a2e:0370:7334",
    "SHA256:" + ":".join(_SHA[i : i + 2] for i in range(0, 64, 2)),
    "SHA1 " + ":".join(hashlib.sha1(b"x").hexdigest()[i : i + 2] for i in range(0, 40, 2)).upper(),
    "at 2026-12-01T10:00:00.000Z, 2026-12-01 10:00:00, 01.12.2026 10.00.00",
    "ids 550e8400-e29b-41d4-a716-446655440000, 6ba7b810-9dad-11d1-80b4-00c04fd430c8",
    "ELF 0x7f, 0x45, 0x4c, 0x46, 0x02, 0x01, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00",
    "PNG \\x89PNG\\r\\n\\x1a\\n\\x00\\x00\\x00\\rIHDR",
    "words " + b"The quick brown fox jumps".hex(":"),
    "dead beef, a cafe, face-to-face 12.34.56.78.90.ab.cd.ef, version 1.2.3.4.5.6.7.8.9.10",
    "objects/3f/9e0d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e on 2026/12/01; ab|cd|ef; 0a_0b_0c_0d",
    "base32hex " + base64.b32hexencode(b"another secret value here").decode(),
    "100%25 of %7B%22a%22%3A1%7D, %41%42%43%44",
]


@pytest.mark.parametrize(
    "token",
    [TOKEN, "f81d4fae-7dec-11d0-a765-00a0c91e6bf6", "aabbccddeeff00112233445566778899",
     "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8", "bench-owner-token-0123456789abcdef"],
)  # fmt: skip
def test_hex_and_text_holding_no_run_of_the_token_stay(token: str) -> None:
    redactor = Redactor(b"own-token-key", [token])
    for text in _UNRELATED:
        assert redactor.redact_shown(text) == text
        assert redactor.redact_text(text) == text


class _EchoingTheTokenAsADump(ProblemAnswer):
    def problem(self, text: str) -> dict[str, Any]:
        dumps = _notations(text)
        escaped, commas = dumps["\\x"], dumps["comma and space"]
        encoded = "".join(c if c.isalnum() else f"%{ord(c):02X}" for c in text)
        detail = (
            f"credential {dumps['C array']} is not allowed; dump {dumps['xxd -i']} "
            f"bytes {escaped} and {commas}, id {dumps['base32hex']}, "
            f"seen at /login?t={encoded.replace('%', '%25')}"
        )
        return {"title": "Forbidden", "status": 403, "detail": detail}


@pytest.fixture
def dumping() -> Iterator[str]:
    yield from serve_http(_EchoingTheTokenAsADump)


@pytest.mark.e2e
def test_run_shows_the_token_echoed_as_a_dump_nowhere(tmp_path: Path, dumping: str) -> None:
    token = "tok_Ab12cd34_Qw9rT5_Zq8XvR2mK9pL4sT7wY1nB"
    env = {"AUDITOR_BASE_URL": dumping, "AUDITOR_APP_URL": dumping, "AUDITOR_TOKEN": token,
           "AUDITOR_STATE": str(tmp_path / "state.db")}  # fmt: skip
    argv = ["run", "--no-usage", "--out", "reports", "-o", "md,json,html,sarif,junit"]
    code, _out, err = run_cli(argv, env, tmp_path)
    assert code == 2, err
    assert "403 Forbidden: credential [token] is not allowed; dump [token] bytes [token] " \
           "and [token], id " in err, err  # fmt: skip
    texts = {"stderr": err}
    texts |= {p.name: html.unescape(p.read_text()) for p in (tmp_path / "reports").iterdir()}
    assert {"findings.json", "junit.xml", "report.html", "report.md"} <= set(texts)
    for name, text in texts.items():
        assert "is not allowed" in text or name == "report.md", name
        assert not _shown_runs(token, text), (name, _shown_runs(token, text))


@pytest.mark.parametrize("sep", [";", "|", "/", "_"])
def test_the_tokens_hex_beside_paths_dates_and_tables_hides_the_token_alone(sep: str) -> None:
    """Review R67 #3: with the token's hex in the same text, the separators `;`, `|`, `/`
    and `_` join its bytes and nothing of the git path, the date or the table beside it."""
    redactor = Redactor(b"own-token-key", [TOKEN])
    around = "objects/3f/9e0d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e on 2026/12/01; ab|cd|ef; 0a_0b_0c"
    text = f"{around}; credential {_pairs(RAW, '{:02x}', sep)} (request 42)"
    for out in (redactor.redact_shown(text), redactor.redact_text(text)):
        assert out == f"{around}; credential {redactor.marker(TOKEN)} (request 42)", out
