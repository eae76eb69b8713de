"""What a run leaves in its report folder: no findings.sarif that claims less than the audit of
its scope would (code scanning closes every alert a new analysis of its category leaves out).

An interrupted run, or one that evaluated no settings revision (a first sync that failed, an
empty state file), writes its other reports, marked incomplete, but no SARIF, and removes the
one an earlier run left in the folder.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

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
    data: ReportData, outputs: tuple[str, ...], out_dir: Path, why: str, ctx: Context
) -> tuple[ReportData, tuple[str, ...]]:
    """The data (the reason added to its incomplete banner) and outputs without the SARIF;
    an earlier run's findings.sarif in `out_dir` is removed. Said on stderr."""
    path = out_dir / SARIF
    try:
        existed = path.is_file() or path.is_symlink()
        path.unlink(missing_ok=True)
    except OSError as exc:
        raise ReportError(f"cannot remove the earlier {path}: {exc.strerror or exc}") from None
    removed = f" (removed the earlier {path})" if existed else ""
    if "sarif" in outputs or existed:
        print(f"auditor: {why}{removed}", file=ctx.stderr)
    data = replace(data, not_evaluated=(*data.not_evaluated, why))
    return data, tuple(o for o in outputs if o != "sarif")
