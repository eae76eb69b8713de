"""`findings.oscal.json`: the run as an OSCAL 1.1 assessment-results document, for GRC platforms.

Takes `ReportData`, gives JSON text valid against NIST's OSCAL assessment-results JSON Schema
(the tests validate it against the schema kept in `tests/schemas/`). The mapping:

- the run is the one `result` (start: the first settings revision of the period, end: the
  report time), its `reviewed-controls` every framework control a rule maps to;
- every rule result (passes included) is an `observation` (method TEST) whose `subjects` name
  what was evaluated (the settings, a change step, a repository), whose `relevant-evidence`
  lists the JSON paths looked at, the values found and the values expected, and whose
  description and `attribution-*` props say who and when, as every other report words it;
- every framework control is a `finding` whose target status is `satisfied` only when every
  result mapped to it passes (a waived one is an accepted exception: `not-satisfied`, reason
  `other`), linked to the observations of its rules;
- the policy files are back-matter resources with their SHA-256, and the assessment plan the
  document imports (`import-ap`) is that set of policy files.

Same data, same bytes: every UUID is a version-5 UUID derived from the run id and what it names.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import uuid
from array import array
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from typing import Any

import orjson

from auditor.common.escape import clean_text
from auditor.findings.finding import Finding, attribution_author, attribution_text
from auditor.models import Evidence, Subject
from auditor.report import display, identity
from auditor.report.jsonout import inert_utf8, spliced_lists
from auditor.report.model import (
    ControlRow,
    PerAttribution,
    ReportData,
    control_rows,
    data_quality_lines,
    framework_of,
    integrity_coverage_text,
    output_headline,
    rules_evaluated,
    rules_left_out,
    what_was_audited,
)
from auditor.report.sarif import artifact_location, shipped_artifact_location

OSCAL_VERSION = "1.1.3"
_ROOT = uuid.UUID("6f1c5f0e-8a53-5b8e-9d39-3f5b7a9c2e10")


def _uuid(data: ReportData, *parts: str) -> str:
    """A name-based (version 5) UUID of the run and `parts`: `uuid.uuid5` of the name, also for
    a name with a lone surrogate from data, whose UTF-8 form is its `surrogatepass` bytes (text
    that is valid UTF-8 keeps its UUID, and no two names share one: a lone surrogate and its
    escape written out as text are different subjects)."""
    name = "\x1f".join((data.run_id, *parts)).encode("utf-8", "surrogatepass")
    return str(
        uuid.UUID(
            bytes=hashlib.sha1(_ROOT.bytes + name, usedforsecurity=False).digest()[:16], version=5
        )
    )


def _namer(data: ReportData, kind: str) -> Callable[[str], str]:
    """`_uuid(data, kind, part)` as a function of `part`, for the many UUIDs of one kind (a
    subject's, an observation's: made again each time one is written, not kept for the whole
    report): the hash of the common start taken once, the UUID's text formatted from the
    digest's hex (0.9 µs a UUID, `_uuid` 2.3 µs)."""
    start = hashlib.sha1(
        _ROOT.bytes + "\x1f".join((data.run_id, kind, "")).encode("utf-8", "surrogatepass"),
        usedforsecurity=False,
    )

    def name(part: str) -> str:
        digest = start.copy()
        digest.update(part.encode("utf-8", "surrogatepass"))
        raw = bytearray(digest.digest()[:16])
        raw[6] = (raw[6] & 0x0F) | 0x50  # version 5
        raw[8] = (raw[8] & 0x3F) | 0x80  # the RFC 4122 variant
        h = raw.hex()
        return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"

    return name


def _time(value: datetime) -> str:
    return value.isoformat().replace("+00:00", "Z")


def _prop(name: str, value: str) -> dict[str, str]:
    """A property OSCAL does not define, in auditor's namespace (`identity.oscal_namespace`)."""
    return {"name": name, "ns": identity.oscal_namespace(), "value": _line(value)}


def _line(text: str) -> str:
    """A one-line, non-empty string without leading or trailing blanks (OSCAL's string type)."""
    return " ".join(clean_text(text).split()) or "-"


