"""``scripts/gpu-check``: on a machine with an NVIDIA GPU, run the device tests, tune the CUDA and
Triton examples, measure the regression gate, and write one Markdown table (issue 36).

    scripts/gpu-check                      # on a GPU: about 8 minutes, the table in gpu-check.md
    python -m benchmarks gpu-check         # the same
    scripts/gpu-check --dry-run            # anywhere: the same code on the CPU (numbers mean nothing)
    scripts/gpu-check --only triton cuda   # some sections

Every section has a time guard (its share of what is left of ``--budget``, 470 s by default, so a
section that finishes early leaves its time to the next; enforced by an alarm
as well as by the section's own abort conditions): a section that runs out keeps what it measured
and says so, and the table is rewritten after every section, so a cut-short run still leaves a
table. The work is sized for one H100: 24 ``bo`` evaluations of the 4096^3 fp16 matmul, 40 of
each CUDA example, up to 40 compares of the gate.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any, Final

from benchmarks.gpu.table import Report, format_report

__all__ = ["NAME", "QUESTION", "SHARES", "main", "run_sections"]

NAME = "gpu-check"
QUESTION = (
    "on an NVIDIA GPU: do the CUDA and Triton backends tune, and does the gate decide, within 8 minutes?"
)

#: Each section's share of the budget, in the order they run.
SHARES: Final = {"device tests": 0.19, "triton": 0.32, "cuda": 0.23, "gate": 0.26}


class _Alarm(Exception):
    """The section's hard time guard went off."""


def _on_alarm(signum: int, frame: FrameType | None) -> None:
    raise _Alarm


def run_sections(
    report: Report,
    sections: dict[str, Callable[[Report, float], None]],
    budget: float,
    write: Callable[[Report], None],
    *,
    grace: float = 20.0,
) -> Report:
    """Run each section within its share of what is left of ``budget`` (so time one section did
    not use goes to the next; hard limit: share + ``grace`` seconds), recording its status, and
    ``write`` the report after each one."""
    use_alarm = hasattr(signal, "setitimer")
    previous = signal.signal(signal.SIGALRM, _on_alarm) if use_alarm else None
    try:
        began = time.monotonic()
        shares = {name: SHARES.get(name, 1.0 / max(len(sections), 1)) for name in sections}
        left_shares = sum(shares.values())
        for name, run in sections.items():
            section = report.section(name)
            # this section's share of what is left: time a section did not use goes to the next ones
            seconds = max(budget - (time.monotonic() - began), 0.0) * shares[name] / left_shares
            left_shares -= shares[name]
            started = time.monotonic()
            if use_alarm:
                signal.setitimer(signal.ITIMER_REAL, seconds + grace)
            try:
                run(report, seconds)
                section.status = "partial" if section.reason else "done"
            except _Alarm:
                section.status = "partial"
                section.reason = section.reason or f"time guard after {time.monotonic() - started:.0f}s"
            except TimeoutError as exc:  # the section's own guard: it says what it could not do
                section.status = "partial"
                section.reason = section.reason or str(exc)
            except (KeyboardInterrupt, SystemExit):
                raise
            except BaseException as exc:  # pytest's Skipped (importorskip) is a BaseException
                section.status = "failed"
                section.reason = f"{type(exc).__name__}: {str(exc)[:300]}"
            finally:
                if use_alarm:
                    signal.setitimer(signal.ITIMER_REAL, 0)
            section.seconds = time.monotonic() - started
            write(report)
    finally:
        if use_alarm:
            signal.signal(signal.SIGALRM, previous)
    return report


def _describe_machine(report: Report, dry_run: bool) -> None:
    try:
        import torch

        if torch.cuda.is_available():
            props = torch.cuda.get_device_properties(0)
            report.device = f"{props.name} (sm_{props.major}{props.minor}, {props.multi_processor_count} SMs)"
            report.notes.append(f"torch {torch.__version__}, CUDA {torch.version.cuda}")
        else:
            report.device = "no GPU (dry run)" if dry_run else "no GPU"
    except ImportError:
        report.device = "no torch"
    try:
        import triton

        report.notes.append(f"triton {triton.__version__}")
    except ImportError:
        report.notes.append("triton not installed")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    report.notes.append(f"{platform.node()}, Python {platform.python_version()}, load average {load:.2f}")
    if dry_run:
        report.notes.append("DRY RUN: CPU only (Triton interpreter, NVRTC builds); the numbers mean nothing")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/gpu-check", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="gpu-check.md", help="where the table goes (gpu-check.md)")
    parser.add_argument("--budget", type=float, default=470.0, help="seconds for all sections (470)")
    parser.add_argument("--dry-run", action="store_true", help="run everything possible on the CPU")
    parser.add_argument("--only", nargs="+", choices=list(SHARES), help="run only these sections")
    args = parser.parse_args(argv)
    if args.dry_run:  # before any kernel module is imported
        os.environ["TRITON_INTERPRET"] = "1"
        os.environ.setdefault("AUTOTUNE_MATMUL_SIZE", "32")
    from benchmarks.gpu import gate
    from benchmarks.gpu import sections as parts

    dry = args.dry_run
    chosen: dict[str, Callable[[Report, float], None]] = {
        "device tests": lambda r, s: parts.device_tests_section(r, s, dry_run=dry),
        "triton": lambda r, s: parts.triton_section(r, s, dry_run=dry, evaluations=3 if dry else 24),
        "cuda": lambda r, s: parts.cuda_section(r, s, dry_run=dry, evaluations=6 if dry else 40),
        "gate": lambda r, s: gate.gate_section(r, s, dry_run=dry),
    }
    if args.only:
        chosen = {name: run for name, run in chosen.items() if name in args.only}
    report = Report()
    _describe_machine(report, dry)
    out = Path(args.out)

    def write(current: Report) -> None:
        out.write_text(format_report(current), encoding="utf-8")
        if current.details:  # every compare's verdict and interval, every trial: beside the table
            out.with_suffix(".json").write_text(json.dumps(current.details, indent=1), encoding="utf-8")

    started = time.monotonic()
    run_sections(report, chosen, args.budget, write)
    report.notes.append(f"total {time.monotonic() - started:.0f} s")
    write(report)
    sys.stdout.write(format_report(report))
    print(f"\nwritten to {out}", file=sys.stderr)
    return 0 if all(s.status in ("done", "partial") for s in report.sections) else 1


def _entry() -> Any:  # pragma: no cover - the script's entry point
    raise SystemExit(main())


if __name__ == "__main__":  # pragma: no cover
    _entry()
