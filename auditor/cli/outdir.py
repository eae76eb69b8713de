"""What a run leaves in its report folder: no findings.sarif that claims less than the audit of
its scope would (code scanning closes every alert a new analysis of its category leaves out).

An interrupted run, or one that evaluated no settings revision (a first sync that failed, an
empty state file), writes its other reports, marked incomplete, but no SARIF, and removes the
one an earlier run left in the folder.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from auditor.common.files import UnreadableFile, read_input
from auditor.common.jsonutil import loads
from auditor.errors import ReportError

if TYPE_CHECKING:
    from auditor.cli import Context
    from auditor.report.model import ReportData

SARIF = "findings.sarif"

#: Why an interrupted run writes no SARIF (a line of the reports' incomplete banner).
INTERRUPTED_SARIF = (
    "findings.sarif not written: the evaluation did not finish, and a SARIF without its "
    "results would close the open code-scanning alerts"
)
#: Why a run that evaluated no settings revision writes no SARIF.
NO_SCOPE_SARIF = (
    "findings.sarif not written: no settings revision was evaluated, and a SARIF without "
    "their results would close the open code-scanning alerts"
)


def sarif_withheld(data: ReportData) -> str | None:
    """Why this run's data must not become a SARIF file (None: it may)."""
    if data.complete or data.mode != "run":
        return None
    if data.scope is None or data.scope.period_end is None:  # no settings revision evaluated
        return NO_SCOPE_SARIF
    return None


def without_sarif(
    data: ReportData, outputs: tuple[str, ...], out_dir: Path, why: str
) -> tuple[ReportData, tuple[str, ...], str]:
    """The data (the reason added to its incomplete banner) and outputs without the SARIF,
    and the line to say on stderr once the other reports are written; an earlier run's
    findings.sarif in `out_dir` is removed (only one auditor wrote: not a folder, not another
    tool's file, never what a symlink points to)."""
    path = out_dir / SARIF
    existed = _written_by_auditor(path, _SIGNATURES[SARIF])
    if existed:
        try:
            path.unlink(missing_ok=True)
        except OSError as exc:
            raise ReportError(f"cannot remove the earlier {path}: {exc.strerror or exc}") from None
    removed = f" (removed the earlier {path})" if existed else ""
    line = f"auditor: {why}{removed}" if "sarif" in outputs or existed else ""
    data = replace(data, not_evaluated=(*data.not_evaluated, why))
    return data, tuple(o for o in outputs if o != "sarif"), line


def say(line: str, ctx: Context) -> None:
    """`line` on stderr, if any."""
    if line:
        print(line, file=ctx.stderr)


#: The files a run or review writes into its report folder (report.pdf too, which is left:
#: its start does not tell auditor's from another), each with what its first few KB hold
#: when auditor wrote it; and `run --orgs`'s summary.
_SIGNATURES = {
    "report.html": re.compile(rb"\A<!DOCTYPE html>\n.*?<title>Compliance report ", re.S),
    "report.md": re.compile(
        rb"\A(?:## Compliance run [^\n]*\n\nauditor "
        rb"|<!-- auditor-review -->\n## Pre-change review: )"
    ),
    "findings.json": re.compile(
        rb'\A\{\s*"schema_version":\s*"[^"]*",\s*"tool":\s*\{\s*"name":\s*"auditor"'
    ),
    "findings.sarif": re.compile(
        rb'\A\{\s*"\$schema":\s*"[^"]*sarif[^"]*",\s*"version":\s*"2\.1\.0",\s*"runs":\s*\[\s*\{'
        rb'\s*"tool":\s*\{\s*"driver":\s*\{\s*"name":\s*"auditor"'
    ),
    "junit.xml": re.compile(rb'\A<\?xml [^>]*\?>\n<testsuites name="auditor '),
    "findings.oscal.json": re.compile(
        rb'\A\{\s*"assessment-results":.*?"name":\s*"tool",\s*"ns":\s*"[^"]*/ns/oscal",'
        rb'\s*"value":\s*"auditor ',
        re.S,
    ),
}
ORGS_SUMMARY = "summary.json"
_ORGS_SUMMARY_SIGNATURE = re.compile(
    rb'\A\{\s*"exit_code":\s*-?\d+,\s*"organizations":\s*\[.*"reason":', re.S
)
_HEAD = 4096  # bytes read to recognise a file


def clear_old_reports(out_dir: Path, *, orgs: bool = False) -> None:
    """Remove the reports an earlier run left in `out_dir` (`--out`), once the command's own
    checks have passed, so a folder never holds yesterday's reports beside (or instead of)
    today's. Only files auditor wrote go, recognised by their content (a pytest junit.xml or a
    hand-written report.md of the same name stays; and with `orgs`, the summary.json of
    `run --orgs`); never a folder, never what a symlink points to (the link goes when what it
    points to is auditor's report). An evidence bundle's folder is refused: removing its files
    would break its manifest."""
    try:
        if not out_dir.is_dir():
            return
    except OSError:  # e.g. a name too long: said where the folder is made (prepare_out_dir)
        return
    if _in_bundle(out_dir):
        raise ReportError(
            f"cannot use {out_dir} as the report folder: it belongs to an evidence bundle "
            "(manifest.json); choose another --out"
        )
    signatures = dict(_SIGNATURES)
    if orgs:
        signatures[ORGS_SUMMARY] = _ORGS_SUMMARY_SIGNATURE
    for name, signature in signatures.items():
        path = out_dir / name
        if not _written_by_auditor(path, signature):
            continue
        try:
            path.unlink(missing_ok=True)  # a symlink: the link itself, never its target
        except OSError as exc:
            reason = exc.strerror or str(exc)
            raise ReportError(f"cannot remove the earlier report {path}: {reason}") from None


def _written_by_auditor(path: Path, signature: re.Pattern[bytes]) -> bool:
    """`path` is a file (or a link to one) whose first KB are what auditor writes there."""
    try:
        if not path.is_file():  # missing, a folder, a dangling link, a device …
            return False
        with path.open("rb") as f:
            head = f.read(_HEAD)
    except OSError:
        return False
    return signature.match(head) is not None


def _in_bundle(out_dir: Path) -> bool:
    """`out_dir` is an evidence bundle (`auditor export`) or a folder in one (its `reports/`),
    once symlinks are resolved (a link to a bundle's folder is that folder)."""
    from auditor.workflows.export import MANIFEST, MANIFEST_MAX_BYTES

    try:
        real = out_dir.resolve()
    except (OSError, RuntimeError):  # a symlink loop: the folder cannot be used anyway
        real = out_dir.absolute()
    for manifest in (real / MANIFEST, real.parent / MANIFEST):
        try:  # a regular file under the cap (a FIFO named manifest.json waited for a writer)
            value = loads(read_input(manifest, max_bytes=MANIFEST_MAX_BYTES))
        except (UnreadableFile, ValueError):
            continue
        if isinstance(value, dict) and value.get("tool") == "auditor" and "files" in value:
            return True
    return False
