"""Evidence a bundle can lose, and what `export` and `verify` do about it (tester T97).

Two exports into one folder are one export and a refusal; a file of the bundle deleted with its
manifest entry is missing; `notReproduced`'s run verdicts are the manifest's word; a line past
the cap is refused unread, an altered file is not re-run; a NUL, an alias or an empty name in
the manifest is a named problem; scratch folders a killed command left are cleaned.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from auditor.cli import outdir
from auditor.workflows import export as export_module
from tests.test_bundle import cli, copy, made, verify  # noqa: F401  (fixtures)


def _manifest(bundle: Path) -> dict[str, Any]:
    return dict(json.loads((bundle / "manifest.json").read_text()))


def _write_manifest(bundle: Path, manifest: dict[str, Any]) -> None:
    (bundle / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")


def _rehash(bundle: Path, name: str) -> None:
    manifest = _manifest(bundle)
    data = (bundle / name).read_bytes()
    manifest["files"][name] = {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    _write_manifest(bundle, manifest)


# -- #1 two exports into one folder --------------------------------------------------------


def test_an_export_into_a_folder_another_command_holds_is_refused_and_touches_nothing(
    made: dict[str, Any],  # noqa: F811
    tmp_path: Path,
) -> None:
    """As `run` refuses a report folder another auditor command writes (one mechanism, its
    `flock`): the second export exits 2 at once and leaves the first's files alone."""
    out = tmp_path / "ev"
    with outdir.hold_out_dir(out):  # the other command, about to write its bundle
        code, said, err = cli(["export", "--out", str(out)], made["env"], made["work"])
        assert code == 2 and said == "", err
        assert err.strip().splitlines()[-1] == (
            f"auditor: error: report folder {out} is being written by another auditor "
            "command: wait for it to finish, or give this one another --out"
        )
        (out / "revisions.jsonl").write_text("the other export's\n")
        code, said, err = cli(["export", "--out", str(out)], made["env"], made["work"])
        assert code == 2 and "exists and is not an empty folder" in err, err
    assert os.listdir(out) == ["revisions.jsonl"]
    assert (out / "revisions.jsonl").read_text() == "the other export's\n"


