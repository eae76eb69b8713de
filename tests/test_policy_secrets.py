"""A secret written into a policy file: a rule comparing a secret with it can fail, and the
secret reaches no output (its description, remediation and expectation pass through the run's
redactor); `auditor policy lint` warns without printing it."""

from __future__ import annotations

import json
from pathlib import Path

from auditor.policy import SHIPPED_POLICY_DIR, load_policies
from auditor.policy.lint import secret_warnings
from auditor.policy.redacted import _as_built
from tests.test_review import run_cli

KEY = "ghp_Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56Qr78"
POLICY = f"""rules:
  - id: T-LEAKED-KEY
    title: The leaked key is not in use
    severity: critical
    target: settings
    assert: {{each: customModels, assert: {{path: apiKey, not_equals: "{KEY}"}}}}
    remediation: Rotate {KEY} now.
    description: "Key {KEY} leaked on 2026-01-01"
"""


def test_a_rule_on_a_leaked_key_fails_and_the_key_reaches_no_output(tmp_path: Path) -> None:
    (tmp_path / "p.yaml").write_text(POLICY)
    (tmp_path / "live.json").write_text(json.dumps({"customModels": []}))
    proposed = {"customModels": [{"id": "custom:a", "apiKey": KEY}]}
    (tmp_path / "prop.json").write_text(json.dumps(proposed))
    argv = ["review", str(tmp_path / "prop.json"), "--against", str(tmp_path / "live.json")]
    argv += ["--policy", str(tmp_path / "p.yaml"), "--author", "a@b.example"]
    argv += ["--out", str(tmp_path / "o"), "-o", "json,html,sarif,oscal,md,junit"]
    code, out, err = run_cli(argv, env={}, cwd=tmp_path)
    assert code == 1  # the key is in use: the rule fails (it could never fail)
    data = json.loads((tmp_path / "o" / "findings.json").read_text())
    assert [f["status"] for f in data["findings"]] == ["fail"]
    written = [p.read_text() for p in (tmp_path / "o").iterdir()]
    assert len(written) == 6
    leaks = [text for text in [out, err, *written] if KEY in text or KEY[4:] in text]
    assert not leaks
    assert "[secret fp:" in data["rules"][0]["description"]


def test_policy_lint_warns_of_a_literal_that_looks_like_a_secret(tmp_path: Path) -> None:
    (tmp_path / "p.yaml").write_text(POLICY)
    code, out, err = run_cli(["policy", "lint", str(tmp_path / "p.yaml")], env={}, cwd=tmp_path)
    assert code == 0 and "3 warning(s)" in err
    assert "rules[0].assert.assert.not_equals" in out and "looks like a secret" in out
    assert "rules[0].description" in out and "rules[0].remediation" in out
    assert KEY not in out + err


def test_the_shipped_packs_hold_nothing_a_detector_finds_and_are_known_as_built() -> None:
    """What lets a run of the shipped packs skip the value detectors on their text."""
    policy = load_policies([SHIPPED_POLICY_DIR])
    assert secret_warnings(policy) == []
    assert _as_built(policy) == {rule.id for rule in policy.rules}


def test_a_secret_in_a_waivers_reason_owner_or_ticket_reaches_no_output(tmp_path: Path) -> None:
    """The reports show a waiver's reason, owner and ticket: a key pasted there is its marker,
    in a review as in a run (`tests/test_bundle.py` has the run)."""
    (tmp_path / "p.yaml").write_text(POLICY)
    (tmp_path / "w.yaml").write_text(
        "waivers:\n  - rule: T-LEAKED-KEY\n    subject: settings\n"
        f"    reason: Key {KEY} is accepted until rotation.\n    owner: sec+{KEY}@example.com\n"
        f"    expires: 2099-01-01\n    ticket: SEC-1 {KEY}\n"
    )
    (tmp_path / "live.json").write_text(json.dumps({"customModels": []}))
    proposed = {"customModels": [{"id": "custom:a", "apiKey": KEY}]}
    (tmp_path / "prop.json").write_text(json.dumps(proposed))
    argv = ["review", str(tmp_path / "prop.json"), "--against", str(tmp_path / "live.json")]
    argv += ["--policy", str(tmp_path / "p.yaml"), "--waivers", str(tmp_path / "w.yaml")]
    argv += ["--author", "a@b.example", "--out", str(tmp_path / "o")]
    argv += ["-o", "json,html,sarif,oscal,md,junit"]
    code, out, err = run_cli(argv, env={}, cwd=tmp_path)
    assert code == 0, err  # the failure is waived
    data = json.loads((tmp_path / "o" / "findings.json").read_text())
    assert [f["status"] for f in data["findings"]] == ["waived"]
    written = [p.read_text() for p in (tmp_path / "o").iterdir()]
    leaks = [text for text in [out, err, *written] if KEY in text or KEY[4:] in text]
    assert not leaks
    assert "[secret fp:" in json.dumps(data["findings"][0])


