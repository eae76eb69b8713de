"""`policy lint` warns of a test a run cannot decide on a value the redactor hides.

A copy of 0.2.0's baseline (`tests/data/baseline-0.2.0.yaml`, as the example nightly keeps
it in the repository holding `policies/`) tests `apiKey` (BASE-MOD-003) and hook commands
(BASE-HOK-003) with `matches` patterns that do not speak of markers: 0.3.0 judges them
`error` on a `[secret fp:… len:…]` marker, so every nightly and review exits 2. Lint said
nothing; it now warns at the test's `file:line:col`, naming the fix the shipped packs use.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.test_policy_cli import run

OLD_BASELINE = Path(__file__).parent / "data" / "baseline-0.2.0.yaml"
WARNING = re.compile(r"^(?P<file>.+):(?P<line>\d+):(?P<col>\d+): warning: (?P<text>.*)$")


def _hidden_warnings(out: str) -> list[re.Match[str]]:
    found = [WARNING.match(line) for line in out.splitlines() if "cannot be decided" in line]
    assert all(found), out
    return [m for m in found if m is not None]


def test_lint_warns_of_the_0_2_0_baseline_tests_a_run_cannot_decide(tmp_path: Path) -> None:
    copy = tmp_path / "policies" / "baseline.yaml"
    copy.parent.mkdir()
    shutil.copy(OLD_BASELINE, copy)
    code, out, err = run(tmp_path, "lint", str(copy.parent))
    assert code == 0, out + err  # warnings: the file is valid
    warnings = _hidden_warnings(out)
    lines = copy.read_text().splitlines()
    by_rule: dict[str, list[int]] = {}
    for m in warnings:
        assert m["file"] == str(copy)
        rule = re.search(r"rule (\S+):", m["text"])
        assert rule is not None
        by_rule.setdefault(rule[1], []).append(int(m["line"]))
        # the line:col is that of the pattern, which the warning says how to fix
        assert lines[int(m["line"]) - 1][int(m["col"]) - 1 :].startswith("'(sk-") or lines[
            int(m["line"]) - 1
        ][int(m["col"]) - 1 :].startswith("'^\\$")
        assert "`matches`" in m["text"] and "exit 2" in m["text"]
        assert "\\[secret " in m["text"]
    assert sorted(by_rule) == ["BASE-HOK-003", "BASE-MOD-003"]
    assert len(by_rule["BASE-HOK-003"]) == 9  # one per hook event the rule reads
    assert by_rule["BASE-MOD-003"] == [420]
    mod = next(m["text"] for m in warnings if "BASE-MOD-003" in m["text"])
    assert "not_matches: '^\\[secret '" in mod  # a whole marker: the other fix too


def test_lint_of_the_shipped_packs_gives_no_such_warning(tmp_path: Path) -> None:
    code, out, err = run(tmp_path, "lint")
    assert code == 0, out + err
    assert _hidden_warnings(out) == []


def test_the_warned_test_is_what_a_run_judges_error(tmp_path: Path) -> None:
    """The warning is the engine's own verdict: the 0.2.0 rule is `error` on a stored marker,
    the shipped one `fail`."""
    case = (
        "tests:\n"
        "  - name: a literal key, stored as its marker\n"
        "    settings:\n"
        "      customModels:\n"
        '        - {id: "custom:a", baseUrl: "https://llm.example.com/v1",'
        ' apiKey: "[secret fp:1a2b3c4d len:40]"}\n'
        "    expect: {BASE-MOD-003: fail}\n"
    )
    shipped = Path(__file__).resolve().parent.parent / "policies" / "baseline.yaml"
    for name, source, verdict in (("old", OLD_BASELINE, "FAIL"), ("new", shipped, "PASS")):
        folder = tmp_path / name
        folder.mkdir()
        shutil.copy(source, folder / "baseline.yaml")
        (folder / "baseline.tests.yaml").write_text(case)
        code, out, err = run(tmp_path, "test", str(folder))
        assert (code, out[:4]) == (1 if verdict == "FAIL" else 0, verdict), out + err
        if verdict == "FAIL":
            assert "error" in out


RULE = """rules:
  - id: T-001
    title: A test of one value
    severity: low
    target: settings
    assert: {LEAF}
    remediation: Fix it.
