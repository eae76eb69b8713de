"""Export: the evidence bundle an auditor can check and re-run, written from the state file.

Takes an open `Store`, the policy, waiver and readiness-model files and the run parameters,
gives a folder holding:

- the populations: `revisions.jsonl` / `reports.jsonl` (complete, as stored) and, to sample
  from, `revisions.csv` (every revision, its author and time and what changed from the previous
  one in words), `changes.csv` (every single change of every step) and `reports.csv` (every
  readiness report); `integrity.json` (the integrity issues ever recorded);
  `analytics.jsonl` (every stored usage analytics series of every day, for the `usage` rules);
- `run-parameters.json` and, under `inputs/`, the policy, waiver and readiness-model files
  the evaluation used, each as it is but for a secret written in it, which is copied as its
  marker (`auditor.policy.redacted.redacted_source`; the evaluation of the bundle reads the
  copies);
- `reports/`: the five reports and `findings.oscal.json`, made by evaluating the bundle itself
  (`evaluate_bundle`), so `auditor verify` re-running it must reproduce them byte for byte;
- `manifest.json` (the sha256 and size of every other file) and, when a key is given,
  `manifest.sig` (an Ed25519 signature of `manifest.json`).

Everything comes from the store, so every secret is already a marker.
"""

from __future__ import annotations

import base64
import contextlib
import csv
import fcntl
import gc
import hashlib
import io
import os
import shutil
import stat
import tempfile
import time
from collections.abc import Callable, Container, Iterable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime
from functools import partial
from pathlib import Path
from typing import Any

import orjson

from auditor import __version__
from auditor.common import escape
from auditor.common.dates import MAX_DAYS, usage_window
from auditor.common.files import (
    LineTooLong,
    UnreadableFile,
    atomic_open,
    input_lines,
    read_input,
    write_atomic,
)
from auditor.common.jsonutil import canonical, content_hash, dumps_pretty
from auditor.common.paths import render
from auditor.diff import ListTable, list_table_from_config
from auditor.diff.engine import diff_revisions
from auditor.diff.render import change_summary, describe_change, short_path
from auditor.errors import AuditorError, ConfigError, PolicyError, StoreError, StoreWriteError
from auditor.evaluate.readiness import DEFAULT_MODEL_PATH, InvalidModel, load_readiness_model
from auditor.findings import load_waivers
from auditor.findings.waivers import KnownRules
from auditor.models import JSON, SEVERITIES, ReadinessReport, Revision, User
from auditor.policy import SHIPPED_POLICY_DIR, load_policies
from auditor.policy.loader import PolicySet
from auditor.policy.redacted import (
    RuleLiterals,
    flagged_secrets,
    hidden_literals,
    redacted_source,
    rule_compares_secret_place,
    rule_literals,
    rule_number_literals,
    secrets_hidden,
)
from auditor.redact import RULES_VERSION, Redactor
from auditor.redact.shown import printed_path, shown_value
from auditor.report import OUTPUTS, ReportData, write_reports
from auditor.report.model import (
    BUNDLE_MANIFEST,
    BUNDLE_MANIFEST_MAX_BYTES,
    BUNDLE_NOT_COMPARED,
    EXPORT_NOT_SYNCED,
    DataSource,
    InputFile,
)
from auditor.store.database import Store
from auditor.store.rewrites import NamedIssue, cut
from auditor.store.schema import from_text, to_text
from auditor.workflows.run import (
    AuditOptions,
    LoadedPolicy,
    display_path,
    distinct_paths,
    run_audit,
    with_shown_paths,
)

MANIFEST = BUNDLE_MANIFEST
MANIFEST_MAX_BYTES = BUNDLE_MANIFEST_MAX_BYTES  # what `verify` reads of one
SIGNATURE = "manifest.sig"
PARAMETERS = "run-parameters.json"
REPORTS_DIR = "reports"
INPUTS_DIR = "inputs"  # the copies of the policy, waiver and model files
ANALYTICS = "analytics.jsonl"  # the usage analytics, per day and series, as stored
#: Reports in the bundle: the five and OSCAL (the PDF is left out: it needs an optional
#: library and is the HTML again).
BUNDLE_OUTPUTS = ("html", "md", "json", "sarif", "junit", "oscal")
#: The stored data, as `_export` writes it (each of these names, from the state file).
DATA_FILES = ("revisions.jsonl", "reports.jsonl", ANALYTICS, "integrity.json")
#: The CSV files of a bundle, each derived from the stored data (`write_tables`): `verify`
#: derives them again from the bundle's JSON lines and compares.
TABLES = ("revisions.csv", "changes.csv", "reports.csv")
#: Every file of a bundle but its inputs' copies (named in `run-parameters.json`), its
#: reports (`REPORT_FILES`), the manifest and its signature: what `export` writes and
#: `verify` requires (`bundle_layout`).
BUNDLE_FILES = (*DATA_FILES, *TABLES, PARAMETERS)
REPORT_FILES = tuple(f"{REPORTS_DIR}/{OUTPUTS[output]}" for output in BUNDLE_OUTPUTS)
_MAX_INPUT = 64 * 1024 * 1024  # one policy, waiver or model file
_MAX_KEY = 64 * 1024
SIGN_HINT = "signing needs the cryptography library: pip install 'auditor[sign]'"


class BundleError(AuditorError):
    """A bundle that cannot be read or evaluated (exit 2)."""


class LongLine(BundleError):
    """A line of a bundle's JSON lines file longer than export writes (`BUNDLE_LINE_MAX`)."""


@dataclass(frozen=True)
class ExportRequest:
    """What to put in the bundle besides the stored data: the run's parameters and inputs."""

    run_id: str
    now: datetime
    api_address: str
    org: str
    policies: Sequence[Path]  # as given (files or folders); empty: the shipped packs
    waivers: Path | None
    readiness_model: Path | None
    cwd: Path
    at: datetime | None = None
    all_revisions: bool = False
    fail_on: str = "low"
    diff_keys: dict[str, Any] | None = None
    sign_key: Path | None = None
    usage_days: int | None = 30  # the run's usage window (None: `--no-usage`)
    tokens: tuple[str, ...] = ()  # the command's own: a path holding one names it `[token]`
    # a result the bundle judges otherwise than the run: its one line (None: on stderr)
    warn: Callable[[str], None] | None = None


# -- the stored data as JSON lines and CSV --------------------------------------------------


def _revision_line(rev: Revision) -> dict[str, JSON]:
    return {
        "revision": rev.revision,
        "org": rev.org,
        "updatedAt": to_text(rev.updated_at),
        "user": {"id": rev.user.id, "email": rev.user.email, "name": rev.user.name},
        "contentHash": rev.content_hash,
        "settings": rev.settings,
    }


def _report_line(report: ReadinessReport) -> dict[str, JSON]:
    return {
        "reportId": report.report_id,
        "repoUrl": report.repo_url,
        "createdAt": to_text(report.created_at),
        "contentHash": report.content_hash,
        "data": report.data,
    }


def _analytics_lines(store: Store) -> Iterator[dict[str, JSON]]:
    """Every stored usage analytics series of every day (redacted, as stored)."""
    for day, series in store.iter_analytics():
        for name, data in series.items():
            yield {"day": day, "series": name, "data": data}


def _access(store: Store) -> dict[str, JSON] | None:
    """Whether the last sync could read the analytics (a 403 makes usage rules `unknown`)."""
    access = store.analytics_access()
    return None if access is None else {"status": access.status, "detail": access.detail}


def _data_source(store: Store) -> dict[str, JSON]:
    """The state file's last finished sync (its end), whether that sync recorded which stored
    revisions it read again from the service, and those (oldest, newest; null: none)."""
    last = store.last_sync()
    recorded, rechecked = store.history_recheck()
    return {
        "lastSync": to_text(last.finished) if last is not None and last.finished else None,
        "integrityRecheckRecorded": recorded,
        "integrityRechecked": list(rechecked) if rechecked is not None else None,
    }


def _jsonl(items: Iterable[dict[str, JSON]]) -> Iterator[str]:
    return (canonical(item).decode() + "\n" for item in items)


def _cell(value: object) -> object:
    """A CSV cell a spreadsheet shows as text: a string starting with `=`, `+`, `-`, `@` or a
    control character gets a leading `'` (OWASP's advice against formula injection)."""
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value
    return "" if value is None else value


