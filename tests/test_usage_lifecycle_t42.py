"""A usage finding is `resolved` only when its rule judged its day again and it no longer
fails (tester T42): a day that left the 30-day window was reported as resolved (`0 new, 1
resolved`), and so were the open usage findings of a run whose token the analytics refused
(`12 new, 4 resolved`). Now they are said apart, in stdout, findings.json and report.md. And
`auditor policy test` reads a case's usage rows as the sync reads the API's (T42 #9): a
negative count passed in the test, a string count was an `error`, where a run reads both as
absent (`unknown`). Run as a user runs them: the CLI against the emulator."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from auditor.emulator import start_emulator
from tests.conftest import OWNER_TOKEN, emulator_env, run_cli

REPO = Path(__file__).resolve().parents[1]
USAGE_PACK = str(REPO / "policies" / "usage.yaml")
SCHEMA = json.loads((REPO / "auditor" / "schemas" / "findings.schema.json").read_text())
ROLELESS_TOKEN = "test-auditor-token-0123456789"
# The emulator's clock: its rogue MCP server `postgres-prod` is used 9 and 8 days before, on
# 2026-09-22 and 2026-09-23 (USE-MCP-001 fails on both).
EMULATOR_NOW = datetime(2026, 10, 1, 12, 0, tzinfo=UTC)
ROGUE_DAYS = ("usage@2026-09-22", "usage@2026-09-23")


@pytest.fixture
def emu() -> Iterator[Any]:
    tokens = {OWNER_TOKEN: "owner", ROLELESS_TOKEN: "auditor"}
    with start_emulator(tokens=tokens, now=EMULATOR_NOW, revisions=40, repos=2) as e:
        yield e


def _run(env: dict[str, str], tmp_path: Path, out: str, now: datetime) -> tuple[int, str, Any, str]:
    """`auditor run --policy usage.yaml --out tmp/OUT` at `now`: exit code, stdout,
    findings.json (checked against its schema), report.md."""
    where = tmp_path / out
    argv = ["run", "--policy", USAGE_PACK, "--out", str(where), "-o", "json,md,html"]
    code, stdout, err = run_cli(argv, env, tmp_path, now)
    assert code in (0, 1, 2), err
    data = json.loads((where / "findings.json").read_text())
    jsonschema.validate(data, SCHEMA)
    return code, stdout, data, (where / "report.md").read_text()


def _keys(records: list[Any]) -> set[tuple[str, str]]:
    return {(r["rule_id"], r["subject_key"]) for r in records}


def _failing(data: Any, rule: str) -> set[str]:
    return {
        f["subject"]["key"]
        for f in data["findings"]
        if f["rule_id"] == rule and f["status"] == "fail"
    }


@pytest.mark.e2e
def test_a_usage_finding_whose_day_leaves_the_window_is_not_resolved(
    emu: Any, tmp_path: Path
) -> None:
    env = emulator_env(emu, tmp_path / "state.db")
    first_night = datetime(2026, 10, 22, 3, 0, tzinfo=UTC)  # window 2026-09-22..2026-10-21
    code, _, first, _ = _run(env, tmp_path, "out1", first_night)
    assert code == 1
    assert set(ROGUE_DAYS) <= _failing(first, "USE-MCP-001")
    # the next night 2026-09-22 leaves the window (2026-09-23..2026-10-22): nothing was fixed
    code, stdout, second, md = _run(env, tmp_path, "out2", datetime(2026, 10, 23, 3, 0, tzinfo=UTC))
    assert code == 1 and second["complete"] is True
    assert _failing(second, "USE-MCP-001") == {ROGUE_DAYS[1]}
    assert ("USE-MCP-001", ROGUE_DAYS[0]) not in _keys(second["resolved"])
    assert not any(r["subject_key"] == ROGUE_DAYS[0] for r in second["resolved"])
    left = second["left_window"]
    assert ("USE-MCP-001", ROGUE_DAYS[0]) in _keys(left)
    assert all(r["subject_key"] < "usage@2026-09-23" for r in left)  # only the day that left
    (record,) = [r for r in left if r["rule_id"] == "USE-MCP-001"]
    assert record["first_seen_run"] == first["run"]["id"]  # its record is not lost
    assert second["summary"]["left_window"] == len(left)
    assert second["summary"]["resolved"] == len(second["resolved"])
    line = next(x for x in stdout.splitlines() if x.startswith("since the previous run"))
    assert f"{len(second['resolved'])} resolved, {len(left)} left the usage window" in line
    assert f"**Left the usage window:** {len(left)}" in md
    assert f"Left the usage window since the previous run: {len(left)}</summary>" in md
    assert "- USE-MCP-001 (high) — usage@&#8203;2026-09-22\n" in md  # (@ mentions escaped)
    resolved_md = md.partition("Resolved since the previous run")[2].partition("</details>")[0]
    assert "2026-09-22" not in resolved_md
    html = (tmp_path / "out2" / "report.html").read_text()
    section = html.partition(f"<h3>Left the usage window since the previous run ({len(left)})")[2]
    assert '<code>USE-MCP-001</code></td><td class="wrap">usage@2026-09-22' in section
    resolved_html = html.partition("<h3>Resolved since the previous run")[2].partition("</table>")
    assert "usage@2026-09-22" not in resolved_html[0]
    # the night after, it is gone: listed once, not carried on
    code, stdout, third, _ = _run(env, tmp_path, "out3", datetime(2026, 10, 24, 3, 0, tzinfo=UTC))
    assert ("USE-MCP-001", ROGUE_DAYS[0]) not in _keys(third.get("left_window", []))
    assert ("USE-MCP-001", ROGUE_DAYS[1]) in _keys(third["left_window"])
    assert not any(r["subject_key"] in ROGUE_DAYS for r in third["resolved"])


@pytest.mark.e2e
def test_usage_findings_the_run_could_not_read_again_are_not_resolved(
    emu: Any, tmp_path: Path
) -> None:
    """The token loses the manager role: the run is incomplete (exit 2), its usage rules
    `unknown` on the subject `usage`; the open usage findings of the run before were not
    evaluated, not resolved."""
    night = datetime(2026, 10, 2, 3, 0, tzinfo=UTC)
    env = emulator_env(emu, tmp_path / "state.db")
    code, _, first, _ = _run(env, tmp_path, "out1", night)
    assert code == 1
    open_before = {
        (f["rule_id"], f["subject"]["key"])
        for f in first["findings"]
        if f["subject"]["kind"] == "usage" and f["status"] in ("fail", "error", "unknown")
    }
    assert ("USE-MCP-001", ROGUE_DAYS[0]) in open_before
    refused = emulator_env(emu, tmp_path / "state.db", ROLELESS_TOKEN)
    code, stdout, second, md = _run(refused, tmp_path, "out2", night)
    assert code == 2 and second["complete"] is False
    assert second["resolved"] == [] and second["summary"]["resolved"] == 0
    assert _keys(second["not_reevaluated"]) == open_before
    assert second["summary"]["not_reevaluated"] == len(open_before)
    assert "left_window" not in second
    line = next(x for x in stdout.splitlines() if x.startswith("since the previous run"))
    assert f", 0 resolved, {len(open_before)} not evaluated again" in line
    assert f"**Not evaluated again:** {len(open_before)}" in md
    assert f"Not evaluated again by this run: {len(open_before)}</summary>" in md
    html = (tmp_path / "out2" / "report.html").read_text()
    assert f"<h3>Not evaluated again by this run ({len(open_before)})</h3>" in html
    # readable again: the next run compares with the last complete one, as before
    code, stdout, third, _ = _run(env, tmp_path, "out3", night)
    assert code == 1 and third["complete"] is True
    assert third["run"]["previous_run_id"] == first["run"]["id"]
    assert third["resolved"] == [] and "not_reevaluated" not in third
    assert "since the previous run: 0 new, 0 resolved" in stdout


_CASES = """\
tests:
  - name: odd counts as the API might send them
    settings: {mcpPolicy: {enabled: true, allowlist: [github]}, maxAutonomyLevel: medium}
    usage:
      date: "2026-10-30"
      tools:
        mcp_by_server: [{server: github, invocations: 3}, {server: evil, invocations: "NaN"}]
        tool_autonomy_level_ratio: {auto_high: "0.4"}
    expect: {USE-MCP-001: unknown, USE-AUT-001: unknown}
  - name: negative counts
    settings: {mcpPolicy: {enabled: true, allowlist: [github]}, maxAutonomyLevel: medium}
    usage:
      date: "2026-10-30"
      tools:
        mcp_by_server: [{server: evil, invocations: -5}]
        tool_autonomy_level_ratio: {auto_high: -0.5}
    expect: {USE-MCP-001: unknown, USE-AUT-001: unknown}
  - name: the same server used for real fails
    settings: {mcpPolicy: {enabled: true, allowlist: [github]}, maxAutonomyLevel: medium}
    usage:
      date: "2026-10-30"
      tools:
        mcp_by_server: [{server: evil, invocations: 5}]
        tool_autonomy_level_ratio: {auto_high: 0.5}
    expect: {USE-MCP-001: fail, USE-AUT-001: fail}
"""


def test_policy_test_reads_odd_usage_rows_as_a_run_does(tmp_path: Path) -> None:
    """The cases T42 gave: in a run, the tolerant reader reads each odd value as absent, so
    both rules are `unknown`; the policy test said `pass` (negative) and `error` (string)."""
    (tmp_path / "usage.yaml").write_text((REPO / "policies" / "usage.yaml").read_text())
    (tmp_path / "usage.tests.yaml").write_text(_CASES)
    code, out, err = run_cli(["policy", "test", str(tmp_path)], {}, tmp_path)
    assert code == 0, out + err
    assert "3 passed, 0 failed" in out
    # what the sync would warn of is shown under its case
    assert "tools.mcp_by_server[1].invocations" in out
    assert "read as absent" in out
