"""`junit.xml`: one testcase per rule and subject, for CI test dashboards.

Takes `ReportData`, gives JUnit XML (valid against the common junit-10.xsd): pass → a plain
testcase, fail → `<failure>`, error / unknown → `<error>`, not applicable → `<skipped>`,
waived → `<skipped message="waived …">`. An incomplete run adds a failing completeness case.
Every string is stripped of characters XML 1.0 forbids, then escaped.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Iterator, Sequence
from operator import attrgetter

from auditor.common.escape import one_line, shorten, xml_text
from auditor.findings.finding import Finding, attribution_text, sort_controls
from auditor.models import OPEN_STATUSES, Evidence, Subject
from auditor.report import display
from auditor.report.model import (
    PerAttribution,
    ReportData,
    data_quality_lines,
    incomplete_headline,
    integrity_coverage_text,
    last_sync_text,
    left_out_text,
    rules_left_out,
)

_TEXT = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;"})
_ATTR = str.maketrans(
    {
        "&": "&amp;",
        "<": "&lt;",
        ">": "&gt;",
        '"': "&quot;",
        "\n": "&#10;",
        "\r": "&#13;",
        "\t": "&#9;",
    }
)


def _text(value: str) -> str:
    return _escape(_xml(value), _TEXT_SPECIAL)


def _xml(value: str) -> str:
    """`xml_text(value)`, without its three scans when the text is printable (what it drops or
    rewrites, controls, bidi marks, surrogates, U+FFFE/U+FFFF, never is)."""
    return value if value.isprintable() else xml_text(value)


def _attrs(**attrs: str) -> str:
    return "".join(f' {k}="{_attr(v)}"' for k, v in attrs.items())


@functools.lru_cache(maxsize=4096)  # labels, rule ids, severities repeat in every suite
def _attr(value: str) -> str:
    return _escape(_xml(value), _ATTR_SPECIAL)


# The tables as (character, entity) pairs, `&` first, for `_escape`.
_TEXT_SPECIAL = tuple((chr(c), str(r)) for c, r in _TEXT.items())
_ATTR_SPECIAL = tuple((chr(c), str(r)) for c, r in _ATTR.items())


def _escape(value: str, special: tuple[tuple[str, str], ...]) -> str:
    """`value.translate(table)` by `str.replace`, `&` first (so no entity is escaped twice):
    much faster on the short strings of a report, and only a scan when nothing is special."""
    for char, entity in special:
        if char in value:
            value = value.replace(char, entity)
    return value


def _value(text: str) -> str:
    return shorten(one_line(text))


#: The most entries each of one report's caches keeps (it is emptied when full).
CACHE_LIMIT = 4096


class _Details:
    """The escaped text of each failure (`_text` of message, evidence lines, attribution,
    remediation, fingerprint, a line each) as UTF-8, with what results share made once: the
    text of each message, evidence list (results share their evidence lists: a rule's failing
    steps found the same thing), attribution and remediation. Cleaning and escaping go
    character by character, so escaping each line alone gives the bytes escaping the joined
    text gives."""

    def __init__(
        self,
        expired: display.ExpiredWaivers | None = None,
        notes: display.WaiverNotes | None = None,
        review: bool = False,
    ) -> None:
        #: A review's: a `fail` or `unknown` the live settings have too is no failure of the
        #: change (`_unchanged`)
        self.review = review
        #: The expired waiver of a finding that counts again because of it (None: none).
        self.expired = expired or display.ExpiredWaivers(())
        #: What a waived finding's skip says of a waiver an `--at` run judged that expired since
        self.waiver_note = notes or (lambda f: "")
        self._evidence: dict[int, tuple[tuple[object, ...], bytes]] = {}
        self._messages: dict[str, tuple[bytes, bytes]] = {}
        self._remediation: dict[str, bytes] = {}
        #: The attribution's line (empty when unknown).
        self.since = PerAttribution(lambda f: _text(attribution_text(f)).encode())

    def message(self, message: str) -> tuple[bytes, bytes]:
        """The message as the outcome's `message` attribute (shortened) and as the first line
        of its text."""
        known = self._messages.get(message)
        if known is None:
            if len(self._messages) >= CACHE_LIMIT:
                self._messages.clear()
            attr, line = _attr(shorten(message, 500)), _text(message)
            known = self._messages[message] = (attr.encode(), line.encode())
        return known

    def evidence(self, evidence: tuple[Evidence, ...]) -> bytes:
        """The evidence list's lines."""
        known = self._evidence.get(id(evidence))
        if known is None or known[0] is not evidence:
            if len(self._evidence) >= CACHE_LIMIT:
                self._evidence.clear()
            text = "\n".join(
                _text(display.evidence_line(e, code=_value, text=one_line)) for e in evidence
            )
            known = self._evidence[id(evidence)] = (evidence, text.encode())
        return known[1]

    def remediation(self, remediation: str) -> bytes:
        """The remediation's line."""
        text = self._remediation.get(remediation)
        if text is None:
            if len(self._remediation) >= CACHE_LIMIT:
                self._remediation.clear()
            line = _text(f"Remediation: {remediation}")
            text = self._remediation[remediation] = line.encode()
        return text

    def lines(self, f: Finding) -> list[bytes]:
        """The lines of `f`'s outcome."""
        lines = [self.message(f.message)[1]]
        if f.evidence:
            lines.append(self.evidence(f.evidence))
        since = self.since(f)
        if since:
            lines.append(since)
        if f.remediation:
            lines.append(self.remediation(f.remediation))
        fp = f.fingerprint
        lines.append(b"Fingerprint: " + (fp if fp.isalnum() else _text(fp)).encode())
        return lines

    def __call__(self, f: Finding) -> str:
        """The text of `f`'s outcome."""
        return b"\n".join(self.lines(f)).decode("utf-8")


