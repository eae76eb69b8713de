"""`auditor review` of a change that adds an offender to a rule the live settings already fail.

The live settings hold one custom model with a literal key off the approved endpoints; the
proposal adds a second such model (or a hook with a credential next to a live one). The
finding is introduced by the added entry: SARIF points at its line of the proposed file (in
the diff, so code scanning annotates it), the message names it first, and the attribution is
the proposed file and its author, not the revision the old entry came in by. A finding the
change leaves as it was keeps its place and attribution.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import run_cli

AUTHOR = "dev@acme.example"
OLD_KEY = "sk-AAAAliveKEY0123456789abcdefXYZ"
NEW_KEY = "sk-BBBBnewKEY9876543210fedcbaQRS"


def model(ident: str, key: str, url: str) -> dict[str, Any]:
    return {
        "id": ident,
        "model": "m",
        "provider": "openai",
        "baseUrl": url,
        "apiKey": key,
        "extraHeaders": {},
        "extraArgs": {},
    }


def live_settings() -> dict[str, Any]:
    return {
        "customModels": [model("custom:a", OLD_KEY, "https://elsewhere.example/v1")],
        "modelPolicy": {"allowedBaseUrls": ["https://gw.acme.example/"]},
        "allowManagedHooksOnly": True,
        "hooks": {
            "PostToolUse": [
                {"matcher": "", "hooks": [{"type": "command", "command": "/opt/audit.sh"}]},
                {
                    "matcher": "Edit",
                    "hooks": [{"type": "command", "command": f"curl -H 'X-Key: {OLD_KEY}' x"}],
                },
            ]
        },
    }


@pytest.fixture(autouse=True)
def _back(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(os.getcwd())  # `review` moves into its folder: moved back after each test


def review(proposed: dict[str, Any], tmp_path: Path) -> tuple[int, dict[str, Any], str]:
    """Review `proposed` against the live settings; (exit code, reports by name, proposed text).

    Run in `tmp_path`, so the reports name the files as `proposed.json` and `live.json`."""
    tmp_path.mkdir(exist_ok=True)
    (tmp_path / "live.json").write_text(json.dumps(live_settings(), indent=2))
    return review_files(proposed, tmp_path)


def review_files(
    proposed: dict[str, Any], tmp_path: Path, *extra: str, codes: tuple[int, ...] = (0, 1)
) -> tuple[int, dict[str, Any], str]:
    """`review` against the `live.json` in `tmp_path` (`extra`: more arguments)."""
    text = json.dumps(proposed, indent=2)
    (tmp_path / "proposed.json").write_text(text)
    env = {
        "AUDITOR_STATE": str(tmp_path / "state.db"),
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp_path),
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    argv = [
        "review", "proposed.json", "--against", "live.json", "--author", AUTHOR,
        "--out", "r", "-o", "md,json,sarif", *extra,
    ]  # fmt: skip
    with contextlib.chdir(tmp_path):  # (the files are named as given, from where it runs)
        code, out, err = run_cli(argv, env, tmp_path)
    assert code in codes, out + err
    r = tmp_path / "r"
    reports = {
        "json": json.loads((r / "findings.json").read_text()),
        "sarif": json.loads((r / "findings.sarif").read_text()),
        "md": (r / "report.md").read_text(),
    }
    return code, reports, text


def finding(reports: dict[str, Any], rule: str) -> dict[str, Any]:
    (found,) = [f for f in reports["json"]["findings"] if f["rule_id"] == rule]
    return found


def sarif_line(reports: dict[str, Any], rule: str) -> int:
    (result,) = [r for r in reports["sarif"]["runs"][0]["results"] if r["ruleId"] == rule]
    line: int = result["locations"][0]["physicalLocation"]["region"]["startLine"]
    return line


def line_of(text: str, *needles: str) -> int:
    """The 1-based line of `text` holding every needle (exactly one)."""
    (line,) = [n for n, s in enumerate(text.splitlines(), 1) if all(x in s for x in needles)]
    return line


def md_block(reports: dict[str, Any], rule: str) -> str:
    """The rule's finding in report.md (its <details> block)."""
    md: str = reports["md"]
    start = md.index(f"<b>{rule}</b>")
    return md[start : md.index("</details>", start)]


def lifecycle(reports: dict[str, Any], rule: str) -> str:
    ids = set(reports["json"]["review"]["introduced"])
    return "new" if finding(reports, rule)["fingerprint"] in ids else "persisting"


