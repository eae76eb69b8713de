"""T92 (hostile local input files), findings 2, 5, 6, 7 and 9, as the user sees them on stderr.

- #2: a `--readiness-model` path holding a newline was written raw: forged `auditor: exit 0`
  lines and a count of 8 problems for 2; it is escaped as a `--waivers` path is.
- #5: `--orgs` problems without `file:line` or without the organization (a name listed twice,
  one differing only in case, a `token_file` that cannot be read).
- #6: `verify` passed a manifest whose `bytes` is text, null, a float, a list or missing, and
  took a key written twice in manifest.json or run-parameters.json (the last one).
- #7: `verify` said "not an evidence bundle manifest" with no reason, Python's words for a bad
  run-parameters.json value (`ValueError: Invalid isoformat string`), and an empty `policies`
  as `.: error: no policy files` (the current folder was searched for policies).
- #9: `review P --against live` beside a file named `live` said nothing; a settings file that
  is a list or a scalar was told in another form than every input problem; `timeout =
  1e-300` in a config file was taken."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from auditor.emulator import start_emulator
from tests.conftest import FIXED_NOW, OWNER_TOKEN, emulator_env, run_cli

DEEP = b'"x": ' + b"[" * 80 + b"]" * 80
MODEL_NAME = "evil\nauditor: exit 0: no findings at or above severity low\nx.yaml"


def test_a_readiness_model_path_with_a_newline_is_escaped_and_its_problems_counted(
    tmp_path: Path,
) -> None:
    (tmp_path / MODEL_NAME).write_text("levels: 5\n")
    argv = ["run", "--offline", "--out", "o", "-q", "--readiness-model", MODEL_NAME]
    code, _, err = run_cli(argv, {}, tmp_path)
    assert code == 2
    lines = err.splitlines()
    escaped = f"{tmp_path}/" + MODEL_NAME.replace("\n", "\\u000a")
    assert lines == [
        f"{escaped}:1:9: error: $.levels: `levels`: must be a non-empty mapping of level number "
        "to name",
        f"{escaped}:1:1: error: $.criteria: `criteria`: must be a non-empty mapping of "
        "criterion id to {level, scope, pillar}",
        "auditor: error: 2 problem(s) in input files (listed above)",
    ], err


# --- #5: --orgs ---------------------------------------------------------------------------

_ORG = '[[org]]\nname = "{name}"\nbase_url = "https://{name}.example"\n{token}\n\n'
_ENV = 'token_env = "T"'


def _orgs_error(tmp_path: Path, body: str) -> str:
    (tmp_path / "orgs.toml").write_text(body)
    argv = ["run", "--orgs", "orgs.toml", "--offline", "--state", "st/s.db", "--out", "rep"]
    code, out, err = run_cli(argv, {"T": OWNER_TOKEN}, tmp_path)
    assert code == 2 and out == "" and len(err.splitlines()) == 1, out + err
    return err.rstrip("\n")


@pytest.mark.parametrize(
    ("second", "said"),
    [
        (
            "acme",
            "auditor: error: orgs.toml:12:1: org[2] (acme): name: organization 'acme' is listed "
            "twice (org[0], at orgs.toml:2:1)",
        ),
        (
            "ACME",
            "auditor: error: orgs.toml:12:1: org[2] (ACME): name: organization 'ACME' differs "
            "from 'acme' (org[0], at orgs.toml:2:1) only in case; their report folders and "
            "state files would be the same on a case-insensitive file system",
        ),
    ],
)
def test_an_organization_listed_twice_is_named_at_its_line(
    tmp_path: Path, second: str, said: str
) -> None:
    body = "".join(_ORG.format(name=n, token=_ENV) for n in ("acme", "globex", second))
    assert _orgs_error(tmp_path, body) == said


def test_an_unreadable_token_file_names_the_organization_and_its_line(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "tfifo")
    body = _ORG.format(name="acme", token=_ENV)
    body += _ORG.format(name="globex", token='token_file = "tfifo"')
    err = _orgs_error(tmp_path, body)
    assert err == (
        f"auditor: error: orgs.toml:9:1: org[1] (globex): token_file: {tmp_path}/tfifo: "
        "cannot read token file: a named pipe (FIFO), not a regular file"
    )


# --- #6, #7: verify ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    work = tmp_path_factory.mktemp("t92")
    with start_emulator(tokens={OWNER_TOKEN: "owner"}, now=FIXED_NOW, revisions=12, repos=2) as e:
        env = emulator_env(e, work / "state.db")
        assert run_cli(["sync"], env, work)[0] == 0
    code, _, err = run_cli(["export", "--out", "ev"], env, work)
    assert code == 0, err
    yield work / "ev"


def _copy(bundle: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(bundle, tmp_path / "b"))


def _manifest_edited(copy: Path, edit: Any) -> None:
    manifest = json.loads((copy / "manifest.json").read_text())
    edit(manifest)
    (copy / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")


def _verify(copy: Path, *extra: str) -> tuple[int, list[str]]:
    code, _, err = run_cli(["verify", str(copy), *extra], {}, copy.parent)
    assert "unexpected" not in err and "Traceback" not in err, err
    return code, err.splitlines()


@pytest.mark.parametrize(
    ("value", "got"),
    [("885255", 'got "885255"'), (None, "got null"), (1e30, "got 1e+30"), ([1], "got [1]"),
     (-1, "got -1"), ("missing", "missing")],
)  # fmt: skip
def test_verify_refuses_a_manifest_size_that_is_not_a_whole_number(
    bundle: Path, tmp_path: Path, value: Any, got: str
) -> None:
    copy = _copy(bundle, tmp_path)

    def edit(manifest: dict[str, Any]) -> None:
        entry = manifest["files"]["revisions.jsonl"]
        if value == "missing":
            del entry["bytes"]
        else:
            entry["bytes"] = value

    _manifest_edited(copy, edit)
    code, lines = _verify(copy, "--no-rerun")
    assert code == 2
    assert (
        "auditor: verify: manifest.json: $.files['revisions.jsonl'].bytes: expected an integer, "
        f"the file's size in bytes (0 or more), {got}"
    ) in lines, lines


@pytest.mark.parametrize(
    ("damage", "said"),
    [
        (lambda raw: b"\xef\xbb\xbf" + raw, "manifest.json:1:1: starts with a byte-order mark"),
        (lambda raw: b"", "manifest.json: empty, not a JSON object"),
        (lambda raw: b"[" + raw + b"]", "manifest.json: $: expected a JSON object, got a list"),
        (
            lambda raw: raw.replace(b'"files": {', b'"files": 1, "x": {', 1),
            "manifest.json: $.files: expected an object of the bundle's files (each {bytes, "
            "sha256}), got 1",
        ),
        (
            lambda raw: raw.replace(b'"files": {', b'"files": {}, "files": {', 1),
            'manifest.json: $: the key "files" is written twice',
        ),
        (
            lambda raw: raw.replace(b'"bytes": ', b'"bytes": NaN, "x": ', 1),
            "manifest.json: $.files['analytics.jsonl'].bytes: NaN is not a JSON number",
        ),
        (
            lambda raw: raw.replace(b'"files": {', DEEP + b', "files": {'),
            "nested deeper than 64 levels",
        ),
        (
            lambda raw: raw.replace(b'"files": {', b'"fil\xe9s": {', 1),
            "manifest.json:2:7: not UTF-8 text (byte 0xe9 at offset 8)",
        ),
        # what orjson refused and json reads (review R59 #1: `verify` then ended `unexpected`)
        (
            lambda raw: raw.replace(b'"bytes": ', b'"bytes": 100000000000000000000, "x": ', 1),
            "manifest.json: $.files['analytics.jsonl'].bytes: 100000000000000000000 is beyond "
            "the numbers export writes (64 bits)",
        ),
        (
            lambda raw: raw.replace(b'"bytes": ', b'"bytes": ' + b"9" * 5000 + b', "x": ', 1),
            "is beyond the numbers export writes (64 bits)",
        ),
        (
            lambda raw: raw.replace(b'"bytes": ', b'"bytes": 1e400, "x": ', 1),
            "manifest.json: $.files['analytics.jsonl'].bytes: 1e400 is beyond the numbers",
        ),
        (
            lambda raw: raw.replace(b'"files": {', b'"n": "\\ud800", "files": {', 1),
            "manifest.json: $.n: a lone UTF-16 surrogate escape, not text",
        ),
        (
            lambda raw: raw.replace(b'"files": {', b'"\\udc00": 1, "files": {', 1),
            "manifest.json: $: a key holding a lone UTF-16 surrogate escape",
        ),
    ],
)  # fmt: skip
def test_verify_says_what_is_wrong_with_a_manifest_it_cannot_read(
    bundle: Path, tmp_path: Path, damage: Any, said: str
) -> None:
    copy = _copy(bundle, tmp_path)
    path = copy / "manifest.json"
    path.write_bytes(damage(path.read_bytes()))
    code, lines = _verify(copy)
    assert code == 2
    assert len(lines) == 1 and lines[0].startswith(f"auditor: error: {copy}/"), lines
    assert said in lines[0], lines


def _parameters_edited(copy: Path, edit: Any) -> None:
    """run-parameters.json edited, and its manifest entry made to match it."""
    path = copy / "run-parameters.json"
    path.write_bytes(edit(path.read_bytes()))

    def rehash(manifest: dict[str, Any]) -> None:
        manifest["files"]["run-parameters.json"] = {
            "bytes": path.stat().st_size,
            "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
        }

    _manifest_edited(copy, rehash)


def _set(key: str, value: Any) -> Any:
    def edit(raw: bytes) -> bytes:
        params = json.loads(raw)
        params[key] = value
        return json.dumps(params, indent=2).encode()

    return edit


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        (_set("at", "yesterday"), '$.at: expected a time, or null, got "yesterday"'),
        (
            _set("readinessModel", None),
            "$.readinessModel: expected {bundled, shown} (the bundled file and the name the run "
            "showed), got null",
        ),
        (
            _set("policies", {}),
            "$.policies: expected a non-empty list of the bundled policy files ({bundled, "
            "shown}), got {}",
        ),
        (_set("diffKeys", [1]), "$.diffKeys: expected a mapping with 'sets', 'keyed'"),
        (_set("runId", 7), "$.runId: expected the run's id, got 7"),
        (_set("usageDays", 10**20), "$.usageDays: 100000000000000000000 is beyond the numbers"),
        # times export writes with their offset, in the calendar in UTC; a severity (R59 #3)
        (
            _set("at", "2026-11-01T00:00:00"),
            '$.at: expected a time, or null, got "2026-11-01T00:00:00"',
        ),
        (
            _set("reportTime", "9999-12-31T23:59:59-14:00"),
            "$.reportTime: expected a time with its UTC offset, got",
        ),
        (
            _set("failOn", "bogus"),
            "$.failOn: expected one of critical, high, medium, low, info, none",
        ),
        (
            lambda raw: raw.replace(b'"runId": ', b'"runId": "other", "runId": ', 1),
            '$: the key "runId" is written twice',
        ),
    ],
)
def test_verify_names_a_bad_run_parameter_by_its_json_path(
    bundle: Path, tmp_path: Path, edit: Any, said: str
) -> None:
    copy = _copy(bundle, tmp_path)
    (tmp_path / "stray.yaml").write_text("rules: []\n")  # the current folder: never read
    _parameters_edited(copy, edit)
    code, lines = _verify(copy)
    assert code == 2
    where = f"auditor: verify: re-run: the bundle cannot be evaluated: {copy}/run-parameters.json"
    assert any(line.startswith(f"{where}: {said}") for line in lines), lines
    assert not any("Error:" in line or ": .:" in line for line in lines), lines


def test_verify_no_rerun_refuses_run_parameters_it_cannot_read_strictly(
    bundle: Path, tmp_path: Path
) -> None:
    """Review R59 #2: with --no-rerun, run-parameters.json was read leniently and, when that
    failed (a byte-order mark before a forged run id), the manifest's runId and generated went
    unchecked: exit 0."""
    copy = _copy(bundle, tmp_path)
    _parameters_edited(copy, lambda raw: b"\xef\xbb\xbf" + _set("runId", "forged")(raw))
    code, lines = _verify(copy, "--no-rerun")
    assert code == 2, lines
    assert any(
        "manifest: runId and generated cannot be checked: " in line
        and "run-parameters.json:1:1: starts with a byte-order mark" in line
        for line in lines
    ), lines


def test_a_bundle_path_with_a_line_break_is_one_escaped_line(bundle: Path, tmp_path: Path) -> None:
    """Review R59 #6: export's and verify's last line printed the bundle's path raw, so a
    name holding a line break wrote a line of its own (`auditor: exit 0: ok`)."""
    name = "ev\nauditor: exit 0: ok"
    code, out, err = run_cli(
        ["export", "--state", str(bundle.parent / "state.db"), "--out", name], {}, tmp_path
    )
    assert code == 0, err
    assert len(out.splitlines()) == 1 and "ev\\u000aauditor: exit 0: ok" in out, out
    code, out, err = run_cli(["verify", name, "--no-rerun"], {}, tmp_path)
    assert code == 0, err
    assert out.splitlines() == [x for x in out.splitlines() if x.startswith("Verified ")], out
    assert len(out.splitlines()) == 1 and "ev\\u000aauditor: exit 0: ok" in out, out


def test_export_of_a_policy_file_whose_name_is_not_utf8_says_so(
    bundle: Path, tmp_path: Path
) -> None:
    """Review R59 #6: `unexpected TypeError` (the name went into run-parameters.json, JSON),
    where `run` reads the same folder."""
    import os

    folder = tmp_path / "pol"
    folder.mkdir()
    text = (Path(__file__).parents[1] / "policies" / "baseline.yaml").read_bytes()
    (folder / os.fsdecode(b"b\xe9.yaml")).write_bytes(text)
    argv = ["export", "--state", str(bundle.parent / "state.db"), "--policy", "pol"]
    code, _, err = run_cli([*argv, "--out", "ev"], {}, tmp_path)
    assert code == 2, err
    assert "unexpected" not in err, err
    assert "pol/b\\xe9.yaml: the file's name is not UTF-8 text" in err, err
    assert not (tmp_path / "ev").exists()


# --- #9 ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "got"),
    [("- 1\n", "a list"), ("5\n", "a number"), ("", "nothing (an empty file, or null)")],
)
def test_a_settings_file_that_is_not_an_object_is_told_as_every_input_problem(
    tmp_path: Path, text: str, got: str
) -> None:
    (tmp_path / "p.yaml").write_text(text)
    (tmp_path / "a.json").write_text("{}")
    argv = ["review", str(tmp_path / "p.yaml"), "--against", str(tmp_path / "a.json")]
    code, _, err = run_cli([*argv, "--out", "o"], {}, tmp_path)
    assert code == 2
    assert err.splitlines() == [
        f"{tmp_path}/p.yaml:1:1: error: $: expected a settings object (keys and values), got {got}",
        "auditor: error: 1 problem(s) in input files (listed above)",
    ], err


@pytest.mark.parametrize("beside", [True, False])
def test_review_against_live_beside_a_file_named_live_says_which_is_used(
    tmp_path: Path, beside: bool
) -> None:
    (tmp_path / "p.json").write_text("{}")
    if beside:
        (tmp_path / "live").write_text("{}")
    argv = ["review", "p.json", "--against", "live", "--offline", "--state", "s.db", "--out", "o"]
    code, _, err = run_cli(argv, {}, tmp_path)
    assert code == 2  # no state file: not synced
    note = (
        "auditor: note: compared with the live settings (--against live), not with the file "
        "`live` in this folder: give --against ./live for the file"
    )
    assert (note in err.splitlines()) is beside, err
    if beside:  # not when --against is left out (its default is live), nor with -q (R59 #4)
        for argv_ in (argv[:2] + argv[4:], [*argv, "-q"]):
            code, _, err = run_cli(argv_, {}, tmp_path)
            assert code == 2 and "auditor: note: compared with" not in err, (argv_, err)


@pytest.mark.parametrize("value", ["1e-300", "0.05"])
def test_a_timeout_too_short_for_any_answer_is_refused_at_its_line(
    tmp_path: Path, value: str
) -> None:
    (tmp_path / "c.toml").write_text(f'org = "a"\n\ntimeout = {value}\n')
    code, _, err = run_cli(["sync", "--config", "c.toml"], {}, tmp_path)
    assert code == 2
    assert (
        err == f"auditor: error: c.toml:3:1: timeout: expected at least 0.1 seconds, got {value}\n"
    )
