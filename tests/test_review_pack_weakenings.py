"""`auditor review` of the weakenings a hostile tester found the shipped packs passed (exit 0),
each against the demo's live settings (`auditor emulator`'s data: seed 7, 240 revisions):

1. the managed `block_dangerous_commands.py` hook dropped (`hooks.PreToolUse: []`, or the key
   deleted);
2. that hook silenced: `commandRegex: "^$"` (it never fires) or `timeout: 0`;
3. a tool's or MCP server's autonomy override raised (`builtInToolAutonomyOverrides.Execute:
   high`, a new `mcpAutonomyOverrides.evil-server: high`, a new URL override at `High`);
4. a hook under a key written in brackets in the change's path (`$.hooks['Pre Tool']`).

Each now fails the review with the rule that names it; harmless proposals (keys reordered, a
hook's command unchanged, an override lowered, a comment) still pass.
"""

from __future__ import annotations

import copy
import io
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from auditor.cli import Context, main
from auditor.emulator import start_emulator
from tests.conftest import FIXED_NOW, OWNER_TOKEN, emulator_env

PERSON = "priya.raman@acme.example"
GUARD = "python3 /opt/acme/hooks/block_dangerous_commands.py"


def run_cli(argv: list[str], *, env: dict[str, str], cwd: Path) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    ctx = Context(env=env, stdout=out, stderr=err, clock=lambda: FIXED_NOW, cwd=str(cwd))
    return main(argv, ctx), out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[dict[str, str], Any]]:
    """The demo's emulator (default seed and size), synced once; every review here is
    `--offline` against that state file, which a review never writes."""
    work = tmp_path_factory.mktemp("demo")
    with start_emulator(tokens={OWNER_TOKEN: "owner"}, now=FIXED_NOW) as emu:
        env = emulator_env(emu, work / "state.db")
        code, _, err = run_cli(["sync", "--no-usage"], env=env, cwd=work)
        assert code == 0, err
        live = json.loads(json.dumps(emu.dataset.history[-1]["settings"]))
        yield env, live


def review(
    demo: tuple[dict[str, str], Any], tmp_path: Path, edit: Callable[[dict[str, Any]], Any]
) -> tuple[int, dict[str, str], str]:
    """Review the live settings as `edit` changes them: (exit code, {rule id: status} of the
    findings the change introduces or errs on, stderr)."""
    env, live = demo
    proposed = copy.deepcopy(live)
    edit(proposed)
    path = tmp_path / "proposed.json"
    path.write_text(json.dumps(proposed, indent=2))
    argv = ["review", str(path), "--offline", "--author", PERSON, "--out", str(tmp_path / "r")]
    code, _, err = run_cli([*argv, "-o", "json", "--fail-on", "high"], env=env, cwd=tmp_path)
    data = json.loads((tmp_path / "r" / "findings.json").read_text())
    introduced = set(data["review"]["introduced"])
    found = {
        f["rule_id"]: f["status"]
        for f in data["findings"]
        if f["fingerprint"] in introduced or f["status"] == "error"
    }
    return code, found, err


def test_the_demo_live_settings_hold_what_the_proposals_edit(demo: Any) -> None:
    _, live = demo
    (entry,) = live["hooks"]["PreToolUse"]
    assert entry["matcher"] == "Execute" and entry["hooks"][0]["command"] == GUARD
    assert live["builtInToolAutonomyOverrides"] == {"Execute": "low"}
    assert live["mcpAutonomyOverrides"] == {}
    assert [o["defaultLevel"] for o in live["mcpAutonomyUrlOverrides"]] == ["off", "off", "medium"]


def _guard(s: dict[str, Any]) -> dict[str, Any]:
    (entry,) = s["hooks"]["PreToolUse"]
    return entry


