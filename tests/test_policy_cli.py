"""`auditor policy lint|test|schema` as a user runs them: output lines and exit codes."""

from __future__ import annotations

import argparse
import io
import json
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from auditor.cli import Context
from auditor.cli.parsers import register_policy
from auditor.common.jsonutil import content_hash
from auditor.models import Revision, User
from auditor.policy import load_policies
from auditor.store.database import Store

HERE = Path(__file__).parent / "policies"
NOW = datetime(2026, 11, 1, tzinfo=UTC)


def run(tmp_path: Path, *argv: str) -> tuple[int, str, str]:
    parser = argparse.ArgumentParser(prog="auditor")
    register_policy(parser.add_subparsers())
    args = parser.parse_args(["policy", *argv])
    out, err = io.StringIO(), io.StringIO()
    ctx = Context(env={}, stdout=out, stderr=err, clock=lambda: NOW, cwd=str(tmp_path))
    code = args.handler(args, ctx)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def policies(tmp_path: Path) -> Path:
    folder = tmp_path / "policies"
    shutil.copytree(HERE / "valid", folder)
    return folder


def test_lint_clean_folder(tmp_path: Path, policies: Path) -> None:
    code, out, err = run(tmp_path, "lint", str(policies))
    assert (code, out) == (0, "")
    assert "7 rule(s): 0 error(s), 0 warning(s)" in err


def test_lint_of_a_test_file_given_reads_it_as_the_test_file_it_is(tmp_path: Path) -> None:
    """A pre-commit hook passes the files changed: `policy lint baseline.tests.yaml` read it
    as a policy (`unknown key tests`, `missing required key rules`), exit 2, while `policy
    test` of the same file passed. It is linted with the policy beside it, as `test` reads it;
    a case naming a rule that policy lacks is still an error."""
    root = Path(__file__).resolve().parent.parent / "policies"
    for name in ("baseline.yaml", "baseline.tests.yaml"):
        shutil.copy(root / name, tmp_path / name)
    tests = tmp_path / "baseline.tests.yaml"
    code, out, err = run(tmp_path, "lint", str(tests))
    assert (code, out) == (0, ""), out + err
    assert "1 file(s)" in err
    tests.write_text(
        tests.read_text() + "  - name: x\n    settings: {}\n    expect: {NOPE-1: pass}\n"
    )
    code, out, _ = run(tmp_path, "lint", str(tests))
    assert code == 2 and "NOPE-1" in out


def test_lint_reports_every_problem_of_every_file_and_exits_2(tmp_path: Path) -> None:
    paths = [HERE / "invalid" / n for n in ("unknown-key.yaml", "several-problems.yaml")]
    code, out, _ = run(tmp_path, "lint", *map(str, paths))
    lines = out.splitlines()
    assert code == 2 and len(lines) == 6
    # both files' SBX-001 are invalid, and still the duplicate id is reported beside them
    assert lines[0].endswith(
        "several-problems.yaml:2:9: error: $.rules[0].id: duplicate rule id `SBX-001` "
        f"(first at {paths[0]}:2:5)"
    )
    assert lines[1].endswith(
        "several-problems.yaml:6:51: error: $.rules[0].assert.colour: unknown key `colour`"
    )
    assert "unknown-key.yaml:4:5: error:" in lines[-1] and "did you mean `severity`?" in lines[-1]


def _store_with(path: Path, revisions: list[dict[str, Any]]) -> None:
    with Store.open(path, create=True) as store, store.transaction():
        sync = store.begin_sync(NOW, "http://x")
        for n, settings in enumerate(revisions, start=1):
            rev = Revision(n, NOW - timedelta(days=9 - n), User("u", "a@b.c", "A"), settings,
                           content_hash(settings))  # fmt: skip
            store.ingest_revision(rev, sync, NOW)


