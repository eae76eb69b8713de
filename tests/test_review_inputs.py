"""How `auditor review` reads its two settings files (PROPOSED and `--against`): through the
one opener every input goes through, `*.json` as JSON only, and never a file that holds what
auditor's own reports show in place of a value (a redaction marker, the history API's page)."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from auditor.policy.yamlsafe import load_yaml
from auditor.store.database import Store
from tests.conftest import run_cli

REPO = Path(__file__).resolve().parents[1]
LIVE = REPO / "examples" / "live-settings.yaml"
KEY = "0123456789abcdef0123"
MARKER = re.compile(r"\[secret fp:[0-9a-f]{8} len:\d+\]")
FIRST_KEY = "apiKey: sk-example-not-a-real-key-0001"  # line 111 of examples/live-settings.yaml


@pytest.fixture(autouse=True)
def _in_tmp_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Files named as a user names them, from the current folder (the lines start with it)."""
    monkeypatch.chdir(tmp_path)


def review(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    """`auditor review ARGS` in `tmp_path` (reports in a folder of their own): exit code and
    stdout + stderr."""
    argv = ["review", *args, "--author", "a@b.example", "--out", str(tmp_path / "out")]
    code, out, err = run_cli(
        [*argv, "-o", "json"], env or {"AUDITOR_FINGERPRINT_KEY": KEY}, tmp_path
    )
    return code, out + err


def _a_marker(tmp_path: Path) -> str:
    """A marker exactly as a report shows the first custom model's key (what a PR author sees
    and copies), from a review of the live settings against themselves."""
    code, shown = review(tmp_path, str(LIVE), "--against", str(LIVE))
    assert code == 0, shown
    text = (tmp_path / "out" / "findings.json").read_text()
    marker = next(m for m in MARKER.findall(text) if m.endswith(" len:30]"))
    return marker


# --- T21 #2: auditor's redaction marker in place of a value --------------------------------


def test_a_marker_copied_from_a_report_is_refused_not_reviewed_as_no_change(tmp_path: Path):
    marker = _a_marker(tmp_path)
    proposed = tmp_path / "marker.yaml"
    proposed.write_text(LIVE.read_text().replace(FIRST_KEY, f"apiKey: '{marker}'"))
    code, shown = review(tmp_path, "marker.yaml", "--against", str(LIVE))
    # before: "0 change(s)", exit 0, and applying the file overwrote the key with the marker
    assert code == 2, shown
    first = shown.splitlines()[0]
    assert first.startswith("marker.yaml:111:11: error: $.customModels[0].apiKey: holds auditor's")
    assert "marker for a hidden value" in first and "${VAR}" in first
    assert marker not in shown and MARKER.search(shown) is None  # no fingerprint repeated
    assert "sk-example-not-a-real-key" not in shown
    assert "0 change(s)" not in shown


def test_a_marker_inside_a_value_or_a_key_and_in_the_against_file_is_refused(tmp_path: Path):
    marker = _a_marker(tmp_path)
    text = LIVE.read_text().replace(FIRST_KEY, f"apiKey: 'Bearer {marker}'")
    text += f"'{marker}': 1\n"  # a key name redacted in a report, copied back
    (tmp_path / "both.yaml").write_text(text)
    code, shown = review(tmp_path, str(LIVE), "--against", "both.yaml")
    assert code == 2, shown
    lines = [x for x in shown.splitlines() if ": error: $" in x]
    assert len(lines) == 2 and all("holds auditor's marker" in x for x in lines), lines
    assert lines[0].startswith("both.yaml:111:11: error: $.customModels[0].apiKey:")
    assert "(in a key)" in lines[1]
    assert MARKER.search(shown) is None


def test_online_a_marker_from_the_state_is_refused(emu: Any, env: dict[str, str], tmp_path: Path):
    code, _, err = run_cli(["sync"], env, tmp_path)
    assert code == 0, err
    live = json.loads(json.dumps(emu.dataset.history[-1]["settings"]))
    with Store.open(Path(env["AUDITOR_STATE"])) as store:
        latest = store.latest_revision()
    assert latest is not None
    path, marker = _first_marker(latest.settings)  # as every report of this state shows it
    _put(live, path, marker)
    (tmp_path / "proposed.json").write_text(json.dumps(live, indent=2))
    code, shown = review(tmp_path, "proposed.json", env=env)
    assert code == 2, shown  # before: "0 change(s)", exit 0
    assert re.match(r"proposed\.json:\d+:\d+: error: \$\S+: holds auditor's marker", shown)
    assert marker not in shown


def _first_marker(value: Any, at: tuple[Any, ...] = ()) -> tuple[tuple[Any, ...], str]:
    found = _markers(value, at)
    assert found, "the emulator's settings hold no secret"
    return found[0]


def _markers(value: Any, at: tuple[Any, ...]) -> list[tuple[tuple[Any, ...], str]]:
    if isinstance(value, str) and MARKER.fullmatch(value):
        return [(at, value)]
    items = (
        value.items()
        if isinstance(value, dict)
        else enumerate(value)
        if isinstance(value, list)
        else []
    )
    return [m for k, v in items for m in _markers(v, (*at, k))]


def _put(doc: Any, path: tuple[Any, ...], value: Any) -> None:
    for part in path[:-1]:
        doc = doc[part]
    doc[path[-1]] = value


# --- T21 #5: a `.json` file is JSON -------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "place", "words"),
    [
        # single quotes and trailing commas: YAML took them, the service would not
        (
            '{\n  "maxAutonomyLevel": \'low\',\n  "sandbox": {"enabled": true,},\n}\n',
            "2:23",
            "Expecting value",
        ),
        # a `//` comment: YAML's complaint was at 3:21
        ('// settings\n{\n  "maxAutonomyLevel": "low"\n}\n', "1:1", "Expecting value"),
        # CPython 3.13's json names a trailing comma, at the comma; 3.11 and 3.12 the place after
        (
            '{"maxAutonomyLevel": "low",}',
            *(
                ("1:27", "Illegal trailing comma before end of object")
                if sys.version_info >= (3, 13)
                else ("1:28", "Expecting property name")
            ),
        ),
    ],
)
def test_a_json_file_that_is_not_json_is_an_error_at_the_json_mistake(
    tmp_path: Path, text: str, place: str, words: str
):
    (tmp_path / "c.json").write_text(text)
    code, shown = review(tmp_path, "c.json", "--against", str(LIVE))
    assert code == 2, shown
    assert shown.splitlines()[0].startswith(f"c.json:{place}: error: invalid JSON: {words}"), shown


