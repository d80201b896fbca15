"""An application that launches SAXPY with the configuration ``pytest --autotune`` stored for it.

``python -m example_kernels.apps.saxpy_app N [--store autotune.json]`` computes ``z = a x + y`` over
``N`` floats on the first OpenCL device (or the one ``PYOPENCL_CTX`` names) with the stored
configuration of kernel ``"saxpy"`` for this device and the nearest tuned ``N``
(``example_kernels/test_saxpy_sizes.py`` tunes it), checks the result, and prints which entry it
launched and why (with ``PYTEST_AUTOTUNE_CAPTURE=DIR`` it saves its inputs first, see
``runtime.capture``). No pytest: the source, the parameters and the launch sizes come from the kernel
module the test imports too, the defines are written as the test writes them (``runtime.build``).
"""

from __future__ import annotations

import argparse
import json
import logging

import numpy as np
import pyopencl as cl

from example_kernels.saxpy_sizes import DEFAULT, KERNEL, PARAMS, A, check, inputs, launch
from pytest_autotune import build_space, runtime


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("n", type=int, help="number of elements (a multiple of 4096)")
    parser.add_argument("--store", default="autotune.json", help="the tuned configurations (autotune.json)")
    args = parser.parse_args(argv)
    if args.n <= 0 or args.n % 4096:
        parser.error(f"n={args.n}: the kernel has no bounds check; give a positive multiple of 4096")
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")

    ctx = cl.create_some_context(interactive=False)
    queue = cl.CommandQueue(ctx)
    choice = runtime.load(args.store).choose(
        "saxpy",
        device=runtime.opencl_device(ctx.devices[0]),
        key={"N": args.n},
        default=DEFAULT,
        space=build_space(PARAMS),
    )
    saxpy = runtime.build(ctx, KERNEL, choice.config)
    x, y = inputs(args.n)
    # with PYTEST_AUTOTUNE_CAPTURE=DIR: this launch's inputs, once per N, for a test to tune on
    runtime.capture("saxpy", {"N": args.n}, {"a": A, "x": x, "y": y})
    mf = cl.mem_flags
    x_buf = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=x)
    y_buf = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=y)
    z_buf = cl.Buffer(ctx, mf.WRITE_ONLY, args.n * 4)
    global_size, local_size = launch(args.n, choice.config)
    saxpy(queue, global_size, local_size, A, x_buf, y_buf, z_buf)
    result = np.empty(args.n, dtype=np.float32)
    cl.enqueue_copy(queue, result, z_buf)
    check(result, x, y)
    shown = {"config": dict(choice.config), "entry": choice.entry, "key": dict(choice.key or {})}
    print(json.dumps({**shown, "device_match": choice.device_match, "size_match": choice.size_match}))
    print(choice.reason)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
