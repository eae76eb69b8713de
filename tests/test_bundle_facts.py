"""What an auditor reads first in an evidence bundle, and what it samples: `manifest.json`'s own
facts (findings, revisions, run id, release…). A bundle without a checked
signature can be edited and its manifest re-hashed; `verify` must still name a fact the bundle's
files or the re-run contradict, and a CSV row that revisions.jsonl / reports.jsonl do not give."""

from __future__ import annotations

import hashlib
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
    """--no-rerun checks what run-parameters.json and findings.json state (the counts need the
    re-run, as the README says)."""
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
    code, _, err = verify(copy, "--key", str(made["work"] / "public.pem"))
    assert (code, err) == (0, "")
    facts = _facts(copy)
    assert facts["revisions"] == facts["latestRevision"] == 60
    assert facts["findings"] == len(
        json.loads((copy / "reports" / "findings.json").read_text())["findings"]
    )
