"""Fetch: the only package that touches the network.

Takes the service addresses and a token, gives validated pages of each listing of the service
(`PlatformClient.pages(HISTORY)`, `PlatformClient.pages(READINESS)`: one paging loop, `paging`)
and decodes their items into redacted `Revision` / `ReadinessReport` models (`decode`, the one
place that knows the API's field names). Retries and response guards live in `retry`, JSON
Schema validation in `schema`, the reading of a body whose text is not all UTF-8 in `text`.
"""

from __future__ import annotations

import sys

# httpx's `__init__` imports its own command line (`httpx._main`: click, rich, pygments, about
# 50 ms) when they are installed, and falls back to a stub `main` when that import fails; a
# `None` in `sys.modules` makes it fail. Nothing in auditor runs httpx's command line, and this
# package is the one that imports httpx, so every path to it (a sync, `policy test` reading
# usage rows as the sync does) starts without it.
if "httpx" not in sys.modules and "httpx._main" not in sys.modules:
    sys.modules["httpx._main"] = None  # type: ignore[assignment]

from auditor.fetch.client import PlatformClient
from auditor.fetch.deadline import Network
from auditor.fetch.decode import (
    check_report,
    encode_report,
    encode_revision,
    encode_revision_parts,
    to_report,
    to_revision,
)
from auditor.fetch.paging import (
    HISTORY,
    HISTORY_PATH,
    READINESS,
    REPORTS_PATH,
    Item,
    Listing,
    Page,
)
from auditor.fetch.tolerant import DataQuality

__all__ = [
    "HISTORY",
    "HISTORY_PATH",
    "READINESS",
    "REPORTS_PATH",
    "DataQuality",
    "Item",
    "Listing",
    "Network",
    "Page",
    "PlatformClient",
    "check_report",
    "encode_report",
    "encode_revision",
    "encode_revision_parts",
    "to_report",
    "to_revision",
]
