"""The command's own token typed on the command line in another form than as itself (tester
T71 #4): its base64, its hex, in capitals, reversed, a run of 12 of its characters, as
`--sarif-category`, `--author` and in the names of the input files and folders and `--out`.
The README says the own token is always hidden, in every form, and that these values show it
as `[token]` (`not-shown` in findings.sarif's category): they were shown as typed, in every
report, the `reports:` line and an evidence bundle's `run-parameters.json`, where the raw token
read `[token]`.

Run as a user runs it: `python -m auditor` in a child process, every file it writes read back.
"""

from __future__ import annotations

import base64
import html
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from auditor.emulator import start_emulator
from tests.conftest import FIXED_NOW

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
TOKEN = "tok_4625b059281d06138c9bb22f"  # as `tok_` + secrets.token_hex(12) makes one
HEXED = TOKEN.encode().hex()

#: The token as a user may type it: each a name a folder can have (no `/`).
TYPED = {
    "raw": TOKEN,
    "base64": base64.b64encode(TOKEN.encode()).decode(),
    "base64-url": base64.urlsafe_b64encode(TOKEN.encode()).decode().rstrip("="),
    "hex": HEXED,
    "HEX": HEXED.upper(),
    "upper": TOKEN.upper(),
    "reversed": TOKEN[::-1],
    "a run of 12": TOKEN[9:21],
    "base64 of its hex": base64.b64encode(HEXED.encode()).decode(),
    "UTF-16LE base64": base64.b64encode(TOKEN.encode("utf-16-le")).decode(),
}


def _cores(data: bytes) -> list[str]:
    """The base64 of `data` wherever its encoding starts (at each of 3 byte offsets), but the
    characters a neighbouring byte changes."""
    return [
        base64.b64encode(data[skip : skip + (len(data) - skip) // 3 * 3]).decode()
        for skip in range(3)
    ]


def _leaks(text: str) -> list[str]:
    """The forms of the token `text` shows, in any case, once HTML references are read and
    Markdown's and JSON's backslashes go: a run of 12 of its characters (as written or
    reversed), of 24 of its hex, or its base64 (of it, of its hex, of its UTF-16LE text)."""
    low = html.unescape(text).replace("\\", "").lower()
    token = TOKEN.lower()
    runs = [token[i : i + 12] for i in range(len(token) - 11)]
    runs += [run[::-1] for run in runs] + [HEXED[i : i + 24] for i in range(len(HEXED) - 23)]
    for data in (TOKEN.encode(), HEXED.encode(), HEXED.upper().encode(), TOKEN.encode("utf-16-le")):
        for core in _cores(data):
            runs += [core.lower(), core.translate(str.maketrans("+/", "-_")).lower()]
    return [run for run in runs if run in low]


def _child_env(tmp_path: Path, env: dict[str, str]) -> dict[str, str]:
    return {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path), "PYTHONPATH": str(ROOT),
            "AUDITOR_TOKEN": TOKEN, **env}  # fmt: skip


def _auditor(
    tmp_path: Path, argv: list[str], env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "auditor", *argv], cwd=tmp_path,
                          env=_child_env(tmp_path, env), capture_output=True, text=True,
                          timeout=300)  # fmt: skip


def _texts(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder.parent)): p.read_text(encoding="utf-8", errors="replace")
        for p in folder.rglob("*")
        if p.is_file()
    }


