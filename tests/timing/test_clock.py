"""The two clocks: reading them, statistics carrying both, baselines storing both, the parallelism guard."""

from __future__ import annotations

import copy
import time
from typing import Any, ClassVar

import pytest

from pytest_autotune.entry import DamagedEntryError, StoreEntry
from pytest_autotune.plugin.modes.baseline import MeasuredBaseline
from pytest_autotune.testing import ConstantTimer, FakeTimer, bowl
from pytest_autotune.timing.clock import check_choice, on_clock, read_clocks, resolve_clock
from pytest_autotune.timing.measure import DefaultTimer, Stats, least_disturbed_both
from pytest_autotune.timing.parallelism import judge_parallelism


class _Node:
    nodeid = "t.py::test_k"
    config: ClassVar[dict[str, int]] = {"A": 3}


def test_resolve_clock_uses_cpu_time_on_cpu_devices_only() -> None:
    assert resolve_clock("auto", True) == ("cpu", None)
    assert resolve_clock("auto", False) == ("wall", None)
    assert resolve_clock("wall", True) == ("wall", None)
    assert resolve_clock("cpu", True) == ("cpu", None)
    clock, why = resolve_clock("cpu", False)
    assert clock == "wall"
    assert why is not None
    assert "not the CPU" in why
    with pytest.raises(ValueError, match="expected one of auto, wall, cpu, got 'gpu'"):
        check_choice("gpu")


def test_a_fake_timer_reports_cpu_time_from_its_factors() -> None:
    timer = FakeTimer(bowl, slowdown="test_k=2", wall_slowdown="test_k=1.5", parallelism="test_k=4")
    result, wall, cpu = read_clocks(timer, lambda: "ran", _Node())
    assert result == "ran"
    assert wall == pytest.approx(1e-4 * 2 * 1.5)
    assert cpu == pytest.approx(1e-4 * 2 * 4)  # more work and parallelism; not the busy machine's
    assert ConstantTimer(2e-4).time_both(lambda: None, _Node())[1:] == (2e-4, 2e-4)


def test_a_timer_without_time_both_reads_no_cpu_time() -> None:
    result, wall, cpu = read_clocks(lambda fn, autotune: (fn(), 3e-3), lambda: 7, _Node())
    assert (result, wall, cpu) == (7, 3e-3, None)


def test_the_default_timer_reads_the_process_cpu_time_of_the_call() -> None:
    def spin() -> int:
        end = time.process_time() + 0.02
        while time.process_time() < end:
            pass
        return 1

    _, wall, cpu = DefaultTimer().time_both(spin, None)
    assert cpu >= 0.02  # the work this process did, whatever else the machine does
    assert wall > 0
    _, wall, cpu = DefaultTimer().time_both(lambda: time.sleep(0.05), None)
    assert wall >= 0.05
    assert cpu < 0.04  # sleeping is no work


def test_stats_carry_both_clocks_and_round_trip() -> None:
    stats = Stats.of([1.0, 2.0, 3.0], [2.0, 4.0, 6.0])
    assert stats.median == 2.0
    assert stats.cpu is not None
    assert stats.cpu.median == 4.0
    assert stats.parallelism == 2.0
    assert stats.on("cpu") is stats.cpu
    assert stats.on("wall") is stats
    assert Stats.from_dict(stats.to_dict()) == stats
    assert Stats.of([1.0, 2.0]).cpu is None
    assert Stats.of([1.0, 2.0], [1.0]).cpu is None  # not one CPU time per sample: none
    old = {k: v for k, v in Stats.of([1.0]).to_dict().items() if k != "cpu"}
    assert Stats.from_dict(old).cpu is None  # written before the CPU clock


def test_the_least_disturbed_measurement_is_chosen_on_each_clock() -> None:
    fast_wall = Stats.of([1.0], [5.0])
    fast_cpu = Stats.of([3.0], [2.0])
    both = least_disturbed_both([fast_wall, fast_cpu])
    assert both.median == 1.0
    assert both.cpu is not None
    assert both.cpu.median == 2.0


