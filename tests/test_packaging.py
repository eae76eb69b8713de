"""The wheel and the sdist as a user gets them: `pip install .` or `pip install git+…` (the
GitHub Action, the pre-commit hooks, the example workflows) installs a wheel built from the
checkout, not the editable checkout the rest of the suite runs. 0.3.0's wheel left out
auditor/redact/ (a package list kept by hand) and every command but `--help` crashed.

The lists checked are taken from the source tree: a new module, package or data file that the
wheel leaves out fails here. Needs `setuptools` from the package index (pip's build isolation
fetches it): a skip saying so without it, a failure in CI."""

from __future__ import annotations

import os
import shutil
import site
import subprocess
import sys
import tarfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from auditor.report import DEFAULT_OUTPUTS, OUTPUTS
from tests.conftest import missing_tool

ROOT = Path(__file__).resolve().parents[1]
#: Not part of the checkout as git has it (`.gitignore`): never copied to build from.
_IGNORED_ANYWHERE = {".git", "__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache"}
_IGNORED = {
    ".": {".venv", "build", "dist", "reports", ".auditor", ".hypothesis"},
    ".ci": {"venv", "tools"},
    "tests": {"_artifacts"},
}


def _not_source(folder: str, names: list[str]) -> set[str]:
    where = Path(folder).relative_to(ROOT).as_posix()
    ignored = _IGNORED_ANYWHERE | _IGNORED.get(where, set())
    return {
        name for name in names if name in ignored or name.endswith((".egg-info", ".pyc", ".pyo"))
    }


def _files(folder: Path) -> list[Path]:
    return sorted(
        path
        for path in folder.rglob("*")
        if path.is_file()
        and "__pycache__" not in path.parts
        and path.suffix not in {".pyc", ".pyo"}
        and not path.name.startswith(".")
    )


def _shipped() -> dict[str, Path]:
    """What the wheel must hold, by its path there: every file under auditor/ (the modules,
    the compiled page modules, the schemas, templates and data files the code opens) and the
    policy packs of the top-level policies/ folder as auditor/policies/."""
    shipped = {path.relative_to(ROOT).as_posix(): path for path in _files(ROOT / "auditor")}
    for path in _files(ROOT / "policies"):
        shipped[f"auditor/policies/{path.relative_to(ROOT / 'policies').as_posix()}"] = path
    return shipped


