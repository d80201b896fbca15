"""Transfer benchmark: how much another device's tuning history speeds up tuning a new one.

    python -m benchmarks transfer --datasets DIR --targets FILE... --seeds N --budgets 20 50 --json OUT
    python -m benchmarks transfer --seeds 3                 # every target of the replay data
    python -m benchmarks transfer --pocl --seeds 10         # the example kernels on PoCL machines
    python -m benchmarks transfer --transfer bo bo:transfer=design --seeds 3   # compare variants

Leave one device out: each target (a file of ``DIR/spaces.json``; default: every space whose
``kernel`` has another device) is tuned with, as sources, the histories of all other spaces of
``spaces.json`` with the same ``kernel``. A source is what the store would hold: the history kept
from one seeded ``bo`` run of ``--source-evaluations`` (100) on the source device, its best
``--keep`` (64) measured trials relative to its best plus its failures (``transfer_sources``;
cached under ``benchmarks/out/transfer_bench/``). Each target and seed is tuned once with plain
``bo`` (``--baseline``) and once with each ``--transfer`` spec given the sources; smaller budgets
are prefixes of one run. The table gives, per target, the mean fraction of the optimum (optimum /
best found) at each budget, and the paired difference to the baseline at the largest budget
with its standard error. ``--json OUT`` writes ``{"<target file>": {"bo": {"20": f, "50": f},
"transfer": {"20": f, "50": f}}}`` ("transfer": the first ``--transfer`` spec; others are
added under their spec).

``--pocl``: the example kernels measured on several PoCL machines (``benchmarks/data/pocl-*``)
instead. Each clean machine's measurements of a kernel are a target (``pocl-xeon`` is polluted,
see ``benchmarks/data/README.md``: only a source), with the other machines' histories of that
kernel as sources. The landscapes are noisy, so a run is judged against the exhaustive best's
noise band, not 0.95 of it: a tuned configuration is a hit when its recorded time is at most the
upper quartile of the best configuration's own trial times. The table gives the share of runs that
hit within the largest budget (20 evaluations) and the median evaluations to the first hit.

Targets (replay): mean fraction over the targets >= 0.95 at 20 evaluations and >= 0.98 at 50; no
target more than 0.02 below the baseline at 50. PoCL: every clean target hit in <= 20 evaluations.
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):  # run by path: make the repository root importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import argparse
import hashlib
import json
import math
import os
import statistics
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

from benchmarks.common import DATASETS, OUT, format_table, load_listing
from benchmarks.transfer.sources import Problem, load_problem, source_for
from pytest_autotune.strategies import parse_strategy_spec
from pytest_autotune.tuning.abort import Evaluations
from pytest_autotune.tuning.tuner import Tuner

RUNS = OUT / "transfer_bench" / "runs"
#: Modules that only transfer uses: a change there does not re-run the baseline.
TRANSFER_ONLY = ("strategies/bo/transfer", "strategies/sources.py")
#: Machines whose measurements are only sources (see benchmarks/data/README.md).
POLLUTED = ("pocl-xeon",)
POCL_KERNELS = ("saxpy", "reduction", "transpose", "conv2d", "gemm")


@dataclass(frozen=True)
class Task:
    """One tuning run: ``spec`` on ``target``, with ``sources`` unless it is the baseline."""

    target: Problem
    sources: tuple[Problem, ...]
    spec: str
    seed: int
    budget: int
    source_seed: int
    source_evaluations: int
    keep: int
    code: str
    column: int  # 0: the baseline, then the --transfer specs in order


def code_version(*, baseline: bool) -> str:
    """Hash of the package's sources (for the baseline: without the transfer-only modules)."""
    import pytest_autotune

    digest = hashlib.sha256()
    root = Path(pytest_autotune.__file__).parent
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root).as_posix()
        if baseline and relative.startswith(TRANSFER_ONLY):
            continue
        digest.update(relative.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def _limit_threads() -> None:
    from threadpoolctl import threadpool_limits  # type: ignore[import-untyped]

    threadpool_limits(1)
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(1)


def _run_path(task: Task) -> Path:
    safe = task.spec.replace(":", "__").replace(",", "_").replace("=", "-").replace("+", "-")
    sources = "none" if not task.sources else f"s{task.source_seed}n{task.source_evaluations}k{task.keep}"
    name = f"{safe}__{sources}__seed{task.seed}__b{task.budget}.json"
    return RUNS / task.code / task.target.label.replace("/", "__") / name


def run_task(task: Task) -> dict[str, Any]:
    """Values of each evaluation (None for failures) and mean seconds per suggestion (cached)."""
    path = _run_path(task)
    if path.exists():
        record: dict[str, Any] = json.loads(path.read_text())
        return record
    _limit_threads()
    target = load_problem(task.target)
    sources = [
        source_for(p, seed=task.source_seed, evaluations=task.source_evaluations, keep=task.keep)
        for p in task.sources
    ]
    name, options = parse_strategy_spec(task.spec)
    tuner = Tuner(
        target.space,
        name,
        abort=Evaluations(task.budget),
        seed=task.seed,
        strategy_options=options,
        sources=sources,
    )
    history = tuner.run(target.objective).history
    record = {
        "values": [r.outcome.value for r in history],
        "suggest_s": statistics.fmean(r.suggest_seconds for r in history),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record))
    return record