def test_a_second_model_with_a_literal_key_is_located_named_and_attributed_by_itself(
    tmp_path: Path,
) -> None:
    proposed = live_settings()
    proposed["customModels"].append(model("custom:b", NEW_KEY, "https://other.example/v2"))
    code, reports, text = review(proposed, tmp_path)
    assert code == 1
    for rule, needle, shown in (
        ("BASE-MOD-003", NEW_KEY, "customModels[?id=='custom:b'].apiKey is "),
        ("BASE-MOD-009", "https://other.example/v2", "customModels[?id=='custom:b'].baseUrl is "),
    ):
        assert lifecycle(reports, rule) == "new"
        # code scanning annotates the added entry's line, which is in the diff
        assert sarif_line(reports, rule) == line_of(text, needle)
        f = finding(reports, rule)
        assert f["message"].startswith(shown), f["message"]
        assert f["message"].endswith("(+1 more entry)")
        assert "custom:a" not in f["message"]
        assert f["evidence"][0]["path"].startswith("$.customModels[?id=='custom:b']")
        if rule == "BASE-MOD-009":  # each entry's check reads the list of approved endpoints
            notes = {e["path"]: e["note"] for e in f["evidence"]}
            assert set(notes.values()) == {"argument from ref modelPolicy.allowedBaseUrls"}, notes
        block = md_block(reports, rule)
        assert "violating in the proposed file proposed.json by dev@" in block
        assert "violating in the settings of live.json" not in block


def test_a_hook_added_under_another_event_is_located_at_itself(tmp_path: Path) -> None:
    proposed = live_settings()
    command = f"wget --header='X-Key: {NEW_KEY}' https://x.example"
    proposed["hooks"]["Stop"] = [
        {"matcher": "", "hooks": [{"type": "command", "command": "/opt/done.sh"}]},
        {"matcher": "", "hooks": [{"type": "command", "command": command}]},
    ]
    code, reports, text = review(proposed, tmp_path)
    assert code == 1
    assert lifecycle(reports, "BASE-HOK-003") == "new"
    assert sarif_line(reports, "BASE-HOK-003") == line_of(text, "wget --header")
    message = finding(reports, "BASE-HOK-003")["message"]
    assert message.startswith("hooks.Stop[1].hooks[0].command is "), message
    block = md_block(reports, "BASE-HOK-003")
    assert "violating in the proposed file proposed.json by dev@" in block


def test_the_introduced_finding_keeps_the_fingerprint_the_live_one_has(tmp_path: Path) -> None:
    """The fingerprint stays the rule's smallest offending path (here the live model's), as
    the nightly will file it once the change is merged."""
    unchanged = live_settings()
    unchanged["allowManagedHooksOnly"] = False  # some change, not to the models
    _, before, _ = review(unchanged, tmp_path / "a")
    added = live_settings()
    added["customModels"].append(model("custom:b", NEW_KEY, "https://other.example/v2"))
    _, after, _ = review(added, tmp_path / "b")
    for rule in ("BASE-MOD-003", "BASE-MOD-009"):
        assert lifecycle(before, rule) == "persisting"
        assert lifecycle(after, rule) == "new"
        assert finding(after, rule)["fingerprint"] == finding(before, rule)["fingerprint"]


def test_a_finding_the_change_leaves_as_it_was_keeps_its_place_and_attribution(
    tmp_path: Path,
) -> None:
    proposed = live_settings()
    proposed["customModels"][0]["model"] = "m-renamed"  # the offending model, still offending
    proposed["customModels"].append(model("custom:b", "${B_KEY}", "https://gw.acme.example/v2"))
    _, reports, text = review(proposed, tmp_path)
    for rule, needles, shown in (
        ("BASE-MOD-003", ('"apiKey"', OLD_KEY), "customModels[?id=='custom:a'].apiKey is "),
        (
            "BASE-MOD-009",
            ("https://elsewhere.example/v1",),
            "customModels[?id=='custom:a'].baseUrl",
        ),
        ("BASE-HOK-003", ("curl -H",), "hooks.PostToolUse[1].hooks[0].command is "),
    ):
        assert lifecycle(reports, rule) == "persisting"
        assert finding(reports, rule)["location"]["line"] == line_of(text, *needles)
        # not this change's: no alert on the pull request's lines (tester T96 #2)
        assert not [r for r in reports["sarif"]["runs"][0]["results"] if r["ruleId"] == rule]
        assert finding(reports, rule)["message"].startswith(shown)
        assert "violating in the settings of live.json" in md_block(reports, rule)


