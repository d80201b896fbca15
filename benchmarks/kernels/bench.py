"""Tuning the example OpenCL kernels: quality within 50 evaluations and speedup over each default.

    python -m benchmarks kernels            # replay every machine's data: 5 seeds, 50 evaluations
    python -m benchmarks kernels --machines pocl-xeon   # one machine's landscapes only
    python -m benchmarks kernels --quick    # smoke run: 2 seeds, 20 evaluations
    python -m benchmarks kernels --seeds 20 --first-seed 20   # a second, independent sample
    python -m benchmarks kernels --live --machines pocl-xeon   # tune for real on this device

For each kernel of ``example_kernels/`` the table gives the size of the declared (constrained) space,
the sub-space measured exhaustively (``benchmarks/kernels/cases.py`` documents it; the full space
where small enough), its best time and the kernel's default time; then, per strategy, the fraction
of that best reached within the budget (best time / tuned time: 1.0 = the optimum) over the seeds,
the speedup of the tuned configuration over the default, and the wall time of tuning. With a
needle of one or two configurations, five seeds decide little: the fraction's standard error over the
seeds (``se``) and how many runs reached the target (``hit``) say how far a mean can be trusted.

Tuning replays the exhaustive measurements in ``benchmarks/data/<machine>/kernels_<name>.json``
(Kernel Tuner cache format; fill them with ``benchmarks/kernels/measure.py``), one table per machine
(the landscapes differ: the best configuration of one CPU is not another's); each file's header
records its device and the sub-space it covers. Each evaluation returns the recorded
outcome of the configuration, so every strategy and seed sees the same landscape. A configuration's
time is by default the median over its trials of each trial's fastest run (see
:func:`with_statistic`; ``--statistic min|median`` over all runs instead): the machine is shared,
and the fastest run is the one least disturbed by other processes. The configurations are measured
in random order (a burst of load then slows scattered configurations, not a region of the space),
and the 100 fastest of each kernel (and its default) are measured ten times more in interleaved
rounds (``kernels_measure.py --refine 100 --rounds 10``), so that the optimum and its rivals rest on
eleven trials, not a lucky one (with fewer rounds the recorded optimum of a memory-bound kernel was
a needle of luck that no tuner could be expected to find; ``benchmarks/data/README.md`` records
how each machine's files were measured). Two columns say how hard the target
is: ``near`` counts the configurations within 0.95 of the best (1 or 2: the target means finding
that needle), ``noise`` is the median relative range of
the re-measured configurations' trial minima (when it exceeds 5%, configurations within 0.95 of the
best cannot be told apart from it by one measurement). The wall time
of tuning is simulated as what the evaluated trials took when measured (builds, runs, checks) plus
the strategy's own time per suggestion. ``--live`` tunes on the device instead (real wall time) and
scores the configuration it picks by its recorded time.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.common import format_table
from benchmarks.kernels.cases import CASES, DATA, KernelCase, case_by_name
from pytest_autotune.replay import Replay
from pytest_autotune.strategies import parse_strategy_spec
from pytest_autotune.tuning.tuner import Tuner

FRACTION_TARGET = 0.95
GEMM_SPEEDUP_TARGET = 10.0


@dataclass(frozen=True)
class Run:
    """One tuning run: the best time it found (ms), its simulated wall time and the strategy's time."""

    best_ms: float
    wall_s: float
    strategy_s: float


@dataclass(frozen=True)
class CaseData:
    """A kernel's measured landscape."""

    case: KernelCase
    device: str
    subspace: str
    full_size: int
    replay: Replay
    entries: dict[str, Any]
    names: tuple[str, ...]
    default_ms: float | None
    load: float | None
    noise: float | None

    @property
    def near_optimum(self) -> int:
        """Configurations within the target of the optimum (time <= best / 0.95): how many needles."""
        values = self.replay.values
        return int((values <= self.replay.optimum / FRACTION_TARGET).sum())

    def trial_seconds(self, config: dict[str, Any]) -> float:
        """What measuring ``config`` took when the cache was filled (build + runs + check)."""
        entry = self.entries[",".join(str(config[n]) for n in self.names)]
        return (float(entry.get("compile_time", 0.0)) + float(entry.get("benchmark_time", 0.0))) / 1e3


def trial_minima(times: Sequence[float], repeat: int) -> list[float]:
    """The fastest run of each trial (``times`` holds the trials' ``repeat`` runs one after another)."""
    return [min(times[i : i + repeat]) for i in range(0, len(times), repeat)]


