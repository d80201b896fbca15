"""Strategy benchmark: tune the replayed GPU spaces with every strategy, side by side with Kernel Tuner.

    python -m benchmarks strategy                      # full run (see --help)
    python -m benchmarks strategy --quick              # smoke run, seconds
    python -m benchmarks strategy --strategies random bo bo:feasibility=off --no-kt
    python -m benchmarks strategy --strategies bo bo:power_of_two=off --first-seed 20 --no-kt
                                                             # a second, independent sample of seeds

For every space of ``spaces.json``, strategy and seed, one tuning run at the
largest budget is made; every smaller budget is read from the prefix of its
trajectory (exact for our strategies, which never see the budget: the
tuner's abort condition owns it). Metrics per budget: fraction of the
optimum (optimum / best value found), mean and standard deviation over seeds
per space and averaged over spaces (the standard deviation over seeds of the
per-seed average); share of evaluations spent on failing configurations;
seconds per suggestion; and the methodology score of Willemsen et al. (FGCS
2024, see ``strategy_metrics``). With two or more of our strategies, each
is also compared with the first, paired by seed (the mean difference of the
space-averaged fraction and its standard error): the seed-to-seed spread of
either strategy alone is several times larger than the differences between
variants, so only the paired error says whether a difference is real.
Kernel Tuner's strategies run in
simulation mode on the same spaces, budgets and seeds (``strategy_kt``,
cached on disk). Prints the tables and two checks (our ``random`` matches
Kernel Tuner's ``random_sample`` on every space; our best classic strategy
is at least as good as Kernel Tuner's best classic one at the largest
budget), writes ``benchmarks/out/strategy_bench.json`` and the convergence
plot ``benchmarks/out/strategy_bench.png``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import sys
import time
from collections import defaultdict
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.common import DATASETS, OUT, format_table, load_listing, replay, short_name
from benchmarks.strategy.metrics import (
    RunRecord,
    best_so_far,
    expected_best_of_random,
    expected_fraction_of_random,
    fraction_of_optimum,
    methodology_score,
    paired_difference,
)
from pytest_autotune.strategies import parse_strategy_spec
from pytest_autotune.tuning.abort import Evaluations
from pytest_autotune.tuning.tuner import Tuner

DEFAULT_STRATEGIES = ["random", "anneal", "genetic", "diff_evo", "pattern", "local", "bandit"]
CLASSIC = {"random", "exhaustive", "anneal", "genetic", "diff_evo", "pattern", "local", "bandit"}
KT_PREFIX = "kt:"
MIN_SEEDS_FOR_CHECKS = 10
QUICK_SPACES = ["convolution_6p__MI50.json.gz", "pnpoly__RTX_3090.json.gz"]


# -- running -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Task:
    """One tuning run to make: ``kind`` is ``ours`` or ``kt``."""

    kind: str
    datasets: str
    item: dict[str, Any]
    strategy: str
    seed: int
    budget: int
    out: str
    code: str  # hash of the package sources: our cached runs are reused only for the same code


def code_version() -> str:
    """Hash of every Python source of the package (a change re-runs our strategies)."""
    import pytest_autotune

    digest = hashlib.sha256()
    root = Path(pytest_autotune.__file__).parent
    for path in sorted(root.rglob("*.py")):
        digest.update(path.relative_to(root).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def run_ours(datasets: str, file_name: str, spec: str, seed: int, budget: int) -> RunRecord:
    """One run of our tuner with strategy ``spec`` (``name`` or ``name:key=value,...``)."""
    name, options = parse_strategy_spec(spec)
    target = replay(datasets, file_name)
    started = time.perf_counter()
    tuner = Tuner(target.space, name, abort=Evaluations(budget), seed=seed, strategy_options=options)
    result = tuner.run(target.objective)
    wall = time.perf_counter() - started
    values = [r.outcome.value if r.outcome.value is not None else math.inf for r in result.history]
    suggest = float(np.mean([r.suggest_seconds for r in result.history])) if result.history else 0.0
    return RunRecord(short_name(file_name), spec, seed, values, suggest, wall)


def _limit_threads() -> None:
    """One thread per process (BLAS, OpenMP, and torch once something imported it): --jobs parallelises."""
    from threadpoolctl import threadpool_limits  # type: ignore[import-untyped]

    threadpool_limits(1)
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(1)


def _run_path(task: Task) -> Path:
    safe = task.strategy.replace(":", "__").replace(",", "_").replace("=", "-").replace("+", "-")
    space = short_name(task.item["file"])
    return Path(task.out) / "runs" / task.code / space / f"{safe}__seed{task.seed}__b{task.budget}.json"


def _task(task: Task) -> RunRecord:
    _limit_threads()
    if task.kind == "kt":
        from benchmarks.strategy.kt import run_kt

        record = run_kt(
            Path(task.datasets), task.item, task.strategy, task.seed, task.budget, Path(task.out) / "kt_cache"
        )
        record.strategy = KT_PREFIX + task.strategy
        return record
    path = _run_path(task)
    if path.exists():
        return RunRecord.from_json(json.loads(path.read_text()))
    record = run_ours(task.datasets, task.item["file"], task.strategy, task.seed, task.budget)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record.to_json()))
    return record


def _cost_estimate(task: Task) -> float:
    size = float(task.item.get("constrained_size", 1000))
    if task.strategy == "bayes_opt" or (task.kind == "ours" and task.strategy.startswith("bo")):
        return 20.0 * size
    return size


def run_all(tasks: list[Task], jobs: int) -> list[RunRecord]:
    """Run the tasks (most expensive first), printing progress to stderr."""
    tasks = sorted(tasks, key=_cost_estimate, reverse=True)
    records: list[RunRecord] = []
    started = time.perf_counter()

    def progress(done: int) -> None:
        if done % max(1, len(tasks) // 20) == 0 or done == len(tasks):
            print(f"  {done}/{len(tasks)} runs, {time.perf_counter() - started:.0f} s", file=sys.stderr)

    if jobs <= 1:
        for task in tasks:
            records.append(_task(task))
            progress(len(records))
        return records
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        futures = [pool.submit(_task, task) for task in tasks]
        for future in as_completed(futures):
            records.append(future.result())
            progress(len(records))
    return records


# -- analysis ------------------------------------------------------------------------------
@dataclass
class SpaceInfo:
    name: str
    size: int
    optimum: float
    worst: float
    failed_share: float
    expected_random: np.ndarray
    expected_fraction: np.ndarray


@dataclass
class Cell:
    """Metrics of one (space, strategy) over seeds; arrays are (seeds, budgets)."""

    fraction: np.ndarray
    failures: np.ndarray
    score: np.ndarray
    suggest_s: float
    curve: np.ndarray  # mean fraction of optimum after 1..max budget evaluations


def analyse(
    records: list[RunRecord], spaces: dict[str, SpaceInfo], budgets: list[int]
) -> dict[tuple[str, str], Cell]:
    grouped: dict[tuple[str, str], list[RunRecord]] = defaultdict(list)
    for record in records:
        grouped[(record.space, record.strategy)].append(record)
    top = max(budgets)
    cells = {}
    for (space, strategy), runs in grouped.items():
        runs.sort(key=lambda r: r.seed)
        info = spaces[space]
        fraction = np.zeros((len(runs), len(budgets)))
        failures = np.zeros((len(runs), len(budgets)))
        score = np.zeros((len(runs), len(budgets)))
        curves = np.zeros((len(runs), top))
        for i, run in enumerate(runs):
            best = best_so_far(run.values, top)
            frac = fraction_of_optimum(best, info.optimum)
            curves[i] = frac
            failed = ~np.isfinite(np.asarray(run.values[:top] + [0.0] * (top - len(run.values[:top]))))
            for j, budget in enumerate(budgets):
                fraction[i, j] = frac[budget - 1]
                failures[i, j] = failed[:budget].mean()
                score[i, j] = methodology_score(best[:budget], info.expected_random, info.optimum, info.worst)
        cells[(space, strategy)] = Cell(
            fraction, failures, score, float(np.mean([r.suggest_s for r in runs])), curves.mean(axis=0)
        )
    return cells


def space_average(
    cells: dict[tuple[str, str], Cell], spaces: Sequence[str], strategy: str, attr: str
) -> np.ndarray:
    """Per seed, the mean over spaces of a metric: shape (seeds, budgets)."""
    stacked = [getattr(cells[(s, strategy)], attr) for s in spaces if (s, strategy) in cells]
    seeds = min(a.shape[0] for a in stacked)
    return np.asarray(np.mean([a[:seeds] for a in stacked], axis=0))


# -- printing ------------------------------------------------------------------------------
def mean_std(values: np.ndarray) -> str:
    return f"{np.mean(values):.3f}±{np.std(values):.3f}"


def row_for(
    name: str, fraction: np.ndarray, failures: np.ndarray, score: np.ndarray, suggest_s: float
) -> list[str]:
    cells = [name]
    cells += [mean_std(fraction[:, j]) for j in range(fraction.shape[1])]
    cells += [
        f"{100 * np.mean(failures[:, -1]):.1f}",
        f"{np.mean(score[:, -1]):+.3f}",
        f"{1000 * suggest_s:.2f}",
    ]
    return cells


def paired_table(
    cells: dict[tuple[str, str], Cell], spaces: Sequence[str], strategies: Sequence[str], budgets: list[int]
) -> str:
    """Each of our strategies against the first, paired by seed: mean difference (standard error)."""
    base = strategies[0]
    reference = space_average(cells, spaces, base, "fraction")
    rows = []
    for strategy in strategies[1:]:
        mean, error = paired_difference(reference, space_average(cells, spaces, strategy, "fraction"))
        rows.append([strategy, *[f"{m:+.3f} ({e:.3f})" for m, e in zip(mean, error, strict=True)]])
    title = (
        f"Paired against {base} (same seeds): mean over seeds of the difference in space-averaged "
        "fraction of optimum (standard error):\n"
    )
    return title + format_table(["strategy", *[f"diff@{b}" for b in budgets]], rows)


def header_for(budgets: list[int]) -> list[str]:
    return [
        "strategy",
        *[f"frac@{b}" for b in budgets],
        f"fail%@{budgets[-1]}",
        f"score@{budgets[-1]}",
        "ms/suggest",
    ]


def random_check(
    cells: dict[tuple[str, str], Cell], spaces: dict[str, SpaceInfo], budgets: list[int]
) -> tuple[list[list[str]], bool, float]:
    """Our 'random' vs Kernel Tuner's 'random_sample': two-sided Mann-Whitney U test per space and budget.

    A rank test, because the fraction of the optimum is bounded and skewed
    (a z test on 20 seeds is not reliable there). The significance level is
    Bonferroni-corrected over every comparison (family-wise 5%). The exact
    expectation for uniform sampling without replacement is printed for
    reference.
    """
    from scipy.stats import mannwhitneyu

    pairs: list[tuple[str, Cell, Cell]] = []
    for space in spaces:
        ours, theirs = cells.get((space, "random")), cells.get((space, KT_PREFIX + "random_sample"))
        if ours is not None and theirs is not None:
            pairs.append((space, ours, theirs))
    alpha = 0.05 / max(1, len(pairs) * len(budgets))
    rows, ok = [], True
    for space, ours, theirs in pairs:
        info = spaces[space]
        cells_row, lowest = [], 1.0
        for j, budget in enumerate(budgets):
            a, b = ours.fraction[:, j], theirs.fraction[:, j]
            p = 1.0 if np.array_equal(np.sort(a), np.sort(b)) else float(mannwhitneyu(a, b).pvalue)
            lowest = min(lowest, p)
            exact = float(info.expected_fraction[budget - 1])
            cells_row.append(f"{np.mean(a):.3f}/{np.mean(b):.3f}/{exact:.3f} p={p:.2f}")
        verdict = "ok" if lowest >= alpha else "DIFFERENT"
        ok &= verdict == "ok"
        rows.append([space, *cells_row, f"{lowest:.3f}", verdict])
    return rows, ok, alpha


def plot(
    path: Path, cells: dict[tuple[str, str], Cell], spaces: list[str], strategies: list[str], top: int
) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [*spaces, "average over spaces"]
    cols = 4
    rows = math.ceil(len(panels) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.2 * rows), squeeze=False)
    x = np.arange(1, top + 1)
    for ax, panel in zip(axes.flat, panels, strict=False):
        for strategy in strategies:
            if panel == "average over spaces":
                curves = [cells[(s, strategy)].curve for s in spaces if (s, strategy) in cells]
                if not curves:
                    continue
                y = np.mean(curves, axis=0)
            elif (panel, strategy) in cells:
                y = cells[(panel, strategy)].curve
            else:
                continue
            style = "--" if strategy.startswith(KT_PREFIX) else "-"
            ax.plot(x, y, style, label=strategy, linewidth=1.2)
        ax.set_title(panel, fontsize=9)
        ax.set_xscale("log")
        ax.set_ylim(0.4, 1.01)
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(panels) :]:
        ax.axis("off")
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower right", fontsize=8, ncol=2)
    fig.supxlabel("evaluations")
    fig.supylabel("fraction of optimum (mean over seeds)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# -- main ----------------------------------------------------------------------------------
def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks strategy",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawTextHelpFormatter,
    )
    parser.add_argument(
        "--strategies", nargs="+", default=None, help="specs: name or name:key=value,key=value"
    )
    parser.add_argument(
        "--spaces", nargs="+", default=None, help="dataset file names or short names (default: all)"
    )
    parser.add_argument("--seeds", type=int, default=None, help="number of seeds, default 20")
    parser.add_argument(
        "--first-seed", type=int, default=0, help="seeds run from here (default 0): a fresh sample of seeds"
    )
    parser.add_argument("--budgets", nargs="+", type=int, default=None, help="default 20 50 100 220")
    parser.add_argument("--jobs", type=int, default=2, help="worker processes (default 2)")
    parser.add_argument(
        "--kt", action=argparse.BooleanOptionalAction, default=True, help="run Kernel Tuner too"
    )
    parser.add_argument("--kt-strategies", nargs="+", default=None, help="Kernel Tuner strategies to run")
    parser.add_argument(
        "--quick", action="store_true", help="smoke run: 2 small spaces, 3 seeds, budgets 20 50"
    )
    parser.add_argument("--datasets", type=Path, default=DATASETS)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--no-plot", action="store_true")
    parser.add_argument(
        "--fresh", action="store_true", help="ignore our cached runs (Kernel Tuner's stay cached)"
    )
    args = parser.parse_args(argv)
    quick = args.quick
    args.strategies = args.strategies or (["random", "anneal"] if quick else DEFAULT_STRATEGIES)
    args.seeds = args.seeds or (3 if quick else 20)
    args.budgets = sorted(args.budgets or ([20, 50] if quick else [20, 50, 100, 220]))
    if any(b < 1 for b in args.budgets):
        parser.error("--budgets must be positive")
    if args.first_seed < 0:
        parser.error("--first-seed must be >= 0")
    for spec in args.strategies:
        try:
            parse_strategy_spec(spec)
        except ValueError as exc:
            parser.error(str(exc))
    return args


def select_spaces(
    listing: list[dict[str, Any]], wanted: list[str] | None, quick: bool
) -> list[dict[str, Any]]:
    if wanted is None:
        return [i for i in listing if i["file"] in QUICK_SPACES] if quick else listing
    by_name = {i["file"]: i for i in listing} | {short_name(i["file"]): i for i in listing}
    unknown = [w for w in wanted if w not in by_name]
    if unknown:
        raise SystemExit(
            f"unknown space(s) {unknown}; known: {', '.join(short_name(i['file']) for i in listing)}"
        )
    return [by_name[w] for w in wanted]


def kernel_tuner_strategies(args: argparse.Namespace, listing: list[dict[str, Any]]) -> tuple[list[str], str]:
    """Kernel Tuner's strategies to run (none without ``--kt`` or Kernel Tuner) and a line saying which.

    Writes the plain caches its simulation mode reads, once per space.
    """
    if not args.kt:
        return [], "Kernel Tuner: not run (--no-kt)"
    from benchmarks.strategy.kt import available_kt_strategies, kt_version, plain_cache

    if kt_version() is None:
        return [], "Kernel Tuner: not installed (pip install -e '.[bench]')"
    present = available_kt_strategies()
    wanted = args.kt_strategies or (["random_sample"] if args.quick else present)
    kt_strategies = [s for s in wanted if s in present]
    for item in listing:
        plain_cache(args.datasets, item["file"], args.out / "kt_cache")
    return kt_strategies, f"Kernel Tuner {kt_version()} (simulation mode): {', '.join(kt_strategies)}"


def describe_spaces(listing: list[dict[str, Any]], datasets: str, top: int) -> dict[str, SpaceInfo]:
    """Size, optimum, worst value, failing share and random search's expectations of every space."""
    spaces: dict[str, SpaceInfo] = {}
    for item in listing:
        target = replay(datasets, item["file"])
        values = target.values
        feasible = values[np.isfinite(values)]
        spaces[short_name(item["file"])] = SpaceInfo(
            short_name(item["file"]),
            target.space.size,
            target.optimum,
            float(feasible.max()),
            float(np.mean(~np.isfinite(values))),
            expected_best_of_random(values, top),
            expected_fraction_of_random(values, target.optimum, top),
        )
    return spaces


