"""Program builds with defines, the build cache, launch checks, error classification and event timing."""

import numpy as np
import pytest

cl = pytest.importorskip("pyopencl")
pytestmark = pytest.mark.opencl  # skipped, with the reason, when no device can build a kernel
from pytest_autotune.backends import opencl  # noqa: E402
from pytest_autotune.backends.opencl import (  # noqa: E402
    KernelBuildError,
    LaunchError,
    build_cache_info,
    build_program,
    classify_error,
    event_seconds,
)

SCALE_SOURCE = """
__kernel void scale(__global float* x) {
    const int i = get_global_id(0);
    x[i] = x[i] * FACTOR + OFFSET;
}
"""

LOCAL_SOURCE = """
__kernel void stage(__global float* x) {
    __local float tile[TILE];
    const int l = get_local_id(0);
    tile[l % TILE] = x[get_global_id(0)];
    barrier(CLK_LOCAL_MEM_FENCE);
    x[get_global_id(0)] = tile[(l + 1) % TILE];
}
"""

TWO_KERNELS = """
__kernel void first(__global float* x) { x[get_global_id(0)] = 1.0f; }
__kernel void second(__global float* x) { x[get_global_id(0)] = 2.0f; }
"""


@pytest.fixture(scope="module")
def device():
    try:
        return opencl.select_device(None)
    except LookupError:
        pytest.skip("no OpenCL device")


@pytest.fixture(scope="module")
def context(device):
    return opencl.create_context(device)


@pytest.fixture(scope="module")
def queue(context, device):
    return opencl.create_queue(context, device)


def _buffer(context, values):
    return cl.Buffer(context, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=values)


def _read(queue, buffer, n):
    out = np.empty(n, dtype=np.float32)
    cl.enqueue_copy(queue, out, buffer)
    return out


@pytest.mark.parametrize(
    ("style", "options", "prefix"),
    [
        ("source", (), "#define FACTOR 3\n#define OFFSET 0.5f\n#line 1\n"),
        ("options", ("-DFACTOR=3", "-DOFFSET=0.5f"), ""),
    ],
)
def test_defines_reach_the_kernel(context, queue, style, options, prefix) -> None:
    program = build_program(context, SCALE_SOURCE, {"FACTOR": 3, "OFFSET": 0.5}, define_style=style)
    values = np.arange(64, dtype=np.float32)
    buffer = _buffer(context, values)
    program(queue, (64,), (16,), buffer).wait()  # the only kernel, called like a pyopencl kernel
    np.testing.assert_array_equal(_read(queue, buffer, 64), values * 3 + 0.5)
    assert program.options == options
    assert program.source == prefix + SCALE_SOURCE  # the cache key is this text (and the options)


# A parameter named like an OpenCL access qualifier: "-Dread_only=0" breaks the compiler's own
# header (opencl-c.h declares image functions with read_only parameters), a #define line does not.
KEYWORD_SOURCE = """
__kernel void pick(__global float* x) {
    const int i = get_global_id(0);
    x[i] = read_only ? x[i] : x[i] * 2.0f + local;
}
"""


def test_a_parameter_named_like_an_opencl_keyword_builds_as_a_define_line(context, queue) -> None:
    values = np.linspace(-1, 1, 32, dtype=np.float32)
    for read_only in (0, 1):
        program = build_program(context, KEYWORD_SOURCE, {"read_only": read_only, "local": 0.25})
        buffer = _buffer(context, values)
        program(queue, (32,), (8,), buffer).wait()
        expected = values if read_only else values * np.float32(2) + np.float32(0.25)
        np.testing.assert_array_equal(_read(queue, buffer, 32), expected)
    with pytest.raises(KernelBuildError) as info:
        build_program(context, KEYWORD_SOURCE, {"read_only": 0, "local": 0.25}, define_style="options")
    assert "opencl-c.h" in info.value.log  # the -D option reached the built-in header


def test_build_errors_keep_the_line_numbers_of_the_source(context) -> None:
    source = "__kernel void k(__global float* x) {\n\n    x[0] = MISSING;\n}\n"
    with pytest.raises(KernelBuildError) as info:
        build_program(context, source, {"A": 1, "B": 2})
    assert ":3:" in info.value.log  # line 3 of the source, not of the source with the defines
    assert info.value.defines == ("A=1", "B=2")
    assert "#defines A=1 B=2" in str(info.value)


