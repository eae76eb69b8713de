"""The import-layer contract ([tool.importlinter] in pyproject.toml): a stage imports only the
stages below it, and every stage is in the contract."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner
from importlinter.api import read_configuration
from importlinter.cli import lint_imports_command

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = ROOT / "pyproject.toml"
ENTRY_POINTS = {"__init__", "__main__"}  # the package itself and `python -m auditor`


def test_no_stage_imports_a_stage_above_it() -> None:
    result = CliRunner().invoke(
        lint_imports_command, ["--no-cache", "--no-logo", "--config", str(PYPROJECT)]
    )
    assert result.exit_code == 0, result.output


def _stages() -> set[str]:
    code = [
        p for p in (ROOT / "auditor").iterdir() if p.suffix == ".py" or (p / "__init__.py").exists()
    ]
    return {f"auditor.{p.stem}" for p in code if p.stem not in ENTRY_POINTS}


def test_every_stage_is_in_a_layer() -> None:
    (contract,) = read_configuration(str(PYPROJECT))["contracts_options"]
    layers = contract["layers"]
    named = {m.strip() for layer in layers for m in layer.split("|")}
    assert sorted(_stages() - named) == [], "a stage the contract does not place"
    assert sorted(named - _stages()) == [], "a layer naming no module"
