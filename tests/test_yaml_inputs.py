"""What the safe YAML reader refuses, as the commands that read a user's file show it: each
refusal a `file:line:col` line, exit 2, no traceback and no secret quoted."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from auditor.cli import Context, main
from tests.conftest import FIXED_NOW

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
TOKEN = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"


def run(argv: list[str], tmp_path: Path) -> tuple[int, str]:
    stdout, stderr = io.StringIO(), io.StringIO()
    ctx = Context(env={}, stdout=stdout, stderr=stderr, clock=lambda: FIXED_NOW)
    return main(argv, ctx), stdout.getvalue() + stderr.getvalue()  # lint lists on stdout


def as_each_input(path: Path, tmp_path: Path) -> dict[str, list[str]]:
    """The commands that read `path`: as the proposed file of a review, a policy file, a
    waivers file, a readiness model."""
    review = ["review", str(EXAMPLES / "proposed-settings.yaml"), "--against"]
    review += [str(EXAMPLES / "live-settings.yaml"), "--out", str(tmp_path / "out")]
    return {
        "review": ["review", str(path), "--against", str(EXAMPLES / "live-settings.yaml")],
        "lint": ["policy", "lint", str(path)],
        "waivers": [*review, "--waivers", str(path)],
        "model": [*review, "--readiness-model", str(path)],
    }


@pytest.mark.parametrize("command", ["review", "lint", "waivers", "model"])
@pytest.mark.parametrize(
    ("name", "text", "col"),
    [("big.yaml", 'a: "\\U00110000"\n', 7), ("big.json", '{"a": "\\U00110000"}\n', 10)],
)
def test_an_escape_beyond_the_last_character_is_refused_at_its_place(
    tmp_path: Path, command: str, name: str, text: str, col: int
) -> None:
    """`\\U00110000` (beyond U+10FFFF) was `unexpected ValueError: chr() arg not in range`."""
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    code, stderr = run(as_each_input(path, tmp_path)[command], tmp_path)
    assert code == 2, stderr
    if command == "review" and name.endswith(".json"):  # a `.json` settings file is JSON only
        assert f"{path}:1:8: error: invalid JSON: Invalid \\escape" in stderr  # `\U` is none
    else:
        assert f"{path}:1:{col}: error: invalid YAML: " in stderr
        assert "invalid Unicode character escape code" in stderr
    assert "unexpected" not in stderr


@pytest.mark.parametrize(
    ("first", "second", "typed"),
    [
        ("null", "~", "null"),
        ("1", "0x1", "1"),
        ("true", "True", "true"),
        # equal once read, not alike: the message said `1` read as `true` (T94 LOW 3)
        ("1", "true", "true"),
        ("0", "0.0", "0.0"),
    ],
)
def test_keys_that_read_alike_once_typed_are_refused_without_their_values(
    tmp_path: Path, first: str, second: str, typed: str
) -> None:
    """The parser's message quoted both values (`with value "hunter2hunter2"`): a value under
    `env` is a secret by its place, which nothing that reads the message can tell."""
    path = tmp_path / "proposed.yaml"
    path.write_text(f'env:\n  {first}: {TOKEN}\n  {second}: "hunter2hunter2"\n', encoding="utf-8")
    code, output = run(as_each_input(path, tmp_path)["review"], tmp_path)
    assert code == 2, output
    assert f"{path}:3:3: error: duplicate key: this key reads as `{typed}`" in output
    assert "or as one it equals (" in output and "`1`, `1.0` and `true` are one key" in output
    assert "hunter2" not in output and TOKEN not in output


@pytest.mark.parametrize(
    ("text", "at", "shown"),
    [
        ("1: a\nnull: b\n", "1:1", "1"),
        ("sandbox:\n  enabled: true\n  null: b\n", "3:3", "null"),
        ("a:\n  b: [1, {c: 1, 2026-01-01: x}]\n", "2:17", "2026-01-01"),
        ("a: 1\nTrue: b\n", "2:1", "True"),  # as written (T92 #4)
    ],
)
def test_a_settings_key_that_is_not_text_is_refused_at_its_place(
    tmp_path: Path, text: str, at: str, shown: str
) -> None:
    """`1: a` and `null: b` were reviewed as keys "1" and "None"."""
    path = tmp_path / "proposed.yaml"
    path.write_text(text, encoding="utf-8")
    code, output = run(as_each_input(path, tmp_path)["review"], tmp_path)
    assert code == 2, output
    assert f"{path}:{at}: error: key `{shown}` must be text (quote it)" in output


POLICY = """\
rules:
  - id: T-001
    title: sandbox on
    severity: high
    target: settings
    assert: {path: sandbox.enabled, equals: true}
