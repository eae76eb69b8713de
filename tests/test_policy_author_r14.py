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
    rule = f"  - {{id: E-1, title: t, assert: {{path: x, {literal}}}}}\n"
    text = "defaults: {severity: low, target: settings}\nrules:\n" + rule
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
    rule = "  - {id: E-1, title: t, assert: {path: x, starts_with: ['', 'https://']}}\n"
    text = "defaults: {severity: low, target: settings}\nrules:\n" + rule
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


# --- #3: "did you mean" keeps the meaning, or says nothing -------------------------------

OPPOSITES = """\
defaults: {severity: high, target: settings}
rules:
  - {id: D-1, title: t, assert: {path: sandbox.mode, nin: [off, permissive]}}
  - {id: D-2, title: t, assert: {path: sandbox.mode, unequal: strict}}
  - {id: D-3, title: t, assert: {path: sandbox.mode, mismatches: "^str"}}
  - {id: D-4, title: t, assert: {path: sandbox.mode, nomatch: "^str"}}
  - {id: D-5, title: t, assert: {path: agentVersion, version_below: "1.2"}}
  - {id: D-6, title: t, assert: {path: commandAllowlist, superset_of: [ls]}}
  - {id: D-7, title: t, assert: {path: commandBlocklist, no_entry: true}}
  - {id: D-8, title: t, target: change, assert: {path: sandbox.mode, unchanged: true}}
  - {id: D-9, title: t, assert: {path: sandbox.mode, not_set: true}}
"""


def test_did_you_mean_offers_no_opposite_for_names_from_other_tools(tmp_path: Path) -> None:
    """Review R14's names: each got the operator of opposite meaning (`nin`: `in`), and
    `not_set` a `not:` around `assert`."""
    code, out, _ = run(tmp_path, "lint", str(_write(tmp_path, OPPOSITES)))
    assert code == 2
    hints = [line.split(": unknown key ", 1)[1] for line in out.splitlines()]
    assert hints == [
        "`nin` (did you mean `not_in`?)",
        "`unequal` (did you mean `not_equals`?)",
        "`mismatches` (did you mean `not_matches`?)",
        "`nomatch` (did you mean `not_matches`?)",
        "`version_below` (did you mean `not: {path: …, version_at_least: …}`?)",
        "`superset_of` (did you mean `contains_all`?)",
        "`no_entry`",
        "`unchanged` (did you mean `changed: false`?)",
        "`not_set` (did you mean `exists: false`?)",
    ]


@pytest.mark.parametrize(
    ("written", "meant"),
    [
        ("item_deleted", "item_removed"),
        ("item_delete", "item_removed"),
        ("deleted", "removed"),
        ("item_add", "item_added"),
        ("value_changed", "changed"),
        ("item_remove", "item_removed"),
    ],
)
def test_a_change_kind_hint_keeps_the_edit(tmp_path: Path, written: str, meant: str) -> None:
    """`item_deleted` got "did you mean `item_added`?", `value_changed` `type_changed`."""
    text = (
        "defaults: {severity: high, target: change}\nrules:\n  - {id: K-1, title: t, assert: "
        f"{{none: changes, assert: {{all: [{{path: kind, equals: {written}}},"
        " {path: path, equals: '$.commandDenylist'}]}}}\n"
    )
    code, out, _ = run(tmp_path, "lint", str(_write(tmp_path, text)))
    assert code == 2
    assert f"`{written}` is not a change kind (did you mean `{meant}`?)" in out, out


# The property: what a name means, read by markers independent of the hint's own tables, and
# what each suggestion means (written out by hand); a suggestion says "not" as the name does,
# and keeps each of its poles (a typo that lost a marker, `increasd`, may gain one).
_NEG_PREFIXES = ("doesnot", "doesnt", "isnot", "isnt", "dont", "not", "non", "no", "un", "mis")
_NEG_MARKS = ("not", "none", "nin", "never", "without", "lack", "absent", "missing", "undefin")
_NEG_MARKS += ("differ", "unequal", "inequal", "mismatch", "nomatch", "unset", "unchang")
_NEG_MARKS += ("exclud", "unlike", "nonempty", "unmatch", "unrenam")
_NEG_MARKS += ("dismatch", "disequal", "noincreas", "nodecreas")
_MARKS = {
    "up": ("greater", "more", "above", "atleast", "higher", "increase"),
    "down": ("less", "fewer", "below", "atmost", "under", "lower", "decrease"),
    "old": ("older",),
    "new": ("newer", "younger", "within"),
    "add": ("added", "insert", "creat"),
    "remove": ("remov", "delet", "drop"),
    "sub": ("subset",),
    "super": ("superset", "containsall", "includesall", "hasall", "containsevery"),
}
_SHORT = {
    "up": ("gt", "gte", "ge", ">", ">=", "min"),
    "down": ("lt", "lte", "le", "<", "<=", "max"),
}
_SHORT_ADD = ("add",)
_SUGGESTED = {
    "not_equals": {"neg"}, "not_in": {"neg"}, "not_matches": {"neg"}, "excludes": {"neg"},
    "gt": {"up"}, "gte": {"up"}, "at_least": {"up"}, "increased": {"up"},
    "version_at_least": {"up"}, "lt": {"down"}, "lte": {"down"}, "at_most": {"down"},
    "decreased": {"down"}, "older_than_days": {"old"}, "within_days": {"new"},
    "added": {"add"}, "removed": {"remove"}, "item_added": {"add"}, "item_removed": {"remove"},
    "subset_of": {"sub"}, "contains_all": {"super"}, "not": {"neg"}, "none": {"neg"},
}  # fmt: skip


