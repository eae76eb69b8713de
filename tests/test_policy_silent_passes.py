"""Policy mistakes that passed silently are errors at their `file:line:col` (tester T98):
a change rule's path that is no field of its document, a change's `path` literal the diff
never writes, `exists` beside `default`, bounds no value meets, a path longer than data nests.
Each rule below passed (or was `not_applicable`) on every step, `review` exited 0 on the
weakening it was written for, and `policy lint --state` said nothing."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from auditor.cli import Context, main
from auditor.errors import PolicyError
from auditor.policy import load_policies
from tests.conftest import FIXED_NOW


def _problems(tmp_path: Path, target: str, condition: str) -> list[str]:
    policy = tmp_path / "p.yaml"
    policy.write_text(
        f"rules:\n  - id: X-1\n    title: t\n    severity: high\n    target: {target}\n"
        f"    assert: {condition}\n"
    )
    with pytest.raises(PolicyError) as info:
        load_policies([policy])
    return [p.replace(f"{tmp_path}/", "") for p in info.value.problems]


@pytest.mark.parametrize(
    ("condition", "col", "said"),
    [
        (
            "{path: sandbox.enabled, equals: false}",
            20,
            "$.rules[0].assert.path: `sandbox` is not a field of a change rule's document "
            "(before, after, changes, author, author_name, revision, previous_revision, "
            "updated_at), so `sandbox.enabled` is never present (did you mean "
            "`after.sandbox.enabled`?)",
        ),
        (
            "{path: autor, equals: x@example.com}",
            20,
            "$.rules[0].assert.path: `autor` is not a field of a change rule's document "
            "(before, after, changes, author, author_name, revision, previous_revision, "
            "updated_at), so `autor` is never present (did you mean `author`?)",
        ),
        (
            "{none: changes, assert: {path: sandbox.enabled, equals: false}}",
            44,
            "$.rules[0].assert.assert.path: `sandbox` is not a field of a change in `changes` "
            "(path, kind, before, after, old_path), so `sandbox.enabled` is never present "
            '(did you mean `path: "$.sandbox.enabled"`?)',
        ),
    ],
)
def test_a_change_rules_path_outside_its_document_is_an_error(
    tmp_path: Path, condition: str, col: int, said: str
) -> None:
    assert _problems(tmp_path, "change", condition) == [f"p.yaml:6:{col}: error: {said}"]


def test_change_operators_paths_are_settings_paths_and_settings_rules_are_free(
    tmp_path: Path,
) -> None:
    """`from`/`to`/`increased` read their path in the settings on both sides; a settings
    rule reads any key: neither is held to the change document's fields."""
    policy = tmp_path / "p.yaml"
    policy.write_text(
        "rules:\n"
        "  - {id: C-1, title: t, severity: high, target: change,\n"
        "     assert: {not: {path: sandbox.enabled, from: true}}}\n"
        "  - {id: C-2, title: t, severity: high, target: change,\n"
        "     assert: {path: after.sandbox.enabled, equals: true}}\n"
        "  - {id: S-1, title: t, severity: high, target: settings,\n"
        "     assert: {path: sandbox.enabled, equals: true}}\n"
    )
    assert [r.id for r in load_policies([policy]).rules] == ["C-1", "C-2", "S-1"]


@pytest.mark.parametrize(
    ("literal", "meant"),
    [
        ("commandDenylist", "$.commandDenylist"),
        ("$['commandDenylist']", "$.commandDenylist"),
        ("$.customModels[id=custom:acme].baseUrl", "$.customModels[?id=='custom:acme'].baseUrl"),
        (
            '$.customModels[?id=="custom:acme"].baseUrl',
            "$.customModels[?id=='custom:acme'].baseUrl",
        ),
    ],
)
def test_a_change_path_literal_the_diff_never_writes_is_an_error(
    tmp_path: Path, literal: str, meant: str
) -> None:
    condition = (
        "{none: changes, assert: {all: [{path: kind, equals: item_removed}, "
        f"{{path: path, in: [{json.dumps(literal)}]}}]}}}}"
    )
    [said] = _problems(tmp_path, "change", condition)
    assert said.startswith("p.yaml:6:") and ".assert.all[1].in[0]: " in said
    assert f"is not a change's path as the diff writes it (did you mean `{meant}`?)" in said


