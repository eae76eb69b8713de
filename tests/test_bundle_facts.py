"""What an auditor reads first in an evidence bundle, and what it samples: `manifest.json`'s own
facts (findings, revisions, run id, release…) and the CSV files. A bundle without a checked
signature can be edited and its manifest re-hashed; `verify` must still name a fact the bundle's
files or the re-run contradict, and a CSV row that revisions.jsonl / reports.jsonl do not give."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

import auditor
from tests.test_bundle import _problems, _refused, made, verify

__all__ = ["made"]  # the module's bundle, made once (a fixture of test_bundle)

pytestmark = pytest.mark.e2e


@pytest.fixture
def copy(made: dict[str, Any], tmp_path: Path) -> Path:
    return Path(shutil.copytree(made["bundle"], tmp_path / "bundle"))


def _manifest(bundle: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((bundle / "manifest.json").read_text())
    return loaded


def _rewrite(bundle: Path, manifest: dict[str, Any], *rehashed: str) -> None:
    """manifest.json rewritten as one who edited the bundle would: `rehashed` files re-hashed."""
    for name in rehashed:
        raw = (bundle / name).read_bytes()
        manifest["files"][name] = {"bytes": len(raw), "sha256": hashlib.sha256(raw).hexdigest()}
    (bundle / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")


def _one_byte(bundle: Path, old: str, new: str) -> None:
    """One fact of manifest.json edited in place, every other byte kept."""
    path = bundle / "manifest.json"
    text = path.read_text()
    assert text.count(old) == 1, old
    path.write_text(text.replace(old, new))


# -- T22 #1: the manifest's own facts ----------------------------------------------------------


def _facts(bundle: Path) -> dict[str, Any]:
    return {k: v for k, v in _manifest(bundle).items() if k != "files"}


@pytest.mark.parametrize(
    ("field", "edit", "said"),
    [
        ("findings", lambda n: n + 1, "but the re-run of the bundle finds {true}"),
        ("findings", str, "but the re-run of the bundle finds {true}"),  # "654" is not 654
        ("revisions", lambda n: n * 10, "but revisions.jsonl holds {true}"),
        ("latestRevision", lambda n: n + 1, "but the latest revision in revisions.jsonl is {true}"),
        ("reports", lambda n: n - 1, "but reports.jsonl holds {true}"),
        ("integrityIssues", lambda n: n + 1, "but integrity.json lists {true}"),
        ("runId", lambda s: s[:-2] + "9Z", "but run-parameters.json's runId is {true}"),
        ("generated", lambda s: s.replace(":", ";", 1), "but run-parameters.json's reportTime is"),
        ("toolVersion", lambda s: "0.1.0", "but reports/findings.json's tool.version is {true}"),
        ("tool", lambda s: "auditer", "but auditor's bundles say {true}"),
        ("secrets", lambda s: "none in this bundle", f"but auditor {auditor.__version__} writes"),
    ],
)
def test_a_fact_of_the_manifest_edited_is_named_with_both_values(
    copy: Path, field: str, edit: Any, said: str
) -> None:
    """T22 #1: the bundle is signed, but verified without --key (only a note): its manifest is
    the cover sheet an auditor reads, so each fact it states is checked."""
    manifest = _manifest(copy)
    true = manifest[field]
    manifest[field] = edit(true)
    _rewrite(copy, manifest)
    err = _refused(copy)
    (problem,) = _problems(err)
    shown = json.dumps(manifest[field], ensure_ascii=False)
    start = f"auditor: verify: manifest: {field} is {shown}, "
    assert problem.startswith(start), err
    assert said.format(true=json.dumps(true)) in problem, err
    assert "auditor: exit 2: the bundle" in err


def test_one_byte_of_the_findings_count_is_enough(copy: Path) -> None:
    """T22's own edit: `"findings": N` one digit lower, nothing else touched."""
    n = _facts(copy)["findings"]
    _one_byte(copy, f'"findings": {n}', f'"findings": {n - 1}')
    (problem,) = _problems(_refused(copy))
    assert problem == (
        f"auditor: verify: manifest: findings is {n - 1}, but the re-run of the bundle finds {n}"
    )


