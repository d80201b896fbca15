"""Triton without a GPU: the examples compile for ``GPUTarget("cuda", 90, 32)`` and report shared
memory and registers; resources beyond a device are caught before a launch; Triton's errors are
labelled; the torch backend without a GPU; ``from_triton`` declarations."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from pytest_autotune import from_triton
from pytest_autotune.backends import get_backend
from pytest_autotune.backends.base import DeviceLimits
from pytest_autotune.backends.cuda.errors import CudaLaunchError, context_lost, reset_context_lost
from pytest_autotune.backends.torch.errors import classify_triton_error
from pytest_autotune.space import build_space

EXAMPLES = Path(__file__).resolve().parents[3] / "example_kernels" / "triton"
H100 = DeviceLimits(1024, (1024, 1024, 64), 48 << 10, 227 << 10)
MATMUL_SIGNATURE = {
    **dict.fromkeys(("a_ptr", "b_ptr", "c_ptr"), "*fp16"),
    **dict.fromkeys(("M", "N", "K"), "i32"),
    **{f"stride_{x}": "i32" for x in ("am", "ak", "bk", "bn", "cm", "cn")},
    **dict.fromkeys(("BLOCK_SIZE_M", "BLOCK_SIZE_N", "BLOCK_SIZE_K", "GROUP_SIZE_M"), "constexpr"),
}


def _example(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"triton_example_{name}", EXAMPLES / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def matmul() -> ModuleType:
    pytest.importorskip("triton", reason="needs triton (pip install '.[triton]')")
    return _example("test_matmul")


def _compile(matmul: ModuleType, config: dict[str, int]) -> object:
    from pytest_autotune.backends.torch.triton_compile import compile_for_target

    constexprs = {k: v for k, v in config.items() if k.isupper()}
    return compile_for_target(
        matmul.matmul_kernel,
        MATMUL_SIGNATURE,
        constexprs,
        target=(90, 32),
        num_warps=config["num_warps"],
        num_stages=config["num_stages"],
    )


@pytest.fixture(scope="module")
def tutorial_resources(matmul: ModuleType) -> object:
    """The tutorial's first config (128 x 256 x 64, 3 stages, 8 warps) compiled for sm_90."""
    from pytest_autotune.backends.torch.triton_compile import resources_of

    return resources_of(_compile(matmul, matmul.TUTORIAL_CONFIGS[0]))


def test_the_tutorial_matmul_compiles_for_sm90_and_fits_an_h100(tutorial_resources: object) -> None:
    from pytest_autotune.backends.torch.triton_compile import check_fits

    used: Any = tutorial_resources
    assert used.num_warps == 8
    assert used.threads == 256
    assert 32 << 10 <= used.shared_bytes <= 227 << 10  # fp16 tiles of A and B staged in shared memory
    assert used.registers is not None
    assert 32 <= used.registers <= 255
    check_fits(used, H100)


def test_resources_beyond_a_device_are_refused_before_any_launch(tutorial_resources: object) -> None:
    from pytest_autotune.backends.torch.triton_compile import TritonResources, check_fits

    used: Any = tutorial_resources
    small = DeviceLimits(1024, (1024, 1024, 64), 32 << 10, 32 << 10)  # 32 KiB of shared memory per block
    with pytest.raises(CudaLaunchError, match="refused before launch") as caught:
        check_fits(used, small, what="matmul")
    assert caught.value.kind == "resources"
    label, detail = get_backend("cuda").classify(caught.value) or ("", "")
    assert (label, detail.split(":")[0]) == ("runtime", "resources")
    with pytest.raises(CudaLaunchError, match="255 registers x 512 threads"):
        check_fits(TritonResources(0, 255, 0, num_warps=16), H100)
    with pytest.raises(CudaLaunchError, match="2048 threads per block"):
        check_fits(TritonResources(0, 16, 0, num_warps=64), H100)


def test_tritons_errors_are_labelled_infeasible(matmul: ModuleType) -> None:
    from triton.runtime.errors import OutOfResources

    out = OutOfResources(300_000, 232_448, "shared memory")
    assert classify_triton_error(out) == ("compile", classify_triton_error(out)[1])  # type: ignore[index]
    assert classify_triton_error(out)[1].startswith("resources: OutOfResources")  # type: ignore[index]
    with pytest.raises(Exception) as caught:
        _compile(matmul, {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 7, "GROUP_SIZE_M": 8,
                          "num_warps": 4, "num_stages": 2})  # fmt: skip
    label, detail = classify_triton_error(caught.value) or ("", "")
    assert label == "compile", caught.value
    assert detail.startswith("compile: ")
    assert classify_triton_error(ValueError("plain")) is None


