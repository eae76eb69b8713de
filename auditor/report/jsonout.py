"""`findings.json`: every finding and input hash, in the versioned schema shipped with the package.

Takes `ReportData`, gives JSON text valid against `auditor/schemas/findings.schema.json`
(`schema_version` says which). Values are kept as data (already redacted upstream); JSON string
escaping makes control characters inert.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict
from datetime import datetime
from importlib import resources
from itertools import islice
from typing import Any, TypeVar

import orjson

from auditor.common.escape import json_inert
from auditor.findings.finding import Finding, attribution_text, sort_controls
from auditor.models import (
    Attribution,
    Change,
    DataWarning,
    Evidence,
    FindingRecord,
    SourceLocation,
    Subject,
    Waiver,
)
from auditor.redact.plain import shown_author
from auditor.report.display import ExpiredWaivers
from auditor.report.model import (
    DataSource,
    ReadinessRow,
    ReportData,
    ReviewInfo,
    WaiverSummary,
    failing_not_waived,
    integrity_coverage_text,
    left_out_rule_ids,
    new_count,
    new_waived_count,
    rules_left_out,
    severity_counts,
    status_counts,
    upgrade_note,
)

SCHEMA_VERSION = "1.2"


def schema() -> dict[str, Any]:
    """The JSON Schema of `findings.json`, as shipped in the package."""
    text = resources.files("auditor").joinpath("schemas/findings.schema.json").read_text("utf-8")
    loaded: dict[str, Any] = json.loads(text)
    return loaded


def _iso(value: datetime) -> datetime:
    return value  # orjson writes RFC 3339; the json fallback goes through _default


def _default(value: object) -> str:
    return value.isoformat() if isinstance(value, datetime) else str(value)


def _location(loc: SourceLocation | None) -> dict[str, Any] | None:
    return None if loc is None else {"file": loc.file, "line": loc.line, "col": loc.col}


def _subject(s: Subject) -> dict[str, Any]:
    # Spelled out (the fields in order, as `asdict` gives them): asdict deep-copies, and
    # this runs once per finding.
    return {
        "kind": s.kind,
        "key": s.key,
        "label": s.label,
        "revision": s.revision,
        "repo_url": s.repo_url,
    }


def _evidence(e: Evidence) -> dict[str, Any]:
    return {
        "path": e.path,
        "present": e.present,
        "actual": e.actual,
        "expected": e.expected,
        "operator": e.operator,
        "note": e.note,
    }


def _since(a: Attribution | None, text: str) -> dict[str, Any] | None:
    if a is None:
        return None
    return {
        "revision": a.revision,
        "updated_at": a.updated_at,  # `_iso`: the value itself
        # cut as every report words them (a hostile service's 1 MB email, in every finding
        # it attributes); the stored revision keeps them whole
        "author_email": shown_author(a.author_email),
        "author_name": shown_author(a.author_name),
        "text": text,
    }


def _since_json(f: Finding) -> dict[str, Any] | None:
    return _since(f.since, attribution_text(f))


def waiver_json(w: Waiver) -> dict[str, Any]:
    """One waiver as JSON."""
    return {
        "rule_id": w.rule_id,
        "subject": w.subject,
        "reason": w.reason,
        "owner": w.owner,
        "expires": _iso(w.expires),
        "ticket": w.ticket,
        "source": _location(w.source),
    }


def finding_json(
    f: Finding,
    shared: Callable[[tuple[Evidence, ...]], list[dict[str, Any]]] | None = None,
    since: Callable[[Finding], dict[str, Any] | None] | None = None,
    expired: Callable[[Finding], Waiver | None] | None = None,
) -> dict[str, Any]:
    """One finding as JSON (rule metadata lives once, under `rules`; `shared`: gives the JSON
    of an evidence list, one value for a list met before; `since`: `_since_json`, likewise;
    `expired`: the expired waiver that waived the finding until it expired, as
    `display.ExpiredWaivers` finds it: `expired_waiver`, else null)."""
    # The rule's facts and the marks read once each (the finding's properties read them one
    # property call at a time), and the subject spelled out here: this runs once per finding.
    facts, marks, s, a = f.facts, f.marks, f.subject, f.since
    evidence, waiver, location = f.evidence, marks[1], marks[3]
    lapsed = None if expired is None else expired(f)
    if since is not None:
        attribution = since(f)
    else:  # `_since_json(f)`, with no call for a finding without attribution (most of them)
        attribution = None if a is None else _since(a, attribution_text(f))
    return {
        "fingerprint": f.fingerprint,
        "rule_id": facts.rule_id,
        "title": facts.title,
        "severity": facts.severity,
        "status": f.status,
        "raw_status": marks[0],
        "lifecycle": marks[2],
        "subject": {
            "kind": s.kind,
            "key": s.key,
            "label": s.label,
            "revision": s.revision,
            "repo_url": s.repo_url,
        },
        "message": f.message,
        "evidence": [_evidence(e) for e in evidence] if shared is None else shared(evidence),
        "since": attribution,
        "waiver": None if waiver is None else waiver_json(waiver),
        "expired_waiver": None if lapsed is None else waiver_json(lapsed),
        "location": None if location is None else _location(location),
    }


#: The most evidence lists `SharedEvidence` keeps (it is emptied when full; a 10,000-revision
#: run's results share 876).
CACHE_LIMIT = 1024


class SharedEvidence:
    """The JSON of each distinct evidence list, made once: findings share their evidence lists
    (a rule's failing steps found the same thing), and a value serializes the same wherever
    it is referred to."""

    def __init__(self) -> None:
        self._known: dict[int, tuple[tuple[Evidence, ...], list[dict[str, Any]]]] = {}

    def __call__(self, evidence: tuple[Evidence, ...]) -> list[dict[str, Any]]:
        known = self._known.get(id(evidence))
        if known is None or known[0] is not evidence:
            if len(self._known) >= CACHE_LIMIT:
                self._known.clear()
            known = self._known[id(evidence)] = (evidence, [_evidence(e) for e in evidence])
        return known[1]


def rule_json(f: Finding) -> dict[str, Any]:
    """The metadata of a finding's rule."""
    return {
        "id": f.rule_id,
        "title": f.title,
        "severity": f.severity,
        "description": f.description,
        "remediation": f.remediation,
        "controls": list(sort_controls(f.controls)),
        "tags": list(f.tags),
        "source": _location(f.source),
    }


def _rules(findings: tuple[Finding, ...]) -> list[dict[str, Any]]:
    firsts: dict[str, Finding] = {}
    for f in findings:
        firsts.setdefault(f.rule_id, f)
    return [rule_json(firsts[r]) for r in sorted(firsts)]


def _resolved(p: FindingRecord) -> dict[str, Any]:
    return asdict(p)


def _repo(r: ReadinessRow) -> dict[str, Any]:
    # Spelled out, as `_subject` (the fields in order, as `asdict` gives them).
    return {
        "repo_url": r.repo_url,
        "level": r.level,
        "score": r.score,
        "age_days": r.age_days,
        "clean": r.clean,
        "report_id": r.report_id,
    }


def _waivers(w: WaiverSummary) -> dict[str, Any]:
    return {
        "in_force": [waiver_json(x) for x in w.in_force],
        "expiring_soon": [waiver_json(x) for x in w.expiring_soon],
        "expired": [waiver_json(x) for x in w.expired],
        "stale": [waiver_json(x) for x in w.stale],
        "warnings": list(w.warnings),
        # optional, an `--at` run's: the waivers were judged as of then, and those of them in
        # force then (or stale) that expired before the report time, which still waive
        **(
            {
                "judged_as_of": _iso(w.as_of),
                "expired_since_as_of": [waiver_json(x) for x in w.expired_since_as_of],
            }
            if w.as_of
            else {}
        ),
    }


def _change(c: Change) -> dict[str, Any]:
    return {
        "path": c.path,
        "kind": c.kind,
        "before": c.before,
        "after": c.after,
        "old_path": c.old_path,
    }


def _review(r: ReviewInfo | None) -> dict[str, Any] | None:
    if r is None:
        return None
    return {
        "proposed_file": r.proposed_file,
        "against": r.against,
        "changes": [_change(c) for c in r.changes],
        "introduced": list(r.introduced),
        "fixed": [finding_json(f) for f in r.fixed],
        "no_longer_applies": [finding_json(f) for f in r.no_longer_applies],
        "unchanged": r.unchanged,
    }


def _data_source(source: DataSource) -> dict[str, Any]:
    rechecked = source.rechecked
    return {
        "last_sync": _iso(source.last_sync) if source.last_sync is not None else None,
        "synced_this_run": source.synced,
        "integrity_recheck_recorded": source.recheck_recorded,
        "integrity_rechecked": None
        if rechecked is None
        else {"first_revision": rechecked[0], "last_revision": rechecked[1]},
        "integrity_coverage": integrity_coverage_text(source),
    }


def report_json(d: ReportData, *, streamed: bool = False) -> dict[str, Any]:
    """The whole document as a JSON value (`streamed`: its lists of findings, of the
    failing count per revision and of the revisions evaluated left empty, for `json_chunks`
    to stream)."""
    # (`json_chunks` makes its own for the findings it streams)
    lapsed = ExpiredWaivers(d.waivers.expired) if d.waivers.expired and not streamed else None
    document = {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "auditor", "version": d.tool_version},
        "run": {
            "id": d.run_id,
            "generated_at": _iso(d.generated_at),
            "mode": d.mode,
            "api_address": d.api_address,
            "fail_on": d.fail_on,
            # the view: every stored revision's settings judged (`--all-revisions`), or only
            # those in force (report.md and report.html name it in their scope too)
            "all_revisions": bool(d.scope and d.scope.all_revisions),
            # optional: an `--at` run's time (report.md and report.html say "as of" too)
            **({"as_of": _iso(d.scope.as_of)} if d.scope and d.scope.as_of else {}),
            # optional: the release that made the run compared with, when it is another one
            **({"previous_tool_version": d.previous_tool_version} if upgrade_note(d) else {}),
            # the earlier run new and resolved are counted against; null: none (the first
            # run, a state file new or lost, other rules or view: nothing is new or resolved)
            "previous_run_id": d.previous_run_id,
        },
        "complete": d.complete,
        "not_evaluated": list(d.not_evaluated),
        # what happened to the run's outputs (a report not written, interrupted while they
        # were written): `complete` is false, but these are not items not evaluated
        "output_notes": list(d.output_notes),
        # the policies' rules not evaluated on purpose (`--no-usage`, `--no-readiness`; a
        # review's other targets): neither failed nor passed, and `complete` stays true
        "rules_left_out": [
            {
                "target": target,
                "count": n,
                "reason": why,
                "rule_ids": None if ids is None else list(ids),
            }
            for target, n, why in rules_left_out(d)
            for ids in (left_out_rule_ids(d, target),)
        ],
        "policy_files": [
            {"path": p.path, "sha256": p.sha256, "rule_ids": list(p.rule_ids)}
            for p in d.policy_files
        ],
        "summary": {
            "by_status": status_counts(d.findings),
            "open_by_severity": severity_counts(d.findings),
            "new": new_count(d.findings),
            "new_waived": new_waived_count(d.findings),
            "resolved": len(d.resolved),
            # optional: older findings not resolved, as they were not judged again
            **({"left_window": len(d.left_window)} if d.left_window else {}),
            **({"not_reevaluated": len(d.not_reevaluated)} if d.not_reevaluated else {}),
        },
        "rules": _rules(d.findings),
        "findings": [finding_json(f, expired=lapsed) for f in d.findings] if not streamed else [],
        "resolved": [_resolved(p) for p in d.resolved],
        **({"left_window": [_resolved(p) for p in d.left_window]} if d.left_window else {}),
        **(
            {"not_reevaluated": [_resolved(p) for p in d.not_reevaluated]}
            if d.not_reevaluated
            else {}
        ),
        # every failing settings rule per revision, waived ones included, and (the chart's
        # figures) those no waiver covers, as the findings and summaries count them
        "failing_by_revision": [[r, n] for r, n in d.failing_by_revision] if not streamed else [],
        "failing_not_waived_by_revision": [[r, n] for r, n in failing_not_waived(d)]
        if not streamed
        else [],
        "readiness": {
            "org_level": d.org_level,
            "repositories": [_repo(r) for r in d.readiness_rows],
        },
        "waivers": _waivers(d.waivers),
        "inputs": {
            "settings_revision": d.inputs.settings_revision,
            "revisions_evaluated": [
                {"revision": r, "sha256": h} for r, h in d.inputs.revisions_evaluated
            ]
            if not streamed
            else [],
            "reports_evaluated": [
                {"report_id": r, "sha256": h} for r, h in d.inputs.reports_evaluated
            ],
            # optional: the readiness model and waivers file, named with their digests
            **(
                {
                    "files": [
                        {"role": f.role, "path": f.path, "sha256": f.sha256} for f in d.input_files
                    ]
                }
                if d.input_files
                else {}
            ),
            # optional: when the data was fetched and what the integrity check covered
            **({"data_source": _data_source(d.source)} if d.source is not None else {}),
        },
        "review": _review(d.review),
    }
    if d.data_quality:  # an optional field: present only when the API sent odd values
        document["data_quality"] = [_data_warning(w) for w in d.data_quality]
    return document


