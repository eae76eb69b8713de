"""A secret in a comment of an input file is hidden in its copy (the evidence bundle's, and
the one whose sha256 the reports cite), wherever the loader reads a comment: after a NEL or a
line separator (line breaks to the C parser), in a file with CR line ends or a byte-order
mark, glued to a flow indicator or a closing quote (reviewer R83 #1, #2). The copy is never
the file as written when it holds the token: either a copy with it as its marker, or refused
(`PolicyError`, and the file is cited by its marker's digest)."""

from __future__ import annotations

from pathlib import Path

import pytest

from auditor.errors import PolicyError
from auditor.evaluate.readiness import DEFAULT_MODEL_PATH
from auditor.policy.redacted import flagged_secrets, redacted_source, secrets_hidden
from auditor.redact import Redactor

TOKEN = "ghp_" + "aB3dE5gH7jK9mN1pQ3sT5vX7zA9cE1gI3kM5"
HEAD = DEFAULT_MODEL_PATH.read_text().split("criteria:\n")[0] + "criteria:\n"
CRIT = "  readme: {level: 1, scope: repository, pillar: Documentation}"
CASES = {
    "after a space": HEAD + CRIT + f" # old token {TOKEN}\n",
    "after a NEL": HEAD + CRIT + f"\x85# old token {TOKEN}\n",
    "after a line separator": HEAD + CRIT + f"\u2028# old token {TOKEN}\n",
    "CR line ends": (HEAD + CRIT + f"\n# old token {TOKEN}\n").replace("\n", "\r"),
    "after a byte-order mark": f"\ufeff# old token {TOKEN}\n" + HEAD + CRIT + "\n",
    "glued to a flow indicator": HEAD
    + f"  readme: {{level: 1,# old token {TOKEN}\n    scope: repository, pillar: Documentation}}\n",
    "glued to a closing quote": HEAD
    + f'  readme: {{level: 1, scope: repository, pillar: "Documentation"# old token {TOKEN}\n'
    + "    }\n",
    "after a NEL in a scalar's line": HEAD.replace(
        "unlock_threshold: 0.8\n", f"unlock_threshold: 0.8\x85# old token {TOKEN}\n"
    )
    + CRIT
    + "\n",
}


@pytest.mark.parametrize("text", CASES.values(), ids=CASES.keys())
def test_a_token_in_a_comment_is_never_in_the_copy(text: str) -> None:
    redactor = Redactor(b"k" * 16)
    found: dict[str, list[str]] = {}
    redact = secrets_hidden(redactor, flagged_secrets(redactor, [(text, "m.yaml")], found), found)
    try:
        copy = redacted_source(text, "m.yaml", redact)
    except PolicyError:
        return  # refused: cited by its marker's digest, never copied
    assert TOKEN not in copy
    assert copy != text


def _rule(description: str) -> str:
    return (
        "rules:\n  - id: X-001\n    title: Sandbox on\n    severity: low\n    target: settings\n"
        + description
        + "    assert: {path: sandbox.enabled, equals: true}\n"
    )


#: A NEL, LS or PS, which the loader's C parser reads as line breaks and the compose that
#: places each scalar does not, around a token (reviewer R84 #1: each was copied as written).
ODD = {
    "block header comment, NEL": _rule(f"    description: | # c\x85      see {TOKEN}\n      m\n"),
    "block header comment, LS": _rule(f"    description: | # c\u2028      see {TOKEN}\n      m\n"),
    "block header comment, PS": _rule(f"    description: | # c\u2029      see {TOKEN}\n      m\n"),
    "folded header comment, NEL": _rule(f"    description: > # c\x85      see {TOKEN}\n      m\n"),
    "block header, NEL": _rule(f"    description: |\x85      see {TOKEN}\n      m\n"),
    "comment before the value, NEL": _rule(f"    description: # c\x85      see {TOKEN}\n"),
    "comment before a key, NEL": _rule(f"    description: x # c\x85    remediation: {TOKEN}\n"),
}


@pytest.mark.parametrize("text", ODD.values(), ids=ODD.keys())
def test_a_token_behind_a_line_break_parsers_read_differently_is_never_copied(text: str) -> None:
    test_a_token_in_a_comment_is_never_in_the_copy(text)


def _check(text: str) -> None:
    """As `test_a_token_in_a_comment_is_never_in_the_copy`, for any form."""
    test_a_token_in_a_comment_is_never_in_the_copy(text)


