"""Evaluation state that survives between runs: what a nightly reads back instead of re-running.

Takes the rules and the lists identity table, gives each rule's *key* (a digest of everything
its verdicts depend on: its content, the policy's enums, the tool version and, for change
rules, the list table) and turns the engine's per-rule walk state into bytes and back:

- a settings rule: its failing spans up to the last evaluated revision (`history.Resume`), so
  the walk resumes at the next revision and "violating since" is read back;
- a change rule: its step tally — counts per status, the revisions spanned and every step
  result that did not pass, with its words (`change.Tally`), so only new steps are run;
- a usage or readiness rule: its verdicts by projection key (`memo.MemoRule.keep`), those
  the run handed out, so a day or report whose values the rule read before is not judged again
  (a report's `$age_days` would be among those values, new on every run: the verdicts of a
  readiness rule that can see it are not kept);
- a settings rule, besides its spans: its verdict on the revision under test, kept so too, so
  a nightly whose new revisions left what the rule reads as it was words no result again;
- the readiness model's grades of each report (`$score`, `$level`) by its content hash
  (`readiness.Grades`), so an unchanged report's criteria are worked out only where a rule
  reads them.

A rule whose verdicts depend on the clock (`within_days`, `older_than_days`) has no key: it is
evaluated afresh every run. Org rules are too. The state is only ever a cache: the same inputs
give the same results with or without it (`tests/test_incremental.py` proves it over
randomized histories). Which stored revision the state was computed at, and whether the
stored history still leads to it unchanged, is the caller's to check (`auditor.store.evalstate`).
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from datetime import datetime
from itertools import islice
from typing import Any

import orjson

from auditor import __version__
from auditor.diff import ListTable
from auditor.evaluate.change import Tally
from auditor.evaluate.history import Resume, Span
from auditor.evaluate.memo import rule_reads
from auditor.evaluate.model import RuleResult
from auditor.evaluate.readiness import ReadinessModel, model_digest
from auditor.evaluate.rule import Verdict
from auditor.models import (
    STATUSES,
    TARGETS,
    Attribution,
    Evidence,
    Status,
    Subject,
    make_attribution,
    make_subject,
)
from auditor.policy.conditions import Condition, Leaf, Logic, iter_leaves
from auditor.policy.model import Rule

#: Bump when the stored form or the meaning of a verdict changes (keys then all differ).
# 2: a redacted value is judged by its fingerprint (operators.hidden); 3: messages keep every
# character of what they quote, a criterion not evaluable has no `passed` and may leave a level
# unknown (state kept by an earlier build would read back its words and grades); 4: an author
# whose address is hidden is an unknown author (it was an `error` on every run); 5: a literal
# of another JSON type than the value is an `error`, not a `false` (`operators.compare.comparable`:
# `not_equals: "false"` on a boolean passed); 6: and inside an object or array literal
# (`not_equals: {enabled: "false"}`, `operators.compare._nested`); 7: `type: integer` holds for
# a whole float (`30.0`), the evidence of an error or a pass under `not` states the rule's own
# expectation, a set list only reordered is not `changed`, a change rule on a history of one
# revision is `not_applicable` (state kept by an earlier build would read back the old ones)
STATE_FORMAT = 7
STORED_TARGETS = ("settings", "change")


def table_digest(table: ListTable) -> str:
    """A digest of the lists identity table (`diff_keys`), which change documents depend on."""
    shape = [sorted(table.sets), sorted(table.keyed.items()), sorted(table.ordered)]
    return hashlib.sha256(orjson.dumps(shape)).hexdigest()


def rule_key(rule: Rule, enums: Mapping[str, tuple[str, ...]], table: ListTable) -> str | None:
    """The digest a rule's stored state is filed under, or None when it cannot be stored
    (its target is not stored, or it reads the clock)."""
    if rule.target not in STORED_TARGETS or _reads_clock(rule):
        return None
    table_part = table_digest(table) if rule.target == "change" else ""
    shape = {"format": STATE_FORMAT, "tool": __version__, **_rule_shape(rule, enums)}
    return _digest({**shape, "table": table_part})


def _rule_shape(rule: Rule, enums: Mapping[str, tuple[str, ...]]) -> dict[str, Any]:
    """What of a rule (and the enums it may read) its stored state or verdicts depend on."""
    return {
        "rule": [
            rule.id, rule.title, rule.severity, rule.target, rule.on_missing, rule.description,
            rule.remediation, list(rule.controls), list(rule.tags),
        ],
        "when": _shape(rule.when) if rule.when is not None else None,
        "assert": _shape(rule.condition),
        "enums": sorted((k, list(v)) for k, v in enums.items()),
    }  # fmt: skip


def _digest(shape: Mapping[str, Any]) -> str | None:
    try:
        data = orjson.dumps(shape, default=repr)
    except TypeError:  # e.g. an integer beyond 64 bits in an argument: not stored
        return None
    return hashlib.sha256(data).hexdigest()


#: Targets whose rules' verdicts are kept by projection (`dump_verdicts`): a settings rule's
#: is the one on the revision under test (its walk state is kept apart, `dump_resume`).
VERDICT_TARGETS = ("usage", "readiness", "settings")
#: Most verdicts one rule's kept verdicts may hold (more are not stored: the rule is then
#: simply run afresh next time). A nightly's usage window holds tens, readiness one per report.
MAX_VERDICTS = 4096


def verdicts_key(rule: Rule, enums: Mapping[str, tuple[str, ...]]) -> str | None:
    """The digest a usage, readiness or settings rule's kept verdicts are filed under (see
    `dump_verdicts`), or None when they cannot be kept (another target, or the rule reads the
    clock, which its projection does not hold)."""
    if rule.target not in VERDICT_TARGETS or _reads_clock(rule) or _reads_age(rule):
        return None
    kind = {"format": STATE_FORMAT, "kind": "verdicts", "tool": __version__}
    digest = _digest({**kind, **_rule_shape(rule, enums)})
    return None if digest is None else "verdicts:" + digest


def _reads_age(rule: Rule) -> bool:
    """A readiness rule that can see `$age_days`, which differs on every run (it is the time
    since the report was made): its verdicts would never be read back, so none are kept."""
    return rule.target == "readiness" and any(
        deps[:1] in ((), ("$age_days",)) for deps in rule_reads(rule)
    )


# -- readiness grades: `$score` and `$level` by report content ----------------------------------


def grades_key(model: ReadinessModel) -> str:
    """The key the readiness grades of reports under `model` are filed under."""
    kind = {"format": STATE_FORMAT, "kind": "grades", "tool": __version__}
    return (
        "grades:" + hashlib.sha256(orjson.dumps({**kind, "model": model_digest(model)})).hexdigest()
    )


def dump_grades(used: Mapping[str, tuple[float | None, int]]) -> bytes | None:
    """The grades of this run's reports (`readiness.Grades.used`), by content hash; None when
    there are none or too many to keep."""
    if not used or len(used) > MAX_GRADES:
        return None
    return orjson.dumps({"grades": [[key, score, level] for key, (score, level) in used.items()]})


def load_grades(data: bytes) -> dict[str, tuple[float | None, int]]:
    """Inverse of `dump_grades`; an entry not of its form (a damaged row) is left out, so
    that report's grades are worked out again. ValueError, KeyError or TypeError when `data`
    is not such a dump at all."""
    out: dict[str, tuple[float | None, int]] = {}
    for entry in orjson.loads(data)["grades"]:
        if type(entry) is not list or len(entry) != 3:
            continue
        key, score, level = entry
        if type(key) is not str or type(level) is not int:
            continue
        if score is None or (type(score) is float and 0.0 <= score <= 1.0):
            out[key] = (score, level)
    return out


#: Most reports whose grades are kept (one per repository the run evaluates).
MAX_GRADES = 100_000


def _reads_clock(rule: Rule) -> bool:
    conds = [c for c in (rule.when, rule.condition) if c is not None]
    return any(
        op.kind == "time" for c in conds for leaf, _ in iter_leaves(c) for op, _, _ in leaf.ops
    )


def _shape(cond: Condition) -> Any:
    if isinstance(cond, Leaf):
        ops = [[op.name, op.kind, raw] for op, _, raw in cond.ops]
        default = None if cond.default is _MISSING_DEFAULT else ["default", cond.default]
        return ["leaf", [p.text for p in cond.paths], ops, default]
    if isinstance(cond, Logic):
        return [cond.kind, [_shape(c) for c in cond.children]]
    return [cond.kind, cond.path.text, _shape(cond.condition)]


_MISSING_DEFAULT = Leaf((), ()).default


class StateDumps:
    """The rules' new states (`States`), each dumped to bytes only when `items` reaches it:
    a change rule's tally at 100,000 revisions dumps to megabytes, and all of them at once
    were the largest single part of a run's peak memory."""

    def __init__(self) -> None:
        self._dumps: dict[str, Callable[[], bytes | None]] = {}

    def add(self, key: str, dump: Callable[[], bytes | None]) -> None:
        """Remember how to dump one rule's state (None from `dump`: not stored)."""
        self._dumps[key] = dump

    def __len__(self) -> int:
        return len(self._dumps)

    def items(self) -> Iterator[tuple[str, bytes]]:
        """(rule key, state) of each rule whose state can be stored, dumped one by one."""
        for key, dump in self._dumps.items():
            data = dump()
            if data is not None:
                yield key, data


