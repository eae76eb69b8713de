"""An error in an `AUDITOR_*` variable names the variable, as the README's table lists them
(tester T91 #5: `AUDITOR_STATE` and `AUDITOR_BASE_URL` were `environment: state: …` and
`environment: base_url: …`, while `AUDITOR_PROXY`, `AUDITOR_CA_BUNDLE` … named themselves)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import run_cli

TOKEN_LIKE = "ghp_Zq8wLm3NvB7xKp2RtY6uHc9JdF4sGa1EeW0i"


@pytest.mark.parametrize(
    ("var", "value", "says"),
    [
        ("AUDITOR_STATE", " x.db", "it begins or ends with a space or a control character"),
        ("AUDITOR_STATE", "postgresql:/x", "looks like a PostgreSQL connection string"),
        ("AUDITOR_BASE_URL", "api.example.com", "expected an http:// or https:// URL"),
        ("AUDITOR_APP_URL", "ftp://app.example.com", "expected an http:// or https:// URL"),
        ("AUDITOR_ORG", TOKEN_LIKE, "expected the organization's name"),
        ("AUDITOR_PROXY", "ftp://proxy.corp", "expected an http:// or https:// proxy URL"),
    ],
)
@pytest.mark.parametrize("command", [["history"], ["sync"]])
def test_a_bad_variable_is_named_as_the_readme_lists_it(
    tmp_path: Path, command: list[str], var: str, value: str, says: str
) -> None:
    """`environment: state: …` and `environment: base_url: …`: a CI user looks for the
    variable they set (the README's table is by variable), as the other variables said."""
    env = {"AUDITOR_TOKEN": "t" * 20, var: value}
    code, out, err = run_cli(command, env, tmp_path)
    assert (code, out) == (2, "")
    (line,) = err.splitlines()
    assert line.startswith(f"auditor: error: {var}: ") and says in line, line
    assert "environment" not in line and TOKEN_LIKE not in line
