"""The HTML report's repeated rows, written as plain Python string building.

Takes the findings, drill-down and input records the template would loop over, gives each table
body as one piece of markup. These rows are most of the report (one per shown result, one per
result in each control's drill-down, one per repository and input), and a template macro call and
a dozen small chunks per row made writing the report cost more than the rest of the five files.

The bytes are the ones the template's markup gave: every value from data goes through `Escaper`,
which is exactly the template's own output path (the environment's `finalize`, `clean_text`, then
`markupsafe.escape`, so the same characters are escaped the same way), computed once per distinct
string (rule ids, labels, paths and values repeat thousands of times) in caches of at most
`CACHE_LIMIT` entries. Only markup this module builds from escaped pieces is marked safe; nothing
from data is. A control's drill-down is given a rule at a time, so the page stays a stream.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import datetime
from typing import Any

from markupsafe import Markup, escape

from auditor.common.escape import clean_text, safe_url, shorten
from auditor.findings.finding import Finding, attribution_text, sort_controls
from auditor.models import Evidence
from auditor.report import display
from auditor.report.model import PerAttribution, ReadinessRow


def html_escape(text: str) -> str:
    """`markupsafe.escape` of a plain string, as a plain string (the same five characters, the
    same entities), without making a `Markup` object per call."""
    return (
        text.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace("'", "&#39;")
        .replace('"', "&#34;")
    )


#: The most entries one cache keeps: a full cache is emptied and fills again. Words that repeat
#: (rule ids, statuses, labels, paths, values) are back after a few rows; text of one row only
#: (fingerprints, messages, authors) would otherwise stay in memory until the page is written
#: (6 MB more at the peak of writing 60,000 shown rows; the bound costs no measurable time).
CACHE_LIMIT = 4096

#: The most characters of drill-down rows kept for the other controls a rule maps to (all of
#: a 10,000-revision run's 86 rules: 0.8 million); past it the kept rows are let go.
DRILL_CACHE_CHARS = 2_000_000

#: Value types whose equal values are always written alike (as long as the type is part of the key).
_EXACT = frozenset({str, int, bool, type(None)})


def finalize(value: Any) -> Any:
    """The report template's `finalize`: every value cleaned on its way out; non-text objects
    (e.g. locations) become clean text, markup and numbers pass as they are."""
    if isinstance(value, Markup) or value is None or isinstance(value, int | float):
        return value
    return clean_text(value if isinstance(value, str) else str(value))


def day(value: datetime) -> str:
    """A date as the report shows it (`2026-11-25`): the template's `day` filter."""
    return value.strftime("%Y-%m-%d")


class Escaper:
    """`{{ value }}` of the report template (finalize, then autoescape) as text, with a cache for
    strings: the same rule ids, labels, paths and values are escaped once per report."""

    def __init__(self) -> None:
        self._cache: dict[str, str] = {}

    def __call__(self, value: Any) -> str:
        if type(value) is str:
            if value.isalnum():  # fingerprints, numbers, words: nothing to drop or escape
                return value
            cache = self._cache
            out = cache.get(value)
            if out is None:
                if len(cache) >= CACHE_LIMIT:
                    cache.clear()
                # printable text is what cleaning it gives (nothing to drop or show)
                out = cache[value] = html_escape(
                    value if value.isprintable() else clean_text(value)
                )
            return out
        if type(value) is int:  # digits and a sign (not a bool): nothing to clean or escape
            return str(value)
        return str(escape(finalize(value)))


