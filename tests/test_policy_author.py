"""A custom pack's author (tester T23): mistakes the loader or `policy lint` must name.

A misspelt `kind` in the shipped `changes[]` idiom (`item_add`) matched no change and a
misspelt `path` literal (`$.commandAlowlist`) none either, so the rule passed every step with
no word from `lint`; a dangling link to a pack folder was passed over; a folder named twice
(itself and a link to it) was read twice (duplicate ids); "did you mean" offered the opposite
operator; a misspelt readiness or org field was accepted; a literal that decides nothing
(`not_in: []`) was accepted silently.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.test_policy_cli import _store_with, run


def _write(tmp_path: Path, text: str, name: str = "p.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


CHANGE_RULE = """\
defaults: {{target: change, severity: high}}
rules:
  - id: MY-CMD-001
    title: No command allowed without review
    assert:
      none: changes
      assert:
        all:
          - {{path: kind, in: [{kinds}]}}
          - {{path: path, equals: "{path}"}}
"""


def test_a_misspelt_change_kind_is_an_error_at_its_place(tmp_path: Path) -> None:
    policy = _write(tmp_path, CHANGE_RULE.format(kinds="added, item_add", path="$.x"))
    code, out, _ = run(tmp_path, "lint", str(policy))
    assert code == 2
    assert out.splitlines() == [
        f"{policy}:9:38: error: $.rules[0].assert.assert.all[0].in[1]: `item_add` is not a "
        "change kind (did you mean `item_added`?): a change's `kind` is one of added, removed, "
        "changed, type_changed, item_added, item_removed, renamed, so this literal would match "
        "no change"
    ]


@pytest.mark.parametrize(
    "leaf",
    [
        "{path: 'changes[*].kind', contains: item_remove}",
        "{path: 'changes[0].kind', equals: item_remove}",
        "{not: {path: 'changes[0].kind', not_in: [added, item_remove]}}",
        "{some: changes, assert: {path: kind, not_equals: item_remove}}",
    ],
)
def test_every_way_of_comparing_a_change_kind_is_checked(tmp_path: Path, leaf: str) -> None:
    text = f"rules:\n  - {{id: C-1, title: t, severity: low, target: change, assert: {leaf}}}\n"
    code, out, _ = run(tmp_path, "lint", str(_write(tmp_path, text)))
    assert code == 2
    assert "`item_remove` is not a change kind (did you mean `item_removed`?)" in out


def test_kind_is_a_plain_key_elsewhere(tmp_path: Path) -> None:
    """Only a change's `kind` is a closed set: a settings object's `kind`, an element's under
    another array, is not checked."""
    text = (
        "rules:\n"
        "  - {id: C-1, title: t, severity: low, target: change,"
        " assert: {each: 'after.servers', assert: {path: kind, equals: http}}}\n"
        "  - {id: S-1, title: t, severity: low, target: settings,"
        " assert: {path: kind, in: [item_add]}}\n"
    )
    code, out, err = run(tmp_path, "lint", str(_write(tmp_path, text)))
    assert (code, out) == (0, ""), err


def test_the_shipped_packs_kinds_are_all_known() -> None:
    code, out, err = run(Path.cwd(), "lint")
    assert (code, out) == (0, ""), out + err


REVISIONS: list[dict[str, Any]] = [
    {"commandAllowlist": ["ls"], "customModels": [{"id": "m", "baseUrl": "https://x"}]},
    {"commandAllowlist": ["ls", "curl x | sh"]},
]


def test_lint_warns_of_a_change_path_literal_no_revision_has(tmp_path: Path) -> None:
    """`{path: path, equals: "$.commandAlowlist"}` matches no change: `lint --state` warns
    of it as of any other path a rule reads that no stored revision has."""
    state = tmp_path / "state.db"
    _store_with(state, REVISIONS)
    policy = _write(tmp_path, CHANGE_RULE.format(kinds="item_added", path="$.commandAlowlist"))
    code, out, err = run(tmp_path, "lint", str(policy), "--state", str(state))
    assert code == 0, err
    assert out.splitlines() == [
        f"{policy}:10:34: warning: $.rules[0].assert.assert.all[1].equals: rule MY-CMD-001: "
        "`commandAlowlist` appears in none of the 2 stored revisions (typo or renamed key?)"
    ]
    assert "0 error(s), 1 warning(s)" in err


@pytest.mark.parametrize(
    "path",
    ["$.commandAllowlist", "$.customModels[?id=='m'].baseUrl", "$['commandAllowlist']"],
)
def test_a_change_path_literal_a_revision_has_is_not_warned(tmp_path: Path, path: str) -> None:
    state = tmp_path / "state.db"
    _store_with(state, REVISIONS)
    text = CHANGE_RULE.format(kinds="item_added", path=path.replace('"', '\\"'))
    code, out, err = run(tmp_path, "lint", str(_write(tmp_path, text)), "--state", str(state))
    assert (code, out) == (0, ""), out + err


def test_a_change_path_literal_in_a_list_is_checked_at_its_entry(tmp_path: Path) -> None:
    state = tmp_path / "state.db"
    _store_with(state, REVISIONS)
    text = CHANGE_RULE.format(kinds="item_added", path="x").replace(
        'equals: "x"', "in: [$.commandAllowlist, $.comandAllowlist]"
    )
    policy = _write(tmp_path, text)
    code, out, _ = run(tmp_path, "lint", str(policy), "--state", str(state))
    assert code == 0
    assert out.splitlines() == [
        f"{policy}:10:51: warning: $.rules[0].assert.assert.all[1].in[1]: rule MY-CMD-001: "
        "`comandAllowlist` appears in none of the 2 stored revisions (typo or renamed key?)"
    ]


# --- folders: a dangling link to a pack folder, one folder reached by two names ----------

RULE = "rules:\n  - {{id: {id}, title: t, severity: low, target: settings, assert: {{path: a, equals: 1}}}}\n"


def test_a_dangling_link_to_a_pack_folder_is_an_error(tmp_path: Path) -> None:
    """A shared pack linked in whose target has moved disappeared without a word (`lint`
    exit 0, `run` judged without its rules); it is an error as a dangling `.yaml` link is."""
    pol = tmp_path / "pol"
    pol.mkdir()
    (pol / "own.yaml").write_text(RULE.format(id="OWN-1"))
    (pol / "shared").symlink_to(tmp_path / "moved" / "shared-pack")
    (pol / "extra.yaml").symlink_to(tmp_path / "moved" / "extra.yaml")
    for command in ("lint", "test"):
        code, out, err = run(tmp_path, command, str(pol))
        assert code == 2, out + err
        assert f"{pol}/shared:1:1: error: No such file or directory" in out.splitlines()
        assert f"{pol}/extra.yaml:1:1: error: No such file or directory" in out.splitlines()


def test_a_dangling_link_to_another_file_is_left_alone(tmp_path: Path) -> None:
    """Only a name a pack folder could have (no suffix): a repository's dangling `notes.md`
    is none of the policy's business (`--policy .` in a repository)."""
    pol = tmp_path / "pol"
    pol.mkdir()
    (pol / "own.yaml").write_text(RULE.format(id="OWN-1"))
    (pol / "notes.md").symlink_to(tmp_path / "nowhere.md")
    (pol / ".hidden").symlink_to(tmp_path / "nowhere")
    code, out, err = run(tmp_path, "lint", str(pol))
    assert (code, out) == (0, ""), err