def test_a_comment_anywhere_in_a_copied_input_is_redacted_and_content_stays_content() -> None:
    """The bundle's copy of an input file (`redacted_source`): a comment after a block
    scalar's header, a flow collection, `---`, `...` or a key with no value is redacted; a
    `#` line in a block scalar's content is content (a secret there makes it a string)."""
    from auditor.policy.redacted import redacted_source
    from auditor.policy.yamlsafe import load_text

    def redact(text: str) -> str:
        return text.replace(KEY, "[secret]")

    text = (
        f"--- # {KEY}\n"
        f"a: | # old key {KEY}\n  line # one\n  # two\n"
        f"b: !!str >- # {KEY}\n  folded\n"
        f"c: [1, 2] # {KEY}\n"
        f"d: # {KEY}\n"
        f"e: |\n  # {KEY} is content\n"
        f"f: {{x: 1}}  # {KEY}\n"
        f"g: | # {KEY}\n  {KEY}\n"
        f"... # {KEY}\n"
    )
    copy = redacted_source(text, "p.yaml", redact)
    assert KEY not in copy and copy.count("[secret]") == 10
    assert copy.splitlines()[1:4] == ["a: | # old key [secret]", "  line # one", "  # two"]
    assert 'e: "# [secret] is content\\n"' in copy  # content, as a string
    assert 'g: "[secret]\\n" # [secret]\n' in copy  # the header's comment kept, redacted
    data = load_text(text, "p.yaml").data
    assert load_text(copy, "p.yaml").data == {
        **data,
        "e": "# [secret] is content\n",
        "g": "[secret]\n",
    }


def _key(spot: str) -> str:
    """A GitHub-token-shaped secret of its own for each spot of a policy file."""
    import hashlib

    return "ghp_" + hashlib.sha256(spot.encode()).hexdigest()[:36]


SPOTS = (
    "title",
    "description",
    "remediation",
    "tag",
    "control",
    "default_tag",
    "default_control",
    "when_literal",
    "when_path",
    "literal",
    "default",
    "each_path",
    "filter",
    "filter_held",
    "key_path",
    "ref_path",
)
KEYS = {spot: _key(spot) for spot in SPOTS}


def _every_field_policy() -> str:
    """Rules each evaluated so that the field holding a secret is shown: as a title, a tag or
    control, a literal, a `default:` value taken, a path that is absent (its name in the
    message and the evidence) or one whose `[field=value]` matches a redacted value."""
    k = KEYS
    conditions = [
        ("R-DEFAULT", f'{{path: legacyKey, equals: "x", default: "{k["default"]}"}}', ""),
        ("R-EACH", f'{{each: "{k["each_path"]}", assert: {{path: a, equals: 1}}}}', "fail"),
        ("R-FILTER", f'{{path: "items[name={k["filter"]}].value", equals: 1}}', "fail"),
        ("R-HELD", f'{{path: "items[name={k["filter_held"]}].value", equals: 1}}', ""),
        ("R-KEY", f'{{path: "{k["key_path"]}", equals: 1}}', "fail"),
        ("R-REF", f'{{path: a, equals: {{ref: "{k["ref_path"]}"}}}}', "fail"),
        ("R-LITERAL", f'{{path: a, in: ["{k["literal"]}", 5]}}', ""),
    ]
    text = (
        f'defaults:\n  tags: ["{k["default_tag"]}"]\n  controls: ["SOC2:{k["default_control"]}"]\n'
        "rules:\n"
    )
    for rule_id, condition, on_missing in conditions:
        text += (
            f"  - id: {rule_id}\n"
            f'    title: "t {k["title"]}"\n'
            f'    description: "d {k["description"]}"\n'
            f'    remediation: "r {k["remediation"]}"\n'
            "    severity: high\n    target: settings\n"
            f'    controls: ["SOC2:{k["control"]}"]\n'
            f'    tags: ["{k["tag"]}"]\n'
            f'    when: {{path: "{k["when_path"]}", not_equals: "{k["when_literal"]}", '
            'default: "z"}\n'
            f"    assert: {condition}\n"
        )
        if on_missing:
            text += f"    on_missing: {on_missing}\n"
    return text


def _leaks(texts: list[str]) -> set[str]:
    return {spot for spot, key in KEYS.items() for text in texts if key[4:] in text}


