"""Safe YAML loading: every refusal names file:line:col; positions are 1-based."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from auditor.errors import PolicyError
from auditor.models import SourceLocation
from auditor.policy.yamlsafe import load_text, load_yaml, problem, suggest


def _problems(tmp_path: Path, text: str, **limits: int) -> list[str]:
    path = tmp_path / "p.yaml"
    path.write_text(text)
    with pytest.raises(PolicyError) as info:
        load_yaml(path, **limits)
    return [p.replace(str(path), "p.yaml") for p in info.value.problems]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            "a: &x 1\nb: 2\n", "p.yaml:1:4: error: a YAML anchor (`&` and a name)", id="anchor"
        ),
        pytest.param(
            "a: 1\nb: *x\n",
            "p.yaml:2:4: error: a YAML alias (`*` and a name)",
            id="undefined-alias",
        ),
        pytest.param(
            "a: !!python/object:os.system 1\n",
            "p.yaml:1:4: error: a YAML tag (`!` and a name) is not allowed",
            id="python-tag",
        ),
        pytest.param(
            "a: !custom 1\n", "p.yaml:1:4: error: a YAML tag (`!` and a name)", id="local-tag"
        ),
        pytest.param("a: 1\nb: 2\na: 3\n", "p.yaml:3:1: error: duplicate key `a`", id="dup-key"),
        pytest.param("a: 1\n---\nb: 2\n", "p.yaml:2:1: error: several YAML documents", id="docs"),
        pytest.param("a: [1, 2\nb: 3\n", "p.yaml:2:2: error: invalid YAML", id="syntax"),
        pytest.param("? [a]\n: 1\n", "p.yaml:1:3: error: a mapping key must be", id="complex-key"),
        pytest.param(
            "a:\n  <<: {b: 1}\n  c: 2\n",
            "p.yaml:2:3: error: YAML merge key `<<` is not allowed in auditor input files",
            id="merge-key",  # it was merged silently: {a: {b: 1, c: 2}}
        ),
    ],
)
def test_refusals_name_their_position(tmp_path: Path, text: str, expected: str) -> None:
    assert any(p.startswith(expected) for p in _problems(tmp_path, text)), expected


def test_yaml_bomb_is_refused_before_expansion(tmp_path: Path) -> None:
    bomb = "a: &a [x, x]\nb: &b [*a, *a]\nc: &c [*b, *b]\n"
    problems = _problems(tmp_path, bomb)
    assert len(problems) == 7  # three anchors, four aliases, each reported


def test_every_problem_is_reported_at_once(tmp_path: Path) -> None:
    problems = _problems(tmp_path, "a: &x 1\nb: !!binary aGk=\nb: 2\n")
    assert [p.split(": error")[0] for p in problems] == ["p.yaml:1:4", "p.yaml:2:4", "p.yaml:3:1"]


def test_depth_limit(tmp_path: Path) -> None:
    assert _problems(tmp_path, "a: {b: {c: {d: 1}}}\n", max_depth=3) == [
        "p.yaml:1:12: error: nesting deeper than 3 levels"
    ]


def test_value_count_limit(tmp_path: Path) -> None:
    assert _problems(tmp_path, "a: [1, 2]\nb: 3\n", max_nodes=5) == [
        "p.yaml:2:1: error: more than 5 values (keys, scalars, lists and mappings), the limit "
        "for one file"
    ]
    assert load_text("a: [1, 2]\nb: 3\n", "p.yaml", max_nodes=7).data == {"a": [1, 2], "b": 3}


def test_size_limit(tmp_path: Path) -> None:
    assert _problems(tmp_path, "a: " + "x" * 100 + "\n", max_bytes=50) == [
        "p.yaml:1:1: error: file is 104 bytes; the limit is 50"
    ]


def test_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    path.write_bytes(b"a: \xff\n")
    with pytest.raises(PolicyError, match="not UTF-8"):
        load_yaml(path)


@pytest.mark.parametrize(
    ("raw", "where"),
    [
        (b"a: 1\nrules:\n  - id: X\xe9\n", ":3:10:"),  # a Latin-1 e-acute on line 3
        (b"a: 1\nb: \xc3\xa9\xc3\xa9\xff\n", ":2:6:"),  # columns in characters
        (b"\xef\xbb\xbfa: \xff\n", ":1:4:"),  # a byte-order mark is no column
    ],
)
def test_not_utf8_names_the_line_and_column_of_the_bad_byte(
    tmp_path: Path, raw: bytes, where: str
) -> None:
    """It was always `p.yaml:1:1: error: not UTF-8 text (byte offset 27)`."""
    path = tmp_path / "p.yaml"
    path.write_bytes(raw)
    with pytest.raises(PolicyError) as info:
        load_yaml(path)
    (line,) = info.value.problems
    assert line.startswith(f"{path}{where} error: not UTF-8 text (byte 0x"), line


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            "a: 1\nwhen: 2026-02-30\n",
            "p.yaml:2:7: error: $.when: `2026-02-30` is not a valid date/time (day is out of range "
            "for month)",
            id="date",
        ),
        pytest.param(
            "x:\n  - [ok, {at: 2026-13-01T10:00:00Z}]\n",
            "p.yaml:2:15: error: $.x[0][1].at: `2026-13-01T10:00:00Z` is not a valid date/time "
            "(month must be in 1..12)",
            id="nested-timestamp",
        ),
        pytest.param(
            "controls: [SOC2:CC6.1, &a x]\n",
            "p.yaml:1:24: error: a YAML anchor (`&` and a name) is not allowed in auditor input "
            "files (quote a value that starts with `&`)",
            id="fallback-still-refuses",
        ),
    ],
)
def test_impossible_dates_and_fallback_refusals(tmp_path: Path, text: str, expected: str) -> None:
    assert _problems(tmp_path, text) == [expected]


def test_unquoted_colons_in_a_flow_sequence_fall_back_to_the_pure_parser(tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    path.write_text("id: X\ncontrols: [SOC2:CC6.1, ISO27001:A.8.22]\n")
    doc = load_yaml(path)
    assert doc.data["controls"] == ["SOC2:CC6.1", "ISO27001:A.8.22"]
    assert (doc.locate(["controls", 1]).line, doc.locate(["controls", 1]).col) == (2, 24)


def test_a_quoted_merge_key_is_a_plain_key(tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    path.write_text('a:\n  "<<": {b: 1}\n')
    assert load_yaml(path).data == {"a": {"<<": {"b": 1}}}


def test_plain_data_and_hash(tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    path.write_text("a: [1, 2.5, true, null, '7']\nwhen: 2026-01-02\n")
    doc = load_yaml(path)
    assert doc.data == {"a": [1, 2.5, True, None, "7"], "when": dt.date(2026, 1, 2)}
    assert len(doc.sha256) == 64


@pytest.mark.parametrize(
    ("parts", "key", "expected"),
    [
        pytest.param(["rules", 1, "severity"], False, (5, 15), id="value"),
        pytest.param(["rules", 1, "severity"], True, (5, 5), id="key"),
        pytest.param(["rules", 1, "nope"], False, (4, 5), id="missing-child-ancestor"),
        pytest.param(["rules", 7], False, (2, 3), id="missing-index"),
        pytest.param([], False, (1, 1), id="root"),
    ],
)
def test_locate_is_one_based(
    tmp_path: Path, parts: list[str | int], key: bool, expected: tuple[int, int]
) -> None:
    path = tmp_path / "p.yaml"
    path.write_text("rules:\n  - id: A\n    severity: low\n  - id: B\n    severity: high\n")
    loc = load_yaml(path).locate(parts, key=key)
    assert (loc.line, loc.col) == expected


def test_problem_and_suggest_format() -> None:
    loc = SourceLocation("x.yaml", 12, 7)
    assert problem(loc, "$.rules[3]", "bad") == "x.yaml:12:7: error: $.rules[3]: bad"
    assert problem(loc, "", "meh", level="warning") == "x.yaml:12:7: warning: meh"
    assert suggest("severty", ["severity", "title"]) == " (did you mean `severity`?)"
    assert suggest("zzz", ["severity"]) == ""


def test_a_surrogate_pair_escape_is_the_character_it_encodes(tmp_path: Path) -> None:
    """As JSON (and `json.dumps`, for any emoji) writes a character beyond U+FFFF; in YAML
    too, in a key as in a value. Only a lone surrogate is refused, at its place."""
    for name, text in [
        ("p.json", '{"a": "smile \\ud83d\\ude00", "k\\ud83d\\ude00": 1}'),
        ("p.yaml", 'a: "smile \\ud83d\\ude00"\n"k\\ud83d\\ude00": 1\n'),
    ]:
        path = tmp_path / name
        path.write_text(text)
        doc = load_yaml(path)
        assert doc.data == {"a": "smile \U0001f600", "k\U0001f600": 1}, name
        at = doc.locate(["k\U0001f600"], key=True)
        assert (at.line, at.col) == ((1, text.index('"k') + 1) if name == "p.json" else (2, 1))
    for text, at in [('{"a": 1,\n "b": "x \\ud83d"}', "2:7"), ('a: 1\nb: "\\ude00"\n', "2:4")]:
        assert _problems(tmp_path, text) == [
            f"p.yaml:{at}: error: a lone surrogate escape (\\uD800-\\uDFFF) is not a character"
        ]


def test_a_line_break_yaml_knows_and_editors_do_not_leaves_positions_as_written(
    tmp_path: Path,
) -> None:
    """YAML reads U+0085, U+2028 and U+2029 as line breaks: a JSON string holding one put
    every later value's position a line too low (`p.json:18:19` for line 17)."""
    path = tmp_path / "p.json"
    for char in ("\x85", "\u2028", "\u2029"):
        path.write_text(f'{{"a": "x{char}y",\n  "b": [1, 2]}}')
        doc = load_yaml(path)
        assert doc.data == {"a": f"x{char}y", "b": [1, 2]}
        assert doc.locate(["b", 1]) == SourceLocation(str(path), 2, 12)


