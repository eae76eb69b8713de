"""Store: the local state file, the only package that runs SQL.

Takes models (`Revision`, `ReadinessReport` decoded by `auditor.fetch`, and run findings), gives
them back streamed and in order, with sync and run records and integrity issues. It knows
nothing of the API's wire format. `database` holds `Store`; `schema` the tables and row
conversions; `file` the lock, the fingerprint key and migrations; `runs` the run and finding
records; `postgres` the PostgreSQL backend (`--state postgresql://…`, one schema per
organization) and `dialect` the rewriting of the one SQL text for it.
"""

from __future__ import annotations

from auditor.store.analytics import AnalyticsAccess
from auditor.store.database import Ingested, Store
from auditor.store.schema import IntegrityIssue, RunRecord, SyncRecord

__all__ = ["AnalyticsAccess", "Ingested", "IntegrityIssue", "RunRecord", "Store", "SyncRecord"]
