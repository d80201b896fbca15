"""The pieces of ``benchmarks/gate/bench.py`` that decide its numbers: the injected work, the offline rule.

The benchmark itself takes minutes (``--quick`` too), so it has no smoke test here.
"""

from __future__ import annotations

import importlib.util

import pytest

from benchmarks.gate.analysis import Measurement, judge_sequence, rule_for
from benchmarks.gate.project import GATE, KERNELS, _inject_launch
from pytest_autotune.entry import Baseline

_spec = importlib.util.spec_from_file_location("gate_slowdown", GATE / "gate_slowdown.py")
assert _spec is not None
assert _spec.loader is not None
gate_slowdown = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gate_slowdown)


@pytest.mark.parametrize(
    ("global_size", "local_size"),
    [((4096,), (64,)), ((512, 512), (128, 32)), ((1024, 1024), (1, 1)), ((64, 16), (16, 16))],
)
@pytest.mark.parametrize("fraction", [0.1, 0.2, 0.5])
def test_the_extra_launches_cover_the_fraction_of_work_groups(
    global_size: tuple[int, ...], local_size: tuple[int, ...], fraction: float
) -> None:
    groups = 1
    for size, local in zip(global_size, local_size, strict=True):
        groups *= size // local
    extra = round(fraction * groups)
    grids = gate_slowdown._sub_grids(global_size, local_size, extra)
    covered = 0
    for grid in grids:
        assert all(
            g % loc == 0 and g <= full for g, loc, full in zip(grid, local_size, global_size, strict=True)
        )
        part = 1
        for size, local in zip(grid, local_size, strict=True):
            part *= size // local
        covered += part
    assert covered == extra


@pytest.mark.parametrize("name", [name for name, kernel in KERNELS.items() if kernel.out is not None])
def test_each_example_routes_its_one_measured_launch_through_the_injection(name: str) -> None:
    kernel = KERNELS[name]
    routed = _inject_launch(kernel.files[0].read_text(encoding="utf-8"), kernel.out or 0, name)
    assert routed.count("gate_slowdown.launch(") == 1
    assert "\nimport gate_slowdown\n" in routed
    compile(routed, str(kernel.files[0]), "exec")


def test_the_offline_rule_stops_where_the_plugin_stops() -> None:
    baseline = Baseline(100e-6, q1=100e-6, q3=100e-6, noise=0.05)
    rule = rule_for(0.10, explicit=False, k=2.0)  # tolerance 10%: limit 110us
    first_ok = [Measurement(105e-6, 105e-6, 105e-6), Measurement(200e-6, 200e-6, 200e-6)]
    assert judge_sequence(rule, baseline, first_ok) == ("passed", 1)
    slow_then_fine = [Measurement(130e-6, 130e-6, 130e-6), Measurement(104e-6, 104e-6, 104e-6)]
    assert judge_sequence(rule, baseline, slow_then_fine) == ("passed", 2)
    assert judge_sequence(rule, baseline, slow_then_fine[:1]) is None  # would have measured again
    always_slow = [Measurement(130e-6, 130e-6, 130e-6)] * 7
    assert judge_sequence(rule, baseline, always_slow) == ("regression", 6)
    # scaled by a probe ratio of 0.8: 130us counts as 104us
    assert judge_sequence(rule, baseline, always_slow, scale=0.8) == ("passed", 1)