@pytest.mark.parametrize("form", list(TYPED))
def test_review_shows_the_token_typed_in_any_form_as_token(tmp_path: Path, form: str) -> None:
    typed = TYPED[form]
    folder = tmp_path / f"in-{typed}"
    folder.mkdir()
    shutil.copy(EXAMPLES / "proposed-settings.yaml", folder / f"{typed}.yaml")
    shutil.copy(EXAMPLES / "live-settings.yaml", folder / "live.yaml")
    summary = tmp_path / "step-summary.md"
    argv = ["review", f"in-{typed}/{typed}.yaml", "--against", f"in-{typed}/live.yaml"]
    argv += ["--offline", "--state", "s.db", "--out", f"out-{typed}", "--author", typed]
    argv += ["--sarif-category", f"ci/{typed.rstrip('=')}", "-o", "html,md,json,sarif,junit"]
    done = _auditor(tmp_path, argv, {"GITHUB_STEP_SUMMARY": str(summary)})
    assert done.returncode == 1, done.stderr  # the example change introduces findings
    texts = {"stdout": done.stdout, "stderr": done.stderr, "summary": summary.read_text()}
    texts |= _texts(tmp_path / f"out-{typed}")
    assert len(texts) == 8  # the five reports
    leaks = {name: found for name, text in texts.items() if (found := _leaks(text))}
    assert not leaks
    assert f"reports: {tmp_path}/out-[token]/report.html" in done.stdout
    assert "proposed by [token] (--author)" in done.stdout
    review = json.loads(texts[f"out-{typed}/findings.json"])["review"]
    assert (review["proposed_file"], review["against"]) == ("in-[token]/[token].yaml",
                                                            "in-[token]/live.yaml")  # fmt: skip
    sarif = json.loads(texts[f"out-{typed}/findings.sarif"])["runs"][0]
    assert sarif["automationDetails"]["id"].startswith("ci/not-shown/review-")


def test_run_and_export_show_the_token_typed_in_other_forms_as_token(tmp_path: Path) -> None:
    """`auditor run` and `auditor export` with the token's hex as the --policy folder, its
    base64 as --sarif-category, its capitals as the --waivers folder and its reverse as the
    --out folder: every report, the bundle's `run-parameters.json`, its copies and reports."""
    policies, waivers = tmp_path / TYPED["hex"], tmp_path / TYPED["upper"]
    policies.mkdir()
    waivers.mkdir()
    for name in ("baseline.yaml", "changes.yaml"):
        shutil.copy(ROOT / "policies" / name, policies / name)
    shutil.copy(EXAMPLES / "waivers.yaml", waivers / "waivers.yaml")
    out, bundle = f"reports-{TYPED['reversed']}", f"bundle-{TYPED['base64 of its hex']}"
    inputs = ["--policy", TYPED["hex"], "--waivers", f"{TYPED['upper']}/waivers.yaml"]
    with start_emulator(tokens={TOKEN: "owner"}, now=FIXED_NOW, revisions=20, repos=2) as emu:
        env = {"AUDITOR_BASE_URL": emu.base_url, "AUDITOR_APP_URL": emu.app_url,
               "AUDITOR_STATE": str(tmp_path / "state.db")}  # fmt: skip
        run = _auditor(tmp_path, ["run", "--no-usage", *inputs, "--out", out,
                                  "--sarif-category", TYPED["base64-url"]], env)  # fmt: skip
        export = _auditor(tmp_path, ["export", *inputs, "--out", bundle], env)
    assert run.returncode == 1, run.stderr
    assert export.returncode == 0, export.stderr
    texts = {"run": run.stdout + run.stderr, "export": export.stdout + export.stderr}
    texts |= _texts(tmp_path / out) | _texts(tmp_path / bundle)
    leaks = {name: found for name, text in texts.items() if (found := _leaks(text))}
    assert not leaks
    assert f"reports: {tmp_path}/reports-[token]/report.html" in run.stdout
    doc = json.loads(texts[f"{out}/findings.json"])
    assert {p["path"] for p in doc["policy_files"]} == {
        "[token]/baseline.yaml",
        "[token]/changes.yaml",
    }
    sarif = json.loads(texts[f"{out}/findings.sarif"])["runs"][0]
    assert sarif["automationDetails"]["id"].startswith("not-shown/")
    parameters = texts[f"{bundle}/run-parameters.json"]
    assert "[token]/baseline.yaml" in parameters and "[token]/waivers.yaml" in parameters