def _data_warning(w: DataWarning) -> dict[str, Any]:
    return {
        "path": w.path,
        "problem": w.problem,
        "item": w.item,
        "where": w.where,
        "count": w.count,
    }


def render_json(data: ReportData) -> str:
    """`findings.json` text: two-space indented, stable order, trailing newline."""
    try:
        return b"".join(json_chunks(data)).decode("utf-8")
    except orjson.JSONEncodeError:  # lone surrogates in data: let json escape them as \udXXX
        return b"".join(json_chunks(data, ascii_only=True)).decode("utf-8")


def json_chunks(data: ReportData, *, ascii_only: bool = False) -> Iterator[bytes]:
    """`findings.json` as a stream of UTF-8 text, the findings, the failing count per revision and
    the revisions evaluated serialized a batch at a time, so neither the whole document nor
    any of those lists is ever held (the same bytes as one `orjson.dumps` of `report_json`;
    at 100,000 revisions the two per-revision lists alone were 50 MB as JSON values and text).

    orjson refuses lone surrogates (`orjson.JSONEncodeError`, possibly after some text was
    given out): start over with `ascii_only=True`, where `json` escapes them as before."""
    document = report_json(data, streamed=True)
    shared = SharedEvidence()
    lapsed = ExpiredWaivers(data.waivers.expired) if data.waivers.expired else None
    findings = (
        [finding_json(f, shared, expired=lapsed) for f in batch]
        for batch in _batches(data.findings)
    )
    failing = ([[r, n] for r, n in batch] for batch in _batches(data.failing_by_revision, 1024))
    not_waived = ([[r, n] for r, n in batch] for batch in _batches(failing_not_waived(data), 1024))
    revisions = (
        [{"revision": r, "sha256": h} for r, h in batch]
        for batch in _batches(data.inputs.revisions_evaluated, 1024)
    )
    yield from spliced_lists(
        document,
        [
            ("findings", 1, findings),
            ("failing_by_revision", 1, failing),
            ("failing_not_waived_by_revision", 1, not_waived),
            ("revisions_evaluated", 2, revisions),
        ],
        dump=_dump_ascii if ascii_only else _dump,
    )


