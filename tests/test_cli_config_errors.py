"""Configuration as a user gets it wrong, through the real command line: a config file's
problem names its `file:line:col`, a service address is never echoed when it may hold a
credential, and white space a CI variable carries around an address is not an unexpected
error in the middle of a sync."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

from auditor.cli import Context, main
from tests.conftest import FIXED_NOW, OWNER_TOKEN


def run_cli(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    ctx = Context(env=env, stdout=out, stderr=err, clock=lambda: FIXED_NOW, cwd=str(cwd))
    return main(argv, ctx), out.getvalue() + err.getvalue()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            'base_url = "https://api.example.com"\n  timout = 5\n',
            "c.toml:2:3: unknown key 'timout' (did you mean 'timeout'?)",
            id="unknown-key",
        ),
        pytest.param(
            "# comment\n\ntimeout = 0\n",
            "c.toml:3:1: timeout: expected a positive number, got 0",
            id="wrong-value",
        ),
        pytest.param(
            'org = ""\n',
            "c.toml:1:1: org: expected a non-empty string, got an empty one",
            id="empty-string",
        ),
        pytest.param(
            "policies = 5\n",
            "c.toml:1:1: policies: expected a non-empty string, got a number",
            id="wrong-type",
        ),
        pytest.param(
            'fail_on = "high"\n[diff_keys]\nsets = 5\n',
            "c.toml:2:2: diff_keys.sets: expected a list of list paths, got int",
            id="sub-table",
        ),
        pytest.param(  # accepted, and matched nothing: patterns have no indices
            '[diff_keys]\nsets = ["customModels[0]"]\n',
            "c.toml:1:2: diff_keys.sets[0]: list path has a bracket: patterns are dotted paths "
            "without indices (`customModels`)",
            id="diff-keys-index",
        ),
        pytest.param(  # accepted: which way the list was compared was the table's guess
            '[diff_keys]\nsets = ["env"]\n[diff_keys.keyed]\nenv = "name"\n',
            "c.toml:1:2: diff_keys: list path 'env' is under both sets and keyed; name it "
            "under one",
            id="diff-keys-twice",
        ),
        pytest.param(
            "a = 1\nb = = 2\n", "c.toml:2:5: invalid TOML: Invalid value", id="invalid-toml"
        ),
        pytest.param(
            '[tool.auditor]\nfail_on = "high"\n',
            "c.toml:1:2: unknown key 'tool' (a --config file holds the keys at its top level, "
            "without [tool.auditor])",
            id="pyproject-section-in-config-file",
        ),
        pytest.param(  # the message spelled the value out, level by level: RecursionError
            "max_pages = " + "[" * 250 + "1" + "]" * 250 + "\n",
            "c.toml:1:1: max_pages: expected a positive integer, got [[[[[…]]]]]",
            id="deeply-nested-value",
        ),
        pytest.param(  # tomllib's ValueError beyond Python's 4,300 digits: "unexpected"
            "max_pages = " + "9" * 5000 + "\n",
            "c.toml: invalid TOML: a number too long to read",
            id="number-too-long",
        ),
    ],
)
def test_a_config_file_problem_names_file_line_and_column(
    tmp_path: Path, text: str, expected: str
) -> None:
    (tmp_path / "c.toml").write_text(text)
    code, output = run_cli(["run", "--offline", "--config", "c.toml"], {}, tmp_path)
    assert code == 2
    last = output.splitlines()[-1]
    assert last == f"auditor: error: {expected}", output  # the file as typed, not made absolute


SECRET = "hunter2-s3cr3t-pw"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param(
            f"user:{SECRET}@api.example.com",
            "expected an http:// or https:// URL, got no scheme:// at its start",
            id="user-and-password-without-scheme",
        ),
        pytest.param(
            SECRET,
            "expected an http:// or https:// URL, got no scheme:// at its start",
            id="a-token-in-the-wrong-variable",
        ),
        pytest.param(
            f"ftp://{SECRET}@api.example.com",
            "expected an http:// or https:// URL, got ftp://…",
            id="other-scheme",
        ),
        pytest.param(
            f"https://api.example.com/{SECRET} x",
            "the URL holds a space or a control character",
            id="space-inside",
        ),
    ],
)
def test_a_bad_service_address_is_refused_without_echoing_it(
    tmp_path: Path, value: str, expected: str
) -> None:
    env = {"AUDITOR_BASE_URL": value, "AUDITOR_TOKEN": "t" * 20}
    code, output = run_cli(["sync", "--state", str(tmp_path / "s.db")], env, tmp_path)
    assert code == 2
    assert output.splitlines()[-1] == f"auditor: error: AUDITOR_BASE_URL: {expected}"
    assert SECRET not in output
    assert not (tmp_path / "s.db").exists()


def test_white_space_around_the_address_is_dropped(emulator: Any, tmp_path: Path) -> None:
    """A CI variable or secret saved with its line end used to stop the sync with
    `unexpected InvalidURL: Invalid non-printable ASCII character in URL`."""
    base_url = emulator.base_url
    env = {
        "AUDITOR_BASE_URL": f" {base_url}\n",
        "AUDITOR_APP_URL": f"{emulator.app_url}\r\n",
        "AUDITOR_TOKEN": OWNER_TOKEN,
    }
    code, output = run_cli(["sync", "--no-usage", "--state", str(tmp_path / "s.db")], env, tmp_path)
    assert code == 0, output
    assert output.startswith(f"Synced {base_url}:"), output