def _make_source(args: tuple[Problem, int, int, int, bool]) -> str:
    problem, seed, evaluations, keep, fresh = args
    _limit_threads()
    source_for(problem, seed=seed, evaluations=evaluations, keep=keep, fresh=fresh)
    return problem.label


def replay_targets(datasets: Path, wanted: Sequence[str] | None) -> list[tuple[Problem, tuple[Problem, ...]]]:
    """Each target with its sources: the other spaces of ``spaces.json`` with the same kernel."""
    listing = load_listing(datasets)
    by_kernel: dict[str, list[str]] = {}
    for item in listing:
        by_kernel.setdefault(str(item.get("kernel")), []).append(str(item["file"]))
    files = {str(item["file"]): str(item.get("kernel")) for item in listing}
    if wanted is None:
        wanted = [f for f, kernel in files.items() if len(by_kernel[kernel]) > 1]
    chosen = []
    for name in wanted:
        file_name = Path(name).name
        if file_name not in files:
            raise SystemExit(
                f"--targets: {name!r} is not in {datasets / 'spaces.json'}; known: {', '.join(files)}"
            )
        others = [f for f in by_kernel[files[file_name]] if f != file_name]
        if not others:
            raise SystemExit(f"--targets: {file_name!r} has no other space with kernel {files[file_name]!r}")
        where = str(datasets)
        chosen.append(
            (Problem("replay", where, file_name), tuple(Problem("replay", where, f) for f in others))
        )
    return chosen


def pocl_targets() -> list[tuple[Problem, tuple[Problem, ...]]]:
    """Each clean machine's measurement of a kernel, with the other machines' as sources."""
    from benchmarks.kernels.cases import DATA

    chosen = []
    for kernel in POCL_KERNELS:
        machines = sorted(p.parent.name for p in DATA.glob(f"pocl-*/kernels_{kernel}.json"))
        for machine in machines:
            others = [m for m in machines if m != machine]
            if machine not in POLLUTED and others:
                chosen.append(
                    (Problem("pocl", machine, kernel), tuple(Problem("pocl", m, kernel) for m in others))
                )
    return chosen


def noise_band(problem: Problem) -> float:
    """The upper quartile of the exhaustive best's trial times (a recorded time at most this is a hit)."""
    from benchmarks.kernels.bench import trial_minima
    from benchmarks.kernels.cases import case_by_name

    case = case_by_name(problem.name)
    target = load_problem(problem)
    data = json.loads(case.cache_path(problem.where).read_text())
    best = target.optimum_config
    entry = data["cache"][",".join(str(best[n]) for n in data["tune_params_keys"])]
    return float(np.percentile(trial_minima(entry["times"], case.repeat), 75))


def best_prefix(values: Sequence[float | None], budget: int) -> float:
    """Best value among the first ``budget`` evaluations (inf when none was measured)."""
    measured = [v for v in values[:budget] if v is not None]
    return min(measured) if measured else math.inf


def _fmt(mean: float, se: float | None = None) -> str:
    return f"{mean:.3f}" if se is None else f"{mean:+.3f} ({se:.3f})"


def _paired(base: Sequence[float], other: Sequence[float]) -> tuple[float, float]:
    diffs = [o - b for b, o in zip(base, other, strict=True)]
    se = statistics.stdev(diffs) / math.sqrt(len(diffs)) if len(diffs) > 1 else 0.0
    return statistics.fmean(diffs), se


def fractions(
    target: Problem, runs: Sequence[dict[str, Any]], budgets: Sequence[int]
) -> dict[int, list[float]]:
    """Fraction of the optimum at each budget, per run."""
    optimum = load_problem(target).optimum
    return {b: [optimum / best_prefix(r["values"], b) for r in runs] for b in budgets}


