"""The tool's address in the reports comes from the installed package's metadata: read without
`importlib.metadata` where the file is plain, and always the answer that module gives.

Each case runs in a fresh interpreter (the plain reading is used only while `importlib.metadata`
is not loaded), with a made-up `auditor-….dist-info` folder first on `sys.path` where it says."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: In the child: the plain reading's answer and project_home (before `importlib.metadata` is
#: loaded), then that module's `Project-URL` entries and project_home worked out from them.
_CHILD = """
import json, sys
from auditor.report import identity
plain = identity._plain_urls()
home = identity.project_home()
loaded = "importlib.metadata" in sys.modules
import importlib.metadata
try:
    urls = importlib.metadata.metadata("auditor").get_all("Project-URL") or []
except importlib.metadata.PackageNotFoundError:
    urls = None
identity.project_home.cache_clear()  # read again, through importlib.metadata (loaded now)
print(json.dumps({"plain": plain, "home": home, "loaded": loaded, "urls": urls,
                  "home_by_module": identity.project_home()}))
"""


def _child(first: Path | None = None) -> dict[str, object]:
    paths = [str(first)] if first is not None else []
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([*paths, str(ROOT)])}
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD], env=env, capture_output=True, text=True, check=True
    )
    answer: dict[str, object] = json.loads(proc.stdout)
    return answer


def _dist(tmp_path: Path, metadata: str, folder: str = "auditor-9.9.9.dist-info") -> Path:
    info = tmp_path / folder
    info.mkdir()
    (info / "METADATA").write_text(metadata, encoding="utf-8")
    return tmp_path


def test_the_installed_package_is_read_as_importlib_metadata_reads_it() -> None:
    got = _child()
    assert got["loaded"] is False  # the plain reading did not load the module
    assert got["plain"] is not None and got["plain"][0] == got["urls"]  # type: ignore[index]
    assert got["home"] == got["home_by_module"]


def test_a_declared_home_page_is_found_without_importlib_metadata(tmp_path: Path) -> None:
    metadata = (
        "Metadata-Version: 2.1\nName: auditor\nVersion: 9.9.9\n"
        "Project-URL: Issues, https://tracker.example.net/auditor\n"
        "Project-URL:   Homepage, https://auditor.example.org/\n"
        "\nProject-URL: Repository, https://body.example.com/not-a-header\n"
    )
    got = _child(_dist(tmp_path, metadata))
    assert got["plain"] == [
        ["Issues, https://tracker.example.net/auditor", "Homepage, https://auditor.example.org/"]
    ]
    assert got["urls"] == got["plain"][0]  # type: ignore[index]
    assert got["home"] == got["home_by_module"] == "https://auditor.example.org"


@pytest.mark.parametrize(
    "metadata",
    [
        # a folded header: `email` joins its lines
        "Name: auditor\nProject-URL: Homepage,\n https://folded.example.org\n\nbody\n",
        # a line that is not a header ends the headers for `email`
        "Name: auditor\nnot a header\nProject-URL: Homepage, https://after.example.org\n",
        "From someone\nName: auditor\nProject-URL: Homepage, https://from.example.org\n",
        "",
    ],
)
def test_metadata_that_is_not_plain_is_left_to_importlib_metadata(
    tmp_path: Path, metadata: str
) -> None:
    got = _child(_dist(tmp_path, metadata))
    assert got["plain"] is None
    assert got["home"] == got["home_by_module"]


def test_an_egg_info_found_first_is_left_to_importlib_metadata(tmp_path: Path) -> None:
    (tmp_path / "auditor.egg-info").mkdir()
    (tmp_path / "auditor.egg-info" / "PKG-INFO").write_text(
        "Name: auditor\nProject-URL: Homepage, https://egg.example.org\n", encoding="utf-8"
    )
    got = _child(tmp_path)
    assert got["plain"] is None
    assert got["home"] == got["home_by_module"] == "https://egg.example.org"
