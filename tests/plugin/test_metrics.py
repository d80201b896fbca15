"""Named metrics (``autotune.metric``): beside the time, in the summary, the entry and the JSON export.

Under the fake timer (``tests/plugin/conftest.py``) the optimum A=3, B=3 takes 100us and the
default A=1, B=1 900us, so ``lambda seconds: 2e-3 / seconds`` is 20 at the optimum and 2.22 at the
default: known answers for every place a metric shows up.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import pytest

from pytest_autotune.timing.metrics import MetricError, RunMetrics

Entries = Callable[[], dict[str, dict[str, Any]]]

WITH_METRICS = """
from pytest_autotune import Interval, Set, tunable


@tunable(A=Interval(1, 6, default=1), B=Set(1, 2, 3, default=1), strategy="exhaustive")
def test_rate(autotune):
    autotune.measure(lambda: None)
    autotune.metric("GFLOP/s", lambda seconds: 2e-3 / seconds)
    autotune.metric("work-items", 64 * autotune.config["A"])
"""


def test_metrics_are_shown_stored_and_exported_while_the_time_stays_the_objective(
    project: pytest.Pytester, stored_entries: Entries
) -> None:
    project.makepyfile(test_k=WITH_METRICS)
    tuned = project.runpytest("--autotune", "--autotune-json=tuned.json")
    tuned.assert_outcomes(passed=1)
    tuned.stdout.fnmatch_lines(
        [
            "  test_k.py::test_rate  100us  100us  *≥9.0x  *18 (ok 18)  GFLOP/s=20, work-items=192  "
            "{'A': 3, 'B': 3}"
        ]
    )
    entry = stored_entries()["test_k.py::test_rate"]
    assert entry["config"] == {"A": 3, "B": 3}  # the time decided, not the metrics
    assert entry["baseline"]["unit"] == "s"
    assert entry["metrics"] == {"GFLOP/s": 20.0, "work-items": 192.0}
    extra = json.loads((project.path / "tuned.json").read_text())["benchmarks"][0]["extra_info"]
    assert (extra["GFLOP/s"], extra["work-items"], extra["state"]) == (20.0, 192.0, "tuned")

    checked = project.runpytest("--autotune-json=checked.json")
    checked.assert_outcomes(passed=1)
    checked.stdout.fnmatch_lines(
        [
            "checked 1: 1 passed",
            "  test_k.py::test_rate  cpu  *100us  100us * passed  GFLOP/s=20, work-items=192",
        ]
    )
    extra = json.loads((project.path / "checked.json").read_text())["benchmarks"][0]["extra_info"]
    assert extra["GFLOP/s"] == 20.0


def test_a_metric_function_is_evaluated_on_the_reported_median(
    project: pytest.Pytester, stored_entries: Entries, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.makepyfile(test_k=WITH_METRICS)
    project.runpytest("--autotune").assert_outcomes(passed=1)
    monkeypatch.setenv("AUTOTUNE_SLOW", "test_rate=2")  # twice as slow: half the rate
    updated = project.runpytest("--autotune-update-baseline")
    updated.assert_outcomes(passed=1)
    assert stored_entries()["test_k.py::test_rate"]["metrics"] == {"GFLOP/s": 10.0, "work-items": 192.0}


def test_a_metric_can_be_the_objective(project: pytest.Pytester, stored_entries: Entries) -> None:
    objective = 'strategy="exhaustive", objective="GFLOP/s", maximize=True'
    project.makepyfile(test_k=WITH_METRICS.replace('strategy="exhaustive"', objective))
    tuned = project.runpytest("--autotune")
    tuned.assert_outcomes(passed=1)
    entry = stored_entries()["test_k.py::test_rate"]
    assert entry["config"] == {"A": 3, "B": 3}  # the highest rate is the fastest configuration
    assert entry["baseline"]["median"] == pytest.approx(20.0)
    assert entry["baseline"]["unit"] == "GFLOP/s"
    tuned.stdout.fnmatch_lines(["  test_k.py::test_rate  20 GFLOP/s  20 GFLOP/s  *≥9.0x  *"])


def test_entries_without_metrics_keep_their_bytes(project: pytest.Pytester, two_tests: str) -> None:
    """Entries written before metrics existed load, check, and are rewritten byte for byte (but
    for the time they were measured at, which a re-measurement renews)."""
    project.makepyfile(test_k=two_tests)
    project.runpytest("--autotune").assert_outcomes(passed=2)
    store = project.path / "autotune.json"
    before = store.read_text()
    assert '"metrics"' not in before
    project.runpytest().assert_outcomes(passed=2)
    assert store.read_text() == before  # a plain run writes nothing
    project.runpytest("--autotune-update-baseline").assert_outcomes(passed=2)  # re-measured, same values
    undated = re.compile(r'"measured_at": "[^"]*"')
    assert undated.sub("", store.read_text()) == undated.sub("", before)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        ('autotune.metric("time", 1.0)', "'time' cannot name a metric"),
        ('autotune.metric("", 1.0)', "a metric name must be a non-empty string"),
        ('autotune.metric("rate", float("nan"))', "metric 'rate': got nan, which is not a finite number"),
        ('autotune.metric("rate", "fast")', "metric 'rate': got 'fast', which is not a finite number"),
        ('autotune.metric("rate", lambda s: -s * float("inf"))', "metric 'rate': its function returned"),
        ('autotune.metric("rate", lambda p: p["time"])', "not Kernel Tuner's dict with 'time' in ms"),
    ],
)
def test_a_bad_metric_fails_the_test_naming_it(project: pytest.Pytester, call: str, message: str) -> None:
    project.makepyfile(
        test_k=f"""
from pytest_autotune import Interval, tunable


@tunable(A=Interval(1, 3), strategy="exhaustive")
def test_bad(autotune):
    autotune.measure(lambda: None)
    {call}
"""
    )
    result = project.runpytest("--autotune")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([f"*test_k.py::test_bad: *{message}*configuration {{'A': *"])


def test_a_metric_of_the_time_needs_a_measurement(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_k="""
from pytest_autotune import Interval, tunable


@tunable(A=Interval(1, 3), strategy="exhaustive", objective="rate")
def test_unmeasured(autotune):
    autotune.metric("rate", lambda seconds: 1 / seconds)
"""
    )
    result = project.runpytest("--autotune")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*never called autotune.measure() or autotune.record()*"])


def test_run_metrics_keep_the_last_value_and_evaluate_functions_on_the_given_time() -> None:
    metrics = RunMetrics()
    metrics.define("GB/s", lambda seconds: 8e-3 / seconds)
    metrics.define("error", 0.5)
    metrics.define("error", 0.25)  # set again: replaced
    assert metrics.evaluate(1e-3) == {"GB/s": pytest.approx(8.0), "error": 0.25}
    assert metrics.evaluate(2e-3)["GB/s"] == pytest.approx(4.0)
    with pytest.raises(MetricError, match="never timed anything"):
        metrics.evaluate(None)
    with pytest.raises(MetricError, match="reserved"):
        metrics.define("autotune_config", 1.0)
