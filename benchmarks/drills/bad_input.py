"""Bad-input drills: one row per damaged file, hostile string, bad declaration, bad option, bad timer,
signal or concurrent run, with what was expected, what happened, and whether any data was lost.

Each drill runs in a fresh temporary directory, most of them as a real ``pytest`` process on a
generated project (see ``benchmarks/drills/faults_kit.py``), so what is checked is what a user would see. A
drill passes when the observed behaviour is the expected one (a clear error naming the file, entry,
parameter or option at fault, a refusal, or a normal run) and nothing the user had was lost. The
drills live in the ``drills_*`` modules beside this file, one per area; this command collects and
runs them and prints the table::

    python -m benchmarks bad-input-drills [--area store] [--jobs 2] [--json OUT]

It exits with status 1 when any drill fails or loses data.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import tempfile
import time
import traceback
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from benchmarks.drills.bad_input_kit import Drill, Observation

__all__ = ["AREAS", "collect", "main", "run_drill"]

#: The drill modules, one per area, each exporting ``DRILLS: list[Drill]``.
AREAS: dict[str, str] = {
    "restriction": "benchmarks.drills.restrictions",
    "declaration": "benchmarks.drills.declarations",
    "store": "benchmarks.drills.store",
    "run": "benchmarks.drills.runtime",
    "files": "benchmarks.drills.files",
    "compare": "benchmarks.drills.compare",
    "hostile": "benchmarks.drills.hostile",
}


def collect(areas: Sequence[str] | None = None) -> list[Drill]:
    """The drills of ``areas`` (all when None), in table order."""
    drills: list[Drill] = []
    for area in areas or AREAS:
        module = importlib.import_module(AREAS[area])
        drills.extend(module.DRILLS)
    return drills


def run_drill(drill: Drill, base: Path) -> tuple[Observation, float]:
    """Run one drill in its own directory under ``base``; an exception escaping it fails the row."""
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(dir=base) as directory:
        try:
            observation = drill.run(Path(directory))
        except Exception as exc:
            last = traceback.format_exception_only(exc)[-1].strip()
            observation = Observation(f"drill crashed: {last}", passed=False)
    return observation, time.perf_counter() - start


def _cell(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 3] + "..."


NAME = "bad-input-drills"  # python -m benchmarks bad-input-drills
QUESTION = "What does each bad input do: expected, observed, data lost?"


def main(argv: Sequence[str] | None = None) -> int:
    """Run the drills and print the table; returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--area", action="append", choices=sorted(AREAS), help="only these areas")
    parser.add_argument("-k", dest="keyword", help="only drills whose name contains this")
    parser.add_argument("--jobs", type=int, default=2, help="drills run at once (default 2)")
    parser.add_argument("--json", type=Path, help="also write the rows as JSON")
    parser.add_argument("--width", type=int, default=60, help="column width of the text cells")
    args = parser.parse_args(argv)

    drills = collect(args.area)
    if args.keyword:
        drills = [d for d in drills if args.keyword in d.name]
    with (
        tempfile.TemporaryDirectory(prefix="bad-input-drills-") as base,
        ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool,
    ):
        results = list(pool.map(lambda d: run_drill(d, Path(base)), drills))

    header = ["#", "area", "input", "expected", "observed", "data lost", "result", "s"]
    rows = [
        [
            str(i),
            d.area,
            _cell(d.name, args.width),
            _cell(d.expected, args.width),
            _cell(o.observed, args.width),
            "YES" if o.data_lost else "no",
            "pass" if o.passed and not o.data_lost else "FAIL",
            f"{seconds:.1f}",
        ]
        for i, (d, (o, seconds)) in enumerate(zip(drills, results, strict=True), 1)
    ]
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]
    line = "  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True))
    print(line)
    print("-" * len(line))
    for row in rows:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)))
    failed = sum(1 for _, (o, _) in zip(drills, results, strict=True) if not o.passed or o.data_lost)
    lost = sum(1 for _, (o, _) in zip(drills, results, strict=True) if o.data_lost)
    print(f"\n{len(drills)} drills: {len(drills) - failed} passed, {failed} failed, {lost} lost data")
    if args.json:
        args.json.write_text(
            json.dumps(
                [
                    {
                        "area": d.area,
                        "input": d.name,
                        "expected": d.expected,
                        "observed": o.observed,
                        "passed": o.passed,
                        "data_lost": o.data_lost,
                    }
                    for d, (o, _) in zip(drills, results, strict=True)
                ],
                indent=2,
            )
        )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
