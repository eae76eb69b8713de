"""What the README promises a user of the command line, checked against the command line:
`sync -q`, `run --no-readiness`, error locations as typed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from auditor.emulator import start_emulator
from tests.conftest import FIXED_NOW, OWNER_TOKEN, run_cli

# --- `auditor sync -q` ------------------------------------------------------------------------


def test_sync_quiet_prints_nothing_on_a_plain_sync(env: dict[str, str], tmp_path: Path) -> None:
    """`sync -q` was `unrecognized arguments: -q` (exit 2), though the README offers it."""
    code, stdout, stderr = run_cli(["sync", "-q", "--no-usage"], env, tmp_path)
    assert (code, stdout, stderr) == (0, "", "")
    code, stdout, stderr = run_cli(["sync", "--quiet", "--no-usage"], env, tmp_path)
    assert (code, stdout, stderr) == (0, "", "")
    code, stdout, _ = run_cli(["sync", "--no-usage"], env, tmp_path)  # without: the summary
    assert code == 0 and stdout.startswith(f"Synced {env['AUDITOR_BASE_URL']}: 30 revisions")


def test_sync_quiet_silences_the_moved_address_and_empty_variable_warnings(
    env: dict[str, str], tmp_path: Path
) -> None:
    code, _, stderr = run_cli(["sync", "--no-usage"], env, tmp_path)
    assert code == 0, stderr
    with start_emulator(tokens={OWNER_TOKEN: "owner"}, now=FIXED_NOW, revisions=30, repos=3) as e:
        moved = {**env, "AUDITOR_BASE_URL": e.base_url, "AUDITOR_APP_URL": e.app_url}
        code, _, stderr = run_cli(["sync", "-q", "--no-usage"], moved, tmp_path)
        assert (code, stderr) == (0, "")
        code, _, stderr = run_cli(["sync", "--no-usage"], env, tmp_path)  # without -q: said
        assert code == 0 and "was last synced from" in stderr
    empty = {**env, "AUDITOR_FINGERPRINT_KEY": ""}
    code, _, stderr = run_cli(["sync", "-q", "--no-usage"], empty, tmp_path)
    assert (code, stderr) == (0, "")


def test_sync_quiet_silences_the_plain_http_warning_but_not_the_error(tmp_path: Path) -> None:
    env = {"AUDITOR_TOKEN": "t0ken-for-test", "AUDITOR_BASE_URL": "http://nonexistent.invalid"}
    (tmp_path / "auditor.toml").write_text("timeout = 1.5\ndeadline = 3\n")
    argv = ["sync", "--config", "auditor.toml", "--state", "s.db", "--no-usage"]
    code, _, loud = run_cli(argv, env, tmp_path)
    assert code == 2 and "is plain HTTP" in loud
    code, stdout, stderr = run_cli([*argv, "-q"], env, tmp_path)
    assert code == 2 and stdout == "" and "is plain HTTP" not in stderr
    assert stderr.splitlines()[-1] == loud.splitlines()[-1]  # the error, as without -q


def test_sync_quiet_still_shows_a_summary_with_data_quality_warnings(
    env: dict[str, str], tmp_path: Path
) -> None:
    """A sync whose service went back (fewer revisions than stored) keeps the stored ones with
    a data-quality warning: `-q` does not hide it, no report carries a sync's warnings."""
    code, _, stderr = run_cli(["sync", "--no-usage"], env, tmp_path)
    assert code == 0, stderr
    with start_emulator(tokens={OWNER_TOKEN: "owner"}, now=FIXED_NOW, revisions=10, repos=3) as e:
        back = {**env, "AUDITOR_BASE_URL": e.base_url, "AUDITOR_APP_URL": e.app_url}
        code, stdout, stderr = run_cli(["sync", "-q", "--no-usage"], back, tmp_path)
    assert code == 0 and stderr == "", stderr
    assert "data-quality warning" in stdout, stdout


# --- `auditor run --no-readiness` --------------------------------------------------------------

SHIPPED = Path(__file__).resolve().parent.parent / "policies"