def test_lint_warns_about_paths_absent_from_the_stored_history(
    tmp_path: Path, policies: Path
) -> None:
    state = tmp_path / "state.db"
    _store_with(state, [
        {"sandbox": {"enabled": True}, "maxAutonomyLevel": "low", "customModels": []},
        {"sandbox": {"enabled": True}, "autonomyLevel": "low"},
    ])  # fmt: skip
    code, out, _ = run(tmp_path, "lint", str(policies), "--state", str(state))
    assert code == 0
    assert out.splitlines() == [
        f"{policies}/sample.yaml:21:13: warning: $.rules[1].assert.path: rule SBX-002: "
        "`sandbox.network.allowedDomains` appears in none of the 2 stored revisions "
        "(typo or renamed key?)",
        # a change rule's paths are checked too: its `when` and its change operator's
        f"{policies}/sample.yaml:42:18: warning: $.rules[4].when.path: rule CHG-AUT-001: "
        "`maxAutonomyLevel` last appeared in revision 1 (1 revisions ago)",
        f"{policies}/sample.yaml:44:19: warning: $.rules[4].assert.not.path: rule CHG-AUT-001: "
        "`maxAutonomyLevel` last appeared in revision 1 (1 revisions ago)",
    ]


def test_lint_warns_about_a_vanished_path(tmp_path: Path, policies: Path) -> None:
    state = tmp_path / "state.db"
    _store_with(state, [
        {"sandbox": {"enabled": True, "network": {"allowedDomains": []}}},
        {"sandbox": {"enabled": True, "network": {"allowedDomains": []}}},
        {"sandbox": {"enabled": True}},
        {"sandbox": {"enabled": True}, "maxAutonomyLevel": "low"},
    ])  # fmt: skip
    _, out, _ = run(tmp_path, "lint", str(policies), "--state", str(state))
    assert "`sandbox.network.allowedDomains` last appeared in revision 2 (2 revisions ago)" in out


@pytest.mark.parametrize(
    ("models", "warning"),
    [
        pytest.param(
            [[{"id": "a", "url": "https://x"}], []],
            "`customModels[*].baseUrl` appears in none of the 2 stored revisions",
            id="never-inside-each",
        ),
        pytest.param(
            [[{"id": "a", "baseUrl": "https://x"}], [{"id": "a", "url": "https://x"}]],
            "`customModels[*].baseUrl` last appeared in revision 1 (1 revisions ago)",
            id="vanished-inside-each",
        ),
        pytest.param([[], [{"id": "a", "baseUrl": "https://x"}]], None, id="present"),
        pytest.param([[{"id": "a", "baseUrl": "https://x"}], []], None, id="array-emptied"),
    ],
)
def test_lint_history_warnings_look_inside_quantifiers(
    tmp_path: Path, policies: Path, models: list[Any], warning: str | None
) -> None:
    state = tmp_path / "state.db"
    base = {
        "sandbox": {"enabled": True, "network": {"allowedDomains": []}},
        "autonomyLevel": "x",
        "maxAutonomyLevel": "low",  # read by the change rule CHG-AUT-001
    }
    _store_with(state, [{**base, "customModels": m} for m in models])
    _, out, _ = run(tmp_path, "lint", str(policies), "--state", str(state))
    expected = [] if warning is None else [
        f"{policies}/sample.yaml:37:22: warning: $.rules[3].assert.assert.path: rule MOD-001: "
        + warning + ("" if "last" in warning else " (typo or renamed key?)")
    ]  # fmt: skip
    assert out.splitlines() == expected


def test_policy_test_passes(tmp_path: Path, policies: Path) -> None:
    code, out, _ = run(tmp_path, "test", str(policies))
    lines = out.splitlines()
    assert code == 0
    assert lines[0] == f"PASS {policies}/sample.tests.yaml: sandbox off is caught"
    assert lines[-1] == "6 passed, 0 failed"


def test_policy_test_failure_names_the_mismatch(tmp_path: Path, policies: Path) -> None:
    tests = policies / "sample.tests.yaml"
    tests.write_text(
        tests.read_text().replace(
            "{SBX-001: fail, SBX-002: not_applicable", "{SBX-001: pass, SBX-002: not_applicable"
        )
    )
    code, out, _ = run(tmp_path, "test", str(policies / "sample.yaml"))
    assert code == 1
    assert (
        f"FAIL {tests}: sandbox off is caught: SBX-001: expected pass, got fail "
        "(sandbox.enabled is false; expected true)"
    ) in out.splitlines()
    assert out.splitlines()[-1] == "5 passed, 1 failed"