#: No scalar, no comment: a directive and a tag handle, which a copy cannot write as a marker
#: (reviewer R85 #1: each copied as written, the file cited by its own sha256).
DIRECTIVES = {
    "tag handle": f"%TAG !{TOKEN}! tag:yaml.org,2002:\n---\n"
    + _rule(f"    description: !{TOKEN}!str plain\n"),
    "unused tag prefix": f"%TAG !e! tag:{TOKEN}\n---\n" + _rule("    description: plain\n"),
    "reserved directive": f"%FOO {TOKEN}\n---\n" + _rule("    description: plain\n"),
}


@pytest.mark.parametrize("text", DIRECTIVES.values(), ids=DIRECTIVES.keys())
def test_a_token_in_a_directive_or_a_tag_is_never_copied(text: str) -> None:
    _check(text)


def test_an_emoji_escaped_as_a_surrogate_pair_beside_a_token_is_no_crash() -> None:
    """`json.dump`'s `\\ud83d\\ude00` in the string holding a token: the copy is refused or
    hides it, never an unexpected UnicodeEncodeError, exit 2 (reviewer R85 #3)."""
    _check(
        '{"rules": [{"id": "X-001", "title": "\\ud83d\\ude00 ' + TOKEN + '", "severity": '
        '"low", "target": "settings", "assert": {"path": "a", "equals": 1}}]}'
    )


def test_a_json_file_with_a_line_separator_is_copied_with_its_token_hidden() -> None:
    """JSON is read as JSON, where U+2028 is a character of a string: such a file is copied,
    its token as its marker, not refused as a YAML file is (reviewer R85 #4)."""
    text = (
        '{"rules": [{"id": "X-001", "title": "a\u2028b", "description": "' + TOKEN + '", '
        '"severity": "low", "target": "settings", "assert": {"path": "a", "equals": 1}}]}'
    )
    redactor = Redactor(b"k" * 16)
    found: dict[str, list[str]] = {}
    redact = secrets_hidden(redactor, flagged_secrets(redactor, [(text, "m.json")], found), found)
    copy = redacted_source(text, "m.json", redact)
    assert TOKEN not in copy and "a\u2028b" in copy


def test_a_rules_literal_is_hidden_in_a_file_the_pure_parser_refuses(tmp_path: Path) -> None:
    """A tab after `severity:` (the C parser reads it, the pure one refuses it): the copy was
    the file as written, a rule's secret literal in clear (reviewer R85 #2)."""
    from auditor.policy.loader import load_policies
    from auditor.policy.redacted import hidden_literals, rule_literals

    leaked = "orange-leaked-battery-424242-staple"
    text = (
        "rules:\n  - id: DEPLOY-KEY-GONE\n    title: the leaked deploy key is nowhere\n"
        f"    severity:\thigh\n    target: settings\n    description: the key {leaked} leaked\n"
        f"    assert: {{path: env.DEPLOY_KEY, not_equals: {leaked}}}\n"
    )
    path = tmp_path / "p.yaml"
    path.write_text(text)
    policy = load_policies([path])
    redactor = Redactor(b"k" * 16)
    redact = secrets_hidden(redactor, flagged_secrets(redactor, [(text, str(path))]))
    rules = rule_literals(redactor, hidden_literals(policy), policy.files[0].rule_ids)
    assert rules, "the literal is one to hide"
    try:
        copy = redacted_source(text, str(path), redact, rules)
    except PolicyError:
        return
    assert leaked not in copy


#: A `!` or `%` in a scalar or a comment beside a token is the scalar's or the comment's: the
#: copy hides the token there, never refused as a tag (reviewer R86 #1).
BANGS = {
    "hash-bang URL": _rule(f'    description: "https://ci.example.com/#!/login?token={TOKEN}"\n'),
    "bang in quotes": _rule(f'    description: "Hello!{TOKEN}"\n'),
    "bang in a comment": _rule("    description: plain  # rotated!" + TOKEN + "\n"),
    "negative look-ahead": _rule(f'    description: "^(?!{TOKEN}$)"\n'),
}


@pytest.mark.parametrize("text", BANGS.values(), ids=BANGS.keys())
def test_a_bang_beside_a_token_in_a_scalar_or_comment_is_copied_hidden(text: str) -> None:
    redactor = Redactor(b"k" * 16)
    found: dict[str, list[str]] = {}
    redact = secrets_hidden(redactor, flagged_secrets(redactor, [(text, "m.yaml")], found), found)
    copy = redacted_source(text, "m.yaml", redact)  # never refused
    assert TOKEN not in copy and "[secret fp:" in copy


