"""The HTML report: one self-contained file (inline CSS and SVG, no script, strict CSP).

Takes `ReportData`, gives the text of `report.html`. Everything from data goes through jinja2's
autoescape (nothing from data is ever marked safe); links are limited to http/https. The template
gives the page; its repeated rows (results, drill-down lines, repositories, inputs) are written by
`auditor.report.htmlrows` with the same escaping, one string per table body (per rule in a
control's drill-down, which can hold hundreds of rules).

The page is built for an auditor: a contents block, a scope block, an anchor on every section,
control, rule and result, links both ways (control → rules → results, result → rule →
controls, and each result between its drill-down line and its row), and every result, passes
included, with its evidence: one line in each control's drill-down (what it checked and found),
in full once in its row (Findings by rule, or Appendix A for passes). Printed (or rendered to PDF,
`auditor.report.pdf`) nothing is collapsed, pages are A4 with a running header naming the
organisation and run and a "page X of Y" footer.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import re
from collections.abc import Iterable, Iterator, MutableMapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from typing import Any, TypeVar

import jinja2
from markupsafe import Markup

from auditor.common.escape import clean_text, shorten
from auditor.common.unique import first_free
from auditor.findings.finding import Finding, sort_controls, sort_findings
from auditor.models import QUIET_STATUSES, TRACKED_STATUSES, Change, severity_rank
from auditor.report import display
from auditor.report.charts import failing_chart
from auditor.report.htmlrows import RowWriter, day, finalize, html_escape
from auditor.report.model import (
    ControlRow,
    ReportData,
    control_rows,
    failing_not_waived,
    integrity_coverage_text,
    introduced_counts,
    last_sync_text,
    new_count,
    new_waived_count,
    no_comparison_note,
    not_judged,
    output_headline,
    report_order,
    rules_by_target,
    rules_evaluated,
    rules_left_out,
    settings_judged,
    severity_counts,
    shown_findings,
    status_counts,
    upgrade_note,
    what_was_audited,
)

#: Detail rows shown per rule; the rest are counted ("N more").
ROWS_PER_RULE = 200
#: Input hashes listed in the HTML appendix; findings.json lists all.
APPENDIX_ROWS = 1000
#: Rows of each chart's table of figures (runs of revisions, usage days); the newest are kept.
CHART_ROWS = 200


@dataclass(frozen=True)
class Caps:
    """How much of a long list the page shows, and where a reader finds the rest (the words
    after the count of the rows left out). The HTML page's are the defaults; the PDF's are
    tighter (`auditor.report.pdf.PDF_CAPS`)."""

    rows_per_rule: int = ROWS_PER_RULE  # results per rule (Findings by rule, Appendix A, drill)
    appendix_rows: int = APPENDIX_ROWS  # settings revisions and readiness reports (Appendix B)
    rest: str = "see findings.json for all"  # after "(limit N per rule; "
    rest_inputs: str = "all are listed in findings.json"  # after "N more; "
    chart_rows: int = CHART_ROWS  # rows of each chart's table of figures (the newest kept)


@dataclass(frozen=True)
class RuleGroup:
    """The shown findings of one rule (capped) with the rule's metadata."""

    first: Finding
    rows: tuple[Finding, ...]
    total: int
    status_counts: tuple[tuple[str, int], ...]
    oldest_cut: bool = False  # the rows left out are the rule's oldest (revisions, days)

    @property
    def more(self) -> int:
        """Rows left out of the detail table."""
        return self.total - len(self.rows)

    @property
    def cut(self) -> str:
        """Which rows were left out, for the "N more" note ("" when it cannot be said)."""
        return "the oldest; " if self.oldest_cut and self.more else ""