@pytest.mark.parametrize(
    ("case", "message"),
    [
        pytest.param(
            "  - expect: {SBX-01: fail}\n",
            "unknown rule id `SBX-01` (did you mean `SBX-001`?)",
            id="rule-id",
        ),
        pytest.param("  - expect: {SBX-001: failed}\n", "'failed' is not a status", id="status"),
        pytest.param(
            "  - now: yesterday\n    expect: {SBX-001: fail}\n",
            "malformed date 'yesterday'",
            id="date",
        ),
        pytest.param(
            "  - setings: {}\n    expect: {SBX-001: fail}\n",
            "unknown key `setings` (did you mean `settings`?)",
            id="key",
        ),
        pytest.param(
            "  - expect: {}\n", "`expect:` must name at least one rule", id="expect-empty"
        ),
        pytest.param(
            "  - reports: 5\n    expect: {SBX-001: fail}\n",
            "`reports:` must be a list",
            id="reports-not-a-list",
        ),
        pytest.param(
            "  - now: 1e20\n    expect: {SBX-001: fail}\n", "malformed date 1e+20", id="now-huge"
        ),
        pytest.param(
            "  - now: .nan\n    expect: {SBX-001: fail}\n", "malformed date nan", id="now-nan"
        ),
        pytest.param(
            "  - reports: [{reportId: r, repoUrl: u, createdAt: 1e20}]\n"
            "    expect: {SBX-001: fail}\n",
            "a report needs reportId, repoUrl and createdAt",
            id="created-at-huge",
        ),
        pytest.param(
            "  - settings: {5: x}\n    expect: {SBX-001: fail}\n",
            ":2:16: error: key `5` must be text (quote it)",  # at the key (review R57 #1)
            id="settings-int-key",
        ),
        pytest.param(
            "  - after: {a: 99999999999999999999999}\n    expect: {SBX-001: fail}\n",
            "$.tests[0].after: not JSON data: an integer beyond 64 bits",
            id="settings-huge-int",
        ),
    ],
)
def test_invalid_test_files_exit_2_with_positions(
    tmp_path: Path, policies: Path, case: str, message: str
) -> None:
    (policies / "sample.tests.yaml").write_text("tests:\n" + case)
    code, out, _ = run(tmp_path, "test", str(policies))
    assert code == 2
    assert out.startswith(f"{policies}/sample.tests.yaml:2:")
    assert message in out


def test_two_test_cases_of_one_name_are_refused_at_the_second(
    tmp_path: Path, policies: Path
) -> None:
    """Results are named by case: two of one name could not be told apart."""
    (policies / "sample.tests.yaml").write_text(
        "tests:\n"
        "  - name: open network\n    settings: {}\n    expect: {SBX-001: fail}\n"
        "  - name: open network\n    settings: {}\n    expect: {SBX-001: fail}\n"
    )
    code, out, _ = run(tmp_path, "test", str(policies))
    assert code == 2
    assert out.startswith(f"{policies}/sample.tests.yaml:5:")
    assert "test case name 'open network' is used by case 1 already" in out


def test_a_case_holding_nan_and_null_is_judged_entry_by_entry(tmp_path: Path) -> None:
    """YAML reads `.nan`: `[.nan, null]` is not every entry a number (the null is not one),
    though orjson writes both as null."""
    folder = tmp_path / "p"
    folder.mkdir()
    (folder / "nums.yaml").write_text(
        "rules:\n"
        "  - {id: P-NUM, title: t, severity: low, target: settings,\n"
        "     assert: {each: xs, assert: {path: '@', type: number}}}\n"
    )
    (folder / "nums.tests.yaml").write_text(
        "tests:\n  - settings: {xs: [.nan, null]}\n    expect: {P-NUM: fail}\n"
    )
    code, out, _ = run(tmp_path, "test", str(folder))
    assert code == 0, out


def test_dotted_policy_names_find_their_test_file(tmp_path: Path, policies: Path) -> None:
    (policies / "sample.yaml").rename(policies / "base.v2.yaml")
    (policies / "sample.tests.yaml").rename(policies / "base.v2.tests.yaml")
    code, out, _ = run(tmp_path, "test", str(policies / "base.v2.yaml"))
    assert (code, out.splitlines()[-1]) == (0, "6 passed, 0 failed")
    code, out, _ = run(tmp_path, "test", str(policies / "base.v2.tests.yaml"))
    assert (code, out.splitlines()[-1]) == (0, "6 passed, 0 failed")