def control_id(control: str) -> str:
    """`SOC2:CC6.1` → `cc6.1`: the control's id as OSCAL catalogs spell it (a token);
    the framework goes in a property."""
    code = control.split(":", 1)[1] if ":" in control else control
    token = "".join(c if c.isalnum() or c in "._-" else "_" for c in code.lower())
    return token if token[:1].isalpha() or token[:1] == "_" else f"_{token}"


def evidence_text(e: Evidence) -> str:
    """One piece of evidence in words: the path, what was there and what was expected."""
    return _line(display.evidence_line(e))


def _subject_title(s: Subject) -> str:
    return _line(s.label or s.key)


def _subject_resource(s: Subject, uuid_: str) -> dict[str, Any]:
    """The resource an observation's subject references (OSCAL wants a `subject-uuid` to
    name a resource, component, inventory item, party or user of the document)."""
    return {
        "uuid": uuid_,
        "title": _subject_title(s),
        "props": [_prop("subject-key", s.key), _prop("kind", s.kind)],
    }


def _attribution(f: Finding) -> tuple[str, tuple[dict[str, str], ...]]:
    """Who and when (for `_Names.since`, once per attribution): the line every report gives,
    `violating since rev 412 (2026-09-03) by a@b.c` (`attribution_text`), for the
    description, and its revision and author as props, for a GRC tool to select by (no
    revision for a review's "in the proposed file PATH": it is not stored yet). The line's
    day is the revision's; nothing else is repeated, as each prop adds to each result's
    observation, 100,000s at --all-revisions."""
    a = f.since
    line = attribution_text(f)
    if a is None or not line:
        return "", ()
    props = [] if a.place else [_prop("attribution-revision", str(a.revision))]
    who = attribution_author(a)
    if who:  # as the line names the author (cut as every report cuts it)
        props.append(_prop("attribution-author", who))
    return line, tuple(props)


def _observation(
    data: ReportData,
    f: Finding,
    names: _Names,
    expired: display.ExpiredWaivers | None = None,
) -> dict[str, Any]:
    props = [
        _prop("rule-id", f.rule_id),
        _prop("status", f.status),
        _prop("severity", f.severity),
        _prop("fingerprint", f.fingerprint),
    ]
    if f.lifecycle:
        props.append(_prop("lifecycle", f.lifecycle))
    since = names.since(f) if f.since is not None else None
    if since is not None:
        props += since[1]
    if f.waiver:  # who accepted what, and why: as every other report shows the waiver
        w = f.waiver
        props.append(_prop("waived-until", w.expires.isoformat()))
        props.append(_prop("raw-status", f.raw_status))
        props.append(_prop("waiver-owner", w.owner))
        props.append(_prop("waiver-reason", w.reason))
        if w.ticket:
            props.append(_prop("waiver-ticket", w.ticket))
    lapsed = expired(f) if expired is not None else None
    # who and when, as the SARIF message and the JUnit failure say it after the message
    description = f"{f.message}. {since[0]}" if since is not None and since[0] else f.message
    if lapsed is not None:  # counts again: say why, as every other report does
        props.append(_prop("waiver-expired", lapsed.expires.isoformat()))
        props.append(_prop("expired-waiver-owner", lapsed.owner))
        props.append(_prop("expired-waiver-reason", lapsed.reason))
        if lapsed.ticket:
            props.append(_prop("expired-waiver-ticket", lapsed.ticket))
        description = f"{description}. {display.expired_waiver_text(lapsed)}"
    elif f.waiver is not None and data.waivers.expired_since_as_of:
        note = display.WaiverNotes(data.waivers)(f)  # an `--at` run's, expired since
        if note:
            props.append(_prop("waiver-expired-since-as-of", f.waiver.expires.isoformat()))
            description = f"{description}. {note}"
    obs: dict[str, Any] = {
        "uuid": names.observation(f.fingerprint),
        "title": _line(f"{f.rule_id} {f.title}"),
        "description": _line(description),
        "props": props,
        "methods": ["TEST"],
        "types": ["finding" if f.status not in ("pass", "not_applicable") else "control-objective"],
        # The subject's key and kind are its back-matter resource's props: named once there,
        # not again in each of the (at --all-revisions, 100,000s of) observations of it.
        "subjects": [
            {
                "subject-uuid": names.subject(f.subject.key),
                "type": "resource",
                "title": _subject_title(f.subject),
            }
        ],
        "collected": _time(data.generated_at),
    }
    if f.evidence:
        obs["relevant-evidence"] = [{"description": evidence_text(e)} for e in f.evidence]
    return obs