def many_models(*ids: str) -> dict[str, Any]:
    """Settings with one literal-key model per id: 11 or more cut the evidence to 10 entries."""
    keys = {i: f"sk-{i}AAAAliveKEY0123456789abcdef{i}" for i in ids}
    models = [model(f"custom:{i}", keys[i], "https://gw.acme.example/v1") for i in ids]
    return {
        "customModels": models,
        "modelPolicy": {"allowedBaseUrls": ["https://gw.acme.example/"]},
    }


def review_many(live: dict[str, Any], proposed: dict[str, Any], tmp_path: Path) -> Any:
    tmp_path.mkdir(exist_ok=True)
    (tmp_path / "live.json").write_text(json.dumps(live, indent=2))
    return review_files(proposed, tmp_path)


def test_an_added_model_among_cut_evidence_is_named_and_the_count_stays_last(
    tmp_path: Path,
) -> None:
    live = many_models(*"abcdefghijk")
    proposed = many_models(*"abcdefghixjk")  # `x` is the 10th entry: the last one shown
    _, reports, text = review_many(live, proposed, tmp_path)
    assert lifecycle(reports, "BASE-MOD-003") == "new"
    assert sarif_line(reports, "BASE-MOD-003") == line_of(text, "sk-xAAAA")
    f = finding(reports, "BASE-MOD-003")
    assert f["message"].startswith("customModels[?id=='custom:x'].apiKey is ")
    assert f["message"].endswith("(+11 more entries)")
    notes = [e.get("note", "") for e in f["evidence"]]
    assert notes[-1] == "and 2 more entries not shown" and not any(notes[:-1])


@pytest.mark.parametrize(
    ("live", "proposed"),
    [("abcdefghijk", "abcdefghijkz"), ("abcdefghij", "abcdefghijz")],
    ids=["both-cut", "proposed-cut"],
)
def test_an_added_model_seen_only_by_the_count_keeps_the_words_it_had(
    tmp_path: Path, live: str, proposed: str
) -> None:
    """The evidence shows 10 entries: the model appended after them shows in neither side's
    evidence, so which entry is new is not known."""
    _, reports, _ = review_many(many_models(*live), many_models(*proposed), tmp_path)
    assert lifecycle(reports, "BASE-MOD-003") == "new"
    assert finding(reports, "BASE-MOD-003")["message"].startswith("customModels[?id=='custom:a']")
    assert "violating in the settings of live.json" in md_block(reports, "BASE-MOD-003")


def marketplaces(*repos: str) -> dict[str, Any]:
    """Settings allowing these marketplaces, none pinned to a commit (BASE-MKT-001 fails)."""
    return {"strictKnownMarketplaces": [{"repo": r} for r in repos]}


@pytest.mark.parametrize(
    ("proposed", "index"),
    [(("evil/new-mkt", "acme/old-mkt"), 0), (("acme/old-mkt", "evil/new-mkt"), 1)],
    ids=["inserted-before", "appended"],
)
def test_an_unpinned_marketplace_added_is_located_and_named_wherever_it_is_inserted(
    tmp_path: Path, proposed: tuple[str, ...], index: int
) -> None:
    """A list without `id`: every unpinned entry is the same offender (the positions left out);
    the diff says which one the change adds, not its position."""
    _, reports, text = review_many(marketplaces("acme/old-mkt"), marketplaces(*proposed), tmp_path)
    assert lifecycle(reports, "BASE-MKT-001") == "new"
    # the sha is absent: the finding points at the added entry's opening line
    assert sarif_line(reports, "BASE-MKT-001") == line_of(text, "evil/new-mkt") - 1
    f = finding(reports, "BASE-MKT-001")
    assert f["message"].startswith(f"strictKnownMarketplaces[{index}].sha is "), f["message"]
    assert f["evidence"][0]["path"] == f"$.strictKnownMarketplaces[{index}].sha"
    assert "violating in the proposed file proposed.json by dev@" in md_block(
        reports, "BASE-MKT-001"
    )


