"""A `state` value that looks like a PostgreSQL connection string but is no valid
`postgresql://` URL (pasted with a space or a line end, a slash missing, a `file:` before it,
a libpq `key=value` string) is refused before anything is created or opened, in one line that
shows nothing of it; a path shown anywhere never shows a connection string's password."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXED_NOW, OWNER_TOKEN

from auditor.redact.shown import NOT_SHOWN, printed_path
from tests.conftest import run_cli, secret_forms

URL_PW = "Hunter2Secretx"
KV_PW = "Tr0ub4dor/3xyzzyQ"
URL = f"postgresql://pgadmin:{URL_PW}@127.0.0.1:55432/audit"
REST = f"pgadmin:{URL_PW}@127.0.0.1:55432/audit"

PADDED = "looks like a PostgreSQL connection string but is not a postgresql:// URL: it has a space"
SLASH = "is not a postgresql:// URL: check for a missing slash or colon after postgresql"
PREFIX = "is not a postgresql:// URL: something stands before postgresql: (such as file:)"
LIBPQ = "a libpq key=value connection string is not accepted: give postgresql://"
USER_INFO = "looks like a connection string's user:password@host but is not a postgresql:// URL"
EDGE = "it begins or ends with a space or a control character (as a pasted secret can)"

FORMS = [
    pytest.param(" " + URL, PADDED, id="leading-space"),
    pytest.param(URL + "\n", PADDED, id="trailing-newline"),
    pytest.param("\n" + URL, PADDED, id="leading-newline"),
    pytest.param("\t" + URL + " \r", PADDED, id="tab-and-cr"),
    pytest.param("\x1b" + URL, PADDED, id="control-character"),
    pytest.param("\u200b" + URL, PADDED, id="zero-width-space"),
    pytest.param("postgresql:/" + REST, SLASH, id="one-slash"),
    pytest.param("postgres:/" + REST, SLASH, id="postgres-one-slash"),
    pytest.param("POSTGRESQL:/" + REST, SLASH, id="capitals-one-slash"),
    pytest.param("postgresql+psycopg:/" + REST, SLASH, id="driver-one-slash"),
    pytest.param("postgresql//" + REST, SLASH, id="no-colon"),
    pytest.param("postgres//" + REST, SLASH, id="postgres-no-colon"),
    pytest.param("postgresql:" + REST, SLASH, id="user-info-after-colon"),
    pytest.param(" postgresql:/" + REST, SLASH, id="space-and-one-slash"),
    pytest.param("file:" + URL, PREFIX, id="file-prefix"),
    pytest.param("jdbc:" + URL, PREFIX, id="jdbc-prefix"),
    pytest.param(REST, USER_INFO, id="no-scheme"),
    pytest.param("//" + REST, USER_INFO, id="no-scheme-slashes"),
    pytest.param("./" + REST, USER_INFO, id="relative-user-info"),
    pytest.param(f"mysql:/{REST}", USER_INFO, id="other-scheme-one-slash"),
    pytest.param(f"host=db password={KV_PW} dbname=audit", LIBPQ, id="libpq"),
    pytest.param(f"password={KV_PW}", LIBPQ, id="libpq-password-only"),
    pytest.param(f"dbname=audit user=u password={KV_PW} sslmode=require", LIBPQ, id="libpq-4"),
    pytest.param(f"host = db port = 5432 password = {KV_PW}", LIBPQ, id="libpq-spaced"),
    pytest.param(f"service=audit password='{KV_PW} x'", LIBPQ, id="libpq-quoted"),
    pytest.param(f"port=5432 dbname=audit password={KV_PW}", LIBPQ, id="libpq-port-first"),
    pytest.param(f" host=db password={KV_PW}\n", LIBPQ, id="libpq-padded"),
    pytest.param(f"Host=db;Username=u;Password={KV_PW};Database=audit", LIBPQ, id="dotnet"),
    pytest.param(f"/srv/x password={KV_PW}", LIBPQ, id="password-after-a-path"),
]
PASSWORDS = (URL_PW, KV_PW, *KV_PW.split("/"))


def _assert_no_password(text: str) -> None:
    for secret in PASSWORDS:
        for form in secret_forms(secret):
            assert form not in text, (secret, form)


@pytest.fixture(scope="module")
def emu() -> Iterator[Any]:
    from auditor.emulator import start_emulator

    with start_emulator(tokens={OWNER_TOKEN: "owner"}, now=FIXED_NOW, revisions=5, repos=2) as e:
        yield e


def _tree(root: Path) -> set[Path]:
    return set(root.rglob("*"))


COMMANDS = {
    "run": ["run", "--out", "o", "-q", "--no-usage"],
    "sync": ["sync", "--no-usage"],
    "history": ["history"],
}


def _refused(cwd: Path, argv: list[str], env: dict[str, str], says: str, where: str) -> None:
    before = _tree(cwd)
    code, out, err = run_cli(argv, env, cwd)
    assert code == 2, err
    assert out == ""
    (line,) = err.splitlines()  # one line
    assert line.startswith(f"auditor: error: {where}: ") and says in line, line
    _assert_no_password(out + err)
    assert _tree(cwd) == before  # no folder or file named after the value, no store


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize(("state", "says"), FORMS)
def test_a_mistyped_connection_string_in_auditor_state_is_refused_unshown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, emu: Any, command: str, state: str, says: str
) -> None:
    monkeypatch.chdir(tmp_path)  # a relative path would be made here too
    env = {
        "AUDITOR_BASE_URL": emu.base_url,
        "AUDITOR_APP_URL": emu.app_url,
        "AUDITOR_TOKEN": OWNER_TOKEN,
        "AUDITOR_STATE": state,
    }
    _refused(
        tmp_path, COMMANDS[command], env, says, "AUDITOR_STATE"
    )  # the variable, as the README lists it


@pytest.mark.parametrize(("state", "says"), FORMS)
def test_a_mistyped_connection_string_as_state_flag_is_refused_unshown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, state: str, says: str
) -> None:
    monkeypatch.chdir(tmp_path)
    _refused(tmp_path, ["history", "--state", state], {}, says, "command line: state")


@pytest.mark.parametrize(("state", "says"), FORMS)
def test_a_mistyped_connection_string_in_a_config_file_is_refused_unshown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, state: str, says: str
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "c.toml").write_text(f"state = {json.dumps(state)}\n", encoding="utf-8")
    _refused(tmp_path, ["history", "--config", "c.toml"], {}, says, "c.toml:1:1: state")  # as typed


@pytest.mark.parametrize(
    ("state", "says"),
    [
        pytest.param(" state.db", EDGE, id="leading-space"),
        pytest.param("state.db\n", EDGE, id="trailing-newline"),
        pytest.param(
            f"postgresql://pgadmin:{URL_PW}@127.0.0.1:55432/au dit",
            "the postgresql:// URL holds a space or a control character",
            id="space-inside-url",
        ),
        pytest.param(
            f"postgresql://pgadmin:{URL_PW}\n@127.0.0.1:55432/audit",
            "the postgresql:// URL holds a space or a control character",
            id="newline-inside-url",
        ),
    ],
)
def test_a_state_value_with_a_space_or_control_character_where_none_belongs_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, state: str, says: str
) -> None:
    monkeypatch.chdir(tmp_path)
    _refused(tmp_path, ["history", "--state", state], {}, says, "command line: state")


@pytest.mark.parametrize(
    "relative",
    [
        pytest.param("my dir/state.db", id="space-in-folder"),
        pytest.param("a=b/state.db", id="equals-in-folder"),
        pytest.param("year=2026 month=11/state.db", id="hive-style-folders"),
        pytest.param("./host=db/state.db", id="dot-slash-keyword-folder"),
        pytest.param("postgresql/state.db", id="folder-named-postgresql"),
        pytest.param("me@corp/state.db", id="at-in-folder"),
        pytest.param("10:30/state.db", id="colon-in-folder"),
    ],
)
@pytest.mark.parametrize("absolute", [False, True], ids=["relative", "absolute"])
def test_a_file_path_with_a_space_or_equals_sign_inside_still_works(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, emu: Any, relative: str, absolute: bool
) -> None:
    monkeypatch.chdir(tmp_path)
    state = str(tmp_path / relative) if absolute else relative
    env = {"AUDITOR_BASE_URL": emu.base_url, "AUDITOR_TOKEN": OWNER_TOKEN, "AUDITOR_STATE": state}
    code, _, err = run_cli(["sync", "--no-usage"], env, tmp_path)
    assert code == 0, err
    assert (tmp_path / relative).is_file()
    code, out, err = run_cli(["history", "--state", state], {}, tmp_path)
    assert code == 0, err
    assert out


@pytest.mark.parametrize(
    ("path", "hidden", "kept"),
    [
        pytest.param(
            f"/tmp/w/ postgresql:/{REST}", URL_PW, "/tmp/w/ postgresql:/pgadmin:", id="one-slash"
        ),
        pytest.param(f"/w/{URL}", URL_PW, "127.0.0.1:55432/audit", id="url"),
        pytest.param(
            f"/tmp/w/host=db password={KV_PW} dbname=audit", KV_PW, " dbname=audit", id="libpq"
        ),
        pytest.param(f"/w/Password={KV_PW};Database=a", KV_PW, "/w/Password=", id="dotnet"),
        pytest.param("/w/u:pa/ss@wd@h/d", "pa/ss@wd", "/w/u:", id="slash-and-at-in-password"),
        pytest.param("/w/password='Tr0 ub4/dor'/x", "Tr0 ub4/dor", "/x", id="quoted"),
    ],
)
def test_a_path_shown_never_shows_a_connection_strings_password(
    path: str, hidden: str, kept: str
) -> None:
    shown = printed_path(path)
    assert NOT_SHOWN in shown and kept in shown, shown
    for piece in (hidden, *hidden.split("/")):
        assert piece not in shown, shown


@pytest.mark.parametrize(
    "path",
    ["/tmp/my dir/state.db", "./a=b/state.db", "/srv/me@corp/x", "/srv/10:30/x", "dev@example.com"],
)
def test_an_ordinary_path_is_shown_as_written(path: str) -> None:
    assert printed_path(path) == path


def test_a_state_file_name_ending_in_a_byte_that_is_no_utf8_still_works(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, emu: Any
) -> None:
    monkeypatch.chdir(tmp_path)
    name = os.fsdecode(b"state\xff")
    env = {"AUDITOR_BASE_URL": emu.base_url, "AUDITOR_TOKEN": OWNER_TOKEN, "AUDITOR_STATE": name}
    code, _, err = run_cli(["sync", "--no-usage"], env, tmp_path)
    assert code == 0, err
    assert (tmp_path / name).is_file()


@pytest.mark.parametrize(
    ("path", "hidden"),
    [
        pytest.param(f"/tmp/w/host=db password={KV_PW} dbname=audit", KV_PW, id="libpq"),
        pytest.param("/w/u:pa/ss@wd@h/d", "pa/ss@wd", id="slash-and-at-in-password"),
    ],
)
def test_an_unexpected_error_naming_such_a_path_never_shows_the_password(
    path: str, hidden: str
) -> None:
    # The last line of an unexpected error hides the paths the command was given name by
    # name (`hidden_paths`): a password holding a `/` was shown from that `/` on.
    from auditor.cli.failure import hidden_paths

    shown = hidden_paths(f"[Errno 5] Input/output error: '{path}'", [path])
    assert NOT_SHOWN in shown, shown
    for piece in (hidden, *hidden.split("/")):
        assert piece not in shown, shown


@pytest.mark.parametrize(
    ("state", "way_out"),
    [("./me:x@corp/state.db", False), ("port=5432 dbname=audit", True), ("./port=5432/s.db", None)],
)
def test_a_refusal_offers_a_way_out_only_where_it_works(
    tmp_path: Path, state: str, way_out: bool | None
) -> None:
    # "a file path written so starts with ./" was said of user:password@ too, where a
    # leading ./ changes nothing; it is said where it works, and there it does.
    code, _, err = run_cli(["history", "--state", state], {}, tmp_path)
    if way_out is None:  # taken as a path: no state file there
        assert code == 2 and "no state file at" in err, err
        return
    assert code == 2, err
    assert ("starts with ./" in err) is way_out, err