class _Names:
    """The UUIDs of a report's observations and subjects, each made when it is written (a map
    of them all was 60 MB at 100,000 revisions, 100 MB of observations at --all-revisions):
    the same UUIDs `_uuid` gives. Also the words and props of each attribution, made once per
    attribution (results share them: one per step or revision)."""

    def __init__(self, data: ReportData) -> None:
        self.observation = _namer(data, "observation")
        self._subject = _namer(data, "subject")
        self.since = PerAttribution(_attribution)
        self._last = ("", "")  # a subject's results are mostly written one after another

    def subject(self, key: str) -> str:
        """The UUID of the subject with `key` (its back-matter resource's)."""
        if self._last[0] != key or not self._last[1]:
            self._last = (key, self._subject(key))
        return self._last[1]


def _finding(
    data: ReportData, row: ControlRow, linked: list[str], *, streamed: bool = False
) -> dict[str, Any]:
    """A control's finding, linked to the observations `linked` (`streamed`: an empty list of
    them, for `oscal_chunks` to fill)."""
    satisfied = row.state == "met"
    # OSCAL's objective state is satisfied or not-satisfied only: a control none of whose
    # results applied was not tested, so it is not satisfied, for reason `other` (its remarks
    # say why), never `pass`
    reason = "pass" if satisfied else ("fail" if row.failing else "other")
    finding: dict[str, Any] = {
        "uuid": _uuid(data, "finding", row.control),
        "title": _line(f"{row.framework} {row.code}: {row.state}"),
        "description": _line(
            f"{row.failing} failing, {row.unverified} unverified (error or unknown), "
            f"{row.waived} waived, {row.passing} passing and {row.not_applicable} not applicable "
            f"result(s) of the rules {', '.join(row.rules)}."
            + (
                " Met only through waivers: the waived results are accepted exceptions, not passes."
                if row.state == "waived"
                else ""
            )
            + (
                " Not applicable: no rule mapped to this control applied (every result's"
                " precondition was false), so nothing was tested and it is not shown as satisfied."
                if row.state == "not applicable"
                else ""
            )
        ),
        "props": [_prop("framework", framework_of(row.control)), _prop("control", row.control)],
        "target": {
            "type": "objective-id",
            "target-id": control_id(row.control),
            "status": {"state": "satisfied" if satisfied else "not-satisfied", "reason": reason},
        },
    }
    if linked or streamed:
        finding["related-observations"] = [{"observation-uuid": u} for u in linked]
    return finding


def observations(
    data: ReportData, names: _Names, findings: Iterable[Finding] | None = None
) -> list[dict[str, Any]]:
    """Every result (or those of `findings`) as an observation, in report order."""
    expired = display.ExpiredWaivers(data.waivers.expired) if data.waivers.expired else None
    return [
        _observation(data, f, names, expired)
        for f in (data.findings if findings is None else findings)
    ]


def _links(data: ReportData) -> dict[str, array[int]]:
    """Rule id → the positions in `data.findings` of its results, in report order: 4 bytes a
    result, its observation's UUID made again where a control links to it (`_linked`)."""
    by_rule: dict[str, array[int]] = {}
    for number, f in enumerate(data.findings):
        found = by_rule.get(f.rule_id)
        if found is None:
            found = by_rule[f.rule_id] = array("I")
        found.append(number)
    return by_rule


def _subject_resources(data: ReportData) -> Iterator[dict[str, Any]]:
    """The back-matter resource of each subject of a result, in the order they first come,
    one at a time (a set of the keys met is all that is kept)."""
    name = _namer(data, "subject")
    seen: set[str] = set()
    for f in data.findings:
        s = f.subject
        if s.key not in seen:
            seen.add(s.key)
            yield _subject_resource(s, name(s.key))


