"""How a key YAML reads as other than text is named and placed (review R57): the command's own
token typed as an integer key, in binary, octal or decimal, is not shown, as its hex form is
not (#7); a readiness level under 1 written `0x0:` or `+0:` is named as written, at its own
`line:col` (#6)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.test_t92_input_files import commands

TOKEN = "demo-owner-token"
NUMBER = int.from_bytes(TOKEN.encode(), "big")
FORMS = {
    "hex": hex(NUMBER),
    "binary": bin(NUMBER),
    "octal": f"0o{NUMBER:o}",
    "decimal": str(NUMBER),
    "decimal with _": f"{NUMBER:_}",
    "hex with _": f"0x{NUMBER:_x}",  # (review R64 #2)
}
HIDDEN = "0x<not shown: looks like a secret>"


def cli(argv: list[str], cwd: Path) -> tuple[int, str]:
    """The CLI run in this process with the token `TOKEN` (exit code, stdout and stderr)."""
    code, out, err = run_cli(argv, {"AUDITOR_TOKEN": TOKEN}, cwd)
    return code, out + err


def files(key: str, tmp_path: Path) -> dict[str, tuple[Path, str]]:
    """Per kind of input file, one with the key `key` and the problem line said of it."""
    waiver = "waivers:\n  - rule: BASE-NET-001\n    subject: settings\n    reason: r\n"
    waiver += "    owner: o@example.com\n    expires: 2026-12-31\n"
    rule = "rules:\n  - id: MY-1\n    title: t\n    severity: high\n    target: settings\n"
    texts = {
        "waivers": (waiver + f"    {key}: x\n", f"7:5: error: $.waivers[0]['{HIDDEN}']: unknown"),
        "model": (
            f"levels: {{1: F}}\ncriteria:\n  {key}: {{level: 1, scope: repository, pillar: S}}\n",
            f"3:3: error: $.criteria['{HIDDEN}']: `criteria.{HIDDEN}`: a criterion id must",
        ),
        "policy": (
            rule + f"    {key}: 1\n    assert: {{path: a, equals: 1}}\n",
            f"6:5: error: key `{HIDDEN}` must be text (quote it)",
        ),
        "settings": ("a: 1\nb:\n  " + f"{key}: 2\n", f"3:3: error: key `{HIDDEN}` must be text"),
    }
    found = {}
    for kind, (text, said) in texts.items():
        path = tmp_path / f"{kind}.yaml"
        path.write_text(text, encoding="utf-8")
        found[kind] = (path, f"{path}:{said}")
    return found


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("kind", ["waivers", "model", "policy", "settings"])
def test_the_own_token_typed_as_an_integer_key_is_not_shown(
    tmp_path: Path, form: str, kind: str
) -> None:
    """`unknown key `0b1100100…`` (128 binary digits of `demo-owner-token`): now named by its
    hex form, which is hidden, in whatever base it was written, at its own `line:col`."""
    path, said = files(FORMS[form], tmp_path)[kind]
    code, output = cli(commands(path, tmp_path)[kind], tmp_path)
    assert code == 2, output
    assert said in output, output
    for shown in {*FORMS.values(), FORMS["binary"][2:], FORMS["octal"][2:], TOKEN}:
        assert shown not in output


def test_a_duplicate_integer_key_of_the_own_token_is_not_shown(tmp_path: Path) -> None:
    """Written twice alike (`duplicate key `0b1100…``) or apart (`0x6465…` and its decimal:
    `this key reads as `1334…``, Python's decimal even of a hex key)."""
    path = tmp_path / "s.yaml"
    twice = f"a: 1\nb:\n  {FORMS['binary']}: 2\n  {FORMS['binary']}: 3\n"
    apart = f"a: 1\nb:\n  {FORMS['hex']}: 2\n  {FORMS['decimal']}: 3\n"
    for text, said in [
        (twice, f"{path}:4:3: error: duplicate key `{HIDDEN}`"),
        (apart, f"{path}:4:3: error: duplicate key: this key reads as `{HIDDEN}`, as an"),
    ]:
        path.write_text(text, encoding="utf-8")
        code, output = cli(commands(path, tmp_path)["settings"], tmp_path)
        assert code == 2, output
        assert said in output, output
        assert FORMS["binary"] not in output and FORMS["decimal"] not in output


def test_a_level_numbered_by_the_own_token_is_not_shown_in_the_gap_problem(
    tmp_path: Path,
) -> None:
    """`levels are numbered 1, 2, … without a gap …, got [1, 1334…]`: the decimal of a level
    key, even one written in hex, named the token."""
    path = tmp_path / "m.yaml"
    path.write_text(
        f"levels: {{1: F, {FORMS['octal']}: G}}\n"
        "criteria:\n  a: {level: 1, scope: repository, pillar: S}\n",
        encoding="utf-8",
    )
    code, output = cli(commands(path, tmp_path)["model"], tmp_path)
    assert code == 2, output
    assert f"from n), got [1, {HIDDEN}]" in output, output
    assert FORMS["decimal"] not in output and FORMS["octal"] not in output


@pytest.mark.parametrize("key", ["0x0", "+0", "0o0", "-0x1", "0", "-1"])
def test_a_level_under_one_is_named_as_written_at_its_line(tmp_path: Path, key: str) -> None:
    """`lv.yaml:2:1: error: $.levels['0']: `levels.0`: a level is 1 or more, got 0` for `0x0:`
    on line 4: the mapping's line, Python's number."""
    path = tmp_path / "lv.yaml"
    path.write_text(
        f"# l1\nlevels:\n  1: F\n  {key}: G\n"
        "criteria:\n  a: {level: 1, scope: repository, pillar: S}\n",
        encoding="utf-8",
    )
    code, output = cli(commands(path, tmp_path)["model"], tmp_path)
    assert code == 2, output
    said = f"{path}:4:3: error: $.levels['{key}']: `levels.{key}`: a level is 1 or more, got {key}"
    assert said in output, output


def test_an_ordinary_integer_key_is_named_as_written(tmp_path: Path) -> None:
    """Only an integer of 8 bytes or more is named in hex: `0b101:`, a 16-digit number stay."""
    path = tmp_path / "s.yaml"
    for key in ["0b101", "1234567890123456", "0o17", "1_000"]:
        path.write_text(f"a: 1\nb:\n  {key}: 2\n", encoding="utf-8")
        code, output = cli(commands(path, tmp_path)["settings"], tmp_path)
        assert code == 2, output
        assert f"{path}:3:3: error: key `{key}` must be text (quote it)" in output, output


def test_a_long_integer_key_not_a_token_is_named_as_written(tmp_path: Path) -> None:
    """`99999999999999999999:` (past 8 bytes, but no 8 bytes of text in it): as written, not
    `0x56bc75e2d630fffff`, a key the author never wrote (review R64 #6)."""
    path = tmp_path / "s.yaml"
    path.write_text("a: 1\nb:\n  99999999999999999999: 2\n", encoding="utf-8")
    code, output = cli(commands(path, tmp_path)["settings"], tmp_path)
    assert code == 2, output
    assert f"{path}:3:3: error: key `99999999999999999999` must be text (quote it)" in output
