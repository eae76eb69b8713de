"""`run --orgs FILE`: an organization's `name`, `token_env` or `token_file` that holds a token
(its own, another organization's, the command's) or that would take the name of what the run
writes beside the organizations' folders is refused when the file is read: exit 2, one line,
the organization named by its place, no part of the token shown, nothing written."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import OWNER_TOKEN, run_cli, secret_forms

NOW = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
HEX_TOKEN = "tok-" + "0123456789abcdef" * 2


def _written(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


@pytest.fixture
def hex_emulator() -> Iterator[Any]:
    from auditor.emulator import start_emulator

    emu = start_emulator(tokens={HEX_TOKEN: "owner"}, revisions=10, repos=3, now=NOW)
    try:
        yield emu
    finally:
        emu.stop()


def _refused(tmp_path: Path, body: str, env: dict[str, str], *extra: str) -> str:
    """Run `run --orgs` on `body`: exit 2, one line, nothing written; that line."""
    (tmp_path / "orgs.toml").write_text(body)
    before = _written(tmp_path)
    argv = ["run", "--orgs", "orgs.toml", "--state", "st/state.db", "--out", "rep", *extra]
    code, out, err = run_cli(argv, env, tmp_path)
    assert code == 2, out + err
    assert out == "" and len(err.splitlines()) == 1, out + err
    assert _written(tmp_path) == before  # no report folder, no state file, no summary
    return err


@pytest.mark.parametrize("offline", [False, True])
@pytest.mark.parametrize("token", [OWNER_TOKEN, HEX_TOKEN])
def test_a_token_used_as_an_organizations_name_is_refused_unshown(
    emulator: Any, hex_emulator: Any, tmp_path: Path, token: str, offline: bool
) -> None:
    """The tester's file: `name` is the token its own `token_file` holds. It was accepted:
    the token in the table, every `[name]` prefix, the last line, summary.json, the report
    folder's name, report.md, the SARIF's automation id and the state file's name."""
    emu = hex_emulator if token == HEX_TOKEN else emulator
    (tmp_path / "owner.tok").write_text(token + "\n")
    body = (
        f'[[org]]\nname = "acme"\nbase_url = "{emu.base_url}"\ntoken_file = "owner.tok"\n\n'
        f'[[org]]\nname = "{token}"\nbase_url = "{emu.base_url}"\ntoken_file = "owner.tok"\n'
    )
    err = _refused(tmp_path, body, {}, *(["--offline"] if offline else []))
    assert "orgs.toml:7:1: org[1]: name: holds org[0]'s token (not shown)" in err, err
    for form in secret_forms(token):
        assert form not in err


@pytest.mark.parametrize(
    ("org_b", "env", "where"),
    [
        # another organization's token as the name of b's variable: "… demo-owner-token is
        # not set" showed a's token
        ('token_env = "{t}"', {"OT": "{t}"}, "org[1]: token_env: holds org[0]'s token"),
        # the name of b's token file: "…/demo-owner-token: cannot read token file"
        ('token_file = "{t}"', {"OT": "{t}"}, "org[1]: token_file: holds org[0]'s token"),
        ('token_file = "sub/{t}.tok"', {"OT": "{t}"}, "org[1]: token_file: holds org[0]'s"),
        # the command's own token, inside a name
        ('token_env = "OT"', {"OT": "x-other-0123456", "AUDITOR_TOKEN": "{t}"}, "holds AUDITOR"),
    ],
)
def test_a_token_in_token_env_or_token_file_is_refused_unshown(
    tmp_path: Path, org_b: str, env: dict[str, str], where: str
) -> None:
    token = "demo-owner-token"
    name_b = f"b-{token}" if "AUDITOR_TOKEN" in env else "b"
    body = (
        '[[org]]\nname = "a"\nbase_url = "https://a.example"\ntoken_env = "OT"\n\n'
        f'[[org]]\nname = "{name_b}"\nbase_url = "https://b.example"\n'
        + org_b.format(t=token)
        + "\n"
    )
    env = {k: v.format(t=token) for k, v in env.items()}
    err = _refused(tmp_path, body, env)
    assert where in err, err
    for form in secret_forms(token):
        assert form not in err