# -- settings rules: failing spans -----------------------------------------------------------


def dump_resume(last: int, failing: bool, spans: tuple[Span, ...]) -> bytes:
    """A settings rule's state at revision `last`."""
    return orjson.dumps(
        {"last": last, "failing": failing, "spans": [[_who(s.start), s.end] for s in spans]}
    )


def load_resume(data: bytes) -> Resume:
    """Inverse of `dump_resume`."""
    raw = orjson.loads(data)
    spans = tuple(Span(_attribution(start), _number(end)) for start, end in raw["spans"])
    return Resume(int(raw["last"]), bool(raw["failing"]), spans)


# -- usage and readiness rules: verdicts by projection key -------------------------------------


def dump_verdicts(used: Mapping[bytes, Verdict], seeded: Collection[bytes] = ()) -> bytes | None:
    """A rule's verdicts by projection key (`memo.MemoRule.keep`): the ones this run handed out,
    so what is kept follows the window (a day leaving it, a report replaced is dropped). A
    verdict that would not read back exactly (a value JSON does not have) is left out: it is
    simply worked out again. `seeded` verdicts were read back from an earlier run, so they
    read back exactly again. None when there are too many to keep."""
    if not used or len(used) > MAX_VERDICTS:
        return None
    kept = []
    for key, verdict in used.items():
        try:
            raw = _verdict(verdict)
            if key not in seeded and _read_verdict(orjson.loads(orjson.dumps(raw))) != verdict:
                continue
        except (TypeError, ValueError, KeyError):
            continue
        kept.append([key.hex(), *raw])
    return orjson.dumps({"verdicts": kept}) if kept else None