def make_tasks(
    args: argparse.Namespace, listing: list[dict[str, Any]], kt_strategies: list[str]
) -> list[Task]:
    """One run per (space, strategy, seed) at the largest budget: ours first, then Kernel Tuner's."""
    code = "fresh-" + str(time.time_ns()) if args.fresh else code_version()
    seeds = range(args.first_seed, args.first_seed + args.seeds)
    top = max(args.budgets)
    datasets, out = str(args.datasets), str(args.out)
    return [
        Task("ours", datasets, item, spec, seed, top, out, code)
        for item in listing
        for spec in args.strategies
        for seed in seeds
    ] + [
        Task("kt", datasets, item, strategy, seed, top, out, code)
        for item in listing
        for strategy in kt_strategies
        for seed in seeds
    ]


def print_intro(args: argparse.Namespace, spaces: int, kt_note: str) -> None:
    """What was run and how to read the tables."""
    top = max(args.budgets)
    print()
    print(f"Strategy bench: {spaces} replayed GPU spaces, {args.seeds} seeds, budgets {args.budgets}")
    print(f"{kt_note}")
    print(
        f"One run per (space, strategy, seed) at {top} evaluations; smaller budgets are prefixes of "
        "its trajectory"
    )
    print(
        "(exact for ours, which never see the budget; Kernel Tuner's simulated_annealing scales its schedule"
    )
    print(f"to max_fevals={top}, so its rows below {top} are prefixes of that run).")
    print("frac = optimum / best found (mean±std over seeds); fail% = share of evaluations on failing")
    print(
        "configurations; score = Willemsen et al. methodology score over the window 1..B "
        "(0 = random, 1 = optimal);\nms/suggest = milliseconds per suggestion "
        "(Kernel Tuner: its own strategy_time per evaluation)."
    )


