"""A local HTTP server that speaks the platform API, for the demo, the tests and the benchmarks.

Seeded, realistic data in (`generate_dataset`), a running server on loopback out
(`start_emulator`), with switchable faults (`FaultController`).
"""

from __future__ import annotations

from auditor.emulator.data import Dataset, generate_dataset
from auditor.emulator.faults import FaultController
from auditor.emulator.server import DEFAULT_TOKENS, Emulator, start_emulator

__all__ = [
    "DEFAULT_TOKENS",
    "Dataset",
    "Emulator",
    "FaultController",
    "generate_dataset",
    "start_emulator",
]
