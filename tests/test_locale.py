"""The CLI as a user's shell runs it, under locales other than C.UTF-8.

A Turkish locale (tr_TR.UTF-8): the C library's `tolower('I')` is not `'i'` there, and
CPython 3.11's sqlite3 decides with it whether a statement is an INSERT (so whether its
`rowcount` is counted): a first sync failed with "101 of 100 revisions written as new were
stored already". The locale is compiled with `localedef` into the test's folder (LOCPATH), as
Debian's `locales` package (installed by .ci/run) allows; without it the test fails when
CI=true, and skips locally, saying how to install it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import emulator_env

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[1]
TR_SOURCE = Path("/usr/share/i18n/locales/tr_TR")
INSTALL = "install Debian's `locales` package (apt-get install locales), as .ci/run does"


def _missing(message: str) -> None:
    """A loud failure in CI when the locale cannot be built, a skip locally."""
    message = f"{message}; {INSTALL}"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"LOCALE MISSING IN CI: {message}")
    pytest.skip(message)


@pytest.fixture(scope="module")
def tr_locpath(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding tr_TR.UTF-8, for LOCPATH."""
    localedef = shutil.which("localedef")
    if localedef is None:
        _missing("`localedef` is not installed")
    if not TR_SOURCE.is_file():
        _missing(f"{TR_SOURCE} is missing")
    folder = tmp_path_factory.mktemp("locales")
    done = subprocess.run(
        [str(localedef), "-i", "tr_TR", "-f", "UTF-8", str(folder / "tr_TR.UTF-8")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if done.returncode != 0 or not (folder / "tr_TR.UTF-8").is_dir():
        _missing(f"localedef could not build tr_TR.UTF-8 (exit {done.returncode}): {done.stderr}")
    return folder


def _auditor(argv: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    clean = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("AUDITOR_", "LC_", "LANG")) and k not in ("LOCPATH", "PYTHONUTF8")
    }
    return subprocess.run(
        [sys.executable, "-m", "auditor", *argv],
        capture_output=True,
        text=True,
        encoding="utf-8",
        cwd=cwd,
        env={**clean, "PYTHONPATH": str(REPO), **env},
        timeout=300,
    )


def test_the_locale_is_turkish_in_the_child(tr_locpath: Path, tmp_path: Path) -> None:
    # The check the test below relies on: the child really runs under tr_TR, where the C
    # library lowers "I" to something other than "i" (else the test proves nothing).
    probe = (
        "import locale, sqlite3; print(locale.setlocale(locale.LC_CTYPE)); "
        "db = sqlite3.connect(':memory:'); db.execute('CREATE TABLE t (k)'); "
        "print(db.execute('INSERT INTO t VALUES (1)').rowcount)"
    )
    env = {"LOCPATH": str(tr_locpath), "LC_ALL": "tr_TR.UTF-8"}
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env={**os.environ, **env}
    )
    assert done.returncode == 0, done.stderr
    ctype, rowcount = done.stdout.split()
    assert ctype == "tr_TR.UTF-8"
    if rowcount != "-1":  # a CPython whose sqlite3 no longer asks the C library
        pytest.skip(f"this Python's sqlite3 counts an upper-case INSERT under tr_TR ({rowcount})")


@pytest.mark.parametrize("variable", ["LC_ALL", "LANG", "LC_CTYPE"])
def test_sync_and_run_under_a_turkish_locale(
    emu: Any, tr_locpath: Path, tmp_path: Path, variable: str
) -> None:
    env = {
        **emulator_env(emu, tmp_path / "state.db"),
        "LOCPATH": str(tr_locpath),
        variable: "tr_TR.UTF-8",
    }
    synced = _auditor(["sync"], env, tmp_path)
    assert synced.returncode == 0, synced.stderr
    assert "written as new were stored already" not in synced.stderr
    history = _auditor(["history", "--format", "json"], env, tmp_path)
    assert history.returncode == 0, history.stderr
    assert history.stdout.count('"revision"') >= 30  # the emulator's 30 revisions are stored

    fresh = {**env, "AUDITOR_STATE": str(tmp_path / "fresh.db")}
    ran = _auditor(
        ["run", "--soft-fail", "-q", "--out", str(tmp_path / "reports")], fresh, tmp_path
    )
    assert ran.returncode == 0, ran.stderr
    assert (tmp_path / "reports" / "findings.json").is_file()


# --- stdout in an encoding that is not UTF (PYTHONIOENCODING=ascii, a latin-1 locale, `LC_ALL=C`
# with PYTHONUTF8=0): a character it cannot encode is written as a `\uXXXX` escape (a surrogate
# pair beyond U+FFFF). `history` and `diff` (which print `…` and `→`) exited 2 with
# "unexpected UnicodeEncodeError".

