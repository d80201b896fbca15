"""The CUDA examples without a GPU: each builds for sm_90 at its default and at sampled
configurations (or fails as ``resources``, never as a mistake), the device limits prune what an
H100 cannot launch, and without a GPU the examples are skipped with the reason."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from pytest_autotune.api import get_spec
from pytest_autotune.backends.cuda.device import device_limits
from pytest_autotune.backends.cuda.errors import CudaResourceError
from pytest_autotune.backends.cuda.nvrtc import compile_cuda
from pytest_autotune.backends.launch_limits import prune_space
from pytest_autotune.testing.opencl_objective import load_test_function

from .fake_driver import H100_LIKE

pytest.importorskip("cuda.bindings.nvrtc", reason="needs cuda-python (pip install '.[cuda]')")

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "example_kernels" / "cuda"
KERNELS = {"gemm": "gemm.cu", "reduction": "reduction.cu", "pnpoly": "pnpoly.cu"}
EXTRA_DEFINES = {"pnpoly": {"VERTICES": 600}}


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_each_example_builds_for_sm90_at_its_default_and_sampled_configurations(name: str) -> None:
    spec = get_spec(load_test_function(EXAMPLES / f"test_{name}.py", f"test_{name}"))
    assert spec is not None
    source = (EXAMPLES / KERNELS[name]).read_text()
    space = spec.space
    configs = [space.default_config(), *space.configs(space.sample(6, np.random.default_rng(0)))]
    outcomes = []
    for config in configs:
        try:
            compiled = compile_cuda(source, arch="sm_90", defines={**config, **EXTRA_DEFINES.get(name, {})})
        except CudaResourceError:
            outcomes.append("resources")  # beyond the architecture: an infeasible trial, not a bug
            continue
        assert compiled.resources, config
        outcomes.append("built")
    assert outcomes[0] == "built"  # the declared default always builds


def test_static_shared_memory_beyond_48k_fails_at_build_not_at_launch() -> None:
    source = (EXAMPLES / "gemm.cu").read_text()
    big = {"BX": 64, "BY": 16, "WX": 4, "WY": 4, "TK": 64}  # 4 * 64 * (64 + 256) = 80 KiB of slices
    with pytest.raises(CudaResourceError, match="too much shared data"):
        compile_cuda(source, arch="sm_90", defines=big)


@pytest.mark.parametrize(("name", "removed_reason"), [("gemm", "work-group"), ("reduction", "work-group")])
def test_the_device_limits_prune_what_an_h100_cannot_launch(name: str, removed_reason: str) -> None:
    spec = get_spec(load_test_function(EXAMPLES / f"test_{name}.py", f"test_{name}"))
    assert spec is not None
    assert spec.geometry is not None
    limited, pruned = prune_space(
        spec.params, spec.constraints, spec.space, spec.geometry, device_limits(H100_LIKE)
    )
    assert pruned is not None
    assert 0 < limited.size < spec.space.size
    assert any(removed_reason in text for text, _ in pruned.reasons)
    every = limited.configs(limited.at_index(range(limited.size)))
    local_sizes = [spec.geometry.local_size_of(config) for config in every]
    assert max(x * y * z for x, y, z in local_sizes) <= 1024


def test_without_a_gpu_the_examples_are_skipped_with_the_reason(tmp_path: Path) -> None:
    from pytest_autotune.backends.cuda.device import driver_problem

    if driver_problem() is None:
        pytest.skip("this machine has a CUDA GPU")
    run = subprocess.run(
        [sys.executable, "-m", "pytest", str(EXAMPLES), "-q", "-rs", "-p", "no:cacheprovider"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "3 skipped" in run.stdout
    assert "no device to run on: no CUDA driver" in run.stdout
