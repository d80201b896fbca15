"""One test's trials on N devices: what batching costs in quality per evaluation, and buys in wall time.

Replays the exhaustively measured GPU spaces (``benchmarks/data/replay/``) with ``bo`` on N simulated
devices (N = 1, 2, 4, 8): the tuner keeps N trials under way (:mod:`pytest_autotune.tuning.parallel.loop`'s
rule: a free device gets the next suggestion at once), and each trial occupies its device for the
time the cache recorded for it, ``compile_time + benchmark_time`` (a failed configuration: its
recorded times where present, else its compile time alone). Outcomes are told in the order the
simulated devices finish. The strategy's own suggestion time is measured, not simulated: it is
reported apart (the overhead of a suggestion made with N - 1 trials under way against one made
with none, near 100 observations), since on real devices it overlaps the other devices' trials.

Printed per space and on average over the spaces (each cell the mean over the seeds):

* the fraction of the optimum after E evaluations (E = 20, 50, 100), and its difference to N = 1;
* the simulated wall time to reach 0.90 and 0.95 of the optimum, as a ratio to N = 1 (a run that
  never reaches it counts with its whole duration, a lower bound; the count of such runs is shown).

Every run is cached in ``benchmarks/out/parallel_bench/`` (``--out DIR``: ``DIR/parallel_bench/``; one
JSON per space, seed and N), so a later call with more seeds or spaces only runs what is missing; the
caches are read from ``--datasets DIR`` (default: ``benchmarks/data/replay/``, or
``AUTOTUNE_DATASETS``), as ``python -m benchmarks strategy`` reads them::

    nice -n 10 python -m benchmarks parallel --spaces 4 --seeds 10 --jobs 2

``--plugin`` prints the second table instead: real ``pytest --autotune`` runs with two PoCL devices
(``POCL_DEVICES="pthread pthread"``), the example kernels on one device and over two xdist workers,
and the gemm example's trials on one device and with ``--autotune-parallel=2``. Both devices share
the same CPU cores, so no gain is expected: it shows that the plumbing works, and what it costs.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import heapq
import json
import os
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.common import DATASETS, OUT, ROOT, format_table, load_listing

DEVICES = (1, 2, 4, 8)
EVALUATIONS = (20, 50, 100)
LEVELS = (0.90, 0.95)
#: Where the replayed spaces are read from and the runs cached (``--datasets``, ``--out``; set in each
#: worker process by :func:`use_folders`).
_FOLDERS = {"datasets": DATASETS, "cache": OUT / "parallel_bench"}
#: Observations around which a suggestion's cost is compared (with and without trials under way).
OVERHEAD_AT = (90, 100)


def use_folders(datasets: Path, out: Path) -> None:
    """Read the caches from ``datasets``, keep the runs under ``out`` (``parallel_bench/``)."""
    _FOLDERS["datasets"] = Path(datasets)
    _FOLDERS["cache"] = Path(out) / "parallel_bench"
    _replay.cache_clear()
    _durations.cache_clear()


@cache
def _replay(file_name: str) -> Any:
    from pytest_autotune.replay import Replay

    return Replay.from_spaces_json(_FOLDERS["datasets"] / "spaces.json", file_name)


@cache
def _durations(file_name: str) -> dict[str, float]:
    """Seconds each configuration occupies a device: compile plus benchmark time (ms in the cache)."""
    data = json.loads(gzip.decompress((_FOLDERS["datasets"] / file_name).read_bytes()))
    durations = {}
    for key, entry in data["cache"].items():
        compile_ms = float(entry.get("compile_time") or 0.0)
        bench = entry.get("benchmark_time")
        bench_ms = float(bench) if isinstance(bench, (int, float)) else 0.0
        durations[key] = (compile_ms + bench_ms) / 1000.0
    return durations


def simulate(file_name: str, seed: int, devices: int, budget: int) -> dict[str, Any]:
    """One ``bo`` run on ``devices`` simulated devices; the trials in completion order."""
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    import torch

    from pytest_autotune.tuning.tuner import Tuner

    torch.set_num_threads(1)
    replay = _replay(file_name)
    durations = _durations(file_name)
    tuner = Tuner(replay.space, "bo", abort=budget, seed=seed)
    running: list[tuple[float, int, Any]] = []
    now = 0.0
    trials: list[dict[str, Any]] = []
    asks: list[tuple[int, int, float]] = []  # (observations told, trials under way, seconds)
    while True:
        while len(running) < devices:
            started = time.perf_counter()
            trial = tuner.ask()
            if trial is None:
                break
            asks.append((len(tuner.history), len(running), time.perf_counter() - started))
            end = now + durations[replay.key(trial.config)]
            heapq.heappush(running, (end, trial.number, trial))
        if not running:
            break
        now, _, trial = heapq.heappop(running)
        outcome = replay.objective(trial.config)
        tuner.tell(trial, outcome)
        trials.append({"value": outcome.value, "end": now})
    return {"space": file_name, "seed": seed, "devices": devices, "trials": trials, "asks": asks}


def _path(file_name: str, seed: int, devices: int, budget: int) -> Path:
    return _FOLDERS["cache"] / f"{file_name.removesuffix('.json.gz')}-s{seed}-n{devices}-b{budget}.json"


def _task(task: tuple[str, int, int, int]) -> str:
    path = _path(*task)
    if not path.exists():
        record = simulate(*task)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(record))
        tmp.replace(path)
    return str(path)


# -- analysis -----------------------------------------------------------------------------------------
def fraction_after(run: dict[str, Any], optimum: float, evaluations: int) -> float:
    """Optimum over the best value among the first ``evaluations`` finished trials (0: none ok)."""
    values = [t["value"] for t in run["trials"][:evaluations] if t["value"] is not None]
    return optimum / min(values) if values else 0.0


def time_to(run: dict[str, Any], optimum: float, level: float) -> tuple[float, bool]:
    """Simulated seconds until a trial within ``level`` of the optimum finished; (total, False) if none."""
    for trial in run["trials"]:
        if trial["value"] is not None and optimum / trial["value"] >= level:
            return trial["end"], True
    return run["trials"][-1]["end"], False


def overhead(runs: list[dict[str, Any]]) -> float:
    """Median seconds of the suggestions made with ``OVERHEAD_AT[0]..[1]`` observations told."""
    low, high = OVERHEAD_AT
    seconds = [s for run in runs for told, _, s in run["asks"] if low <= told <= high]
    return float(np.median(seconds)) if seconds else float("nan")


def _mean(values: Sequence[float]) -> float:
    return float(np.mean(values)) if values else float("nan")


def report(spaces: list[str], seeds: list[int], devices: Sequence[int], budget: int) -> str:
    """The tables (per space and on average) from the cached runs."""
    lines: list[str] = []
    per_space: dict[str, dict[int, dict[str, float]]] = {}
    for space in spaces:
        optimum = _replay(space).optimum
        rows: dict[int, dict[str, float]] = {}
        for n in devices:
            runs = [json.loads(_path(space, s, n, budget).read_text()) for s in seeds]
            row: dict[str, float] = {}
            for e in EVALUATIONS:
                row[f"at {e}"] = _mean([fraction_after(r, optimum, e) for r in runs])
            for level in LEVELS:
                times = [time_to(r, optimum, level) for r in runs]
                row[f"t{level:.2f}"] = _mean([t for t, _ in times])
                row[f"miss{level:.2f}"] = sum(not hit for _, hit in times)
            row["suggest"] = overhead(runs)
            rows[n] = row
        per_space[space] = rows
    header = ["space", "N", *(f"at {e}" for e in EVALUATIONS), *(f"d{e}" for e in EVALUATIONS[1:])]
    header += ["t0.90 s", "x N=1", "t0.95 s", "x N=1", "missed", "suggest s", "x N=1"]

    def table_rows(name: str, rows: dict[int, dict[str, float]]) -> list[list[str]]:
        base = rows[devices[0]]
        out = []
        for n in devices:
            row = rows[n]
            cells = [name, str(n)]
            cells += [f"{row[f'at {e}']:.3f}" for e in EVALUATIONS]
            cells += [f"{row[f'at {e}'] - base[f'at {e}']:+.3f}" for e in EVALUATIONS[1:]]
            for level in LEVELS:
                key = f"t{level:.2f}"
                cells += [f"{row[key]:.1f}", f"{row[key] / base[key]:.2f}"]
            cells.append(f"{int(row['miss0.90'])}/{int(row['miss0.95'])}")
            cells += [f"{row['suggest']:.3f}", f"{row['suggest'] / base['suggest']:.2f}"]
            out.append(cells)
        return out

    body: list[list[str]] = []
    for space, rows in per_space.items():
        body += table_rows(space.removesuffix(".json.gz"), rows)
    average = {
        n: {key: _mean([per_space[s][n][key] for s in spaces]) for key in per_space[spaces[0]][n]}
        for n in devices
    }
    # The wall-time ratios of the average are means of the per-space ratios (each space weighs alike).
    for n in devices:
        for level in LEVELS:
            key = f"t{level:.2f}"
            ratios = [per_space[s][n][key] / per_space[s][devices[0]][key] for s in spaces]
            average[n][key] = _mean(ratios) * average[devices[0]][key]
            average[n][f"miss{level:.2f}"] = sum(per_space[s][n][f"miss{level:.2f}"] for s in spaces)
    body += table_rows("mean", average)
    lines.append(
        format_table(
            header,
            body,
            align="llrrrrrrrrrrrrr",
            title=f"bo on N simulated devices, {len(seeds)} seeds ({seeds[0]}-{seeds[-1]}), budget {budget}",
        )
    )
    lines.append(
        "at E: fraction of the optimum after E evaluations; dE: its difference to N=1; tL: simulated "
        "seconds until a trial within L of the optimum finished (missed runs count with their whole "
        "duration; the mean row: the mean of the per-space ratios); missed: runs that never reached "
        "0.90/0.95 (the mean row: all spaces); suggest: median seconds of a suggestion "
        f"at {OVERHEAD_AT[0]}-{OVERHEAD_AT[1]} observations (N-1 trials under way), measured"
    )
    return "\n".join(lines)


# -- the cost of a suggestion with trials under way ---------------------------------------------------------
def overhead_table(spaces: list[str], observations: int, pending: int, repeats: int) -> str:
    """Seconds of one ``bo`` suggestion with ``pending`` trials under way against one with none.

    The same strategy state (``observations`` uniformly drawn configurations told) is copied before
    each suggestion, the two kinds alternate, and the median of ``repeats`` of each is compared.
    """
    import copy

    import torch

    from pytest_autotune.strategies import make_strategy
    from pytest_autotune.strategies.unseen import draw_unseen

    torch.set_num_threads(1)
    rows = []
    for space_name in spaces:
        replay = _replay(space_name)
        rng = np.random.default_rng(0)
        strategy = make_strategy("bo", replay.space, rng, {"initial": 1})  # told trials: the design
        seen: set[Any] = set()
        while len(seen) < observations + pending:
            point = draw_unseen(replay.space, rng, seen)
            assert point is not None
            seen.add(point.keys()[0])
            if len(seen) <= observations:
                strategy.tell(point, replay.objective(replay.space.configs(point)[0]))
        under_way = [
            replay.space.to_points([c]) for c in replay.space.configs(_unseen(replay, seen, pending))
        ]
        strategy.ask()  # the design's one configuration
        strategy.ask()  # the first fit (cold, with restarts) is not what either kind pays
        seconds: dict[int, list[float]] = {0: [], pending: []}
        for _ in range(repeats):
            for count in (0, pending):
                copied = copy.deepcopy(strategy)
                copied.pending(under_way[:count])
                started = time.process_time()  # CPU seconds: robust to the other processes' load
                copied.ask()
                seconds[count].append(time.process_time() - started)
        single, batch = (float(np.median(seconds[k])) for k in (0, pending))
        rows.append(
            [space_name.removesuffix(".json.gz"), f"{single:.3f}", f"{batch:.3f}", f"{batch / single:.2f}"]
        )
    return format_table(
        ["space", "none under way, CPU s", f"{pending} under way, CPU s", "ratio"],
        rows,
        align="lrrr",
        title=f"bo suggestion at {observations} observations, median of {repeats} each, alternating",
    )


def _unseen(replay: Any, seen: set[Any], count: int) -> Any:
    """``count`` configurations not in ``seen`` (the trials under way)."""
    from pytest_autotune.strategies.unseen import draw_unseen

    rng = np.random.default_rng(1)
    points: list[Any] = []
    while len(points) < count:
        point = draw_unseen(replay.space, rng, seen)
        assert point is not None
        seen.add(point.keys()[0])
        points.append(point)
    from pytest_autotune.space.base import Points

    return Points.concat(points)


# -- the real plugin on two PoCL devices ------------------------------------------------------------------
#: (name, pytest arguments after ``--autotune``): three example kernels on 1 device and over 2 xdist
#: workers (a device each), and the gemm example's trials on 1 device and on 2 at once.
KERNELS = [f"example_kernels/test_{name}.py" for name in ("saxpy", "reduction", "gemm")]
PLUGIN_RUNS = (
    ("saxpy, reduction, gemm: 1 device", KERNELS),
    ("saxpy, reduction, gemm: -n 2", [*KERNELS, "-n", "2"]),
    ("gemm, 1 device", ["example_kernels/test_gemm.py"]),
    ("gemm, --autotune-parallel=2", ["example_kernels/test_gemm.py", "--autotune-parallel=2"]),
)


def plugin_table(budget: int, strategy: str, only: Sequence[int] | None = None) -> str:
    """Wall time of real ``pytest --autotune`` runs with two PoCL devices (``POCL_DEVICES``)."""
    import subprocess
    import tempfile

    env = {**os.environ, "POCL_DEVICES": "pthread pthread", "PYTEST_ADDOPTS": ""}
    rows = []
    with tempfile.TemporaryDirectory(prefix="parallel-bench-") as folder:
        for index, (name, args) in enumerate(PLUGIN_RUNS):
            if only is not None and index not in only:
                continue
            command = [sys.executable, "-m", "pytest", "--autotune", *args, "-q", "-p", "no:randomly"]
            command += [f"--autotune-budget={budget}", f"--autotune-strategy={strategy}"]
            command += ["--autotune-transfer=off", f"--autotune-cache={folder}/run{index}.json"]
            load = os.getloadavg()[0]
            started = time.perf_counter()
            done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
            seconds = time.perf_counter() - started
            tail = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr[-200:]
            rows.append([name, f"{seconds:.1f}", f"{load:.1f}", tail])
            print(f"{name}: {seconds:.1f}s ({tail})", flush=True)
    return format_table(
        ["run", "wall s", "load", "pytest says"],
        rows,
        align="lrrl",
        title=f"pytest --autotune on 2 PoCL pthread devices sharing this machine's cores, budget {budget}",
    )


NAME = "parallel"  # python -m benchmarks parallel
QUESTION = "What do N devices per test cost in quality per evaluation and buy in wall time (bo batches)?"


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--spaces", type=int, default=10, help="the first K spaces of spaces.json")
    parser.add_argument("--only", nargs="*", default=None, help="space files (instead of --spaces)")
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--budget", type=int, default=100)
    parser.add_argument("--devices", type=int, nargs="*", default=list(DEVICES))
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--report-only", action="store_true", help="print the tables of the cached runs")
    parser.add_argument("--plugin", action="store_true", help="only the real plugin's table (PoCL)")
    parser.add_argument("--overhead", action="store_true", help="only the suggestion-overhead table")
    parser.add_argument("--plugin-budget", type=int, default=20)
    parser.add_argument("--plugin-strategy", default="bo")
    parser.add_argument("--plugin-runs", nargs="*", type=int, default=None, help="which rows (0-3)")
    parser.add_argument(
        "--datasets", type=Path, default=DATASETS, help="folder of the replayed caches and spaces.json"
    )
    parser.add_argument("--out", type=Path, default=OUT, help="runs are cached in OUT/parallel_bench/")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    if args.plugin:
        print(plugin_table(args.plugin_budget, args.plugin_strategy, args.plugin_runs))
        return
    use_folders(args.datasets, args.out)
    listing = [item["file"] for item in load_listing(args.datasets)]
    spaces = args.only or listing[: args.spaces]
    if args.overhead:
        print(overhead_table(spaces, observations=100, pending=3, repeats=5))
        print(f"load average {os.getloadavg()[0]:.1f}")
        return
    seeds = list(range(args.seeds))
    # Seed by seed (a partial run already averages over whole seeds), N = 2 last (no target on it).
    tasks = [(space, seed, n, args.budget) for seed in seeds for space in spaces for n in args.devices]
    tasks.sort(key=lambda task: (task[2] == 2, task[1]))
    missing = [t for t in tasks if not _path(*t).exists()]
    if missing and not args.report_only:
        started = time.perf_counter()
        print(f"{len(missing)} runs to do ({len(tasks) - len(missing)} cached)", flush=True)
        folders = (args.datasets, args.out)
        with contextlib.ExitStack() as stack:  # --jobs 1: in this process
            if args.jobs > 1:
                pool = stack.enter_context(
                    ProcessPoolExecutor(max_workers=args.jobs, initializer=use_folders, initargs=folders)
                )
            paths = pool.map(_task, missing) if args.jobs > 1 else map(_task, missing)
            for done, path in enumerate(paths, 1):
                print(f"[{done}/{len(missing)} {time.perf_counter() - started:.0f}s] {path}", flush=True)
    complete = [
        seed
        for seed in seeds
        if all(_path(sp, seed, n, args.budget).exists() for sp in spaces for n in args.devices)
    ]
    if not complete:
        raise SystemExit("no seed has every run cached yet")
    print(report(spaces, complete, args.devices, args.budget))
    print(f"load average {os.getloadavg()[0]:.1f} {os.getloadavg()[1]:.1f} {os.getloadavg()[2]:.1f}")


if __name__ == "__main__":
    main()
