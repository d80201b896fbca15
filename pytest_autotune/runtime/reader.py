"""Tuned configurations for the application: read ``autotune.json`` once, answer every launch.

:func:`load` reads a committed store with the store's own reader and checks
(:func:`pytest_autotune.store.document.read_document`: a regular file of bounded size, strict JSON,
the file's structure), once per path and process; the entries of a kernel are checked by
:meth:`pytest_autotune.entry.StoreEntry.from_json`, as the plugin checks them, when the kernel is
first asked for (so a damaged entry of another kernel stops nothing).
:meth:`TunedConfigs.choose` answers "which configuration for this kernel, on this device, for this
problem size?" with a :class:`Choice` that says where the configuration came from:

* the entries of the kernel are those whose ``kernel`` field is the name asked for (a test declared
  ``@tunable(kernel="matmul", key=("M", "N", "K"))``), or, for a name holding ``::``, the entry of
  that test id (stores written before kernel names, or tests that declare none);
* the device: the entries of the best :func:`~pytest_autotune.runtime.devices.match_level` that
  has any (exact device, else same architecture, else same vendor and kind);
* the problem size among those: the exact key, else the nearest
  (:func:`~pytest_autotune.runtime.sizes.distance`), ties to the larger key, then the device key in
  sorted order;
* none of them: the declared ``default`` (an error when none is given).

Every fallback is logged once per kernel, key and reason on the ``pytest_autotune.runtime`` logger,
never on each call (a warning for another device, the default, or a configuration tuned for an
older declaration; information for the nearest size on this very device, as Kernel Launcher
does): choices are kept per (kernel, device, key), so a repeated lookup is one dict
access. Bad input is a :class:`TunedConfigError` naming the file and the entry: a missing or
damaged file, a damaged entry of the kernel, entries of one kernel name with different parameters
(an entry of another kernel) or key names, a key value of the wrong kind, two entries for the same
kernel, device and key, a configuration that no longer fits the declared space. Nothing is ever
written.

Imports neither pytest, numpy nor torch (``python -m benchmarks runtime`` checks it).
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Protocol

from pytest_autotune.entry import DamagedEntryError, StoreEntry
from pytest_autotune.runtime.choice import Choice, SizeMatch
from pytest_autotune.runtime.devices import DEVICE_LEVELS, DeviceId, DeviceLevel, match_level
from pytest_autotune.runtime.sizes import distance, magnitude, scalar_kind
from pytest_autotune.store.document import StoreError, entry_where, read_document

__all__ = ["Choice", "TunedConfigError", "TunedConfigs", "load"]

LOGGER = logging.getLogger("pytest_autotune.runtime")


class TunedConfigError(ValueError):
    """The store cannot answer: the message names the file and the entry at fault."""


class SpaceLike(Protocol):
    """A declared space (:class:`pytest_autotune.Space`): its parameter names, hash and membership."""

    @property
    def names(self) -> tuple[str, ...]: ...

    @property
    def space_hash(self) -> str: ...

    def contains(self, configs: Any) -> Any: ...


#: What a stored configuration must fit: a declared space, allowed values by name, or a list of
#: allowed configurations; None: anything.
Allowed = SpaceLike | Mapping[str, Any] | Sequence[Mapping[str, Any]] | None


@dataclass(frozen=True)
class _Found:
    device: DeviceId
    nodeid: str
    where: str
    entry: StoreEntry


@dataclass
class _Kernel:
    """The checked entries of one kernel name."""

    found: list[_Found]
    names: frozenset[str] | None  # its parameters (None: no valid entry)
    key_names: tuple[str, ...] | None
    key_kinds: dict[str, str]


@dataclass
class TunedConfigs:
    """The entries of one ``autotune.json`` as the application reads them (module docstring)."""

    path: Path
    #: The file's JSON, its structure checked (entries are checked when their kernel is first asked).
    data: dict[str, Any]
    _kernels: dict[str, _Kernel] = field(default_factory=dict, repr=False)
    _choices: dict[tuple[Any, ...], Choice | None] = field(default_factory=dict, repr=False)
    _logged: set[tuple[Any, ...]] = field(default_factory=set, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @classmethod
    def read(cls, path: str | os.PathLike[str]) -> TunedConfigs:
        """Read ``path`` now (:func:`load` reads each path once); raises :class:`TunedConfigError`."""
        where = Path(path)
        if not where.exists():
            raise TunedConfigError(
                f"{where}: no such store file; ship the autotune.json written by `pytest --autotune` "
                "with the application (or give its path)"
            )
        try:
            return cls(where, read_document(where, advice=False))
        except StoreError as exc:
            raise TunedConfigError(str(exc)) from exc

    # -- what the store holds ---------------------------------------------------------------------
    def devices(self) -> list[str]:
        """The device keys of the file."""
        return sorted(self.data["devices"])

    def device_info(self, device: str) -> dict[str, Any]:
        """The ``info`` block of ``device`` (empty when absent)."""
        return dict(self.data["devices"].get(device, {}).get("info", {}))

    def _tests(self, device: str) -> dict[str, Any]:
        tests: dict[str, Any] = self.data["devices"][device].get("tests", {})
        return tests

    def kernels(self) -> list[str]:
        """The kernel names the file's entries declare."""
        named = (raw.get("kernel") for device in self.devices() for raw in self._tests(device).values())
        return sorted({name for name in named if isinstance(name, str) and name})

    def entries(self, kernel: str) -> list[tuple[str, str, StoreEntry]]:
        """The entries of ``kernel`` (name, or test id) as ``(device key, test id, entry)``, checked
        as :meth:`choose` checks them; raises :class:`TunedConfigError`, also when there are none."""
        found = self._kernel(kernel).found
        if not found:
            known = ", ".join(self.kernels()) or "none"
            raise TunedConfigError(
                f"{self.path}: no entry of kernel {kernel!r} (kernel names in the file: {known}; a test "
                "id finds the entry of a test that declares no kernel=)"
            )
        return [(f.device.key, f.nodeid, f.entry) for f in found]

    def _kernel(self, kernel: str) -> _Kernel:
        known = self._kernels.get(kernel)
        if known is None:
            known = self._kernels[kernel] = self._index(kernel)
        return known

    def _index(self, kernel: str) -> _Kernel:
        """The entries of ``kernel``, each checked by :meth:`StoreEntry.from_json` as the plugin
        checks it. Its ``history`` is left out: a history never makes an entry damaged (one that
        cannot be read is kept as it is), and the application has no use for it."""
        found: list[_Found] = []
        for device in self.devices():
            info = self.device_info(device)
            for nodeid, raw in sorted(self._tests(device).items()):
                named = raw.get("kernel") if isinstance(raw, dict) else None
                if named != kernel and not (named is None and nodeid == kernel):
                    continue
                where = entry_where(self.path, device, nodeid)
                try:
                    fields = (
                        {k: v for k, v in raw.items() if k != "history"} if isinstance(raw, dict) else raw
                    )
                    entry = StoreEntry.from_json(fields, where=where)
                except DamagedEntryError as exc:
                    raise TunedConfigError(f"{exc}; kernel {kernel!r} cannot be read") from None
                found.append(_Found(DeviceId.of(device, info), nodeid, where, entry))
        return _check_kernel(kernel, found)

    # -- choosing ---------------------------------------------------------------------------------
    def choose(
        self,
        kernel: str,
        *,
        device: DeviceId | str,
        key: Mapping[str, Any] | None = None,
        default: Mapping[str, Any] | None = None,
        space: Allowed = None,
    ) -> Choice:
        """The configuration of ``kernel`` for ``device`` and the problem-size ``key`` (module
        docstring). ``default`` is the configuration when no entry fits; ``space`` (a declared
        :class:`~pytest_autotune.Space`, a mapping of each parameter to its allowed values, or the
        list of allowed configurations) makes a stored configuration outside it an error. Raises
        :class:`TunedConfigError`."""
        wanted = device if isinstance(device, DeviceId) else DeviceId.of(device)
        memo = (kernel, wanted, None if key is None else tuple(key.items()), id(space))
        try:
            stored = self._choices[memo]
        except (KeyError, TypeError):  # TypeError: an unhashable key value, reported below
            with self._lock:
                stored = self._stored(kernel, wanted, key, space)
                with contextlib.suppress(TypeError):  # an unhashable key value
                    self._choices[memo] = stored
        return stored if stored is not None else self._default(kernel, wanted, key, default, space)

    def _stored(
        self,
        kernel: str,
        wanted: DeviceId,
        key: Mapping[str, Any] | None,
        space: Allowed,
    ) -> Choice | None:
        """The choice among the stored entries, None when none fits."""
        known = self._kernel(kernel)
        _check_query(self.path, kernel, known, key)
        ranked: dict[DeviceLevel, list[_Found]] = {}
        for found in known.found:
            level = match_level(found.device, wanted)
            if level is not None:
                ranked.setdefault(level, []).append(found)
        for level in DEVICE_LEVELS:
            candidates = ranked.get(level, [])
            gap: float | None = None  # the distance of the chosen key from the asked one
            if key is not None:
                scored = [(distance(key, f.entry.key or {}), f) for f in candidates]
                scored = [(d, f) for d, f in scored if d != float("inf")]
                if not scored:
                    continue
                best_distance, best = min(
                    scored, key=lambda s: (s[0], -magnitude(s[1].entry.key or {}), s[1].device.key)
                )
                size: SizeMatch = "exact" if best_distance == 0 else "nearest"
                gap = best_distance
            elif candidates:
                best, size = min(candidates, key=lambda f: f.device.key), "unkeyed"
            else:
                continue
            config = _fits(best, space, kernel)
            choice = Choice(
                MappingProxyType(config),
                kernel,
                level,
                size,
                best.device.key,
                best.nodeid,
                None if best.entry.key is None else MappingProxyType(dict(best.entry.key)),
                best.where,
                None if key is None else MappingProxyType(dict(key)),
                gap,
            )
            if level != "exact":
                text = f"{choice.reason}, asked for device {wanted.key!r}"
                self._log_once(kernel, key, "device", text, logging.WARNING)
            elif size == "nearest":
                self._log_once(kernel, key, "size", choice.reason, logging.INFO)
            self._log_stale(kernel, key, best, space)
            return choice
        return None

    def _default(
        self,
        kernel: str,
        wanted: DeviceId,
        key: Mapping[str, Any] | None,
        default: Mapping[str, Any] | None,
        space: Allowed,
    ) -> Choice:
        if default is None:
            if not self._kernel(kernel).found:
                self.entries(kernel)  # raises, with the kernel names the file holds
            held = ", ".join(sorted({f.device.key for f in self._kernel(kernel).found}))
            raise TunedConfigError(
                f"{self.path}: no entry of kernel {kernel!r} fits device {wanted.key!r}"
                f"{'' if key is None else f' and key {dict(key)}'} (devices with entries: {held}), "
                "and no default was given; tune it on this device (`pytest --autotune`) or pass default="
            )
        config = dict(default)
        _check_space(config, space, f"kernel {kernel!r}: the declared default")
        choice = Choice(MappingProxyType(config), kernel, "default", "default")
        self._log_once(kernel, key, "default", f"{choice.reason}, asked for device {wanted.key!r}")
        return choice

    def _log_once(
        self, kernel: str, key: Mapping[str, Any] | None, reason: str, text: str, level: int = logging.WARNING
    ) -> None:
        """Log ``text`` the first time this (kernel, key, reason) is seen; never again."""
        memo = (kernel, None if key is None else tuple(sorted(key.items())), reason)
        if memo not in self._logged:
            self._logged.add(memo)
            LOGGER.log(level, "%s", text)

    def _log_stale(self, kernel: str, key: Mapping[str, Any] | None, found: _Found, space: Any) -> None:
        stored_hash = found.entry.space_hash
        current = getattr(space, "space_hash", None)
        if isinstance(current, str) and current != stored_hash:
            self._log_once(
                kernel,
                key,
                "stale",
                f"kernel {kernel!r}: {found.where} was tuned for an older declaration (space_hash "
                f"{stored_hash}, now {current}); its configuration still fits, re-tune to update it",
            )


