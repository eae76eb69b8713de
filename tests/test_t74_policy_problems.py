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


# --- #3: an impossible date, or a refused enum, hides no other problem of the file ------------


def test_an_impossible_date_is_listed_beside_the_files_other_problems(tmp_path: Path) -> None:
    """`equals: 2026-13-01` in rule 1 was the file's only problem until fixed; then `equalz`
    in rule 0 appeared."""
    _write(
        tmp_path / "date2.yaml",
        "rules:\n"
        "  - {id: D-1, title: x, severity: high, target: settings, assert: {path: a, equalz: 1}}\n"
        "  - {id: D-2, title: x, severity: high, target: settings,\n"
        "     assert: {path: b, equals: 2026-13-01}}\n"
        "  - {id: D-3, title: x, severity: high, target: settings,\n"
        "     assert: {path: b, within_days: 2026-02-30}}\n",
    )
    code, out, err = run_cli(["policy", "lint", "date2.yaml"], {}, tmp_path)
    assert code == 2, err
    assert out.splitlines() == [
        "date2.yaml:2:77: error: $.rules[0].assert.equalz: unknown key `equalz` (did you mean "
        "`equals`?)",
        "date2.yaml:4:32: error: $.rules[1].assert.equals: `2026-13-01` is not a valid "
        "date/time (month must be in 1..12)",
        # said once, as a date: not again as `within_days`' wrong type at the same place
        "date2.yaml:6:37: error: $.rules[2].assert.within_days: `2026-02-30` is not a valid "
        "date/time (day is out of range for month)",
    ]
    assert "auditor: exit 2: 3 error(s) in policy files" in err


def test_a_refused_enum_hides_no_problem_of_the_rules(tmp_path: Path) -> None:
    """`enums: {tier: [bronze, silver, bronze], empty: []}` gave only the two enum errors; the
    rules' own (an unknown enum, an unknown level, a change operator outside a change rule,
    a built-in enum declared again) came only once the enums were fixed."""
    _write(
        tmp_path / "enum.yaml",
        "enums:\n"
        "  tier: [bronze, silver, bronze]\n"
        "  empty: []\n"
        "  autonomy: [a, b]\n"
        "rules:\n"
        "  - {id: E-1, title: x, severity: low, target: settings,\n"
        "     assert: {path: a, at_most: {enum: nope, value: x}}}\n"
        "  - {id: E-2, title: x, severity: low, target: settings,\n"
        "     assert: {path: a, at_most: {enum: tier, value: platinum}}}\n"
        "  - {id: E-3, title: x, severity: low, target: settings,\n"
        "     assert: {path: a, increased: true}}\n",
    )
    code, out, _ = run_cli(["policy", "lint", "enum.yaml"], {}, tmp_path)
    assert code == 2
    lines = out.splitlines()
    assert [line.split(": error: ")[0] for line in lines] == [
        "enum.yaml:2:9",
        "enum.yaml:3:10",
        "enum.yaml:4:13",
        "enum.yaml:7:33",
        "enum.yaml:9:33",
        "enum.yaml:11:35",
    ], out
    assert "enum `autonomy` is already declared (built in)" in lines[2]
    assert "unknown ordered enum `nope`" in lines[3]
    assert "`platinum` is not a level of tier (bronze < silver)" in lines[4]
    assert "`increased` applies only to `target: change`" in lines[5]


def test_impossible_waiver_dates_are_listed_with_every_other_problem(tmp_path: Path) -> None:
    """Each run named one impossible `expires` only (2026-02-30, then 2027-13-01, then
    …T25:00:00Z); the unknown rule, subject and missing reason came once all were fixed."""
    code, err = _review(tmp_path, "--waivers", str(_write(tmp_path / "w1.yaml", WAIVERS)))
    assert code == 2, err
    shown = [line.replace(str(tmp_path) + "/", "") for line in err.splitlines()]
    assert shown == [
        "w1.yaml:6:14: error: $.waivers[0].expires: `2026-02-30` is not a valid date/time (day "
        "is out of range for month)",
        "w1.yaml:7:11: error: $.waivers[1].rule: unknown rule `base-sbx-001`: no policy given, "
        "shipped pack or built-in rule has it (ids are case-sensitive) (did you mean "
        "`BASE-SBX-001`?)",
        shown[2],
        "w1.yaml:16:14: error: $.waivers[2].expires: `2027-13-01` is not a valid date/time "
        "(month must be in 1..12)",
        "w1.yaml:17:5: error: $.waivers[3]: missing required field `reason`",
        "w1.yaml:20:14: error: $.waivers[3].expires: `2027-01-01T25:00:00Z` is not a valid "
        "date/time (hour must be in 0..23)",
        "auditor: error: 6 problem(s) in input files (listed above)",
    ]
    assert shown[2].startswith("w1.yaml:13:14: error: $.waivers[2].subject: subject `settingz`")


def test_a_waiver_alone_with_an_impossible_date_is_still_refused(tmp_path: Path) -> None:
    """The date read as its text is no waiver: the file is refused, as before."""
    path = _write(tmp_path / "w.yaml", WAIVERS.split("  - rule: base")[0])
    code, err = _review(tmp_path, "--waivers", str(path))
    assert code == 2, err
    assert err.splitlines()[0].endswith(
        "w.yaml:6:14: error: $.waivers[0].expires: `2026-02-30` is not a valid date/time (day "
        "is out of range for month)"
    )
    assert "1 problem(s) in input files" in err


def test_a_settings_file_names_every_impossible_date(tmp_path: Path) -> None:
    proposed = (EXAMPLES / "proposed-settings.yaml").read_text(encoding="utf-8")
    path = _write(tmp_path / "p.yaml", proposed + "someDate: 2026-02-30\nother: 2026-13-01\n")
    lines = len(proposed.splitlines())
    code, err = _review(tmp_path, proposed=str(path))
    assert code == 2, err
    assert [line.replace(str(tmp_path) + "/", "") for line in err.splitlines()] == [
        f"p.yaml:{lines + 1}:11: error: $.someDate: `2026-02-30` is not a valid date/time (day "
        "is out of range for month)",
        f"p.yaml:{lines + 2}:8: error: $.other: `2026-13-01` is not a valid date/time (month "
        "must be in 1..12)",
        "auditor: error: 2 problem(s) in input files (listed above)",
    ]


def test_an_impossible_date_in_a_test_case_hides_no_other_problem(tmp_path: Path) -> None:
    _write(
        tmp_path / "p.yaml",
        "rules:\n  - {id: P-1, title: x, severity: low, target: settings,"
        " assert: {path: a, equals: 1}}\n",
    )
    _write(
        tmp_path / "p.tests.yaml",
        "tests:\n"
        "  - name: one\n"
        "    settings: {a: 2026-02-30}\n"
        "    expect: {P-1: fail}\n"
        "  - name: two\n"
        "    settings: {a: 1}\n"
        "    expect: {P-2: pass}\n",
    )
    code, out, _ = run_cli(["policy", "test", "p.yaml"], {}, tmp_path)
    assert code == 2
    assert [line.split(": error: ")[0] for line in out.splitlines()[:2]] == [
        "p.tests.yaml:3:19",
        "p.tests.yaml:7:14",
    ], out


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