def test_exists_beside_default_is_an_error(tmp_path: Path) -> None:
    """`default` made the absent key present, so `exists: true` passed on it (T98 #3)."""
    [said] = _problems(tmp_path, "settings", "{path: nonexist, exists: true, default: 1}")
    assert said.startswith("p.yaml:6:53: error: $.rules[0].assert.default: `default` makes an ")


@pytest.mark.parametrize(
    ("condition", "where", "bounds"),
    [
        ("{not: {path: a, gt: 500, lt: 10}}", "assert.not", "`gt: 500` and `lt: 10`"),
        ("{path: a, equals: 3, gt: 3}", "assert", "`equals: 3` and `gt: 3`"),
        ("{path: a, length: {gte: 5, lte: 1}}", "assert.length", "`gte: 5` and `lte: 1`"),
        ("{path: a, length: {gt: 4, lt: 5}}", "assert.length", "`gt: 4` and `lt: 5`"),
    ],
)
def test_bounds_no_value_meets_are_an_error(
    tmp_path: Path, condition: str, where: str, bounds: str
) -> None:
    [said] = _problems(tmp_path, "settings", condition)
    assert f"error: $.rules[0].{where}: no " in said and f"meets {bounds}: the leaf can" in said


def test_bounds_some_value_meets_load(tmp_path: Path) -> None:
    policy = tmp_path / "p.yaml"
    policy.write_text(
        "defaults: {severity: low, target: settings}\nrules:\n"
        "  - {id: B-1, title: t, assert: {path: a, gte: 1, lte: 1}}\n"
        "  - {id: B-2, title: t, assert: {path: a, gt: 4, lt: 5}}\n"
        "  - {id: B-3, title: t, assert: {path: a, length: {gte: 1, lt: 2}}}\n"
    )
    assert len(load_policies([policy]).rules) == 3


def test_a_path_longer_than_data_nests_is_an_error_not_a_recursion_error(tmp_path: Path) -> None:
    """1,000 steps ended `run`, `review` and `policy test` with `unexpected RecursionError`
    (T98 #5)."""
    [said] = _problems(tmp_path, "settings", "{path: " + ".".join(["a"] * 1000) + ", exists: true}")
    assert said == (
        "p.yaml:6:20: error: $.rules[0].assert.path: a path of 1000 steps is never present: "
        "settings nest at most 64 levels (a change rule's `changes[N].after` adds 3, so 67 "
        "steps at most)"
    )


def test_review_with_such_a_rule_exits_2_at_its_place(tmp_path: Path) -> None:
    """What the gate sees: the review of a proposal that turns the sandbox off, with a rule
    written `sandbox.enabled` in a change rule, is an error at the rule's place (exit 2), not
    a pass (exit 0)."""
    rule = "on_missing: pass\n    assert: {not: {path: sandbox.enabled, equals: false}}"
    code, err = _review(
        tmp_path, {"sandbox": {"enabled": True}}, {"sandbox": {"enabled": False}}, rule
    )
    assert code == 2, err
    assert f"{tmp_path}/c.yaml:7:26: error: $.rules[0].assert.not.path: `sandbox` is not a " in err


