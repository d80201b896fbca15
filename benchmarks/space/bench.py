"""Space construction benchmark (issue 2): pytest-autotune's chain of trees against pyATF 0.0.13.

Every (case, engine) pair runs in its own subprocess, so imports, caches and peak memory do not
leak between rows. Per row: valid configurations, build CPU seconds (``time.thread_time`` around
the build, imports excluded; all measured work is single-threaded), build memory, and for
pytest-autotune the CPU time of 10,000 uniform samples and of 10,000 membership checks (half
valid, half not; median of 7). pyATF builds ``SearchSpace(..., enable_1d_access=False,
verbosity=0)`` from the same lambdas and is stopped after ``--cap`` CPU seconds (``RLIMIT_CPU``;
reported as "> CPU seconds used").

Build memory is measured the same way for both engines: the **peak resident set size during the
build minus the resident set size just before it**, both in the row's own process, after the
engine's modules (numpy for ours) are imported, every page of the loaded code (modules, shared
libraries) is made resident (``madvise(MADV_POPULATE_READ)``: code first run during the build is
not build memory; without this, numpy's compiled loops faulted in on first use count ~1 MB) and
garbage is collected. The kernel's peak
(``VmHWM``) is reset just before the build by writing ``5`` to ``/proc/self/clear_refs``, so the
peak is the build's own, not an import's. This counts everything the build really makes resident
(numpy buffers, Python objects, allocator arenas, the constraint source parsed to find lambdas)
and excludes the import baseline, which differs between the engines (numpy alone is ~20 MB and
pyATF does not import numpy; in a pytest run with the plugin numpy is loaded anyway). We prefer
RSS to ``tracemalloc``: tracemalloc misses allocator overhead and slows pure-Python code such as
pyATF several-fold, which would distort its timing. The absolute RSS after imports is printed
for reference.

    python -m benchmarks space                 # everything (pyATF needs ~20 min)
    python -m benchmarks space --quick         # ours only, seconds
    python -m benchmarks space --cases gemm-1024,conv-4096 --cap 300

On a shared machine run it with ``nice -n -10`` (as root; it then preempts niced experiments) and
read the load average it prints.
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.common import ROOT, format_table
from benchmarks.space.cases import CASES, EXPECTED_SIZES, build_ours, build_pyatf

#: Build-time targets of issue 2 (CPU seconds).
BUILD_TARGETS = {"saxpy-2^24": 5.0, "conv-4096": 2.0, "gemm-1024": 0.05, "deep-39": 1.0}
SPEEDUP_TARGETS = {"saxpy-2^24": 50.0, "conv-4096": 50.0}
SAMPLE_TARGET_MS = 20.0
MEMBERSHIP_TARGET_MS = 50.0
REPEATS = 7
#: Wall-clock safety limit of a worker, as a multiple of the CPU cap (the machine may be shared).
WALL_FACTOR = 8
#: ``madvise`` advice that faults pages in for reading (Linux >= 5.14).
MADV_POPULATE_READ = 22


def _status_mb(field: str) -> float:
    """A ``VmRSS``/``VmHWM`` field of ``/proc/self/status`` in MB."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    raise RuntimeError(f"{field} missing from /proc/self/status (the benchmark needs Linux)")


def _make_code_resident() -> None:
    """Map every page of the process's file-backed mappings (the code of the imported modules and
    libraries) into its resident set (``madvise(MADV_POPULATE_READ)``), so that code first run
    during the build does not count as build memory."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    with open("/proc/self/maps") as maps:
        regions = [line.split() for line in maps]
    for fields in regions:
        if len(fields) < 6 or not fields[5].startswith("/") or fields[5].startswith(("/dev/", "/proc/")):
            continue
        if "r" not in fields[1]:
            continue
        start, stop = (int(address, 16) for address in fields[0].split("-"))
        libc.madvise(start, stop - start, MADV_POPULATE_READ)  # failures only leave pages out


def _reset_peak_rss() -> None:
    """Reset the kernel's peak-RSS mark (``VmHWM``) of this process to its current RSS."""
    with open("/proc/self/clear_refs", "w") as clear_refs:
        clear_refs.write("5")


def _median_ms(fn: Any) -> float:
    """Median CPU time of ``REPEATS`` runs in milliseconds (CPU, not wall: robust on a shared machine;
    the median, not the minimum: this VM's CPU clock sometimes reads ~0 for sub-0.1 ms calls)."""
    times = []
    for _ in range(REPEATS):
        start = time.thread_time()
        fn()
        times.append(time.thread_time() - start)
    return statistics.median(times) * 1000