#: A directive after a byte-order mark or a lone CR (no `\n` before it), and a reserved one,
#: whose words are no part of the scanner's value (reviewer R86 #2: each copied as written).
DIRECTIVE_FORMS = {
    "after a byte-order mark": f"\ufeff%TAG !e! tag:{TOKEN}\n---\n" + _rule(""),
    "reserved, after a byte-order mark": f"\ufeff%FOO {TOKEN}\n---\n" + _rule(""),
    "CR line ends": (f"%YAML 1.1\n%TAG !e! tag:{TOKEN}\n---\n" + _rule("")).replace("\n", "\r"),
    "reserved, CRLF": (f"%FOO {TOKEN}\n---\n" + _rule("")).replace("\n", "\r\n"),
}


@pytest.mark.parametrize("text", DIRECTIVE_FORMS.values(), ids=DIRECTIVE_FORMS.keys())
def test_a_token_in_any_directive_form_is_never_copied(text: str) -> None:
    _check(text)


def test_a_json_string_holding_a_line_separator_and_a_token_is_copied_hidden() -> None:
    """`json.dumps(ensure_ascii=False)` writes a U+2028 raw: the string holding it and a token
    is copied with its marker, not refused (reviewer R86 #4)."""
    text = (
        '{"rules": [{"id": "X-001", "title": "t", "description": "line one\u2028key '
        + TOKEN
        + '", "severity": "low", "target": "settings", "assert": {"path": "a", "equals": 1}}]}'
    )
    redactor = Redactor(b"k" * 16)
    found: dict[str, list[str]] = {}
    redact = secrets_hidden(redactor, flagged_secrets(redactor, [(text, "m.json")], found), found)
    copy = redacted_source(text, "m.json", redact)
    assert TOKEN not in copy and "line one\\u2028key [secret fp:" in copy  # (escaped: R85 #5)


#: A token written after a `!!null` tag: the loader reads None, so no string of the data holds
#: it and nothing was rewritten (reviewer R87 #1: copied in clear, export exit 0).
NULLS = {
    "plain": _rule(f"    remediation: !!null {TOKEN}\n"),
    "double-quoted": _rule(f'    remediation: !!null "{TOKEN}"\n'),
    "in a flow mapping": _rule("").replace("equals: true}", f"equals: true, x: !!null {TOKEN}}}"),
    # its escapes spell the token, the text does not (reviewer R88 #1)
    "an escaped line break": _rule(
        f'    remediation: !!null "{TOKEN[:20]}\\\n      {TOKEN[20:]}"\n'
    ),
    "a unicode escape": _rule(
        f'    remediation: !!null "{TOKEN[:10]}\\u{ord(TOKEN[10]):04x}{TOKEN[11:]}"\n'
    ),
}


@pytest.mark.parametrize("text", NULLS.values(), ids=NULLS.keys())
def test_a_token_behind_a_null_tag_is_an_error_at_its_place_and_never_copied(text: str) -> None:
    """The loader refuses a `!!null` whose text is not null (R89 #1: its text was in no string
    of the data, so neither a rule's literal nor a token there was hidden), so no copy is made;
    the error does not quote it."""
    from auditor.policy.yamlsafe import load_text

    with pytest.raises(PolicyError) as caught:
        load_text(text, "m.yaml")
    said = str(caught.value)
    assert "a value tagged `!!null` is not written as one" in said and "$.rules[0]" in said
    assert TOKEN[:12] not in said
    with pytest.raises(PolicyError):
        _check(text)


#: Core-tagged values whose text is not of their type: each ended the command with an
#: unexpected IndexError or ScannerError (the latter quoting the text), or was read as
#: nothing (reviewer R89 #2).
MISTYPED = {
    "empty !!int": ("x: !!int\n", "int", "1:4"),
    "empty !!float": ("x: !!float\n", "float", "1:4"),
    "quoted empty !!int": ('x: !!int ""\n', "int", "1:4"),
    "!!int of a broken quote": (f'x: !!int "\'{TOKEN}"\n', "int", "1:4"),
    "!!float of a token": (f"a:\n  - !!float {TOKEN}\n", "float", "2:5"),
    "!!timestamp of a token": (f"x: !!timestamp {TOKEN}\n", "timestamp", "1:4"),
    "!!bool of a token": (f"x: !!bool {TOKEN}\n", "bool", "1:4"),
    "!!null key": (f"? !!null {TOKEN}\n: 1\n", "null", "1:3"),
}


@pytest.mark.parametrize(("text", "kind", "at"), MISTYPED.values(), ids=MISTYPED.keys())
def test_a_core_tagged_value_not_of_its_type_is_an_error_at_its_place(
    text: str, kind: str, at: str
) -> None:
    from auditor.policy.yamlsafe import load_text

    with pytest.raises(PolicyError) as caught:
        load_text(text, "p.yaml")
    said = str(caught.value)
    assert f"p.yaml:{at}: error: " in said
    assert f"a value tagged `!!{kind}` is not written as one" in said
    assert TOKEN[:12].lower() not in said.lower() and "Error" not in said