def load_verdicts(data: bytes) -> dict[bytes, Verdict]:
    """Inverse of `dump_verdicts`; ValueError, KeyError, TypeError or IndexError when `data`
    is not such a dump (a damaged row)."""
    raw = orjson.loads(data)
    return {bytes.fromhex(entry[0]): _read_verdict(entry[1:]) for entry in raw["verdicts"]}


def _verdict(verdict: Verdict) -> list[Any]:
    evidence = [list(_evidence(e)) for e in verdict.evidence]
    return [verdict.status, verdict.message, evidence, verdict.count]


def _read_verdict(raw: list[Any]) -> Verdict:
    status, message, evidence, count = raw
    if type(message) is not str or type(count) is not int:
        raise TypeError("not a verdict")
    return Verdict(_STATUS[status], message, tuple(map(_read_evidence, evidence)), count)


# -- change rules: step tallies ---------------------------------------------------------------


def dump_tally(tally: Tally, rule: Rule) -> bytes | None:
    """A change rule's tally (None when a value in it does not read back exactly: a type
    JSON does not have, say, so the rule is simply evaluated afresh next time).

    One JSON document, its open results last, each on a line of its own (JSON text as orjson
    writes it has no line break, so `load_tally` finds each result without parsing the
    others). Each result this run found is checked on its own and dumped on its own: at
    100,000 revisions a rule has 10,000s of results, never all held as lists at once."""
    try:
        # Read back as `load_tally` reads it: the results this run found. The others were read
        # back from an earlier run's state (`load_tally`), so they are read back exactly again.
        for result in islice(tally.open, len(tally.open) - tally.new_open, None):
            if Shared().result(orjson.loads(orjson.dumps(_result(result))), rule) != result:
                return None
        # One buffer grown in place (a list of 10,000s of dumps joined at the end left their
        # holes in the heap: 27 MB more at the peak of a nightly rewriting its tallies)
        out = bytearray(_tally_head(tally, [])[:-2])  # up to `"open":[`
        found: Iterable[RuleResult] = tally.open
        if tally.stored is not None:  # the earlier run's results as its state wrote them
            out += tally.stored()
            found = islice(tally.open, len(tally.open) - tally.new_open, None)
        separator = b",\n" if out[-1:] != b"[" else b"\n"
        for result in found:
            out += separator
            out += _dumped(result)
            separator = b",\n"
        out += b"]}"
        return bytes(out)
    except (TypeError, KeyError, ValueError):  # KeyError: a status `load_tally` would not
        return None  # read back; ValueError: a time without its offset, say