@pytest.mark.parametrize("tests", [None, "tests: []\n"], ids=["no-test-file", "empty-list"])
def test_no_test_cases_at_all_exits_2(tmp_path: Path, policies: Path, tests: str | None) -> None:
    target = policies / "sample.tests.yaml"
    if tests is None:
        target.unlink()
    else:
        target.write_text(tests)
    code, out, _ = run(tmp_path, "test", str(policies / "sample.yaml"))
    assert code == 2
    if tests is None:
        wanted = "error: no test cases found (<name>.tests.yaml beside <name>.yaml)"
        assert out == f"{policies}/sample.yaml: {wanted}\n"
    else:  # the file is there: it is the one named
        assert out == f"{target}:1:8: error: $.tests: this file has no test cases\n"


def test_a_case_giving_no_input_for_a_rules_target_is_an_input_error(
    tmp_path: Path, policies: Path
) -> None:
    """Not `got not evaluated` and exit 1: the case cannot judge the rule at all."""
    rules = load_policies([policies]).rules
    settings_rule = next(r.id for r in rules if r.target == "settings")
    change_rule = next(r.id for r in rules if r.target == "change")
    (policies / "sample.tests.yaml").write_text(
        f"tests:\n  - name: settings only\n    settings: {{a: 1}}\n"
        f"    expect: {{{settings_rule}: pass, {change_rule}: pass}}\n"
        f"  - name: change only\n    before: {{a: 1}}\n    after: {{a: 2}}\n"
        f"    expect: {{{settings_rule}: pass}}\n"
    )
    code, out, _ = run(tmp_path, "test", str(policies / "sample.yaml"))
    assert code == 2, out
    lines = out.splitlines()
    assert len(lines) == 2
    assert "sample.tests.yaml:4:" in lines[0]
    assert f"$.tests[0].expect.{change_rule}: rule `{change_rule}` has `target: change`" in lines[0]
    assert "gives no `before:` or `after:` to judge it by" in lines[0]
    assert "sample.tests.yaml:8:" in lines[1] and "gives no `settings:`" in lines[1]


def test_lint_checks_the_test_files_beside_the_policies(tmp_path: Path, policies: Path) -> None:
    (policies / "sample.tests.yaml").write_text(
        "tests:\n  - name: x\n    settings: {a: 1}\n    expect: {T-001: bogus}\n"
    )
    code, out, err = run(tmp_path, "lint", str(policies))
    assert code == 2
    assert "sample.tests.yaml:4:14: error: $.tests[0].expect.T-001: unknown rule id `T-001`" in out
    assert "sample.tests.yaml:4:21: error: $.tests[0].expect.T-001: 'bogus' is not a status" in out
    assert "auditor: exit 2: 2 error(s)" in err


def test_schema_prints_json(tmp_path: Path) -> None:
    code, out, _ = run(tmp_path, "schema")
    assert code == 0 and json.loads(out)["title"] == "auditor policy file"


_TOKEN = "ghp_Zq8wLm3NvB7xKp2RtY6uHc9JdF4sGa1EeW0i"


def test_a_secret_in_a_policy_file_is_not_quoted_by_its_problems(tmp_path: Path) -> None:
    """A problem quotes the value or key it is about; a token pasted into a policy file (or a
    test case's settings) was printed with it into the CI log."""
    bad = tmp_path / "p.yaml"
    bad.write_text(
        "version: 1\nrules:\n  - id: X-1\n    title: t\n    target: settings\n"
        f"    severity: {_TOKEN}\n    {_TOKEN}: 1\n    assert: {{path: a, equals: 1}}\n",
        encoding="utf-8",
    )
    for command in ("lint", "test"):
        code, out, err = run(tmp_path, command, str(bad))
        assert code == 2 and _TOKEN not in out + err
        assert "p.yaml:6:15: error: $.rules[0].severity: " in out  # still located
        errors = "".join(line for line in out.splitlines(True) if ": error: " in line)
        assert errors.count("<not shown: looks like a secret>") == 3  # value, key in path, text
    # `lint` warns of the secret beside the errors, not only once they are fixed (T91 #8)
    assert out.count("literal holds what looks like a secret") == 0  # (`test` does not lint)
    _, out, _ = run(tmp_path, "lint", str(bad))
    assert out.count("literal holds what looks like a secret") == 2


