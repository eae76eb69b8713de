"""Verify: check an evidence bundle's hashes and signature, and re-run its evaluation.

Takes a bundle folder written by `auditor export` (and, optionally, the Ed25519 public key it
was signed with), gives a `Verification`: every file altered, missing or not in the manifest,
every fact of the manifest (findings, revisions, run id, release…) the bundle contradicts or
the manifest lacks, a signature that does not match, and every report and CSV file the re-run
does not reproduce byte for byte — each named. The re-run uses the bundle's own files alone
(`export.evaluate_bundle`; the CSV files are written again with `export.write_tables`).
"""

from __future__ import annotations

import base64
import binascii
import csv
import hashlib
import itertools
import os
import re
import stat
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from auditor import __version__
from auditor.common import escape
from auditor.common.files import UnreadableFile, input_lines, read_input
from auditor.common.paths import render
from auditor.errors import AuditorError, PolicyError, ReportError, StoreWriteError
from auditor.evaluate.readiness import InvalidModel
from auditor.models import STATUSES
from auditor.redact.shown import printed_path, shown_value
from auditor.report import OUTPUTS, ReportData, write_reports
from auditor.store.database import Store
from auditor.workflows.export import (
    BUNDLE_MAX_BYTES,
    BUNDLE_OUTPUTS,
    DATA_FILES,
    MANIFEST,
    MANIFEST_MAX_BYTES,
    NOT_REPRODUCED,
    NOT_REPRODUCED_WHY,
    PARAMETERS,
    REPORTS_DIR,
    SECRETS_NOTE,
    SIGNATURE,
    TABLES,
    BundleError,
    LongLine,
    bundle_entries,
    bundle_layout,
    bundle_lines,
    bundle_object,
    bundle_tokens,
    bundled_inputs,
    drop_scratch,
    evaluate_bundle,
    file_digest,
    load_public_key,
    make_scratch,
    parameter_problems,
    parsed_line,
    reading_as,
    redaction_record,
    result_statuses,
    write_tables,
)
from auditor.workflows.run import AuditOptions


