"""A folder auditor makes for its state file holds a `.gitignore` of `*`, as pytest's, mypy's
and ruff's caches do: the pre-commit hook `auditor-review` left `.auditor/state.db` (with the
fingerprint key, unless AUDITOR_FINGERPRINT_KEY is set) and its reports untracked in the
user's repository, and one `git add -A` published them (tester T63)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

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


def test_only_the_outermost_folder_it_makes_gets_one(tmp_path: Path) -> None:
    (tmp_path / "var").mkdir()
    with Store.open(tmp_path / "var" / "lib" / "auditor" / "state.db"):
        pass
    assert (tmp_path / "var" / "lib" / ".gitignore").read_text() == GITIGNORE
    assert not (tmp_path / "var" / ".gitignore").exists()
    assert not (tmp_path / "var" / "lib" / "auditor" / ".gitignore").exists()


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
