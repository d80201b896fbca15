"""The run-time reader's costs against issue 46's targets.

    python -m benchmarks runtime            # the measurement (about a minute; run it alone)
    python -m benchmarks runtime --quick    # smoke run: few repetitions, numbers not final

Four measures, each the median of its repetitions:

* **import**: ``import pytest_autotune.runtime`` in a fresh interpreter; the modules it brings in
  must hold none of pytest, torch or numpy (target: none), and its time is shown;
* **first load**: reading a store of about 1 MB (realistic entries: a configuration, a baseline,
  the tuning record and a 64-trial history each; keyed entries of 4 kernels on 4 devices) and the
  first lookup, in a fresh interpreter after the import (target: <= 20 ms); its CPU time is shown
  too, which other work on the machine inflates less than the wall time;
* **lookup**: a later ``choose(kernel, device=..., key=...)`` for a key already asked for
  (target: <= 20 us);
* **launch overhead**: ``tuned(...)``'s launch minus a direct launch with the configuration's
  keywords, per launch (target: <= 5 us). The kernel is a fake ``@triton.jit`` object whose launch
  does nothing: on a CPU Triton can only interpret kernels (milliseconds each), which would hide
  the decorator's microseconds; the decorator's own work (the key's tuple, the choice's lookup,
  the keyword merge) is what is measured.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.common import format_table

NAME = "runtime"
QUESTION = "what do the run-time reader and the Triton decorator cost (import, 1 MB load, lookup, launch)?"

KERNELS = ("matmul", "softmax", "conv", "reduce")
DEVICES = (
    "NVIDIA H100 80GB HBM3 / sm_90",
    "NVIDIA A100-SXM4-80GB / sm_80",
    "NVIDIA GeForce RTX 4090 / sm_89",
)
PARAMS = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "num_warps", "num_stages")


def make_store(path: Path, target_bytes: int = 1 << 20) -> int:
    """Write a store of about ``target_bytes`` with realistic entries; the number of entries."""
    from pytest_autotune.store.document import dumps

    rng = random.Random(1)
    devices: dict[str, Any] = {d: {"info": {"key": d}, "tests": {}} for d in (*DEVICES, "host:cpu")}
    count = 0
    while True:
        kernel = KERNELS[count % len(KERNELS)]
        device = (*DEVICES, "host:cpu")[count // len(KERNELS) % 4]
        size = 2 ** (8 + count // 16)
        config = {p: 2 ** rng.randint(1, 7) for p in PARAMS}
        trials = [[round(1 + rng.random(), 6), *(2 ** rng.randint(1, 7) for _ in PARAMS)] for _ in range(64)]
        devices[device]["tests"][f"tests/test_{kernel}.py::test_{kernel}[{size}]"] = {
            "config": config,
            "space_hash": "0123456789abcdef",
            "kernel": kernel,
            "key": {"M": size, "N": size, "K": size},
            "baseline": {
                "median": 1e-4,
                "iqr": 1e-6,
                "q1": 9.9e-5,
                "q3": 1.01e-4,
                "min": 9e-5,
                "rounds": 20,
                "unit": "s",
                "noise": 0.02,
                "processes": 3,
            },
            "tuning": {"trials": 100, "counts": {"ok": 100}, "strategy": "bo", "seed": 1, "duration": 60.0},
            "history": {"version": 1, "params": list(PARAMS), "best": 1e-4, "trials": trials, "failures": []},
        }
        count += 1
        if count % 16 == 0:
            text = dumps({"schema_version": 1, "devices": devices})
            if len(text) >= target_bytes:
                path.write_text(text)
                return count


IMPORT = """
import sys, time
t = time.perf_counter()
import pytest_autotune.runtime
elapsed = time.perf_counter() - t
loaded = {m.split(".")[0] for m in sys.modules}
heavy = sorted({"pytest", "_pytest", "torch", "numpy", "triton", "pyopencl"} & loaded)
print(__import__("json").dumps({"seconds": elapsed, "heavy": heavy}))
"""

FIRST_LOAD = """
import json, sys, time
from pytest_autotune.runtime import TunedConfigs
t, cpu = time.perf_counter(), time.process_time()
tuned = TunedConfigs.read(sys.argv[1])
tuned.choose("matmul", device="NVIDIA H100 80GB HBM3 / sm_90", key={"M": 1000, "N": 1000, "K": 1000})
print(json.dumps({"seconds": time.perf_counter() - t, "cpu": time.process_time() - cpu}))
"""


def _fresh(code: str, *args: str) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, check=True)
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def _per_call(fn: Any, calls: int, repeats: int) -> float:
    """The median over ``repeats`` of the seconds per call of ``calls`` calls of ``fn``."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        times.append((time.perf_counter() - start) / calls)
    return statistics.median(times)


