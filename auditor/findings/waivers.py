"""Waivers: accepted, owned, expiring exceptions to rules.

Takes a waivers YAML file and rule results, gives validated `Waiver` records (every problem
reported at once as `file:line:col`) and the results with matching failures marked `waived`
(the raw status kept beside), plus a report of waivers in force, expiring, expired and stale.

File format::

    waivers:
      - rule: BASE-SBX-001
        subject: settings            # settings | org | change | change:411..412 | repo URL glob
        reason: Legacy build agents need it until the migration ends
        owner: platform-security@example.com
        expires: 2026-12-31          # the waiver holds until the end of this day, UTC
        ticket: SEC-1234             # optional
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, time, timedelta
from fnmatch import fnmatchcase
from itertools import accumulate
from pathlib import Path
from typing import Any

from auditor.common.files import UnreadableFile, read_input
from auditor.common.pairs import RevisionCounts
from auditor.common.paths import render
from auditor.errors import PolicyError
from auditor.evaluate.model import RuleResult
from auditor.models import Subject, Waiver
from auditor.policy.yamlsafe import (
    MAX_DIGITS,
    FileReadError,
    YamlDocument,
    load_yaml,
    problem,
    suggest,
)

REQUIRED = ("rule", "subject", "reason", "owner", "expires")
OPTIONAL = ("ticket",)
KEYWORD_SUBJECTS = ("settings", "org", "change", "usage")
EXPIRING_SOON_DAYS = 14
MAX_TERM_DAYS = 365
WAIVABLE = frozenset({"fail", "unknown", "error"})
# a revision as subjects name it (`settings@412`, never `settings@0412`, which no subject is)
_REV = r"(?:0|[1-9]\d*)"
_EXACT_SUBJECT = re.compile(
    rf"^(?:settings@{_REV}|change:{_REV}\.\.{_REV}|usage@\d{{4}}-\d{{2}}-\d{{2}})$"
)
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
MAX_WAIVERS_BYTES = 1_000_000  # read again for a lenient read: `load_yaml` read at most this


@dataclass(frozen=True)
class WaiverReport:
    """What the waivers did in one run: in force, expiring soon, expired, stale, warnings."""

    in_force: tuple[Waiver, ...]
    expiring_soon: tuple[Waiver, ...]
    expired: tuple[Waiver, ...]
    stale: tuple[Waiver, ...]
    warnings: tuple[str, ...]


class KnownRules:
    """The rule ids a waiver may name: the loaded policies' rules, the built-in
    `AUDITOR-INTEGRITY-001`, and the shipped packs' rules (read only when a waiver names a
    rule the loaded policies lack: a run of `--policy usage.yaml` with a waivers file that
    also waives shipped settings rules leaves those out, it does not refuse them)."""

    def __init__(self, loaded: Iterable[str]) -> None:
        from auditor.findings.integrity import RULE_ID

        self._loaded = frozenset(loaded) | {RULE_ID}
        self._every: frozenset[str] | None = None

    def __contains__(self, rule: object) -> bool:
        return rule in self._loaded or rule in self.every()

    def every(self) -> frozenset[str]:
        """Every known id (the shipped packs' read on the first call)."""
        if self._every is None:
            from auditor.policy import SHIPPED_POLICY_DIR
            from auditor.policy.loader import load_policies

            shipped = {r.id for r in load_policies([SHIPPED_POLICY_DIR]).rules}
            self._every = self._loaded | shipped
        return self._every


def load_waivers(path: Path, rules: KnownRules | None = None) -> tuple[Waiver, ...]:
    """Load and validate a waivers file; PolicyError lists every problem as file:line:col.

    `rules`: the rule ids a waiver may name; one naming any other (a typo, a wrong case, a
    pattern) is a problem, with the closest id. None: not checked (an evidence bundle's copy,
    checked when the bundle was made).

    A problem quotes no secret the file itself reveals (`_own_secrets_hidden`): `X` of a
    `Bearer X` in a waiver's `reason`, pasted as its `expires` too, reads `<not shown: looks
    like a secret>`, as the reports show it as a marker."""
    found: list[YamlDocument] = []  # the document, once read
    try:
        return _load_waivers(path, rules, found)
    except FileReadError:
        raise  # not read: nothing in it to learn
    except PolicyError as exc:
        raise _own_secrets_hidden(exc, path, found) from None


def _own_secrets_hidden(exc: PolicyError, path: Path, found: list[YamlDocument]) -> PolicyError:
    """`exc` with each secret the file reveals by its looks or its place left out of its
    lines (`auditor.redact.shown.own_secrets_hidden`), learned from the data read, or from a
    lenient read of the text where the strict one refused it (a duplicate key: every value of
    it kept); `exc` itself when nothing changed (or the text reads as nothing at all)."""
    from auditor.policy.yamlparse import lenient_data
    from auditor.redact.shown import own_secrets_hidden

    def data() -> Any:
        if found:
            return found[0].data
        try:
            text = read_input(path, max_bytes=MAX_WAIVERS_BYTES).decode("utf-8")
        except (UnreadableFile, UnicodeDecodeError):
            return None
        return lenient_data(text)

    problems = own_secrets_hidden(exc.problems, data, str(path))
    return exc if problems == exc.problems else PolicyError(problems)


def _load_waivers(
    path: Path, rules: KnownRules | None, found: list[YamlDocument]
) -> tuple[Waiver, ...]:
    doc = load_yaml(path, unread=True)  # `expires: 2026-02-30` beside every other problem
    found.append(doc)
    problems: list[str] = []
    entries = _entries(doc, problems)
    waivers: list[Waiver] = []
    shown = _OwnSecretsHidden(doc.data, entries)
    for index, entry in enumerate(entries):
        waiver = _parse_entry(doc, index, entry, problems, rules, shown)
        if waiver is not None:
            waivers.append(waiver)
    _check_duplicates(waivers, problems)
    problems = doc.beside_unread(problems)
    if problems:
        raise PolicyError(sorted(problems, key=lambda text: _position(text, doc.path)))
    return tuple(waivers)


def _position(text: str, file: str) -> tuple[int, int]:
    """(line, col) of a formatted problem, for sorting by position."""
    line, col, _ = text[len(file) + 1 :].split(":", 2)
    return int(line), int(col)


def _entries(doc: YamlDocument, problems: list[str]) -> list[Any]:
    data = doc.data
    if not isinstance(data, dict) or not isinstance(data.get("waivers", []), list):
        message = "a waivers file is a mapping with a `waivers:` list"
        problems.append(problem(doc.locate([]), "$", message))
        return []
    for key in sorted({doc.key_text((), k) for k in data} - {"waivers"}):  # `true:` as written
        message = f"unknown key `{key}`{suggest(key, ['waivers'])}"
        problems.append(problem(doc.locate([key], key=True), render([key]), message))
    return list(data.get("waivers") or [])


class _OwnSecretsHidden:
    """A waiver's `expires` as a problem quotes it: each secret the file reveals left out
    (`auditor.redact.shown.own_secrets_hidden`) before it is cut short (to its first 40
    characters, which would show the start of a longer secret that no later screen sees
    whole). Every entry's `expires` is screened at once, on the first one asked about."""

    def __init__(self, data: Any, entries: Sequence[Any]) -> None:
        self._data = data
        self._values = [
            str(e["expires"]) for e in entries if isinstance(e, dict) and "expires" in e
        ]
        self._shown: dict[str, str] | None = None

    def _read(self) -> Any:
        return self._data

    def __call__(self, text: str) -> str:
        from auditor.redact.shown import own_secrets_hidden

        if self._shown is None:
            values = list(dict.fromkeys(self._values))
            shown = own_secrets_hidden(values, self._read, "")
            self._shown = dict(zip(values, shown, strict=True))
        if text not in self._shown:
            (self._shown[text],) = own_secrets_hidden([text], self._read, "")
        return self._shown[text]


def _parse_entry(
    doc: YamlDocument,
    index: int,
    entry: Any,
    problems: list[str],
    rules: KnownRules | None,
    shown: Callable[[str], str] = str,
) -> Waiver | None:
    base: list[str | int] = ["waivers", index]
    before = len(problems)

    def report(key: str | None, message: str, *, at_key: bool = False) -> None:
        parts = [*base, key] if key else base
        problems.append(problem(doc.locate(parts, key=at_key), render(parts), message))

    if not isinstance(entry, dict):
        report(None, "a waiver is a mapping with " + ", ".join(REQUIRED))
        return None
    if isinstance(entry.get("ticket"), int) and not isinstance(entry["ticket"], bool):
        entry = {**entry, "ticket": str(entry["ticket"])}  # `ticket: 1234` is a ticket number
    _check_fields(entry, report, lambda key: doc.key_text(base, key))
    if rules is not None and isinstance(entry.get("rule"), str) and entry["rule"].strip():
        _check_rule(entry["rule"].strip(), rules, lambda m: report("rule", m))
    expires = None
    if "expires" in entry:  # a missing one is reported by _check_fields
        raw = entry["expires"]
        if isinstance(raw, datetime):  # quoted as written (`…T23:00:00Z`), not as Python's
            raw = doc.time_text([*base, "expires"], raw)  # `2027-01-01 23:00:00+00:00`
        expires = _parse_expiry(raw, lambda m: report("expires", m), shown)
    if len(problems) > before or expires is None:
        return None
    return Waiver(
        rule_id=entry["rule"].strip(),
        subject=entry["subject"].strip(),
        reason=entry["reason"].strip(),
        owner=entry["owner"].strip(),
        expires=expires,
        ticket=str(entry.get("ticket", "")).strip(),
        source=doc.locate(base),
    )


def _check_fields(
    entry: dict[str, Any], report: Callable[..., None], written: Callable[[Any], str] = str
) -> None:
    """Unknown keys (each named as `written` gives it: a `true:` as the file writes it, not
    as Python's `True`, and so found at its own line), missing fields, empty strings and the
    subject's form."""
    for key in sorted(set(map(written, entry)) - set(REQUIRED) - set(OPTIONAL)):
        report(key, f"unknown key `{key}`{suggest(key, REQUIRED + OPTIONAL)}", at_key=True)
    for key in REQUIRED:
        if key not in entry:
            report(None, f"missing required field `{key}`")
    for key in ("rule", "subject", "reason", "owner", "ticket"):
        if key in entry and (not isinstance(entry[key], str) or not entry[key].strip()):
            report(key, f"`{key}` must be a non-empty string")
    if isinstance(entry.get("subject"), str) and entry["subject"].strip():
        _check_subject(entry["subject"], lambda m: report("subject", m))


def _check_rule(rule: str, rules: KnownRules, report: Callable[[str], None]) -> None:
    """A rule no loaded policy, shipped pack or built-in rule has: a typo would waive nothing."""
    if rule in rules:
        return
    every = rules.every()
    same = sorted(r for r in every if r.casefold() == rule.casefold())
    hint = f" (did you mean `{same[0]}`?)" if same else suggest(rule, every)
    if any(c in rule for c in "*?["):
        report(
            f"`{rule}` is not a rule id: a waiver names one rule by its id, patterns are not "
            f"supported{hint}"
        )
        return
    # Quoted only when it is near a known id or shaped like one (`NOPE-001`): anything else
    # may be a secret pasted into the wrong field, which the detectors do not always see.
    shown = f"`{rule}`" if hint or _ID_SHAPE.fullmatch(rule) else "(not shown)"
    report(
        f"unknown rule {shown}: no policy given, shipped pack or built-in rule has it (ids are "
        f"case-sensitive){hint}"
    )


_ID_SHAPE = re.compile(r"[A-Za-z][A-Za-z0-9]{0,15}(?:[-_.][A-Za-z0-9]{1,8}){1,4}")


#: Digits a revision number in a subject may have: as an integer in any input file (Python
#: reads no longer one as a number; no revision is one).
MAX_REVISION_DIGITS = MAX_DIGITS


def _check_subject(subject: str, report: Callable[[str], None]) -> None:
    text = subject.strip()
    if text.startswith(("settings@", "change:")):
        longest = max((len(n) for n in re.findall(r"\d+", text)), default=0)
        if longest > MAX_REVISION_DIGITS:
            report(
                f"subject `{text[:40]}…` names a revision number {longest:,} digits long: no "
                f"revision is one (an integer longer than {MAX_REVISION_DIGITS:,} digits is "
                "refused in every input file)"
            )
            return
    step = re.fullmatch(r"change:(\d+)\.\.(\d+)", text)
    if step and int(step[1]) >= int(step[2]):
        first, second = int(step[1]), int(step[2])
        # the same two revisions the right way round, or the change into revision A; none for
        # `change:0..0` (no revision before 0): a suggestion is always a valid subject itself
        before, after = (second, first) if first > second else (first - 1, first)
        hint = f" (`change:{before}..{after}`?)" if before >= 0 else ""
        report(
            f"subject `{text}` runs backwards: a change is `change:A..B` from revision A to a "
            f"later revision B{hint}"
        )
        return
    if text in KEYWORD_SUBJECTS or "://" in text:
        return
    if _EXACT_SUBJECT.match(text):
        if not text.startswith("usage@") or _calendar_day(text.removeprefix("usage@")):
            return
        report(f"subject `{text}` names no calendar day (`usage@YYYY-MM-DD`)")
        return
    hint = suggest(text, KEYWORD_SUBJECTS)
    report(
        f"subject `{text}` is not `settings`, `settings@N`, `org`, `change`, `change:A..B`, "
        "`usage`, `usage@YYYY-MM-DD` "
        f"or a repository URL glob such as https://github.com/acme/legacy-*{hint}"
    )


def _calendar_day(text: str) -> bool:
    try:
        date.fromisoformat(text)
    except ValueError:
        return False
    return True


def _parse_expiry(
    raw: Any, report: Callable[[str], None], shown: Callable[[str], str] = str
) -> datetime | None:
    """A date (YAML date or 'YYYY-MM-DD' text) to the end of that day, UTC; None (reported)
    for anything else, an empty `expires:` (null) included. The value quoted is `shown`'s
    (a secret of the file's left out), its first 40 characters."""
    day: date | None = None
    if isinstance(raw, date) and not isinstance(raw, datetime):
        day = raw
    elif isinstance(raw, str) and _DATE.match(raw.strip()):
        try:
            day = date.fromisoformat(raw.strip())
        except ValueError:
            day = None
    if day is None:
        got = "nothing (empty or null)" if raw is None else repr(_cut(shown(str(raw)), 40))
        report(f"`expires` must be a calendar date YYYY-MM-DD, got {got}")
        return None
    return datetime.combine(day, time.max, tzinfo=UTC)


def _cut(text: str, length: int) -> str:
    """The first `length` characters of `text`, or more where that would cut a
    `<not shown: looks like a secret>` in two."""
    from auditor.redact.shown import NOT_SHOWN

    start = text.find(NOT_SHOWN, max(0, length - len(NOT_SHOWN) + 1))
    if 0 <= start < length:
        return text[: start + len(NOT_SHOWN)]
    return text[:length]


def _check_duplicates(waivers: Sequence[Waiver], problems: list[str]) -> None:
    seen: dict[tuple[str, str], Waiver] = {}
    for waiver in waivers:
        key = (waiver.rule_id, waiver.subject)
        first = seen.setdefault(key, waiver)
        if first is not waiver and waiver.source is not None:
            message = (
                f"duplicate waiver for rule {waiver.rule_id} and subject {waiver.subject} "
                f"(first at {first.source})"
            )
            problems.append(problem(waiver.source, "", message))


def subject_matches(waiver: Waiver, subject: Subject, stored: bool = True) -> bool:
    """True when the waiver's subject covers this result's subject (`stored`: a `settings`
    subject is a stored revision's, not a review's proposed settings)."""
    pattern = waiver.match_subject
    if pattern == subject.key:
        return True
    if subject.key == "settings" and pattern.startswith("settings@"):
        # `settings@412` names revision 412's settings, which a run without
        # `--all-revisions` judges as `settings` while 412 is the newest (or `--at`'s); a
        # review's proposed settings are no stored revision, whatever number they would get
        return stored and pattern == f"settings@{subject.revision}"
    if pattern == "settings":
        return subject.kind == "settings"
    if pattern == "change":
        return subject.kind == "change"
    if pattern == "org":
        return subject.kind == "org"
    if pattern == "usage":
        return subject.kind == "usage"
    return subject.repo_url is not None and fnmatchcase(subject.repo_url, pattern)


def _describe(waiver: Waiver) -> str:
    where = f" ({waiver.source})" if waiver.source else ""
    return f"waiver for {waiver.rule_id} on {waiver.subject}{where}"


def _day(moment: datetime) -> str:
    return moment.date().isoformat()


def untried_rules(waivers: Iterable[Waiver], judged: Collection[str]) -> frozenset[str]:
    """The rules `waivers` name that an evaluation judging the rules `judged` leaves out: a
    rule of a policy not given this run (a shipped pack's, with `--policy usage.yaml`), a
    usage rule under `--no-usage`, a readiness rule in a review. Their waivers are not stale."""
    return frozenset(w.match_rule for w in waivers) - frozenset(judged)


def apply_waivers(
    results: Sequence[RuleResult],
    waivers: Sequence[Waiver],
    now: datetime,
    *,
    untried: Collection[str] = (),
    stored: bool = True,
) -> tuple[tuple[RuleResult, ...], WaiverReport]:
    """Mark fail/unknown/error results covered by a waiver in force as `waived`.

    `untried`: the ids of the rules this evaluation left out (`untried_rules`). A waiver of
    one of them is not called stale: it was not tried. A rule that was tried and gave no
    result (a readiness rule with no reports) still makes its waiver stale; each stale
    waiver's warning says why it matched nothing. `stored=False`: the results judge settings
    that are no stored revision (a review's proposed ones), which `settings@N` never names."""
    in_force = [w for w in waivers if now <= w.expires]
    used: set[int] = {id(w) for w in in_force if w.match_rule in untried}  # so never stale
    out: list[RuleResult] = []
    for result in results:
        match = _first_match(result, in_force, stored) if result.status in WAIVABLE else None
        if match is None:
            out.append(result)
            continue
        used.add(id(match))
        out.append(replace(result, status="waived", raw_status=result.status, waiver=match))
    report = _report(waivers, in_force, used, now, out, stored)
    return tuple(out), report


def _first_match(result: RuleResult, waivers: Sequence[Waiver], stored: bool) -> Waiver | None:
    for waiver in waivers:
        if waiver.match_rule == result.rule.id and subject_matches(waiver, result.subject, stored):
            return waiver
    return None


def _report(
    waivers: Sequence[Waiver],
    in_force: Sequence[Waiver],
    used: set[int],
    now: datetime,
    results: Sequence[RuleResult],
    stored: bool = True,
) -> WaiverReport:
    soon_limit = now + timedelta(days=EXPIRING_SOON_DAYS)
    far_limit = now + timedelta(days=MAX_TERM_DAYS)
    expired = [w for w in waivers if now > w.expires]
    stale = [w for w in in_force if id(w) not in used]
    # a stale waiver is reported as stale only, also when it lapses within 14 days
    soon = [w for w in in_force if w.expires <= soon_limit and id(w) in used]
    warnings = [
        f"{_describe(w)} expired on {_day(w.expires)} (owner {w.owner}); it no longer waives"
        for w in expired
    ]
    warnings += [f"{_describe(w)} expires on {_day(w.expires)} (owner {w.owner})" for w in soon]
    if stale:
        why = _why_stale(stale, results, stored)
        warnings += [f"{_describe(w)} matched no failing result: {why[id(w)]}" for w in stale]
    warnings += [
        f"{_describe(w)} runs until {_day(w.expires)}, more than {MAX_TERM_DAYS} days out; "
        "review waivers at least yearly"
        for w in in_force
        if w.expires > far_limit
    ]
    # a stale waiver waived nothing: it is listed as stale, not as in force
    in_use = tuple(w for w in in_force if id(w) in used)
    return WaiverReport(in_use, tuple(soon), tuple(expired), tuple(stale), tuple(warnings))


def _why_stale(
    stale: Sequence[Waiver], results: Sequence[RuleResult], stored: bool = True
) -> dict[int, str]:
    """Why each stale waiver matched nothing, by `id`: the rule gave no result, no subject of
    this run is the waiver's, the results on it are waived by another waiver, or the rule
    does not fail there."""
    rules = {w.match_rule for w in stale}
    by_rule: dict[str, list[RuleResult]] = {}
    settings_revision: int | None = None
    for result in results:
        if result.rule.id in rules:
            by_rule.setdefault(result.rule.id, []).append(result)
        if result.subject.key == "settings" and result.subject.revision is not None:
            settings_revision = result.subject.revision
    why: dict[int, str] = {}
    for w in stale:
        mine = by_rule.get(w.match_rule, [])
        covered = [r for r in mine if subject_matches(w, r.subject, stored)]
        others = {r.waiver.source for r in covered if r.waiver is not None and r.waiver is not w}
        if not mine:
            why[id(w)] = "the rule gave no result in this run (nothing to judge)"
        elif not covered:
            why[id(w)] = f"no subject of this run is `{w.subject}`" + (
                _subjects_hint(w, settings_revision)
                if stored
                else " (the proposed settings are no stored revision: `settings@N` never "
                "names them)"
            )
        elif others:
            where = ", ".join(sorted(str(o) for o in others if o is not None)) or "another waiver"
            why[id(w)] = f"its failing results are waived by the waiver at {where}"
        else:
            why[id(w)] = f"the rule does not fail on `{w.subject}` (it passes or does not apply)"
    return why


def _subjects_hint(waiver: Waiver, settings_revision: int | None) -> str:
    if waiver.match_subject.startswith("settings@") and settings_revision is not None:
        return (
            f" (this run judges the settings at revision {settings_revision}, as `settings`; "
            "every stored revision is judged only with --all-revisions)"
        )
    return ""


def waived_counts(
    failing: Sequence[tuple[int, int]],
    spans: Iterable[tuple[str, Sequence[tuple[int, int | None]]]],
    waivers: Sequence[Waiver],
    now: datetime,
) -> RevisionCounts:
    """(revision, how many of the rules failing there a waiver in force at `now` covers) for
    each revision of `failing`: the waiver matches that revision's result as it matches a
    `settings@N` result of `--all-revisions` (`settings` covers every revision, `settings@N`
    revision N). `spans`: each settings rule's failing stretches, (first revision failing,
    first revision no longer failing or None). Empty when no waiver covers any.

    `waivers`: those the run's reports list as waiving (`WaiverReport.in_force`), never one
    they call stale, which waived nothing: a `settings@N` waiver of a run without
    `--all-revisions` whose N is not the revision judged (review R33 #4), or a `settings`
    waiver of a rule that passes on the settings judged, is not counted at any revision."""
    in_force = [w for w in waivers if now <= w.expires]
    numbers = failing.numbers if isinstance(failing, RevisionCounts) else [r for r, _ in failing]
    delta = [0] * (len(numbers) + 1)
    covered = False
    for rule, stretches in spans:
        mine = [w for w in in_force if w.match_rule == rule]
        every = any(w.match_subject == "settings" for w in mine)
        ones = {
            int(w.match_subject.removeprefix("settings@"))
            for w in mine
            if re.fullmatch(rf"settings@{_REV}", w.match_subject)
        }
        for start, end in stretches if every or ones else ():
            if every:
                delta[bisect_left(numbers, start)] += 1
                delta[len(numbers) if end is None else bisect_left(numbers, end)] -= 1
                covered = True
                continue
            for n in ones:
                at = bisect_left(numbers, n)
                inside = start <= n and (end is None or n < end)
                if inside and at < len(numbers) and numbers[at] == n:
                    delta[at] += 1
                    delta[at + 1] -= 1
                    covered = True
    if not covered:
        return RevisionCounts()
    return RevisionCounts(numbers, accumulate(delta[:-1]))
