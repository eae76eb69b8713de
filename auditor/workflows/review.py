"""Pre-change review: a proposed settings file against the live settings (or another file).

Takes the loaded policies, the live `Revision` (with its history, for attribution) and the
proposed file, gives an `AuditOutcome` whose report says which findings the change would
introduce, which it would fix and which stay, with locations in the proposed file.
Only `settings` and `change` rules apply: a settings file says nothing about readiness.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import date, datetime
from itertools import chain
from pathlib import Path
from typing import Any

from auditor.common.escape import printable
from auditor.common.files import UnreadableFile, read_input
from auditor.common.jsonutil import content_hash
from auditor.common.paths import Match, parse, render
from auditor.diff import DEFAULT_LIST_TABLE, ListTable, diff_revisions
from auditor.errors import DataError, PolicyError, UsageError
from auditor.evaluate.changewords import CHANGE_INDEX, about_unknown_author
from auditor.evaluate.engine import evaluate
from auditor.evaluate.history import attribution
from auditor.evaluate.incremental import rule_key, verdicts_key
from auditor.evaluate.model import EvaluationInputs, RuleResult
from auditor.evaluate.outcome import failing, subject_of, suffix_of, with_suffix
from auditor.fetch.decode import is_revision_number
from auditor.findings import (
    Finding,
    apply_waivers,
    compare_runs,
    error_lines,
    failing_at,
    findings_from_results,
    sort_findings,
)
from auditor.findings.finding import fingerprint_digest, normalize_path, primary_path
from auditor.findings.waivers import untried_rules
from auditor.models import (
    JSON,
    TRACKED_STATUSES,
    Change,
    DataWarning,
    Evidence,
    FindingRecord,
    Revision,
    SourceLocation,
    Subject,
    User,
)
from auditor.operators import MISSING, json_type
from auditor.policy import PolicySet
from auditor.policy.phrasing import show
from auditor.policy.yamlsafe import FileReadError, YamlDocument, load_yaml, problem
from auditor.redact import MARKER_RE, MARKER_START, Redactor
from auditor.report.build import RunHeader, build_report_data
from auditor.report.model import DataSource, InputDigest, ReviewInfo
from auditor.workflows.run import AuditOutcome, LoadedPolicy, StoredHistory, stored_state

UNKNOWN_AUTHOR = "unknown"
_REVIEW_TARGETS = frozenset({"settings", "change"})


@dataclass(frozen=True)
class SettingsFile:
    """A settings file (JSON or YAML), redacted, with the means to point into it."""

    path: str
    settings: JSON  # the settings object, redacted
    document: YamlDocument
    prefix: tuple[str, ...]  # ("settings",) when the file wraps the object as an API change


MAX_SETTINGS_BYTES = 16_000_000


def load_settings_file(path: Path, redactor: Redactor) -> SettingsFile:
    """Load a proposed (or `--against`) settings file; PolicyError (`file:line:col: error:`)
    or DataError when it is not a settings object.

    A problem quotes no secret the file itself reveals (`_own_secrets_hidden`): a key that is
    the file's own header credential or `env` value reads `<not shown: looks like a secret>`,
    as its reports show it as a marker.

    Read by the one opener every input goes through (`read_input`: a FIFO, a folder, a
    device or a symlink loop is refused as `file:1:1: error: a named pipe (FIFO), not a
    regular file`). A file named `*.json` must be JSON (`_json_refusal`); a value that is
    auditor's own redaction marker is refused (`_refuse_markers`), as is the history API's
    page (`_refuse_history_page`)."""
    found: list[YamlDocument] = []  # the document, once read
    try:
        return _load_settings_file(path, redactor, found)
    except FileReadError:
        raise  # not read: nothing in it to learn
    except (PolicyError, DataError) as exc:
        raise _own_secrets_hidden(exc, path, found) from None


def _own_secrets_hidden(
    exc: PolicyError | DataError, path: Path, found: list[YamlDocument]
) -> PolicyError | DataError:
    """`exc` with each secret the file reveals by its place (or by its looks) left out of
    what its lines quote of the file (`own_secrets_hidden`), learned from the data read, or
    from a lenient read of the text where the strict one refused it (a duplicate key: every
    value of it kept), read only when a line quotes what may be a credential; `exc` itself
    when nothing changed."""
    from auditor.redact.shown import own_secrets_hidden

    def data() -> Any:
        if found:
            return found[0].data
        from auditor.policy.yamlparse import lenient_data

        return lenient_data(_text_again(path))

    file = str(path)
    if isinstance(exc, PolicyError):
        problems = own_secrets_hidden(exc.problems, data, file)
        return exc if problems == exc.problems else PolicyError(problems)
    (text,) = own_secrets_hidden([str(exc)], data, file)
    return exc if text == str(exc) else DataError(text)


def _load_settings_file(path: Path, redactor: Redactor, found: list[YamlDocument]) -> SettingsFile:
    named_json = path.suffix.lower() == ".json"
    try:
        doc = load_yaml(path, max_bytes=MAX_SETTINGS_BYTES)
    except FileReadError:
        raise
    except PolicyError:
        # A `.json` file that YAML refused is told as the JSON mistake it is (a `//` comment:
        # YAML's complaint came lines later); JSON YAML refused (a duplicate key) keeps it.
        if named_json:
            _json_refusal(_text_again(path), str(path), named=True)
        raise
    found.append(doc)
    _json_refusal(doc.text, doc.path, named=named_json, doc=doc)
    doc.refuse_typed_keys()  # `1:`, `null:` read as "1", "None": keys of a settings object are text
    data: Any = doc.data
    _refuse_history_page(data, doc)
    prefix: tuple[str, ...] = ()
    if isinstance(data, dict) and "settings" in data and "revision" in data:
        _refuse_bad_revision(data, doc)
        data, prefix = data["settings"], ("settings",)
    if not isinstance(data, dict):  # in the words (and line) of every other input problem
        what = f"expected a settings object (keys and values), got {_kind(data)}"
        raise PolicyError([problem(doc.locate(list(prefix)), render(prefix), what)])
    _refuse_markers(data, prefix, doc, redactor)
    plain = _plain(data, [*prefix], doc)
    return SettingsFile(str(path), redactor.redact_json(plain), doc, prefix)


def _text_again(path: Path) -> str:
    """The file's text read again (by the same opener), for a JSON error's place; empty when
    it cannot be read or is not UTF-8 (the first read's error then stands)."""
    try:
        return read_input(path, max_bytes=MAX_SETTINGS_BYTES).decode("utf-8")
    except (UnreadableFile, UnicodeDecodeError):
        return ""


class _Constant:
    """`NaN`, `Infinity` or `-Infinity` where a JSON text writes one (Python's `json.dumps`
    writes them for such floats; JSON has no such numbers)."""

    def __init__(self, name: str) -> None:
        self.name = name


def _json_refusal(text: str, file: str, *, named: bool, doc: YamlDocument | None = None) -> None:
    """Refuse a file named `*.json` that is not JSON (PolicyError at the JSON parser's
    `file:line:col`: YAML took single quotes, trailing commas, and read `NaN` as text), and
    any file that is JSON but for `NaN`/`Infinity` (DataError at its place, as YAML's
    `.nan`). Any other text is left to the YAML read."""
    text = text.removeprefix("\ufeff")  # a byte-order mark is no column, as YAML reads it
    if not text.strip(" \t\r\n"):
        return  # empty: "expected a settings object, got nothing" says it better
    if not named and not text.lstrip(" \t\r\n").startswith(("{", "[")):
        return
    try:
        data = json.loads(text, parse_constant=_Constant)
    except json.JSONDecodeError as exc:
        if not named:
            return  # not JSON: YAML (`{a: 1}`)
        where = SourceLocation(file, exc.lineno, exc.colno)
        message = (
            f"invalid JSON: {exc.msg} (a file named `.json` is read as JSON: no comments, "
            "single quotes or trailing commas)"
        )
        raise PolicyError([problem(where, "", message)]) from None
    except (ValueError, RecursionError):
        return  # a number too long, too deep: the YAML read says where and why
    found = _first_constant(data)
    if found is not None and doc is not None:
        at, constant = found
        raise PolicyError([_number_problem(doc, at, constant.name)])


def _first_constant(data: Any) -> tuple[list[str | int], _Constant] | None:
    """The path to the first `_Constant` in `data`, in the file's order (no recursion)."""
    pending: list[tuple[Any, list[str | int]]] = [(data, [])]
    while pending:
        value, at = pending.pop()
        if isinstance(value, _Constant):
            return at, value
        if isinstance(value, dict):
            pending.extend((v, [*at, k]) for k, v in reversed(value.items()))
        elif isinstance(value, list):
            pending.extend((v, [*at, i]) for i, v in reversed(list(enumerate(value))))
    return None


def _refuse_history_page(data: Any, doc: YamlDocument) -> None:
    """PolicyError for a page of the history API (`{"changes": [...], "pagination": ...}`), the
    response body saved as it came (or broken: `changes` no list): read as settings, every
    live key was "removed"."""
    if not isinstance(data, dict) or "changes" not in data:
        return
    changes = data["changes"]
    revisions = (
        isinstance(changes, list)
        and bool(changes)
        and all(isinstance(c, dict) and "settings" in c and "revision" in c for c in changes)
    )
    if "pagination" not in data and not revisions:
        return
    newest = (
        "; the newest revision on the page is `.changes[0].settings` "
        "(`jq '.changes[0].settings'` of the response)"
        if revisions
        else " (and this page holds no revision)"
    )
    message = (
        "this is the history API's response (`changes` and `pagination`), not a settings "
        f"object: review one revision's settings, taken out of it{newest}"
    )
    raise PolicyError([problem(doc.locate(["changes"], key=True), "", message)])


def _refuse_bad_revision(data: dict[str, Any], doc: YamlDocument) -> None:
    """PolicyError for one revision of the history (`{"revision": N, "settings": {...}}`, as
    `.changes[0]` of a page) whose settings are no object (read as settings, every live key
    was "removed", and `revision` and `settings` added) or whose number is none the API gives
    (`fetch.decode.is_revision_number`: a whole number from 0 to 2^63-1; it is not judged,
    the proposal follows the live revision, but a `"5"` or `-5` there says the file is not
    what it seems)."""
    problems = []
    settings, number = data["settings"], data["revision"]
    if not isinstance(settings, dict):
        got = "null" if settings is None else _kind(settings)
        what = f"a revision's settings are an object (keys and values), got {got}"
        problems.append(problem(doc.locate(["settings"]), "$.settings", what))
    if not is_revision_number(number):  # (as the API's data is read: `5.0` is 5)
        if isinstance(number, bool) or not isinstance(number, int | float):
            shown = _kind(number)
        elif isinstance(number, float) and not number.is_integer():  # (an int may not fit one)
            shown = "a number with a fraction"
        else:
            shown = "a number outside it"
        what = f"a revision number is a whole number from 0 to 2^63-1, got {shown}"
        problems.append(problem(doc.locate(["revision"]), "$.revision", what))
    if problems:
        raise PolicyError(problems)


#: Why a value holding auditor's marker is refused (the marker itself is not repeated).
MARKER_REFUSAL = (
    "holds auditor's marker for a hidden value (`[secret fp:… len:…]`, as reports and PR "
    "comments show a secret), not a value or a `${VAR}` reference: saved, the file would put "
    "the marker's text in place of the real value; write the value's `${VAR}` reference (or "
    "the value) instead"
)


def _refuse_markers(
    data: dict[str, Any], prefix: tuple[str, ...], doc: YamlDocument, redactor: Redactor
) -> None:
    """PolicyError listing every key and string value that holds a redaction marker (copied
    from a report): redacted, it compared equal to the live secret ("0 change(s)"), though
    applying the file would overwrite that secret with the marker's text."""
    problems: list[str] = []
    # (value, its path, whether it is the key at that path), popped in the file's order
    pending: list[tuple[Any, list[str | int], bool]] = [(data, [*prefix], False)]
    while pending:
        value, at, key = pending.pop()
        if isinstance(value, dict):
            for k, v in reversed(value.items()):
                pending += [(v, [*at, k], False), (k, [*at, k], True)]
        elif isinstance(value, list):
            pending.extend((v, [*at, i], False) for i, v in reversed(list(enumerate(value))))
        elif isinstance(value, str) and MARKER_START in value and MARKER_RE.search(value):
            problems.append(_marker_problem(doc, at, redactor, key=key))
    if problems:
        raise PolicyError(problems)


def _marker_problem(
    doc: YamlDocument, at: list[str | int], redactor: Redactor, *, key: bool = False
) -> str:
    # A key that is a secret is not shown, nor a marker's fingerprint (public in the report
    # it came from, but nothing the author needs to find the place).
    shown = MARKER_RE.sub("[secret fp:… len:…]", redactor.redact_text(render(at)))
    what = f"{MARKER_REFUSAL} (in a key)" if key else MARKER_REFUSAL
    return problem(doc.locate(at, key=key), shown, what)


_KIND_WORDS = {
    "null": "nothing (an empty file, or null)",
    "boolean": "a boolean",
    "integer": "a number",
    "number": "a number",
    "string": "a string",
    "array": "a list",
}


def _kind(data: Any) -> str:
    """What a settings file holds instead of an object, in words."""
    kind = json_type(data)
    return _KIND_WORDS.get(kind, kind)


#: The integers a settings value may be, as the API's data is read (`fetch.shape`: orjson's).
_IN_64 = range(-(2**63), 2**64)


def _plain(value: Any, at: list[str | int], doc: YamlDocument) -> Any:
    """The value as the API would send it: YAML dates become ISO strings; a number JSON cannot
    carry (beyond 64 bits, NaN, infinity) is a PolicyError at its file:line:col and path."""
    if isinstance(value, dict):
        return {str(k): _plain(v, [*at, k], doc) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v, [*at, i], doc) for i, v in enumerate(value)]
    if isinstance(value, date):  # an unquoted YAML date or time: the text as written
        return doc.time_text(at, value)
    too_big = isinstance(value, int) and not isinstance(value, bool) and value not in _IN_64
    if too_big or (isinstance(value, float) and not math.isfinite(value)):
        raise PolicyError([_number_problem(doc, at, _unheld(value, doc.written(at)))])
    return value


