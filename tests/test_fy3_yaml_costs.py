"""What placing a YAML file's problems costs (review R57): each of many unknown keys is found
at its own `line:col` by one look-up in an index of its mapping's keys, not by a scan of the
mapping per key (#8: 20,000 keys took two minutes); a syntax error is described once, not
again for the pure parser's second try, whose description is dropped (#5). Counted, not
timed: the calls of the work done per key, or per description."""

from __future__ import annotations

from pathlib import Path

import pytest
from ruamel.yaml.error import MarkedYAMLError

from auditor.policy import yamlparse
from tests.test_t92_input_files import cli, commands

KEYS = 2000


@pytest.fixture
def key_reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many times a key's text was read from the node tree to find a path's step."""
    counted = [0]
    joined = yamlparse._joined

    def counting(text: str) -> str:
        counted[0] += 1
        return joined(text)

    monkeypatch.setattr(yamlparse, "_joined", counting)
    return counted


def test_each_of_many_unknown_waiver_keys_is_placed_in_linear_work(
    tmp_path: Path, key_reads: list[int]
) -> None:
    """2,000 unknown keys (`1:`, `k2:`, …), each at its own line, as written, each key read
    from the tree a few times, not once per key before it."""
    path = tmp_path / "w.yaml"
    head = "waivers:\n  - rule: BASE-NET-001\n    subject: settings\n    reason: r\n"
    head += "    owner: o@example.com\n    expires: 2026-12-31\n"
    keys = [str(n) if n % 2 else f"k{n}" for n in range(1, KEYS + 1)]
    path.write_text(head + "".join(f"    {k}: x\n" for k in keys), encoding="utf-8")
    code, output = cli(commands(path, tmp_path)["waivers"], tmp_path)
    assert code == 2, output
    for line, key in enumerate(keys, start=7):
        step = f"['{key}']" if key.isdigit() else f".{key}"
        assert f"{path}:{line}:5: error: $.waivers[0]{step}: unknown key `{key}`" in output
    assert key_reads[0] < 10 * KEYS, key_reads[0]


def test_each_of_many_integer_criterion_ids_is_placed_in_linear_work(
    tmp_path: Path, key_reads: list[int]
) -> None:
    """A readiness model of 2,000 criterion ids `1:`, `0x2:`, …: each refused at its own
    line, named as written."""
    path = tmp_path / "m.yaml"
    keys = [str(n) if n % 2 else hex(n) for n in range(1, KEYS + 1)]
    path.write_text(
        "levels: {1: F}\ncriteria:\n" + "".join(f"  {k}: x\n" for k in keys), encoding="utf-8"
    )
    code, output = cli(commands(path, tmp_path)["model"], tmp_path)
    assert code == 2, output
    for line, key in enumerate(keys, start=3):
        said = f"{path}:{line}:3: error: $.criteria['{key}']: `criteria.{key}`: a criterion id"
        assert said in output
    assert key_reads[0] < 10 * KEYS, key_reads[0]


@pytest.mark.parametrize("command", ["policy", "settings", "waivers", "model"])
def test_a_syntax_error_is_described_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    """A mistake both parsers refuse (`[1` never closed), after a U+2028 in a comment: the C
    parser's error is said, with what to do about the U+2028, and the pure parser's is not
    described too (its description parsed the file again, to be dropped: 9 s for 950 KB)."""
    hints: list[str] = []
    hint = yamlparse._break_hint

    def counting(text: str, exc: MarkedYAMLError) -> str:
        said = hint(text, exc)
        hints.append(said)
        return said

    monkeypatch.setattr(yamlparse, "_break_hint", counting)
    path = tmp_path / "x.yaml"
    path.write_text("a: 1 # note \u2028b: [1\nc: 2\n", encoding="utf-8")
    code, output = cli(commands(path, tmp_path)[command], tmp_path)
    assert code == 2, output
    line = next(x for x in output.splitlines() if x.startswith(f"{path}:"))
    assert line.startswith(
        f"{path}:2:2: error: invalid YAML: while parsing a flow sequence (from line 1, column 17)"
    ), line
    assert "(U+2028, line separator, at 1:13 is a line break in YAML 1.1" in line, line
    assert len(hints) == 1, hints
