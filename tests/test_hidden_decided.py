"""A string test on a text holding markers is decided exactly when the visible text decides it.

Soundness: whenever a string operator gives an answer on a text holding markers (a path such
as `$.mcpAutonomyOverrides["[secret …]"]`), putting any text in place of each marker gives the
same answer. And what the visible text does decide is decided: a shipped change rule's
`path matches '^\\$\\.hooks'` on a path holding a marker is a `false`, not an `error` that made
every later nightly incomplete.
"""

from __future__ import annotations

import json
import secrets
from pathlib import Path
from typing import Any

import pytest
import re2
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from auditor.common import paths
from auditor.emulator import start_emulator
from auditor.operators import BUILTIN_ENUMS, REGISTRY, HiddenValueError, fingerprinting
from auditor.operators.anchored import branches
from auditor.redact import Redactor
from tests.conftest import FIXED_NOW, emulator_env
from tests.test_secrets_canary import Canaries, _append, _cli, _plant

R = Redactor(b"test-key-hidden-decided")
MARK = R.marker("tok-0123456789")  # any marker: its hidden text is taken to be anything
UNDECIDED = "undecided"
ALPHABET = 'ab.$"[]\n'


def _decide(name: str, text: str, raw: Any) -> Any:
    op = REGISTRY[name]
    with fingerprinting(None):  # no key: only the visible text can decide
        try:
            return op.fn(text, op.prepare(raw, BUILTIN_ENUMS))
        except HiddenValueError:
            return UNDECIDED


def _plain(name: str, text: str, raw: Any) -> Any:
    op = REGISTRY[name]
    return op.fn(text, op.prepare(raw, BUILTIN_ENUMS))


_ATOMS = st.sampled_from(
    ["a", "b", ".", "\\.", "\\$", '"', "\\[", "[ab]", "[^a]", "\\n", "\\w", "\\b", "x", "\\x61"]
)


@st.composite
def _body(draw: st.DrawFn, depth: int = 0) -> str:
    items: list[str] = []
    for _ in range(draw(st.integers(0, 4))):
        if depth < 2 and draw(st.integers(0, 5)) == 0:
            inner = draw(st.lists(_body(depth + 1), min_size=1, max_size=3))
            atom = draw(st.sampled_from(["(", "(?:"])) + "|".join(inner) + ")"
        else:
            atom = draw(_ATOMS)
        atom += draw(st.sampled_from(["", "", "", "", "*", "+", "?", "{2}", "{0,1}", "+?"]))
        items.append(atom)
    if draw(st.integers(0, 9)) == 0:  # an anchor inside
        items.insert(draw(st.integers(0, len(items))), draw(st.sampled_from(["^", "$"])))
    return "".join(items)


@st.composite
def _branch(draw: st.DrawFn) -> str:
    head = draw(st.sampled_from(["", "", "^", "^", "\\A", "(?i)^", "(?m)^"]))
    tail = draw(st.sampled_from(["", "", "$", "$", "\\z", "(?m:$)"]))
    return head + draw(_body()) + tail


@st.composite
def _regexes(draw: st.DrawFn) -> str:
    return "|".join(draw(st.lists(_branch(), min_size=1, max_size=3)))


_visible = st.text(alphabet=ALPHABET, max_size=6)
_hidden = st.text(alphabet=ALPHABET + "x", max_size=5)


@st.composite
def _texts(draw: st.DrawFn) -> list[str]:
    """Visible pieces around 1-3 markers."""
    return draw(st.lists(_visible, min_size=2, max_size=4))


def _with(pieces: list[str], hidden: list[str]) -> str:
    out = pieces[0]
    for fill, piece in zip(hidden, pieces[1:], strict=False):
        out += fill + piece
    return out


_SETTINGS = settings(max_examples=600, deadline=None, suppress_health_check=list(HealthCheck))


@_SETTINGS
@given(
    pattern=_regexes(),
    pieces=_texts(),
    fills=st.lists(st.lists(_hidden, min_size=3, max_size=3), min_size=1, max_size=6),
)
@example(pattern=r"\x61$", pieces=["b", "a"], fills=[["", "", ""]])  # \x61 is `a`
@example(pattern=r"a", pieces=["b", "b"], fills=[["a", "", ""]])  # not anchored
def test_a_regex_decided_on_a_text_with_markers_holds_for_any_hidden_text(
    pattern: str, pieces: list[str], fills: list[list[str]]
) -> None:
    try:
        re2.compile(pattern)
    except re2.error:
        return
    text = _with(pieces, [MARK] * (len(pieces) - 1))
    for name in ("matches", "not_matches"):
        decided = _decide(name, text, pattern)
        if decided == UNDECIDED:
            continue
        for hidden in [*fills, [MARK] * 3, [""] * 3]:
            assert _plain(name, _with(pieces, hidden), pattern) is decided, (name, hidden)