def _number_problem(doc: YamlDocument, at: list[str | int], shown: str) -> str:
    """`file:line:col: error: $.path: NaN is not a JSON number …`, as every other problem of
    the file is told (a problem matcher reads it)."""
    return problem(
        doc.locate(at), render(at), f"{shown} is not a JSON number the service could hold"
    )


def _unheld(value: float, written: str | None) -> str:
    """A number no JSON value holds, in words: never the digits of a long integer (they may be
    a secret's), nor `inf` for the `1e400` that YAML read as infinity."""
    if isinstance(value, int):
        return "an integer beyond 64 bits (from 2^64 up, or from -2^63 - 1 down)"
    if math.isnan(value):
        return "NaN"
    if written is not None and written.lstrip("+-").lower() == ".inf":
        return f"`{written}` (infinity)"
    return "a number beyond a 64-bit float's range (read as infinity)"


def proposed_revision(
    live: Revision | None, settings: JSON, now: datetime, author: Author | None = None
) -> Revision:
    """The proposed settings as the revision that would follow the live one, by `author`.

    An unknown author has no email, so author rules give `unknown` rather than judge a
    placeholder address. After the last revision number the API gives, 2^63-1, the
    proposal's is 2^63: no 8-byte number, so the walk holds it as Python's own
    (`common.pairs.held_numbers`); it names no stored revision, and no query asks for it."""
    who = author or Author()
    return Revision(
        revision=(live.revision if live else 0) + 1,
        updated_at=now,
        user=User(id="proposed", email=who.email, name=who.name),
        settings=settings,
        content_hash=content_hash(settings),
    )


