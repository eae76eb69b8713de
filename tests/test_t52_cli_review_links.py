"""T52 #3: `review` never follows a symlinked PROPOSED (or `--against`) file out of the tree
under review. Git checks a symlink out as a symlink, so a pull request could make its settings
file a link to any YAML or JSON file the runner can read (`~/.config/gh/hosts.yml`, a
kubeconfig), and the PR comment listed every key and value of it as added settings. Such a
link is refused before it is read (exit 2, one line naming the path and why); a link that
stays in the tree is read as before."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import run_cli

SECRET_HOST = "vault.corp.internal:8200"
LIVE = "sandbox:\n  enabled: true\n"


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A checkout (`repo/`, the current folder) beside a file of the runner's (`home/`)."""
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "creds.yml").write_text(
        f"internal_host: {SECRET_HOST}\nsession: 7f3a9c2e1b4d\n"
    )
    repo = tmp_path / "repo"
    (repo / "deploy").mkdir(parents=True)
    (repo / "live.yaml").write_text(LIVE)
    (repo / "deploy" / "ec.yaml").write_text("sandbox:\n  enabled: false\n")
    monkeypatch.chdir(repo)
    return repo


def _review(
    repo: Path, proposed: str, against: str, env: dict[str, str] | None = None
) -> tuple[int, str]:
    argv = ["review", proposed, "--against", against, "--out", "out", "-o", "md,json"]
    code, out, err = run_cli([*argv, "--author", "a@b.example"], env or {}, repo)
    return code, out + err


def _why(path: str, where: str) -> str:
    return (
        f"{path}:1:1: error: a symbolic link to a file outside {where}, not read: a settings "
        "file under review must lie in the tree it is reviewed in (a pull request's link could "
        "publish any file this machine can read); give the file itself\n"
        "auditor: error: 1 problem(s) in input files (listed above)\n"
    )


@pytest.mark.parametrize("how", ["link", "folder link", "against"])
def test_a_link_out_of_the_checkout_is_refused_unread(tree: Path, how: str) -> None:
    (tree / "proposed.yaml").symlink_to("../home/creds.yml")
    (tree / "home").symlink_to("../home")
    proposed, against, named = {
        "link": ("proposed.yaml", "live.yaml", "proposed.yaml"),
        "folder link": ("home/creds.yml", "live.yaml", "home/creds.yml"),
        "against": ("live.yaml", "proposed.yaml", "proposed.yaml"),
    }[how]
    code, shown = _review(tree, proposed, against)
    assert (code, shown) == (2, _why(named, f"the working folder ({tree})"))
    assert not (tree / "out").exists()  # no report, no PR comment


def test_a_link_within_the_checkout_is_reviewed(tree: Path) -> None:
    (tree / "proposed.yaml").symlink_to("deploy/ec.yaml")
    code, shown = _review(tree, "proposed.yaml", "live.yaml")
    assert code == 1, shown  # the change turns the sandbox off
    assert "sandbox.enabled" in (tree / "out" / "report.md").read_text()


def test_github_workspace_is_the_tree_when_set(tree: Path) -> None:
    """In a workflow, the checkout is GITHUB_WORKSPACE, wherever the step runs: a link to
    another folder of it is read, one out of it refused."""
    (tree / "proposed.yaml").symlink_to("../home/creds.yml")
    outer = {"GITHUB_WORKSPACE": str(tree.parent)}  # home/ is in it
    code, shown = _review(tree, "proposed.yaml", "live.yaml", outer)
    assert code in (0, 1), shown
    code, shown = _review(tree, "proposed.yaml", "live.yaml", {"GITHUB_WORKSPACE": str(tree)})
    assert (code, shown) == (2, _why("proposed.yaml", f"GITHUB_WORKSPACE ({tree})"))


def test_a_file_named_outside_the_checkout_without_a_link_is_read(tree: Path) -> None:
    """The command line's own choice (`auditor review /etc/ec.yaml`) is not a pull request's."""
    code, shown = _review(tree, "../home/creds.yml", "live.yaml")
    assert code in (0, 1), shown
    assert SECRET_HOST in (tree / "out" / "report.md").read_text()


def test_a_file_named_through_a_link_outside_the_checkout_is_read(tree: Path) -> None:
    """A link of the machine's, not the tree's (macOS's `/tmp -> private/tmp`): the command
    line named a file outside the tree, which it may."""
    (tree.parent / "tmp").symlink_to("home")
    code, shown = _review(tree, str(tree.parent / "tmp" / "creds.yml"), "live.yaml")
    assert code in (0, 1), shown
    assert SECRET_HOST in (tree / "out" / "report.md").read_text()
