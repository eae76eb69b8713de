"""Local input files as the commands that read them report them (T92): a policy folder that
cannot be listed is an error, never a pack left out (#1); a U+2028, U+2029 or U+0085 before a
YAML mistake does not move its `line:col` (#3); a key YAML reads as other than text is named
as written, at its own `line:col`, in a readiness model and a waivers file too (#4)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import auditor
from tests.conftest import missing_tool, run_cli

ROOT = Path(auditor.__file__).resolve().parents[1]  # the package the child imports
EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
MODEL = ROOT / "auditor" / "data" / "readiness-criteria.yaml"

PASSING = """\
rules:
  - id: MY-001
    title: Sandbox on
    severity: high
    target: settings
    assert: {path: sandbox.enabled, equals: true}
"""
FAILING = PASSING.replace("MY-001", "MY-002").replace("equals: true", "equals: false")
CASES = """\
tests:
  - name: sandbox off
    settings: {sandbox: {enabled: false}}
    expect: {MY-002: pass}
"""


def cli(argv: list[str], cwd: Path) -> tuple[int, str]:
    """The CLI run in this process, in `cwd`: (exit code, stdout and stderr)."""
    code, out, err = run_cli(argv, {}, cwd)
    return code, out + err


def cli_as_a_user(argv: list[str], cwd: Path) -> tuple[int, str]:
    """The CLI in a child process that is refused what a file's mode refuses: the tests run as
    root in CI, whose DAC capabilities read anything, so a root child runs without them
    (`setpriv`, as T92 ran it), as an ordinary user would."""
    command = [sys.executable, "-m", "auditor", *argv]
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            missing_tool("setpriv (util-linux) runs the CLI without root's DAC", "SETPRIV", "TEST")
        command = [str(setpriv), "--bounding-set", "-dac_override,-dac_read_search", *command]
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "PYTHONPATH": str(ROOT),
        "PYTHONDONTWRITEBYTECODE": "1",
        "HOME": str(cwd),
    }
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    return done.returncode, done.stdout + done.stderr


@pytest.fixture
def pack(tmp_path: Path) -> Iterator[Path]:
    """`pols/a.yaml` (MY-001) and `pols/team/b.yaml` (MY-002) with its test cases; the modes
    put back afterwards, so the folder can be removed."""
    team = tmp_path / "pols" / "team"
    team.mkdir(parents=True)
    (tmp_path / "pols" / "a.yaml").write_text(PASSING, encoding="utf-8")
    (team / "b.yaml").write_text(FAILING, encoding="utf-8")
    (team / "b.tests.yaml").write_text(CASES, encoding="utf-8")
    try:
        yield tmp_path
    finally:
        for folder in (team, team.parent):
            folder.chmod(0o755)


# --- #1: a folder that cannot be listed ------------------------------------------------------


@pytest.mark.parametrize("mode", [0o000, 0o100, 0o300])  # none; search only; write and search
def test_a_policy_subfolder_that_cannot_be_listed_is_an_error_for_lint(
    pack: Path, mode: int
) -> None:
    """`os.walk` passed over `team/` without a word: `1 file(s), 1 rule(s): 0 error(s)`, and
    `run` exited 0 without MY-002 (T92 #1)."""
    code, output = cli(["policy", "lint", "pols"], pack)
    assert code == 0 and "2 file(s), 2 rule(s): 0 error(s)" in output, output
    (pack / "pols" / "team").chmod(mode)
    code, output = cli_as_a_user(["policy", "lint", "pols"], pack)
    assert code == 2, output
    assert "pols/team:1:1: error: Permission denied" in output.splitlines()
    assert "1 rule(s)" not in output


def test_a_policy_subfolder_that_cannot_be_listed_is_an_error_for_review(pack: Path) -> None:
    """`review` loads the same folder: its rules were left out, the change judged without them."""
    review = ["review", str(EXAMPLES / "proposed-settings.yaml"), "--against"]
    review += [str(EXAMPLES / "live-settings.yaml"), "--policy", "pols", "--out", "o", "-q"]
    code, output = cli([*review, "-o", "json"], pack)
    assert code in (0, 1) and (pack / "o" / "findings.json").exists(), output
    (pack / "pols" / "team").chmod(0o000)
    code, output = cli_as_a_user([*review[:-3], "--out", "o2", "-q", "-o", "json"], pack)
    assert code == 2, output
    assert "pols/team:1:1: error: Permission denied" in output.splitlines()
    assert not (pack / "o2" / "findings.json").exists()


def test_test_cases_in_a_subfolder_that_cannot_be_listed_are_an_error(pack: Path) -> None:
    """`policy test` found no case (`no test cases found`) or ran the others only."""
    code, output = cli(["policy", "test", "pols"], pack)
    assert code == 0 and "1 passed" in output, output
    (pack / "pols" / "team").chmod(0o000)
    code, output = cli_as_a_user(["policy", "test", "pols"], pack)
    assert code == 2, output
    assert "pols/team:1:1: error: Permission denied" in output.splitlines()
    assert "no test cases" not in output


def test_a_policy_folder_that_cannot_be_listed_is_said_so(pack: Path) -> None:
    """It read `pols: error: no policy files (*.yaml, *.yml) found`, as for an empty folder."""
    (pack / "pols").chmod(0o000)
    code, output = cli_as_a_user(["policy", "lint", "pols"], pack)
    assert code == 2, output
    assert "pols:1:1: error: Permission denied" in output.splitlines()
    assert "no policy files" not in output


# --- #3: YAML 1.1 line breaks before a YAML mistake ------------------------------------------

LS, PS, NEL = "\u2028", "\u2029", "\u0085"


def commands(path: Path, tmp_path: Path) -> dict[str, list[str]]:
    """The commands that read `path`: as a policy, the proposed settings of a review, a
    waivers file, a readiness model."""
    review = ["review", str(EXAMPLES / "proposed-settings.yaml"), "--against"]
    review += [str(EXAMPLES / "live-settings.yaml"), "--out", str(tmp_path / "out")]
    return {
        "policy": ["policy", "lint", str(path)],
        "settings": ["review", str(path), "--against", str(EXAMPLES / "live-settings.yaml")],
        "waivers": [*review, "--waivers", str(path)],
        "model": [*review, "--readiness-model", str(path)],
    }


@pytest.mark.parametrize("command", ["policy", "settings", "waivers", "model"])
def test_a_yaml_mistake_after_a_line_separator_is_placed_on_the_editors_line(
    tmp_path: Path, command: str
) -> None:
    """Each U+2028, U+2029, U+0085 before the mistake put it a line lower (C parser's count),
    in `line:col` and in `from line N, column M`: `x.yaml:6:1 … (from line 5, column 4)`."""
    path = tmp_path / "x.yaml"
    path.write_text(f'a: "one {LS} two {PS} three {NEL}"\nb: 1\nc: {{d: 1\n', encoding="utf-8")
    code, output = cli(commands(path, tmp_path)[command], tmp_path)
    assert code == 2, output
    said = f"{path}:4:1: error: invalid YAML: while parsing a flow mapping (from line 3, column 4)"
    assert said in output, output
    assert "U+2028" not in output  # not their doing: nothing said of them


@pytest.mark.parametrize("command", ["policy", "settings", "waivers", "model"])
def test_a_line_separator_that_ends_a_comment_is_named_where_an_editor_shows_it(
    tmp_path: Path, command: str
) -> None:
    """T92: `p.yaml:5:7: … mapping values are not allowed` in a 5-line file, for `# note LS x:`
    on line 1: the text after a U+2028 in a comment is read as YAML, which no editor shows."""
    path = tmp_path / "x.yaml"
    path.write_text(f"a: 1   # note {LS} x: y {PS} z\nb: 2\n", encoding="utf-8")
    code, output = cli(commands(path, tmp_path)[command], tmp_path)
    assert code == 2, output
    line = next(x for x in output.splitlines() if x.startswith(f"{path}:"))
    assert line.startswith(f"{path}:1:17: error: invalid YAML: "), line  # at `x`
    assert "(U+2028, line separator, at 1:15 is a line break in YAML 1.1" in line, line
    assert "remove it)" in line


def test_refusals_after_a_line_separator_are_on_the_editors_lines(tmp_path: Path) -> None:
    """An anchor and a duplicate key, each a line too low after a quoted U+2028."""
    path = tmp_path / "x.yaml"
    path.write_text(f'a: "x {LS} y"\nb: &n 2\nc: 3\nc: 4\n', encoding="utf-8")
    code, output = cli(["policy", "lint", str(path)], tmp_path)
    assert code == 2, output
    assert f"{path}:2:4: error: a YAML anchor" in output
    assert f"{path}:4:1: error: duplicate key `c`" in output


def test_a_byte_order_mark_and_cr_lines_with_a_line_separator(tmp_path: Path) -> None:
    """Lines end at `\\r` as at `\\n`; a byte-order mark is no column."""
    path = tmp_path / "x.yaml"
    path.write_bytes(f'\ufeffa: "x {LS} y"\rb: 1\rc: {{d: 1\r'.encode())
    code, output = cli(["policy", "lint", str(path)], tmp_path)
    assert code == 2, output
    assert (
        f"{path}:4:1: error: invalid YAML: while parsing a flow mapping (from line 3, column 4)"
        in output
    )


# --- #4: keys that are not text ---------------------------------------------------------------


def model_with(key: str) -> tuple[str, int]:
    """The shipped readiness model with the criterion `key` first, and that key's line."""
    text = MODEL.read_text(encoding="utf-8")
    at = text.index("\ncriteria:\n") + len("\ncriteria:\n")
    entry = f"  {key}: {{level: 1, scope: repository, pillar: Security}}\n"
    return text[:at] + entry + text[at:], text[:at].count("\n") + 1


@pytest.mark.parametrize("key", ["true", "null", "0x10", "~", "2026-01-01"])
def test_a_criterion_id_that_is_not_text_is_named_as_written_at_its_line(
    tmp_path: Path, key: str
) -> None:
    """`m.yaml:13:1: error: $.criteria.True: ...` (the line of `criteria:`, Python's `True`)."""
    text, line = model_with(key)
    path = tmp_path / "m.yaml"
    path.write_text(text, encoding="utf-8")
    code, output = cli(commands(path, tmp_path)["model"], tmp_path)
    assert code == 2, output
    said = next(x for x in output.splitlines() if x.startswith(f"{path}:{line}:"))
    assert said.startswith(f"{path}:{line}:3: error: "), output
    assert f"`criteria.{key}`: a criterion id must be a string" in said
    assert not {"True", "None", "16"} & set(said.replace("`", " ").replace(".", " ").split())


def test_unknown_keys_of_a_model_that_are_not_text_are_named_as_written(tmp_path: Path) -> None:
    """`false:` beside `levels:` and `0x1:` in a criterion: `False` and `1` at their mapping."""
    text, line = model_with("lint_x")
    text = text.replace("levels:\n", "false: 1\nlevels:\n", 1)
    text = text.replace("pillar: Security}", "pillar: Security, 0x1: 2}", 1)
    path = tmp_path / "m.yaml"
    path.write_text(text, encoding="utf-8")
    code, output = cli(commands(path, tmp_path)["model"], tmp_path)
    assert code == 2, output
    top = text[: text.index("false: 1")].count("\n") + 1
    assert f"{path}:{top}:1: error: $.false: `false`: unknown key" in output, output
    said = f"{path}:{line + 1}:59: error: $.criteria.lint_x['0x1']: `criteria.lint_x.0x1`: "
    assert said in output, output


def test_a_waiver_key_that_is_not_text_is_named_as_written_at_its_line(tmp_path: Path) -> None:
    """`w.yaml:2:5: error: $.waivers[0].True: unknown key `True``: the waiver's line, Python's
    name for the key."""
    path = tmp_path / "w.yaml"
    path.write_text(
        "waivers:\n  - rule: BASE-NET-001\n    subject: settings\n    reason: r\n"
        "    owner: o@example.com\n    expires: 2026-12-31\n    true: x\n0x10: 1\n",
        encoding="utf-8",
    )
    code, output = cli(commands(path, tmp_path)["waivers"], tmp_path)
    assert code == 2, output
    assert f"{path}:7:5: error: $.waivers[0].true: unknown key `true`" in output, output
    assert f"{path}:8:1: error: $['0x10']: unknown key `0x10`" in output, output
    shown = output.replace(str(tmp_path), "")  # (the folder's name, `pytest-162`, may hold 16)
    assert "True" not in shown and "16" not in shown


@pytest.mark.parametrize(("key", "col"), [("true", 5), ("null", 5), ("0x10", 5), ("~", 5)])
def test_a_policy_key_that_is_not_text_is_named_as_written_at_its_line(
    tmp_path: Path, key: str, col: int
) -> None:
    """`p.yaml:2:5: error: key `16` must be text` (the rule's line, the number Python reads)."""
    path = tmp_path / "p.yaml"
    path.write_text(PASSING + f"    {key}: x\n", encoding="utf-8")
    code, output = cli(["policy", "lint", str(path)], tmp_path)
    assert code == 2, output
    assert f"{path}:7:{col}: error: key `{key}` must be text (quote it)" in output, output


def test_a_settings_key_that_is_not_text_is_named_as_written(tmp_path: Path) -> None:
    """`s.yaml:3:3: error: key `16` must be text`: at its place, but as Python reads it."""
    path = tmp_path / "s.yaml"
    path.write_text("a: 1\nb:\n  0x10: 2\n", encoding="utf-8")
    code, output = cli(commands(path, tmp_path)["settings"], tmp_path)
    assert code == 2, output
    assert f"{path}:3:3: error: key `0x10` must be text (quote it)" in output, output