@dataclass(frozen=True)
class Author:
    """Who proposes the change: an email (empty when unknown) and a display name."""

    email: str = ""
    name: str = ""

    @property
    def shown(self) -> str:
        """The email, else the name, else `unknown`."""
        return self.email or self.name or UNKNOWN_AUTHOR


@dataclass(frozen=True)
class ReviewRequest:
    """Everything one review looks at."""

    live: Revision
    history: Iterable[Revision]  # re-iterable, ascending, ending with `live` (may be just `live`)
    proposed: SettingsFile
    against: str  # e.g. "rev 240 (live)" or a file name
    now: datetime
    run_id: str
    api_address: str
    fail_on: str
    list_table: ListTable = DEFAULT_LIST_TABLE  # how lists are diffed (`diff_keys`)
    author: Author = Author()  # the proposed step's author (unknown by default)
    # what the review's own sync found odd in the service's data (`sync` and `run` say it;
    # once stored, no later sync meets that data again to say it)
    data_quality: tuple[DataWarning, ...] = ()
    #: when the live side was fetched: this review's sync, or (`--offline`) the state file's
    #: last; None: `--against FILE`, no service data (the reports name the file instead)
    source: DataSource | None = None


def run_review(loaded: LoadedPolicy, request: ReviewRequest) -> AuditOutcome:
    """Evaluate live and proposed settings and the step between them; classify the findings."""
    policy = reviewed_rules(loaded.policy)
    now = request.now
    new_rev = proposed_revision(request.live, request.proposed.settings, now, request.author)
    resumed = _Resumed(policy, request)
    before = evaluate(
        _only(policy, {"settings"}),
        resumed.onto(EvaluationInputs(now=now, settings=request.live, history=request.history)),
    )
    after = evaluate(
        policy,
        resumed.onto(
            EvaluationInputs(
                now=now,
                settings=new_rev,
                history=_followed_by(request.history, new_rev),
                steps=((request.live, new_rev),),
                list_table=request.list_table,
            ),
            then=new_rev,
        ),
    )
    changes = tuple(
        diff_revisions(request.live.settings, new_rev.settings, table=request.list_table)
    )
    # A file that changes nothing (identical, or keys and set-like lists only reordered) would
    # save no revision: there is no step for a change rule to judge, whoever proposes it.
    stepped = after.results if changes else tuple(_no_step(r) for r in after.results)
    # only the settings and change rules are judged: a readiness rule's waiver is not stale,
    # nor one of the integrity rule, which only `auditor run` applies
    untried = untried_rules(loaded.waivers, {r.id for r in policy.rules})
    before_results, _ = apply_waivers(before.results, loaded.waivers, now, untried=untried)
    after_results, waivers = apply_waivers(
        stepped, loaded.waivers, now, untried=untried, stored=False
    )
    before_findings = findings_from_results(before_results)
    after_findings = findings_from_results(after_results)
    prior, added = _prior_records(
        before_findings,
        after_findings,
        request.live.settings,
        _Changed(changes, new_rev.settings),
    )
    marked, fixed_records = compare_runs(after_findings, prior)
    lists = _Lists()  # the proposed file's lists, indexed once for all the findings
    marked = [
        _step_fingerprint(
            _relabel(
                _unattributed(
                    _locate(_added_first(f, added, new_rev), request.proposed, changes, lists)
                ),
                request,
                new_rev.revision,
            ),
            request.live.revision,
            new_rev.revision,
        )
        for f in marked
    ]
    fixed_ids = {p.fingerprint for p in fixed_records}
    # A finding whose rule the proposal makes not apply (its `when:` guard no longer holds) is
    # not fixed: the review says it no longer applies.
    inapplicable = {
        (r.rule.id, r.subject.key) for r in after_results if r.status == "not_applicable"
    }
    gone = sort_findings(
        _live_label(f, request) for f in before_findings if f.fingerprint in fixed_ids
    )
    info = ReviewInfo(
        proposed_file=request.proposed.path,
        against=request.against,
        changes=changes,
        introduced=tuple(f.fingerprint for f in marked if f.lifecycle == "new"),
        fixed=tuple(f for f in gone if (f.rule_id, f.subject.key) not in inapplicable),
        no_longer_applies=tuple(f for f in gone if (f.rule_id, f.subject.key) in inapplicable),
        unchanged=sum(1 for f in marked if f.lifecycle == "persisting"),
        rules_by_target=_per_target(policy),
        rules_left_out=tuple(
            (t, n, "a review evaluates only the settings and change rules")
            for t, n in _per_target(loaded.policy)
            if t not in _REVIEW_TARGETS
        ),
        rule_ids=frozenset(r.id for r in policy.rules),
        rule_ids_left_out=tuple(
            sorted((r.target, r.id) for r in loaded.policy.rules if r.target not in _REVIEW_TARGETS)
        ),
    )
    errors = (
        *before.not_evaluated,
        *after.not_evaluated,
        *_proposal_errors(after_results, request),
    )
    header = RunHeader(request.run_id, now, "review", request.api_address, request.fail_on)
    data = build_report_data(
        header,
        loaded.policy.files,
        marked,
        errors,
        resolved=fixed_records,
        waivers=waivers,
        inputs=InputDigest(
            revisions_evaluated=((request.live.revision, request.live.content_hash),),
            settings_revision=request.live.revision,
        ),
        review=info,
    )
    if request.data_quality:
        data = replace(data, data_quality=request.data_quality)
    if request.source is not None:  # what the live side is: fetched now, or as last synced
        data = replace(data, source=request.source)
    introduced = [f for f in marked if f.lifecycle == "new"]
    return AuditOutcome(data, failing_at(introduced, request.fail_on))