@dataclass
class Verification:
    """What `verify` found: `problems` empty means the bundle is intact and reproduced."""

    problems: list[str] = field(default_factory=list)
    #: the lines a problem lists (by its index in `problems`): a re-run's invalid readiness
    #: model or waivers file, one line per mistake, each printed on its own line
    details: dict[int, list[str]] = field(default_factory=dict)
    #: the problems that quote an error of the re-run (a policy's line, with its value; the
    #: run parameters'), by index: where after verify's own words the quoted error begins, so
    #: its file and JSON path are read apart from its message (every line is shown as `run`
    #: shows an input file's problems: `auditor.cli.cmd_verify`)
    quoting: dict[int, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    files_checked: int = 0
    reproduced: list[str] = field(default_factory=list)  # CSV files and reports, byte for byte
    signed: bool = False
    # sha256 and size of every file hashed, by bundle path: the re-run compares against them
    # instead of reading each report again
    digests: dict[str, tuple[str, int] | None] = field(default_factory=dict, repr=False)

    @property
    def ok(self) -> bool:
        """True when nothing is wrong."""
        return not self.problems


def _manifest(bundle: Path) -> tuple[bytes, dict[str, Any]]:
    if not os.path.isdir(bundle):  # os.path: Path.is_dir raises on a name too long
        what = "not a folder" if os.path.exists(bundle) else "no such folder"
        raise AuditorError(f"{bundle}: {what} (give the evidence bundle's folder)")
    if (bundle / MANIFEST).is_symlink():  # as a listed file that is a link: not read through it
        raise AuditorError(
            f"{bundle / MANIFEST}: cannot read the manifest: a symbolic link, not the bundle's "
            "own file (a copy or an archive of the folder keeps only the link): put the "
            "manifest itself in its place"
        )
    try:
        raw = read_input(bundle / MANIFEST, max_bytes=MANIFEST_MAX_BYTES)
    except UnreadableFile as exc:
        raise AuditorError(f"{bundle / MANIFEST}: cannot read the manifest: {exc.reason}") from None
    # what is wrong, and where: "not an evidence bundle manifest" alone left it to guess
    manifest = bundle_object(raw, str(bundle / MANIFEST))
    if not isinstance(manifest.get("files"), dict):
        got = "missing" if "files" not in manifest else f"got {_shown_value(manifest['files'])}"
        raise AuditorError(
            f"{bundle / MANIFEST}: $.files: expected an object of the bundle's files (each "
            f"{{bytes, sha256}}), {got}: not an evidence bundle manifest"
        )
    return raw, manifest


def _check_files(bundle: Path, files: dict[str, Any], out: Verification) -> None:
    linked: dict[str, int] = {}  # a folder of the bundle that is a link: how many it hides
    for name in sorted(files):
        path = bundle / name
        want = files[name].get("sha256") if isinstance(files[name], dict) else None
        fault = _entry_fault(files[name])
        if fault is not None:
            at = render(("files", _name(name), *fault[0]))
            out.problems.append(f"{MANIFEST}: {at}: {fault[1]}")
        if ".." in Path(name).parts or Path(name).is_absolute():
            out.problems.append(f"manifest: {_name(name)!r} is not a path inside the bundle")
        elif (wrong := _not_plain(name)) is not None:
            out.problems.append(f"{MANIFEST}: {render(('files', _key_shown(name)))}: {wrong}")
        elif (folder := _linked_folder(bundle, name)) is not None:
            linked[folder] = linked.get(folder, 0) + 1
            out.digests[name] = None  # not read through the link: never intact, nor reproduced
        elif (kind := _kind(path)) is not None:
            out.problems.append(f"altered: {_name(name)} is not a regular file ({kind})")
        elif _missing(path):
            out.problems.append(f"missing: {_name(name)} (listed in {MANIFEST})")
        elif (sizes := _other_size(path, files[name])) is not None:
            # named at once, never hashed: a 50 GB file swapped in is not read to say so
            size, listed = sizes
            out.files_checked += 1
            out.digests[name] = ("", size)  # no sha256 is "": the re-run sees it differs
            out.problems.append(
                f"altered: {_name(name)} ({size:,} bytes, {MANIFEST} says {listed:,})"
            )
        elif (found := _digest(path, name, out)) is not None:
            got, _ = found
            out.files_checked += 1
            if got != want:
                out.problems.append(
                    f"altered: {_name(name)} (sha256 {got}, {MANIFEST} says {want})"
                )
    for folder, count in sorted(linked.items()):
        out.problems.append(
            f"altered: {_name(folder)} is a symbolic link, not a folder of the bundle: the {count} "
            f"file(s) {MANIFEST} lists under it were not read through it"
        )
    plain = {name: entry for name, entry in files.items() if _not_plain(name) is None}
    out.problems.extend(_unlisted_entries(bundle, plain, linked))


def _not_plain(name: str) -> str | None:
    """What is wrong with a manifest's key that is not a file's plain relative path, as export
    writes each (`inputs/waivers.yaml`: names between single `/`, none `.`); None when it is
    one. An alias (`./revisions.csv`, `reports//findings.json`) counted its file twice, an
    empty name read `altered:  is not …`, a NUL ended `verify` with `unexpected ValueError`
    (T97 #4, #5). (`..` and an absolute path are named apart.)"""
    if not name:
        return "an empty name, not a file of the bundle"
    if "\0" in name:
        return "a name holding a NUL byte, which no file's name can hold"
    if any(part in ("", ".") for part in name.split("/")):
        plain = "/".join(part for part in name.split("/") if part not in ("", "."))
        return (
            f"not a file's plain path in the bundle (export writes {_name(plain)!r}): each "
            "file is listed once, by its own path"
        )
    return None


def _plain_inside(name: str) -> bool:
    """`name` is a file's plain relative path inside the bundle, as export writes each (no
    alias, no `..`, not absolute)."""
    return _not_plain(name) is None and ".." not in name.split("/") and not name.startswith("/")


def _inputs_in_shape(params: dict[str, Any] | None) -> bool:
    """Whether the run parameters name every input copy by a plain path inside the bundle:
    a non-empty `policies` list of entries each with its `bundled` path, and those of the
    waivers and the model (when given) too. Else which copies belong cannot be told, and
    the parameters' check names what is out of shape."""
    if params is None:
        return False
    policies = params.get("policies")
    if not isinstance(policies, list) or not policies:
        return False
    if not all(isinstance(e, dict) and isinstance(e.get("bundled"), str) for e in policies):
        return False
    return len(_inputs_inside(params)) == len(bundled_inputs(params))


def _inputs_inside(params: dict[str, Any] | None) -> list[tuple[str, tuple[str | int, ...]]]:
    """The inputs' copies the run parameters name by a file's plain path inside the bundle
    (`bundled_inputs`); another is named at its JSON path by the parameters' check."""
    return [(name, at) for name, at in bundled_inputs(params or {}) if _plain_inside(name)]


def _key_shown(name: str) -> str:
    """A manifest key as a JSON path shows it: what looks like a secret not shown (`_name`),
    judged apart on each side of a NUL (which the line shows as `\\u0000`)."""
    return "\0".join(_name(piece) if piece else piece for piece in name.split("\0"))


_SHA256 = re.compile(r"[0-9a-f]{64}")


def _entry_fault(entry: Any) -> tuple[tuple[str, ...], str] | None:
    """What is wrong with a file's entry of the manifest (the JSON path under it, and what),
    as export writes it: `{bytes, sha256}`, the size a whole number. The hash binds the
    file's content; a size that is text, null or absent is still a statement the manifest
    makes that is not the file's."""
    if not isinstance(entry, dict):
        return (), f"expected {{bytes, sha256}}, got {_shown_value(entry)}"
    size = entry.get("bytes")
    if isinstance(size, bool) or not isinstance(size, int) or size < 0:
        got = "missing" if "bytes" not in entry else f"got {_shown_value(size)}"
        return ("bytes",), f"expected an integer, the file's size in bytes (0 or more), {got}"
    digest = entry.get("sha256")
    if not isinstance(digest, str) or not _SHA256.fullmatch(digest):
        got = "missing" if "sha256" not in entry else f"got {_shown_value(digest)}"
        return ("sha256",), f"expected the file's SHA-256 (64 hexadecimal digits), {got}"
    return None


#: What an entry of the bundle is when it is not a regular file, in the words of every line
#: that names one (`altered:` for a listed file, `extra:` for another, the signature's).
_KINDS = (
    (stat.S_ISLNK, "a symbolic link"),
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a named pipe"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a device"),
    (stat.S_ISBLK, "a device"),
)


def _kind(path: Path) -> str | None:
    """What `path` is, a link not followed, when it is there and not a regular file."""
    try:
        mode = path.lstat().st_mode
    except OSError:
        return None  # missing (or under a file): named missing
    return _kind_of(mode)


def _kind_of(mode: int) -> str | None:
    if stat.S_ISREG(mode):
        return None
    return next((word for test, word in _KINDS if test(mode)), "not a regular file")


def _linked_folder(bundle: Path, name: str) -> str | None:
    """The folder of the bundle above file `name` that is a symbolic link (the outermost), if
    any: the file is then not the bundle's own, whatever it holds."""
    for parent in reversed(Path(name).parents[:-1]):  # `inputs`, then `inputs/deeper`, …
        if os.path.islink(bundle / parent):  # False, not an error, in a folder of mode 000
            return parent.as_posix()
    return None


def _own_file(bundle: Path, name: str) -> bool:
    """Whether `name` is a regular file of the bundle, reached through no link: the files the
    checks after the hashes read (one that is not was named by the file check)."""
    try:
        regular = stat.S_ISREG((bundle / name).lstat().st_mode)
    except OSError:  # missing, or in a folder that cannot be searched: named by the file check
        return False
    return regular and _linked_folder(bundle, name) is None


def _missing(path: Path) -> bool:
    """Whether listed file `path` (not a link, nor a folder) is not there: one in a folder that
    cannot be searched (mode 000) may well be, and is named unreadable when it is hashed."""
    try:
        return not stat.S_ISREG(path.lstat().st_mode)
    except PermissionError:
        return False
    except OSError:
        return True


