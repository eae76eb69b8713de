"""Skip what cannot change (issue 13): a change rule's status is the same with the engine's
shortcuts as without them, over generated steps — changes at every kind of path (hooks,
overrides, models, unrelated keys, keys holding a redacted secret), values of every JSON type,
markers whole and inside text, broken entries — with and without the key that decides
comparisons with markers:

- the *sieve* (`evaluate.sieve`): a change at a path no gate of the rule matches is judged by
  the gate alone, unless another part of the rule could be an `error` on it;
- the *steady parts* (`status.Steady`): a part of a rule that reads only settings (the URL
  override list of CHG-AUT-003) is judged again only when what it reads is no longer the same
  object (a history's revisions share their unchanged values);
- the *step skip* (`sieve.change_gates`, `change.ChangeRun`): a change rule is not run for a
  step none of whose changes concerns it, after a step of the same kind, its settings unmoved.

The reference is the plain evaluation: no sieve, no memo."""

from __future__ import annotations

import copy
import random
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from auditor.common.jsonutil import share_equal
from auditor.diff import list_table_from_config
from auditor.evaluate import sieve as sieve_module
from auditor.evaluate import status as status_module
from auditor.evaluate.conditions import Env
from auditor.evaluate.memo import MemoRule
from auditor.evaluate.rule import run_rule
from auditor.evaluate.sieve import sieve_of
from auditor.evaluate.status import ElementMemo, rule_status
from auditor.operators import fingerprinting
from auditor.policy import SHIPPED_POLICY_DIR, load_policies
from auditor.policy.conditions import Logic, Quantifier
from auditor.policy.model import Rule
from auditor.redact import Redactor

NOW = datetime(2026, 11, 1, 12, tzinfo=UTC)
R = Redactor(b"test-key-sieve")
SECRET = "sk-live-0123456789abcdef"
MARK = R.marker(SECRET)
OTHER = R.marker("another-secret-value-42")

