"""The ports of CLTune's and pyATF's examples (``example_kernels/ports/``): correct at their default
and at random valid configurations, and their correctness check fails for a kernel with a wrong index.

The wrong kernels are the ported sources with one index changed in memory (the files are not
touched): each must come back as a ``correctness`` trial, which is what makes the tuner discard it.
"""

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pyopencl")
from pytest_autotune.testing.opencl_objective import KernelTestObjective
from tests.backends.opencl.kernel_objectives import objective_for_file

pytestmark = pytest.mark.opencl  # skipped, with the reason, when no device can build a kernel

PORTS_DIR = Path(__file__).resolve().parents[3] / "example_kernels" / "ports"
PORTS = ["cltune_conv", "cltune_multiple_kernels", "pyatf_atomic_sum"]
LIMIT_ERRORS = ("INVALID_WORK_GROUP_SIZE", "INVALID_WORK_ITEM_SIZE", "OUT_OF_RESOURCES")


def objective_for(port: str) -> KernelTestObjective:
    return objective_for_file(PORTS_DIR / f"test_{port}.py", f"test_{port}")


@pytest.mark.parametrize("port", PORTS)
def test_default_configuration_is_correct(port: str) -> None:
    objective = objective_for(port)
    trial = objective.run(objective.space.default_config())
    assert trial.outcome.label == "ok", trial.outcome.detail


@pytest.mark.parametrize("port", PORTS)
def test_random_valid_configurations_are_correct_or_hit_a_device_limit(port: str) -> None:
    objective = objective_for(port)
    space = objective.space
    for config in space.configs(space.sample(2, np.random.default_rng(sum(map(ord, port))))):
        outcome = objective(config)
        assert outcome.label == "ok" or (
            outcome.label == "runtime" and outcome.detail.startswith(LIMIT_ERRORS)
        ), f"{config}: {outcome}"


CONV_LOCAL_2 = {
    "TBX": 16,
    "TBY": 8,
    "LOCAL": 2,
    "WPTX": 2,
    "WPTY": 1,
    "VECTOR": 2,
    "UNROLL_FACTOR": 7,
    "PADDING": 1,
}

# (port, module global holding the source, key in it or None, correct text, wrong text, configuration)
WRONG_INDEX = [
    pytest.param(
        "cltune_conv",
        "SOURCE",
        None,
        "coeff[fy*FS + fx]",
        "coeff[fx*FS + fy]",
        None,
        id="conv-filter-transposed",
    ),
    pytest.param(
        "cltune_conv",
        "SOURCE",
        None,
        "coeff[fy*FS + fx]",
        "coeff[fx*FS + fy]",
        CONV_LOCAL_2,
        id="conv-filter-transposed-local-memory",
    ),
    pytest.param(
        "cltune_multiple_kernels",
        "SOURCES",
        "unroll",
        "j<kSizeN; ++j",
        "j<kSizeN-1; ++j",
        None,
        id="matvec-unroll-last-column-left-out",
    ),
    pytest.param(
        "cltune_multiple_kernels",
        "SOURCES",
        "tiled",
        "vec_x[t*TS + tile_id]",
        "vec_x[t*TS]",
        {"KERNEL": "tiled", "UNROLL": 1, "TS": 64},
        id="matvec-tiled-first-element-of-each-tile",
    ),
    pytest.param(
        "pyatf_atomic_sum",
        "SOURCE",
        None,
        "x[ index ]",
        "x[ index / 2 ]",
        {"WPT": 8, "LS": 125},
        id="atomic-sum-first-half-twice",
    ),
]


@pytest.mark.parametrize(("port", "name", "key", "correct", "wrong", "config"), WRONG_INDEX)
def test_a_wrong_index_fails_the_correctness_check(
    monkeypatch: pytest.MonkeyPatch, port, name, key, correct, wrong, config
) -> None:
    objective = objective_for(port)
    config = objective.space.default_config() if config is None else config
    assert objective.space.contains([config])[0]
    assert objective(config).label == "ok"  # the correct kernel passes at this configuration
    module_globals = objective.test_function.__globals__
    if key is None:
        source = module_globals[name]
        assert correct in source
        monkeypatch.setitem(module_globals, name, source.replace(correct, wrong))
    else:
        sources = module_globals[name]
        assert correct in sources[key]
        monkeypatch.setitem(sources, key, sources[key].replace(correct, wrong))
    assert objective(config).label == "correctness"
