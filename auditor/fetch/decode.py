"""Decode: validated API items become redacted models, the only place that knows the wire names.

Takes one schema-valid `changes[]` or `reports[]` item and the store's redactor, gives a
`Revision` / `ReadinessReport` whose secret-bearing values are already keyed-fingerprint
markers, plus the canonical JSON that was hashed (stored as is, never serialized twice).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

from auditor.common import paths
from auditor.common.dates import has_control, parse_date_time, unix_time
from auditor.errors import DataError
from auditor.fetch.paging import Item
from auditor.fetch.tolerant import HISTORY_ITEM, READINESS_ITEM, Warn, tolerate
from auditor.models import JSON, DataWarning, ReadinessReport, Revision, User
from auditor.redact import Redactor
from auditor.redact.plain import AUTHOR_SHOWN


def _iso(value: str) -> datetime:
    """An API date-time (RFC 3339 / ISO 8601: `parse_date_time`), in UTC."""
    when = parse_date_time(value)
    return when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)


def _other_time(value: JSON) -> tuple[datetime, str]:
    """A time in an accepted format other than ISO 8601, and the format's name (or ValueError)."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        when, name = unix_time(value)
        return when, f"a Unix time in {name}"
    if isinstance(value, str) and not has_control(value):  # (it reads `…+0000\x00 junk` too)
        return parsedate_to_datetime(value).astimezone(UTC), "an RFC 2822 date"
    raise ValueError(value)


def _control(value: JSON) -> str:
    """` (it holds a control character)` for a text time refused for one, else nothing."""
    return (
        " (it holds a control character)" if isinstance(value, str) and has_control(value) else ""
    )


_BAD_TIME = (ValueError, OverflowError, OSError, TypeError, IndexError)


def _parse_updated_at(
    value: JSON, where: str, item: str = "", warn: Warn | None = None
) -> datetime:
    """ISO 8601 as documented; a Unix time or an RFC 2822 date is read too, with a warning."""
    if isinstance(value, str):
        try:
            return _iso(value)
        except _BAD_TIME:
            pass
    try:
        when, name = _other_time(value)
    except _BAD_TIME:
        raise DataError(f"{where}.updatedAt: not an ISO-8601 date-time{_control(value)}") from None
    if warn is not None:
        problem = f"{name}, not ISO 8601; read as {when.isoformat()}"
        warn(DataWarning(f"{where}.updatedAt", problem, item))
    return when


def _parse_created_at(value: JSON, where: str, item: str, warn: Warn | None) -> datetime:
    """Unix milliseconds as documented; an ISO 8601 string is read too, with a warning."""
    try:
        if not isinstance(value, str):
            return datetime.fromtimestamp(float(value) / 1000, UTC)
        when = _iso(value)
    except _BAD_TIME:
        raise DataError(
            f"{where}.createdAt: not a Unix time in milliseconds{_control(value)}"
        ) from None
    if warn is not None:
        problem = f"an ISO 8601 date-time, not Unix milliseconds; read as {when.isoformat()}"
        warn(DataWarning(f"{where}.createdAt", problem, item))
    return when


def _long_author(user: JSON, where: str, item: str, warn: Warn) -> None:
    """A warning for an author's id, email or name longer than any output shows (an email
    address is at most 254 characters): a service defect (a 5 MB name grew the state file
    tenfold), named with its size. It is stored whole, as the service sent it: the state file
    is the record `export` and the evidence bundle reproduce, and `history --format json`
    prints the stored revision as it is; the reports, the sync's summary and the text
    `history` cut it (`shown_author`)."""
    if not isinstance(user, dict):
        return
    for key in ("id", "email", "name"):
        value = user.get(key)
        if isinstance(value, str) and len(value) > AUTHOR_SHOWN:
            problem = (
                f"{len(value)} characters, longer than an author's can be; stored whole; the "
                f"reports, the sync's summary and `history` show its first {AUTHOR_SHOWN}, "
                "`history --format json` and `export` all of it"
            )
            warn(DataWarning(f"{where}.user.{key}", problem, item))


def is_revision_number(value: Any) -> bool:
    """Whether `value` is a revision number as the API's data is read: a whole number from 0
    to 2^63-1 (`5.0` too, as a JSON writer may put it), never a boolean."""
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and 0 <= value < 2**63
        and float(value).is_integer()
    )


def _revision_number(value: JSON, where: str) -> int:
    if not is_revision_number(value):
        raise DataError(f"{where}.revision: expected a whole number from 0 to 2^63-1")
    return int(value)


def _sha256(body: bytes) -> str:
    return hashlib.sha256(body).hexdigest()


