"""Export: the evidence bundle, written from the state file alone.

Takes an open `Store`, gives a folder with `revisions.jsonl`, `reports.jsonl`, `integrity.json`
and `manifest.json` (sha256 and size of each file). Everything comes from the store, so every
secret is already a marker.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from pathlib import Path

from auditor import __version__
from auditor.common.files import write_atomic
from auditor.common.jsonutil import canonical, dumps_pretty
from auditor.errors import AuditorError
from auditor.models import JSON, ReadinessReport, Revision
from auditor.store.database import Store
from auditor.store.schema import to_text


def _revision_line(rev: Revision) -> dict[str, JSON]:
    return {
        "revision": rev.revision,
        "org": rev.org,
        "updatedAt": to_text(rev.updated_at),
        "user": {"id": rev.user.id, "email": rev.user.email, "name": rev.user.name},
        "contentHash": rev.content_hash,
        "settings": rev.settings,
    }


def _report_line(report: ReadinessReport) -> dict[str, JSON]:
    return {
        "reportId": report.report_id,
        "repoUrl": report.repo_url,
        "createdAt": to_text(report.created_at),
        "contentHash": report.content_hash,
        "data": report.data,
    }


def _jsonl(items: Iterable[dict[str, JSON]]) -> Iterator[str]:
    return (canonical(item).decode() + "\n" for item in items)


def _write(path: Path, chunks: str | Iterable[str]) -> dict[str, JSON]:
    """Write atomically, streaming; return the file's sha256 and size (of the UTF-8 bytes)."""
    digest, size = hashlib.sha256(), 0

    def counted() -> Iterator[str]:
        nonlocal size
        for chunk in [chunks] if isinstance(chunks, str) else chunks:
            data = chunk.encode("utf-8")
            digest.update(data)
            size += len(data)
            yield chunk

    try:
        write_atomic(path, counted())
    except OSError as exc:
        raise AuditorError(f"cannot write {path}: {exc.strerror}") from None
    return {"sha256": digest.hexdigest(), "bytes": size}


def export_bundle(store: Store, out: Path, *, generated: str) -> dict[str, JSON]:
    """Write the evidence bundle into `out` and return the manifest."""
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise AuditorError(f"cannot create {out}: {exc.strerror}") from None
    issues = [
        {
            "revision": i.revision,
            "reportId": i.report_id,
            "storedHash": i.stored_hash,
            "seenHash": i.seen_hash,
            "seenAt": to_text(i.seen_at),
        }
        for i in store.integrity_issues()
    ]
    files = {
        "revisions.jsonl": _write(
            out / "revisions.jsonl", _jsonl(map(_revision_line, store.iter_revisions()))
        ),
        "reports.jsonl": _write(
            out / "reports.jsonl", _jsonl(map(_report_line, store.iter_reports()))
        ),
        "integrity.json": _write(out / "integrity.json", dumps_pretty(issues)),
    }
    latest = store.latest_revision()
    manifest = {
        "tool": "auditor",
        "toolVersion": __version__,
        "generated": generated,
        "revisions": store.count_revisions(),
        "latestRevision": latest.revision if latest else None,
        "reports": store.count_reports(),
        "integrityIssues": len(issues),
        "secrets": "redacted at ingestion: keyed fingerprint markers only",
        "files": files,
    }
    _write(out / "manifest.json", dumps_pretty(manifest))
    return manifest
