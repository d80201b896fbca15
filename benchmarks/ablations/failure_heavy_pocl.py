"""A failure-heavy PoCL space for the failure-handling ablation: conv2d with its known constraints loosened.

``example_kernels/test_conv2d.py`` declares work-groups of at most 256 x 64 and keeps
``WIDTH % (BX * TX) == 0`` and ``HEIGHT % (BY * TY) == 0`` as known constraints, so that only a few
configurations fail (work-groups above the device's 4,096 work-items). Here the work-group bounds
are raised (``BX`` up to 1024, ``BY`` up to 256) and both divisibility conditions are dropped, as a
user who did not know the device's limits would write it. On the PoCL CPU device about a third of
the configurations then fail at launch (``INVALID_WORK_GROUP_SIZE``): work-groups above 4,096
work-items, and work-groups wider or taller than the launch itself (``BX * TX > 1024``), a hidden
constraint that ``benchmarks/ablations/failures.py`` asks the Bayesian engine to learn.

    nice -n 5 python -m benchmarks failure-heavy-pocl record    # measure all 960 (about 10 min)
    python -m benchmarks failure-heavy-pocl check               # load the recording, print its summary

Each configuration runs through ``kernels_measure``'s worker process, exactly as a tuning trial of
the plugin (1 warm-up call, 7 timed calls, the test's correctness check; a crash or a timeout is a
``RuntimeFailedConfig``). Files: ``benchmarks/data/failure_heavy_conv2d_pocl.json.gz`` (a Kernel
Tuner cache, ``time`` the median in ms) and ``.space.json`` next to it (parameter lists, no
restrictions: every combination is in the space, in the format of ``spaces.json``, plus how and
under which load it was recorded). The measurement resumes from ``benchmarks/out/`` if interrupted.
"""

from __future__ import annotations

import argparse
import gzip
import itertools
import json
import os
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parents[1] / "data"
CACHE = DATA / "failure_heavy_conv2d_pocl.json.gz"
SPACE_JSON = DATA / "failure_heavy_conv2d_pocl.space.json"
PARTIAL = Path(__file__).resolve().parents[1] / "out" / "failure_heavy_conv2d_pocl.partial.json"
KERNEL = "conv2d"

#: The loosened space: wider work-groups than the test declares, no divisibility conditions.
TUNE_PARAMS: dict[str, list[Any]] = {
    "BX": [1, 4, 16, 64, 256, 1024],
    "BY": [1, 4, 16, 64, 256],
    "TX": [1, 2, 4, 8],
    "TY": [1, 2, 4, 8],
    "LOCAL": [False, True],
    "CONST_FILTER": [False],
}
TIMEOUT_S = 120.0


def configurations() -> list[dict[str, Any]]:
    """Every configuration of the loosened space, in parameter order."""
    return [dict(zip(TUNE_PARAMS, combo, strict=True)) for combo in itertools.product(*TUNE_PARAMS.values())]


def record() -> None:
    """Measure every configuration (resuming from the partial file) and write the two data files."""
    from benchmarks.kernels.cases import case_by_name
    from benchmarks.kernels.measure import Worker, cache_key, entry_for, load_cache, save_cache

    case = case_by_name(KERNEL)
    names = tuple(TUNE_PARAMS)
    data = load_cache(PARTIAL, case, names, TUNE_PARAMS)
    data["problem_size"] = f"{KERNEL} (loosened: see benchmarks/ablations/failure_heavy_pocl.py)"
    todo = [c for c in configurations() if cache_key(c, names) not in data["cache"]]
    random.Random(0).shuffle(todo)  # a burst of load slows scattered configurations, not a region
    loads = [os.getloadavg()[0]]
    started = time.perf_counter()
    print(f"{len(todo)} of {len(configurations())} to measure; load {loads[0]:.2f}", flush=True)
    worker: Worker | None = None
    try:
        for done, config in enumerate(todo, 1):
            worker = worker or Worker(case)
            result = worker.measure(config, TIMEOUT_S)
            if result is None or result["label"] == "timeout" or worker.process.poll() is not None:
                worker.stop()
                worker = None
                result = result or {"label": "runtime", "seconds": 0.0}
                result.setdefault("detail", f"worker died or exceeded {TIMEOUT_S:.0f} s")
            data["cache"][cache_key(config, names)] = entry_for(config, result)
            if done % 20 == 0 or done == len(todo):
                save_cache(PARTIAL, data)
                loads.append(os.getloadavg()[0])
                elapsed = time.perf_counter() - started
                print(f"  {done}/{len(todo)} after {elapsed:.0f} s, load {loads[-1]:.1f}", flush=True)
    finally:
        if worker is not None:
            worker.stop()
        save_cache(PARTIAL, data)
    write_data(data, time.perf_counter() - started, loads)


def write_data(data: dict[str, Any], seconds: float, loads: list[float]) -> None:
    """The gzipped cache and its ``.space.json`` listing (once every configuration is measured)."""
    cache = data["cache"]
    if len(cache) != len(configurations()):
        raise SystemExit(f"only {len(cache)} of {len(configurations())} measured; run record again")
    with gzip.open(CACHE, "wt") as handle:
        json.dump(data, handle)
    ok = [e["time"] for e in cache.values() if not isinstance(e["time"], str)]
    failed: dict[str, int] = {}
    for entry in cache.values():
        if isinstance(entry["time"], str):
            failed[entry["time"]] = failed.get(entry["time"], 0) + 1
    listing = {
        "file": CACHE.name,
        "kernel": KERNEL,
        "gpu": "PoCL CPU",
        "device_name": data["device_name"],
        "problem_size": [1024, 1024],
        "objective": "time",
        "objective_higher_is_better": False,
        "tune_params": TUNE_PARAMS,
        "restrictions": [],
        "constrained_size": len(cache),
        "n_valid": len(ok),
        "failed": failed,
        "optimum": min(ok),
        "median": statistics.median(ok),
        "recorded": {
            "seconds": round(seconds, 1),
            "load_average_min_max": [min(loads), max(loads)],
            "repeat": 7,
            "command": "nice -n 5 python -m benchmarks failure-heavy-pocl record",
            "note": "shared 2-vCPU VM, other work running: times are noisy, the failures are not",
        },
    }
    SPACE_JSON.write_text(json.dumps(listing, indent=1) + "\n")
    print(f"wrote {CACHE} and {SPACE_JSON}: {len(ok)} valid, failed {failed}, optimum {min(ok):.3f} ms")


def loosened_replay() -> Any:
    """The recording as a :class:`~pytest_autotune.replay.Replay` (every combination in the space)."""
    from pytest_autotune.replay import Replay

    listing = json.loads(SPACE_JSON.read_text())
    return Replay.from_cache(CACHE, tune_params=listing["tune_params"], restrictions=listing["restrictions"])


NAME = "failure-heavy-pocl"  # python -m benchmarks failure-heavy-pocl
QUESTION = "Record the failure-heavy conv2d space on PoCL for the failure ablation."


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks failure-heavy-pocl",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("command", choices=["record", "check"])
    args = parser.parse_args(argv)
    if args.command == "record":
        record()
        return 0
    target = loosened_replay()
    counts = {k: v for k, v in target.failure_counts.items() if v}
    print(f"{target.space.size} configurations, {counts}, optimum {target.optimum:.4f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