class _FakeJit:
    """A ``@triton.jit`` stand-in whose launch does nothing."""

    def __init__(self) -> None:
        self.arg_names = ["x_ptr", "y_ptr", "M", "N", "K"]

    def __getitem__(self, grid: Any) -> Any:
        return _launch


def _launch(*args: Any, **kwargs: Any) -> None:
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=QUESTION)
    parser.add_argument("--quick", action="store_true", help="few repetitions (a smoke run)")
    args = parser.parse_args()
    runs, calls, repeats = (3, 2_000, 3) if args.quick else (15, 100_000, 9)
    rows = []

    imports = [_fresh(IMPORT) for _ in range(runs)]
    heavy = sorted({m for run in imports for m in run["heavy"]})
    seconds = statistics.median(run["seconds"] for run in imports)
    rows.append(["import brings", ", ".join(heavy) or "none", "none", "ok" if not heavy else "MISSED"])
    rows.append(["import time", f"{seconds * 1e3:.1f} ms", "-", ""])

    with tempfile.TemporaryDirectory() as folder:
        store = Path(folder) / "autotune.json"
        entries = make_store(store)
        size = store.stat().st_size
        loads = [_fresh(FIRST_LOAD, str(store)) for _ in range(runs)]
        load = statistics.median(run["seconds"] for run in loads)
        cpu = statistics.median(run["cpu"] for run in loads)
        rows.append(
            [
                f"first load ({size / 2**20:.2f} MiB, {entries} entries)",
                f"{load * 1e3:.1f} ms",
                "<= 20 ms",
                "ok" if load <= 0.020 else "MISSED",
            ]
        )
        rows.append(["  its CPU time (this process alone)", f"{cpu * 1e3:.1f} ms", "-", ""])

        from pytest_autotune.runtime import TunedConfigs, tuned

        configs = TunedConfigs.read(store)
        device, key = DEVICES[0], {"M": 1000, "N": 1000, "K": 1000}
        configs.choose("matmul", device=device, key=key)
        lookup = _per_call(lambda: configs.choose("matmul", device=device, key=key), calls, repeats)
        rows.append(["lookup (a key asked before)", f"{lookup * 1e6:.2f} us", "<= 20 us",
                     "ok" if lookup <= 20e-6 else "MISSED"])  # fmt: skip

        fake = _FakeJit()
        kernel = tuned(kernel="matmul", key=["M", "N", "K"], store=store, device=device)(fake)
        kernel[(1,)]("x", "y", 1000, 1000, 1000)
        config = dict(kernel.chosen[(1000, 1000, 1000)])
        launcher = kernel[(1,)]

        def through() -> None:
            launcher("x", "y", 1000, 1000, 1000)

        def direct() -> None:
            fake[(1,)]("x", "y", 1000, 1000, 1000, **config)

        overhead = _per_call(through, calls, repeats) - _per_call(direct, calls, repeats)
        rows.append(["launch overhead (fake kernel)", f"{overhead * 1e6:.2f} us", "<= 5 us",
                     "ok" if overhead <= 5e-6 else "MISSED"])  # fmt: skip

    load_avg = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    title = f"runtime costs ({'quick: not final' if args.quick else 'final'}; load average {load_avg:.1f})"
    print(format_table(["measure", "value", "target", ""], rows, align="lrll", title=title))
    return 0
