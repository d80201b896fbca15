"""``scripts/gpu-check`` without a GPU: the table from made-up results, the time guards of the
sections, the helpers of the sections, and a dry run of the CUDA section (NVRTC builds only)."""

from __future__ import annotations

import math
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchmarks.gpu.check import run_sections
from benchmarks.gpu.gate import _more_work
from benchmarks.gpu.sections import ROOT, _running_best_within
from benchmarks.gpu.table import CudaRow, DeviceTestsRow, GateRow, Report, TritonRow, format_report


def test_the_table_shows_every_section_and_row() -> None:
    report = Report(device="NVIDIA H100 80GB HBM3 (sm_90, 132 SMs)", notes=["torch 2.11"])
    report.section("triton").status = "done"
    gate = report.section("gate")
    gate.status, gate.reason = "partial", "time guard: stopped after 31 compares"
    report.device_tests.append(DeviceTestsRow("tests marked gpu", 7, 0, 0, 12.0))
    report.triton.append(
        TritonRow("triton.autotune over the tutorial's list", 1.234, 8, None, 40.0, "M128 N256")
    )
    report.triton.append(TritonRow("pytest-autotune bo over the larger space", 1.1, 24, 3, 80.0, "M128 N128"))
    report.cuda.append(CudaRow("gemm", 4.0, 2.0, 40, 192, 3, 0, 0, 60.0))
    report.gate.append(GateRow("cuda reduction", 1.5, (0, 20), (9, 10), (10, 10), 6.2))
    text = format_report(report)
    assert text.startswith("# scripts/gpu-check on NVIDIA H100 80GB HBM3 (sm_90, 132 SMs)")
    assert "| gate | partial | 0 | time guard: stopped after 31 compares |" in text
    assert "| triton.autotune over the tutorial's list | 1.234 | 8 | - | 40 | M128 N256 |" in text
    assert "| pytest-autotune bo over the larger space | 1.100 | 24 | 3 | 80 | M128 N128 |" in text
    assert "| gemm | 4.000 | 2.000 | 2.00x | 40 | 192 | 3 | 0 | 0 | 60 |" in text
    assert "| cuda reduction | 5 | 1.500 | 0/20 | 9/10 | 10/10 | 6.200 |" in text
    assert "| tests marked gpu | 7 | 0 | 0 | 12 |" in text


def test_an_empty_or_unmeasured_report_still_formats() -> None:
    report = Report()
    report.cuda.append(CudaRow("reduction", math.nan, math.nan, 0, 0, 0, 0, 0, 0.0))
    report.gate.append(GateRow("cuda reduction", math.nan, (0, 0), (0, 0), (0, 0), math.nan))
    text = format_report(report)
    assert "| reduction | - | - | nanx | 0 |" in text
    assert "| cuda reduction | 5 | - | - | - | - | - |" in text


def test_each_section_keeps_its_time_guard_and_a_failure_stops_only_itself() -> None:
    ran: list[str] = []
    writes: list[list[str]] = []

    def quick(report: Report, seconds: float) -> None:
        ran.append("quick")

    def overrun(report: Report, seconds: float) -> None:
        ran.append("overrun")
        time.sleep(30)  # the alarm ends it after its share plus the grace

    def out_of_time(report: Report, seconds: float) -> None:
        raise TimeoutError("no time left for reduction")

    def broken(report: Report, seconds: float) -> None:
        raise ValueError("no GPU")

    report = run_sections(
        Report(),
        {"device tests": quick, "triton": overrun, "cuda": out_of_time, "gate": broken},
        budget=1.0,
        write=lambda r: writes.append([s.status for s in r.sections]),
        grace=0.3,
    )
    statuses = {s.name: (s.status, s.reason) for s in report.sections}
    assert statuses["device tests"] == ("done", "")
    assert statuses["triton"][0] == "partial"
    assert statuses["triton"][1].startswith("time guard after")
    assert statuses["cuda"] == ("partial", "no time left for reduction")
    assert statuses["gate"] == ("failed", "ValueError: no GPU")
    assert ran == ["quick", "overrun"]
    assert next(s for s in report.sections if s.name == "triton").seconds < 5
    assert len(writes) == 4  # the table is rewritten after every section
    assert writes[0] == ["done"]


def test_the_helpers_of_the_sections() -> None:
    assert _running_best_within([3.0, None, 1.03, 1.01], 1.0) == 4
    assert _running_best_within([3.0, 1.02, 5.0], 1.0) == 2
    assert _running_best_within([3.0, None], 1.0) is None
    source = (ROOT / "example_kernels" / "cuda" / "test_reduction.py").read_text()
    changed = _more_work(source, 1.05)
    assert changed != source
    namespace: dict[str, object] = {"os": __import__("os"), "str": str, "int": int}
    line = next(line for line in changed.splitlines() if line.startswith("SIZE = "))
    exec(line, namespace)
    assert namespace["SIZE"] == int((1 << 26) * 1.05)
    with pytest.raises(RuntimeError, match=r"no 'SIZE = \.\.\.' line"):
        _more_work("x = 1\n", 1.1)


def test_a_dry_run_of_the_cuda_section_builds_and_tunes_without_a_gpu(tmp_path: Path) -> None:
    pytest.importorskip("cuda.bindings.nvrtc", reason="needs cuda-python (pip install '.[cuda]')")
    out = tmp_path / "table.md"
    done = subprocess.run(
        [
            str(ROOT / "scripts" / "gpu-check"),
            "--dry-run",
            "--only",
            "cuda",
            "--out",
            str(out),
            "--budget",
            "300",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        env={**__import__("os").environ, "PYTHON": sys.executable},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    text = out.read_text()
    assert "| cuda | done |" in text, text
    assert "DRY RUN" in text
    gemm = next(line for line in text.splitlines() if line.startswith("| gemm |"))
    cells = [cell.strip() for cell in gemm.strip("|").split("|")]
    assert 0 < int(cells[4]) <= 6  # evaluations: the budget, or fewer once bo converged (issue 47)
    assert int(cells[5]) > 0  # blocks beyond 1024 threads pruned by the H100's limits


def test_time_a_section_leaves_goes_to_the_next_and_a_skip_is_a_failure() -> None:
    given: dict[str, float] = {}

    def quick(report: Report, seconds: float) -> None:
        given["device tests"] = seconds

    def skipped(report: Report, seconds: float) -> None:
        given["triton"] = seconds
        pytest.importorskip("no_such_module_anywhere")

    report = run_sections(
        Report(), {"device tests": quick, "triton": skipped}, budget=100.0, write=lambda r: None
    )
    # shares 0.19 and 0.32: the first gets 19% of the budget, the second all that is left of it
    assert given["device tests"] == pytest.approx(100 * 0.19 / 0.51, abs=0.5)
    assert given["triton"] == pytest.approx(100.0, abs=0.5)
    triton = next(s for s in report.sections if s.name == "triton")
    assert triton.status == "failed"
    assert triton.reason.startswith("Skipped: could not import")
