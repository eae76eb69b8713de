"""The usage section of the reports: daily billable tokens by model, and the usage findings.

Takes the analytics days the audit read (`UsageInputs`) and the run's findings, gives a
`UsageView` (stored on `ReportData.usage`): the stored days of the window and the total of
billable tokens as both reports word them, the geometry of a stacked-bar SVG chart on a time
axis (a day not stored is an empty, shaded slot) that the HTML template draws (numbers and
model names only, autoescaped there; colours and sizes are presentation attributes, so the
page's CSP needs no inline style and WeasyPrint, which applies no CSS to SVG, prints them), its
legend as text under the chart (every model's name in full: SVG text cannot wrap), with the
same figures as a table (day by model; its headers the names with break opportunities, a run
too long for a column shortened) for readers who cannot see the bars, the rows of the usage
findings (day, observed figure, the setting in force: revision and author) and the Markdown
section.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date, timedelta

from auditor.common.dates import date_ranges
from auditor.common.escape import md_inline, shorten
from auditor.evaluate.model import UsageInputs
from auditor.evaluate.usage import count_value
from auditor.findings.finding import Finding, attribution_text, sort_findings
from auditor.models import OPEN_STATUSES
from auditor.report import display

WIDTH, HEIGHT = 720, 220
_LEFT, _RIGHT, _TOP, _BOTTOM = 56, 12, 12, 30
MAX_MODELS = 6
#: The models' colours, each at least 3:1 against the page's white (WCAG 1.4.11, non-text
#: contrast); stacked segments are parted by a white gap (the template's 1px white stroke), so
#: neighbours need not differ from each other in lightness.
PALETTE = ("#1f77b4", "#c06400", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#7f7f7f")
#: The white the chart is drawn on, and the gap between stacked segments.
BACKGROUND = "#ffffff"
#: The shade behind a day not stored (the chart's time axis leaves its slot empty; the text
#: under the chart names the days, so the shade is not the only sign of them).
GAP_FILL = "#f0f0f0"
ROWS = 60
#: How a by_model entry without a usable model name (null, "", none) is charted: the sync
#: warns of it and reads the name as absent; it is no model called "None".
NO_MODEL = "(no model name)"
#: At most this many days are named where a sentence lists them.
NAMED_DAYS = 5
#: The longest run of a model name (up to and with a separator: `-`, `.`, `:`, `/`, `_`, `@`,
#: a space) the table's header keeps on one line: with seven models, a column of A4 holds about
#: ten characters a line. A longer run may break every `HEAD_RUN` characters; it is never
#: shortened (two names shortened alike made two columns look the same: review R40).
HEAD_RUN = 10
#: A legend entry is kept on one line up to this many characters (A4 holds about 100).
LEGEND_WHOLE = 80
_RUN = re.compile(r"[^-./:_@+=,;\s]*(?:[-./:_@+=,;]+|\s+|$)")


@dataclass(frozen=True)
class UsageDay:
    """One day's billable tokens per model (models in the order the API sent them)."""

    day: str
    by_model: tuple[tuple[str, float], ...]
    total: float | None  # the day's `billable_tokens`; None when absent


@dataclass(frozen=True)
class Bar:
    """One coloured segment of a day's bar."""

    x: float
    y: float
    width: float
    height: float
    fill: str
    title: str


@dataclass(frozen=True)
class Label:
    """An axis or legend label at a position."""

    x: float
    y: float
    text: str
    fill: str = ""


@dataclass(frozen=True)
class Swatch:
    """A legend entry: a model's name in full and its colour; `head` is its name as the table's
    header prints it, whole, in pieces between which a line may break (past each separator,
    where a browser or WeasyPrint would not break by itself: `sonnet-4`, `us.anthropic`; and
    every `HEAD_RUN` characters of a run too long for a column)."""

    text: str
    fill: str
    head: tuple[str, ...] = ()
    whole: bool = True  # kept on one line in the legend


