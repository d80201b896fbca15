"""How noisy is one block of ``--autotune-compare``, and how many blocks would a slowdown need?

    python -m benchmarks gate-noise --load 2            # the gate's own A-vs-A blocks, example kernels
    python -m benchmarks gate-noise --load 2 --interleave   # blocks against call-by-call alternation

The relative gate (``pytest --autotune-compare=REF``, issue 25) judges the paired log-ratios
``log(B / A)`` of its blocks (:mod:`pytest_autotune.timing.paired`). How fast it can decide is set
by one number per kernel and machine: the standard deviation ``sigma`` of one block's log-ratio.
This benchmark measures it where it matters, on the unchanged gate project
(:mod:`benchmarks.gate.project`: the example kernels on PoCL and the numpy kernel) compared with its
own ``HEAD``, so that the true ratio is 1, with ``--load N`` busy processes beside it. Each kernel runs
a fixed number of blocks (``--blocks``; the benchmark makes the compare, in a child process, run
one pair of workers measuring that many blocks, so that no early verdict cuts the sample short).

From ``sigma`` the table computes what the gate would need to catch a slowdown ``s`` at the
default tolerance ``t`` (5%) with 80% power: the gate calls a regression when the lower end of its
interval for the ratio clears ``1 + t``, at the confidence of one of its looks (97.5% one-sided,
Bonferroni-split over the plan's looks), so with the signed-rank interval's efficiency (3/pi
against the mean's, for normal data) it needs about
``n = ((z_conf + z_power) * sigma / (log(1 + s) - log(1 + t)))^2 * pi / 3`` blocks, and
``n`` times the measured seconds per block. The same with tolerance 0 shows that no choice of
tolerance brings +10% within the 20-second target when ``sigma`` is 0.15 or more. The table takes
``sigma`` from the median absolute deviation (times 1.4826), not the standard deviation: the
log-ratios have heavy tails, which the signed-rank interval shrugs off, so the robust scale gives
the smaller, optimistic, block counts (the standard deviation is printed beside it).

``--interleave`` asks whether a finer interleaving would help: two worker processes, each with its
own OpenCL context and kernel (a compute-bound and a memory-bound one), are alternated either in
blocks (a quarter-second measurement of each side, ABBA, as the gate does) or call by call (ABBA
at every kernel call, half a second per block), and the log-ratio's spread of the two schemes is
printed side by side, for an unchanged kernel and one made 10% slower.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from statistics import NormalDist
from typing import Any

from scipy.stats import median_abs_deviation

from benchmarks.common import format_table
from benchmarks.gate.project import KERNELS, BusyLoad, make_project, project_env

POWER = 0.8
TOLERANCE = 0.05
SLOWDOWNS = (0.10, 0.20)
#: The signed-rank (Hodges-Lehmann) interval's asymptotic efficiency against the mean's (normal data).
EFFICIENCY = 3 / math.pi


def blocks_needed(
    sigma: float, slowdown: float, tolerance: float, looks: int = 3, confidence: float = 0.95
) -> float:
    """Blocks for 80% power to call ``slowdown`` a regression beyond ``tolerance`` (module docstring)."""
    gap = math.log1p(slowdown) - math.log1p(tolerance)
    if gap <= 0 or not math.isfinite(sigma):
        return math.inf
    z_conf = NormalDist().inv_cdf(1 - (1 - confidence) / 2 / looks)
    z_power = NormalDist().inv_cdf(POWER)
    return ((z_conf + z_power) * sigma / gap) ** 2 / EFFICIENCY


def _child(blocks: int, export: str) -> int:
    """In the project: run the compare with one pair of workers measuring ``blocks`` blocks."""
    import pytest

    import pytest_autotune.plugin.compare.pair as compare_pair

    compare_pair.BLOCKS_PER_PAIR = blocks  # type: ignore[misc]
    compare_pair.MIN_PAIRS = 1  # type: ignore[misc]
    compare_pair.MAX_PAIRS = 1  # type: ignore[misc]
    return int(
        pytest.main(["-q", "-p", "no:cacheprovider", "--autotune-compare=HEAD", f"--autotune-json={export}"])
    )


def _log_ratios(bench: dict[str, Any]) -> tuple[list[float], float]:
    extra = bench.get("extra_info", {})
    times = extra.get("autotune_compare_detail", {}).get("times") or {}
    a, b = times.get("ref", []), times.get("working", [])
    summary = extra.get("autotune_compare", {})
    blocks = max(1, int(summary.get("blocks") or len(a) or 1))
    return [math.log(y / x) for x, y in zip(a, b, strict=False) if x > 0 and y > 0], float(
        summary.get("seconds") or math.nan
    ) / blocks


def gate_rows(blocks: int, load: int, kernels: list[str]) -> tuple[list[list[object]], float]:
    """Measure every kernel's blocks in a fresh project; one table row per kernel."""
    with tempfile.TemporaryDirectory(prefix="autotune-gate-noise-") as tmp:
        project = Path(tmp)
        make_project(project, kernels)
        export = project / "out.json"
        with BusyLoad(load):
            code = subprocess.run(
                [sys.executable, "-m", "benchmarks.gate.noise", "--child", str(blocks), str(export)],
                cwd=project,
                env=project_env(dict(os.environ)),
                check=False,
            ).returncode
            load_end = os.getloadavg()[0]
        if not export.exists():
            raise SystemExit(f"the compare run wrote no export (exit status {code})")
        data = json.loads(export.read_text(encoding="utf-8"))
    rows: list[list[object]] = []
    for bench in data.get("benchmarks", []):
        ratios, per_block = _log_ratios(bench)
        if len(ratios) < 3:
            rows.append([bench.get("name", "?"), len(ratios), "-", "-", "-", "-", "-", "-", "-"])
            continue
        sigma = statistics.stdev(ratios)
        mad = float(median_abs_deviation(ratios, scale="normal"))
        row: list[object] = [
            bench.get("name", "?"),
            len(ratios),
            f"{sigma:.3f}",
            f"{mad:.3f}",
            f"{per_block:.2f}",
        ]
        for slowdown in SLOWDOWNS:
            n = blocks_needed(mad, slowdown, TOLERANCE)
            row.append(f"{n:.0f} ({n * per_block:.0f} s)")
        n0 = blocks_needed(mad, 0.10, 0.0)
        row.append(f"{n0:.0f} ({n0 * per_block:.0f} s)")
        rows.append(row)
    return rows, load_end


