"""Regression gate benchmark (issue 25): false alarms and detection of the absolute and relative checks.

One run of the benchmark builds a temporary git project with the five example kernels (PoCL) and
a numpy host kernel (``benchmarks/gate/project.py``), tunes it with a small budget on the quiet
machine (``pytest --autotune``, which writes the baselines), commits ``autotune.json``, then runs
rounds of checks. A round runs every cell once, in shuffled order, so that drift of the machine
hits all cells alike: a cell is a mode and an injected slowdown (0, +5%, +10%, +20%, +50%, +100%: a
change of ``gate_slowdown.FRACTION`` in the working tree), and one fresh pytest process checks every
kernel:

* ``absolute``: plain ``pytest`` against the committed baselines, with the recorder plugin
  (``benchmarks/gate/project_files/gate_recorder.py``), so that today's rule and the probe-normalised variants
  are judged on the same runs (``benchmarks/gate/analysis.py``);
* ``relative``: ``pytest --autotune-compare=HEAD``; the verdict is read from the ``--autotune-json``
  export (``extra_info["autotune_compare"]["verdict"]``), else from the junit pass/fail.

``--load N`` spins N processes on the CPUs during the checks (not during tuning: the absolute
mode's baselines come from a quiet machine). The tables print per kernel and mode the share of
unchanged checks that failed (relative mode: judged pass, inconclusive or failed), of slowed ones
that were caught, the median time per check and whether the issue's targets are met; the slowdown
each level realised is in the title. Then the load average during the checks and the compare
gate's targets of issue 43 (:func:`~benchmarks.gate.analysis.targets_rows`). Raw records go to
``--out`` (JSON); ``--from-json`` prints the tables of such a file again, and ``--calibrate`` adds
the resampled choice of baseline processes and noise multiple.

``--clock auto|wall|cpu`` is passed to every run as ``--autotune-clock`` (environment
``PYTEST_AUTOTUNE_CLOCK``), so that one build measures the gate judging on wall time and on the
process's CPU time (``auto``, the default: CPU time, since every kernel of the project runs on a CPU
device, PoCL or the host). The recorder records, and the tables judge, the same clock; the
baselines and their tolerances are those of that clock (``baseline.cpu`` of the entries).

    python -m benchmarks gate --modes relative --kernels saxpy,gemm,conv2d,reduction,transpose \
        --load 2 --checks 10
    python -m benchmarks gate --modes absolute --checks 25
    python -m benchmarks gate --quick
    python -m benchmarks gate --quick --clock wall
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import defaultdict
from dataclasses import asdict
from pathlib import Path
from typing import Any

from benchmarks.common import OUT, format_table
from benchmarks.gate.analysis import (
    LEVELS,
    TARGETS,
    Check,
    KernelBaselines,
    Measurement,
    calibration_rows,
    kernel_table,
    recorder_rules,
    targets_rows,
)
from benchmarks.gate.project import KERNELS, BusyLoad, git, make_project, run_pytest, set_fraction
from pytest_autotune.entry import Baseline
from pytest_autotune.timing.measure import least_disturbed
from pytest_autotune.timing.regression import BASELINE_PROCESSES, NOISE_TOLERANCE_K, PROCESS_RUNS


def read_log(path: Path) -> list[dict[str, Any]]:
    """The recorder's events (none when the file is missing)."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _measurement(event: dict[str, Any]) -> Measurement:
    return Measurement(event["median"], event["q1"], event["q3"], event["t1"])


def baselines(project: Path, events: list[dict[str, Any]]) -> dict[str, KernelBaselines]:
    """Per node id: the committed baseline, today's (from the tuning process) and the workers'."""
    from pytest_autotune.store import Store

    store = Store.load(project / "autotune.json")
    entries = {nodeid: entry for device in store.devices() for nodeid, entry in store.entries(device).items()}
    entries = {nodeid: _on_judged_clock(entry) for nodeid, entry in entries.items()}
    today: dict[str, list[Measurement]] = defaultdict(list)
    workers: dict[tuple[str, int], list[Measurement]] = defaultdict(list)
    probes: dict[tuple[str, int], dict[str, float]] = {}
    policy: dict[str, tuple[float, bool]] = {}
    for event in events:
        nodeid, role = event["nodeid"], event["role"]
        if event["kind"] == "measure" and role == "tune" and event["phase"] == "today-baseline":
            today[nodeid].append(_measurement(event))
        elif event["kind"] == "measure" and role == "baseline":
            workers[(nodeid, event["pid"])].append(_measurement(event))
        elif event["kind"] == "probe" and role == "baseline":
            probes[(nodeid, event["pid"])] = {"mem": event["mem"], "compute": event["compute"]}
        elif event["kind"] == "judged" and role == "tune":
            policy[nodeid] = (event["tolerance"], event["explicit"])
    found = {}
    for nodeid, entry in entries.items():
        if entry.baseline is None or nodeid not in today or nodeid not in policy:
            continue
        measured = least_disturbed(today[nodeid])  # type: ignore[arg-type]
        processes = [
            (least_disturbed(values), probes.get(key))  # type: ignore[arg-type]
            for key, values in workers.items()
            if key[0] == nodeid
        ]
        found[nodeid] = KernelBaselines(
            entry.baseline,
            Baseline(measured.median, q1=measured.q1, q3=measured.q3),
            processes,  # type: ignore[arg-type]
            *policy[nodeid],
        )
    return found