def test_core_tagged_values_of_their_type_still_load() -> None:
    from auditor.policy.yamlsafe import load_text

    text = (
        "a: !!int 30\nb: !!float 30\nc: !!bool yes\nd: !!null\ne: !!null ~\nf: !!str 30\n"
        'g: !!int "0x1F"\nh: !!timestamp 2026-01-31\n'
    )
    data = load_text(text, "p.yaml").data
    assert [data[k] for k in "abcdefg"] == [30, 30.0, True, None, None, "30", 31]
    assert str(data["h"]).startswith("2026-01-31")


@pytest.mark.parametrize("line", ["rotate at 95% usage, key {t}", '"Hello!{t}"'])
def test_a_percent_or_bang_beside_a_token_in_a_file_only_the_c_parser_reads_is_copied(
    line: str,
) -> None:
    """A tab after `severity:` (the pure scanner refuses it, the C one reads it): a `%` or `!`
    beside a token in a value is told by the C scanner's tokens, not refused (R87 #2)."""
    text = _rule(f"    description: {line.format(t=TOKEN)}\n").replace("severity: ", "severity:\t")
    redactor = Redactor(b"k" * 16)
    found: dict[str, list[str]] = {}
    redact = secrets_hidden(redactor, flagged_secrets(redactor, [(text, "m.yaml")], found), found)
    copy = redacted_source(text, "m.yaml", redact)
    assert TOKEN not in copy and "[secret fp:" in copy


def test_a_number_tagged_as_one_is_copied_and_a_bool_of_no_bool_word_is_an_error() -> None:
    """`!!int 30` beside a token elsewhere is copied, the token hidden (R88 #2: a number's
    text is its value, judged as before); `!!bool <token>` is an error at its place that
    does not quote it, where it ended `unexpected KeyError: '<token lowercased>'` (R88 #3)."""
    from auditor.policy.yamlsafe import load_text

    text = _rule(f"    description: {TOKEN}\n").replace(
        "severity: low", "severity: low\n    x: !!int 30"
    )
    redactor = Redactor(b"k" * 16)
    found: dict[str, list[str]] = {}
    redact = secrets_hidden(redactor, flagged_secrets(redactor, [(text, "m.yaml")], found), found)
    copy = redacted_source(text, "m.yaml", redact)
    assert TOKEN not in copy and "!!int 30" in copy
    with pytest.raises(PolicyError) as caught:
        load_text(f"a: !!bool {TOKEN}\n", "p.yaml")
    said = str(caught.value)
    assert "p.yaml:1:4: error: $.a: a value tagged `!!bool` is not written as one" in said
    assert TOKEN.lower() not in said.lower()


#: A comment on a directive's line is a comment: its token is hidden there, the file copied
#: (reviewer R87 #3: refused as a token in the directive). A reserved directive's words are
#: rewritten from their first `#` on, as a comment is.
DIRECTIVE_COMMENTS = {
    "YAML directive": f"%YAML 1.1 # old token {TOKEN}\n---\n" + _rule(""),
    "reserved directive": f"%FOO bar # old token {TOKEN}\n---\n" + _rule(""),
    "reserved directive, glued": f"%FOO bar#{TOKEN}\n---\n" + _rule(""),
    "TAG directive": f"%TAG !e! tag:example.com,2000: # old token {TOKEN}\n---\n" + _rule(""),
}


@pytest.mark.parametrize("text", DIRECTIVE_COMMENTS.values(), ids=DIRECTIVE_COMMENTS.keys())
def test_a_token_in_a_comment_on_a_directives_line_is_copied_hidden(text: str) -> None:
    _copied_hidden(text)


#: A NEL, U+2028 or U+2029 escaped in the string holding a token: the copy writes it escaped
#: again, where `json.dumps` wrote it raw and the C parser folded it, so the copy was refused
#: (reviewer R85 #5).
ESCAPED_BREAKS = {
    "\\N": _rule(f'    description: "line one\\N{TOKEN}"\n'),
    "\\x85": _rule(f'    description: "line one\\x85key {TOKEN}"\n'),
    "\\L": _rule(f'    description: "line one\\Lkey {TOKEN}"\n'),
    "\\P": _rule(f'    description: "line one\\Pkey {TOKEN}"\n'),
    "\\u2028": _rule(f'    description: "line one\\u2028key {TOKEN}"\n'),
    # characters YAML refuses raw in a file, which `json.dumps` writes raw (R89 #5)
    "\\x7f": _rule(f'    description: "line one\\x7fkey {TOKEN}"\n'),
    "\\x9f": _rule(f'    description: "line one\\x9fkey {TOKEN}"\n'),
    "\\uFFFE": _rule(f'    description: "line one\\uFFFEkey {TOKEN}"\n'),
}


