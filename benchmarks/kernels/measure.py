"""Measure every configuration of an example kernel's (sub-)space into a Kernel Tuner cache file.

    python -m benchmarks kernels-measure gemm --machine pocl-xeon [--timeout 120] [--limit N]
    python -m benchmarks kernels-measure gemm --machine pocl-xeon --refine 100 [--rounds 10]

Each machine's measurements live in their own folder, ``benchmarks/data/<machine>/`` (the header of
each file records the OpenCL device and the sub-space measured, as Kernel Tuner's ``tune_params``).
Resumable: configurations already in ``benchmarks/data/<machine>/kernels_<name>.json`` are skipped, and the
file is rewritten (atomically) every few measurements. The rest are measured in a random (seeded)
order. Each configuration runs in a worker process
through :class:`pytest_autotune.testing.opencl_objective.KernelTestObjective`, i.e. exactly as a tuning
trial of the plugin (1 warm-up call, 7 timed calls (15 for saxpy), the test's correctness check).
A worker that crashes (PoCL aborts on some LLVM errors) or exceeds ``--timeout`` seconds on one
configuration is replaced, and that configuration is recorded as ``RuntimeFailedConfig``.

Cache entries follow Kernel Tuner: ``time`` in ms (the median of the timed calls;
the benchmark recomputes it, by default as the minimum) or a failure
marker, ``times`` in ms, ``compile_time`` (program builds, ms), ``benchmark_time`` (the rest of the
trial: inputs, runs, check, ms); plus ``label``/``detail`` (our outcome) and the load average at
measurement time, since the machine is shared. It refuses to start while the load average shows
other work running (``--max-load``): measure on an idle machine and run nothing beside it.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import select
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.common import ROOT
from benchmarks.kernels.cases import KernelCase, case_by_name

MARKERS = {
    "compile": "CompilationFailedConfig",
    "runtime": "RuntimeFailedConfig",
    "timeout": "RuntimeFailedConfig",
}
SAVE_EVERY = 10
# The measurements are only worth keeping on an otherwise idle machine: on 2 vCPUs, one other busy
# process takes a core from PoCL's two threads and doubles a memory-bound kernel's time. (The
# pocl-xeon files were measured beside a running benchmark, at load 3 and more; see its README.)
MAX_START_LOAD = 0.8


def check_quiet(max_load: float) -> None:
    """Refuse to start measuring while other processes keep the machine busy."""
    load = os.getloadavg()[0]
    if load > max_load:
        raise SystemExit(
            f"load average {load:.2f} > {max_load}: something else is running; measure on an idle "
            "machine (or wait a minute; --max-load to override)"
        )


def cache_key(config: dict[str, Any], names: tuple[str, ...]) -> str:
    """Kernel Tuner's cache key: the values joined by commas in parameter order."""
    return ",".join(str(config[name]) for name in names)


def load_cache(
    path: Path, case: KernelCase, names: tuple[str, ...], domains: dict[str, list[Any]]
) -> dict[str, Any]:
    """The case's cache file, or a new empty one with Kernel Tuner's header."""
    if path.exists():
        data: dict[str, Any] = json.loads(path.read_text())
        if tuple(data["tune_params_keys"]) != names:
            raise SystemExit(f"{path}: parameters {data['tune_params_keys']} != {list(names)}")
        return data
    from pytest_autotune.backends.opencl import device_info, select_device

    info = device_info(select_device(None))
    return {
        "version": "1.0",
        "device_name": info["key"],
        "device_info": info,
        "kernel_name": case.function_name,
        "problem_size": case.name,
        "tune_params_keys": list(names),
        "tune_params": domains,
        "objective": "time",
        "cache": {},
    }