def _check_kernel(kernel: str, found: list[_Found]) -> _Kernel:
    """Entries of one kernel must agree on parameters and key names, and be one per device and key."""
    if not found:
        return _Kernel([], None, None, {})
    first = found[0]
    names = frozenset(first.entry.config)
    key_names = None if first.entry.key is None else tuple(first.entry.key)
    kinds = {n: scalar_kind(v) for n, v in (first.entry.key or {}).items()}
    seen: dict[tuple[str, Any], _Found] = {}
    for item in found:
        if frozenset(item.entry.config) != names:
            raise TunedConfigError(
                f"{item.where}: its configuration has parameters {sorted(item.entry.config)}, but "
                f"{first.where} (the same kernel {kernel!r}) has {sorted(names)}: an entry of another "
                "kernel under this name? Give each kernel its own kernel= name"
            )
        item_keys = None if item.entry.key is None else tuple(item.entry.key)
        if (item_keys is None) != (key_names is None) or set(item_keys or ()) != set(key_names or ()):
            raise TunedConfigError(
                f"{item.where}: its key names {list(item_keys or [])} differ from those of "
                f"{first.where} ({list(key_names or [])}) for the same kernel {kernel!r}"
            )
        for name, value in (item.entry.key or {}).items():
            if scalar_kind(value) != kinds[name]:
                raise TunedConfigError(
                    f"{item.where}: key {name!r} is a {scalar_kind(value)} ({value!r}), but a "
                    f"{kinds[name]} in {first.where}"
                )
        slot = (item.device.key, None if item.entry.key is None else tuple(sorted(item.entry.key.items())))
        if slot in seen:
            raise TunedConfigError(
                f"{item.where}: kernel {kernel!r} has two entries for one device and key "
                f"({seen[slot].nodeid!r} and {item.nodeid!r}); add what tells them apart to key="
            )
        seen[slot] = item
    return _Kernel(found, names, key_names, kinds)


