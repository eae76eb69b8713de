"""A `.auditor/` auditor makes holds a `.gitignore` of `*`, as pytest's, mypy's and ruff's
caches do, and another folder it makes for its state file one naming the state file: the
pre-commit hook `auditor-review` left `.auditor/state.db` (with the fingerprint key, unless
AUDITOR_FINGERPRINT_KEY is set) and its reports untracked in the user's repository, and one
`git add -A` published them (tester T63); a `*` in any folder made for the state hid the
reports a user kept beside it from git (reviewer R32)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from auditor.report import prepare_out_dir
from auditor.store.database import GITIGNORE, Store, ignore_in_git
from tests.conftest import OWNER_TOKEN, run_cli

REPO = Path(__file__).resolve().parents[1]


def _git(repo: Path, *argv: str) -> str:
    git = shutil.which("git")
    if git is None:
        pytest.skip("git is not installed")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(repo), "GIT_CONFIG_NOSYSTEM": "1"}
    ident = ["-c", "user.name=t", "-c", "user.email=t@example.com"]
    done = subprocess.run(
        [git, *ident, *argv], cwd=repo, env=env, check=True, capture_output=True, text=True
    )
    return done.stdout


def _staged(repo: Path) -> list[str]:
    _git(repo, "add", "-A")
    return sorted(_git(repo, "diff", "--cached", "--name-only").splitlines())


def test_a_state_folder_auditor_makes_is_ignored_by_git(tmp_path: Path) -> None:
    _git(tmp_path, "init", "-q")
    (tmp_path / "notes.md").write_text("x\n")
    with Store.open(tmp_path / ".auditor" / "state.db"):
        pass
    assert (tmp_path / ".auditor" / ".gitignore").read_text() == GITIGNORE
    assert (tmp_path / ".auditor" / "state.db").is_file()
    assert _staged(tmp_path) == ["notes.md"]


def test_another_folder_made_for_the_state_ignores_the_state_files_alone(tmp_path: Path) -> None:
    """`--state compliance/state.db --out compliance/reports`: the reports the user keeps
    beside the state file stay theirs to commit, whichever folder auditor made first."""
    _git(tmp_path, "init", "-q")
    for first in ("state", "reports"):
        folder = tmp_path / f"compliance-{first}"
        if first == "reports":
            prepare_out_dir(folder / "reports")
        with Store.open(folder / "state.db"):
            pass
        prepare_out_dir(folder / "reports")
        (folder / "reports" / "report.md").write_text("# report\n")
        assert not (folder / "reports" / ".gitignore").exists()
    assert _staged(tmp_path) == [
        "compliance-reports/.gitignore",
        "compliance-reports/reports/report.md",
        "compliance-state/.gitignore",
        "compliance-state/reports/report.md",
    ]


def test_every_organizations_state_file_is_ignored_whoever_made_the_folder(
    tmp_path: Path,
) -> None:
    """`run --orgs --state compliance/state.db`: the first organization's worker makes
    `compliance/` for `state-acme.db`; `state-globex.db` beside it is ignored too (review
    R33: it was left for `git add -A`, with its fingerprint key)."""
    _git(tmp_path, "init", "-q")
    folder = tmp_path / "compliance"
    for org in ("acme", "globex"):
        with Store.open(folder / f"state-{org}.db"):
            pass
    prepare_out_dir(folder / "reports")
    (folder / "reports" / "report.md").write_text("# report\n")
    assert (folder / "state-globex.db").is_file()
    assert _staged(tmp_path) == ["compliance/.gitignore", "compliance/reports/report.md"]


def test_only_a_made_auditor_folder_is_ignored_whole(tmp_path: Path) -> None:
    (tmp_path / "var").mkdir()
    with Store.open(tmp_path / "var" / "lib" / ".auditor" / "x" / "state.db"):
        pass
    assert (tmp_path / "var" / "lib" / ".auditor" / ".gitignore").read_text() == GITIGNORE
    assert not (tmp_path / "var" / ".gitignore").exists()
    assert not (tmp_path / "var" / "lib" / ".gitignore").exists()
    assert not (tmp_path / "var" / "lib" / ".auditor" / "x" / ".gitignore").exists()


def test_a_folder_that_was_there_is_left_as_it_was(tmp_path: Path) -> None:
    """The user's own folder (committed on purpose, or ignored their way) gets no file."""
    state = tmp_path / "kept"
    state.mkdir()
    with Store.open(state / "state.db"):
        pass
    assert sorted(p.name for p in state.iterdir()) == ["state.db", "state.db.lock"]


