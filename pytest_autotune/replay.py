"""Replay a Kernel Tuner cache file: tune "as if" on the GPU that measured it, with no hardware.

A Kernel Tuner cache (``.json`` or ``.json.gz``) holds, for every measured
configuration, the objective (``time`` in ms) or a failure marker. Keys are
the parameter values joined by commas in ``tune_params_keys`` order.
:class:`Replay` builds the :class:`Space` from the parameter lists
(``Set`` for numbers, ``Categorical`` otherwise) and the restriction strings
(from ``spaces.json``), checks that the cache covers the space, and serves
the recorded outcome of each configuration:

* a number -> ``ok`` (or, with ``noise=True``, one of the entry's recorded
  repetitions ``times`` drawn at random);
* ``CompilationFailedConfig`` -> ``compile``, ``RuntimeFailedConfig`` ->
  ``runtime``, any other marker (``InvalidConfig``, ...) -> ``constraints``.

Without restrictions, the space is exactly the set of configurations in the
cache (one constraint tests membership).
"""

from __future__ import annotations

import hashlib
import math
import os
import statistics
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from pytest_autotune.input_file import InputFileError, NotJsonError, gunzip_bounded, parse_json, read_bounded
from pytest_autotune.outcome import LABELS, Label, Outcome
from pytest_autotune.space import Categorical, Param, Set, Space, build_space
from pytest_autotune.space.base import Config
from pytest_autotune.space.conditions.constraints import Constraint
from pytest_autotune.space.errors import SpaceError
from pytest_autotune.strategies.sources import SourceTrial, TransferSource

__all__ = ["FAILURE_MARKERS", "MAX_BYTES", "Replay", "ReplayError"]

#: Bytes read at most from a cache file, and decompressed at most from a gzip one.
MAX_BYTES = 1024 * 1024 * 1024

#: Kernel Tuner failure markers and the outcome labels they become (others: ``constraints``).
FAILURE_MARKERS: dict[str, Label] = {
    "CompilationFailedConfig": "compile",
    "RuntimeFailedConfig": "runtime",
}


class ReplayError(ValueError):
    """A cache file cannot be replayed (missing, malformed, or not covering the space)."""


def _read_json(path: Path) -> Any:
    """The cache's JSON, read through :mod:`pytest_autotune.input_file` (a regular file, at most
    :data:`MAX_BYTES` compressed and decompressed, no deep nesting)."""
    try:
        raw = gunzip_bounded(path, read_bounded(path, limit=MAX_BYTES), limit=MAX_BYTES)
    except FileNotFoundError:
        raise ReplayError(f"{path}: cache file not found") from None
    except InputFileError as exc:
        raise ReplayError(str(exc)) from exc
    except OSError as exc:
        raise ReplayError(f"{path}: cannot read the cache file ({exc})") from exc
    text = raw.decode("utf-8", errors="replace").strip()
    try:
        return parse_json(path, text)
    except NotJsonError as first:
        # Kernel Tuner leaves a cache open (no closing brackets) while it is tuning.
        try:
            return parse_json(path, text.removesuffix(",") + "}\n}")
        except NotJsonError:
            raise ReplayError(f"{path}: not a Kernel Tuner cache file ({first.why})") from first


def _label_of(marker: str) -> Label:
    return FAILURE_MARKERS.get(marker, "constraints")


def _param_for(values: Sequence[Any]) -> Param:
    numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)
    return Set(*values) if numeric else Categorical(*values)


