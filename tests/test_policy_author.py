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
    ["$.commandAllowlist", "$.customModels[?id=='m'].baseUrl"],
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

RULE = (
    "rules:\n"
    "  - {{id: {id}, title: t, severity: low, target: settings, assert: {{path: a, equals: 1}}}}\n"
)


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
    """A name only a file that is no policy has: a repository's dangling `notes.md`
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


# --- readiness and org fields: a closed set ------------------------------------------------

FIELDS = """\
defaults: {severity: medium, on_missing: pass}
rules:
  - {id: D-1, title: t, target: readiness, assert: {path: $levle, gte: 2}}
  - {id: D-2, title: t, target: org, assert: {path: fresh_share_30, gte: 0.8}}
  - {id: D-3, title: t, target: readiness, assert: {path: criteria.lint.pased, equals: true}}
  - {id: D-4, title: t, target: org, assert: {path: below_level_3, lte: {ref: repo_cont}}}
  - {id: D-5, title: t, target: readiness, assert: {path: [$score, report.x], gte: 0.5}}
  - {id: D-6, title: t, target: org, assert: {path: below_level_7, equals: 0}}
"""


def test_lint_warns_of_a_readiness_or_org_field_no_document_has(tmp_path: Path) -> None:
    """`$levle` and `fresh_share_30` were accepted, and with `on_missing: pass` both rules
    passed on every repository (tester T23 #8)."""
    policy = _write(tmp_path, FIELDS)
    code, out, err = run(tmp_path, "lint", str(policy))
    assert code == 0, err
    assert "0 error(s), 4 warning(s)" in err
    lines = out.splitlines()
    assert [line.split(": warning: ")[0] for line in lines] == [
        f"{policy}:3:59", f"{policy}:4:53", f"{policy}:5:59", f"{policy}:6:79"
    ]  # fmt: skip
    assert (
        "rule D-1: `$levle` is not a field readiness rules see (did you mean `$level`?)"
        in (lines[0])
    )
    assert "rule D-2: `fresh_share_30` is not a field org rules see (did you mean " in lines[1]
    assert "`fresh_share_30d`?)" in lines[1]
    assert "a criterion has no `pased` (did you mean `passed`?)" in lines[2]
    assert "$.rules[3].assert.lte.ref: rule D-4: `repo_cont`" in lines[3]


def test_the_field_lists_are_the_documents_the_rules_see() -> None:
    """lint's lists are `auditor.evaluate.readiness`'s documents, key for key."""
    from datetime import UTC, datetime

    from auditor.evaluate.readiness import load_readiness_model, org_view, readiness_view
    from auditor.models import ReadinessReport
    from auditor.policy.lint import CRITERION_FIELDS, ORG_FIELDS, READINESS_FIELDS

    now = datetime(2026, 11, 1, tzinfo=UTC)
    data = {
        "reportId": "r1", "repoUrl": "https://github.com/a/b", "createdAt": 1, "branch": "m",
        "commitHash": "c", "hasLocalChanges": False, "hasNonRemoteCommits": False,
        "modelUsed": "m", "agentVersion": "1", "apps": [],
        "report": {"lint": {"numerator": 1, "denominator": 1}, "odd": {"numerator": 5,
                   "denominator": 1}, "skip": {"numerator": None, "denominator": 1}},
    }  # fmt: skip
    report = ReadinessReport("r1", "https://github.com/a/b", now, data, "h")
    model = load_readiness_model()
    view = readiness_view(report, model, now)
    assert set(view) == set(READINESS_FIELDS)
    criteria: Any = view["criteria"]
    assert set().union(*map(set, criteria.values())) == set(CRITERION_FIELDS)
    org = org_view([report], model, now)
    below = {k for k in org if k.startswith("below_level_")}
    assert below and set(org) - below == set(ORG_FIELDS)


def test_lint_warns_of_a_literal_that_decides_nothing(tmp_path: Path) -> None:
    """`not_in: []`, `contains_all: []` and `starts_with: ""` were accepted: the rule always
    passed (or, under `not`, always failed), with no word from lint (tester T23 #11)."""
    cases = [
        ("not_in: []", "`not_in: []` is true of every value"),
        ("in: []", "`in: []` is false of every value"),
        ("contains_all: []", "`contains_all: []` is true of every array"),
        ("contains_any: []", "`contains_any: []` is false of every array"),
        ("starts_with: ''", '`starts_with: ""` is true of every string'),
        ("ends_with: ''", '`ends_with: ""` is true of every string'),
    ]
    rules = "".join(
        f"  - {{id: E-{n}, title: t, assert: {{not: {{path: x, {literal}}}}}}}\n"
        for n, (literal, _) in enumerate(cases)
    )
    policy = _write(tmp_path, "defaults: {severity: low, target: settings}\nrules:\n" + rules)
    code, out, err = run(tmp_path, "lint", str(policy))
    assert code == 0, err
    lines = out.splitlines()
    assert len(lines) == len(cases), out
    written = policy.read_text().splitlines()
    for n, (line, (literal, said)) in enumerate(zip(lines, cases, strict=True)):
        column = written[n + 2].index(literal) + literal.index(":") + 3  # at the literal
        assert line.startswith(f"{policy}:{n + 3}:{column}: warning: $.rules[{n}].assert.not.")
        assert f"rule E-{n}: {said}" in line
        assert "so this test decides nothing" in line


def test_a_literal_that_decides_something_is_not_warned(tmp_path: Path) -> None:
    text = (
        "defaults: {severity: low, target: settings}\nrules:\n"
        "  - {id: E-1, title: t, assert: {path: x, not_in: [a], starts_with: b}}\n"
        "  - {id: E-2, title: t, assert: {path: x, subset_of: [], equals: ''}}\n"
        "  - {id: E-3, title: t, assert: {path: x, in: {ref: y}}}\n"
    )
    code, out, err = run(tmp_path, "lint", str(_write(tmp_path, text)))
    assert (code, out) == (0, ""), out + err


# --- `added` / `removed` speak of the path itself, not of a list's entries -----------------

PRESENCE = """\
defaults: {target: change, severity: high}
rules:
  - {id: MY-CMD-003, title: t, assert: {not: {path: commandAllowlist, added: true}}}
  - {id: MY-AUT-001, title: t, assert: {not: {path: maxAutonomyLevel, removed: true}}}
  - id: MY-CMD-006
    title: t
    assert:
      all:
        - not: {path: commandAllowlist, removed: true}
        - none: changes
          assert:
            all:
              - {path: kind, in: [item_removed, removed]}
              - {path: path, equals: "$.commandAllowlist"}
"""


def test_lint_warns_of_added_on_a_path_holding_a_list(tmp_path: Path) -> None:
    """`{not: {path: commandAllowlist, added: true}}` passed every step that added an entry
    (tester T23 #3): `added` is true only when the key itself appears. `lint --state` says
    so where the stored revisions hold a list there, with the `changes[]` idiom to use; not
    where the rule also uses that idiom on the path (the list itself, on purpose)."""
    state = tmp_path / "state.db"
    _store_with(state, [{"commandAllowlist": ["ls"], "maxAutonomyLevel": "low"}] * 2)
    policy = _write(tmp_path, PRESENCE)
    code, out, err = run(tmp_path, "lint", str(policy), "--state", str(state))
    assert code == 0, err
    assert out.splitlines() == [
        f"{policy}:3:78: warning: $.rules[0].assert.not.added: rule MY-CMD-003: `added` on "
        "`commandAllowlist`, which holds a list in the stored revisions, is true only when the "
        "list itself appears (absent before), never when an entry is added to it: for entries, "
        "use `none: changes` with `{path: kind, in: [item_added]}` and `{path: path, equals: "
        '"$.commandAllowlist"}`'
    ]