def _membership_batch(space: Any, n: int, seed: int) -> tuple[list[dict[str, Any]], list[bool]]:
    """``n // 2`` valid configurations and ``n - n // 2`` invalid ones (one parameter changed)."""
    import numpy as np

    from pytest_autotune.space.params import to_python

    rng = np.random.default_rng(seed)
    valid = space.configs(space.sample(n // 2, rng))
    names = list(space.names)
    invalid: list[dict[str, Any]] = []
    while len(invalid) < n - n // 2:
        base = dict(valid[int(rng.integers(len(valid)))])
        name = names[int(rng.integers(len(names)))]
        param = space.params[name]
        base[name] = to_python(param.values_at(np.array([int(rng.integers(param.size))]))[0])
        if not space.declaration.is_valid(base):
            invalid.append(base)
    configs = valid + invalid
    order = rng.permutation(len(configs))
    expected = [True] * len(valid) + [False] * len(invalid)
    return [configs[i] for i in order], [expected[i] for i in order]


def worker(engine: str, case: str) -> dict[str, Any]:
    """Build one case with one engine and measure it (runs in a subprocess)."""
    specs = CASES[case]()
    if engine == "ours":
        import numpy as np

        import pytest_autotune.space.chain  # noqa: F401 - import outside the measured region
    else:
        import pyatf.search_space  # noqa: F401
    imported = _status_mb("VmRSS")
    _make_code_resident()
    gc.collect()
    base = _status_mb("VmRSS")
    _reset_peak_rss()
    start = time.thread_time()
    space = build_ours(specs) if engine == "ours" else build_pyatf(specs)
    build_s = time.thread_time() - start
    peak = _status_mb("VmHWM")
    row: dict[str, Any] = {"build_s": build_s, "base_mb": imported, "build_mb": peak - base}
    if engine == "pyatf":
        row["size"] = space.constrained_size
        return row
    row["size"] = space.size
    rng = np.random.default_rng(0)
    row["sample_ms"] = _median_ms(lambda: space.sample(10_000, rng))
    configs, expected = _membership_batch(space, 10_000, seed=1)
    result = space.contains(configs)
    row["membership_ok"] = bool((result == np.array(expected)).all())
    row["membership_ms"] = _median_ms(lambda: space.contains(configs))
    return row


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_worker(engine: str, case: str, cap: float) -> dict[str, Any]:
    """Run :func:`worker` in a fresh interpreter limited to ``cap`` CPU seconds.

    Past the limit the result is ``{"capped": True, "cpu_s": <CPU seconds used>}``.
    """
    env = dict(os.environ, OMP_NUM_THREADS="1")
    command = [sys.executable, "-m", "benchmarks.space.bench", "--worker", engine, case]

    def limit_cpu() -> None:  # only pyATF can come near the cap
        if engine == "pyatf":
            resource.setrlimit(resource.RLIMIT_CPU, (math.ceil(cap), math.ceil(cap) + 5))

    before = _children_cpu()
    try:
        done = subprocess.run(
            command,
            capture_output=True,
            text=True,
            timeout=WALL_FACTOR * cap,
            env=env,
            cwd=ROOT,
            check=False,
            preexec_fn=limit_cpu,
        )
    except subprocess.TimeoutExpired:
        return {"capped": True, "cpu_s": _children_cpu() - before}
    used = _children_cpu() - before
    if done.returncode != 0:
        if used >= cap - 1:  # killed by the CPU limit (SIGXCPU)
            return {"capped": True, "cpu_s": used}
        return {"error": done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "failed"}
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _fmt_s(row: dict[str, Any], cap: float) -> str:
    if row.get("capped"):
        return f"> {row.get('cpu_s', cap):.0f}"
    if "error" in row:
        return "error"
    return f"{row['build_s']:.3f}" if row["build_s"] < 10 else f"{row['build_s']:.1f}"


def _fmt_mb(row: dict[str, Any]) -> str:
    return f"{row['build_mb']:.2f} ({row['base_mb']:.0f})"


def _mark(ok: bool | None) -> str:
    return "" if ok is None else (" ok" if ok else " MISS")


def table(results: dict[str, dict[str, dict[str, Any]]], cap: float, with_pyatf: bool) -> str:
    """The benchmark table as text."""
    header = [
        "space",
        "valid configs",
        "expected",
        "build CPU-s",
        "build MB (RSS after imports)",
        "10k samples CPU-ms",
        "10k member CPU-ms",
    ]
    if with_pyatf:
        header += ["pyATF CPU-s", "pyATF build MB (RSS after imports)", "speedup", "build MB vs pyATF"]
    lines: list[list[str]] = []
    for case, rows in results.items():
        ours = rows["ours"]
        if "error" in ours or ours.get("capped"):
            lines.append([case, ours.get("error", "capped")] + [""] * (len(header) - 2))
            continue
        expected = EXPECTED_SIZES.get(case)
        build_target = BUILD_TARGETS.get(case)
        line = [
            case,
            f"{ours['size']:,}",
            "" if expected is None else (f"{expected:,}" + _mark(expected == ours["size"])),
            _fmt_s(ours, cap) + _mark(None if build_target is None else ours["build_s"] <= build_target),
            _fmt_mb(ours),
            f"{ours['sample_ms']:.2f}" + _mark(ours["sample_ms"] <= SAMPLE_TARGET_MS),
            f"{ours['membership_ms']:.1f}"
            + _mark(ours["membership_ms"] <= MEMBERSHIP_TARGET_MS and ours["membership_ok"]),
        ]
        if with_pyatf:
            atf = rows["pyatf"]
            speed_target = SPEEDUP_TARGETS.get(case)
            if atf.get("capped"):
                ratio = atf.get("cpu_s", cap) / ours["build_s"]
                speed = f"> {ratio:,.0f}x" + _mark(None if speed_target is None else ratio >= speed_target)
                memory, verdict = "n/a (capped)", ""
            elif "error" in atf:
                speed, memory, verdict = "error", "error", ""
            else:
                ratio = atf["build_s"] / ours["build_s"]
                speed = f"{ratio:,.0f}x" + _mark(None if speed_target is None else ratio >= speed_target)
                same = "" if atf["size"] == ours["size"] else f" SIZE {atf['size']:,}"
                memory = _fmt_mb(atf) + same
                verdict = f"{ours['build_mb']:.2f} vs {atf['build_mb']:.2f}" + _mark(
                    ours["build_mb"] <= atf["build_mb"]
                )
            line += [_fmt_s(atf, cap), memory, speed, verdict]
        lines.append(line)
    return format_table(header, lines, sep=" | ")


NAME = "space"  # python -m benchmarks space
QUESTION = "How fast are building, sampling and membership of a search space, against pyATF?"


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks space",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--cases", default=",".join(CASES), help="comma-separated subset of " + ", ".join(CASES)
    )
    parser.add_argument(
        "--cap", type=float, default=600.0, help="CPU seconds before a pyATF build is stopped"
    )
    parser.add_argument("--quick", action="store_true", help="skip pyATF (a smoke run of seconds)")
    parser.add_argument("--no-pyatf", action="store_true", help="skip pyATF")
    parser.add_argument("--json", type=Path, help="also write the raw results here")
    parser.add_argument("--worker", nargs=2, metavar=("ENGINE", "CASE"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(*args.worker)))
        return 0
    cases = [c.strip() for c in args.cases.split(",") if c.strip()]
    unknown = [c for c in cases if c not in CASES]
    if unknown:
        parser.error(f"unknown case(s) {unknown}; known: {', '.join(CASES)}")
    with_pyatf = not (args.quick or args.no_pyatf)
    results: dict[str, dict[str, dict[str, Any]]] = {}
    for case in cases:
        results[case] = {"ours": run_worker("ours", case, cap=args.cap)}
        if with_pyatf:
            results[case]["pyatf"] = run_worker("pyatf", case, cap=args.cap)
        print(f"  done {case}", file=sys.stderr, flush=True)
    print(
        f"space benchmark ({'with' if with_pyatf else 'without'} pyATF 0.0.13, cap {args.cap:.0f} CPU-s); "
        f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs"
    )
    print(table(results, args.cap, with_pyatf))
    print(
        "build CPU-s: thread CPU time of the build, imports excluded; build MB: peak RSS during the "
        "build minus RSS just before it (loaded code made resident first, VmHWM reset through "
        "/proc/self/clear_refs; same method for both engines), in brackets the RSS after imports "
        "(numpy alone is ~20 MB of ours; pyATF does not import numpy); samples/membership: median "
        "CPU time of 7 runs; speedup: pyATF CPU-s / ours; 'ok'/'MISS': issue 2 targets."
    )
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