NO_CHANGE = "the proposed settings change nothing: no revision would be saved"


def _no_step(result: RuleResult) -> RuleResult:
    """A change rule's result on a step that changes nothing: not applicable."""
    if result.subject.kind != "change":
        return result
    return replace(result, status="not_applicable", message=NO_CHANGE, evidence=(), since=None)


def reviewed_rules(policy: PolicySet) -> PolicySet:
    """The rules a review evaluates (`settings` and `change`); UsageError when there are none:
    a gate that judges nothing would pass every change."""
    reviewed = _only(policy, _REVIEW_TARGETS)
    if not reviewed.rules:
        targets = sorted({r.target for r in policy.rules})
        raise UsageError(
            "the policies have no `settings` or `change` rule, the only ones a review "
            f"evaluates (their rules are {', '.join(targets) or 'none'}): give --policy "
            "files with settings or change rules"
        )
    return reviewed


def _unattributed(finding: Finding) -> Finding:
    """A result that is `unknown` only because nobody knows the proposed step's author is
    reported as it is, but neither introduced by the file nor counted by the gate."""
    blind = finding.status == "unknown" and about_unknown_author(finding.evidence)
    return finding.with_marks(lifecycle=None) if blind and finding.lifecycle == "new" else finding


class _Resumed:
    """The evaluation state earlier `auditor run`s left for the settings rules, when it fits
    the stored history the review reads (see `stored_state`), as the engine's inputs: the
    walk that attributes "violating since" then starts where the state ends (the live
    revision, when a run has been made since the last sync) instead of at revision 1. `onto`
    gives the inputs of one evaluation (the live side, or the side followed by the
    proposal); unchanged when there is no fitting state (the whole history is walked, as
    before).

    The change rules' state (their tallies of every stored step) is never handed over: a
    review judges the one proposed step. Nothing is written: a review never moves the state
    on."""

    def __init__(self, policy: PolicySet, request: ReviewRequest) -> None:
        self.states: dict[str, bytes] = {}
        self.numbers: Sequence[int] = ()
        history = request.history
        if not isinstance(history, StoredHistory) or history.then:
            return
        if history.end != request.live.revision:
            return
        keys = _settings_keys(policy, request.list_table)
        if keys:
            self.states, hashes = stored_state(history.store, history.end, keys)
            self.numbers = hashes.numbers()
        self.store, self.end = history.store, history.end

    def onto(self, inputs: EvaluationInputs, then: Revision | None = None) -> EvaluationInputs:
        """`inputs` (over the stored history, followed by `then` when given) with the state."""
        if not self.states:
            return inputs
        store, end = self.store, self.end
        after = (then,) if then is not None else ()

        def tail(start: int) -> Iterable[Revision]:
            return chain(store.iter_revisions(start=start, end=end), after)

        numbers = [*self.numbers, *(r.revision for r in after)]
        return replace(inputs, prior=self.states, tail=tail, revision_numbers=numbers)


