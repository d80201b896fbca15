"""Running a @tunable OpenCL test outside pytest: each trial's outcome is labelled like the plugin's."""

import numpy as np
import pytest

cl = pytest.importorskip("pyopencl")
pytestmark = pytest.mark.opencl  # skipped, with the reason, when no device can build a kernel
from pytest_autotune import Bool, Set, tunable  # noqa: E402
from pytest_autotune.testing.opencl_objective import KernelTestObjective, load_test_function  # noqa: E402

FILL_SOURCE = """
__kernel void fill(__global float* x) {
    const int i = get_global_id(0);
#if BUG
    x[i] = (float)(i + 1);
#else
    x[i] = (float)i;
#endif
}
"""
N = 4096


@tunable(
    LS=Set(16, 64, 1 << 20, default=16),  # 2^20 work-items exceed every device's work-group limit
    BUG=Bool(default=False),
    BROKEN=Bool(default=False),
    SKIP=Bool(default=False),
)
def toy_test(autotune, cl_queue):
    cfg = autotune.config
    if cfg["SKIP"]:
        autotune.reject("SKIP is not supported")
    source = FILL_SOURCE + ("this is not C" if cfg["BROKEN"] else "")
    fill = autotune.build(cl_queue.context, source, defines={"BUG": cfg["BUG"]})
    out = cl.Buffer(cl_queue.context, cl.mem_flags.WRITE_ONLY, N * 4)
    autotune.measure(lambda: fill(cl_queue, (max(N, cfg["LS"]),), (cfg["LS"],), out))
    result = np.empty(N, dtype=np.float32)
    cl.enqueue_copy(cl_queue, result, out)
    assert np.array_equal(result, np.arange(N, dtype=np.float32))


@pytest.fixture(scope="module")
def objective():
    try:
        return KernelTestObjective(toy_test, warmup=0, repeat=3)
    except LookupError:
        pytest.skip("no OpenCL device")


def _config(**changes):
    return {"LS": 16, "BUG": False, "BROKEN": False, "SKIP": False, **changes}


def test_a_correct_configuration_is_measured(objective) -> None:
    trial = objective.run(_config())
    assert trial.outcome.label == "ok"
    assert len(trial.samples) == 3
    assert trial.outcome.value == pytest.approx(sorted(trial.samples)[1])
    assert 0 < trial.build_seconds <= trial.seconds


@pytest.mark.parametrize(
    ("changes", "label", "detail"),
    [
        ({"BUG": True}, "correctness", "AssertionError"),
        ({"BROKEN": True}, "compile", "error"),
        ({"LS": 1 << 20}, "runtime", "INVALID_WORK"),
        ({"SKIP": True}, "constraints", "SKIP is not supported"),
    ],
)
def test_failures_get_the_plugin_labels(objective, changes, label, detail) -> None:
    outcome = objective(_config(**changes))
    assert outcome.label == label
    assert detail in outcome.detail


def test_only_fixtures_it_can_supply_are_accepted() -> None:
    @tunable(X=Set(1, 2))
    def needs_tmp_path(autotune, tmp_path):
        pass

    with pytest.raises(TypeError, match="tmp_path cannot be supplied outside pytest"):
        KernelTestObjective(needs_tmp_path)
    with pytest.raises(TypeError, match="not a @tunable test"):
        KernelTestObjective(lambda autotune: None)


def test_test_functions_load_from_files(tmp_path) -> None:
    module = tmp_path / "test_mod.py"
    module.write_text("def test_x():\n    return 42\n")
    assert load_test_function(module, "test_x")() == 42
    with pytest.raises(AttributeError, match="no test function 'test_y'"):
        load_test_function(module, "test_y")
    with pytest.raises(FileNotFoundError):
        load_test_function(tmp_path / "missing.py", "test_x")