def header_pieces(name: str) -> tuple[str, ...]:
    """`name` as the usage table's header prints it, whole: pieces to join with a line-break
    opportunity (`<wbr>`), never inside a run of letters or digits up to `HEAD_RUN`
    characters; a longer run, which no column holds on one line, in pieces of `HEAD_RUN`."""
    runs = [r for r in _RUN.findall(name) if r]
    pieces: list[str] = []
    for run in runs:
        if len(run.rstrip()) > HEAD_RUN:
            pieces += [run[i : i + HEAD_RUN] for i in range(0, len(run), HEAD_RUN)]
            continue
        # a break after a hyphen before a letter, or at a space, is the engines' own
        if pieces and (pieces[-1][-1].isspace() or (pieces[-1][-1] == "-" and run[0].isalpha())):
            pieces[-1] += run
        else:
            pieces.append(run)
    return tuple(pieces)


@dataclass(frozen=True)
class DayFigures:
    """One day of the chart as text: the billable tokens of each charted model (`—` when the
    day has none of it), and of all of them."""

    day: str
    figures: tuple[str, ...]  # in the order of `UsageChart.models`
    total: str


@dataclass(frozen=True)
class UsageChart:
    """Stacked bars of daily billable tokens by model, with axes and a legend."""

    width: int
    height: int
    bars: tuple[Bar, ...]
    y_ticks: tuple[Label, ...]
    x_ticks: tuple[Label, ...]
    legend: tuple[Swatch, ...]  # under the chart (text wraps there, as SVG text cannot)
    plot_left: int
    plot_right: int
    plot_bottom: int
    first: str
    last: str
    models: tuple[str, ...] = ()  # the legend's order: the stack's, bottom first
    table: tuple[DayFigures, ...] = ()  # every stored day's figures, oldest first
    gaps: tuple[Bar, ...] = ()  # the shade behind each run of days of the axis not stored
    not_stored: str = ""  # those days as text: `2026-10-14 to 2026-10-18, 2026-10-25`


@dataclass(frozen=True)
class UsageView:
    """What the reports show about usage: the days read, or why there were none."""

    window: tuple[str, str] | None
    days: tuple[UsageDay, ...] = ()
    unavailable: str = ""

    def chart(self) -> UsageChart | None:
        """The chart of the days, or None without any figure."""
        return usage_chart(self.days, self.window)

    def stored(self) -> str:
        """`25 of 30 days stored`: the days read of the window's (both reports say it so)."""
        if not self.window:
            return f"{len(self.days)} days stored"
        first, last = (date.fromisoformat(d) for d in self.window)
        return f"{len(self.days)} of {(last - first).days + 1} days stored"

    def total(self) -> str:
        """The sentence on the billable tokens, report.md's and report.html's alike (empty
        without a stored day): the sum of the days' own totals (`tokens.billable_tokens`). A
        day whose total is missing or odd is not read as 0: the sum is then `at least`, and
        the sentence counts and names the days it leaves out."""
        if not self.days:
            return ""
        read = [d for d in self.days if d.total is not None]
        left_out = [d.day for d in self.days if d.total is None]
        if not read:
            return (
                f"Billable tokens: no total (none of the {len(self.days)} days stored has a "
                "readable day total)."
            )
        peak = max(read, key=lambda d: d.total or 0)
        tail = f"peak {compact(peak.total or 0)} on {peak.day}"
        whole = compact(sum(d.total or 0 for d in read))
        if not left_out:
            return f"Billable tokens: {whole} in total (the days' own totals), {tail}."
        named = ", ".join(left_out[:NAMED_DAYS])
        if len(left_out) > NAMED_DAYS:
            named += f" and {len(left_out) - NAMED_DAYS} more"
        return (
            f"Billable tokens: at least {whole} in total (the days' own totals), {tail}; "
            f"partial: {len(left_out)} of the {len(self.days)} days stored "
            f"{'has' if len(left_out) == 1 else 'have'} no readable day total, not counted "
            f"({named})."
        )

    def rows(self, findings: Iterable[Finding]) -> list[UsageRow]:
        """The usage findings as the section lists them."""
        return usage_rows(findings)