def _on_judged_clock(entry: Any) -> Any:
    """``entry`` with the baseline of the clock its tuning run judged on (``baseline.clock``)."""
    from dataclasses import replace

    base = entry.baseline
    if base is not None and base.clock == "cpu" and base.cpu is not None:
        return replace(entry, baseline=base.cpu)
    return entry


def _junit(path: Path) -> dict[str, tuple[float, bool]]:
    """Per test function name: seconds and whether it failed (junit XML)."""
    if not path.exists():
        return {}
    tests = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        failed = case.find("failure") is not None or case.find("error") is not None
        tests[case.get("name", "")] = (float(case.get("time", "0")), failed)
    return tests


def _exported(path: Path) -> dict[str, dict[str, Any]]:
    if not path.exists():
        return {}
    return {b["fullname"]: b for b in json.loads(path.read_text(encoding="utf-8"))["benchmarks"]}


def check_run(
    project: Path, mode: str, level: float, round_: int, kernels: list[str], env: dict[str, str]
) -> tuple[list[Check], float, str]:
    """One check process of ``mode`` at slowdown ``level``: a :class:`Check` per kernel."""
    log, export, junit = project / "run.log", project / "out.json", project / "run.xml"
    for path in (log, export, junit):
        path.unlink(missing_ok=True)
    args = [f"--autotune-json={export}", f"--junitxml={junit}"]
    if mode == "absolute":
        run = run_pytest(project, {**env, "GATE_RECORD": str(log)}, "-p", "gate_recorder", *args)
    else:
        run = run_pytest(project, env, "--autotune-compare=HEAD", *args)
    events, exported, tests = read_log(log), _exported(export), _junit(junit)
    checks = []
    for name in kernels:
        nodeid = KERNELS[name].nodeid
        mine = [e for e in events if e["nodeid"] == nodeid and e["role"] == "check"]
        bench = exported.get(nodeid)
        seconds, failed = tests.get(nodeid.split("::")[-1], (None, None))
        compare = (bench or {}).get("extra_info", {}).get("autotune_compare")
        if mode == "relative":
            state = (
                compare["verdict"] if compare else {True: "regression", False: "passed"}.get(failed, "error")
            )
            alarm = None if failed is None else state == "regression"
        else:
            state = (bench or {}).get("extra_info", {}).get("state", "error")
            alarm = {"regression": True, "passed": False, "faster": False}.get(state)
        probe = next((e for e in mine if e["kind"] == "probe"), None)
        setup = next((e["t0"] for e in mine if e["kind"] == "setup"), None)
        checks.append(
            Check(
                mode,
                level,
                name,
                round_,
                alarm,
                state,
                seconds,
                [_measurement(e) for e in mine if e["kind"] == "measure"],
                {"mem": probe["mem"], "compute": probe["compute"]} if probe else None,
                probe["t1"] - probe["t0"] if probe else 0.0,
                setup,
                compare,
            )
        )
    problem = "" if run.returncode in (0, 1) else run.output
    return checks, run.seconds, problem


def environment(args: argparse.Namespace, today: Path) -> dict[str, str]:
    """The environment of every run: the recorder's inputs."""
    clock = {"auto": "cpu"}.get(args.clock, args.clock)  # the project's kernels run on CPU devices
    return {
        **os.environ,
        "GATE_TODAY": str(today),
        "GATE_RECORD_ALL": "1" if args.record_all else "0",
        "PYTEST_AUTOTUNE_CLOCK": args.clock,
        "GATE_CLOCK": clock,
    }


def print_header(args: argparse.Namespace, kernels: list[str]) -> None:
    """What runs, on what machine, judged how, aiming at what."""
    uptime = subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()
    print(f"gate_bench: {uptime} ({os.cpu_count()} CPUs)")
    print(
        f"modes {args.modes}, kernels {', '.join(kernels)}, {args.checks} checks per cell, "
        f"--load {args.load} during the checks, tuning budget {args.budget}, --autotune-clock={args.clock}"
    )
    print(
        f"absolute baseline: {BASELINE_PROCESSES} fresh processes x the least disturbed of {PROCESS_RUNS} "
        f"measurements; tolerance max(10%, {NOISE_TOLERANCE_K:g} x noise) unless the test sets one"
    )
    names = {"seconds": "median s/check", "pass": "unchanged judged pass", 0: "unchanged fails"}
    targets = "; ".join(
        f"{mode} {names.get(key) or f'+{key:.0%} caught'} {'>=' if at_least else '<='} {limit:g}"
        for (mode, key), (limit, at_least) in TARGETS.items()
    )
    print(f"targets per kernel (issue 43, 10 checks per cell at load >= 3): {targets}", flush=True)