def _unlisted_entries(bundle: Path, files: dict[str, Any], linked: dict[str, int]) -> list[str]:
    """What the bundle holds that the manifest does not account for, from one walk of it: a
    file or a link not listed, then a FIFO, a socket or a device, a folder holding nothing (a
    folder holding a listed file is the file's; one holding other entries is named through
    them). A folder whose entries cannot be listed is named unreadable (what it holds is
    unknown: an unlisted file may be in it), never passed over as if it were complete."""
    listed = {Path(name).as_posix() for name in files}
    folders = {parent.as_posix() for name in listed for parent in Path(name).parents}
    problems: list[str] = []

    def unlisted(name: str, exc: OSError) -> None:
        problems.append(
            f"unreadable: {_name(name)}/ ({exc.strerror or exc}: its entries cannot be listed, so "
            f"a file {MANIFEST} does not list may be in it)"
        )

    entries = bundle_entries(bundle, unlisted)
    others = []
    for name, mode, holds in entries:
        if name in (MANIFEST, SIGNATURE):
            continue
        if stat.S_ISREG(mode) or stat.S_ISLNK(mode):
            if name not in files and name not in linked:
                kind = _kind_of(mode)
                what = f"{kind}, " if kind else ""
                problems.append(f"extra: {_name(name)} ({what}not listed in {MANIFEST})")
        elif name in listed:
            continue
        elif stat.S_ISDIR(mode):
            if name not in folders and not holds:
                others.append(f"extra: {_name(name)}/ (an empty folder, not listed in {MANIFEST})")
        else:
            others.append(f"extra: {_name(name)} ({_kind_of(mode)}, not listed in {MANIFEST})")
    return problems + others


def _other_size(path: Path, listed: Any) -> tuple[int, int] | None:
    """The file's size and the `bytes` the manifest gives it, when they differ; None when
    they do not, or either is not known (then the hash decides)."""
    want = listed.get("bytes") if isinstance(listed, dict) else None
    if not isinstance(want, int) or isinstance(want, bool):
        return None
    try:
        size = path.stat().st_size
    except OSError:
        return None  # named unreadable by the hash
    return (size, want) if size != want else None


def _digest(path: Path, name: str, out: Verification) -> tuple[str, int] | None:
    """The file's sha256 and size; None, with the problem named, when it cannot be read. Kept
    in `out.digests` either way, so a file is hashed (or named unreadable) once."""
    if name in out.digests:
        return out.digests[name]
    try:
        digest = file_digest(path)
    except OSError as exc:
        out.problems.append(f"unreadable: {_name(name)} ({exc.strerror or exc})")
        found = None
    else:
        found = str(digest["sha256"]), int(str(digest["bytes"]))
    out.digests[name] = found
    return found


def _check_signature(bundle: Path, manifest: bytes, key: Path | None, out: Verification) -> None:
    sig_path = bundle / SIGNATURE
    if (kind := _kind(sig_path)) is not None:  # as a listed file: never read through a link
        out.problems.append(f"altered: {SIGNATURE} is not a regular file ({kind})")
        return
    if key is None:
        if sig_path.exists():
            out.notes.append(f"{SIGNATURE} present but not checked: give --key PUBLIC.pem")
        return
    public = load_public_key(key)
    if not sig_path.is_file():
        out.problems.append(f"signature: {SIGNATURE} is missing (the bundle is not signed)")
        return
    from cryptography.exceptions import InvalidSignature  # optional extra

    try:
        signature = base64.b64decode(read_input(sig_path, max_bytes=4096).strip(), validate=True)
        public.verify(signature, manifest)
    except (UnreadableFile, binascii.Error, ValueError):
        out.problems.append(f"signature: {SIGNATURE} is not a base64 Ed25519 signature")
    except InvalidSignature:
        out.problems.append(
            f"signature: {SIGNATURE} does not match {MANIFEST} for the key {key.name} "
            "(the manifest or the signature was changed, or another key signed it)"
        )
    else:
        out.signed = True


#: The fields of manifest.json besides `files`: those checked against the bundle's small files
#: (`_check_facts`, with or without the re-run) and those the re-run derives (`_Derived`).
_FROM_FILES = ("tool", "toolVersion", "generated", "runId", "secrets", "redaction")
_FROM_RERUN = ("revisions", "latestRevision", "reports", "integrityIssues", "findings")

#: The fact fields each release's `export` writes in every manifest.json (this one's: all of
#: the above). A bundle of one of them without one of its fields had it deleted; a bundle of a
#: release not listed (a later one) is judged by `toolVersion`, which every release writes.
#: 0.1.0 gained `runId` and `findings` partway (its bundles may lack them).
_WRITTEN = {
    "0.1.0": (
        "tool", "toolVersion", "generated", "revisions", "latestRevision", "reports",
        "integrityIssues", "secrets",
    ),
    "0.2.0": (
        "tool", "toolVersion", "generated", "runId", "revisions", "latestRevision", "reports",
        "integrityIssues", "findings", "secrets",
    ),
    "0.3.0": (
        "tool", "toolVersion", "generated", "runId", "revisions", "latestRevision", "reports",
        "integrityIssues", "findings", "secrets", "redaction",
    ),
}  # fmt: skip
#: The fields this release writes, in the manifest's order (a test holds a fresh bundle to it).
_FIELDS = _WRITTEN["0.3.0"]


def written_fields(made_by: Any) -> tuple[str, ...]:
    """The fact fields a bundle made by release `made_by` (its `toolVersion`) must state."""
    if made_by == __version__:
        return _FIELDS
    return _WRITTEN.get(made_by, ("toolVersion",)) if isinstance(made_by, str) else ("toolVersion",)


def _shown_value(value: Any) -> str:
    """A value of the bundle (its JSON text) as a problem shows it: a secret the value
    detectors find in it reads `<not shown: looks like a secret>` (a hand-edited bundle may
    hold one: export writes none), the command's own token `[token]`, both judged before it
    is shortened (a token cut short is no longer one they, or the command's scrub, know), as
    `_name` shows a key or a file's name."""
    return escape.shorten(shown_value(escape.show_value(value), bundle_tokens()), 80)


def _name(name: str, limit: int | None = None) -> str:
    """A key or a file's name of the bundle as a problem shows it: each name in it (between
    `/`) that the value detectors take for a secret not shown, the command's own token
    `[token]`, before it is shortened (`printed_path`); ordinary names (all of a bundle export
    writes) ask no detector."""
    shown = printed_path(name, bundle_tokens())
    return shown if limit is None else escape.shorten(shown, limit)