def test_a_token_made_of_words_leaves_the_words_a_user_types(tmp_path: Path) -> None:
    """Review R42 #1: with the emulator's `demo-owner-token`, runs of 8 of its characters
    (`-owner-t`, `o-owner-`) read as the token in what a user typed: `--out team-owner-tools`
    was said as `team[token]ools`, and `--author co-owner-team@…` was judged as `c[token]eam@…`
    (one more finding, from the author rule). Only the token itself is hidden there."""
    shutil.copy(EXAMPLES / "proposed-settings.yaml", tmp_path / "p.yaml")
    shutil.copy(EXAMPLES / "live-settings.yaml", tmp_path / "live.yaml")
    argv = ["review", "p.yaml", "--against", "live.yaml", "--offline", "--state", "s.db"]
    argv += ["--out", "team-owner-tools", "--author", "co-owner-team@acme.example", "-o", "json"]
    argv += ["--sarif-category", "ci/team-owner-tools"]
    done = _auditor(tmp_path, argv, {"AUDITOR_TOKEN": "demo-owner-token"})
    assert done.returncode == 1, done.stderr
    assert f"reports: {tmp_path}/team-owner-tools/findings.json" in done.stdout, done.stdout
    assert "proposed by co-owner-team@acme.example (--author)" in done.stdout, done.stdout
    assert "[token]" not in done.stdout + done.stderr
    typed = _auditor(tmp_path, [*argv[:-6], "--out", "t2", "--author", "demo-owner-token",
                                "-o", "json"], {"AUDITOR_TOKEN": "demo-owner-token"})  # fmt: skip
    assert "proposed by [token] (--author)" in typed.stdout, typed.stdout


# -- tester T82 #1: the token echoed as its base32 or as hex with its bytes apart ----------

B32 = base64.b32encode(TOKEN.encode()).decode()
#: The token as a server echoed it in a 403's problem detail, with the 15 forms already hidden.
APART = {
    "base32": B32,
    "base32 lower case": B32.lower(),
    "base32 unpadded": B32.rstrip("="),
    "base32 lower case unpadded": B32.lower().rstrip("="),
    "hex with `:`": TOKEN.encode().hex(":"),
    "HEX with `:`": TOKEN.encode().hex(":").upper(),
    "hex with `-`": TOKEN.encode().hex("-"),
    "HEX with `-`": TOKEN.encode().hex("-").upper(),
    "hex with spaces": TOKEN.encode().hex(" "),
    "HEX with spaces": TOKEN.encode().hex(" ").upper(),
}


@pytest.mark.parametrize("form", list(APART))
def test_the_tokens_base32_and_hex_apart_read_as_its_marker(form: str) -> None:
    from auditor.redact import Redactor
    from auditor.redact.shown import named_tokens

    redactor = Redactor(b"own-token-key", [TOKEN])
    marker = redactor.marker(TOKEN)
    text = f"403 Forbidden: invalid credentials {APART[form]} (request 42)"
    for out in (redactor.redact_shown(text), redactor.redact_text(text)):
        assert out == f"403 Forbidden: invalid credentials {marker} (request 42)"
    assert redactor.redact_json({"detail": text})["detail"] == redactor.redact_text(text)
    assert named_tokens(f"ci/{APART[form]}", [TOKEN]) == "ci/[token]"  # typed on the line


def _outside(out: str, marker: str) -> tuple[str, str]:
    """What `x … y` redacted shows before and after the one marker in it."""
    inner = out.removeprefix("x ").removesuffix(" y")
    assert inner.count(marker) == 1, out
    before, after = inner.split(marker)
    return before, after


