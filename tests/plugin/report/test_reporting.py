"""What the user reads: header line, JSON export in pytest-benchmark's schema, JUnit XML, benchmark."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest


def test_header_line_says_mode_device_cache_and_entries(project: pytest.Pytester, two_tests: str) -> None:
    project.makepyfile(test_k=two_tests)
    project.runpytest("--autotune").stdout.fnmatch_lines(
        ["autotune: mode tune, device host:*, cache */autotune.json (not created yet)"]
    )
    project.runpytest().stdout.fnmatch_lines(
        ["autotune: mode check (fail), device host:*, cache */autotune.json (2 entries, 2 for host:*)"]
    )
    project.runpytest("--autotune-update-baseline").stdout.fnmatch_lines(
        ["autotune: mode update baselines, *"]
    )


def test_a_project_without_tunable_tests_sees_nothing(project: pytest.Pytester) -> None:
    project.makepyfile(test_plain="def test_plain():\n    pass\n")
    result = project.runpytest()
    result.assert_outcomes(passed=1)
    assert [line for line in result.stdout.lines if "autotune" in line and "plugins:" not in line] == []


def test_json_export_follows_pytest_benchmark(project: pytest.Pytester, two_tests: str) -> None:
    project.makepyfile(test_k=two_tests)
    project.runpytest("--autotune", "--autotune-json=out/tuned.json").assert_outcomes(passed=2)
    document = json.loads((project.path / "out" / "tuned.json").read_text())
    assert set(document) == {"machine_info", "commit_info", "benchmarks", "datetime", "version"}
    benchmarks = {b["fullname"]: b for b in document["benchmarks"]}
    assert sorted(benchmarks) == ["test_k.py::test_a", "test_k.py::test_b"]
    bench = benchmarks["test_k.py::test_a"]
    assert bench["name"] == "test_a"
    assert bench["group"].startswith("host:")
    assert bench["extra_info"]["autotune_config"] == {"A": 3, "B": 3}
    assert bench["extra_info"]["state"] == "tuned"
    stats = bench["stats"]
    assert stats["median"] == pytest.approx(1e-4)
    # the least disturbed of the winner's measurements (three finalist rounds and the final call)
    assert stats["rounds"] == 10
    assert stats["ops"] == pytest.approx(1e4)
    for key in ("min", "max", "mean", "stddev", "iqr", "q1", "q3", "ld15iqr", "hd15iqr", "outliers", "total"):
        assert key in stats


def test_results_reach_junit_xml_as_user_properties(project: pytest.Pytester, two_tests: str) -> None:
    project.makepyfile(test_k=two_tests)
    project.runpytest("--autotune").assert_outcomes(passed=2)
    project.runpytest("--junitxml=report.xml").assert_outcomes(passed=2)
    root = ET.parse(project.path / "report.xml").getroot()
    properties = {
        case.get("name"): json.loads(prop.get("value", ""))
        for case in root.iter("testcase")
        for prop in case.iter("property")
        if prop.get("name") == "autotune"
    }
    assert sorted(properties) == ["test_a", "test_b"]
    assert properties["test_a"]["state"] == "passed"
    assert properties["test_a"]["config"] == {"A": 3, "B": 3}
    assert properties["test_a"]["baseline"]["median"] == pytest.approx(1e-4)


WITH_BENCHMARK = """
from pytest_autotune import Interval, tunable

@tunable(A=Interval(1, 5), strategy="exhaustive")
def test_both(autotune, benchmark):
    autotune.measure(lambda: None)
    benchmark(lambda: sum(range(autotune.config["A"])))
"""


def test_pytest_benchmark_cooperates_across_trials(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)  # pytest-benchmark switches off under xdist
    project.makepyfile(test_k=WITH_BENCHMARK)
    tuned = project.runpytest("--autotune", "--benchmark-json=bench.json", "--benchmark-max-time=0.01")
    tuned.assert_outcomes(passed=1)
    assert "FixtureAlreadyUsed" not in tuned.stdout.str()
    benchmarks = json.loads((project.path / "bench.json").read_text())["benchmarks"]
    assert len(benchmarks) == 1  # only the final call with the winner is benchmarked
    assert benchmarks[0]["extra_info"]["autotune_config"] == {"A": 3}
    checked = project.runpytest("--benchmark-json=bench.json", "--benchmark-max-time=0.01")
    checked.assert_outcomes(passed=1)
    assert json.loads((project.path / "bench.json").read_text())["benchmarks"][0]["extra_info"] == {
        "autotune_config": {"A": 3}
    }
