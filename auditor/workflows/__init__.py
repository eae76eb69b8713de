"""Workflows: the three uses, each orchestrating the stages from one place.

Takes options the cli built from flags, environment and clock (never reads them itself), gives
the outcome a command prints and exits on: `sync` (fetch → decode → store, all or nothing),
`run` (store → evaluate → findings → `ReportData`, recorded for the next run), `review` (a
proposed settings file against the live settings) and `export` (the evidence bundle).
"""

from __future__ import annotations

from auditor.workflows.export import export_bundle
from auditor.workflows.review import ReviewRequest, SettingsFile, load_settings_file, run_review
from auditor.workflows.run import (
    AuditOptions,
    AuditOutcome,
    LoadedPolicy,
    StoredHistory,
    load_inputs,
    run_audit,
)
from auditor.workflows.sync import SyncOptions, SyncSummary, format_summary, sync_service

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