def print_averages(
    cells: dict[tuple[str, str], Cell], names: list[str], strategies: list[str], args: argparse.Namespace
) -> None:
    """Every strategy averaged over the spaces, then ours paired by seed against the first."""
    print()
    print("Averaged over spaces (std over seeds of the per-seed average):")
    rows = []
    for strategy in strategies:
        if not any((s, strategy) in cells for s in names):
            continue
        rows.append(
            row_for(
                strategy,
                space_average(cells, names, strategy, "fraction"),
                space_average(cells, names, strategy, "failures"),
                space_average(cells, names, strategy, "score"),
                float(np.mean([cells[(s, strategy)].suggest_s for s in names if (s, strategy) in cells])),
            )
        )
    print(format_table(header_for(args.budgets), rows))
    if len(args.strategies) > 1:
        print()
        print(paired_table(cells, names, args.strategies, args.budgets))


def print_failing_shares(
    cells: dict[tuple[str, str], Cell], spaces: dict[str, SpaceInfo], strategies: list[str], top: int
) -> None:
    """Each strategy's share of failing evaluations on the spaces that have failing configurations."""
    failing = [s for s in spaces if spaces[s].failed_share > 0]
    if not failing:
        return
    print()
    print(f"Share of failing evaluations at {top} on the spaces with failures ({', '.join(failing)}):")
    rows = []
    for strategy in strategies:
        shares = [
            100 * np.mean(cells[(s, strategy)].failures[:, -1]) for s in failing if (s, strategy) in cells
        ]
        if shares:
            rows.append([strategy, *[f"{v:.1f}" for v in shares], f"{np.mean(shares):.1f}"])
    print(format_table(["strategy", *failing, "mean"], rows))


