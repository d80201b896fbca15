"""Device limits as known constraints, end to end on a simulated backend with small limits.

The ``lim`` backend below reports a work-group limit of 64 work-items (64 in x, 8 in y) and 4 KiB
of local memory, and times each launch itself. A test that declares how its work-group size (and
local memory) follow from its parameters is tuned exhaustively: every configuration the limits
allow runs, none beyond them does, the summary says how many were pruned and why, and the stored
``space_hash`` is the declared space's on both simulated devices, whose limits differ.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from pytest_autotune import backends

LIMITED_BACKEND = """
import pytest
from pytest_autotune.backends import Backend, DeviceLimits


class Launch:
    def __init__(self, seconds):
        self.seconds = seconds


class LimitedBackend(Backend):
    name = "lim"
    fixtures = frozenset({"lim_device"})

    def devices(self):
        return ["small", "tiny"]

    def select(self, spec):
        return spec or "small"

    def key(self, device):
        return f"lim:{device}"

    def info(self, device):
        return {"key": self.key(device)}

    def limits(self, device):
        if device == "tiny":
            return DeviceLimits(max_work_group_size=16, max_work_item_sizes=(16, 16), local_memory=1024)
        return DeviceLimits(max_work_group_size=64, max_work_item_sizes=(64, 8), local_memory=4096)

    def result_seconds(self, result):
        return result.seconds if isinstance(result, Launch) else None


@pytest.fixture(scope="session")
def lim_device(_autotune_devices):
    return _autotune_devices.device("lim")
"""

CONFTEST = """
from pytest_autotune.backends import register_backend

register_backend("lim", "lim_backend:LimitedBackend", fixtures=["lim_device"], fixture_module="lim_backend")
"""

TEST = """
import json
from lim_backend import Launch
from pytest_autotune import Geometry, Pow2, Set, tunable

GEOMETRY = Geometry(
    problem_size=(1024, 64),
    block_size_names=["BX", "BY"],
    local_memory=lambda p: 256 * p["BX"] if p["STAGE"] else 0,
)


@tunable(BX=Pow2(1, 256, default=8), BY=Pow2(1, 16, default=1), STAGE=Set(0, 1, default=0),
         strategy="exhaustive", geometry=GEOMETRY)
def test_limited(autotune, lim_device):
    with open("ran.jsonl", "a") as ran:
        ran.write(json.dumps(autotune.config) + "\\n")
    global_size, local_size = autotune.launch
    assert global_size == (1024 // autotune.config["BX"] * autotune.config["BX"], 64)
    autotune.measure(lambda: Launch(1e-3 / (local_size[0] * local_size[1])))
"""


def _fits(config: dict[str, int], total: int, per_dimension: tuple[int, int], local: int) -> bool:
    """The oracle, written out: does the device run this configuration?"""
    bx, by = config["BX"], config["BY"]
    memory = 256 * bx if config["STAGE"] else 0
    return bx <= per_dimension[0] and by <= per_dimension[1] and bx * by <= total and memory <= local


def _every_config() -> list[dict[str, int]]:
    return [
        {"BX": bx, "BY": by, "STAGE": stage}
        for bx, by, stage in itertools.product([2**k for k in range(9)], [2**k for k in range(5)], (0, 1))
    ]


@pytest.fixture
def limited_project(project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.setattr(backends.registry, "_REGISTRY", dict(backends.registry._REGISTRY))
    monkeypatch.setattr(backends.registry, "_INSTANCES", dict(backends.registry._INSTANCES))
    project.makepyfile(lim_backend=LIMITED_BACKEND, test_limited=TEST)
    project.makeconftest(CONFTEST)
    project.syspathinsert()
    return project


@pytest.mark.parametrize(
    ("device", "limits"),
    [("small", (64, (64, 8), 4096)), ("tiny", (16, (16, 16), 1024))],
)
def test_configurations_beyond_the_device_limits_are_never_run(
    limited_project: pytest.Pytester, device: str, limits: tuple[int, tuple[int, int], int]
) -> None:
    result = limited_project.runpytest(
        "--autotune", f"--autotune-device={device}", "--autotune-json=out.json"
    )
    result.assert_outcomes(passed=1)
    ran = [json.loads(line) for line in (Path(limited_project.path) / "ran.jsonl").read_text().splitlines()]
    every = _every_config()
    allowed = [c for c in every if _fits(c, *limits)]
    assert all(_fits(c, *limits) for c in ran)  # not one trial beyond the limits
    assert {json.dumps(c, sort_keys=True) for c in ran} == {json.dumps(c, sort_keys=True) for c in allowed}
    pruned = len(every) - len(allowed)
    result.stdout.fnmatch_lines(
        [
            f"*test_limited.py::test_limited *{len(allowed)} (ok {len(allowed)})*",
            f"      [[]pruned {pruned} of {len(every)} configurations beyond the device's limits "
            f"(work-group of at most {limits[0]} work-items and "
            f"({limits[1][0]}, {limits[1][1]}) per dimension: *; "
            f"at most {limits[2]} bytes of local memory: *)*",
        ]
    )
    store = json.loads((Path(limited_project.path) / "autotune.json").read_text())
    entry = store["devices"][f"lim:{device}"]["tests"]["test_limited.py::test_limited"]
    counts = {label: n for label, n in entry["tuning"]["counts"].items() if n}
    assert counts == {"ok": len(allowed)}  # no failed trial either
    assert _fits(entry["config"], *limits)
    (exported,) = json.loads((Path(limited_project.path) / "out.json").read_text())["benchmarks"]
    assert exported["extra_info"]["autotune_pruned"]["declared"] == len(every)
    assert exported["extra_info"]["autotune_pruned"]["kept"] == len(allowed)


def test_the_space_hash_does_not_depend_on_the_device_limits(limited_project: pytest.Pytester) -> None:
    from pytest_autotune.api import get_spec
    from pytest_autotune.testing.opencl_objective import load_test_function

    for device in ("small", "tiny"):
        limited_project.runpytest("--autotune", f"--autotune-device={device}").assert_outcomes(passed=1)
    store = json.loads((Path(limited_project.path) / "autotune.json").read_text())
    hashes = {
        key: device["tests"]["test_limited.py::test_limited"]["space_hash"]
        for key, device in store["devices"].items()
    }
    spec = get_spec(load_test_function(Path(limited_project.path) / "test_limited.py", "test_limited"))
    assert spec is not None
    assert hashes == {"lim:small": spec.space.space_hash, "lim:tiny": spec.space.space_hash}
    # the committed configurations are used as they are by a plain run on each device
    for device in ("small", "tiny"):
        checked = limited_project.runpytest(f"--autotune-device={device}", "--autotune-check=warn")
        checked.assert_outcomes(passed=1)
        checked.stdout.fnmatch_lines(["*checked 1*"])


NOTHING_FITS = """
from lim_backend import Launch
from pytest_autotune import Pow2, tunable


@tunable(BX=Pow2(128, 256), block_size_names=["BX"])
def test_too_big(autotune, lim_device):
    autotune.measure(lambda: Launch(1e-3))
"""


def test_a_space_the_limits_empty_fails_setup_naming_the_device_and_limit(
    limited_project: pytest.Pytester,
) -> None:
    limited_project.makepyfile(test_too_big=NOTHING_FITS)
    result = limited_project.runpytest("--autotune", "test_too_big.py")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        ["*test_too_big.py::test_too_big: on lim:small: *work-group of at most 64 work-items*"]
    )
    plain = limited_project.runpytest("test_too_big.py")  # a plain run does not prune: the default runs
    plain.assert_outcomes(passed=1)
