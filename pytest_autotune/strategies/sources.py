"""What another tuning task learnt, as a transfer source for warm-starting a new one.

A :class:`TransferSource` is the record of one *source task*: the same kernel tuned on another
device, or the same test function under another parametrization. It holds trials as plain
configurations (parameter name to value, in the source's own space) with their outcome: a value in
minimisation form (only the order and ratios within one source matter, so times relative to the
source's best are as good as absolute ones) or a failure label.

The store (``autotune.json`` histories), :class:`pytest_autotune.replay.Replay` and library users
build sources; strategies that can use them (the Bayesian engine) receive them through
``Tuner(space, strategy, sources=[...])``. Mapping a source's configurations into the target space
is the strategy layer's job (:func:`pytest_autotune.strategies.sources.map_to_space`, by
parameter name and value); a source that does not overlap is skipped with a warning naming it.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from pytest_autotune.outcome import LABELS, Label
from pytest_autotune.space.base import Config, Points, Space
from pytest_autotune.space.errors import SpaceError
from pytest_autotune.warning_types import AutotuneTransferWarning

__all__ = [
    "MappedSource",
    "SourceTrial",
    "TransferSource",
    "map_configs",
    "map_sources",
    "map_to_space",
]


@dataclass(frozen=True)
class SourceTrial:
    """One trial of a source task: its configuration and outcome.

    ``value`` (minimisation form, finite) is set only when ``label == "ok"``.
    """

    config: Mapping[str, Any]
    label: Label = "ok"
    value: float | None = None

    def __post_init__(self) -> None:
        if self.label not in LABELS:
            raise ValueError(f"unknown outcome label {self.label!r}; expected one of {LABELS}")
        if self.label == "ok":
            if self.value is None or not math.isfinite(self.value):
                raise ValueError(f"an 'ok' source trial needs a finite value, got {self.value!r}")
        elif self.value is not None:
            raise ValueError(f"a {self.label!r} source trial carries no value, got {self.value!r}")


@dataclass(frozen=True)
class TransferSource:
    """The trials of one source task, named for messages (``"device 'opencl:A100'"``).

    ``kind`` says where it came from: ``"device"`` (same test, another device), ``"sibling"``
    (same test function, another parametrization, same device) or ``"user"``.
    """

    name: str
    trials: Sequence[SourceTrial]
    kind: str = "user"
    meta: Mapping[str, Any] = field(default_factory=dict)

    @property
    def n_ok(self) -> int:
        """How many trials were measured (label ``ok``)."""
        return sum(1 for trial in self.trials if trial.label == "ok")


@dataclass(frozen=True)
class MappedSource:
    """A source's trials as configurations of the target space (distinct, in source order).

    ``shared`` names the target parameters the source sets; the others were completed with the
    target's defaults, so a model of the source should look at the ``shared`` ones only.
    ``values`` holds the source's value per row (NaN for failures); ``dropped`` counts the
    source trials that are not configurations of the target space.
    """

    source: TransferSource
    points: Points
    labels: tuple[Label, ...]
    values: NDArray[np.float64]
    shared: tuple[str, ...]
    dropped: int

    @property
    def name(self) -> str:
        """The source's name, for messages."""
        return self.source.name

    @property
    def ok(self) -> NDArray[np.bool_]:
        """Which rows were measured (label ``ok``)."""
        return np.array([label == "ok" for label in self.labels], dtype=bool)

    def best(self, n: int) -> Points:
        """The ``n`` best measured rows, best first."""
        ok = np.flatnonzero(self.ok)
        order = ok[np.argsort(self.values[ok], kind="stable")]
        return self.points[order[:n]]


def _plain(value: Any) -> Any:
    """A value as the space compares it: JSON lists (permutations) become tuples."""
    return tuple(value) if isinstance(value, list) else value


def _skip(source: TransferSource, why: str) -> None:
    warnings.warn(f"transfer source {source.name!r} skipped: {why}", AutotuneTransferWarning, stacklevel=3)


