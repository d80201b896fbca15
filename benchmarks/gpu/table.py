"""The results of ``scripts/gpu-check`` and the Markdown table they print as.

Each section of the check fills its own rows; a section that ran out of its time or failed keeps
what it measured and says why (:class:`Section`), so a partial table is still a table. Pure data
and formatting: tested with made-up results (``tests/test_gpu_check.py``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "CudaRow",
    "DeviceTestsRow",
    "GateRow",
    "Report",
    "Section",
    "TritonRow",
    "format_report",
]

Status = Literal["done", "partial", "failed", "skipped", "not run"]


@dataclass
class Section:
    """One part of the check: its status, why (for anything but ``done``) and its seconds."""

    name: str
    status: Status = "not run"
    reason: str = ""
    seconds: float = 0.0


@dataclass(frozen=True)
class DeviceTestsRow:
    """The device-marked tests and the examples in check mode: pytest's counts."""

    what: str
    passed: int
    failed: int
    skipped: int
    seconds: float


@dataclass(frozen=True)
class TritonRow:
    """One way of tuning the Triton matmul: best time, evaluations, wall time.

    ``to_list_best`` is the evaluations after which the best time was within 2% of the listed
    configs' best (None: never).
    """

    method: str
    best_ms: float
    evaluations: int
    to_list_best: int | None
    wall_s: float
    best_config: str = ""


@dataclass(frozen=True)
class CudaRow:
    """One CUDA example tuned: the default and the best time, evaluations, and the failures by
    where they were caught: pruned by the device limits before tuning, at build (ptxas resources,
    compile errors), refused by the launch checks before the driver, and failed in the driver."""

    kernel: str
    default_ms: float
    best_ms: float
    evaluations: int
    pruned: int
    at_build: int
    refused_before_launch: int
    at_launch: int
    wall_s: float

    @property
    def speedup(self) -> float:
        """The default's time over the best's."""
        return self.default_ms / self.best_ms if self.best_ms > 0 else math.nan


@dataclass(frozen=True)
class GateRow:
    """``--autotune-compare=HEAD`` on one GPU example: one block's spread (robust sigma of the
    blocks' log-ratios of unchanged code, in %), false reds of unchanged compares, +5% and +10%
    caught, and the median seconds of one check."""

    kernel: str
    spread_pct: float
    false_reds: tuple[int, int]
    caught_5: tuple[int, int]
    caught_10: tuple[int, int]
    median_check_s: float
    tolerance_pct: float = 5.0


@dataclass
class Report:
    """Everything the check printed: the machine, the sections and their rows."""

    device: str = "?"
    matmul_size: int = 4096
    notes: list[str] = field(default_factory=list)
    sections: list[Section] = field(default_factory=list)
    device_tests: list[DeviceTestsRow] = field(default_factory=list)
    triton: list[TritonRow] = field(default_factory=list)
    cuda: list[CudaRow] = field(default_factory=list)
    gate: list[GateRow] = field(default_factory=list)
    #: raw data written beside the table as JSON (each compare's verdict and interval, ...)
    details: dict[str, Any] = field(default_factory=dict)

    def section(self, name: str) -> Section:
        """The section called ``name`` (added, not run, when new)."""
        for section in self.sections:
            if section.name == name:
                return section
        section = Section(name)
        self.sections.append(section)
        return section


def _ms(value: float) -> str:
    return "-" if not math.isfinite(value) else f"{value:.3f}"


def _count(pair: tuple[int, int]) -> str:
    hits, runs = pair
    return f"{hits}/{runs}" if runs else "-"


def _table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines.extend("| " + " | ".join(str(cell) for cell in row) + " |" for row in rows)
    return lines


def format_report(report: Report) -> str:
    """The Markdown text of ``report``: the machine, each section's status, then the tables."""
    lines = [f"# scripts/gpu-check on {report.device}", ""]
    lines += [f"- {note}" for note in report.notes]
    lines += ["", "## Sections", ""]
    lines += _table(
        ["section", "status", "seconds", "why"],
        [[s.name, s.status, f"{s.seconds:.0f}", s.reason or ""] for s in report.sections],
    )
    lines += ["", "## Device tests and examples (check mode)", ""]
    lines += _table(
        ["what", "passed", "failed", "skipped", "seconds"],
        [[r.what, r.passed, r.failed, r.skipped, f"{r.seconds:.0f}"] for r in report.device_tests],
    )
    lines += ["", f"## Triton tutorial matmul, fp16, M=N=K={report.matmul_size}", ""]
    lines += _table(
        ["method", "best (ms)", "evaluations", "to within 2% of the list's best", "wall (s)", "best config"],
        [
            [
                r.method,
                _ms(r.best_ms),
                r.evaluations,
                "-" if r.to_list_best is None else r.to_list_best,
                f"{r.wall_s:.0f}",
                r.best_config,
            ]
            for r in report.triton
        ],
    )
    lines += ["", "## CUDA examples: tuned against the declared default", ""]
    lines += _table(
        [
            "kernel",
            "default (ms)",
            "best (ms)",
            "speedup",
            "evaluations",
            "pruned by limits",
            "failed at build",
            "refused before launch",
            "failed at launch",
            "wall (s)",
        ],
        [
            [
                r.kernel,
                _ms(r.default_ms),
                _ms(r.best_ms),
                f"{r.speedup:.2f}x",
                r.evaluations,
                r.pruned,
                r.at_build,
                r.refused_before_launch,
                r.at_launch,
                f"{r.wall_s:.0f}",
            ]
            for r in report.cuda
        ],
    )
    lines += ["", "## The regression gate on the GPU (--autotune-compare=HEAD)", ""]
    lines += _table(
        [
            "kernel",
            "tolerance (%)",
            "block spread (%)",
            "false reds",
            "+5% caught",
            "+10% caught",
            "median s per check",
        ],
        [
            [
                r.kernel,
                f"{r.tolerance_pct:g}",
                _ms(r.spread_pct),
                _count(r.false_reds),
                _count(r.caught_5),
                _count(r.caught_10),
                _ms(r.median_check_s),
            ]
            for r in report.gate
        ],
    )
    lines += [
        "",
        "Targets (issue 36): Triton: best within 2% of the list's in at most half its evaluations "
        "(ambitious: 5% faster); CUDA: nothing failed at launch beyond a known limit; gate: spread "
        "<= 3%, 0 false reds in 20, +5% caught in >= 8 of 10, median <= 20 s per check.",
        "",
    ]
    return "\n".join(lines)