def print_per_space(
    cells: dict[tuple[str, str], Cell],
    spaces: dict[str, SpaceInfo],
    strategies: list[str],
    budgets: list[int],
) -> None:
    """One table per space."""
    for space, info in spaces.items():
        print()
        print(
            f"{space}: {info.size} configurations, {100 * info.failed_share:.1f}% failing, "
            f"optimum {info.optimum:.5g}"
        )
        rows = [
            row_for(s, c.fraction, c.failures, c.score, c.suggest_s)
            for s in strategies
            if (c := cells.get((space, s))) is not None
        ]
        print(format_table(header_for(budgets), rows))


def check_random_matches_kt(
    cells: dict[tuple[str, str], Cell], spaces: dict[str, SpaceInfo], args: argparse.Namespace
) -> dict[str, Any]:
    """Check 1 (printed): our ``random`` is Kernel Tuner's ``random_sample`` on every space."""
    rows, ok, alpha = random_check(cells, spaces, args.budgets)
    print()
    print(
        "Check 1: mean fraction of optimum of our random / Kernel Tuner's random_sample / the exact "
        "expectation\nfor uniform sampling without replacement, and the p-value of a two-sided "
        "Mann-Whitney U test (ours vs Kernel Tuner):"
    )
    header = ["space", *[f"@{b}" for b in args.budgets], "min p", "verdict"]
    print(format_table(header, rows))
    _smoke_note(args.seeds)
    print(
        f"=> {'PASS' if ok else 'FAIL'}: {'no' if ok else 'some'} space differs beyond noise "
        f"(p >= {alpha:.4f}: 5% Bonferroni-corrected over {len(rows) * len(args.budgets)} tests)"
    )
    return {"pass": ok, "alpha": alpha}