def kept_rows(items: Sequence[Finding], cap: int) -> tuple[tuple[Finding, ...], bool]:
    """At most `cap` of one rule's findings, in their order, and whether the ones left out are
    the oldest. Subjects with a revision (a change step's or usage day's, `settings@N`'s
    number) keep their newest half of `cap` whatever else happens (the audited revision's
    result among them), then every `new` finding there is room for, then the newest of the
    rest: a long history's cut leaves out its oldest steps, never the latest, and a night that
    judges hundreds of old steps anew (a policy edit) still shows its newest. Subjects with no
    revision (repositories, `org`) keep every `new` finding, then the first."""
    if len(items) <= cap:
        return tuple(items), False
    # Each result's keys made once and sorted in C (`heapq.nlargest` with a key function ran a
    # Python loop over every result of the rule): each key ends in the result's index, so no
    # two are equal and the largest are the ones `nlargest` picks.
    count = len(items)
    revisions = [f.subject.revision for f in items]
    fresh = [f.marks[2] == "new" for f in items]  # the `new` ones first
    if all(rev is None for rev in revisions):  # the first `new` ones, then the first others
        news = [n for n in range(count) if fresh[n]][: max(cap, 0)]
        others = [n for n in range(count) if not fresh[n]][: max(cap - len(news), 0)]
        return tuple(items[n] for n in sorted(news + others)), False

    numbers = [-1 if rev is None else rev for rev in revisions]
    revision = list(zip(numbers, range(count), strict=True))  # (rev, n)
    newest = {t[1] for t in _largest(sorted(revision), cap // 2)}
    rest = sorted(
        (fresh[n], numbers[n], n) for n in range(count) if n not in newest
    )  # (new, rev, n)
    chosen = sorted(newest.union(t[2] for t in _largest(rest, cap - len(newest))))
    kept = set(chosen)
    left = [revision[n] for n in range(count) if n not in kept]
    oldest = max(left) < min(revision[n] for n in chosen)
    return tuple(items[n] for n in chosen), oldest


T = TypeVar("T")


def _largest(ordered: list[T], k: int) -> list[T]:
    """The `k` largest of a sorted list (none for `k` <= 0)."""
    return ordered[max(0, len(ordered) - k) :] if k > 0 else []


def _prose(text: str) -> Markup:
    """Escaped prose with its `code` spans shown as code."""
    pieces = display.code_spans(clean_text(shorten(text)))
    return Markup(
        "".join(f"<code>{html_escape(p)}</code>" if code else html_escape(p) for code, p in pieces)
    )


def _when(value: datetime | None) -> str:
    return "" if value is None else value.strftime("%Y-%m-%d %H:%M UTC")


#: Template → the module that holds its code as jinja2 compiles it (`compiled_module` writes
#: it; a test checks it is current). Lexing, parsing and generating the page's code took about
#: 55 ms of every run (a fifth of the nightly's reports); the module's bytecode is Python's own
#: cached .pyc.
COMPILED = {
    "report.html.j2": "auditor.report._page_report",
    "usage.html.j2": "auditor.report._page_usage",
}


def compiled_key(env: jinja2.Environment, source: str) -> str:
    """What the compiled code of `source` depends on: the template, jinja2's version and the
    environment's settings that change the code (a module made for another key is not used)."""
    settings = (
        jinja2.__version__,
        env.block_start_string, env.block_end_string, env.variable_start_string,
        env.variable_end_string, env.comment_start_string, env.comment_end_string,
        env.line_statement_prefix, env.line_comment_prefix, env.trim_blocks, env.lstrip_blocks,
        env.newline_sequence, env.keep_trailing_newline, env.optimized, env.is_async,
        env.autoescape is True, env.finalize is not None, sorted(env.extensions),
    )  # fmt: skip
    return hashlib.sha256(f"{settings!r}\x00{source}".encode()).hexdigest()


def compiled_module(name: str) -> str:
    """The text of `COMPILED[name]`'s module: the template's code as jinja2 generates it, after
    a header with its `KEY` (`compiled_key`)."""
    env = environment()
    source = _source(env, name)
    code = env.compile(source, name, raw=True)
    header = (
        f'"""{name} as compiled by jinja2 {jinja2.__version__} (see `html.COMPILED`).\n\n'
        "Made by `auditor.report.html.compiled_module`, not by hand: `python -m pytest\n"
        "tests/test_report_compiled.py --update-golden` writes it anew. A module whose KEY does\n"
        "not match its template is not used (the template is compiled from its source).\n"
        '"""\n\n'
        "# ruff: noqa\n# mypy: ignore-errors\n# fmt: off\n"
        f'KEY = "{compiled_key(env, source)}"\n'
    )
    return header + _shifted(code.rstrip(), header.count("\n")) + "\n"


_DEBUG_INFO = "\ndebug_info = '"


def _shifted(code: str, lines: int) -> str:
    """jinja2's code with its `debug_info` (template line = code line, `&`-joined) moved down
    by the `lines` of the header above it, so an error names the template's right line."""
    head, found, tail = code.rpartition(_DEBUG_INFO)
    if not found:
        return code
    pairs, quote, rest = tail.partition("'")
    moved = "&".join(
        f"{template}={int(line) + lines}"
        for template, line in (pair.split("=") for pair in pairs.split("&") if pair)
    )
    return f"{head}{found}{moved}{quote}{rest}"


def _source(env: jinja2.Environment, name: str) -> str:
    loader = env.loader
    assert loader is not None
    return loader.get_source(env, name)[0]


class _Loader(jinja2.PackageLoader):
    """The package's templates, each from its compiled module (`COMPILED`) when that module was
    made for this very template, jinja2 and environment; else compiled from the source."""

    def load(
        self,
        environment: jinja2.Environment,
        name: str,
        globals: MutableMapping[str, Any] | None = None,
    ) -> jinja2.Template:
        compiled = self._compiled(environment, name, {} if globals is None else globals)
        return compiled if compiled is not None else super().load(environment, name, globals)

    def _compiled(
        self, environment: jinja2.Environment, name: str, globals: MutableMapping[str, Any]
    ) -> jinja2.Template | None:
        module = COMPILED.get(name)
        spec = importlib.util.find_spec(module) if module else None
        get_code = getattr(spec.loader, "get_code", None) if spec else None
        if module is None or get_code is None:
            return None
        source, filename, uptodate = self.get_source(environment, name)
        code = get_code(module)
        # The key is read before the code runs: code made by another jinja2 may not even import
        if code is None or compiled_key(environment, source) not in code.co_consts:
            return None
        try:
            template = environment.template_class.from_code(environment, code, globals, uptodate)
        except Exception:
            return None
        if template.root_render_func.__globals__.get("KEY") != compiled_key(environment, source):
            return None
        template.filename = filename  # an error in the template names the template's line
        return template


@cache
def environment() -> jinja2.Environment:
    """The template environment: autoescape on, undefined names are errors."""
    env = jinja2.Environment(
        loader=_Loader("auditor.report", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        finalize=finalize,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters.update(
        when=_when,
        day=day,
        short=shorten,
        prose=_prose,
        sortcontrols=sort_controls,
        before=display.change_before,
        after=display.change_after,
        kind=display.change_kind,
    )
    return env


@cache
def _style() -> tuple[Markup, str]:
    """The stylesheet (our own static file, not data) and its CSP hash."""
    loader = environment().loader
    assert loader is not None
    css = loader.get_source(environment(), "style.css.j2")[0]
    return Markup(css), _hash(css)


def group_by_rule(
    findings: list[Finding], cap: int = ROWS_PER_RULE, *, in_order: bool = False
) -> list[RuleGroup]:
    """Shown findings grouped by rule (worst severity first), at most `cap` rows each
    (`in_order`: the findings are in report order already, `sort_findings` is not needed)."""
    groups: dict[str, list[Finding]] = {}
    for f in findings if in_order else sort_findings(findings):
        groups.setdefault(f.rule_id, []).append(f)
    out = []
    for items in groups.values():
        counts: dict[str, int] = {}
        for f in items:
            counts[f.status] = counts.get(f.status, 0) + 1
        rows, oldest = kept_rows(items, cap)
        out.append(RuleGroup(items[0], rows, len(items), tuple(sorted(counts.items())), oldest))
    return sorted(out, key=lambda g: (severity_rank(g.first.severity), g.first.rule_id))


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "x"


def anchors(prefix: str, names: Iterable[str]) -> dict[str, str]:
    """A readable, unique fragment id per name (`control-soc2-cc6-1`); names whose slugs
    collide get `-2`, `-3` … in sorted order, so the ids are stable run to run."""
    out: dict[str, str] = {}
    taken: set[str] = set()
    for name in sorted(set(names)):
        out[name] = first_free(f"{prefix}-{_slug(name)}", taken, lambda b, n: f"{b}-{n}")
    return out


#: The order results are listed in a control's drill-down: what needs attention first.
DRILL_ORDER = ("fail", "error", "unknown", "waived", "pass", "not_applicable")


#: Characters of a value or path shown in a drill-down evidence line (the full value is in the
#: result's row, one link away).
DRILL_VALUE = 60
DRILL_PATH = 80
DRILL_MESSAGE = 160


@dataclass(frozen=True)
class EvidenceGroup:
    """Results of one rule and status that rest on the same check (the first evidence item's
    path and expectation), each found value with the results that found it."""

    check: Markup  # empty when the results have no evidence item (their message is shown)
    found: tuple[tuple[Markup, tuple[Finding, ...]], ...]


@dataclass(frozen=True)
class StatusResults:
    """One rule's results of one status, for a control's drill-down."""

    status: str
    count: int
    groups: tuple[EvidenceGroup, ...]


@dataclass(frozen=True)
class RuleResults:
    """One rule's shown results (open and passing), by status, for a control's drill-down."""

    first: Finding
    statuses: tuple[StatusResults, ...]
    more: int  # results beyond the per-rule cap (counted, not linked)
    cut: str = ""  # "the oldest; " when those are the rule's oldest results


@dataclass(frozen=True)
class ControlDrill:
    """One control with the results of every rule that maps to it."""

    row: ControlRow
    rules: tuple[RuleResults, ...]


def _code(text: str, limit: int) -> str:
    """`text` shortened, cleaned and escaped, as code (markup as text: `Markup % value` per
    piece cost more than the rest of the drill-down's lines)."""
    return f"<code>{html_escape(clean_text(shorten(text, limit)))}</code>"


def evidence_check(f: Finding) -> Markup:
    """What the result's first evidence item checked: `$.path` expected to be `true`."""
    if not f.evidence:
        return Markup("")
    p = display.evidence_parts(f.evidence[0])
    out = _code(p.path, DRILL_PATH)
    if p.operator is not None:
        # " expected", not the evidence line's " — expected": the drill-down's line reads
        # "checked: found — results", and its dash separates the results
        out += f" expected {html_escape(clean_text(p.operator))}"
        if p.expected is not None:
            out += " " + _code(p.expected, DRILL_VALUE)
    return Markup(out)


def evidence_found(f: Finding) -> Markup:
    """What the result found there (`found "low"`, `found absent`, and how many more evidence
    items its row lists); the message when it has no evidence item."""
    if not f.evidence:
        return Markup(html_escape(clean_text(shorten(f.message, DRILL_MESSAGE))))
    p = display.evidence_parts(f.evidence[0])
    found = p.found
    value = _code(found, DRILL_VALUE) if found is not None else html_escape(display.ABSENT_WORD)
    out = f"found {value}"
    if p.note is not None:
        out += f" ({html_escape(clean_text(shorten(p.note, DRILL_MESSAGE)))})"
    if len(f.evidence) > 1:
        out += f" (+{len(f.evidence) - 1} more)"
    return Markup(out)


def _evidence_key(f: Finding) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """What `evidence_check` and `evidence_found` show, before values are shortened: results
    share a line only when they checked and found the very same thing."""
    if not f.evidence:
        return (), (f.message,)
    p = display.evidence_parts(f.evidence[0])
    return (p.path, p.operator, p.expected), (p.found, p.note, len(f.evidence))


#: The most evidence lists whose `_evidence_key` a drill-down keeps (emptied when full).
KEYS_LIMIT = 4096


def _shared_key(
    f: Finding, keys: dict[int, tuple[Any, tuple[Any, ...], tuple[Any, ...]]]
) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """`_evidence_key(f)`, made once per evidence list (results share their evidence lists)."""
    evidence = f.evidence
    if not evidence:
        return _evidence_key(f)
    known = keys.get(id(evidence))
    if known is None or known[0] is not evidence:
        if len(keys) >= KEYS_LIMIT:
            keys.clear()
        known = keys[id(evidence)] = (evidence, *_evidence_key(f))
    return known[1], known[2]


def _evidence_groups(
    findings: Iterable[Finding],
    keys: dict[int, tuple[Any, tuple[Any, ...], tuple[Any, ...]]] | None = None,
) -> tuple[EvidenceGroup, ...]:
    """Results grouped by check, then by what they found, in report order (`keys`: the
    evidence keys made so far, by evidence list)."""
    keys = {} if keys is None else keys
    checks: dict[tuple[Any, ...], tuple[Markup, dict[tuple[Any, ...], list[Finding]]]] = {}
    for f in findings:
        evidence = f.evidence
        known = keys.get(id(evidence)) if evidence else None
        if known is not None and known[0] is evidence:  # `_shared_key`, without its call
            check, found = known[1], known[2]
        else:
            check, found = _shared_key(f, keys)
        if check not in checks:
            checks[check] = (evidence_check(f), {})
        checks[check][1].setdefault(found, []).append(f)
    return tuple(
        EvidenceGroup(shown, tuple((evidence_found(fs[0]), tuple(fs)) for fs in by_found.values()))
        for shown, by_found in checks.values()
    )


def drill_down(rows: list[ControlRow], groups: Iterable[RuleGroup]) -> list[ControlDrill]:
    """Per control, every shown result of every rule mapped to it, by status, each with a
    compact evidence line (results with the same evidence share one line)."""
    by_rule: dict[str, list[RuleGroup]] = {}
    for g in groups:
        by_rule.setdefault(g.first.rule_id, []).append(g)
    results: dict[str, RuleResults] = {}
    keys: dict[int, tuple[Any, tuple[Any, ...], tuple[Any, ...]]] = {}
    for rule, gs in by_rule.items():
        statuses: dict[str, list[Finding]] = {s: [] for s in DRILL_ORDER}
        for g in gs:
            for f in g.rows:
                statuses.setdefault(f.status, []).append(f)
        results[rule] = RuleResults(
            gs[0].first,
            tuple(
                StatusResults(s, len(fs), _evidence_groups(fs, keys))
                for s, fs in statuses.items()
                if fs
            ),
            sum(g.more for g in gs),
            "the oldest; "
            if all(g.oldest_cut for g in gs if g.more) and any(g.more for g in gs)
            else "",
        )
    return [
        ControlDrill(r, tuple(results[rule] for rule in r.rules if rule in results)) for r in rows
    ]


def css_string(text: str) -> str:
    """`text` as a quoted CSS string: every character but letters, digits, space and a few
    marks as a hex escape (its trailing space is part of the escape), so data can never end
    the string, the rule or the style element."""
    safe = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 .,:_-/@")
    return '"' + "".join(c if c in safe else f"\\{ord(c):06x} " for c in text) + '"'


def page_style(data: ReportData) -> str:
    """The print header of this report (organisation and run id), as its own style element."""
    org = clean_text(shorten(data.org)) if data.org else "organisation not named"
    title = "Pre-change review" if data.mode == "review" else "Compliance report"
    head = css_string(f"{title} \u00b7 {org}")
    run = css_string(f"run {clean_text(shorten(data.run_id))}")
    return f"@page {{ @top-left {{ content: {head}; }} @top-right {{ content: {run}; }} }}"


def _hash(css: str) -> str:
    digest = base64.b64encode(hashlib.sha256(css.encode("utf-8")).digest()).decode("ascii")
    return f"'sha256-{digest}'"


def _change_rows(changes: tuple[Change, ...], cap: int = 500) -> tuple[tuple[Change, ...], int]:
    return changes[:cap], max(0, len(changes) - cap)


def context(data: ReportData, caps: Caps = Caps()) -> dict[str, Any]:
    """Everything the template shows, computed once (`caps`: how many rows of each long list)."""
    css, css_hash = _style()
    page_css = page_style(data)
    introduced = set(data.review.introduced) if data.review else set()
    changes, more_changes = _change_rows(data.review.changes if data.review else ())
    ordered = report_order(data)  # one sort for both lists (shared with report.md)
    groups = group_by_rule(
        [f for f in ordered if f.status in TRACKED_STATUSES], caps.rows_per_rule, in_order=True
    )
    passing = group_by_rule(
        [f for f in ordered if f.status in QUIET_STATUSES], caps.rows_per_rule, in_order=True
    )
    controls = control_rows(data.findings)
    rule_ids = {f.rule_id for f in data.findings}
    rule_anchor = anchors("rule", rule_ids)
    control_anchor = anchors("control", [c.control for c in controls])
    chart = failing_chart(failing_not_waived(data))
    return {
        "d": data,
        "css": css,
        "page_css": Markup(page_css),
        "csp": f"default-src 'none'; style-src {css_hash} {_hash(page_css)}; img-src 'none'; "
        "base-uri 'none'; form-action 'none'",
        "open_rules": {g.first.rule_id for g in groups},
        "pass_rules": {g.first.rule_id for g in passing},
        "rule_total": sum(len(p.rule_ids) for p in data.policy_files),
        "rules_evaluated": rules_evaluated(data),
        "left_out": rules_left_out(data),
        "output_headline": output_headline(data),
        "by_target": rules_by_target(data),
        "passing": passing,
        "drill": drill_down(controls, [*groups, *passing]),
        "rule_anchor": rule_anchor,
        "pass_anchor": anchors("pass", rule_ids),
        "control_anchor": control_anchor,
        "rows": RowWriter(
            rule_anchor,
            control_anchor,
            caps.rows_per_rule,
            caps.rest,
            waiver_notes=display.WaiverNotes(data.waivers),
        ),
        "waivers_as_of": display.waivers_as_of_text(
            data.waivers.as_of, len(data.waivers.expired_since_as_of)
        )
        if data.waivers.as_of
        else "",
        "severity_counts": severity_counts(data.findings),
        "status_counts": status_counts(data.findings),
        "new": new_count(data.findings),
        "new_waived": new_waived_count(data.findings),
        "upgrade_note": upgrade_note(data),
        "no_comparison": no_comparison_note(data),
        "not_judged": not_judged(data),
        "audited": what_was_audited(data),
        "settings_judged": settings_judged(data),
        "last_sync": last_sync_text(data.source) if data.source else "",
        "integrity_coverage": integrity_coverage_text(data.source) if data.source else "",
        "controls": controls,
        "groups": groups,
        "chart": chart,
        "chart_rows": chart.spans[-caps.chart_rows :] if chart and caps.chart_rows else (),
        "chart_cap": caps.chart_rows,
        # the failing settings rules a waiver covers at the newest revision charted
        "chart_waived": data.waived_by_revision[-1][1] if data.waived_by_revision else 0,
        "introduced_counts": introduced_counts(data),
        "introduced": [f for f in shown_findings(data) if f.fingerprint in introduced]
        if introduced
        else [],
        "changes": changes,
        "more_changes": more_changes,
        "rows_per_rule": ROWS_PER_RULE,
        "appendix_cap": caps.appendix_rows,
        # the newest revisions (the audited one, the settings in force, among them)
        "revisions_shown": data.inputs.revisions_evaluated[-caps.appendix_rows :]
        if caps.appendix_rows
        else (),
        "appendix_rest": caps.rest_inputs,
    }


def iter_html(data: ReportData, caps: Caps = Caps()) -> Iterator[str]:
    """The report in chunks (keeps memory flat for large runs)."""
    return environment().get_template("report.html.j2").generate(context(data, caps))


def render_html(data: ReportData, caps: Caps = Caps()) -> str:
    """The whole self-contained HTML report (`caps`: how many rows of each long list)."""
    return "".join(iter_html(data, caps))