# Rules the shipped packs lack: a gate on `kind`, a gate that is an `error` on every change
# (`gt` on text), a gate reading a field that may be absent, a gate no value can be passed over
# by (`matches` on a change's value: judged whole unless it is a text), a `default`, a
# single-gate condition, nested `any` / `not`.
CUSTOM = r"""
rules:
  - {id: S-KIND, title: t, severity: low, target: change,
     assert: {none: changes, assert: {all: [{path: kind, equals: removed},
                                            {path: path, matches: '^\$\.hooks'},
                                            {path: before, in: [x, 1, null]}]}}}
  - {id: S-ERR, title: t, severity: low, target: change,
     assert: {none: changes, assert: {all: [{path: path, gt: 3}, {path: kind, equals: added}]}}}
  - {id: S-OLD, title: t, severity: low, target: change,
     assert: {none: changes, assert: {all: [{path: old_path, starts_with: "$.hooks"},
                                            {path: after, equals: x}]}}}
  - {id: S-UNSAFE, title: t, severity: low, target: change,
     assert: {none: changes, assert: {all: [{path: path, starts_with: "$.mcp"},
                                            {path: after, matches: "high"}]}}}
  - {id: S-DEFAULT, title: t, severity: low, target: change,
     assert: {none: changes, assert: {all: [{path: path, starts_with: "$.mcp"},
                                            {path: old_path, equals: "$.x", default: "$.x"}]}}}
  - {id: S-WHOLE, title: t, severity: low, target: change,
     assert: {some: changes, assert: {any: [{path: path, ends_with: ".timeout"},
                                            {not: {path: path, matches: "\\["}}]}}}
  - {id: S-ANY, title: t, severity: low, target: change,
     assert: {each: changes, assert: {all: [{path: path, not_matches: '^\$\.customModels'},
                                            {any: [{path: after, type: object},
                                                   {not: {path: kind, in: [added]}},
                                                   {path: before, not_equals: {a: 1}}]}]}}}
  - {id: S-EITHER, title: t, severity: low, target: change,
     assert: {none: changes, assert: {any: [{path: path, gt: 3},
                                            {all: [{path: path, starts_with: "$.hooks"},
                                                   {path: kind, equals: added}]}]}}}
  - {id: S-EITHER-2, title: t, severity: low, target: change,
     assert: {each: changes, assert: {any: [{all: [{path: path, starts_with: "$.mcp"},
                                                   {path: after, type: object}]},
                                            {path: kind, equals: removed}]}}}
  - {id: S-TYPE, title: t, severity: low, target: change,
     assert: {none: changes, assert: {all: [{path: path, starts_with: "$.mcp"},
                                            {any: [{path: after, type: string},
                                                   {path: before, type: object}]}]}}}
  - {id: S-TEXT, title: t, severity: low, target: change,
     assert: {none: changes, assert: {all: [{path: path, starts_with: "$.mcp"},
                                            {any: [{path: old_path, in: ["$.a"]},
                                                   {path: kind, equals: added}]}]}}}
  - {id: S-TWO, title: t, severity: low, target: change,
     assert: {none: changes, assert: {all: [{path: path, starts_with: "$.mcp"},
                                            {path: [after, before], matches: "high"}]}}}
  - {id: S-CLOCK, title: t, severity: low, target: change,
     assert: {all: [{any: [{path: after.when, within_days: 30}, {path: after.flag, equals: zzz}]},
                    {none: changes, assert: {path: path, starts_with: "$.list"}}]}}
  - {id: S-LIST, title: t, severity: low, target: change,
     assert: {all: [{not: {path: items, changed: true}},
                    {none: changes, assert: {path: path, starts_with: "$.zz"}}]}}
  - {id: S-FLAG, title: t, severity: low, target: change,
     assert: {all: [{not: {path: flag, to: true}},
                    {none: changes, assert: {path: path, starts_with: "$.zz"}}]}}
  - {id: S-STEADY, title: t, severity: low, target: change,
     assert: {all: [{each: after.list, assert: {any: [{path: level, in: ["off", null]},
                                                    {path: url, in: {ref: "before.list[*].url"}}]}},
                    {not: {path: flag, to: true}},
                    {none: changes, assert: {path: path, starts_with: "$.list"}}]}}
"""


def change_rules() -> list[Rule]:
    shipped = [r for r in load_policies([SHIPPED_POLICY_DIR]).rules if r.target == "change"]
    return [*shipped, *_custom()]


def _custom() -> list[Rule]:
    folder = Path(tempfile.mkdtemp(prefix="auditor-sieve-"))
    try:
        (folder / "custom.yaml").write_text(CUSTOM)
        return list(load_policies([folder / "custom.yaml"]).rules)
    finally:
        shutil.rmtree(folder)


PATHS = [
    "$.hooks",
    "$.hooks.PreToolUse",
    "$.hooks.PreToolUse[0].hooks[0].command",
    "$.hooks.PreToolUse[0].hooks[0].timeout",
    "$.hooks.PreToolUse[0].matcher",
    "$.hooks.hooksDisabled",
    "$.hooks['Pre Tool'][0]",
    "$.builtInToolAutonomyOverrides.Execute",
    "$.mcpAutonomyOverrides.evil",
    f"$.mcpAutonomyOverrides['{MARK}']",
    "$.mcpAutonomyUrlOverrides",
    "$.mcpAutonomyUrlOverrides[0]",
    "$.mcpAutonomyUrlOverrides[1].defaultLevel",
    f"$.mcpAutonomyUrlOverrides[?urlPattern=='{MARK}'].defaultLevel",
    "$.customModels",
    "$.customModels[?id=='custom:a'].baseUrl",
    f"$.customModels[?id=='{MARK}'].hosted",
    "$.commandDenylist",
    "$.commandDenylist[3]",
    "$.commandBlocklist",
    "$.sandbox.enabled",
    "$.sandbox.network.allowedDomains[0]",
    "$.maxAutonomyLevel",
    "$.list[0]",
    f"$.x{MARK}y",
    "",
]
KINDS = ["added", "removed", "changed", "type_changed", "renamed", "item_added", "item_removed"]
VALUES: list[Any] = [
    None, True, False, 0, 5, 2.5, "", "x", "off", "low", "medium", "high", "High", "^$",
    MARK, OTHER, f"curl -H 'Authorization: {MARK}' https://x", SECRET,
    # marker-shaped text the redactor did not make (it leaves such text as it is): a hidden
    # length no `re` pattern can hold (reviewer R94: `error` plainly, `pass` sieved)
    "[secret fp:00000000 len:4294967296]", "x [secret fp:00000000 len:" + "9" * 5000 + "]",
    [], [1, "a"], [MARK], {}, {"a": 1}, {"command": MARK}, {"PreToolUse": []},
    {"urlPattern": "https://a", "defaultLevel": "high"},
]  # fmt: skip

