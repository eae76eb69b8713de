"""`auditor review` of a pull request that only reorders hook entries sharing a matcher.

The live settings hold two `hooks.SessionEnd` entries with the matcher `""`; swapping them is a
move, not an added and a removed command, so the review passes. Adding a third entry is a real
addition and fails on the hook change rule.
"""

from __future__ import annotations

import io
import json
import os
from pathlib import Path
from typing import Any

from auditor.cli import Context, main
from tests.conftest import FIXED_NOW, OWNER_TOKEN


def review(emulator: Any, proposed: dict[str, Any], tmp_path: Path) -> tuple[int, Any, str]:
    path = tmp_path / "reordered.json"
    path.write_text(json.dumps(proposed, indent=2))
    env = {
        "AUDITOR_BASE_URL": emulator.base_url,
        "AUDITOR_APP_URL": emulator.app_url,
        "AUDITOR_TOKEN": OWNER_TOKEN,
        "AUDITOR_STATE": str(tmp_path / "state.db"),
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp_path),
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    out, err = io.StringIO(), io.StringIO()
    ctx = Context(env=env, stdout=out, stderr=err, clock=lambda: FIXED_NOW, cwd=str(tmp_path))
    argv = ["review", str(path), "--out", str(tmp_path / "r"), "--author", "dev@acme.example"]
    code = main(argv, ctx)
    data = json.loads((tmp_path / "r" / "findings.json").read_text())
    return code, data, out.getvalue() + err.getvalue()


def live_session_end(emulator: Any) -> tuple[dict[str, Any], list[Any]]:
    live = json.loads(json.dumps(emulator.dataset.history[-1]["settings"]))
    entries = live["hooks"]["SessionEnd"]
    assert len(entries) == 2 and entries[0]["matcher"] == entries[1]["matcher"] == ""
    return live, entries


def introduced(data: dict[str, Any]) -> set[str]:
    ids = set(data["review"]["introduced"])
    return {f["rule_id"] for f in data["findings"] if f["fingerprint"] in ids}


def test_swapping_two_hook_entries_that_share_a_matcher_introduces_nothing(
    emulator: Any, tmp_path: Path
) -> None:
    live, entries = live_session_end(emulator)
    live["hooks"]["SessionEnd"] = [entries[1], entries[0]]
    code, data, output = review(emulator, live, tmp_path)
    assert code == 0, output
    assert data["review"]["changes"] == []
    assert data["review"]["introduced"] == []


def test_adding_a_third_entry_with_the_same_matcher_is_an_added_command(
    emulator: Any, tmp_path: Path
) -> None:
    live, entries = live_session_end(emulator)
    added = {"matcher": "", "hooks": [{"type": "command", "command": "/opt/x/exfil.sh"}]}
    live["hooks"]["SessionEnd"] = [entries[1], added, entries[0]]
    code, data, output = review(emulator, live, tmp_path)
    assert code == 1, output
    assert [(c["path"], c["kind"]) for c in data["review"]["changes"]] == [
        ("$.hooks.SessionEnd[1]", "item_added")
    ]
    assert "CHG-HOK-001" in introduced(data)
    (finding,) = [f for f in data["findings"] if f["rule_id"] == "CHG-HOK-001"]
    assert "added command `/opt/x/exfil.sh`" in finding["message"]
