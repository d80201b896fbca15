"""Isolated trials with a real OpenCL device: the worker opens the same device and survives bad kernels."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("pyopencl")
pytestmark = pytest.mark.opencl  # skipped, with the reason, when no device can build a kernel

KERNEL_TEST = """
import numpy as np
import pyopencl as cl
from pytest_autotune import Bool, Set, tunable

SOURCE = '''
__kernel void fill(__global float* y) {
    size_t i = get_global_id(0);
#if WILD
    i *= (size_t)1 << 34;  /* a wild pointer: writes 64 GiB and more past the buffer */
#endif
    y[i] = 2.0f;
}
'''
N = 8192


@tunable(LS=Set(16, 64, 8192, default=64), WILD=Bool(default=False), strategy="exhaustive", finalists=1)
def test_fill(autotune, cl_queue):
    cfg = autotune.config
    fill = autotune.build(cl_queue.context, SOURCE)
    y = cl.Buffer(cl_queue.context, cl.mem_flags.WRITE_ONLY, N * 4)
    autotune.measure(lambda: fill(cl_queue, (N,), (cfg["LS"],), y), repeat=2)
    out = np.empty(N, dtype=np.float32)
    cl.enqueue_copy(cl_queue, out, y)
    assert np.all(out == 2.0)
"""


def test_bad_kernels_fail_their_trials_on_the_device_of_the_parent(project: pytest.Pytester) -> None:
    project.makepyfile(test_k=KERNEL_TEST)
    result = project.runpytest("--autotune")
    result.assert_outcomes(passed=1)
    store = json.loads((project.path / "autotune.json").read_text())
    ((key, device),) = store["devices"].items()
    assert not key.startswith("host:")  # the OpenCL device, chosen in the parent and in the worker
    entry = device["tests"]["test_k.py::test_fill"]
    assert entry["config"]["WILD"] is False
    (journal,) = (project.path / ".pytest_cache").rglob("*.done.jsonl")
    trials = [json.loads(line) for line in journal.read_text().splitlines()[1:]]
    labels = {(t["config"]["LS"], t["config"]["WILD"]): t["label"] for t in trials}
    assert len(labels) == 6
    assert labels[(8192, False)] == labels[(8192, True)] == "runtime"  # beyond the maximum work-group size
    wild = [t for t in trials if t["config"]["WILD"] and t["config"]["LS"] < 8192]
    # a wild write kills the worker (or, rarely, lands in mapped memory and fails the check)
    assert all(t["label"] in ("runtime", "correctness") for t in wild)
    assert any("killed by signal" in t["detail"] for t in wild), [t["detail"] for t in wild]
    assert labels[(16, False)] == labels[(64, False)] == "ok"
