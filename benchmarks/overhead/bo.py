"""Suggestion overhead of the Bayesian engine (issue 4): seconds per ``ask()`` by observations.

    python -m benchmarks bo-overhead                 # GEMM replay 25/50/100/200, DEEP at 100
    python -m benchmarks bo-overhead --quick         # smoke run (seconds)
    python -m benchmarks bo-overhead --threads 1 2   # compare torch thread counts

For each seed, the ``bo`` strategy tunes the space through the real
``Tuner`` loop; the suggestion time the tuner records for trials
``n .. n + window - 1`` (the strategy then knows ``n .. n + window - 1``
observations) are pooled over seeds, and the table gives their median and
maximum. The window spans one periodic hyperparameter restart, so the
maximum includes it. Spaces:

* GEMM: the replayed ``gemm__RTX_3090`` space (10 varying parameters, 17,956
  configurations), objective from the cache;
* DEEP: the 39-parameter space of the space benchmark (7 divisor chains of 5
  parameters over sizes 24/16/16/24/16/16/24, plus 4 booleans), with a cheap
  synthetic objective whose optimum (1.0) is known;
* GEMM+3x64: GEMM again, warm-started from three transfer sources of 64
  measured trials each (the other GEMM device's cache: its best 64, the next
  64, and 64 drawn at random), as the store's histories of three devices
  would give them (``--transfer`` picks the ``bo`` transfer option).

Targets: median <= 0.1 s at 100 observations on GEMM; <= 1 s on DEEP; <= 0.2 s
on GEMM+3x64 (at 25 and 100 observations).
The load average is printed: timings taken while other work runs are not final.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from benchmarks.common import DATASETS, format_table, replay
from benchmarks.space.cases import CASES, build_ours
from pytest_autotune.outcome import Outcome
from pytest_autotune.space import Space
from pytest_autotune.strategies.sources import TransferSource
from pytest_autotune.tuning.abort import Evaluations
from pytest_autotune.tuning.tuner import Tuner

GEMM = "gemm__RTX_3090.json.gz"
GEMM_SOURCE = "gemm__RTX_2080_Ti.json.gz"
DEEP_SIZES = {"a": 24, "b": 16, "c": 16, "d": 24, "e": 16, "f": 16, "g": 24}


def deep_objective(config: dict[str, Any]) -> float:
    """1 + squared distance of each chain's middle level to half its size; flags cost 0.1 each.

    Minimum 1.0, reached with ``P_d = S_d / 2`` (valid: ``G_d = S_d``,
    ``L_d = S_d``) and every flag off.
    """
    total = 1.0
    for dim, size in DEEP_SIZES.items():
        total += ((config[f"P_{dim}"] - size / 2) / size) ** 2
    return total + 0.1 * sum(bool(config[f"FLAG_{i}"]) for i in range(4))


def load_case(name: str) -> tuple[Space, Callable[[dict[str, Any]], float | Outcome]]:
    """The space and objective of ``gemm`` (also ``gemm+3x64``) or ``deep``."""
    if name.startswith("gemm"):
        r = replay(str(DATASETS), GEMM)
        return r.space, r.objective
    return build_ours(CASES["deep-39"]()), deep_objective


def three_sources() -> list[TransferSource]:
    """Three sources of 64 measured trials from the other GEMM device (see the module docstring)."""
    other = replay(str(DATASETS), GEMM_SOURCE).as_source()
    measured = [t for t in other.trials if t.label == "ok"]
    drawn = np.random.default_rng(0).choice(len(measured), size=64, replace=False)
    parts = [measured[:64], measured[64:128], [measured[int(i)] for i in drawn]]
    return [TransferSource(f"{GEMM_SOURCE} #{k}", part, kind="device") for k, part in enumerate(parts)]


def suggestion_times(
    name: str, checkpoints: list[int], seeds: int, window: int, threads: int, transfer: str = "rgpe"
) -> dict[int, list[float]]:
    """Suggestion seconds at each checkpoint (``window`` trials from it), pooled over seeds."""
    space, objective = load_case(name)
    pooled: dict[int, list[float]] = {n: [] for n in checkpoints}
    budget = max(checkpoints) + window
    sources = three_sources() if name == "gemm+3x64" else []
    options: dict[str, Any] = {"threads": threads} | ({"transfer": transfer} if sources else {})
    for seed in range(seeds):
        started = time.perf_counter()
        tuner = Tuner(
            space, "bo", abort=Evaluations(budget), seed=seed, strategy_options=options, sources=sources
        )
        if sources:  # the source models are fitted once, when the strategy is made
            print(
                f"  {name}: sources mapped and fitted in {time.perf_counter() - started:.2f} s",
                file=sys.stderr,
            )
        history = tuner.run(objective).history
        for n in checkpoints:
            pooled[n].extend(record.suggest_seconds for record in history[n : n + window])
    return pooled


NAME = "bo-overhead"  # python -m benchmarks bo-overhead
QUESTION = "How many seconds does the Bayesian engine spend per suggestion?"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks bo-overhead",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--window", type=int, default=5, help="suggestions measured per checkpoint and seed")
    parser.add_argument("--gemm", type=int, nargs="*", default=[25, 50, 100, 200], help="GEMM checkpoints")
    parser.add_argument("--deep", type=int, nargs="*", default=[100], help="DEEP checkpoints")
    parser.add_argument("--threads", type=int, nargs="+", default=[1], help="torch threads while suggesting")
    parser.add_argument("--transfer3", type=int, nargs="*", default=[25, 100], help="GEMM+3x64 checkpoints")
    parser.add_argument("--transfer", default="rgpe", help="the bo transfer option of GEMM+3x64")
    parser.add_argument("--quick", action="store_true", help="smoke run: 1 seed, small checkpoints")
    args = parser.parse_args(argv)
    if args.quick:
        args.seeds, args.window, args.gemm, args.deep, args.transfer3 = 1, 2, [12, 20], [12], [12]
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    load = os.getloadavg()
    print(f"bo suggestion overhead: {args.seeds} seeds x {args.window} suggestions per checkpoint")
    print(f"load average before: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} CPUs")
    rows: list[list[str]] = []
    targets = {("gemm", 100): 0.1, ("deep", 100): 1.0, ("gemm+3x64", 25): 0.2, ("gemm+3x64", 100): 0.2}
    failed = False
    started = time.perf_counter()
    for threads in args.threads:
        for name, checkpoints in (("gemm", args.gemm), ("deep", args.deep), ("gemm+3x64", args.transfer3)):
            if not checkpoints:
                continue
            times = suggestion_times(name, checkpoints, args.seeds, args.window, threads, args.transfer)
            for n in checkpoints:
                median, worst = statistics.median(times[n]), max(times[n])
                target = targets.get((name, n), math.nan)
                verdict = (
                    "" if math.isnan(target) else f"<= {target:g}" + (" ok" if median <= target else " MISS")
                )
                failed |= not math.isnan(target) and median > target
                rows.append([name, str(threads), str(n), f"{median:.3f}", f"{worst:.3f}", verdict])
            print(f"  done {name} with {threads} thread(s)", file=sys.stderr, flush=True)
    header = ["space", "threads", "observations", "median s", "max s", "target"]
    print(format_table(header, rows, align="lrrrrr"))
    load = os.getloadavg()
    print(
        f"load average after: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; "
        f"{time.perf_counter() - started:.0f} s"
    )
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