def _outcome(f: Finding, details: _Details) -> str:
    """The outcome of a result that neither fails nor errs (`_cases` writes those: a `fail` or
    `unknown` is a `<failure>`, an `error` an `<error>`)."""
    status = f.status
    if status == "pass":  # most of these: no outcome, and the message is not read
        return ""
    if status == "not_applicable":
        msg = shorten(f.message, 500)
        return f"<skipped{_attrs(message=f'not applicable: {msg}')} />"
    if status == "waived" and f.waiver is not None:
        w = f.waiver
        why = f"waived until {w.expires:%Y-%m-%d} by {w.owner}: {w.reason}"
        note = details.waiver_note(f)  # an `--at` run's waiver that expired since
        why = shorten(f"{note}. {why}" if note else why, 500)
        return f"<skipped{_attrs(message=why)}>{details(f)}</skipped>"
    return '<skipped message="waived" />' if f.status == "waived" else ""


def _counts(findings: Sequence[Finding], review: bool = False) -> dict[str, str]:
    # an `unknown` fails as a `fail` does (it counts against --fail-on); only an `error` (the
    # run is incomplete) is a JUnit error; in a review, one the change leaves as it was is
    # skipped (`_unchanged`)
    n = Counter(map(_STATUS, findings))  # counted in C, once (not three passes in Python)
    kept = sum(1 for f in findings if _unchanged(f)) if review else 0
    return {
        "tests": str(len(findings)),
        "failures": str(n["fail"] + n["unknown"] - kept),
        "errors": str(n["error"]),
        "skipped": str(n["not_applicable"] + n["waived"] + kept),
    }


def _unchanged(f: Finding) -> bool:
    """Whether a review's finding is a `fail` or `unknown` its gate does not count: one the
    live settings have too (`persisting`), or one `unknown` only because the proposed step's
    author is (no lifecycle). Not the change's, so a skipped test case (as a known failure
    is, pytest's xfail), not a failure: the review's exit code counts only what the change
    introduces, and a CI test tab (Jenkins marks the build unstable, GitLab's merge request
    widget) counted every failure of the proposed file, 16 for a pull request that only added
    a comment (tester T96 #3)."""
    return f.lifecycle != "new" and f.status in ("fail", "unknown")


_STATUS = attrgetter("status")


def _rule_suite(findings: Sequence[Finding], details: _Details) -> Iterator[bytes]:
    first = findings[0]
    attrs = _attrs(name=f"{first.rule_id}: {first.title}", **_counts(findings, details.review))
    controls = ", ".join(sort_controls(first.controls))
    head = (
        f'  <testsuite{attrs} time="0">\n'
        "    <properties>\n"
        f"      <property{_attrs(name='severity', value=first.severity)} />\n"
        f"      <property{_attrs(name='controls', value=controls)} />\n"
        "    </properties>\n"
    )
    yield head.encode()
    tail = f' classname="{_attr(first.rule_id)}" time="0"'.encode()
    yield from _cases(findings, tail, details)
    yield b"  </testsuite>\n"


@functools.lru_cache(maxsize=4096)  # a subject's label comes again in every rule's suite
def _name(label: str) -> bytes:
    return _attr(label).encode()


#: The test case name of a result on the settings in force (subject `settings`): the same every
#: night, whatever revision is in force (CI test tabs track a test by classname and name, so
#: "settings revision 200" then "settings revision 201" would be a new failing test each time a
#: revision arrives); the revision is in the failure's text ("Subject: settings revision 201").
SETTINGS_IN_FORCE = "settings in force"