def _review(
    tmp_path: Path, live: dict[str, Any], proposed: dict[str, Any], rule: str
) -> tuple[int, str]:
    """`review --offline` of `proposed` against `live` with one change rule (`rule`: its
    lines from `on_missing:` or `assert:` on, in c.yaml from line 6): its exit code and stderr;
    findings.json in `o/`."""
    (tmp_path / "live.json").write_text(json.dumps(live))
    (tmp_path / "proposed.json").write_text(json.dumps(proposed))
    policy = tmp_path / "c.yaml"
    policy.write_text(
        f"rules:\n  - id: C-1\n    title: t\n    severity: high\n    target: change\n    {rule}\n"
    )
    argv = ["review", str(tmp_path / "proposed.json"), "--against", str(tmp_path / "live.json")]
    argv += ["--offline", "--policy", str(policy), "--out", str(tmp_path / "o"), "-o", "json"]
    out, err = io.StringIO(), io.StringIO()
    ctx = Context(env={}, stdout=out, stderr=err, clock=lambda: FIXED_NOW, cwd=str(tmp_path))
    return main(argv, ctx), err.getvalue()


@pytest.mark.parametrize(
    ("condition", "said"),
    [
        ("{path: a, equals: true, default: 'true'}", "`default` is a string, and `equals`"),
        ("{path: a, gte: 5, default: '5'}", "`default` is a string, and `gte`"),
        ("{path: a, in: [1, 2], default: false}", "`default` is a boolean, and `in`"),
    ],
)
def test_a_default_no_literal_can_equal_is_an_error(
    tmp_path: Path, condition: str, said: str
) -> None:
    """It was an `error` on every run once the key went missing, never at load (T98 #8)."""
    [problem] = _problems(tmp_path, "settings", condition)
    assert "error: $.rules[0].assert.default: " + said in problem


def test_a_policy_test_case_whose_settings_are_no_object_is_an_error(tmp_path: Path) -> None:
    """`settings: null` ran the case with no settings, so `expect: unknown` passed (T98 #9)."""
    (tmp_path / "a.yaml").write_text(
        "rules:\n  - {id: A-1, title: t, severity: low, target: settings,\n"
        "     assert: {path: sandbox.enabled, equals: true}}\n"
    )
    for given in ("null", "[1]", '"x"'):
        (tmp_path / "a.tests.yaml").write_text(
            f"tests:\n  - name: c\n    settings: {given}\n    expect: {{A-1: unknown}}\n"
        )
        out, err = io.StringIO(), io.StringIO()
        ctx = Context(env={}, stdout=out, stderr=err, clock=lambda: FIXED_NOW, cwd=str(tmp_path))
        assert main(["policy", "test", str(tmp_path / "a.yaml")], ctx) == 2, out.getvalue()
        assert "a.tests.yaml:3:15: error: $.tests[0].settings: `settings:` is settings, an " in (
            err.getvalue() + out.getvalue()
        )


def test_a_utf16_policy_file_is_said_to_be_utf16(tmp_path: Path) -> None:
    policy = tmp_path / "p.yaml"
    policy.write_bytes("rules: []\n".encode("utf-16"))
    with pytest.raises(PolicyError) as info:
        load_policies([policy])
    assert "it starts with a UTF-16 byte-order mark; save it as UTF-8" in str(info.value)


def test_an_item_whose_id_is_null_is_named_as_json_names_it(tmp_path: Path) -> None:
    """A custom model with `id: null` added read "added `None` to customModels" (T98 #12)."""
    proposed = {"customModels": [{"id": None, "baseUrl": "https://x.example"}]}
    rule = "assert: {none: changes, assert: {path: kind, equals: item_added}}"
    code, err = _review(tmp_path, {"customModels": []}, proposed, rule)
    assert code == 1, err
    text = (tmp_path / "o" / "findings.json").read_text()
    assert "`null`" in text and "`None`" not in text


