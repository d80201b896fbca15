"""How well the ``bo`` surrogate sees the optimum after a budget of trials.

    python -m benchmarks surrogate-quality                       # the GPU spaces, 10 seeds, 50 trials
    python -m benchmarks surrogate-quality --budget 20 --seeds 20
    python -m benchmarks surrogate-quality --spaces convolution__A100 --strategy bo:kernel=matern

For each replayed space and seed, the strategy (``bo`` by default, options allowed) tunes for
``--budget`` evaluations; its own surrogate is then refitted (warm-started, as in the run) to every
feasible trial, its feasibility forests to every trial, and both are asked about every feasible
configuration not yet evaluated (the *candidates*). The table says, over the seeds:

* ``found``: runs that already reached 0.95 of the optimum within the budget;
* ``rho``: Spearman correlation between the posterior mean and the recorded times of the candidates
  (1: the model orders the rest of the space perfectly);
* ``by mean`` / ``by acq``: where the best near-optimal candidate (within 0.95 of the optimum) stands
  when the candidates are sorted by posterior mean / by the acquisition the strategy maximises
  (``log EI + log P(feasible)``): the median rank over the runs with such a candidate left, and that
  rank as a share of the candidates. Rank 1 means the next suggestion would find the target; a rank
  in the hundreds means the model cannot see it yet, however well the acquisition is optimised;
* ``top-10``: the best fraction of the optimum among the acquisition's ten best candidates (what
  the next ten suggestions could reach if the model did not learn from them), mean over the runs;
* ``forest``: ``rho`` and ``by mean`` of a second opinion, scikit-learn's extremely randomised trees
  fitted to the same trials on the same features (logarithm of the times). When the forest ranks the
  needles no better than the GP, the surrogate is not what holds a run back.

This separates the two reasons a run misses a target: a model that cannot rank the needle (large
``by mean``) or an acquisition that looks elsewhere (small ``by mean``, large ``by acq``).
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from benchmarks.common import DATASETS, format_table, load_listing, replay, short_name
from pytest_autotune.replay import Replay
from pytest_autotune.strategies import parse_strategy_spec
from pytest_autotune.tuning.tuner import Tuner

#: A candidate within this fraction of the optimum counts as a hit (the issues' target).
NEAR = 0.95
TOP = 10


@dataclass(frozen=True)
class RunQuality:
    """What the surrogate of one run knows about the candidates it has not evaluated."""

    found: bool
    candidates: int
    rho: float
    rank_by_mean: int | None  # None when no candidate is within NEAR of the optimum
    rank_by_acquisition: int | None
    top_fraction: float
    forest_rho: float
    forest_rank: int | None


def first_rank(scores: NDArray[np.float64], hits: NDArray[np.bool_]) -> int | None:
    """1-based rank of the best-scoring hit when candidates are sorted by ``scores``, highest first.

    Ties are broken against the hit (a hit ranks after every candidate scoring the same), so a
    model that scores everything alike gets no credit. None when there is no hit.
    """
    if not hits.any():
        return None
    best_hit = float(np.max(scores[hits]))
    return int(np.sum(scores > best_hit) + np.sum((scores == best_hit) & ~hits)) + 1


def spearman(a: NDArray[np.float64], b: NDArray[np.float64]) -> float:
    """Spearman rank correlation (0 when either side is constant)."""
    from scipy.stats import spearmanr

    if np.ptp(a) == 0 or np.ptp(b) == 0:
        return 0.0
    return float(spearmanr(a, b).statistic)


def assess(target: Replay, strategy: str, seed: int, budget: int) -> RunQuality:
    """Tune ``target`` with ``strategy`` for ``budget`` evaluations and question its surrogate."""
    from sklearn.ensemble import ExtraTreesRegressor

    from pytest_autotune.strategies.bo import BayesianOptimization
    from pytest_autotune.strategies.bo.acquisition import feasible_acquisition

    name, options = parse_strategy_spec(strategy)
    tuner = Tuner(target.space, name, abort=budget, seed=seed, strategy_options=options)
    result = tuner.run(target.objective)
    bo = tuner.strategy
    if not isinstance(bo, BayesianOptimization):
        raise SystemExit(f"surrogate_quality: {strategy!r} is not a bo strategy")
    space = target.space
    every = space.at_index(list(range(space.size)))
    features = bo.encoding.features(every)
    tried = np.asarray(space.index_of(space.to_points([record.config for record in result.history])))
    labels = [record.outcome.label for record in result.history]
    values = np.array([np.nan if r.outcome.value is None else r.outcome.value for r in result.history])
    ok = ~np.isnan(values)
    bo.surrogate.fit(features[tried[ok]], values[ok])
    active = bo.encoding.active_columns()
    feasibility = bo.feasibility
    if feasibility is not None:
        feasibility.fit(features[tried][:, active], labels)

    recorded = target.values
    candidates = np.setdiff1d(np.flatnonzero(np.isfinite(recorded)), tried)
    mean_t, std_t = bo.surrogate.predict(features[candidates])
    p_feasible = None
    if feasibility is not None and feasibility.active:
        p_feasible = feasibility.probability(features[candidates][:, active])
    acquisition = feasible_acquisition(mean_t, std_t, bo.surrogate.best_target, p_feasible, 0.0)
    mean = mean_t.numpy()
    fraction = target.optimum / recorded[candidates]
    hits = fraction >= NEAR
    top = np.argsort(-acquisition, kind="stable")[:TOP]

    forest = ExtraTreesRegressor(n_estimators=100, random_state=seed, n_jobs=1)
    forest.fit(features[tried[ok]][:, active], np.log(values[ok]))
    forest_mean = forest.predict(features[candidates][:, active])
    truth = np.log(recorded[candidates])
    return RunQuality(
        found=result.best_value is not None and target.optimum / result.best_value >= NEAR,
        candidates=len(candidates),
        rho=spearman(mean, truth),
        rank_by_mean=first_rank(-mean, hits),
        rank_by_acquisition=first_rank(acquisition, hits),
        top_fraction=float(np.max(fraction[top])) if len(top) else 0.0,
        forest_rho=spearman(forest_mean, truth),
        forest_rank=first_rank(-forest_mean, hits),
    )


def _assess_task(task: tuple[str, str, int, int]) -> tuple[str, RunQuality]:
    file_name, strategy, seed, budget = task
    return file_name, assess(replay(str(DATASETS), file_name), strategy, seed, budget)


def _rank_cell(ranks: Sequence[int | None], candidates: Sequence[int]) -> str:
    """Median rank over the runs with a near-optimal candidate left, and its share of the candidates."""
    pairs = [(r, c) for r, c in zip(ranks, candidates, strict=True) if r is not None]
    if not pairs:
        return "-"
    rank = statistics.median(r for r, _ in pairs)
    share = statistics.median(r / c for r, c in pairs)
    return f"{rank:.0f} ({share:.1%})"


def table(results: dict[str, list[RunQuality]]) -> str:
    """One row per space."""
    header = ["space", "found", "rho", "by mean", "by acq", "top-10", "forest rho", "forest by mean"]
    rows = []
    for file_name, runs in results.items():
        sizes = [run.candidates for run in runs]
        rows.append(
            [
                short_name(file_name),
                f"{sum(run.found for run in runs)}/{len(runs)}",
                f"{statistics.fmean(run.rho for run in runs):.2f}",
                _rank_cell([run.rank_by_mean for run in runs], sizes),
                _rank_cell([run.rank_by_acquisition for run in runs], sizes),
                f"{statistics.fmean(run.top_fraction for run in runs):.3f}",
                f"{statistics.fmean(run.forest_rho for run in runs):.2f}",
                _rank_cell([run.forest_rank for run in runs], sizes),
            ]
        )
    return format_table(header, rows)


NAME = "surrogate-quality"  # python -m benchmarks surrogate-quality
QUESTION = "What does the Bayesian engine's model know about the optimum after a budget?"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks surrogate-quality", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--strategy", default="bo", help="a bo spec, e.g. bo:kernel=matern")
    parser.add_argument("--spaces", nargs="+", help="dataset file names or short names (default: all)")
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--budget", type=int, default=50)
    parser.add_argument("--jobs", type=int, default=2, help="worker processes")
    args = parser.parse_args(argv)
    if parse_strategy_spec(args.strategy)[0] != "bo":
        parser.error(f"--strategy {args.strategy!r}: only the bo strategy has a surrogate to question")

    files = [entry["file"] for entry in load_listing()]
    if args.spaces:
        wanted = set(args.spaces)
        files = [f for f in files if f in wanted or short_name(f) in wanted]
        if not files:
            parser.error(f"no dataset matches {args.spaces}")
    seeds = range(args.first_seed, args.first_seed + args.seeds)
    tasks = [(f, args.strategy, seed, args.budget) for f in files for seed in seeds]
    results: dict[str, list[RunQuality]] = {f: [] for f in files}
    if args.jobs > 1:
        with ProcessPoolExecutor(args.jobs) as pool:
            for file_name, quality in pool.map(_assess_task, tasks):
                results[file_name].append(quality)
    else:
        for file_name, quality in map(_assess_task, tasks):
            results[file_name].append(quality)
    print(
        f"Surrogate of {args.strategy} after {args.budget} evaluations, seeds "
        f"{seeds.start}-{seeds.stop - 1}; ranks among the feasible configurations not evaluated\n"
    )
    print(table(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
