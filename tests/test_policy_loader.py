"""Loading policy files: invalid files as test data (one file per problem, with its message)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from auditor.errors import PolicyError
from auditor.policy import SHIPPED_POLICY_DIR, load_policies
from auditor.policy.conditions import root_paths
from auditor.policy.model import Rule
from auditor.policy.schema import SCHEMA_PATH, build_schema

HERE = Path(__file__).parent / "policies"
INVALID = sorted((HERE / "invalid").glob("*.yaml"))
VALID = HERE / "valid"


def _paths(rule: Rule) -> tuple[str, ...]:
    """Every settings path the rule reads (what the removed `Rule.paths` field held)."""
    conds = [c for c in (rule.condition, rule.when) if c is not None]
    return tuple(sorted({".".join(p.deps) for c in conds for p in root_paths(c)}))


def _problems(*paths: Path) -> list[str]:
    with pytest.raises(PolicyError) as info:
        load_policies(list(paths))
    out = "\n".join(info.value.problems)
    for path in paths:
        out = out.replace(str(path.parent) + "/", "")
    return out.splitlines()


@pytest.mark.parametrize("path", INVALID, ids=[p.stem for p in INVALID])
def test_invalid_policy_file(path: Path, update_golden: bool) -> None:
    got = _problems(path)
    expected_file = path.with_suffix(".expected")
    if update_golden:
        expected_file.write_text("\n".join(got) + "\n")
    assert got == expected_file.read_text().splitlines()


def test_every_invalid_file_has_an_expected_message() -> None:
    assert len(INVALID) >= 20
    assert all(p.with_suffix(".expected").exists() for p in INVALID)


def test_valid_sample_loads_with_defaults_applied() -> None:
    policy = load_policies([VALID])
    assert [r.id for r in policy.rules][:2] == ["SBX-001", "SBX-002"]
    first = policy.rule("AUT-001")
    assert first is not None
    assert first.on_missing == "fail"  # the rule's own value beats the file default
    assert first.controls == ("SOC2:CC6.1",)  # from `defaults:`
    assert first.source is not None and (first.source.line, first.source.col) == (24, 5)
    assert _paths(first) == ("autonomyLevel", "maxAutonomyLevel")
    assert policy.enums["risk"] == ("none", "some", "lots")
    assert policy.files[0].rule_ids[0] == "SBX-001"
    assert len(policy.files[0].sha256) == 64


def test_test_files_are_not_loaded_as_policies() -> None:
    policy = load_policies([VALID])
    assert [Path(f.path).name for f in policy.files] == ["sample.yaml"]


def _rule(rule_id: str, extra: str = "") -> str:
    return (
        f"  - id: {rule_id}\n    title: t\n    severity: low\n    target: settings\n"
        f"    assert: {{path: a, exists: true}}\n{extra}"
    )


def test_duplicate_ids_across_files_and_all_files_reported_sorted(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text("rules:\n" + _rule("X-1") + _rule("X-2"))
    (tmp_path / "b.yaml").write_text("rules:\n" + _rule("X-2"))
    (tmp_path / "c.yaml").write_text("rules:\n  - id: X-3\n    title: t\n    severity: bad\n")
    got = _problems(tmp_path / "a.yaml", tmp_path / "b.yaml", tmp_path / "c.yaml")
    assert got == [
        "b.yaml:2:9: error: $.rules[0].id: duplicate rule id `X-2` "
        f"(first at {tmp_path}/a.yaml:7:5)".replace(f"{tmp_path}/", ""),
        "c.yaml:2:5: error: $.rules[0]: missing `target` (set it on the rule or under `defaults:`)",
        "c.yaml:2:5: error: $.rules[0]: missing required key `assert`",
        'c.yaml:4:15: error: $.rules[0].severity: "bad" is not one of critical, high, medium, '
        "low, info",
    ]


@pytest.mark.parametrize(
    ("condition", "message"),
    [
        ("{all: []}", "`all` needs a non-empty list of conditions"),
        ("{any: []}", "`any` needs a non-empty list of conditions"),
        ("{path: a, increased: false}", "needs {enum: <ordered enum>, value: <level>}"),
        ("{path: [], equals: 1}", "`path` needs a path or a non-empty list of paths"),
        ("{path: after.a, matches: {ref: b}}", "`matches` does not accept {ref: …}"),
    ],
)
def test_one_spot_gets_one_error(tmp_path: Path, condition: str, message: str) -> None:
    """Where the schema and the compiler both object, the compiler's message is given once."""
    (tmp_path / "p.yaml").write_text(
        "rules:\n  - id: X-1\n    title: t\n    severity: high\n    target: change\n"
        f"    assert: {condition}\n"
    )
    got = _problems(tmp_path / "p.yaml")
    assert len(got) == 1 and message in got[0], got


def test_every_missing_key_of_a_rule_is_reported_at_once(tmp_path: Path) -> None:
    (tmp_path / "p.yaml").write_text("rules:\n  - id: X-1\n    assert: {path: a, equals: 1}\n")
    got = _problems(tmp_path / "p.yaml")
    assert [line.split("$.rules[0]: ")[1].split(" (")[0] for line in got] == [
        "missing `severity`",
        "missing `target`",
        "missing required key `title`",
    ]
    (tmp_path / "p.yaml").write_text(  # a misspelt key is named, not also called missing
        "rules:\n  - id: X-1\n    severty: high\n    target: settings\n"
        "    assert: {path: a, equals: 1}\n"
    )
    got = _problems(tmp_path / "p.yaml")
    assert len(got) == 2 and "unknown key `severty`" in got[0] + got[1], got