def map_configs(space: Space, configs: Sequence[Mapping[str, Any]]) -> list[Config | None]:
    """Each configuration carried into ``space`` by parameter name and value, or None.

    A configuration keeps its values for the parameters of ``space`` it sets; the others take the
    space's declared default, and parameters ``space`` lacks are dropped. It gives None when it
    sets none of the space's parameters, when it lacks one and the space has no valid default, or
    when the result is not valid in ``space`` (a value outside the domain or of another kind, a
    violated constraint).
    """
    try:
        defaults: Config | None = space.default_config()
    except SpaceError:
        defaults = None
    names = space.names
    completed: list[Config | None] = []
    for config in configs:
        own = {name: _plain(config[name]) for name in names if name in config}
        if not own or (len(own) < len(names) and defaults is None):
            completed.append(None)
        else:
            completed.append({**(defaults or {}), **own})
    present = [c for c in completed if c is not None]
    valid = iter(_contains(space, present))
    return [c if c is not None and next(valid) else None for c in completed]


def _contains(space: Space, configs: list[Config]) -> list[bool]:
    """Whether each configuration is valid in ``space``, one at a time where the batch check fails
    (a value of a kind the space cannot encode)."""
    if not configs:
        return []
    try:
        return [bool(v) for v in space.contains(configs).tolist()]
    except (TypeError, ValueError, SpaceError):
        return [_contains_one(space, config) for config in configs]


def _contains_one(space: Space, config: Config) -> bool:
    try:
        return bool(space.contains([config])[0])
    except (TypeError, ValueError, SpaceError):
        return False


def _mapping_problem(
    source: TransferSource, space: Space, configs: Sequence[Config | None] | None = None
) -> str | None:
    """Why ``source`` cannot be mapped into ``space`` (no trial, no shared parameter, no valid
    configuration), or None when some of its trials map. ``configs``: its trials already mapped
    (:func:`map_configs`), when the caller has them."""
    if not source.trials:
        return "it holds no trials"
    named = set().union(*(trial.config for trial in source.trials))
    if not any(name in named for name in space.names):
        return (
            f"it shares no parameter with the space (source: {', '.join(sorted(named)) or 'none'}; "
            f"space: {', '.join(space.names)})"
        )
    if configs is None:
        configs = map_configs(space, [trial.config for trial in source.trials])
    if not any(c is not None for c in configs):
        missing = sorted(set(space.names) - named)
        lacks = f" (it lacks {', '.join(missing)})" if missing else ""
        return f"none of its {len(source.trials)} configurations is valid in the space{lacks}"
    return None


def map_to_space(source: TransferSource, space: Space) -> MappedSource | None:
    """``source``'s trials as configurations of ``space`` (:func:`map_configs`).

    Trials that become the same configuration (they differed only in parameters ``space`` lacks)
    are merged: the best value wins, and a failure counts only when none of them was measured.

    Returns None, with an :class:`~pytest_autotune.warning_types.AutotuneTransferWarning` naming
    the source, when the spaces share no parameter or no trial maps: such a source is skipped, it
    never stops tuning.
    """
    configs = map_configs(space, [trial.config for trial in source.trials])
    problem = _mapping_problem(source, space, configs)
    if problem is not None:
        _skip(source, problem)
        return None
    rows = [i for i, config in enumerate(configs) if config is not None]
    named = set().union(*(trial.config for trial in source.trials))
    shared = tuple(name for name in space.names if name in named)
    points = space.to_points([config for config in configs if config is not None])
    merged: dict[Hashable, int] = {}
    labels: list[Label] = []
    values: list[float] = []
    keep: list[int] = []
    for position, (row, key) in enumerate(zip(rows, points.keys(), strict=True)):
        trial = source.trials[row]
        value = math.nan if trial.value is None else float(trial.value)
        seen = merged.get(key)
        if seen is None:
            merged[key] = len(keep)
            keep.append(position)
            labels.append(trial.label)
            values.append(value)
        elif trial.label == "ok" and (labels[seen] != "ok" or value < values[seen]):
            labels[seen], values[seen] = "ok", value
    return MappedSource(
        source,
        points[np.asarray(keep, dtype=np.int64)],
        tuple(labels),
        np.asarray(values, dtype=np.float64),
        shared,
        len(configs) - len(rows),
    )


def map_sources(sources: Sequence[TransferSource], space: Space) -> list[MappedSource]:
    """Every source that overlaps ``space``, mapped (the others skipped with a warning)."""
    mapped = [map_to_space(source, space) for source in sources]
    return [m for m in mapped if m is not None]
