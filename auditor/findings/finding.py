"""Findings: rule results made comparable across runs (fingerprints, attribution, lifecycle).

Takes `RuleResult`s from `auditor.evaluate` (and the previous run's finding records from the
store), gives `Finding`s with a stable fingerprint, who/when attribution text and a
`new` / `persisting` / `resolved` lifecycle.
"""

from __future__ import annotations

import functools
import hashlib
import operator
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from auditor.evaluate.model import RuleResult
from auditor.models import (
    Attribution,
    Evidence,
    Lifecycle,
    Severity,
    SourceLocation,
    Status,
    Subject,
    Waiver,
    severity_rank,
)
from auditor.policy.model import Rule
from auditor.redact.plain import author_of, shown_author

_INDEX = re.compile(r"\[-?\d+\]")
_DIGITS = re.compile(r"(\d+)")


@dataclass(frozen=True, slots=True)
class RuleFacts:
    """What every finding of one rule shares (its id, title, severity, controls, words,
    source): one object per rule, so a finding carries one reference instead of eight."""

    title: str
    severity: Severity
    controls: tuple[str, ...] = ()
    remediation: str = ""
    description: str = ""
    tags: tuple[str, ...] = ()
    source: SourceLocation | None = None
    rule_id: str = ""


@functools.lru_cache(maxsize=4096)
def rule_facts(
    title: str,
    severity: Severity,
    controls: tuple[str, ...] = (),
    remediation: str = "",
    description: str = "",
    tags: tuple[str, ...] = (),
    source: SourceLocation | None = None,
    rule_id: str = "",
) -> RuleFacts:
    """The shared `RuleFacts` for these values (equal values give the same object)."""
    return RuleFacts(title, severity, controls, remediation, description, tags, source, rule_id)


_KEEP: Any = object()  # "not given": keep the value `facts` (or `marks`) has

#: (raw status, waiver, lifecycle, location) of a finding: what is the same for most findings.
Marks = tuple[Status, Waiver | None, Lifecycle | None, SourceLocation | None]
_SHARED_MARKS: dict[tuple[Status, Lifecycle | None], Marks] = {}


def _marks(
    raw_status: Status, waiver: Waiver | None, lifecycle: Lifecycle | None,
    location: SourceLocation | None,
) -> Marks:  # fmt: skip
    """The marks tuple, shared by every finding without a waiver or a location."""
    if waiver is not None or location is not None:
        return (raw_status, waiver, lifecycle, location)
    key = (raw_status, lifecycle)
    found = _SHARED_MARKS.get(key)
    if found is None:
        found = _SHARED_MARKS[key] = (raw_status, None, lifecycle, None)
    return found