def _side(conn: Any, kind: str, scale: float) -> None:  # pragma: no cover - runs in a child process
    import numpy as np
    import pyopencl as cl

    context = cl.create_some_context(interactive=False)
    queue = cl.CommandQueue(context, properties=cl.command_queue_properties.PROFILING_ENABLE)
    program = cl.Program(
        context,
        """
        __kernel void compute(__global float* a, int iterations) {
            int i = get_global_id(0); float x = a[i];
            for (int k = 0; k < iterations; k++) { x = x * 0.999f + 0.001f; }
            a[i] = x; }
        __kernel void gather(__global const float* a, __global float* b, int reads) {
            int i = get_global_id(0); float s = 0;
            for (int r = 0; r < reads; r++) { s += a[(i + r * 4096) % (1 << 22)]; }
            b[i] = s; }
        """,
    ).build()
    compute, gather = cl.Kernel(program, "compute"), cl.Kernel(program, "gather")
    n = 1 << 22
    a = cl.Buffer(context, cl.mem_flags.READ_WRITE, 4 * n)
    b = cl.Buffer(context, cl.mem_flags.READ_WRITE, 4 * n)

    def call() -> float:
        if kind == "compute":
            event = compute(queue, (1 << 14,), (64,), a, np.int32(round(2000 * scale)))
        else:
            event = gather(queue, (n,), (64,), a, b, np.int32(round(10 * scale)))
        event.wait()
        return float(event.profile.end - event.profile.start)

    while (message := conn.recv()) != "stop":
        if message == "call":
            conn.send(call())
        else:
            total, count, start = 0.0, 0, time.perf_counter()
            while time.perf_counter() - start < message:
                total += call()
                count += 1
            conn.send(total / count)


