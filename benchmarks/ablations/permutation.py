"""Permutation ablation (issue 4): the recorded loop-order kernel replayed with each distance.

    python -m benchmarks permutation                 # 20 seeds, budgets 10/20/50/100
    python -m benchmarks permutation --quick         # 2 seeds, budgets 10/20

The space is the OpenCL tiled matrix product recorded on the PoCL CPU device
by ``bo_loop_order.py`` (``order``: a permutation of 4 loops, and three tile
sizes; 432 configurations). Each strategy spec tunes it through the real
``Tuner`` for every seed; the table gives the mean (and standard deviation
over seeds) of the fraction of the optimum reached after each budget. The
rows compare Spearman (the default), Kendall and Hamming distances with the
ablation that treats an ordering as one category, next to random search.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

from benchmarks.ablations.loop_order import permutation_replay
from benchmarks.common import format_table
from pytest_autotune.strategies import parse_strategy_spec
from pytest_autotune.tuning.abort import Evaluations
from pytest_autotune.tuning.tuner import Tuner

DEFAULT_SPECS = [
    "random",
    "bo",
    "bo:permutation_distance=kendall",
    "bo:permutation_distance=hamming",
    "bo:permutation_distance=categorical",
]


def fractions(spec: str, seeds: int, budgets: list[int]) -> dict[int, list[float]]:
    """Fraction of the optimum after each budget, one value per seed."""
    space, objective, optimum = permutation_replay()
    name, options = parse_strategy_spec(spec)
    out: dict[int, list[float]] = {b: [] for b in budgets}
    for seed in range(seeds):
        tuner = Tuner(space, name, abort=Evaluations(max(budgets)), seed=seed, strategy_options=options)
        best = float("inf")
        trajectory = []
        for record in tuner.run(objective).history:
            if record.outcome.value is not None:
                best = min(best, record.outcome.value)
            trajectory.append(optimum / best if best < float("inf") else 0.0)
        for b in budgets:
            out[b].append(trajectory[min(b, len(trajectory)) - 1])
    return out


NAME = "permutation"  # python -m benchmarks permutation
QUESTION = "Which permutation distance helps on the recorded loop-order kernel?"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks permutation",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--strategies", nargs="+", default=DEFAULT_SPECS)
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--budgets", type=int, nargs="+", default=[10, 20, 50, 100])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    if args.quick:
        args.seeds, args.budgets = 2, [10, 20]
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    space, _, optimum = permutation_replay()
    print(
        f"loop-order kernel (PoCL CPU): {space.size} configurations, optimum {optimum:.3f} ms, "
        f"{args.seeds} seeds; load average {os.getloadavg()[0]:.2f}"
    )
    started = time.perf_counter()
    rows = []
    for spec in args.strategies:
        result = fractions(spec, args.seeds, args.budgets)
        values = [result[b] for b in args.budgets]
        rows.append([spec, *(f"{statistics.mean(v):.3f} ±{statistics.pstdev(v):.3f}" for v in values)])
        print(f"  done {spec}, {time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)
    header = ["strategy", *(f"@{b}" for b in args.budgets)]
    print(format_table(header, rows, align="l" + "r" * len(args.budgets)))
    print(
        f"fraction of optimum: mean ± std over seeds; {time.perf_counter() - started:.0f} s; "
        f"load average {os.getloadavg()[0]:.2f}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
