"""Package attributes loaded on first use (PEP 562).

The package root, the OpenCL backend and the testing helpers each export names whose modules import
numpy, torch or pyopencl, while importing the package itself must stay free (the plugin imports it
on every ``pytest`` run). :func:`lazy_exports` gives such a package the module-level ``__getattr__``
and ``__dir__`` that import a name's module the first time the name is used, and keep the value in
the package's namespace so the next use is a plain attribute lookup.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Collection, Mapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(
    package: str, exports: Mapping[str, str], public: Collection[str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package``: ``exports`` maps each lazy name to its module."""
    namespace = vars(sys.modules[package])

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(public))

    return __getattr__, __dir__
