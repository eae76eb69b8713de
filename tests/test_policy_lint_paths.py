"""`policy lint --state` checks every settings path a rule reads against the stored history.

It warned of a mistyped plain path, a `when:` path, a `{ref: …}` path and a path inside
`each:`, but not of a quantifier's own array (`some: commandDenyList` where the settings have
`commandDenylist`), a leaf path with a typo after `[*]` (`customModels[*].baseUlr`) or after a
`[key=value]` selector: such a rule then always gave its `on_missing` result (a silent pass
with `on_missing: pass`), though the README says to rely on lint to find such a typo.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.test_policy_cli import _store_with, run

MODELS = [
    {"id": "custom:a", "baseUrl": "https://a.example/v1", "apiKey": "k"},
    {"id": "custom:b", "baseUrl": "https://b.example/v1"},
]
SETTINGS: dict[str, Any] = {
    "commandDenylist": ["rm -rf /"],
    "customModels": MODELS,
    "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"command": "echo hi"}]}]},
    "emptyList": [],
}


def _lint(tmp_path: Path, rule_lines: str, revisions: list[dict[str, Any]]) -> list[str]:
    """The warnings of a policy of one settings rule (`on_missing: pass`), its text as given,
    linted against a state holding `revisions`; each `@@` in the text marks where a warning
    is expected and is read as `file:line:col`."""
    text = (
        "defaults: {severity: high, target: settings, on_missing: pass}\n"
        "rules:\n"
        "  - id: R-1\n"
        "    title: a rule\n" + rule_lines
    )
    marks = []
    lines = text.splitlines()
    for number, line in enumerate(lines, start=1):
        if "@@" in line:
            marks.append(f"{number}:{line.index('@@') + 1}")
    policy = tmp_path / "p.yaml"
    policy.write_text(text.replace("@@", ""))
    state = tmp_path / "state.db"
    _store_with(state, revisions)
    code, out, err = run(tmp_path, "lint", str(policy), "--state", str(state))
    assert code == 0, out + err
    found = out.splitlines()
    assert [line.split(": warning: ")[0] for line in found] == [f"{policy}:{m}" for m in marks]
    return [line.split(": warning: ", 1)[1] for line in found]


NONE = "appears in none of the 2 stored revisions (typo or renamed key?)"


TYPO = "appears in none of the 2 stored revisions (typo of"


@pytest.mark.parametrize("kind", ["some", "each", "none"])
def test_a_quantifiers_own_array_is_checked_at_its_key(tmp_path: Path, kind: str) -> None:
    rule = f"    assert:\n      {kind}: @@commandDenyList\n      assert: {{path: '@', equals: x}}\n"
    got = _lint(tmp_path, rule, [SETTINGS, SETTINGS])
    assert got == [
        f"$.rules[0].assert.{kind}: rule R-1: `commandDenyList` {TYPO} `commandDenylist`?)"
    ]


@pytest.mark.parametrize(
    "array",
    [
        "hooks.SubagentStop",  # a hook event the organization does not use
        "hooks.PreCompact",
        "sandbox.allowedDomains",  # under an object no revision has
        "commandAllowlist",  # nothing like it at the top
    ],
)
def test_an_optional_array_a_quantifier_walks_is_not_warned(tmp_path: Path, array: str) -> None:
    """The array a quantifier walks is optional by nature: `none: hooks.SubagentStop` over an
    organization that uses no such hook passes, rightly; the shipped BASE-HOK-003 reads nine
    hook events, and lint warned of each one a history never had (5 warnings on the emulator's
    history, 8 with another seed) as a typo. Only a name close to a key beside it is."""
    rule = f"    assert:\n      none: {array}\n      assert: {{path: command, exists: true}}\n"
    assert _lint(tmp_path, rule, [SETTINGS, SETTINGS]) == []


@pytest.mark.parametrize(
    ("array", "beside"),
    [
        ("commandAllowlist", "commandBlocklist"),  # a word for another, not a typo
        ("commandBlocklist", "commandAllowlist"),
        ("mcpAutonomyUrlOverrides", "mcpAutonomyOverrides"),
        ("hooks.SubagentStop", "hooks.SubagentStart"),
        ("hooks.PostToolUse", "hooks.PreToolUse"),
    ],
)
def test_an_array_named_like_another_key_is_no_typo(
    tmp_path: Path, array: str, beside: str
) -> None:
    """The shipped packs read `commandAllowlist`, `commandBlocklist`, `mcpAutonomyUrlOverrides`
    …: an organization without one of them had lint call the rule a typo of the other (`…
    (typo of `commandBlocklist`?)`), and whoever followed it pointed an allow-list rule at the
    block list. Only a name a letter or two off (or in another case) is a typo."""
    settings: dict[str, Any] = {}
    *parents, key = beside.split(".")
    node = settings
    for parent in parents:
        node = node.setdefault(parent, {})
    node[key] = ["x"]
    rule = f"    assert:\n      each: {array}\n      assert: {{path: '@', equals: x}}\n"
    assert _lint(tmp_path, rule, [settings, settings]) == []


def test_a_quantifiers_array_gone_from_the_latest_revisions_is_not_warned(tmp_path: Path) -> None:
    """An array gone is an array with nothing left to walk (`none:` and `each:` pass): unlike a
    leaf's key gone, nothing about the rule is stale."""
    rule = "    assert:\n      each: customModels\n      assert: {path: id, exists: true}\n"
    later = {k: v for k, v in SETTINGS.items() if k != "customModels"}
    assert _lint(tmp_path, rule, [SETTINGS, later]) == []