T = TypeVar("T")


def spliced_lists(
    document: dict[str, Any],
    lists: Sequence[tuple[str, int, Iterable[list[Any]]]],
    *,
    dump: Callable[[Any], bytes],
) -> Iterator[bytes]:
    """The indented JSON text (UTF-8) of `document` with each of its empty `lists` (key,
    depth, items) filled with `items` (given a batch at a time) as the text is written out;
    they are given in the order the text has them (a key may come again, at its next place in
    the text). Lines of serialized JSON never hold a raw newline (nor can a string hold one),
    so a list is found by its line. The text stays bytes, as orjson gives it: decoding it to
    write it encoded again cost about as much as serializing it."""
    text = dump(document)
    start = 0
    for key, depth, items in lists:
        pad = b"  " * depth
        opened = b"\n" + pad + b'"' + key.encode("utf-8") + b'": ['
        marker = opened + b"]"
        at = text.find(marker, start)
        if at < 0 or text[at + len(marker) : at + len(marker) + 1] not in (b",", b"\n"):
            raise ValueError(f"{key!r} is not an empty list at depth {depth}")
        yield text[start:at] + opened
        start = at + len(marker)
        first = True
        # One dump per batch, nested in `depth` objects so that its items come out indented
        # as they are in the document: `{\n  "": [\n    item,\n    item\n  ]\n}` at depth 1;
        # the text between the bracket's line break and the closing bracket's is placed as is.
        around = dump(_nested([], depth))
        head = around.index(b"[]") + 1
        tail = len(around) - head + 1 + len(pad)  # `\n`, the pad and `]` before the rest
        for batch in items:
            if not batch:
                continue
            listed = dump(_nested(batch, depth))
            body = listed[head : len(listed) - tail]
            yield body if first else b"," + body
            first = False
        yield b"\n" + pad + b"]" if not first else b"]"
    yield text[start:] + b"\n"


