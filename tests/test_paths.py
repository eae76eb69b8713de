"""The one path notation: rendering, parsing back, JSON Pointer form."""

from __future__ import annotations

import pytest

from auditor.common.paths import Match, is_identifier, join, parse, render, to_pointer

CASES = [
    pytest.param((), "$", id="root"),
    pytest.param(
        ("sandbox", "network", "allowedDomains"), "$.sandbox.network.allowedDomains", id="dotted"
    ),
    pytest.param(
        ("customModels", Match("id", "custom:x"), "baseUrl"),
        "$.customModels[?id=='custom:x'].baseUrl",
        id="keyed-element",
    ),
    pytest.param(
        ("hooks", "PreToolUse", 0, "matcher"), "$.hooks.PreToolUse[0].matcher", id="index"
    ),
    pytest.param(("env", "MY VAR"), "$.env['MY VAR']", id="quoted-key"),
    pytest.param(("a", "it's"), "$.a['it\\'s']", id="quote-escaped"),
    pytest.param(("x", Match("n", 3)), "$.x[?n==3]", id="numeric-identity"),
    pytest.param(("$score",), "$.$score", id="computed-field"),
]


@pytest.mark.parametrize(("parts", "text"), CASES)
def test_render_and_parse_round_trip(parts: tuple[object, ...], text: str) -> None:
    assert render(parts) == text  # type: ignore[arg-type]
    assert parse(text) == parts


def test_join_appends_to_rendered_path() -> None:
    assert join("$.customModels", Match("id", "a"), "apiKey") == "$.customModels[?id=='a'].apiKey"


def test_parse_names_the_bad_offset() -> None:
    with pytest.raises(ValueError, match="offset 1"):
        parse("$.!bad")


def test_pointer_escapes_tilde_and_slash() -> None:
    assert to_pointer(["a/b", "c~d", 2]) == "/a~1b/c~0d/2"


def test_a_key_ending_in_a_line_feed_is_written_in_brackets() -> None:
    # `^…$` let `abc\n` pass for an identifier: `$.a.abc\n`, which reads as the key `abc`
    assert render(["a", "abc\n"]) == "$.a['abc\n']"
    assert is_identifier("abc") and not is_identifier("abc\n")