@pytest.mark.parametrize(
    ("path", "shown"),
    [
        pytest.param("customModels[*].baseUlr", "customModels[*].baseUlr", id="after-star"),
        pytest.param(
            "hooks.PreToolUse[*].hooks[*].comand",
            "hooks.PreToolUse[*].hooks[*].comand",
            id="after-two-stars",
        ),
        # the key is in no entry at all: shown as such, whichever entry the selector picks
        pytest.param("customModels[id=custom:a].baseUlr", "customModels[*].baseUlr", id="selector"),
        pytest.param("customModels[0].baseUlr", "customModels[*].baseUlr", id="index"),
    ],
)
def test_a_typo_after_an_array_step_is_warned(tmp_path: Path, path: str, shown: str) -> None:
    rule = f"    assert:\n      path: @@{path}\n      excludes: 'http://'\n"
    got = _lint(tmp_path, rule, [SETTINGS, SETTINGS])
    assert got == [f"$.rules[0].assert.path: rule R-1: `{shown}` {NONE}"]


def test_paths_that_are_there_give_no_warning(tmp_path: Path) -> None:
    rule = (
        "    assert:\n      all:\n"
        "        - {path: 'customModels[*].baseUrl', excludes: 'http://'}\n"
        "        - {path: 'customModels[id=custom:b].baseUrl', starts_with: 'https://'}\n"
        "        - {path: 'customModels[1].id', equals: 'custom:b'}\n"
        "        - {path: 'hooks.PreToolUse[*].hooks[*].command', excludes: curl}\n"
        "        - {path: 'hooks.PreToolUse[matcher=Bash].hooks[*].command', excludes: curl}\n"
        "        - {some: commandDenylist, assert: {path: '@', equals: 'rm -rf /'}}\n"
        "        - {none: 'hooks.PreToolUse[*].hooks', assert: {path: '[*].command', equals: x}}\n"
        # an array always empty: whether its entries have the key cannot be known
        "        - {path: 'emptyList[*].name', equals: x}\n"
        "        - {path: 'emptyList[id=x].name', equals: x}\n"
        "        - {each: emptyList, assert: {path: name, equals: x}}\n"
    )
    assert _lint(tmp_path, rule, [SETTINGS, SETTINGS]) == []


def test_a_selector_picking_no_entry_is_warned_not_the_key_after_it(tmp_path: Path) -> None:
    """`baseUrl` is there under other entries: the selector is what picks nothing."""
    rule = "    assert:\n      path: @@customModels[id=custom:nope].baseUrl\n      equals: x\n"
    got = _lint(tmp_path, rule, [SETTINGS, SETTINGS])
    assert got == [
        "$.rules[0].assert.path: rule R-1: `customModels[id=custom:nope]` matches no entry in "
        "any of the 2 stored revisions (typo, or an entry renamed or removed?)"
    ]


def test_a_picked_entry_lacking_the_key_others_have_is_warned(tmp_path: Path) -> None:
    rule = "    assert:\n      path: @@customModels[id=custom:b].apiKey\n      exists: false\n"
    got = _lint(tmp_path, rule, [SETTINGS, SETTINGS])
    assert got == [f"$.rules[0].assert.path: rule R-1: `customModels[id=custom:b].apiKey` {NONE}"]


def test_an_entry_gone_from_the_latest_revision_is_warned(tmp_path: Path) -> None:
    later = {**SETTINGS, "customModels": MODELS[1:]}
    rule = "    assert:\n      path: @@customModels[id=custom:a].baseUrl\n      equals: x\n"
    got = _lint(tmp_path, rule, [SETTINGS, later])
    assert got == [
        "$.rules[0].assert.path: rule R-1: `customModels[id=custom:a]` last matched an entry "
        "in revision 1 (1 revisions ago)"
    ]


def test_alternatives_are_judged_together(tmp_path: Path) -> None:
    """A leaf reads the first of its paths present: one picking nothing is no problem while
    another is read."""
    rule = (
        "    assert:\n      path: ['customModels[id=custom:nope].baseUrl', commandDenylist]\n"
        "      exists: true\n"
    )
    assert _lint(tmp_path, rule, [SETTINGS, SETTINGS]) == []


def test_inside_a_quantifier_over_a_selector_and_a_projection(tmp_path: Path) -> None:
    rule = (
        "    assert:\n      all:\n"
        "        - each: 'hooks.PreToolUse[matcher=Bash].hooks'\n"
        "          assert: {path: @@comand, equals: x}\n"
        "        - each: 'hooks.PreToolUse[*].hooks'\n"
        "          assert: {path: @@'[*].comand', equals: x}\n"
    )
    got = _lint(tmp_path, rule, [SETTINGS, SETTINGS])
    assert got == [
        "$.rules[0].assert.all[0].assert.path: rule R-1: "
        f"`hooks.PreToolUse[*].hooks[*].comand` {NONE}",
        "$.rules[0].assert.all[1].assert.path: rule R-1: "
        f"`hooks.PreToolUse[*].hooks[*].comand` {NONE}",
    ]


def test_a_change_rules_quantifier_is_checked_on_its_settings_side(tmp_path: Path) -> None:
    rule = (
        "    target: change\n"
        "    assert:\n      all:\n"
        "        - each: @@after.customModls\n"
        "          assert: {path: baseUrl, equals: x}\n"
        "        - each: changes\n"  # no settings: never checked
        "          assert: {path: path, equals: $.commandDenylist}\n"
    )
    got = _lint(tmp_path, rule, [SETTINGS, SETTINGS])
    assert got == [
        f"$.rules[0].assert.all[0].each: rule R-1: `customModls` {TYPO} `customModels`?)"
    ]