class RowWriter:
    """The rows of one report (anchors fixed by the report; one escape cache for all rows, each
    cache at most `CACHE_LIMIT` entries)."""

    def __init__(
        self,
        rule_anchor: Mapping[str, str],
        control_anchor: Mapping[str, str],
        rows_per_rule: int,
        rest: str = "see findings.json for all",
        waiver_notes: Callable[[Finding], str] | None = None,
    ) -> None:
        self.esc = Escaper()
        # what a row says of an expired waiver, or one an `--at` run judged that expired since
        # (None: nothing, for every row: `WaiverNotes.none`)
        self._waiver_note = None if getattr(waiver_notes, "none", False) else waiver_notes
        self.rest = html_escape(rest)  # where the results beyond the limit are found
        self.rule_anchor = rule_anchor
        self.control_anchor = control_anchor
        self.limit = str(rows_per_rule)
        self._links: dict[tuple[str, ...], tuple[str, str]] = {}
        self._subjects: dict[tuple[str | None, str], str] = {}
        self._evidences: dict[tuple[Any, ...], str] = {}
        self._same_evidence: dict[int, tuple[tuple[Evidence, ...], str]] = {}
        self._statuses: dict[str, str] = {}
        self._since = PerAttribution(lambda f: self.esc(attribution_text(f)))
        self._cells: dict[tuple[str, str, str | None], str] = {}
        self._drills: dict[int, tuple[Any, str]] = {}
        self._drill_chars = 0  # of the rows in `_drills`
        self._rulelinks: dict[str, str] = {}
        self._badges: dict[str, Markup] = {}
        self._controllinks: dict[tuple[str, ...], Markup] = {}

    # -- pieces ------------------------------------------------------------------------------

    def _subject(self, f: Finding) -> str:
        s = f.subject
        key = (s.repo_url, s.label)
        out = self._subjects.get(key)
        if out is None:
            esc = self.esc
            url = s.repo_url and safe_url(s.repo_url)
            if url:
                out = f'<a href="{esc(url)}" rel="noreferrer noopener">{esc(s.label)}</a>'
            else:
                out = esc(s.label)
            if len(self._subjects) >= CACHE_LIMIT:
                self._subjects.clear()
            self._subjects[key] = out
        return out

    def _fingerprint(self, f: Finding, fp: str, escaped: str) -> str:
        """The fingerprint's cell (`escaped`: `esc(fp)`)."""
        esc = self.esc
        short = escaped[:12] if escaped is fp else esc(fp[:12])  # fp alphanumeric: as it is
        controls = f.controls
        if not controls:
            return f'<span class="muted mono">{short}</span>'
        link = self._links.get(controls)
        if link is None:
            cs = sort_controls(controls)
            link = self._links[controls] = (esc(self.control_anchor[cs[0]]), esc(", ".join(cs)))
        return (
            f'<a class="mono" href="#{link[0]}-{escaped}" title="this result in the control '
            f'drill-down ({link[1]})">{short}</a>'
        )

    def _evidence(self, evidence: tuple[Evidence, ...]) -> str:
        """The evidence list of a row, once per distinct evidence (results of one rule on many
        subjects often found the very same thing). Only evidence whose values are text, whole
        numbers, booleans or null is looked up, by value and type: `1` and `true` are equal
        in Python but not on the page (nor are `0.0` and `-0.0`, so floats are not cached).
        The very same list (results share their evidence lists) is looked up first by its
        identity, whatever its values."""
        same = self._same_evidence.get(id(evidence))
        if same is not None and same[0] is evidence:
            return same[1]
        out = self._evidence_by_value(evidence)
        if len(self._same_evidence) >= CACHE_LIMIT:
            self._same_evidence.clear()
        self._same_evidence[id(evidence)] = (evidence, out)
        return out

    def _evidence_by_value(self, evidence: tuple[Evidence, ...]) -> str:
        key: tuple[Any, ...] = evidence
        for e in evidence:
            kinds = (type(e.actual), type(e.expected))
            if kinds[0] not in _EXACT or kinds[1] not in _EXACT:
                return self._evidence_list(evidence)
            key += kinds
        out = self._evidences.get(key)
        if out is None:
            if len(self._evidences) >= CACHE_LIMIT:
                self._evidences.clear()
            out = self._evidences[key] = self._evidence_list(evidence)
        return out

    def _evidence_list(self, evidence: Iterable[Evidence]) -> str:
        out = ['<ul class="evidence">\n']
        for e in evidence:
            line = display.evidence_line(
                e, code=self._code, text=self._words, absent=lambda w: f"<em>{w}</em>"
            )
            out.append(f"<li>{line}</li>\n")
        out.append("</ul>\n")
        return "".join(out)

    def _code(self, text: str) -> str:
        return f"<code>{self.esc(shorten(text))}</code>"

    def _words(self, text: str) -> str:
        return self.esc(shorten(text))

    def _status(self, status: str) -> str:
        out = self._statuses.get(status)
        if out is None:
            esc = self.esc
            out = f'<span class="st {esc(status)}">{esc(status.replace("_", " "))}</span>'
            if len(self._statuses) >= CACHE_LIMIT:
                self._statuses.clear()
            self._statuses[status] = out
        return out

    def _status_cell(self, f: Finding) -> str:
        """The status, the status before a waiver when it differs, the lifecycle."""
        marks = f.marks  # `raw_status` and `lifecycle`, without a property call each
        status, raw, life = f.status, marks[0], marks[2]
        key = (status, raw, life)
        cell = self._cells.get(key)
        if cell is None:
            esc = self.esc
            cell = self._status(status)
            if raw != status:
                cell += f'<br><span class="muted">was {esc(raw)}</span>'
            if life:
                shown = esc(life)
                cell += f'<br><span class="life {shown}">{shown}</span>'
            if len(self._cells) >= CACHE_LIMIT:
                self._cells.clear()
            self._cells[key] = cell
        return cell

    def rulelink(self, rule_id: str) -> str:
        """A link to the rule's section, its id as code (made once per rule)."""
        out = self._rulelinks.get(rule_id)
        if out is None:
            esc = self.esc
            out = f'<a href="#{esc(self.rule_anchor[rule_id])}"><code>{esc(rule_id)}</code></a>'
            if len(self._rulelinks) >= CACHE_LIMIT:
                self._rulelinks.clear()
            self._rulelinks[rule_id] = out
        return out

    def sev(self, severity: str) -> str:
        """The severity badge."""
        s = self.esc(severity)
        return f'<span class="badge {s}">{s}</span>'

    # -- pieces of the page (markup for the template, where a macro wrote them before) -------

    def badge(self, severity: str) -> Markup:
        """`sev(severity)` as markup."""
        out = self._badges.get(severity)
        if out is None:
            if len(self._badges) >= CACHE_LIMIT:
                self._badges.clear()
            out = self._badges[severity] = Markup(self.sev(severity))
        return out

    def rulelinks(self, rule_ids: Iterable[str]) -> Markup:
        """Links to the rules' sections, comma-separated."""
        return Markup(", ".join(map(self.rulelink, rule_ids)))

    def controllinks(self, controls: tuple[str, ...]) -> Markup:
        """Links to the controls' drill-downs in natural order, comma-separated (made once per
        rule's controls)."""
        out = self._controllinks.get(controls)
        if out is None:
            esc = self.esc
            anchor = self.control_anchor
            links = (f'<a href="#{esc(anchor[c])}">{esc(c)}</a>' for c in sort_controls(controls))
            out = Markup(", ".join(links))
            if len(self._controllinks) >= CACHE_LIMIT:
                self._controllinks.clear()
            self._controllinks[controls] = out
        return out

    # -- table bodies ------------------------------------------------------------------------

    def findings(self, rows: Iterable[Finding], more: int, cut: str = "") -> Markup:
        """The rows of one rule's table in "Findings by rule" (with the "N more" row)."""
        esc = self.esc
        notes = self._waiver_note
        since = self._since  # made once per attribution; none: "" (what it gives for none)
        out = []
        for f in rows:
            fp = f.fingerprint
            escaped = fp if fp.isalnum() else esc(fp)
            cell = self._status_cell(f)
            waiver = ""
            w = f.marks[1]  # `f.waiver`, without a property call per row
            if w:
                ticket = f" ({esc(w.ticket)})" if w.ticket else ""
                waiver = (
                    f'<p class="muted">Waived until {esc(day(w.expires))} by {esc(w.owner)}'
                    f"{ticket}: {esc(shorten(w.reason))}</p>"
                )
            note = notes(f) if notes is not None else ""
            if note:
                waiver += f'<p class="waiver-note"><strong>{esc(note)}</strong></p>'
            out.append(
                f'<tr id="f-{escaped}">\n<td class="wrap">{self._subject(f)}<br>'
                f"{self._fingerprint(f, fp, escaped)}</td>\n<td>{cell}</td>\n"
                f'<td class="wrap"><span class="msg">{esc(shorten(f.message))}</span>\n'
                f"{self._evidence(f.evidence)}\n"
                f'{waiver}</td>\n<td class="wrap">{since(f) if f.since is not None else ""}</td>\n'
                "</tr>\n"
            )
        if more:
            out.append(
                f'<tr><td colspan="4" class="more">{more} more finding(s) of this rule not shown '
                f"({cut}limit {self.limit} per rule; {self.rest}).</td></tr>"
            )
        return Markup("".join(out))

    def passing(self, rows: Iterable[Finding], more: int, cut: str = "") -> Markup:
        """The rows of one rule's table in Appendix A (with the "N more" row)."""
        esc = self.esc
        out = []
        for f in rows:
            fp = f.fingerprint
            escaped = fp if fp.isalnum() else esc(fp)
            out.append(
                f'<tr id="f-{escaped}"><td class="wrap">{self._subject(f)}<br>'
                f"{self._fingerprint(f, fp, escaped)}</td><td>{self._status(f.status)}</td>"
                f'<td class="wrap"><span class="msg">{esc(shorten(f.message))}</span>\n'
                f"{self._evidence(f.evidence)}\n"
                "</td></tr>\n"
            )
        if more:
            out.append(
                f'<tr><td colspan="3" class="more">{more} more result(s) of this rule not shown '
                f"({cut}limit {self.limit} per rule; {self.rest}).</td></tr>"
            )
        return Markup("".join(out))

    def drill(self, rules: Iterable[Any], anchor: str) -> Iterator[Markup]:
        """The rows of one control's drill-down table (`RuleResults` of `auditor.report.html`):
        per rule and status, each evidence line with links to its results. A piece per rule:
        a control can map to hundreds of rules of up to 400 shown results each.

        A rule's rows differ from control to control only by the control's anchor (in each
        link's id), and a rule maps to a few controls: they are written once per rule with a
        NUL where the anchor goes (no escaped text holds one: `clean_text` drops it), and the
        anchor put in for each control."""
        ca = self.esc(anchor)
        for rr in rules:
            known = self._drills.get(id(rr))
            if known is None or known[0] is not rr:
                text = self._drill_rows(rr)
                if len(self._drills) >= CACHE_LIMIT or self._drill_chars > DRILL_CACHE_CHARS:
                    self._drills.clear()
                    self._drill_chars = 0
                known = self._drills[id(rr)] = (rr, text)
                self._drill_chars += len(text)
            yield Markup(known[1].replace("\x00", ca))

    def _drill_rows(self, rr: Any) -> str:
        """One rule's rows of a drill-down, a NUL for the control's anchor."""
        esc = self.esc
        ca = "\x00"
        out = []
        rule_id = rr.first.rule_id
        muted = f'<code class="muted">{esc(rule_id)}</code>'
        head = f"{self.rulelink(rule_id)} {self.sev(rr.first.severity)}"
        for sr in rr.statuses:
            out.append(f"<tr><td>{head}</td><td>{self._status(sr.status)} ({sr.count})</td>")
            out.append('<td class="wrap">')
            for g in sr.groups:
                out.append(f'<p class="ev">{esc(g.check)}: ' if g.check else '<p class="ev">')
                for n, (found, fs) in enumerate(g.found):
                    out.append(f"{esc(found)} — " if n == 0 else f"; {esc(found)} — ")
                    links = []
                    for f in fs:
                        fp = f.fingerprint
                        if not fp.isalnum():  # else as it is (`Escaper`)
                            fp = esc(fp)
                        links.append(f'<a href="#f-{fp}" id="{ca}-{fp}">{esc(f.subject.label)}</a>')
                    out.append(", ".join(links))
                out.append("</p>")
            out.append("</td></tr>\n")
            head = muted
        if rr.more:
            out.append(
                f'<tr><td>{muted}</td><td colspan="2" class="more">{rr.more} more result(s) '
                f"of {esc(rule_id)} not shown ({rr.cut}limit {self.limit} open and {self.limit} "
                f"passing per rule; {self.rest}).</td></tr>"
            )
        return "".join(out)

    def readiness(self, rows: Iterable[ReadinessRow]) -> Markup:
        """The rows of the repository readiness table."""
        esc = self.esc
        out = []
        for r in rows:
            url = safe_url(r.repo_url)
            repo = (
                f'<a href="{esc(url)}" rel="noreferrer noopener">{esc(r.repo_url)}</a>'
                if url
                else esc(r.repo_url)
            )
            out.append(
                f'<tr><td class="wrap">{repo}</td><td class="num">'
                f"{esc(display.level_text(r))}</td>"
                f'<td class="num">{esc(display.score_text(r))}</td>'
                f'<td class="num">{esc(display.age_text(r))}</td>'
                f"<td>{esc(display.clean_word(r))}</td><td><code>{esc(r.report_id)}</code></td>"
                "</tr>\n"
            )
        return Markup("".join(out))

    def revisions(self, rows: Iterable[tuple[Any, Any]]) -> Markup:
        """Rows of Appendix B's settings revisions: number and content hash."""
        return self._hashed(rows, '<td class="num">{}</td>')

    def reports(self, rows: Iterable[tuple[Any, Any]]) -> Markup:
        """Rows of Appendix B's readiness reports: id and content hash."""
        return self._hashed(rows, "<td><code>{}</code></td>")

    def _hashed(self, rows: Iterable[tuple[Any, Any]], first: str) -> Markup:
        """Rows of an item (in the `first` cell, escaped) and its content hash."""
        esc = self.esc
        return Markup(
            "".join(
                f'<tr>{first.format(esc(key))}<td class="mono">{esc(h)}</td></tr>\n'
                for key, h in rows
            )
        )