ENCODINGS = {
    "ascii": {"PYTHONIOENCODING": "ascii"},
    "latin-1": {"PYTHONIOENCODING": "latin-1"},
    "C-locale": {"LC_ALL": "C", "PYTHONUTF8": "0"},
}
OUTPUTS = {
    "history-json": ["history", "--format", "json"],
    "history-text": ["history"],
    "diff-text": ["diff"],
    "diff-md": ["diff", "--format", "md"],
    "diff-json": ["diff", "--format", "json"],
}


@pytest.fixture(scope="module")
def synced_env(emu: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    from tests.conftest import run_cli

    folder = tmp_path_factory.mktemp("synced")
    env = emulator_env(emu, folder / "state.db")
    code, _, err = run_cli(["sync"], env, folder)
    assert code == 0, err
    return env


def _stdout(argv: list[str], env: dict[str, str], cwd: Path, encoding: str) -> str:
    clean = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("AUDITOR_", "LC_", "LANG", "PYTHONIO")) and k != "PYTHONUTF8"
    }
    done = subprocess.run(
        [sys.executable, "-m", "auditor", *argv],
        capture_output=True,
        cwd=cwd,
        env={**clean, "PYTHONPATH": str(REPO), **env},
        timeout=300,
    )
    assert done.returncode == 0, done.stderr.decode("utf-8", "replace")
    assert done.stderr == b""
    return done.stdout.decode(encoding)


def _escaped(text: str, encoding: str) -> str:
    """`text` with every character `encoding` cannot hold as its `\\uXXXX` escape(s)."""
    out = []
    for ch in text:
        try:
            ch.encode(encoding)
            out.append(ch)
        except UnicodeEncodeError:
            units = ch.encode("utf-16-be")
            out += [
                f"\\u{int.from_bytes(units[i : i + 2], 'big'):04x}"
                for i in (0, 2)[: len(units) // 2]
            ]
    return "".join(out)


@pytest.mark.parametrize("what", list(OUTPUTS))
@pytest.mark.parametrize("variant", list(ENCODINGS))
def test_stdout_that_is_not_utf_gets_escapes_not_a_crash(
    synced_env: dict[str, str], tmp_path: Path, variant: str, what: str
) -> None:
    argv = OUTPUTS[what]
    utf8 = _stdout(argv, {**synced_env, "PYTHONIOENCODING": "utf-8"}, tmp_path, "utf-8")
    encoding = "latin-1" if variant == "latin-1" else "ascii"
    seen = _stdout(argv, {**synced_env, **ENCODINGS[variant]}, tmp_path, encoding)
    if what.endswith("json"):
        assert json.loads(seen) == json.loads(utf8)
    else:
        assert seen == _escaped(utf8, encoding)
    if what != "diff-json":  # the outputs that crashed hold characters the encoding lacks
        assert seen != utf8 or encoding == "latin-1"


def test_the_escape_of_a_character_beyond_the_basic_plane_is_a_surrogate_pair() -> None:
    import io

    from auditor.cli import _Stdout

    raw = io.BytesIO()
    stream = io.TextIOWrapper(raw, encoding="ascii")
    out = _Stdout(stream)
    out.write(json.dumps({"k": "caf\u00e9 \u2026 \U0001f600"}, ensure_ascii=False))
    out.flush()
    text = raw.getvalue().decode("ascii")
    assert text == '{"k": "caf\\u00e9 \\u2026 \\ud83d\\ude00"}'
    assert json.loads(text) == {"k": "caf\u00e9 \u2026 \U0001f600"}


@pytest.mark.parametrize("encoding", ["shift_jis", "cp932", "euc_jp", "cp1252"])
def test_a_character_an_encoding_writes_as_another_is_escaped(encoding: str) -> None:
    """Shift_JIS and EUC-JP write the yen sign as the byte of a backslash (and the overline as
    a tilde) without calling any error handler: `"echo ¥100"` came out as the invalid JSON
    `"echo \\100"`. Such a character is escaped like one the encoding lacks."""
    import io

    from auditor.cli import _Stdout

    data = {"command": "echo \u00a5100 \u203e caf\u00e9 \u2192"}
    raw = io.BytesIO()
    stream = io.TextIOWrapper(raw, encoding=encoding)
    out = _Stdout(stream)
    out.write(json.dumps(data, ensure_ascii=False))
    out.flush()
    assert json.loads(raw.getvalue().decode(encoding)) == data