def test_a_failing_case_does_not_print_the_secret_its_settings_hold(tmp_path: Path) -> None:
    code, out = _failing_key_case(tmp_path, "m", _TOKEN)
    assert code == 1 and _TOKEN not in out
    assert "K-1: expected pass, got fail (customModels[?id=='m'].apiKey is \"[secret fp:" in out


def _failing_key_case(tmp_path: Path, model: str, key: str) -> tuple[int, str]:
    """`policy test` of a rule wanting every model's apiKey to be `${…}`, and a case that
    expects it to pass with one model `model` whose apiKey is `key`: (exit code, stdout)."""
    (tmp_path / "k.yaml").write_text(
        "version: 1\nrules:\n  - id: K-1\n    title: t\n    severity: high\n"
        "    target: settings\n    remediation: r\n    assert:\n"
        "      each: customModels\n      assert: {path: apiKey, starts_with: '${'}\n",
        encoding="utf-8",
    )
    (tmp_path / "k.tests.yaml").write_text(
        "tests:\n  - name: wrong on purpose\n"
        f"    settings: {{customModels: [{{id: {model}, apiKey: {key}}}]}}\n"
        "    expect: {K-1: pass}\n",
        encoding="utf-8",
    )
    code, out, _ = run(tmp_path, "test", str(tmp_path / "k.yaml"))
    return code, out


def test_a_secret_in_a_waiver_or_settings_file_is_not_quoted_by_review(tmp_path: Path) -> None:
    from auditor.cli import main

    (tmp_path / "w.yaml").write_text(
        f"waivers:\n  - {{rule: X, subject: settings, reason: r, owner: o, expires: {_TOKEN}}}\n",
        encoding="utf-8",
    )
    (tmp_path / "s.yaml").write_text(f"env:\n  {_TOKEN}: 1\n  {_TOKEN}: 2\n", encoding="utf-8")
    (tmp_path / ".auditor").mkdir()
    _store_with(tmp_path / ".auditor" / "state.db", [{"env": {}}])
    for extra in (["--waivers", "w.yaml"], []):
        out, err = io.StringIO(), io.StringIO()
        ctx = Context(env={}, stdout=out, stderr=err, clock=lambda: NOW, cwd=str(tmp_path))
        code = main(["review", str(tmp_path / "s.yaml"), "--offline", *extra], ctx)
        assert code == 2 and _TOKEN not in out.getvalue() + err.getvalue()
        assert "<not shown: looks like a secret>" in err.getvalue()


def test_a_usage_day_at_either_end_of_the_calendar_is_judged_not_a_crash(tmp_path: Path) -> None:
    """9999-12-31 has no next day and year 1 no 14 days before: `policy test` ended with
    `unexpected OverflowError: date value out of range`."""
    from auditor.policy import SHIPPED_POLICY_DIR

    shutil.copy(SHIPPED_POLICY_DIR / "usage.yaml", tmp_path / "u.yaml")
    # (the case's one revision is dated before 9999 and after year 1)
    days = [("9999-12-30", "9999-12-31", "not_applicable"), ("0001-01-01", "0001-01-02", "unknown")]
    (tmp_path / "u.tests.yaml").write_text(
        "tests:\n"
        + "".join(
            f"  - name: {a}\n    settings: {{}}\n    usage:\n"
            f"      - {{date: '{a}', tokens: {{billable_tokens: 5}}}}\n"
            f"      - {{date: '{b}', tokens: {{billable_tokens: 5}}}}\n"
            f"    expect: {{USE-MOD-001: {status}}}\n"
            for a, b, status in days
        ),
        encoding="utf-8",
    )
    code, out, err = run(tmp_path, "test", str(tmp_path / "u.yaml"))  # raised OverflowError
    assert (code, out.splitlines()[-1]) == (0, "2 passed, 0 failed"), out + err