def _csv(header: Sequence[str], rows: Iterable[Sequence[object]]) -> Iterator[str]:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\r\n")
    writer.writerow(header)
    for row in rows:
        writer.writerow([_cell(v) for v in row])
        if buffer.tell() > 65536:
            yield buffer.getvalue()
            buffer.seek(0)
            buffer.truncate()
    yield buffer.getvalue()


_REVISION_HEADER = (
    "revision", "updated_at", "author_id", "author_email", "author_name", "content_sha256",
    "previous_revision", "changes", "what_changed",
)  # fmt: skip
_CHANGE_HEADER = (
    "from_revision", "to_revision", "updated_at", "author_email", "author_name", "path",
    "kind", "what_changed",
)  # fmt: skip
_REPORT_HEADER = ("report_id", "repo_url", "created_at", "content_sha256")


def _history_rows(store: Store, table: ListTable, changes: Any) -> Iterator[list[object]]:
    """The rows of revisions.csv; the rows of changes.csv go to the csv writer `changes` on the
    way, so each consecutive pair of revisions is diffed once for both files."""
    previous: Revision | None = None
    for rev in store.iter_revisions():
        diff = diff_revisions(previous.settings, rev.settings, table=table) if previous else []
        for c in diff:
            assert previous is not None
            path = f"{short_path(c.old_path)} → {short_path(c.path)}" if c.old_path else c.path
            changes.writerow([_cell(v) for v in (
                previous.revision, rev.revision, to_text(rev.updated_at), rev.user.email,
                rev.user.name, path, c.kind, f"{short_path(c.path)}: {describe_change(c)}",
            )])  # fmt: skip
        words = change_summary(diff) if previous else "first stored revision"
        yield [
            rev.revision, to_text(rev.updated_at), rev.user.id, rev.user.email, rev.user.name,
            rev.content_hash, previous.revision if previous else None, len(diff), words,
        ]  # fmt: skip
        previous = rev


def write_tables(out: Path, store: Store, table: ListTable) -> None:
    """revisions.csv and changes.csv, written side by side in one pass over the history (its
    lists diffed as `table` says: the run's `diff_keys`), and reports.csv. `export` writes the
    bundle's with it from the state file, `verify` the re-run's from the bundle's own rows."""
    try:
        with atomic_open(out / "changes.csv") as fh:
            changes = csv.writer(fh, lineterminator="\r\n")
            changes.writerow(_CHANGE_HEADER)
            rows = _history_rows(store, table, changes)
            write_atomic(out / "revisions.csv", _csv(_REVISION_HEADER, rows))
    except OSError as exc:
        raise AuditorError(
            f"cannot write revisions.csv and changes.csv in {out}: {exc.strerror}"
        ) from None
    _write(out / "reports.csv", _csv(_REPORT_HEADER, _report_rows(store)))


def _report_rows(store: Store) -> Iterator[list[object]]:
    for r in store.iter_reports():
        yield [r.report_id, r.repo_url, to_text(r.created_at), r.content_hash]