def test_a_failed_export_removes_what_it_wrote_and_nothing_else(
    made: dict[str, Any],  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A file something else put in the folder while the export ran stays; the export's own
    files and folders go (it removed every file in the folder)."""
    out = tmp_path / "ev"
    real = export_module.write_reports

    def fails(data: Any, folder: Path, outputs: Any) -> Any:
        real(data, folder, outputs)
        (out / "notes.txt").write_text("mine\n")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(export_module, "write_reports", fails)
    code, _, err = cli(["export", "--out", str(out)], made["env"], made["work"])
    assert code == 2, err
    assert os.listdir(out) == ["notes.txt"]


def test_a_fresh_bundle_holds_the_layout_verify_requires(
    made: dict[str, Any],  # noqa: F811
) -> None:
    """One list: what export writes is what `verify` requires (`bundle_layout`)."""
    from auditor.workflows.export import bundle_layout

    bundle = made["bundle"]
    params = json.loads((bundle / "run-parameters.json").read_text())
    assert sorted(_manifest(bundle)["files"]) == sorted(bundle_layout(params))


# -- #2 evidence removed with its manifest entry ----------------------------------------------

REMOVABLE = [
    "revisions.csv",
    "changes.csv",
    "reports.csv",
    "revisions.jsonl",
    "reports.jsonl",
    "analytics.jsonl",
    "integrity.json",
    "run-parameters.json",
    "reports/report.html",
    "reports/report.md",
    "reports/findings.json",
    "reports/findings.sarif",
    "reports/junit.xml",
    "reports/findings.oscal.json",
    "inputs/readiness-model.yaml",
]


@pytest.mark.parametrize("rerun", [True, False], ids=["rerun", "no-rerun"])
@pytest.mark.parametrize("name", REMOVABLE)
def test_a_file_removed_with_its_manifest_entry_is_missing(
    copy: Path,  # noqa: F811
    name: str,
    rerun: bool,
) -> None:
    """It passed (`Verified … files match`), integrity.json read as no integrity issue."""
    manifest = _manifest(copy)
    (copy / name).unlink()
    del manifest["files"][name]
    if name == "integrity.json":
        manifest["integrityIssues"] = 0
    _write_manifest(copy, manifest)
    code, said, err = verify(copy, *([] if rerun else ["--no-rerun"]))
    assert code == 2 and said == "", said + err
    assert f"auditor: verify: missing: {name} (" in err, err
    assert "; manifest.json does not list it)\n" in err
    assert "unexpected" not in err


def test_every_report_and_integrity_json_removed_is_named_each(copy: Path) -> None:  # noqa: F811
    manifest = _manifest(copy)
    names = ["integrity.json", *(n for n in manifest["files"] if n.startswith("reports/"))]
    for name in names:
        (copy / name).unlink()
        del manifest["files"][name]
    manifest["integrityIssues"] = 0
    _write_manifest(copy, manifest)
    code, _, err = verify(copy)
    assert code == 2, err
    assert sorted(n for n in names if f"auditor: verify: missing: {n} (" in err) == sorted(names)


def _not_reproduced(bundle: Path, entries: list[dict[str, str]]) -> None:
    manifest = _manifest(bundle)
    manifest["notReproduced"] = entries
    _write_manifest(bundle, manifest)


def test_a_not_reproduced_run_verdict_is_given_as_the_manifests_word(
    copy: Path,  # noqa: F811
) -> None:
    """The bundle holds none of the run's results: an invented `run` verdict was repeated as
    fact ("pass in the run"); now it is the manifest's word, said to be unchecked."""
    statuses = {f["rule_id"]: f["status"] for f in _findings(copy)}
    rule, status = next((r, s) for r, s in sorted(statuses.items()) if s in ("pass", "fail"))
    other = "fail" if status == "pass" else "pass"
    entry = {"rule": rule, "subject": "settings", "run": other, "bundle": status}
    _not_reproduced(copy, [entry])
    code, _, err = verify(copy)
    noted = f"{rule} on settings: {status} in the bundle, {other} in the run as manifest.json "
    assert noted in err, err
    assert "a run verdict cannot be checked, as the bundle holds none of the run's results" in err
    assert f"{other} in the run, {status} in the bundle" not in err
    del code  # (the bundle's verdict is the re-run's: it passes on that)


def _findings(bundle: Path) -> list[dict[str, Any]]:
    data = json.loads((bundle / "reports" / "findings.json").read_text())
    return [f for f in data["findings"] if f.get("subject", {}).get("key") == "settings"] or [
        {"rule_id": f["rule_id"], "status": f["status"]} for f in data["findings"]
    ]


@pytest.mark.parametrize(
    ("entry", "said"),
    [
        ({"run": "maybe", "bundle": "fail"}, 'notReproduced[0].run is "maybe"'),
        ({"run": "fail", "bundle": "fail"}, "notReproduced[0] gives the run and the bundle one"),
    ],
    ids=["not-a-status", "same-verdict"],
)
def test_a_not_reproduced_entry_export_never_writes_is_a_problem(
    copy: Path,  # noqa: F811
    entry: dict[str, str],
    said: str,
) -> None:
    _not_reproduced(copy, [{"rule": "X", "subject": "settings", **entry}])
    code, _, err = verify(copy, "--no-rerun")
    assert code == 2 and f"auditor: verify: manifest: {said}" in err, err


# -- #3 a line past the cap, an altered file not re-run, memory ----------------------------


def test_a_line_longer_than_the_cap_is_refused_unread(
    copy: Path,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    longest = max(
        len(line)
        for name in ("revisions.jsonl", "reports.jsonl", "analytics.jsonl")
        for line in (copy / name).read_bytes().splitlines()
    )
    monkeypatch.setattr(export_module, "BUNDLE_LINE_MAX", longest)  # the bundle's own: read
    assert verify(copy, "--no-rerun")[0] == 0
    data = copy / "revisions.jsonl"
    lines = data.read_bytes().splitlines(keepends=True)
    lines[1] = b'{"revision": 2, "settings": {"x": "' + b"a" * longest + b'"}}\n'
    data.write_bytes(b"".join(lines))
    _rehash(copy, "revisions.jsonl")
    for extra in ([], ["--no-rerun"]):
        code, _, err = verify(copy, *extra)
        assert code == 2, err
        assert f"{data}:2: a line longer than {longest:,} bytes, the most export and " in err, err
        assert "not valid JSON" not in err


def test_an_altered_data_file_is_not_parsed_by_the_rerun(
    copy: Path,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The hash check named it altered; the re-run parsed it all the same (a 300 MB line:
    965 MB)."""
    data = copy / "revisions.jsonl"
    data.write_bytes(data.read_bytes() + b'{"revision": 999}\n')
    read = []
    real = export_module.bundle_lines
    monkeypatch.setattr(export_module, "bundle_lines", lambda p: read.append(p) or real(p))
    code, _, err = verify(copy)
    assert code == 2, err
    assert "auditor: verify: altered: revisions.jsonl (" in err
    assert "auditor: note: re-run skipped: it would read revisions.jsonl, which the file " in err
    assert read == []


def test_a_line_orjson_has_no_memory_for_is_out_of_memory_not_invalid_json(
    copy: Path,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def starved(_raw: Any) -> Any:
        raise orjson.JSONDecodeError(
            "Not enough memory to allocate buffer for parsing: line 1 column 1 (char 0)", "", 0
        )

    monkeypatch.setattr(export_module.orjson, "loads", starved)
    code, _, err = verify(copy)
    assert code == 2, err
    assert "out of memory" in err.splitlines()[-1], err
    assert "not valid JSON" not in err


# -- #4, #5 names in the manifest and the run parameters --------------------------------------


@pytest.mark.parametrize(
    ("key", "said"),
    [
        ("revisions.csv\x00x", "$.files['revisions.csv\\u0000x']: a name holding a NUL byte"),
        ("", "$.files['']: an empty name, not a file of the bundle"),
        ("./revisions.csv", "$.files['./revisions.csv']: not a file's plain path in the bundle"),
        (
            "reports//findings.json",
            "$.files['reports//findings.json']: not a file's plain path in the bundle",
        ),
    ],
    ids=["nul", "empty", "dot", "double-slash"],
)
@pytest.mark.parametrize("rerun", [True, False], ids=["rerun", "no-rerun"])
def test_a_manifest_key_that_is_no_plain_path_is_a_problem_at_its_place(
    copy: Path,  # noqa: F811
    key: str,
    said: str,
    rerun: bool,
) -> None:
    """A NUL ended verify with `unexpected ValueError`; an alias counted its file twice ("20
    files match"); an empty name read `altered:  is not a regular file`."""
    manifest = _manifest(copy)
    target = "reports/findings.json" if "findings" in key else "revisions.csv"
    manifest["files"][key] = dict(manifest["files"][target])
    _write_manifest(copy, manifest)
    code, said_out, err = verify(copy, *([] if rerun else ["--no-rerun"]))
    assert code == 2 and said_out == "", err
    assert f"auditor: verify: manifest.json: {said}" in err, err
    assert "unexpected" not in err
    assert err.splitlines()[-1].endswith("does not verify: 1 problem(s)"), err


@pytest.mark.parametrize("rerun", [True, False], ids=["rerun", "no-rerun"])
def test_a_nul_in_a_bundled_path_is_named_at_its_json_path(
    copy: Path,  # noqa: F811
    rerun: bool,
) -> None:
    """`re-run: … unexpected ValueError`, and `--no-rerun` passed it (exit 0)."""
    params = json.loads((copy / "run-parameters.json").read_text())
    params["policies"][0]["bundled"] = "inputs/policies/001\x00.yaml"
    (copy / "run-parameters.json").write_text(json.dumps(params, indent=2) + "\n")
    _rehash(copy, "run-parameters.json")
    code, _, err = verify(copy, *([] if rerun else ["--no-rerun"]))
    assert code == 2, err
    assert "run-parameters.json: $.policies[0].bundled: holds a NUL byte" in err, err
    assert "unexpected" not in err


def test_problems_past_the_cap_are_counted_not_printed(copy: Path) -> None:  # noqa: F811
    """150,000 made-up entries printed 150,000 lines."""
    manifest = _manifest(copy)
    for n in range(500):
        manifest["files"][f"f{n}"] = {"bytes": 1, "sha256": "0" * 64}
    _write_manifest(copy, manifest)
    code, _, err = verify(copy, "--no-rerun")
    assert code == 2
    lines = err.splitlines()
    assert len([x for x in lines if x.startswith("auditor: verify: missing: f")]) == 200
    assert "auditor: verify: … and 300 more problem(s), not shown" in lines
    assert lines[-1].endswith("does not verify: 500 problem(s)")


# -- #5 scratch folders a killed command left -----------------------------------------------


def test_stale_scratch_folders_are_removed_and_held_or_fresh_ones_kept(
    copy: Path,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`kill -9` of verify left `auditor-bundle-*` / `auditor-verify-*` in TMPDIR forever."""
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    old = time.time() - 2 * getattr(export_module, "SCRATCH_STALE_SECONDS", 3600)
    folders = {}
    for name in ("auditor-verify-dead", "auditor-bundle-dead", "auditor-verify-held"):
        (scratch / name / "x").mkdir(parents=True)
        os.utime(scratch / name, (old, old))
        folders[name] = scratch / name
    (scratch / "auditor-bundle-fresh").mkdir()
    fd = os.open(folders["auditor-verify-held"], os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        code, said, err = verify(copy)
    finally:
        os.close(fd)
    assert code == 0, said + err
    assert sorted(os.listdir(scratch)) == ["auditor-bundle-fresh", "auditor-verify-held"]
    shutil.rmtree(scratch)


# -- reviewer R91 ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name", ["reports/report.pdf", "APPROVAL.txt", "inputs/policies/005-extra.yaml"]
)
def test_a_file_no_export_writes_listed_and_hashed_does_not_verify(
    copy: Path,  # noqa: F811
    name: str,
) -> None:
    """A forged `report.pdf`, an approval note or a policy copy the run never evaluated,
    added with its manifest entry: `Verified …: 20 files match`, exit 0 (reviewer R91 #2)."""
    (copy / name).write_text("%PDF-1.7 forged\n" if name.endswith(".pdf") else "rules: []\n")
    _rehash(copy, name)
    for flags in ((), ("--no-rerun",)):
        code, _, err = verify(copy, *flags)
        assert code == 2, err
        assert f"auditor: verify: extra: {name} is no file auditor export writes " in err


@pytest.mark.parametrize("release", [["0.3.0"], {}, 3.0])
def test_a_release_that_is_no_text_is_a_problem_not_an_unexpected_error(
    copy: Path,  # noqa: F811
    release: Any,
) -> None:
    """`"toolVersion": ["0.3.0"]` ended verify with `unexpected TypeError: unhashable type`
    (reviewer R91 #3)."""
    manifest = _manifest(copy)
    manifest["toolVersion"] = release
    _write_manifest(copy, manifest)
    code, _, err = verify(copy, "--no-rerun")
    assert code == 2 and "unexpected" not in err and "toolVersion" in err, err