def test_the_base32_of_each_run_of_12_is_hidden_wherever_the_encoding_starts() -> None:
    """Each run of 12 of the token's characters between other bytes (0 to 4 before it, so
    each of base32's 5 places, and 0 to 4 after): every character carrying a bit of the run is
    in the marker; the characters of the other bytes alone may stay, and nothing more."""
    from auditor.redact import Redactor
    from auditor.redact.own import pieces

    redactor = Redactor(b"own-token-key", [TOKEN])
    marker = redactor.marker(TOKEN)
    runs = [TOKEN[i : i + 12] for i in range(len(TOKEN) - 11)]
    assert set(runs) <= set(pieces(TOKEN))  # every run of this token may be a credential
    for run in runs:
        for before in range(5):
            for after in range(5):
                data = b"\xfe\x01\x80\x7f"[:before] + run.encode() + b"\x00\x9c\x33\xf1"[:after]
                encoded = base64.b32encode(data).decode()
                for text in (encoded, encoded.lower()):
                    shown, rest = _outside(redactor.redact_shown(f"x {text} y"), marker)
                    assert text.startswith(shown) and len(shown) <= 8 * before // 5, text
                    assert text.endswith(rest), text
                    assert len(text) - len(rest) >= -(-8 * (before + 12) // 5), text


def test_the_base32_of_an_8_character_secret_is_hidden_wherever_the_encoding_starts() -> None:
    """A secret of 8 characters (a proxy's password) is one piece: after 1, 6, 11 … other
    bytes it fills no group of base32's 5 bytes, and the base32 of `admin:` and the password
    showed it whole (review R51 #1). Now, at each of the 5 places: no character made of the
    password's bits alone stays."""
    from auditor.redact import Redactor

    password = "Xk9mQ2vT"
    redactor = Redactor(b"own-token-key", [password])
    for before in ("", "a", "ab", "abc", "abcd", "admin:", "proxy:"):
        data = (before + password).encode()
        encoded = base64.b32encode(data).decode()
        for text in (encoded, encoded.lower(), encoded.rstrip("=")):
            out = redactor.redact_shown(f"x {text} y")
            assert "[secret" in out, (before, out)
            shown, _ = out.removeprefix("x ").split("[secret", 1)
            # what stays before the marker: the characters of the bytes before it alone
            assert len(shown) <= 8 * len(before) // 5, (before, out)


def test_a_cut_base32_of_the_token_shows_no_group_of_it() -> None:
    """The token's base32 cut at any length (a message cut at 1,000 characters), from its
    start or a group's: from 16 characters on (10 bytes of the token) it is its marker, but for
    fewer than a group of 8 characters at the cut (under 5 bytes); 15 or fewer (9 bytes: under
    a run of 12) show, as a run of 11 characters does."""
    from auditor.redact import Redactor

    redactor = Redactor(b"own-token-key", [TOKEN])
    marker = redactor.marker(TOKEN)
    assert redactor.redact_shown(f"x {B32[:15]} y") == f"x {B32[:15]} y"
    for end in range(16, len(B32) + 1):
        for start in (0, 8, 16, 24):
            if end - start < 16:
                continue
            shown, rest = _outside(redactor.redact_shown(f"x {B32[start:end]} y"), marker)
            assert shown == "" and len(rest.rstrip("=")) < 8, (start, end, rest)


def test_hex_apart_hides_each_run_of_12_and_leaves_one_of_11() -> None:
    """As the token's plain hex: each run of 12 of its bytes with `:`, `-` or a space between
    them reads as its marker, wherever it stands; a run of 11 stays (as 11 characters do)."""
    from auditor.redact import Redactor

    redactor = Redactor(b"own-token-key", [TOKEN])
    marker = redactor.marker(TOKEN)
    for sep in ":- ":
        for i in range(len(TOKEN) - 11):
            for run in (
                TOKEN[i : i + 12].encode().hex(sep),
                TOKEN[i : i + 12].encode().hex(sep).upper(),
            ):
                assert redactor.redact_shown(f"x {run} y") == f"x {marker} y", run
                assert redactor.redact_shown(f"id={run}{sep}00") == f"id={marker}{sep}00", run
        short = TOKEN[3:14].encode().hex(sep)
        assert redactor.redact_shown(f"x {short} y") == f"x {short} y"
    cut = TOKEN.encode().hex(":")[:-7]  # `…:62:62:3` (a message cut short)
    assert redactor.redact_shown(f"x {cut}") == f"x {marker}:3"  # half a byte, as of plain hex
