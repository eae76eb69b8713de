"""Review R57: a key YAML reads as other than text in a policy's test-case file is refused at
its own `line:col`, named as written, by `policy test` and `policy lint` (#1: `null:` and a
date were an unexpected TypeError, `true:` was `True` at the case's line); a character YAML
does not allow is placed by character, not by UTF-8 byte, after a `é`, a byte-order mark or
a U+2028 (#3)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_t92_input_files import cli, commands

POLICY = """\
rules:
  - id: MY-001
    title: Sandbox on
    severity: high
    target: settings
    assert: {path: sandbox.enabled, equals: true}
"""


def policy_with_cases(tmp_path: Path, cases: str) -> Path:
    """A folder of one policy (MY-001) and its test-case file `cases`."""
    folder = tmp_path / "pols"
    folder.mkdir()
    (folder / "p.yaml").write_text(POLICY, encoding="utf-8")
    (folder / "p.tests.yaml").write_text(cases, encoding="utf-8")
    return folder


# --- #1: keys that are not text in a test-case file -------------------------------------------

CASE = """\
# a case
tests:
  - name: a
    settings: {sandbox: {enabled: true}}
    expect: {MY-001: pass}
"""


@pytest.mark.parametrize("command", ["test", "lint"])
@pytest.mark.parametrize("key", ["null", "~", "2026-01-01", "true", "0x10"])
def test_a_case_key_that_is_not_text_is_refused_at_its_place_as_written(
    tmp_path: Path, command: str, key: str
) -> None:
    """R57: `unexpected TypeError` for `null:`, `~:`, a date; `p.tests.yaml:3:5: error:
    $.tests[0][True]: unknown key `True`` (the case's line, Python's name) for `true:`."""
    folder = policy_with_cases(tmp_path, CASE + f"    {key}: 3\n")
    code, output = cli(["policy", command, str(folder)], tmp_path)
    assert code == 2, output
    said = f"{folder / 'p.tests.yaml'}:6:5: error: key `{key}` must be text (quote it)"
    assert said in output.splitlines(), output
    assert "unexpected" not in output
    assert not {"True", "None", "16"} & set(output.replace("`", " ").split())


@pytest.mark.parametrize("command", ["test", "lint"])
def test_a_key_that_is_not_text_in_a_cases_data_or_expect_is_named_at_its_place(
    tmp_path: Path, command: str
) -> None:
    """R57: `0x10:` in a case's settings was `4:15: $.tests[0].settings: not JSON data: a
    mapping key that is not a string` (the mapping, the key not named); `true:` in `expect:`
    was `unknown rule id `True``."""
    cases = CASE.replace("enabled: true}", "enabled: true, 0x10: 1}")
    folder = policy_with_cases(tmp_path, cases)
    code, output = cli(["policy", command, str(folder)], tmp_path)
    assert code == 2, output
    said = f"{folder / 'p.tests.yaml'}:4:41: error: key `0x10` must be text (quote it)"
    assert said in output.splitlines(), output

    cases = CASE.replace("MY-001: pass}", "MY-001: pass, true: fail}")
    (folder / "p.tests.yaml").write_text(cases, encoding="utf-8")
    code, output = cli(["policy", command, str(folder)], tmp_path)
    assert code == 2, output
    said = f"{folder / 'p.tests.yaml'}:5:28: error: key `true` must be text (quote it)"
    assert said in output.splitlines(), output
    assert "True" not in output


def test_a_quoted_key_of_a_case_is_text_and_its_case_runs(tmp_path: Path) -> None:
    """`"null": 3` is the text `null`: an unknown key of the case, at its place."""
    folder = policy_with_cases(tmp_path, CASE + '    "null": 3\n')
    code, output = cli(["policy", "test", str(folder)], tmp_path)
    assert code == 2, output
    assert f"{folder / 'p.tests.yaml'}:6:5: error: $.tests[0].null: unknown key `null`" in output


# --- #3: a character YAML does not allow, after characters of more than one byte ------------


PLACED = [  # (the file's text, the character's code point, its line and column in an editor)
    pytest.param('rules: # \u2028\n  - id: "x\x07"\n', 0x07, 2, 11, id="LS"),  # R57: 2:13
    pytest.param('rules: # caf\u00e9\n  - id: "\u00e9t\u00e9\x07"\n', 0x07, 2, 13, id="e"),  # 3:1
    pytest.param('rules: # \U0001f600\U0001f600\n  - id: "x\x07"\n', 0x07, 2, 11, id="emoji"),
    pytest.param('rules: "\u00e9\u00e9\x00"\n', 0x00, 1, 11, id="NUL"),  # R57: 1:13
    pytest.param('\ufeffrules: "x\x07"\n', 0x07, 1, 10, id="BOM"),  # R57: 1:12 (no column)
    pytest.param('a: "x\x07"\n', 0x07, 1, 6, id="ASCII"),  # all ASCII: right before too
]


@pytest.mark.parametrize("command", ["policy", "settings", "waivers", "model"])
@pytest.mark.parametrize(("text", "code_point", "line", "col"), PLACED)
def test_a_character_yaml_does_not_allow_is_placed_by_character(
    tmp_path: Path, command: str, text: str, code_point: int, line: int, col: int
) -> None:
    path = tmp_path / "x.yaml"
    path.write_bytes(text.encode("utf-8"))
    code, output = cli(commands(path, tmp_path)[command], tmp_path)
    assert code == 2, output
    said = (
        f"{path}:{line}:{col}: error: invalid YAML: the character U+{code_point:04X} is not "
        "allowed in YAML"
    )
    assert said in output.splitlines(), output