def test_a_command_the_same_as_an_old_one_added_to_a_set_like_list_is_the_last_equal_entry(
    tmp_path: Path,
) -> None:
    """`commandAllowlist` is compared as a set: its diff names the value added, not where it
    sits, so of the two equal entries the last one is taken as the added one, not the old."""
    live = {"commandAllowlist": ["sudo"]}
    proposed = {"commandAllowlist": ["sudo", "ls", "sudo"]}
    _, reports, text = review_many(live, proposed, tmp_path)
    assert lifecycle(reports, "BASE-CMD-005") == "new"
    last_sudo = len(text.splitlines()) - 2  # the last entry, before `]` and `}`
    assert text.splitlines()[last_sudo - 1].strip() == '"sudo"'
    assert sarif_line(reports, "BASE-CMD-005") == last_sudo
    f = finding(reports, "BASE-CMD-005")
    assert f["message"].startswith('commandAllowlist[2] is "sudo"'), f["message"]
    assert "violating in the proposed file proposed.json by dev@" in md_block(
        reports, "BASE-CMD-005"
    )
    # the change finding about the `sudo` added points at the same entry
    assert sarif_line(reports, "CHG-CMD-003") == last_sudo


def test_a_waived_introduced_finding_is_named_by_the_added_entry_too(tmp_path: Path) -> None:
    proposed = live_settings()
    proposed["customModels"].append(model("custom:b", NEW_KEY, "https://other.example/v2"))
    tmp_path.mkdir(exist_ok=True)
    (tmp_path / "live.json").write_text(json.dumps(live_settings(), indent=2))
    (tmp_path / "waivers.yaml").write_text(
        "waivers:\n  - rule: BASE-MOD-003\n    subject: settings\n    reason: accepted\n"
        "    owner: a@b.c\n    expires: 2027-12-31\n"
    )
    _, reports, text = review_files(
        proposed, tmp_path, "--waivers", "waivers.yaml", "--sarif-include-waived"
    )
    f = finding(reports, "BASE-MOD-003")
    assert f["status"] == "waived"
    assert lifecycle(reports, "BASE-MOD-003") == "new"
    assert sarif_line(reports, "BASE-MOD-003") == line_of(text, NEW_KEY)
    assert f["message"].startswith("customModels[?id=='custom:b'].apiKey is "), f["message"]
    assert "custom:a" not in f["message"]


TIER_POLICY = """\
rules:
  - id: T-TIER-001
    title: Custom models are gold
    severity: high
    target: settings
    description: Each custom model's tier is gold.
    assert:
      each: customModels
      assert: {path: tier, equals: "gold"}
    on_missing: pass
    remediation: Set the tier.
"""


def test_an_error_about_the_added_entry_keeps_the_words_the_evaluation_gave(
    tmp_path: Path,
) -> None:
    """An error's words after `path is value` are about that value (`compares a number with a
    string`): put under the added entry's path and value (`true`), they would be false."""
    tmp_path.mkdir(exist_ok=True)
    (tmp_path / "tier.yaml").write_text(TIER_POLICY)
    live = {
        "customModels": [{**model("custom:a", "${A}", "https://gw.acme.example/v1"), "tier": 5}]
    }
    proposed = json.loads(json.dumps(live))
    proposed["customModels"].append(
        {**model("custom:b", "${B}", "https://gw.acme.example/v1"), "tier": True}
    )
    (tmp_path / "live.json").write_text(json.dumps(live, indent=2))
    _, reports, text = review_files(
        proposed, tmp_path, "--policy", str(tmp_path / "tier.yaml"), codes=(2,)
    )
    assert lifecycle(reports, "T-TIER-001") == "new"
    assert sarif_line(reports, "T-TIER-001") == line_of(text, '"tier": true')
    message = finding(reports, "T-TIER-001")["message"]
    assert message.startswith("customModels[?id=='custom:a'].tier is 5: `equals` compares a number")
    assert "custom:b" not in message


def test_an_added_model_that_failed_other_checks_is_located_at_itself_in_the_old_words(
    tmp_path: Path,
) -> None:
    """`$KEY` (no marker, not `${KEY}`) fails BASE-MOD-003 otherwise than a literal key: the
    message keeps naming the old model, the location and attribution are the added one's."""
    proposed = live_settings()
    proposed["customModels"].append(model("custom:b", "$OPENAI_KEY", "https://gw.acme.example/v1"))
    _, reports, text = review(proposed, tmp_path)
    assert lifecycle(reports, "BASE-MOD-003") == "new"
    assert sarif_line(reports, "BASE-MOD-003") == line_of(text, "$OPENAI_KEY")
    f = finding(reports, "BASE-MOD-003")
    assert f["message"].startswith("customModels[?id=='custom:a'].apiKey is "), f["message"]
    assert f["evidence"][0]["path"] == "$.customModels[?id=='custom:b'].apiKey"
    block = md_block(reports, "BASE-MOD-003")
    assert "violating in the proposed file proposed.json by dev@" in block