def _settings_keys(policy: PolicySet, table: ListTable) -> set[str]:
    """The keys the settings rules' stored state is filed under (spans, verdicts)."""
    keys: set[str] = set()
    for rule in policy.rules:
        if rule.target == "settings":
            for key in (rule_key(rule, policy.enums, table), verdicts_key(rule, policy.enums)):
                if key is not None:
                    keys.add(key)
    return keys


def _followed_by(history: Iterable[Revision], proposal: Revision) -> Iterable[Revision]:
    """The history with the proposed revision after it, still streamed when it was."""
    if isinstance(history, StoredHistory):
        return replace(history, then=(*history.then, proposal))
    return (*history, proposal)


def _relabel(finding: Finding, request: ReviewRequest, proposal: int) -> Finding:
    """A result on the proposal labelled as such (its file named), never as the settings
    revision it would become ("settings revision 241" is no stored revision): the key, and so
    the fingerprint, stays. So is its attribution where it names that revision (`violating in
    the proposed file PATH`, not `since rev 241`), or revision 0 of an `--against` file."""
    finding = _placed(finding, proposal, f"the proposed file {request.proposed.path}")
    if request.live.revision == 0:
        finding = _placed(finding, 0, f"the settings of {request.against}")
    label = _proposal_label(finding.subject, request)
    if label is None:
        return finding
    return replace(finding, subject=replace(finding.subject, label=label))


def _proposal_label(subject: Subject, request: ReviewRequest) -> str | None:
    """What the reports call a result's subject on the proposal (None: its own label)."""
    if subject.kind == "settings":
        return f"the proposed settings file {request.proposed.path}"
    if subject.kind == "change" and subject.key != "change:all":
        return f"the change from {request.against} to the proposed file {request.proposed.path}"
    return None


def _proposal_errors(results: Iterable[RuleResult], request: ReviewRequest) -> list[str]:
    """`error_lines` of the results on the proposal, each subject named as the reports name
    it (stderr's `not evaluated:` line said "settings revision 301", no stored revision)."""
    return error_lines(
        r
        if (label := _proposal_label(r.subject, request)) is None
        else replace(r, subject=replace(r.subject, label=label))
        for r in results
    )


#: The subject key a review's change finding on the proposed step is fingerprinted by, in place
#: of its `change:<live>..<live+1>`: the live revision number in the fingerprint re-keyed every
#: change alert of a pull request (code scanning closed them as fixed and opened new ones,
#: dismissals lost) whenever the live settings gained a revision between two pushes (T53 #2).
PROPOSED_STEP_KEY = "change:proposed"


def _step_fingerprint(finding: Finding, live: int, proposal: int) -> Finding:
    """`finding` fingerprinted by rule, `PROPOSED_STEP_KEY` and evidence path when it is a
    change finding on the step from the live settings to the proposal (its subject, as the
    reports show it, keeps the revision numbers); any other finding as it is."""
    subject = finding.subject
    if subject.kind != "change" or subject.key != f"change:{live}..{proposal}":
        return finding
    digest = fingerprint_digest(finding.rule_id, PROPOSED_STEP_KEY, primary_path(finding.evidence))
    return replace(finding, digest=digest)


def _placed(finding: Finding, revision: int, place: str) -> Finding:
    """`finding` whose attribution names `place` instead of `revision`, no stored one (a
    file's revision 0 has no author either)."""
    since = finding.since
    if since is None or since.revision != revision or since.place:
        return finding
    if revision == 0:
        since = replace(since, author_email="", author_name="")
    return replace(finding, since=replace(since, place=place))