def test_an_existing_gitignore_is_never_replaced_nor_followed(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / ".gitignore").write_text("!state.db\n")
    ignore_in_git(tmp_path / "a")
    assert (tmp_path / "a" / ".gitignore").read_text() == "!state.db\n"
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / ".gitignore").symlink_to(tmp_path / "elsewhere")
    ignore_in_git(tmp_path / "b")
    assert not (tmp_path / "elsewhere").exists()


def test_the_pre_commit_review_leaves_nothing_for_git_add(
    tmp_path: Path, emu: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hook's command line in a repository: it makes `.auditor/pre-commit-review/` (its
    reports) first, then `.auditor/state.db`; `git add -A` stages the settings file alone."""
    hooks = {h["id"]: h for h in YAML(typ="safe").load(REPO / ".pre-commit-hooks.yaml")}
    entry = hooks["auditor-review"]["entry"].split()
    assert entry[:2] == ["auditor", "review"] and ".auditor/pre-commit-review" in entry
    _git(tmp_path, "init", "-q")
    (tmp_path / "settings").mkdir()
    settings = "settings/enterprise-controls.yaml"
    shutil.copyfile(REPO / "examples" / "proposed-settings.yaml", tmp_path / settings)
    env = {
        "AUDITOR_BASE_URL": emu.base_url,
        "AUDITOR_APP_URL": emu.app_url,
        "AUDITOR_TOKEN": OWNER_TOKEN,
    }
    monkeypatch.chdir(tmp_path)  # pre-commit runs the hook at the repository's root
    code, _, err = run_cli([*entry[1:], settings, "--author", "a@b.c"], env, tmp_path)
    assert code in (0, 1), err
    assert (tmp_path / ".auditor" / "state.db").is_file()
    assert (tmp_path / ".auditor" / "pre-commit-review" / "report.md").is_file()
    assert (tmp_path / ".auditor" / ".gitignore").read_text() == GITIGNORE
    assert not (tmp_path / ".auditor" / "pre-commit-review" / ".gitignore").exists()
    assert _staged(tmp_path) == [settings]


def test_the_pre_commit_review_with_the_state_elsewhere_leaves_nothing_either(
    tmp_path: Path, emu: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """AUDITOR_STATE outside the repository: the hook's `.auditor/pre-commit-review/` is still
    in a `.auditor/` auditor made (reviewer R32)."""
    hooks = {h["id"]: h for h in YAML(typ="safe").load(REPO / ".pre-commit-hooks.yaml")}
    entry = hooks["auditor-review"]["entry"].split()
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    (repo / "settings").mkdir()
    settings = "settings/enterprise-controls.yaml"
    shutil.copyfile(REPO / "examples" / "proposed-settings.yaml", repo / settings)
    env = {
        "AUDITOR_BASE_URL": emu.base_url,
        "AUDITOR_APP_URL": emu.app_url,
        "AUDITOR_TOKEN": OWNER_TOKEN,
        "AUDITOR_STATE": str(tmp_path / "elsewhere" / "state.db"),
    }
    monkeypatch.chdir(repo)
    code, _, err = run_cli([*entry[1:], settings, "--author", "a@b.c"], env, repo)
    assert code in (0, 1), err
    assert (repo / ".auditor" / "pre-commit-review" / "report.md").is_file()
    assert not (repo / ".auditor" / "state.db").exists()
    assert _staged(repo) == [settings]
