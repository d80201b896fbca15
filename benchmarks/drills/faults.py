"""Fault drills: interrupt/kill-and-resume, damaged and read-only stores, concurrent writers.

Prints one table per drill (the drills are in ``benchmarks/drills/faults_kit.py``; ``tests/faults/`` runs a
few of them quickly). Every run is a real ``pytest`` process on a generated project with a fake
timer, so resumed results can be compared exactly with an uninterrupted reference. Run with
``nice`` and report the machine's load::

    nice -n 10 .venv/bin/python -m benchmarks fault-drills [--pauses 2] [--chaos 4] [--reps 3]
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import tempfile
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

from benchmarks.common import format_table
from benchmarks.drills import faults_kit as drills


def _table(title: str, header: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
    print()
    print(format_table(header, rows, title=title))


def _yes(flag: bool) -> str:
    return "yes" if flag else "NO"


def resume_drills(base: Path, strategies: Sequence[str], pauses: int, chaos: int, rng: random.Random) -> bool:
    rows = []
    ok = True
    for strategy in strategies:
        reference = drills.reference_run(base / f"{strategy}-reference", strategy)
        results = []
        for sig in (signal.SIGINT, signal.SIGKILL):
            for pause_at in drills.pause_points(strategy, pauses, rng):
                results.append(
                    drills.resume_drill(base / f"{strategy}-{sig.name}-{pause_at}", reference, sig, pause_at)
                )
        for index in range(chaos):
            after, fraction = rng.randint(2, len(reference.trials)), rng.random()
            results.append(drills.chaos_drill(base / f"{strategy}-chaos-{index}", reference, after, fraction))
        for r in results:
            drilled = "nothing to drill" not in r.moment
            ok &= r.passed
            rows.append(
                (
                    strategy,
                    r.signal,
                    r.moment,
                    r.exit_code,
                    r.journaled_before,
                    r.resumed_evaluated if drilled else "-",
                    r.repeated if drilled else "-",
                    _yes(r.same_trials) if drilled else "-",
                    _yes(r.same_winner) if drilled else "-",
                    _yes(r.store_valid_after_kill) if drilled else "-",
                    _yes(r.worker_gone) if drilled else "-",
                    f"{r.seconds:.0f}",
                    "ok" if r.passed else "FAILED: " + "; ".join(r.problems)[:200],
                )
            )
        print(
            f"reference {strategy}: {len(reference.trials)} trials in {reference.seconds:.1f} s", flush=True
        )
    _table(
        "Resume drills (interrupt pytest --autotune in test_second's tuning; resume with --autotune=missing)",
        (
            "strategy",
            "signal",
            "when",
            "exit",
            "journaled",
            "re-evaluated",
            "repeated",
            "same trials+order",
            "same winner",
            "store valid",
            "no worker left",
            "s",
            "result",
        ),
        rows,
    )
    return ok


def store_drills(base: Path, cuts: int, flips: int, reps: int, seed: int) -> bool:
    ok = True
    cases = drills.damaged_store_drill(base / "damaged", cuts=cuts, flips=flips, seed=seed)
    groups: dict[tuple[str, str], list[drills.StoreCase]] = defaultdict(list)
    for case in cases:
        groups[(case.kind, case.command)].append(case)
    rows = []
    for (kind, command), chosen in sorted(groups.items()):
        errors = [c for c in chosen if c.exit_code == 4]
        normal = [c for c in chosen if c.exit_code != 4]
        failed = [c for c in chosen if not c.passed]
        ok &= not failed
        rows.append(
            (
                kind,
                command,
                len(chosen),
                f"{sum(c.error_named_file and c.unchanged for c in errors)}/{len(errors)}",
                f"{sum(c.valid_after for c in normal)}/{len(normal)}",
                len(failed),
            )
        )
    _table(
        "Damaged autotune.json (random cuts and byte replacements of a valid file)",
        (
            "damage",
            "command",
            "runs",
            "usage error naming the file, file unchanged",
            "normal run, valid file",
            "failures",
        ),
        rows,
    )
    writes = drills.read_only_drill(base / "read-only")
    ok &= all(case.passed for case in writes)
    _table(
        "Unwritable autotune.json",
        ("case", "command", "exit", "expected", "message names the file", "file unchanged", "result"),
        [
            (
                c.name,
                c.command,
                c.exit_code,
                c.expected_exit,
                _yes(c.message_found),
                _yes(c.unchanged),
                "ok" if c.passed else "FAILED",
            )
            for c in writes
        ],
    )
    rows = []
    for rep in range(reps):
        for tests, sessions, workers in ((50, 1, 4), (48, 3, 2)):
            r = drills.concurrent_store_drill(
                base / f"concurrent-{rep}-{sessions}", tests=tests, sessions=sessions, workers=workers
            )
            ok &= r.passed
            rows.append(
                (
                    rep + 1,
                    f"{sessions} x pytest -n {workers}",
                    r.tests,
                    r.entries,
                    r.complete,
                    r.versions_seen,
                    r.torn_reads,
                    ",".join(map(str, r.exit_codes)),
                    f"{r.seconds:.0f}",
                    "ok" if r.passed else "FAILED",
                )
            )
    _table(
        "Concurrent writers (sessions at once on disjoint files of a project; a reader checks each version)",
        (
            "rep",
            "sessions",
            "tests",
            "entries",
            "complete",
            "versions read",
            "torn reads",
            "exit codes",
            "s",
            "result",
        ),
        rows,
    )
    return ok


NAME = "fault-drills"  # python -m benchmarks fault-drills
QUESTION = "Does tuning resume after SIGINT/SIGKILL, and survive damaged and concurrently written stores?"


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks fault-drills", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--strategies", default="random,bo", help="strategies of the drilled test")
    parser.add_argument("--pauses", type=int, default=2, help="pause points per strategy and signal")
    parser.add_argument("--chaos", type=int, default=4, help="SIGKILLs at random moments per strategy")
    parser.add_argument("--cuts", type=int, default=8, help="truncated copies of the store")
    parser.add_argument("--flips", type=int, default=8, help="copies with one byte replaced")
    parser.add_argument("--reps", type=int, default=3, help="repetitions of the concurrent-writer drills")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--skip-resume", action="store_true")
    parser.add_argument("--skip-store", action="store_true")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    started = time.perf_counter()
    load = os.getloadavg()
    print(
        f"pytest-autotune fault drills  (load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} "
        f"on {os.cpu_count()} CPUs)"
    )
    ok = True
    with tempfile.TemporaryDirectory(prefix="autotune-drills-") as tmp:
        if not args.skip_resume:
            ok &= resume_drills(
                Path(tmp) / "resume", args.strategies.split(","), args.pauses, args.chaos, rng
            )
        if not args.skip_store:
            ok &= store_drills(Path(tmp) / "store", args.cuts, args.flips, args.reps, args.seed)
    load = os.getloadavg()
    verdict = "ALL DRILLS PASSED" if ok else "SOME DRILLS FAILED"
    print(f"\n{verdict} in {time.perf_counter() - started:.0f} s (load average now {load[0]:.2f})")
    raise SystemExit(0 if ok else 1)


if __name__ == "__main__":
    main()