def _squash(name: str) -> str:
    return "".join(c for c in name.casefold() if c.isalnum() or c in "<>=!")


def _name_sense(name: str) -> frozenset[str]:
    """What a written name means: "neg" for a "not", and its poles."""
    s = _squash(name)
    neg = s in ("ne", "neq", "!=") or any(m in s for m in _NEG_MARKS)
    rest = s
    for prefix in _NEG_PREFIXES:
        if s.startswith(prefix) and not s.startswith(("under", "unique")) and s != "none":
            neg, rest = True, s[len(prefix) :]
            break
    core = rest
    for lead in ("version", "is", "has", "item"):
        core = core.removeprefix(lead)
    found = {pole for pole, marks in _MARKS.items() if any(m in rest for m in marks)}
    found |= {pole for pole, marks in _SHORT.items() if core in marks}
    found |= {"up"} if core.startswith("min") else {"down"} if core.startswith("max") else set()
    found |= {"add"} if core in _SHORT_ADD else set()
    return _normal(found | ({"neg"} if neg else set()))


def _normal(sense: set[str]) -> frozenset[str]:
    """ "not greater" is "down", "not less" "up": a direction absorbs a "not"."""
    if "neg" in sense and ({"up", "down"} & sense):
        flip = {"up": "down", "down": "up"}
        sense = {flip.get(p, p) for p in sense if p != "neg"}
    return frozenset(sense)


def _suggestion_sense(hint: str) -> frozenset[str]:
    """What a suggestion means (`not: {path: …, x: …}` is what x is not)."""
    if hint.startswith("not: {path: …, "):
        inner = hint.removeprefix("not: {path: …, ").split(":")[0]
        return _normal(set(_SUGGESTED.get(inner, set())) ^ {"neg"})
    if hint.endswith(": false"):
        return _normal(set(_SUGGESTED.get(hint.removesuffix(": false"), set())) | {"neg"})
    return frozenset(_SUGGESTED.get(hint, set()))


def _hinted(hint: str) -> str:
    return hint.removeprefix(" (did you mean `").removesuffix("`?)")


def test_every_synonym_means_what_its_name_says() -> None:
    from auditor.policy.hints import _KIND_SYNONYMS, _SYNONYMS

    for name, meant in (*_SYNONYMS.items(), *_KIND_SYNONYMS.items()):
        assert _agrees(_name_sense(name), _suggestion_sense(meant)), (name, meant)


def _agrees(name: frozenset[str], hint: frozenset[str]) -> bool:
    opposite = {"up": "down", "down": "up", "old": "new", "new": "old", "add": "remove"}
    opposite |= {"remove": "add", "sub": "super", "super": "sub", "neg": "neg"}
    return (
        ("neg" in name) == ("neg" in hint)
        and name - {"neg"} <= hint
        and not any(opposite[p] in hint for p in name - {"neg"})
    )


def _names() -> list[str]:
    from auditor.models import CHANGE_KINDS
    from auditor.operators import REGISTRY

    positive = [op for op in REGISTRY if not _name_sense(op) & {"neg"}]
    forms = ("not_{}", "no_{}", "non_{}", "does_not_{}", "un{}", "mis{}", "no{}", "{}_none")
    written = [form.format(op) for op in positive for form in forms]
    written += [f"{op[:-1]}" for op in REGISTRY]  # a letter short: the typo still holds
    written += [
        "nin", "unequal", "inequal", "mismatches", "nomatch", "unchanged", "version_below",
        "version_under", "version_less_than", "superset_of", "no_entry", "not_set", "unset",
        "item_deleted", "item_delete", "deleted", "value_changed", "less_or_equal",
        "greater_or_equal", "not_below", "not_above", "no_more_than", "at_lest", "at_mots",
        "increasd", "decreasd", "older_then", "newer_then", "subsetof", "is_superset",
        "not_greater_than", "no_less_than", "max_version", "min_version", "not_added",
        "not_removed", "un_changed", "type_change", "item_remove", "item_add",
        "unmatched", "mismatched", "unrenamed", "unmatching",  # review R17: inflected
        "inequals", "dismatch", "disequal", "noincrease", "nodecrease",  # review R18
        "into", "insubset", "in_subset", "in_one_of", "inoneof", "in_set", "in_from",  # R19
    ]  # fmt: skip
    return [*written, *CHANGE_KINDS]


def test_no_suggestion_flips_the_meaning() -> None:
    """For every name an author might write, negative or positive, with a direction, an edit
    or a set: the operator (or change kind) suggested means the same, or there is none."""
    from auditor.models import CHANGE_KINDS
    from auditor.policy.compile import _SUGGESTIONS
    from auditor.policy.hints import kind_hint, operator_hint

    checked = 0
    for name in _names():
        for hint in (operator_hint(name, _SUGGESTIONS), kind_hint(name, CHANGE_KINDS)):
            if hint:
                checked += 1
                meant = _hinted(hint)
                assert _agrees(_name_sense(name), _suggestion_sense(meant)), (name, meant)
    assert checked > 100


@pytest.mark.parametrize("written", ["no_entry", "renamed", "item_deleted", "under", "node"])
def test_no_hint_where_no_key_means_the_same(written: str) -> None:
    """`no_entry` got `empty: false` (`entry` spelt like `empty`), `renamed` `removed`."""
    from auditor.policy.compile import _SUGGESTIONS
    from auditor.policy.hints import operator_hint

    assert operator_hint(written, _SUGGESTIONS) == ""
