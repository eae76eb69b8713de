"""`verify` of a hand-edited bundle: a secret edited into its manifest.json, run-parameters.json
or a policy copy is never printed (value, key or file name: `<not shown: looks like a
secret>`, also where the value is shortened), nor the command's own token (`[token]`, however
long); `--no-rerun` names every run parameter of a type export never writes at its JSON path,
as the re-run names the first; a run-parameters.json too large to read is a problem, never the
run id left unchecked without a word."""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import run_cli, secret_forms

pytestmark = pytest.mark.e2e

GHP = "ghp_" + "Zq8xW3vB7nM2kL9pR4tY6uI1oA5sD0fG3hJ7"
NOT_SHOWN = "<not shown: looks like a secret>"


def _copy(exported: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(exported, tmp_path / "bundle"))


def _write(bundle: Path, name: str, data: bytes) -> None:
    """Bundle file `name` written with `data`, its manifest entry rewritten to match (as one
    who edits an unsigned bundle would)."""
    (bundle / name).write_bytes(data)
    manifest = json.loads((bundle / "manifest.json").read_text())
    manifest["files"][name] = {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    (bundle / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")


def _params(bundle: Path, change: Callable[[dict[str, Any]], Any]) -> None:
    params = json.loads((bundle / "run-parameters.json").read_text())
    change(params)
    _write(bundle, "run-parameters.json", (json.dumps(params, indent=2) + "\n").encode())


def _manifest(bundle: Path, change: Callable[[dict[str, Any]], Any]) -> None:
    manifest = json.loads((bundle / "manifest.json").read_text())
    change(manifest)
    (bundle / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")


def _deep(levels: int) -> dict[str, Any]:
    value: dict[str, Any] = {"a": 1}
    for _ in range(levels):
        value = {"a": value}
    return {GHP: value}


def _twice(text: str, key: str) -> str:
    """JSON object text with `"GHP": 1` written twice after its key `key`."""
    return text.replace(f'"{key}": ', f'"{GHP}": 1, "{GHP}": 2, "{key}": ', 1)


def _raw_params(bundle: Path) -> None:
    text = (bundle / "run-parameters.json").read_text()
    _write(bundle, "run-parameters.json", _twice(text, "runId").encode())


def _raw_manifest(bundle: Path) -> None:
    text = (bundle / "manifest.json").read_text()
    (bundle / "manifest.json").write_text(_twice(text, "files"))


def _severity(bundle: Path) -> None:
    """A policy copy's first rule's severity set to the token (the re-run's error quotes it)."""
    name = sorted((bundle / "inputs" / "policies").iterdir())[0].relative_to(bundle).as_posix()
    text = (bundle / name).read_text()
    _write(bundle, name, text.replace("severity: ", f"severity: {GHP}\n    x: ", 1).encode())


EDITS: dict[str, Callable[[Path], None]] = {
    # (in full before: `…bytes: expected an integer …, got "ghp_…"`)
    "a file's size": lambda b: _manifest(b, lambda m: m["files"]["changes.csv"].update(bytes=GHP)),
    # `manifest: runId is {"ghp_…":1}, but …`
    "the manifest's run id": lambda b: _manifest(b, lambda m: m.update(runId={GHP: 1})),
    "a field of the manifest": lambda b: _manifest(b, lambda m: m.update({GHP: 1})),
    "a file listed": lambda b: _manifest(
        b, lambda m: m["files"].update({f"{GHP}/x": {"bytes": 1, "sha256": "a" * 64}})
    ),
    "a redaction key": lambda b: _manifest(b, lambda m: m["redaction"].update({GHP: 1})),
    "notReproduced": lambda b: _manifest(
        b,
        lambda m: m.update(
            notReproduced=[{"rule": GHP, "subject": "acme", "run": "pass", "bundle": "fail"}]
        ),
    ),
    # shortened at 40 characters: 38 of the token's shown, which no detector took for one
    "the report time": lambda b: _params(b, lambda p: p.update(reportTime=GHP)),
    "a run parameter's key written twice": _raw_params,
    "the parameters' run id": lambda b: _params(b, lambda p: p.update(runId={GHP: 1})),
    "a run parameter nested too deep": lambda b: _params(b, lambda p: p.update(x=_deep(70))),
    "a policy copy's value": _severity,
    # the diff keys' problems quote a key as written (in full before: review R67 #1)
    "a diff key unknown": lambda b: _params(b, lambda p: p.update(diffKeys={GHP: 1})),
    "a list path under two kinds": lambda b: _params(
        b, lambda p: p.update(diffKeys={"sets": [GHP], "ordered": [GHP]})
    ),
    "a keyed list's path": lambda b: _params(b, lambda p: p.update(diffKeys={"keyed": {GHP: 5}})),
}


@pytest.mark.parametrize("rerun", [True, False], ids=["rerun", "no-rerun"])
@pytest.mark.parametrize("edit", sorted(EDITS))
def test_a_secret_edited_into_a_bundle_is_never_printed(
    exported: Path, tmp_path: Path, edit: str, rerun: bool
) -> None:
    bundle = _copy(exported, tmp_path)
    EDITS[edit](bundle)
    argv = ["verify", str(bundle)] + ([] if rerun else ["--no-rerun"])
    code, out, err = run_cli(argv, {}, tmp_path)
    for form in [*secret_forms(GHP), GHP[:12], GHP[-12:]]:
        assert form not in out + err, err
    if edit == "a policy copy's value" and not rerun:  # not read without the re-run
        assert code == 0, err
        return
    assert NOT_SHOWN in err, err  # (a note of the results not reproduced, without the re-run)
    assert code == (0 if edit == "notReproduced" and not rerun else 2), out + err
    assert "unexpected" not in err and "Traceback" not in err, err


@pytest.mark.parametrize("rerun", [True, False], ids=["rerun", "no-rerun"])
@pytest.mark.parametrize(
    "edit", [_raw_manifest, lambda b: _manifest(b, lambda m: m.update(x=_deep(70)))]
)
def test_a_secret_in_a_manifest_that_cannot_be_read_is_never_printed(
    exported: Path, tmp_path: Path, edit: Callable[[Path], None], rerun: bool
) -> None:
    bundle = _copy(exported, tmp_path)
    edit(bundle)
    argv = ["verify", str(bundle)] + ([] if rerun else ["--no-rerun"])
    code, out, err = run_cli(argv, {}, tmp_path)
    assert code == 2, out + err
    assert err.startswith(f"auditor: error: {bundle}/manifest.json: "), err
    assert NOT_SHOWN in err, err
    for form in [*secret_forms(GHP), GHP[:12], GHP[-12:]]:
        assert form not in out + err, err


def test_the_keys_a_problem_names_are_shown_where_they_are_ordinary(
    exported: Path, tmp_path: Path
) -> None:
    """An ordinary value, key or file name stays as written: only a secret is left out."""
    bundle = _copy(exported, tmp_path)
    _manifest(bundle, lambda m: m.update(runId={"Custom-Run-Key": 1}, Extra_Field_Name=1))
    _params(bundle, lambda p: p.update(reportTime="Not-A-Time-At-All"))
    code, _, err = run_cli(["verify", str(bundle)], {}, tmp_path)
    assert code == 2, err
    assert 'manifest: runId is {"Custom-Run-Key":1}, but' in err, err
    assert "manifest: Extra_Field_Name is not a field auditor writes" in err, err
    assert '$.reportTime: expected a time with its UTC offset, got "Not-A-Time-At-All"' in err
    assert NOT_SHOWN not in err, err


def test_no_rerun_names_every_run_parameter_of_another_type(exported: Path, tmp_path: Path) -> None:
    """`verify --no-rerun` read run-parameters.json for the run id and time alone: a value of a
    type export never writes (which the re-run names) passed as verified, exit 0."""
    bundle = _copy(exported, tmp_path)

    def change(p: dict[str, Any]) -> None:
        p.update(at="2026-06-01T00:00:00", allRevisions=1, failOn="zzz", usageDays=0)
        p.update(apiAddress=["x"], policies=[])
        p["dataSource"]["lastSync"] = 5

    _params(bundle, change)
    code, out, err = run_cli(["verify", "--no-rerun", str(bundle)], {}, tmp_path)
    assert code == 2 and out == "", out + err
    at = f"auditor: verify: {bundle}/run-parameters.json: "
    for line in (
        '$.at: expected a time, or null, got "2026-06-01T00:00:00"',
        '$.apiAddress: expected the service\'s address, got ["x"]',
        "$.allRevisions: expected true or false, got 1",
        '$.failOn: expected one of critical, high, medium, low, info, none, got "zzz"',
        "$.dataSource.lastSync: expected a time with its UTC offset (in UTC within the years "
        "1-9999), or null; got 5",
        "$.policies: expected a non-empty list of the bundled policy files ({bundled, shown}), "
        "got []",
        "$.usageDays: expected a whole number of days from 1 to 3660, or null; got 0",
    ):
        assert f"{at}{line}\n" in err, err
    assert err.endswith(f"auditor: exit 2: the bundle {bundle} does not verify: 7 problem(s)\n")


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (lambda p: p.update(runId=7), "$.runId: expected the run's id, got 7"),
        (lambda p: p.pop("failOn"), "$.failOn: missing (export writes one of critical, "),
        (lambda p: p.update(diffKeys=5), "$.diffKeys"),
        (lambda p: p.update(readinessModel="m.yaml"), "$.readinessModel: expected {bundled, "),
        (lambda p: p.update(usageDays=3660, at="1975-01-01T00:00:00+00:00"), "before 1970-01-01"),
        # a bundled file outside the bundle: `--no-rerun` said `Verified` (review R63 #2)
        (
            lambda p: p["policies"][0].update(bundled="/etc/hostname"),
            "$.policies[0].bundled: '/etc/hostname' is not a file inside the bundle",
        ),
        (
            lambda p: p["policies"][0].update(bundled="../elsewhere.yaml"),
            "$.policies[0].bundled: '../elsewhere.yaml' is not a file inside the bundle",
        ),
        (
            lambda p: p["readinessModel"].update(bundled="/tmp/readiness-model.yaml"),
            "$.readinessModel.bundled: '/tmp/readiness-model.yaml' is not a file inside the",
        ),
    ],
)
def test_no_rerun_names_a_run_parameter_as_the_rerun_does(
    exported: Path, tmp_path: Path, change: Callable[[dict[str, Any]], Any], said: str
) -> None:
    bundle = _copy(exported, tmp_path)
    _params(bundle, change)
    lines = {}
    for rerun in (True, False):
        argv = ["verify", str(bundle)] + ([] if rerun else ["--no-rerun"])
        code, _, err = run_cli(argv, {}, tmp_path)
        assert code == 2, err
        lines[rerun] = [line for line in err.splitlines() if "run-parameters.json: $." in line]
    assert len(lines[False]) == 1 and said in lines[False][0], lines
    rerun = "auditor: verify: re-run: the bundle cannot be evaluated: "
    assert lines[True] == [lines[False][0].replace("auditor: verify: ", rerun)], lines


def test_no_rerun_names_every_bundled_file_outside_the_bundle(
    exported: Path, tmp_path: Path
) -> None:
    """Only the first was named, though every other run parameter is (review R67 #4)."""
    bundle = _copy(exported, tmp_path)

    def change(p: dict[str, Any]) -> None:
        p["policies"][0].update(bundled="/etc/hostname")
        p["readinessModel"].update(bundled="../model.yaml")

    _params(bundle, change)
    code, out, err = run_cli(["verify", "--no-rerun", str(bundle)], {}, tmp_path)
    assert code == 2 and out == "", out + err
    at = f"auditor: verify: {bundle}/run-parameters.json: "
    for line in (
        "$.policies[0].bundled: '/etc/hostname' is not a file inside the bundle",
        "$.readinessModel.bundled: '../model.yaml' is not a file inside the bundle",
    ):
        assert f"{at}{line}\n" in err, err
    assert err.endswith(f"auditor: exit 2: the bundle {bundle} does not verify: 2 problem(s)\n")


def test_a_run_parameters_file_too_large_to_read_is_a_problem(
    exported: Path, tmp_path: Path
) -> None:
    """One padded past 16 MiB (its run id forged) was read by nothing that said so: `Verified`,
    exit 0, with --no-rerun, and only `reports differ` with the re-run."""
    bundle = _copy(exported, tmp_path)
    params = json.loads((bundle / "run-parameters.json").read_text())
    params["runId"] = "forged"
    data = json.dumps(params, indent=2).encode() + b" " * (17 << 20)
    _write(bundle, "run-parameters.json", data)
    said = (
        f"auditor: verify: manifest: runId and generated cannot be checked: "
        f"{bundle}/run-parameters.json: cannot read: file is {len(data)} bytes; the limit is "
        f"{16 << 20}\n"
    )
    for argv in (["verify", "--no-rerun", str(bundle)], ["verify", str(bundle)]):
        code, out, err = run_cli(argv, {}, tmp_path)
        assert code == 2 and out == "", out + err
        assert said in err, err
        assert f"auditor: exit 2: the bundle {bundle} does not verify: " in err, err


def test_an_intact_bundle_still_verifies(exported: Path, tmp_path: Path) -> None:
    code, out, err = run_cli(["verify", "--no-rerun", str(exported)], {}, tmp_path)
    assert (code, err) == (0, ""), err
    assert out.startswith(f"Verified {exported}: "), out


#: A passphrase-like token no detector flags, longer than the 40 characters a value is cut to.
LONG_TOKEN = "acme-audit-owner-token-for-nightly-ci-runs-2026"


def _long_token_twice(bundle: Path) -> None:
    text = (bundle / "run-parameters.json").read_text()
    twice = text.replace('"runId": ', f'"{LONG_TOKEN}": 1, "{LONG_TOKEN}": 2, "runId": ', 1)
    _write(bundle, "run-parameters.json", twice.encode())


OWN_TOKEN_EDITS: dict[str, Callable[[Path], None]] = {
    "a run parameter's value": lambda b: _params(b, lambda p: p.update(failOn=LONG_TOKEN)),
    "a run parameter's key written twice": _long_token_twice,
    "a field of the manifest": lambda b: _manifest(b, lambda m: m.update({LONG_TOKEN: 1})),
    "a redaction key": lambda b: _manifest(b, lambda m: m["redaction"].update({LONG_TOKEN: 1})),
}


@pytest.mark.parametrize("rerun", [True, False], ids=["rerun", "no-rerun"])
@pytest.mark.parametrize("edit", sorted(OWN_TOKEN_EDITS))
def test_the_commands_own_token_in_a_bundle_reads_token_where_it_is_shortened(
    exported: Path, tmp_path: Path, edit: str, rerun: bool
) -> None:
    """The command's own token, 41 characters or more, was cut to 40 before `[token]` was
    looked for: its first 38-40 characters were printed (review R63 #1)."""
    bundle = _copy(exported, tmp_path)
    OWN_TOKEN_EDITS[edit](bundle)
    argv = ["verify", str(bundle)] + ([] if rerun else ["--no-rerun"])
    code, out, err = run_cli(argv, {"AUDITOR_TOKEN": LONG_TOKEN}, tmp_path)
    assert code == 2, out + err
    assert "[token]" in err, err
    for form in [*secret_forms(LONG_TOKEN), LONG_TOKEN[:16], LONG_TOKEN[-16:]]:
        assert form not in out + err, err


@pytest.mark.parametrize("rerun", [True, False], ids=["rerun", "no-rerun"])
@pytest.mark.parametrize(
    ("folders", "shown"),
    [
        (("a b", "password=hunter2"), f"a b/password={NOT_SHOWN}/"),
        (("ci build", "Gx4nPz7Q0aB9cD3eF5hJ2kL"), f"ci build/{NOT_SHOWN}/bundle/"),
    ],
)
def test_a_run_parameter_problem_names_its_file_in_a_bundle_path_with_a_space(
    exported: Path, tmp_path: Path, folders: tuple[str, str], shown: str, rerun: bool
) -> None:
    """A bundle path with a space was read as text by the input-file screening: a name in it
    that looks like a secret took the rest of the path with it, and the file the problem is
    about (run-parameters.json) was no longer named (review R63 #3)."""
    bundle = Path(shutil.copytree(exported, tmp_path.joinpath(*folders, "bundle")))
    _params(bundle, lambda p: p.update(failOn="zzz"))
    argv = ["verify", str(bundle)] + ([] if rerun else ["--no-rerun"])
    code, out, err = run_cli(argv, {}, tmp_path)
    assert code == 2, out + err
    lead = "re-run: the bundle cannot be evaluated: " if rerun else ""
    said = f"auditor: verify: {lead}{tmp_path}/{shown}run-parameters.json: $.failOn: expected one"
    assert said in err, err
    assert folders[1][-12:] not in out + err, err
