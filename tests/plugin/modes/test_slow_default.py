"""The declared default after the search: measured just enough to say how many times slower it is,
and never beyond its time cap (issue 47, item 2)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import pytest

from pytest_autotune.plugin.modes.slow_default import PROBE_REPEAT, DefaultMeter, default_cap
from pytest_autotune.plugin.modes.tune import _remeasure
from pytest_autotune.plugin.workers.runner import BodyRun
from pytest_autotune.timing.measure import MEASURE_REPEAT


class Clock:
    """A fake clock: the runner advances it by the time its calls take."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Runner:
    """A trial runner whose configuration ``{"A": a}`` measures ``a`` seconds per call and takes as
    long on the fake clock; records the calls asked of each configuration, run by run."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.repeats: defaultdict[float, list[int]] = defaultdict(list)

    def __call__(self, config: dict[str, Any], repeat: int) -> BodyRun:
        a = float(config["A"])
        self.repeats[a].append(repeat)
        self.clock.now += a * repeat
        return BodyRun(config, (a,) * repeat)


def _measure(finalists: list[dict[str, Any]], cap: float, **meter: Any) -> tuple[Runner, DefaultMeter, Any]:
    clock = Clock()
    runner = Runner(clock)
    default = DefaultMeter(runner, finalists[-1], cap, clock=clock, **meter)
    measured = _remeasure(runner, finalists, default=default, default_index=len(finalists) - 1)
    return runner, default, measured


def test_a_default_many_times_slower_is_measured_by_one_short_probe() -> None:
    runner, meter, measured = _measure([{"A": 1}, {"A": 1.5}, {"A": 20}], cap=1000.0)
    # formerly one full round of MEASURE_REPEAT calls (200 s on this clock); now the probe (60 s)
    assert runner.repeats[20.0] == [PROBE_REPEAT]
    assert PROBE_REPEAT < MEASURE_REPEAT
    assert meter.at_least
    assert meter.spent == 20.0 * PROBE_REPEAT
    assert measured[2] == [(20.0,) * PROBE_REPEAT]
    # the others are measured as before, in every round
    assert runner.repeats[1.0] == runner.repeats[1.5] == [MEASURE_REPEAT] * 3


def test_the_default_is_measured_last_in_the_first_round_against_the_others() -> None:
    # listed first, it would have no best to compare with; it is measured after the others
    clock = Clock()
    order: list[float] = []
    runner = Runner(clock)

    def recording(config: dict[str, Any], repeat: int) -> BodyRun:
        order.append(float(config["A"]))
        return runner(config, repeat)

    finalists: list[dict[str, Any]] = [{"A": 20}, {"A": 1}, {"A": 1.5}]
    meter = DefaultMeter(recording, finalists[0], 1000.0, clock=clock)
    _remeasure(recording, finalists, default=meter, default_index=0)
    assert order[:3] == [1.0, 1.5, 20.0]
    assert meter.at_least
    assert runner.repeats[20.0] == [PROBE_REPEAT]


def test_a_default_not_outclassed_is_measured_fully_when_it_fits() -> None:
    runner, meter, _ = _measure([{"A": 1}, {"A": 1.5}], cap=1000.0)
    assert sum(runner.repeats[1.5]) == 3 * MEASURE_REPEAT  # all rounds, the first as probe + rest
    assert runner.repeats[1.5][:2] == [PROBE_REPEAT, MEASURE_REPEAT - PROBE_REPEAT]
    assert not meter.at_least


def test_a_slow_default_never_takes_more_than_its_time_cap() -> None:
    # 1.6x slower: not outclassed, so it would be measured in full rounds (48 s); the cap is 8 s
    runner, meter, measured = _measure([{"A": 1}, {"A": 1.6}], cap=8.0)
    assert runner.repeats[1.6] == [PROBE_REPEAT, 2]  # 3 + 2 calls of 1.6 s: 8 s
    assert meter.spent <= 8.0
    assert meter.done
    assert not meter.at_least
    assert [len(samples) for samples in measured[1]] == [PROBE_REPEAT + 2]


def test_its_time_in_the_search_sizes_the_probe_to_the_cap() -> None:
    # one call takes 30 s and the cap is 40 s: one call, not three
    runner, meter, _ = _measure([{"A": 1}, {"A": 30}], cap=40.0, estimate=30.0)
    assert runner.repeats[30.0] == [1]
    assert meter.at_least
    assert meter.spent == 30.0


def test_the_committed_configuration_is_never_cut_short() -> None:
    clock = Clock()
    runner = Runner(clock)
    finalists: list[dict[str, Any]] = [{"A": 1}, {"A": 20}]
    meter = DefaultMeter(runner, finalists[1], 1.0, clock=clock)
    _remeasure(runner, finalists, keep=1, default=meter, default_index=1)
    assert runner.repeats[20.0] == [MEASURE_REPEAT] * 3


@pytest.mark.parametrize(("search", "cap"), [(0.5, 1.0), (20.0, 4.0), (600.0, 10.0)])
def test_the_cap_is_a_fifth_of_the_search_within_bounds(search: float, cap: float) -> None:
    assert default_cap(search) == pytest.approx(cap)


def test_the_summary_says_at_least_for_a_default_measured_until_clearly_outclassed(
    project: pytest.Pytester, two_tests: str
) -> None:
    # the fake timer's default (A=1, B=1) takes 900us, the optimum 100us: 9x, measured by a probe
    project.makepyfile(test_k=two_tests)
    result = project.runpytest("--autotune", "-k", "test_b")
    result.assert_outcomes(passed=1, deselected=1)
    result.stdout.fnmatch_lines(
        [
            "*test_b: tuned, 18 trials (ok 18) in *: 100us (best trial 100us), ≥9.0x vs default",
            "  test_k.py::test_b  100us  100us  *≥9.0x  *18 (ok 18)  {'A': 3, 'B': 3}",
            "  vs default: the winner against the declared default * (≥: a default clearly outclassed *",
        ]
    )