_value = st.sampled_from(VALUES)


@st.composite
def change(draw: st.DrawFn) -> Any:
    if draw(st.integers(0, 30)) == 0:  # a broken entry
        return draw(st.sampled_from([None, "x", [], {"kind": "added"}, {"path": 5, "kind": "x"}]))
    entry: dict[str, Any] = {
        "path": draw(st.sampled_from(PATHS)),
        "kind": draw(st.sampled_from(KINDS)),
        "before": draw(_value),
        "after": draw(_value),
        "old_path": draw(st.sampled_from([None, None, "$.hooks.Old", f"$.{MARK}", 3])),
    }
    if draw(st.integers(0, 10)) == 0:
        del entry[draw(st.sampled_from(sorted(entry)))]
    return entry


_SIDE = st.fixed_dictionaries(
    {},
    optional={
        "list": st.lists(
            st.fixed_dictionaries({"url": st.sampled_from(["a", "b", MARK]), "level": _value}),
            max_size=3,
        ),
        "flag": _value,
        "mcpAutonomyUrlOverrides": st.lists(
            st.fixed_dictionaries(
                {"urlPattern": st.sampled_from(["https://a", MARK]), "defaultLevel": _value}
            ),
            max_size=3,
        ),
        "hooks": st.sampled_from([None, {}, {"hooksDisabled": True}, {"hooksDisabled": MARK}]),
        "allowManagedHooksOnly": _value,
    },
)


@contextmanager
def plain() -> Iterator[None]:
    """Evaluate without the sieve (the memo is left out by passing none)."""
    saved = status_module.sieve_of
    status_module.sieve_of = lambda cond: None  # type: ignore[assignment]
    try:
        yield
    finally:
        status_module.sieve_of = saved


def _reference(rule: Rule, doc: Any, env: Env) -> str:
    with plain():
        return rule_status(rule, doc, env)


RULES = change_rules()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    steps=st.lists(
        st.tuples(_SIDE, _SIDE, st.lists(change(), max_size=6), st.booleans()),
        min_size=1,
        max_size=5,
    ),
    keyed=st.booleans(),
)
def test_the_shortcuts_give_the_plain_status(
    steps: list[tuple[dict[str, Any], dict[str, Any], list[Any], bool]], keyed: bool
) -> None:
    memos = [ElementMemo(rule, steady=True) for rule in RULES]
    last: dict[str, Any] | None = None
    with fingerprinting(R.marker if keyed else None):
        for before, after, changes, keep in steps:
            if keep and last is not None:
                before = last  # the step after reads the very object the last one did
            share_equal(before, after)  # unchanged values the same objects, as stored
            doc = {"before": before, "after": after, "changes": changes}
            env = Env(NOW, (before, after))
            for rule, memo in zip(RULES, memos, strict=True):
                expected = _reference(rule, doc, env)
                assert rule_status(rule, doc, env) == expected, (rule.id, doc)
                assert rule_status(rule, doc, env, memo) == expected, (rule.id, doc)
                assert run_rule(rule, doc, env).status == expected, (rule.id, doc)
            last = after


