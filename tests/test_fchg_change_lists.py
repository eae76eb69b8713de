"""One notion of "changed" for a step: the change operators judge a list as the diff does.

A step that only reorders a set list (`commandAllowlist`) or an identity list (`customModels`,
by `id`) is "no changes" in `diff`, `history`, `changes[]` and `review`; the nightly's
`changed`, `from` and `to` agree, and a list the table does not name keeps its order."""

from __future__ import annotations

import copy
import io
import itertools
import json
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from auditor.cli import Context, main
from auditor.emulator import start_emulator
from tests.conftest import FIXED_NOW, OWNER_TOKEN, emulator_env

ORIG = ["ls", "cat", "git status"]
MODELS = [
    {"id": "custom:a", "model": "a-1", "baseUrl": "https://a.example/v1"},
    {"id": "custom:b", "model": "b-1", "baseUrl": "https://b.example/v1"},
]
RULES = {
    "AL": {"not": {"path": "commandAllowlist", "changed": True}},
    "AL-KEPT": {"path": "commandAllowlist", "changed": False},
    "CM": {"not": {"path": "customModels", "changed": True}},
    "OT": {"not": {"path": "other", "changed": True}},
    "AL-FROM": {"not": {"path": "commandAllowlist", "from": ORIG}},
    "AL-TO": {"not": {"path": "commandAllowlist", "to": ["rm -rf /", *ORIG]}},
}


def _steps(base: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The steps appended after the emulator's history, each named by what it does."""
    start = copy.deepcopy(base)
    start.update(commandAllowlist=list(ORIG), customModels=copy.deepcopy(MODELS), other=[1, 2])
    out = [("start", start)]

    def step(name: str, **values: Any) -> None:
        settings = copy.deepcopy(out[-1][1])
        settings.update(values)
        out.append((name, settings))

    step("set-reorder", commandAllowlist=list(reversed(ORIG)))
    step("identity-reorder", customModels=copy.deepcopy(list(reversed(MODELS))))
    step("other-reorder", other=[2, 1])
    step("set-change", commandAllowlist=[*reversed(ORIG), "rm -rf /"])
    edited = copy.deepcopy(list(reversed(MODELS)))
    edited[0]["model"] = "b-2"
    step("identity-change", customModels=edited)
    return out


#: Each rule's status on each step (the nightly's, with `--all-revisions`; `review` fails
#: the rule exactly where this says `fail`).
EXPECTED = {
    "set-reorder": {"AL": "pass", "AL-KEPT": "pass", "AL-FROM": "pass", "AL-TO": "pass"},
    "identity-reorder": {"CM": "pass"},
    "other-reorder": {"OT": "fail"},
    "set-change": {"AL": "fail", "AL-KEPT": "fail", "AL-FROM": "fail", "AL-TO": "fail"},
    "identity-change": {"CM": "fail"},
}


NO_CHANGE = {"set-reorder", "identity-reorder"}


def _cli(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    ctx = Context(env=env, stdout=out, stderr=err, clock=lambda: FIXED_NOW, cwd=str(cwd))
    return main(argv, ctx), err.getvalue()


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, list[Any]]]:
    with start_emulator(tokens={OWNER_TOKEN: "owner"}, now=FIXED_NOW, revisions=3, repos=1) as e:
        data = e.dataset
        last = data.history[-1]
        when = FIXED_NOW - timedelta(days=1)
        steps = []
        for i, (name, settings) in enumerate(_steps(last["settings"])):
            row = data._append(settings, last["user"], when + timedelta(minutes=i))
            steps.append((name, row["revision"], settings))
        yield e, steps


@pytest.fixture
def policy(tmp_path: Path) -> Path:
    rules = [
        {"id": rid, "title": f"rule {rid}", "severity": "high", "target": "change", "assert": a}
        for rid, a in RULES.items()
    ]
    path = tmp_path / "pol.yaml"
    path.write_text(yaml.safe_dump({"rules": rules}))
    return path


def _statuses(findings: dict[str, Any]) -> dict[tuple[str, str], str]:
    return {(f["rule_id"], f["subject"]["key"]): f["status"] for f in findings["findings"]}


def test_the_nightly_judges_a_reordered_list_as_the_diff_does(
    history: tuple[Any, list[Any]], policy: Path, tmp_path: Path
) -> None:
    emu, steps = history
    env = emulator_env(emu, tmp_path / "state.db")
    argv = ["run", "--policy", str(policy), "--no-usage", "--no-readiness", "--all-revisions"]
    code, err = _cli([*argv, "--out", str(tmp_path / "r"), "-o", "json"], env, tmp_path)
    assert code in (0, 1), err
    seen = _statuses(json.loads((tmp_path / "r" / "findings.json").read_text()))
    for (_, before, _), (name, after, _) in itertools.pairwise(steps):
        for rule, status in EXPECTED[name].items():
            assert seen[(rule, f"change:{before}..{after}")] == status, (name, rule)
        # `diff` of the step says the same: a reorder of a set or identity list is no change
        out = io.StringIO()
        ctx = Context(env=env, stdout=out, stderr=io.StringIO(), clock=lambda: FIXED_NOW)
        assert main(["diff", "--from", str(before), "--to", str(after)], ctx) == 0
        assert ("No changes." in out.getvalue()) is (name in NO_CHANGE), name


