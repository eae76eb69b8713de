"""A custom pack's author, again (review R14 #3, #4, #5, #9): "did you mean" offered the
operator of opposite meaning for names from other tools (`nin`: `in`, `unequal`: `equals`,
`version_below`: `version_at_least`, `item_deleted`: `item_added`); a dangling link to a pack
folder whose name has a dot (`acme.policies`) was passed over; `excludes: ""` on an array was
said to decide nothing, and `excludes: []` was not; a `[kind=…]` selector on `changes` was not
checked.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_policy_cli import run

RULE = (
    "rules:\n"
    "  - {{id: {id}, title: t, severity: low, target: settings, assert: {{path: a, equals: 1}}}}\n"
)


def _write(tmp_path: Path, text: str, name: str = "p.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


# --- #4: a dangling link whose name has a dot may be a pack folder ------------------------


@pytest.mark.parametrize("name", ["acme.policies", "shared.v2", "packs-1.2", "pack.YAML.d"])
def test_a_dangling_link_to_a_pack_folder_with_a_dot_is_an_error(tmp_path: Path, name: str) -> None:
    pol = tmp_path / "pol"
    pol.mkdir()
    (pol / "own.yaml").write_text(RULE.format(id="OWN-1"))
    (pol / name).symlink_to(tmp_path / "moved-away")
    for command in ("lint", "test"):
        code, out, err = run(tmp_path, command, str(pol))
        assert code == 2, out + err
        assert f"{pol}/{name}:1:1: error: No such file or directory" in out.splitlines()


@pytest.mark.parametrize("name", ["notes.md", "README.txt", "ci.sh", "data.json", "logo.PNG"])
def test_a_dangling_link_named_as_a_non_policy_file_is_left_alone(
    tmp_path: Path, name: str
) -> None:
    """A regular file so named is no policy (the loader reads `*.yaml` / `*.yml` only), and
    neither is a link to nothing so named."""
    pol = tmp_path / "pol"
    pol.mkdir()
    (pol / "own.yaml").write_text(RULE.format(id="OWN-1"))
    (pol / name).symlink_to(tmp_path / "nowhere")
    code, out, err = run(tmp_path, "lint", str(pol))
    assert (code, out) == (0, ""), err