def _run(
    argv: list[str], cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


@dataclass(frozen=True)
class Built:
    wheel: Path
    sdist: Path
    wheel_from_sdist: Path
    tmp: Path


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    tmp = tmp_path_factory.mktemp("packaging")
    # A copy of the checkout: a build in place leaves build/ behind, whose stale files a later
    # wheel would carry (and hide a file left out)
    src = tmp / "src"
    shutil.copytree(ROOT, src, ignore=_not_source)
    backend = tmp / "backend"
    # setuptools for the sdist and for the wheel built from it (70.1 builds wheels without
    # the `wheel` package)
    pip = [sys.executable, "-m", "pip"]
    got = _run([*pip, "install", "-q", "--target", str(backend), "setuptools>=70.1"])
    if got.returncode != 0:
        why = f"setuptools from the package index: {got.stderr[-500:]}"
        missing_tool(why, "setuptools", "wheel and sdist not built")
    hooks = "import sys; from setuptools import build_meta as b; "
    hooks += "print(getattr(b, sys.argv[1])(sys.argv[2]))"
    backend_env = {**os.environ, "PYTHONPATH": str(backend)}

    def hook(name: str, cwd: Path, out: Path) -> Path:
        got = _run([sys.executable, "-c", hooks, name, str(out)], cwd=cwd, env=backend_env)
        assert got.returncode == 0, got.stderr[-3000:]
        return out / got.stdout.strip().splitlines()[-1]

    sdist = hook("build_sdist", src, tmp / "sdist")
    # the wheel as pip builds it for a user (`pip install .`: build isolation, the
    # [build-system] requirements from the index)
    got = _run([*pip, "wheel", "-q", "--no-deps", "-w", str(tmp / "wheel"), str(src)])
    assert got.returncode == 0, got.stderr[-3000:]
    (wheel,) = (tmp / "wheel").glob("auditor-*.whl")
    with tarfile.open(sdist) as archive:
        if hasattr(tarfile, "data_filter"):  # Python 3.11.4 and later
            archive.extractall(tmp / "unpacked", filter="data")
        else:
            archive.extractall(tmp / "unpacked")  # our own sdist
    (unpacked,) = (tmp / "unpacked").iterdir()
    wheel_from_sdist = hook("build_wheel", unpacked, tmp / "wheel-from-sdist")
    return Built(wheel, sdist, wheel_from_sdist, tmp)


def _contents(wheel: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(wheel) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def test_the_wheel_holds_every_module_and_data_file_of_the_source_tree(built: Built) -> None:
    contents = _contents(built.wheel)
    shipped = _shipped()
    assert "auditor/redact/__init__.py" in shipped  # (the package 0.3.0 left out)
    missing = sorted(set(shipped) - set(contents))
    assert not missing, f"left out of the wheel: {missing}"
    changed = sorted(name for name, path in shipped.items() if contents[name] != path.read_bytes())
    assert not changed, f"differ from the source: {changed}"
    stray = sorted(
        name
        for name in contents
        if name not in shipped and not name.split("/")[0].endswith(".dist-info")
    )
    assert not stray, f"in the wheel but not in auditor/ or policies/: {stray}"


def test_the_sdist_builds_the_same_wheel_and_holds_the_test_suite(built: Built) -> None:
    from_tree, from_sdist = _contents(built.wheel), _contents(built.wheel_from_sdist)
    assert sorted(from_sdist) == sorted(from_tree)
    differ = [n for n in from_tree if from_tree[n] != from_sdist[n]]
    assert [n for n in differ if not n.endswith(".dist-info/RECORD")] == []
    with tarfile.open(built.sdist) as archive:
        names = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    needed = [p.relative_to(ROOT).as_posix() for p in _files(ROOT / "tests")]
    needed = [n for n in needed if not n.startswith("tests/_artifacts/")]
    assert "tests/conftest.py" in needed
    missing = sorted(set(needed) - names)
    assert not missing, f"the sdist's tests cannot run without: {missing}"


def test_the_installed_wheel_runs_the_demo_from_an_empty_folder(built: Built) -> None:
    target, empty = built.tmp / "site", built.tmp / "empty"
    empty.mkdir()
    pip = [sys.executable, "-m", "pip"]
    got = _run([*pip, "install", "-q", "--no-deps", "--target", str(target), str(built.wheel)])
    assert got.returncode == 0, got.stderr[-3000:]
    # The wheel's copy is what runs, not the checkout: `-S`, as the test's environment has the
    # checkout installed editable (`pip install -e`), whose finder, set up by a .pth file,
    # would supply what the wheel leaves out; the dependencies from its site-packages.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AUDITOR_", "PYTHON"))}
    env["PYTHONPATH"] = os.pathsep.join([str(target), *site.getsitepackages()])
    python = [sys.executable, "-S"]
    got = _run([*python, "-c", "import auditor; print(auditor.__file__)"], cwd=empty, env=env)
    assert got.returncode == 0, got.stderr
    assert Path(got.stdout.strip()).is_relative_to(target), got.stdout
    out = built.tmp / "reports"
    got = _run([*python, "-m", "auditor", "demo", "--out", str(out)], cwd=empty, env=env)
    assert got.returncode == 0, got.stdout + got.stderr
    assert "Traceback" not in got.stderr, got.stderr
    written = sorted(p.name for p in out.rglob("*") if p.is_file())
    assert set(written) >= {OUTPUTS[o] for o in DEFAULT_OUTPUTS}, written
