"""Issue 4's quality checks, read from the strategy benchmark's JSON.

    python -m benchmarks strategy --strategies random bo bo:feasibility=off ...
    python -m benchmarks bo-quality [benchmarks/out/strategy_bench.json] [--strategy bo]

``strategy_bench.py`` runs the strategies (ours and Kernel Tuner's) on the
replayed spaces and writes per space and strategy the mean fraction of the
optimum per budget, the failure share per budget and the mean convergence
curve. This command derives what issue 4 asks of the Bayesian engine:

* mean fraction of the optimum over spaces at each budget against the
  targets (0.85 / 0.95 / 0.985 at 20 / 50 / 100) and against every Kernel
  Tuner strategy in the same file;
* the number of evaluations the engine needs to reach, on average over
  seeds, the fraction Kernel Tuner's genetic algorithm reaches at the
  largest budget (per space, from the mean curves);
* on spaces with failures, the share of evaluations that failed against
  random search's (target: at most half);
* the other ``bo:...`` rows (ablations) next to it.

``--reference OTHER.json`` adds the rows of strategies missing from the
report (typically Kernel Tuner's, cached from a run with more seeds or a
larger budget) at the report's budgets, so a run of our strategies alone
can be compared without re-running Kernel Tuner. The seeds of the two files
are printed; rows from the reference are marked ``(ref)``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.common import OUT, format_table

TARGETS = {20: 0.85, 50: 0.95, 100: 0.985}


def _rows(report: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for key, value in report["results"].items():
        space, _, strategy = key.partition("|")
        rows[(space, strategy)] = value
    return rows


def _merge_reference(
    rows: dict[tuple[str, str], dict[str, Any]], budgets: list[int], reference: dict[str, Any]
) -> None:
    """Add the reference's rows for strategies ``rows`` lacks, cut to ``budgets`` (in place)."""
    ref_budgets: list[int] = reference["budgets"]
    missing = [b for b in budgets if b not in ref_budgets]
    if missing:
        raise SystemExit(f"reference lacks budgets {missing} (has {ref_budgets})")
    have = {strategy for _, strategy in rows}
    picks = [ref_budgets.index(b) for b in budgets]
    for (space, strategy), value in _rows(reference).items():
        if strategy in have:
            continue
        row = dict(value)
        for field in ("fraction_mean", "failures_mean"):
            row[field] = [value[field][i] for i in picks]
        row["reference_level"] = value["fraction_mean"][-1]
        rows[(space, strategy + " (ref)")] = row


def _mean_over_spaces(
    rows: dict[tuple[str, str], dict[str, Any]], spaces: list[str], strategy: str, field: str
) -> np.ndarray | None:
    values = [rows[(s, strategy)][field] for s in spaces if (s, strategy) in rows]
    if len(values) != len(spaces):
        return None
    return np.asarray(np.mean(np.asarray(values, dtype=np.float64), axis=0), dtype=np.float64)


def evaluations_to_reach(curve: list[float], level: float) -> int | None:
    """First evaluation count at which the mean curve reaches ``level`` (None: never within it)."""
    hits = np.flatnonzero(np.asarray(curve) >= level - 1e-12)
    return int(hits[0]) + 1 if hits.size else None


