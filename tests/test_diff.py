"""The diff engine: change kinds, set and keyed lists, renames, type strictness, secrets, the
list table and its configuration, and the renderers of a change list."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from auditor.diff.engine import (
    DEFAULT_LIST_TABLE,
    ListTable,
    changed_paths,
    diff_revisions,
    dotted,
    list_table_from_config,
)
from auditor.diff.render import (
    change_summary,
    describe_value,
    render_changes_markdown,
    render_changes_text,
)
from auditor.diff.table import strict_equal
from auditor.errors import ConfigError
from auditor.models import Change
from auditor.redact import Redactor, is_marker

SECRET_A = "[secret fp:1a2b3c4d len:40]"
SECRET_B = "[secret fp:9f3c0011 len:40]"


def C(
    path: str, kind: str, before: Any = None, after: Any = None, old: str | None = None
) -> Change:
    return Change(path, kind, before, after, old)  # type: ignore[arg-type]


KIND_CASES = [
    pytest.param({}, {"a": 1}, [C("$.a", "added", after=1)], id="added"),
    pytest.param({"a": 1, "b": 2}, {"b": 2}, [C("$.a", "removed", 1)], id="removed"),
    pytest.param({"a": "x"}, {"a": "y"}, [C("$.a", "changed", "x", "y")], id="changed"),
    pytest.param({"a": True}, {"a": 1}, [C("$.a", "type_changed", True, 1)], id="bool-to-int"),
    pytest.param({"a": None}, {"a": "x"}, [C("$.a", "type_changed", None, "x")], id="null-to-str"),
    pytest.param({"a": "1"}, {"a": 1}, [C("$.a", "type_changed", "1", 1)], id="str-to-int"),
    pytest.param({"a": 1}, {"a": 1.5}, [C("$.a", "changed", 1, 1.5)], id="int-to-float"),
    pytest.param(
        {"a": {"b": 1}}, {"a": [1]}, [C("$.a", "type_changed", {"b": 1}, [1])], id="object-to-array"
    ),
    pytest.param(
        {"x": [True]},
        {"x": [1]},
        [C("$.x[0]", "type_changed", True, 1)],
        id="true-vs-1-inside-unknown-list",
    ),
    pytest.param(
        {"commandAllowlist": [True]},
        {"commandAllowlist": [1]},
        [
            C("$.commandAllowlist", "item_added", None, 1),
            C("$.commandAllowlist", "item_removed", True),
        ],
        id="true-vs-1-inside-set-list",
    ),
    pytest.param(
        {"sandbox": {"network": {"httpProxyPort": 8080}}},
        {"sandbox": {"network": {"httpProxyPort": 8081}}},
        [C("$.sandbox.network.httpProxyPort", "changed", 8080, 8081)],
        id="nested-leaf",
    ),
    pytest.param(
        {"a": 1},
        {"a": 1, "sandbox": {"enabled": True, "network": {}}},
        [C("$.sandbox", "added", None, {"enabled": True, "network": {}})],
        id="nested-object-appears-whole",
    ),
    pytest.param(
        {"sandbox": {"enabled": True}, "a": 1},
        {"a": 1},
        [C("$.sandbox", "removed", {"enabled": True})],
        id="nested-object-disappears-whole",
    ),
    pytest.param(
        {"enableDroidShield": True, "x": 1},
        {"enableAgentShield": True, "x": 1},
        [C("$.enableAgentShield", "renamed", True, True, "$.enableDroidShield")],
        id="renamed",
    ),
    pytest.param(
        {"old": {"k": [1, 2]}},
        {"new": {"k": [1, 2]}},
        [C("$.new", "renamed", {"k": [1, 2]}, {"k": [1, 2]}, "$.old")],
        id="renamed-object",
    ),
    pytest.param(
        {"enableDroidShield": True},
        {"enableAgentShield": False},
        [C("$.enableAgentShield", "added", None, False), C("$.enableDroidShield", "removed", True)],
        id="not-renamed-when-value-differs",
    ),
    pytest.param(
        {"p": {"a": 1}},
        {"q": {"a": 1}},
        [C("$.q", "renamed", {"a": 1}, {"a": 1}, "$.p")],
        id="rename-at-top-level-only-same-parent",
    ),
    pytest.param(
        {"s": {"old": 1}},
        {"t": {"new": 1}},
        [C("$.s", "removed", {"old": 1}), C("$.t", "added", None, {"new": 1})],
        id="no-rename-across-parents",
    ),
    pytest.param(
        {"odd key": 1}, {"odd key": 2}, [C("$['odd key']", "changed", 1, 2)], id="quoted-key"
    ),
    pytest.param({"a": [1, 2]}, {"a": [1, 2]}, [], id="equal"),
    pytest.param({"a": 1, "b": 2}, {"b": 2, "a": 1}, [], id="key-order-is-not-a-change"),
]


@pytest.mark.parametrize(("before", "after", "expected"), KIND_CASES)
def test_each_change_kind(before: Any, after: Any, expected: list[Change]) -> None:
    assert diff_revisions(before, after) == expected


SET_CASES = [
    pytest.param(
        ["b", "c"],
        ["a", "b", "c"],
        [C("$.commandAllowlist", "item_added", None, "a")],
        id="add-at-front-is-one-change",
    ),
    pytest.param(
        ["a", "b", "c"],
        ["a", "c"],
        [C("$.commandAllowlist", "item_removed", "b")],
        id="remove-from-middle",
    ),
    pytest.param(["a", "b", "c"], ["c", "a", "b"], [], id="reorder-is-not-a-change"),
    pytest.param(
        ["a", "a", "b"],
        ["a", "b"],
        [C("$.commandAllowlist", "item_removed", "a")],
        id="duplicates-as-multiset",
    ),
    pytest.param(
        ["x"],
        ["y", "z"],
        [
            C("$.commandAllowlist", "item_added", None, "y"),
            C("$.commandAllowlist", "item_added", None, "z"),
            C("$.commandAllowlist", "item_removed", "x"),
        ],
        id="replace-all",
    ),
]


@pytest.mark.parametrize(("before", "after", "expected"), SET_CASES)
def test_set_lists_compare_as_multisets(before: Any, after: Any, expected: list[Change]) -> None:
    assert diff_revisions({"commandAllowlist": before}, {"commandAllowlist": after}) == expected


@pytest.mark.parametrize(
    "path",
    [
        ("commandDenylist",),
        ("modelPolicy", "allowedModelIds"),
        ("sandbox", "network", "allowedDomains"),
        ("sandbox", "filesystem", "denyRead"),
        ("personaSettings", "enabledRoles"),
    ],
    ids=lambda p: ".".join(p),
)
def test_default_table_knows_the_spec_set_lists(path: tuple[str, ...]) -> None:
    def nest(value: Any) -> Any:
        for key in reversed(path):
            value = {key: value}
        return value

    changes = diff_revisions(nest(["b"]), nest(["a", "b"]))
    assert [(c.path, c.kind, c.after) for c in changes] == [
        ("$." + ".".join(path), "item_added", "a")
    ]


def test_unknown_list_is_compared_in_order() -> None:
    changes = diff_revisions({"mystery": ["b", "c"]}, {"mystery": ["a", "b", "c"]})
    assert changes == [C("$.mystery[0]", "item_added", None, "a")]


def _model(ident: str, **extra: Any) -> dict[str, Any]:
    return {"id": ident, "baseUrl": "https://a.example", "apiKey": SECRET_A, **extra}


KEYED_CASES = [
    pytest.param(
        [_model("custom:x"), _model("custom:y")],
        [_model("custom:y"), _model("custom:x", baseUrl="http://b.example")],
        [
            C(
                "$.customModels[?id=='custom:x'].baseUrl",
                "changed",
                "https://a.example",
                "http://b.example",
            )
        ],
        id="field-change-by-id-ignores-order",
    ),
    pytest.param(
        [_model("custom:x")],
        [_model("custom:w"), _model("custom:x")],
        [C("$.customModels[?id=='custom:w']", "item_added", None, _model("custom:w"))],
        id="insert-at-front",
    ),
    pytest.param(
        [_model("custom:x"), _model("custom:y")],
        [_model("custom:y")],
        [C("$.customModels[?id=='custom:x']", "item_removed", _model("custom:x"))],
        id="remove",
    ),
    pytest.param(
        [_model("custom:x")],
        [_model("custom:x", apiKey=SECRET_B)],
        [C("$.customModels[?id=='custom:x'].apiKey", "changed", SECRET_A, SECRET_B)],
        id="secret-rotation-shows-markers",
    ),
    pytest.param(
        [_model("a"), _model("a")],
        [_model("a"), _model("a", baseUrl="x")],
        [C("$.customModels[1].baseUrl", "changed", "https://a.example", "x")],
        id="duplicate-id-falls-back-to-order",
    ),
    pytest.param(
        [{"baseUrl": "u"}],
        [{"baseUrl": "v"}],
        [C("$.customModels[0].baseUrl", "changed", "u", "v")],
        id="missing-id-falls-back-to-order",
    ),
]


@pytest.mark.parametrize(("before", "after", "expected"), KEYED_CASES)
def test_keyed_lists_match_by_identity(before: Any, after: Any, expected: list[Change]) -> None:
    assert diff_revisions({"customModels": before}, {"customModels": after}) == expected


@pytest.mark.parametrize(
    ("list_path", "field"),
    [
        ("strictKnownMarketplaces", "repo"),
        ("mcpAutonomyUrlOverrides", "urlPattern"),
        ("svcRouterRules", "when"),
    ],
)
def test_default_keyed_lists(list_path: str, field: str) -> None:
    before = {list_path: [{field: "k1", "v": 1}, {field: "k2", "v": 1}]}
    after = {list_path: [{field: "k0", "v": 0}, {field: "k1", "v": 1}, {field: "k2", "v": 2}]}
    got = [(c.path, c.kind) for c in diff_revisions(before, after)]
    assert got == [
        (f"$.{list_path}[?{field}=='k0']", "item_added"),
        (f"$.{list_path}[?{field}=='k2'].v", "changed"),
    ]


def test_hook_entries_match_by_matcher_per_event() -> None:
    def hook(timeout: int) -> dict[str, Any]:
        return {"type": "command", "command": "audit", "timeout": timeout}

    other: dict[str, Any] = {"matcher": "Edit", "hooks": []}
    before = {"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [hook(5)]}]}}
    after = {"hooks": {"PreToolUse": [other, {"matcher": "Bash", "hooks": [hook(9)]}]}}
    assert diff_revisions(before, after) == [
        C("$.hooks.PreToolUse[?matcher=='Bash'].hooks[0].timeout", "changed", 5, 9),
        C("$.hooks.PreToolUse[?matcher=='Edit']", "item_added", None, other),
    ]


def _session_end(command: str, matcher: str = "") -> dict[str, Any]:
    return {"matcher": matcher, "hooks": [{"type": "command", "command": command}]}


SHARED_ID_CASES = [
    pytest.param(
        [_session_end("a"), _session_end("b")],
        [_session_end("b"), _session_end("a")],
        [],
        id="swap-of-two-entries-sharing-a-matcher-is-no-change",
    ),
    pytest.param(
        [_session_end("a"), _session_end("b"), _session_end("c", "Bash")],
        [_session_end("c", "Bash"), _session_end("b"), _session_end("a")],
        [],
        id="reorder-with-a-unique-matcher-too",
    ),
    pytest.param(
        [_session_end("a"), _session_end("b")],
        [_session_end("b"), _session_end("a"), _session_end("n")],
        [C("$.hooks.SessionEnd[2]", "item_added", None, _session_end("n"))],
        id="swap-plus-a-real-addition",
    ),
    pytest.param(
        [_session_end("a"), _session_end("b")],
        [_session_end("a"), _session_end("b"), _session_end("a")],
        [C("$.hooks.SessionEnd[2]", "item_added", None, _session_end("a"))],
        id="a-duplicate-entry-added-is-an-addition",
    ),
    pytest.param(
        [_session_end("a"), _session_end("b")],
        [_session_end("b")],
        [C("$.hooks.SessionEnd[0]", "item_removed", _session_end("a"))],
        id="one-of-two-removed",
    ),
    pytest.param(
        [_session_end("a"), _session_end("b")],
        [_session_end("z"), _session_end("a")],
        [C("$.hooks.SessionEnd[0].hooks[0].command", "changed", "b", "z")],
        id="swap-plus-an-edit-is-the-edit",
    ),
    pytest.param(
        [_session_end("z"), _session_end("a")],
        [_session_end("a"), _session_end("a")],
        [C("$.hooks.SessionEnd[0].hooks[0].command", "changed", "z", "a")],
        id="an-edit-in-place-reads-at-its-own-index",
    ),
    pytest.param(
        [_session_end("a"), _session_end("b", "Bash")],
        [_session_end("a"), _session_end("a"), _session_end("c", "Bash")],
        [
            C("$.hooks.SessionEnd[1]", "item_added", None, _session_end("a")),
            C("$.hooks.SessionEnd[?matcher=='Bash'].hooks[0].command", "changed", "b", "c"),
        ],
        id="unique-matcher-still-addressed-by-selector",
    ),
]


@pytest.mark.parametrize(("before", "after", "expected"), SHARED_ID_CASES)
def test_entries_sharing_an_identity_are_matched_by_content(
    before: Any, after: Any, expected: list[Change]
) -> None:
    """A keyed list whose identity repeats: an entry equal on both sides is one entry, moved."""
    got = diff_revisions({"hooks": {"SessionEnd": before}}, {"hooks": {"SessionEnd": after}})
    assert got == expected


def test_secrets_never_appear_when_a_redactor_is_given() -> None:
    raw_a = {
        "customModels": [{"id": "m", "apiKey": "sk-live-aaaaaaaaaaaaaaaaaaaaaa"}],
        "env": {"TOKEN": "plain-value-1"},
    }
    raw_b = {
        "customModels": [{"id": "m", "apiKey": "sk-live-bbbbbbbbbbbbbbbbbbbbbb"}],
        "env": {"TOKEN": "plain-value-2"},
    }
    changes = diff_revisions(raw_a, raw_b, redactor=Redactor(b"k" * 32))
    assert [c.path for c in changes] == ["$.customModels[?id=='m'].apiKey", "$.env.TOKEN"]
    assert all(is_marker(c.before) and is_marker(c.after) for c in changes)
    assert all(c.before != c.after for c in changes)
    text = render_changes_text(changes, color=False) + render_changes_markdown(changes)
    assert "aaaaaaaa" not in text and "plain-value" not in text
    assert "secret changed (fp:" in text


def test_output_is_sorted_by_path_then_kind() -> None:
    before = {"b": 1, "a": {"z": 1, "y": 1}, "commandAllowlist": ["x"]}
    after = {"b": 2, "a": {"z": 2, "y": 2}, "commandAllowlist": ["y"]}
    changes = diff_revisions(before, after)
    assert [(c.path, c.kind) for c in changes] == [
        ("$.a.y", "changed"),
        ("$.a.z", "changed"),
        ("$.b", "changed"),
        ("$.commandAllowlist", "item_added"),
        ("$.commandAllowlist", "item_removed"),
    ]


def test_changed_paths_gives_every_dotted_prefix_including_old_paths() -> None:
    changes = [
        C("$.sandbox.network.allowedDomains", "item_added", None, "x"),
        C("$.customModels[?id=='m'].baseUrl", "changed", "a", "b"),
        C("$.enableAgentShield", "renamed", True, True, "$.enableDroidShield"),
    ]
    assert changed_paths(changes) == {
        "sandbox",
        "sandbox.network",
        "sandbox.network.allowedDomains",
        "customModels",
        "customModels.baseUrl",
        "enableAgentShield",
        "enableDroidShield",
    }
    assert dotted("$.hooks.Stop[?matcher=='x'].hooks[0]") == "hooks.Stop.hooks"


# ---- the list table ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("dotted_path", "expected"),
    [
        ("commandAllowlist", ("set", "")),
        ("modelPolicy.blockedModelIds", ("set", "")),
        ("hooks.PreToolUse", ("keyed", "matcher")),
        ("hooks.PreToolUse.hooks", ("ordered", "")),
        ("customModels", ("keyed", "id")),
        ("somethingNew", ("ordered", "")),
    ],
)
def test_default_table_lookup(dotted_path: str, expected: tuple[str, str]) -> None:
    assert DEFAULT_LIST_TABLE.mode(dotted_path) == expected


def test_config_extends_and_overrides_the_table() -> None:
    table = list_table_from_config(
        {
            "sets": ["teams.*.members"],
            "keyed": {"customModels": "model"},
            "ordered": ["disabledSkills"],
        }
    )
    assert table.mode("teams.red.members") == ("set", "")
    assert table.mode("customModels") == ("keyed", "model")
    assert table.mode("disabledSkills") == ("ordered", "")
    assert table.mode("commandDenylist") == ("set", "")  # defaults kept
    before = {"teams": {"red": {"members": ["a"]}}}
    after = {"teams": {"red": {"members": ["b", "a"]}}}
    assert diff_revisions(before, after, table=table) == [
        C("$.teams.red.members", "item_added", None, "b")
    ]


def test_exact_pattern_beats_wildcard() -> None:
    table = ListTable(sets=frozenset({"a.*"}), keyed={"a.b": "id"})
    assert table.mode("a.b") == ("keyed", "id")
    assert table.mode("a.c") == ("set", "")


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        pytest.param(
            {"sets": "commandAllowlist"}, "diff_keys.sets: expected a list", id="sets-str"
        ),
        pytest.param({"sets": [""]}, "diff_keys.sets[0]: list path must be", id="empty-path"),
        pytest.param({"sets": ["a..b"]}, "empty segment", id="empty-segment"),
        pytest.param({"keyed": ["x"]}, "diff_keys.keyed: expected a mapping", id="keyed-list"),
        pytest.param({"keyed": {"x": 3}}, "diff_keys.keyed.x: identity field", id="key-int"),
        pytest.param({"set": []}, "unknown entry 'set'", id="typo"),
    ],
)
def test_bad_table_config_is_a_clear_error(extra: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace("]", r"\]")):
        list_table_from_config(extra)


# ---- rendering ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (SECRET_A, "secret fp:1a2b3c4d"),
        (
            "curl -H 'Bearer [secret fp:1a2b3c4d len:40]'",
            "\"curl -H 'Bearer [secret fp:1a2b3c4d]'\"",
        ),
        (True, "true"),
        (None, "null"),
        (["a", "b"], '["a","b"]'),
        ({"a": 1, "b": 2}, "{2 keys}"),
        (list(range(10)), "[10 items]"),
        ("\x1b[31mred", '"\\u001b[31mred"'),
        ("x" * 100, '"' + "x" * 58 + "…"),
    ],
    ids=[
        "marker",
        "inline-marker",
        "bool",
        "null",
        "short-list",
        "object",
        "long-list",
        "escape-char",
        "long-string",
    ],
)
def test_describe_value(value: Any, shown: str) -> None:
    assert describe_value(value) == shown


def test_summary_is_one_line() -> None:
    changes = [
        C("$.commandDenylist", "item_added", None, "a"),
        C("$.commandDenylist", "item_removed", "b"),
        C("$.commandDenylist", "item_removed", "c"),
        C("$.sandbox.enabled", "changed", True, False),
    ]
    assert change_summary(changes) == "commandDenylist +1 \u22122; sandbox.enabled true→false"
    assert change_summary([]) == "no changes"
    many = [C(f"$.k{i}", "added", None, 1) for i in range(9)]
    assert change_summary(many).endswith("; … 5 more")


def test_the_tally_counts_items_in_the_plural() -> None:
    changes = [
        C("$.commandDenylist", "item_removed", "b"),
        C("$.commandDenylist", "item_removed", "c"),
        C("$.commandAllowlist", "item_added", None, "a"),
        C("$.sandbox.enabled", "changed", True, False),
    ]
    last = render_changes_text(changes, color=False).splitlines()[-1]
    assert last == "4 changes: 1 changed, 1 item added, 2 items removed"


def test_text_colours_only_on_request_and_strips_escapes() -> None:
    changes = [C("$['\x1b[2Jx']", "changed", "a\x07", "b\u202e")]
    plain = render_changes_text(changes, color=False)
    assert "\x1b" not in plain and "\x07" not in plain and "\u202e" not in plain
    assert "\\u001b" in plain
    assert "\x1b[33m" in render_changes_text(changes, color=True)


def test_markdown_escapes_table_breakers_and_mentions() -> None:
    changes = [C("$.svcRouterGuidance", "changed", "a|b", "`x` <b>@alice</b> fixes #123")]
    md = render_changes_markdown(changes)
    row = md.splitlines()[2]
    assert row.count("|") - row.count("\\|") == 4  # only the cell borders remain
    assert "<b>" not in md and "@alice" not in md and "#123" not in md
    assert "\\`x\\`" in md


def test_markdown_is_cut_with_a_notice() -> None:
    changes = [C(f"$.k{i}", "added", None, i) for i in range(5)]
    md = render_changes_markdown(changes, max_rows=2)
    assert md.count("| added |") == 2
    assert "3 more changes not shown" in md


@pytest.mark.parametrize(
    ("change", "summary"),
    [
        (
            C("$.customModels[?id=='m']", "item_added", None, {"id": "m"}),
            "customModels[?id=='m'] added",
        ),
        (C("$.k.apiKey", "changed", SECRET_A, SECRET_B), "k.apiKey secret changed"),
        (C("$.new", "renamed", 1, 1, "$.old"), "old→new renamed"),
        (C("$.x", "type_changed", "1", 1), 'x "1"→1'),
        (C("$.sandbox", "removed", {"a": 1}), "sandbox removed"),
    ],
    ids=["keyed-item", "secret", "renamed", "type", "removed-object"],
)
def test_summary_of_one_change(change: Change, summary: str) -> None:
    assert change_summary([change]) == summary


_hook = st.fixed_dictionaries(
    {"matcher": st.sampled_from(["", "Bash", "*"])},
    optional={"hooks": st.sampled_from([[{"command": "a"}], [{"command": "b"}], []])},
)


@settings(max_examples=300, deadline=None)
@given(
    pair=st.lists(_hook, min_size=1, max_size=4).flatmap(
        lambda pool: st.tuples(
            st.lists(st.sampled_from(pool), max_size=6), st.lists(st.sampled_from(pool), max_size=6)
        )
    )
)
def test_hook_entries_with_repeated_matchers_are_counted_and_addressed_right(pair: Any) -> None:
    """Hook lists drawn from a small pool (equal entries, shared matchers): a reorder is no
    change; every entry added or removed is counted once ([A, A] -> [A] is one removal); and an
    index path names the entry itself, in the new list (in the old one for `item_removed`)."""
    a, b = pair
    changes = diff_revisions({"hooks": {"Stop": a}}, {"hooks": {"Stop": b}})
    if sorted(map(repr, a)) == sorted(map(repr, b)):
        assert changes == []
    entry = re.compile(r"\$\.hooks\.Stop\[(\d+|\?matcher=='[^']*')\]")
    kinds = [c.kind for c in changes if entry.fullmatch(c.path)]
    assert kinds.count("item_added") - kinds.count("item_removed") == len(b) - len(a)
    for c in changes:
        m = re.fullmatch(r"\$\.hooks\.Stop\[(\d+)\]", c.path)
        if m and c.kind == "item_removed":
            assert a[int(m.group(1))] == c.before
        elif m and c.kind == "item_added":
            assert b[int(m.group(1))] == c.after


def test_integers_beyond_64_bits_are_compared_not_refused() -> None:
    # A YAML document (a policy test case) can hold them; orjson cannot write them, which made
    # the type-strict equality and the list keys raise TypeError.
    big = 2**70
    assert strict_equal([big, {"a": big}], [big, {"a": big}])
    assert not strict_equal({"a": [big, True]}, {"a": [big, 1]})
    before = {"commandAllowlist": [[big], "x"], "unlisted": [{"a": big}]}
    after = {"commandAllowlist": [[big], "y"], "unlisted": [{"a": big}, {"a": 1}]}
    kinds = sorted((c.path, c.kind) for c in diff_revisions(before, after))
    assert kinds == [
        ("$.commandAllowlist", "item_added"),
        ("$.commandAllowlist", "item_removed"),
        ("$.unlisted[1]", "item_added"),
    ]