# The UTF-8 forms of the characters `json_inert` rewrites, by lead byte (see
# `escape._INVISIBLE_UTF8`): C1 controls (C2 80-9F), and U+200E-F, U+2028-9, U+202A-E (E2 80 ..)
# and U+2066-9 (E2 81 ..). DEL (7F) and U+061C (D8 9C) are looked for as plain bytes.
_C1_UTF8 = re.compile(rb"\xc2[\x80-\x9f]")
#: The two bytes after E2 of the invisible characters that lead byte starts.
_E2_INVISIBLE_TAILS = frozenset(
    {b"\x80\x8e", b"\x80\x8f"}
    | {bytes((0x80, c)) for c in range(0xA8, 0xAF)}
    | {bytes((0x81, c)) for c in range(0xA6, 0xAA)}
)


def _has_e2_invisible(raw: bytes) -> bool:
    """Whether an E2 lead byte in `raw` starts one of the invisible characters (U+200E-F,
    U+2028-E, U+2066-9). Each E2 is found with `bytes.find` (memchr speed) and its two bytes
    after looked up: a pattern's scan went through every byte at a quarter of that speed, and
    E2s are few (a nightly's findings.json: 540 in 13 MB; findings.sarif: an em dash in most
    results, still faster)."""
    find = raw.find
    at = find(b"\xe2")
    while at >= 0:
        if raw[at + 1 : at + 3] in _E2_INVISIBLE_TAILS:
            return True
        at = find(b"\xe2", at + 1)
    return False