def _case_name(subject: Subject) -> tuple[bytes, bool]:
    """A result's test case name, and whether its label (which names the revision) must be
    said in its text."""
    label = subject.label or subject.key
    if subject.key == "settings" and label.startswith("settings revision "):
        return _name(SETTINGS_IN_FORCE), True
    return _name(label), False


#: What a review's skipped case of a finding the change leaves as it was says first.
UNCHANGED = "unchanged by this change (the live settings have it too)"
#: And of one `unknown` only because nobody knows the proposed step's author.
NOT_COUNTED = "not counted by the review (the proposed change's author is unknown)"

#: Test cases joined into one piece of the stream (a rule's suite can hold 10,000s of cases).
BATCH = 512


def _cases(findings: Sequence[Finding], tail: bytes, details: _Details) -> Iterator[bytes]:
    """A test case per finding as UTF-8 (`tail`: the attributes after its name), `BATCH` at a
    time, `_outcome`'s text in each. A failure or an error, most of a run's results, is put
    together here from `details`' pieces, encoded once each: most cases hold a character
    beyond Latin-1 (the evidence line's dash), and text with one is slow to join and encode."""
    message_of, evidence_of, since_of = details.message, details.evidence, details.since
    remediation_of = details.remediation
    no_expired = details.expired.none  # no expired waiver: no call per finding to say so
    batch: list[bytes] = []
    # What a rule's facts decide (a suite's findings share them), made once per facts object:
    # the remediation's line (None without one) and the failure type of a `fail`.
    facts: object = None
    remediation: bytes | None = None
    severity = b""
    for f in findings:
        status = f.status
        name, moving = _case_name(f.subject)
        if details.review and _unchanged(f):
            said = UNCHANGED if f.lifecycle == "persisting" else NOT_COUNTED
            why = _attr(shorten(f"{said}: {f.message}", 500))
            batch.append(
                b'    <testcase name="%s"%s>\n      <skipped message="%s">%s</skipped>\n'
                b"    </testcase>\n" % (name, tail, why.encode(), b"\n".join(details.lines(f)))
            )
        elif status == "fail" or status in OPEN_STATUSES:
            if f.facts is not facts:
                facts = f.facts
                remediation = remediation_of(f.remediation) if f.remediation else None
                severity = _name(f.severity)
            attr, line = message_of(f.message)
            lines = [line]
            expired = None if no_expired else details.expired(f)
            if expired is not None:  # counts again: said first, as report.md says it
                note = display.expired_waiver_text(expired)
                attr = _attr(shorten(f"{note}. {f.message}", 500)).encode()
                lines.append(_text(note).encode())
            if f.evidence:
                lines.append(evidence_of(f.evidence))
            since = since_of(f) if f.since is not None else b""  # b"": what it gives for none
            if since:
                lines.append(since)
            if remediation is not None:
                lines.append(remediation)
            if moving:
                lines.append(_text(f"Subject: {f.subject.label}").encode())
            fp = f.fingerprint
            lines.append(b"Fingerprint: " + (fp if fp.isalnum() else _text(fp)).encode())
            if status == "fail":
                kind, what = b"failure", severity
            else:
                kind, what = (b"failure" if status == "unknown" else b"error"), _name(status)
            batch.append(
                b'    <testcase name="%s"%s>\n      <%s type="%s" message="%s">%s</%s>\n'
                b"    </testcase>\n" % (name, tail, kind, what, attr, b"\n".join(lines), kind)
            )
        elif status == "pass":  # no outcome (`_outcome`)
            batch.append(b'    <testcase name="%s"%s />\n' % (name, tail))
        else:
            outcome = _outcome(f, details)
            if outcome:
                batch.append(
                    b'    <testcase name="%s"%s>\n      %s\n    </testcase>\n'
                    % (name, tail, outcome.encode())
                )
            else:
                batch.append(b'    <testcase name="%s"%s />\n' % (name, tail))
        if len(batch) >= BATCH:
            yield b"".join(batch)
            batch.clear()
    if batch:
        yield b"".join(batch)


def _completeness(d: ReportData) -> Iterator[bytes]:
    errors = "0" if d.complete else "1"
    yield from (part.encode() for part in _completeness_text(d, errors))