def _live_label(finding: Finding, request: ReviewRequest) -> Finding:
    """A result on the live side labelled by what the review was given (`rev 240 (live)` or
    the file `--against` names), not as "settings revision 0" for a file."""
    if finding.subject.kind != "settings":
        return finding
    if request.live.revision == 0:
        finding = _placed(finding, 0, f"the settings of {request.against}")
    label = f"the settings of {request.against}"
    return replace(finding, subject=replace(finding.subject, label=label))


def _per_target(policy: PolicySet) -> tuple[tuple[str, int], ...]:
    counts: dict[str, int] = {}
    for rule in policy.rules:
        counts[rule.target] = counts.get(rule.target, 0) + 1
    return tuple(sorted(counts.items()))


def _only(policy: PolicySet, targets: Collection[str]) -> PolicySet:
    return replace(policy, rules=tuple(r for r in policy.rules if r.target in targets))


def _as_previous(f: Finding, fingerprint: str | None = None) -> FindingRecord:
    return FindingRecord(
        fingerprint or f.fingerprint, f.rule_id, f.subject.key, f.status, f.severity, "live"
    )


_HIDDEN = re.compile(r"and (\d+) more entries not shown")


#: Where in a proposed finding's evidence the offenders the proposal adds are, by the
#: finding's rule and subject key (see `_prior_records`).
Added = dict[tuple[str, str], tuple[int, ...]]


def _prior_records(
    before: Sequence[Finding], after: Sequence[Finding], live: JSON, changed: _Changed
) -> tuple[list[FindingRecord], Added]:
    """The live findings as the records the proposed ones are compared with, and where the
    evidence of each finding introduced by an added offender names it.

    A finding's fingerprint names one offending entry (its smallest evidence path), so when
    the change removes that entry while others still offend (one of two custom models with a
    literal key), the fingerprint moves to the next: by fingerprint alone the review called
    the rule's remaining, pre-existing failure introduced (and the removed one fixed). So a
    rule failing on the same subject both sides is one finding, under the proposed side's
    fingerprint, unless the proposed side has an offender the live side did not (offenders
    are counted: a second entry offending like an old one is one more): then it is
    introduced (and not fixed: it still fails).

    A side whose evidence was cut (more than 10 entries) counts the entries it does not show:
    more proposed entries than live ones is introduced, whichever either side shows (an
    offender neither side shows, as a 12th literal key among 12, is seen only by its count);
    and when the live side was cut, an offender it does not show is old only if the live
    settings hold that very value at that path."""
    live_by_rule = _tracked_by_rule(before)
    proposed = _tracked_by_rule(after)
    records: list[FindingRecord] = []
    added: Added = {}
    for key, olds in live_by_rule.items():
        news = proposed.get(key, [])
        if len(olds) != 1 or len(news) != 1:  # not one result a side: match by fingerprint
            records += [_as_previous(f) for f in olds]
            continue
        (old,), (new,) = olds, news
        named = _adds_offenders(old, new, live, changed)
        if named is None:
            records.append(_as_previous(old, new.fingerprint))
        elif named:  # no record: the proposed finding is new, about these entries
            added[key] = named
    return records, added


def _adds_offenders(
    old: Finding, new: Finding, live: JSON, changed: _Changed
) -> tuple[int, ...] | None:
    """Where in its evidence the proposed finding names an offender the live one did not
    (see `_prior_records`); None when it has none.

    A side whose evidence is cut shows 10 offending entries and counts the rest, so it has
    10 + hidden entries, and one that is not has 10 at most: more entries proposed than
    live is an offender added, whichever entries either side shows. Then the offender
    added may be one the evidence does not show, or one of those it shows that the live
    settings hold too: which one is new is not known, and no place is given (empty).

    One more of an offender the live side has too (a second entry lacking the same field, as
    every unpinned marketplace is the same offender: a list without `id` is compared with
    positions left out) is named by the evidence items the change touches (`_Changed`: an
    entry added, a value changed); only when those do not tell (none, or more than were
    added) by its last ones: an entry is more often added after the old ones."""
    added = _offenders(new) - _offenders(old)  # as many of one offender as before, or more
    old_hidden, new_hidden = _hidden_count(old), _hidden_count(new)
    evidence = new.evidence
    if old_hidden:
        named = [
            i
            for i, e in enumerate(evidence)
            if (normalize_path(e.path), _offender_value(e)) in added and not _live_holds(e, live)
        ]
    else:
        offenders = [(normalize_path(e.path), _offender_value(e)) for e in evidence]
        named = []
        for offender, count in added.items():
            at = [i for i, o in enumerate(offenders) if o == offender]
            if count < len(at):  # as many as the live side had are old: which ones is a guess
                touched = [i for i in at if changed.touches(evidence[i].path)]
                rest = [i for i in at if i not in touched][len(at) - count :]
                at = touched[-count:] if len(touched) >= count else sorted([*touched, *rest])
            named += at
        named.sort()
    if named or new_hidden > old_hidden:
        return tuple(named)
    return None


class _Changed:
    """Where the change touches the proposed settings: each change's place in them (an entry
    added, a key added or removed, a value changed; not an entry removed, which is not
    there), found only when first asked (most reviews never ask)."""

    def __init__(self, changes: Sequence[Change], settings: JSON) -> None:
        self._changes = changes
        self._settings = settings
        self._lists = _Lists()
        self._places: list[list[str | int]] | None = None

    def touches(self, path: str) -> bool:
        """True when `path` (of the proposed settings) is at or inside a change's place."""
        if self._places is None:
            self._places = [
                place
                for c in self._changes
                if c.kind != "item_removed"
                for place in [_change_parts(c, self._settings, self._lists)]
                if place is not None
            ]
        parts = _parts(path, self._settings, self._lists)
        return parts is not None and any(parts[: len(p)] == p for p in self._places)