@pytest.mark.parametrize("name", list(EXPECTED))
def test_review_of_the_same_step_agrees_with_the_nightly(
    history: tuple[Any, list[Any]], policy: Path, tmp_path: Path, name: str
) -> None:
    _, steps = history
    index = [s[0] for s in steps].index(name)
    live, proposed = tmp_path / "live.json", tmp_path / "proposed.json"
    live.write_text(json.dumps(steps[index - 1][2]))
    proposed.write_text(json.dumps(steps[index][2]))
    out = tmp_path / "o"
    argv = ["review", str(proposed), "--against", str(live), "--offline"]
    argv += ["--policy", str(policy), "--out", str(out), "-o", "json"]
    code, err = _cli(argv, {}, tmp_path)
    failing = {rule for rule, status in EXPECTED[name].items() if status == "fail"}
    assert code == (1 if failing else 0), err
    statuses = {
        f["rule_id"]: f["status"]
        for f in json.loads((out / "findings.json").read_text())["findings"]
    }
    assert {rule for rule in EXPECTED[name] if statuses.get(rule) == "fail"} == failing


@pytest.mark.parametrize(
    ("table", "status", "code"),
    [
        pytest.param("", "fail", 1, id="not-in-the-table"),
        pytest.param('[diff_keys]\nsets = ["other"]\n', "pass", 0, id="made-a-set"),
    ],
)
def test_diff_keys_decide_whether_a_reorder_changes_a_list(
    policy: Path, tmp_path: Path, table: str, status: str, code: int
) -> None:
    (tmp_path / "c.toml").write_text(table)
    # (`n` changes too, so the step is one a revision would be saved for)
    (tmp_path / "live.json").write_text(json.dumps({"other": ["a", "b"], "n": 1}))
    (tmp_path / "proposed.json").write_text(json.dumps({"other": ["b", "a"], "n": 2}))
    argv = ["review", str(tmp_path / "proposed.json"), "--against", str(tmp_path / "live.json")]
    argv += ["--offline", "--config", str(tmp_path / "c.toml"), "--policy", str(policy)]
    argv += ["--out", str(tmp_path / "o"), "-o", "json"]
    got, err = _cli(argv, {}, tmp_path)
    assert got == code, err
    findings = json.loads((tmp_path / "o" / "findings.json").read_text())["findings"]
    assert {f["rule_id"]: f["status"] for f in findings}["OT"] == status


def test_changed_judges_a_set_list_below_its_path_as_the_diff_does(
    tmp_path: Path,
) -> None:
    """The walk goes below the path: `sandbox` is unchanged when only a set list inside it
    (`sandbox.network.allowedDomains`) is reordered, changed when an entry is added."""
    rules = [
        {
            "id": "SB",
            "title": "sandbox unchanged",
            "severity": "high",
            "target": "change",
            "assert": {"not": {"path": "sandbox", "changed": True}},
        }
    ]
    (tmp_path / "pol.yaml").write_text(yaml.safe_dump({"rules": rules}))
    live = {"sandbox": {"network": {"allowedDomains": ["a.example", "b.example"]}}, "n": 1}
    (tmp_path / "live.json").write_text(json.dumps(live))
    cases = ((["b.example", "a.example"], 0), (["b.example", "c.example"], 1))
    for i, (domains, want) in enumerate(cases):
        proposed = {"sandbox": {"network": {"allowedDomains": domains}}, "n": 2}
        (tmp_path / "proposed.json").write_text(json.dumps(proposed))
        argv = ["review", str(tmp_path / "proposed.json"), "--against", str(tmp_path / "live.json")]
        argv += ["--offline", "--policy", str(tmp_path / "pol.yaml")]
        argv += ["--out", str(tmp_path / f"o{i}"), "-o", "json"]
        got, err = _cli(argv, {}, tmp_path)
        assert got == want, (domains, err)


_DIFF_KEYS = 'sets = ["other"]\nordered = ["commandAllowlist"]\n'


@pytest.mark.parametrize(
    ("file", "text", "extra"),
    [
        # review R69 #1: `policy test` judged every change case with the default list table
        ("c.toml", f"[diff_keys]\n{_DIFF_KEYS}", ["--config", "c.toml"]),
        # review R71 #2: with a PATH and no `--config`, it read no configuration at all
        ("pyproject.toml", f"[tool.auditor.diff_keys]\n{_DIFF_KEYS}", []),
    ],
)
def test_policy_test_judges_a_reorder_by_the_configurations_diff_keys(
    tmp_path: Path, file: str, text: str, extra: list[str]
) -> None:
    """A list `diff_keys` makes a set (or keeps in order) is judged so by `policy test` too,
    as `run` and `review` judge it, whichever way the configuration is found."""
    from tests.test_policy_cli import run

    (tmp_path / file).write_text(text)
    (tmp_path / "p.yaml").write_text(
        "rules:\n"
        "- {id: OT, title: t, severity: high, target: change,"
        " assert: {not: {path: other, changed: true}}}\n"
        "- {id: AL, title: t, severity: high, target: change,"
        " assert: {not: {path: commandAllowlist, changed: true}}}\n"
    )
    (tmp_path / "p.tests.yaml").write_text(
        "tests:\n"
        "- name: other reordered, a set by diff_keys\n"
        "  before: {other: [a, b]}\n  after: {other: [b, a]}\n  expect: {OT: pass}\n"
        "- name: allowlist reordered, in order by diff_keys\n"
        "  before: {commandAllowlist: [a, b]}\n  after: {commandAllowlist: [b, a]}\n"
        "  expect: {AL: fail}\n"
    )
    code, out, err = run(tmp_path, "test", "p.yaml", *extra)
    assert code == 0, out + err
    assert "2 passed, 0 failed" in out