def test_a_token_that_cannot_be_read_is_never_shown_in_another_error(tmp_path: Path) -> None:
    """An error about one organization's key names no token of any organization, read or
    listed later in the file (org b's missing file is named after a's token, read later)."""
    token = "opaque-token-5f1e2d3c"
    (tmp_path / "a.tok").write_text(token)
    body = (
        f'[[org]]\nname = "b"\nbase_url = "https://b.example"\ntoken_file = "{token}.d/x"\n\n'
        '[[org]]\nname = "a"\nbase_url = "https://a.example"\ntoken_file = "a.tok"\n'
    )
    err = _refused(tmp_path, body, {})
    assert "org[0]: token_file: holds org[1]'s token (not shown)" in err, err
    assert token not in err


def test_a_secret_looking_token_file_name_is_refused(tmp_path: Path) -> None:
    secret = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    (tmp_path / secret).write_text("opaque-token-5f1e2d3c")
    body = f'[[org]]\nname = "a"\nbase_url = "https://a.example"\ntoken_file = "{secret}"\n'
    err = _refused(tmp_path, body, {})
    assert "org[0]: token_file: expected the path of the file" in err and secret not in err


@pytest.mark.parametrize("name", ["summary.json", "Summary.JSON", "SUMMARY.json"])
def test_an_organization_named_like_the_summary_is_refused(
    emulator: Any, tmp_path: Path, name: str
) -> None:
    """An organization named `summary.json` took the summary's place: the run ended in
    `auditor: error: unexpected IsADirectoryError`, with no table and no summary."""
    body = (
        f'[[org]]\nname = "acme"\nbase_url = "{emulator.base_url}"\ntoken_env = "T"\n\n'
        f'[[org]]\nname = "{name}"\nbase_url = "{emulator.base_url}"\ntoken_env = "T"\n'
    )
    err = _refused(tmp_path, body, {"T": OWNER_TOKEN})
    assert f"orgs.toml:7:1: org[1]: name: {name!r} is the name of a file the run writes" in err
    assert "unexpected" not in err


@pytest.mark.parametrize("name", ["state-acme.db", "STATE-acme.db.lock", "state-acme.db-wal"])
def test_an_organization_named_like_a_state_file_in_the_report_folder_is_refused(
    tmp_path: Path, name: str
) -> None:
    """`--state rep/state.db --out rep`: the organizations' SQLite files are written beside
    their report folders; one named `state-acme.db` took acme's state file's name (one of the
    two failed, whichever came second)."""
    body = (
        '[[org]]\nname = "acme"\nbase_url = "https://a.example"\ntoken_env = "T"\n\n'
        f'[[org]]\nname = "{name}"\nbase_url = "https://b.example"\ntoken_env = "T"\n'
    )
    (tmp_path / "orgs.toml").write_text(body)
    argv = ["run", "--orgs", "orgs.toml", "--state", "rep/state.db", "--out", "rep", "--offline"]
    code, out, err = run_cli(argv, {"T": "opaque-token-5f1e2d3c"}, tmp_path)
    assert code == 2 and out == "" and len(err.splitlines()) == 1, out + err
    assert f"organization {name!r}: its report folder would be named as " in err
    assert "of organization 'acme'" in err and not (tmp_path / "rep").exists()
    # in folders of their own, the same names are fine
    argv[4] = "st/state.db"
    code, out, err = run_cli(argv, {"T": "opaque-token-5f1e2d3c"}, tmp_path)
    assert "report folder would be named" not in err and "ORG" in out  # (no state file yet)
    assert (tmp_path / "rep" / "summary.json").is_file()


def test_a_name_that_is_the_token_of_a_table_giving_both_token_keys_is_not_shown(
    tmp_path: Path,
) -> None:
    """Both `token_env` and `token_file` given is refused naming the organization: its tokens
    are read first all the same, so a name that is one of them is refused unshown instead."""
    token = "opaque-token-5f1e2d3c"
    (tmp_path / "a.tok").write_text("another-token-0a1b2c3d")
    body = (
        f'[[org]]\nname = "{token}"\nbase_url = "https://a.example"\n'
        'token_env = "OT"\ntoken_file = "a.tok"\n'
    )
    err = _refused(tmp_path, body, {"OT": token})
    assert "org[0]: name: holds org[0]'s token (not shown)" in err and token not in err