def check_best_classic(
    cells: dict[tuple[str, str], Cell],
    names: list[str],
    ours_classic: list[str],
    kt_classic: list[str],
    args: argparse.Namespace,
) -> dict[str, Any]:
    """Check 2 (printed): our best classic strategy is at least as good as Kernel Tuner's best one."""

    def at_top(strategy: str) -> float:
        return float(np.mean(space_average(cells, names, strategy, "fraction")[:, -1]))

    best_ours = max(ours_classic, key=at_top)
    best_kt = max(kt_classic, key=at_top)
    ok = at_top(best_ours) >= at_top(best_kt)
    print()
    print(
        f"Check 2: best classic at {max(args.budgets)} evaluations, mean over spaces: "
        f"ours {best_ours} {at_top(best_ours):.4f} "
        f"vs Kernel Tuner {best_kt} {at_top(best_kt):.4f} => {'PASS' if ok else 'FAIL'}"
    )
    _smoke_note(args.seeds)
    return {
        "ours": best_ours,
        "ours_fraction": at_top(best_ours),
        "kt": best_kt,
        "kt_fraction": at_top(best_kt),
        "pass": ok,
    }


def _smoke_note(seeds: int) -> None:
    if seeds < MIN_SEEDS_FOR_CHECKS:
        print(f"   (only {seeds} seeds: a smoke run, the verdict needs >= {MIN_SEEDS_FOR_CHECKS})")