def _fact(out: Verification, name: str, stated: Any, true: Any, where: str, note: str = "") -> None:
    """A problem when the manifest's `name` (`stated`) is not `true`, which `where` says: the
    same JSON (654 is not "654", nor 1 `true`)."""
    if escape.show_value(stated) != escape.show_value(true):
        out.problems.append(
            f"manifest: {name} is {_shown_value(stated)}, but {where} {_shown_value(true)}{note}"
        )


def _parameters(bundle: Path, files: dict[str, Any], out: Verification) -> dict[str, Any] | None:
    """run-parameters.json read as the re-run reads it (`bundle_object`, strictly), for the
    manifest's run id and time; None, the problem named, when it cannot be read: one not as
    export writes it (read leniently, a forged run id behind a byte-order mark went unchecked
    with --no-rerun), or one too large to read (a few KB as export writes it: one padded past
    16 MiB left the run id unchecked without a word, review R62 #3). A file listed that is
    missing, a link or unreadable is named by the file check, not again here."""
    path = bundle / PARAMETERS
    try:
        return bundle_object(read_input(path, max_bytes=MANIFEST_MAX_BYTES), str(path))
    except UnreadableFile as exc:
        named = PARAMETERS in files and (
            not _own_file(bundle, PARAMETERS) or out.digests.get(PARAMETERS) is None
        )
        if not named:
            out.problems.append(
                f"manifest: runId and generated cannot be checked: {path}: cannot read: "
                f"{exc.reason}"
            )
        return None
    except BundleError as exc:
        out.problems.append(f"manifest: runId and generated cannot be checked: {exc}")
        return None


#: How findings.json begins (`"tool": {"name": …, "version": …}`, second of its fields): its
#: release is read there, not from the whole file (860 MB for `--all-revisions` at 10,000).
_TOOL_HEAD = re.compile(
    rb'"tool": \{\s*"name": "(?:[^"\\]|\\.)*",\s*"version": ("(?:[^"\\]|\\.)*")'
)


def _head_value(bundle: Path, pattern: re.Pattern[bytes], size: int) -> Any:
    """The JSON value `pattern`'s group finds in the first `size` bytes of the bundle's
    findings.json (a report of 860 MB is not read whole for one field near its start); None
    when it is not there, or the file is missing, a link or unreadable (the file check names
    why)."""
    path = bundle / REPORTS_DIR / "findings.json"
    if not _own_file(bundle, f"{REPORTS_DIR}/findings.json"):
        return None
    try:
        with path.open("rb") as fh:
            head = fh.read(size)
    except OSError:
        return None
    found = pattern.search(head)
    if found is None:
        return None
    try:
        return orjson.loads(found.group(1))
    except orjson.JSONDecodeError:
        return None


def _written_version(bundle: Path) -> Any:
    """The release findings.json says wrote it (`tool.version`), or None when it says none."""
    return _head_value(bundle, _TOOL_HEAD, 4096)


#: The fields of one entry of manifest.json's `notReproduced` (`export._not_reproduced`).
_NOT_REPRODUCED_KEYS = ("rule", "subject", "run", "bundle")


def _not_reproduced(
    manifest: dict[str, Any], out: Verification, rerun: bool
) -> list[dict[str, str]] | None:
    """manifest.json's `notReproduced` (the results `export` found the bundle judges otherwise
    than the run: the bundle holds secrets as markers), noted once read; a problem when it is not a
    non-empty list of such entries (None then, and when there is none: a bundle whose every
    result is the run's has no such field)."""
    if NOT_REPRODUCED not in manifest:
        return None
    differ = manifest[NOT_REPRODUCED]
    if (
        not isinstance(differ, list)
        or not differ
        or not all(
            isinstance(d, dict)
            and sorted(d) == sorted(_NOT_REPRODUCED_KEYS)
            and all(isinstance(v, str) for v in d.values())
            for d in differ
        )
    ):
        out.problems.append(
            f"manifest: {NOT_REPRODUCED} is {_shown_value(differ)}, but auditor writes a "
            "non-empty list of {rule, subject, run, bundle}"
        )
        return None
    for index, entry in enumerate(differ):
        for key in ("run", "bundle"):
            if entry[key] not in _VERDICTS:
                out.problems.append(
                    f"manifest: {NOT_REPRODUCED}[{index}].{key} is {_shown_value(entry[key])}, "
                    f"but auditor writes a result's status ({', '.join(_VERDICTS)})"
                )
        if entry["run"] == entry["bundle"]:
            out.problems.append(
                f"manifest: {NOT_REPRODUCED}[{index}] gives the run and the bundle one verdict, "
                f"{_shown_value(entry['run'])}, but auditor names only a result they judge "
                "otherwise"
            )
    # each of the (at most 5) entries the note shows, its values as a problem shows one
    shown = [{k: _name(v) for k, v in d.items()} for d in differ[:5]]
    out.notes.append(_not_reproduced_note(shown + differ[5:], checked=rerun))
    return differ


#: A result's verdict as `notReproduced` gives it (`export._not_reproduced`: `absent`, a
#: result one of the two evaluations does not have).
_VERDICTS = (*STATUSES, "absent")


def _not_reproduced_note(differ: list[dict[str, str]], *, checked: bool) -> str:
    """`verify`'s note of manifest.json's `notReproduced`: each entry's `bundle` verdict is
    checked against the re-run (`checked`; not with `--no-rerun`), its `run` verdict cannot
    be: the bundle holds nothing of the run's results (its reports are its own evaluation's,
    the state file the run read is not in it), so it is given as manifest.json's word, never
    as a fact verify found (an invented `run: pass` was repeated as one: T97 #2)."""
    bundle = "checked against the re-run" if checked else "not checked: --no-rerun"
    shown = "; ".join(
        f"{d.get('rule')} on {d.get('subject')}: {d.get('bundle')} in the bundle, "
        f"{d.get('run')} in the run as manifest.json states"
        for d in differ[:5]
    )
    more = f"; and {len(differ) - 5} more" if len(differ) > 5 else ""
    return (
        f"{len(differ)} result(s) {NOT_REPRODUCED_WHY}, as manifest.json's {NOT_REPRODUCED} "
        f"states: {shown}{more}. Each bundle verdict is {bundle}; a run verdict cannot be "
        "checked, as the bundle holds none of the run's results (only its own evaluation's): "
        "it is the exporter's word (signed with the manifest when the bundle is signed)"
    )