def _check_query(path: Path, kernel: str, known: _Kernel, key: Mapping[str, Any] | None) -> None:
    """The key asked for must have the kernel's key names and kinds of values."""
    if known.names is None:
        return
    where = f"{path}: kernel {kernel!r}"
    if known.key_names is None:
        if key is not None:
            raise TunedConfigError(
                f"{where}: its entries have no key (the test declares no key=); call without key="
            )
        return
    if key is None:
        raise TunedConfigError(f"{where}: its entries are keyed by {list(known.key_names)}; pass key={{...}}")
    if set(key) != set(known.key_names):
        raise TunedConfigError(
            f"{where}: key {dict(key)} names {sorted(key)}, the entries are keyed by {list(known.key_names)}"
        )
    for name, value in key.items():
        if scalar_kind(value) != known.key_kinds[name]:
            raise TunedConfigError(
                f"{where}: key {name!r} is {value!r} (a {scalar_kind(value)}), but the stored entries "
                f"hold a {known.key_kinds[name]} there"
            )


def _check_space(config: Mapping[str, Any], space: Any, where: str) -> None:
    """Raise when ``config`` does not fit ``space`` (a declared Space, or allowed values by name)."""
    if space is None:
        return
    if isinstance(space, list | tuple):  # the declared configurations (a triton.autotune list)
        names = tuple(space[0]) if space else tuple(config)
        fits = dict(config) in [dict(item) for item in space]
    elif isinstance(space, Mapping):
        names, fits = tuple(space), all(name in space and config[name] in space[name] for name in config)
    else:
        names = tuple(space.names)
        fits = set(names) == set(config) and bool(space.contains([dict(config)])[0])
    if set(names) != set(config):
        raise TunedConfigError(
            f"{where}: the configuration has parameters {sorted(config)}, the declared space "
            f"{sorted(names)}; re-tune it (`pytest --autotune`)"
        )
    if not fits:
        raise TunedConfigError(
            f"{where}: the configuration {dict(config)} no longer fits the declared space; re-tune "
            "it (`pytest --autotune`)"
        )


def _fits(found: _Found, space: Any, kernel: str) -> dict[str, Any]:
    config = dict(found.entry.config)
    _check_space(config, space, f"{found.where} (kernel {kernel!r})")
    return config


_LOADED: dict[tuple[str, int, int], TunedConfigs] = {}
_LOADING = threading.Lock()


def load(path: str | os.PathLike[str] = "autotune.json") -> TunedConfigs:
    """The store at ``path``, read once per process (again only when the file changed: its size or
    modification time); raises :class:`TunedConfigError` for a missing or damaged file."""
    try:
        facts = os.stat(path)
        memo = (os.path.realpath(path), facts.st_mtime_ns, facts.st_size)
    except OSError:
        return TunedConfigs.read(path)  # raises, naming the file
    found = _LOADED.get(memo)
    if found is None:
        with _LOADING:
            found = _LOADED.get(memo)
            if found is None:
                found = _LOADED[memo] = TunedConfigs.read(path)
    return found