_KEYS = st.text(alphabet="ab_$-.'[]/:?=", min_size=1, max_size=6)
# The key a marker hides: its text is never shorter than the marker's `len:` (the secret's;
# an encoding only adds characters), an identifier (written `.key`) or anything else.
_HIDDEN_KEYS = st.one_of(
    st.from_regex(r"[A-Za-z_$][A-Za-z0-9_$-]{13,17}", fullmatch=True),
    st.text(alphabet="ab_$-.'[]/:?=", min_size=14, max_size=18),
)


@_SETTINGS
@given(
    name=st.sampled_from(["matches", "not_matches", "starts_with", "ends_with", "contains"]),
    raw=st.one_of(_regexes(), st.text(alphabet="ab.$'[]_", max_size=6)),
    before=st.lists(st.one_of(_KEYS, _HIDDEN_KEYS), max_size=2),
    key=_HIDDEN_KEYS,
    after=st.lists(_KEYS, max_size=2),
)
@example(  # the reviewer's: `.ghp_…` in the original, `['[secret …]']` once redacted
    name="matches", raw=r"^\$\.a\.", before=["a"], key="ghp_x0123456789", after=[]
)
@example(name="matches", raw=r"s\[", before=["ab"], key="$0123456789abcd", after=[])
@example(name="ends_with", raw="']", before=["a"], key="b0123456789abcd", after=[])
@example(name="matches", raw=r"\.baseUrl$", before=["a"], key="b0123456789abcd", after=[])
@example(name="matches", raw=r"abcd$", before=["a"], key="b0123456789abcd", after=[])
@example(  # two hidden keys in a row, both identifiers (the review of the last key's rule)
    name="matches",
    raw=r"1\.opqrstuvwxyzABC$",
    before=["abcdefghijklmn1"],
    key="opqrstuvwxyzABC",
    after=[],
)
def test_a_path_decided_with_a_hidden_key_holds_for_the_key_as_the_original_wrote_it(
    name: str, raw: str, before: list[str], key: str, after: list[str]
) -> None:
    # A path's key holding a secret is written `['[secret …]']`, whatever the key: the
    # original may have written it `.key` (an identifier). What the redacted path decides
    # holds for the original path, whichever way it wrote the key.
    if name in ("matches", "not_matches"):
        try:
            re2.compile(raw)
        except re2.error:
            return
    elif not raw:
        return
    # a key before it that is a secret too (every other one, when it is long enough)
    shown = [R.marker(k) if len(k) >= 14 and i % 2 == 0 else k for i, k in enumerate(before)]
    redacted = paths.render([*shown, MARK, *after])
    original = paths.render([*before, key, *after])
    decided = _decide(name, redacted, raw)
    if decided != UNDECIDED:
        assert _plain(name, original, raw) is decided, (redacted, original)


@_SETTINGS
@given(
    name=st.sampled_from(["starts_with", "ends_with", "contains", "excludes", "starts_with_any"]),
    arg=st.lists(_visible, min_size=1, max_size=3),
    pieces=_texts(),
    fills=st.lists(st.lists(_hidden, min_size=3, max_size=3), min_size=1, max_size=6),
)
def test_an_affix_or_substring_decided_on_a_text_with_markers_holds_for_any_hidden_text(
    name: str, arg: list[str], pieces: list[str], fills: list[list[str]]
) -> None:
    raw: Any = arg if name in ("excludes", "starts_with_any") else arg[0]
    text = _with(pieces, [MARK] * (len(pieces) - 1))
    decided = _decide(name, text, raw)
    if decided == UNDECIDED:
        return
    for hidden in fills:
        assert _plain(name, _with(pieces, hidden), raw) is decided, hidden


@_SETTINGS
@given(
    name=st.sampled_from(["equals", "not_equals", "in", "not_in"]),
    arg=st.lists(st.text(alphabet="ab.", max_size=8), min_size=1, max_size=3),
    pieces=st.lists(st.text(alphabet="ab.", max_size=3), min_size=2, max_size=3),
    fill=st.text(alphabet="ab.", min_size=5, max_size=5),
)
def test_equality_decided_on_a_text_with_markers_holds_for_any_hidden_text_of_its_length(
    name: str, arg: list[str], pieces: list[str], fill: str
) -> None:
    # The marker says its hidden text's length (`len:5`): any text of that length.
    marker = R.marker("abcde")
    raw: Any = arg if name in ("in", "not_in") else arg[0]
    decided = _decide(name, _with(pieces, [marker] * 2), raw)
    if decided != UNDECIDED:
        assert _plain(name, _with(pieces, [fill] * 2), raw) is decided


# as `paths.render` writes a key holding a marker (the original may have been `.key`)
PATH = paths.render(["mcpAutonomyOverrides", f"https://mcp.example/sse?token={MARK}"])
KEY_PATH = paths.render(["mcpAutonomyOverrides", MARK])
AFTER_KEY = paths.render(["mcpServers", MARK, "command"])