def _check_not_reproduced(
    differ: list[dict[str, str]] | None, data: ReportData, out: Verification
) -> None:
    """Each `notReproduced` entry's `bundle` verdict is the re-run's (its `run` verdict is
    the state file's, which the bundle cannot show)."""
    if not differ:
        return
    rerun = result_statuses(data)
    for entry in differ:
        got = rerun.get((entry["rule"], entry["subject"]), "absent")
        if got != entry["bundle"]:
            out.problems.append(
                f"manifest: {NOT_REPRODUCED} says {_shown_value(entry['rule'])} on "
                f"{_shown_value(entry['subject'])} is {_shown_value(entry['bundle'])} in the "
                f"bundle, but the re-run of the bundle gives {_shown_value(got)}"
            )


def _check_present(manifest: dict[str, Any], made_by: Any, written: Any, out: Verification) -> None:
    """Each fact field the release that made the bundle writes, named when missing: the
    release its `toolVersion` says, and the one findings.json says wrote it (so a manifest
    without its `toolVersion` is still judged by its release's fields)."""
    missing: dict[str, str] = {}
    for release in (made_by, written):
        for name in written_fields(release):
            if name not in manifest and name not in missing:
                missing[name] = (
                    "every release of auditor writes it"
                    if name == "toolVersion"
                    else f"auditor {_name(str(release), 40)} writes it in every bundle"
                )
    for name in sorted(missing, key=_FIELDS.index):
        out.problems.append(f"manifest: {name} is missing, but {missing[name]}")


def _check_facts(
    bundle: Path, manifest: dict[str, Any], out: Verification
) -> dict[str, Any] | None:
    """The manifest's own statements that the bundle's small files decide: the release (as
    findings.json gives it), run id and time (as run-parameters.json does), and, for a bundle
    of this release, the fixed texts and redaction rules. A field no release writes is named,
    and so is one the release that made the bundle writes that is missing (`written_fields`):
    nothing the manifest states goes unchecked, nor is anything it stated deleted. Gives the
    run parameters, when they could be read (`_parameters`)."""
    made_by = manifest.get("toolVersion")
    note = _release_note(made_by)
    written = _written_version(bundle)
    _check_present(manifest, made_by, written, out)
    for name in manifest:
        if name not in ("files", NOT_REPRODUCED) and name not in _FROM_FILES + _FROM_RERUN:
            out.problems.append(
                f"manifest: {_name(name, 40)} is not a field auditor writes "
                f"({_shown_value(manifest[name])} cannot be checked){note}"
            )
    if "tool" in manifest:
        _fact(out, "tool", manifest["tool"], "auditor", "auditor's bundles say")
    redaction = manifest.get("redaction")
    if written is not None:
        if "toolVersion" in manifest:
            _fact(out, "toolVersion", made_by, written, "reports/findings.json's tool.version is")
        if isinstance(redaction, dict) and "release" in redaction:
            where = "reports/findings.json's tool.version is"
            _fact(out, "redaction.release", redaction["release"], written, where)
    if "redaction" in manifest and not isinstance(redaction, dict):
        _fact(out, "redaction", redaction, redaction_record(), f"auditor {__version__} writes")
    if made_by == __version__:  # this release's fixed texts and rules: another's are its own
        if "secrets" in manifest:
            where = f"auditor {__version__} writes"
            _fact(out, "secrets", manifest["secrets"], SECRETS_NOTE, where)
        if isinstance(redaction, dict):
            record = redaction_record()
            for key in sorted(set(redaction) | set(record)):
                where = f"auditor {__version__} writes"
                shown = f"redaction.{_name(key, 40)}"  # (a key of the bundle's own too)
                _fact(out, shown, redaction.get(key), record.get(key), where)
    params = _parameters(bundle, manifest["files"], out)
    if params is not None:
        for name, key in (("runId", "runId"), ("generated", "reportTime")):
            if name in manifest and key in params:
                where = f"{PARAMETERS}'s {key} is"
                _fact(out, name, manifest[name], params[key], where)
    return params


def _check_layout(
    bundle: Path, manifest: dict[str, Any], params: dict[str, Any] | None, out: Verification
) -> None:
    """Every file the release that made the bundle writes (`export.bundle_layout`: the
    stored data, the CSV files, the run parameters, the reports, the inputs' copies the run
    parameters name) that the manifest does not list, named missing: a file deleted with its
    entry passed, integrity.json among them, read as no integrity issue (T97 #2). The release
    is the one `toolVersion` names, the one findings.json names and the one `redaction` names
    (each one's files required: a forged `toolVersion` of a release that wrote fewer files
    leaves none out). One there but not listed is named by the file check already."""
    redaction = manifest.get("redaction")
    # (a release that is no text is named by the facts' check: it ended verify with
    # `unexpected TypeError: unhashable type`, reviewer R91 #3)
    releases = [
        manifest.get("toolVersion"),
        _written_version(bundle),
        redaction.get("release") if isinstance(redaction, dict) else None,
    ]
    named = sorted({r for r in releases if isinstance(r, str)})
    required: dict[str, str] = {}
    for release in named if named else [None]:
        for name in bundle_layout(None, release):
            if name not in required:
                shown = _name(str(release), 40) if isinstance(release, str) else __version__
                required[name] = f"every bundle auditor {shown} writes holds it"
    for name, at in _inputs_inside(params):
        required.setdefault(name, f"{PARAMETERS}'s {render(at)} names it")
    files = manifest["files"]
    for name, why in required.items():
        if name not in files and not os.path.lexists(bundle / name):  # (False for a NUL)
            out.problems.append(f"missing: {_name(name)} ({why}; {MANIFEST} does not list it)")
    # A file the manifest lists that no export writes (a `reports/report.pdf`, an
    # `APPROVAL.txt`, a policy copy the run parameters do not name): it read as certified
    # evidence (reviewer R91 #2). (A key no file is there for is named missing; one that is
    # no plain path inside, by the file check; an input copy while the run parameters name
    # one out of shape, by the parameters' check.)
    inputs_named = _inputs_in_shape(params)
    for name in files:
        if (
            isinstance(name, str)
            and name not in required
            and _plain_inside(name)
            and (inputs_named or not name.startswith("inputs/"))
            and os.path.lexists(bundle / name)
        ):
            out.problems.append(
                f"extra: {_name(name)} is no file auditor export writes ({MANIFEST} lists it)"
            )


