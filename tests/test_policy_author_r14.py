"""A custom pack's author, again (review R14 #3, #4, #5, #9): "did you mean" offered the
operator of opposite meaning for names from other tools (`nin`: `in`, `unequal`: `equals`,
`version_below`: `version_at_least`, `item_deleted`: `item_added`); a dangling link to a pack
folder whose name has a dot (`acme.policies`) was passed over; `excludes: ""` on an array was
said to decide nothing, and `excludes: []` was not; a `[kind=…]` selector on `changes` was not
checked.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_policy_cli import run

RULE = (
    "rules:\n"
    "  - {{id: {id}, title: t, severity: low, target: settings, assert: {{path: a, equals: 1}}}}\n"
)


def _write(tmp_path: Path, text: str, name: str = "p.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


# --- #4: a dangling link whose name has a dot may be a pack folder ------------------------


@pytest.mark.parametrize("name", ["acme.policies", "shared.v2", "packs-1.2", "pack.YAML.d"])
def test_a_dangling_link_to_a_pack_folder_with_a_dot_is_an_error(tmp_path: Path, name: str) -> None:
    pol = tmp_path / "pol"
    pol.mkdir()
    (pol / "own.yaml").write_text(RULE.format(id="OWN-1"))
    (pol / name).symlink_to(tmp_path / "moved-away")
    for command in ("lint", "test"):
        code, out, err = run(tmp_path, command, str(pol))
        assert code == 2, out + err
        assert f"{pol}/{name}:1:1: error: No such file or directory" in out.splitlines()


@pytest.mark.parametrize("name", ["notes.md", "README.txt", "ci.sh", "data.json", "logo.PNG"])
def test_a_dangling_link_named_as_a_non_policy_file_is_left_alone(
    tmp_path: Path, name: str
) -> None:
    """A regular file so named is no policy (the loader reads `*.yaml` / `*.yml` only), and
    neither is a link to nothing so named."""
    pol = tmp_path / "pol"
    pol.mkdir()
    (pol / "own.yaml").write_text(RULE.format(id="OWN-1"))
    (pol / name).symlink_to(tmp_path / "nowhere")
    code, out, err = run(tmp_path, "lint", str(pol))
    assert (code, out) == (0, ""), err


# --- #5: literals that decide nothing, and those that do ---------------------------------

BLANK = """\
defaults: {severity: high, target: settings}
rules:
  - {id: L-1, title: no blank entry, assert: {path: commandAllowlist, excludes: ""}}
  - {id: L-2, title: no blank entry, assert: {not: {path: commandAllowlist, contains: ""}}}
  - {id: L-3, title: no blank entry, assert: {path: commandAllowlist, excludes: ["", " "]}}
"""
BLANK_CASES = """\
tests:
  - name: blank
    settings: {commandAllowlist: [ls, ""]}
    expect: {L-1: fail, L-2: fail, L-3: fail}
  - name: none
    settings: {commandAllowlist: [ls]}
    expect: {L-1: pass, L-2: pass, L-3: pass}