def usage_view(inputs: UsageInputs | None) -> UsageView | None:
    """The report's view of the usage inputs (None when usage was skipped)."""
    if inputs is None:
        return None
    days = []
    for day, series in inputs.days:
        if day < inputs.first_judged:
            continue
        tokens = series.get("tokens")
        tokens = tokens if isinstance(tokens, dict) else {}
        models = tokens.get("by_model")
        pairs = tuple(
            (_model_name(m.get("model")), n)
            for m in (models if isinstance(models, list) else ())
            if isinstance(m, dict) and (n := count_value(m.get("billable_tokens"))) is not None
        )
        # (a huge or non-finite count an earlier release stored reads as none)
        days.append(UsageDay(day, pairs, count_value(tokens.get("billable_tokens"))))
    return UsageView(inputs.window, tuple(days), inputs.unavailable)


def _model_name(value: object) -> str:
    """A by_model entry's model as the chart names it: `NO_MODEL` for none (not `None`)."""
    return value if isinstance(value, str) and value.strip() else NO_MODEL


def _nice(peak: float) -> float:
    if peak <= 0:
        return 1.0
    scale = float(10 ** (len(str(int(peak))) - 1))
    for step in (1.0, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0):
        if peak <= step * scale:
            return step * scale
    return 10.0 * scale


def compact(value: float) -> str:
    """`12.5M`, `830k`, `42`: a token count for an axis or a table."""
    for size, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= size:
            return f"{value / size:.1f}".removesuffix(".0") + suffix
    return f"{value:.0f}"


def _models(days: Sequence[UsageDay]) -> list[str]:
    totals: dict[str, float] = {}
    for d in days:
        for model, n in d.by_model:
            totals[model] = totals.get(model, 0.0) + n
    ranked = sorted(totals, key=lambda m: (-totals[m], m))
    return ranked[:MAX_MODELS] + (["other"] if len(ranked) > MAX_MODELS else [])


def _figures(day: str, by_model: dict[str, float], models: Sequence[str]) -> DayFigures:
    """A day's figures as the table shows them (`—` for a model the day has none of)."""
    shown = tuple(f"{by_model[m]:,.0f}" if m in by_model else "—" for m in models)
    return DayFigures(day, shown, f"{sum(by_model.values()):,.0f}")


def _axis(days: Sequence[UsageDay], window: tuple[str, str] | None) -> tuple[date, int]:
    """The chart's time axis: its first day and how many days it spans (the window, and any
    stored day outside it)."""
    first, last = date.fromisoformat(days[0].day), date.fromisoformat(days[-1].day)
    if window:
        first = min(first, date.fromisoformat(window[0]))
        last = max(last, date.fromisoformat(window[1]))
    return first, (last - first).days + 1


def _run_text(first: date, last: date) -> str:
    return f"{first} to {last}" if first != last else str(first)


