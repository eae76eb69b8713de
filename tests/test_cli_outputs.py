"""`-o/--output` (which reports to write), `-q/--quiet`, and `--at` before the first revision,
for run, review and demo, end to end against a real emulator."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest

from auditor.cli import Context, main
from tests.conftest import FIXED_NOW

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def run_cli(argv: list[str], *, env: dict[str, str], cwd: Path) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    ctx = Context(env=env, stdout=out, stderr=err, clock=lambda: FIXED_NOW, cwd=str(cwd))
    return main(argv, ctx), out.getvalue(), err.getvalue()


def files(folder: Path) -> set[str]:
    return {p.name for p in folder.iterdir()}


def test_run_writes_only_the_chosen_outputs(env: dict[str, str], tmp_path: Path) -> None:
    out = tmp_path / "r"
    code, stdout, stderr = run_cli(
        ["run", "--out", str(out), "--output", "sarif,md"], env=env, cwd=tmp_path
    )
    assert code == 1, stderr
    assert files(out) == {"findings.sarif", "report.md"}
    assert f"reports: {out / 'report.md'}" in stdout


def test_run_quiet_prints_only_the_exit_line(env: dict[str, str], tmp_path: Path) -> None:
    out = tmp_path / "r"
    code, stdout, stderr = run_cli(["run", "-q", "--out", str(out)], env=env, cwd=tmp_path)
    assert code == 1
    assert stdout == ""
    assert stderr.splitlines() == [stderr.splitlines()[-1]]
    assert stderr.startswith("auditor: exit 1: ")
    assert len(files(out)) == 5


@pytest.mark.parametrize("command", ["run", "review", "demo"])
@pytest.mark.parametrize("value", ["docx", "html,docx", ""])
def test_an_unknown_output_is_a_usage_error_naming_the_valid_ones(
    tmp_path: Path, command: str, value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [command, *(["x.yaml"] if command == "review" else []), "--output", value]
    code, _, _ = run_cli(argv, env={}, cwd=tmp_path)
    assert code == 2
    last = capsys.readouterr().err.splitlines()[-1]  # argparse writes usage errors itself
    assert last.startswith(f"auditor {command}: error: argument -o/--output: ")
    assert last.endswith("choose from html,md,json,sarif,junit,oscal,pdf (comma-separated)")
    assert not list(tmp_path.iterdir())


def test_review_quiet_with_one_output_still_posts_the_step_summary(
    env: dict[str, str], tmp_path: Path
) -> None:
    summary = tmp_path / "summary.md"
    out = tmp_path / "r"
    argv = ["review", str(EXAMPLES / "proposed-settings.yaml"), "-q", "-o", "json"]
    code, stdout, stderr = run_cli(
        [*argv, "--out", str(out), "--author", "a@acme.example"],
        env={**env, "GITHUB_STEP_SUMMARY": str(summary)},
        cwd=tmp_path,
    )
    assert code == 1, stderr
    assert files(out) == {"findings.json"}
    assert stdout == "" and len(stderr.splitlines()) == 1
    assert summary.read_text().startswith("<!-- auditor-review -->\n## Pre-change review")


def test_demo_quiet_and_output(tmp_path: Path) -> None:
    out = tmp_path / "d"
    argv = ["demo", "--revisions", "12", "--repos", "2", "--out", str(out), "-q", "-o", "junit"]
    code, stdout, stderr = run_cli(argv, env={}, cwd=tmp_path)
    assert code == 0, stderr
    assert files(out) == {"junit.xml"}
    assert stdout == ""
    assert stderr.splitlines() == [stderr.splitlines()[-1]]


def test_at_before_the_first_revision_is_one_clear_error(
    env: dict[str, str], tmp_path: Path
) -> None:
    code, _, stderr = run_cli(
        ["run", "--at", "2001-01-01", "--out", str(tmp_path / "r")], env=env, cwd=tmp_path
    )
    assert code == 2
    (line,) = [x for x in stderr.splitlines() if not x.startswith("synced:")]
    assert line.startswith("auditor: error: --at 2001-01-01T23:59:59.999999+00:00 is before")
    assert "first stored settings revision (rev 1, " in line
    assert "not evaluated" not in stderr


_GHP = "ghp_" + "aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789"


@pytest.mark.parametrize(
    "argv",
    [
        pytest.param(["sync", "caller-token-typed-as-a-word"], id="own-token-as-a-word"),
        pytest.param(["sync", _GHP, "extra-word"], id="token-form-as-a-word"),
        pytest.param(["run", "--timeout", _GHP], id="after-a-flag-that-takes-none-here"),
        pytest.param(["run", "--workers", _GHP], id="as-a-flags-bad-value"),
    ],
)
def test_a_usage_error_never_echoes_a_token_typed_into_the_command(
    tmp_path: Path, argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """argparse quoted every argument it could not place: `auditor sync $AUDITOR_TOKEN` (or a
    token after a flag that takes no value) printed it on stderr, into the CI log."""
    env = {"AUDITOR_TOKEN": "caller-token-typed-as-a-word"}
    code, _, _ = run_cli(argv, env=env, cwd=tmp_path)
    assert code == 2
    err = capsys.readouterr().err
    assert "error:" in err
    assert _GHP not in err and "caller-token-typed-as-a-word" not in err
    assert "<not shown: looks like a secret>" in err
    if "extra-word" in argv:
        assert "extra-word" in err  # ordinary words are still named


@pytest.mark.parametrize("command", [["run", "--offline"], ["review", "--offline", "x.json"]])
def test_a_mixed_case_token_typed_as_an_output_is_not_echoed_lower_cased(
    tmp_path: Path, command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """`-o` lower-cased the list before naming what it did not know: the caller's token
    `Hv7kQp…` came out as `hv7kqp…`, which the check for the token (by its exact text)
    missed (tester T32 #5)."""
    token = "Hv7kQp2Lx9WmZr4Tn8Bd"
    env = {"AUDITOR_TOKEN": token, "AUDITOR_STATE": str(tmp_path / "s.db")}
    code, _, _ = run_cli([*command, "-o", f"html,{token}"], env=env, cwd=tmp_path)
    assert code == 2
    err = capsys.readouterr().err
    assert "argument -o/--output: unknown output" in err, err
    assert token.lower() not in err.lower()
    assert "<not shown: looks like a secret>" in err
    # an ordinary word is still named, as typed
    code, _, _ = run_cli([*command, "-o", "HTML,Sarfi"], env=env, cwd=tmp_path)
    err = capsys.readouterr().err
    assert code == 2 and "unknown output 'Sarfi'" in err, err


@pytest.mark.parametrize(
    "argv",
    [
        pytest.param(["run", "--offline", "--at", _GHP], id="run-at"),
        pytest.param(["history", "--since", "caller-token-typed-as-a-word"], id="own-token"),
        pytest.param(["emulator", "--now", _GHP], id="emulator-now"),
        pytest.param(["emulator", "--fault", f"history:429:retry_after={_GHP}"], id="fault"),
    ],
)
def test_a_value_a_command_refuses_after_parsing_is_not_echoed_either(
    tmp_path: Path, argv: list[str]
) -> None:
    """`--at`, `--since`, `--now` and `--fault` are checked by the command, not
    argparse: their errors quoted the value (`--at: expected a date …, got 'ghp_…'`)."""
    env = {"AUDITOR_TOKEN": "caller-token-typed-as-a-word"}
    code, out, err = run_cli(argv, env=env, cwd=tmp_path)
    assert code == 2 and err.startswith("auditor: error: "), err
    assert _GHP not in out + err and "caller-token-typed-as-a-word" not in out + err
    assert "<not shown: looks like a secret>" in err


def test_a_usage_error_still_names_an_ordinary_bad_value(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, _ = run_cli(["run", "--fail-on", "hgh"], env={}, cwd=tmp_path)
    assert code == 2
    assert "invalid choice: 'hgh'" in capsys.readouterr().err
    code, _, err = run_cli(["history", "--since", "2026-13-01"], env={}, cwd=tmp_path)
    assert code == 2 and err.endswith("got '2026-13-01'\n"), err


def test_a_path_typed_as_the_token_is_not_echoed(tmp_path: Path) -> None:
    """`--state "$AUDITOR_TOKEN"` (flags mixed up in a CI step): the error named the state file
    it could not find, the token."""
    env = {"AUDITOR_TOKEN": "caller-token-typed-as-a-path"}
    code, out, err = run_cli(["history", "--state", env["AUDITOR_TOKEN"]], env=env, cwd=tmp_path)
    assert code == 2 and err.startswith("auditor: error: no state file at "), err
    assert "caller-token" not in out + err


@pytest.mark.parametrize("token", ["Zq8wAbCdEfJdF4s//Ga1EeW0iXyZ", "./Zq8wAbCdEfJdF4sGa1EeW0iXyZ"])
def test_a_token_typed_as_a_path_is_not_echoed_as_the_path_normalises_it(
    tmp_path: Path, token: str
) -> None:
    """The path in the message is normalised (`a//b` → `a/b`, `./a` → `a`), so the token as
    typed was not found in it and was printed."""
    env = {"AUDITOR_TOKEN": token}
    code, out, err = run_cli(["history", "--state", token], env=env, cwd=tmp_path)
    assert code == 2 and err.startswith("auditor: error: no state file at "), err
    assert "Ga1EeW0iXyZ" not in out + err and "[token]" in err


def test_a_short_test_token_is_not_hidden_inside_other_words(tmp_path: Path) -> None:
    """`AUDITOR_TOKEN=test` (a test setup) hid every `test` inside a word: `tests/c.toml`
    read `[token]s/c.toml`. A token under 8 characters is hidden only as a word of its own."""
    env = {"AUDITOR_TOKEN": "test"}
    code, _, err = run_cli(["run", "--config", "tests/c.toml"], env=env, cwd=tmp_path)
    assert code == 2 and "tests/c.toml" in err, err


def test_policy_and_verify_never_print_the_commands_token_as_a_path(tmp_path: Path) -> None:
    """`policy lint`/`policy test` problem lines and `verify`'s messages did not hide the
    command's token (a path typed as it: `auditor verify "$AUDITOR_TOKEN"`)."""
    token = "opaque-tok-9f8e7d6c5b"
    env = {"AUDITOR_TOKEN": token}
    for argv in (["policy", "lint", token], ["policy", "test", token], ["verify", token]):
        code, out, err = run_cli(argv, env=env, cwd=tmp_path)
        assert code == 2, (argv, out, err)
        assert token not in out + err and "[token]" in out + err, (argv, out, err)


PASTED = "ghp_Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56Qr78"  # a GitHub token, not the command's own


@pytest.mark.parametrize(
    "argv",
    [
        pytest.param(["history", "--state", f"ci/{PASTED}/state.db"], id="missing-state"),
        pytest.param(["run", "--offline", "--state", f"{PASTED}.db"], id="not-a-state-file"),
        pytest.param(["run", "--offline", "--out", f"f/{PASTED}"], id="run-out"),
        pytest.param(["review", "P", "--against", "P", "--out", f"f/{PASTED}"], id="review-out"),
        pytest.param(["export", "--out", f"f/{PASTED}"], id="export-out"),
    ],
)
def test_a_path_that_looks_like_a_secret_is_not_printed_in_an_error(
    env: dict[str, str], tmp_path: Path, argv: list[str]
) -> None:
    """A token pasted into `--state` or `--out` (not the command's own, which is `[token]`)
    was printed whole in the error about that path; the part that looks like a secret is now
    left out, the rest of the path shown."""
    assert run_cli(["sync"], env=env, cwd=tmp_path)[0] == 0
    (tmp_path / f"{PASTED}.db").write_text("not a database")
    (tmp_path / "f").write_text("a file, so no folder can be made under it")
    proposed = str(EXAMPLES / "live-settings.yaml")
    argv = [proposed if a == "P" else a for a in argv]
    code, out, err = run_cli(argv, env=env, cwd=tmp_path)
    assert code == 2, err
    assert PASTED not in out + err and PASTED[4:20] not in out + err, err
    assert err.startswith("auditor: error: ") and "<not shown: looks like a secret>" in err, err
    assert "f/<not shown" in err or "<not shown: looks like a secret>.db" in err or "ci/<not" in err


def test_a_ci_workspace_path_in_an_error_stays_readable(tmp_path: Path) -> None:
    path = "builds/Gx4nPz7Q/0/acme/.auditor/state.db"
    code, _, err = run_cli(["history", "--state", path], env={}, cwd=tmp_path)
    assert code == 2 and f"{path}: run `auditor sync` first" in err, err


def test_a_secret_in_the_out_path_is_not_printed_on_the_reports_line(
    env: dict[str, str], tmp_path: Path
) -> None:
    """`run --out x<token>y/o` printed the token in stdout's `reports:` line; the name that
    looks like a secret now reads `<not shown: looks like a secret>`, as in an error, and an
    ordinary path is printed as given."""
    assert run_cli(["sync"], env=env, cwd=tmp_path)[0] == 0
    out = f"x{PASTED}y/o"
    code, said, err = run_cli(["run", "--offline", "--out", out, "-o", "md"], env=env, cwd=tmp_path)
    assert code in (0, 1), err
    line = next(x for x in said.splitlines() if x.startswith("reports: "))
    assert PASTED[4:20] not in said + err and line.endswith(
        "<not shown: looks like a secret>/o/report.md"
    ), line
    code, said, err = run_cli(
        ["run", "--offline", "--out", "plain-reports-folder/o", "-o", "md"], env=env, cwd=tmp_path
    )
    assert f"reports: {tmp_path}/plain-reports-folder/o/report.md" in said, said


def test_a_dated_report_folder_is_shown_without_loading_the_secret_detectors() -> None:
    """A nightly's `--out reports/2026-11-29-nightly` (numbers and short words) is an ordinary
    name: the `reports:` line shows it as written and no detector is loaded for it (detect-
    secrets costs a tenth of a second); a token in the same place is still left out."""
    code = (
        "import sys\n"
        "from auditor.redact.shown import printed_path\n"
        "print(printed_path('/home/runner/work/org/reports/2026-11-29-nightly/report.md'))\n"
        "print(printed_path('policies/soc2-2026.q4.yaml'))\n"
        "print('detect_secrets' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert out == [
        "/home/runner/work/org/reports/2026-11-29-nightly/report.md",
        "policies/soc2-2026.q4.yaml",
        "False",
    ]
    token = "ghp_" + "Zx9Qw8Er7Ty6Ui5Op4As3Df2Gh1Jk0LmNbVc"
    from auditor.redact.shown import printed_path

    assert printed_path(f"reports/{token}/report.md") == (
        "reports/<not shown: looks like a secret>/report.md"
    )
