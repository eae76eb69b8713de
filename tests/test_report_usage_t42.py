"""The usage section of the reports as tester T42 read it: a model entry without a usable name
is not charted as a model called "None" (finding 6). Run as a user runs them: the CLI against
the emulator, with the odd value planted in its answers."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from auditor.emulator import endpoints_analytics, start_emulator
from tests.conftest import FIXED_NOW, OWNER_TOKEN, emulator_env, run_cli

REPO = Path(__file__).resolve().parents[1]
USAGE_PACK = str(REPO / "policies" / "usage.yaml")
ODD_DAY = "2026-10-10"  # inside the window the emulator's clock gives (Oct 2..31)


@pytest.fixture
def emu() -> Iterator[Any]:
    with start_emulator(tokens={OWNER_TOKEN: "owner"}, now=FIXED_NOW, revisions=80, repos=4) as e:
        yield e


def _plant_tokens(
    monkeypatch: pytest.MonkeyPatch, change: Callable[[dict[str, Any]], None]
) -> None:
    """The emulator's /tokens rows pass through `change` (which edits a row in place)."""
    row_fn, *rest = endpoints_analytics.SERIES["tokens"]

    def planted(facts: Any) -> Any:
        row = row_fn(facts)
        change(row)
        return row

    monkeypatch.setitem(endpoints_analytics.SERIES, "tokens", (planted, *rest))


@pytest.mark.e2e
@pytest.mark.parametrize("name", [None, "", "missing"])
def test_a_model_entry_without_a_name_is_not_charted_as_a_model_called_none(
    emu: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str | None
) -> None:
    """T42 #6: a by_model entry with `"model": null` ("" or none) gave the right data-quality
    warning, but report.html's legend and table showed a model called `None`."""

    def nameless(row: dict[str, Any]) -> None:
        if row["date"] == ODD_DAY:
            entry: dict[str, Any] = {"billable_tokens": 3_000_000_000}
            if name != "missing":
                entry["model"] = name
            row["by_model"].append(entry)

    _plant_tokens(monkeypatch, nameless)
    env = emulator_env(emu, tmp_path / "state.db")
    out = tmp_path / "out"
    args = ["run", "--policy", USAGE_PACK, "--out", str(out), "-o", "json,html"]
    code, _, err = run_cli(args, env, tmp_path)
    assert code in (0, 1, 2), err
    page = (out / "report.html").read_text()
    section = page.split('<h2 id="usage">Usage</h2>')[1].split("<h2")[0]
    assert ">None<" not in section and " None:" not in section
    legend = re.findall(r'<text class="axis" x="[\d.]+" y="[\d.]+">([^<]*)</text>', section)
    assert "(no model name)" in legend
    table = section.split('<details class="chart-data">')[1].split("</details>")[0]
    head = re.findall(r'<th class="num">([^<]*)</th>', table)
    assert "(no model name)" in head
    rows = dict(re.findall(r'<tr><td class="nowrap">([^<]*)</td>(.*?)</tr>', table))
    figures = re.findall(r'<td class="num">([^<]*)</td>', rows[ODD_DAY])
    assert figures[head.index("(no model name)")] == "3,000,000,000"
    data = json.loads((out / "findings.json").read_text())
    if name != "missing":  # the odd value itself is still a data-quality warning
        assert any(
            ".model" in w["path"] and ODD_DAY in w["item"] for w in data["data_quality"] or []
        ), data["data_quality"]
