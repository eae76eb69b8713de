"""Names a package loads on first use (PEP 562 module `__getattr__`), so importing the package
stays cheap (`auditor --version` loads no rule engine): each package keeps a table of which
submodule holds each name and hands it here."""

from __future__ import annotations

import importlib
import importlib.util
import sys
import threading
import types
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
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


class _Deferred(types.ModuleType):
    """The stand-in for a module not loaded yet: the import system finds its name and spec
    (so `import module` elsewhere takes it as loaded); any other attribute loads the real
    module, which from then on is in `sys.modules`, and is read from it."""

    def __getattr__(self, attr: str) -> Any:
        name = self.__name__
        with _LOADING:
            if sys.modules.get(name) is self:
                del sys.modules[name]
            real = importlib.import_module(name)
        return getattr(real, attr)


_LOADING = threading.RLock()  # re-entered if loading the module reads a stand-in


@contextmanager
def deferring(module: str) -> Iterator[None]:
    """Inside the block, `import module` (by whatever library) gives a stand-in that loads the
    real module on its first use (any attribute read); after the block only those libraries
    hold it, and any later `import module` loads the real one as usual.
    For a library another one imports for a feature auditor never calls: detect-secrets'
    plugins import `requests` (and with it urllib3, idna, charset_normalizer) only to verify a
    found secret online, which auditor never asks.

    (Not the standard `importlib.util.LazyLoader`: on Python 3.11 a second `import module`
    reads the stand-in's `__spec__`, which loads it.) Nothing changes when the module is
    already loaded or cannot be found (the library's own import then fails as it would)."""
    stand_in = None
    if module not in sys.modules:
        spec = importlib.util.find_spec(module)
        if spec is not None:
            stand_in = _Deferred(module)
            stand_in.__spec__ = spec
            sys.modules[module] = stand_in
    try:
        yield
    finally:
        # Only the libraries imported inside hold the stand-in. Left in `sys.modules`, a later
        # `import module.sub` read its `__path__`, which loaded the real package, which
        # imported `module.sub` itself, and the import system then ran `module.sub` again: two
        # copies of its classes (an `except module.sub.Error` missed what was raised).
        if stand_in is not None and sys.modules.get(module) is stand_in:
            del sys.modules[module]