def run_benchmark(args: argparse.Namespace, kernels: list[str], modes: list[str]) -> dict[str, Any]:
    """Tune, then the rounds of checks; the raw records."""
    rng = random.Random(args.seed)
    checks: list[Check] = []
    seconds: dict[str, list[float]] = defaultdict(list)
    with tempfile.TemporaryDirectory(prefix="autotune-gate-bench-") as tmp:
        project = Path(tmp)
        make_project(project, kernels)
        today = project / "today.json"
        env = environment(args, today)
        started = time.perf_counter()
        tuned = run_pytest(
            project,
            {**env, "GATE_RECORD": str(project / "tune.log")},
            "-p",
            "gate_recorder",
            "--autotune",
            f"--autotune-budget={args.budget}",
        )
        if tuned.returncode != 0:
            raise SystemExit(f"tuning failed:\n{tuned.output}")
        found = baselines(project, read_log(project / "tune.log"))
        today.write_text(json.dumps({nodeid: recorder_rules(base) for nodeid, base in found.items()}))
        git(project, "add", "autotune.json")
        git(project, "commit", "-q", "-m", "tuned")
        print(f"tuned in {time.perf_counter() - started:.0f} s", flush=True)
        cells = [(mode, level) for mode in modes for level in args.levels]
        deadline = time.perf_counter() + args.max_minutes * 60 if args.max_minutes else None
        loads: list[float] = []
        try:
            with BusyLoad(args.load):
                for round_ in range(args.checks):
                    if deadline is not None and time.perf_counter() > deadline:
                        print(f"--max-minutes spent: stopped after {round_} rounds", flush=True)
                        break
                    round_started = time.perf_counter()
                    rng.shuffle(cells)
                    for mode, level in cells:
                        set_fraction(project, level)
                        found_checks, wall, problem = check_run(project, mode, level, round_, kernels, env)
                        checks += found_checks
                        seconds[mode].append(wall)
                        if problem:
                            print(f"round {round_ + 1} {mode} +{level:.0%}: pytest failed to run:\n{problem}")
                    took = time.perf_counter() - round_started
                    loads.append(os.getloadavg()[0])
                    if round_ == 0:
                        print(
                            f"calibration: one round ({len(cells)} runs) took {took:.0f} s; estimated total "
                            f"{took * args.checks / 60:.1f} min",
                            flush=True,
                        )
        finally:
            set_fraction(project, 0.0)
    return {
        "kernels": kernels,
        "baselines": {KERNELS_BY_NODEID[n]: _baseline_json(b) for n, b in found.items()},
        "checks": [asdict(c) for c in checks],
        "process_seconds": seconds,
        "load_end": os.getloadavg(),
        "load_per_round": loads,
        "noise_k": NOISE_TOLERANCE_K,
        "baseline_processes": BASELINE_PROCESSES,
    }


KERNELS_BY_NODEID = {kernel.nodeid: name for name, kernel in KERNELS.items()}


def _baseline_json(base: KernelBaselines) -> dict[str, Any]:
    return {
        "new": base.new.to_json(),
        "today": base.today.to_json(),
        "workers": [(asdict(m), p) for m, p in base.workers],
        "tolerance": base.tolerance,
        "explicit": base.explicit,
    }


def _load_baseline(data: dict[str, Any]) -> KernelBaselines:
    new = Baseline.from_json(data["new"], where="gate_bench")
    today = Baseline.from_json(data["today"], where="gate_bench")
    workers = [(Measurement(**m), p) for m, p in data["workers"]]
    return KernelBaselines(new, today, workers, data["tolerance"], data["explicit"])