@pytest.mark.parametrize(
    ("folder", "key"),
    [
        # read whole, `$.rules[0].token: unknown key …` looked like a secret's
        # `token: unknown` and `unknown` was left out: a path and its message are judged apart
        ("", "token"),
        # a location with a space did not match, so the JSON path was judged with the message
        # and `password: unknown` read as a name and its value (`…password: <not shown…> key`)
        ("Mobile Documents/Jane Doe", "password"),
    ],
)
def test_a_problem_at_a_path_named_for_a_secret_still_says_what_is_wrong(
    tmp_path: Path, folder: str, key: str
) -> None:
    bad = tmp_path / folder / "p.yaml"
    bad.parent.mkdir(parents=True, exist_ok=True)
    bad.write_text(f"version: 1\nrules:\n  - id: X-1\n    {key}: 1\n")
    code, out, _ = run(tmp_path, "lint", str(bad))
    assert code == 2 and "not shown" not in out, out
    assert f"{bad}:4:5: error: $.rules[0].{key}: unknown key `{key}`" in out.splitlines()


def test_a_failing_case_hides_what_a_run_would_store_as_a_secret(tmp_path: Path) -> None:
    """A value a run stores as a marker (under `apiKey`, in `env`, a header in a hook
    command) was printed by a failing case whenever the detectors did not know its form
    (`Tr0ub4dor&3`, `correct horse battery staple`): the case's data is now redacted as a
    run redacts, and the message quotes the markers."""
    (tmp_path / "k.yaml").write_text(
        "version: 1\nrules:\n"
        "  - {id: K-1, title: t, severity: high, target: settings,\n"
        "     assert: {path: 'customModels[*].apiKey', starts_with: '${'}}\n"
        "  - {id: K-2, title: t, severity: high, target: settings,\n"
        "     assert: {path: 'hooks[0].command', matches: '^nothing$'}}\n"
        "  - {id: K-3, title: t, severity: high, target: settings,\n"
        "     assert: {path: env.PASS, equals: x}}\n",
        encoding="utf-8",
    )
    (tmp_path / "k.tests.yaml").write_text(
        "tests:\n  - name: wrong on purpose\n    settings:\n"
        "      customModels: [{id: m, apiKey: 'Tr0ub4dor&3'}]\n"
        "      hooks: [{command: \"curl -H 'X-Api-Key: hunter2horse99' https://x.example\"}]\n"
        "      env: {PASS: correct horse battery staple and the quick brown fox jumps over}\n"
        "    expect: {K-1: pass, K-2: pass, K-3: pass}\n",
        encoding="utf-8",
    )
    code, out, _ = run(tmp_path, "test", str(tmp_path / "k.yaml"))
    assert code == 1, out
    # (the long passphrase is cut short by the message, `"correct horse … jumps o…`)
    for secret in ("Tr0ub4dor&3", "hunter2horse99", "correct horse battery staple"):
        assert secret not in out
    assert out.count("[secret fp:") == 3 and "https://x.example" in out


def test_a_problem_shows_the_workspace_path_it_is_in(tmp_path: Path) -> None:
    """The location was judged by its looks: a CI workspace path with digits and mixed case
    (GitLab's `/builds/Gx4nPz7Q/0/…`, a Jenkins job folder) read as one secret, and every
    problem said `<not shown: looks like a secret>.yaml:2:5`. A `name: value` pair quoted
    inside a value is still hidden (split at `: `, it was shown)."""
    folder = tmp_path / "builds" / "Gx4nPz7Q" / "0" / "Acme_Agent_Platform_PR-1234"
    folder.mkdir(parents=True)
    bad = folder / "bad.yaml"
    bad.write_text(
        "version: 1\nrules:\n  - id: X-1\n    title: t\n"
        "    severity: 'X-Api-Key: hunter2horse99'\n    target: settings\n"
        "    assert: {path: a, equals: 1}\n",
        encoding="utf-8",
    )
    code, out, _ = run(tmp_path, "lint", str(bad))
    assert code == 2
    assert f"{bad}:5:15: error: $.rules[0].severity: " in out, out
    assert "hunter2horse99" not in out


