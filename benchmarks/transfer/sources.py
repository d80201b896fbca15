"""The transfer benchmark's sources and problems: what the store would hold for each source device.

A source is the history that tuning on the source device would leave in ``autotune.json``: one
seeded ``bo`` run of ``evaluations`` trials, of which the best ``keep`` measured trials are kept
with their time relative to the run's best, plus every failing configuration with its label.
Runs are cached as JSON under ``benchmarks/out/transfer_bench/sources/`` (keyed by the problem,
seed, evaluations and ``keep``), so reruns of the benchmark cost nothing; ``--fresh-sources``
in the benchmark remakes them.

A problem is a replayed landscape: a file of the replay datasets (``spaces.json``'s ``kernel``
field groups the devices of one kernel) or an example kernel measured on one PoCL machine
(``benchmarks/data/pocl-*``, see ``benchmarks/data/README.md``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from benchmarks.common import OUT, replay
from pytest_autotune.replay import Replay
from pytest_autotune.strategies.sources import SourceTrial, TransferSource
from pytest_autotune.tuning.abort import Evaluations
from pytest_autotune.tuning.trials import TrialRecord
from pytest_autotune.tuning.tuner import Tuner

__all__ = ["CACHE", "Problem", "history_source", "load_problem", "source_for"]

#: Where the source runs are cached.
CACHE = OUT / "transfer_bench" / "sources"


@dataclass(frozen=True)
class Problem:
    """Where a landscape comes from: ``("replay", datasets, file)`` or ``("pocl", machine, kernel)``."""

    kind: str
    where: str
    name: str

    @property
    def label(self) -> str:
        """Short name for tables and cache files."""
        stem = self.name.split(".json")[0]
        return stem if self.kind == "replay" else f"{self.where}/{stem}"


@cache
def load_problem(problem: Problem) -> Replay:
    """The replayed landscape of ``problem`` (loaded once per process)."""
    if problem.kind == "replay":
        return replay(problem.where, problem.name)
    from benchmarks.kernels.bench import load_case
    from benchmarks.kernels.cases import case_by_name

    data = load_case(case_by_name(problem.name), problem.where, "trials")
    if isinstance(data, str):
        raise SystemExit(f"{problem.label}: {data}")
    return data.replay


def history_source(name: str, history: Sequence[TrialRecord], keep: int) -> TransferSource:
    """What the store keeps of a run: the ``keep`` best measured trials (time relative to the
    best) and every failing configuration with its label."""
    measured = sorted(
        (r for r in history if r.outcome.value is not None), key=lambda r: float(r.outcome.value or 0.0)
    )[:keep]
    best = float(measured[0].outcome.value or 1.0) if measured else 1.0
    trials = [SourceTrial(dict(r.config), "ok", float(r.outcome.value or 0.0) / best) for r in measured]
    trials += [SourceTrial(dict(r.config), r.outcome.label) for r in history if r.outcome.value is None]
    return TransferSource(name, trials, kind="device")


def _cache_path(problem: Problem, seed: int, evaluations: int, keep: int) -> Path:
    safe = problem.label.replace("/", "__")
    return CACHE / f"{safe}__seed{seed}__n{evaluations}__keep{keep}.json"


def source_for(
    problem: Problem, *, seed: int, evaluations: int, keep: int, fresh: bool = False
) -> TransferSource:
    """The history of one seeded ``bo`` run on ``problem`` (cached on disk)."""
    path = _cache_path(problem, seed, evaluations, keep)
    if path.exists() and not fresh:
        data = json.loads(path.read_text())
        trials = [SourceTrial(t["config"], t["label"], t["value"]) for t in data["trials"]]
        return TransferSource(data["name"], trials, kind="device")
    target = load_problem(problem)
    result = Tuner(target.space, "bo", abort=Evaluations(evaluations), seed=seed).run(target.objective)
    source = history_source(problem.label, result.history, keep)
    best = result.best_value if result.best_value is not None else math.inf
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {
        "name": source.name,
        "seed": seed,
        "evaluations": evaluations,
        "fraction_of_optimum": target.optimum / best if best > 0 else 0.0,
        "trials": [{"config": t.config, "label": t.label, "value": t.value} for t in source.trials],
    }
    path.write_text(json.dumps(record))
    return source