"""


@pytest.mark.parametrize(
    ("leaf", "warned"),
    [
        # a value hidden whole: by its key's name, a secret map's value, under a quantifier
        ("{path: apiKey, starts_with: sk-}", "starts_with"),
        ("{path: env.ACME_TOKEN, matches: '^ghp_'}", "matches"),
        ("{path: env.LOG_LEVEL, ends_with: debug}", "ends_with"),
        ("{each: customModels, assert: {path: apiKey, not_matches: '^sk-'}}", "not_matches"),
        # a command line, where passwords and tokens are hidden inside the text
        ("{each: mcpServers.x.args, assert: {path: '@', matches: 'token'}}", "matches"),
        ("{path: statusLine.command, matches: '(sk-|ghp_)'}", "matches"),
        # decided on a marker: equality by fingerprint, a length, a pattern naming markers,
        # a test that fails on the marker first
        ("{path: apiKey, equals: sk-1}", None),
        ("{path: apiKey, not_in: [a, b]}", None),
        ("{path: apiKey, length: {gte: 8}}", None),
        ("{path: apiKey, matches: '(\\[secret |^sk-)'}", None),
        ("{path: apiKey, not_matches: '^\\[secret ', matches: '^\\$\\{'}", None),
        ("{path: apiKey, starts_with: ['[secret ', '${']}", None),
        # a place the redactor hides nothing by meaning
        ("{path: model, matches: '^claude-'}", None),
        ("{path: env, exists: true}", None),
    ],
)
def test_lint_warns_where_the_engine_cannot_decide(
    tmp_path: Path, leaf: str, warned: str | None
) -> None:
    policy = tmp_path / "p.yaml"
    policy.write_text(RULE.replace("{LEAF}", leaf))
    code, out, err = run(tmp_path, "lint", str(policy))
    assert code == 0, out + err
    warnings = _hidden_warnings(out)
    if warned is None:
        assert warnings == [], out
    else:
        assert len(warnings) == 1, out
        assert f"`{warned}`" in warnings[0]["text"]
        assert warnings[0]["line"] == "6"


def _mcp(*args: str) -> dict[str, Any]:
    """Settings with one MCP server started by `npx` with `args`."""
    return {"mcpServers": [{"name": "gh", "command": "npx", "args": list(args)}]}


# The review's reproductions (R3 #1, #6): a rule, the live settings and a proposed change that
# puts a secret where the rule reads. `policy lint` warns exactly when `review` of that change
# cannot decide the rule (exit 2, an evaluation error).
_EACH = "    assert:\n      each: {ARRAY}\n      assert: {INNER}\n"
HIDDEN_CASES = {
    "args-element": (
        "mcpServers",
        "{none: args, assert: {path: '@', matches: '^--(no-sandbox|dangerously)'}}",
        _mcp("-y", "server"),
        _mcp("-y", "server", "--api-key", "sk-abcdefghijklmnop0123456789"),
        True,
    ),
    "extraArgs-element": (
        "customModels",
        "{none: extraArgs, assert: {path: '@', starts_with: '--insecure'}}",
        {"customModels": [{"id": "custom:a", "extraArgs": ["gw-proxy"]}]},
        {
            "customModels": [
                {"id": "custom:a", "extraArgs": ["gw-proxy", "--api-key", "s3cretvalue99x"]}
            ]
        },
        True,
    ),
    "ref-argument": (
        "customModels",
        "{path: apiKey, starts_with_any: {ref: modelPolicy.keyPrefixes}}",
        {
            "modelPolicy": {"keyPrefixes": ["${", "sk-"]},
            "customModels": [{"id": "custom:a", "apiKey": "${KEY}"}],
        },
        {
            "modelPolicy": {"keyPrefixes": ["${", "sk-"]},
            "customModels": [{"id": "custom:a", "apiKey": "sk-abcdefghijklmnop0123456789"}],
        },
        True,
    ),
    "excludes-on-args": (  # membership in an array is decided by fingerprint
        "mcpServers",
        "{path: args, excludes: '--insecure', default: []}",
        _mcp("-y", "server"),
        _mcp("-y", "server", "--api-key", "sk-abcdefghijklmnop0123456789"),
        False,
    ),
    "guarded-element": (  # a test that fails on a marker anywhere first: decided
        "mcpServers",
        "{none: args, assert: {path: '@', not_matches: '\\[secret ', matches: '^--no-sandbox'}}",
        _mcp("-y", "server"),
        _mcp("-y", "server", "--api-key", "sk-abcdefghijklmnop0123456789"),
        False,
    ),
    "token-last-in-a-command": (  # `tool --token X`: an end-anchored pattern reads X
        "hooks.PostToolUse",
        "{each: hooks, assert: {path: command, not_matches: '\\|\\s*(ba)?sh$'}}",
        {"hooks": {"PostToolUse": [{"matcher": "*", "hooks": [{"command": "notify --ch ops"}]}]}},
        {
            "hooks": {
                "PostToolUse": [
                    {
                        "matcher": "*",
                        "hooks": [
                            {"command": "notify --ch ops --token sk-abcdefghijklmnop0123456789"}
                        ],
                    }
                ]
            }
        },
        True,
    ),
    "command-that-is-a-token": (  # hidden whole: a start-anchored pattern reads the marker
        "mcpServers",
        "{path: command, matches: '^(npx|uvx) '}",
        {"mcpServers": [{"name": "gh", "command": "npx -y server"}]},
        {"mcpServers": [{"name": "gh", "command": "ghp_a1B2c3D4e5a1B2c3D4e5a1B2c3D4e5abcdef"}]},
        True,
    ),
    "attached-value-past-a-start-guard": (  # `--api-key=X` is stored as `--[secret …]`
        "mcpServers",
        "{none: args, assert: {path: '@', not_matches: '^\\[secret ', matches: '\\.sh$'}}",
        _mcp("-y", "server"),
        _mcp("-y", "server", "--api-key=sk-abcdefghijklmnop0123456789"),
        True,
    ),
    "excludes-on-a-projection": (  # `args[*]` reads the list: membership by fingerprint
        "mcpServers",
        "{path: 'args[*]', excludes: '--insecure'}",
        _mcp("-y", "server"),
        _mcp("-y", "server", "--api-key", "sk-abcdefghijklmnop0123456789"),
        False,
    ),
}


@pytest.mark.parametrize("case", sorted(HIDDEN_CASES))
def test_lint_warns_exactly_where_a_review_of_the_hidden_value_cannot_decide(
    tmp_path: Path, case: str
) -> None:
    import json

    from tests.conftest import run_cli

    array, inner, live, proposed, undecidable = HIDDEN_CASES[case]
    policy = tmp_path / "p.yaml"
    policy.write_text(
        RULE.replace(
            "    assert: {LEAF}\n", _EACH.replace("{ARRAY}", array).replace("{INNER}", inner)
        )
        + "    on_missing: pass\n"
    )
    (tmp_path / "live.json").write_text(json.dumps(live))
    (tmp_path / "proposed.json").write_text(json.dumps(proposed))
    code, out, err = run(tmp_path, "lint", str(policy))
    assert code == 0, out + err
    warnings = _hidden_warnings(out)
    argv = ["review", str(tmp_path / "proposed.json"), "--against", str(tmp_path / "live.json")]
    argv += ["--policy", str(policy)]
    argv += ["--out", str(tmp_path / "out"), "-o", "md", "-q"]
    env = {"AUDITOR_STATE": str(tmp_path / "state.db")}
    review, rout, rerr = run_cli(argv, env=env, cwd=tmp_path)
    assert review == (2 if undecidable else 0), rout + rerr
    assert ("cannot be decided" in rout + rerr) == undecidable, rout + rerr
    assert len(warnings) == (1 if undecidable else 0), out
