"""Problem lines of policy, waiver and settings files as a user reads them (tester T74 #2, #3,
#4, #7): the file named as the user named it in `run` and `review` as in `policy lint`, every
problem of a file at once even beside an impossible date or a refused enum, a waiver's
`expires` quoted as written, and a repeat RE2 reads as text refused at its place."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import run_cli

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
PROPOSED = str(EXAMPLES / "proposed-settings.yaml")
LIVE = str(EXAMPLES / "live-settings.yaml")

BAD_TITLE = """\
rules:
  - id: T-1
    title: 5
    severity: high
    target: settings
    assert: {path: sandbox.enabled, equals: true}
"""


WAIVERS = """\
waivers:
  - rule: BASE-SBX-001
    subject: settings
    reason: r
    owner: o
    expires: 2026-02-30
  - rule: base-sbx-001
    subject: settings
    reason: r
    owner: o
    expires: 2027-01-01
  - rule: BASE-SBX-001
    subject: settingz
    reason: r
    owner: o
    expires: 2027-13-01
  - rule: BASE-SBX-001
    subject: settings
    owner: o
    expires: 2027-01-01T25:00:00Z
"""


@pytest.fixture(autouse=True)
def _in_tmp_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each command runs in its folder, as a user's does: files are named from there."""
    monkeypatch.chdir(tmp_path)


def _review(tmp_path: Path, *extra: str, proposed: str = PROPOSED) -> tuple[int, str]:
    argv = ["review", proposed, "--against", LIVE, "--author", "dev@example.com"]
    code, _, err = run_cli([*argv, "--out", str(tmp_path / "out"), *extra], {}, tmp_path)
    return code, err


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


# --- #2: `run` and `review` name a policy or waivers file as the user named it ----------------


@pytest.mark.parametrize("command", ["review", "run"])
def test_a_policy_file_is_named_as_given_in_run_and_review(tmp_path: Path, command: str) -> None:
    """`review --policy pol/types.yaml` said `/tmp/…/pol/types.yaml:3:12: error: …`, where
    `policy lint pol/types.yaml` says `pol/types.yaml:3:12` (README: the file as you named it)."""
    _write(tmp_path / "pol" / "types.yaml", BAD_TITLE)
    expected = "pol/types.yaml:3:12: error: $.rules[0].title: expected a string, got integer"
    if command == "review":
        code, err = _review(tmp_path, "--policy", "pol/types.yaml")
    else:
        argv = ["run", "--offline", "--policy", "pol/types.yaml", "--out", "out"]
        code, _, err = run_cli([*argv, "--state", "none.db"], {}, tmp_path)
    assert code == 2, err
    assert expected in err.splitlines(), err
    assert str(tmp_path) not in err
    code, out, _ = run_cli(["policy", "lint", "pol/types.yaml"], {}, tmp_path)
    assert code == 2 and expected in out.splitlines()


def test_a_waivers_file_is_named_as_given_in_review(tmp_path: Path) -> None:
    waivers = "waivers:\n  - rule: NOPE-001\n    subject: settings\n    reason: r\n"
    _write(tmp_path / "wv" / "w2.yaml", waivers + "    owner: o\n    expires: 2027-01-01\n")
    code, err = _review(tmp_path, "--waivers", "wv/w2.yaml")
    assert code == 2, err
    assert err.startswith("wv/w2.yaml:2:11: error: $.waivers[0].rule: unknown rule `NOPE-001`")


# --- #4: a waiver's `expires` quoted as written ------------------------------------------------


def test_a_waivers_expires_that_is_a_time_is_quoted_as_written(tmp_path: Path) -> None:
    """It quoted Python's rewrite, `'2027-01-01 23:00:00+00:00'`."""
    text = WAIVERS.split("  - rule: base")[0].replace("2026-02-30", "2027-01-01T23:00:00Z")
    code, err = _review(tmp_path, "--waivers", str(_write(tmp_path / "w.yaml", text)))
    assert code == 2, err
    assert err.splitlines()[0].endswith(
        "w.yaml:6:14: error: $.waivers[0].expires: `expires` must be a calendar date "
        "YYYY-MM-DD, got '2027-01-01T23:00:00Z'"
    )


# --- #7: a repeat without its lower bound ------------------------------------------------------


def test_a_repeat_without_its_lower_bound_is_refused_at_its_place(tmp_path: Path) -> None:
    """RE2 reads `x{,3}` as the text `x{,3}` (Python's re as `x{0,3}`): `^x{,3}$` failed on
    `xx` and passed on `x{,3}`, and under `not_matches` such a rule passed everything."""
    _write(
        tmp_path / "r.yaml",
        "rules:\n"
        "  - {id: R-1, title: x, severity: low, target: settings, assert: {path: a, matches: "
        "'^x{,3}$'}}\n"
        "  - {id: R-2, title: x, severity: low, target: settings, assert: {path: a, "
        "not_matches: 'a{,}'}}\n"
        "  - {id: R-3, title: x, severity: low, target: settings, assert: {path: a, matches: "
        "'^x\\{,3}[{,2}]x{0,3}$'}}\n",
    )
    code, out, _ = run_cli(["policy", "lint", "r.yaml"], {}, tmp_path)
    assert code == 2
    assert out.splitlines() == [
        "r.yaml:2:85: error: $.rules[0].assert.matches: regex /^x{,3}$/: RE2 reads `{,3}` as "
        "the text `{,3}`, not as a repeat from zero as Python's re does; write `{0,3}` for the "
        "repeat, or `\\{,3}` for the text",
        "r.yaml:3:89: error: $.rules[1].assert.not_matches: regex /a{,}/: RE2 reads `{,}` as "
        "the text `{,}`, not as a repeat from zero as Python's re does; write `{0,}` for the "
        "repeat, or `\\{,}` for the text",
    ]