def oscal_document(
    data: ReportData,
    *,
    streamed: bool = False,
    links: dict[str, array[int]] | None = None,
    rows: list[ControlRow] | None = None,
) -> dict[str, Any]:
    """The assessment-results document as plain JSON values (`streamed`: the observations,
    each finding's related observations and the back matter's resources left empty, for
    `oscal_chunks` to fill; `links`: the `_links` of `data` and `rows` its `control_rows`,
    when already made)."""
    resources = _head_resources(data)
    plan = resources[0]["uuid"]
    review = data.review
    left_out = rules_left_out(data)
    evaluated = rules_evaluated(data)
    by_rule = _links(data) if links is None else links
    controls = control_rows(data.findings) if rows is None else rows
    findings = [
        _finding(
            data,
            row,
            [] if streamed else list(_linked_uuids(data, row, by_rule)),
            streamed=streamed and any(rule in by_rule for rule in row.rules),
        )
        for row in controls
    ]
    scope = data.scope
    start = scope.period_start if scope and scope.period_start else data.generated_at
    result_props = [
        _prop("run-id", data.run_id),
        _prop("complete", "true" if data.complete else "false"),
        _prop("api-address", data.api_address),
        _prop("fail-on", data.fail_on),
    ]
    source = data.source
    if source is not None:  # when the data was fetched; what the integrity check covered
        rechecked = source.rechecked
        result_props += [
            _prop("last-sync", _time(source.last_sync) if source.last_sync else "none"),
            _prop("synced-this-run", "true" if source.synced else "false"),
            _prop(
                "integrity-rechecked",
                f"{rechecked[0]}-{rechecked[1]}" if rechecked else "none",
            ),
            _prop("integrity-coverage", integrity_coverage_text(source)),
        ]
    if scope:
        if scope.as_of:
            result_props.append(_prop("as-of", _time(scope.as_of)))
        if data.waivers.as_of:  # the waivers were judged as of `--at`, some expired since
            result_props.append(_prop("waivers-judged-as-of", _time(data.waivers.as_of)))
            result_props += [
                _prop(
                    "waiver-expired-since-as-of",
                    f"{x.rule_id} on {x.subject}: in force on {data.waivers.as_of:%Y-%m-%d}; "
                    f"expired {x.expires:%Y-%m-%d}, before this report",
                )
                for x in data.waivers.expired_since_as_of
            ]
        # the view: every stored revision's settings judged, or only those in force
        result_props.append(_prop("all-revisions", "true" if scope.all_revisions else "false"))
        result_props += [
            _prop("population-revisions", str(scope.revisions)),
            _prop("population-change-steps", str(scope.change_steps)),
            _prop("population-repositories", str(scope.repositories)),
            _prop("population-readiness-reports", str(scope.reports)),
            *(_prop(f"rules-{target}", str(n)) for target, n in scope.rules_by_target),
            *(
                _prop(f"rules-left-out-{target}", f"{n}: {why}")
                for target, n, why in scope.rules_left_out
            ),
        ]
    if review:
        result_props += [
            _prop("mode", "review"),
            _prop("proposed-file", review.proposed_file),
            _prop("against", review.against),
            *(_prop(f"rules-{target}", str(n)) for target, n in review.rules_by_target),
            *(
                _prop(f"rules-left-out-{target}", f"{n}: {why}")
                for target, n, why in review.rules_left_out
            ),
        ]
    elif data.inputs.settings_revision is not None:
        result_props.append(_prop("settings-revision", str(data.inputs.settings_revision)))
    quality = data_quality_lines(data)
    if quality:  # what the data lacked, though every rule could be evaluated on it
        result_props.append(_prop("data-quality-warnings", str(len(data.data_quality))))
        result_props += [_prop("data-quality-warning", line) for line in quality]
    doubt = (
        f"the inputs carry {len(data.data_quality)} data-quality warning(s) (listed in the "
        "remarks and the data-quality-warning props): results may rest on stale or partial data."
        if quality
        else ""
    )
    if data.complete and doubt:  # not "every rule was evaluated": on what data, it says
        rules = f"{evaluated} rule(s)" if evaluated is not None else "the policies' rules"
        skipped = f" ({_left_out_text(left_out)})" if left_out else ""
        done = f"{rules} evaluated{skipped}, but {doubt}"
    elif data.complete:
        done = (
            f"every rule evaluated ({evaluated}) was evaluated; {_left_out_text(left_out)}."
            if left_out
            else "every rule was evaluated."
        )
    else:
        done = (
            f"{output_headline(data)}; every result of the evaluation is here."
            if data.output_notes and not data.not_evaluated
            else f"{len(data.not_evaluated)} item(s) could not be evaluated."
        ) + (f" Also, {doubt}" if doubt else "")
    if review:
        title = f"auditor review {data.run_id}: the proposed settings file {review.proposed_file}"
        description = (
            f"A pre-change review of the proposed settings file {review.proposed_file} against "
            f"{review.against}: the results the settings and change rules would give if the "
            "file were saved, not an assessment of the settings in force; " + done
        )
    else:
        title = f"auditor run {data.run_id}"
        description = f"{what_was_audited(data)} evaluated against the policy rules; {done}"
    result: dict[str, Any] = {
        "uuid": _uuid(data, "result"),
        "title": _line(title),
        "description": _line(description),
        "start": _time(min(start, data.generated_at)),
        "end": _time(data.generated_at),
        "props": result_props,
        "reviewed-controls": {
            "control-selections": [
                {"include-controls": [{"control-id": control_id(r.control)} for r in controls]}
                if controls
                else {"include-all": {}}
            ]
        },
    }
    if data.findings:
        # `oscal_chunks` fills it a batch at a time; as a value, every observation at once.
        result["observations"] = [] if streamed else observations(data, _Names(data))
    if findings:
        result["findings"] = findings
    remarks = []
    if not data.complete and (data.not_evaluated or not data.output_notes):
        remarks.append("Not evaluated: " + "; ".join(_line(r) for r in data.not_evaluated[:50]))
    if data.output_notes:  # (not items not evaluated: what happened to the run's outputs)
        remarks.append("Outputs: " + "; ".join(_line(r) for r in data.output_notes))
    if quality:
        remarks.append("Data quality: " + "; ".join(_line(w) for w in quality))
    if remarks:
        result["remarks"] = "\n\n".join(remarks)
    metadata: dict[str, Any] = {
        "title": _line(
            f"Pre-change review of the proposed settings file {review.proposed_file}"
            f"{' for ' + data.org if data.org else ''} (run {data.run_id})"
            if review
            else f"Compliance assessment results{' for ' + data.org if data.org else ''} "
            f"(run {data.run_id})"
        ),
        "last-modified": _time(data.generated_at),
        "version": _line(data.tool_version),
        "oscal-version": OSCAL_VERSION,
        "props": [_prop("tool", f"auditor {data.tool_version}")],
    }
    if data.org:
        metadata["parties"] = [
            {
                "uuid": _uuid(data, "party", data.org),
                "type": "organization",
                "name": _line(data.org),
            }
        ]
    return {
        "assessment-results": {
            "uuid": _uuid(data, "document"),
            "metadata": metadata,
            "import-ap": {"href": f"#{plan}"},
            "results": [result],
            # then what each observation's `subject-uuid` names (`oscal_chunks`: a batch at
            # a time)
            "back-matter": {
                "resources": [] if streamed else [*resources, *_subject_resources(data)]
            },
        }
    }