def test_a_kept_part_follows_the_key_and_the_clock() -> None:
    """A steady part is kept under the marker function and the clock it was judged with: the
    same objects judged with the key, then without it, give the answer each gives."""
    rule = next(r for r in _custom() if r.id == "S-STEADY")
    memo = ElementMemo(rule, steady=True)
    before = {"list": [{"url": "a", "level": "off"}]}
    after = {"list": [{"url": MARK, "level": "high"}]}
    doc = {"before": before, "after": after, "changes": []}
    # keyed: the hidden url is not "a", and the level is high: fail
    with fingerprinting(R.marker):
        assert rule_status(rule, doc, Env(NOW, (before, after)), memo) == "fail"
    # no key: whether the hidden url is "a" cannot be told: error, not the kept "fail"
    with fingerprinting(None):
        assert rule_status(rule, doc, Env(NOW, (before, after)), memo) == "error"
    later = Env(NOW + timedelta(days=1), (before, after))
    with fingerprinting(R.marker):
        assert rule_status(rule, doc, later, memo) == "fail"
    # a clock: the same objects a month later give the later answer
    clock = next(r for r in _custom() if r.id == "S-CLOCK")
    memo = ElementMemo(clock, steady=True)
    side = {"when": "2026-10-20T00:00:00Z", "flag": "no"}
    doc = {"before": side, "after": side, "changes": []}
    assert rule_status(clock, doc, Env(NOW, (side, side)), memo) == "pass"
    month = Env(NOW + timedelta(days=30), (side, side))
    assert rule_status(clock, doc, month, memo) == "fail"


def test_a_copy_gives_its_own_status() -> None:
    """Only the same objects are taken as unchanged: an equal copy gives the same status, a
    changed copy its own."""
    rule = next(r for r in _custom() if r.id == "S-STEADY")
    memo = ElementMemo(rule, steady=True)
    before = {"list": [{"url": "a", "level": "off"}]}
    after = {"list": [{"url": "a", "level": "high"}]}
    env = Env(NOW, (before, after))
    doc = {"before": before, "after": after, "changes": []}
    assert rule_status(rule, doc, env, memo) == "pass"
    same = copy.deepcopy(after)
    doc1 = {"before": before, "after": same, "changes": []}
    assert rule_status(rule, doc1, Env(NOW, (before, same)), memo) == "pass"
    copied = copy.deepcopy(after)
    copied["list"].append({"url": "new", "level": "high"})
    doc2 = {"before": before, "after": copied, "changes": []}
    assert rule_status(rule, doc2, Env(NOW, (before, copied)), memo) == "fail"


def _quantifiers_over_changes(rule: Rule) -> Iterator[Quantifier]:
    stack: list[Any] = [rule.condition]
    while stack:
        cond = stack.pop()
        if isinstance(cond, Logic):
            stack.extend(cond.children)
        elif isinstance(cond, Quantifier):
            if cond.path.text == "changes":
                yield cond
            stack.append(cond.condition)