def test_a_json_file_is_read_as_json(tmp_path: Path) -> None:
    """JSON allows U+FFFE (and U+007F-U+009F) in a string, YAML does not: a JSON file holding
    one is read, with the positions of its values; in a YAML file the refusal names its
    line:col (it said `position 276`, at 1:1)."""
    path = tmp_path / "p.json"
    path.write_text('{"a": "x",\n  "b": ["hi\ufffe", "\x80"]}')
    doc = load_yaml(path)
    assert doc.data == {"a": "x", "b": ["hi\ufffe", "\x80"]}
    assert doc.locate(["b", 1]) == SourceLocation(str(path), 2, 16)
    path.write_text('\ufeff{"a": "x\ufffe"}')  # after a byte-order mark, as Windows writes
    assert load_yaml(path).data == {"a": "x\ufffe"}
    assert _problems(tmp_path, 'a: x\nb: "hi\ufffe"\n') == [
        "p.yaml:2:7: error: invalid YAML: the character U+FFFE is not allowed in YAML"
    ]
    # What YAML refuses in JSON is still refused, at its place, as before.
    assert _problems(tmp_path, '{"a": 1,\n "a": 2}') == ["p.yaml:2:2: error: duplicate key `a`"]
    assert _problems(tmp_path, "[" * 70 + "]" * 70) == [
        "p.yaml:1:65: error: nesting deeper than 64 levels"
    ]
    assert _problems(tmp_path, '{"a": [1, 2], "b": 3}', max_nodes=5)[0].startswith(
        "p.yaml:1:15: error: more than 5 values"
    )
