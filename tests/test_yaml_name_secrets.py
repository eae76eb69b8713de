"""A password written without quotes where it starts with `!`, `*` or `&` is read by YAML as a
tag, an alias or an anchor: the refusal quoted its name, the password itself, in clear text
(tester T61 #1: `apiKey: !Kx9mQ2vLp4RtW8`, `DB_PASSWORD: *Hv7pQw3Lx9TzR2mK`), for a proposed
file given to `review`, a policy file (`policy lint`, `review --policy`) and a waiver file.
The refusal now says what kind of thing stands there and where (`file:line:col`), never its
name; the parser's own messages quote no more than one character of the file either.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import run_cli, secret_forms

SECRET = "Kx9mQ2vLp4RtW8"
LIVE = "customModels: []\nenv:\n  LOG_LEVEL: info\n"

#: Each YAML form a password takes when written unquoted after `!`, `*` or `&`, and the kind
#: of node the refusal names.
FORMS = [
    pytest.param(f"!{SECRET}", "tag", id="tag"),
    pytest.param(f"!!{SECRET}", "tag", id="core-tag"),
    pytest.param(f"!<{SECRET}> x", "tag", id="verbatim-tag"),
    pytest.param(f"*{SECRET}", "alias", id="alias"),
    pytest.param(f"&{SECRET} x", "anchor", id="anchor"),
]


@pytest.fixture(autouse=True)
def _in_tmp_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Files are named as a user types them, from the current folder."""
    monkeypatch.chdir(tmp_path)


def _leaks(tmp_path: Path, *texts: str) -> list[str]:
    """The forms of SECRET in `texts` and in any file the command wrote under `tmp_path`
    (reports, state file) but the inputs themselves."""
    written = [
        p.read_bytes().decode("utf-8", "replace")
        for p in tmp_path.rglob("*")
        if p.is_file() and p.suffix not in (".yaml", ".json")
    ]
    return [f for f in secret_forms(SECRET) for t in (*texts, *written) if f in t]


def _said(kind: str, mark: str) -> str:
    return f"error: a YAML {kind} (`{mark}` and a name) is not allowed in auditor input files"


_MARKS = {"tag": "!", "alias": "*", "anchor": "&"}


@pytest.mark.parametrize(("written", "kind"), FORMS)
def test_a_proposed_files_password_read_as_a_tag_or_alias_is_not_shown(
    tmp_path: Path, written: str, kind: str
) -> None:
    (tmp_path / "live.yaml").write_text(LIVE)
    (tmp_path / "tag.yaml").write_text(
        "customModels:\n  - id: custom:x\n    model: gpt-4o\n"
        f"    apiKey: {written}\nenv:\n  LOG_LEVEL: info\n"
    )
    argv = ["review", "tag.yaml", "--against", "live.yaml", "--offline"]
    code, out, err = run_cli(
        [*argv, "--state", "s.db", "--out", "o", "-o", "md,json"], {}, tmp_path
    )
    assert code == 2, err
    assert not _leaks(tmp_path, out, err), err
    assert f"tag.yaml:4:13: {_said(kind, _MARKS[kind])}" in err, err


def test_a_password_in_an_env_value_read_as_an_alias_is_not_shown(tmp_path: Path) -> None:
    # the tester's second case: an `env` value, the file's other secret place
    (tmp_path / "live.yaml").write_text(LIVE)
    (tmp_path / "alias.yaml").write_text(f"customModels: []\nenv:\n  DB_PASSWORD: *{SECRET}\n")
    argv = ["review", "alias.yaml", "--against", "live.yaml", "--offline", "--out", "o"]
    code, out, err = run_cli([*argv, "--state", "s.db"], {}, tmp_path)
    assert code == 2, err
    assert not _leaks(tmp_path, out, err), err
    assert f"alias.yaml:3:16: {_said('alias', '*')}" in err, err


POLICY = """rules:
  - id: X-001
    title: no leaked key
    severity: high
    target: settings
    assert:
      path: customModels[*].apiKey
      not_equals: {written}
"""


@pytest.mark.parametrize(("written", "kind"), FORMS)
def test_a_policy_literal_read_as_a_tag_or_alias_is_not_shown_by_lint_or_review(
    tmp_path: Path, written: str, kind: str
) -> None:
    (tmp_path / "pol.yaml").write_text(POLICY.format(written=written))
    where = f"pol.yaml:8:19: {_said(kind, _MARKS[kind])}"
    code, out, err = run_cli(["policy", "lint", "pol.yaml"], {}, tmp_path)
    assert code == 2, err
    assert not _leaks(tmp_path, out, err), out + err
    assert where in out + err, out + err
    (tmp_path / "live.yaml").write_text(LIVE)
    (tmp_path / "prop.yaml").write_text(LIVE)
    argv = ["review", "prop.yaml", "--against", "live.yaml", "--offline", "--state", "s.db"]
    code, out, err = run_cli([*argv, "--policy", "pol.yaml", "--out", "o"], {}, tmp_path)
    assert code == 2, err
    assert not _leaks(tmp_path, out, err), err
    assert where in err, err


@pytest.mark.parametrize(("written", "kind"), FORMS)
def test_a_waivers_reason_read_as_a_tag_or_alias_is_not_shown(
    tmp_path: Path, written: str, kind: str
) -> None:
    (tmp_path / "pol.yaml").write_text(POLICY.format(written='"plain"'))
    (tmp_path / "waivers.yaml").write_text(
        "waivers:\n  - rule: X-001\n    subject: settings\n"
        f"    reason: {written} temporary\n    owner: sec@acme.example\n    expires: 2027-01-01\n"
    )
    (tmp_path / "live.yaml").write_text(LIVE)
    (tmp_path / "prop.yaml").write_text(LIVE)
    argv = ["review", "prop.yaml", "--against", "live.yaml", "--offline", "--state", "s.db"]
    argv += ["--policy", "pol.yaml", "--waivers", "waivers.yaml", "--out", "o"]
    code, out, err = run_cli(argv, {}, tmp_path)
    assert code == 2, err
    assert not _leaks(tmp_path, out, err), err
    assert f"waivers.yaml:4:13: {_said(kind, _MARKS[kind])}" in err, err


def test_the_pure_parsers_message_quotes_no_tag_handle(tmp_path: Path) -> None:
    """Where only the pure parser reads a file (ruamel without its C parser), its message of
    an undefined tag handle quoted the handle: `found undefined tag handle '!Kx9mQ2!'`."""
    from auditor.errors import PolicyError
    from auditor.policy import yamlparse

    text = f"apiKey: !{SECRET[:6]}!{SECRET[6:]} x\n"
    with pytest.raises(yamlparse._SyntaxFailure) as caught:
        yamlparse._scan(text, "f.yaml", 64, pure=True)
    (line,) = caught.value.problems
    assert line.startswith("f.yaml:1:9: error: invalid YAML: "), line
    assert "found undefined tag handle" in line and SECRET[:6] not in line, line
    # one character of the file, or a token's kind, is still quoted
    with pytest.raises(yamlparse._SyntaxFailure) as caught:
        yamlparse._scan('a: "x\\qy"\n', "f.yaml", 64, pure=True)
    assert "found unknown escape character 'q'" in caught.value.problems[0]
    with pytest.raises(PolicyError) as error:
        yamlparse.parse(text, "f.yaml", 64, 1000)
    assert not [p for p in error.value.problems if SECRET[:6] in p]