@pytest.mark.parametrize(
    "rule_id",
    [
        "CHG-AUT-003",
        "CHG-HOK-001",
        "CHG-HOK-002",
        "CHG-CMD-001",
        "CHG-SBX-002",
        "CHG-SBX-003",
        "CHG-MCP-002",
        "CHG-MOD-003",
    ],  # (not CHG-KEY-001: `old_path` is null but on a rename, no text a gate can keep)
)
def test_the_shipped_change_rules_are_sieved(rule_id: str) -> None:
    """The shipped rules whose cost the sieve was built for keep being sieved: a change at
    an unrelated path is told by its gate (the status the plain evaluation gives), and once
    the gate's answer for that path is kept, judging it makes fewer checks than the plain
    evaluation does."""
    rule = next(r for r in RULES if r.id == rule_id)
    found = list(_quantifiers_over_changes(rule))
    assert found, rule_id
    assert all(sieve_of(q) is not None for q in found), rule_id
    doc = {"before": {}, "after": {}, "changes": [
        {"path": "$.unrelated[3]", "kind": "changed", "before": 1, "after": 2, "old_path": None}
    ]}  # fmt: skip
    calls = 0
    real = status_module.condition_status

    def counting(*args: Any, **kwargs: Any) -> Any:
        nonlocal calls
        calls += 1
        return real(*args, **kwargs)

    env = Env(NOW, (doc["before"], doc["after"]))
    with fingerprinting(R.marker):
        sieve_module._SIEVES.clear()
        status_module.condition_status = counting  # type: ignore[assignment]
        try:
            with plain():
                expected = rule_status(rule, doc, env)
            plain_calls, calls = calls, 0
            rule_status(rule, doc, env)
            calls = 0
            assert rule_status(rule, doc, env) == expected  # the gate's answer is kept
        finally:
            status_module.condition_status = real  # type: ignore[assignment]
    assert calls < plain_calls, (rule_id, calls, plain_calls)


def test_an_error_on_an_unrelated_change_still_shows() -> None:
    """`matches` on a change's value is an error on a number: the gate on the path fails,
    but the value is no text a gate's answer is kept for, so the change is judged whole and
    the error shows even where the path is of no concern to the rule."""
    rule = next(r for r in _custom() if r.id == "S-UNSAFE")
    doc = {"before": {}, "after": {}, "changes": [
        {"path": "$.other", "kind": "changed", "before": 1, "after": 2, "old_path": None}
    ]}  # fmt: skip
    assert rule_status(rule, doc, Env(NOW, ({}, {}))) == "error"


def test_random_histories_as_stored() -> None:
    """A longer walk: 300 steps over a list of overrides and hooks that changes now and then,
    shared as the store shares it, every rule memoised as a run memoises it."""
    rng = random.Random(7)
    memos = [ElementMemo(rule, steady=True) for rule in RULES]
    side: dict[str, Any] = {"mcpAutonomyUrlOverrides": [], "list": [], "flag": False}
    with fingerprinting(R.marker):
        for _ in range(300):
            after = copy.deepcopy(side)
            if rng.random() < 0.2:
                after["list"].append({"url": rng.choice(["a", "b", MARK]), "level": "high"})
            if rng.random() < 0.1:
                after["flag"] = rng.choice([True, False, MARK])
            share_equal(side, after)
            changes = [
                {"path": rng.choice(PATHS), "kind": rng.choice(KINDS), "before": rng.choice(VALUES),
                 "after": rng.choice(VALUES), "old_path": None}
                for _ in range(rng.randint(0, 3))
            ]  # fmt: skip
            doc = {"before": side, "after": after, "changes": changes}
            env = Env(NOW, (side, after))
            for rule, memo in zip(RULES, memos, strict=True):
                assert rule_status(rule, doc, env, memo) == _reference(rule, doc, env), rule.id
            side = after


SETTINGS = r"""
rules:
  - {id: T-EQ, title: t, severity: high, target: settings,
     assert: {none: hooks, assert: {all: [{path: name, starts_with: x},
                                          {any: [{path: cmd, equals: [rm]},
                                                 {path: shell, equals: bash}]}]}}}
  - {id: T-NE, title: t, severity: high, target: settings,
     assert: {none: hooks, assert: {all: [{path: name, starts_with: x},
                                          {any: [{path: cmd, not_equals: [rm]},
                                                 {path: shell, equals: bash}]}]}}}
  - {id: T-SET, title: t, severity: high, target: settings,
     assert: {all: [{any: [{each: hooks, assert: {path: cmd, equals: safe}},
                           {path: off, equals: true}]},
                    {path: name, exists: true}]}}
"""