class _Lists:
    """The settings' lists, each indexed when first asked: a review that changes 20,000
    entries of one list finds each change's place in one pass over the list, not one pass a
    change. (A list is known by its id: the index holds the list, so the id is not reused.)"""

    def __init__(self) -> None:
        self._by_field: dict[tuple[int, str], tuple[list[Any], dict[Any, int]]] = {}
        self._by_content: dict[int, tuple[list[Any], dict[str, int]]] = {}

    def match_index(self, node: Any, match: Match) -> int | None:
        """Where the first entry a selector picks sits (an object whose field equals its value,
        a missing field as null)."""
        if not isinstance(node, list):
            return None
        key = (id(node), match.field)
        if key not in self._by_field:
            first: dict[Any, int] = {}
            for i, item in enumerate(node):
                value = item.get(match.field) if isinstance(item, dict) else ()
                if isinstance(value, (str, int, float, type(None))):  # no list equals a selector
                    first.setdefault(value, i)
            self._by_field[key] = (node, first)
        return self._by_field[key][1].get(match.value)

    def entry_index(self, node: list[Any], entry: Any) -> int | None:
        """Where the last entry equal to `entry` sits. A set-like list's change names the list
        and the entry's value, not its place: when the list holds the value more than once
        (an entry the same as an old one added), which one is new is not known, and an entry
        is more often added after the old ones."""
        if id(node) not in self._by_content:
            last = {content_hash(item): i for i, item in enumerate(node)}
            self._by_content[id(node)] = (node, last)
        return self._by_content[id(node)][1].get(content_hash(entry))


def _change_parts(
    change: Change, settings: JSON, lists: _Lists, *, whole: bool = True
) -> list[str | int] | None:
    """The keys and indices of the settings a change is at: for an entry added to a
    set-like list (the change names the list), the entry where it sits (`_Lists.entry_index`).
    None when the change's path is not all in the settings, unless not `whole` (`_parts`)."""
    parts = _parts(change.path, settings, lists, whole=whole)
    if parts is not None and change.kind == "item_added":
        node = _at(settings, parts)
        if isinstance(node, list):
            at = lists.entry_index(node, change.after)
            if at is not None:
                parts = [*parts, at]
            elif whole:
                parts = None
    return parts


def _hidden_count(finding: Finding) -> int:
    """How many offenders the finding's evidence leaves out (counts them without showing)."""
    return sum(int(m.group(1)) for e in finding.evidence for m in [_HIDDEN.search(e.note)] if m)


def _live_holds(evidence: Evidence, live: JSON) -> bool:
    """The live settings hold the evidence's value at its path (at any list position), or
    lack it as well."""
    try:
        parts: Sequence[Any] = parse(evidence.path)
    except ValueError:
        return False
    nodes: list[Any] = [live]
    for part in parts:
        nodes = [child for node in nodes for child in _children(node, part)]
    if not evidence.present:
        return not nodes
    wanted = content_hash(evidence.actual)  # `==` first: cheap, and 1 == 1.0 == True
    return any(node == evidence.actual and content_hash(node) == wanted for node in nodes)


def _children(node: Any, part: Any) -> list[Any]:
    if isinstance(part, Match):
        if not isinstance(node, list):
            return []
        return [i for i in node if isinstance(i, dict) and i.get(part.field) == part.value]
    if isinstance(part, int):  # a list position: the entry may sit anywhere in the list
        return list(node) if isinstance(node, list) else []
    if isinstance(node, dict) and part in node:
        return [node[part]]
    return []


def _tracked_by_rule(findings: Iterable[Finding]) -> dict[tuple[str, str], list[Finding]]:
    out: dict[tuple[str, str], list[Finding]] = {}
    for f in findings:
        if f.status in TRACKED_STATUSES:
            out.setdefault((f.rule_id, f.subject.key), []).append(f)
    return out


def _offenders(finding: Finding) -> Counter[tuple[str, str]]:
    """What a finding's evidence points at, counted: each path with list positions left out,
    and for a path inside a list, the value found there (an entry at another position is the
    same entry; a new entry is another one, and a second entry lacking the same field or
    holding the same value as an old one is one more of them, not the same)."""
    return Counter((normalize_path(e.path), _offender_value(e)) for e in finding.evidence)


def _offender_value(e: Evidence) -> str:
    """For a path inside a list, the hash of the value found there; else empty."""
    return content_hash(e.actual) if normalize_path(e.path) != e.path and e.present else ""


def _added_first(finding: Finding, added: Added, proposal: Revision) -> Finding:
    """A finding the proposal introduces by adding an offender to a rule the live settings
    already fail, about that offender: its evidence first (so the location, `_locate`, is
    its line of the proposed file, in the diff), first in the message (`_named_first`), and
    attributed to the proposal and its author, not to the revision the old offender came in
    by. Any other finding as it is (one the live side has too keeps its attribution)."""
    if finding.lifecycle != "new":
        return finding
    named = added.get((finding.rule_id, finding.subject.key))
    if not named or named[-1] >= len(finding.evidence):
        return finding
    evidence = finding.evidence
    first = [evidence[i] for i in named]
    kept = set(named)
    ordered = [*first, *(e for i, e in enumerate(evidence) if i not in kept)]
    note = evidence[-1].note
    if _HIDDEN.fullmatch(note) and ordered[-1] is not evidence[-1]:
        # the count of the entries not shown stays last (another note stays on its item)
        moved = next(i for i, e in enumerate(ordered) if e is evidence[-1])
        ordered[moved] = replace(evidence[-1], note="")
        ordered[-1] = replace(ordered[-1], note=note)
    return replace(
        finding,
        message=_named_first(finding.message, evidence, first)
        if finding.raw_status == "fail"  # a waived failure is worded as it failed
        else finding.message,
        evidence=tuple(ordered),
        since=attribution(proposal),
    )