def report(records: dict[str, Any], calibrate: bool) -> None:
    """Print the tables of the raw records."""
    checks = [
        Check(**{**c, "measurements": [Measurement(**m) for m in c["measurements"]]})
        for c in records["checks"]
    ]
    bases = {name: _load_baseline(b) for name, b in records["baselines"].items()}
    for mode, walls in records["process_seconds"].items():
        if walls:
            print(f"{mode}: {len(walls)} pytest processes, median {statistics.median(walls):.1f} s each")
    print(
        "median s/check: absolute, from the test's setup to the end of the last measurement the rule needed "
        "(the probe excluded; the process's start is shared by all kernels); relative, the test's junit time"
    )
    for mode in sorted({c.mode for c in checks}):
        for kernel in records["kernels"]:
            mine = [c for c in checks if c.mode == mode and c.kernel == kernel]
            if not mine:
                continue
            title, header, rows, notes = kernel_table(
                mode, kernel, mine, bases.get(kernel), records.get("noise_k", NOISE_TOLERANCE_K)
            )
            count = min(sum(c.level == lv for c in mine) for lv in {c.level for c in mine})
            print()
            print(format_table(header, rows, title=f"{title} ({count} checks per cell)", align="l" + "r" * 6))
            for note in notes:
                print(f"  {note}")
    loads = records.get("load_per_round") or []
    during = (
        f"1-min load average after each round: median {statistics.median(loads):.2f} "
        f"(min {min(loads):.2f}, max {max(loads):.2f})"
        if loads
        else "load average not recorded"
    )
    if any(c.mode == "relative" for c in checks):
        print()
        print(
            format_table(
                ["target", "measured", "met"],
                targets_rows(checks),
                title=f"compare gate against the targets of issue 43 ({during})",
                align="lll",
            )
        )
    else:
        print(f"\n{during}")
    if calibrate:
        ks, processes = (1, 1.5, 2, 2.5, 3, 4), (3, 5, 7)
        header = [
            "k",
            *(f"P={p}: {'unchanged' if lv == 0 else f'+{lv:.0%}'}" for p in processes for lv in LEVELS),
        ]
        print()
        print(
            format_table(
                header,
                calibration_rows(checks, ks, processes),
                title="noise rule by k (tolerance max(10%, k x noise)) and P baseline processes, "
                "resampled from the unchanged checks: share failing",
                align="l" + "r" * (len(header) - 1),
            )
        )


NAME = "gate"  # python -m benchmarks gate
QUESTION = "Does the regression gate (absolute, relative) catch slowdowns without false alarms?"


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks gate", description=__doc__.splitlines()[0])
    parser.add_argument("--modes", default="absolute,relative", help="cells to run: absolute, relative")
    parser.add_argument("--kernels", default=",".join(KERNELS), help=f"of {', '.join(KERNELS)}")
    parser.add_argument("--checks", type=int, default=100, help="checks per cell (rounds)")
    parser.add_argument("--load", type=int, default=0, help="busy processes during the checks")
    parser.add_argument("--budget", default="10", help="--autotune-budget of the tuning run")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--clock",
        choices=("auto", "wall", "cpu"),
        default="auto",
        help="--autotune-clock of every run (default auto: CPU time on these CPU devices)",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="smoke run: 1 check per cell, numpy and conv2d, unchanged and +100%% (unless --levels)",
    )
    parser.add_argument("--record-all", action="store_true", help="take all six measurements in every check")
    parser.add_argument("--calibrate", action="store_true", help="also resample k and the baseline processes")
    parser.add_argument("--out", type=Path, default=OUT / "gate_bench.json", help="raw records (JSON)")
    parser.add_argument(
        "--levels",
        type=lambda text: tuple(float(v) for v in text.split(",")),
        default=None,
        help="injected slowdowns, comma-separated fractions (default 0,0.05,0.1,0.2,0.5,1)",
    )
    parser.add_argument(
        "--max-minutes", type=float, default=0, help="start no round after this many minutes of checks"
    )
    parser.add_argument("--from-json", type=Path, help="print the tables of an earlier run's --out file")
    args = parser.parse_args()
    if args.from_json:
        report(json.loads(args.from_json.read_text(encoding="utf-8")), args.calibrate)
        return
    if args.quick:
        args.checks, args.kernels = 1, "numpy,conv2d"
        args.levels = args.levels or (0.0, 1.0)
    args.levels = args.levels or LEVELS
    kernels = [k.strip() for k in args.kernels.split(",") if k.strip()]
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    unknown = sorted(set(kernels) - set(KERNELS)) + sorted(set(modes) - {"absolute", "relative"})
    if unknown:
        parser.error(f"unknown kernel or mode: {', '.join(unknown)}")
    print_header(args, kernels)
    started = time.perf_counter()
    records = run_benchmark(args, kernels, modes)
    records["minutes"] = (time.perf_counter() - started) / 60
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(records), encoding="utf-8")
    load = records["load_end"]
    rounds = records["load_per_round"]
    during = (
        f"1-min load average after each round: median {statistics.median(rounds):.2f}, " if rounds else ""
    )
    print(
        f"\n{records['minutes']:.1f} min; {during}load average at the end {load[0]:.2f} {load[1]:.2f} "
        f"{load[2]:.2f}; raw records: {args.out}"
    )
    report(records, args.calibrate)


if __name__ == "__main__":
    main()
