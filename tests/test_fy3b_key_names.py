"""How a long integer key is named (review R64): as written unless the redactor may withhold its
hex form and not the form written (#6); a duplicate key is an integer as YAML reads it, as a
single key is (#1); an integer named in hex never takes a text key's place (#3)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_fy3_key_names import FORMS, HIDDEN, NUMBER, TOKEN, cli, files
from tests.test_t92_input_files import commands

WAIVER = (
    "# l1\nwaivers:\n  - rule: BASE-NET-001\n    subject: settings\n    reason: r\n"
    "    owner: o@example.com\n    expires: 2026-12-31\n"
)


@pytest.mark.parametrize(
    "key", ["12345678901234567890123", "-12345678901234567890123", bin(2**70 + 5), "0o4" + "0" * 25]
)
@pytest.mark.parametrize("kind", ["waivers", "model", "policy", "settings"])
def test_a_long_integer_key_that_holds_no_text_is_named_as_written(
    tmp_path: Path, key: str, kind: str
) -> None:
    """`key `0x29d42b64e76714244cb`` for `12345678901234567890123:`: a key its author never
    wrote, and one the redactor does not withhold either (#6)."""
    path, said = files(key, tmp_path)[kind]
    code, output = cli(commands(path, tmp_path)[kind], tmp_path)
    assert code == 2, output
    assert said.replace(HIDDEN, key) in output, output
    assert "0x" not in output.replace(str(path), "")


def test_a_duplicate_integer_key_tagged_int_does_not_show_the_own_token(tmp_path: Path) -> None:
    """`!!int 0b1100…` twice printed the token's 128 binary digits (a plain one was hidden)."""
    path = tmp_path / "d.yaml"
    for key in [f"!!int {FORMS['binary']}", f"!!int '{FORMS['binary']}'", f"!!int {NUMBER}"]:
        path.write_text(f"a: 1\nb:\n  {key}: 2\n  {key}: 3\n", encoding="utf-8")
        code, output = cli(commands(path, tmp_path)["settings"], tmp_path)
        assert code == 2, output
        assert f"{path}:4:3: error: duplicate key `{HIDDEN}`" in output, output
        assert FORMS["binary"][2:] not in output and str(NUMBER) not in output


@pytest.mark.parametrize("key", ["_72057594037927936", "'72057594037927936'", "!!str 0x1_0"])
def test_a_duplicate_text_key_is_named_as_written(tmp_path: Path, key: str) -> None:
    """`_72057594037927936` is text for YAML: written twice, it was named `0x100000000000000`,
    a text not in the file (#1)."""
    path = tmp_path / "d.yaml"
    path.write_text(f"a: 1\nb:\n  {key}: 2\n  {key}: 3\n", encoding="utf-8")
    code, output = cli(commands(path, tmp_path)["settings"], tmp_path)
    assert code == 2, output
    written = key.strip("'").removeprefix("!!str ")
    assert f"{path}:4:3: error: duplicate key `{written}`" in output, output


@pytest.mark.parametrize("number", [2**56, NUMBER])
def test_an_integer_key_and_a_text_key_of_its_hex_are_each_listed_at_their_place(
    tmp_path: Path, number: int
) -> None:
    """A text key `'0x…'` beside the integer key named so: one problem was listed for both, at
    the integer's place (#3)."""
    path = tmp_path / "w.yaml"
    path.write_text(WAIVER + f"    {number}: x\n    '{number:#x}': y\n", encoding="utf-8")
    code, output = cli(commands(path, tmp_path)["waivers"], tmp_path)
    assert code == 2, output
    if number == NUMBER:  # named in hex, another form of it than the text key's
        first, second = f"+{HIDDEN}", HIDDEN
        assert TOKEN not in output and str(NUMBER) not in output
    else:
        first, second = str(number), f"{number:#x}"
    assert f"{path}:8:5: error: $.waivers[0]['{first}']: unknown key `{first}`" in output, output
    assert f"{path}:9:5: error: $.waivers[0]['{second}']: unknown key `{second}`" in output
    assert "2 problem(s)" in output


def test_an_integer_key_beside_text_keys_of_each_of_its_hex_names_is_not_shown(
    tmp_path: Path,
) -> None:
    """Text keys `'0x…'` and `'+0x…'` of the token's hex beside the token typed in decimal:
    the integer takes the next free name, never its decimal as written."""
    path = tmp_path / "w.yaml"
    text = f"    {NUMBER}: x\n    '{NUMBER:#x}': y\n    '+{NUMBER:#x}': z\n"
    path.write_text(WAIVER + text, encoding="utf-8")
    code, output = cli(commands(path, tmp_path)["waivers"], tmp_path)
    assert code == 2, output
    for line, name in [(8, f"++{HIDDEN}"), (9, HIDDEN), (10, f"+{HIDDEN}")]:
        assert f"{path}:{line}:5: error: $.waivers[0]['{name}']: unknown key `{name}`" in output
    assert "3 problem(s)" in output
    assert TOKEN not in output and str(NUMBER) not in output
