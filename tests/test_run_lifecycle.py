"""Nightly `auditor run`s over a history where a rule's first failing entry goes away.

A finding's fingerprint names the rule's first failing entry. When a new revision removes that
entry while another still fails, the next run shows the rule's finding as `persisting` (first
seen in the first run), not as resolved plus a new finding; when the rule stops failing, it is
resolved, still remembered as first seen in the first run.
"""

from __future__ import annotations

import copy
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from auditor.cli import Context, main
from auditor.emulator import start_emulator
from tests.conftest import FIXED_NOW, OWNER_TOKEN

pytestmark = pytest.mark.e2e

RULE = "BASE-MOD-003"  # a literal API key in a custom model: two models carry one


@pytest.fixture
def emu() -> Iterator[Any]:
    with start_emulator(tokens={OWNER_TOKEN: "owner"}, now=FIXED_NOW, revisions=60, repos=4) as e:
        yield e


def nightly(emu: Any, tmp_path: Path, name: str) -> dict[str, Any]:
    env = {
        "AUDITOR_BASE_URL": emu.base_url,
        "AUDITOR_APP_URL": emu.app_url,
        "AUDITOR_TOKEN": OWNER_TOKEN,
        "AUDITOR_STATE": str(tmp_path / "state.db"),
    }
    out, err = io.StringIO(), io.StringIO()
    ctx = Context(env=env, stdout=out, stderr=err, clock=lambda: FIXED_NOW, cwd=str(tmp_path))
    code = main(["run", "--soft-fail", "--out", str(tmp_path / name)], ctx)
    assert code == 0, err.getvalue()
    data: dict[str, Any] = json.loads((tmp_path / name / "findings.json").read_text())
    return data


def save_without_models(emu: Any, *ids: str) -> None:
    """A new revision in the served history: the latest settings without these custom models."""
    with emu.dataset.lock:
        last = emu.dataset.history[-1]
        settings = copy.deepcopy(last["settings"])
        settings["customModels"] = [m for m in settings["customModels"] if m["id"] not in ids]
        emu.dataset.history.append({**last, "revision": last["revision"] + 1, "settings": settings})


def rule_finding(data: dict[str, Any]) -> dict[str, Any]:
    (finding,) = [f for f in data["findings"] if f["rule_id"] == RULE]
    return finding


def models_named(finding: dict[str, Any]) -> set[str]:
    return {e["path"].split("'")[1] for e in finding["evidence"]}


def test_removing_the_entry_a_fingerprint_names_keeps_the_finding_persisting(
    emu: Any, tmp_path: Path
) -> None:
    first = nightly(emu, tmp_path, "night-1")
    before = rule_finding(first)
    assert before["status"] == "fail"
    assert models_named(before) == {"custom:acme-gpt", "custom:anthropic-direct"}

    save_without_models(emu, "custom:acme-gpt")
    second = nightly(emu, tmp_path, "night-2")
    after = rule_finding(second)
    assert models_named(after) == {"custom:anthropic-direct"}
    assert after["fingerprint"] != before["fingerprint"]  # names the entry still failing
    assert (after["status"], after["lifecycle"]) == ("fail", "persisting")
    assert RULE not in {r["rule_id"] for r in second["resolved"]}

    save_without_models(emu, "custom:anthropic-direct")
    third = nightly(emu, tmp_path, "night-3")
    assert rule_finding(third)["status"] in ("pass", "not_applicable")
    (resolved,) = [r for r in third["resolved"] if r["rule_id"] == RULE]
    assert resolved["fingerprint"] == after["fingerprint"]
    assert resolved["first_seen_run"] == first["run"]["id"]