def _rules(text: str) -> dict[str, Rule]:
    folder = Path(tempfile.mkdtemp(prefix="auditor-sieve-"))
    try:
        (folder / "rules.yaml").write_text(text)
        return {r.id: r for r in load_policies([folder / "rules.yaml"]).rules}
    finally:
        shutil.rmtree(folder)


@pytest.mark.parametrize("rule_id", ["T-EQ", "T-NE"])
def test_a_list_compared_whole_with_a_text_stays_an_error(rule_id: str) -> None:
    """`equals: [rm]` on a text is an error (no text is a list), not a `false` the sieve may
    pass over: the hook is judged whole, and the rule says `error` (reviewer R92 #1: a
    settings rule passed)."""
    rule = _rules(SETTINGS)[rule_id]
    doc = {"hooks": [{"name": "y", "cmd": "rm", "shell": "sh"}]}
    assert _reference(rule, doc, Env(NOW)) == "error"
    assert rule_status(rule, doc, Env(NOW), ElementMemo(rule, steady=True)) == "error"
    assert run_rule(rule, doc, Env(NOW)).status == "error"


def test_a_kept_part_follows_the_sides_and_the_list_table() -> None:
    """A part holding a change operator, judged with a change's sides, is judged again
    without them (an error), and a list compared under another list table (a set) is judged
    under that table (reviewer R92 #2, #3)."""
    rules = {r.id: r for r in _custom()}
    flag = rules["S-FLAG"]
    memo = ElementMemo(flag, steady=True)
    before, after = {"flag": False}, {"flag": False}
    doc = {"before": before, "after": after, "changes": []}
    assert rule_status(flag, doc, Env(NOW, (before, after)), memo) == "pass"
    assert rule_status(flag, doc, Env(NOW), memo) == _reference(flag, doc, Env(NOW)) == "error"
    assert rule_status(flag, doc, Env(NOW, (before, after)), memo) == "pass"
    assert rule_status(flag, ["x"], Env(NOW, ({}, {})), memo) == "error"  # no object: no crash

    items = rules["S-LIST"]
    memo = ElementMemo(items, steady=True)
    before, after = {"items": ["a", "b"]}, {"items": ["b", "a"]}
    doc = {"before": before, "after": after, "changes": []}
    assert rule_status(items, doc, Env(NOW, (before, after)), memo) == "fail"
    as_set = list_table_from_config({"sets": ["items"]})
    env = Env(NOW, (before, after), table=as_set)
    assert rule_status(items, doc, env, memo) == _reference(items, doc, env) == "pass"


def test_only_the_walks_keep_parts_so_an_edited_document_is_judged_anew() -> None:
    """The history walk and the change steps read revisions nobody changes; any other caller
    that edits a document between two evaluations gets the edited one's status (reviewer R92
    #4: a list edited in place read as the same)."""
    rule = _rules(SETTINGS)["T-SET"]
    memo = MemoRule(rule)
    hooks: list[dict[str, Any]] = [{"cmd": "safe"}]
    assert memo.status({"hooks": hooks, "off": False, "name": "n"}, Env(NOW)) == "pass"
    hooks[0]["cmd"] = "rm -rf /"
    assert memo.status({"hooks": hooks, "off": False, "name": "n2"}, Env(NOW)) == "fail"
    assert not ElementMemo(rule).steady and ElementMemo(rule, steady=True).steady


def test_a_gate_keeps_no_long_text() -> None:
    """A gate's answers are kept for short texts only: 300 distinct values of 50 KB in a
    change's `after` leave none of them held (reviewer R92 #6: 100 MB were)."""
    rule = next(r for r in _custom() if r.id == "S-UNSAFE")
    (quantifier,) = _quantifiers_over_changes(rule)
    sieve = sieve_of(quantifier)
    assert sieve is not None
    for n in range(300):
        after = f"{n:05d}" + "x" * 50_000
        doc = {"before": {}, "after": {}, "changes": [
            {"path": f"$.mcp{n}", "kind": "changed", "before": 1, "after": after, "old_path": None}
        ]}  # fmt: skip
        rule_status(rule, doc, Env(NOW, ({}, {})))
    assert all(len(text) <= sieve_module.GATE_TEXT for seen in sieve.seen for text in seen)