"""


def _policy_test(tmp_path: Path, cases: str) -> tuple[int, str]:
    (tmp_path / "p.yaml").write_text(POLICY, encoding="utf-8")
    (tmp_path / "p.tests.yaml").write_text("tests:\n" + cases, encoding="utf-8")
    return run(["policy", "test", str(tmp_path / "p.yaml")], tmp_path)


def test_a_test_case_named_like_a_secret_is_not_printed(tmp_path: Path) -> None:
    case = "    settings: {sandbox: {enabled: true}}\n    expect: {T-001: pass}\n"
    code, output = _policy_test(tmp_path, f"  - name: {TOKEN}\n{case}  - name: ok\n{case}")
    assert code == 0, output
    assert "PASS " in output and TOKEN not in output
    assert ": <not shown: looks like a secret>\n" in output and ": ok\n" in output


@pytest.mark.parametrize(
    ("condition", "at", "message"),
    [
        ('{path: "", equals: true}', "6:20", "assert.path: a path must not be empty"),
        ('{each: "", assert: {equals: 1}}', "6:20", "assert.each: a path must not be empty"),
        (
            "{path: x, within_days: -5}",
            "6:36",
            "assert.within_days: `within_days` counts days before now: 0 or",
        ),
        (
            "{path: x, older_than_days: -0.5}",
            "6:40",
            "assert.older_than_days: `older_than_days` counts days",
        ),
        # a quoted or nested day count is a wrong type where it is written, as before the
        # check of the sign (which compared it with 0: `unexpected TypeError`)
        ('{path: x, within_days: "30"}', "6:36", "assert.within_days: expected a number"),
        ("{path: x, older_than_days: {path: b}}", "6:40", "assert.older_than_days: expected"),
    ],
)
def test_lint_refuses_an_empty_path_and_negative_days(
    tmp_path: Path, condition: str, at: str, message: str
) -> None:
    """`path: ""` named the value itself and `within_days: -5` no time at all: both linted
    clean."""
    path = tmp_path / "p.yaml"
    path.write_text(POLICY.replace("{path: sandbox.enabled, equals: true}", condition))
    code, output = run(as_each_input(path, tmp_path)["lint"], tmp_path)
    assert code == 2, output
    assert f"{path}:{at}: error: $.rules[0].{message}" in output


@pytest.mark.parametrize(
    ("levels", "at", "message"),
    [
        ("{-3: Neg, 1: A}", "1:10", "$.levels['-3']: `levels.-3`: a level is 1 or more, got -3"),
        ("{0: Z, 1: A}", "1:10", "$.levels['0']: `levels.0`: a level is 1 or more, got 0"),
        ("{1: A, 3: C}", "1:9", "$.levels: `levels`: levels are numbered 1, 2, … without a gap"),
    ],
)
def test_a_readiness_model_level_is_1_or_more_without_gaps(
    tmp_path: Path, levels: str, at: str, message: str
) -> None:
    path = tmp_path / "model.yaml"
    criteria = "criteria:\n  c1: {level: 1, scope: repository, pillar: X}\n"
    path.write_text(f"levels: {levels}\n{criteria}", encoding="utf-8")
    code, output = run(as_each_input(path, tmp_path)["model"], tmp_path)
    assert code == 2, output
    assert f"{path}:{at}: error: {message}" in output
