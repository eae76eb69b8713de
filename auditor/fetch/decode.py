"""Decode: validated API items become redacted models, the only place that knows the wire names.

Takes one schema-valid `changes[]` or `reports[]` item and the store's redactor, gives a
`Revision` / `ReadinessReport` whose secret-bearing values are already keyed-fingerprint
markers, plus the canonical JSON that was hashed (stored as is, never serialized twice).
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime

from auditor.common.jsonutil import canonical
from auditor.errors import DataError
from auditor.fetch.paging import Item
from auditor.models import JSON, ReadinessReport, Revision, User
from auditor.redact import Redactor


def _parse_updated_at(value: JSON, where: str) -> datetime:
    try:
        when = datetime.fromisoformat(str(value))
        return when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)
    except (ValueError, OverflowError):
        raise DataError(f"{where}.updatedAt: not an ISO-8601 date-time") from None


def _revision_number(value: JSON, where: str) -> int:
    if not (isinstance(value, int | float) and 0 <= value < 2**63 and float(value).is_integer()):
        raise DataError(f"{where}.revision: expected a whole number from 0 to 2^63-1")
    return int(value)


def _sha256(body: bytes) -> str:
    return hashlib.sha256(body).hexdigest()


def encode_revision(raw: Item, redactor: Redactor, org: str, where: str) -> tuple[Revision, bytes]:
    """`to_revision` plus the canonical settings JSON it hashed (stored as is, not redone)."""
    settings = redactor.redact_json(raw["settings"])
    user = redactor.redact_json(raw["user"])  # a token pasted into a name stays out too
    body = canonical(settings)
    revision = Revision(
        revision=_revision_number(raw["revision"], where),
        updated_at=_parse_updated_at(raw["updatedAt"], where),
        user=User(
            id=str(user.get("id") or ""),
            email=str(user.get("email") or ""),
            name=str(user.get("name") or ""),
        ),
        settings=settings,
        content_hash=_sha256(body),
        org=org,
    )
    return revision, body


def to_revision(raw: Item, redactor: Redactor, org: str, where: str) -> Revision:
    """Build a redacted `Revision` from one API `changes[]` item (already schema-valid)."""
    return encode_revision(raw, redactor, org, where)[0]


def encode_report(raw: Item, redactor: Redactor, where: str) -> tuple[ReadinessReport, bytes]:
    """`to_report` plus the canonical JSON it hashed (stored as is, not redone)."""
    data = redactor.redact_json(raw)
    try:
        created = datetime.fromtimestamp(float(raw["createdAt"]) / 1000, UTC)
    except (OverflowError, ValueError, OSError):
        raise DataError(f"{where}.createdAt: not a Unix time in milliseconds") from None
    body = canonical(data)
    report = ReadinessReport(  # identity fields from the redacted copy: a URL can carry a token
        report_id=str(data["reportId"]),
        repo_url=str(data["repoUrl"]),
        created_at=created,
        data=data,
        content_hash=_sha256(body),
    )
    return report, body


def to_report(raw: Item, redactor: Redactor, where: str) -> ReadinessReport:
    """Build a redacted `ReadinessReport` from one API `reports[]` item (already schema-valid)."""
    return encode_report(raw, redactor, where)[0]