def test_the_redaction_record_is_checked_field_by_field(copy: Path) -> None:
    manifest = _manifest(copy)
    rules = manifest["redaction"]["rules"]
    manifest["redaction"]["rules"] = rules - 1
    manifest["redaction"]["release"] = "0.2.0"
    _rewrite(copy, manifest)
    problems = _problems(_refused(copy))
    assert (
        'auditor: verify: manifest: redaction.release is "0.2.0", but reports/findings.json\'s '
        f'tool.version is "{auditor.__version__}"'
    ) in problems
    assert (
        f"auditor: verify: manifest: redaction.rules is {rules - 1}, but auditor "
        f"{auditor.__version__} writes {rules}"
    ) in problems


def test_a_field_no_release_writes_is_named(copy: Path) -> None:
    manifest = _manifest(copy)
    manifest["approvedBy"] = "the CISO"
    _rewrite(copy, manifest)
    (problem,) = _problems(_refused(copy))
    assert problem == (
        'auditor: verify: manifest: approvedBy is not a field auditor writes ("the CISO" '
        "cannot be checked)"
    )


def test_without_the_rerun_the_facts_the_files_state_are_still_checked(copy: Path) -> None:
    """--no-rerun checks what run-parameters.json and findings.json state."""
    manifest = _manifest(copy)
    manifest["toolVersion"] = "0.1.0"
    manifest["runId"] = "someone-else"
    _rewrite(copy, manifest)
    problems = _problems(_refused(copy, "--no-rerun"))
    assert [p.split(" is ")[0] for p in problems] == [
        "auditor: verify: manifest: toolVersion",
        "auditor: verify: manifest: runId",
    ]


def test_a_fresh_bundle_states_only_true_facts(made: dict[str, Any], copy: Path) -> None:
    code, said, err = verify(copy, "--key", str(made["work"] / "public.pem"))
    assert (code, err) == (0, "")
    assert "the re-run reproduced revisions.csv, changes.csv, reports.csv, reports/" in said
    facts = _facts(copy)
    assert facts["revisions"] == facts["latestRevision"] == 60
    assert facts["findings"] == len(
        json.loads((copy / "reports" / "findings.json").read_text())["findings"]
    )


# -- R16 #2: facts deleted from the manifest; the counts without the re-run --------------------

THIS_RELEASE = (
    "tool", "toolVersion", "generated", "runId", "revisions", "latestRevision", "reports",
    "integrityIssues", "findings", "secrets", "redaction",
)  # fmt: skip


def test_a_fresh_bundle_states_every_fact_this_release_writes(copy: Path) -> None:
    from auditor.workflows.verify import written_fields

    assert set(_facts(copy)) == set(written_fields(auditor.__version__)) == set(THIS_RELEASE)


def _missing(field: str, release: str = auditor.__version__) -> str:
    by = (
        "every release of auditor writes it"
        if field == "toolVersion"
        else f"auditor {release} writes it in every bundle"
    )
    return f"auditor: verify: manifest: {field} is missing, but {by}"


@pytest.mark.parametrize("field", THIS_RELEASE)
def test_a_fact_deleted_from_the_manifest_is_named(copy: Path, field: str) -> None:
    """R16 #2: a deleted fact verified (exit 0): a 0.3.0 bundle without `redaction` read as
    one made before 0.3.0. A manifest without `toolVersion` is judged by the release
    findings.json names."""
    manifest = _manifest(copy)
    del manifest[field]
    _rewrite(copy, manifest)
    assert _problems(_refused(copy, "--no-rerun")) == [_missing(field)]


def test_a_manifest_cut_down_to_its_files_names_every_fact_missing(copy: Path) -> None:
    """R16 #2's own case, with the re-run: `{"files": …}` alone verified."""
    _rewrite(copy, {"files": _manifest(copy)["files"]})
    assert _problems(_refused(copy)) == [_missing(field) for field in THIS_RELEASE]


def _as_release(bundle: Path, release: str) -> dict[str, Any]:
    """The bundle as `release` wrote it, as far as the facts go: findings.json's tool.version
    and the manifest's toolVersion say `release`, and the manifest has no `redaction`."""
    report = bundle / "reports" / "findings.json"
    text = report.read_text()
    head = f'"version": "{auditor.__version__}"'
    assert head in text[:4096]
    report.write_text(text.replace(head, f'"version": "{release}"', 1))
    manifest = _manifest(bundle)
    manifest["toolVersion"] = release
    del manifest["redaction"]
    return manifest


