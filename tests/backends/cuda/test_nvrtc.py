"""NVRTC builds for a named architecture without a GPU or driver: defines, resources, errors, cache."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_autotune.backends import get_backend
from pytest_autotune.backends.cuda.errors import CudaBuildError, CudaResourceError, classify_cuda_error
from pytest_autotune.backends.cuda.nvrtc import (
    CudaTarget,
    build_cache_info,
    clear_build_cache,
    compile_cuda,
    normalize_arch,
    parse_ptxas_log,
)
from pytest_autotune.fixture import Autotune
from pytest_autotune.policy import merge_policy
from pytest_autotune.space import build_space
from pytest_autotune.space.params import Pow2
from pytest_autotune.timing.measure import DefaultTimer

pytest.importorskip("cuda.bindings.nvrtc", reason="needs cuda-python (pip install '.[cuda]')")

SHARED = """
extern "C" __global__ void scale(float* x, int n) {
    __shared__ float tile[TILE];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    tile[threadIdx.x % TILE] = i < n ? x[i] : 0.0f;
    __syncthreads();
    if (i < n) x[i] = tile[(threadIdx.x + 1) % TILE] * FACTOR;
}
"""
TEMPLATE = """
template <typename T, int B>
__global__ void fill(T* x) { x[blockIdx.x * B + threadIdx.x] = T(B); }
"""


@pytest.fixture(autouse=True)
def _fresh_cache() -> None:
    clear_build_cache()


def test_defines_become_lines_on_top_and_the_cubin_is_for_the_real_architecture() -> None:
    compiled = compile_cuda(SHARED, arch="90", defines={"TILE": 128, "FACTOR": 2.5})
    assert compiled.arch == "sm_90"
    assert "--gpu-architecture=sm_90" in compiled.options
    assert compiled.source.startswith("#define FACTOR 2.5f\n#define TILE 128\n#line 1\n")
    assert compiled.cubin[:4] == b"\x7fELF"  # machine code, not PTX
    used = compiled.kernel_resources("scale")
    assert used is not None
    assert used.shared_bytes == 4 * 128
    assert used.registers > 0


def test_shared_memory_beyond_the_architecture_fails_at_build_as_resources() -> None:
    with pytest.raises(CudaResourceError, match="too much shared data") as caught:
        compile_cuda(SHARED, arch="sm_90", defines={"TILE": 20_000, "FACTOR": 1})
    label, detail = classify_cuda_error(caught.value)
    assert label == "compile"
    assert detail.startswith("resources: ")
    assert "uses too much shared data" in detail
    assert "TILE=20000" in str(caught.value)  # the message names the defines


def test_a_mistake_in_the_source_is_a_compile_failure() -> None:
    with pytest.raises(CudaBuildError) as caught:
        compile_cuda(SHARED, arch="sm_80", defines={"TILE": 32})  # FACTOR missing
    assert not isinstance(caught.value, CudaResourceError)
    assert classify_cuda_error(RuntimeError("foreign")) is None  # foreign errors are not ours
    wrapped = RuntimeError("user code")
    wrapped.__cause__ = caught.value
    label, detail = classify_cuda_error(wrapped)
    assert label == "compile"
    assert detail.startswith("compile: ")
    assert "FACTOR" in detail


def test_the_cache_keys_on_the_compiled_text_options_and_architecture() -> None:
    first = compile_cuda(SHARED, arch="90", defines={"TILE": 64, "FACTOR": 1})
    again = compile_cuda(SHARED, arch="90", defines={"FACTOR": 1, "TILE": 64})  # other order
    other_arch = compile_cuda(SHARED, arch="80", defines={"TILE": 64, "FACTOR": 1})
    assert again is first
    assert other_arch is not first
    info = build_cache_info()
    assert (info.hits, info.misses, info.size) == (1, 2, 2)


def test_templated_kernels_are_named_by_name_expressions() -> None:
    compiled = compile_cuda(TEMPLATE, arch="90", name_expressions=["fill<float, 64>", "fill<int, 32>"])
    lowered = compiled.lowered("fill<float, 64>")
    assert lowered.startswith("_Z")
    assert lowered != compiled.lowered("fill<int, 32>")
    assert set(compiled.resources) == set(compiled.names.values())
    assert compiled.kernel_resources("fill<int, 32>") is not None


def test_autotune_build_with_an_offline_target_compiles_the_configuration() -> None:
    backend = get_backend("cuda")
    fixture = Autotune(
        nodeid="test_k.py::test_scale",
        space=build_space({"TILE": Pow2(32, 256, default=64)}),
        policy=merge_policy([]),
        device="offline",
        timer=DefaultTimer(),
        tuning=True,
        backend=backend,
    )
    fixture.begin_run({"TILE": 128}, repeat_default=1)
    target = CudaTarget("sm_90")
    assert backend.owns(target)
    compiled: Any = fixture.build(target, SHARED.replace("FACTOR", "3.0f"))
    assert compiled.source.startswith("#define TILE 128\n")
    templated: Any = fixture.build(target, TEMPLATE, defines={}, name_expressions=["fill<float, 8>"])
    assert "fill<float, 8>" in templated.names
    with pytest.raises(TypeError, match="takes no bogus"):
        fixture.build(target, TEMPLATE, bogus=1)


def test_architecture_names_and_the_ptxas_log() -> None:
    assert normalize_arch("sm_90a") == "sm_90a"
    assert normalize_arch("compute_86") == "sm_86"  # always a real architecture
    assert normalize_arch((8, 9)) == "sm_89"
    with pytest.raises(ValueError, match=r"expected e\.g\."):
        normalize_arch("hopper")
    log = """ptxas info    : Compiling entry function 'k' for 'sm_90'
ptxas info    : Function properties for k
ptxas         .     8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads
ptxas info    : Used 255 registers, used 1 barriers, 49152 bytes smem, 384 bytes cmem[0]
ptxas info    : Compiling entry function 'j' for 'sm_90'
ptxas info    : Used 12 registers, 384 bytes cmem[0]
"""
    found = parse_ptxas_log(log)
    assert found["k"].registers == 255
    assert found["k"].shared_bytes == 49152
    assert (found["k"].stack_bytes, found["k"].spill_stores, found["k"].spill_loads) == (8, 4, 4)
    assert found["j"].registers == 12
    assert found["j"].shared_bytes == 0