@pytest.mark.parametrize("name", ["c.json", "c.yaml"])
@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_nan_or_infinity_in_json_is_an_error_at_its_place(tmp_path: Path, name: str, constant: str):
    # what Python's json.dumps writes for float("nan"): before, the string "NaN"
    (tmp_path / name).write_text(f'{{\n  "sessionRetentionDays": {constant}\n}}\n')
    code, shown = review(tmp_path, name, "--against", str(LIVE))
    assert code == 2, shown
    assert shown.splitlines() == [
        f"{name}:2:27: error: $.sessionRetentionDays: {constant} is not a JSON number the "
        "service could hold",
        "auditor: error: 1 problem(s) in input files (listed above)",
    ]


@pytest.mark.parametrize(
    ("written", "words"),
    [
        # the digits are never quoted (a long number may be a secret's)
        ("1" + "0" * 30, "an integer beyond 64 bits (from 2^64 up, or from -2^63 - 1 down)"),
        (
            "18446744073709551616",
            "an integer beyond 64 bits (from 2^64 up, or from -2^63 - 1 down)",
        ),
        (
            "-9223372036854775809",
            "an integer beyond 64 bits (from 2^64 up, or from -2^63 - 1 down)",
        ),
        ("1e400", "a number beyond a 64-bit float's range (read as infinity)"),  # was `inf`
        ("-.inf", "`-.inf` (infinity)"),
        (".nan", "NaN"),
    ],
)
def test_a_number_no_json_value_holds_is_a_problem_at_its_place_and_path(
    tmp_path: Path, written: str, words: str
):
    """Such a number was `p.yaml:3:8: inf is not …` (no `error:`, no JSON path, `1e400`
    called `inf`), not in the shape of every other problem of an input file."""
    (tmp_path / "p.yaml").write_text(f"a: 1\nb:\n  zz: [1, {written}]\n")
    code, shown = review(tmp_path, "p.yaml", "--against", str(LIVE))
    assert code == 2, shown
    assert shown.splitlines() == [
        f"p.yaml:3:11: error: $.b.zz[1]: {words} is not a JSON number the service could hold",
        "auditor: error: 1 problem(s) in input files (listed above)",
    ]