def _history(seed: int, count: int) -> tuple[Any, ...]:
    """A generated history shared as the store shares it, with changes the shipped change
    rules are about mixed in now and then (hooks, overrides, models, a key holding a
    secret's marker), so that steps of no concern and steps of concern alternate."""
    from auditor.common.jsonutil import Sharing
    from auditor.emulator import generate_dataset
    from auditor.fetch.decode import to_revision

    rng = random.Random(seed)
    raw = generate_dataset(seed=seed, revisions=count).history
    redactor = Redactor(b"test-key-sieve-history")
    sharing = Sharing()
    out = []
    last: Any = None
    for i, item in enumerate(raw):
        item = copy.deepcopy(item)
        settings = item.get("settings")
        if isinstance(settings, dict) and last is not None and rng.random() < 0.05:
            item["settings"] = copy.deepcopy(last)  # a step that changes nothing
        elif isinstance(settings, dict) and rng.random() < 0.25:
            pick = rng.randrange(6)
            if pick == 0:
                settings["mcpAutonomyOverrides"] = {rng.choice(["a", "b", MARK]): "high"}
            elif pick == 1:
                settings["hooks"] = {"PreToolUse": [{"matcher": "Execute", "hooks": [
                    {"type": "command", "command": rng.choice(["g.py", MARK]),
                     "timeout": rng.choice([0, 5, 30])}]}]}  # fmt: skip
            elif pick == 2:
                settings["mcpAutonomyUrlOverrides"] = [
                    {"urlPattern": rng.choice(["https://a", "https://b"]),
                     "defaultLevel": rng.choice(["off", "high", None])}
                ]  # fmt: skip
            elif pick == 3:
                settings.pop("hooks", None)
            elif pick == 4:
                settings["builtInToolAutonomyOverrides"] = {"Execute": rng.choice(["low", "high"])}
            else:
                settings.setdefault("customModels", []).append(
                    {"id": f"custom:{i}", "baseUrl": "https://m.example/v1", "apiKey": SECRET}
                )
        last = item.get("settings")
        revision = to_revision(item, redactor, "default", f"$.history[{i}]")
        sharing.share(revision.settings)
        out.append(revision)
    return tuple(out)


@pytest.mark.parametrize(("seed", "shipped"), [(3, True), (11, True), (5, False)])
def test_a_run_skipping_steps_of_no_concern_equals_a_plain_one(seed: int, shipped: bool) -> None:
    """The change steps and the history walk as a nightly run makes them (not every step's
    words: `--all-revisions` is not given), with a rule not run for a step none of whose
    changes concerns it (`sieve.change_gates`) and its steady parts kept, against the plain
    evaluation (no memo, no sieve, no skip): the same results, word for word, the same
    failing revisions and spans. Also for a policy of no rule that reads the settings alone
    (the custom rules without the shipped packs: reviewer R93 #1, a failing step lost)."""
    from auditor.evaluate.engine import Steps, evaluate
    from auditor.evaluate.model import EvaluationInputs

    folder = Path(tempfile.mkdtemp(prefix="auditor-sieve-"))
    try:
        (folder / "custom.yaml").write_text(CUSTOM)
        packs = [SHIPPED_POLICY_DIR] if shipped else []
        policy = load_policies([*packs, folder / "custom.yaml"])
    finally:
        shutil.rmtree(folder)
    history = _history(seed, 400)

    def run(memoise: bool) -> Any:
        inputs = EvaluationInputs(NOW, history[-1], history, steps=Steps(history), memoise=memoise)
        with fingerprinting(Redactor(b"test-key-sieve-history").marker):
            return evaluate(policy, inputs)

    from auditor.evaluate.memo import MemoRule as Memo

    judged = 0
    real = Memo.status

    def counted(self: Any, doc: Any, env: Any) -> Any:
        nonlocal judged
        judged += self.rule.target == "change"
        return real(self, doc, env)

    Memo.status = counted  # type: ignore[method-assign]
    try:
        fast = run(True)
    finally:
        Memo.status = real  # type: ignore[method-assign]
    changes = sum(r.target == "change" for r in policy.rules)
    assert judged < changes * (len(history) - 1) * 0.8, (judged, changes)  # steps were skipped
    with plain():
        slow = run(False)
    assert len(fast.results) == len(slow.results) > 50
    for mine, theirs in zip(fast.results, slow.results, strict=True):
        assert mine == theirs
        assert (mine.message, mine.evidence, mine.since) == (
            theirs.message,
            theirs.evidence,
            theirs.since,
        )
    assert fast.failing_by_revision == slow.failing_by_revision
    assert fast.not_evaluated == slow.not_evaluated
    statuses = {r.status for r in fast.results if r.rule.target == "change"}
    assert {"pass", "fail"} <= statuses, statuses


