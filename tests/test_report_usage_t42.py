"""The usage section of the reports as tester T42 read it (findings 5, 6 and 10): a day whose
total the API sent odd is not left out of report.md's total without a word (report.md and
report.html give the same total and say what it adds up), a model entry without a usable name
is not charted as a model called "None", and report.html's chart is drawn on a time axis (days
not stored are a gap) under a header that says "N of M days stored" as report.md does. Run as a
user runs them: the CLI against the emulator, with the odd value planted in its answers."""

from __future__ import annotations

import html as htmllib
import json
import re
from collections.abc import Callable, Iterator
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import pytest

from auditor.emulator import data_analytics, endpoints_analytics, start_emulator
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


def _section(out: Path) -> tuple[str, str]:
    """The usage sections of report.md and report.html (the html's as text, unescaped)."""
    md = (out / "report.md").read_text().split("### Usage")[1].split("\n### ")[0]
    page = (out / "report.html").read_text()
    return md, page.split('<h2 id="usage">Usage</h2>')[1].split("<h2")[0]


def _text(fragment: str) -> str:
    return htmllib.unescape(re.sub(r"<[^>]+>", "", fragment.replace("</p>", "</p>\n")))


def _billable_line(text: str) -> str:
    (line,) = [x.strip() for x in text.splitlines() if x.strip().startswith("Billable tokens")]
    return line


@pytest.mark.e2e
def test_a_day_total_sent_odd_is_not_left_out_of_the_total_without_a_word(
    emu: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """T42 #5: the day's `billable_tokens` came as the string "18262400". report.md said
    "Billable tokens: 635.1M in total" beside "30 of 30 days stored", the day read as 0 and no
    data-quality note (a `run --offline` after the sync); report.html's table counted it."""
    served: dict[str, int] = {}

    def odd_total(row: dict[str, Any]) -> None:
        served[row["date"]] = row["billable_tokens"]
        if row["date"] == ODD_DAY:
            row["billable_tokens"] = str(row["billable_tokens"])

    _plant_tokens(monkeypatch, odd_total)
    env = emulator_env(emu, tmp_path / "state.db")
    code, _, err = run_cli(["sync"], env, tmp_path)
    assert code == 0, err
    out = tmp_path / "out"
    args = ["run", "--offline", "--policy", USAGE_PACK, "--out", str(out), "-o", "md,html"]
    code, _, err = run_cli(args, env, tmp_path)
    assert code in (0, 1), err
    md, page = _section(out)
    assert "30 of 30 days stored" in md
    line = _billable_line(md)
    read = sum(n for day, n in served.items() if day != ODD_DAY and day >= "2026-10-02")
    shown = re.search(r"at least ([\d.]+)M", line)
    assert shown is not None, line  # the sum of the days read is a floor, not the total
    assert float(shown.group(1)) == round(read / 1e6, 1)
    assert "1 of the 30 days stored" in line and ODD_DAY in line, line
    # report.html gives the same total, in the same words
    assert _billable_line(_text(page)) == line


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
    legend = re.findall(r'<p class="legend">.*?</p>', section, re.S)[0]
    legend = re.findall(r"</svg>&nbsp;([^<]*)</span>", legend)
    assert "(no model name)" in legend
    table = section.split('<details class="chart-data">')[1].split("</details>")[0]
    head = re.findall(r'<th class="num[^"]*">([^<]*)</th>', table)
    assert "(no model name)" in head
    rows = dict(re.findall(r'<tr><td class="nowrap">([^<]*)</td>(.*?)</tr>', table))
    figures = re.findall(r'<td class="num">([^<]*)</td>', rows[ODD_DAY])
    assert figures[head.index("(no model name)")] == "3,000,000,000"
    data = json.loads((out / "findings.json").read_text())
    if name != "missing":  # the odd value itself is still a data-quality warning
        assert any(
            ".model" in w["path"] and ODD_DAY in w["item"] for w in data["data_quality"] or []
        ), data["data_quality"]


@pytest.mark.e2e
def test_the_usage_chart_shows_days_not_stored_as_a_gap_and_counts_them(
    emu: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """T42 #10: with 5 days left out in the middle of the window, the chart drew 25 bars side
    by side as if consecutive, and the header said "25 day(s) stored" (no "of 30")."""
    gap = {date(2026, 10, 14) + timedelta(days=n) for n in range(5)}  # Oct 14..18
    every_day = data_analytics.days
    monkeypatch.setattr(
        data_analytics,
        "days",
        lambda start, end: [d for d in every_day(start, end) if d not in gap],
    )
    env = emulator_env(emu, tmp_path / "state.db")
    out = tmp_path / "out"
    args = ["run", "--policy", USAGE_PACK, "--out", str(out), "-o", "md,html"]
    code, _, err = run_cli(args, env, tmp_path)
    assert code == 2, err  # days not stored: not judged, the run says so
    md, section = _section(out)
    assert "Analytics 2026-10-02..2026-10-31: 25 of 30 days stored." in md
    assert "Analytics 2026-10-02 to 2026-10-31: 25 of 30 days stored." in _text(section)
    bars = re.findall(r'<rect class="bar" x="([\d.]+)"[^>]*><title>(\d{4}-\d\d-\d\d) ', section)
    x: dict[str, float] = {}
    for left, day in bars:
        x.setdefault(day, float(left))
    assert len(x) == 25 and not {d.isoformat() for d in gap} & set(x)
    step = (x["2026-10-31"] - x["2026-10-02"]) / 29  # a slot per day of the window
    assert x["2026-10-03"] - x["2026-10-02"] == pytest.approx(step, abs=0.05)
    # the day after the gap is 6 days after the one before it, not the next bar along
    assert x["2026-10-19"] - x["2026-10-13"] == pytest.approx(6 * step, abs=0.05)
    assert "Not stored: 2026-10-14 to 2026-10-18" in _text(section)