def _named_first(message: str, evidence: Sequence[Evidence], first: Sequence[Evidence]) -> str:
    """`message` about the entry whose evidence is `first` instead of the one it names.

    A failure is worded by the first failing entry (`path is value; expected …`, then
    `(+N more entries)`, `Outcome.failed` and `suffixed`). When the entry `first` is about
    failed the same checks (its evidence reads as that entry's did), only the leading
    `path is value` differs, and its evidence gives it whole; any other message (worded
    otherwise, by more than one path of the entry, or an entry that failed other checks)
    is kept as it is. (An error's words after `path is value` may be about the value, as
    `2030-01-01 is 1126 days after now`: the caller keeps those.)"""
    said, saying = _lead(evidence), _lead(first)
    if [_check(e) for e in said] != [_check(e) for e in saying]:
        return message
    suffix = suffix_of(message)
    head = message[: len(message) - len(suffix)]
    old, new = _subject(said[0]), _subject(saying[0])
    rest = head[len(old) :]
    if not head.startswith(failing(old, "")) or any(
        show(e.path) in rest for e in evidence[len(said) :]
    ):
        return message
    return with_suffix(new + rest, suffix)


def _lead(evidence: Sequence[Evidence]) -> Sequence[Evidence]:
    """The first evidence items, those about the first path (one entry's checks)."""
    path = evidence[0].path
    return evidence[: next((i for i, e in enumerate(evidence) if e.path != path), len(evidence))]


def _check(e: Evidence) -> tuple[Any, ...]:
    return (e.operator, e.expected, e.shows_expected, e.present)


def _subject(e: Evidence) -> str:
    """`path is value`, as a message begins with a failing entry (`Outcome.failed`)."""
    return printable(subject_of(e.path, e.actual if e.present else MISSING))


def _locate(
    finding: Finding, proposed: SettingsFile, changes: Sequence[Change], lists: _Lists
) -> Finding:
    """Point a finding at the line of the proposed file its evidence names: a change finding
    at the first change its evidence names (a change rule's evidence is about the change
    list, `$.changes[3].kind`, not about a line of the file)."""
    if finding.subject.kind not in _REVIEW_TARGETS:
        return finding
    if finding.subject.kind == "change" and changes:
        named = (CHANGE_INDEX.match(e.path) for e in finding.evidence)
        index = next((int(m.group(1)) for m in named if m and int(m.group(1)) < len(changes)), None)
        if index is not None or not any(_data_path(e.path) for e in finding.evidence):
            # a finding about no change in particular (the author's) points at the first
            place = _change_location(changes[index or 0], proposed, lists)
            return finding.with_marks(location=place)
    for evidence in finding.evidence:
        parts = _parts(evidence.path, proposed.settings, lists, whole=False)
        if parts is not None:
            return finding.with_marks(location=proposed.document.locate([*proposed.prefix, *parts]))
    return finding.with_marks(location=SourceLocation(proposed.path, 1, 1))


def _data_path(path: str) -> bool:
    """True for an evidence path into the settings (`$.after.x`, `$.x`), not into the rest of
    a change document (`$.changes[0]`, `$.author`)."""
    return not (path == "$.author" or path.startswith(("$.author_", "$.changes", "$.revision")))


def _change_location(change: Change, proposed: SettingsFile, lists: _Lists) -> SourceLocation:
    """Where a change shows in the proposed file: the entry added or changed; for a removal,
    the key of the nearest parent the proposed file still has."""
    parts = _change_parts(change, proposed.settings, lists, whole=False) or []
    if change.kind in ("removed", "item_removed"):
        if parts and (isinstance(parts[-1], int) or change.kind == "removed"):
            parts = parts[:-1]
        return proposed.document.locate([*proposed.prefix, *parts], key=True)
    return proposed.document.locate([*proposed.prefix, *parts])


def _at(node: Any, parts: Sequence[str | int]) -> Any:
    for part in parts:
        node = _child(node, part)
    return node


def _parts(
    path: str, settings: JSON, lists: _Lists, *, whole: bool = True
) -> list[str | int] | None:
    """`path` as keys and indices of `settings`, a selector as the index it picks. None when
    the path cannot be read, or when a selector picks nothing. Not `whole` (where `_locate`
    points): the keys up to such a selector (the nearest place there is), and a change
    document's `$.after.x` read as `$.x`."""
    try:
        components: Sequence[Any] = parse(path)
    except ValueError:
        return None
    if not whole and components and components[0] in ("after", "before"):
        components = components[1:]
    out: list[str | int] = []
    node: Any = settings
    for part in components:
        if isinstance(part, Match):
            index = lists.match_index(node, part)
            if index is None:
                return None if whole else out
            part = index
        out.append(part)
        node = _child(node, part)
    return out


def _child(node: Any, part: str | int) -> Any:
    if isinstance(node, dict) and isinstance(part, str):
        return node.get(part)
    if isinstance(node, list) and isinstance(part, int) and -len(node) <= part < len(node):
        return node[part]
    return None
