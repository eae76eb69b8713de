"""What a waiver did, as `auditor run --waivers` reports it against the emulator: a waiver of a
rule the run left out is not stale, one of a rule no policy has is refused, `settings@N`
waives the revision under test, a stale waiver's warning says truthfully why it matched
nothing and it is not listed as in force, and a finding whose waiver expired says so in
findings.json."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from auditor.emulator import start_emulator
from auditor.redact import MARKER_RE
from tests.conftest import FIXED_NOW, OWNER_TOKEN, emulator_env, run_cli

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[1]
WHY = "reason: r, owner: o, expires: 2026-12-31"


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """A state file synced from an 80-revision emulator (BASE-MOD-001 fails on revision 80,
    the newest; USE-MCP-001 on usage@2026-10-23 and 10-24); runs are `--offline`."""
    state = tmp_path_factory.mktemp("state") / "state.db"
    with start_emulator(tokens={OWNER_TOKEN: "owner"}, now=FIXED_NOW, revisions=80, repos=8) as e:
        env = emulator_env(e, state)
        code, _, stderr = run_cli(["sync"], env=env, cwd=state.parent)
        assert code == 0, stderr
        yield env


def run(env: dict[str, str], tmp_path: Path, waivers: str | Path, *extra: str) -> Any:
    """`auditor run --offline --soft-fail --waivers W`: (exit code, stderr, findings.json)."""
    if isinstance(waivers, str):
        (tmp_path / "w.yaml").write_text("waivers:\n" + waivers, encoding="utf-8")
        waivers = tmp_path / "w.yaml"
    out = tmp_path / "r"
    argv = ["run", "--offline", "--soft-fail", "--waivers", str(waivers), "--out", str(out)]
    code, _, stderr = run_cli([*argv, *extra], env=env, cwd=tmp_path)
    data = json.loads((out / "findings.json").read_text()) if code != 2 else None
    return code, stderr, data


def test_a_waiver_of_a_rule_of_a_policy_not_given_is_not_stale(
    env: dict[str, str], tmp_path: Path
) -> None:
    """`--policy policies/usage.yaml` leaves the example's settings, readiness and org rules
    out: their waivers were not tried (they were called stale: "the rule passes")."""
    policy = str(ROOT / "policies" / "usage.yaml")
    code, stderr, data = run(env, tmp_path, ROOT / "examples" / "waivers.yaml", "--policy", policy)
    assert code == 0, stderr
    assert data["waivers"]["stale"] == []
    assert not [w for w in data["waivers"]["warnings"] if "matched no failing result" in w]


@pytest.mark.parametrize(
    ("rule", "expected"),
    [
        ("use-mod-001", "unknown rule `use-mod-001`: no policy given, shipped pack or built-in "
         "rule has it (ids are case-sensitive) (did you mean `USE-MOD-001`?)"),
        ("USE-MOD-*", "`USE-MOD-*` is not a rule id: a waiver names one rule by its id, "
         "patterns are not supported"),
        ("NOPE-001", "unknown rule `NOPE-001`"),
        ("BASE-MOD-01", "unknown rule `BASE-MOD-01`: no policy given, shipped pack or built-in "
         "rule has it (ids are case-sensitive) (did you mean `BASE-MOD-001`?)"),
    ],
)  # fmt: skip
def test_a_waiver_of_a_rule_no_policy_has_is_refused_at_its_place(
    env: dict[str, str], tmp_path: Path, rule: str, expected: str
) -> None:
    """A typo in a rule id waived nothing and was only called stale, exit 0."""
    code, stderr, _ = run(env, tmp_path, f"  - {{rule: '{rule}', subject: usage, {WHY}}}\n")
    assert code == 2, stderr
    assert f"{tmp_path / 'w.yaml'}:2:12: error: $.waivers[0].rule: {expected}" in stderr
    assert not (tmp_path / "r").exists()


def test_settings_at_the_revision_under_test_waives_it(env: dict[str, str], tmp_path: Path):
    """Without `--all-revisions` the newest revision (80) is judged as `settings`: a waiver
    for `settings@80` waives it; one for `settings@79` is stale, and says why truthfully."""
    waivers = (
        f"  - {{rule: BASE-MOD-001, subject: 'settings@80', {WHY}}}\n"
        f"  - {{rule: BASE-MOD-001, subject: 'settings@79', {WHY}}}\n"
    )
    code, stderr, data = run(env, tmp_path, waivers)
    assert code == 0, stderr
    (mod,) = [f for f in data["findings"] if f["rule_id"] == "BASE-MOD-001"]
    assert mod["subject"]["key"] == "settings" and mod["subject"]["revision"] == 80
    assert mod["status"] == "waived" and mod["waiver"]["subject"] == "settings@80"
    assert [w["subject"] for w in data["waivers"]["stale"]] == ["settings@79"]
    (warning,) = [w for w in data["waivers"]["warnings"] if "matched no failing result" in w]
    assert warning.endswith(
        "matched no failing result: no subject of this run is `settings@79` (this run judges "
        "the settings at revision 80, as `settings`; every stored revision is judged only "
        "with --all-revisions)"
    )


def test_a_stale_waiver_says_why_and_is_not_listed_in_force(env: dict[str, str], tmp_path):
    """A stale waiver was also listed under `in_force` (and report.html's "In force"); its
    warning blamed "the rule passes or the subject is gone" whatever the reason."""
    waivers = (
        f"  - {{rule: BASE-MOD-001, subject: settings, {WHY}}}\n"
        f"  - {{rule: BASE-MOD-001, subject: 'settings@80', {WHY}}}\n"
        f"  - {{rule: USE-MCP-001, subject: 'usage@2026-10-02', {WHY}}}\n"
        f"  - {{rule: RDY-LVL-001, subject: 'https://nowhere.example/*', {WHY}}}\n"
    )
    code, stderr, data = run(env, tmp_path, waivers)
    assert code == 0, stderr
    w = data["waivers"]
    assert [x["subject"] for x in w["in_force"]] == ["settings"]
    assert [x["subject"] for x in w["stale"]] == [  # by expiry, then rule id
        "settings@80",
        "https://nowhere.example/*",
        "usage@2026-10-02",
    ]
    why = sorted(x.split("matched no failing result: ")[1] for x in w["warnings"])
    assert why == [
        "its failing results are waived by the waiver at w.yaml:2:5",  # named from the cwd
        "no subject of this run is `https://nowhere.example/*`",
        "the rule does not fail on `usage@2026-10-02` (it passes or does not apply)",
    ]
    html = (tmp_path / "r" / "report.html").read_text()
    assert "<h3>In force (1)</h3>" in html and "<h3>Stale (match nothing) (3)</h3>" in html


def test_a_finding_whose_waiver_expired_says_so_in_findings_json(
    env: dict[str, str], tmp_path: Path
) -> None:
    """SARIF and JUnit said so; findings.json's finding had `waiver: null` and nothing else."""
    waivers = "  - {rule: USE-MCP-001, subject: usage, reason: r, owner: o, expires: 2026-10-31}\n"
    code, stderr, data = run(env, tmp_path, waivers)
    assert code == 0, stderr
    mcp = [f for f in data["findings"] if f["rule_id"] == "USE-MCP-001"]
    lapsed = {f["subject"]["key"]: f["expired_waiver"] for f in mcp if f["expired_waiver"]}
    assert sorted(lapsed) == ["usage@2026-10-23", "usage@2026-10-24"]
    assert {w["expires"] for w in lapsed.values()} == {"2026-10-31T23:59:59.999999+00:00"}
    assert all(f["status"] == "fail" and f["waiver"] is None for f in mcp if f["expired_waiver"])
    assert all(f["expired_waiver"] is None for f in data["findings"] if f not in mcp)


def test_an_impossible_expiry_date_names_its_field(env: dict[str, str], tmp_path: Path):
    """`expires: 2026-02-30` was the one waiver error without its `$.waivers[0].expires` path."""
    code, stderr, _ = run(env, tmp_path, "  - rule: BASE-MOD-001\n    expires: 2026-02-30\n")
    assert code == 2
    assert (
        f"{tmp_path / 'w.yaml'}:3:14: error: $.waivers[0].expires: `2026-02-30` is not a "
        "valid date/time (day is out of range for month)"
    ) in stderr


def test_settings_at_n_never_waives_a_reviews_proposed_settings(
    env: dict[str, str], tmp_path: Path
) -> None:
    """A review's proposed settings are numbered as the next revision (1 against a file),
    but no stored revision is theirs: `settings@1` waived them (the review)."""
    import sqlite3
    from contextlib import closing

    with closing(sqlite3.connect(env["AUDITOR_STATE"])) as db, db:
        (settings,) = db.execute("SELECT settings FROM revisions WHERE revision = 80").fetchone()
    proposed = tmp_path / "prop.json"
    # a stored revision as a file an author would write: a reference where the state holds a
    # hidden value's marker (review refuses a marker, which would overwrite the real value)
    proposed.write_text(MARKER_RE.sub("${SECRET}", settings.decode()))
    (tmp_path / "w.yaml").write_text(
        f"waivers:\n  - {{rule: BASE-MOD-001, subject: 'settings@1', {WHY}}}\n"
    )
    argv = ["review", str(proposed), "--against", str(proposed), "--waivers", "w.yaml"]
    code, _, stderr = run_cli([*argv, "--out", "r"], env=env, cwd=tmp_path)
    assert code == 0, stderr  # the same settings: nothing introduced
    data = json.loads((tmp_path / "r" / "findings.json").read_text())
    statuses = {f["status"] for f in data["findings"] if f["rule_id"] == "BASE-MOD-001"}
    assert statuses == {"fail"}
    (warning,) = [w for w in data["waivers"]["warnings"] if "matched no failing result" in w]
    assert "the proposed settings are no stored revision" in warning
    assert "--all-revisions" not in warning