def test_a_bundle_of_an_older_release_is_judged_by_the_facts_it_wrote(copy: Path) -> None:
    """0.2.0 wrote no `redaction`: its bundle verifies without one; it wrote `runId`, so one
    without its `runId` does not."""
    manifest = _as_release(copy, "0.2.0")
    _rewrite(copy, manifest, "reports/findings.json")
    code, _, err = verify(copy, "--no-rerun")
    assert code == 0, err
    del manifest["runId"]
    _rewrite(copy, manifest, "reports/findings.json")
    assert _problems(_refused(copy, "--no-rerun")) == [_missing("runId", "0.2.0")]


def test_a_bundle_of_a_release_not_known_needs_its_tool_version_only(copy: Path) -> None:
    manifest = _as_release(copy, "7.1.0")
    for field in ("runId", "findings", "secrets", "generated"):
        del manifest[field]
    _rewrite(copy, manifest, "reports/findings.json")
    code, _, err = verify(copy, "--no-rerun")
    assert code == 0, err


@pytest.mark.parametrize(
    ("field", "edit", "said"),
    [
        ("revisions", lambda n: n - 1, "but revisions.jsonl holds {true}"),
        ("latestRevision", lambda n: n + 1, "but the latest revision in revisions.jsonl is {true}"),
        ("reports", lambda n: n + 1, "but reports.jsonl holds {true}"),
        ("integrityIssues", lambda n: n + 5, "but integrity.json lists {true}"),
        ("findings", lambda n: 1, "but reports/findings.json's summary counts {true}"),
        ("revisions", str, "but revisions.jsonl holds {true}"),
    ],
)
def test_without_the_rerun_the_counts_are_checked_against_the_files(
    copy: Path, field: str, edit: Any, said: str
) -> None:
    """R16 #2: with --no-rerun (README's advice for another release's bundle) a false count
    verified; the counts need no evaluation, only the bundle's files read."""
    manifest = _manifest(copy)
    true = manifest[field]
    manifest[field] = edit(true)
    _rewrite(copy, manifest)
    (problem,) = _problems(_refused(copy, "--no-rerun"))
    shown = json.dumps(manifest[field])
    assert problem.startswith(f"auditor: verify: manifest: {field} is {shown}, "), problem
    assert problem.endswith(said.format(true=json.dumps(true))), problem


def test_without_the_rerun_a_fresh_bundle_verifies(made: dict[str, Any], copy: Path) -> None:
    code, said, err = verify(copy, "--no-rerun", "--key", str(made["work"] / "public.pem"))
    assert (code, err) == (0, "")
    assert "files match manifest.json, signature valid." in said


def test_without_the_rerun_a_revisions_file_export_did_not_write_is_named(copy: Path) -> None:
    path = copy / "revisions.jsonl"
    path.write_text(path.read_text() + "not json\n")
    manifest = _manifest(copy)
    _rewrite(copy, manifest, "revisions.jsonl")
    (problem,) = _problems(_refused(copy, "--no-rerun"))
    assert problem == (
        "auditor: verify: manifest: revisions and latestRevision cannot be checked: "
        f"revisions.jsonl:{manifest['revisions'] + 1} is not a JSON line with a revision "
        "number, as export writes it"
    )


def test_without_the_rerun_an_altered_file_is_named_once_and_not_counted(copy: Path) -> None:
    """A file the hash check names altered is not read to count (one of another size was
    never hashed: a huge file swapped in is not read)."""
    path = copy / "revisions.jsonl"
    path.write_text(path.read_text() + "not json\n")
    (problem,) = _problems(_refused(copy, "--no-rerun"))
    assert problem.startswith("auditor: verify: altered: revisions.jsonl ("), problem


# -- T22 #7: the CSV files against the JSON lines ----------------------------------------------


def _edit_csv(bundle: Path, name: str, change: Any) -> None:
    """Each row of CSV file `name` passed to `change` (a dict it may edit), written back as
    export writes it."""
    text = (bundle / name).read_text(encoding="utf-8")
    reader = csv.DictReader(io.StringIO(text, newline=""))
    rows = list(reader)
    for row in rows:
        change(row)
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(reader.fieldnames or []), lineterminator="\r\n")
    writer.writeheader()
    writer.writerows(rows)
    (bundle / name).write_bytes(out.getvalue().encode("utf-8"))