def test_an_unknown_define_style_is_refused(context) -> None:
    with pytest.raises(ValueError, match="define_style='src'; expected one of 'source', 'options'"):
        build_program(context, SCALE_SOURCE, {"FACTOR": 1, "OFFSET": 1}, define_style="src")  # type: ignore[arg-type]


def test_cache_hits_on_the_same_defines_in_any_order(context) -> None:
    first = build_program(context, SCALE_SOURCE, {"FACTOR": 7, "OFFSET": 1})
    before = build_cache_info()
    again = build_program(context, SCALE_SOURCE, {"OFFSET": 1, "FACTOR": 7})
    after = build_cache_info()
    assert again is first
    assert (after.hits, after.misses) == (before.hits + 1, before.misses)
    other = build_program(context, SCALE_SOURCE, {"FACTOR": 8, "OFFSET": 1})
    assert other is not first
    assert build_cache_info().misses == before.misses + 1


def test_cache_keeps_the_most_recently_used_programs_only(device) -> None:
    # A context of its own, so that other tests' programs do not count.
    context = opencl.create_context(device)
    capacity = build_cache_info().capacity
    first = build_program(context, SCALE_SOURCE, {"FACTOR": 0, "OFFSET": 0})
    for factor in range(1, capacity + 1):
        build_program(context, SCALE_SOURCE, {"FACTOR": factor, "OFFSET": 0})
        if factor == capacity // 2:
            assert build_program(context, SCALE_SOURCE, {"FACTOR": 0, "OFFSET": 0}) is first  # used again
    newest = build_program(context, SCALE_SOURCE, {"FACTOR": capacity, "OFFSET": 0})
    assert build_program(context, SCALE_SOURCE, {"FACTOR": 0, "OFFSET": 0}) is first
    before = build_cache_info()
    assert build_program(context, SCALE_SOURCE, {"FACTOR": 1, "OFFSET": 0}) is not None  # evicted: rebuilt
    assert build_cache_info().misses == before.misses + 1
    assert build_program(context, SCALE_SOURCE, {"FACTOR": capacity, "OFFSET": 0}) is newest


def test_cache_is_per_context(context, device) -> None:
    program = build_program(context, SCALE_SOURCE, {"FACTOR": 9, "OFFSET": 0})
    other_context = opencl.create_context(device)
    assert build_program(other_context, SCALE_SOURCE, {"FACTOR": 9, "OFFSET": 0}) is not program


def test_build_failure_carries_the_log_and_is_a_compile_trial(context) -> None:
    with pytest.raises(KernelBuildError) as info:
        build_program(context, SCALE_SOURCE, {"FACTOR": 2})  # OFFSET undefined
    error = info.value
    assert "OFFSET" in error.log
    assert "FACTOR=2" in error.defines
    label, detail = classify_error(error)
    assert label == "compile"
    assert "OFFSET" in detail


def test_work_group_above_the_device_maximum_is_a_runtime_trial(context, queue, device) -> None:
    program = build_program(context, SCALE_SOURCE, {"FACTOR": 1, "OFFSET": 0})
    too_big = device.max_work_group_size * 2
    buffer = cl.Buffer(context, cl.mem_flags.READ_WRITE, too_big * 4)
    with pytest.raises(LaunchError) as info:
        program(queue, (too_big,), (too_big,), buffer)
    label, detail = classify_error(info.value)
    assert label == "runtime"
    assert detail.startswith(("INVALID_WORK_GROUP_SIZE", "INVALID_WORK_ITEM_SIZE"))


def test_local_memory_above_the_device_limit_is_a_runtime_trial_not_a_crash(context, queue, device) -> None:
    # PoCL segfaults when such a kernel runs; the launch check must stop it first.
    floats = device.local_mem_size // 4 + 1024
    program = build_program(context, LOCAL_SOURCE, {"TILE": floats})
    buffer = cl.Buffer(context, cl.mem_flags.READ_WRITE, 64 * 4)
    with pytest.raises(LaunchError) as info:
        program(queue, (64,), (64,), buffer)
    assert classify_error(info.value) == ("runtime", str(info.value))
    assert str(info.value).startswith("OUT_OF_RESOURCES")


