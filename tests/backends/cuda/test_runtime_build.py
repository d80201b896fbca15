"""``runtime.build`` on a CUDA target without a GPU: the defines of the configuration, as in a test."""

from __future__ import annotations

import pytest

from pytest_autotune import runtime
from pytest_autotune.backends.cuda.nvrtc import CudaTarget
from pytest_autotune.backends.opencl.defines import define_source

pytest.importorskip("cuda.bindings.nvrtc", reason="needs cuda-python (pip install '.[cuda]')")

SOURCE = 'extern "C" __global__ void scale(float* x) { x[threadIdx.x] *= FACTOR * (TWICE ? 2 : 1); }\n'


def test_runtime_build_compiles_the_configuration_for_an_offline_target() -> None:
    config = {"FACTOR": 2.5, "TWICE": True}
    compiled = runtime.build(CudaTarget("sm_90"), SOURCE, config)
    assert compiled.source == define_source(config, SOURCE)
    assert compiled.arch == "sm_90"
    assert "--gpu-architecture=sm_90" in compiled.options