def _head_resources(data: ReportData) -> list[dict[str, Any]]:
    """The back matter's resources before the subjects': the assessment plan and the policy
    files."""
    resources: list[dict[str, Any]] = []
    plan = _uuid(data, "assessment-plan")
    review = data.review
    left_out = rules_left_out(data)
    evaluated = rules_evaluated(data)
    resources.append(
        {
            "uuid": plan,
            "title": "Assessment plan: the policy files evaluated",
            "description": _line(
                f"The policy rules this {'review' if review else 'run'} evaluated"
                + (f" ({evaluated})" if evaluated is not None else "")
                + ", each file listed below with its SHA-256"
                + (
                    f" and the count of its rules evaluated ({_left_out_text(left_out)})."
                    if review and review.rule_ids
                    else (f"; {_left_out_text(left_out)}." if left_out else ".")
                )
            ),
        }
    )
    for p in data.policy_files:
        file_props = [_prop("rule-count", str(len(p.rule_ids)))]
        if review and review.rule_ids:
            used = sum(1 for r in p.rule_ids if r in review.rule_ids)
            file_props.append(_prop("rules-evaluated", str(used)))
        resources.append(
            {
                "uuid": _uuid(data, "policy", p.path),
                "title": _line(f"Policy file {p.path}"),
                "props": file_props,
                "rlinks": [
                    {
                        # a URI reference, as SARIF's location of the same file (a shipped
                        # pack's: `policies/baseline.yaml`, its title naming it shipped)
                        "href": _policy_href(p.path),
                        "hashes": [{"algorithm": "SHA-256", "value": p.sha256}],
                    }
                ],
            }
        )
    for f in data.input_files:  # the readiness model and waivers file
        shipped = f.path == "(shipped)"
        resources.append(
            {
                "uuid": _uuid(data, "input", f.role, f.path),
                "title": _line(f"{f.role[0].upper()}{f.role[1:]} file {f.path}"),
                "props": [_prop("input-role", f.role)],
                "rlinks": [
                    {
                        "href": "readiness-criteria.yaml" if shipped else _policy_href(f.path),
                        "hashes": [{"algorithm": "SHA-256", "value": f.sha256}],
                    }
                ],
            }
        )
    return resources


