"""A parameter named like an OpenCL keyword (``read_only``, Kernel Tuner's sepconv example) tunes and
runs: ``autotune.build`` writes the configuration as ``#define`` lines, after the compiler's built-in
header. As ``-D`` options (``define_style="options"``) the same name breaks that header."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("pyopencl")
pytestmark = pytest.mark.opencl  # skipped, with the reason, when no device can build a kernel

KERNEL_TEST = '''
import numpy as np
import pyopencl as cl
from pytest_autotune import Geometry, tunable

SOURCE = """
__kernel void blend(__global const float* restrict in, __global float* restrict out) {
    const int i = get_global_id(0);
#if read_only
    out[i] = in[i];
#else
    out[i] = in[i] * local + (float)write_only;
#endif
}
"""
N = 4096
STYLE = STYLE_VALUE


@tunable(read_only=[0, 1], local=[0.5, 2.0], write_only=[0, 3], block_size_x=[32, 64],
         geometry=Geometry(N), strategy="exhaustive", isolate="none")
def test_blend(autotune, cl_queue):
    cfg = autotune.config
    ctx = cl_queue.context
    kwargs = {} if STYLE is None else {"define_style": STYLE}
    program = autotune.build(ctx, SOURCE, **kwargs)
    host = np.linspace(-1.0, 1.0, N, dtype=np.float32)
    mf = cl.mem_flags
    source = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=host)
    target = cl.Buffer(ctx, mf.WRITE_ONLY, host.nbytes)
    global_size, local_size = autotune.launch  # block_size_x: Kernel Tuner's default work-group name
    assert global_size == (N,)
    autotune.measure(lambda: program(cl_queue, global_size, local_size, source, target))
    out = np.empty_like(host)
    cl.enqueue_copy(cl_queue, out, target)
    if cfg["read_only"]:
        expected = host
    else:
        expected = host * np.float32(cfg["local"]) + np.float32(cfg["write_only"])
    np.testing.assert_array_equal(out, expected)
'''


def _kernel_test(style: str | None) -> str:
    return KERNEL_TEST.replace("STYLE_VALUE", repr(style))


def test_a_parameter_named_read_only_tunes_and_checks(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_keyword=_kernel_test(None))
    pytester.makeini("[pytest]\nautotune_budget = 16\n")
    tuned = pytester.runpytest_subprocess("--autotune", "-p", "no:cacheprovider")
    tuned.assert_outcomes(passed=1)
    entry = next(iter(json.loads((pytester.path / "autotune.json").read_text())["devices"].values()))
    counts = entry["tests"]["test_keyword.py::test_blend"]["tuning"]["counts"]
    assert counts["ok"] == 16  # every configuration built, ran and matched numpy
    pytester.runpytest_subprocess("--autotune-check=warn", "-p", "no:cacheprovider").assert_outcomes(passed=1)


def test_as_d_options_the_same_name_breaks_the_built_in_header(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_keyword=_kernel_test("options"))
    pytester.makeini("[pytest]\nautotune_budget = 4\n")
    result = pytester.runpytest_subprocess("--autotune", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*no feasible configuration: all 4 evaluated configurations failed (compile 4*"]
    )