@dataclass(frozen=True, slots=True, init=False)
class Finding:
    """One rule's result on one subject, ready for reports.

    `source` is the rule's position in its policy file. `location`, when set, is where the
    finding points in a file under review (e.g. the proposed settings file); SARIF prefers it
    over `source`. `lifecycle` is None when the run was not compared with a previous one.

    The rule's own facts (`rule_id`, `title`, `severity`, `controls`, `remediation`,
    `description`, `tags`, `source`) live in one `RuleFacts` shared by the rule's findings,
    and the raw status, waiver, lifecycle and location in one `marks` tuple shared by every
    finding with the same raw status and lifecycle and no waiver or location; all are read
    through properties and still given (and `dataclasses.replace`d) by name. A run with
    `--all-revisions` holds 100,000s of findings: this keeps each to 8 slots (96 bytes, the
    size of the rule result it is made from, whose memory it can then take over).
    """

    digest: int | str  # the fingerprint: its number when it is 32 hex digits, else the text
    status: Status
    subject: Subject
    message: str
    evidence: tuple[Evidence, ...]
    since: Attribution | None
    facts: RuleFacts
    marks: Marks

    def __init__(
        self,
        *,
        fingerprint: str = _KEEP,
        digest: int | str = _KEEP,
        status: Status,
        subject: Subject,
        message: str,
        evidence: tuple[Evidence, ...] = (),
        since: Attribution | None = None,
        facts: RuleFacts | None = None,
        marks: Marks | None = None,
        rule_id: str = _KEEP,
        raw_status: Status = _KEEP,
        waiver: Waiver | None = _KEEP,
        lifecycle: Lifecycle | None = _KEEP,
        location: SourceLocation | None = _KEEP,
        title: str = _KEEP,
        severity: Severity = _KEEP,
        controls: tuple[str, ...] = _KEEP,
        remediation: str = _KEEP,
        description: str = _KEEP,
        tags: tuple[str, ...] = _KEEP,
        source: SourceLocation | None = _KEEP,
    ) -> None:
        if fingerprint is not _KEEP:
            digest = pack_fingerprint(fingerprint)
        elif digest is _KEEP:
            raise TypeError("Finding needs `fingerprint`")
        elif isinstance(digest, str):  # held as its number when it is one (equality, sorting)
            digest = pack_fingerprint(digest)
        given = (title, severity, controls, remediation, description, tags, source, rule_id)
        if facts is None:
            if title is _KEEP or severity is _KEEP or rule_id is _KEEP:
                raise TypeError("Finding needs `facts` or `rule_id`, `title` and `severity`")
            facts = RuleFacts(title, severity)
        if any(v is not _KEEP for v in given):
            kept = (
                facts.title, facts.severity, facts.controls, facts.remediation,
                facts.description, facts.tags, facts.source, facts.rule_id,
            )  # fmt: skip
            facts = rule_facts(*(k if v is _KEEP else v for v, k in zip(given, kept, strict=True)))
        if marks is None:
            if raw_status is _KEEP:
                raise TypeError("Finding needs `marks` or `raw_status`")
            marks = (raw_status, None, None, None)
        marks = _marks(
            marks[0] if raw_status is _KEEP else raw_status,
            marks[1] if waiver is _KEEP else waiver,
            marks[2] if lifecycle is _KEEP else lifecycle,
            marks[3] if location is _KEEP else location,
        )
        for name, value in (
            ("digest", digest), ("status", status), ("subject", subject),
            ("message", message), ("evidence", evidence), ("since", since),
            ("facts", facts), ("marks", marks),
        ):  # fmt: skip
            object.__setattr__(self, name, value)

    def with_marks(
        self, *, lifecycle: Lifecycle | None = _KEEP, location: SourceLocation | None = _KEEP
    ) -> Finding:
        """This finding with another lifecycle and/or location."""
        marks = _marks(
            self.marks[0],
            self.marks[1],
            self.marks[2] if lifecycle is _KEEP else lifecycle,
            self.marks[3] if location is _KEEP else location,
        )
        return _made(
            self.digest, self.status, self.subject, self.message, self.evidence, self.since,
            self.facts, marks,
        )  # fmt: skip

    @property
    def fingerprint(self) -> str:
        """Stable identity of the finding (see `fingerprint()`): 32 hex digits."""
        digest = self.digest
        return _hex32(digest) if isinstance(digest, int) else digest

    @property
    def rule_id(self) -> str:
        """The rule's id."""
        return self.facts.rule_id

    @property
    def raw_status(self) -> Status:
        """The status before any waiver applied."""
        return self.marks[0]

    @property
    def waiver(self) -> Waiver | None:
        """The waiver that applied, if any."""
        return self.marks[1]

    @property
    def lifecycle(self) -> Lifecycle | None:
        """`new` / `persisting` against the previous run; None when not compared."""
        return self.marks[2]

    @property
    def location(self) -> SourceLocation | None:
        """Where the finding points in a file under review, if anywhere."""
        return self.marks[3]

    @property
    def title(self) -> str:
        """The rule's title."""
        return self.facts.title

    @property
    def severity(self) -> Severity:
        """The rule's severity."""
        return self.facts.severity

    @property
    def controls(self) -> tuple[str, ...]:
        """The rule's controls, in natural order."""
        return self.facts.controls

    @property
    def remediation(self) -> str:
        """How to fix it (the rule's text)."""
        return self.facts.remediation

    @property
    def description(self) -> str:
        """The rule's description."""
        return self.facts.description

    @property
    def tags(self) -> tuple[str, ...]:
        """The rule's tags."""
        return self.facts.tags

    @property
    def source(self) -> SourceLocation | None:
        """The rule's position in its policy file."""
        return self.facts.source


