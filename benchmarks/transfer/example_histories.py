"""Write the example kernels' histories measured on the PoCL machines: what warm-starts the main job.

    python -m benchmarks example-histories            # writes example_kernels/autotune.json
    python -m benchmarks example-histories --machines pocl-zen3,pocl-zen4 --out /tmp/h.json

For each example kernel and each machine with recorded measurements
(``benchmarks/data/<machine>/kernels_<name>.json``), one seeded ``bo`` run of 100 evaluations
replays the recorded landscape, as ``pytest --autotune`` would have tuned it on that machine, and
its history is kept the way the store keeps it (:mod:`pytest_autotune.store.history_record`: the
best 64 trials relative to the best, the failures, the default's time relative to the chosen
configuration). The entry's configuration is the run's best, its baseline that configuration's
recorded time (the median over its trials of each trial's fastest run, as
``benchmarks/kernels/bench.py`` replays it) and its tuning record the run's counts and its
simulated wall time (the trials' recorded build and run times plus the strategy's own time).

The file is a store (``autotune.json`` format) read only as a warm-start source: the repository's
``pyproject.toml`` names it in ``autotune_transfer_from``. Its device keys are the machine's folder
name and then the device's own key (``"pocl-zen4: Portable Computing Language / pthread-AMD
EPYC"``): two machines of one CPU family report the same OpenCL key, and a key of this form never
equals a real device's, so the file could not be mistaken for a machine's own entries even if it
were used as the store. ``pocl-xeon`` is left out by default: its first pass ran beside another busy
process (``benchmarks/data/README.md``).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from benchmarks.kernels.bench import CaseData, load_case
from benchmarks.kernels.cases import CASES, ROOT
from pytest_autotune.entry import Baseline, StoreEntry, TuningRecord
from pytest_autotune.store.changes import apply_changes
from pytest_autotune.store.history_record import SIGNIFICANT, bounded, tuning_history
from pytest_autotune.timing.measure import round_significant
from pytest_autotune.tuning.tuner import Tuner

DEFAULT_MACHINES = ("pocl-zen3", "pocl-zen4", "pocl-zen5")
BUDGET = 100
SEED = 1


def device_key(machine: str, data: CaseData) -> str:
    """The file's key of ``machine``: its folder name, then the device's own key."""
    return f"{machine}: {data.device}"


def nodeid(name: str) -> str:
    """The example test's node id, relative to the repository root (the rootdir)."""
    return f"example_kernels/test_{name}.py::test_{name}"


def history_entry(data: CaseData, seed: int, budget: int) -> StoreEntry:
    """The store entry one seeded ``bo`` run on ``data``'s recorded landscape would have written."""
    space = data.replay.space
    result = Tuner(space, "bo", abort=budget, seed=seed).run(data.replay.objective)
    assert result.best_config is not None, data.case.name
    assert result.best_value is not None, data.case.name
    history = tuning_history(result, space.names, None, None)
    assert history is not None
    best_s = round_significant(result.best_value / 1e3, 6)
    ratio = round_significant(data.default_ms / result.best_value, SIGNIFICANT) if data.default_ms else None
    wall = sum(data.trial_seconds(r.config) + r.suggest_seconds for r in result.history)
    tuning = TuningRecord(
        trials=result.evaluations,
        counts=dict(result.counts),
        strategy=result.strategy,
        seed=result.seed,
        duration=round_significant(wall, 3),
    )
    return bounded(
        StoreEntry(
            config=dict(result.best_config),
            space_hash=data.case.full_space().space_hash,
            baseline=Baseline(median=best_s, unit="s"),
            tuning=tuning,
            history=replace(history, best=best_s, default=ratio),
        )
    )


def device_info(machine: str, data: CaseData) -> dict[str, Any]:
    """The ``info`` block: the recorded device description and where the entries came from."""
    info = json.loads(data.case.cache_path(machine).read_text()).get("device_info", {})
    return {
        **info,
        "recorded": f"replayed from benchmarks/data/{machine}/ by python -m benchmarks example-histories",
    }


NAME = "example-histories"  # python -m benchmarks example-histories
QUESTION = "Write the example kernels' histories on the PoCL machines (the warm-start sources)."


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks example-histories", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--machines", default=",".join(DEFAULT_MACHINES), help="comma-separated folders")
    parser.add_argument("--kernels", default=",".join(c.name for c in CASES), help="comma-separated names")
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--budget", type=int, default=BUDGET)
    parser.add_argument("--out", type=Path, default=ROOT / "example_kernels" / "autotune.json")
    args = parser.parse_args(argv)
    updates: dict[tuple[str, str], StoreEntry] = {}
    infos: dict[str, dict[str, Any]] = {}
    rows = []
    for case in CASES:
        if case.name not in args.kernels.split(","):
            continue
        for machine in args.machines.split(","):
            data = load_case(case, machine, "trials")
            if isinstance(data, str):
                rows.append(f"{case.name:10} {machine:10} skipped: {data}")
                continue
            entry = history_entry(data, args.seed, args.budget)
            key = device_key(machine, data)
            updates[key, nodeid(case.name)] = entry
            infos[key] = device_info(machine, data)
            assert entry.baseline is not None
            fraction = data.replay.optimum / (entry.baseline.median * 1e3)
            rows.append(
                f"{case.name:10} {machine:10} best {entry.baseline.median * 1e3:8.4g} ms  "
                f"fraction of the recorded optimum {fraction:.3f}  {entry.config}"
            )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    apply_changes(args.out, updates=updates, device_info=infos)
    print("\n".join(rows))
    print(f"{args.out}: {len(updates)} entries")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