def test_an_author_edited_in_both_csv_files_with_a_rehashed_manifest_is_named(copy: Path) -> None:
    """T22 #7: revision 30 attributed to someone else in revisions.csv and changes.csv, the
    manifest re-hashed: each file is named at its first differing row and column."""
    revisions = list(csv.DictReader(io.StringIO((copy / "revisions.csv").read_text(), newline="")))
    true = next(r for r in revisions if r["revision"] == "30")["author_email"]

    def other(row: dict[str, str]) -> None:
        if row.get("revision") == "30" or row.get("to_revision") == "30":
            row["author_email"] = "someone.else@acme.example"

    _edit_csv(copy, "revisions.csv", other)
    _edit_csv(copy, "changes.csv", other)
    _rewrite(copy, _manifest(copy), "revisions.csv", "changes.csv")
    problems = _problems(_refused(copy))
    assert problems[0] == (
        "auditor: verify: re-run: revisions.csv differs from what revisions.jsonl gives (row 30, "
        f'revision 30, author_email: "someone.else@acme.example", where revisions.jsonl gives '
        f'"{true}")'
    )
    assert problems[1].startswith(
        "auditor: verify: re-run: changes.csv differs from what revisions.jsonl gives (row "
    )
    assert (
        f'author_email: "someone.else@acme.example", where revisions.jsonl gives "{true}")'
        in (problems[1])
    )
    assert len(problems) == 2


def test_a_row_dropped_from_reports_csv_is_named(copy: Path) -> None:
    lines = (copy / "reports.csv").read_bytes().split(b"\r\n")
    (copy / "reports.csv").write_bytes(b"\r\n".join([*lines[:-2], b""]))  # the last row cut
    _rewrite(copy, _manifest(copy), "reports.csv")
    (problem,) = _problems(_refused(copy))
    assert problem.startswith(
        f"auditor: verify: re-run: reports.csv differs from what reports.jsonl gives (row "
        f"{len(lines) - 2}, report_id "
    )
    assert problem.endswith(" is missing)")


def test_a_row_added_to_revisions_csv_is_named(copy: Path) -> None:
    with (copy / "revisions.csv").open("ab") as fh:
        fh.write(b"61,2026-01-01T00:00:00.000000+00:00,u,a@b,A,x,60,0,nothing\r\n")
    _rewrite(copy, _manifest(copy), "revisions.csv")
    (problem,) = _problems(_refused(copy))
    assert problem.startswith(
        "auditor: verify: re-run: revisions.csv differs from what revisions.jsonl gives (row 61 "
        'is not in revisions.jsonl: ["61",'
    )


def test_a_csv_file_with_its_rows_alike_but_other_line_ends_is_named_so(copy: Path) -> None:
    """Byte for byte, as export wrote it: CRLF turned into LF (a checkout's line-end filter)
    is named as such, not as a file that changed while it was verified."""
    data = copy / "changes.csv"
    data.write_bytes(data.read_bytes().replace(b"\r\n", b"\n"))
    _rewrite(copy, _manifest(copy), "changes.csv")
    (problem,) = _problems(_refused(copy))
    assert problem == (
        "auditor: verify: re-run: changes.csv differs from what revisions.jsonl gives (the same "
        "rows, written otherwise (line ends or quoting), first at line 1)"
    )


def test_a_full_disk_while_the_csv_files_are_written_again_is_not_the_bundles_problem(
    copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The re-run's CSV files go to the scratch folder in TMPDIR: a full disk there is exit 2
    with what to do, never "the bundle cannot be evaluated", and nothing is left there."""
    from auditor.common import files
    from auditor.workflows import export

    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr("tempfile.tempdir", str(scratch))
    real = files.write_atomic

    def full(path: Path, data: Any) -> None:
        if path.name == "revisions.csv":
            raise OSError(28, "No space left on device")
        real(path, data)

    monkeypatch.setattr(export, "write_atomic", full)
    code, out, err = verify(copy)
    assert code == 2, out + err
    assert "cannot write revisions.csv and changes.csv in " in err
    assert "No space left on device" in err and "set TMPDIR to a folder with room" in err
    assert "does not verify" not in err and "cannot be evaluated" not in err
    assert list(scratch.iterdir()) == []