def run_checks(
    cells: dict[tuple[str, str], Cell],
    spaces: dict[str, SpaceInfo],
    kt_strategies: list[str],
    args: argparse.Namespace,
) -> dict[str, Any]:
    """The checks that the strategies and Kernel Tuner's allow, printed; their results by name."""
    checks: dict[str, Any] = {}
    if "random" in args.strategies and "random_sample" in kt_strategies:
        checks["random_matches_kt"] = check_random_matches_kt(cells, spaces, args)
    ours_classic = [s for s in args.strategies if parse_strategy_spec(s)[0] in CLASSIC]
    kt_classic = [KT_PREFIX + s for s in kt_strategies if s != "bayes_opt"]
    if ours_classic and kt_classic:
        checks["best_classic"] = check_best_classic(cells, list(spaces), ours_classic, kt_classic, args)
    return checks


def json_report(
    args: argparse.Namespace,
    strategies: list[str],
    kt_note: str,
    timing: dict[str, Any],
    checks: dict[str, Any],
    spaces: dict[str, SpaceInfo],
    cells: dict[tuple[str, str], Cell],
) -> dict[str, Any]:
    """The document written to ``strategy_bench.json`` (read by ``bo_quality``)."""
    return {
        "budgets": args.budgets,
        "seeds": args.seeds,
        "first_seed": args.first_seed,
        "strategies": strategies,
        "kernel_tuner": kt_note,
        **timing,
        "checks": checks,
        "spaces": {
            s: {"size": i.size, "optimum": i.optimum, "failed_share": i.failed_share}
            for s, i in spaces.items()
        },
        "results": {
            f"{space}|{strategy}": {
                "fraction_mean": c.fraction.mean(axis=0).tolist(),
                "fraction_std": c.fraction.std(axis=0).tolist(),
                "failures_mean": c.failures.mean(axis=0).tolist(),
                "score_mean": c.score.mean(axis=0).tolist(),
                "suggest_s": c.suggest_s,
                "fraction_per_seed": c.fraction.tolist(),
                "curve": c.curve.tolist(),
            }
            for (space, strategy), c in sorted(cells.items())
        },
    }