def save_cache(path: Path, data: dict[str, Any]) -> None:
    """Write the cache atomically (one entry per line, so diffs stay readable)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    header = {k: v for k, v in data.items() if k != "cache"}
    lines = [json.dumps(header, sort_keys=True)[:-1] + ', "cache": {']
    entries = [
        f"{json.dumps(key)}: {json.dumps(entry, sort_keys=True)}" for key, entry in data["cache"].items()
    ]
    body = ",\n".join(entries)
    text = lines[0] + ("\n" + body + "\n" if body else "") + "}}\n"
    temporary = path.with_suffix(".json.tmp")
    temporary.write_text(text)
    os.replace(temporary, path)


def entry_for(config: dict[str, Any], result: dict[str, Any]) -> dict[str, Any]:
    """A Kernel Tuner cache entry from a worker's result."""
    label = result["label"]
    entry: dict[str, Any] = dict(config)
    entry["time"] = result["value"] * 1e3 if label == "ok" else MARKERS.get(label, "InvalidConfig")
    entry["times"] = [s * 1e3 for s in result.get("samples", [])]
    entry["compile_time"] = result.get("build_seconds", 0.0) * 1e3
    entry["benchmark_time"] = max(0.0, result["seconds"] - result.get("build_seconds", 0.0)) * 1e3
    entry["verification_time"] = 0
    entry["strategy_time"] = 0
    entry["framework_time"] = 0
    entry["label"] = label
    if result.get("detail"):
        entry["detail"] = result["detail"][:500]
    entry["loadavg"] = round(os.getloadavg()[0], 2)
    entry["timestamp"] = time.strftime("%Y-%m-%dT%H:%M:%S")
    return entry


def _sorted_values(values: set[Any]) -> list[Any]:
    try:
        return sorted(values)
    except TypeError:
        return sorted(values, key=repr)


class Worker:
    """A subprocess measuring one configuration per request line (JSON in, JSON out)."""

    def __init__(self, case: KernelCase) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "benchmarks.kernels.measure", "--worker", case.name],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            bufsize=1,
        )

    def measure(self, config: dict[str, Any], timeout: float) -> dict[str, Any] | None:
        """The worker's result, or None when it died or ran out of time (it is then stopped)."""
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        start = time.perf_counter()
        try:
            self.process.stdin.write(json.dumps(config) + "\n")
            self.process.stdin.flush()
        except BrokenPipeError:
            return None
        ready, _, _ = select.select([self.process.stdout], [], [], timeout)
        line = self.process.stdout.readline() if ready else ""
        if not line:
            self.stop()
            return {"label": "timeout" if ready == [] else "runtime", "seconds": time.perf_counter() - start}
        return json.loads(line)  # type: ignore[no-any-return]

    def stop(self) -> None:
        """End the worker process (only this one, by its handle)."""
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()


def run_worker(name: str) -> None:
    """Worker loop: read configurations from stdin, print one result line each."""
    from pytest_autotune.testing.opencl_objective import KernelTestObjective

    case = case_by_name(name)
    objective = KernelTestObjective(case.load(), warmup=1, repeat=case.repeat)
    for line in sys.stdin:
        trial = objective.run(json.loads(line))
        result = {
            "label": trial.outcome.label,
            "value": trial.outcome.value,
            "detail": trial.outcome.detail,
            "samples": list(trial.samples),
            "build_seconds": trial.build_seconds,
            "seconds": trial.seconds,
        }
        print(json.dumps(result), flush=True)


def measure_case(
    case: KernelCase, path: Path, *, timeout: float, limit: int | None, extra: list[dict[str, Any]]
) -> None:
    """Measure the missing configurations of ``case`` (its sub-space plus ``extra`` ones)."""
    space = case.measured_space()
    names = space.names
    configs = space.configs(space.at_index(list(range(space.size))))
    domains: dict[str, list[Any]] = {n: _sorted_values({c[n] for c in configs}) for n in names}
    data = load_cache(path, case, names, domains)
    pending = {cache_key(c, names): c for c in [*extra, *configs]}
    todo = [c for key, c in pending.items() if key not in data["cache"]]
    # Random order: a burst of load from other processes then slows scattered configurations, not a
    # contiguous region of the space that a strategy would read as structure.
    random.Random(0).shuffle(todo)
    if limit is not None:
        todo = todo[:limit]
    print(f"{case.name}: {space.size} configurations, {len(todo)} to measure", flush=True)
    worker: Worker | None = None
    started = time.perf_counter()
    try:
        for done, config in enumerate(todo, 1):
            worker = worker or Worker(case)
            result = worker.measure(config, timeout)
            if result is None or result["label"] in ("timeout",) or worker.process.poll() is not None:
                worker.stop()
                worker = None
                result = result or {"label": "runtime", "seconds": 0.0}
                result.setdefault("detail", f"worker died or exceeded {timeout:.0f} s")
            data["cache"][cache_key(config, names)] = entry_for(config, result)
            if done % SAVE_EVERY == 0 or done == len(todo):
                save_cache(path, data)
                rate = (time.perf_counter() - started) / done
                print(f"  {done}/{len(todo)}  {rate:.2f} s/config  load {os.getloadavg()[0]:.1f}", flush=True)
    finally:
        if worker is not None:
            worker.stop()
        save_cache(path, data)


