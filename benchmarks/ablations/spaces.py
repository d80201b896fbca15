"""The spaces of the failure-handling ablation (``ablations/failures.py``), each as a :class:`Replay`.

* every replayed GPU space whose failing share (computed from its cache) is at least
  :data:`MIN_FAILING_SHARE`;
* ``convolution__MI250X_hidden_limits``, failure-heavy on purpose: the MI250X convolution (no
  failures recorded) with its two resource limits removed from the known constraints, so that they
  must be learnt. The 48 KB
  shared-memory bound (``use_shmem == 0 or (...) < 12*1024``) becomes a build failure, as Kernel
  Tuner records a kernel that "uses too much shared data" (``CompilationFailedConfig``); the
  1,024 threads-per-block bound becomes a launch failure (``RuntimeFailedConfig``). The cache does
  not hold those configurations (they were never run): their outcomes are these two failures, every
  other outcome is the recorded one;
* ``conv2d_loosened__PoCL``, failure-heavy on purpose: the conv2d example with its known
  constraints loosened, measured on this project's PoCL CPU device
  (``benchmarks/ablations/failure_heavy_pocl.py``).
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.common import load_listing, replay, short_name
from pytest_autotune.replay import Replay
from pytest_autotune.space import Categorical, Param, Set, build_space

__all__ = [
    "HIDDEN_LIMITS",
    "MIN_FAILING_SHARE",
    "POCL",
    "AblationSpace",
    "ablation_spaces",
    "failing_share",
    "hidden_limits_replay",
    "space_by_name",
]

#: Replayed spaces with at least this share of failing configurations take part.
MIN_FAILING_SHARE = 0.10
HIDDEN_LIMITS_SOURCE = "convolution__MI250X.json.gz"
HIDDEN_LIMITS = "convolution__MI250X_hidden_limits"
POCL = "conv2d_loosened__PoCL"
#: The restrictions of the convolution spaces that are device resource limits: a configuration
#: beyond the shared-memory bound fails to build (checked first: such a build never reaches the
#: launch), one beyond the threads-per-block bound fails at launch.
SHARED_MEMORY_LIMIT = (
    "use_shmem == 0 or (((block_size_x*tile_size_x+(filter_width-1)))*((block_size_y*tile_size_y+"
    "(filter_height-1)))) < 12*1024"
)
THREADS_LIMIT = "block_size_x*block_size_y<=1024"
RESOURCE_LIMITS = (SHARED_MEMORY_LIMIT, THREADS_LIMIT)


@dataclass(frozen=True)
class AblationSpace:
    """One space of the ablation: its replay, whether it was made failure-heavy on purpose, and how."""

    name: str
    replay: Replay
    failure_heavy: bool
    how: str

    @property
    def failing_share(self) -> float:
        """Share of the space's configurations that fail."""
        return failing_share(self.replay)

    @property
    def failure_labels(self) -> list[str]:
        """The failure labels that occur in the space."""
        return sorted(label for label, n in self.replay.failure_counts.items() if label != "ok" and n)


def failing_share(target: Replay) -> float:
    """Share of ``target``'s configurations whose recorded outcome is a failure."""
    return float(np.mean(~np.isfinite(target.values)))


def _param(values: Sequence[Any]) -> Param:
    numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)
    return Set(*values) if numeric else Categorical(*values)


def _violates_shared_memory(config: Mapping[str, Any]) -> bool:
    tile_x = config["block_size_x"] * config["tile_size_x"] + config["filter_width"] - 1
    tile_y = config["block_size_y"] * config["tile_size_y"] + config["filter_height"] - 1
    return bool(config["use_shmem"] != 0 and tile_x * tile_y >= 12 * 1024)


def _violates_threads(config: Mapping[str, Any]) -> bool:
    return bool(config["block_size_x"] * config["block_size_y"] > 1024)


def hidden_limits_replay(datasets: Path, file_name: str = HIDDEN_LIMITS_SOURCE) -> Replay:
    """The convolution space of ``file_name`` with its resource limits left to be learnt."""
    item = next((i for i in load_listing(datasets) if i["file"] == file_name), None)
    if item is None:
        raise SystemExit(f"{datasets / 'spaces.json'}: no space {file_name!r}")
    restrictions: list[str] = item["restrictions"]
    missing = [r for r in RESOURCE_LIMITS if r not in restrictions]
    if missing:
        raise SystemExit(f"{file_name}: expected the resource limits {missing} among its restrictions")
    path = datasets / file_name
    with gzip.open(path, "rt") as handle:
        data = json.load(handle)
    params = {name: _param(values) for name, values in item["tune_params"].items()}
    space = build_space(params, [r for r in restrictions if r not in RESOURCE_LIMITS])
    keys_order: list[str] = data["tune_params_keys"]
    entries: dict[str, Mapping[str, Any]] = dict(data["cache"])
    for config in space.configs(space.at_index(range(space.size))):
        key = ",".join(str(config[name]) for name in keys_order)
        if key in entries:
            continue
        if _violates_shared_memory(config):
            entries[key] = {"time": "CompilationFailedConfig"}
        elif _violates_threads(config):
            entries[key] = {"time": "RuntimeFailedConfig"}
        else:
            raise SystemExit(f"{file_name}: {config} is neither recorded nor beyond a resource limit")
    return Replay(space, entries, keys_order, path=path)


def _replay_how(target: Replay) -> str:
    return f"replayed as recorded, {100 * failing_share(target):.1f}% failing"


@cache
def space_by_name(name: str, datasets: str) -> AblationSpace:
    """One ablation space, loaded once per process (worker processes load only their own)."""
    if name == HIDDEN_LIMITS:
        target = hidden_limits_replay(Path(datasets))
        how = "MI250X convolution, shared-memory (48 KB) and threads-per-block (1024) limits to be learnt"
        return AblationSpace(name, target, True, how)
    if name == POCL:
        from benchmarks.ablations.failure_heavy_pocl import loosened_replay

        how = "conv2d on PoCL, work-group bounds raised and divisibility dropped (failure_heavy_pocl.py)"
        return AblationSpace(name, loosened_replay(), True, how)
    target = replay(datasets, f"{name}.json.gz")
    return AblationSpace(name, target, False, _replay_how(target))


def ablation_spaces(datasets: Path) -> tuple[list[str], dict[str, float]]:
    """The names of the spaces to run (replayed ones first), and every replayed space's failing share."""
    shares = {
        short_name(item["file"]): failing_share(replay(str(datasets), item["file"]))
        for item in load_listing(datasets)
    }
    chosen = [name for name, share in shares.items() if share >= MIN_FAILING_SHARE]
    return [*chosen, HIDDEN_LIMITS, POCL], shares