@pytest.mark.parametrize(
    ("name", "text", "pattern", "expected"),
    [
        # the shipped change rules' conditions: the visible text alone rules them out
        ("matches", PATH, r"^\$\.hooks(\.|$)", False),
        ("matches", KEY_PATH, r"^\$\.hooks(\.|$)", False),
        ("matches", PATH, r"^\$\.customModels", False),
        # an end-anchored one, at the end of a path whose last key is hidden: decided whether
        # the original wrote the key `['K']` or `.K` (K at least the marker's `len:` long)
        ("matches", PATH, r"\.baseUrl$", False),
        ("matches", KEY_PATH, r"\.baseUrl$", False),
        ("matches", KEY_PATH, r"Url$", UNDECIDED),  # `.K` may end so
        (
            "matches",
            PATH,
            r"^\$\.sandbox\.(filesystem\.allowWrite|network\.(allowedDomains))",
            False,
        ),
        ("not_matches", PATH, r"\.(timeout|matcher)$|^\$\.hooks\.(hooksDisabled)$", True),
        # a match in the visible text
        ("matches", PATH, r"sse\?token", True),  # the key's own text: in the original too
        ("contains", PATH, "mcp.example/sse", True),
        ("ends_with", AFTER_KEY, ".command", True),
        # a match next to the hidden key's brackets: decided unless the pattern looks past it
        ("matches", AFTER_KEY, r"\.command$", True),
        ("matches", PATH, r"^\$\.mcpAutonomyOverrides", True),
        ("matches", AFTER_KEY, r"\b\.command$", UNDECIDED),  # `\b` reads the key's last
        # ... and a match taking in the brackets: the original may have none
        ("matches", AFTER_KEY, r"s\['", UNDECIDED),
        # what turns on the hidden text stays undecided (an `error`)
        ("matches", PATH, r"token=abc", UNDECIDED),
        ("matches", PATH, r"^\$\.mcp.*abc", UNDECIDED),
        ("matches", KEY_PATH, r"^\$\.mcpAutonomyOverrides\.ghp_", UNDECIDED),
        ("matches", KEY_PATH, r"(?i)^\$\.HOOKS", UNDECIDED),  # flags: not modelled, not claimed
        ("matches", KEY_PATH, r"(?m)^\$\.hooks", UNDECIDED),
        ("matches", MARK, r"^\$\.hooks", UNDECIDED),  # a whole marker: any text, a number too
        ("not_matches", PATH, r"ghp_[0-9a-f]{36}", UNDECIDED),
    ],
)
def test_what_the_visible_text_decides_is_decided(
    name: str, text: str, pattern: str, expected: Any
) -> None:
    assert _decide(name, text, pattern) == expected


def test_a_pattern_with_a_construct_not_modelled_claims_nothing() -> None:
    for source in [r"(?i)^a", r"^\x41", r"^\pL", r"^a{", r"^\Qa\E", r"(?m)^a"]:
        assert branches(source) is None, source
    assert branches(r"^a\.b|c$") is not None


HIDDEN_RULE = r"""
defaults: {target: change, on_missing: unknown}
rules:
  - id: T-HID-001
    title: An override for an address with a given token
    severity: low
    assert:
      none: changes
      assert: {path: path, matches: 'token=abc'}
"""


@pytest.mark.e2e
def test_the_canary_revision_leaves_the_shipped_packs_decided(tmp_path: Path) -> None:
    r"""The canary revision adds `mcpAutonomyOverrides` keys holding markers (an address with
    a `token=` and a token itself), written `['[secret …]']`: the shipped change rules' path
    conditions were an `error` on that step in every run after (exit 2 for good). The text
    before the key decides the start-anchored ones (CHG-SBX-002); an end-anchored one
    (`\.(timeout|…)$`, `\.baseUrl$`) is decided whichever way the original wrote the key,
    `['K']` or `.K`, K never shorter than the marker's `len:` (CHG-HOK-001, CHG-MOD-001). A
    rule that turns on the hidden text is still an `error`."""
    token = "tok-" + secrets.token_hex(16)
    emu = start_emulator(tokens={token: "owner"}, now=FIXED_NOW, revisions=20, repos=2)
    try:
        data = emu.dataset
        _append(data, _plant(data.history[-1]["settings"], Canaries()), "admin")
        env = emulator_env(emu, tmp_path / "state.db", token)
        assert _cli(["sync"], env, tmp_path)[0] == 0
    finally:
        emu.stop()
    code, out, err = _cli(["run", "--offline", "--out", str(tmp_path / "run")], env, tmp_path)
    assert code != 2 and "INCOMPLETE" not in out and "not evaluated" not in err, err
    findings = json.loads((tmp_path / "run" / "findings.json").read_text())
    assert findings["summary"]["by_status"]["error"] == 0 and not findings["not_evaluated"]
    policy = tmp_path / "hidden.yaml"
    policy.write_text(HIDDEN_RULE)
    argv = ["run", "--offline", "--policy", str(policy), "--out", str(tmp_path / "r2")]
    code, out, err = _cli(argv, env, tmp_path)
    assert code == 2 and "T-HID-001" in err and "not evaluated" in err, (out, err)