class Replay:
    """The recorded objective of an exhaustively measured space.

    Build with :meth:`from_cache` or :meth:`from_spaces_json`. Attributes:
    ``space``, ``path``, ``optimum`` (best recorded value), ``optimum_config``,
    ``median`` (of the feasible values), ``failure_counts`` (label -> number
    of configurations of the space), ``values`` (recorded value per space
    index, ``inf`` for failures; for metrics).
    """

    def __init__(
        self,
        space: Space,
        entries: Mapping[str, Mapping[str, Any]],
        keys_order: Sequence[str],
        *,
        path: Path,
        noise: bool = False,
        seed: int | None = None,
    ) -> None:
        self.space = space
        self.path = path
        self.noise = noise
        self._keys_order = tuple(keys_order)
        self._rng = np.random.default_rng(seed)
        self._outcomes: dict[str, Outcome] = {}
        self._times: dict[str, tuple[float, ...]] = {}
        for key, entry in entries.items():
            self._outcomes[key] = self._entry_outcome(key, entry)
            times = entry.get("times")
            if isinstance(times, list) and times and all(isinstance(t, (int, float)) for t in times):
                self._times[key] = tuple(float(t) for t in times)
        self._failure_labels: dict[int, Label] = {}
        self.values = self._check_coverage()
        feasible = self.values[np.isfinite(self.values)]
        if feasible.size == 0:
            raise ReplayError(f"{path}: no configuration of the space has a recorded value")
        best = int(np.argmin(self.values))
        self.optimum = float(self.values[best])
        self.optimum_config: Config = self.space.configs(self.space.at_index([best]))[0]
        self.median = float(statistics.median(feasible.tolist()))
        counts: dict[Label, int] = dict.fromkeys(LABELS, 0)
        for i in np.flatnonzero(~np.isfinite(self.values)):
            counts[self._failure_labels[int(i)]] += 1
        counts["ok"] = int(feasible.size)
        self.failure_counts = counts

    def _entry_outcome(self, key: str, entry: Mapping[str, Any]) -> Outcome:
        value = entry.get("time") if isinstance(entry, Mapping) else None
        if isinstance(value, str):
            return Outcome.failed(_label_of(value), value)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            return Outcome.ok(float(value))
        raise ReplayError(f"{self.path}: entry {key!r} has no usable 'time' ({value!r})")

    def key(self, config: Mapping[str, Any]) -> str:
        """The cache key of a configuration."""
        return ",".join(str(config[name]) for name in self._keys_order)

    def _check_coverage(self) -> np.ndarray[Any, np.dtype[np.float64]]:
        size = self.space.size
        if size > len(self._outcomes):
            missing = self._first_missing()
            raise ReplayError(
                f"{self.path}: the space has {size} configurations but the cache only "
                f"{len(self._outcomes)}; e.g. {missing!r} is absent from the cache"
            )
        values = np.empty(size, dtype=np.float64)
        chunk = 65_536
        for start in range(0, size, chunk):
            indices = list(range(start, min(size, start + chunk)))
            for i, config in zip(indices, self.space.configs(self.space.at_index(indices)), strict=True):
                outcome = self._outcomes.get(self.key(config))
                if outcome is None:
                    raise ReplayError(
                        f"{self.path}: configuration {config!r} of the space is absent from the cache"
                    )
                if outcome.value is None:
                    values[i] = math.inf
                    self._failure_labels[i] = outcome.label
                else:
                    values[i] = outcome.value
        return values

    def _first_missing(self) -> Config | None:
        chunk = 4096
        for start in range(0, self.space.size, chunk):
            indices = list(range(start, min(self.space.size, start + chunk)))
            for config in self.space.configs(self.space.at_index(indices)):
                if self.key(config) not in self._outcomes:
                    return config
        return None

    def objective(self, config: Mapping[str, Any]) -> Outcome:
        """The recorded outcome of ``config`` (a noisy repetition with ``noise=True``)."""
        try:
            key = self.key(config)
        except KeyError as exc:
            raise ReplayError(f"{self.path}: configuration {dict(config)!r} lacks parameter {exc}") from None
        outcome = self._outcomes.get(key)
        if outcome is None:
            raise ReplayError(f"{self.path}: configuration {dict(config)!r} is absent from the cache")
        if self.noise and outcome.value is not None and key in self._times:
            times = self._times[key]
            return Outcome.ok(times[int(self._rng.integers(len(times)))])
        return outcome

    __call__ = objective

    def as_source(self, name: str | None = None, *, best: int | None = None) -> TransferSource:
        """The cache as a transfer source for tuning another device (``Tuner(..., sources=[...])``).

        Its ``best`` fastest configurations (all measured ones when None) with their time
        relative to the optimum (when positive), then every failing configuration with its label,
        the way a store history keeps them. ``name`` defaults to the cache file's name.
        """
        if best is not None and best < 1:
            raise ValueError(f"Replay.as_source: best must be a positive count or None, got {best!r}")
        measured = np.flatnonzero(np.isfinite(self.values))
        measured = measured[np.argsort(self.values[measured], kind="stable")][:best]
        failing = np.flatnonzero(~np.isfinite(self.values))
        scale = self.optimum if self.optimum > 0 else 1.0
        trials = [
            SourceTrial(config, "ok", float(self.values[i]) / scale)
            for i, config in zip(measured, self._configs(measured), strict=True)
        ]
        trials += [
            SourceTrial(config, self._failure_labels[int(i)])
            for i, config in zip(failing, self._configs(failing), strict=True)
        ]
        return TransferSource(name or self.path.name, trials, kind="user", meta={"path": str(self.path)})

    def _configs(self, indices: np.ndarray[Any, np.dtype[np.intp]]) -> list[Config]:
        return self.space.configs(self.space.at_index([int(i) for i in indices])) if len(indices) else []

    # -- constructors ----------------------------------------------------------------
    @classmethod
    def from_cache(
        cls,
        cache_path: str | os.PathLike[str],
        *,
        tune_params: Mapping[str, Sequence[Any]] | None = None,
        restrictions: Sequence[str] | None = None,
        noise: bool = False,
        seed: int | None = None,
    ) -> Replay:
        """Load a Kernel Tuner cache; ``tune_params`` default to the cache's own lists."""
        path = Path(cache_path)
        data = _read_json(path)
        if not isinstance(data, dict) or not isinstance(data.get("cache"), dict):
            raise ReplayError(f"{path}: not a Kernel Tuner cache file (no 'cache' object)")
        keys_order = data.get("tune_params_keys")
        if not isinstance(keys_order, list) or not keys_order:
            raise ReplayError(f"{path}: not a Kernel Tuner cache file (no 'tune_params_keys' list)")
        if tune_params is None:
            tune_params = data.get("tune_params")
            if not isinstance(tune_params, dict):
                raise ReplayError(f"{path}: no 'tune_params' in the cache; pass tune_params=")
        if set(tune_params) != set(keys_order):
            raise ReplayError(
                f"{path}: tune_params {sorted(tune_params)} do not match the cache's "
                f"tune_params_keys {sorted(keys_order)}"
            )
        for name, values in tune_params.items():
            if not isinstance(values, (list, tuple)) or not values:
                raise ReplayError(f"{path}: parameter {name!r} needs a non-empty list of values")
        params = {name: _param_for(list(values)) for name, values in tune_params.items()}
        entries: dict[str, Mapping[str, Any]] = data["cache"]
        constraints: list[str | Constraint] = list(restrictions or [])
        if restrictions is None:
            constraints = [_membership(entries, keys_order)]
        space = build_space(params, constraints)
        return cls(space, entries, keys_order, path=path, noise=noise, seed=seed)

    @classmethod
    def from_spaces_json(cls, spaces_json_path: str | os.PathLike[str], file_name: str, **kw: Any) -> Replay:
        """Load the cache ``file_name`` described in a ``spaces.json`` (next to it)."""
        listing_path = Path(spaces_json_path)
        listing = _read_json(listing_path)
        if not isinstance(listing, list):
            raise ReplayError(f"{listing_path}: expected a list of space descriptions")
        for item in listing:
            if isinstance(item, dict) and item.get("file") == file_name:
                tune_params = item.get("tune_params")
                restrictions = item.get("restrictions") or []
                where = f"{listing_path}: space {file_name!r}"
                if not isinstance(tune_params, dict):
                    raise ReplayError(f"{where}: no 'tune_params' object")
                if not isinstance(restrictions, list):
                    raise ReplayError(f"{where}: 'restrictions' must be a list of strings")
                try:
                    # The strings come from a data file: check them before anything else is read.
                    for text in restrictions:
                        if not isinstance(text, str):
                            raise ReplayError(f"{where}: restriction {text!r} is not a string")
                        Constraint.from_string(text, names=list(tune_params))
                    return cls.from_cache(
                        listing_path.parent / file_name,
                        tune_params=tune_params,
                        restrictions=restrictions,
                        **kw,
                    )
                except SpaceError as exc:
                    raise ReplayError(f"{where}: {exc}") from exc
        names = [item.get("file") for item in listing if isinstance(item, dict)]
        raise ReplayError(f"{listing_path}: no space {file_name!r}; known: {', '.join(map(str, names))}")


def _membership(entries: Mapping[str, Any], keys_order: Sequence[str]) -> Constraint:
    """A constraint that holds exactly for the configurations present in the cache."""
    keys = frozenset(entries)
    names = tuple(keys_order)

    def in_cache(**config: Any) -> bool:
        return ",".join(str(config[n]) for n in names) in keys

    digest = hashlib.sha256("\n".join(sorted(keys)).encode()).hexdigest()[:16]
    return Constraint(fn=in_cache, reads=names, source=f"in cache ({len(keys)} configurations, {digest})")