def interleave_rows(load: int, blocks: int) -> list[list[object]]:
    """Blocks against call-by-call alternation (module docstring), one row per kernel and change."""
    import multiprocessing

    rows: list[list[object]] = []
    with BusyLoad(load):
        for kind in ("compute", "gather"):
            for scale in (1.0, 1.1):
                ends = [multiprocessing.Pipe() for _ in range(2)]
                workers = [
                    multiprocessing.Process(target=_side, args=(child, kind, s))
                    for (_, child), s in zip(ends, (1.0, scale), strict=True)
                ]
                for worker in workers:
                    worker.start()
                a, b = ends[0][0], ends[1][0]
                for end in (a, b):
                    end.send(0.3)
                    end.recv()
                by_block, by_call, calls = [], [], 0
                for index in range(blocks):
                    got = {}
                    for name, end in (("a", a), ("b", b)) if index % 2 == 0 else (("b", b), ("a", a)):
                        end.send(0.25)
                        got[name] = end.recv()
                    by_block.append(math.log(got["b"] / got["a"]))
                    sums, calls, start = {"a": 0.0, "b": 0.0}, 0, time.perf_counter()
                    while time.perf_counter() - start < 0.5:
                        for name, end in (("a", a), ("b", b)) if calls % 2 == 0 else (("b", b), ("a", a)):
                            end.send("call")
                            sums[name] += end.recv()
                        calls += 1
                    by_call.append(math.log(sums["b"] / sums["a"]))
                for end in (a, b):
                    end.send("stop")
                for worker in workers:
                    worker.join()
                rows.append(
                    [
                        kind,
                        f"+{scale - 1:.0%}",
                        f"{statistics.fmean(by_block):+.3f}",
                        f"{statistics.stdev(by_block):.3f}",
                        f"{statistics.fmean(by_call):+.3f}",
                        f"{statistics.stdev(by_call):.3f}",
                        calls,
                    ]
                )
    return rows


NAME = "gate-noise"  # python -m benchmarks gate-noise
QUESTION = "How noisy is one compare block, and how many blocks does a slowdown need?"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--load", type=int, default=2, help="busy processes beside the measurement (2)")
    parser.add_argument("--blocks", type=int, default=24, help="blocks per kernel (24)")
    parser.add_argument("--kernels", nargs="+", default=list(KERNELS), choices=list(KERNELS))
    parser.add_argument("--interleave", action="store_true", help="also compare blocks with call-by-call")
    parser.add_argument("--child", nargs=2, metavar=("BLOCKS", "EXPORT"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return _child(int(args.child[0]), args.child[1])
    start_load = os.getloadavg()[0]
    started = time.perf_counter()
    rows, end_load = gate_rows(args.blocks, args.load, args.kernels)
    header = ["test", "blocks", "sigma", "1.48 MAD", "s/block"]
    header += [f"+{s:.0%} at tol 5%: blocks (s)" for s in SLOWDOWNS] + ["+10% at tol 0: blocks (s)"]
    print(
        format_table(
            header,
            rows,
            align="lrrrrrrr",
            title=f"A-vs-A blocks of --autotune-compare, --load {args.load}, load average "
            f"{start_load:.1f} -> {end_load:.1f}, {time.perf_counter() - started:.0f} s",
        )
    )
    if args.interleave:
        print()
        print(
            format_table(
                [
                    "kernel",
                    "change",
                    "blocks: mean",
                    "blocks: sd",
                    "calls: mean",
                    "calls: sd",
                    "call pairs/block",
                ],
                interleave_rows(args.load, args.blocks),
                align="llrrrrr",
                title=f"log(B/A) per half-second block: blocks of calls (ABBA) or call by call, "
                f"--load {args.load}, "
                f"load average {os.getloadavg()[0]:.1f}",
            )
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
