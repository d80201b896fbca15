"""The pieces of ``benchmarks/gate/bench.py`` that decide its numbers: the injected work, the offline rule.

The benchmark itself takes minutes (``--quick`` too), so it has no smoke test here.
"""

from __future__ import annotations

import importlib.util

import pytest

from benchmarks.gate.analysis import (
    LEVELS,
    Check,
    Measurement,
    judge_sequence,
    kernel_table,
    rule_for,
    targets_rows,
)
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
@pytest.mark.parametrize("fraction", [0.05, 0.1, 0.2, 0.5, 1.0])
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


def relative(kernel: str, level: float, state: str, seconds: float = 10.0) -> Check:
    return Check(
        "relative", level, kernel, 0, None if state == "error" else state == "regression", state, seconds
    )


def test_the_levels_include_a_5_percent_change_and_a_2x_slowdown() -> None:
    assert {0.0, 0.05, 0.1, 1.0} <= set(LEVELS)


def test_the_relative_table_says_how_unchanged_code_was_judged_not_only_how_often_it_failed() -> None:
    checks = [
        relative("gemm", 0.0, state) for state in ("pass",) * 7 + ("inconclusive",) * 2 + ("regression",)
    ]
    checks += [relative("gemm", 0.1, "regression")] * 9 + [relative("gemm", 0.1, "inconclusive")]
    _, header, rows, _ = kernel_table("relative", "gemm", checks, None, 2.0)
    assert header[1:3] == ["unchanged judged", "+10% caught"]
    assert rows[0][1] == "pass 7, inconclusive 2, fail 1 of 10"
    assert rows[0][2] == "90% (9/10) [1 inconclusive]"
    assert rows[0][-1] == "NO"  # a false red, and 70% judged pass


def test_the_targets_table_reads_the_issues_targets() -> None:
    checks = []
    for kernel in ("gemm", "saxpy"):
        checks += [relative(kernel, 0.0, "pass")] * 25
        checks += [relative(kernel, 0.1, "regression")] * 9 + [relative(kernel, 0.1, "pass")]
        checks += [relative(kernel, 1.0, "regression", seconds=30.0)] * 10
    checks += [relative("saxpy", 0.05, "regression")] * 7 + [relative("saxpy", 0.05, "inconclusive")] * 3
    rows = {row[0]: row[1:] for row in targets_rows(checks)}
    assert rows["+10% caught >= 9/10 per kernel"] == ["gemm 9/10, saxpy 9/10", "yes"]
    assert rows["+5% caught >= 8/10 per kernel"] == ["saxpy 7/10", "NO"]
    assert rows["0 false reds in 50 unchanged checks"] == ["0 of 50", "yes"]
    assert rows["unchanged judged pass >= 90%"] == ["100% (50/50)", "yes"]
    assert rows["median <= 20 s per test"] == ["10.0 s", "yes"]
    assert rows["+100% (2x) a regression, never inconclusive"] == ["20/20 regression, 0 inconclusive", "yes"]
    # one 2x slowdown left inconclusive, one false red among fewer than 50 checks
    worse = [*checks[1:], relative("gemm", 0.0, "regression"), relative("gemm", 1.0, "inconclusive")]
    rows = {row[0]: row[1:] for row in targets_rows(worse)}
    assert rows["0 false reds in 50 unchanged checks"] == ["1 of 50", "NO"]
    assert rows["+100% (2x) a regression, never inconclusive"] == ["20/21 regression, 1 inconclusive", "NO"]
    assert targets_rows(checks[:25])[0][1:] == ["not run", "-"]
