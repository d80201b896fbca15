"""The example kernels' launch geometry: the same sizes as their hand-written launches, and device
limits that prune exactly the configurations the devices could not run.

No device is needed: the sizes are compared over the declared spaces, and the pruning with the
limits each machine of ``benchmarks/data/pocl-*`` recorded, against the outcome it recorded for
every configuration it measured (exhaustively, in Kernel Tuner cache files).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("pyopencl")  # the example modules import it
from pytest_autotune.api import TunableSpec, get_spec
from pytest_autotune.backends.base import DeviceLimits
from pytest_autotune.backends.launch_limits import limit_constraints
from pytest_autotune.testing.opencl_objective import load_test_function

ROOT = Path(__file__).resolve().parents[3]
Sizes = tuple[tuple[int, ...], tuple[int, ...]]

#: The launches the examples wrote by hand before they declared a geometry.
HAND_WRITTEN: dict[str, Callable[[dict[str, Any]], Sizes]] = {
    "saxpy": lambda c: ((2**24 // c["WPT"],), (c["LS"],)),
    "gemm": lambda c: (
        (512 // c["NWG"] * c["NDIMC"], 512 // c["MWG"] * c["MDIMC"]),
        (c["NDIMC"], c["MDIMC"]),
    ),
    "conv2d": lambda c: ((1024 // c["TX"], 1024 // c["TY"]), (c["BX"], c["BY"])),
    "reduction": lambda c: ((2**24 // (c["WG"] * c["EPT"]) * c["WG"],), (c["WG"],)),
    "transpose": lambda c: (
        (2048 // c["TILE_X"] * c["TILE_X"] * c["ROWS"], 2048 // c["TILE_Y"]),
        (c["TILE_X"] * c["ROWS"], 1),
    ),
}
_SPECS: dict[str, TunableSpec] = {}


def spec_of(kernel: str) -> TunableSpec:
    if kernel not in _SPECS:
        spec = get_spec(load_test_function(ROOT / "example_kernels" / f"test_{kernel}.py", f"test_{kernel}"))
        assert spec is not None
        _SPECS[kernel] = spec
    return _SPECS[kernel]


@pytest.mark.parametrize("kernel", sorted(HAND_WRITTEN))
def test_the_geometry_gives_the_hand_written_launch_sizes(kernel: str) -> None:
    spec = spec_of(kernel)
    assert spec.geometry is not None
    space = spec.space
    if space.size <= 5000:
        configs = space.configs(space.at_index(list(range(space.size))))
    else:  # gemm: 330,240 configurations
        configs = space.configs(space.sample(5000, np.random.default_rng(27)))
    for config in configs:
        sizes = spec.geometry.sizes(config)
        assert (sizes.global_size, sizes.local_size) == HAND_WRITTEN[kernel](config), config


def _recorded() -> list[tuple[str, Path]]:
    return [
        (kernel, path)
        for kernel in sorted(HAND_WRITTEN)
        for path in sorted((ROOT / "benchmarks" / "data").glob(f"pocl-*/kernels_{kernel}.json"))
    ]


RECORDED = _recorded()


@pytest.mark.parametrize(("kernel", "path"), RECORDED, ids=[f"{k}-{p.parent.name}" for k, p in RECORDED])
def test_the_device_limits_prune_exactly_the_configurations_that_failed(kernel: str, path: Path) -> None:
    spec = spec_of(kernel)
    assert spec.geometry is not None
    data = json.loads(path.read_text())
    info = data["device_info"]
    limits = DeviceLimits(
        info["max_work_group_size"], tuple(info["max_work_item_sizes"]), info["local_mem_size"]
    )
    constraints = limit_constraints(spec.geometry, spec.space.names, limits)
    names = data["tune_params_keys"]
    for record in data["cache"].values():
        config = {name: record[name] for name in names}
        fits = all(constraint(config) for constraint in constraints)
        ran = isinstance(record["time"], (int, float))
        assert fits == ran, f"{config}: {'pruned' if not fits else 'kept'}, recorded {record['time']!r}"