def report_replay(
    results: dict[Problem, list[list[dict[str, Any]]]],
    sources: dict[Problem, tuple[Problem, ...]],
    specs: Sequence[str],
    budgets: Sequence[int],
) -> tuple[dict[str, Any], list[str]]:
    """Print the replay table; return the JSON document and the targets missed."""
    baseline, last = specs[0], budgets[-1]
    header = [
        "target",
        "sources",
        "strategy",
        *(f"frac@{b}" for b in budgets),
        f"vs {baseline}@{last} (se)",
        "s/suggest",
    ]
    rows: list[list[str]] = []
    document: dict[str, Any] = {}
    means: list[dict[int, list[float]]] = [{b: [] for b in budgets} for _ in specs]
    worst = [math.inf for _ in specs]
    for target, by_spec in results.items():
        base = fractions(target, by_spec[0], budgets)
        entry: dict[str, Any] = {}
        for i, spec in enumerate(specs):
            runs = by_spec[i]
            frac = fractions(target, runs, budgets)
            key = "bo" if i == 0 else ("transfer" if i == 1 else spec)
            entry[key] = {str(b): statistics.fmean(frac[b]) for b in budgets}
            for b in budgets:
                means[i][b].append(statistics.fmean(frac[b]))
            diff, se = _paired(base[last], frac[last])
            worst[i] = min(worst[i], diff)
            names = ", ".join(p.label.split("__", 1)[-1] for p in sources[target]) if i == 0 else ""
            rows.append(
                [
                    target.label if i == 0 else "",
                    names,
                    spec if i == 0 else f"{spec} + sources",
                    *(_fmt(statistics.fmean(frac[b])) for b in budgets),
                    "" if i == 0 else _fmt(diff, se),
                    f"{statistics.fmean(r['suggest_s'] for r in runs):.3f}",
                ]
            )
        document[target.name] = entry
    for i, spec in enumerate(specs):
        rows.append(
            [
                "mean" if i == 0 else "",
                "",
                spec if i == 0 else f"{spec} + sources",
                *(_fmt(statistics.fmean(means[i][b])) for b in budgets),
                "" if i == 0 else f"worst {worst[i]:+.3f}",
                "",
            ]
        )
    print(format_table(header, rows, align="lll" + "r" * (len(budgets) + 2)))
    missed: list[str] = []
    if len(specs) > 1:
        goals = {20: 0.95, 50: 0.98}
        for b, goal in goals.items():
            if b in budgets and statistics.fmean(means[1][b]) < goal:
                missed.append(f"mean fraction at {b} = {statistics.fmean(means[1][b]):.3f} < {goal}")
        if worst[1] < -0.02:
            missed.append(f"a target is {-worst[1]:.3f} below {baseline} at {last} (allowed 0.02)")
    return document, missed


def report_pocl(
    results: dict[Problem, list[list[dict[str, Any]]]],
    sources: dict[Problem, tuple[Problem, ...]],
    specs: Sequence[str],
    budgets: Sequence[int],
) -> tuple[dict[str, Any], list[str]]:
    """Print the PoCL table (hits of the best's noise band); return the JSON document and misses."""
    last = budgets[-1]  # the runs' length: a hit counts within it
    header = [
        "kernel",
        "target",
        "sources",
        "band",
        "in band",
        "strategy",
        f"hit@{last}",
        *(f"frac@{b}" for b in budgets),
        "evals to hit",
    ]
    rows: list[list[str]] = []
    document: dict[str, Any] = {}
    missed: list[str] = []
    for target, by_spec in results.items():
        replayed = load_problem(target)
        band = noise_band(target)
        entry: dict[str, Any] = {"band_ms": band, "optimum_ms": replayed.optimum}
        for i, spec in enumerate(specs):
            runs = by_spec[i]
            frac = fractions(target, runs, budgets)
            hits = [
                next(
                    (k + 1 for k in range(len(r["values"])) if best_prefix(r["values"], k + 1) <= band), None
                )
                for r in runs
            ]
            hit_share = sum(h is not None and h <= last for h in hits) / len(hits)
            found = [h for h in hits if h is not None]
            key = "bo" if i == 0 else ("transfer" if i == 1 else spec)
            entry[key] = {str(b): statistics.fmean(frac[b]) for b in budgets} | {f"hit@{last}": hit_share}
            rows.append(
                [
                    target.name if i == 0 else "",
                    target.where if i == 0 else "",
                    ", ".join(p.where for p in sources[target]) if i == 0 else "",
                    f"{band / replayed.optimum:.3f}" if i == 0 else "",
                    str(int((replayed.values <= band).sum())) if i == 0 else "",
                    spec if i == 0 else f"{spec} + sources",
                    f"{hit_share:.2f}",
                    *(_fmt(statistics.fmean(frac[b])) for b in budgets),
                    f"{statistics.median(found):.0f} ({len(found)}/{len(hits)})" if found else "-",
                ]
            )
            if i == 1 and hit_share < 1.0:
                missed.append(f"{target.label}: {hit_share:.2f} of the runs in the noise band by {last}")
        document[target.label] = entry
    print(format_table(header, rows, align="lllrrl" + "r" * (len(budgets) + 2)))
    print(
        "\nband: upper quartile of the exhaustive best's trial times over the best's recorded time; in band: "
        "configurations whose recorded time is within it;\nhit@N: share of runs whose best within N "
        "evaluations is in the band; evals to hit: median over the runs that hit within their budget."
    )
    return document, missed


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks transfer",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--datasets", type=Path, default=DATASETS, help="folder holding spaces.json")
    parser.add_argument(
        "--targets", nargs="+", default=None, help="target files (default: all with a sibling)"
    )
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--budgets", nargs="+", type=int, default=[20, 50])
    parser.add_argument("--json", type=Path, default=None, help="write the fractions here")
    parser.add_argument(
        "--pocl", action="store_true", help="the example kernels on the PoCL machines instead"
    )
    parser.add_argument("--baseline", default="bo", help="strategy spec run without sources")
    parser.add_argument(
        "--transfer",
        nargs="*",
        default=["bo"],
        help="strategy specs run with the sources (none: baseline only)",
    )
    parser.add_argument("--source-seed", type=int, default=0, help="seed of the source runs")
    parser.add_argument("--source-evaluations", type=int, default=100)
    parser.add_argument("--keep", type=int, default=64, help="measured trials a history keeps")
    parser.add_argument("--fresh-sources", action="store_true", help="remake the cached source runs")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument(
        "--reuse-baseline",
        metavar="KEY",
        default=None,
        help="cache key of earlier baseline runs to reuse instead of the code's hash (after checking that "
        "the code change leaves plain bo's trajectories alone: strategy_bench --quick before and after)",
    )
    args = parser.parse_args(argv)
    if args.seeds < 1 or any(b < 1 for b in args.budgets):
        parser.error("--seeds and --budgets must be positive")
    args.budgets = sorted(set(args.budgets))
    for spec in [args.baseline, *args.transfer]:
        try:
            parse_strategy_spec(spec)
        except ValueError as exc:
            parser.error(str(exc))
    return args