def test_a_secret_in_any_field_of_a_rule_reaches_no_output_of_a_review(tmp_path: Path) -> None:
    (tmp_path / "p.yaml").write_text(_every_field_policy())
    (tmp_path / "live.json").write_text("{}")
    held = {"a": 2, "items": [{"name": KEYS["filter_held"], "value": 3}]}
    (tmp_path / "prop.json").write_text(json.dumps(held))
    argv = ["review", str(tmp_path / "prop.json"), "--against", str(tmp_path / "live.json")]
    argv += ["--policy", str(tmp_path / "p.yaml"), "--author", "a@b.example"]
    argv += ["--out", str(tmp_path / "o"), "-o", "json,html,sarif,oscal,md,junit"]
    code, out, err = run_cli(argv, env={}, cwd=tmp_path)
    assert code == 1, err
    written = [p.read_text() for p in (tmp_path / "o").iterdir()]
    assert len(written) == 6
    assert _leaks([out, err, *written]) == set()
    data = json.loads((tmp_path / "o" / "findings.json").read_text())
    found = {f["rule_id"]: f for f in data["findings"]}
    assert {f["status"] for f in found.values()} == {"fail"}, found
    assert set(found) == {
        "R-DEFAULT",
        "R-EACH",
        "R-FILTER",
        "R-HELD",
        "R-KEY",
        "R-REF",
        "R-LITERAL",
    }
    # the redacted `[name=…]` finds the element whose name the redaction hid
    assert "is absent" not in found["R-HELD"]["message"]
    assert "[secret fp:" in found["R-DEFAULT"]["message"]
    rule = data["rules"][0]
    assert all(t.startswith("[secret fp:") for t in rule["tags"]), rule


def test_a_secret_in_any_field_of_a_rule_reaches_no_output_of_a_run(tmp_path: Path) -> None:
    from auditor.emulator import start_emulator
    from tests.conftest import FIXED_NOW, OWNER_TOKEN

    (tmp_path / "p.yaml").write_text(_every_field_policy())
    with start_emulator(tokens={OWNER_TOKEN: "owner"}, now=FIXED_NOW, revisions=3, repos=1) as e:
        env = {
            "AUDITOR_BASE_URL": e.base_url,
            "AUDITOR_APP_URL": e.app_url,
            "AUDITOR_TOKEN": OWNER_TOKEN,
            "AUDITOR_STATE": str(tmp_path / "state.db"),
        }
        argv = ["run", "--policy", str(tmp_path / "p.yaml"), "--no-usage"]
        argv += ["--out", str(tmp_path / "o"), "-o", "json,html,sarif,oscal,md,junit"]
        code, out, err = run_cli(argv, env=env, cwd=tmp_path)
    assert code == 1, err
    written = [p.read_text() for p in (tmp_path / "o").iterdir()]
    assert len(written) == 6
    assert _leaks([out, err, *written]) == set()


def test_policy_lint_warns_of_a_secret_in_any_field_without_printing_it(tmp_path: Path) -> None:
    (tmp_path / "p.yaml").write_text(_every_field_policy())
    code, out, err = run_cli(["policy", "lint", str(tmp_path / "p.yaml")], env={}, cwd=tmp_path)
    assert code == 0, out + err
    assert _leaks([out, err]) == set()
    for spot in (
        "defaults.tags[0]",
        "defaults.controls[0]",
        "rules[0].tags[0]",
        "rules[0].controls[0]",
        "rules[0].when.path",
        "rules[0].when.not_equals",
        "rules[0].assert.default",
        "rules[1].assert.each",
        "rules[2].assert.path",
        "rules[5].assert.equals.ref",
        "rules[6].assert.in[0]",
    ):
        assert f"$.{spot}: " in out, spot


def test_a_rule_id_or_enum_that_looks_like_a_secret_is_refused(tmp_path: Path) -> None:
    """No marker can stand for a name the reports, the state file and waivers go by."""
    (tmp_path / "p.yaml").write_text(
        f'enums:\n  lvl: [low, "{KEYS["literal"]}"]\n'
        "rules:\n"
        f'  - id: AKIAIOSFODNN7EXAMPLE\n    title: "t {KEYS["title"]}"\n    severity: high\n'
        "    target: settings\n    assert: {path: a, at_most: low, enum: lvl}\n"
    )
    (tmp_path / "live.json").write_text("{}")
    (tmp_path / "prop.json").write_text('{"a": "low"}')
    argv = ["review", str(tmp_path / "prop.json"), "--against", str(tmp_path / "live.json")]
    argv += ["--policy", str(tmp_path / "p.yaml"), "--author", "a@b.example"]
    argv += ["--out", str(tmp_path / "o")]
    code, out, err = run_cli(argv, env={}, cwd=tmp_path)
    assert code == 2 and not (tmp_path / "o").exists()
    assert "error: an enum" in err and "p.yaml:4:5: error: the id of this rule looks like" in err
    code, out, err = run_cli(["policy", "lint", str(tmp_path / "p.yaml")], env={}, cwd=tmp_path)
    assert code == 2
    assert "p.yaml:2:14: error: $.enums.lvl[1]: " in out
    assert "p.yaml:4:9: error: $.rules[0].id: " in out
    assert "p.yaml:5:12: warning: $.rules[0].title: its title holds" in out  # no id named
    for text in (out, err):
        assert "AKIAIOSFODNN7EXAMPLE" not in text and _leaks([text]) == set()