def test_a_rule_field_under_defaults_says_what_defaults_takes(tmp_path: Path) -> None:
    (tmp_path / "p.yaml").write_text(
        "defaults:\n  title: x\n  severity: high\nrules:\n  - id: X-1\n    title: t\n"
        "    target: settings\n    assert: {path: a, equals: 1}\n"
    )
    assert _problems(tmp_path / "p.yaml") == [
        "p.yaml:2:3: error: $.defaults.title: `title` is each rule's own; `defaults:` takes "
        "severity, target, on_missing, controls, tags"
    ]


def test_enums_declared_in_one_file_serve_another(tmp_path: Path) -> None:
    (tmp_path / "enums.yaml").write_text("enums:\n  tier: [bronze, silver, gold]\nrules: []\n")
    (tmp_path / "r.yaml").write_text(
        "rules:\n" + _rule("T-1").replace("exists: true", "at_least: {enum: tier, value: silver}")
    )
    assert [r.id for r in load_policies([tmp_path]).rules] == ["T-1"]


def test_a_policy_folder_skips_hidden_files_and_folders(tmp_path: Path) -> None:
    """`--policy .` in a repository must not read `.github/workflows/*.yml` (nor `.git/`, nor an
    editor's hidden backup) as policy files: each would be a schema error."""
    (tmp_path / "packs").mkdir()
    (tmp_path / "packs" / "r.yaml").write_text("rules:\n" + _rule("T-1"))
    (tmp_path / ".github" / "workflows").mkdir(parents=True)
    (tmp_path / ".github" / "workflows" / "ci.yml").write_text("on: push\njobs: {}\n")
    (tmp_path / "packs" / ".r.yaml.swp.yaml").write_text("not: a policy\n")
    assert [r.id for r in load_policies([tmp_path]).rules] == ["T-1"]


def test_a_symlinked_folder_in_a_policy_folder_is_read_once(tmp_path: Path) -> None:
    """A shared pack linked into the policy folder was skipped without a word (its rules were
    simply not evaluated); a folder reached twice (the link and the folder itself) is read
    once, not refused for duplicate rule ids, and a link back up does not loop."""
    (tmp_path / "packs").mkdir()
    (tmp_path / "packs" / "r.yaml").write_text("rules:\n" + _rule("T-1"))
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "linked.yaml").write_text("rules:\n" + _rule("T-2"))
    (tmp_path / "packs" / "shared").symlink_to(tmp_path / "shared")
    (tmp_path / "shared" / "up").symlink_to(tmp_path)  # a loop
    assert [r.id for r in load_policies([tmp_path / "packs"]).rules] == ["T-1", "T-2"]
    assert sorted(r.id for r in load_policies([tmp_path]).rules) == ["T-1", "T-2"]


def test_a_folder_named_like_a_policy_file_is_walked_into(tmp_path: Path) -> None:
    """A folder is a folder whatever its name: `packs.yaml/` is read for the policies in it
    (it was taken for a file and refused as 'a directory, not a regular file')."""
    (tmp_path / "packs.yaml").mkdir()
    (tmp_path / "packs.yaml" / "r.yaml").write_text("rules:\n" + _rule("T-1"))
    assert [r.id for r in load_policies([tmp_path]).rules] == ["T-1"]


def test_a_hidden_folder_given_by_name_is_read(tmp_path: Path) -> None:
    """Only what lies below a given folder is skipped when hidden: `--policy .policies/` (and
    `auditor policy test .policies/`) reads that folder's policies and test cases."""
    from auditor.policy.cases import find_test_files

    hidden = tmp_path / ".policies"
    (hidden / ".old").mkdir(parents=True)
    (hidden / "r.yaml").write_text("rules:\n" + _rule("T-1"))
    (hidden / "r.tests.yaml").write_text("cases: []\n")
    (hidden / ".old" / "r.yaml").write_text("rules:\n" + _rule("T-OLD"))
    (hidden / ".old" / "r.tests.yaml").write_text("cases: []\n")
    assert [r.id for r in load_policies([hidden]).rules] == ["T-1"]
    assert [r.id for r in load_policies([Path(hidden, ".")]).rules] == ["T-1"]
    assert find_test_files([hidden]) == ([hidden / "r.tests.yaml"], [hidden])


def test_empty_folder_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(PolicyError, match="no policy files"):
        load_policies([tmp_path])


def test_shipped_schema_file_is_the_generated_schema() -> None:
    assert json.loads(SCHEMA_PATH.read_text()) == build_schema()


def test_operator_descriptions_do_not_depend_on_the_python_version() -> None:
    # CPython 3.13 strips a docstring's indentation when compiling and 3.11 keeps it: taken as
    # written, the schema's descriptions (and the shipped packs' recorded digest) differed, so
    # on 3.13 every run checked the shipped files again with jsonschema
    from auditor.operators import REGISTRY

    multiline = {name: op.doc for name, op in REGISTRY.items() if "\n" in op.doc or "  " in op.doc}
    assert multiline == {}


def test_shipped_policy_dir_is_a_folder_path() -> None:
    assert SHIPPED_POLICY_DIR.name == "policies"


def test_hundred_rule_pack_loads(tmp_path: Path) -> None:
    """Every rule of a 100-rule file is loaded (its load time is bench/bench_policy.py's
    figure, not a test's: a timed assertion failed CI on a loaded machine)."""
    body = "".join(_rule(f"R-{i:03d}") for i in range(100))
    (tmp_path / "big.yaml").write_text("rules:\n" + body)
    loaded = load_policies([tmp_path]).rules
    assert [r.id for r in loaded] == [f"R-{i:03d}" for i in range(100)]