def test_a_token_typed_as_the_policy_path_is_not_echoed(tmp_path: Path) -> None:
    """The location was searched only for the command's own tokens: a GitHub token given as
    the file to lint (a variable mixed up) was printed as the file not found."""
    code, out, _ = run(tmp_path, "lint", _TOKEN)
    assert code == 2 and _TOKEN not in out
    assert "/<not shown: looks like a secret>:1:1: error: " in out, out


def test_a_secret_cut_by_the_mismatchs_length_is_not_printed_in_part(tmp_path: Path) -> None:
    """A mismatch is cut at 200 characters: a long model id put the apiKey's value across the
    cut, and its first 20 characters were printed (the cut ended in `)`, unmarked)."""
    code, out = _failing_key_case(tmp_path, "m" * 147, "Tr0ub4dor-first-key-of-many")
    assert code == 1
    assert "Tr0ub4dor" not in out and "[secret fp:" in out, out


def test_every_cut_of_a_secret_in_one_message_is_hidden() -> None:
    """A value quoted twice, cut at two lengths (in an array and alone), kept the second."""
    from auditor.evaluate.testing import _cut_ones
    from auditor.redact import Redactor

    redactor = Redactor(b"k" * 32)
    secret = "correct horse battery staple and the quick brown fox"
    line = 'a is ["correct horse battery…"]; b is "correct horse…"'
    out = _cut_ones(line, [secret], redactor)
    assert "horse" not in out and out.count(redactor.marker(secret)) == 2, out


def test_a_cut_start_is_hidden_whole_with_a_secret_inside_it_or_an_ellipsis_of_its_own() -> None:
    """A shorter secret inside a cut start was made a marker first, so the rest of the start
    (`prefix-`, `-suffix-lo`) no longer matched and was printed; a secret holding `…` itself,
    cut right after it, came out as a marker with a second one's text glued on."""
    from auditor.evaluate.testing import _unshown

    long_one, inner = "prefix-TOKEN1234-suffix-long-enough-to-be-cut-off", "TOKEN1234"
    line = f'K-1: expected pass, got fail (apiKey is "{long_one[:26]}…)'
    (out,) = _unshown([line], ({"env": {"A": long_one, "B": inner}},))
    assert "prefix" not in out and "suffix" not in out and out.count("[secret fp:") == 1, out
    own = "abcdefgh…ijklmnopqrstuvwxyz-0123"
    (out,) = _unshown(['K-1: … (apiKey is "abcdefgh……)'], ({"env": {"A": own}},))
    assert out.count("[secret fp:") == 1 and "fp:" not in out.split("]", 1)[1], out


def test_lint_with_a_state_file_named_that_is_not_there_exits_2(
    tmp_path: Path, policies: Path
) -> None:
    """As every other command: the history check is not left out without a word."""
    from tests.test_review import run_cli

    argv = ["policy", "lint", str(policies), "--state", "/nonexistent/state.db"]
    code, out, err = run_cli(argv, env={}, cwd=tmp_path)
    assert code == 2 and out == ""
    assert "no state file at /nonexistent/state.db" in err
    code, _, err = run(tmp_path, "lint", str(policies))  # none named, none in the default place
    assert code == 0, err


def test_a_history_warning_does_not_quote_a_secret_in_a_rules_path(tmp_path: Path) -> None:
    """`… appears in none of the stored revisions` quotes the path: a token typed as a key
    there is not shown (the secret warning at the same spot says why)."""
    key = "ghp_Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56Qr78"
    (tmp_path / "p.yaml").write_text(
        "rules:\n  - id: T-1\n    title: t\n    severity: high\n    target: settings\n"
        f"    assert: {{path: 'legacy.{key}', equals: 1}}\n"
    )
    state = tmp_path / "state.db"
    _store_with(state, [{"legacy": {"a": 1}}])
    code, out, _ = run(tmp_path, "lint", str(tmp_path / "p.yaml"), "--state", str(state))
    assert code == 0 and "appears in none of the 1 stored revisions" in out
    assert key not in out and key[4:] not in out