_SLOTS = tuple(
    getattr(Finding, name).__set__
    for name in ("digest", "status", "subject", "message", "evidence", "since", "facts", "marks")
)


def _made(
    digest: int | str, status: Status, subject: Subject, message: str,
    evidence: tuple[Evidence, ...], since: Attribution | None, facts: RuleFacts, marks: Marks,
) -> Finding:  # fmt: skip
    """A `Finding` of values already in their held form (a packed digest, shared facts and
    marks), its slots filled directly: a nightly run makes and marks thousands, and the
    keyword constructor's checks were most of the cost of each."""
    f: Finding = object.__new__(Finding)
    (
        set_digest,
        set_status,
        set_subject,
        set_message,
        set_evidence,
        set_since,
        set_facts,
        set_marks,
    ) = _SLOTS
    set_digest(f, digest)
    set_status(f, status)
    set_subject(f, subject)
    set_message(f, message)
    set_evidence(f, evidence)
    set_since(f, since)
    set_facts(f, facts)
    set_marks(f, marks)
    return f


def mark_in_place(f: Finding, lifecycle: Lifecycle | None) -> None:
    """Give `f` this lifecycle in place (its `marks` replaced; see `with_marks`), for a finding
    only its caller's list holds and that nothing has hashed or compared yet (`compare_runs`
    marking a run's findings in place): not a second finding made for each of 1,000s."""
    marks = f.marks
    _SET_MARKS(f, _marks(marks[0], marks[1], lifecycle, marks[3]))


_SET_MARKS = _SLOTS[7]


@functools.lru_cache(maxsize=1 << 15)
def _hex32(digest: int) -> str:
    """A packed fingerprint's text: the reports and the run records ask for each finding's
    several times, and formatting a 128-bit number costs about ten times a cache hit."""
    return f"{digest:032x}"


@functools.lru_cache(maxsize=1 << 14)  # evidence paths repeat across steps and subjects
def normalize_path(path: str) -> str:
    """Replace list indices with `[*]` so a reordered list keeps its fingerprints."""
    return _INDEX.sub("[*]", path) if "[" in path else path


def fingerprint(rule_id: str, subject_key: str, path: str) -> str:
    """Stable identity of a finding: sha256 of `rule|subject|normalized path`, 32 hex digits."""
    return f"{fingerprint_digest(rule_id, subject_key, path):032x}"


def fingerprint_digest(rule_id: str, subject_key: str, path: str) -> int:
    """`fingerprint` as a number (what a `Finding` holds: 48 bytes of memory, not 96)."""
    text = f"{rule_id}|{subject_key}|{normalize_path(path)}"
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(digest[:16])


_HEX32 = re.compile(r"[0-9a-f]{32}")


def pack_fingerprint(text: str) -> int | str:
    """A fingerprint as a `Finding` holds it: 32 lowercase hex digits as their number (which
    gives them back exactly, and sorts as they do), any other text as it is."""
    return int(text, 16) if _HEX32.fullmatch(text) else text


def primary_path(evidence: Iterable[Evidence]) -> str:
    """The evidence path a fingerprint uses: the smallest normalized one, so order never matters."""
    paths = {normalize_path(e.path) for e in evidence if e.path}
    return min(paths) if paths else ""


@functools.lru_cache(maxsize=1 << 14)
def control_key(control: str) -> tuple[tuple[int, str], ...]:
    """Natural sort key: `ISO27001:A.5.2` before `ISO27001:A.5.15`, `CC6.8` before `CC6.10`."""
    parts = _DIGITS.split(control.casefold())
    # Digit runs sit at odd positions; padding them makes text comparison numeric.
    keyed = [(1, p.zfill(20)) if i % 2 else (0, p) for i, p in enumerate(parts)]
    return (*keyed, (2, control))


def sort_controls(controls: Iterable[str]) -> tuple[str, ...]:
    """Controls without duplicates, in natural order (see `control_key`)."""
    return _sorted_controls(tuple(controls))