def test_an_integer_within_64_bits_is_a_value_as_the_apis_data_is_read(tmp_path: Path):
    """2^63 to 2^64 - 1 and -2^63 are read from the API (`fetch.shape`): a review called them
    "beyond 64 bits", exit 2."""
    (tmp_path / "live.json").write_text('{"a": 1}')
    big, low = 2**64 - 1, -(2**63)
    (tmp_path / "p.yaml").write_text(f"a: 1\nzz: {big}\nyy: {low}\n")
    code, shown = review(tmp_path, "p.yaml", "--against", "live.json")
    assert code == 0, shown
    data = json.loads((tmp_path / "out" / "findings.json").read_text())
    assert {c["path"]: c["after"] for c in data["review"]["changes"]} == {"$.zz": big, "$.yy": low}


def test_yaml_and_json_files_still_read(tmp_path: Path):
    settings = {"maxAutonomyLevel": "low", "sandbox": {"enabled": True}}
    (tmp_path / "flow.yaml").write_text("{maxAutonomyLevel: low, sandbox: {enabled: true}}\n")
    (tmp_path / "bom.json").write_bytes(
        b"\xef\xbb\xbf" + json.dumps(settings, indent=2).replace("\n", "\r\n").encode()
    )
    (tmp_path / "yaml.json").write_text("")  # empty: still "expected a settings object"
    for name in ("flow.yaml", "bom.json"):
        code, shown = review(tmp_path, name, "--against", "bom.json")
        assert code == 0, shown
        assert (
            json.loads((tmp_path / "out" / "findings.json").read_text())["review"]["changes"] == []
        )
    code, shown = review(tmp_path, "yaml.json", "--against", "bom.json")
    assert code == 2 and "expected a settings object" in shown, shown


# --- T21 #6: the one opener's refusals ------------------------------------------------------


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _loop(path: Path) -> None:
    path.symlink_to(path.name)


HOSTILE = {
    "fifo": (_fifo, "a named pipe (FIFO), not a regular file"),
    "folder": (Path.mkdir, "a directory, not a regular file"),
    "symlink loop": (_loop, "Too many levels of symbolic links"),
    "missing": (lambda p: None, "No such file or directory"),
}


@pytest.mark.parametrize("which", ["proposed", "against"])
@pytest.mark.parametrize("kind", HOSTILE)
def test_a_hostile_settings_file_gets_the_documented_line(tmp_path: Path, which: str, kind: str):
    make, reason = HOSTILE[kind]
    make(tmp_path / "bad.yaml")
    args = (
        ["bad.yaml", "--against", str(LIVE)]
        if which == "proposed"
        else [str(LIVE), "--against", "bad.yaml"]
    )
    code, shown = review(tmp_path, *args)
    assert code == 2
    # before: `auditor: error: bad.yaml: not a file` (a loop: `no such file`)
    assert f"bad.yaml:1:1: error: {reason}" in shown.splitlines(), shown


# --- T21 #7: the history API's page -------------------------------------------------------