def _tally_head(tally: Tally, results: list[RuleResult]) -> bytes:
    """The tally's dump with `results` as its open ones."""
    return _dumped(
        {
            "steps": tally.steps,
            "counts": dict(sorted(tally.counts.items())),
            "first": tally.first,
            "last": tally.last,
            "open": results,
        }
    )


def _dumped(value: Any) -> bytes:
    """`value` as JSON, a `RuleResult` in it through `_result`."""
    return orjson.dumps(value, default=_result, option=orjson.OPT_PASSTHROUGH_DATACLASS)


def load_tally(
    data: bytes,
    rule: Rule,
    shared: Shared | None = None,
    again: Callable[[], bytes] | None = None,
) -> Tally:
    """Inverse of `dump_tally`, the results re-attached to `rule`; the values many results
    repeat (a step's subject and author, an evidence list) are one object each, `shared`
    across the rules loaded with the same `Shared`. `again`, when given, gives `data` again
    (from the row it was read from), so that the open results' text can be written back as
    it is without being held meanwhile. ValueError, KeyError, TypeError or AttributeError
    when `data` is not such a tally (a damaged row).

    A tally as `dump_tally` writes it is read a result at a time (`_open_results`): at
    100,000 revisions one rule's open results parsed all at once were 26 MB of lists and
    strings for 2.3 MB of text, held until the last result was made, and that put the online
    nightly's peak over 150 MB. Any other layout of the same JSON (the one this version's
    predecessors wrote, without the line breaks) is parsed whole, and written anew."""
    shared = shared if shared is not None else Shared()
    found = _head(data)
    if found is None:
        return _whole(data, rule, shared)
    tally, start = found
    try:
        tally.open = [shared.result(r, rule) for r in _open_results(data, start, len(data) - 2)]
    except ValueError:  # not a result a line throughout: an earlier version appended to it
        return _whole(data, rule, shared)
    # The text of the open results, written again as it is (`dump_tally`: a nightly wrote
    # 1,000s of results back each night, unchanged): `data` is the tally as `dump_tally`
    # writes it, and the text can be had again from the row it was read from (`again`: not
    # held, unpacked when the tally is stored).
    if again is not None:
        tally.stored = _cut(again, start, len(data) - 2)
    return tally


def _whole(data: bytes, rule: Rule, shared: Shared) -> Tally:
    """The tally `data` holds, parsed whole (its text is then written anew)."""
    raw = orjson.loads(data)
    tally = _tally_of(raw)
    opens = raw.pop("open")
    if type(opens) is not list:
        raise TypeError("a tally's open results are not a list")
    opens.reverse()  # each parsed result dropped once it is made
    tally.open = [shared.result(opens.pop(), rule) for _ in range(len(opens))]
    return tally


_OPEN = b',"open":['


def _head(data: bytes) -> tuple[Tally, int] | None:
    """The tally `data` holds, less its open results, and where those begin, when `data` is
    a tally as `dump_tally` writes it: its head the very bytes `_tally_head` writes for it
    (these keys alone, in this order), the open results last. None otherwise."""
    at = data.find(_OPEN)
    if at < 0 or data[-2:] != b"]}":
        return None
    try:
        raw = orjson.loads(data[:at] + b"}")
        if type(raw) is not dict or list(raw) != ["steps", "counts", "first", "last"]:
            return None
        tally = _tally_of(raw)
    except (ValueError, KeyError, TypeError, AttributeError):
        return None
    start = at + len(_OPEN)
    if data[:start] != _tally_head(tally, [])[:-2]:
        return None
    if start != len(data) - 2 and data[start : start + 1] != b"\n":  # not a result a line
        return None
    return tally, start


def _tally_of(raw: dict[str, Any]) -> Tally:
    return Tally(
        steps=int(raw["steps"]),
        counts=Counter({str(k): int(v) for k, v in raw["counts"].items()}),
        first=_number(raw["first"]),
        last=_number(raw["last"]),
    )


def _open_results(data: bytes, start: int, end: int) -> Iterator[Any]:
    """The results in `data[start:end]`, each after a line break, a comma between them (as
    `dump_tally` writes them), each parsed by orjson on its own. ValueError when one is not
    JSON (a line break inside a result: it was not written so)."""
    if start == end:  # no open result
        return
    view, at = memoryview(data), start + 1
    while (stop := data.find(b",\n", at, end)) >= 0:
        yield orjson.loads(view[at:stop])
        at = stop + 2
    yield orjson.loads(view[at:end])


def _cut(again: Callable[[], bytes], start: int, end: int) -> Callable[[], bytes]:
    return lambda: again()[start:end]