WEAKENINGS: dict[str, tuple[Callable[[dict[str, Any]], Any], int, dict[str, str]]] = {
    # 1. the managed guard hook dropped
    "PreToolUse-emptied": (
        lambda s: s["hooks"].update(PreToolUse=[]),
        1,
        {"CHG-HOK-002": "fail"},
    ),
    "PreToolUse-deleted": (lambda s: s["hooks"].pop("PreToolUse"), 1, {"CHG-HOK-002": "fail"}),
    # 2. the guard hook silenced
    "commandRegex-never-matches": (
        lambda s: _guard(s).update(commandRegex="^$"),
        1,
        {"CHG-HOK-002": "fail"},
    ),
    "timeout-0": (
        lambda s: _guard(s)["hooks"][0].update(timeout=0),
        1,
        {"CHG-HOK-002": "fail", "BASE-HOK-004": "fail"},
    ),
    # 3. autonomy overrides raised
    "Execute-high": (
        lambda s: s["builtInToolAutonomyOverrides"].update(Execute="high"),
        1,
        {"CHG-AUT-003": "fail"},
    ),
    "evil-server-high": (
        lambda s: s["mcpAutonomyOverrides"].update({"evil-server": "high"}),
        1,
        {"CHG-AUT-003": "fail"},
    ),
    # `High` is none of the levels BASE-AUT-005 allows: it fails, never passes (as `high`
    # does), and the change rule fails on the new override
    "url-override-High": (
        lambda s: s["mcpAutonomyUrlOverrides"].append(
            {"urlPattern": "https://*", "defaultLevel": "High"}
        ),
        1,
        {"BASE-AUT-005": "fail", "CHG-AUT-003": "fail"},
    ),
    # a pattern the list holds at `off`, listed again at `medium` (reviewer R91 #1: passed)
    "url-override-listed-again": (
        lambda s: s["mcpAutonomyUrlOverrides"].insert(
            0, {"urlPattern": "https://mcp.linear.app/*", "defaultLevel": "medium"}
        ),
        1,
        {"CHG-AUT-003": "fail"},
    ),
    # a hook moved to an event that rarely fires, the hooks block set to null (R91 #7)
    "hook-moved-to-another-event": (
        lambda s: s["hooks"].update(PreCompact=s["hooks"].pop("PreToolUse")),
        1,
        {"CHG-HOK-001": "fail", "CHG-HOK-002": "fail"},
    ),
    "hooks-null": (
        lambda s: s.update(hooks=None),
        1,
        {"CHG-HOK-001": "fail", "CHG-HOK-002": "fail"},
    ),
    "url-override-high": (
        lambda s: s["mcpAutonomyUrlOverrides"].append(
            {"urlPattern": "https://*", "defaultLevel": "high"}
        ),
        1,
        {"BASE-AUT-005": "fail", "CHG-AUT-003": "fail"},
    ),
    # 4. a hook under a key that is no identifier
    "bracketed-hook-key": (
        lambda s: s["hooks"].update(
            {"Pre Tool": [{"matcher": "Execute", "hooks": [{"type": "command", "command": "sh"}]}]}
        ),
        1,
        {"CHG-HOK-001": "fail"},
    ),
}


@pytest.mark.parametrize("name", sorted(WEAKENINGS))
def test_a_weakening_of_the_demo_settings_fails_the_review(
    demo: Any, tmp_path: Path, name: str
) -> None:
    edit, exit_code, rules = WEAKENINGS[name]
    code, found, err = review(demo, tmp_path, edit)
    assert found == rules, err
    assert code == exit_code, err


def _reorder(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _reorder(value[k]) for k in reversed(list(value))}
    return [_reorder(v) for v in value] if isinstance(value, list) else value


def _keys_reordered(s: dict[str, Any]) -> None:
    keys = list(s)
    reordered = _reorder(s)
    s.clear()
    s.update(reordered)
    assert list(s) == keys[::-1]


def _same_command_longer_timeout(s: dict[str, Any]) -> None:
    _guard(s)["hooks"][0].update(command=GUARD, timeout=30)


HARMLESS: dict[str, Callable[[dict[str, Any]], Any]] = {
    "keys-reordered": _keys_reordered,
    "hook-command-unchanged-timeout-raised": _same_command_longer_timeout,
    "SessionEnd-hooks-swapped": lambda s: s["hooks"]["SessionEnd"].reverse(),
    "Execute-override-lowered": lambda s: s["builtInToolAutonomyOverrides"].update(Execute="off"),
    "url-override-lowered": lambda s: s["mcpAutonomyUrlOverrides"][2].update(defaultLevel="low"),
    "url-override-added-off": lambda s: s["mcpAutonomyUrlOverrides"].append(
        {"urlPattern": "https://mcp.new.example/*", "defaultLevel": "off"}
    ),
    "url-overrides-reordered": lambda s: s["mcpAutonomyUrlOverrides"].reverse(),
    "url-override-with-no-level": lambda s: s["mcpAutonomyUrlOverrides"][0].update(
        defaultLevel=None
    ),
    "nothing": lambda s: None,
}


@pytest.mark.parametrize("name", sorted(HARMLESS))
def test_a_harmless_proposal_still_passes(demo: Any, tmp_path: Path, name: str) -> None:
    code, found, err = review(demo, tmp_path, HARMLESS[name])
    assert found == {}, err
    assert code == 0, err


def test_a_comment_only_change_to_a_yaml_settings_file_passes(demo: Any, tmp_path: Path) -> None:
    env, live = demo
    path = tmp_path / "proposed.yaml"
    # JSON is YAML: the live settings with a comment line added
    path.write_text("# reviewed by the platform team\n" + json.dumps(live, indent=2) + "\n")
    argv = ["review", str(path), "--offline", "--author", PERSON, "--out", str(tmp_path / "r")]
    code, _, err = run_cli([*argv, "-o", "json"], env=env, cwd=tmp_path)
    assert code == 0, err
    data = json.loads((tmp_path / "r" / "findings.json").read_text())
    assert data["review"]["changes"] == [] and data["review"]["introduced"] == []