def test_a_settings_part_that_fails_is_seen_without_a_pure_rule() -> None:
    """A change rule whose settings part goes from pass to fail on a step none of whose
    changes concerns its quantifier, in a policy with no rule reading the settings alone: the
    step fails, as in the plain evaluation (reviewer R93 #1: the run said "3 of 3 steps
    pass")."""
    from auditor.common.jsonutil import content_hash
    from auditor.evaluate.engine import Steps, evaluate
    from auditor.evaluate.model import EvaluationInputs
    from auditor.models import Revision, User

    folder = Path(tempfile.mkdtemp(prefix="auditor-sieve-"))
    try:
        (folder / "g.yaml").write_text(
            r"""
rules:
  - {id: G, title: t, severity: high, target: change,
     assert: {all: [{path: after.flag, equals: true},
                    {none: changes, assert: {path: path, starts_with: "$.zz"}}]}}
"""
        )
        policy = load_policies([folder / "g.yaml"])
    finally:
        shutil.rmtree(folder)
    sides = [{"flag": True, "a": 0}, {"flag": True, "a": 1}, {"flag": True, "a": 2},
             {"flag": False, "a": 2}]  # fmt: skip
    history = tuple(
        Revision(
            n, NOW + timedelta(minutes=n), User("u1", "u@example.com", "U"), s, content_hash(s)
        )
        for n, s in enumerate(sides, start=1)
    )
    inputs = EvaluationInputs(NOW, history[-1], history, steps=Steps(history))
    found = [(r.subject.key, r.status) for r in evaluate(policy, inputs).results]
    assert ("change:3..4", "fail") in found, found


def test_a_kept_part_tells_one_from_true() -> None:
    """A steady part reads scalars by type and value: a setting that turns from `1` to `true`
    (equal in Python, not in JSON) is judged again."""
    rule = _rules(
        r"""
rules:
  - {id: N1, title: t, severity: low, target: change,
     assert: {all: [{any: [{path: after.n, type: boolean}, {path: after.m, exists: true}]},
                    {none: changes, assert: {path: path, starts_with: "$.zz"}}]}}
"""
    )["N1"]
    memo = ElementMemo(rule, steady=True)
    before, after = {"n": 1}, {"n": 1}
    doc = {"before": before, "after": after, "changes": []}
    assert rule_status(rule, doc, Env(NOW, (before, after)), memo) == "fail"
    turned = {"n": True}
    doc = {"before": before, "after": turned, "changes": []}
    env = Env(NOW, (before, turned))
    assert rule_status(rule, doc, env, memo) == _reference(rule, doc, env) == "pass"
