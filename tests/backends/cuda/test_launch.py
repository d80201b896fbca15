"""Launches without a GPU (a fake driver): limit checks before the driver, arguments, copies,
the shared-memory opt-in, classified driver errors, and event timing with the L2 flush."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from pytest_autotune.backends import get_backend
from pytest_autotune.backends.cuda import driver
from pytest_autotune.backends.cuda.device import DeviceArray, device_limits
from pytest_autotune.backends.cuda.errors import (
    CudaContextLost,
    CudaLaunchError,
    classify_cuda_error,
    context_lost,
    reset_context_lost,
)
from pytest_autotune.backends.cuda.module import CudaModule
from pytest_autotune.backends.cuda.nvrtc import CompiledCuda
from pytest_autotune.backends.cuda.timing import DriverEvents, flush_bytes
from pytest_autotune.backends.event_timer import EventTimer
from pytest_autotune.backends.geometry import Geometry

from .fake_driver import H100_LIKE, FakeDriver

COMPILED = CompiledCuda(b"\x7fELF fake", "sm_90", "src", ("--gpu-architecture=sm_90",), {}, {}, "")


@pytest.fixture
def fake() -> Iterator[FakeDriver]:
    fake = FakeDriver()
    driver.set_api(fake)
    reset_context_lost()
    yield fake
    driver.set_api(None)
    reset_context_lost()


def _kernel(fake: FakeDriver) -> Any:
    return CudaModule(COMPILED, H100_LIKE).kernel("scale")


def test_numpy_arrays_are_copied_in_and_back_and_scalars_passed_by_value(fake: FakeDriver) -> None:
    x = np.arange(8, dtype=np.float32)
    _kernel(fake)((2,), (4,), x, np.int32(8))
    np.testing.assert_array_equal(x, 2 * np.arange(8, dtype=np.float32))  # the fake kernel doubled it
    names = fake.names()
    assert names.index("cuMemcpyHtoD") < names.index("cuLaunchKernel") < names.index("cuMemcpyDtoH")
    assert "cuMemFree" in names  # the temporary copy is released


def test_device_arrays_cost_no_copies_and_python_numbers_are_refused(fake: FakeDriver) -> None:
    x = DeviceArray.from_host(np.ones(4, dtype=np.float32))
    kernel = _kernel(fake)
    fake.calls.clear()
    kernel((1,), (4,), x, np.float32(1.0))
    assert fake.names() == ["cuLaunchKernel"]
    np.testing.assert_array_equal(x.get(), np.full(4, 2, dtype=np.float32))
    with pytest.raises(TypeError, match=r"numpy scalars such as np.int32\(n\)"):
        kernel((1,), (4,), x, 4)


def test_autotune_launch_gives_grid_and_block(fake: FakeDriver) -> None:
    sizes = Geometry(problem_size=1000, block_size_names=["BS"]).sizes({"BS": 128})
    _kernel(fake)(sizes, DeviceArray.from_host(np.zeros(4, np.float32)))
    launch = next(args for name, args in fake.calls if name == "cuLaunchKernel")
    assert launch[:2] == ((8, 1, 1), (128, 1, 1))


@pytest.mark.parametrize(
    ("block", "shared", "registers_limit", "message"),
    [
        ((2048, 1, 1), 0, 1024, "exceeds the device's 1024"),
        ((1, 1, 128), 0, 1024, "block size 128 in z"),
        ((512, 1, 1), 0, 256, r"exceeds the 256 this kernel can run \(its 64 registers per thread\)"),
        ((128, 1, 1), 300 << 10, 1024, "exceed the device's 232448 per block"),
    ],
)
def test_launches_beyond_a_limit_fail_as_resources_before_the_driver(
    fake: FakeDriver, block: tuple[int, int, int], shared: int, registers_limit: int, message: str
) -> None:
    fake.kernel_max_threads, fake.kernel_registers = registers_limit, 64
    kernel = _kernel(fake)
    with pytest.raises(CudaLaunchError, match=message) as caught:
        kernel((1,), block, shared_memory=shared)
    assert caught.value.kind == "resources"
    assert "cuLaunchKernel" not in fake.names()
    assert classify_cuda_error(caught.value) == ("runtime", f"resources: {caught.value}")


def test_shared_memory_beyond_the_default_opts_in_once(fake: FakeDriver) -> None:
    kernel = _kernel(fake)
    kernel((1,), (128,), shared_memory=16 << 10)  # within the default 48 KiB
    kernel((1,), (128,), shared_memory=100 << 10)
    kernel((1,), (128,), shared_memory=100 << 10)
    opt_ins = [args for name, args in fake.calls if name == "cuFuncSetAttribute"]
    assert opt_ins == [("function scale", "max_dynamic_shared", 100 << 10)]


def test_an_illegal_address_loses_the_context_and_asks_for_a_new_worker(fake: FakeDriver) -> None:
    pytest.importorskip("cuda.bindings", reason="the backend counts as loaded once cuda-python is")
    from pytest_autotune.backends import restart_needed

    kernel = _kernel(fake)
    fake.fail_launch_with = "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES"
    with pytest.raises(CudaLaunchError) as refused:
        kernel((1,), (32,))
    assert refused.value.kind == "resources"
    assert context_lost() is None
    fake.fail_launch_with = "CUDA_ERROR_ILLEGAL_ADDRESS"
    with pytest.raises(CudaContextLost) as lost:
        kernel((1,), (32,))
    label, detail = classify_cuda_error(lost.value)
    assert label == "runtime"
    assert detail.startswith("illegal address: CUDA_ERROR_ILLEGAL_ADDRESS")
    assert get_backend("cuda").needs_restart() == context_lost() is not None
    assert (restart_needed() or "").startswith("cuda: CUDA_ERROR_ILLEGAL_ADDRESS")


class _Recorder:
    def __init__(self) -> None:
        self.log: list[str] = []

    def flush_l2(self) -> None:
        self.log.append("flush")

    def start(self) -> None:
        self.log.append("start")

    def stop(self) -> float:
        self.log.append("stop")
        return 0.25


def test_the_event_timer_flushes_before_the_start_event_and_times_between_events() -> None:
    events = _Recorder()
    result, seconds = EventTimer(events)(lambda: events.log.append("call") or 7, None)
    assert (result, seconds) == (7, 0.25)
    assert events.log == ["flush", "start", "call", "stop"]
    events.log.clear()
    EventTimer(events, flush_l2=False)(lambda: None, None)
    assert events.log == ["start", "stop"]


def test_driver_events_read_milliseconds_and_flush_twice_the_l2(fake: FakeDriver) -> None:
    device: Any = type("Device", (), {"info": H100_LIKE, "stream": "stream"})()
    events = DriverEvents(device)
    events.flush_l2()
    events.start()
    assert events.stop() == pytest.approx(0.0015)
    memset = next(args for name, args in fake.calls if name == "cuMemsetD8Async")
    assert memset[2] == flush_bytes(H100_LIKE.l2_bytes) == 100 << 20
    assert fake.names()[-3:] == ["cuEventRecord", "cuEventSynchronize", "cuEventElapsedTime"]


def test_device_limits_carry_the_opt_in_shared_memory() -> None:
    limits = device_limits(H100_LIKE)
    assert (limits.max_work_group_size, limits.max_work_item_sizes) == (1024, (1024, 1024, 64))
    assert (limits.local_memory, limits.local_memory_opt_in, limits.local_memory_limit) == (
        48 << 10,
        227 << 10,
        227 << 10,
    )
    assert H100_LIKE.key == "Fake H100 / sm_90"
    assert H100_LIKE.arch == "sm_90"


class _Busy:
    """Events whose calls each keep the device busy ``seconds``; counts the calls."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.calls = 0

    def flush_l2(self) -> None:
        pass

    def start(self) -> None:
        pass

    def stop(self) -> float:
        return self.seconds