@dataclass
class _Derived:
    """What the re-run's scratch state file holds, to check the manifest's counts against."""

    revisions: int = 0
    latest: int | None = None
    reports: int = 0
    issues: int = 0

    def check(self, manifest: dict[str, Any], findings: int, out: Verification, note: str) -> None:
        values = {"revisions": self.revisions, "latestRevision": self.latest}
        values |= {"reports": self.reports, "integrityIssues": self.issues, "findings": findings}
        _counts_agree(out, manifest, values, "the re-run of the bundle finds", note)


#: Where each count of the manifest is taken from (`findings`: where the caller says).
_COUNTED_IN = {
    "revisions": "revisions.jsonl holds",
    "latestRevision": "the latest revision in revisions.jsonl is",
    "reports": "reports.jsonl holds",
    "integrityIssues": "integrity.json lists",
}


def _counts_agree(
    out: Verification,
    manifest: dict[str, Any],
    values: dict[str, Any],
    findings_from: str,
    note: str = "",
) -> None:
    """Each count the manifest states against its value (`values`), with or without the
    re-run: the same words for the same count (`_COUNTED_IN`)."""
    for name, value in values.items():
        if name in manifest:
            where = findings_from if name == "findings" else _COUNTED_IN[name]
            _fact(out, name, manifest[name], value, where, note if name == "findings" else "")


#: Where findings.json states how many findings it lists (`summary.by_status`, every status
#: with its count): read from the file's head, as `_TOOL_HEAD` is.
_BY_STATUS = re.compile(rb'\n  "summary": \{\n    "by_status": (\{[^{}]*\})')
_SUMMARY_HEAD = 1 << 20


def _jsonl_counts(
    bundle: Path, name: str, facts: str, out: Verification, key: str | None = None
) -> tuple[int, int | None] | None:
    """How many JSON lines bundle file `name` holds (split as the re-run splits them) and,
    with `key`, the largest integer `key` among them; None when the file is missing, a link or
    unreadable (the file check names it) or, named as a problem, not the JSON lines export
    writes. Only `key` needs each line parsed: the others are counted."""
    path = bundle / name
    if path.is_symlink() or not path.is_file():
        return None
    count, largest = 0, None
    try:
        for count, piece in bundle_lines(path):
            if key is None:
                continue
            try:
                value = parsed_line(piece)[key]
            except (orjson.JSONDecodeError, KeyError, TypeError):
                value = None
            if not isinstance(value, int) or isinstance(value, bool):
                out.problems.append(
                    f"manifest: {facts} cannot be checked: {name}:{count} is not a JSON "
                    f"line with a {key} number, as export writes it"
                )
                return None
            largest = value if largest is None else max(largest, value)
    except LongLine as exc:
        out.problems.append(f"manifest: {facts} cannot be checked: {exc}")
        return None
    except BundleError:  # cannot be read: the file check names why
        return None
    return count, largest


def _issues_count(bundle: Path, out: Verification) -> int | None:
    """How many integrity issues integrity.json lists; None when it cannot be read (the file
    check names why) or, named as a problem, is not a list."""
    path = bundle / "integrity.json"
    if path.is_symlink() or not path.is_file():
        return None
    try:
        items = orjson.loads(read_input(path, max_bytes=BUNDLE_MAX_BYTES))
    except UnreadableFile:
        return None
    except orjson.JSONDecodeError:
        items = None
    if not isinstance(items, list):
        out.problems.append(
            "manifest: integrityIssues cannot be checked: integrity.json is not a list of "
            "integrity issues, as export writes it"
        )
        return None
    return len(items)


def _stated_findings(bundle: Path) -> int | None:
    """How many findings reports/findings.json says it lists (the sum of its
    `summary.by_status`), read from its head; None when it says it nowhere there."""
    counts = _head_value(bundle, _BY_STATUS, _SUMMARY_HEAD)
    if not isinstance(counts, dict):
        return None
    values = [v for v in counts.values() if isinstance(v, int) and not isinstance(v, bool)]
    return sum(values) if len(values) == len(counts) else None


def _check_counts(bundle: Path, manifest: dict[str, Any], out: Verification) -> None:
    """Without the re-run, the manifest's counts against what the bundle's files state, read
    but not evaluated: `revisions` and `latestRevision` against revisions.jsonl, `reports`
    against reports.jsonl, `integrityIssues` against integrity.json, `findings` against
    reports/findings.json's own summary (the re-run counts the findings it finds instead).
    Only a file the hash check found intact is read: one altered is named already (and one of
    another size was not even hashed, so it is not read here either)."""
    files = manifest["files"]

    def intact(name: str) -> bool:
        found, listed = out.digests.get(name), files.get(name)
        return found is not None and isinstance(listed, dict) and found[0] == listed.get("sha256")

    true: dict[str, Any] = {}
    revisions = (
        _jsonl_counts(bundle, "revisions.jsonl", "revisions and latestRevision", out, "revision")
        if intact("revisions.jsonl")
        else None
    )
    if revisions is not None:
        true["revisions"], true["latestRevision"] = revisions
    reports = (
        _jsonl_counts(bundle, "reports.jsonl", "reports", out) if intact("reports.jsonl") else None
    )
    if reports is not None:
        true["reports"] = reports[0]
    # (a bundle without it is named missing, `_check_layout`: never read as no issue)
    issues = _issues_count(bundle, out) if intact("integrity.json") else None
    if issues is not None:
        true["integrityIssues"] = issues
    shown = f"{REPORTS_DIR}/findings.json"
    findings = _stated_findings(bundle) if intact(shown) else None
    if findings is not None:
        true["findings"] = findings
    elif "findings" in manifest and intact(shown):
        out.notes.append(
            "manifest: findings not checked: reports/findings.json states no summary.by_status "
            "near its start (the re-run, without --no-rerun, counts the findings)"
        )
    _counts_agree(out, manifest, true, "reports/findings.json's summary counts")


def _first_difference(fresh: Path, kept: Path, max_bytes: int) -> int | None:
    """The first line at which the two files differ (a file that ends first differs at the
    line after its last), read a line at a time; None when they hold the same bytes. The
    kept file is read as `read_input` would (a regular file, at most `max_bytes`)."""
    with fresh.open("rb") as mine, input_lines(kept, max_bytes=max_bytes) as theirs:
        for number, (x, y) in enumerate(itertools.zip_longest(mine, theirs), 1):
            if x != y:
                return number
    return None