_STATUS: dict[str, Status] = {status: status for status in STATUSES}


class Shared:
    """One object for each value the results read back repeat: a change rule's failing steps
    at 100,000 revisions are 10,000s of results with a few hundred distinct evidence lists,
    one subject and author per step, and messages that recur."""

    def __init__(self) -> None:
        self._subjects: dict[tuple[Any, ...], Subject] = {}
        self._who: dict[tuple[Any, ...], Attribution] = {}
        self._evidence: dict[int, tuple[bytes, tuple[Evidence, ...]]] = {}
        self._text: dict[str, str] = {}

    def result(self, raw: list[Any], rule: Rule) -> RuleResult:
        """A result as `_result` wrote it, its parts shared."""
        subject, status, message, evidence, since = raw
        key = tuple(subject)
        found = self._subjects.get(key)
        if found is None:
            found = self._subjects[key] = make_subject(*_subject_parts(key))
        if type(message) is not str:
            raise TypeError("a result's message is not text")
        return RuleResult(
            rule,
            found,
            _STATUS[status],  # orjson gives each its own copy of the text
            self.text(message),
            self._evidence_of(evidence),
            since=self._since(since) if since is not None else None,
        )

    def text(self, text: str) -> str:
        """The one copy of `text`."""
        return self._text.setdefault(text, text)

    def _evidence_of(self, raw: list[Any]) -> tuple[Evidence, ...]:
        if not raw:
            return ()
        # JSON values: equal bytes, equal values of the same types (`==` takes 1 for True).
        # Filed under the hash of the bytes: unshared evidence is not held twice.
        # The bytes are kept with the evidence, so a hit is checked without dumping it again.
        text = orjson.dumps(raw)
        found = self._evidence.get(hash(text))
        if found is not None and found[0] == text:
            return found[1]
        made = tuple(map(_read_evidence, raw))
        self._evidence.setdefault(hash(text), (text, made))
        return made

    def _since(self, raw: list[Any]) -> Attribution:
        key = tuple(raw)
        found = self._who.get(key)
        if found is None:
            revision, when, email, name = raw
            if not (type(revision) is int and type(email) is str and type(name) is str):
                raise TypeError("not an attribution")
            at = datetime.fromisoformat(when)  # TypeError or ValueError when it is no time
            if at.tzinfo is None:
                raise ValueError("an attribution's time without its offset")
            found = make_attribution(revision, at, self.text(email), self.text(name))
            self._who[key] = found
        return found


def _subject_parts(raw: tuple[Any, ...]) -> tuple[Any, ...]:
    """A subject's parts as `_result` wrote them; TypeError or ValueError when they are not of
    its form (a damaged row: its rule is evaluated afresh, never a report writer's error)."""
    kind, key, label, revision, repo_url = raw
    if not (
        kind in TARGETS
        and type(key) is str
        and type(label) is str
        and (revision is None or type(revision) is int)
        and (repo_url is None or type(repo_url) is str)
    ):
        raise TypeError("not a subject")
    return raw


def _result(result: RuleResult) -> list[Any]:
    subject = result.subject
    return [
        [subject.kind, subject.key, subject.label, subject.revision, subject.repo_url],
        result.status,
        result.message,
        [list(_evidence(e)) for e in result.evidence],
        _who(result.since) if result.since is not None else None,
    ]


def _read_evidence(raw: list[Any]) -> Evidence:
    """Inverse of `_evidence`; TypeError when `raw` is not of its form (a damaged row, which
    only makes its rule be evaluated afresh, never a report writer's error later)."""
    path, actual, expected, operator, present, note, shows_expected = raw
    if not (
        type(path) is str
        and type(operator) is str
        and type(note) is str
        and type(present) is bool
        and type(shows_expected) is bool
    ):
        raise TypeError("not evidence")
    return Evidence(path, actual, expected, operator, present, note, shows_expected)


def _evidence(ev: Evidence) -> Iterator[Any]:
    yield from (ev.path, ev.actual, ev.expected, ev.operator, ev.present, ev.note)
    yield ev.shows_expected


def _number(value: Any) -> int | None:
    """A revision number read back (None stays None); ValueError for anything else."""
    if value is None or type(value) is int:
        return value
    raise ValueError(f"not a revision number: {value!r}")


def _who(who: Attribution) -> list[Any]:
    return [who.revision, who.updated_at.isoformat(), who.author_email, who.author_name]


def _attribution(raw: list[Any]) -> Attribution:
    revision, when, email, name = raw
    return Attribution(int(revision), datetime.fromisoformat(when), email, name)