def test_the_event_timer_warms_the_device_up_for_a_time_not_a_count() -> None:
    from pytest_autotune.backends.event_timer import WARM_UP_CALLS

    def run(seconds: float, **options: float) -> int:
        events = _Busy(seconds)

        def call() -> None:
            events.calls += 1

        EventTimer(events, **options).warm_up(call)
        return events.calls

    assert run(0.001) == 25  # 25 ms of 1 ms calls, as do_bench
    assert run(0.010) == 3
    assert run(0.1) == 1  # one long call is warm-up enough
    assert run(1e-7) == WARM_UP_CALLS  # very short calls: bounded by the count
    assert run(0.001, warm_up_seconds=0.0) == 0


def test_measure_runs_the_timers_warm_up_between_the_counted_warm_up_and_the_timed_calls() -> None:
    from pytest_autotune.fixture import Autotune

    log: list[str] = []

    class Timer:
        def warm_up(self, fn: Any) -> None:
            log.append("warm-up")
            fn()

        def __call__(self, fn: Any, autotune: Any) -> tuple[Any, float]:
            log.append("timed")
            return fn(), 0.5

    from pytest_autotune.policy import Policy

    autotune = Autotune(nodeid="t", space=None, policy=Policy(), device="d", timer=Timer(), tuning=False)
    autotune.measure(lambda: log.append("call"), warmup=1, repeat=2)
    assert log == ["call", "warm-up", "call", "timed", "call", "timed", "call"]
