"""Names a package loads on first use (PEP 562 module `__getattr__`), so importing the package
stays cheap (`auditor --version` loads no rule engine): each package keeps a table of which
submodule holds each name and hands it here."""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Mapping
from typing import Any


def load(package: str, where: Mapping[str, str], name: str) -> Any:
    """`package.name`, imported from the submodule `where` names for it."""
    module = where.get(name)
    if module is None:
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{package}.{module}"), name)


def listed(module_globals: Iterable[str], exported: Iterable[str]) -> list[str]:
    """A package's names for `dir()`, the ones not loaded yet included (a REPL, pydoc)."""
    return sorted({*module_globals, *exported})
