"""What `run`, `review` and `demo` share: audit options, run ids, the summary, the exit code.

Takes parsed arguments and outcomes, gives options and exit codes. The reason for the exit code
is always the last line on stderr (design §9).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from auditor.common.escape import terminal_text
from auditor.errors import EXIT_ERROR, EXIT_FINDINGS, EXIT_OK
from auditor.findings.finding import Finding
from auditor.report import DEFAULT_OUTPUTS, OUTPUTS
from auditor.report.model import (
    ReportData,
    compared,
    incomplete_headline,
    introduced_text,
    new_text,
    shared_order,
    status_counts,
    upgrade_note,
)

if TYPE_CHECKING:
    from auditor.cli import Context


_SHOWN_ERRORS = 5  # the rest are in report.md / findings.json


def with_report_options(
    data: ReportData,
    args: argparse.Namespace,
    org: str,
    tokens: Iterable[str] = (),
    base: str = "",
    root: str = "",
) -> ReportData:
    """The run's data with what the command line says about the reports (org, SARIF waived,
    SARIF category: `--sarif-category`, else the default, which an `--at` or
    `--all-revisions` run, and one that leaves rules out (`--no-usage`, `--no-readiness`),
    marks so that its upload never replaces the nightly's alerts).
    `base`: `sarif_base` of the working folder; `root`: `sarif_root`.
    A category that holds one of `tokens` (the command's own) or a part that looks like a
    secret is written with it as `not-shown` (`_shown_category`).
    With `run --orgs`, `--sarif-category` is followed by `/<org>`, as the default names the
    organization: one category for all would let each organization's upload close the
    others' alerts; and the SARIF fingerprints include the organization (`sarif_org`), so
    code scanning never merges two organizations' results into one alert."""
    from auditor.report.sarif import category_word, default_category

    data = replace(data, org=org, sarif_include_waived=args.sarif_include_waived)
    category = getattr(args, "sarif_category", None)
    if category:
        category = _shown_category(category, tokens)
    view = [
        word
        for flag, word in (("at", "as-of"), ("all_revisions", "all-revisions"))
        if getattr(args, flag, None)
    ]
    view += _left_out_words(data)
    orgs = getattr(args, "orgs", None) is not None
    if not category and view:
        category = "-".join([default_category(data), *view])
    elif category and orgs:
        category = f"{category}/{category_word(org)}"
    return replace(
        data,
        sarif_category=category or "",
        sarif_org=org if orgs else "",
        sarif_base=base,
        sarif_root=root,
    )


def sarif_base(env: Mapping[str, str], cwd: str) -> str:
    """The working folder's path from `GITHUB_WORKSPACE` (the checkout's root, which
    upload-sarif resolves URIs against), `ci/`, when it lies there below the root; "" when
    it is the root, lies elsewhere, or the variable is not set. findings.sarif names a policy
    file given relative to the working folder (`--policy pol/` run in `ci/`) from the root
    with it (`ci/pol/…`), as `review` names its proposed file."""
    from auditor.common.files import path_under

    shown = path_under(os.path.realpath(cwd), env.get("GITHUB_WORKSPACE", "").strip())
    return "" if shown is None else f"{shown}/"


def sarif_root(env: Mapping[str, str]) -> str:
    """`GITHUB_WORKSPACE` resolved (symlinks followed, as `path_under` takes a root), "" when
    it is not set: findings.sarif names a policy file shown by an absolute path (`--policy
    ../pol/`, given from outside the working folder) from there when it lies below it."""
    root = env.get("GITHUB_WORKSPACE", "").strip()
    return os.path.realpath(root) if root else ""


def _left_out_words(data: ReportData) -> list[str]:
    """`no-usage`, `no-readiness`: the rules a run left out on purpose (`--no-usage`,
    `--no-readiness`), when it left some out. A run without them uploaded under the nightly's
    category would make code scanning close every open alert of those rules as fixed (they
    were not judged), and reopen them as new once the flag is dropped."""
    if data.mode != "run":
        return []  # a review always leaves them out: its own category says so
    from auditor.report.model import rules_left_out
    from auditor.workflows.run import NO_READINESS_REASON, NO_USAGE_REASON

    reasons = {why for _, n, why in rules_left_out(data) if n}
    return [
        word
        for reason, word in ((NO_USAGE_REASON, "no-usage"), (NO_READINESS_REASON, "no-readiness"))
        if reason in reasons
    ]


#: What stands for a secret in a SARIF category (`--sarif-category "$AUDITOR_TOKEN"`): words
#: a category may hold (letters, digits, `._:/-`), as code scanning takes it.
CATEGORY_NOT_SHOWN = "not-shown"


def _shown_category(category: str, tokens: Iterable[str]) -> str:
    """`--sarif-category` as findings.sarif writes it: the command's token, or any other part
    that looks like a secret, as `not-shown` (`auditor.redact.shown.shown_value`)."""
    from auditor.redact.shown import NOT_SHOWN, TOKEN_SHOWN, shown_value

    shown = shown_value(category, tokens)
    if shown == category:
        return category
    return shown.replace(NOT_SHOWN, CATEGORY_NOT_SHOWN).replace(TOKEN_SHOWN, CATEGORY_NOT_SHOWN)


def main_report(out_dir: Path, outputs: Sequence[str]) -> Path:
    """The report a person opens first: the HTML when written, else the first written."""
    return out_dir / OUTPUTS["html" if "html" in outputs else outputs[0]]


def make_run_id(now: datetime) -> str:
    """A run id that sorts by time: `20261101T120000Z`."""
    return now.strftime("%Y%m%dT%H%M%SZ")


def print_summary(
    data: ReportData, out_dir: Path, ctx: Context, outputs: Sequence[str] = DEFAULT_OUTPUTS
) -> None:
    """A few lines on stdout: counts by status, new/resolved, where the reports are."""
    with shared_order(data):  # the findings tallied once for both counts
        counts = status_counts(data.findings)
        new = new_text(data.findings, " new")
    shown = ", ".join(f"{n} {s}" for s, n in sorted(counts.items()) if n) or "no results"
    print(f"auditor {data.mode} {data.run_id}: {shown}", file=ctx.stdout)
    if data.review is not None:
        print(
            f"the change would introduce {introduced_text(data)} and fix "
            f"{len(data.review.fixed)} finding(s); {data.review.unchanged} unchanged"
            + (
                f"; {len(data.review.no_longer_applies)} would no longer apply"
                if data.review.no_longer_applies
                else ""
            ),
            file=ctx.stdout,
        )
    elif compared(data):  # (also when neither run had a finding to mark: "0 new, 0 resolved")
        note = upgrade_note(data)
        # older findings not judged again are not resolved: said apart (README: lifecycle)
        aside = "".join(
            f", {len(records)} {words}"
            for records, words in (
                (data.left_window, "left the usage window"),
                (data.not_reevaluated, "not evaluated again"),
            )
            if records
        )
        print(
            f"since the previous run: {new}, {len(data.resolved)} resolved{aside}"
            + (f" ({note})" if note else ""),
            file=ctx.stdout,
        )
    if not data.complete:
        print(f"INCOMPLETE: {incomplete_headline(data)}", file=ctx.stdout)
    if data.data_quality:
        print(
            f"DATA QUALITY: {len(data.data_quality)} warning(s) in the API data "
            "(items kept, odd values read as absent; listed in the reports)",
            file=ctx.stdout,
        )
    if outputs:  # none when the only one asked for was a withheld SARIF
        from auditor.redact.shown import printed_path

        shown = printed_path(main_report(out_dir, outputs), ctx.secrets())
        print(f"reports: {shown}", file=ctx.stdout)


def decide_exit(
    errors: Sequence[str],
    failing: Sequence[Finding],
    fail_on: str,
    soft_fail: bool,
    ctx: Context,
    *,
    what: str = "findings",
    notes: Sequence[str] = (),
) -> int:
    """Exit code by design §9, with its reason as the last line on stderr. `errors`: the items
    not evaluated (counted as every report counts them); `notes`: what happened to the
    outputs that makes the run incomplete all the same (its reports written again, marked
    incomplete, after a write failed: `ReportData.output_notes`), said, never counted."""
    for line in errors[:_SHOWN_ERRORS]:
        print(f"auditor: not evaluated: {terminal_text(line)}", file=ctx.stderr)
    for line in notes:
        print(f"auditor: {terminal_text(line)}", file=ctx.stderr)
    if errors or notes:
        hidden = len(errors) - _SHOWN_ERRORS
        more = f" ({hidden} more listed in the report)" if hidden > 0 else ""
        why = f"{len(errors)} problem(s){more}" if errors else notes[0].split(":", 1)[0]
        print(f"auditor: exit 2: the audit is incomplete: {why}", file=ctx.stderr)
        return EXIT_ERROR
    if failing:
        reason = f"{len(failing)} {what} at or above severity {fail_on}"
        if soft_fail:
            print(f"auditor: exit 0: {reason} (--soft-fail)", file=ctx.stderr)
            return EXIT_OK
        print(f"auditor: exit 1: {reason}", file=ctx.stderr)
        return EXIT_FINDINGS
    if fail_on == "none":  # the gate is off: "no findings at or above severity none" misleads
        print(f"auditor: exit 0: --fail-on none: no {what} fail the run", file=ctx.stderr)
        return EXIT_OK
    print(f"auditor: exit 0: no {what} at or above severity {fail_on}", file=ctx.stderr)
    return EXIT_OK