@functools.lru_cache(maxsize=1024)  # a rule's controls: one sort per rule, not per finding
def _sorted_controls(controls: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(sorted(set(controls), key=control_key))


def finding_from_result(result: RuleResult, facts: RuleFacts | None = None) -> Finding:
    """Turn one rule result into a finding (pass results included); `facts` are the result's
    rule's (`facts_of`) when the caller has them."""
    rule = result.rule
    if facts is None:
        facts = facts_of(rule)
    return _made(
        fingerprint_digest(rule.id, result.subject.key, primary_path(result.evidence)),
        result.status,
        result.subject,
        result.message,
        result.evidence,
        result.since,
        facts,
        _marks(result.original_status, result.waiver, None, None),
    )


def facts_of(rule: Rule) -> RuleFacts:
    """The shared `RuleFacts` of a rule."""
    return rule_facts(
        rule.title,
        rule.severity,
        sort_controls(rule.controls),
        rule.remediation,
        rule.description,
        rule.tags,
        rule.source,
        rule.id,
    )


def findings_from_results(results: Sequence[RuleResult]) -> list[Finding]:
    """One finding per rule result, in the stable report order."""
    return sort_findings(finding_from_result(r) for r in results)


def findings_from_pending(results: list[RuleResult]) -> list[Finding]:
    """`findings_from_results`, emptying `results` as it goes: each result is let go as soon
    as its finding exists, so the two are never both held in full (`--all-revisions`)."""
    out: list[Finding] = []
    # A rule's facts looked up once per rule, not once per result: the results of a rule
    # come together (the engine gives them in rule order), and a nightly has 1,000s a rule.
    rule: Rule | None = None
    facts: RuleFacts | None = None
    while results:
        result = results.pop()
        if result.rule is not rule:
            rule, facts = result.rule, facts_of(result.rule)
        out.append(finding_from_result(result, facts))
    out.reverse()
    _sort_in_place(out)
    return out


def natural_key(text: str) -> tuple[tuple[int, str], ...]:
    """Text with its digit runs compared as numbers: `change:8..9` before `change:77..78`."""
    return control_key(text)


SortKey = tuple[int, tuple[tuple[int, str], ...], tuple[tuple[int, str], ...], str]


def sort_key(f: Finding) -> SortKey:
    """Severity (worst first), rule id and subject key in natural order (the revisions of a
    rule newest first: `subject_order`), fingerprint."""
    return (
        severity_rank(f.severity),
        natural_key(f.rule_id),
        natural_key(subject_order(f.subject.key)),
        f.fingerprint,
    )


_REVISION_SUBJECT = re.compile(r"settings@([0-9]{1,19})")
_NEWEST_FIRST = 10**19


def subject_order(key: str) -> str:
    """The text a subject key sorts by: itself, but for a revision's (`settings@N`, an
    `--all-revisions` run, an integrity issue) whose number counts down, so a rule's revisions
    are listed newest first and a report capped per rule keeps the newest (the settings in
    force), not the oldest."""
    match = _REVISION_SUBJECT.fullmatch(key)
    if match is None:
        return key
    return f"settings@{_NEWEST_FIRST - int(match.group(1))}"


def sort_findings(findings: Iterable[Finding]) -> list[Finding]:
    """Findings in the stable report order (see `sort_key`).

    Sorted in three stable passes, least significant part first (fingerprint, subject, then
    severity and rule): each pass's keys are shared by every finding of the same subject or
    rule, so hundreds of thousands of findings never need a key tuple each."""
    out = list(findings)
    _sort_in_place(out)
    return out


def _sort_in_place(out: list[Finding]) -> None:
    # Numbers sort as their 32-digit hex forms do (no hex string made per finding); a list
    # with any other fingerprint text sorts by the text.
    packed = all(isinstance(f.digest, int) for f in out)
    out.sort(key=_DIGEST_OF if packed else _fingerprint_of)
    subjects: dict[str, Any] = {}
    # One short text per subject (not `natural_key`'s tuple of tuples, ~700 bytes each for
    # the 10,000s of change steps of a long history), unless a key holds the NUL it uses.
    natural = natural_key if any("\x00" in f.subject.key for f in out) else natural_text

    def order(key: str) -> Any:
        return natural(subject_order(key))

    out.sort(key=lambda f: subjects.get(f.subject.key) or _keep(subjects, f.subject.key, order))
    rules: dict[tuple[str, str], tuple[int, tuple[tuple[int, str], ...]]] = {}

    def rule_key(f: Finding) -> tuple[int, tuple[tuple[int, str], ...]]:
        known = rules.get((f.severity, f.rule_id))
        if known is None:
            known = rules[f.severity, f.rule_id] = (
                severity_rank(f.severity),
                natural_key(f.rule_id),
            )
        return known

    out.sort(key=rule_key)


def _fingerprint_of(f: Finding) -> str:
    return f.fingerprint


_DIGEST_OF = operator.attrgetter("digest")  # read in C, not one Python call per finding


def _keep(keys: dict[str, Any], text: str, order: Callable[[str], Any]) -> Any:
    keys[text] = found = order(text)
    return found


def natural_text(text: str) -> str:
    """`natural_key(text)` as one string that sorts the same way, for text without NUL: each
    part (text and padded digit runs alternate) between \x02 and \x00, then \x03 and the
    text. A part that is a prefix of another ends first (\x00 is below any other character),
    a key whose parts run out first sorts after (\x03 above \x02, as (2, text) is above
    (0 or 1, part)), and keys of equal parts sort by their text."""
    step = _CHANGE_STEP.fullmatch(text)
    if step is not None:  # a change step's subject (1,000s a run): its parts are known
        before, after = step.groups()
        return (
            f"\x02change:\x00\x02{before.zfill(20)}\x00\x02..\x00\x02{after.zfill(20)}"
            f"\x00\x02\x00\x03{text}"
        )
    return _natural_parts(text)


_CHANGE_STEP = re.compile(r"change:([0-9]+)\.\.([0-9]+)")


def _natural_parts(text: str) -> str:
    """`natural_text` of any text, part by part."""
    parts = _DIGITS.split(text.casefold())
    parts[1::2] = [digits.zfill(20) for digits in parts[1::2]]
    return "\x02" + "\x00\x02".join(parts) + "\x00\x03" + text


def attribution_author(a: Attribution) -> str:
    """The author as every report names one (`shown_author`): the email, else the name (an
    email of blanks alone is none); empty when neither is known."""
    who = author_of(a.author_email, a.author_name)
    return shown_author(who) if who else ""


def _who(a: Attribution) -> str:
    who = attribution_author(a)
    return f" by {who}" if who else ""


def attribution_text(f: Finding) -> str:
    """Who and when, e.g. `violating since rev 412 (2026-09-03) by a@b.c`; empty when unknown.

    Worded once per attribution and subject kind for every report format (findings share
    their attributions: one per step or revision), the last `_WORDED_LIMIT` kept."""
    a = f.since
    if a is None:
        return ""
    kind = f.subject.kind
    key = (id(a), kind)
    known = _WORDED.get(key)
    if known is not None and known[0] is a:  # the very object (so its id was not reused)
        return known[1]
    text = _worded(a, kind)
    if len(_WORDED) >= _WORDED_LIMIT:
        _WORDED.clear()
    _WORDED[key] = (a, text)
    return text


def _worded(a: Attribution, kind: str) -> str:
    day = a.updated_at.date().isoformat()
    if a.place:  # no stored revision: a review's proposal, or the file it was reviewed against
        verb = "changed" if kind == "change" else "violating"
        return f"{verb} in {a.place}{_who(a)}"  # its time is the review's own
    if kind == "change":
        return f"changed in rev {a.revision} ({day}){_who(a)}"
    if kind == "usage":
        return f"setting in force: rev {a.revision} ({day}){_who(a)}"
    return f"violating since rev {a.revision} ({day}){_who(a)}"


#: `attribution_text`'s words by (attribution's id, subject kind), with the attribution.
_WORDED: dict[tuple[int, str], tuple[Attribution, str]] = {}
_WORDED_LIMIT = 8192
