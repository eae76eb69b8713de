"""Shared fixtures: a real emulator on loopback, a scratch state file, a fixed clock."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

FIXED_NOW = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
OWNER_TOKEN = "test-owner-token-0123456789"
MEMBER_TOKEN = "test-member-token-0123456789"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden",
        action="store_true",
        default=False,
        help="rewrite golden files under tests/golden/ from the current output",
    )


@pytest.fixture
def update_golden(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--update-golden"))


@pytest.fixture
def fixed_now() -> datetime:
    return FIXED_NOW


@pytest.fixture
def state_path(tmp_path: Path) -> Path:
    return tmp_path / "state.db"


@pytest.fixture
def emulator() -> Iterator[Any]:
    """A running emulator (default seed and size) on free loopback ports; stopped after."""
    from auditor.emulator import start_emulator

    emu = start_emulator(
        tokens={OWNER_TOKEN: "owner", MEMBER_TOKEN: "member"},
        now=FIXED_NOW,
    )
    try:
        yield emu
    finally:
        emu.stop()