def test_an_illegal_memory_access_reported_by_torch_loses_the_context() -> None:
    reset_context_lost()
    try:
        error = RuntimeError("CUDA error: an illegal memory access was encountered")
        label, detail = classify_triton_error(error) or ("", "")
        assert (label, detail.split(":")[0]) == ("runtime", "illegal address")
        assert context_lost() is not None
        assert get_backend("torch").needs_restart() is not None
    finally:
        reset_context_lost()


def test_the_torch_backend_without_a_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("torch")
    backend = get_backend("torch")
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    assert "TRITON_INTERPRET=1" in (backend.unavailable() or "")
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    assert backend.unavailable() is None
    (device,) = backend.devices()
    assert device.type == "cpu"
    assert backend.key(device).startswith("Triton interpreter / ")
    assert backend.limits(device) == DeviceLimits()
    assert backend.timer(["torch_device"], lambda name: device) is None  # wall-clock in the interpreter


def test_from_triton_declares_the_list_or_a_space_containing_it() -> None:
    pytest.importorskip("triton")
    import triton

    configs = [
        triton.Config({"BM": 128, "BK": 64}, num_warps=8, num_stages=3),
        triton.Config({"BM": 64, "BK": 32}, num_warps=4, num_stages=4),
        triton.Config({"BM": 64, "BK": 64}, num_warps=4, num_stages=3),
    ]
    exact = from_triton(configs)
    params = {name: value for name, value in exact.items() if name != "restrictions"}
    assert set(params) >= {"BM", "BK", "num_warps", "num_stages"}
    space = build_space(params, exact["restrictions"])
    listed = {(c.kwargs["BM"], c.kwargs["BK"], c.num_warps, c.num_stages) for c in configs}
    assert space.size == 3
    every = space.configs(space.at_index(range(space.size)))
    assert {(c["BM"], c["BK"], c["num_warps"], c["num_stages"]) for c in every} == listed
    assert space.default_config() == {"BM": 128, "BK": 64, "num_warps": 8, "num_stages": 3}  # no num_ctas
    wide = from_triton(configs, exact=False, extra={"BK": [128]})
    assert "restrictions" not in wide
    wide_space = build_space(wide)
    assert wide_space.size == 2 * 3 * 2 * 2  # BM x BK (with the extra 128) x warps x stages
    assert wide_space.contains([dict(c) for c in every]).all()
    with pytest.raises(ValueError, match="does not set 'BK'"):
        from_triton([{"BM": 1, "BK": 2}, {"BM": 2}])
    with pytest.raises(ValueError, match="exact=False"):
        from_triton(configs, extra={"BK": [128]})


def test_from_triton_declares_only_the_launch_options_the_list_sets() -> None:
    """Issue 44: ``num_ctas: 1`` and ``num_stages: 3`` (``triton.Config``'s defaults) were declared
    for lists that never set them; an option another config sets away from the default stays."""
    pytest.importorskip("triton")
    import triton

    plain = from_triton([triton.Config({"BM": 128}, num_warps=8), triton.Config({"BM": 64}, num_warps=4)])
    assert sorted(name for name in plain if name != "restrictions") == ["BM", "num_warps"]
    space = build_space({n: v for n, v in plain.items() if n != "restrictions"}, plain["restrictions"])
    assert space.default_config() == {"BM": 128, "num_warps": 8}
    only_kwargs = from_triton([triton.Config({"BM": 128}), triton.Config({"BM": 64})])
    assert sorted(only_kwargs) == ["BM", "restrictions"]
    staged = from_triton([triton.Config({"BM": 128}), triton.Config({"BM": 64}, num_stages=4, num_ctas=2)])
    assert sorted(staged) == ["BM", "num_ctas", "num_stages", "restrictions"]
    space = build_space({n: v for n, v in staged.items() if n != "restrictions"}, staged["restrictions"])
    every = space.configs(space.at_index(range(space.size)))
    assert {tuple(sorted(c.items())) for c in every} == {
        (("BM", 128), ("num_ctas", 1), ("num_stages", 3)),  # the default, kept where another differs
        (("BM", 64), ("num_ctas", 2), ("num_stages", 4)),
    }
    mixed = from_triton([{"BM": 128, "num_stages": 3}, triton.Config({"BM": 64})])
    assert sorted(mixed) == ["BM", "num_stages", "restrictions"]  # a dict declares what it holds