@pytest.mark.parametrize("text", ESCAPED_BREAKS.values(), ids=ESCAPED_BREAKS.keys())
def test_an_escaped_line_break_beside_a_token_is_copied_hidden(text: str) -> None:
    from auditor.policy.yamlsafe import load_text

    copy = _copied_hidden(text)
    read = load_text(copy, "m.yaml").data["rules"][0]["description"]
    assert read.startswith("line one") and read[8] in "\x7f\x85\x9f\u2028\u2029\ufffe"


def _copied_hidden(text: str) -> str:
    """The copy of `text`: made (never refused), the token hidden as its marker."""
    redactor = Redactor(b"k" * 16)
    found: dict[str, list[str]] = {}
    redact = secrets_hidden(redactor, flagged_secrets(redactor, [(text, "m.yaml")], found), found)
    copy = redacted_source(text, "m.yaml", redact)
    assert TOKEN not in copy and "[secret fp:" in copy
    return copy


#: JSON whose tabs YAML refuses where they stand, and a block scalar in a file with CR line
#: ends whose text holds ` # `: each was refused, though a copy can be made (R89 #4, #6).
PLACED = {
    "JSON, a tab before its object": ("\t" + '{"a": "' + TOKEN + '"}', "m.json"),
    "JSON, a line of a tab after it": ('{"a": "' + TOKEN + '"}\n\t', "m.json"),
    "block scalar, CR line ends": ("a: |\r  see # x " + TOKEN + "\r  more\rb: 1\r", "m.yaml"),
    "block scalar, CRLF line ends": ("a: |\r\n  see # x " + TOKEN + "\r\n  more\r\n", "m.yaml"),
}


@pytest.mark.parametrize(("text", "name"), PLACED.values(), ids=PLACED.keys())
def test_json_with_odd_tabs_and_cr_block_scalars_are_copied_hidden(text: str, name: str) -> None:
    from auditor.policy.yamlsafe import load_text

    redactor = Redactor(b"k" * 16)
    found: dict[str, list[str]] = {}
    redact = secrets_hidden(redactor, flagged_secrets(redactor, [(text, name)], found), found)
    copy = redacted_source(text, name, redact)
    assert TOKEN not in copy and "[secret fp:" in copy
    assert load_text(copy, name).data["a"].startswith(("[secret fp:", "see # x [secret fp:"))


def test_json_whose_strings_cannot_be_placed_is_refused_with_advice_that_fits() -> None:
    """A line break before a `:` (JSON allows it, no YAML parser composes it): refused, and
    the advice is not to quote a value already quoted (R89 #4)."""
    text = '{"a"\n: "' + TOKEN + '"}'
    redactor = Redactor(b"k" * 16)
    found: dict[str, list[str]] = {}
    redact = secrets_hidden(redactor, flagged_secrets(redactor, [(text, "m.json")], found), found)
    with pytest.raises(PolicyError) as caught:
        redacted_source(text, "m.json", redact)
    said = str(caught.value)
    assert "in JSON whose strings cannot be placed" in said and "quoted string" not in said


def test_an_integer_spelling_a_secret_in_hex_is_never_copied() -> None:
    """`equals: 0x<hex of a remembered key>`: an integer, so no string the copy rewrites;
    it was copied as written (reviewer R90 #3). Refused, as a value no marker can stand in."""
    from auditor.redact import Redactor as _Redactor

    secret = "orange-leaked-battery-424242-staple"
    for literal in (f"0x{secret.encode().hex()}", str(int(b"Zr8!mQ2w".hex(), 16))):
        remembered = secret if literal.startswith("0x") else "Zr8!mQ2w"
        text = _rule("").replace("equals: true", f"equals: {literal}")
        redactor = _Redactor(b"k" * 32)
        redactor.redact_json({"customModels": [{"apiKey": remembered}]})
        found: dict[str, list[str]] = {}
        flagged = flagged_secrets(redactor, [(text, "p.yaml")], found)
        redact = secrets_hidden(redactor, flagged, found)
        with pytest.raises(PolicyError) as caught:
            redacted_source(text, "p.yaml", redact)
        assert "in a number (its hex spells it)" in str(caught.value)
    text = _rule("").replace("equals: true", "equals: 1234567890123")  # an ordinary number
    assert redacted_source(text, "p.yaml", redact) == text