def _completeness_text(d: ReportData, errors: str) -> Iterator[str]:
    yield (
        f'  <testsuite name="auditor: completeness" tests="1" failures="0" errors="{errors}"'
        ' skipped="0" time="0">\n'
    )
    # what the run did not judge, or judged on doubtful data, though it neither fails nor
    # errs: the rules left out on purpose (`--no-usage`, `--no-readiness`) and the
    # data-quality warnings, as properties (OSCAL's names) and in the case's output, where a
    # CI test tab shows it
    notes = _completeness_notes(d)
    # the run's inputs (policy files, readiness model, waivers file, each with its sha256) and
    # its data (when fetched, what the integrity check covered; a review's live side), as the
    # other formats name them: properties only, the case's output stays the notes'
    props = [*_input_properties(d), *((name, value) for name, value, _ in notes)]
    if props:
        yield "    <properties>\n"
        for name, value in props:
            yield f"      <property{_attrs(name=name, value=value)} />\n"
        yield "    </properties>\n"
    case = '    <testcase name="every input evaluated" classname="auditor" time="0"'
    out = (
        f"      <system-out>{_text(chr(10).join(line for _, _, line in notes))}</system-out>\n"
        if notes
        else ""
    )
    if d.complete:
        yield f"{case}>\n{out}    </testcase>\n" if out else f"{case} />\n"
    else:
        msg = incomplete_headline(d)
        body = _text("\n".join((*d.not_evaluated, *d.output_notes)))
        yield f'{case}>\n      <error type="incomplete"{_attrs(message=msg)}>{body}</error>\n'
        yield f"{out}    </testcase>\n"
    yield "  </testsuite>\n"


def _input_properties(d: ReportData) -> Iterator[tuple[str, str]]:
    """(property name, value) for each input file (`policy-file`, `readiness-model`,
    `waivers-file`: its path and sha256, as report.md's Scope gives them), what a review
    judged against (`against`), and when the data was fetched and what the integrity check
    covered (`data-fetched`, `integrity-check`), when known."""
    for p in d.policy_files:
        yield "policy-file", f"{p.path} (sha256 {p.sha256})"
    for f in d.input_files:
        name = "readiness-model" if f.role == "readiness model" else f"{f.role}-file"
        yield name, f"{f.path} (sha256 {f.sha256})"
    if d.review is not None:
        yield "against", d.review.against
    if d.source is not None:  # worded as report.md's Scope words them
        yield "data-fetched", f"last sync {last_sync_text(d.source)}"
        yield "integrity-check", integrity_coverage_text(d.source)


def _completeness_notes(d: ReportData) -> list[tuple[str, str, str]]:
    """(property name, value, line of output) for each target's rules left out and each
    data-quality warning (every one)."""
    return [
        *(
            (f"rules-left-out-{target}", f"{n}: {why}", left_out_text(target, n, why))
            for target, n, why in rules_left_out(d)
        ),
        *(
            ("data-quality-warning", line, f"data quality: {line}")
            for line in data_quality_lines(d, None)
        ),
        *_waivers_as_of(d),
    ]


def _waivers_as_of(d: ReportData) -> list[tuple[str, str, str]]:
    """An `--at` run's waivers: judged as of then (OSCAL's prop names), and each one in force
    then that expired before the report, which still waives."""
    w = d.waivers
    if w.as_of is None:
        return []
    lapsed = w.expired_since_as_of
    notes = [
        (
            "waivers-judged-as-of",
            w.as_of.isoformat(),
            display.waivers_as_of_text(w.as_of, len(lapsed)),
        )
    ]
    notes += [
        (
            "waiver-expired-since-as-of",
            f"{x.rule_id} on {x.subject}: expired {x.expires:%Y-%m-%d}",
            f"waiver for {x.rule_id} on {x.subject}: in force on {w.as_of:%Y-%m-%d}; expired "
            f"{x.expires:%Y-%m-%d}, before this report",
        )
        for x in lapsed
    ]
    return notes


def render_junit(data: ReportData) -> str:
    """`junit.xml` text."""
    return b"".join(junit_chunks(data)).decode("utf-8")


def junit_chunks(data: ReportData) -> Iterator[bytes]:
    """`junit.xml` as a stream of UTF-8 text, a rule's test suite (or `BATCH` of its cases)
    at a time."""
    by_rule: dict[str, list[Finding]] = {}
    for f in data.findings:
        by_rule.setdefault(f.rule_id, []).append(f)
    review = data.review is not None
    totals = _counts(data.findings, review)
    errors = int(totals["errors"]) + (0 if data.complete else 1)
    head = _attrs(
        name=f"auditor {data.mode} {data.run_id}",
        tests=str(len(data.findings) + 1),
        failures=totals["failures"],
        errors=str(errors),
    )
    yield f'<?xml version="1.0" encoding="UTF-8"?>\n<testsuites{head} time="0">\n'.encode()
    yield from _completeness(data)
    details = _Details(
        display.ExpiredWaivers(data.waivers.expired), display.WaiverNotes(data.waivers), review
    )
    for rule_id in sorted(by_rule):
        yield from _rule_suite(by_rule[rule_id], details)
    yield b"</testsuites>\n"
