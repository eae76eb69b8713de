"""`findings.sarif`: SARIF 2.1.0 for GitHub code scanning (one `ruleId` per rule).

Takes `ReportData`, gives SARIF JSON. Results are the fail / error / unknown findings; waived
ones only when `ReportData.sarif_include_waived` (as suppressed, with the waiver as
justification), because code scanning ignores `suppressions` and would show them as open
alerts. Each result points at `Finding.location` (a file under review), else the rule's place in
its policy file, else the proposed file (review mode) or the policy file that holds the rule;
a shipped pack at the path 0.2.0 gave it, `policies/baseline.yaml` (the reports' `(shipped)
policies/baseline.yaml`), so code scanning keeps its alerts (`shipped_artifact_location`).
Kept within code scanning's limits: at most `MAX_RESULTS` results (worst first; a run-level
notification says how many were left out) and `MAX_TAGS` tags per rule; `write_reports` keeps
the file within `UPLOAD_LIMIT` gzip-compressed (`write_fitted`: fewer results, the worst kept),
and `render_sarif` gives the same cut text through the same loop.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import replace
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any
from urllib.parse import quote, urlsplit

import orjson

from auditor.common.escape import (
    clean_text,
    fold,
    json_inert,
    md_escape,
    md_inline,
    one_line,
    shorten,
)
from auditor.findings.finding import Finding, attribution_text, sort_controls
from auditor.models import OPEN_STATUSES, Evidence, SourceLocation, severity_rank
from auditor.policy import SHIPPED_PREFIX
from auditor.report import display, identity
from auditor.report.jsonout import inert_utf8, spliced_lists
from auditor.report.model import (
    DataSource,
    PerAttribution,
    ReportData,
    data_quality_lines,
    integrity_coverage_text,
    left_out_text,
    rules_left_out,
)

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
SECURITY_SEVERITY = {"critical": "9.5", "high": "8.0", "medium": "5.5", "low": "3.0", "info": "1.0"}
LEVEL = {"critical": "error", "high": "error", "medium": "warning", "low": "note", "info": "note"}
FINGERPRINT_KEY = "auditorFingerprint/v1"
#: Relative paths are relative to the checkout root, which code scanning calls `%SRCROOT%`.
SRCROOT = "%SRCROOT%"
_URI_SAFE = "/@-._~!$&'()*+,;="
#: Code scanning rejects a run over 25,000 results and keeps only 5,000 of a larger one; we
#: choose which (the worst) rather than leave it to the upload.
MAX_RESULTS = 5_000
#: Code scanning rejects a rule with over 20 tags and shows only the first 10.
MAX_TAGS = 10
#: Code scanning rejects a SARIF file over 10 MB gzip-compressed (decimal megabytes: the
#: stricter reading). `write_fitted` lists fewer results when a file would be larger.
UPLOAD_LIMIT = 10_000_000
#: Evidence items a result's message words (the rest are counted), and the longest path or
#: value it shows in full.
MESSAGE_EVIDENCE = 5
MESSAGE_VALUE = 300
#: Order among results of one severity when the cap leaves some out: failures first.
_STATUS_RANK = {"fail": 0, "unknown": 1, "error": 2, "waived": 3}
#: `--org` labels that name no organization: the service's host stands in for them.
_NO_ORG = frozenset({"", "default"})


def artifact_location(path: str) -> dict[str, str]:
    """SARIF `artifactLocation`: a `file://` URI for an absolute path, else a relative `uri`
    under `%SRCROOT%` (so code scanning can link the file in the repository)."""
    text = clean_text(path)
    if PureWindowsPath(text).drive and PureWindowsPath(text).is_absolute():
        posix = PureWindowsPath(text).as_posix()
        return {"uri": "file:///" + quote(posix, safe=_URI_SAFE + ":")}
    text = text.replace("\\", "/")
    if PurePosixPath(text).is_absolute():
        return {"uri": "file://" + quote(text, safe=_URI_SAFE)}
    relative = text[2:] if text.startswith("./") else text
    return {"uri": quote(relative, safe=_URI_SAFE), "uriBaseId": SRCROOT}


def _md_prose(text: str) -> str:
    """A rule's description or remediation in the help's Markdown: escaped, with its `code`
    spans kept as code spans (escaped, they read as literal backticks). A span holds no
    backtick or line break (`display.code_spans`), and Markdown reads nothing inside one, so
    it needs no escaping and no raw HTML. The policy's own text: its addresses (a runbook)
    and emoji stay live (`md_escape`)."""
    return "".join(
        f"`{p}`" if is_code else md_escape(p, links=True)
        for is_code, p in display.code_spans(shorten(fold(text)))
    )


def _help(f: Finding) -> dict[str, str]:
    text = "\n\n".join(x for x in (f.description, f.remediation) if x)
    controls = ", ".join(sort_controls(f.controls))
    md = [
        f"**{md_inline(f.title)}**",
        _md_prose(f.description),
        f"**Remediation:** {_md_prose(f.remediation)}" if f.remediation else "",
        f"**Controls:** {md_inline(controls)}" if controls else "",
    ]
    return {"text": clean_text(text or f.title), "markdown": "\n\n".join(x for x in md if x)}


def rule_name(title: str) -> str:
    """A readable identifier for a rule, distinct from its id: its title in PascalCase
    (`Sandbox must be enabled` → `SandboxMustBeEnabled`)."""
    return "".join(w[0].upper() + w[1:] for w in re.findall(r"[A-Za-z0-9]+", title))


def rule_tags(f: Finding) -> list[str]:
    """`security`, `compliance`, the controls, then the rule's own tags: each once, at most
    `MAX_TAGS` (the controls are all in the rule's help)."""
    tags = ["security", "compliance", *sort_controls(f.controls), *f.tags]
    return list(dict.fromkeys(clean_text(t) for t in tags))[:MAX_TAGS]


def _rule(f: Finding) -> dict[str, Any]:
    name = rule_name(f.title)
    return {
        "id": f.rule_id,
        **({"name": name} if name and name != f.rule_id else {}),
        "shortDescription": {"text": clean_text(f.title)},
        "fullDescription": {"text": clean_text(f.description or f.title)},
        "help": _help(f),
        "defaultConfiguration": {"level": LEVEL.get(f.severity, "warning")},
        "properties": {
            "security-severity": SECURITY_SEVERITY.get(f.severity, "1.0"),
            "problem.severity": "error" if LEVEL.get(f.severity) == "error" else "warning",
            "precision": "high",
            "tags": rule_tags(f),
        },
    }


def _fallback(f: Finding, d: ReportData) -> SourceLocation:
    if d.review is not None:
        return SourceLocation(d.review.proposed_file, 1, 1)
    for p in d.policy_files:
        if f.rule_id in p.rule_ids:
            return SourceLocation(p.path, 1, 1)
    return SourceLocation(d.policy_files[0].path if d.policy_files else "auditor-policy", 1, 1)


def shipped_artifact_location(path: str) -> dict[str, Any] | None:
    """The `artifactLocation` of a shipped pack (`(shipped) policies/baseline.yaml`): the URI
    0.2.0 wrote, `policies/baseline.yaml` under `%SRCROOT%`, with a `description` saying it is
    the pack shipped with auditor. Code scanning ties an alert to its file path: a new path
    would close every open alert of the shipped rules and open it again, dismissals lost.
    None for any other path."""
    if not path.startswith(SHIPPED_PREFIX):
        return None
    name = "policies/" + path.removeprefix(SHIPPED_PREFIX)
    return {
        **artifact_location(name),
        "description": {
            "text": clean_text(
                f"{name} of the policy packs shipped with auditor (reports name it "
                f"'{path}'), not a file of this repository"
            )
        },
    }


@functools.lru_cache(maxsize=256)  # a handful of policy and proposed files, thousands of results
def _artifact(path: str, shown: str) -> tuple[tuple[str, Any], ...]:
    return tuple((shipped_artifact_location(path) or artifact_location(shown)).items())


def _policy_name(path: str, d: ReportData) -> str:
    """The path findings.sarif names the file `path` by: for a policy file, its path from the
    repository's root (`GITHUB_WORKSPACE`) when the run knows it: one named relative to the
    working folder with `d.sarif_base` before it (`ci/pol/…`), one shown absolute (given from
    outside the working folder, `--policy ../pol/`) or from a parent, resolved as `path_under`
    resolves (symlinks followed) and named from `d.sarif_root` when it lies below it; else
    `path` itself (a proposed file is named from the root already, a shipped pack as
    `policies/…`, a policy file outside the root keeps its `file://` URI)."""
    if path.startswith(SHIPPED_PREFIX) or PureWindowsPath(path).drive:
        return path
    if d.review is not None and path == d.review.proposed_file:
        return path
    if not (d.sarif_base or d.sarif_root) or not any(p.path == path for p in d.policy_files):
        return path
    if not path.startswith(("/", "../")):
        return d.sarif_base + path
    return _under_root(path, d.sarif_root, d.sarif_base) or path


def _under_root(path: str, root: str, base: str) -> str | None:
    """`path` (absolute, or from the working folder `base` below `root`: `../pol/x.yaml`) from
    `root`, when it lies below it once resolved; None when not, when there is no root, or for a
    path from a working folder not known to lie below it (`base` "": the root, or elsewhere)."""
    from auditor.common.files import path_under

    if not root or not (os.path.isabs(path) or base):
        return None
    return path_under(os.path.realpath(os.path.join(root, base, path)), root)


def _location(f: Finding, d: ReportData) -> dict[str, Any]:
    loc = f.location or f.source or _fallback(f, d)
    return _location_of(loc, _policy_name(loc.file, d))


def _location_of(loc: SourceLocation, shown: str) -> dict[str, Any]:
    return {
        "physicalLocation": {
            "artifactLocation": dict(_artifact(loc.file, shown)),
            "region": {"startLine": max(1, loc.line), "startColumn": max(1, loc.col)},
        }
    }


def _short(text: str) -> str:
    return shorten(one_line(text), MESSAGE_VALUE)


def _clean(text: str) -> str:
    """`clean_text(text)`, without its scans when the text is printable (what it drops or
    rewrites, controls and bidi marks, never is)."""
    return text if text.isprintable() else clean_text(text)


def _evidence_text(evidence: tuple[Evidence, ...]) -> str:
    """The message's evidence part: the first `MESSAGE_EVIDENCE` items' lines, and how many
    more there are, joined by `. ` (empty without evidence)."""
    parts = [
        display.evidence_line(e, code=_short, text=one_line) for e in evidence[:MESSAGE_EVIDENCE]
    ]
    if len(evidence) > MESSAGE_EVIDENCE:
        parts.append(f"{len(evidence) - MESSAGE_EVIDENCE} more evidence item(s) in findings.json")
    return ". ".join(parts)


def _message(f: Finding, evidence: str | None = None, since: str | None = None) -> str:
    """`evidence`: `_evidence_text(f.evidence)`, `since`: `attribution_text(f)`, when already
    made."""
    parts = [f"{f.title}: {f.message}", f"Subject: {f.subject.label}"]
    if f.evidence:
        parts.append(_evidence_text(f.evidence) if evidence is None else evidence)
    since = attribution_text(f) if since is None else since
    if since:
        parts.append(since)
    return _clean(". ".join(parts))


def _since_part(f: Finding) -> tuple[str, bool]:
    """The message's attribution part (`. ` and `attribution_text(f)`, empty without one) and
    whether it is printable."""
    since = attribution_text(f)
    return (f". {since}", since.isprintable()) if since else ("", True)


#: The most entries one of `_Results`' caches keeps (it is emptied when full).
CACHE_LIMIT = 4096


class _Results:
    """Each listed finding's result, with what results share made once: the words of an
    evidence list (results share their evidence lists) and the location of a rule or file."""

    def __init__(self, d: ReportData, index: dict[str, int]) -> None:
        self.d = d
        self.index = index
        self._evidence: dict[int, tuple[tuple[Evidence, ...], str, bool]] = {}
        self._locations: dict[int, tuple[SourceLocation, dict[str, Any]]] = {}
        self._fallbacks: dict[str, dict[str, Any]] = {}
        self._rules: dict[int, tuple[object, int, str, bool]] = {}
        self._since = PerAttribution(_since_part)
        self._expired = display.ExpiredWaivers(d.waivers.expired)

    def __call__(self, f: Finding) -> dict[str, Any]:
        """`_result(f, ...)` with `_message(f)`, each read and piece made once: the rule's
        facts and the marks read once (not a property call per field), the rule's level and
        index once per rule, the evidence's words once per evidence list, the attribution's
        once per attribution."""
        facts, marks, subject, evidence = f.facts, f.marks, f.subject, f.evidence
        rule = self._rules.get(id(facts))
        if rule is None or rule[0] is not facts:
            if len(self._rules) >= CACHE_LIMIT:
                self._rules.clear()
            level = LEVEL.get(facts.severity, "warning")
            index = self.index[facts.rule_id]
            rule = self._rules[id(facts)] = (facts, index, level, facts.title.isprintable())
        # The message's pieces, each with whether it is printable: the message is printable
        # (and so what cleaning it gives) when each piece is, and most of a run's messages
        # hold the evidence line's em dash, which makes checking the whole text slow.
        words, words_printable = "", True
        if evidence:
            known = self._evidence.get(id(evidence))
            if known is None or known[0] is not evidence:
                if len(self._evidence) >= CACHE_LIMIT:
                    self._evidence.clear()
                made = ". " + _evidence_text(evidence)
                known = self._evidence[id(evidence)] = (evidence, made, made.isprintable())
            words, words_printable = known[1], known[2]
        # `_since_part(f)` once per attribution; no call for a finding without one
        since, since_printable = self._since(f) if f.since is not None else ("", True)
        text = f"{facts.title}: {f.message}. Subject: {subject.label}{words}{since}"
        printable = (
            rule[3]
            and words_printable
            and since_printable
            and f.message.isprintable()
            and subject.label.isprintable()
        )
        status = f.status
        expired = None if self._expired.none else self._expired(f)
        if expired is not None:  # counts again: say why, as report.html and report.md do
            cut = replace(expired, owner=_short(expired.owner), ticket=_short(expired.ticket))
            note = display.expired_waiver_text(cut)
            text, printable = f"{text}. {note}", printable and note.isprintable()
        out: dict[str, Any] = {
            "ruleId": facts.rule_id,
            "ruleIndex": rule[1],
            "level": rule[2],
            "message": {"text": text if printable else clean_text(text)},
            "locations": [self._location(f)],
            # `result_fingerprint(f, org)` without a call for the fingerprint as it is
            "partialFingerprints": {
                FINGERPRINT_KEY: result_fingerprint(f, org)
                if (org := self.d.sarif_org)
                else f.fingerprint
            },
            "properties": {
                "status": status,
                "rawStatus": marks[0],
                "subject": subject.key,
                "lifecycle": marks[2],
                "severity": facts.severity,
            },
        }
        if marks[1] is not None and status == "waived":
            out["suppressions"] = _result(f, self.d, rule[1], "", {})["suppressions"]
        if expired is not None:
            out["properties"]["waiverExpired"] = f"{expired.expires:%Y-%m-%d}"
        return out

    def _location(self, f: Finding) -> dict[str, Any]:
        loc = f.location or f.source
        if loc is None:
            found = self._fallbacks.get(f.rule_id)
            if found is None:
                found = self._fallbacks[f.rule_id] = _location(f, self.d)
            return found
        known = self._locations.get(id(loc))
        if known is None or known[0] is not loc:
            if len(self._locations) >= CACHE_LIMIT:
                self._locations.clear()
            known = self._locations[id(loc)] = (
                loc,
                _location_of(loc, _policy_name(loc.file, self.d)),
            )
        return known[1]


def result_fingerprint(f: Finding, org: str = "") -> str:
    """A result's `partialFingerprints` value: the finding's fingerprint, or with `run --orgs`
    (`org`, the organization's name in the file) 32 hex digits of sha256 of `<org>|<fingerprint>`:
    every organization's subjects are `settings`, `change:N..M`, `org`, so the same rule failing
    in two organizations gave the same fingerprint, rule and location, and code scanning made
    them one alert (dismissed for all at once, fixed only when all were fixed)."""
    if not org:
        return f.fingerprint
    text = f"{clean_text(org)}|{f.fingerprint}"
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def _result(
    f: Finding,
    d: ReportData,
    index: int,
    message: str | None = None,
    location: dict[str, Any] | None = None,
) -> dict[str, Any]:
    expired = display.ExpiredWaivers(d.waivers.expired)(f) if message is None else None
    if message is None:
        message = _message(f)
        if expired is not None:
            message = _clean(f"{message}. {display.expired_waiver_text(expired)}")
    out: dict[str, Any] = {
        "ruleId": f.rule_id,
        "ruleIndex": index,
        "level": LEVEL.get(f.severity, "warning"),
        "message": {"text": message},
        "locations": [_location(f, d) if location is None else location],
        "partialFingerprints": {FINGERPRINT_KEY: result_fingerprint(f, d.sarif_org)},
        "properties": {
            "status": f.status,
            "rawStatus": f.raw_status,
            "subject": f.subject.key,
            "lifecycle": f.lifecycle,
            "severity": f.severity,
        },
    }
    if f.waiver is not None and f.status == "waived":
        w = f.waiver
        ticket = f", {w.ticket}" if w.ticket else ""
        why = f"{w.reason} (owner {w.owner}, expires {w.expires:%Y-%m-%d}{ticket})"
        note = display.WaiverNotes(d.waivers)(f) if d.waivers.expired_since_as_of else ""
        if note:  # an `--at` run's waiver that expired since
            why = f"{why}. {note}"
        out["suppressions"] = [
            {"kind": "external", "status": "accepted", "justification": clean_text(why)}
        ]
    if expired is not None:
        out["properties"]["waiverExpired"] = f"{expired.expires:%Y-%m-%d}"
    return out


def _candidates(d: ReportData) -> list[Finding]:
    """The findings that may become results: open ones (and waived ones when asked); in a
    review, only those the change introduces. Code scanning annotates a pull request's
    changed lines with the alerts on them, new or not, and fails its check on an `error`:
    a finding the live settings have too (a comment added on its line) would read as this
    change's (tester T96 #2). report.md, report.html, findings.json and junit.xml list them."""
    wanted = OPEN_STATUSES | ({"waived"} if d.sarif_include_waived else set())
    if d.review is not None:
        return [f for f in d.findings if f.status in wanted and f.lifecycle == "new"]
    return [f for f in d.findings if f.status in wanted]


def listed_count(d: ReportData, max_results: int = MAX_RESULTS) -> int:
    """How many results `findings.sarif` lists when written with `max_results`."""
    return min(max_results, len(_candidates(d)))


def listed_findings(d: ReportData, max_results: int = MAX_RESULTS) -> tuple[list[Finding], int]:
    """The findings that become results, in report order, and how many the cap left out: open
    ones (and waived ones when asked), the worst `max_results` of them when there are more;
    within the last severity and status kept, persisting ones (oldest first) before new ones
    (`_kept_of_class`)."""
    candidates = _candidates(d)
    if len(candidates) <= max_results:
        return candidates, 0
    # The worst `max_results` by (severity, status rank, report order), kept in report order:
    # every finding of a worse class than the last one kept, then the first of that class.
    # Counted per class, so 100,000s of candidates need no sort key each.
    ranks = len(_STATUS_RANK) + 1
    known: dict[tuple[str, str], int] = {}

    def rank(f: Finding) -> int:
        key = (f.severity, f.status)
        found = known.get(key)
        if found is None:
            found = known[key] = severity_rank(f.severity) * ranks + _STATUS_RANK.get(
                f.status, ranks - 1
            )
        return found

    classes = [rank(f) for f in candidates]  # small ints: shared objects, 8 bytes each
    per_class: dict[int, int] = {}
    for key in classes:
        per_class[key] = per_class.get(key, 0) + 1
    room, last = max_results, 0
    for last in sorted(per_class):
        if per_class[last] >= room:
            break
        room -= per_class[last]
    chosen = _kept_of_class(
        [i for i, key in enumerate(classes) if key == last], candidates, room, d.first_seen
    )
    kept = [
        f
        for i, (f, key) in enumerate(zip(candidates, classes, strict=True))
        if key < last or (key == last and i in chosen)
    ]
    return kept, len(candidates) - max_results


def _kept_of_class(
    members: list[int], candidates: list[Finding], room: int, first_seen: Mapping[int | str, str]
) -> set[int]:
    """Which `room` of `members` (indices into `candidates`, one severity and status, in report
    order) the cap keeps: those already tracked (`persisting`, the oldest first: the run that
    first saw them, from `first_seen`) before `new` ones and those not compared, each in report
    order. So the listed set is the same from night to night: the new findings of a night never
    push out findings still failing (code scanning would close those alerts as fixed)."""
    if room <= 0:
        return set()
    if len(members) <= room:
        return set(members)
    later = "\uffff"  # persisting, but its first run not known: after the known ones

    def order(i: int) -> tuple[int, str, int]:
        f = candidates[i]
        if f.lifecycle == "persisting":
            return (0, first_seen.get(f.digest, later), i)
        return (1, "", i)

    return set(sorted(members, key=order)[:room])


def _cap_note(listed: int, left_out: int, max_results: int) -> dict[str, Any]:
    why = (
        f"keeps at most {MAX_RESULTS:,} per run"
        if max_results >= MAX_RESULTS
        else f"rejects a file over {UPLOAD_LIMIT / 1e6:g} MB gzip-compressed"
    )
    # report.html's cap is html.ROWS_PER_RULE (not imported: jinja2 is slow to load)
    text = (
        f"findings.sarif lists {listed:,} of {listed + left_out:,} results: GitHub code scanning "
        f"{why}, so the {left_out:,} of lowest severity were left out (within a severity, "
        "unknowns and errors before failures, and findings new in this run before those "
        "already tracked, the longest-tracked kept: the same results stay listed from night to "
        "night). The complete list is in findings.json and junit.xml; report.html lists at "
        "most 200 per rule and report.md what fits a PR comment, each counting the rest."
    )
    return {"level": "warning", "message": {"text": text}}


def automation_id(d: ReportData) -> str:
    """`<category>/<run id>`: code scanning keeps one analysis per category (everything before
    the last `/`; codeql-action's `category` input applies only when this id is missing). The
    category is `--sarif-category`, else `default_category`."""
    return f"{d.sarif_category or default_category(d)}/{clean_text(d.run_id)}"


def default_category(d: ReportData) -> str:
    """`auditor/<org or host>/<run|review>`: each organization and run kind has its own; a
    review's is followed by the reviewed file's path (`…/review/settings/prod.yaml`), so the
    reviews of two files on one commit never replace each other's alerts."""
    owner = d.org if d.org not in _NO_ORG else (urlsplit(d.api_address).hostname or "offline")
    category = f"auditor/{category_word(owner)}/{d.mode}"
    if d.mode == "review" and d.review is not None:
        path = d.review.proposed_file.removeprefix("file://").replace("\\", "/")
        words = [category_word(p) for p in path.split("/") if p not in ("", ".", "..")]
        category = "/".join([category, *words])
    return category


def category_word(text: str) -> str:
    """`text` (an organization's name, a host) as one segment of a category: itself when it
    is only letters, digits and `._-`; else with the others replaced by `-` and a short hash
    of the whole name added (`Müller` `M-ller-a7842989`, `日本` `unknown-cf2abf0c`), so that two
    names never share a category (where one upload would close the other's alerts)."""
    cleaned = clean_text(text)
    word = _CATEGORY_OTHER.sub("-", cleaned).strip("-")
    if word == cleaned and word:
        return word
    digest = hashlib.sha256(cleaned.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{word or 'unknown'}-{digest}"


_CATEGORY_OTHER = re.compile(r"[^A-Za-z0-9._-]+")


def sarif_log(
    d: ReportData,
    *,
    max_results: int = MAX_RESULTS,
    results: bool = True,
    listed: tuple[list[Finding], int] | None = None,
) -> dict[str, Any]:
    """The SARIF log as a JSON value, with at most `max_results` results (`results=False`:
    the results list left empty, for `sarif_chunks` to stream; `listed`: what
    `listed_findings` gives, when already known)."""
    firsts: dict[str, Finding] = {}
    for f in d.findings:
        firsts.setdefault(f.rule_id, f)
    rule_ids = sorted(firsts)
    index = {rid: i for i, rid in enumerate(rule_ids)}
    chosen, left_out = listed_findings(d, max_results) if listed is None else listed
    shown = [_result(f, d, index[f.rule_id]) for f in chosen] if results else []
    notes = [
        {"level": "warning", "message": {"text": clean_text(r)}}
        for r in (*d.not_evaluated, *d.output_notes)
    ]
    # the data-quality warnings (odd values read as absent, readiness reports not synced):
    # every rule was judged, but on data an auditor should know about
    notes += [
        {
            "level": "warning",
            "message": {"text": clean_text(f"data quality: {line}")},
            "descriptor": {"id": "auditor/data-quality"},
        }
        for line in data_quality_lines(d)
    ]
    skipped = rules_left_out(d)
    # the rules left out on purpose (`--no-usage`, `--no-readiness`): no result says they were
    # not judged, so a note does (neither a failure nor a pass)
    notes += [
        {
            "level": "note",
            "message": {"text": clean_text(left_out_text(target, n, why))},
            "descriptor": {"id": "auditor/rules-left-out"},
        }
        for target, n, why in skipped
    ]
    if left_out:
        notes.insert(0, _cap_note(len(chosen), left_out, max_results))
    home = identity.project_home()  # optional in SARIF: never a made-up address
    run: dict[str, Any] = {
        "tool": {
            "driver": {
                "name": "auditor",
                "version": d.tool_version,
                **({"informationUri": home} if home else {}),
                "rules": [_rule(firsts[r]) for r in rule_ids],
            }
        },
        "automationDetails": {"id": automation_id(d)},
        # a region's `startColumn` counts characters (the YAML and JSON readers' columns), not
        # the UTF-16 code units SARIF assumes without this (T99 #7: a line with an emoji
        # before the value was 4 columns off)
        "columnKind": "unicodeCodePoints",
        "invocations": [
            {
                "executionSuccessful": d.complete,
                "endTimeUtc": d.generated_at.strftime("%Y-%m-%dT%H:%M:%SZ"),
                "toolExecutionNotifications": notes,
            }
        ],
        "results": shown,
        "properties": {
            "complete": d.complete,
            "mode": d.mode,
            "resultsLeftOut": left_out,
            "dataQualityWarnings": len(d.data_quality),  # findings.json's `data_quality`
            # an `--at` run's: the waivers were judged as of then (findings.json's `waivers`)
            **(
                {
                    "waiversJudgedAsOf": d.waivers.as_of.isoformat(),
                    "waiversExpiredSinceAsOf": [
                        f"{x.rule_id} on {clean_text(x.subject)}: expired {x.expires:%Y-%m-%d}"
                        for x in d.waivers.expired_since_as_of
                    ],
                }
                if d.waivers.as_of
                else {}
            ),
            # as findings.json's `rules_left_out` (its `rule_ids` there)
            "rulesLeftOut": [
                {"target": target, "count": n, "reason": clean_text(why)}
                for target, n, why in skipped
            ],
            # as findings.json's `inputs.files` and `inputs.data_source`, when known
            **(
                {
                    "inputFiles": [
                        {"role": f.role, "path": f.path, "sha256": f.sha256} for f in d.input_files
                    ]
                }
                if d.input_files
                else {}
            ),
            **(_source_properties(d.source) if d.source is not None else {}),
        },
    }
    return {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]}


def _source_properties(source: DataSource) -> dict[str, Any]:
    """When the data was fetched and what the integrity check covered (run properties)."""
    rechecked = source.rechecked
    return {
        "lastSync": source.last_sync.strftime("%Y-%m-%dT%H:%M:%SZ") if source.last_sync else None,
        "syncedThisRun": source.synced,
        "integrityRechecked": None
        if rechecked is None
        else {"firstRevision": rechecked[0], "lastRevision": rechecked[1]},
        "integrityCoverage": integrity_coverage_text(source),
    }


def render_sarif(data: ReportData) -> str:
    """`findings.sarif` text: the very bytes `write_reports` writes, cut to the upload limit the
    same way (`auditor verify` re-renders a bundle's SARIF with it)."""
    texts: list[bytes] = []

    def write(max_results: int) -> tuple[int, Callable[[], int]]:
        texts[:] = [_sarif_bytes(data, max_results)]
        return len(texts[0]), functools.partial(_packed_text, texts[0])

    write_fitted(write, data)
    return texts[0].decode("utf-8")


def write_fitted(write: Callable[[int], tuple[int, Callable[[], int]]], data: ReportData) -> None:
    """Write `findings.sarif` with `write(max_results)` (which gives the raw size and a way to
    get the gzip size), then again with fewer results (the worst kept) while it is over code
    scanning's upload limit; the run notification says how many were left out and why. The cut
    is in proportion to the results the file lists (not to the 5,000 cap), so one more write
    usually fits. The one loop behind both `render_sarif` (text) and `write_reports` (a file)."""
    raw, packed = write(MAX_RESULTS)
    if _raw_within(raw, UPLOAD_LIMIT):
        return  # a usual run: the file is not compressed, nor the results counted
    cap = _next_cap(raw, packed, listed_count(data))
    while cap is not None:
        raw, packed = write(cap)
        cap = _next_cap(raw, packed, cap)


def _sarif_bytes(data: ReportData, max_results: int) -> bytes:
    try:
        return b"".join(sarif_chunks(data, max_results=max_results))
    except orjson.JSONEncodeError:  # lone surrogates in data: let json escape them
        return b"".join(sarif_chunks(data, ascii_only=True, max_results=max_results))


def sarif_chunks(
    data: ReportData, *, ascii_only: bool = False, max_results: int = MAX_RESULTS
) -> Iterator[bytes]:
    """`findings.sarif` as a stream of UTF-8 text, results serialized a batch at a time (the same
    bytes as one dump of `sarif_log`); `ascii_only` as in `jsonout.json_chunks`."""
    chosen = listed_findings(data, max_results)
    log = sarif_log(data, max_results=max_results, results=False, listed=chosen)
    listed = chosen[0]
    index = {r["id"]: i for i, r in enumerate(log["runs"][0]["tool"]["driver"]["rules"])}
    result = _Results(data, index)
    batches = (
        [result(f) for f in listed[start : start + 256]] for start in range(0, len(listed), 256)
    )
    dump = _ascii if ascii_only else _dump
    yield from spliced_lists(log, [("results", 3, batches)], dump=dump)


_BLOCK = 1 << 20


def _packed_text(raw: bytes) -> int:
    """`gzip_size` of a file holding `raw`: the same blocks, so the same size."""
    return _packed_size(raw[i : i + _BLOCK] for i in range(0, len(raw), _BLOCK))


def _packed_size(blocks: Iterable[bytes]) -> int:
    packer = zlib.compressobj(6, zlib.DEFLATED, 31)  # 31: a gzip header and trailer
    size = sum(len(packer.compress(block)) for block in blocks)
    return size + len(packer.flush())


def gzip_size(path: Path) -> int:
    """The size of `path` gzip-compressed as an upload compresses it (zlib's default level),
    read a block at a time."""
    with path.open("rb") as fh:
        return _packed_size(iter(functools.partial(fh.read, _BLOCK), b""))


def _raw_within(raw: int, limit: int) -> bool:
    # gzip adds at most 5 bytes per 64 KiB block and 18 of header and trailer
    return raw + raw // 10_000 + 64 <= limit


def _next_cap(
    raw: int, packed: Callable[[], int], listed: int, limit: int | None = None
) -> int | None:
    limit = UPLOAD_LIMIT if limit is None else limit
    if _raw_within(raw, limit) or listed <= 0:
        return None
    size = packed()
    if size <= limit:
        return None
    # Results make nearly all of a large file: shrink in proportion, with a margin.
    return min(listed - 1, int(listed * limit / size * 0.9))


def _dump(value: Any) -> bytes:
    return inert_utf8(orjson.dumps(value, option=orjson.OPT_INDENT_2))


def _ascii(value: Any) -> bytes:
    return json_inert(json.dumps(value, indent=2, ensure_ascii=True)).encode("utf-8")