def _kept_rows(rows: Iterable[list[str]]) -> Iterator[list[str] | str]:
    """The kept file's rows; where it stops being CSV, what is wrong, in place of a row."""
    try:
        yield from rows
    except csv.Error as exc:
        yield f"not CSV as export writes it ({exc})"


def _cell_shown(row: list[str], index: int) -> str:
    return _shown_value(row[index]) if index < len(row) else "nothing"


def _first_row_difference(source: str) -> Callable[[Path, Path, int], str | None]:
    """Where a CSV file of the bundle first differs from the one derived from `source` (the
    JSON lines): its row (1 is the first after the header) and column, both values shown;
    its first differing line when the rows are the same but not the bytes (LF line ends);
    None when the files are the same."""

    def first(fresh: Path, kept: Path, max_bytes: int) -> str | None:
        limit = csv.field_size_limit()
        csv.field_size_limit(max(limit, max_bytes))
        try:
            with (
                fresh.open(encoding="utf-8", newline="") as mine,
                input_lines(kept, max_bytes=max_bytes) as theirs,
            ):
                text = (line.decode("utf-8", "replace") for line in theirs)
                pairs = itertools.zip_longest(csv.reader(mine), _kept_rows(csv.reader(text)))
                header: list[str] = []
                for number, (ours, kept_row) in enumerate(pairs):
                    header = header or list(ours or [])
                    if ours == kept_row:
                        continue
                    row = "the header row" if number == 0 else f"row {number:,}"
                    if ours and number:
                        row += f", {header[0]} {_name(ours[0], 40)}"
                    if isinstance(kept_row, str):
                        return f"{row}: {kept_row}"
                    if kept_row is None:
                        return f"{row} is missing"
                    if ours is None:
                        return f"{row} is not in {source}: {_shown_value(kept_row)}"
                    index = next(
                        i for i in range(max(len(ours), len(kept_row)))
                        if i >= len(ours) or i >= len(kept_row) or ours[i] != kept_row[i]
                    )  # fmt: skip
                    column = header[index] if index < len(header) else f"column {index + 1}"
                    return (
                        f"{row}, {column}: {_cell_shown(kept_row, index)}, where {source} "
                        f"gives {_cell_shown(ours, index)}"
                    )
        finally:
            csv.field_size_limit(limit)
        line = _first_difference(fresh, kept, max_bytes)  # the rows alike, not the bytes
        if line is None:
            return None
        return f"the same rows, written otherwise (line ends or quoting), first at line {line}"

    return first


def _release_note(made_by: Any) -> str:
    """Why a re-run may differ without anyone changing the bundle: another release made it."""
    if made_by == __version__:
        return ""
    shown = _name(str(made_by), 40) if made_by is not None else "an unrecorded release"
    return (
        f"; the bundle was made by auditor {shown} and this is {__version__}, whose reports "
        "may differ: re-run it with the release that made it (or check the hashes and the "
        "signature alone with --no-rerun)"
    )


def _cannot_evaluate(exc: AuditorError, out: Verification) -> None:
    """The re-run's error as one problem: its first line, and the mistakes it lists (an
    invalid readiness model's or waivers file's, one per line) as that problem's details,
    never joined into one line, the error apart from the words before it (`quoting`)."""
    head, *lines = str(exc).split("\n")
    if isinstance(exc, InvalidModel):  # apart: the bundle's path may hold a line break
        head, lines = f"{exc.source}: invalid readiness model:", exc.problems
    elif isinstance(exc, PolicyError) and len(exc.problems) > 1:
        head = f"{len(exc.problems)} problem(s) in the bundle's input files:"
        lines = [line for p in exc.problems for line in p.split("\n")]
    lead = "re-run: the bundle cannot be evaluated: "
    out.problems.append(f"{lead}{head}")
    out.quoting[len(out.problems) - 1] = len(lead)
    if lines:
        out.details[len(out.problems) - 1] = lines


def _not_to_rerun(
    bundle: Path, manifest: dict[str, Any], params: dict[str, Any] | None, out: Verification
) -> list[str]:
    """The files the re-run would read (the run parameters, the stored data, the inputs'
    copies) that the file check did not find intact: altered, missing, not a regular file,
    unreadable or not listed. The re-run would evaluate them as the bundle's: it reads none
    of them (a 300 MB line of an altered revisions.jsonl was parsed all the same, T97 #3)."""
    files, layout = manifest["files"], bundle_layout(params, manifest.get("toolVersion"))
    reads = [PARAMETERS, *DATA_FILES, *(name for name, _ in _inputs_inside(params))]
    wrong = []
    for name in dict.fromkeys(reads):
        listed = files.get(name)
        if isinstance(listed, dict):
            found = out.digests.get(name)
            if found is None or found[0] != listed.get("sha256"):
                wrong.append(name)
        elif os.path.lexists(bundle / name) or name in layout:
            wrong.append(name)
    return wrong


