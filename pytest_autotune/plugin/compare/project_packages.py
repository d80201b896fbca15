"""The project's own top-level packages, for the import guard of ``--autotune-compare``.

A compare worker must import the project's code from its side's tree
(:mod:`pytest_autotune.plugin.compare.import_guard`), so the parent names that code once per session:

* the packages a tree keeps where Python projects keep them: a folder with ``__init__.py`` at the
  repository's top level, a package, namespace package or module in ``src/``, and in any
  ``sys.path`` entry inside the repository (an editable install's ``.pth`` line, ``PYTHONPATH``);
* the top-level names of every distribution installed from the repository (pip's
  ``direct_url.json`` names a folder inside it: ``pip install -e .`` and ``pip install .`` alike),
  read from ``top_level.txt`` or the installed files.

Each name maps to its path relative to the repository's top level (where this process would import
it from when that is inside the repository, else where the tree holds it), or None when the tree
holds no Python source of it (a compiled module of an install).
"""

from __future__ import annotations

import importlib.machinery
import importlib.metadata
import importlib.util
import json
import os
import sys
from pathlib import Path
from typing import Final
from urllib.parse import unquote, urlparse

__all__ = ["interpreter_folders", "project_packages"]

#: Top-level names that are never the project's importable code.
_NOT_PACKAGES: Final = frozenset({"conftest", "setup", "noxfile", "fabfile", "pytest_autotune"})


def interpreter_folders() -> tuple[str, ...]:
    """The interpreter's folders (prefixes, site-packages): never project files, even in the repository."""
    import site

    folders = {sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix}
    folders.update(getattr(site, "getsitepackages", list)())
    folders.update(
        p for p in sys.path if isinstance(p, str) and Path(p).name in ("site-packages", "dist-packages")
    )
    return tuple(sorted(os.path.normcase(os.path.realpath(f)) for f in folders if f))


def _inside(path: Path, folder: Path, outside: tuple[str, ...]) -> bool:
    real = os.path.normcase(os.path.realpath(path))
    top = os.path.normcase(os.path.realpath(folder))
    if not (real == top or real.startswith(top.rstrip(os.sep) + os.sep)):
        return False
    return not any(real == o or real.startswith(o.rstrip(os.sep) + os.sep) for o in outside)


def _module_name(entry: Path) -> str | None:
    """The top-level module ``entry`` (a file or folder in a package root) defines, if any."""
    name = entry.name
    if entry.is_dir():
        return name if name.isidentifier() and any(entry.rglob("*.py")) else None
    for suffix in importlib.machinery.all_suffixes():
        if name.endswith(suffix):
            stem = name[: -len(suffix)]
            return stem if stem.isidentifier() else None
    return None


def _scan(root: Path, *, packages_only: bool) -> dict[str, Path]:
    found: dict[str, Path] = {}
    try:
        entries = sorted(root.iterdir())
    except OSError:
        return found
    for entry in entries:
        if entry.name.startswith(".") or (packages_only and not (entry / "__init__.py").is_file()):
            continue
        name = _module_name(entry)
        if name is not None and name not in _NOT_PACKAGES:
            found.setdefault(name, entry)
    return found


def _installed_names(toplevel: Path, outside: tuple[str, ...]) -> set[str]:
    """Top-level names of the distributions installed from a folder inside the repository."""
    names: set[str] = set()
    for dist in importlib.metadata.distributions():
        try:
            url = json.loads(dist.read_text("direct_url.json") or "{}").get("url", "")
        except (ValueError, AttributeError):
            continue
        parsed = urlparse(url)
        if parsed.scheme != "file" or not _inside(Path(unquote(parsed.path)), toplevel, ()):
            continue
        listed = (dist.read_text("top_level.txt") or "").split()
        if not listed:
            for file in dist.files or ():
                first = Path(str(file)).parts[0] if Path(str(file)).parts else ""
                if first.endswith((".dist-info", ".pth", ".egg-info")) or first.startswith("__"):
                    continue
                name = first.split(".")[0]
                if name.isidentifier():
                    listed.append(name)
        names.update(n for n in listed if n.isidentifier() and n not in _NOT_PACKAGES)
    return names


def _where_imported(name: str) -> Path | None:
    """Where this process would import top-level ``name`` from (its folder or file), without importing it."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError, AttributeError):
        return None
    if spec is None:
        return None
    if spec.submodule_search_locations:
        locations = [p for p in spec.submodule_search_locations if isinstance(p, str) and os.path.isabs(p)]
        return Path(locations[0]) if locations else None
    return Path(spec.origin) if spec.has_location and spec.origin else None


def project_packages(toplevel: Path) -> dict[str, str | None]:
    """The project's top-level import names -> their path relative to ``toplevel`` (module docstring)."""
    outside = interpreter_folders()
    roots: dict[str, Path] = {}
    scanned = _scan(toplevel, packages_only=True)
    extra_roots = [toplevel / "src"]
    extra_roots += [
        Path(p) for p in sys.path if isinstance(p, str) and p and _inside(Path(p), toplevel, outside)
    ]
    for root in extra_roots:
        if root.resolve() == toplevel.resolve():
            continue
        for name, entry in _scan(root, packages_only=False).items():
            scanned.setdefault(name, entry)
    roots.update(scanned)
    names = set(roots) | _installed_names(toplevel, outside)
    result: dict[str, str | None] = {}
    top = Path(os.path.realpath(toplevel))
    for name in sorted(names):
        imported = _where_imported(name)
        place = imported if imported is not None and _inside(imported, toplevel, outside) else roots.get(name)
        result[name] = None if place is None else os.path.relpath(os.path.realpath(place), top)
    return result