def test_a_baseline_of_processes_has_each_clocks_middle_process_and_noise() -> None:
    processes = [Stats.of([w], [c]) for w, c in [(1.0, 2.0), (1.2, 2.0), (0.9, 1.9), (1.1, 2.1), (1.0, 2.0)]]
    measured = MeasuredBaseline.of_processes(processes, maximize=False)
    assert measured.stats.median == 1.0
    assert measured.noise == pytest.approx(0.3)
    assert measured.stats.cpu is not None
    assert measured.stats.cpu.median == 2.0
    assert measured.cpu_noise == pytest.approx(0.1)
    ratios = sorted(c / w for w, c in [(1.0, 2.0), (1.2, 2.0), (0.9, 1.9), (1.1, 2.1), (1.0, 2.0)])
    assert measured.parallelism == pytest.approx(ratios[2])
    entry = measured.to_entry("s", "cpu")
    assert entry.clock == "cpu"
    assert entry.cpu is not None
    assert (entry.cpu.median, entry.cpu.noise, entry.cpu.processes) == (2.0, 0.1, 5)
    assert entry.cpu.parallelism == pytest.approx(ratios[2], rel=1e-3)
    assert on_clock(entry, "cpu") is entry.cpu
    without = MeasuredBaseline.of_processes([Stats.of([1.0]), Stats.of([2.0], [2.0])], maximize=False)
    assert without.stats.cpu is None  # a process without CPU times: the baseline has none
    assert without.to_entry("s", "cpu").cpu is None


WITH_CLOCKS: dict[str, Any] = {
    "config": {"A": 3},
    "space_hash": "abc",
    "baseline": {
        "median": 1e-4,
        "noise": 0.2,
        "processes": 5,
        "unit": "s",
        "clock": "cpu",
        "cpu": {"median": 2e-4, "noise": 0.02, "processes": 5, "unit": "s", "parallelism": 1.9},
    },
}


def test_an_entry_with_both_clocks_round_trips() -> None:
    entry = StoreEntry.from_json(copy.deepcopy(WITH_CLOCKS), where="W")
    assert entry.baseline is not None
    assert entry.baseline.cpu is not None
    assert (entry.baseline.clock, entry.baseline.cpu.median, entry.baseline.cpu.parallelism) == (
        "cpu",
        2e-4,
        1.9,
    )
    assert entry.to_json() == WITH_CLOCKS


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (("clock",), "gpu", "field 'baseline.clock' must be 'wall' or 'cpu', got a string 'gpu'"),
        (("cpu", "median"), -1.0, "field 'baseline.cpu.median' must be a positive time in seconds, got -1.0"),
        (("cpu", "parallelism"), -2, "field 'baseline.cpu.parallelism' must not be negative, got -2"),
        (("cpu", "cpu"), {"median": 1.0}, "field 'baseline.cpu.cpu' is only for a time baseline"),
        (("cpu", "surprise"), 1, "field 'baseline.cpu.surprise' is not a known key"),
    ],
)
def test_a_damaged_clock_field_is_named(path: tuple[str, ...], value: Any, message: str) -> None:
    data = copy.deepcopy(WITH_CLOCKS)
    target = data["baseline"]
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    with pytest.raises(DamagedEntryError, match=message.replace("(", r"\(").replace(")", r"\)")):
        StoreEntry.from_json(data, where="autotune.json: entry 't' of device 'd'")


def _quiet() -> tuple[float, int]:
    return 0.5, 4


def test_the_parallelism_guard_flags_a_drop_beyond_its_threshold() -> None:
    assert judge_parallelism(1.9, 2.0, 0.05, load=_quiet).state == "kept"
    dropped = judge_parallelism(1.0, 2.0, 0.05, load=_quiet)
    assert dropped.state == "dropped"
    assert dropped.limit == pytest.approx(1.5)  # max(25%, 2 x 5%) below the baseline
    assert judge_parallelism(1.3, 2.0, 0.2, load=_quiet).state == "kept"  # 2 x noise 20%: limit 1.2


@pytest.mark.parametrize(
    ("current", "baseline", "load", "why"),
    [
        (1.0, None, _quiet, "the baseline has no CPU time"),
        (None, 2.0, _quiet, "this measurement has no CPU time"),
        (1.0, 1.1, _quiet, "the baseline ran serially"),
        (1.0, 2.0, lambda: None, "the system gives no load average"),
        (1.0, 2.0, lambda: (3.5, 4), "the machine is busy (load 3.5 on 4 cores; the kernel's 2 threads"),
    ],
)
def test_the_parallelism_guard_says_why_it_could_not_judge(
    current: float | None, baseline: float | None, load: Any, why: str
) -> None:
    verdict = judge_parallelism(current, baseline, None, load=load)
    assert verdict.state == "unjudged"
    assert why in verdict.message


def test_show_gives_the_tolerance_of_the_clock_the_entry_was_judged_on() -> None:
    from pytest_autotune.commands.entry_text import tolerance_text
    from pytest_autotune.entry import Baseline

    cpu = Baseline(2e-4, noise=0.03, processes=5)
    assert (
        tolerance_text(Baseline(1e-4, noise=0.2, processes=5, clock="cpu", cpu=cpu)) == "10% (cpu noise 3%)"
    )
    assert tolerance_text(Baseline(1e-4, noise=0.2, processes=5, clock="wall", cpu=cpu)) == "40% (noise 20%)"
