"""What a compare worker imports: the project's code from its own tree, and nothing from the other.

A side of ``--autotune-compare`` must run the code its tree holds. Putting REF's tree first on
``sys.path`` is not enough: a project installed from the working tree (``pip install -e .``, whose
``.pth`` line or import finder points into the working tree, or a normal install in
site-packages) is found by name whatever ``sys.path`` says, and a REF worker would measure the
working tree's library. So the worker (:func:`install_from_environ`, before pytest starts) gets a
:class:`GuardSpec` from the parent and

* rewrites the ``sys.path`` entries inside the repository to REF's tree (``.pth`` lines of
  editable installs, ``PYTHONPATH``);
* puts :class:`TreeFinder` first on ``sys.meta_path``. It asks the other finders where a module
  is and moves the answer into its side's tree: a location in the other tree becomes the same
  path in this tree (an editable install's finder), a project package found outside both trees
  (a normal install) becomes the package's folder in this tree. A module the other tree has but
  this one lacks is not found (``ModuleNotFoundError``, as at REF); a compiled extension only the
  other tree or the installed copy holds is a refusal (REF's build of it does not exist);
* after collection and after runs of the body, :func:`verify` reads ``sys.modules``: a module
  loaded from the other tree, or a project module loaded from outside its tree, is a refusal.

A refusal names the module and why (:meth:`TreeFinder.problems`); the worker then does not
measure, and the comparison fails the test: a gate that cannot see the change must say so.
The interpreter's own folders (a ``.venv`` inside the repository) are not project files, and the
pinned pytest-autotune (``exempt``) is never moved. This module is imported before pytest in the
worker, so it imports the standard library only.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import Any, Final

__all__ = ["ENV_VAR", "GuardSpec", "TreeFinder", "install_from_environ", "is_under", "verify"]

#: Environment variable that carries the :class:`GuardSpec` (JSON) to a compare worker.
ENV_VAR: Final = "PYTEST_AUTOTUNE_IMPORT_GUARD"
#: Most refusals a message lists.
_SHOWN: Final = 4


def _real(path: str) -> str:
    return os.path.normcase(os.path.realpath(path))


def is_under(path: str, folder: str) -> bool:
    """Whether ``path`` is ``folder`` or inside it (both already real and normalised)."""
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


@dataclass(frozen=True)
class GuardSpec:
    """What one side may import (module docstring).

    ``tree`` is the side's tree (REF's exported top level, or the repository's); ``other`` the tree
    it must not import from (the repository, for REF's side; None for the working tree's);
    ``packages`` maps the project's top-level import names to their path relative to a tree
    (None: not Python source in the tree, e.g. a compiled module of an install); ``exempt`` is the
    folder of the pinned pytest-autotune; ``outside`` the folders under a tree that hold no project
    files (the interpreter's prefixes).
    """

    side: str
    tree: str
    other: str | None
    packages: dict[str, str | None]
    exempt: str
    outside: tuple[str, ...] = ()

    def to_env(self) -> str:
        """The value of :data:`ENV_VAR`."""
        return json.dumps(
            {
                "side": self.side,
                "tree": self.tree,
                "other": self.other,
                "packages": self.packages,
                "exempt": self.exempt,
                "outside": list(self.outside),
            }
        )

    @classmethod
    def from_text(cls, text: str) -> GuardSpec:
        """The spec :meth:`to_env` wrote (paths made real again)."""
        data = json.loads(text)
        other = data.get("other")
        return cls(
            str(data["side"]),
            _real(data["tree"]),
            None if other is None else _real(other),
            {str(k): (None if v is None else str(v)) for k, v in data.get("packages", {}).items()},
            _real(data["exempt"]),
            tuple(_real(p) for p in data.get("outside", ())),
        )


def _module_file(folder: str, name: str) -> str | None:
    """The file or folder that holds module ``name`` directly in ``folder`` (None: none)."""
    base = os.path.join(folder, name)
    if os.path.isdir(base):
        return base
    for suffix in importlib.machinery.all_suffixes():
        if os.path.isfile(base + suffix):
            return base + suffix
    return None


def _is_extension(path: str) -> bool:
    return path.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES))


@dataclass
class TreeFinder:
    """The meta-path finder of a compare worker (module docstring); ``problems`` are its refusals."""

    spec: GuardSpec
    refusals: list[str] = field(default_factory=list)
    #: Top-level project packages moved from an installed copy: name -> the copy's folder.
    installed: dict[str, str] = field(default_factory=dict)
    #: ``sys.modules`` entries :func:`verify` has read (name -> id of the module object).
    seen: dict[str, int] = field(default_factory=dict)

    # -- where a path belongs ---------------------------------------------------------------------
    def _outside(self, path: str) -> bool:
        return any(is_under(path, folder) for folder in self.spec.outside)

    def in_tree(self, path: str) -> bool:
        """Whether ``path`` (real) is a file of this side's tree."""
        return is_under(path, self.spec.tree)

    def in_other(self, path: str) -> bool:
        """Whether ``path`` (real) is a project file of the other tree."""
        other = self.spec.other
        return (
            other is not None
            and not self.in_tree(path)
            and is_under(path, other)
            and not self._outside(path)
            and not is_under(path, self.spec.exempt)
        )

    def mirror(self, path: str) -> str:
        """``path`` of the other tree, moved to the same place in this tree."""
        assert self.spec.other is not None
        return os.path.join(self.spec.tree, os.path.relpath(path, self.spec.other))

    def _roots(self) -> list[str]:
        """Where this tree keeps top-level packages: its top, ``src/`` and its ``sys.path`` entries."""
        roots = [self.spec.tree, os.path.join(self.spec.tree, "src")]
        roots += [_real(p) for p in sys.path if isinstance(p, str) and p and self.in_tree(_real(p))]
        return list(dict.fromkeys(roots))

    def _package_home(self, top: str) -> str | None:
        """This tree's file or folder of the project's top-level module ``top`` (None: not there)."""
        relative = self.spec.packages.get(top)
        candidates = [os.path.join(self.spec.tree, relative)] if relative else []
        for root in self._roots():
            found = _module_file(root, top)
            if found is not None:
                candidates.append(found)
        return next((c for c in candidates if os.path.exists(c)), None)

    # -- the finder ---------------------------------------------------------------------------------
    def find_spec(self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None) -> Any:
        """Where ``fullname`` is for this side (module docstring); None lets the import fail as usual."""
        spec = self._delegate(fullname, path, target)
        if spec is None:
            self._check_missing(fullname, path)
            return None
        return self._placed(fullname, spec)

    def _delegate(self, fullname: str, path: Sequence[str] | None, target: ModuleType | None) -> Any:
        for finder in list(sys.meta_path):
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                return spec
        return None

    def _locations(self, spec: ModuleSpec) -> list[str]:
        places = [spec.origin] if spec.has_location and spec.origin else []
        places += [p for p in (spec.submodule_search_locations or []) if isinstance(p, str)]
        return [_real(p) for p in places if os.path.isabs(p)]

    def _placed(self, fullname: str, spec: ModuleSpec) -> Any:
        places = self._locations(spec)
        if any(is_under(p, self.spec.exempt) for p in places):
            return spec
        top = fullname.partition(".")[0]
        if "." not in fullname and top in self.spec.packages and not any(self.in_tree(p) for p in places):
            return self._from_home(fullname, spec, places)
        if not any(self.in_other(p) for p in places):
            return spec
        if spec.origin is not None and spec.has_location:
            moved = self.mirror(_real(spec.origin))
            if os.path.exists(moved):
                return importlib.util.spec_from_file_location(fullname, moved)
            return self._absent(fullname, _real(spec.origin))
        folders = [self.mirror(p) if self.in_other(p) else p for p in places]  # a namespace package
        kept = [f for f in folders if os.path.isdir(f)]
        if not kept:
            return self._absent(fullname, places[0])
        namespace = ModuleSpec(fullname, None, is_package=True)
        namespace.submodule_search_locations = kept
        return namespace

    def _from_home(self, fullname: str, spec: ModuleSpec, places: list[str]) -> Any:
        """A top-level project module found outside this tree (an install): this tree's copy."""
        home = self._package_home(fullname)
        origin = _real(spec.origin) if spec.origin and spec.has_location else None
        if home is None:
            if origin is not None and _is_extension(origin):
                return self._refuse(
                    fullname,
                    f"it is a compiled module ({origin}) that {self._tree_name()} does not hold; "
                    "comparing it needs a build of each side",
                )
            if self.spec.packages.get(fullname) is None and origin is not None:
                return self._refuse(
                    fullname, f"it is installed ({origin}) but {self._tree_name()} has no source of it"
                )
            return self._absent(fullname, places[0] if places else fullname)
        if places:
            self.installed[fullname] = os.path.dirname(places[0]) if origin else places[0]
        if os.path.isdir(home):
            init = _module_file(home, "__init__")
            if init is not None and not os.path.isdir(init):
                return importlib.util.spec_from_file_location(fullname, init)
            namespace = ModuleSpec(fullname, None, is_package=True)
            namespace.submodule_search_locations = [home]
            return namespace
        return importlib.util.spec_from_file_location(fullname, home)

    def _check_missing(self, fullname: str, path: Sequence[str] | None) -> None:
        """A module this tree lacks: a refusal when the other tree or an installed copy holds it compiled."""
        name = fullname.rpartition(".")[2]
        elsewhere: list[str] = []
        for entry in path or ():
            real = _real(entry) if isinstance(entry, str) and os.path.isabs(entry) else None
            if real is not None and self.in_tree(real) and self.spec.other is not None:
                elsewhere.append(os.path.join(self.spec.other, os.path.relpath(real, self.spec.tree)))
        top = fullname.partition(".")[0]
        if "." in fullname and top in self.installed:
            rest = fullname.split(".")[1:-1]
            elsewhere.append(os.path.join(self.installed[top], *rest))
        for folder in elsewhere:
            found = _module_file(folder, name)
            if found is not None and _is_extension(found):
                self._refuse(
                    fullname,
                    f"it is a compiled extension ({found}) that {self._tree_name()} does not hold; "
                    "comparing it needs a build of each side",
                )

    def _tree_name(self) -> str:
        return f"{self.spec.side}'s tree"

    def _absent(self, fullname: str, where: str) -> Any:
        raise ModuleNotFoundError(
            f"No module named {fullname!r} in {self._tree_name()} (pytest-autotune --autotune-compare: "
            f"{where} is not there; added since, or a file that is not committed?)",
            name=fullname,
        )

    def _refuse(self, fullname: str, why: str) -> Any:
        self.refusals.append(f"{fullname}: {why}")
        raise ModuleNotFoundError(
            f"pytest-autotune --autotune-compare refuses {fullname}: {why}", name=fullname
        )

    def problems(self) -> list[str]:
        """The refusals so far, with what :func:`verify` finds in ``sys.modules`` now (deduplicated)."""
        self.refusals.extend(verify(self))
        return list(dict.fromkeys(self.refusals))

    def describe(self) -> str | None:
        """One message for :meth:`problems` (None when there are none)."""
        found = self.problems()
        if not found:
            return None
        more = f" (and {len(found) - _SHOWN} more)" if len(found) > _SHOWN else ""
        return (
            "it would not run its own tree's code, so the comparison cannot see the change: "
            + "; ".join(found[:_SHOWN])
            + more
        )


def verify(finder: TreeFinder) -> list[str]:
    """Modules in ``sys.modules`` that this side did not import from its tree (module docstring).

    Each module is read once (the finder remembers it), so checking after every run costs little.
    """
    spec = finder.spec
    found: list[str] = []
    for name, module in list(sys.modules.items()):
        if module is None or finder.seen.get(name) == id(module):
            continue
        finder.seen[name] = id(module)
        file = getattr(module, "__file__", None)
        paths = [file] if isinstance(file, str) else list(getattr(module, "__path__", None) or [])
        top = name.partition(".")[0]
        for path in paths:
            if not isinstance(path, str) or not os.path.isabs(path):
                continue
            real = _real(path)
            if finder.in_tree(real) or is_under(real, spec.exempt):
                continue
            if finder.in_other(real):
                found.append(f"{name} was imported from {real}, a file of the working tree")
            elif isinstance(file, str) and top in spec.packages:
                found.append(f"{name} was imported from {real}, not from {spec.side}'s tree")
    return found


_INSTALLED: list[TreeFinder] = []


def installed_finder() -> TreeFinder | None:
    """The finder :func:`install_from_environ` installed in this process (None: not a guarded worker)."""
    return _INSTALLED[0] if _INSTALLED else None


def install_from_environ() -> TreeFinder | None:
    """Install the guard :data:`ENV_VAR` describes (removed from the environment): ``sys.path`` entries
    of the other tree move to this one, and :class:`TreeFinder` goes first on ``sys.meta_path``."""
    text = os.environ.pop(ENV_VAR, None)
    if not text:
        return None
    finder = TreeFinder(GuardSpec.from_text(text))
    if finder.spec.other is not None:
        for index, entry in enumerate(sys.path):
            real = _real(entry) if isinstance(entry, str) and entry else None
            if real is not None and finder.in_other(real):
                sys.path[index] = finder.mirror(real)
    sys.meta_path.insert(0, finder)
    importlib.invalidate_caches()
    _INSTALLED.append(finder)
    return finder
