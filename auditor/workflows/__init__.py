"""Workflows: the three uses, each orchestrating the stages from one place.

Takes options the cli built from flags, environment and clock (never reads them itself), gives
the outcome a command prints and exits on: `sync` (fetch → decode → store, all or nothing),
`run` (store → evaluate → findings → `ReportData`, recorded for the next run), `review` (a
proposed settings file against the live settings) and `export` (the evidence bundle).

The names below are imported on first use (PEP 562), so `auditor sync` does not load the
evaluation and report stacks it never runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from auditor.common import lazy

if TYPE_CHECKING:
    from auditor.workflows.export import export_bundle
    from auditor.workflows.review import (
        ReviewRequest,
        SettingsFile,
        load_settings_file,
        run_review,
    )
    from auditor.workflows.run import (
        AuditOptions,
        AuditOutcome,
        LoadedPolicy,
        StoredHistory,
        load_inputs,
        run_audit,
    )
    from auditor.workflows.sync import SyncOptions, SyncSummary, format_summary, sync_service

_WHERE = {
    "export_bundle": "export",
    "ReviewRequest": "review",
    "SettingsFile": "review",
    "load_settings_file": "review",
    "run_review": "review",
    "AuditOptions": "run",
    "AuditOutcome": "run",
    "LoadedPolicy": "run",
    "StoredHistory": "run",
    "load_inputs": "run",
    "run_audit": "run",
    "SyncOptions": "sync",
    "SyncSummary": "sync",
    "format_summary": "sync",
    "sync_service": "sync",
}

__all__ = [
    "AuditOptions",
    "AuditOutcome",
    "LoadedPolicy",
    "ReviewRequest",
    "SettingsFile",
    "StoredHistory",
    "SyncOptions",
    "SyncSummary",
    "export_bundle",
    "format_summary",
    "load_inputs",
    "load_settings_file",
    "run_audit",
    "run_review",
    "sync_service",
]


def __getattr__(name: str) -> Any:
    return lazy.load(__name__, _WHERE, name)


def __dir__() -> list[str]:
    return lazy.listed(globals(), __all__)