def usage_chart(
    days: Sequence[UsageDay], window: tuple[str, str] | None = None
) -> UsageChart | None:
    """Stacked bars on a time axis, one per stored day (a day not stored is an empty, shaded
    slot), a segment per model (the smaller ones as `other`)."""
    if not any(d.by_model for d in days):
        return None
    models = _models(days)
    colour = {m: PALETTE[i % len(PALETTE)] for i, m in enumerate(models)}
    stacks = []
    for d in days:
        parts: dict[str, float] = {}
        for model, n in d.by_model:
            key = model if model in colour else "other"
            parts[key] = parts.get(key, 0.0) + n
        stacks.append((d.day, [(m, parts[m]) for m in models if parts.get(m)]))
    table = tuple(_figures(day, dict(stack), models) for day, stack in stacks)
    top = _nice(max(sum(n for _, n in s) for _, s in stacks))
    right, bottom = WIDTH - _RIGHT, HEIGHT - _BOTTOM
    first, span = _axis(days, window)
    slot = (right - _LEFT) / span
    scale = (bottom - _TOP) / top

    def left(day: date) -> float:
        return _LEFT + (day - first).days * slot

    bars = []
    for day, stack in stacks:
        y = float(bottom)
        for model, n in stack:
            h = n * scale
            y -= h
            title = f"{day} {model}: {n:,.0f} billable tokens"
            bars.append(
                Bar(
                    round(left(date.fromisoformat(day)) + slot * 0.1, 2),
                    round(y, 2),
                    round(slot * 0.8, 2),
                    round(h, 2),
                    colour[model],
                    title,
                )
            )
    stored = {d.day for d in days}
    axis = [first + timedelta(days=i) for i in range(span)]
    missing = [d for d in axis if d.isoformat() not in stored]
    runs = date_ranges(missing)
    gaps = tuple(
        Bar(
            round(left(a), 2),
            _TOP,
            round(((b - a).days + 1) * slot, 2),
            bottom - _TOP,
            GAP_FILL,
            f"{_run_text(a, b)}: not stored",
        )
        for a, b in runs
    )
    y_ticks = tuple(
        Label(_LEFT - 6, round(bottom - top * k / 4 * scale, 2), compact(top * k / 4))
        for k in range(5)
    )
    step = max(1, -(-span // 6))
    x_ticks = tuple(
        Label(round(left(d) + slot / 2, 2), bottom + 16, d.isoformat()[5:])
        for i, d in enumerate(axis)
        if i % step == 0 or i == span - 1
    )
    legend = tuple(Swatch(m, colour[m], header_pieces(m), len(m) <= LEGEND_WHOLE) for m in models)
    return UsageChart(
        WIDTH,
        HEIGHT,
        tuple(bars),
        y_ticks,
        x_ticks,
        legend,
        _LEFT,
        right,
        bottom,
        axis[0].isoformat(),
        axis[-1].isoformat(),
        tuple(models),
        table,
        gaps,
        ", ".join(_run_text(a, b) for a, b in runs),
    )


@dataclass(frozen=True)
class UsageRow:
    """One usage finding as the usage section lists it."""

    day: str
    rule_id: str
    title: str
    severity: str
    status: str
    observed: str  # the figure the rule looked at: `path = value`
    setting: str  # the setting in force: `rev 233 (2026-10-29) by a@b.c`


def _observed(f: Finding) -> str:
    """The figures found (what the rule expected is in its title): the values of
    `display.evidence_parts`, as every report words them."""
    parts = [display.evidence_parts(e) for e in f.evidence]
    shown = [f"{p.path} = {shorten(p.found, 80)}" for p in parts if p.found is not None]
    return "; ".join(shown[:3]) if shown else shorten(f.message, 160)


def usage_rows(findings: Iterable[Finding]) -> list[UsageRow]:
    """The open and waived usage findings, worst first, then by day."""
    rows = []
    for f in sort_findings([f for f in findings if f.subject.kind == "usage"]):
        if f.status not in OPEN_STATUSES and f.status != "waived":
            continue
        day = f.subject.key.removeprefix("usage@") if "@" in f.subject.key else "—"
        setting = attribution_text(f).removeprefix("setting in force: ") or "—"
        rows.append(UsageRow(day, f.rule_id, f.title, f.severity, f.status, _observed(f), setting))
    return rows


def usage_markdown(view: UsageView | None, findings: Iterable[Finding]) -> str:
    """The `### Usage` section of report.md (empty when usage was skipped)."""
    if view is None:
        return ""
    lines = ["### Usage\n\n"]
    if view.unavailable:
        lines.append(f"Usage not evaluated: {md_inline(view.unavailable, 300)}\n\n")
        return "".join(lines)
    if view.window:
        first, last = view.window
        lines.append(f"Analytics {first}..{last}: {view.stored()}.\n\n")
    if total := view.total():
        lines.append(f"{total}\n\n")
    rows = usage_rows(findings)
    if not rows:
        lines.append("No usage findings.\n\n")
        return "".join(lines)
    lines.append("| Day | Rule | Status | Observed | Setting in force |\n|---|---|---|---|---|\n")
    for r in rows[:ROWS]:
        lines.append(
            f"| {r.day} | {md_inline(r.rule_id)} | {r.status} | {md_inline(r.observed, 160)} "
            f"| {md_inline(r.setting, 120)} |\n"
        )
    if len(rows) > ROWS:
        lines.append(
            f"\n{len(rows) - ROWS} more usage findings in report.html and findings.json.\n"
        )
    lines.append("\n")
    return "".join(lines)
