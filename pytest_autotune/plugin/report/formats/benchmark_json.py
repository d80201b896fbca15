"""``--autotune-json=PATH``: this run's measurements in pytest-benchmark's JSON layout.

The file holds ``machine_info``, ``commit_info``, ``datetime``, ``version`` and one ``benchmarks``
entry per measured test, with pytest-benchmark's ``stats`` (so its tools and dashboards read it) and
autotune's own fields under ``extra_info``: the configuration, device, mode, state and unit, the
tuning summary and the times it reports, isolation and pruning, the user's metrics, the tolerance,
the clock that judged a check, and a comparison's verdict and detail. A write that fails (the folder
may have gone since start-up) fails the run.
"""

from __future__ import annotations

import datetime
import json
import platform
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pytest_autotune.input_file import open_output
from pytest_autotune.plugin.compare.report import json_detail, json_fields
from pytest_autotune.plugin.report.formats.reporter import ReportContext, Reporter, ReportOutcome
from pytest_autotune.plugin.report.results import AutotuneResult
from pytest_autotune.plugin.report.summary_table import judged_medians

__all__ = ["BenchmarkJson", "clock_fields", "export_json", "time_fields"]


class BenchmarkJson(Reporter):
    """The pytest-benchmark compatible JSON file of ``--autotune-json``."""

    name = "json"

    def enabled(self, context: ReportContext) -> bool:
        """Asked for by ``--autotune-json`` (or its ini key or environment variable)."""
        return context.settings.json_path is not None

    def write(self, results: Sequence[AutotuneResult], context: ReportContext) -> ReportOutcome:
        """Write the file; an ``OSError`` (checked at start-up, but the folder may have gone) is the error."""
        path = context.settings.json_path
        assert path is not None
        try:
            export_json(path, results, context.commit_info)
        except OSError as exc:
            return ReportOutcome(error=f"--autotune-json: cannot write {path} ({exc})")
        return ReportOutcome(written=path)


def clock_fields(result: AutotuneResult) -> dict[str, Any]:
    """``extra_info["autotune_clock"]`` of a check: the clock that judged, why, both clocks' medians
    and changes, and the parallelism guard's verdict."""
    fields: dict[str, Any] = {"judged_on": result.clock, "note": result.clock_note}
    for clock in ("wall", "cpu"):
        median, baseline = judged_medians(result, clock)
        change = median / baseline - 1 if median is not None and baseline else None
        fields[clock] = {"median": median, "baseline": baseline, "change": change}
    fields["parallelism"] = result.parallelism
    return fields


def time_fields(result: AutotuneResult) -> dict[str, Any]:
    """``extra_info["autotune_time"]`` of a tuned test: the one reported time (``stats``' median,
    the winner's new baseline) and the others, each named, so that no reader mistakes one for it."""
    search = result.search or {}
    rounds = {
        role: finalist.get("median")
        for finalist in search.get("finalists", ())
        for role in ("winner", "default")
        if role in finalist.get("roles", ())
    }
    return {
        "reported": (result.stats or {}).get("median"),
        "reported_as": "the winner's new baseline, measured after the choice (stats)",
        "best_trial": search.get("best_trial"),
        "finalist_rounds": rounds,
    }


def _benchmark(result: AutotuneResult) -> dict[str, Any]:
    stats = dict(result.stats or {})
    mean = stats.get("mean") or 0.0
    return {
        "group": result.device,
        "name": result.name,
        "fullname": result.nodeid,
        "params": result.params or None,
        "param": result.name.partition("[")[2].rstrip("]") or None,
        "extra_info": {
            "autotune_config": result.config,
            "device": result.device,
            "mode": result.mode,
            "state": result.state,
            "unit": result.unit,
            **({"autotune_tuning": result.tuning} if result.tuning else {}),
            **({"autotune_time": time_fields(result)} if result.state == "tuned" else {}),
            **({"autotune_isolation": result.isolation} if result.isolation else {}),
            **(result.metrics or {}),  # as pytest-benchmark users write benchmark.extra_info[name]
            **({"autotune_pruned": result.pruned} if result.pruned else {}),
            **({"autotune_tolerance": result.tolerance} if result.tolerance is not None else {}),
            **({"autotune_clock": clock_fields(result)} if result.clock and not result.compare else {}),
            **(
                {
                    "autotune_compare": json_fields(result.compare),
                    "autotune_compare_detail": json_detail(result.compare),
                }
                if result.compare
                else {}
            ),
        },
        "options": {"timer": "pytest-autotune", "disable_gc": False, "min_rounds": stats.get("rounds", 0)},
        "stats": {
            "min": stats.get("min"),
            "max": stats.get("max"),
            "mean": mean,
            "stddev": stats.get("stddev"),
            "rounds": stats.get("rounds"),
            "median": stats.get("median"),
            "iqr": stats.get("iqr"),
            "q1": stats.get("q1"),
            "q3": stats.get("q3"),
            "iqr_outliers": stats.get("iqr_outliers"),
            "stddev_outliers": stats.get("stddev_outliers"),
            "outliers": f"{stats.get('stddev_outliers')};{stats.get('iqr_outliers')}",
            "ld15iqr": stats.get("ld15iqr"),
            "hd15iqr": stats.get("hd15iqr"),
            "ops": 1.0 / mean if mean and result.unit == "s" else None,
            "total": stats.get("total"),
            "iterations": 1,
        },
    }


def export_json(path: Path, results: Sequence[AutotuneResult], commit: dict[str, Any]) -> None:
    """Write measured results in pytest-benchmark's JSON layout (``machine_info``, ``benchmarks``, ...)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        __version__ = version("pytest-autotune")
    except PackageNotFoundError:  # run from a source tree that was never installed
        __version__ = "unknown"

    document = {
        "machine_info": {
            "node": platform.node(),
            "processor": platform.processor(),
            "machine": platform.machine(),
            "python_implementation": platform.python_implementation(),
            "python_version": platform.python_version(),
            "release": platform.release(),
            "system": platform.system(),
        },
        "commit_info": commit,
        "benchmarks": [_benchmark(r) for r in results if r.stats],
        "datetime": datetime.datetime.now(datetime.UTC).isoformat(),
        "version": __version__,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    with open_output(path) as handle:
        handle.write(json.dumps(document, indent=2, sort_keys=True) + "\n")
