"""The evidence bundle as an auditor gets it: `auditor export` after a sync from the emulator over
HTTP, then `auditor verify` — a fresh bundle verifies (also moved elsewhere, and signed); an
altered, missing or extra file, a changed signature or another key each fail, naming the file."""

from __future__ import annotations

import contextlib
import csv
import hashlib
import io
import json
import os
import re
import shutil
import stat
from collections.abc import Iterator
from html import unescape
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

import auditor
from auditor.cli import Context, main
from auditor.cli.signals import Terminated
from auditor.emulator import start_emulator
from auditor.report import sarif
from auditor.workflows import verify as verify_module
from tests.conftest import FIXED_NOW, OWNER_TOKEN, emulator_env
from tests.test_validators import WAIVER

pytestmark = pytest.mark.e2e


def cli(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    ctx = Context(env=env, stdout=out, stderr=err, clock=lambda: FIXED_NOW, cwd=str(cwd))
    return main(argv, ctx), out.getvalue(), err.getvalue()


def _pem(key: Ed25519PrivateKey, public: bool) -> bytes:
    if public:
        return key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """One sync from the emulator, a signed export and a plain `run --offline` to compare."""
    work = tmp_path_factory.mktemp("bundle")
    with start_emulator(tokens={OWNER_TOKEN: "owner"}, now=FIXED_NOW, revisions=60, repos=6) as e:
        env = {**emulator_env(e, work / "state.db"), "AUDITOR_ORG": "acme"}
        assert cli(["sync"], env, work)[0] == 0
    (work / "waivers.yaml").write_text(WAIVER, encoding="utf-8")
    key = Ed25519PrivateKey.generate()
    (work / "signing.pem").write_bytes(_pem(key, public=False))
    (work / "public.pem").write_bytes(_pem(key, public=True))
    (work / "other.pem").write_bytes(_pem(Ed25519PrivateKey.generate(), public=True))
    code, out, err = cli(
        ["export", "--out", "bundle", "--waivers", "waivers.yaml", "--sign-key", "signing.pem"],
        env,
        work,
    )
    assert (code, err) == (0, ""), err
    run = cli(["run", "--offline", "--waivers", "waivers.yaml", "--out", "run"], env, work)
    assert run[0] == 1, run[2]
    yield {"work": work, "env": env, "bundle": work / "bundle", "stdout": out}


@pytest.fixture
def copy(made: dict[str, Any], tmp_path: Path) -> Path:
    """A copy of the bundle somewhere else, to tamper with."""
    return Path(shutil.copytree(made["bundle"], tmp_path / "moved" / "bundle"))


def verify(bundle: Path, *extra: str) -> tuple[int, str, str]:
    return cli(["verify", str(bundle), *extra], {}, bundle.parent)


def test_export_says_where_and_how_to_verify(made: dict[str, Any]) -> None:
    assert "signed (manifest.sig)" in made["stdout"]
    assert f"auditor verify {made['bundle']}" in made["stdout"]


def test_fresh_bundle_verifies_and_reruns_byte_for_byte(made: dict[str, Any], copy: Path) -> None:
    code, out, err = verify(copy, "--key", str(made["work"] / "public.pem"))
    assert (code, err) == (0, "")
    assert "signature valid" in out
    assert "reports/findings.json" in out and "byte for byte" in out


def _rows(path: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8"), newline="")))


def test_bundle_holds_what_an_auditor_samples(made: dict[str, Any]) -> None:
    bundle = made["bundle"]
    manifest = json.loads((bundle / "manifest.json").read_text())
    for name in (
        "revisions.csv",
        "changes.csv",
        "reports.csv",
        "run-parameters.json",
        "inputs/waivers.yaml",
        "inputs/readiness-model.yaml",
        "reports/findings.json",
        "reports/report.html",
        "reports/findings.oscal.json",
        "analytics.jsonl",
    ):
        assert name in manifest["files"], name
    revisions = _rows(bundle / "revisions.csv")
    assert [int(r["revision"]) for r in revisions] == list(range(1, 61))  # every revision
    assert all(r["author_email"] and r["updated_at"] for r in revisions)
    assert sum(int(r["changes"]) for r in revisions) > 0
    changes = _rows(bundle / "changes.csv")
    assert len(changes) == sum(int(r["changes"]) for r in revisions)
    moved = [c for c in changes if c["kind"] != "renamed"]
    assert all(c["what_changed"].startswith(c["path"].removeprefix("$.")) for c in moved)
    assert all(c["author_email"] and c["updated_at"] for c in changes)
    reports = _rows(bundle / "reports.csv")
    assert len(reports) == len((bundle / "reports.jsonl").read_text().splitlines())
    # the waiver file as written (the emulator's secrets are no ordinary words: its owner
    # `platform-security@…` is no marker), and the findings of an ordinary run of the same
    # inputs
    assert (bundle / "inputs/waivers.yaml").read_text() == WAIVER
    params = json.loads((bundle / "run-parameters.json").read_text())
    assert "redacted" not in params["waivers"] and "redacted" not in params["readinessModel"]
    assert not [p["bundled"] for p in params["policies"] if "redacted" in p]  # usage.yaml too
    ran = json.loads((made["work"] / "run" / "findings.json").read_text())
    kept = json.loads((bundle / "reports" / "findings.json").read_text())
    key = sorted((f["fingerprint"], f["status"]) for f in ran["findings"])
    assert key == sorted((f["fingerprint"], f["status"]) for f in kept["findings"])
    assert any(f["status"] == "waived" for f in kept["findings"])
    # the usage rules judge the same analytics days in the bundle as in the run
    usage = [f for f in kept["findings"] if f["subject"]["kind"] == "usage"]
    assert usage and any(f["status"] != "unknown" for f in usage)
    assert len((bundle / "analytics.jsonl").read_text().splitlines()) >= 30


def test_csv_cells_cannot_become_spreadsheet_formulas(made: dict[str, Any]) -> None:
    for name in ("revisions.csv", "changes.csv", "reports.csv"):
        text = (made["bundle"] / name).read_text(encoding="utf-8")
        for row in csv.reader(io.StringIO(text, newline="")):
            assert not any(cell[:1] in ("=", "+", "@") for cell in row), (name, row)


def _problems(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("auditor: verify: ")]


def _refused(bundle: Path, *args: str) -> str:
    """`verify` of `bundle`, which must refuse it (exit 2): its stderr."""
    code, _, err = verify(bundle, *args)
    assert code == 2, err
    return err


def test_altered_file_is_named(copy: Path) -> None:
    path = copy / "reports" / "findings.json"
    path.write_text(path.read_text().replace('"fail"', '"pass"', 1))
    err = _refused(copy)
    assert any(
        p.startswith("auditor: verify: altered: reports/findings.json") for p in _problems(err)
    )
    assert any("re-run: reports/findings.json differs" in p for p in _problems(err))
    assert err.strip().splitlines()[-1].startswith("auditor: exit 2: ")


def test_altered_input_is_named_and_the_rerun_differs(copy: Path) -> None:
    with (copy / "inputs" / "waivers.yaml").open("a") as fh:
        fh.write("  - rule: BASE-NET-001\n    subject: settings\n    reason: r\n"
                 "    owner: a@example.com\n    expires: 2027-01-01\n")  # fmt: skip
    err = _refused(copy)
    problems = _problems(err)
    assert any(p.startswith("auditor: verify: altered: inputs/waivers.yaml") for p in problems)


def test_missing_file_is_named(copy: Path) -> None:
    (copy / "changes.csv").unlink()
    err = _refused(copy, "--no-rerun")
    assert _problems(err) == ["auditor: verify: missing: changes.csv (listed in manifest.json)"]


def test_extra_file_is_named(copy: Path) -> None:
    (copy / "reports" / "note.txt").write_text("added later")
    err = _refused(copy)
    assert _problems(err) == [
        "auditor: verify: extra: reports/note.txt (not listed in manifest.json)"
    ]


def test_an_extra_fifo_socket_or_empty_folder_is_named(
    copy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each verified (exit 0) beside a bundle whose files all matched."""
    import os
    import socket

    os.mkfifo(copy / "reports" / "pipe")
    (copy / "empty" / "deeper").mkdir(parents=True)
    listening = socket.socket(socket.AF_UNIX)
    try:
        monkeypatch.chdir(copy / "inputs")  # a short path: AF_UNIX takes at most 107 bytes
        listening.bind("sock")
        code, _, err = verify(copy, "--no-rerun")
    finally:
        listening.close()
    assert code == 2
    assert _problems(err) == [
        "auditor: verify: extra: empty/deeper/ (an empty folder, not listed in manifest.json)",
        "auditor: verify: extra: inputs/sock (a socket, not listed in manifest.json)",
        "auditor: verify: extra: reports/pipe (a named pipe, not listed in manifest.json)",
    ]


def test_changed_signature_fails(made: dict[str, Any], copy: Path) -> None:
    sig = copy / "manifest.sig"
    raw = bytearray(sig.read_bytes())
    raw[5] = ord("A") if raw[5] != ord("A") else ord("B")
    sig.write_bytes(bytes(raw))
    code, _, err = verify(copy, "--key", str(made["work"] / "public.pem"))
    assert code == 2
    assert any("signature: manifest.sig does not match manifest.json" in p for p in _problems(err))


def test_rehashed_manifest_fails_the_signature(made: dict[str, Any], copy: Path) -> None:
    """Altering a file and rewriting the manifest to match is caught by the signature."""
    (copy / "reports.csv").write_text("report_id\n")
    manifest = json.loads((copy / "manifest.json").read_text())
    manifest["files"]["reports.csv"]["sha256"] = hashlib.sha256(b"report_id\n").hexdigest()
    manifest["files"]["reports.csv"]["bytes"] = len(b"report_id\n")  # as a forger would
    (copy / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    code, _, err = verify(copy, "--key", str(made["work"] / "public.pem"), "--no-rerun")
    assert code == 2
    assert any("signature: manifest.sig does not match" in p for p in _problems(err))
    assert verify(copy, "--no-rerun")[0] == 0  # without the key only the hashes are checked


def test_another_key_fails(made: dict[str, Any], copy: Path) -> None:
    code, _, err = verify(copy, "--key", str(made["work"] / "other.pem"), "--no-rerun")
    assert code == 2 and "does not match manifest.json for the key other.pem" in err


def test_missing_signature_with_key_fails(made: dict[str, Any], copy: Path) -> None:
    (copy / "manifest.sig").unlink()
    code, _, err = verify(copy, "--key", str(made["work"] / "public.pem"), "--no-rerun")
    assert code == 2 and "manifest.sig is missing" in err


def test_verify_of_a_folder_that_is_no_bundle(tmp_path: Path) -> None:
    code, _, err = verify(tmp_path)
    assert code == 2 and "manifest.json: cannot read the manifest" in err
    assert "Traceback" not in err


def test_export_refuses_a_folder_with_files(made: dict[str, Any]) -> None:
    code, _, err = cli(["export", "--out", "bundle"], made["env"], made["work"])
    assert code == 2 and "is not an empty folder" in err


def _text(html: str) -> str:
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", html)).split())


def test_report_scope_states_the_populations_of_the_run(made: dict[str, Any]) -> None:
    html = (made["bundle"] / "reports" / "report.html").read_text(encoding="utf-8")
    scope = _text(html[html.index('<section id="scope"') : html.index('<h2 id="summary"')])
    reports = len((made["bundle"] / "reports.jsonl").read_text().splitlines())
    repos = len({json.loads(line)["repoUrl"] for line in
                 (made["bundle"] / "reports.jsonl").read_text().splitlines()})  # fmt: skip
    assert "Organisation acme" in scope
    assert "Settings revisions evaluated 60" in scope
    assert "Change steps (consecutive revision pairs) 59" in scope
    assert f"Repositories with a readiness report {repos}" in scope
    assert re.search(
        rf"Readiness reports \({repos} evaluated: the newest per repository\) {reports}\b", scope
    )
    assert re.search(r"Period covered \d{4}-\d\d-\d\d \d\d:\d\d UTC to 2026-", scope)
    assert "As of" not in scope


def test_export_as_of_a_date_says_so(made: dict[str, Any], tmp_path: Path) -> None:
    code, _, err = cli(
        ["export", "--out", str(tmp_path / "asof"), "--at", "2026-10-01"], made["env"], made["work"]
    )
    assert code == 0, err
    html = (tmp_path / "asof" / "reports" / "report.html").read_text(encoding="utf-8")
    scope = _text(html[html.index('<section id="scope"') : html.index('<h2 id="summary"')])
    assert "As of 2026-10-01 23:59 UTC" in scope
    params = json.loads((tmp_path / "asof" / "run-parameters.json").read_text())
    assert params["at"].startswith("2026-10-01T23:59:59")
    assert verify(tmp_path / "asof")[0] == 0


def test_export_without_usage_says_which_rules_were_left_out_and_verifies(
    made: dict[str, Any], tmp_path: Path
) -> None:
    out = tmp_path / "nousage"
    code, _, err = cli(["export", "--out", str(out), "--no-usage"], made["env"], made["work"])
    assert code == 0, err
    html = (out / "reports" / "report.html").read_text(encoding="utf-8")
    scope = _text(html[html.index('<section id="scope"') : html.index('<h2 id="summary"')])
    assert re.search(r"Rules left out \d+ usage rule\(s\), not evaluated: --no-usage", scope)
    assert "Rules left out" not in _text(
        (made["bundle"] / "reports" / "report.html").read_text(encoding="utf-8")
    )
    assert verify(out)[0] == 0  # the re-run leaves the same rules out


def test_a_bundle_whose_sarif_was_cut_to_the_upload_limit_verifies(
    made: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """findings.sarif written with fewer results to keep within code scanning's upload limit is
    what the re-run gives too: verify reproduces it, not a false "differs from the re-run's"."""
    whole = made["bundle"] / "reports" / "findings.sarif"
    monkeypatch.setattr(sarif, "UPLOAD_LIMIT", sarif.gzip_size(whole) // 2)
    out = tmp_path / "cut"
    argv = ["export", "--out", str(out), "--waivers", "waivers.yaml"]
    code, _, err = cli(argv, made["env"], made["work"])
    assert (code, err) == (0, ""), err
    run = json.loads((out / "reports" / "findings.sarif").read_text(encoding="utf-8"))["runs"][0]
    assert run["properties"]["resultsLeftOut"] > 0
    code, said, err = verify(out)
    assert (code, err) == (0, ""), said + err
    assert re.search(r"the re-run reproduced [^;]*reports/findings\.sarif[^;]* byte for byte", said)


def test_a_file_swapped_for_a_link_is_named(copy: Path) -> None:
    target = copy / "reports" / "junit.xml"
    saved = copy.parent / "junit.xml"
    target.rename(saved)
    target.symlink_to(saved)  # same bytes, but no longer the bundle's own file
    err = _refused(copy)
    assert any("altered: reports/junit.xml is not a regular file" in p for p in _problems(err))


def _moved_out(path: Path) -> None:
    """`path` moved beside the bundle and a link to it put in its place: the same bytes, but
    no longer the bundle's own (an archive or a copy of the folder keeps the link alone)."""
    saved = path.parent.parent / f"elsewhere-{path.name}"
    path.rename(saved)
    path.symlink_to(saved)


def test_a_manifest_or_signature_that_is_a_link_is_refused(
    made: dict[str, Any], copy: Path
) -> None:
    """Both were read through the link: "Verified …, signature valid", exit 0, where a listed
    file that is a link was refused."""
    key = str(made["work"] / "public.pem")
    _moved_out(copy / "manifest.sig")
    for args in (("--key", key), ()):
        code, out, err = verify(copy, *args, "--no-rerun")
        assert (code, out) == (2, "")
        assert _problems(err) == [
            "auditor: verify: altered: manifest.sig is not a regular file (a symbolic link)"
        ]
    _moved_out(copy / "manifest.json")
    code, out, err = verify(copy, "--key", key, "--no-rerun")
    assert (code, out) == (2, "")
    assert err == (
        f"auditor: error: {copy / 'manifest.json'}: cannot read the manifest: a symbolic link, "
        "not the bundle's own file (a copy or an archive of the folder keeps only the link): "
        "put the manifest itself in its place\n"
    )


def test_a_folder_that_is_a_link_is_named_and_its_files_not_read(
    made: dict[str, Any], copy: Path
) -> None:
    """`inputs` (or `reports`) moved out and linked: it was only `extra: inputs (not listed
    in manifest.json)`, and every file listed under it was read through the link and matched
    (the re-run "reproduced" the reports behind it)."""
    listed = json.loads((copy / "manifest.json").read_text())["files"]
    under = {
        folder: sum(name.startswith(f"{folder}/") for name in listed)
        for folder in ("inputs", "reports")
    }
    _moved_out(copy / "inputs")
    err = _refused(copy, "--no-rerun")
    assert _problems(err) == [
        f"auditor: verify: altered: inputs is a symbolic link, not a folder of the bundle: the "
        f"{under['inputs']} file(s) manifest.json lists under it were not read through it"
    ]
    (copy / "inputs").unlink()
    (copy.parent / "elsewhere-inputs").rename(copy / "inputs")
    _moved_out(copy / "reports")
    code, out, err = verify(copy)
    assert (code, out) == (2, "")
    assert _problems(err) == [
        f"auditor: verify: altered: reports is a symbolic link, not a folder of the bundle: the "
        f"{under['reports']} file(s) manifest.json lists under it were not read through it"
    ]


def test_a_listed_file_or_an_extra_entry_is_named_for_what_it_is(copy: Path) -> None:
    """A listed file that is a named pipe was "a link or a device"; an unlisted link was
    named as a file would be."""
    (copy / "reports.csv").unlink()
    os.mkfifo(copy / "reports.csv")
    (copy / "changes.csv").unlink()
    (copy / "changes.csv").mkdir()
    (copy / "reports" / "latest").symlink_to("findings.json")
    err = _refused(copy, "--no-rerun")
    assert _problems(err) == [
        "auditor: verify: altered: changes.csv is not a regular file (a folder)",
        "auditor: verify: altered: reports.csv is not a regular file (a named pipe)",
        "auditor: verify: extra: reports/latest (a symbolic link, not listed in manifest.json)",
    ]


def test_rerun_catches_data_changed_with_a_rewritten_manifest(copy: Path) -> None:
    """Without a signature the hashes can be rewritten; the re-run still notices."""
    data = copy / "revisions.jsonl"
    data.write_text("".join(data.read_text().splitlines(keepends=True)[:-1]))  # drop the last
    manifest = json.loads((copy / "manifest.json").read_text())
    manifest["files"]["revisions.jsonl"]["sha256"] = hashlib.sha256(data.read_bytes()).hexdigest()
    manifest["files"]["revisions.jsonl"]["bytes"] = data.stat().st_size
    (copy / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    err = _refused(copy)
    problems = _problems(err)
    assert "auditor: verify: re-run: reports/findings.json differs from the re-run's" in "\n".join(
        problems
    )
    assert not any("altered" in p or "missing" in p for p in problems)


def test_a_report_blown_up_with_a_rewritten_manifest_is_named_with_both_sizes(copy: Path) -> None:
    """A kept report far larger than the re-run's is not read whole: verify says both sizes."""
    report = copy / "reports" / "findings.json"
    fresh_size = report.stat().st_size
    report.write_bytes(report.read_bytes() + b" " * (3 * fresh_size + (1 << 20)))
    manifest = json.loads((copy / "manifest.json").read_text())
    manifest["files"]["reports/findings.json"]["sha256"] = hashlib.sha256(
        report.read_bytes()
    ).hexdigest()
    manifest["files"]["reports/findings.json"]["bytes"] = report.stat().st_size
    (copy / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    err = _refused(copy)
    (problem,) = _problems(err)
    assert problem.startswith(
        "auditor: verify: re-run: reports/findings.json differs from the re-run's (it is "
    )
    assert f"the re-run's {fresh_size:,} bytes)" in problem


def test_a_failed_export_leaves_no_half_bundle(made: dict[str, Any], tmp_path: Path) -> None:
    (tmp_path / "broken.yaml").write_text("rules:\n  - id: X\n    when: [\n", encoding="utf-8")
    out = tmp_path / "half"
    code, _, err = cli(
        ["export", "--out", str(out), "--policy", str(tmp_path / "broken.yaml")],
        made["env"],
        made["work"],
    )
    assert code == 2 and "broken.yaml:" in err
    assert not out.exists()  # the folder it would have made is not left behind either
    out.mkdir()  # an empty folder given by the user stays, empty
    code, _, err = cli(
        ["export", "--out", str(out), "--policy", str(tmp_path / "broken.yaml")],
        made["env"],
        made["work"],
    )
    assert code == 2 and out.is_dir() and not list(out.iterdir())
    deep = tmp_path / "new" / "er" / "half"  # parents it made go too
    code, _, err = cli(
        ["export", "--out", str(deep), "--policy", str(tmp_path / "broken.yaml")],
        made["env"],
        made["work"],
    )
    assert code == 2 and not (tmp_path / "new").exists()


@pytest.mark.parametrize("where", ["absolute", "parent"])
def test_run_parameters_naming_a_file_outside_the_bundle_fail_verify(
    copy: Path, where: str
) -> None:
    """A bundle that is not self-contained is not evidence: the re-run reads the bundle alone."""
    params_path = copy / "run-parameters.json"
    params = json.loads(params_path.read_text())
    inside = copy / params["policies"][0]["bundled"]
    outside = copy.parent / "elsewhere.yaml"
    outside.write_bytes(inside.read_bytes())
    inside.unlink()
    params["policies"][0]["bundled"] = str(outside) if where == "absolute" else "../elsewhere.yaml"
    params_path.write_text(json.dumps(params, indent=2) + "\n")
    manifest = json.loads((copy / "manifest.json").read_text())
    del manifest["files"][str(inside.relative_to(copy))]
    manifest["files"]["run-parameters.json"]["sha256"] = hashlib.sha256(
        params_path.read_bytes()
    ).hexdigest()
    manifest["files"]["run-parameters.json"]["bytes"] = params_path.stat().st_size
    (copy / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    err = _refused(copy)
    assert "is not a file inside the bundle" in err and "Traceback" not in err


def test_verify_of_a_path_that_is_no_folder_says_which(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    code, _, err = verify(tmp_path / "file")
    assert code == 2 and "file: not a folder (give the evidence bundle's folder)" in err
    code, _, err = verify(tmp_path / "gone")
    assert code == 2 and "gone: no such folder (give the evidence bundle's folder)" in err


def test_export_as_of_before_the_first_revision_is_one_clear_error(
    made: dict[str, Any], tmp_path: Path
) -> None:
    out = tmp_path / "early"
    code, _, err = cli(
        ["export", "--out", str(out), "--at", "2000-01-01"], made["env"], made["work"]
    )
    assert code == 2 and "is before the first stored settings revision" in err
    assert not out.exists()  # no bundle that says nothing was in force, yet verifies


def test_a_report_left_out_of_a_rewritten_manifest_is_named_once_as_extra(copy: Path) -> None:
    """A report the manifest no longer lists is not hashed; the re-run still reproduces it, so
    the only problem is that it is not listed (not that it changed while being verified)."""
    manifest = json.loads((copy / "manifest.json").read_text())
    del manifest["files"]["reports/report.md"]
    (copy / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    err = _refused(copy)
    assert _problems(err) == [
        "auditor: verify: extra: reports/report.md (not listed in manifest.json)"
    ]


def test_a_bundle_file_that_cannot_be_read_is_named_not_a_crash(
    copy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file verify cannot open (permissions, an I/O error) is a problem line naming it and
    exit 2, whether the manifest lists it or not, never an unexpected error."""
    real = verify_module.file_digest

    def refusing(path: Path) -> Any:
        if path.name in ("changes.csv", "findings.json"):
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)

    monkeypatch.setattr(verify_module, "file_digest", refusing)
    manifest = json.loads((copy / "manifest.json").read_text())
    del manifest["files"]["reports/findings.json"]  # an unlisted report: the re-run hashes it
    (copy / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    code, _, err = verify(copy)
    assert code == 2 and "unexpected" not in err
    assert "unreadable: changes.csv (Permission denied)" in err
    assert "unreadable: reports/findings.json (Permission denied)" in err


def test_a_listed_report_that_cannot_be_read_is_named_once(
    copy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The file check named it, then the re-run hashed it again and named it a second time."""
    real = verify_module.file_digest

    def refusing(path: Path) -> Any:
        if path.name == "findings.json":
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)

    monkeypatch.setattr(verify_module, "file_digest", refusing)
    err = _refused(copy)
    assert err.count("unreadable: reports/findings.json (Permission denied)") == 1


def test_rerun_names_a_revision_edited_in_the_bundle_with_a_rewritten_manifest(
    copy: Path,
) -> None:
    """Without a signature the hashes can be rewritten; a revision whose settings no longer
    match the contentHash beside them is named with its line, not re-run as if stored."""
    data = copy / "revisions.jsonl"
    lines = data.read_text().splitlines(keepends=True)
    item = json.loads(lines[1])
    item["settings"]["quietlyAdded"] = True
    lines[1] = json.dumps(item) + "\n"
    data.write_text("".join(lines))
    manifest = json.loads((copy / "manifest.json").read_text())
    manifest["files"]["revisions.jsonl"]["sha256"] = hashlib.sha256(data.read_bytes()).hexdigest()
    manifest["files"]["revisions.jsonl"]["bytes"] = data.stat().st_size
    (copy / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    err = _refused(copy)
    assert (
        f"revisions.jsonl:2: not a stored item (ValueError: the settings of revision "
        f"{item['revision']} do not match its contentHash)"
    ) in err


def test_a_bundle_another_release_made_is_named_as_such_when_its_rerun_differs(
    copy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reports change between releases (a field added, a namespace moved): a re-run by another
    release that differs says which release made the bundle, so it does not read as tampering.
    The bundle is this release's; the auditor verifying it says it is 9.9.9."""
    monkeypatch.setattr(verify_module, "__version__", "9.9.9")
    report = copy / "reports" / "findings.sarif"
    report.write_text(report.read_text().replace('"version"', '"semanticVersion"', 1))
    manifest = json.loads((copy / "manifest.json").read_text())
    manifest["files"]["reports/findings.sarif"]["sha256"] = hashlib.sha256(
        report.read_bytes()
    ).hexdigest()
    manifest["files"]["reports/findings.sarif"]["bytes"] = report.stat().st_size
    (copy / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    err = _refused(copy)
    (problem,) = _problems(err)
    assert problem.startswith("auditor: verify: re-run: reports/findings.sarif differs")
    assert f"made by auditor {auditor.__version__} and this is 9.9.9" in problem
    assert "--no-rerun" in problem
    code, said, err = verify(copy, "--no-rerun")  # the hashes still hold
    assert code == 0 and "files match manifest.json" in said, said + err


def test_a_bundle_an_older_release_made_verifies_with_a_newer_one(
    copy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The manifest's toolVersion is checked against the bundle's own files (findings.json's
    tool.version), never against the release verifying it: a bundle of this release verified
    by a later one (9.9.9 here) whose reports are the same still verifies, facts and all."""
    monkeypatch.setattr(verify_module, "__version__", "9.9.9")
    for extra in ((), ("--no-rerun",)):
        code, said, err = verify(copy, *extra)
        assert (code, err) == (0, "auditor: note: manifest.sig present but not checked: "
                               "give --key PUBLIC.pem\n"), err  # fmt: skip
        assert "files match manifest.json" in said


def test_a_manifest_over_16_mib_is_refused_unread(copy: Path) -> None:
    """A manifest of made-up entries up to 1 GiB was read and every entry named missing."""
    manifest = copy / "manifest.json"
    data = json.loads(manifest.read_text())
    data["files"].update({f"x/{i:07d}": {"bytes": 1, "sha256": "0" * 64} for i in range(200_000)})
    manifest.write_text(json.dumps(data))
    assert manifest.stat().st_size > 16 << 20
    code, out, err = verify(copy, "--no-rerun")
    assert code == 2 and out == "" and "missing" not in err
    assert (
        f"manifest.json: cannot read the manifest: file is {manifest.stat().st_size} bytes" in err
    )


def test_a_key_given_as_its_pem_text_is_not_printed(made: dict[str, Any], copy: Path) -> None:
    """`--sign-key "$SIGNING_KEY"` (a CI secret holding the key's PEM, not a path to it) named
    the file it could not read, the private key, in the error."""
    pem = (made["work"] / "signing.pem").read_text()
    body = pem.splitlines()[1]
    for argv in (
        ["export", "--out", "again", "--sign-key", pem],
        ["export", "--out", "again", "--sign-key", body],
        ["verify", str(copy), "--key", pem],
    ):
        code, out, err = cli(argv, made["env"], made["work"])
        assert code == 2 and "cannot read" in err, err
        assert body not in out + err and body[10:40] not in out + err
        assert "<not shown: looks like a secret>" in err
    assert not (made["work"] / "again").exists()


def test_a_key_body_with_slashes_given_as_the_key_path_is_not_printed(
    made: dict[str, Any],
) -> None:
    """A key's base64 body holds `/` as often as not: judged name by name between them, no
    piece looked like a secret and the body was printed (a fresh-clone CI run failed the test
    above on such a random key). This body, from that run, is judged whole."""
    body = "MC4CAQAwBQYDK2VwBCIEILI/ioR3+zsVRpBey5CWvnf/wGJSTshZ1tEleFzIK+uP"
    code, out, err = cli(
        ["export", "--out", "again", "--sign-key", body], made["env"], made["work"]
    )
    assert code == 2 and "cannot read" in err, err
    for piece in body.split("/"):
        assert piece not in out + err
    assert "<not shown: looks like a secret>" in err


def test_a_secret_written_in_an_input_file_is_copied_as_its_marker_and_the_bundle_verifies(
    made: dict[str, Any], tmp_path: Path
) -> None:
    """A key pasted into a policy (`auditor policy lint` warns of it) or a waiver reaches no
    file of the bundle handed to auditors: the copies in inputs/ hold its marker, the same as
    the reports show, and the rest of each file as written; the bundle verifies, signed, and
    its re-run reads the copies."""
    from tests.test_policy_secrets import KEY, POLICY

    work, env = made["work"], made["env"]
    policy = POLICY + f"  # the old one was {KEY[::-1]}\n"
    (work / "leaky.yaml").write_text(policy)
    waiver = WAIVER.replace("reason: ", f"reason: Key {KEY} is kept. ")
    (work / "leaky-waivers.yaml").write_text(waiver.replace("SEC-2001", f"SEC-2001  # {KEY}"))
    out = tmp_path / "b"
    argv = ["export", "--out", str(out), "--policy", "leaky.yaml", "--sign-key", "signing.pem"]
    code, stdout, err = cli([*argv, "--waivers", "leaky-waivers.yaml"], env, work)
    assert (code, err) == (0, ""), err
    files = [p for p in out.rglob("*") if p.is_file()]
    leaks = [p.name for p in files if any(s in p.read_text() for s in (KEY, KEY[4:], KEY[::-1]))]
    assert leaks == [] and KEY not in stdout
    copy = (out / "inputs/policies/001-leaky.yaml").read_text()
    marker = re.search(r"\[secret fp:[0-9a-f]+ len:40\]", copy)
    assert marker is not None
    assert copy.startswith(POLICY.split("    assert:")[0])  # the rest as written
    reported = json.loads((out / "reports/findings.json").read_text())
    assert marker.group() in reported["rules"][0]["description"]  # the reports' marker
    params = json.loads((out / "run-parameters.json").read_text())
    assert params["policies"][0]["redacted"] is True and params["waivers"]["redacted"] is True
    # no digest of the original: with the copy and the marker's length it would confirm a
    # guessed secret offline
    original = hashlib.sha256(policy.encode()).hexdigest()
    assert "sha256" not in params["policies"][0]
    assert not [p.name for p in files if original in p.read_text()]
    assert "inputs/" in json.loads((out / "manifest.json").read_text())["secrets"]
    code, said, err = verify(out, "--key", str(work / "public.pem"))
    assert (code, err) == (0, ""), err
    assert "byte for byte" in said
    # the nightly's reports show the waiver's reason as its marker too
    argv = ["run", "--offline", "--waivers", "leaky-waivers.yaml", "--out", str(tmp_path / "r")]
    code, stdout, err = cli([*argv, "--no-usage"], env, work)
    assert code == 1, err
    waived = json.loads((tmp_path / "r" / "findings.json").read_text())["findings"]
    assert any(f["status"] == "waived" and "[secret fp:" in json.dumps(f) for f in waived)
    written = [p.read_text() for p in (tmp_path / "r").iterdir()]
    assert not [t for t in [stdout, err, *written] if KEY in t or KEY[4:] in t]


def test_a_policy_file_named_like_a_secret_is_not_named_in_the_bundle_or_reports(
    made: dict[str, Any], tmp_path: Path
) -> None:
    """A key in a policy file's *name* reached the names in inputs/, manifest.json,
    run-parameters.json and the reports; that name now reads `<not shown: looks like a
    secret>` (its copy `NNN-not-shown.yaml`), and the bundle verifies."""
    from tests.test_policy_secrets import KEY, POLICY

    work, env = made["work"], made["env"]
    (work / f"{KEY}.yaml").write_text(POLICY.replace(KEY, "plain-value"))
    out = tmp_path / "b"
    code, stdout, err = cli(["export", "--out", str(out), "--policy", f"{KEY}.yaml"], env, work)
    assert (code, err) == (0, ""), err
    files = [p for p in out.rglob("*") if p.is_file()]
    assert (out / "inputs/policies/001-not-shown.yaml").is_file()
    assert not [p for p in files if KEY[4:20] in str(p) or KEY[4:20] in p.read_text()]
    assert KEY[4:20] not in stdout
    params = json.loads((out / "run-parameters.json").read_text())
    assert params["policies"][0]["shown"] == "<not shown: looks like a secret>.yaml"
    code, said, err = verify(out)
    assert (code, err) == (0, ""), err
    argv = ["run", "--offline", "--policy", f"{KEY}.yaml", "--out", str(tmp_path / "r")]
    code, said, err = cli([*argv, "--no-usage"], env, work)
    assert code in (0, 1), err
    written = [p.read_text() for p in (tmp_path / "r").iterdir()]
    assert not [t for t in [said, err, *written] if KEY[4:20] in t]


def test_a_policy_file_whose_suffix_is_a_secret_is_copied_under_a_plain_suffix(
    made: dict[str, Any], tmp_path: Path
) -> None:
    """`policy.<token>`: the name was hidden, but its copy kept `Path(name).suffix`, the token
    itself (`001-not-shown.<token>`), in inputs/ and run-parameters.json."""
    from tests.test_policy_secrets import KEY, POLICY

    work, env = made["work"], made["env"]
    (work / f"policy.{KEY}").write_text(POLICY.replace(KEY, "plain-value"))
    out = tmp_path / "b"
    code, stdout, err = cli(["export", "--out", str(out), "--policy", f"policy.{KEY}"], env, work)
    assert (code, err) == (0, ""), err
    assert (out / "inputs/policies/001-not-shown.yaml").is_file()
    files = [p for p in out.rglob("*") if p.is_file()]
    assert not [p for p in files if KEY[4:20] in str(p) or KEY[4:20] in p.read_text()]
    assert KEY[4:20] not in stdout
    assert verify(out)[0] == 0


def test_two_policy_files_named_like_secrets_stay_two_in_the_reports_and_the_run_record(
    made: dict[str, Any], tmp_path: Path
) -> None:
    """Two policy files whose names both read `<not shown: looks like a secret>` were one
    entry in the run's record of policy hashes (the second file's hash in place of the
    first's) and two entries of the same name in findings.json; the second is now shown
    `… (2)`, so each file keeps its own entry."""
    import sqlite3
    from contextlib import closing

    from tests.test_policy_secrets import KEY, POLICY

    work, env = made["work"], made["env"]
    other = "ghp_Zx98Wv76Ut54Sr32Qp10On98Ml76Kj54Ih32"
    (work / f"{KEY}.yaml").write_text(POLICY.replace(KEY, "plain-value"))
    (work / f"{other}.yaml").write_text(
        POLICY.replace(KEY, "other-value").replace("T-LEAKED-KEY", "T-OTHER-KEY")
    )
    out = tmp_path / "r"
    argv = ["run", "--offline", "--no-usage", "--out", str(out), "-o", "json"]
    code, said, err = cli(
        [*argv, "--policy", f"{KEY}.yaml", "--policy", f"{other}.yaml"], env, work
    )
    assert code in (0, 1), err
    files = json.loads((out / "findings.json").read_text())["policy_files"]
    shown = {f["path"]: f["rule_ids"] for f in files}
    assert shown == {
        "<not shown: looks like a secret>.yaml": ["T-LEAKED-KEY"],
        "<not shown: looks like a secret>.yaml (2)": ["T-OTHER-KEY"],
    }, shown
    state = env["AUDITOR_STATE"]
    with closing(sqlite3.connect(state)) as db, db:
        recorded = json.loads(db.execute("SELECT policy_hashes FROM runs").fetchall()[-1][0])
    assert len(recorded) == 2 and {f["sha256"] for f in files} == set(recorded.values())
    assert not [t for t in [said, err, json.dumps(files)] if KEY[4:20] in t or other[4:20] in t]


def test_bundle_files_get_0666_less_the_umask(made: dict[str, Any]) -> None:
    # not 0600 whatever the umask (mkstemp's): an auditor's group can read what they are sent
    mask = os.umask(0o022)
    os.umask(mask)
    files = [p for p in made["bundle"].rglob("*") if p.is_file()]
    assert len(files) > 10
    modes = {str(p.relative_to(made["bundle"])): stat.S_IMODE(p.stat().st_mode) for p in files}
    assert modes == dict.fromkeys(modes, 0o666 & ~mask)


def test_a_file_of_another_size_is_named_with_both_sizes_without_hashing_it(
    copy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # manifest.json gives each file's size: a 50 GB file swapped in is named at once, where
    # hashing it first took minutes
    listed = json.loads((copy / "manifest.json").read_text())["files"]
    for name in ("reports.csv", "reports/findings.json"):
        with (copy / name).open("ab") as fh:
            fh.write(b"x" * 20)
    real = verify_module.file_digest
    hashed: list[str] = []

    def recording(path: Path) -> Any:
        hashed.append(path.relative_to(copy).as_posix())
        return real(path)

    monkeypatch.setattr(verify_module, "file_digest", recording)
    err = _refused(copy)
    for name in ("reports.csv", "reports/findings.json"):
        size = listed[name]["bytes"]
        assert (
            f"auditor: verify: altered: {name} ({size + 20:,} bytes, manifest.json says {size:,})"
            in _problems(err)
        )
        assert name not in hashed
    assert any("re-run: reports/findings.json differs" in p for p in _problems(err))


class _TermOnWrite(io.StringIO):
    def write(self, text: str) -> int:
        raise Terminated


@pytest.mark.parametrize("when", ["store-closed", "line-printed"])
def test_an_export_interrupted_once_the_manifest_is_written_leaves_no_bundle(
    made: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, when: str
) -> None:
    # SIGTERM (a CI cancel) just after manifest.json: exit 143 and a complete bundle that
    # verified, which a CI script took for a failed export; now exit 143 means no bundle
    from auditor.store.database import Store

    out = tmp_path / "given" / "bundle"
    stdout: io.StringIO = io.StringIO()
    if when == "store-closed":
        real = Store.close

        def close_then_term(self: Store) -> None:
            real(self)
            if (out / "manifest.json").is_file():  # the state file's, not the re-run's scratch
                raise Terminated

        monkeypatch.setattr(Store, "close", close_then_term)
    else:
        stdout = _TermOnWrite()
    err = io.StringIO()
    ctx = Context(env=made["env"], stdout=stdout, stderr=err, clock=lambda: FIXED_NOW,
                  cwd=str(made["work"]))  # fmt: skip
    code = main(["export", "--out", str(out)], ctx)
    assert (code, err.getvalue()) == (143, "auditor: exit 143: terminated (SIGTERM)\n")
    assert not (tmp_path / "given").exists()


def test_an_export_whose_closing_line_cannot_be_printed_leaves_no_bundle(
    made: dict[str, Any], tmp_path: Path
) -> None:
    # exit 0 means a complete bundle, any other exit none: a full disk under stdout (exit 2),
    # as any failure, removes the bundle it had written (README, Evidence bundle)
    out = tmp_path / "full"
    err = io.StringIO()
    full = open("/dev/full", "w")  # noqa: SIM115 (closed below, its last flush failing too)
    try:
        ctx = Context(env=made["env"], stdout=full, stderr=err, clock=lambda: FIXED_NOW,
                      cwd=str(made["work"]))  # fmt: skip
        code = main(["export", "--out", str(out), "--no-usage"], ctx)
    finally:
        with contextlib.suppress(OSError):
            full.close()
    assert code == 2, err.getvalue()
    assert "cannot write to standard output" in err.getvalue()
    assert not out.exists()


def _rewritten(bundle: Path, name: str, text: str) -> None:
    """`name` in the bundle replaced, its manifest entry rewritten to match (no signature)."""
    (bundle / name).write_text(text)
    manifest = json.loads((bundle / "manifest.json").read_text())
    manifest["files"][name]["sha256"] = hashlib.sha256((bundle / name).read_bytes()).hexdigest()
    manifest["files"][name]["bytes"] = (bundle / name).stat().st_size
    (bundle / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")


_ISSUE = {"revision": 3, "reportId": None, "storedHash": "a", "seenHash": "b"}


@pytest.mark.parametrize(
    ("issues", "said"),
    [
        pytest.param(
            [{**_ISSUE, "reportId": "r-1", "seenAt": "2026-11-01T00:00:00+00:00"}],
            "$[0]: names both or neither of `revision` and `reportId`",
            id="both",
        ),
        pytest.param(
            [{**_ISSUE, "seenAt": None}], "$[0].seenAt: missing (empty or null)", id="no-time"
        ),
        pytest.param({"revision": 3}, "$: not a list of integrity issues", id="not-a-list"),
        # was `unexpected OverflowError: Python int too large to convert to SQLite INTEGER`
        pytest.param(
            [{**_ISSUE, "revision": 10**23, "seenAt": "2026-11-01T00:00:00+00:00"}],
            "$[0]: not an integrity issue (OverflowError",
            id="huge",
        ),
    ],
)
def test_a_malformed_integrity_file_is_named_by_verify(copy: Path, issues: Any, said: str) -> None:
    """Its contents were checked with `assert`, which `python -O` strips: now explicit checks,
    the file and the JSON path named, exit 2, no traceback."""
    _rewritten(copy, "integrity.json", json.dumps(issues))
    code, out, err = verify(copy)
    assert code == 2, (out, err)
    assert f"{copy / 'integrity.json'}: {said}" in err, err
    assert "Traceback" not in out + err


def test_a_malformed_integrity_file_is_named_under_python_o(copy: Path) -> None:
    """The same under `python -O` (the asserts were skipped: the issue stored as given)."""
    import subprocess
    import sys

    issue = {**_ISSUE, "reportId": "r-1", "seenAt": "2026-11-01T00:00:00+00:00"}
    _rewritten(copy, "integrity.json", json.dumps([issue]))
    done = subprocess.run(
        [sys.executable, "-O", "-m", "auditor", "verify", str(copy)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=copy.parent,
        env={**os.environ, "NO_COLOR": "1"},
    )
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "names both or neither of `revision` and `reportId`" in done.stderr
    assert "Traceback" not in done.stdout + done.stderr


# -- the re-run and the bundle's JSON lines, read a line at a time (problems 1 and 2 of T16) --


def _rehashed(bundle: Path, name: str) -> None:
    """The manifest entry of `name` rewritten to match the file as it is now (no signature)."""
    manifest = json.loads((bundle / "manifest.json").read_text())
    manifest["files"][name]["sha256"] = hashlib.sha256((bundle / name).read_bytes()).hexdigest()
    manifest["files"][name]["bytes"] = (bundle / name).stat().st_size
    (bundle / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")


def test_a_report_changed_with_a_rewritten_manifest_is_named_at_its_first_changed_line(
    copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The re-run's report is written to a scratch file and compared line by line: the line
    an editor shows is named, and the scratch folder is gone afterwards."""
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr("tempfile.tempdir", str(scratch))
    report = copy / "reports" / "findings.json"
    lines = report.read_bytes().splitlines(keepends=True)
    assert len(lines) > 12
    lines[11] = lines[11].replace(b'"', b"'", 1)
    report.write_bytes(b"".join(lines))
    _rehashed(copy, "reports/findings.json")
    err = _refused(copy)
    assert _problems(err) == [
        "auditor: verify: re-run: reports/findings.json differs from the re-run's "
        "(first at line 12)"
    ]
    assert list(scratch.iterdir()) == []


def test_a_report_cut_short_is_named_at_the_line_after_its_last(copy: Path) -> None:
    report = copy / "reports" / "junit.xml"
    lines = report.read_bytes().splitlines(keepends=True)
    report.write_bytes(b"".join(lines[:5]))
    _rehashed(copy, "reports/junit.xml")
    err = _refused(copy)
    assert _problems(err) == [
        "auditor: verify: re-run: reports/junit.xml differs from the re-run's (first at line 6)"
    ]


def test_a_report_that_changes_back_while_being_verified_is_named_so(
    copy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hash check saw other bytes than the re-run's, the line by line reading sees the
    same: the file changed on disk in between (simulated by the digest the check kept)."""
    real = verify_module._digest

    def seen_other(path: Path, name: str, out: Any) -> Any:
        found = real(path, name, out)
        return ("0" * 64, found[1]) if name == "reports/report.md" and found else found

    monkeypatch.setattr(verify_module, "_digest", seen_other)
    err = _refused(copy)
    assert (
        "auditor: verify: re-run: reports/report.md differs from the re-run's: the file changed "
        "while it was being verified"
    ) in _problems(err)


@pytest.mark.parametrize("name", ["revisions.jsonl", "reports.jsonl", "analytics.jsonl"])
def test_a_bundle_line_that_is_not_json_is_named_with_its_file_and_line(
    copy: Path, name: str
) -> None:
    data = copy / name
    lines = data.read_bytes().splitlines(keepends=True)
    assert len(lines) >= 3, name
    lines[2] = b"{not json\n"
    data.write_bytes(b"".join(lines))
    _rehashed(copy, name)
    err = _refused(copy)
    assert f"{data}:3: not valid JSON: " in err, err
    assert "Traceback" not in err


def test_a_bundle_without_a_final_newline_or_with_crlf_lines_still_verifies(copy: Path) -> None:
    """Lines are what a split of the whole file gave: CRLF ends and a last line without its
    newline read as before."""
    data = copy / "revisions.jsonl"
    data.write_bytes(data.read_bytes().replace(b"\n", b"\r\n").removesuffix(b"\r\n"))
    _rehashed(copy, "revisions.jsonl")
    code, said, err = verify(copy)
    assert code == 0 and "byte for byte" in said, said + err


def _fifo(path: Path) -> str:
    os.mkfifo(path)
    return "altered: revisions.jsonl is not a regular file (a named pipe)"


def _to_dev_zero(path: Path) -> str:
    path.symlink_to("/dev/zero")
    return "altered: revisions.jsonl is not a regular file (a symbolic link)"


def _over_16_gib(path: Path) -> str:
    os.truncate(path, (1 << 34) + 1)  # sparse: no disk used
    return f"altered: revisions.jsonl ({(1 << 34) + 1:,} bytes, manifest.json says"


@pytest.mark.parametrize("make", [_fifo, _to_dev_zero, _over_16_gib])
def test_a_hostile_revisions_file_is_refused_by_the_rerun_not_read(copy: Path, make: Any) -> None:
    """A FIFO is not waited on, /dev/zero not read for ever, a file over the 16 GiB cap not
    read at all (a child process with a time limit: a hang fails the test, not the suite):
    the file check names it, and the re-run, which would read it, is skipped (T97 #3)."""
    import subprocess
    import sys

    data = copy / "revisions.jsonl"
    if make is not _over_16_gib:
        data.unlink()
    reason = make(data)
    done = subprocess.run(
        [sys.executable, "-m", "auditor", "verify", str(copy)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=copy.parent,
        env={**os.environ, "NO_COLOR": "1"},
    )
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert f"auditor: verify: {reason}" in done.stderr, done.stderr
    assert "auditor: note: re-run skipped: it would read revisions.jsonl," in done.stderr
    assert "Traceback" not in done.stderr


def test_a_full_scratch_disk_stops_verify_with_what_to_do_and_leaves_nothing(
    copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The re-run's reports go to a scratch folder in TMPDIR: a full disk there is exit 2
    saying so (not a problem of the bundle), and the scratch folder is removed."""
    from auditor.errors import ReportError

    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr("tempfile.tempdir", str(scratch))

    def full(data: Any, out_dir: Path, outputs: Any) -> Any:
        (out_dir / "findings.json").write_bytes(b"half")
        raise ReportError(f"cannot write {out_dir / 'findings.json'}: No space left on device")

    monkeypatch.setattr(verify_module, "write_reports", full)
    code, out, err = verify(copy)
    assert code == 2, out + err
    assert "No space left on device (the re-run loads the bundle into a scratch state" in err
    assert "set TMPDIR to a folder with room" in err and "--no-rerun" in err
    assert "Traceback" not in err
    assert list(scratch.iterdir()) == []


@pytest.mark.parametrize("when", ["made", "loaded"])
def test_a_full_disk_under_the_re_runs_scratch_state_file_is_not_the_bundles_problem(
    copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, when: str
) -> None:
    """The re-run loads the bundle into a scratch state file in TMPDIR first, which needs more
    room than any report: a full disk there is exit 2 with what to do (reviewer R9: it was
    "the bundle cannot be evaluated … disk is full" and "does not verify")."""
    import sqlite3

    from auditor.store import database

    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr("tempfile.tempdir", str(scratch))
    # the disk fills as the scratch state file is made (reviewer R10: "is not a usable
    # auditor state file", and the bundle blamed), or part way through loading the history
    name = "build_scrub_index" if when == "made" else "ingest_revision"
    real = getattr(database.Store, name)

    def full(self: Any, *args: Any, **kwargs: Any) -> Any:
        if when == "made" or self.count_revisions() >= 3:
            error = sqlite3.OperationalError("database or disk is full")
            error.sqlite_errorname = "SQLITE_FULL"  # type: ignore[attr-defined]
            raise error
        return real(self, *args, **kwargs)

    monkeypatch.setattr(database.Store, name, full)
    code, out, err = verify(copy)
    assert code == 2, out + err
    assert "database or disk is full (SQLITE_FULL: the disk is full)" in err
    assert "set TMPDIR to a folder with room" in err and "--no-rerun" in err
    assert "does not verify" not in err and "cannot be evaluated" not in err
    assert "Traceback" not in err
    assert list(scratch.iterdir()) == []
