"""The hint of a YAML syntax error a U+2028 in a comment caused names that one, never one in
a quoted string, which is no line break in any YAML (review R57 #4): removing that one would
change the value and keep the error."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_t92_input_files import cli, commands

LS = "\u2028"


@pytest.mark.parametrize("command", ["policy", "settings", "waivers", "model"])
@pytest.mark.parametrize("quote", ['"', "'"])
def test_the_hint_names_the_comments_line_separator_not_a_quoted_one(
    tmp_path: Path, command: str, quote: str
) -> None:
    """`h3.yaml:3:1: … (U+2028, line separator, at 2:6 …)`: the one in `"x<U+2028>y"` on line
    2 was named, the comment's at 1:9 (which makes `x: [` YAML) was not."""
    path = tmp_path / "x.yaml"
    path.write_text(f"a: 1 # n{LS}x: [\nb: {quote}x{LS}y{quote}\nc: 1\n", encoding="utf-8")
    code, output = cli(commands(path, tmp_path)[command], tmp_path)
    assert code == 2, output
    line = next(x for x in output.splitlines() if x.startswith(f"{path}:"))
    assert line.startswith(f"{path}:3:1: error: invalid YAML: while parsing a flow sequence"), line
    assert "(U+2028, line separator, at 1:9 is a line break in YAML 1.1" in line, line
    assert "at 2:" not in line


def test_a_quoted_line_separator_first_on_the_line_is_not_named(tmp_path: Path) -> None:
    """The first on the line of the last one was named, a quoted one before the comment's:
    `a: "x<U+2028>y" # n<U+2028>x: [`."""
    path = tmp_path / "x.yaml"
    path.write_text(f'a: "x{LS}y" # n{LS}x: [\nc: 1\n', encoding="utf-8")
    code, output = cli(commands(path, tmp_path)["policy"], tmp_path)
    assert code == 2, output
    line = next(x for x in output.splitlines() if x.startswith(f"{path}:"))
    assert "(U+2028, line separator, at 1:13 is a line break in YAML 1.1" in line, line