def test_the_history_page_is_refused_with_how_to_take_the_settings_out(tmp_path: Path):
    settings = load_yaml(LIVE).data  # as auditor reads it (YAML 1.2: `off` is text)
    change = {"revision": 240, "settings": settings, "user": {"email": "a@b.example"}}
    page = {"changes": [change], "pagination": {"hasMore": True, "nextCursor": "x"}}
    (tmp_path / "page.json").write_text(json.dumps(page, indent=2))
    code, shown = review(tmp_path, "page.json", "--against", str(LIVE))
    # before: every live key "removed", `$.changes` added, exit 1
    assert code == 2, shown
    first = shown.splitlines()[0]
    assert first.startswith("page.json:2:3: error: this is the history API's response")
    assert ".changes[0].settings" in first
    # one revision of it (`.changes[0]`), as before, is read as its settings
    (tmp_path / "one.json").write_text(json.dumps(change, indent=2))
    code, shown = review(tmp_path, "one.json", "--against", str(LIVE))
    assert code == 0, shown


@pytest.mark.parametrize(
    ("body", "line"),
    [
        # a revision whose settings are no object, a page whose `changes` is no list: each read
        # as settings with every live key removed and `revision`, `settings` added, exit 1
        ('{"revision": 5, "settings": null}', "1:29: error: $.settings: a revision's settings "),
        ('{"revision": 5, "settings": [1]}', "1:29: error: $.settings: a revision's settings "),
        ('{"changes": "x", "pagination": {}}', "1:2: error: this is the history API's response"),
        # a revision number none the API gives (dropped unsaid: it is not judged)
        ('{"revision": "5", "settings": {}}', "1:14: error: $.revision: a revision number is "),
        ('{"revision": -5, "settings": {}}', "1:14: error: $.revision: a revision number is "),
        ('{"revision": 1.5, "settings": {}}', "1:14: error: $.revision: a revision number is "),
        ('{"revision": true, "settings": {}}', "1:14: error: $.revision: a revision number is "),
        (f'{{"revision": {2**63}, "settings": {{}}}}', "1:14: error: $.revision: a revision "),
        (f'{{"revision": 1{"0" * 400}, "settings": {{}}}}', "1:14: error: $.revision: a "),
    ],
)
def test_a_broken_revision_or_page_is_refused_at_its_place(tmp_path: Path, body: str, line: str):
    (tmp_path / "p.json").write_text(body)
    code, shown = review(tmp_path, "p.json", "--against", str(LIVE))
    assert code == 2, shown
    assert shown.splitlines()[0].startswith(f"p.json:{line}"), shown


def test_a_revision_numbered_as_the_api_may_write_it_is_read(tmp_path: Path):
    """`5.0` is revision 5 to the sync (`fetch.decode.is_revision_number`), and so to review."""
    (tmp_path / "p.json").write_text('{"revision": 5.0, "settings": {}}')
    (tmp_path / "live.json").write_text("{}")
    code, shown = review(tmp_path, "p.json", "--against", "live.json")
    assert code == 0, shown


#: A YAML settings file's scalars as the README's review section says they are read (T74 #8).
SCALARS = {
    "t": ("True", True),
    "n": ("~", None),
    "o": ("017", 17),
    "e": ("1e3", 1000.0),
    "x": ("0x10", 16),
    "b": ("0b101", 5),
    "u": ("1_000", 1000),
    "y": ("yes", "yes"),
    "on": ("on", "on"),
    "off": ("off", "off"),
    "no": ("no", "no"),
    "s": ("1:20", "1:20"),
}


def test_yaml_scalars_are_read_as_the_readme_says(tmp_path: Path):
    (tmp_path / "live.json").write_text("{}")
    (tmp_path / "p.yaml").write_text("".join(f"{k}: {w}\n" for k, (w, _) in SCALARS.items()))
    code, shown = review(tmp_path, "p.yaml", "--against", "live.json")
    assert code == 0, shown
    data = json.loads((tmp_path / "out" / "findings.json").read_text())
    read = {c["path"][2:]: c["after"] for c in data["review"]["changes"]}
    assert read == {k: v for k, (_, v) in SCALARS.items()}
    assert all(type(read[k]) is type(v) for k, (_, v) in SCALARS.items())