def with_statistic(entries: dict[str, Any], statistic: str, repeat: int) -> dict[str, Any]:
    """The cache entries with ``time`` recomputed from the timed runs.

    ``trials`` (the default): the median over the configuration's trials of each trial's fastest
    run. The fastest run of a trial is the one least disturbed by other processes; the median over
    trials keeps one lucky trial from making a needle, and unlike the minimum over all runs it does
    not fall as re-measured configurations collect more runs than the rest. ``min`` and ``median``
    are over all runs.
    """
    out: dict[str, Any] = {}
    for key, entry in entries.items():
        times = entry.get("times")
        if isinstance(entry.get("time"), (int, float)) and times:
            if statistic == "trials":
                value = statistics.median(trial_minima(times, repeat))
            else:
                value = min(times) if statistic == "min" else statistics.median(times)
            entry = {**entry, "time": float(value)}
        out[key] = entry
    return out


def trial_spread(entries: dict[str, Any], repeat: int) -> float | None:
    """Measurement noise: median over the re-measured configurations of the relative range of their
    trials' fastest runs ((slowest - fastest) / fastest). None when nothing was re-measured."""
    spreads = []
    for entry in entries.values():
        times = entry.get("times") or []
        if entry.get("label") == "ok" and len(times) >= 2 * repeat:
            minima = trial_minima(times, repeat)
            spreads.append(max(minima) / min(minima) - 1.0)
    return statistics.median(spreads) if spreads else None


def _subspace_note(case: KernelCase, measured: dict[str, Any], *, full_space: bool) -> str:
    """What a file covers: the case's own note when it measured the case's sub-space."""
    if full_space:
        return "full space"
    return case.note if case.narrowed(measured) == case.narrowed() else case.describe(measured)


def machines() -> list[str]:
    """The machines with recorded measurements (folders of ``benchmarks/data/``)."""
    return sorted({p.parent.name for p in DATA.glob("*/kernels_*.json")})


def load_case(case: KernelCase, machine: str, statistic: str) -> CaseData | str:
    """The case's landscape on ``machine``, or why it cannot be replayed."""
    path = case.cache_path(machine)
    measure = f"python -m benchmarks kernels-measure {case.name} --machine {machine}"
    if not path.exists():
        return f"no measurements: run {measure}"
    data = json.loads(path.read_text())
    names = tuple(data["tune_params_keys"])
    entries = with_statistic(data["cache"], statistic, case.repeat)
    full = case.full_space()
    measured = data.get("tune_params") or {}
    space = case.measured_space(measured)
    try:
        replay = Replay(space, entries, names, path=path)
    except ValueError as exc:
        return f"incomplete measurements ({exc}); run {measure}"
    default = full.default_config()
    default_entry = entries.get(",".join(str(default[n]) for n in names))
    default_ms = default_entry.get("time") if default_entry else None
    loads = [float(e["loadavg"]) for e in entries.values() if isinstance(e.get("loadavg"), (int, float))]
    return CaseData(
        case,
        str(data.get("device_name", machine)),
        _subspace_note(case, measured, full_space=space.size == full.size),
        full.size,
        replay,
        entries,
        names,
        float(default_ms) if isinstance(default_ms, (int, float)) else None,
        statistics.median(loads) if loads else None,
        trial_spread(data["cache"], case.repeat),
    )


def make_tuner(data: CaseData, strategy: str, seed: int, budget: int) -> Tuner:
    """A tuner of ``data``'s space for a strategy spec (``name`` or ``name:key=value,...``)."""
    name, options = parse_strategy_spec(strategy)
    return Tuner(data.replay.space, name, abort=budget, seed=seed, strategy_options=options)


def replay_run(data: CaseData, strategy: str, seed: int, budget: int) -> Run:
    """Tune ``data``'s space by replaying its measurements."""
    tuner = make_tuner(data, strategy, seed, budget)
    result = tuner.run(data.replay.objective)
    strategy_s = sum(record.suggest_seconds for record in result.history)
    wall_s = strategy_s + sum(data.trial_seconds(record.config) for record in result.history)
    best = result.best_value if result.best_value is not None else float("inf")
    return Run(best, wall_s, strategy_s)


def live_run(data: CaseData, strategy: str, seed: int, budget: int) -> Run:
    """Tune on the device; the tuned configuration is scored by its recorded time."""
    from pytest_autotune.testing.opencl_objective import KernelTestObjective

    objective = KernelTestObjective(data.case.load())
    start = time.perf_counter()
    tuner = make_tuner(data, strategy, seed, budget)
    result = tuner.run(objective)
    wall_s = time.perf_counter() - start
    strategy_s = sum(record.suggest_seconds for record in result.history)
    if result.best_config is None:
        return Run(float("inf"), wall_s, strategy_s)
    recorded = data.replay.objective(result.best_config)
    return Run(recorded.value if recorded.value is not None else float("inf"), wall_s, strategy_s)


