"""The HTML report: one self-contained file (inline CSS and SVG, no script, strict CSP).

Takes `ReportData`, gives the text of `report.html`. Everything from data goes through jinja2's
autoescape (nothing from data is ever marked safe); links are limited to http/https.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from typing import Any

import jinja2
from markupsafe import Markup, escape

from auditor.common.escape import clean_text, safe_url, shorten
from auditor.findings.finding import Finding, attribution_text, sort_controls, sort_findings
from auditor.models import Change, severity_rank
from auditor.report import display
from auditor.report.charts import failing_chart
from auditor.report.model import (
    ReportData,
    control_rows,
    new_count,
    severity_counts,
    shown_findings,
    status_counts,
)

#: Detail rows shown per rule; the rest are counted ("N more").
ROWS_PER_RULE = 200
#: Input hashes listed in the HTML appendix; findings.json lists all.
APPENDIX_ROWS = 1000


@dataclass(frozen=True)
class RuleGroup:
    """The shown findings of one rule (capped) with the rule's metadata."""

    first: Finding
    rows: tuple[Finding, ...]
    total: int
    status_counts: tuple[tuple[str, int], ...]

    @property
    def more(self) -> int:
        """Rows left out of the detail table."""
        return self.total - len(self.rows)


def _finalize(value: Any) -> Any:
    """Clean every value on its way out; non-text objects (e.g. locations) become clean text."""
    if isinstance(value, Markup) or value is None or isinstance(value, int | float):
        return value
    return clean_text(value if isinstance(value, str) else str(value))


def _value(value: Any) -> str:
    return shorten(display.display_value(value))


def _prose(text: str) -> Markup:
    """Escaped prose with its `code` spans shown as code."""
    out = Markup("")
    for is_code, piece in display.code_spans(clean_text(shorten(text))):
        out += Markup("<code>%s</code>") % piece if is_code else escape(piece)
    return out


def _when(value: datetime | None) -> str:
    return "" if value is None else value.strftime("%Y-%m-%d %H:%M UTC")


def _day(value: datetime) -> str:
    return value.strftime("%Y-%m-%d")


@cache
def environment() -> jinja2.Environment:
    """The template environment: autoescape on, undefined names are errors."""
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("auditor.report", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        finalize=_finalize,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters.update(
        value=_value,
        when=_when,
        day=_day,
        url=safe_url,
        short=shorten,
        attribution=attribution_text,
        prose=_prose,
        op=display.operator_text,
        controls=lambda cs: ", ".join(sort_controls(cs)),
        before=display.change_before,
        after=display.change_after,
        kind=display.change_kind,
        level=display.level_text,
        score=display.score_text,
        age=display.age_text,
        clean=display.clean_word,
    )
    return env


@cache
def _style() -> tuple[Markup, str]:
    """The stylesheet (our own static file, not data) and its CSP hash."""
    loader = environment().loader
    assert loader is not None
    css = loader.get_source(environment(), "style.css.j2")[0]
    digest = base64.b64encode(hashlib.sha256(css.encode("utf-8")).digest()).decode("ascii")
    return Markup(css), f"'sha256-{digest}'"


def group_by_rule(findings: list[Finding], cap: int = ROWS_PER_RULE) -> list[RuleGroup]:
    """Shown findings grouped by rule (worst severity first), at most `cap` rows each."""
    groups: dict[str, list[Finding]] = {}
    for f in sort_findings(findings):
        groups.setdefault(f.rule_id, []).append(f)
    out = []
    for items in groups.values():
        counts: dict[str, int] = {}
        for f in items:
            counts[f.status] = counts.get(f.status, 0) + 1
        out.append(
            RuleGroup(items[0], tuple(items[:cap]), len(items), tuple(sorted(counts.items())))
        )
    return sorted(out, key=lambda g: (severity_rank(g.first.severity), g.first.rule_id))


def _change_rows(changes: tuple[Change, ...], cap: int = 500) -> tuple[tuple[Change, ...], int]:
    return changes[:cap], max(0, len(changes) - cap)


def context(data: ReportData) -> dict[str, Any]:
    """Everything the template shows, computed once."""
    css, css_hash = _style()
    introduced = set(data.review.introduced) if data.review else set()
    shown = shown_findings(data)
    changes, more_changes = _change_rows(data.review.changes if data.review else ())
    return {
        "d": data,
        "css": css,
        "csp": f"default-src 'none'; style-src {css_hash}; img-src 'none'; "
        "base-uri 'none'; form-action 'none'",
        "severity_counts": severity_counts(data.findings),
        "status_counts": status_counts(data.findings),
        "new": new_count(data.findings),
        "controls": control_rows(data.findings),
        "groups": group_by_rule(shown),
        "chart": failing_chart(data.failing_by_revision),
        "introduced": [f for f in shown if f.fingerprint in introduced],
        "changes": changes,
        "more_changes": more_changes,
        "rows_per_rule": ROWS_PER_RULE,
        "appendix_cap": APPENDIX_ROWS,
    }


def iter_html(data: ReportData) -> Iterator[str]:
    """The report in chunks (keeps memory flat for large runs)."""
    return environment().get_template("report.html.j2").generate(context(data))


def render_html(data: ReportData) -> str:
    """The whole self-contained HTML report."""
    return "".join(iter_html(data))