def encode_revision(
    raw: Item, redactor: Redactor, org: str, where: str, warn: Warn | None = None
) -> tuple[Revision, bytes]:
    """`to_revision` plus the canonical settings JSON it hashed (stored as is, not redone).

    An odd value outside the settings (a null author, an unknown field, a time in another
    accepted format) keeps the item: it is reported to `warn` and read as absent."""
    revision, body, _parts = encode_revision_parts(raw, redactor, org, where, warn)
    return revision, body


def encode_revision_parts(
    raw: Item, redactor: Redactor, org: str, where: str, warn: Warn | None = None
) -> tuple[Revision, bytes, Sequence[bytes] | None]:
    """`encode_revision` plus the parts the settings JSON was put together from, when it was
    (`Redactor.redact_canonical_parts`): the scrub index splits only the parts it has not met
    (`auditor.store.scrubindex.Splitter.joined`)."""
    number = _revision_number(raw["revision"], where)
    item = f"revision {number}"
    raw = tolerate(raw, HISTORY_ITEM, where, item, warn)
    settings, body, parts = redactor.redact_canonical_parts(raw["settings"], stream="settings")
    user = redactor.redact_json(
        raw.get("user") or {}, stream="user"
    )  # a token pasted into a name stays out too
    if warn is not None:
        _long_author(user, where, item, warn)
    revision = Revision(
        revision=number,
        updated_at=_parse_updated_at(raw["updatedAt"], where, item, warn),
        user=User(
            id=str(user.get("id") or ""),
            email=str(user.get("email") or ""),
            name=str(user.get("name") or ""),
        ),
        settings=settings,
        content_hash=_sha256(body),
        org=org,
    )
    return revision, body, parts


def to_revision(
    raw: Item, redactor: Redactor, org: str, where: str, warn: Warn | None = None
) -> Revision:
    """Build a redacted `Revision` from one API `changes[]` item (already page-valid)."""
    return encode_revision(raw, redactor, org, where, warn)[0]


def check_report(raw: Item, where: str, warn: Warn | None = None) -> tuple[Item, datetime]:
    """What `encode_report` does before redacting: the tolerant read (odd optional values
    reported to `warn` and removed) and the creation time (an ISO 8601 one becomes Unix
    milliseconds); gives the item as it is redacted, and the time. Errors as `encode_report`."""
    item = f"report {raw['reportId']}"
    raw = tolerate(raw, READINESS_ITEM, where, item, warn)
    created = _parse_created_at(raw["createdAt"], where, item, warn)
    if warn is not None:
        _check_scores(raw["report"], where, item, warn)
    if isinstance(raw["createdAt"], str):
        raw = {**raw, "createdAt": round(created.timestamp() * 1000)}
    return raw, created


def _check_scores(report: JSON, where: str, item: str, warn: Warn) -> None:
    """Warn about a criterion whose score cannot be one (a denominator of 0 or less, a
    numerator below 0 or above the denominator): the readiness view counts it as not
    evaluable, and the warning says why where the data came in."""
    if not isinstance(report, dict):
        return
    for cid, entry in report.items():
        if not isinstance(entry, dict):
            continue
        num, den = entry.get("numerator"), entry.get("denominator")
        if not isinstance(num, int | float) or not isinstance(den, int | float):
            continue  # a missing or null score is the schema's and the tolerant reader's
        if isinstance(num, bool) or isinstance(den, bool):
            continue
        if den <= 0 or num < 0 or num > den:
            problem = (
                f"numerator {num} and denominator {den} are not a score (0 <= numerator <= "
                "denominator, denominator > 0); the criterion is not evaluable"
            )
            warn(DataWarning(paths.join(where, "report", str(cid)), problem, item))


def encode_report(
    raw: Item, redactor: Redactor, where: str, warn: Warn | None = None
) -> tuple[ReadinessReport, bytes]:
    """`to_report` plus the canonical JSON it hashed (stored as is, not redone).

    An odd value in an optional field keeps the report: it is reported to `warn` and removed,
    so rules see the field as absent; a time sent as ISO 8601 is stored as Unix milliseconds."""
    raw, created = check_report(raw, where, warn)
    data, body = redactor.redact_canonical(raw, stream="report")
    report = ReadinessReport(  # identity fields from the redacted copy: a URL can carry a token
        report_id=str(data["reportId"]),
        repo_url=str(data["repoUrl"]),
        created_at=created,
        data=data,
        content_hash=_sha256(body),
    )
    return report, body


def to_report(
    raw: Item, redactor: Redactor, where: str, warn: Warn | None = None
) -> ReadinessReport:
    """Build a redacted `ReadinessReport` from one API `reports[]` item (already page-valid)."""
    return encode_report(raw, redactor, where, warn)[0]