"""


def test_a_blank_entry_test_on_an_array_is_not_said_to_decide_nothing(tmp_path: Path) -> None:
    """`excludes: ""` / `contains: ""` ask whether an array holds a blank entry: they decide
    (the policy's own test cases show it), so lint does not warn of them."""
    policy = _write(tmp_path, BLANK, "l.yaml")
    _write(tmp_path, BLANK_CASES, "l.tests.yaml")
    code, out, err = run(tmp_path, "test", str(policy))
    assert code == 0, out + err
    code, out, err = run(tmp_path, "lint", str(policy))
    assert (code, out) == (0, ""), out + err


@pytest.mark.parametrize(
    ("literal", "at", "said"),
    [
        ("excludes: []", "excludes", "`excludes: []` is true of every value"),
        ("starts_with: ['', 'https://']", "starts_with[0]", '`starts_with: ["", …]` is true of'),
        ("starts_with: ['https://', '']", "starts_with[1]", '`starts_with: ["", …]` is true of'),
        ("ends_with: ['']", "ends_with[0]", '`ends_with: [""]` is true of every string'),
        ("starts_with_any: [x, '']", "starts_with_any[1]", "is true of every string"),
        ("starts_with: []", "starts_with", "`starts_with: []` is false of every string"),
    ],
)
def test_lint_warns_of_more_literals_that_decide_nothing(
    tmp_path: Path, literal: str, at: str, said: str
) -> None:
    text = f"defaults: {{severity: low, target: settings}}\nrules:\n  - {{id: E-1, title: t, assert: {{path: x, {literal}}}}}\n"
    policy = _write(tmp_path, text)
    code, out, err = run(tmp_path, "lint", str(policy))
    assert code == 0, err
    lines = out.splitlines()
    assert len(lines) == 1, out
    assert f": warning: $.rules[0].assert.{at}: rule E-1: " in lines[0], lines[0]
    assert said in lines[0] and "so this test decides nothing" in lines[0], lines[0]


def test_a_prefix_list_holding_blank_decides_nothing_as_a_run_shows(tmp_path: Path) -> None:
    """What lint says of `starts_with: ["", "https://"]` is what a run does: `http://plain`
    passes."""
    text = "defaults: {severity: low, target: settings}\nrules:\n  - {id: E-1, title: t, assert: {path: x, starts_with: ['', 'https://']}}\n"
    policy = _write(tmp_path, text)
    _write(
        tmp_path,
        "tests:\n  - name: plain\n    settings: {x: 'http://plain'}\n    expect: {E-1: pass}\n",
        "p.tests.yaml",
    )
    code, out, err = run(tmp_path, "test", str(policy))
    assert code == 0, out + err


# --- #9: the kind a `changes[kind=…]` selector names -------------------------------------


@pytest.mark.parametrize(
    ("assertion", "at"),
    [
        ('{none: "changes[kind=item_add]", assert: {path: path, equals: "$.x"}}', "none"),
        ("{path: 'changes[kind=item_add].path', equals: '$.commandAllowlist'}", "path"),
        ("{not: {path: 'changes[kind=\"item_add\"].after', exists: true}}", "not.path"),
        ("{path: after.x, equals: {ref: 'changes[kind=item_add].after'}}", "equals.ref"),
    ],
)
def test_a_misspelt_kind_in_a_changes_selector_is_an_error(
    tmp_path: Path, assertion: str, at: str
) -> None:
    """`none: "changes[kind=item_add]"` selected no change: the rule gave `unknown` (or, under
    `on_missing: pass`, a pass) on a step that adds an entry, with no word from load or lint."""
    rule = f"  - {{id: K-1, title: t, assert: {assertion}}}"
    text = f"defaults: {{severity: high, target: change}}\nrules:\n{rule}\n"
    policy = _write(tmp_path, text)
    col = rule.index("changes[")  # at the quote before it (1-based)
    code, out, _ = run(tmp_path, "lint", str(policy))
    assert code == 2, out
    line = out.splitlines()[0]
    assert line.startswith(f"{policy}:3:{col}: error: $.rules[0].assert.{at}: "), line
    assert "`item_add` is not a change kind (did you mean `item_added`?)" in line, line
    assert "would select no change" in line, line


def test_a_kind_selector_elsewhere_is_a_plain_selector(tmp_path: Path) -> None:
    """A known kind is fine, and `kind` is a closed set only on the change document's
    `changes` (not a settings array's entries, nor an element's own `changes`)."""
    text = (
        "rules:\n"
        "  - {id: C-1, title: t, severity: low, target: change,"
        " assert: {none: 'changes[kind=item_added]', assert: {path: path, equals: x}}}\n"
        "  - {id: S-1, title: t, severity: low, target: settings,"
        " assert: {path: 'changes[kind=item_add].x', exists: true}}\n"
        "  - {id: C-2, title: t, severity: low, target: change,"
        " assert: {each: after.servers, assert: {path: 'changes[kind=http]', exists: true}}}\n"
    )
    code, out, err = run(tmp_path, "lint", str(_write(tmp_path, text)))
    assert (code, out) == (0, ""), out + err
