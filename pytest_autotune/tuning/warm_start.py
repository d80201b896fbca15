"""Warm start without a model: the transfer sources' best configurations as the first trials.

A :class:`~pytest_autotune.strategies.sources.TransferSource` holds configurations of another
task's space (another device, another parametrization). They are carried into this space by the
one mapper, :func:`pytest_autotune.strategies.sources.map_configs` (by parameter name and value:
parameters the source lacks take this space's declared default, parameters this space lacks are
dropped, and a configuration counts only when this space holds it). :func:`source_design`
interleaves the sources' best mapped configurations (the first of each source, then the second of
each, ...), without repeats: when the sources agree, the design is short.

The tuner evaluates this design first when its strategy takes no ``sources`` itself (a strategy
whose constructor accepts ``sources=`` learns from them its own way). A source of which nothing maps
into the space contributes nothing; :func:`overlap` says how much of it maps, for the caller's
warnings.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from pytest_autotune.space.base import Config, Space
from pytest_autotune.strategies.sources import TransferSource, map_configs

__all__ = ["DESIGN_LIMIT", "PER_SOURCE", "map_config", "overlap", "source_design"]

#: Best configurations taken from each source for the initial design.
PER_SOURCE: Final = 3
#: Most configurations of an initial design drawn from sources.
DESIGN_LIMIT: Final = 8


def map_config(space: Space, config: Mapping[str, Any]) -> Config | None:
    """``config`` carried into ``space`` by name and value (parameters it lacks take the declared
    default), or None when it does not fit (:func:`~pytest_autotune.strategies.sources.map_configs`)."""
    return map_configs(space, [config])[0]


def _ranked(space: Space, source: TransferSource) -> list[Config]:
    """The source's measured configurations that map into ``space``, best first."""
    mapped = map_configs(space, [trial.config for trial in source.trials])
    measured = [
        (trial.value, config)
        for trial, config in zip(source.trials, mapped, strict=True)
        if config is not None and trial.label == "ok" and trial.value is not None
    ]
    return [config for _, config in sorted(measured, key=lambda pair: pair[0])]


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