NAME = "strategy"  # python -m benchmarks strategy
QUESTION = "How close to the optimum does each strategy get within a budget, ours and Kernel Tuner's?"


def main(argv: Sequence[str] | None = None) -> int:
    """Run every (space, strategy, seed), print the tables and checks, write the JSON and the plot."""
    args = parse_args(argv)
    started = time.perf_counter()
    load_before = os.getloadavg()
    listing = select_spaces(load_listing(args.datasets), args.spaces, args.quick)
    args.out.mkdir(parents=True, exist_ok=True)
    top = max(args.budgets)
    kt_strategies, kt_note = kernel_tuner_strategies(args, listing)
    spaces = describe_spaces(listing, str(args.datasets), top)
    tasks = make_tasks(args, listing, kt_strategies)
    print(
        f"strategy bench: {len(listing)} spaces x ({len(args.strategies)} ours + {len(kt_strategies)} "
        "Kernel Tuner) "
        f"strategies x {args.seeds} seeds = {len(tasks)} runs of {top} evaluations, {args.jobs} jobs",
        file=sys.stderr,
    )
    records = run_all(tasks, args.jobs)

    names = list(spaces)
    strategies = [*args.strategies, *(KT_PREFIX + s for s in kt_strategies)]
    cells = analyse(records, spaces, args.budgets)
    elapsed = time.perf_counter() - started
    load_after = os.getloadavg()

    print_intro(args, len(names), kt_note)
    print_averages(cells, names, strategies, args)
    print_failing_shares(cells, spaces, strategies, top)
    print_per_space(cells, spaces, strategies, args.budgets)
    checks = run_checks(cells, spaces, kt_strategies, args)
    print()
    print(
        f"Ran in {elapsed:.0f} s with {args.jobs} jobs; load average {load_before[0]:.1f} at start, "
        f"{load_after[0]:.1f} at end ({os.cpu_count()} CPUs)."
    )

    timing = {"elapsed_s": elapsed, "load_average": [load_before[0], load_after[0]]}
    json_path = args.out / "strategy_bench.json"
    report = json_report(args, strategies, kt_note, timing, checks, spaces, cells)
    json_path.write_text(json.dumps(report, indent=1))
    print(f"Wrote {json_path}")
    if not args.no_plot:
        png = args.out / "strategy_bench.png"
        plot(png, cells, names, strategies, top)
        print(f"Wrote {png}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
