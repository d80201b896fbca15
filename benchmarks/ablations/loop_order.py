"""A real OpenCL kernel with a loop-order (permutation) parameter, recorded once for replay.

The kernel multiplies two ``N x N`` matrices; each work-item computes a
``TI x TJ`` tile of the result with a four-deep loop nest over

* ``i`` - tile row, ``j`` - tile column,
* ``b`` - block of the reduction (``N / TK`` blocks), ``k`` - index inside a block (``TK``),

in the order given by the ``order`` parameter (all 4! = 24 orders compute the
same product, up to the summation order). The order changes the memory
access pattern (which array is streamed, which one is reused from cache)
and what the compiler can keep in registers, so on the PoCL CPU device it
matters by several times.

    python -m benchmarks loop-order record     # measure every configuration (minutes), write data
    python -m benchmarks loop-order check      # load the recorded data through Replay.from_cache

Files written to ``benchmarks/data/``: ``bo_loop_order_pocl.json.gz``, a
Kernel Tuner cache (keys are the values joined by commas in
``tune_params_keys`` order; the order is spelled as a string such as
``"ijbk"``), and ``bo_loop_order_pocl.space.json``, its parameter lists
and restrictions in the format of ``spaces.json``. :func:`permutation_replay`
replays it with ``order`` as a :class:`~pytest_autotune.space.Permutation`
parameter, as the Bayesian engine should see it.
"""

from __future__ import annotations

import argparse
import gzip
import itertools
import json
import os
import statistics
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

DATA = Path(__file__).resolve().parents[1] / "data"
CACHE = DATA / "bo_loop_order_pocl.json.gz"
SPACE_JSON = DATA / "bo_loop_order_pocl.space.json"

N = 256
LOOPS = ("i", "j", "b", "k")
TUNE_PARAMS: dict[str, list[Any]] = {
    "order": ["".join(p) for p in itertools.permutations(LOOPS)],
    "TI": [1, 4, 8],
    "TJ": [1, 4, 8],
    "TK": [4, 16],
}
RESTRICTIONS: list[str] = []

_LOOP_HEADERS = {
    "i": "for (int i = 0; i < TI; ++i)",
    "j": "for (int j = 0; j < TJ; ++j)",
    "b": "for (int b = 0; b < N / TK; ++b)",
    "k": "for (int k = 0; k < TK; ++k)",
}


def kernel_source(order: str) -> str:
    """OpenCL source of the tiled product with its loops nested in ``order``."""
    loops = "\n".join("    " * (depth + 1) + _LOOP_HEADERS[name] for depth, name in enumerate(order))
    body = "    " * 5 + "acc[i][j] += A[(row + i) * N + b * TK + k] * B[(b * TK + k) * N + col + j];"
    return f"""
__kernel void tiled_matmul(__global const float* A, __global const float* B, __global float* C) {{
    const int row = get_global_id(1) * TI;
    const int col = get_global_id(0) * TJ;
    float acc[TI][TJ];
    for (int i = 0; i < TI; ++i)
        for (int j = 0; j < TJ; ++j)
            acc[i][j] = 0.0f;
{loops}
{body}
    for (int i = 0; i < TI; ++i)
        for (int j = 0; j < TJ; ++j)
            C[(row + i) * N + col + j] = acc[i][j];
}}
"""


def _key(config: Mapping[str, Any]) -> str:
    return ",".join(str(config[name]) for name in TUNE_PARAMS)