_RESERVED = (
    "rules:\n  - {id: AUDITOR-INTEGRITY-001, title: t, severity: low, target: settings, "
    "assert: {path: x, equals: 1}}\n"
)
_RESERVED_ERROR = (
    "p.yaml:2:10: error: $.rules[0].id: rule id `AUDITOR-INTEGRITY-001` is reserved: ids "
    "beginning `AUDITOR-` are auditor's built-in rules (choose another id)"
)


@pytest.mark.parametrize(
    "argv",
    [
        pytest.param(["policy", "lint", "{p}"], id="lint"),
        pytest.param(["policy", "test", "{p}"], id="test"),
        pytest.param(["run", "--policy", "{p}", "--offline", "--state", "{s}"], id="run"),
        pytest.param(
            ["review", "{d}/proposed.json", "--against", "{d}/live.json", "--policy", "{p}"],
            id="review",
        ),
    ],
)
def test_a_rule_may_not_take_a_built_in_rules_id(tmp_path: Path, argv: list[str]) -> None:
    """A user rule `AUDITOR-INTEGRITY-001` was mixed up with the built-in one (one rule entry
    in findings.json and SARIF, one waiver for both): refused where it is written, exit 2."""
    from tests.test_review import run_cli

    (tmp_path / "p.yaml").write_text(_RESERVED)
    (tmp_path / "p.tests.yaml").write_text(
        "tests:\n  - {name: c, settings: {x: 1}, expect: {AUDITOR-INTEGRITY-001: pass}}\n"
    )
    for name in ("live.json", "proposed.json"):
        (tmp_path / name).write_text('{"x": 1}')
    _store_with(tmp_path / "state.db", [{"x": 1}])
    names = {"p": str(tmp_path / "p.yaml"), "d": str(tmp_path), "s": str(tmp_path / "state.db")}
    code, out, err = run_cli([a.format(**names) for a in argv], env={}, cwd=tmp_path)
    assert code == 2, (out, err)
    assert f"{tmp_path}/{_RESERVED_ERROR}" in out.splitlines() + err.splitlines(), (out, err)
    assert "Traceback" not in out + err


def test_the_built_in_rule_id_is_a_reserved_one() -> None:
    from auditor.findings.integrity import RULE_ID
    from auditor.policy.model import RESERVED_ID_PREFIX

    assert RULE_ID.startswith(RESERVED_ID_PREFIX)


def test_lint_reads_no_level_out_of_a_quoted_path(tmp_path: Path) -> None:
    """A rule path holding `: error: ` stays a warning (the level was read from the text)."""
    (tmp_path / "p.yaml").write_text(
        "rules:\n  - id: T-1\n    title: t\n    severity: high\n    target: settings\n"
        "    assert: {path: \"legacy['a: error: b']\", equals: 1}\n"
    )
    state = tmp_path / "state.db"
    _store_with(state, [{"legacy": {"a": 1}}])
    code, out, err = run(tmp_path, "lint", str(tmp_path / "p.yaml"), "--state", str(state))
    assert ": warning: $.rules[0].assert.path: rule T-1: `legacy.a: error: b` appears" in out
    assert code == 0 and "0 error(s), 1 warning(s)" in err, (out, err)


@pytest.mark.parametrize("how", ["config", "pyproject", "env", "flag"])
def test_lint_with_the_default_state_file_named_and_not_there_exits_2(
    tmp_path: Path, policies: Path, how: str
) -> None:
    """`state = ".auditor/state.db"` written out is named as any other value: its absence is
    an error, not the history check silently left out (the value was compared with the
    default)."""
    from tests.test_review import run_cli

    argv, env = ["policy", "lint", str(policies)], {}
    if how == "config":
        (tmp_path / "auditor.toml").write_text('state = ".auditor/state.db"\n')
        argv += ["--config", "auditor.toml"]
    elif how == "pyproject":
        (tmp_path / "pyproject.toml").write_text('[tool.auditor]\nstate = ".auditor/state.db"\n')
    elif how == "env":
        env = {"AUDITOR_STATE": ".auditor/state.db"}
    else:
        argv += ["--state", ".auditor/state.db"]
    code, out, err = run_cli(argv, env=env, cwd=tmp_path)
    assert code == 2 and out == "", (out, err)
    assert "no state file at" in err and ".auditor/state.db" in err