def test_a_run_without_an_app_url_is_incomplete_unless_no_readiness(
    env: dict[str, str], tmp_path: Path
) -> None:
    """Without the readiness app, every nightly exited 2 (its readiness rules not evaluated),
    and no flag said "this organization has none"; `--no-readiness` leaves those rules out,
    named in the reports as left out, neither failed nor passed."""
    no_app = {k: v for k, v in env.items() if k != "AUDITOR_APP_URL"}
    code, _, stderr = run_cli(["run", "--no-usage", "--out", "a"], no_app, tmp_path)
    assert code == 2 and "not evaluated (no readiness reports)" in stderr
    assert "readiness reports not synced" in stderr
    argv = ["run", "--no-usage", "--no-readiness", "--out", "b"]
    code, _, stderr = run_cli(argv, no_app, tmp_path)
    assert code == 1, stderr  # the shipped packs' settings findings: complete, no exit 2
    assert "not evaluated" not in stderr and "readiness reports not synced" not in stderr
    findings = json.loads((tmp_path / "b" / "findings.json").read_text())
    assert findings["complete"] is True and findings["not_evaluated"] == []
    judged = {f["rule_id"] for f in findings["findings"]}
    assert not any(r.startswith("RDY-") for r in judged)
    md = (tmp_path / "b" / "report.md").read_text()
    why = "<code>--no-readiness</code> was given: the readiness reports were not read"
    assert f"- **Rules left out:** 3 org, not evaluated: {why}" in md
    assert f"- **Rules left out:** 10 readiness, not evaluated: {why}" in md


def test_no_readiness_does_not_read_the_readiness_reports(
    env: dict[str, str], tmp_path: Path
) -> None:
    """As `--no-usage` does not read the analytics: the app URL is not contacted."""
    code, _, stderr = run_cli(["run", "--no-usage", "--no-readiness", "--out", "o"], env, tmp_path)
    assert code == 1, stderr
    assert "synced: 30 new revisions, 0 new reports" in stderr
    code, stdout, _ = run_cli(["sync", "--no-usage"], env, tmp_path)  # they were not fetched
    assert "9 readiness reports (9 new)" in stdout, stdout


@pytest.mark.parametrize(
    ("packs", "flags", "message"),
    [
        (
            ["readiness"],
            ["--no-readiness"],
            "every rule of the policies (13) is a readiness or org rule and --no-readiness "
            "leaves them out",
        ),
        (
            ["readiness"],
            ["--no-readiness", "--no-usage"],
            "every rule of the policies (13) is a readiness, org or usage rule and "
            "--no-readiness and --no-usage leave them out",
        ),
        (
            ["readiness", "usage"],
            ["--no-readiness", "--no-usage"],
            "every rule of the policies (25) is a readiness, org or usage rule and "
            "--no-readiness and --no-usage leave them out",
        ),
    ],
)
def test_a_policy_of_readiness_rules_only_is_refused_with_no_readiness(
    env: dict[str, str], tmp_path: Path, packs: list[str], flags: list[str], message: str
) -> None:
    policies = [a for pack in packs for a in ("--policy", str(SHIPPED / f"{pack}.yaml"))]
    argv = ["run", *policies, "--out", "o", *flags]
    code, stdout, stderr = run_cli(argv, env, tmp_path)
    assert code == 2 and stdout == ""
    assert stderr.startswith(f"auditor: error: {message}"), stderr
    assert not (tmp_path / "o").exists() and not Path(env["AUDITOR_STATE"]).exists()


# --- error locations: the file as typed --------------------------------------------------------


def test_a_config_file_problem_names_the_file_as_typed(tmp_path: Path) -> None:
    """`auditor: error: ci/auditor.toml:3:1: timeout: …` as the README shows, not the path
    made absolute (`/home/…/ci/auditor.toml:3:1: …`); an absolute path stays absolute."""
    (tmp_path / "ci").mkdir()
    (tmp_path / "ci" / "auditor.toml").write_text('org = "a"\nfail_on = "high"\ntimeout = 0\n')
    message = "ci/auditor.toml:3:1: timeout: expected a positive number, got 0"
    code, _, stderr = run_cli(["history", "--config", "ci/auditor.toml"], {}, tmp_path)
    assert (code, stderr) == (2, f"auditor: error: {message}\n")
    absolute = str(tmp_path / "ci" / "auditor.toml")
    code, _, stderr = run_cli(["history", "--config", absolute], {}, tmp_path)
    assert (code, stderr) == (2, f"auditor: error: {tmp_path}/{message}\n")
    (tmp_path / "pyproject.toml").write_text("[tool.auditor]\ntimeout = 0\n")
    code, _, stderr = run_cli(["history"], {}, tmp_path)
    assert (code, stderr) == (
        2,
        "auditor: error: pyproject.toml:2:1: timeout: expected a positive number, got 0\n",
    )