def record(repeat: int, out: Path = CACHE) -> None:
    """Measure every configuration on the default PoCL device and write the cache files."""
    import pyopencl as cl

    platform = next(p for p in cl.get_platforms() if "Portable Computing Language" in p.name)
    device = platform.get_devices()[0]
    context = cl.Context([device])
    queue = cl.CommandQueue(context, properties=cl.command_queue_properties.PROFILING_ENABLE)
    rng = np.random.default_rng(0)
    a = rng.random((N, N), dtype=np.float32)
    b = rng.random((N, N), dtype=np.float32)
    reference = a.astype(np.float64) @ b.astype(np.float64)
    mf = cl.mem_flags
    a_buf = cl.Buffer(context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=a)
    b_buf = cl.Buffer(context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=b)
    c_buf = cl.Buffer(context, mf.WRITE_ONLY, size=a.nbytes)
    result = np.empty_like(a)
    cache: dict[str, dict[str, Any]] = {}
    configs = [
        dict(zip(TUNE_PARAMS, combo, strict=True)) for combo in itertools.product(*TUNE_PARAMS.values())
    ]
    started = time.perf_counter()
    print(f"device: {device.name}; {len(configs)} configurations; load {os.getloadavg()[0]:.2f}", flush=True)
    for number, config in enumerate(configs, start=1):
        options = [f"-DN={N}", f"-DTI={config['TI']}", f"-DTJ={config['TJ']}", f"-DTK={config['TK']}"]
        entry: dict[str, Any] = dict(config)
        try:
            program = cl.Program(context, kernel_source(config["order"])).build(options=options)
            kernel = program.tiled_matmul
            kernel.set_args(a_buf, b_buf, c_buf)
            global_size = (N // config["TJ"], N // config["TI"])
            times = []
            for _ in range(repeat + 1):  # the first run warms up and is dropped
                event = cl.enqueue_nd_range_kernel(queue, kernel, global_size, None)
                event.wait()
                times.append((event.profile.end - event.profile.start) * 1e-6)
            cl.enqueue_copy(queue, result, c_buf).wait()
            if not np.allclose(result, reference, rtol=1e-3, atol=1e-2):
                entry["time"] = "InvalidConfig"
            else:
                entry["times"] = times[1:]
                entry["time"] = statistics.median(times[1:])
        except cl.Error as exc:  # build or launch failure: recorded as Kernel Tuner does
            failed = "CompilationFailedConfig" if isinstance(exc, cl.RuntimeError) else "RuntimeFailedConfig"
            entry["time"] = failed
        cache[_key(config)] = entry
        if number % 24 == 0:
            print(f"  {number}/{len(configs)} after {time.perf_counter() - started:.0f} s", flush=True)
    document = {
        "device_name": device.name,
        "kernel_name": "tiled_matmul",
        "problem_size": [N, N],
        "tune_params_keys": list(TUNE_PARAMS),
        "tune_params": TUNE_PARAMS,
        "objective": "time",
        "cache": cache,
    }
    with gzip.open(out, "wt") as handle:
        json.dump(document, handle)
    ok = [e["time"] for e in cache.values() if not isinstance(e["time"], str)]
    listing = {
        "file": out.name,
        "kernel": "tiled_matmul",
        "gpu": "PoCL CPU",
        "device_name": device.name,
        "problem_size": [N, N],
        "objective": "time",
        "objective_higher_is_better": False,
        "tune_params": TUNE_PARAMS,
        "restrictions": RESTRICTIONS,
        "constrained_size": len(cache),
        "n_valid": len(ok),
        "optimum": min(ok),
        "median": statistics.median(ok),
        "recorded": {
            "seconds": round(time.perf_counter() - started, 1),
            "load_average": list(os.getloadavg()),
            "repeat": repeat,
            "command": "nice -n 10 python -m benchmarks loop-order record",
        },
    }
    SPACE_JSON.write_text(json.dumps(listing, indent=1) + "\n")
    print(
        f"wrote {out} and {SPACE_JSON}: {len(ok)} valid, optimum {min(ok):.3f} ms, "
        f"median {statistics.median(ok):.3f} ms, {time.perf_counter() - started:.0f} s",
        flush=True,
    )


def permutation_replay() -> tuple[Any, Callable[[Mapping[str, Any]], Any], float]:
    """(space with ``order`` as a Permutation, objective, optimum) of the recorded data.

    The cache is loaded with :meth:`Replay.from_cache` (``order`` is a string
    there); the returned space declares ``order`` as ``Permutation(["i", "j",
    "b", "k"])`` and the objective joins the ordering back into the string.
    """
    from pytest_autotune.replay import Replay
    from pytest_autotune.space import Permutation, Set, build_space

    listing = json.loads(SPACE_JSON.read_text())
    recorded = Replay.from_cache(
        CACHE, tune_params=listing["tune_params"], restrictions=listing["restrictions"]
    )
    params: dict[str, Any] = {"order": Permutation(list(LOOPS))}
    params.update({name: Set(*values) for name, values in listing["tune_params"].items() if name != "order"})
    space = build_space(params, listing["restrictions"])

    def objective(config: Mapping[str, Any]) -> Any:
        return recorded.objective({**config, "order": "".join(config["order"])})

    return space, objective, recorded.optimum


NAME = "loop-order"  # python -m benchmarks loop-order
QUESTION = "Record the loop-order (permutation) kernel's measurements for replay."


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks loop-order",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("command", choices=["record", "check", "source"])
    parser.add_argument("--repeat", type=int, default=5, help="timed runs per configuration")
    parser.add_argument("--order", default="ijbk", help="loop order for 'source'")
    args = parser.parse_args(argv)
    if args.command == "source":
        print(kernel_source(args.order))
    elif args.command == "record":
        record(args.repeat)
    else:
        space, objective, optimum = permutation_replay()
        values = [objective(c) for c in space.configs(space.at_index(range(space.size)))]
        times = sorted(v.value for v in values if v.value is not None)
        print(
            f"{space.size} configurations, optimum {optimum:.3f} ms, "
            f"best/median/worst {times[0]:.3f}/{statistics.median(times):.3f}/{times[-1]:.3f} ms"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