NAME = "bo-quality"  # python -m benchmarks bo-quality
QUESTION = "Does the Bayesian engine pass its quality checks (read from the strategy JSON)?"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks bo-quality",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("report", nargs="?", default=str(OUT / "strategy_bench.json"))
    parser.add_argument("--strategy", default="bo", help="the engine's row (default: bo)")
    parser.add_argument("--ga", default="kt:genetic_algorithm", help="reference for evaluations-to-reach")
    parser.add_argument("--reference", default=None, help="JSON with rows to add (e.g. Kernel Tuner's)")
    args = parser.parse_args(argv)
    report = json.loads(Path(args.report).read_text())
    rows = _rows(report)
    budgets: list[int] = report["budgets"]
    if args.reference:
        reference = json.loads(Path(args.reference).read_text())
        _merge_reference(rows, budgets, reference)
        print(f"rows marked (ref): {reference['seeds']} seeds from {args.reference}")
        if not any(s == args.ga for _, s in rows):
            args.ga += " (ref)"
    spaces = list(report["spaces"])
    strategies = sorted({strategy for _, strategy in rows})
    engine = args.strategy
    if not any(s == engine for _, s in rows):
        raise SystemExit(f"{args.report}: no rows for strategy {engine!r}; have {strategies}")
    print(f"{report['seeds']} seeds, budgets {budgets}, {len(spaces)} spaces ({args.report})")

    # -- fraction of optimum, averaged over spaces -------------------------------------
    means: dict[str, np.ndarray] = {}
    for strategy in strategies:
        mean = _mean_over_spaces(rows, spaces, strategy, "fraction_mean")
        if mean is not None:
            means[strategy] = mean
    table = [[strategy, *(f"{v:.4f}" for v in mean)] for strategy, mean in means.items()]
    table.append([f"target ({engine})", *(f"{TARGETS.get(b, float('nan')):.3f}" for b in budgets)])
    header = ["strategy", *(f"@{b}" for b in budgets)]
    title = "\nmean fraction of the optimum over spaces"
    print(format_table(header, table, align="l" + "r" * len(budgets), title=title))
    ours = means.get(engine)
    if ours is not None:
        for b, v in zip(budgets, ours, strict=True):
            if b in TARGETS:
                print(
                    f"  {engine} @{b}: {v:.4f} vs target {TARGETS[b]} -> "
                    f"{'ok' if v >= TARGETS[b] else 'MISS'}"
                )
        for strategy, mean in means.items():
            if strategy.startswith("kt:"):
                better = bool(np.all(ours > mean))
                print(f"  {engine} above {strategy} at every budget: {'yes' if better else 'NO'}")

    # -- evaluations to reach the GA's level at the largest budget -------------------------
    top = budgets[-1]
    ga_row = next((v for (_, s), v in rows.items() if s == args.ga), None)
    ga_top = ga_row.get("reference_level") if ga_row else None
    shown_top = "its largest budget (reference)" if ga_top is not None else f"{top} evaluations"
    print(f"\nevaluations for {engine} to reach {args.ga}'s mean fraction at {shown_top}")
    reached: list[int] = []
    for space in spaces:
        ga, bo = rows.get((space, args.ga)), rows.get((space, engine))
        if ga is None or bo is None:
            continue
        level = ga.get("reference_level", ga["fraction_mean"][-1])
        n = evaluations_to_reach(bo["curve"], level)
        if n is not None:
            reached.append(n)
        shown = str(n) if n is not None else f"> {len(bo['curve'])}"
        print(f"  {space:28s} level {level:.4f}: {shown}")
    if reached:
        print(
            f"  median {int(np.median(reached))}, max {max(reached)} evaluations "
            f"({len(reached)} of {len(spaces)} spaces reached)"
        )

    # -- failure share on spaces with failures ------------------------------------------
    failing = [s for s in spaces if report["spaces"][s].get("failed_share", 0) > 0]
    baseline = "random" if any(s == "random" for _, s in rows) else "kt:random_sample"
    print(f"\nshare of failed evaluations ({engine} vs {baseline}; target at most half)")
    for space in failing:
        bo, rnd = rows.get((space, engine)), rows.get((space, baseline))
        if bo is None or rnd is None:
            continue
        cells = " ".join(
            f"@{b}: {f:.3f}/{r:.3f}"
            for b, f, r in zip(budgets, bo["failures_mean"], rnd["failures_mean"], strict=True)
        )
        ratio = bo["failures_mean"][-1] / max(rnd["failures_mean"][-1], 1e-12)
        print(f"  {space:28s} {cells}  ratio@{top} {ratio:.2f} {'ok' if ratio <= 0.5 else 'MISS'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