def test_one_folder_named_twice_is_read_once(tmp_path: Path) -> None:
    """`lint pk pklink` (pklink -> pk) read pk/p.yaml twice: `duplicate rule id`, exit 2."""
    pk = tmp_path / "pk"
    pk.mkdir()
    (pk / "p.yaml").write_text(RULE.format(id="P-1"))
    (pk / "p.tests.yaml").write_text(
        "tests:\n  - {name: c, settings: {a: 1}, expect: {P-1: pass}}\n"
    )
    (tmp_path / "pklink").symlink_to(pk)
    for names in (["pk", "pklink"], ["pklink", "pk"], ["pk", "pklink/p.yaml"]):
        code, out, err = run(tmp_path, "lint", *(str(tmp_path / n) for n in names))
        assert (code, out) == (0, ""), out + err
        assert "1 file(s), 1 rule(s)" in err
    code, out, err = run(tmp_path, "test", str(pk), str(tmp_path / "pklink"))
    assert code == 0, out + err
    assert out.count("PASS") == 1


# --- "did you mean": never the operator of opposite meaning -------------------------------


@pytest.mark.parametrize(
    ("written", "meant"),
    [
        ("not_contains", "excludes"),
        ("contains_none", "excludes"),
        ("does_not_contain", "excludes"),
        ("doesNotContain", "excludes"),
        ("greater_than", "gt"),
        ("less_than", "lt"),
        ("regex", "matches"),
        ("not_regex", "not_matches"),
        ("includes", "contains"),
        ("one_of", "in"),
        ("not_one_of", "not_in"),
        ("ne", "not_equals"),
        ("neq", "not_equals"),
        ("eq", "equals"),
        ("ge", "gte"),
        ("le", "lte"),
        ("notin", "not_in"),
        ("not_exists", "exists: false"),
        ("not_starts_with", "not: {path: …, starts_with: …}"),
        ("exlcudes", "excludes"),  # a typo of a word that means "not" is still a typo
        ("equal", "equals"),
    ],
)
def test_did_you_mean_names_the_operator_meant(tmp_path: Path, written: str, meant: str) -> None:
    text = (
        "defaults: {severity: high, target: settings}\n"
        f"rules:\n  - {{id: A-1, title: t, assert: {{path: commandAllowlist, {written}: curl}}}}\n"
    )
    code, out, _ = run(tmp_path, "lint", str(_write(tmp_path, text)))
    assert code == 2
    assert f"unknown key `{written}` (did you mean `{meant}`?)" in out, out


_POSITIVE = ("equals", "in", "matches", "contains", "contains_any", "contains_all", "exists")


@pytest.mark.parametrize("op", _POSITIVE)
@pytest.mark.parametrize("form", ["not_{}", "no_{}", "does_not_{}", "{}_none", "{}_not"])
def test_did_you_mean_never_flips_the_meaning(op: str, form: str) -> None:
    from auditor.policy.compile import _SUGGESTIONS
    from auditor.policy.hints import operator_hint

    hint = operator_hint(form.format(op), _SUGGESTIONS)
    assert f"`{op}`" not in hint
    assert not any(f"`{p}`" in hint for p in _POSITIVE), hint
