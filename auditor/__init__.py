"""auditor: policy audit and compliance checks for an AI agent platform's enterprise controls."""

from __future__ import annotations

__version__ = "0.3.0"

__all__ = ["__version__"]