def _write(path: Path, data: str | bytes | Iterable[str]) -> None:
    """Text, a stream of text, or exact bytes (the bundle's copy of an input hashes to what
    the reports cite), written atomically; an OSError is one AuditorError naming the file."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, data)
    except OSError as exc:
        raise AuditorError(f"cannot write {path}: {exc.strerror}") from None


# -- inputs -------------------------------------------------------------------------------


def _read(path: Path, what: str) -> bytes:
    try:
        return read_input(path, max_bytes=_MAX_INPUT)
    except UnreadableFile as exc:
        raise ConfigError(f"{_path_shown(path)}: cannot read {what}: {exc.reason}") from None


#: The suffixes a policy file's copy keeps when its name is not shown (`policy.ghp_…`'s
#: "suffix" is the token itself).
_POLICY_SUFFIXES = frozenset({".yaml", ".yml", ".json"})


def _path_shown(path: Path) -> str:
    """`path` as an error shows it, without what looks like a secret: a key's PEM text given
    where its file's path goes (`--sign-key "$SIGNING_KEY"`, a CI secret holding the key) is
    the path no file has, and was printed whole. Judged whole, not name by name: a key's
    base64 body holds `/`, and its pieces between them do not look like secrets one by one."""
    from auditor.redact.shown import not_shown

    return not_shown(str(path))


def _copied(
    out: Path,
    name: str,
    path: Path,
    raw: bytes,
    redact: Callable[[str], str],
    rules: RuleLiterals | None = None,
) -> bool:
    """Write input file `path` (its bytes `raw`) to `name` in the bundle with its secrets as
    markers (`redacted_source`; `rules`: a policy file's rules' secret literals, hidden in
    their own rules alone); whether anything was redacted. A file that is no UTF-8 text
    was refused when it was loaded."""
    text = raw.decode("utf-8")
    copy = redacted_source(text, _path_shown(path), redact, rules)
    _write(out / name, raw if copy == text else copy.encode("utf-8"))
    return copy != text


def _copy_inputs(
    out: Path, request: ExportRequest, redactor: Redactor
) -> tuple[dict[str, Any], PolicySet]:
    """Copy the policy, waiver and model files into `inputs/`, each as it is but for the
    secrets in it, which become markers (`secrets_hidden`); their names in the bundle, the
    names the reports show and the sha256 of the file as given go into the run parameters
    (returned, with the policy as loaded);
    a copy with secrets replaced records `"redacted": true` and no digest of the original
    (with the copy and a marker's length, that digest would confirm a guess of the secret
    offline)."""
    policy = load_policies(list(request.policies) or [SHIPPED_POLICY_DIR])
    raws = []  # each read once, as loaded (a file changed since would judge otherwise)
    for pf in policy.files:
        raw = _read(Path(pf.path), "policy file")
        if hashlib.sha256(raw).hexdigest() != pf.sha256:
            raise ConfigError(f"{pf.path}: policy file changed while it was being exported")
        raws.append(raw)
    texts = [
        (raw.decode("utf-8"), _path_shown(Path(pf.path)))
        for pf, raw in zip(policy.files, raws, strict=True)
    ]
    redact = secrets_hidden(redactor, flagged_secrets(redactor, texts))
    # a literal a rule compares with a value secret by its place (a leaked `apiKey` listed to
    # be refused) is its marker in that rule's own item of the file's copy wherever it is
    # written there (a part of a pattern, of `"old:<key>"`, a tag, a control too: reviewer R28
    # #2, #6), in `defaults:` and in comments, as in the rule's texts in the reports
    # (`hidden_literals`); nothing is learned, no path, selector, enum, other rule or file
    # changes (a verdict the copy changes so is named in `notReproduced`)
    literals = hidden_literals(policy)
    names = [pf.path for pf in policy.files] + [str(request.waivers or "")]
    for path in [*names, str(request.readiness_model or "")]:
        _recordable(path)
    files = []
    shown = distinct_paths([pf.path for pf in policy.files], request.cwd, request.tokens)
    for index, (pf, raw) in enumerate(zip(policy.files, raws, strict=True), 1):
        name = Path(pf.path).name
        # a name that looks like a secret (or holds the command's token) is not copied
        if printed_path(name, request.tokens) != name:
            suffix = Path(name).suffix  # kept when it is a policy file's (it may be the secret)
            name = "not-shown" + (suffix if suffix.lower() in _POLICY_SUFFIXES else ".yaml")
        bundled = f"{INPUTS_DIR}/policies/{index:03d}-{name}"
        own = rule_literals(redactor, literals, pf.rule_ids)
        redacted = _copied(out, bundled, Path(pf.path), raw, redact, own)
        kept = {"redacted": True} if redacted else {"sha256": pf.sha256}
        files.append({"bundled": bundled, "shown": shown[pf.path], **kept})
    waivers = None
    if request.waivers is not None:
        # refuse a broken file (or a waiver of a rule no policy has) before writing more
        load_waivers(request.waivers, KnownRules(r.id for r in policy.rules))
        raw = _read(request.waivers, "waivers")
        redacted = _copied(out, _WAIVERS_COPY, request.waivers, raw, redact)
        # named as the run's reports name it (`load_inputs`: `display_path`)
        waivers = {"bundled": _WAIVERS_COPY,
                   "shown": display_path(str(request.waivers), request.cwd, request.tokens),
                   **({"redacted": True} if redacted else {})}  # fmt: skip
    model_path = request.readiness_model or DEFAULT_MODEL_PATH
    try:
        load_readiness_model(request.readiness_model)
    except InvalidModel as exc:  # one a line, as `run` lists them (never one line of `\n`s)
        if exc.problems:
            raise PolicyError(exc.problems) from None
        raise
    raw = _read(model_path, "readiness model")
    redacted = _copied(out, _MODEL_COPY, model_path, raw, redact)
    return {
        "policies": files,
        "waivers": waivers,
        "readinessModel": {
            "bundled": _MODEL_COPY,
            "shown": display_path(str(request.readiness_model), request.cwd, request.tokens)
            if request.readiness_model
            else "(shipped)",
            **({"redacted": True} if redacted else {}),
        },
    }, policy


_WAIVERS_COPY = f"{INPUTS_DIR}/waivers.yaml"
_MODEL_COPY = f"{INPUTS_DIR}/readiness-model.yaml"


def _recordable(path: str) -> None:
    """Refuse an input whose name is not UTF-8 text (bytes the file system allows, Latin-1):
    the bundle's run parameters, which are JSON, could not record it, and a name written
    another way would not be the one the run's reports show (review R59 #6: `unexpected
    TypeError`)."""
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        shown = os.fsencode(path).decode("utf-8", "backslashreplace")
        raise AuditorError(
            f"{shown}: the file's name is not UTF-8 text, which an evidence bundle cannot record "
            "(its run parameters are JSON): rename it"
        ) from None


def export_bundle(
    store: Store,
    out: Path,
    request: ExportRequest,
    finish: Callable[[dict[str, JSON]], None] | None = None,
) -> dict[str, JSON]:
    """Write the evidence bundle into `out` (which must be empty or new); return the manifest.
    A bundle that cannot be finished is removed again: no half bundle is left to verify.

    `finish(manifest)`, when given, is the export's last step (the command's closing line): an
    error or interrupt up to its end removes the bundle too, so a command that ends with an
    interrupt (exit 130/143) never leaves a complete bundle a CI job would take for a failure."""
    check_out(out)
    key = _load_private_key(request.sign_key) if request.sign_key else None  # before any write
    # the folders this export makes (`out` and any missing parent), innermost first
    created = [p for p in (out, *out.absolute().parents) if not os.path.lexists(p)]
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise AuditorError(f"cannot create {out}: {exc.strerror}") from None
    try:
        manifest = _export(store, out, request, key)
        if finish is not None:
            finish(manifest)
        return manifest
    except BaseException:
        remove_bundle(out, created)
        raise


class OutTaken(AuditorError):
    """`--out` holds something already: nothing of it is the export's to remove."""


def check_out(out: Path) -> None:
    """Refuse an `--out` that is neither missing nor an empty folder (`auditor export` checks
    it again once it holds the folder: another command may have written there meanwhile)."""
    # os.path: Path.exists raises on a name too long for the file system; mkdir says why later
    if os.path.exists(out) and (not out.is_dir() or any(out.iterdir())):
        raise OutTaken(f"{out} exists and is not an empty folder: choose a new --out")


def remove_bundle(out: Path, created: Sequence[Path] = ()) -> None:
    """What a failed export wrote in `out`, and no more: the files it writes by name
    (`BUNDLE_FILES`, the manifest and its signature) and the folders it makes for its inputs'
    copies and its reports (it made them: `out` was empty when it began), then the folders
    `created` for `out` (innermost first), each only if empty. Anything else in `out` stays
    (two exports into one folder removed each other's files: T97 #1). A folder it cannot list
    (made under umask 0477) stays: the error raised says why."""
    for name in (*BUNDLE_FILES, MANIFEST, SIGNATURE):
        with contextlib.suppress(OSError):
            (out / name).unlink(missing_ok=True)
    for folder in (INPUTS_DIR, REPORTS_DIR):
        if os.path.isdir(out / folder) and not os.path.islink(out / folder):
            shutil.rmtree(out / folder, ignore_errors=True)
    for made in created:  # an empty folder given stays; one something else wrote to as well
        with contextlib.suppress(OSError):
            made.rmdir()


def _export(store: Store, out: Path, request: ExportRequest, key: Any) -> dict[str, JSON]:
    store.check_rows_kept()  # a bundle must not present a history with rows cut out of it
    inputs, policy = _copy_inputs(out, request, store.redactor)
    issues = [
        {
            "revision": i.revision,
            "reportId": i.report_id,
            "storedHash": i.stored_hash,
            "seenHash": i.seen_hash,
            "seenAt": to_text(i.seen_at),
            # the paths the other content changed or removed (never a value), when known
            **({"changes": i.changes} if isinstance(i, NamedIssue) and i.changes else {}),
        }
        for i in store.integrity_issues()
    ]
    data_files = {  # (each a stream, written in `DATA_FILES`'s order: a name left out fails)
        "revisions.jsonl": _jsonl(map(_revision_line, store.iter_revisions())),
        "reports.jsonl": _jsonl(map(_report_line, store.iter_reports())),
        ANALYTICS: _jsonl(_analytics_lines(store)),
        "integrity.json": dumps_pretty(issues),
    }
    for name in DATA_FILES:
        _write(out / name, data_files[name])
    write_tables(out, store, list_table_from_config(request.diff_keys or {}))
    parameters = {
        "runId": request.run_id,
        "reportTime": to_text(request.now),
        "apiAddress": request.api_address,
        "org": request.org,
        "at": to_text(request.at) if request.at else None,
        "allRevisions": request.all_revisions,
        "failOn": request.fail_on,
        "diffKeys": request.diff_keys or {},
        "usageDays": request.usage_days,
        "analyticsAccess": _access(store),
        # when the exported data was fetched and what its last sync compared with the service:
        # the bundle's reports say it, as a run's do (`evaluate_bundle` reads it back)
        "dataSource": _data_source(store),
        **inputs,
    }
    _write(out / PARAMETERS, dumps_pretty(parameters))
    may_differ = _rules_may_differ(inputs, policy, store.redactor)
    del policy
    try:
        data = evaluate_bundle(out)
    except StoreWriteError as exc:
        raise StoreWriteError(f"{exc}: set TMPDIR to a folder with room") from None
    write_reports(data, out / REPORTS_DIR, BUNDLE_OUTPUTS)
    findings = len(data.findings)
    differ: list[JSON] = []
    if may_differ:
        # the bundle may judge a result of these rules otherwise (its secrets are markers it
        # has no key to read): their verdicts kept as {(rule, subject): status} alone and
        # its evaluation let go before the run's, of these rules alone, is made, so the two
        # are never held at once (`export --all-revisions` within the memory of one)
        bundled = result_statuses(data, may_differ)
        del data
        gc.collect()
        differ = _not_reproduced(_run_statuses(store, request, may_differ), bundled)
    latest = store.latest_revision()
    manifest: dict[str, JSON] = {
        "tool": "auditor",
        "toolVersion": __version__,
        "generated": to_text(request.now),
        "runId": request.run_id,
        "revisions": store.count_revisions(),
        "latestRevision": latest.revision if latest else None,
        "reports": store.count_reports(),
        "integrityIssues": len(issues),
        "findings": findings,
        "secrets": SECRETS_NOTE,
        "redaction": redaction_record(),
        **({NOT_REPRODUCED: differ} if differ else {}),
        "files": {name: file_digest(out / name) for name in bundle_files(out)},
    }
    if differ:
        (request.warn or _warn)(not_reproduced_warning(differ))
    text = dumps_pretty(manifest)
    _write(out / MANIFEST, text)
    if key is not None:
        signature = key.sign(text.encode("utf-8"))
        _write(out / SIGNATURE, base64.b64encode(signature).decode("ascii") + "\n")
    return manifest


#: The manifest's field naming each result the bundle judges otherwise than the run did.
NOT_REPRODUCED = "notReproduced"
#: Why such a result is not reproduced (the warning of `export`, the note of `verify`).
NOT_REPRODUCED_WHY = (
    "not reproducible from this bundle because it holds secrets as markers it has no key to read"
)


def _rules_may_differ(
    inputs: Mapping[str, Any], policy: PolicySet, redactor: Redactor
) -> frozenset[str]:
    """The rules (by id) whose results the bundle may judge otherwise than `run`: those
    reading a literal the run reads a marker by (the state's key) that the bundle compares
    with the marker's text. That is every rule of a policy file whose copy in `inputs/` hides
    a secret (every rule when the waivers' or the readiness model's copy does: any result
    may be waived or graded by what it hides), a rule comparing a literal with a value secret
    by its place (`rule_compares_secret_place`), and a rule with a number literal equal to a
    secret the state file remembers (`rule_number_literals`: the value equal to it is a
    marker wherever it is, and the copy writes the number as it is). A text literal equal to
    such a secret is its marker in the copy, which is then redacted. Any other rule judges
    the bundle's data as `run` judges the state's: its results are the same (a rule's
    verdicts turn on its own conditions, the data and the inputs alone), so only these are
    evaluated again (the shipped packs: 2 of 91 rules)."""
    if any(
        isinstance(c, dict) and c.get("redacted")
        for c in (inputs["waivers"], inputs["readinessModel"])
    ):
        return frozenset(r.id for r in policy.rules)
    ids: set[str] = set()
    for copy, pf in zip(inputs["policies"], policy.files, strict=True):
        if isinstance(copy, dict) and copy.get("redacted"):
            ids.update(pf.rule_ids)
    held: dict[str, bool] = {}  # a number's text: whether the memory holds it

    def holds(text: str) -> bool:
        if text not in held:
            held[text] = redactor.scrub_known(text) != text
        return held[text]

    for rule in policy.rules:
        if rule.id not in ids and (
            rule_compares_secret_place(rule) or any(map(holds, rule_number_literals(rule)))
        ):
            ids.add(rule.id)
    return frozenset(ids)


Statuses = dict[tuple[str, str], str]


def _run_statuses(store: Store, request: ExportRequest, rules: frozenset[str]) -> Statuses:
    """Each result's status as `run` gives it with the export's options, by (rule, subject
    key), for `rules` (ids): the policy, waiver and model files as given, evaluated over the
    state file itself with its key and memory of secrets (`run_audit`, nothing recorded), the
    policy's other rules left out. Only the statuses are kept."""
    from auditor.workflows.run import load_inputs

    loaded = load_inputs(
        request.policies,
        request.waivers,
        request.readiness_model,
        cwd=request.cwd,
        tokens=request.tokens,
    )
    kept = tuple(r for r in loaded.policy.rules if r.id in rules)
    loaded = replace(loaded, policy=replace(loaded.policy, rules=kept))
    options = AuditOptions(
        run_id=request.run_id,
        now=request.now,
        api_address=request.api_address,
        at=request.at,
        all_revisions=request.all_revisions,
        fail_on=request.fail_on,
        list_table=list_table_from_config(request.diff_keys or {}),
        usage_days=request.usage_days,
    )
    return result_statuses(run_audit(store, loaded, options, record=False).data, rules)


def result_statuses(data: ReportData, rules: Container[str] | None = None) -> Statuses:
    """Each result's status in `data` (of `rules`, ids, when given), by (rule, subject key):
    what `notReproduced` compares, at export and again at `verify`."""
    return {
        (f.rule_id, f.subject.key): f.status
        for f in data.findings
        if rules is None or f.rule_id in rules
    }


def _not_reproduced(run_status: Statuses, bundle_status: Statuses) -> list[JSON]:
    """The results the bundle (`bundle_status`: its copies evaluated over its data, as
    `verify` evaluates them) judges otherwise than `run` did (`run_status`, `_run_statuses`).
    The bundle holds each secret as its marker and has no key to read one: a literal compared
    with a marker (or hidden as one in a policy copy) is compared with the marker's text where
    `run` reads it by the state's key, so a few results can differ (README: Secrets); each is
    named, `rule`, `subject`, `run`, `bundle`."""
    differ: list[JSON] = []
    for key in sorted(run_status.keys() | bundle_status.keys()):
        run, bundle = run_status.get(key, "absent"), bundle_status.get(key, "absent")
        if run != bundle:
            differ.append({"rule": key[0], "subject": key[1], "run": run, "bundle": bundle})
    return differ


def not_reproduced_warning(differ: Sequence[Any]) -> str:
    """The line `export` warns with (and `verify` notes) of the results manifest.json's
    `notReproduced` names."""
    shown = "; ".join(
        f"{d.get('rule')} on {d.get('subject')}: {d.get('run')} in the run, "
        f"{d.get('bundle')} in the bundle"
        for d in differ[:5]
        if isinstance(d, dict)
    )
    more = f"; and {len(differ) - 5} more" if len(differ) > 5 else ""
    return (
        f"{len(differ)} result(s) {NOT_REPRODUCED_WHY} (a literal compared with a secret, or "
        f"hidden as one in a policy copy, is compared with its marker's text there): "
        f"{shown}{more}; manifest.json's {NOT_REPRODUCED} names each"
    )


def _warn(line: str) -> None:
    """A warning on stderr, as the commands give one."""
    import sys

    from auditor.common.escape import terminal_text

    print(f"auditor: warning: {terminal_text(line)}", file=sys.stderr)


#: What manifest.json says of the secrets in the bundle.
SECRETS_NOTE = "redacted at ingestion, and in the copies in inputs/: keyed fingerprint markers only"


def redaction_record() -> dict[str, JSON]:
    """The release and rules every row of the bundle is redacted under: this one's, whether the
    store records it (its rows redacted again on the first writing opening after an upgrade
    that widened redaction) or not yet (each row redacted again as the export reads it,
    `Store.redact_to_current_rules`). Two bundles whose `redaction` differs (a bundle made
    before 0.3.0 has none: its `toolVersion` is its release) may disagree on the
    `content_sha256` of a revision the newer rules hid more of, and only there."""
    return {
        "release": __version__,
        "rules": RULES_VERSION,
        "note": "rows stored under an older release's rules are redacted again under these "
        "(on the store's first writing opening, or as this export read them): a bundle made "
        "under other rules may give such a revision another content SHA-256",
    }


def bundle_entries(
    out: Path, unlisted: Callable[[str, OSError], None]
) -> list[tuple[str, int, bool]]:
    """Every entry under `out`, links not followed: its POSIX path, its mode (lstat) and, for
    a folder, whether it holds anything; in the order of sorted paths. A folder whose entries
    cannot be listed (or looked at: mode 000, 100, 300, 400) is given to `unlisted`, named as
    a path (`.` for `out`), never passed over: `Path.rglob` (Python 3.11) skipped it without a
    word, so a file slipped into it went unseen. Walked with a stack: a deep tree is no
    recursion limit."""
    entries: list[tuple[str, int, bool]] = []
    stack: list[tuple[Path, str]] = [(out, "")]
    while stack:
        folder, prefix = stack.pop()
        try:
            with os.scandir(folder) as listing:
                names = sorted(entry.name for entry in listing)
            modes = [(folder / name).lstat().st_mode for name in names]
        except OSError as exc:
            unlisted(prefix.removesuffix("/") or ".", exc)
            continue
        if prefix:  # the folder's own entry: whether it is empty is known now
            entries.append((prefix.removesuffix("/"), stat.S_IFDIR, bool(names)))
        below = []
        for name, mode in zip(names, modes, strict=True):
            if stat.S_ISDIR(mode):
                below.append((folder / name, f"{prefix}{name}/"))
            else:
                entries.append((prefix + name, mode, False))
        stack.extend(reversed(below))
    return sorted(entries, key=lambda entry: entry[0].split("/"))


def bundle_files(out: Path) -> list[str]:
    """Every file of the bundle but the manifest and its signature, as sorted POSIX paths;
    a folder of it that cannot be listed is an error (the manifest would leave its files out)."""

    def refuse(name: str, exc: OSError) -> None:
        raise BundleError(
            f"{out / name}: cannot list the folder's entries ({exc.strerror or exc}): the "
            "manifest would leave them out"
        )

    return [
        name
        for name, mode, _ in bundle_entries(out, refuse)
        if name not in (MANIFEST, SIGNATURE) and (stat.S_ISREG(mode) or stat.S_ISLNK(mode))
    ]


#: What an earlier release's `export` did not write yet of this release's layout: 0.1.0 (since
#: `verify` was there) wrote all but the usage analytics; 0.2.0 what this release does.
_NOT_YET_WRITTEN = {"0.1.0": (ANALYTICS,)}


def bundle_layout(params: Mapping[str, Any] | None, release: Any = __version__) -> list[str]:
    """Every file `export` of `release` (a bundle's `toolVersion`; one this release does not
    know is held to this release's) writes besides the manifest and its signature: the stored
    data, the CSV files, the run parameters, the reports and the inputs' copies that `params`
    (the bundle's run parameters, None when they cannot be read) names. `verify` requires
    each; a test holds a fresh bundle's files to it."""
    later = _NOT_YET_WRITTEN.get(release, ()) if isinstance(release, str) else ()
    names = [name for name in (*BUNDLE_FILES, *REPORT_FILES) if name not in later]
    if params is not None:
        names += [name for name, _ in bundled_inputs(params)]
    return names


def bundled_inputs(params: Mapping[str, Any]) -> list[tuple[str, tuple[str | int, ...]]]:
    """The input copies run parameters `params` name, each with the JSON path naming it (an
    entry out of shape left out: `parameter_problems` names it)."""
    entries: list[tuple[Any, tuple[str | int, ...]]] = []
    policies = params.get("policies")
    for n, entry in enumerate(policies if isinstance(policies, list) else ()):
        entries.append((entry, ("policies", n, "bundled")))
    for key in ("waivers", "readinessModel"):
        entries.append((params.get(key), (key, "bundled")))
    return [
        (entry["bundled"], at)
        for entry, at in entries
        if isinstance(entry, dict) and isinstance(entry.get("bundled"), str)
    ]


def file_digest(path: Path) -> dict[str, JSON]:
    digest, size = hashlib.sha256(), 0
    with path.open("rb") as fh:
        while chunk := fh.read(1 << 20):
            digest.update(chunk)
            size += len(chunk)
    return {"sha256": digest.hexdigest(), "bytes": size}


# -- signing ------------------------------------------------------------------------------


def _crypto() -> Any:
    try:
        from cryptography.hazmat.primitives import serialization  # optional extra
    except ImportError:
        raise AuditorError(SIGN_HINT) from None
    return serialization


def _load_private_key(path: Path) -> Any:
    """An Ed25519 private key from a PEM file (never shown in any message)."""
    serialization = _crypto()
    from cryptography.hazmat.primitives.asymmetric.ed25519 import (
        Ed25519PrivateKey,
    )

    raw = _read(path, "signing key")
    try:
        key = serialization.load_pem_private_key(raw, password=None)
    except (ValueError, TypeError):
        raise ConfigError(
            f"{path}: not an unencrypted PEM private key (make one with "
            "`openssl genpkey -algorithm ed25519 -out key.pem`)"
        ) from None
    if not isinstance(key, Ed25519PrivateKey):
        raise ConfigError(f"{path}: the signing key must be an Ed25519 key")
    return key


def load_public_key(path: Path) -> Any:
    """An Ed25519 public key from a PEM file (a private key file gives its public half)."""
    serialization = _crypto()
    from cryptography.hazmat.primitives.asymmetric.ed25519 import (
        Ed25519PrivateKey,
        Ed25519PublicKey,
    )

    raw = _read(path, "public key")
    key: Any
    try:
        key = serialization.load_pem_public_key(raw)
    except (ValueError, TypeError):
        try:
            key = serialization.load_pem_private_key(raw, password=None)
        except (ValueError, TypeError):
            raise ConfigError(f"{path}: not a PEM Ed25519 public key") from None
    if isinstance(key, Ed25519PrivateKey):
        key = key.public_key()
    if not isinstance(key, Ed25519PublicKey):
        raise ConfigError(f"{path}: the key must be an Ed25519 key")
    return key


# -- evaluating a bundle ------------------------------------------------------------------


def _parameters(bundle: Path) -> dict[str, Any]:
    return bundle_object(_bundle_read(bundle, PARAMETERS), str(bundle / PARAMETERS))


#: The deepest a bundle's manifest.json or run-parameters.json may nest (export writes 4
#: levels), as for any other input file.
BUNDLE_JSON_DEPTH = 64


class _Constant:
    """`NaN`, `Infinity` or `-Infinity` where the text writes one (JSON has no such number)."""

    def __init__(self, name: str) -> None:
        self.name = name


class _Unwritable:
    """A number export never writes (`text`): an integer beyond 64 bits (or of more digits
    than Python reads), a number too large for a float (`1e400`, read as infinity)."""

    def __init__(self, text: str) -> None:
        self.text = text


def _integer(text: str) -> Any:
    value = int(text) if len(text) <= 20 else None  # (longer: beyond 64 bits whatever it is)
    return value if value is not None and -(2**63) <= value < 2**64 else _Unwritable(text)


def _float(text: str) -> Any:
    value = float(text)
    return value if value - value == 0.0 else _Unwritable(text)


def _text_fault(text: str) -> bool:
    """True for a string holding a lone UTF-16 surrogate (`"\\ud800"`): no text."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


class _Repeated(dict[str, Any]):
    """An object that writes `key` twice (the last one kept, as a JSON reader would)."""

    key = ""


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found = dict(pairs)
    if len(found) == len(pairs):
        return found
    repeated, seen = _Repeated(found), set()
    for key, _ in pairs:
        if key in seen:
            repeated.key = key
            break
        seen.add(key)
    return repeated


def bundle_object(raw: bytes, where: str) -> dict[str, Any]:
    """A JSON object file of the bundle (manifest.json, run-parameters.json) as export writes
    it, or a BundleError saying what is wrong and where (`FILE:line:col`, or its JSON path):
    empty, a byte-order mark, not UTF-8, not JSON, `NaN`, a key written twice (which a reader
    would take the last of, and another the first), nested too deep, not an object. These
    files are small (a few KB): read by `json`, which can say what orjson cannot."""
    import json

    if raw.startswith(b"\xef\xbb\xbf"):
        raise BundleError(
            f"{where}:1:1: starts with a byte-order mark (U+FEFF), which export never writes "
            "(an editor saved it again?)"
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as bad:
        line = raw.count(b"\n", 0, bad.start) + 1
        col = len(raw[raw.rfind(b"\n", 0, bad.start) + 1 : bad.start].decode("utf-8")) + 1
        raise BundleError(
            f"{where}:{line}:{col}: not UTF-8 text (byte {raw[bad.start]:#04x} at offset "
            f"{bad.start})"
        ) from None
    if not text.strip(" \t\r\n"):
        raise BundleError(f"{where}: empty, not a JSON object")
    try:
        value = json.loads(
            text,
            object_pairs_hook=_pairs,
            parse_constant=_Constant,
            parse_int=_integer,
            parse_float=_float,
        )
    except json.JSONDecodeError as exc:
        raise BundleError(f"{where}:{exc.lineno}:{exc.colno}: not valid JSON: {exc.msg}") from None
    except RecursionError:
        raise BundleError(f"{where}: $: nested deeper than {BUNDLE_JSON_DEPTH} levels") from None
    fault = _json_fault(value)
    if fault is not None:
        raise BundleError(f"{where}: {fault}")
    if not isinstance(value, dict):
        raise BundleError(f"{where}: $: expected a JSON object, got {_kind(value)}")
    return value


def _json_fault(value: Any) -> str | None:
    """`$.path: what is wrong` of the first value export never writes (`bundle_object`)."""
    pending: list[tuple[Any, tuple[str | int, ...]]] = [(value, ())]
    while pending:
        item, parts = pending.pop()
        if len(parts) > BUNDLE_JSON_DEPTH:
            shown = escape.shorten(_at(parts), 60)
            return f"{shown}: nested deeper than {BUNDLE_JSON_DEPTH} levels"
        if isinstance(item, _Constant):
            return f"{_at(parts)}: {item.name} is not a JSON number"
        if isinstance(item, _Unwritable):
            shown = escape.shorten(item.text, 40)
            return f"{_at(parts)}: {shown} is beyond the numbers export writes (64 bits)"
        if isinstance(item, str) and _text_fault(item):
            return f"{_at(parts)}: a lone UTF-16 surrogate escape, not text"
        if isinstance(item, dict):
            for key in item:
                if _text_fault(key):
                    return f"{_at(parts)}: a key holding a lone UTF-16 surrogate escape"
            if isinstance(item, _Repeated):
                return f"{_at(parts)}: the key {_shown(item.key)} is written twice"
            pending.extend((v, (*parts, k)) for k, v in reversed(item.items()))
        elif isinstance(item, list):
            pending.extend((v, (*parts, n)) for n, v in reversed(list(enumerate(item))))
    return None


def _at(parts: tuple[str | int, ...]) -> str:
    """A JSON path of a bundle file as an error shows it: a key in it that the value
    detectors take for a secret (a hand-edited bundle's) not shown, the command's own token
    `[token]` (`shown_value`)."""
    tokens = _TOKENS.get()
    return render(tuple(shown_value(p, tokens) if isinstance(p, str) else p for p in parts))


#: The command's own tokens (`verify`'s `AUDITOR_TOKEN`, a token file's) while it reads a
#: bundle (`reading_as`): a value, key or name of the bundle an error quotes shows each as
#: `[token]` before it is shortened. Cut short first, a long token was no longer the one the
#: command's own scrub looks for, and 40 of its characters were printed (review R63 #1).
_TOKENS: ContextVar[tuple[str, ...]] = ContextVar("auditor_bundle_tokens", default=())


@contextlib.contextmanager
def reading_as(tokens: Iterable[str]) -> Iterator[None]:
    """Read a bundle (`bundle_object`, `evaluate_bundle`, `parameter_problems`) for a command
    whose own tokens are `tokens`: its errors show each as `[token]` (`_TOKENS`)."""
    reset = _TOKENS.set(tuple(tokens))
    try:
        yield
    finally:
        _TOKENS.reset(reset)


def bundle_tokens() -> tuple[str, ...]:
    """The command's own tokens while it reads a bundle (`reading_as`), for `verify`'s words."""
    return _TOKENS.get()


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true or false"
    if isinstance(value, list):
        return "a list"
    return "a string" if isinstance(value, str) else "a number"


#: The most a bundle file is read up to (a revisions.jsonl of a long history is GBs).
BUNDLE_MAX_BYTES = 1 << 34


def _bundle_read(bundle: Path, name: str) -> bytes:
    try:
        return read_input(bundle / name, max_bytes=BUNDLE_MAX_BYTES)
    except UnreadableFile as exc:
        raise BundleError(f"{bundle / name}: cannot read: {exc.reason}") from None


#: The longest line of a bundle's JSON lines files that is read: one stored item (a revision
#: with its settings, a readiness report, a day's analytics series) is at most one API
#: response, 64 MiB, and its line about that (its secrets as markers: a short secret's marker
#: is longer than it, so a response of nothing but short secrets could pass this). Longer is
#: refused before it is held whole: one of 300 MB took `verify` to 965 MB.
BUNDLE_LINE_MAX = 128 * 1024 * 1024


def bundle_lines(path: Path) -> Iterator[tuple[int, bytes]]:
    """The lines of a bundle's JSON lines file `path`, numbered and split as a split of the
    whole file splits them (`splitlines`), read a line at a time (a revisions.jsonl of 100,000
    revisions is 1 GB); a line longer than `BUNDLE_LINE_MAX` is a BundleError at its number,
    as is a file that cannot be read."""
    number = 0
    try:
        with input_lines(path, max_bytes=BUNDLE_MAX_BYTES, line_max=BUNDLE_LINE_MAX) as lines:
            for raw in lines:
                for piece in raw.splitlines():
                    number += 1
                    yield number, piece
    except LineTooLong:
        raise LongLine(
            f"{path}:{number + 1}: a line longer than {BUNDLE_LINE_MAX:,} bytes, the most "
            "export and verify read of one stored item (one is at most one 64 MiB API "
            "response): not read"
        ) from None
    except UnreadableFile as exc:
        raise BundleError(f"{path}: cannot read: {exc.reason}") from None


#: orjson's words for a parse it had no memory for (a JSONDecodeError, which is no fault of
#: the line's).
_NO_PARSE_MEMORY = "Not enough memory to allocate buffer for parsing"


def parsed_line(line: bytes) -> Any:
    """A bundle line's JSON value; orjson's error for it, or a MemoryError when it had no
    memory to parse it (never called invalid JSON: T97 #3)."""
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        if str(exc).startswith(_NO_PARSE_MEMORY):
            raise MemoryError(_NO_PARSE_MEMORY) from None
        raise


def _lines(bundle: Path, name: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """The JSON lines of bundle file `name`, numbered, parsed (`bundle_lines`)."""
    path = bundle / name
    for number, line in bundle_lines(path):
        try:
            item = parsed_line(line)
        except orjson.JSONDecodeError as exc:
            raise BundleError(f"{path}:{number}: not valid JSON: {exc}") from None
        yield number, item


def _hashed(value: Any, digest: Any, what: str) -> Any:
    """`value` if it hashes to the `contentHash` the bundle gives for it (as the state file
    checks its rows): an item edited in the bundle is named, not re-run as if stored."""
    if content_hash(value) != digest:
        raise ValueError(f"{what} do not match its contentHash")
    return value


def _time(item: dict[str, Any], key: str) -> datetime:
    """`item[key]` as a time; a ValueError when it is empty or null (checked explicitly, not
    with `assert`, which `python -O` strips)."""
    when = from_text(item[key])
    if when is None:
        raise ValueError(f"{key}: missing (empty or null), not a time")
    return when


def _revision(item: dict[str, Any]) -> Revision:
    _hashed(item["settings"], item["contentHash"], f"the settings of revision {item['revision']}")
    user = item["user"]
    when = _time(item, "updatedAt")
    return Revision(
        revision=int(item["revision"]),
        updated_at=when,
        user=User(user["id"], user["email"], user["name"]),
        settings=item["settings"],
        content_hash=item["contentHash"],
        org=item["org"],
    )


def _report(item: dict[str, Any]) -> ReadinessReport:
    _hashed(item["data"], item["contentHash"], f"the data of report {item['reportId']}")
    when = _time(item, "createdAt")
    return ReadinessReport(
        item["reportId"], item["repoUrl"], when, item["data"], item["contentHash"]
    )


def _load_analytics(bundle: Path, store: Store, sync: int, access: Any) -> None:
    """The bundle's usage analytics (absent from bundles made before they were exported)."""
    if (bundle / ANALYTICS).exists():
        for number, item in _lines(bundle, ANALYTICS):
            try:
                store.ingest_analytics(str(item["day"]), str(item["series"]), item["data"], sync)
            except (KeyError, TypeError) as exc:
                raise BundleError(
                    f"{bundle / ANALYTICS}:{number}: not a stored analytics series "
                    f"({shown_value(str(exc))})"
                ) from None
    if isinstance(access, dict):
        store.set_analytics_access(str(access.get("status", "")), str(access.get("detail", "")))


def _load_store(bundle: Path, store: Store, now: datetime, access: Any = None) -> None:
    with store.transaction():
        sync = store.begin_sync(now, "evidence bundle")
        _load_analytics(bundle, store, sync, access)
        for name, build in (("revisions.jsonl", _revision), ("reports.jsonl", _report)):
            for number, item in _lines(bundle, name):
                try:
                    model = build(item)
                    if isinstance(model, Revision):
                        store.ingest_revision(model, sync, now)
                    else:
                        store.ingest_report(model, sync, now)
                # OverflowError: a number past SQLite's 64 bits (`"revision": 1e23` written out)
                except (KeyError, TypeError, ValueError, OverflowError) as exc:
                    raise BundleError(
                        f"{bundle / name}:{number}: not a stored item "
                        f"({type(exc).__name__}: {shown_value(str(exc))})"
                    ) from None
        _load_issues(bundle, store)


def _load_issues(bundle: Path, store: Store) -> None:
    """The bundle's integrity issues, which the re-run reports as findings as the run did
    (absent from bundles made before they were)."""
    if not (bundle / "integrity.json").exists():
        return
    try:
        items = orjson.loads(_bundle_read(bundle, "integrity.json"))
    except orjson.JSONDecodeError as exc:
        raise BundleError(f"{bundle / 'integrity.json'}: not valid JSON: {exc}") from None
    where = bundle / "integrity.json"
    if not isinstance(items, list):
        raise BundleError(f"{where}: $: not a list of integrity issues")
    for index, item in enumerate(items):
        at = f"{where}: $[{index}]"
        try:
            revision, report = item["revision"], item["reportId"]
            when = from_text(item["seenAt"])
            if when is None:
                raise BundleError(f"{at}.seenAt: missing (empty or null), not a time")
            if (revision is None) == (report is None):
                raise BundleError(
                    f"{at}: names both or neither of `revision` and `reportId` (an issue is about "
                    "one revision or one readiness report)"
                )
            store.record_integrity_issue(
                None if revision is None else int(revision),
                None if report is None else str(report),
                str(item["storedHash"]),
                str(item["seenHash"]),
                when,
                changes=cut(str(item.get("changes") or "")),
            )
        except (KeyError, TypeError, ValueError, OverflowError) as exc:
            raise BundleError(
                f"{at}: not an integrity issue ({type(exc).__name__}: {shown_value(str(exc))})"
            ) from None


class _ParameterReader:
    """The run parameters' values, each checked where it is written: one missing or of
    another type is named by its JSON path (`run-parameters.json: $.at: expected …`), never
    by Python's words for it (`ValueError: Invalid isoformat string`)."""

    def __init__(self, bundle: Path, params: dict[str, Any]) -> None:
        self.bundle, self.where, self.params = bundle, str(bundle / PARAMETERS), params

    def __call__(self, key: str, read: Callable[[Any], Any], expected: str) -> Any:
        where = f"{self.where}: {render((key,))}"
        if key not in self.params:
            raise BundleError(f"{where}: missing (export writes {expected})")
        try:
            return read(self.params[key])
        except (TypeError, ValueError, OverflowError):
            got = _shown(self.params[key])
            raise BundleError(f"{where}: expected {expected}, got {got}") from None

    def diff_keys(self) -> ListTable:
        try:
            return list_table_from_config(self.params.get("diffKeys") or {})
        except ConfigError as exc:  # its words start with `diff_keys` (the config's key)
            text = str(exc).removeprefix("diff_keys")
            raise BundleError(f"{self.where}: {render(('diffKeys',))}{text}") from None

    def inputs(self) -> list[Callable[[], None]]:
        """`policies` (a non-empty list), `waivers` (or null) and `readinessModel`: each
        `{bundled, shown}`, texts, `bundled` a path inside the bundle (`_inside`: the value
        alone, nothing read, so that `verify --no-rerun` refuses one outside it as the re-run
        does, review R63 #2). An empty list would load no file of the bundle: the current
        folder's policies were looked for. Each entry's check is given apart, so that
        `--no-rerun` names every entry that is wrong (review R67 #4)."""
        policies = self.params.get("policies")
        if not isinstance(policies, list) or not policies:
            raise BundleError(
                f"{self.where}: $.policies: expected a non-empty list of the bundled policy "
                f"files ({{bundled, shown}}), {_got(self.params, 'policies')}"
            )
        entries: list[tuple[tuple[str | int, ...], Mapping[Any, Any], Any]]
        entries = [(("policies",), dict(enumerate(policies)), n) for n in range(len(policies))]
        if self.params.get("waivers") is not None:
            entries.append(((), self.params, "waivers"))
        entries.append(((), self.params, "readinessModel"))
        return [partial(self._input, *entry) for entry in entries]

    def _input(self, above: tuple[str | int, ...], holder: Mapping[Any, Any], name: Any) -> None:
        parts, entry = (*above, name), holder.get(name)
        if not isinstance(entry, dict):
            raise BundleError(
                f"{self.where}: {render(parts)}: expected {{bundled, shown}} (the bundled "
                f"file and the name the run showed), {_got(holder, name)}"
            )
        for key in ("bundled", "shown"):
            if not isinstance(entry.get(key), str):
                got = _got(entry, key)
                raise BundleError(f"{self.where}: {render((*parts, key))}: expected a text, {got}")
        _inside(self.bundle, entry["bundled"], (*parts, "bundled"), links=False)


def _got(holder: Mapping[Any, Any], key: Any) -> str:
    """`got VALUE`, or `missing` when `holder` has no `key`."""
    return f"got {_shown(holder[key])}" if key in holder else "missing"


def _a_time(value: Any) -> datetime:
    """A time as export writes it: with its UTC offset, within the calendar in UTC (a time
    without one, or one the offset moves past the year 9999, fails where it is compared or
    printed: Python's words, no JSON path; review R59 #3)."""
    when = from_text(value) if isinstance(value, str) else None
    if when is None or when.tzinfo is None:
        raise ValueError(value)
    when.astimezone(UTC)  # (OverflowError: out of the calendar in UTC)
    return when


#: What `--fail-on` takes (`auditor.config.FAIL_ON_VALUES`: the config loads what export need not).
_FAIL_ON = (*SEVERITIES, "none")


def _a_fail_on(value: Any) -> str:
    if value not in _FAIL_ON:
        raise ValueError(value)
    return str(value)


def _a_text(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(value)
    return value


def _a_flag(value: Any) -> bool:
    if not isinstance(value, bool):
        raise TypeError(value)
    return value


def _inside(bundle: Path, name: object, at: tuple[str | int, ...], *, links: bool = True) -> Path:
    """A file the run parameters name (at JSON path `at`), which must be one of the bundle's
    own files (listed in its manifest, checked by `verify`): a relative path inside the
    bundle, no `..`, and, with `links`, no link (nor a folder above it that is one). Without
    it, the value alone is judged (`_ParameterReader.inputs`: a link is the bundle's folder,
    not the run parameter, and `verify --no-rerun` names it by its file check already)."""
    text = str(name)
    parts = Path(text).parts
    path = bundle / text
    # os.path.islink: False, not an unexpected PermissionError, under a folder of mode 000
    linked = links and (
        os.path.islink(path)
        or any(os.path.islink(bundle / folder) for folder in Path(text).parents[:-1])
    )
    if "\0" in text:  # (no file's name holds one: the re-run ended `unexpected ValueError`)
        raise BundleError(
            f"{bundle / PARAMETERS}: {render(at)}: holds a NUL byte, which no file's name can "
            "hold: not a file inside the bundle"
        )
    if not text or Path(text).is_absolute() or ".." in parts or linked:
        shown = printed_path(text, _TOKENS.get())
        raise BundleError(
            f"{bundle / PARAMETERS}: {render(at)}: {shown!r} is not a file inside the bundle"
        )
    return path


def _loaded(bundle: Path, params: dict[str, Any]) -> LoadedPolicy:
    """The bundled inputs, loaded, with the names the original run showed."""
    entries = params["policies"]
    paths = [
        _inside(bundle, e["bundled"], ("policies", n, "bundled")) for n, e in enumerate(entries)
    ]
    policy = load_policies(paths)
    shown = {str(path): e["shown"] for path, e in zip(paths, entries, strict=True)}
    policy = with_shown_paths(policy, shown)
    waivers: tuple[Any, ...] = ()
    if params.get("waivers"):
        w = params["waivers"]
        waivers = tuple(
            replace(x, source=replace(x.source, file=w["shown"])) if x.source else x
            for x in load_waivers(_inside(bundle, w["bundled"], ("waivers", "bundled")))
        )
    model_at = ("readinessModel", "bundled")
    model = load_readiness_model(_inside(bundle, params["readinessModel"]["bundled"], model_at))
    return LoadedPolicy(policy, waivers, model, _cited(bundle, params))


def _cited(bundle: Path, params: dict[str, Any]) -> tuple[tuple[InputFile, str], ...]:
    """The readiness model and the waivers file as the bundle's reports cite them, as a run's
    do: the name the run showed and the sha256 of the bundle's copy, which is the digest the
    run cites (of the file, or of its copy with its secrets as markers when it holds one).
    None (empty) for a bundle made before its reports cited them, which records no
    `dataSource` either (its reports, as a release's bundle, verify only with that release:
    a development build of 0.3.0 before this change also wrote junit.xml without its inputs
    and counted stale waivers in the chart)."""
    if "dataSource" not in params:
        return ()
    named = [("readiness model", params["readinessModel"])]
    if params.get("waivers"):
        named.append(("waivers", params["waivers"]))
    files = []
    for role, entry in named:
        # (a file inside the bundle, `_ParameterReader.inputs`; read already, as it was loaded)
        digest = hashlib.sha256(_bundle_read(bundle, str(entry["bundled"]))).hexdigest()
        files.append((InputFile(role, str(entry["shown"]), digest), ""))
    return tuple(files)


def _bundle_source(bundle: Path, params: dict[str, Any]) -> DataSource | None:
    """The data source the run parameters record (`_data_source`), as the bundle's reports
    state it: the export synced nothing. None for a bundle made before it was recorded (its
    reports carry no such line). A value export never writes is named by its JSON path."""
    if "dataSource" not in params:
        return None
    where = f"{bundle / PARAMETERS}: $.dataSource"
    record = params["dataSource"]
    if not isinstance(record, dict):
        raise BundleError(f"{where}: expected an object, as export writes it")
    last = record.get("lastSync")
    try:
        # in UTC, as the reports print it: a time the offset moves out of the calendar's range
        # (`9999-12-31T23:59:59-14:00`) is named here, not met while the reports are written
        when = None if last is None else _a_time(last)
    except (ValueError, OverflowError):
        when = None
    if last is not None and when is None:
        raise BundleError(
            f"{where}.lastSync: expected a time with its UTC offset (in UTC within the years "
            f"1-9999), or null; got {_shown(last)}"
        )
    recorded = record.get("integrityRecheckRecorded")
    if not isinstance(recorded, bool):
        raise BundleError(
            f"{where}.integrityRecheckRecorded: expected true or false, got {_shown(recorded)}"
        )
    span = record.get("integrityRechecked")
    if span is not None and not (
        isinstance(span, list)
        and len(span) == 2
        and all(isinstance(n, int) and not isinstance(n, bool) for n in span)
        and 1 <= span[0] <= span[1]
    ):
        raise BundleError(
            f"{where}.integrityRechecked: expected [first, last] revision numbers or null, "
            f"got {_shown(span)}"
        )
    return DataSource(
        last_sync=when,
        synced=False,
        not_synced=EXPORT_NOT_SYNCED,
        rechecked=None if span is None else (span[0], span[1]),
        recheck_recorded=recorded,
        by="export",
    )


def _shown(value: Any) -> str:
    """A value of a bundle file as an error shows it: a secret the value detectors find in it
    (a hand-edited bundle's) not shown, the command's own token `[token]`, both judged before
    it is shortened (`shown_value`)."""
    return escape.shorten(shown_value(orjson.dumps(value).decode(), _TOKENS.get()), 40)


#: What a check of `_options` gives for a value it found wrong (and named).
_WRONG = object()


def _options(
    bundle: Path, params: dict[str, Any], check: Callable[[Callable[[], Any]], Any]
) -> AuditOptions | None:
    """The run's options as the run parameters give them, each value checked where it is
    written (`_ParameterReader`), and the input files' entries (before any file is read),
    each read through `check`: it returns what it read, or raises its BundleError (the
    re-run), or names it and gives `_WRONG` (`parameter_problems`: None then)."""
    value = _ParameterReader(bundle, params)
    now = check(lambda: value("reportTime", _a_time, "a time with its UTC offset"))
    at = check(lambda: value("at", lambda v: None if v is None else _a_time(v), "a time, or null"))
    read = {
        "run_id": check(lambda: value("runId", _a_text, "the run's id")),
        "api_address": check(lambda: value("apiAddress", _a_text, "the service's address")),
        "all_revisions": check(lambda: value("allRevisions", _a_flag, "true or false")),
        "fail_on": check(lambda: value("failOn", _a_fail_on, f"one of {', '.join(_FAIL_ON)}")),
        "list_table": check(value.diff_keys),
        "source": check(lambda: _bundle_source(bundle, params)),
    }
    inputs = check(value.inputs)
    for entry in inputs if inputs is not _WRONG else ():
        check(entry)
    day = None if now is _WRONG or at is _WRONG else (at or now).date()
    read["usage_days"] = check(lambda: _usage_days(bundle, params, day))
    if any(v is _WRONG for v in (now, at, *read.values())):
        return None
    return AuditOptions(now=now, at=at, **read)


def parameter_problems(bundle: Path, params: dict[str, Any]) -> list[str]:
    """Every value of the run parameters (read already, `bundle_object`) that export would
    not write, each at its JSON path, as the re-run names the first it meets (`_options`):
    what `verify --no-rerun` checks of them without evaluating the bundle."""
    problems: list[str] = []

    def check(read: Callable[[], Any]) -> Any:
        try:
            return read()
        except BundleError as exc:
            problems.append(str(exc))
            return _WRONG

    _options(bundle, params, check)
    return problems


def _usage_days(bundle: Path, params: dict[str, Any], day: date | None) -> int | None:
    """The run's usage window in days (None: `--no-usage`), checked where it is written: one
    out of range (`"usageDays": 1000000`, a window before the year 1) is the bundle's error,
    never an OverflowError of the re-run. The window is checked from `day` (its last), when
    known (not when the report time is itself wrong)."""
    days = params.get("usageDays")
    if days is None:
        return None
    where = f"{bundle / PARAMETERS}: $.usageDays"
    if isinstance(days, bool) or not isinstance(days, int) or not 1 <= days <= MAX_DAYS:
        shown = _shown(days)
        raise BundleError(
            f"{where}: expected a whole number of days from 1 to {MAX_DAYS}, or null; got {shown}"
        )
    try:
        if day is not None:
            usage_window(day, days)
    except ValueError as exc:
        raise BundleError(f"{where}: {exc}") from None
    return days


#: How long a scratch folder no process holds is left alone (`make_scratch`): one just made
#: is held a moment later, and one of a release that held none may still be in use.
SCRATCH_STALE_SECONDS = 3600


def make_scratch(prefix: str) -> tuple[Path, int | None]:
    """A new folder `prefix…` under TMPDIR, held by this process (an exclusive `flock` on it,
    which the kernel lets go when the process ends, however it ends) until `drop_scratch`;
    and the descriptor holding it (None where the file system has no `flock`). First, each
    folder of that prefix that no process holds and that has not changed for
    `SCRATCH_STALE_SECONDS` is removed: what `export` or `verify` killed by `kill -9` (or
    the OOM killer) left, which stayed forever (T97 #5). An OSError when it cannot be made."""
    _remove_stale(prefix)
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return folder, None
    with contextlib.suppress(OSError):  # no flock here: used unheld (never taken for stale)
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    return folder, fd


def drop_scratch(folder: Path, fd: int | None) -> None:
    """Remove a scratch folder `make_scratch` made, then let go of it."""
    shutil.rmtree(folder, ignore_errors=True)
    if fd is not None:
        os.close(fd)


def _remove_stale(prefix: str) -> None:
    """Remove this user's scratch folders of `prefix` under TMPDIR that no process holds and
    that have not changed for `SCRATCH_STALE_SECONDS` (`make_scratch`); any it cannot tell
    (another user's, one it cannot open or lock) stays."""
    root = tempfile.gettempdir()
    try:
        with os.scandir(root) as listing:
            names = [e.name for e in listing if e.name.startswith(prefix)]
    except OSError:
        return
    for name in names:
        path = os.path.join(root, name)
        try:
            st = os.lstat(path)
            if (
                not stat.S_ISDIR(st.st_mode)
                or st.st_uid != os.getuid()
                or time.time() - st.st_mtime < SCRATCH_STALE_SECONDS
            ):
                continue
            fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # held: in use (OSError: kept)
            shutil.rmtree(path, ignore_errors=True)
        except OSError:
            pass
        finally:
            os.close(fd)


#: Where a bundle is evaluated, which an error there names (not "the state file": the user's
#: is not to blame, TMPDIR is).
_SCRATCH = "the scratch state file the bundle is evaluated in (in TMPDIR)"


def evaluate_bundle(
    bundle: Path, inspect: Callable[[Store, AuditOptions], None] | None = None
) -> ReportData:
    """Evaluate a bundle from its own files alone: its revisions and reports in a scratch
    state file, its policy, waiver and model files, its run parameters. Nothing is recorded
    anywhere else; the same bundle gives the same `ReportData`. `inspect(store, options)`,
    when given, is called once evaluated, before the scratch state file is removed (`verify`
    counts the bundle's rows there and derives its CSV files again)."""
    params = _parameters(bundle)
    options = _options(bundle, params, lambda read: read())  # (the first wrong value raises)
    assert options is not None
    loaded = _loaded(bundle, params)
    try:
        scratch, hold = make_scratch("auditor-bundle-")
    except OSError as exc:
        raise StoreWriteError(f"{_SCRATCH}: cannot make it: {exc.strerror or exc}") from None
    try:
        with Store.open(scratch / "state.db", create=True) as store:
            _load_store(bundle, store, options.now, params.get("analyticsAccess"))
            outcome = run_audit(store, loaded, options)
            if inspect is not None:
                inspect(store, options)
    except StoreError as exc:  # this process's own file: TMPDIR (full, no descriptor left)
        raise StoreWriteError(f"{_SCRATCH}: {exc}") from None
    finally:
        drop_scratch(scratch, hold)
    org = str(params.get("org") or "")
    return replace(outcome.data, org=org, not_compared=BUNDLE_NOT_COMPARED)


__all__ = [
    "BUNDLE_FILES",
    "BUNDLE_LINE_MAX",
    "BUNDLE_OUTPUTS",
    "DATA_FILES",
    "INPUTS_DIR",
    "MANIFEST",
    "NOT_REPRODUCED",
    "NOT_REPRODUCED_WHY",
    "PARAMETERS",
    "REPORTS_DIR",
    "REPORT_FILES",
    "SECRETS_NOTE",
    "SIGNATURE",
    "TABLES",
    "BundleError",
    "ExportRequest",
    "LongLine",
    "OutTaken",
    "bundle_entries",
    "bundle_files",
    "bundle_layout",
    "bundle_lines",
    "bundle_tokens",
    "bundled_inputs",
    "check_out",
    "drop_scratch",
    "evaluate_bundle",
    "export_bundle",
    "load_public_key",
    "make_scratch",
    "not_reproduced_warning",
    "parameter_problems",
    "parsed_line",
    "reading_as",
    "redaction_record",
    "remove_bundle",
    "result_statuses",
    "write_tables",
]