def test_the_fields_checked_are_the_change_documents() -> None:
    """The fields a change rule's path is held to are those `change_document` gives (with
    an author known), and each change's: the check cannot drift from what rules read."""
    from auditor.evaluate.change import change_document
    from auditor.models import CHANGE_DOCUMENT_FIELDS, CHANGE_FIELDS, Revision, User

    who = User("u1", "dev@example.com", "Dev")
    before = Revision(1, FIXED_NOW, who, {"a": 1}, "h1")
    after = Revision(2, FIXED_NOW, who, {"a": 2}, "h2")
    doc = change_document(before, after, with_changes=True)
    assert sorted(doc) == sorted(CHANGE_DOCUMENT_FIELDS)
    assert [sorted(c) for c in doc["changes"]] == [sorted(CHANGE_FIELDS)]


@pytest.mark.parametrize(
    ("condition", "said"),
    [
        (
            "{path: 'changes[path=sandbox.enabled].after', exists: true}",
            "`sandbox.enabled` is not a change's path as the diff writes it (did you mean "
            "`$.sandbox.enabled`?), so `changes[path=sandbox.enabled].after` would select no",
        ),
        (
            "{none: changes, assert: {path: path, starts_with: sandbox.}}",
            "`sandbox.` starts no change's path: the diff writes each from `$` (did you mean "
            "`$.sandbox.`?)",
        ),
        ("{path: after.a, length: {lt: 0}}", "no length meets `lt: 0`"),
    ],
)
def test_more_literals_no_change_or_length_meets_are_errors(
    tmp_path: Path, condition: str, said: str
) -> None:
    """A change's path in a selector or a prefix, and a length below 0 (reviewer R90 #7)."""
    [problem] = _problems(tmp_path, "change", condition)
    assert said in problem, problem


@pytest.mark.parametrize(
    "literal", ["$['a[b=c]']", "$.m[?id==1e+16]", "$.hooks['Pre Tool']", "$.x[?n==3]"]
)
def test_change_path_literals_the_diff_writes_load(tmp_path: Path, literal: str) -> None:
    """A literal that is a path as written is not rewritten first (reviewer R90 #8)."""
    policy = tmp_path / "p.yaml"
    policy.write_text(
        "rules:\n  - id: X-1\n    title: t\n    severity: high\n    target: change\n"
        f"    assert: {{none: changes, assert: {{path: path, equals: {json.dumps(literal)}}}}}\n"
    )
    assert len(load_policies([policy]).rules) == 1


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("a:\n  b: !!float 0x1F\n", "float"),
        ("a: !!float 1:30\n", "float"),
        ("a: !!int 1:30\n", "int"),
        ("%YAML 1.1\n---\na: !!int 1:30\n", "int"),
    ],
)
def test_a_tagged_number_the_constructor_cannot_read_is_an_error_at_its_place(
    text: str, kind: str
) -> None:
    """It was `p.yaml:1:1: error: a value cannot be read`, with no place (reviewer R90 #6)."""
    from auditor.policy.yamlsafe import load_text

    with pytest.raises(PolicyError) as info:
        load_text(text, "p.yaml")
    said = str(info.value)
    assert f"a value tagged `!!{kind}` is not written as one" in said and ":1:1:" not in said


def test_tagged_values_the_constructor_reads_still_load() -> None:
    from auditor.policy.yamlsafe import load_text

    text = "a: !!timestamp 2026-1-1\nb: !!float 30\nc: !!float -3_0\nd: !!int 0x1F\n"
    data = load_text(text, "p.yaml").data
    assert (str(data["a"]), data["b"], data["c"], data["d"]) == ("2026-01-01", 30.0, -30.0, 31)


def test_a_selector_of_changes_that_are_no_rename_loads(tmp_path: Path) -> None:
    """`changes[old_path=null]` selects the changes the diff gives no old path (every one but
    a rename): no path literal to hold to the diff's form."""
    policy = tmp_path / "p.yaml"
    policy.write_text(
        "rules:\n  - id: X-1\n    title: t\n    severity: high\n    target: change\n"
        "    assert: {path: 'changes[old_path=null].after', exists: true}\n"
    )
    assert len(load_policies([policy]).rules) == 1