def _fmt_ms(value: float | None) -> str:
    return "-" if value is None or value == float("inf") else f"{value:.3g}"


def _fmt_percent(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.0f}%"


def _fmt_load(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def summarise(data: CaseData, runs: Sequence[Run]) -> dict[str, Any]:
    """Fraction of the optimum (mean, its standard error, minimum, runs at the target), speedup, wall time."""
    optimum = data.replay.optimum
    fractions = [optimum / run.best_ms if run.best_ms > 0 else 0.0 for run in runs]
    tuned = statistics.median(run.best_ms for run in runs)
    return {
        "fraction_mean": statistics.fmean(fractions),
        "fraction_se": statistics.stdev(fractions) / len(fractions) ** 0.5 if len(fractions) > 1 else None,
        "fraction_min": min(fractions),
        "hits": sum(fraction >= FRACTION_TARGET for fraction in fractions),
        "runs": len(fractions),
        "tuned_ms": tuned,
        "speedup": (data.default_ms / tuned) if data.default_ms and tuned > 0 else None,
        "wall_s": statistics.fmean(run.wall_s for run in runs),
        "strategy_s": statistics.fmean(run.strategy_s for run in runs),
    }


def print_table(rows: list[dict[str, Any]], strategies: Sequence[str], budget: int) -> None:
    """The benchmark table (one line per kernel and strategy); kernels not measured follow it."""
    header = [
        "kernel",
        "space",
        "measured",
        "fail",
        "near",
        "noise",
        "load",
        "default ms",
        "best ms",
        "strategy",
        f"frac@{budget} mean",
        "se",
        "min",
        "hit",
        "tuned ms",
        "speedup",
        "tuning s",
        "of which strategy s",
    ]
    table: list[list[str]] = []
    for row in rows:
        if "error" in row:
            continue
        for i, strategy in enumerate(strategies):
            s = row["strategies"][strategy]
            lead = [
                row["kernel"],
                str(row["space"]),
                str(row["measured"]),
                str(row["failing"]),
                str(row["near"]),
                _fmt_percent(row["noise"]),
                _fmt_load(row["load"]),
                _fmt_ms(row["default_ms"]),
                _fmt_ms(row["best_ms"]),
            ]
            table.append(
                [
                    *(lead if i == 0 else [""] * len(lead)),
                    strategy,
                    f"{s['fraction_mean']:.3f}",
                    "-" if s["fraction_se"] is None else f"{s['fraction_se']:.3f}",
                    f"{s['fraction_min']:.2f}",
                    f"{s['hits']}/{s['runs']}",
                    _fmt_ms(s["tuned_ms"]),
                    "-" if s["speedup"] is None else f"{s['speedup']:.1f}x",
                    f"{s['wall_s']:.1f}",
                    f"{s['strategy_s']:.1f}",
                ]
            )
    print(format_table(header, table, align="lrrrrrrrrlrrrrrrrr"))
    for row in rows:
        if "error" in row:
            print(f"{row['kernel']}: {row['error']}")


def check_targets(rows: list[dict[str, Any]], strategy: str) -> list[str]:
    """Target violations of the default strategy (empty when all are met)."""
    problems = []
    for row in rows:
        if "error" in row:
            problems.append(f"{row['kernel']}: not measured")
            continue
        s = row["strategies"][strategy]
        if s["fraction_mean"] < FRACTION_TARGET:
            problems.append(f"{row['kernel']}: mean fraction {s['fraction_mean']:.3f} < {FRACTION_TARGET}")
        if row["kernel"] == "gemm" and (s["speedup"] or 0) < GEMM_SPEEDUP_TARGET:
            problems.append(f"gemm: speedup {s['speedup']} < {GEMM_SPEEDUP_TARGET}x")
    return problems


def bench_machine(machine: str, args: argparse.Namespace, strategies: Sequence[str]) -> list[dict[str, Any]]:
    """Tune every requested kernel on ``machine``'s landscapes: one row per kernel."""
    rows: list[dict[str, Any]] = []
    run = live_run if args.live else replay_run
    seeds = range(args.first_seed, args.first_seed + args.seeds)
    for name in args.kernels.split(","):
        case = case_by_name(name)
        data = load_case(case, machine, args.statistic)
        if isinstance(data, str):
            rows.append({"kernel": name, "error": data})
            continue
        row: dict[str, Any] = {
            "kernel": name,
            "device": data.device,
            "space": data.full_size,
            "measured": data.replay.space.size,
            "failing": data.replay.space.size - data.replay.failure_counts["ok"],
            "near": data.near_optimum,
            "load": data.load,
            "noise": data.noise,
            "default_ms": data.default_ms,
            "best_ms": data.replay.optimum,
            "best_config": data.replay.optimum_config,
            "subspace": data.subspace,
            "strategies": {},
        }
        for strategy in strategies:
            runs = [run(data, strategy, seed, args.budget) for seed in seeds]
            row["strategies"][strategy] = summarise(data, runs)
        rows.append(row)
    return rows


def report_machine(
    machine: str, rows: list[dict[str, Any]], strategies: Sequence[str], budget: int
) -> list[str]:
    """Print ``machine``'s table, sub-spaces and target check; the targets it misses."""
    devices = sorted({row["device"] for row in rows if "device" in row})
    print(f"\n== {machine}: {', '.join(devices) or 'no measurements'}\n")
    print_table(rows, strategies, budget)
    print("\nSub-spaces measured exhaustively:")
    for row in rows:
        if "error" not in row:
            print(f"  {row['kernel']:<10} {row['subspace']}; best {row['best_config']}")
    problems = check_targets(rows, strategies[0])
    print(
        f"\nTargets ({strategies[0]}) on {machine}: fraction >= {FRACTION_TARGET} on every kernel, "
        f"gemm >= {GEMM_SPEEDUP_TARGET:.0f}x over its default: " + ("met" if not problems else "NOT met")
    )
    for problem in problems:
        print(f"  - {problem}")
    return [f"{machine}: {problem}" for problem in problems]


NAME = "kernels"  # python -m benchmarks kernels
QUESTION = "How well are the example kernels tuned in 50 evaluations, and how much faster than the default?"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks kernels", description=__doc__.splitlines()[0])
    parser.add_argument("--kernels", default=",".join(c.name for c in CASES), help="comma-separated names")
    parser.add_argument(
        "--machines",
        default=None,
        help="comma-separated folders of benchmarks/data/ to replay (default: all: "
        + ", ".join(machines())
        + ")",
    )
    parser.add_argument(
        "--strategies",
        nargs="+",
        default=["bo", "random"],
        help="strategy specs (name or name:key=value,...); the first is judged against the targets",
    )
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--first-seed", type=int, default=0, help="seeds run from this one on")
    parser.add_argument("--budget", type=int, default=50, help="evaluations per tuning run")
    parser.add_argument("--quick", action="store_true", help="smoke run: 2 seeds, 20 evaluations")
    parser.add_argument(
        "--live",
        action="store_true",
        help="tune on this device (seed 0) instead of replaying; pass --machines with the folder "
        "measured on it, which scores the tuned configurations",
    )
    parser.add_argument(
        "--statistic",
        choices=("trials", "min", "median"),
        default="trials",
        help="time of a configuration: median over its trials of their fastest run (default), or the "
        "min or median of all its runs",
    )
    parser.add_argument("--json", type=Path, default=None, help="also write the rows as JSON here")
    args = parser.parse_args(argv)
    if args.quick:
        args.seeds, args.budget = 2, 20
    if args.live:
        args.seeds = 1
    strategies = list(args.strategies)
    for spec in strategies:
        try:
            parse_strategy_spec(spec)
        except ValueError as exc:
            parser.error(str(exc))
    known = machines()
    chosen = args.machines.split(",") if args.machines else known
    unknown = [m for m in chosen if m not in known]
    if unknown or not chosen:
        missing = ", ".join(unknown) or "any machine"
        parser.error(f"no measurements for {missing} in {DATA}; known: {', '.join(known)}")
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    started = time.perf_counter()
    mode = "live on the device" if args.live else "replay of the exhaustive measurements"
    mode += ", time of a configuration = " + (
        "median over its trials of their fastest run"
        if args.statistic == "trials"
        else f"{args.statistic} of its timed runs"
    )
    load = os.getloadavg()
    print(
        f"\nExample kernels: {args.seeds} seed(s) x {args.budget} evaluations, {mode}; "
        f"load average {load[0]:.1f}/{load[1]:.1f}/{load[2]:.1f} on {os.cpu_count()} CPUs"
    )
    results: dict[str, list[dict[str, Any]]] = {}
    problems: list[str] = []
    for machine in chosen:
        results[machine] = bench_machine(machine, args, strategies)
        problems += report_machine(machine, results[machine], strategies, args.budget)
    print(
        "\nspace: declared (constrained) configurations; measured: the sub-space measured exhaustively; "
        "fail: its failing configurations;\nnear: its configurations within "
        f"{FRACTION_TARGET} of the best (what a strategy must hit); noise: median relative range of the "
        "re-measured configurations' trial minima;\nload: median 1-minute load average while measuring."
    )
    print("\nTargets on every machine: " + ("met" if not problems else f"NOT met ({len(problems)} misses)"))
    print(f"(benchmark ran {time.perf_counter() - started:.0f} s)")
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2, default=str))
    return 0 if not problems else 1


if __name__ == "__main__":
    raise SystemExit(main())