def _has_invisible(raw: bytes) -> bool:
    """Whether the UTF-8 bytes hold a character `json_inert` rewrites (`escape._INVISIBLE_UTF8`
    matches): looked for a lead byte at a time (C speed), with a pattern only where that byte
    occurs, instead of one pattern of alternatives tried at every em dash (3-4x faster)."""
    return (
        b"\x7f" in raw
        or (b"\xd8" in raw and b"\xd8\x9c" in raw)  # a lone byte's search is 70x faster
        or (b"\xc2" in raw and _C1_UTF8.search(raw) is not None)
        or _has_e2_invisible(raw)
    )


def inert_json(raw: bytes) -> str:
    """`escape.inert_bytes`: serialized UTF-8 JSON decoded, with `json_inert` applied only when
    one of its characters is in the bytes."""
    text = raw.decode("utf-8")
    return json_inert(text) if _has_invisible(raw) else text


def inert_utf8(raw: bytes) -> bytes:
    """`inert_json(raw)` as UTF-8: `raw` itself when it holds none of those characters."""
    return json_inert(raw.decode("utf-8")).encode("utf-8") if _has_invisible(raw) else raw


def _nested(items: list[Any], depth: int) -> Any:
    """`items` as the value of a key `depth` objects deep: `{"": {"": items}}` at depth 2."""
    value: Any = items
    for _ in range(depth):
        value = {"": value}
    return value


def _dump(value: Any) -> bytes:
    return inert_utf8(orjson.dumps(value, option=orjson.OPT_INDENT_2, default=_default))


def _dump_ascii(value: Any) -> bytes:
    return json.dumps(value, indent=2, ensure_ascii=True, default=_default).encode("utf-8")


def _batches(items: Iterable[T], size: int = 256) -> Iterator[list[T]]:
    # Taken by iterating, not slicing: the revisions evaluated (`HashPairs`) make each pair
    # faster as an iterator than by index.
    it = iter(items)
    while batch := list(islice(it, size)):
        yield batch