def refine_case(
    case: KernelCase, path: Path, *, top: int, rounds: int, timeout: float, extra: list[dict[str, Any]]
) -> None:
    """Measure the ``top`` fastest configurations (and ``extra`` ones) again, ``rounds`` times each.

    The rounds interleave the configurations, so a burst of load from other processes hits them
    alike; the new runs are added to each entry's ``times`` (``time`` becomes their median). The
    few configurations that decide "fraction of the optimum" then rest on many runs, not five.
    """
    if not path.exists():
        raise SystemExit(f"{path}: nothing to refine, measure {case.name} first")
    data = json.loads(path.read_text())
    names = tuple(data["tune_params_keys"])
    feasible = [(min(e["times"]), key) for key, e in data["cache"].items() if e.get("label") == "ok"]
    chosen = [key for _, key in sorted(feasible)[:top]]
    chosen += [k for k in (cache_key(c, names) for c in extra) if k in data["cache"] and k not in chosen]
    print(f"{case.name}: refining {len(chosen)} configurations, {rounds} rounds", flush=True)
    worker: Worker | None = None
    try:
        for round_number in range(rounds):
            for key in chosen:
                entry = data["cache"][key]
                worker = worker or Worker(case)
                result = worker.measure({n: entry[n] for n in names}, timeout)
                if result is None or result["label"] != "ok":
                    worker.stop()
                    worker = None
                    continue
                entry["times"] = [*entry["times"], *(s * 1e3 for s in result["samples"])]
                entry["time"] = statistics.median(entry["times"])
            save_cache(path, data)
            print(f"  round {round_number + 1}/{rounds}  load {os.getloadavg()[0]:.1f}", flush=True)
    finally:
        if worker is not None:
            worker.stop()
        save_cache(path, data)


NAME = "kernels-measure"  # python -m benchmarks kernels-measure
QUESTION = "Measure every configuration of an example kernel's space into a cache file."


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks kernels-measure", description=__doc__.splitlines()[0]
    )
    parser.add_argument("kernels", nargs="+", help="kernel names (saxpy, reduction, transpose, conv2d, gemm)")
    parser.add_argument(
        "--machine", required=True, help="folder under benchmarks/data/ for this machine, e.g. pocl-xeon"
    )
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per configuration")
    parser.add_argument("--limit", type=int, default=None, help="measure at most this many now")
    parser.add_argument("--refine", type=int, default=0, metavar="K", help="re-measure the K fastest instead")
    parser.add_argument("--rounds", type=int, default=6, help="rounds of re-measurement with --refine")
    parser.add_argument(
        "--max-load",
        type=float,
        default=MAX_START_LOAD,
        help=f"refuse to start while the 1-minute load average is above this (default {MAX_START_LOAD})",
    )
    if sys.argv[1:2] == ["--worker"]:  # a worker process (see Worker): no --machine needed
        run_worker(sys.argv[2])
        return
    args = parser.parse_args()
    check_quiet(args.max_load)
    for name in args.kernels:
        case = case_by_name(name)
        default = case.full_space().default_config()
        path = case.cache_path(args.machine)
        if args.refine:
            refine_case(
                case, path, top=args.refine, rounds=args.rounds, timeout=args.timeout, extra=[default]
            )
        else:
            measure_case(case, path, timeout=args.timeout, limit=args.limit, extra=[default])


if __name__ == "__main__":
    main()
