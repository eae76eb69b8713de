"""`run --help` and `review --help` give the default SARIF category a run or a review writes
(tester T91 #9: they said `auditor/<org or host>/review`, where a review's is
`…/review/<file>`, and named neither `-no-usage` nor `-no-readiness`): an upload-sarif step
set up from `--help` expects the category it gets."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
from pathlib import Path

import pytest

from auditor.cli import build_parser
from tests.conftest import run_cli

ROOT = Path(__file__).resolve().parent.parent


def _help(command: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """`auditor COMMAND --help`'s text of `--sarif-category`, on one line."""
    monkeypatch.setenv("COLUMNS", "10000")  # (argparse breaks a line after a `-`)
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        build_parser(None).parse_args([command, "--help"])
    text = " ".join(out.getvalue().split())
    return text.rsplit("--sarif-category CATEGORY ", 1)[1].split(" -o LIST")[0]


def _category(out: Path) -> str:
    sarif = json.loads((out / "findings.sarif").read_text())
    automation: str = sarif["runs"][0]["automationDetails"]["id"]
    return automation.rsplit("/", 1)[0]


@pytest.mark.parametrize(
    "flags",
    [
        [],
        ["--no-usage"],
        ["--at", "2026-10-15", "--no-usage"],  # (the usage of then is not stored)
        ["--all-revisions", "--no-readiness"],
        ["--at", "2026-10-15", "--all-revisions", "--no-usage", "--no-readiness"],
    ],
)
def test_run_help_names_the_category_a_run_writes(
    env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, flags: list[str]
) -> None:
    """`run --help` said `auditor/<org or host>/run (with --at or --all-revisions: run-as-of,
    run-all-revisions)`: not the `-no-usage` / `-no-readiness` a run adds, nor how they join."""
    code, _, err = run_cli(["sync"], env, tmp_path)
    assert code == 0, err
    code, _, err = run_cli(["run", "--offline", *flags, "--out", "r"], env, tmp_path)
    assert code in (0, 1), err
    text = _help("run", monkeypatch)
    assert "Default auditor/<org or host>/run, followed by " in text
    named = text.split("followed by ")[1].split(" for each")[0]
    words = [w.split(" ")[0] for w in named.split(", ")]  # `-as-of (--at)`: `-as-of`
    assert words == ["-as-of", "-all-revisions", "-no-usage", "-no-readiness"]
    # the help's words, in its order, for the flags given: the category the run wrote
    given = ["--at", "--all-revisions", "--no-usage", "--no-readiness"]
    added = "".join(w for w, flag in zip(words, given, strict=True) if flag in flags)
    host = env["AUDITOR_BASE_URL"].split("//")[1].split(":")[0]  # <org or host>
    assert _category(tmp_path / "r") == f"auditor/{host}/run{added}"


def test_review_help_names_the_category_a_review_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`review --help` said `auditor/<org or host>/review`; a review's category goes on with
    the reviewed file's path (`…/review/settings/prod.yaml`), `offline` without a service."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "settings").mkdir()
    shutil.copy(ROOT / "examples" / "proposed-settings.yaml", tmp_path / "settings" / "prod.yaml")
    shutil.copy(ROOT / "examples" / "live-settings.yaml", tmp_path / "live.yaml")
    argv = ["review", "settings/prod.yaml", "--against", "live.yaml", "--out", "r"]
    code, _, err = run_cli(argv, {}, tmp_path)
    assert code in (0, 1), err
    assert _category(tmp_path / "r") == "auditor/offline/review/settings/prod.yaml"
    text = _help("review", monkeypatch)
    assert "Default auditor/<org or host>/review/<file>, <file> the reviewed file's path" in text
    assert "(auditor/acme/review/settings/prod.yaml)" in text
    assert "<org or host> is offline when there is no service address (--against FILE)" in text
    code, _, err = run_cli([*argv[:-1], "r2", "--org", "acme"], {}, tmp_path)
    assert code in (0, 1), err
    assert _category(tmp_path / "r2") == "auditor/acme/review/settings/prod.yaml"
