"""Kernel Tuner's strategies in simulation mode, on the same replayed spaces, for the strategy bench.

``tune_kernel(..., simulation_mode=True, cache=...)`` serves every
configuration from the cache file (Kernel Tuner's ``SimulationRunner``);
the budget ``max_fevals`` counts unique configurations, failed ones
included, as ours does. Kernel Tuner draws from Python's ``random`` and
numpy's global generator, which are seeded per run; its ``bayes_opt`` also
builds a scipy Latin hypercube without a seed, which is given one drawn from
the seeded global generator so runs are reproducible. The cache file is
parsed once per process (Kernel Tuner would re-read it on every call).

Each run's trajectory is stored under ``benchmarks/out/kt_cache/`` keyed by
Kernel Tuner version, space, strategy, seed and budget, so a re-run without
changes costs nothing.
"""

from __future__ import annotations

import gzip
import json
import math
import os
import random
import time
import warnings
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.strategy.metrics import RunRecord

__all__ = ["available_kt_strategies", "kt_version", "plain_cache", "run_kt"]

KT_CLASSIC = ("random_sample", "genetic_algorithm", "simulated_annealing", "adaptive_tabu_greywolf")
KT_ALL = (*KT_CLASSIC, "bayes_opt")


def kt_version() -> str | None:
    """Installed Kernel Tuner version, or None when it is not installed."""
    try:
        from importlib.metadata import version

        return version("kernel_tuner")
    except Exception:
        return None


def available_kt_strategies() -> list[str]:
    """The benchmarked Kernel Tuner strategies this installation has."""
    from kernel_tuner.interface import strategy_map

    return [name for name in KT_ALL if name in strategy_map]


def plain_cache(datasets: Path, file_name: str, out: Path) -> Path:
    """Kernel Tuner's simulation mode wants an uncompressed ``.json``: write one under ``out``."""
    target = out / "files" / (file_name.split(".json")[0] + ".json")
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        source = datasets / file_name
        data = gzip.decompress(source.read_bytes()) if file_name.endswith(".gz") else source.read_bytes()
        tmp = target.with_name(f"{target.name}.{os.getpid()}.tmp")
        tmp.write_bytes(data)
        tmp.replace(target)
    return target


@cache
def _patch_kernel_tuner() -> None:
    """Parse each cache once per process; seed bayes_opt's Latin hypercube from numpy's global state."""
    from kernel_tuner import util
    from kernel_tuner.strategies import bayes_opt
    from scipy.stats import qmc

    original_read = util.read_cache
    parsed: dict[tuple[str, bool], dict[str, Any]] = {}

    def read_cache_once(cachefile: str, open_cache: bool = True) -> dict[str, Any]:
        key = (cachefile, open_cache)
        if key not in parsed:
            parsed[key] = original_read(cachefile, open_cache=open_cache)
        data = parsed[key]
        return {**data, "cache": dict(data["cache"])}

    util.read_cache = read_cache_once

    def seeded_lhs(d: int, **kw: Any) -> Any:
        seed = np.random.randint(2**31)  # noqa: NPY002 - Kernel Tuner draws from the global generator
        return qmc.LatinHypercube(d=d, rng=np.random.default_rng(seed), **kw)

    bayes_opt.LatinHypercube = seeded_lhs


def _record_path(out: Path, space: str, strategy: str, seed: int, budget: int) -> Path:
    return out / f"kt{kt_version()}" / space / f"{strategy}__seed{seed}__b{budget}.json"


def run_kt(
    datasets: Path, item: dict[str, Any], strategy: str, seed: int, budget: int, out: Path
) -> RunRecord:
    """One Kernel Tuner run (from the on-disk cache when it was run before)."""
    space = item["file"].split(".json")[0]
    record_path = _record_path(out, space, strategy, seed, budget)
    if record_path.exists():
        return RunRecord.from_json(json.loads(record_path.read_text()))
    from kernel_tuner import tune_kernel

    _patch_kernel_tuner()
    cache_file = plain_cache(datasets, item["file"], out)
    random.seed(seed)
    np.random.seed(seed)  # noqa: NPY002 - Kernel Tuner draws from the global generator
    started = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results, _env = tune_kernel(
            _kernel_name(cache_file),
            "__global__ void k() {}",
            item.get("problem_size", [1]),
            [],
            item["tune_params"],
            restrictions=item["restrictions"],
            cache=str(cache_file),
            simulation_mode=True,
            strategy=strategy,
            strategy_options={"max_fevals": budget},
            quiet=True,
            lang="CUDA",
        )
    wall = time.perf_counter() - started
    keys = list(item["tune_params"])
    seen: set[tuple[Any, ...]] = set()
    values: list[float] = []
    strategy_ms: list[float] = []
    for result in results:
        key = tuple(result[k] for k in keys)
        if key in seen:
            continue
        seen.add(key)
        value = result.get("time")
        failed = "__error__" in result or not isinstance(value, (int, float)) or not math.isfinite(value)
        values.append(math.inf if failed else float(value))
        strategy_ms.append(float(result.get("strategy_time", 0.0) or 0.0))
        if len(values) == budget:
            break
    record = RunRecord(space, strategy, seed, values, float(np.mean(strategy_ms)) / 1000.0, wall)
    record_path.parent.mkdir(parents=True, exist_ok=True)
    record_path.write_text(json.dumps(record.to_json()))
    return record


def _kernel_name(cache_file: Path) -> str:
    from kernel_tuner import util

    name: str = util.read_cache(str(cache_file), open_cache=False)["kernel_name"]
    return name