def test_dynamic_local_memory_is_counted(context, queue, device) -> None:
    source = "__kernel void k(__global float* x, __local float* t) { t[0] = 1.0f; x[0] = t[0]; }"
    program = build_program(context, source)
    buffer = cl.Buffer(context, cl.mem_flags.READ_WRITE, 4)
    program(queue, (1,), (1,), buffer, cl.LocalMemory(256)).wait()
    with pytest.raises(LaunchError, match="OUT_OF_RESOURCES"):
        program(queue, (1,), (1,), buffer, cl.LocalMemory(device.local_mem_size + 4))


def test_pyopencl_errors_are_classified_by_status(context, queue) -> None:
    program = build_program(context, SCALE_SOURCE, {"FACTOR": 1, "OFFSET": 0})
    buffer = cl.Buffer(context, cl.mem_flags.READ_WRITE, 64 * 4)
    with pytest.raises(cl.Error) as info:  # raw kernel: no pre-launch check, the driver refuses
        program.raw.scale(queue, (64, 1), (64,), buffer)
    label, detail = classify_error(info.value)
    assert label == "runtime"
    assert detail.startswith("INVALID_VALUE")


def test_wrapped_opencl_errors_are_found_and_others_are_not() -> None:
    outer = RuntimeError("while preparing the kernel")
    outer.__cause__ = KernelBuildError("error: boom", ["-DX=1"])
    assert classify_error(outer) == ("compile", "error: boom")
    assert classify_error(ValueError("not OpenCL")) is None
    assert classify_error(AssertionError()) is None


def test_kernels_are_reached_by_name_in_multi_kernel_programs(context, queue) -> None:
    program = build_program(context, TWO_KERNELS)
    assert program.kernel_names == ("first", "second")
    buffer = cl.Buffer(context, cl.mem_flags.READ_WRITE, 8 * 4)
    program.second(queue, (8,), None, buffer).wait()
    np.testing.assert_array_equal(_read(queue, buffer, 8), np.full(8, 2.0, np.float32))
    assert program.kernel("second") is program.second  # created once
    with pytest.raises(TypeError, match="2 kernels"):
        program(queue, (8,), None, buffer)
    with pytest.raises(AttributeError, match="no kernel 'third'"):
        program.kernel("third")


def test_event_seconds_reads_profiling_times(context, queue) -> None:
    program = build_program(context, SCALE_SOURCE, {"FACTOR": 2, "OFFSET": 0})
    n = 1 << 20
    buffer = cl.Buffer(context, cl.mem_flags.READ_WRITE, n * 4)
    first = program(queue, (n,), (256,), buffer)
    second = program(queue, (n,), (256,), buffer)
    one, other = event_seconds(first), event_seconds(second)
    both = event_seconds([first, second])
    assert 0 < one < 10
    assert 0 < other < 10
    # The span covers both launches (in order on an in-order queue) and the gap between them.
    assert both >= max(one, other)
    assert both == pytest.approx((second.profile.end - first.profile.start) * 1e-9)
    with pytest.raises(ValueError, match="no event"):
        event_seconds([])


def test_event_seconds_needs_a_profiling_queue(context, device) -> None:
    plain_queue = cl.CommandQueue(context, device)
    program = build_program(context, SCALE_SOURCE, {"FACTOR": 2, "OFFSET": 1})
    buffer = cl.Buffer(context, cl.mem_flags.READ_WRITE, 64 * 4)
    with pytest.raises(ValueError, match="profiling"):
        event_seconds(program(plain_queue, (64,), (64,), buffer))


def test_bad_arguments_are_rejected_early(context) -> None:
    with pytest.raises(ValueError, match="non-empty"):
        build_program(context, "   ")
    with pytest.raises(TypeError, match="sequence of strings"):
        build_program(context, SCALE_SOURCE, {"FACTOR": 1, "OFFSET": 1}, options="-cl-mad-enable")
    with pytest.raises(ValueError, match="'bad name'"):
        build_program(context, SCALE_SOURCE, {"bad name": 1})