def _policy_href(path: str) -> str:
    return (shipped_artifact_location(path) or artifact_location(path))["uri"]


def _left_out_text(left_out: Iterable[tuple[str, int, str]]) -> str:
    """`12 usage rule(s) not evaluated: --no-usage` for each target left out."""
    return "; ".join(f"{n} {t} rule(s) not evaluated: {why}" for t, n, why in left_out)


def render_oscal(data: ReportData) -> str:
    """`findings.oscal.json` text: two-space indented, stable order, trailing newline."""
    try:
        return b"".join(oscal_chunks(data)).decode("utf-8")
    except orjson.JSONEncodeError:  # lone surrogates in data: let json escape them as \\udXXX
        return b"".join(oscal_chunks(data, ascii_only=True)).decode("utf-8")


#: Observations serialized at a time by `oscal_chunks` (links to them and subjects' resources:
#: four times as many).
_BATCH = 256


def oscal_chunks(data: ReportData, *, ascii_only: bool = False) -> Iterator[bytes]:
    """`findings.oscal.json` as a stream of UTF-8 text, the observations (nearly all of a
    large run's document), each control's links to them and the back matter's resources (one
    per subject) serialized a batch at a time and never all held: the same bytes as one dump
    of `oscal_document`. orjson refuses lone surrogates (`orjson.JSONEncodeError`, possibly
    after some text was given out): start over with `ascii_only=True`, where `json` escapes
    them."""
    dump = _ascii if ascii_only else _dump
    links, rows = _links(data), control_rows(data.findings)
    document = oscal_document(data, streamed=True, links=links, rows=rows)
    lists: list[tuple[str, int, Iterable[list[Any]]]] = []
    if data.findings:
        names = _Names(data)
        lists.append(
            (
                "observations",
                4,
                (
                    observations(data, names, data.findings[i : i + _BATCH])
                    for i in range(0, len(data.findings), _BATCH)
                ),
            )
        )
    for row in rows:
        if any(rule in links for rule in row.rules):
            lists.append(("related-observations", 6, _linked(data, row, links)))
    head = _head_resources(data)
    lists.append(("resources", 3, _batches(itertools.chain(head, _subject_resources(data)))))
    yield from spliced_lists(document, lists, dump=dump)


def _batches(items: Iterable[Any], size: int = _BATCH * 4) -> Iterator[list[Any]]:
    iterator = iter(items)
    while batch := list(itertools.islice(iterator, size)):
        yield batch


def _linked(
    data: ReportData, row: ControlRow, links: dict[str, array[int]]
) -> Iterator[list[dict[str, str]]]:
    """A control finding's `related-observations`, a batch at a time."""
    for batch in _batches(_linked_uuids(data, row, links)):
        yield [{"observation-uuid": u} for u in batch]


def _linked_uuids(data: ReportData, row: ControlRow, links: dict[str, array[int]]) -> Iterator[str]:
    """The UUIDs of the observations of a control's rules, in order, each made again from its
    result (`links`: `_links`)."""
    name = _namer(data, "observation")
    findings = data.findings
    for rule in row.rules:
        for number in links.get(rule, ()):
            yield name(findings[number].fingerprint)


def _dump(value: Any) -> bytes:
    return inert_utf8(orjson.dumps(value, option=orjson.OPT_INDENT_2))


def _ascii(value: Any) -> bytes:
    return json.dumps(value, indent=2, ensure_ascii=True).encode("utf-8")