NAME = "transfer"  # python -m benchmarks transfer
QUESTION = "How much does another device's history speed up tuning a new one?"


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    started = time.perf_counter()
    if args.pocl:
        targets = [t for t in pocl_targets() if args.targets is None or t[0].label in args.targets]
        if not targets:
            raise SystemExit(
                f"--targets: none of {args.targets} is a PoCL target ({pocl_targets()[0][0].label}, ...)"
            )
    else:
        targets = replay_targets(args.datasets.resolve(), args.targets)
    sources = dict(targets)
    load = os.getloadavg()
    print(
        f"Transfer benchmark ({'PoCL example kernels' if args.pocl else args.datasets}): {len(targets)} "
        f"targets x {args.seeds} seeds, budgets {args.budgets}; sources: one bo run of "
        f"{args.source_evaluations} evaluations (seed {args.source_seed}), best {args.keep} kept "
        "+ failures;\n"
        f"load average {load[0]:.1f}/{load[1]:.1f}/{load[2]:.1f} on {os.cpu_count()} CPUs"
    )
    needed = sorted({p for _, ps in targets for p in ps}, key=lambda p: p.label)
    jobs = [(p, args.source_seed, args.source_evaluations, args.keep, args.fresh_sources) for p in needed]
    specs = [args.baseline, *args.transfer]
    codes = {True: code_version(baseline=True), False: code_version(baseline=False)}
    if args.reuse_baseline:
        codes[True] = args.reuse_baseline
    print(f"runs cached under {RUNS}/{{{codes[True]},{codes[False]}}}")
    tasks = [
        Task(
            target,
            () if i == 0 else target_sources,
            spec,
            seed,
            max(args.budgets),
            args.source_seed,
            args.source_evaluations,
            args.keep,
            codes[i == 0],
            i,
        )
        for target, target_sources in targets
        for i, spec in enumerate(specs)
        for seed in range(args.first_seed, args.first_seed + args.seeds)
    ]
    with ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for label in pool.map(_make_source, jobs):
            print(f"  source {label} ready ({time.perf_counter() - started:.0f} s)", file=sys.stderr)
        records = list(pool.map(run_task, tasks, chunksize=1))
    results: dict[Problem, list[list[dict[str, Any]]]] = {t: [[] for _ in specs] for t, _ in targets}
    for task, record in zip(tasks, records, strict=True):
        results[task.target][task.column].append(record)
    report = report_pocl if args.pocl else report_replay
    document, missed = report(results, sources, specs, args.budgets)
    if args.targets and not args.pocl:  # key the JSON by the target names as given
        given = {Path(name).name: name for name in args.targets}
        document = {given.get(key, key): value for key, value in document.items()}
    print("\nTargets: " + ("met" if not missed else "NOT met"))
    for line in missed:
        print(f"  - {line}")
    load = os.getloadavg()
    print(f"(ran {time.perf_counter() - started:.0f} s; load average {load[0]:.1f} at the end)")
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(document, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