def test_an_orgs_file_problem_names_the_file_as_typed(tmp_path: Path) -> None:
    (tmp_path / "orgs.toml").write_text(
        '[[org]]\nname = "acme"\nbase_url = "https://a.example"\ntoken_env = "A_TOKEN"\n\n'
        '[[org]]\nname = "globex"\nbase_url = "https://g.example"\ntoken_env = "GLOBEX_TOKEN"\n'
    )
    code, _, stderr = run_cli(["run", "--orgs", "orgs.toml"], {"A_TOKEN": "tok-1234567"}, tmp_path)
    assert code == 2
    assert stderr.splitlines()[0] == (
        "auditor: error: orgs.toml:9:1: org[1] (globex): token_env: the environment variable "
        "GLOBEX_TOKEN is not set"
    ), stderr


def test_a_config_file_named_like_a_secret_is_not_shown(tmp_path: Path) -> None:
    """The path shown is judged as other shown paths are (`printed_path`): a token pasted as
    a folder name is left out; it was printed in full, made absolute."""
    secret = "ghp_" + "abcdefghijklmnopqrstuvwxyz0123456789"
    code, _, stderr = run_cli(["history", "--config", f"{secret}/a.toml"], {}, tmp_path)
    assert code == 2 and secret not in stderr
    assert (
        stderr == "auditor: error: <not shown: looks like a secret>/a.toml: config file not found\n"
    )
    code, _, stderr = run_cli(["run", "--orgs", f"{secret}/o.toml"], {}, tmp_path)
    assert code == 2 and secret not in stderr, stderr


# --- a damaged state file ----------------------------------------------------------------------


def test_a_torn_state_file_is_called_damaged_as_the_readme_says(
    env: dict[str, str], tmp_path: Path
) -> None:
    """`head -c N state.db > torn.db`: damage found as the file is opened read `torn.db is not
    a usable auditor state file: …`, where damage found later reads `state file … is damaged:
    …; restore a copy …` (the README's words): one wording for both."""
    code, _, stderr = run_cli(["sync", "--no-usage"], env, tmp_path)
    assert code == 0, stderr
    whole = Path(env["AUDITOR_STATE"]).read_bytes()
    (tmp_path / "torn.db").write_bytes(whole[: len(whole) // 3])
    (tmp_path / "torn.db").chmod(0o600)  # as the file was (else first: `chmod 600` it)
    code, _, stderr = run_cli(["history", "--state", "torn.db"], {}, tmp_path)
    assert code == 2
    assert stderr.startswith(
        f"auditor: error: state file {tmp_path / 'torn.db'} is damaged: database disk image is "
        "malformed (SQLITE_CORRUPT: the file is damaged); restore a copy saved before it was "
        "damaged, or move it aside and run `auditor sync` to start a new one"
    ), stderr
    (tmp_path / "notes.txt").write_text("not a database " * 500)  # not damage: not SQLite
    code, _, stderr = run_cli(["history", "--state", "notes.txt"], {}, tmp_path)
    assert code == 2
    assert "notes.txt is not a usable auditor state file: file is not a database" in stderr
    assert "restore a copy" not in stderr


# --- the CHANGELOG's breaking changes first ----------------------------------------------------


def test_each_release_section_of_the_changelog_opens_with_what_can_break() -> None:
    """README ("Upgrading auditor"): `CHANGELOG.md` says what each release changes, the
    breaking changes first. 0.3.0's section opened with the proxy and sync speed, and what
    makes a 0.2.0 nightly exit 2 was scattered through 1,100 lines (tester T5). Each released
    section (0.1.0, the first, has nothing to break) opens with such a list, and 0.3.0's names
    what T5 met, each with what to do."""
    import re

    root = Path(__file__).resolve().parent.parent
    readme = (root / "README.md").read_text(encoding="utf-8")
    assert "`CHANGELOG.md` says what each release changes, the\nbreaking changes first" in readme
    changelog = (root / "CHANGELOG.md").read_text(encoding="utf-8")
    sections = re.split(r"^## ", changelog, flags=re.MULTILINE)[1:]
    for section in sections:
        title, _, body = section.partition("\n")
        if title.startswith("0.1.0"):
            continue
        assert body.lstrip().startswith("Changes that can break"), title
    newest = sections[0].partition("\n")[2]
    first = newest.split("Changes that can break what reads")[0]  # the nightly's list
    for named in (
        "BASE-MOD-003",
        "BASE-HOK-003",
        "`policy lint",
        "`USE-MOD-*`",
        "without `--org`",
        "`version_at_least: 1.10`",
        "`[key=value]` selector matching two entries",
        "CHG-HOK-001",
        "State file mode",
        "chmod 600",
        "AUDITOR-INTEGRITY-001",
        "--no-rerun",
    ):
        assert named in first, named
