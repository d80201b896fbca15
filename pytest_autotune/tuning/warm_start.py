"""Warm start without a model: the transfer sources' best configurations as the first trials.

A :class:`~pytest_autotune.strategies.sources.TransferSource` holds configurations of another
task's space (another device, another parametrization). :func:`map_config` carries one into this
space by parameter name and value: parameters the source lacks take this space's declared default,
parameters this space lacks are dropped, and the result counts only when this space holds it (every
value in its domain, every constraint met). :func:`source_design` interleaves the sources' best
mapped configurations (the first of each source, then the second of each, ...), without repeats:
when the sources agree, the design is short.

The tuner evaluates this design first when its strategy takes no ``sources`` itself (a strategy
whose constructor accepts ``sources=`` learns from them its own way). A source of which nothing maps
into the space contributes nothing; :func:`overlap` says how much of it maps, for the caller's
warnings.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from pytest_autotune.space.base import Config, Space
from pytest_autotune.space.errors import SpaceError
from pytest_autotune.strategies.sources import TransferSource

__all__ = ["DESIGN_LIMIT", "PER_SOURCE", "map_config", "map_configs", "overlap", "source_design"]

#: Best configurations taken from each source for the initial design.
PER_SOURCE: Final = 3
#: Most configurations of an initial design drawn from sources.
DESIGN_LIMIT: Final = 8


def _defaults(space: Space) -> Config | None:
    try:
        return space.default_config()
    except SpaceError:
        return None


def map_configs(space: Space, configs: Sequence[Mapping[str, Any]]) -> list[Config | None]:
    """Each configuration carried into ``space`` by name and value, or None where it does not fit."""
    defaults = _defaults(space)
    candidates: list[Config | None] = []
    for config in configs:
        if not set(space.names) & set(config):
            candidates.append(None)
            continue
        mapped: dict[str, Any] = {}
        for name in space.names:
            if name in config:
                mapped[name] = config[name]
            elif defaults is not None:
                mapped[name] = defaults[name]
            else:
                break
        candidates.append(mapped if len(mapped) == len(space.names) else None)
    present = [c for c in candidates if c is not None]
    try:
        inside = iter(space.contains(present).tolist()) if present else iter(())
    except (TypeError, ValueError, SpaceError):  # a value of the wrong kind for this space
        inside = iter(_contains_one(space, c) for c in present)
    return [c if c is not None and next(inside) else None for c in candidates]


def _contains_one(space: Space, config: Config) -> bool:
    try:
        return bool(space.contains([config])[0])
    except (TypeError, ValueError, SpaceError):
        return False


def map_config(space: Space, config: Mapping[str, Any]) -> Config | None:
    """``config`` carried into ``space`` (module docstring), or None when it does not fit."""
    return map_configs(space, [config])[0]


def _ranked(space: Space, source: TransferSource) -> list[Config]:
    """The source's measured configurations that map into ``space``, best first."""
    measured = sorted(
        (trial for trial in source.trials if trial.label == "ok" and trial.value is not None),
        key=lambda trial: trial.value if trial.value is not None else 0.0,
    )
    return [c for c in map_configs(space, [trial.config for trial in measured]) if c is not None]


def overlap(space: Space, source: TransferSource) -> int:
    """How many of the source's trials (measured or failed) map into ``space``."""
    return sum(c is not None for c in map_configs(space, [trial.config for trial in source.trials]))


def source_design(
    space: Space,
    sources: Sequence[TransferSource],
    *,
    per_source: int = PER_SOURCE,
    limit: int = DESIGN_LIMIT,
) -> list[Config]:
    """The sources' best mapped configurations, interleaved, without repeats (module docstring)."""
    ranked = [_ranked(space, source)[:per_source] for source in sources]
    design: list[Config] = []
    for rank in range(per_source):
        for configs in ranked:
            if rank < len(configs) and configs[rank] not in design and len(design) < limit:
                design.append(configs[rank])
    return design
