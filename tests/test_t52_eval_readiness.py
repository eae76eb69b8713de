"""T52 #4: a criterion id of a `--readiness-model` file that looks like a secret is refused at
its `file:line:col`, never shown, as a policy's rule id that looks like one is. It used to be
printed on stdout and in all five reports (`$.criteria.sk-live-…: criterion in none of the 3
reports the run grades`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from auditor.errors import ConfigError
from auditor.evaluate.readiness import DEFAULT_MODEL_PATH, load_readiness_model
from tests.conftest import run_cli

SECRET = "sk-live-SUPERSECRET0123456789abcdef"
SHIPPED = DEFAULT_MODEL_PATH.read_text()


def _model(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "model.yaml"
    path.write_text(text)
    return path


def _line_col(text: str, needle: str) -> str:
    for number, line in enumerate(text.splitlines(), 1):
        if needle in line:
            return f"{number}:{line.index(needle) + 1}"
    raise AssertionError(needle)


def test_a_secret_looking_criterion_id_is_refused_where_it_is(tmp_path: Path) -> None:
    text = SHIPPED.replace("lint_config:", f"{SECRET}:")
    path = _model(tmp_path, text)
    with pytest.raises(ConfigError) as caught:
        load_readiness_model(path)
    message = str(caught.value)
    assert SECRET not in message and "SUPERSECRET" not in message
    assert f"{path}:{_line_col(text, SECRET)}: error: $.criteria: the id of this criterion " in (
        message
    )
    assert "looks like a secret (not shown)" in message and "rename it" in message


def test_nothing_else_is_said_of_that_criterion(tmp_path: Path) -> None:
    """Its other problems (a level the model lacks) would each name it: only the refusal."""
    text = SHIPPED.replace("lint_config: {level: 1,", f"{SECRET}: {{level: 9, colour: red,")
    assert SECRET in text
    with pytest.raises(ConfigError) as caught:
        load_readiness_model(_model(tmp_path, text))
    lines = str(caught.value).splitlines()[1:]
    assert len(lines) == 1 and "looks like a secret (not shown)" in lines[0]
    assert "SUPERSECRET" not in str(caught.value)


@pytest.mark.parametrize(
    "cid", ["lint_config", "AGENTS.md present", "CodeOwners_File", "uses-pre-commit-v3"]
)
def test_ordinary_criterion_ids_still_load(tmp_path: Path, cid: str) -> None:
    model = load_readiness_model(_model(tmp_path, SHIPPED.replace("lint_config:", f"{cid!r}:")))
    assert cid in model.criteria


def test_the_shipped_model_loads() -> None:
    assert "lint_config" in load_readiness_model(None).criteria


@pytest.mark.e2e
def test_run_with_such_a_model_stops_and_shows_it_nowhere(
    env: dict[str, str], tmp_path: Path
) -> None:
    code, _, err = run_cli(["sync", "-q"], env, tmp_path)
    assert code == 0, err
    model = _model(tmp_path, SHIPPED.replace("lint_config:", f"{SECRET}:"))
    out = tmp_path / "out"
    argv = ["run", "--offline", "--readiness-model", str(model), "--out", str(out)]
    code, stdout, stderr = run_cli(argv, env, tmp_path)
    assert code == 2, stderr
    assert "SUPERSECRET" not in stdout + stderr
    assert f"{model}:{_line_col(model.read_text(), SECRET)}: error: $.criteria: the id of " in (
        stderr
    )
    written: list[Any] = sorted(out.iterdir()) if out.exists() else []
    assert not [f for f in written if "SUPERSECRET" in f.read_text(errors="replace")]