def _rerun(
    bundle: Path,
    out: Verification,
    manifest: dict[str, Any],
    differ: Any = None,
    params: dict[str, Any] | None = None,
) -> None:
    skipped = _not_to_rerun(bundle, manifest, params, out)
    if skipped:
        out.notes.append(
            f"re-run skipped: it would read {', '.join(_name(n) for n in skipped)}, which the "
            "file check did not find intact (named below): restore the bundle's own files, "
            "or export it again, and verify again"
        )
        # the run parameters' values all the same, as `--no-rerun` checks them (read already)
        out.problems.extend(parameter_problems(bundle, params) if params is not None else ())
        return
    note = _release_note(manifest.get("toolVersion"))
    try:
        scratch, hold = make_scratch("auditor-verify-")
    except OSError as exc:
        raise AuditorError(f"cannot make a scratch folder: {exc.strerror or exc}{_ROOM}") from None
    derived = _Derived()

    def inspect(store: Store, options: AuditOptions) -> None:
        """Count the bundle's rows and write its CSV files again, as `export` writes them."""
        latest = store.latest_revision()
        derived.revisions, derived.reports = store.count_revisions(), store.count_reports()
        derived.latest = latest.revision if latest else None
        derived.issues = len(store.integrity_issues())
        try:
            write_tables(scratch, store, options.list_table)
        except AuditorError as exc:  # TMPDIR full: not the bundle's problem
            raise StoreWriteError(str(exc)) from None

    try:
        try:
            data = evaluate_bundle(bundle, inspect)
        except StoreWriteError as exc:  # the scratch folder's disk, not the bundle, is to blame
            raise AuditorError(f"re-run: {exc}{_ROOM}") from None
        except AuditorError as exc:
            _cannot_evaluate(exc, out)
            return
        except OSError as exc:  # a file or folder of the bundle that cannot be read (mode 000)
            name = _bundle_name(bundle, exc.filename)
            if name is None:
                raise  # not the bundle's: TMPDIR's
            out.problems.append(
                f"re-run: the bundle cannot be evaluated: {_name(name)}: {exc.strerror or exc}"
            )
            return
        except (ArithmeticError, ValueError, TypeError, KeyError, IndexError) as exc:
            # a value of a tampered bundle that no check of its reading caught: still one
            # problem among the others (the hashes, the signature), never the command's only line
            out.problems.append(
                "re-run: the bundle cannot be evaluated: unexpected "
                f"{type(exc).__name__}: {shown_value(str(exc), bundle_tokens())}"
            )
            return
        derived.check(manifest, len(data.findings), out, note)
        _check_not_reproduced(differ, data, out)
        for name in TABLES:
            source = "reports.jsonl" if name == "reports.csv" else "revisions.jsonl"
            what = f"re-run: {name} differs from what {source} gives"
            if _matches(
                bundle, name, scratch / name, out, what, _first_row_difference(source), note
            ):
                out.reproduced.append(name)
            (scratch / name).unlink(missing_ok=True)
        for output in BUNDLE_OUTPUTS:
            _compare(bundle, output, data, scratch, out, note)
    except ReportError as exc:  # a full disk: the bundle is not to blame (exit 2, not a problem)
        raise AuditorError(f"{exc}{_ROOM}") from None
    finally:
        drop_scratch(scratch, hold)


def _bundle_name(bundle: Path, filename: Any) -> str | None:
    """`filename` (an OSError's) as a path in the bundle; None when it is not in it."""
    try:
        return Path(os.fsdecode(filename)).relative_to(bundle).as_posix()
    except (TypeError, ValueError):
        return None


_ROOM = (
    " (the re-run loads the bundle into a scratch state file in TMPDIR, removed once it is "
    "evaluated (its CSV files written beside it), then writes each report there, one at a "
    "time, to compare it: set TMPDIR to a folder with room for the larger of the two, about "
    "1.5 times the bundle's revisions.jsonl and reports.jsonl plus 10 MB and its CSV files, "
    "or its largest report, or check the hashes and the "
    "signature alone "
    "with --no-rerun)"
)


def _compare(
    bundle: Path, output: str, data: ReportData, scratch: Path, out: Verification, note: str
) -> None:
    """Write report `output` again into `scratch` with the writers `export` used (a stream:
    memory does not grow with the report), and compare it with the bundle's (`_matches`);
    the file written is removed again."""
    name = OUTPUTS[output]
    shown = f"{REPORTS_DIR}/{name}"
    if not _own_file(bundle, shown):
        return  # already named as missing or altered
    fresh = write_reports(data, scratch, (output,))[name]
    try:
        what = f"re-run: {shown} differs from the re-run's"
        if _matches(bundle, shown, fresh, out, what, _first_line, note):
            out.reproduced.append(shown)
    finally:
        fresh.unlink(missing_ok=True)


def _first_line(fresh: Path, kept: Path, max_bytes: int) -> str | None:
    line = _first_difference(fresh, kept, max_bytes)
    return None if line is None else f"first at line {line}"


def _matches(
    bundle: Path,
    shown: str,
    fresh: Path,
    out: Verification,
    what: str,
    first: Callable[[Path, Path, int], str | None],
    note: str,
) -> bool:
    """Whether the bundle's file `shown` holds the bytes of `fresh`, which the re-run wrote:
    compared by sha256, then, when they differ, by `first`, which says where (the problem,
    `what` and where, is named). A file far larger than the re-run's is named with both sizes,
    not read."""
    path = bundle / shown
    if not _own_file(bundle, shown):
        return False  # already named as missing or altered
    # hashed by the file check, or now when the manifest does not list it (named as extra)
    found = _digest(path, shown, out)
    if found is None:
        return False
    kept_digest, kept_size = found
    with fresh.open("rb") as fh:
        digest = hashlib.file_digest(fh, "sha256").hexdigest()
    if digest == kept_digest:
        return True
    size = fresh.stat().st_size
    if kept_size > 2 * size + (1 << 20):
        out.problems.append(
            f"{what} (it is {kept_size:,} bytes, the re-run's {size:,} bytes){note}"
        )
        return False
    try:
        where = first(fresh, path, 2 * size + (1 << 20))
    except UnreadableFile as exc:
        out.problems.append(f"{what} ({exc.reason})")
        return False
    if where is None:  # changed on disk between the hash check and now
        out.problems.append(f"{what}: the file changed while it was being verified")
    else:
        out.problems.append(f"{what} ({where}){note}")
    return False


def verify_bundle(
    bundle: Path, *, key: Path | None = None, rerun: bool = True, tokens: Iterable[str] = ()
) -> Verification:
    """Check every hash, the signature (with `key`) and, with `rerun`, re-run the evaluation
    (without it, the manifest's counts are checked against the files, `_check_counts`, and
    every run parameter's value as the re-run reads it, `parameter_problems`: one of another
    type passed unread, review R59 #2). A value of the bundle a problem quotes shows each of
    `tokens` (the command's own) as `[token]`, before it is shortened (`reading_as`)."""
    with reading_as(tokens):
        return _verified(bundle, key, rerun)


def _verified(bundle: Path, key: Path | None, rerun: bool) -> Verification:
    raw, manifest = _manifest(bundle)
    out = Verification()
    _check_files(bundle, manifest["files"], out)
    params = _check_facts(bundle, manifest, out)
    _check_layout(bundle, manifest, params, out)
    differ = _not_reproduced(manifest, out, rerun)
    _check_signature(bundle, raw, key, out)
    if rerun:
        _rerun(bundle, out, manifest, differ, params)
    else:  # the counts the re-run would derive, as the bundle's files state them
        _check_counts(bundle, manifest, out)
        # and the run parameters' values, as the re-run reads them (each named at its path)
        out.problems.extend(parameter_problems(bundle, params) if params is not None else ())
    return out
