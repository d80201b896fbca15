"""How hard a replayed landscape is: needles, basins and what random search expects.

    python -m benchmarks landscape                 # the GPU spaces and every machine's example kernels
    python -m benchmarks landscape --gpu           # the GPU spaces only
    python -m benchmarks landscape --kernels       # the example kernels only

Fitness-landscape measures in the spirit of the fitness flow graphs of Schoonhoven et al. (2022),
which count local minima and how much of the space flows down to good ones; here over the
exhaustively measured configurations:

* ``near``: configurations within 0.95 of the best, the needles a 0.95 target must hit;
* ``minima``: local minima, configurations no one-parameter neighbour improves on;
* ``basin``: the share of feasible configurations from which steepest descent over one-parameter
  moves (to the best better neighbour) ends within 0.95 of the best. A local search started at
  random reaches the target with about that probability per start; a small basin means the best
  configurations are reached by jumps, not by walking downhill;
* ``best nbr``: the best fraction among the best configuration's one-parameter neighbours (how
  much a model sees of the optimum from next door);
* ``random@k``: the fraction of the optimum that random search (distinct configurations) expects
  within k evaluations (exact, see ``strategy_metrics.expected_fraction_of_random``).

Neighbours are the measured configurations that differ in exactly one parameter (a sub-space
measured for the kernels limits them to it). Failures count as infinitely slow.
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from benchmarks.common import DATASETS, format_table, load_listing, replay, short_name
from benchmarks.strategy.metrics import expected_fraction_of_random
from pytest_autotune.replay import Replay

TARGET = 0.95
BUDGETS = (20, 50, 100)


def one_parameter_neighbours(rows: Sequence[tuple[object, ...]]) -> list[NDArray[np.int64]]:
    """For each row, the indices of the rows that differ from it in exactly one position.

    Over a space's configurations this is what ``strategies.local.hamming_neighbours`` gives one
    configuration at a time (the tests check that they agree); grouping the rows by all positions
    but one finds every row's neighbours at once, 0.6 s for the 17,956 GEMM configurations where
    a call per configuration takes 20 s.
    """
    width = len(rows[0]) if rows else 0
    found: list[set[int]] = [set() for _ in rows]
    for position in range(width):
        groups: dict[tuple[object, ...], list[int]] = defaultdict(list)
        for i, row in enumerate(rows):
            groups[row[:position] + row[position + 1 :]].append(i)
        for members in groups.values():
            if len(members) > 1:
                for i in members:
                    found[i].update(members)
    return [np.array(sorted(s - {i}), dtype=np.int64) for i, s in enumerate(found)]


def descent_ends(values: NDArray[np.float64], neighbours: Sequence[NDArray[np.int64]]) -> NDArray[np.int64]:
    """Where steepest descent from each configuration stops (a local minimum; itself when infeasible)."""
    step = np.arange(len(values), dtype=np.int64)
    for i, near in enumerate(neighbours):
        if near.size and np.isfinite(values[i]):
            j = int(near[np.argmin(values[near])])
            if values[j] < values[i]:
                step[i] = j
    ends = step.copy()
    while True:  # pointer jumping: each pass doubles the steps followed
        nxt = ends[ends]
        if np.array_equal(nxt, ends):
            return ends
        ends = nxt


@dataclass(frozen=True)
class Landscape:
    """The measures of one landscape (see the module docstring)."""

    name: str
    size: int
    feasible: int
    near: int
    minima: int
    basin: float
    best_neighbour: float
    random: tuple[float, ...]


def analyse(name: str, values: NDArray[np.float64], rows: Sequence[tuple[object, ...]]) -> Landscape:
    """The measures of a landscape given each configuration's value and parameter values."""
    neighbours = one_parameter_neighbours(rows)
    feasible = np.isfinite(values)
    best = float(values[feasible].min())
    ends = descent_ends(values, neighbours)
    is_minimum = feasible & (ends == np.arange(len(values)))
    good = values <= best / TARGET
    optimum = int(np.argmin(values))
    near = neighbours[optimum]
    best_neighbour = float(best / values[near].min()) if near.size else 0.0
    expected = expected_fraction_of_random(values, best, max(BUDGETS))
    return Landscape(
        name,
        len(values),
        int(feasible.sum()),
        int(good.sum()),
        int(is_minimum.sum()),
        float(good[ends][feasible].mean()),
        best_neighbour,
        tuple(float(expected[min(b, len(values)) - 1]) for b in BUDGETS),
    )


def replay_rows(target: Replay) -> list[tuple[object, ...]]:
    """Each configuration of a replayed space as a tuple of its parameter values, in index order."""
    configs = target.space.configs(target.space.at_index(list(range(target.space.size))))
    names = list(configs[0]) if configs else []
    return [tuple(c[n] for n in names) for c in configs]


def gpu_landscapes() -> list[Landscape]:
    """The replayed GPU spaces of ``benchmarks/data/replay`` (or ``AUTOTUNE_DATASETS``)."""
    out = []
    for item in load_listing():
        target = replay(str(DATASETS), item["file"])
        out.append(analyse(short_name(item["file"]), target.values, replay_rows(target)))
    return out


def kernel_landscapes() -> list[Landscape]:
    """Every machine's example-kernel measurements (the same statistic as ``kernels_bench.py``)."""
    from benchmarks.kernels import bench as kb
    from benchmarks.kernels.cases import CASES

    out = []
    for machine in kb.machines():
        for case in CASES:
            data = kb.load_case(case, machine, "trials")
            if isinstance(data, str):
                continue
            out.append(analyse(f"{case.name} {machine}", data.replay.values, replay_rows(data.replay)))
    return out


def table(landscapes: Sequence[Landscape]) -> str:
    """The table of measures, one landscape per row."""
    header = ["landscape", "configs", "feasible", "near", "minima", "basin", "best nbr"]
    header += [f"random@{b}" for b in BUDGETS]
    rows = [
        [
            x.name,
            str(x.size),
            str(x.feasible),
            str(x.near),
            str(x.minima),
            f"{100 * x.basin:.1f}%",
            f"{x.best_neighbour:.3f}",
            *(f"{r:.3f}" for r in x.random),
        ]
        for x in landscapes
    ]
    return format_table(header, rows)


NAME = "landscape"  # python -m benchmarks landscape
QUESTION = "How hard is each replayed landscape: needles, basins, what random search expects?"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks landscape", description=__doc__.split("\n\n")[0]
    )
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--gpu", action="store_true", help="the GPU spaces only")
    which.add_argument("--kernels", action="store_true", help="the example kernels only")
    args = parser.parse_args(argv)
    landscapes: list[Landscape] = []
    if not args.kernels:
        landscapes += gpu_landscapes()
    if not args.gpu:
        landscapes += kernel_landscapes()
    print(table(landscapes))
    print(
        f"\nnear: configurations within {TARGET} of the best; minima: local minima over one-parameter moves;"
        "\nbasin: share of feasible configurations whose steepest descent ends near the best;"
        "\nbest nbr: best fraction among the optimum's one-parameter neighbours;"
        "\nrandom@k: fraction of the optimum random search expects within k evaluations."
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
