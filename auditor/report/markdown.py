"""The Markdown report: GitHub-flavoured, for a PR comment or a CI job summary.

Takes `ReportData`, gives `report.md`: a summary table, the scope (organisation, API, period,
policy packs, rules evaluated and left out, populations), new findings first, details in
`<details>` blocks, never longer than the limit (65,536 characters for a PR comment) and saying
how many findings were left out.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from auditor.common.escape import fold, html_inline, md_escape, md_inline, shorten
from auditor.findings.finding import Finding, attribution_text
from auditor.models import OPEN_STATUSES, TRACKED_STATUSES, Change, Evidence, FindingRecord
from auditor.report import display
from auditor.report.model import (
    ReportData,
    compared,
    incomplete_headline,
    integrity_coverage_text,
    introduced_text,
    last_sync_text,
    new_severity_counts,
    new_text,
    no_comparison_note,
    not_judged,
    report_order,
    settings_judged,
    severity_counts,
    status_counts,
    upgrade_note,
)
from auditor.report.usage import usage_markdown

#: The first line of a review's Markdown: a CI job finds its earlier PR comment by it and
#: edits that comment instead of adding one per push (invisible once rendered).
REVIEW_MARKER = "<!-- auditor-review -->"
PR_COMMENT_LIMIT = 65536
CHANGE_ROWS = 200
EVIDENCE_PER_FINDING = 20
RESOLVED_ROWS = 50
SCOPE_PACKS = 10
WAIVER_ROWS = 5  # per state (expired, expiring, stale); the rest are counted
_RESERVE = 400  # room kept for the "N more not shown" notice and the footer
_ICON = {"critical": "🔴", "high": "🟠", "medium": "🟡", "low": "🔵", "info": "⚪"}


def _code(text: str) -> str:
    """Display text (a path, a value) as inline code, cut at 300 characters."""
    return f"<code>{md_inline(shorten(text, 300))}</code>"


def _cell(text: str | None) -> str:
    return display.ABSENT if text is None else f"<code>{md_inline(shorten(text, 300))}</code>"


def md_prose(text: str, limit: int = 500, *, links: bool = False) -> str:
    """Escaped prose with its `code` spans shown as code; `links`: a policy's own prose, its
    addresses and emoji left live (`md_escape`)."""
    pieces = display.code_spans(shorten(fold(text), limit))
    return "".join(
        f"<code>{md_escape(p)}</code>" if is_code else md_escape(p, links=links)
        for is_code, p in pieces
    )


def _path(path: str) -> str:
    return f"<code>{md_inline(path, 300)}</code>"


def _header(d: ReportData) -> Iterator[str]:
    if d.review:
        yield f"{REVIEW_MARKER}\n"
        yield f"## Pre-change review: {md_inline(d.review.proposed_file)}\n\n"
        yield f"Against {md_inline(d.review.against)}. "
    else:
        yield f"## Compliance run {md_inline(d.run_id)}\n\n"
    fail_on = (
        "nothing (<code>--fail-on none</code>)"
        if d.fail_on == "none"
        else f"{md_inline(d.fail_on)} and above"
    )
    yield (
        f"auditor {md_inline(d.tool_version)} · {d.generated_at:%Y-%m-%d %H:%M UTC} · "
        f"API {md_inline(d.api_address)} · fail on {fail_on}\n\n"
    )
    if not d.complete:
        yield f"> [!WARNING]\n> **Incomplete:** {incomplete_headline(d, md_inline)}.\n"
        for reason in d.not_evaluated[:10]:
            yield f"> - {md_inline(reason, 300)}\n"
        if len(d.not_evaluated) > 10:
            yield f"> - {len(d.not_evaluated) - 10} more not shown\n"
        for note in d.output_notes:  # (a few, each said: not items not evaluated)
            yield f"> - {md_inline(note, 300)}\n"
        yield "\n"
    yield from _data_quality(d)
    yield from _waivers(d)


def _data_quality(d: ReportData) -> Iterator[str]:
    """Odd values the API sent in fields the audit can do without (items kept, read as absent)."""
    if not d.data_quality:
        return
    yield (
        f"> [!NOTE]\n> **Data quality:** {len(d.data_quality)} warning(s) in the API data; "
        "the items were kept and the odd values read as absent.\n"
    )
    for w in d.data_quality[:10]:
        yield f"> - {md_inline(w.describe(), 300)}\n"
    if len(d.data_quality) > 10:
        yield f"> - {len(d.data_quality) - 10} more in findings.json\n"
    yield "\n"


def _waivers(d: ReportData) -> Iterator[str]:
    """The waivers someone must act on, as report.html lists them: expired (their findings
    count again), expiring within 14 days, stale (they waive nothing)."""
    w = d.waivers
    groups = (
        ("expired since", w.expired_since_as_of),
        ("expired", w.expired),
        ("expiring", w.expiring_soon),
        ("stale", w.stale),
    )
    as_of = w.as_of if w.as_of and (w.in_force or any(g for _, g in groups)) else None
    if not any(g for _, g in groups) and as_of is None:
        return
    when = f" by {as_of:%Y-%m-%d}" if as_of else ""
    counts = {
        "expired since": "judged in force then, expired before this report",
        "expired": f"expired{when} (no longer waiving)",
        "expiring": "expiring within 14 days",
        "stale": "stale (waiving nothing)",
    }
    said = ", ".join(f"{len(g)} {counts[name]}" for name, g in groups if g)
    said = f"{said}." if said else ""
    if as_of is not None:
        lead = display.waivers_as_of_text(as_of, len(w.expired_since_as_of))
        said = f"{lead}. {said}" if said else f"{lead}."
    yield f"> [!NOTE]\n> **Waivers:** {said}\n"
    for name, group in groups:
        for x in group[:WAIVER_ROWS]:
            end = f"{'until' if name in ('expiring', 'stale') else 'expired'} {x.expires:%Y-%m-%d}"
            if name == "expired since" and as_of is not None:
                end = (
                    f"in force on {as_of:%Y-%m-%d}; expired {x.expires:%Y-%m-%d}, "
                    "before this report"
                )
            yield (
                f"> - {name}: {md_inline(x.rule_id, 100)} on {md_inline(x.subject, 100)}, "
                f"{end}, owner {md_inline(x.owner, 100)}\n"
            )
        if len(group) > WAIVER_ROWS:
            yield f"> - {len(group) - WAIVER_ROWS} more {name}: see report.html\n"
    yield "\n"


def _summary(d: ReportData) -> Iterator[str]:
    sev = severity_counts(d.findings)
    if d.review:
        introduced = set(d.review.introduced)
        new_by_sev = severity_counts(tuple(f for f in d.findings if f.fingerprint in introduced))
    else:
        new_by_sev = new_severity_counts(d.findings)
    if d.review is None and not compared(d):  # no New column: nothing was compared
        yield "| Severity | Open |\n|---|---:|\n"
        yield from (f"| {_ICON[s]} {s} | {n} |\n" for s, n in sev.items())
    else:
        new = "Introduced" if d.review else "New"
        yield f"| Severity | Open | {new} |\n|---|---:|---:|\n"
        for s, n in sev.items():
            yield f"| {_ICON[s]} {s} | {n} | {new_by_sev[s]} |\n"
    counts = " · ".join(f"{n} {s.replace('_', ' ')}" for s, n in status_counts(d.findings).items())
    yield f"\n**Results:** {counts}  \n"
    if d.review:
        gone = len(d.review.no_longer_applies)
        inapplicable = f" · **No longer applies:** {gone}" if gone else ""
        yield (
            f"**Introduced:** {introduced_text(d)} · **Fixed:** {len(d.review.fixed)}"
            f"{inapplicable}\n\n"
        )
    elif not compared(d):
        why = md_prose(no_comparison_note(d), 1000)
        yield f"**Not compared with an earlier run:** {why}.\n\n"
    else:
        resolved = f"**Resolved since previous run:** {len(d.resolved)}"
        if d.left_window:  # not fixed: no longer judged (README: the lifecycle)
            resolved += f" · **Left the usage window:** {len(d.left_window)}"
        if d.not_reevaluated:
            resolved += f" · **Not evaluated again:** {len(d.not_reevaluated)}"
        yield f"**New:** {new_text(d.findings)} · {resolved}\n\n"
        note = upgrade_note(d)
        if note:  # said here too when nothing was resolved (no Resolved section)
            yield f"**Note:** {md_prose(note)}.\n\n"


def _scope(d: ReportData) -> Iterator[str]:
    """What the audit covered: organisation, API, period, packs, rules and populations."""
    sc = d.scope
    yield "### Scope\n\n"
    org = md_inline(d.org) if d.org else "not named (set <code>--org</code>)"
    yield f"- **Organisation:** {org}\n"
    yield f"- **API:** {md_inline(d.api_address)}\n"
    if d.source is not None:
        yield f"- **Data fetched:** last sync {md_prose(last_sync_text(d.source))}\n"
        yield f"- **Integrity check:** {md_prose(integrity_coverage_text(d.source))}\n"
    if sc and sc.period_start and sc.period_end:
        yield (
            f"- **Period:** {sc.period_start:%Y-%m-%d %H:%M} to {sc.period_end:%Y-%m-%d %H:%M} "
            "UTC (first to last settings revision evaluated); "
            f"report time {d.generated_at:%Y-%m-%d %H:%M UTC}\n"
        )
    if sc and sc.as_of:
        yield f"- **As of:** {sc.as_of:%Y-%m-%d %H:%M UTC} (<code>--at</code>)\n"
    if sc and not d.review:
        yield f"- **Settings judged:** {md_prose(settings_judged(d))}\n"
    packs = ", ".join(
        f"{md_inline(p.path, 200)} ({len(p.rule_ids)} rules, sha256 <code>{p.sha256}</code>)"
        for p in d.policy_files[:SCOPE_PACKS]
    )
    more = len(d.policy_files) - SCOPE_PACKS
    yield f"- **Policy packs:** {packs}{f', {more} more' if more > 0 else ''}\n"
    for f in d.input_files:
        role = f.role[0].upper() + f.role[1:]
        yield f"- **{role}:** {md_inline(f.path, 200)} (sha256 <code>{f.sha256}</code>)\n"
    if sc is None:  # a review evaluates a proposal: no period or populations
        yield "\n"
        return
    rules = ", ".join(f"{n} {md_inline(t)}" for t, n in sc.rules_by_target)
    yield f"- **Rules evaluated:** {rules or 'none'}\n"
    for target, n, why in sc.rules_left_out:
        yield f"- **Rules left out:** {n} {md_inline(target)}, not evaluated: {md_prose(why)}\n"
    yield (
        f"- **Populations:** {sc.revisions} settings revisions, {sc.change_steps} change steps, "
        f"{sc.repositories} repositories, {sc.reports} readiness reports "
        f"({sc.reports_evaluated} evaluated: the newest per repository)\n\n"
    )


def _change_row(c: Change) -> str:
    path = (f"{_path(c.old_path)} → " if c.old_path else "") + _path(c.path)
    before, after = _cell(display.change_before(c)), _cell(display.change_after(c))
    return f"| {path} | {display.change_kind(c)} | {before} | {after} |\n"


def _review(d: ReportData) -> Iterator[str]:
    if d.review is None:
        return
    r = d.review
    yield (
        f"### Proposed change\n\n{len(r.changes)} change(s): {introduced_text(d)} finding(s) "
        f"introduced, {len(r.fixed)} fixed, {r.unchanged} unchanged.\n\n"
    )
    if r.changes:
        yield "| Path | Change | Before | After |\n|---|---|---|---|\n"
        yield from (_change_row(c) for c in r.changes[:CHANGE_ROWS])
        if len(r.changes) > CHANGE_ROWS:
            yield f"\n{len(r.changes) - CHANGE_ROWS} more change(s) not shown.\n"
        yield "\n"
    for f in r.fixed:
        label = md_inline(f.subject.label)
        yield f"- ✅ fixes {md_inline(f.rule_id)} {md_inline(f.title)} — {label}\n"
    for f in r.no_longer_applies:
        label = md_inline(f.subject.label)
        yield f"- ⚪ no longer applies {md_inline(f.rule_id)} {md_inline(f.title)} — {label}\n"
    if r.fixed or r.no_longer_applies:
        yield "\n"


def _resolved(d: ReportData) -> str:
    """The previous run's findings this run resolved, then those it did not judge again
    (`not_judged`), each kind a list; none in a review (its resolved findings are the fixed
    ones)."""
    if d.review:
        return ""
    note = upgrade_note(d)
    resolved = ("Resolved since the previous run", f"**Note:** {md_prose(note)}." if note else "")
    kinds = [(*resolved, d.resolved)] if d.resolved else []
    kinds += not_judged(d)
    return "".join(_records(*kind) for kind in kinds)


def _records(summary: str, words: str, records: Sequence[FindingRecord]) -> str:
    lines = [f"<details><summary>{summary}: {len(records)}</summary>\n\n"]
    if words:
        lines.append(f"{words}\n\n")
    for p in records[:RESOLVED_ROWS]:
        rule, severity = md_inline(p.rule_id, 200), md_inline(p.severity, 20)
        lines.append(f"- {rule} ({severity}) — {md_inline(p.subject_key, 300)}\n")
    if len(records) > RESOLVED_ROWS:
        lines.append(f"- {len(records) - RESOLVED_ROWS} more not shown\n")
    lines.append("\n</details>\n\n")
    return "".join(lines)


def _evidence(e: Evidence) -> str:
    line = display.evidence_line(e, code=_code, text=md_inline, absent=lambda w: f"*{w}*")
    return f"- {line}\n"


def finding_block(f: Finding, note: str = "") -> str:
    """One finding as a `<details>` block (summary line in HTML, body in Markdown); `note`:
    what it says of an expired waiver (`display.WaiverNotes`)."""
    life = f" · {f.lifecycle}" if f.lifecycle else ""
    status = f.status if f.raw_status == f.status else f"{f.status} (was {f.raw_status})"
    summary = (
        f"{_ICON.get(f.severity, '')} <b>{html_inline(f.rule_id)}</b> "
        f"{html_inline(f.title, 200)} — {html_inline(f.subject.label, 200)} · "
        f"{status.replace('_', ' ')}{life}"
    )
    lines = [f"<details><summary>{summary}</summary>\n\n", f"{md_inline(f.message)}\n\n"]
    lines += [_evidence(e) for e in f.evidence[:EVIDENCE_PER_FINDING]]
    if len(f.evidence) > EVIDENCE_PER_FINDING:
        lines.append(f"- {len(f.evidence) - EVIDENCE_PER_FINDING} more evidence item(s)\n")
    if attribution_text(f):
        lines.append(f"- {md_inline(attribution_text(f))}\n")
    if f.waiver:
        w = f.waiver
        lines.append(
            f"- waived until {w.expires:%Y-%m-%d} by {md_inline(w.owner)}: "
            f"{md_inline(w.reason, 300)}\n"
        )
    if note:
        lines.append(f"- **{md_inline(note, 400)}**\n")
    if f.remediation and f.status in OPEN_STATUSES:
        lines.append(f"- **Remediation:** {md_prose(f.remediation, links=True)}\n")
    ident = f"severity {md_inline(f.severity)} · fingerprint {md_inline(f.fingerprint[:12])}"
    lines.append(f"- {ident}\n\n</details>\n\n")
    return "".join(lines)


def _order(d: ReportData) -> list[Finding]:
    """Introduced by the proposal first, then new, then other open findings, then waived;
    report order (`sort_key`) within each.

    Sorted in report order by `sort_findings` (keys shared per rule and subject), then
    stably by a small integer, so 100,000s of findings never need a key tuple each."""
    introduced = set(d.review.introduced) if d.review else set()

    def group(f: Finding) -> int:
        return (
            (f.fingerprint not in introduced) * 4
            + (f.lifecycle != "new") * 2
            + (f.status == "waived")
        )

    def group_of_run(f: Finding) -> int:  # nothing introduced: the same order without the
        return (f.marks[2] != "new") * 2 + (f.status == "waived")  # fingerprints formatted

    items = [f for f in report_order(d) if f.status in TRACKED_STATUSES]  # = sorting the shown
    items.sort(key=group if introduced else group_of_run)
    return items


def render_markdown(data: ReportData, *, limit: int = PR_COMMENT_LIMIT) -> str:
    """The Markdown report, at most `limit` characters."""
    head = "".join([*_header(data), *_summary(data)])
    review = "".join(_review(data))
    budget = limit - _RESERVE
    parts = [head]
    scope = "".join(_scope(data))
    if len(head) + len(scope) <= budget:
        parts.append(scope)
    if sum(len(p) for p in parts) + len(review) <= budget:  # the scope counts too
        parts.append(review)
    elif review:
        parts.append("Proposed change too large to list here: see report.html.\n\n")
    resolved = _resolved(data)
    if sum(len(p) for p in parts) + len(resolved) <= budget:
        parts.append(resolved)
    usage = usage_markdown(data.usage, data.findings)
    if sum(len(p) for p in parts) + len(usage) <= budget:
        parts.append(usage)
    findings = _order(data)
    parts.append(f"### Findings ({len(findings)})\n\n" if findings else "No open findings.\n\n")
    used = sum(len(p) for p in parts)
    shown = 0
    notes = display.WaiverNotes(data.waivers)
    for f in findings:
        block = finding_block(f, notes(f))
        if used + len(block) > budget:
            break
        parts.append(block)
        used += len(block)
        shown += 1
    if shown < len(findings):
        parts.append(
            f"**{len(findings) - shown} more not shown** (the comment limit is "
            f"{limit} characters): see report.html or findings.json.\n\n"
        )
    parts.append(
        f"<sub>auditor {md_inline(data.tool_version, 40)} · run "
        f"{md_inline(data.run_id, 80)}</sub>\n"
    )
    return "".join(parts)
