"""Maximise an acquisition over a discrete constrained space, never enumerating it.

1. A candidate pool: uniform samples from the space, the valid neighbours
   of the incumbents (the best configurations measured so far), and a local
   pool around the incumbents built in the space's unit coordinates
   (:meth:`Space.to_unit` / :meth:`Space.from_unit`):

   * one-parameter moves over *all* valid values: the incumbent's
     coordinate of one parameter swept over a grid of ``sweep`` cells, so a
     parameter of many values can jump straight to a distant value (the
     nearest-neighbour moves of :meth:`Space.neighbours` only step by one);
   * trust-region perturbations: a few coordinates of the incumbent moved
     by a Gaussian step (TuRBO-style: each coordinate is perturbed with
     probability about ``3 / n_dims``), so combinations of two or three
     changed parameters near a good configuration are scored too.

   Uniform samples alone almost never land near the incumbents of spaces
   with many parameters, while improvements late in a run are usually there.
2. Every candidate is scored in one batch; the best few, together with the
   incumbents, start a local search.
3. Local search: from each start, move to the best-scoring valid neighbour
   (one parameter changed, :meth:`Space.neighbours`) while it improves;
   all walkers advance together so each step is one batched scoring call.
   The walk stops after ``max_expansions`` neighbourhoods not already in the
   cache were computed, which bounds the suggestion time on spaces of many
   parameters (where a configuration has a hundred neighbours).

Configurations already evaluated are never returned; incumbents serve only
as starting points. Scores are cached by configuration key, so nothing is
scored twice within a suggestion; neighbourhoods (fixed for a given space)
are cached across suggestions, since the walkers and incumbents keep
returning to the same regions and :meth:`Space.neighbours` handles one
configuration per call.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable, Set
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from pytest_autotune.space.base import Points, Space

__all__ = ["AcquisitionOptimizer", "Proposal", "ScoreFn"]

#: Scores a feature matrix; higher is better, ``-inf`` means "do not propose".
ScoreFn = Callable[[Points], NDArray[np.float64]]


@dataclass(frozen=True)
class Proposal:
    """The chosen configuration and its score (``-inf`` when nothing scored finite)."""

    point: Points
    score: float


class AcquisitionOptimizer:
    """Pool sampling plus multistart best-improvement local search."""

    def __init__(
        self,
        space: Space,
        rng: np.random.Generator,
        *,
        candidates: int = 2048,
        local_starts: int = 8,
        max_steps: int = 30,
        max_expansions: int = 64,
        cache_size: int = 20_000,
        local_pool: bool = True,
        sweep: int = 32,
        perturbations: int = 128,
        step: float = 0.15,
        recombine: int = 0,
    ) -> None:
        self.space = space
        self.rng = rng
        self.candidates = candidates
        self.local_starts = local_starts
        self.max_steps = max_steps
        self.max_expansions = max_expansions
        self.cache_size = cache_size
        self.local_pool = local_pool
        self.sweep = sweep
        self.perturbations = perturbations
        self.step = step
        self.recombine = recombine
        self.expansions = 0  # neighbourhoods computed by the space (not served from the cache)
        self._neighbours: OrderedDict[Hashable, Points] = OrderedDict()

    def neighbours(self, point: Points) -> Points:
        """:meth:`Space.neighbours` of one configuration, memoised (least recently used evicted)."""
        key = point.keys()[0]
        found = self._neighbours.get(key)
        if found is not None:
            self._neighbours.move_to_end(key)
            return found
        found = self.space.neighbours(point)
        self.expansions += 1
        self._neighbours[key] = found
        if len(self._neighbours) > self.cache_size:
            self._neighbours.popitem(last=False)
        return found

    def pool(
        self,
        incumbents: Points,
        evaluated: Set[Hashable],
        *,
        local: bool = False,
        extra: Points | None = None,
    ) -> Points:
        """Unevaluated distinct candidates: uniform samples (unless ``local``), the incumbents'
        region and ``extra`` configurations (a transfer source's best ones)."""
        parts = [] if local and len(incumbents) > 0 else [self.space.sample(self.candidates, self.rng)]
        parts.extend(self.neighbours(incumbents[i]) for i in range(len(incumbents)))
        if (self.local_pool or local) and len(incumbents) > 0:
            parts.append(self.space.from_unit(self.local_coordinates(self.space.to_unit(incumbents))))
        if self.recombine > 0 and len(incumbents) > 1:
            parts.append(self.space.from_unit(self.recombinations(self.space.to_unit(incumbents))))
        if extra is not None and len(extra) > 0:
            parts.append(extra)
        merged = Points.concat(parts)
        keys = merged.keys()
        keep: list[int] = []
        seen: set[Hashable] = set()
        for i, key in enumerate(keys):
            if key not in evaluated and key not in seen:
                seen.add(key)
                keep.append(i)
        return merged[np.asarray(keep, dtype=np.int64)]

    def sweeps(self, centres: NDArray[np.float64]) -> NDArray[np.float64]:
        """One-parameter sweeps of ``centres`` (unit coordinates): (centre, parameter, grid cell) -> row."""
        n, dims = centres.shape
        grid = (np.arange(self.sweep, dtype=np.float64) + 0.5) / self.sweep
        sweeps = np.repeat(centres, dims * self.sweep, axis=0).reshape(n, dims, self.sweep, dims)
        for d in range(dims):
            sweeps[:, d, :, d] = grid
        return sweeps.reshape(-1, dims)

    def one_parameter_moves(self, point: Points, evaluated: Set[Hashable]) -> Points:
        """Unevaluated distinct configurations one parameter away from ``point`` (one row):
        its neighbours and its one-parameter sweeps over all values."""
        swept = self.space.from_unit(np.clip(self.sweeps(self.space.to_unit(point)), 1e-9, 1.0))
        merged = Points.concat([self.neighbours(point), swept])
        keep: list[int] = []
        seen: set[Hashable] = set()
        for i, key in enumerate(merged.keys()):
            if key not in evaluated and key not in seen:
                seen.add(key)
                keep.append(i)
        return merged[np.asarray(keep, dtype=np.int64)]

    def recombinations(self, centres: NDArray[np.float64]) -> NDArray[np.float64]:
        """``recombine`` unit coordinates mixing the ``centres`` (grey-wolf-like): each coordinate
        copied from a randomly chosen centre, then, in half of the rows, one coordinate redrawn
        uniformly."""
        n, dims = centres.shape
        rows = self.recombine
        pick = self.rng.integers(0, n, size=(rows, dims))
        coords = centres[pick, np.arange(dims)[None, :]]
        mutate = np.flatnonzero(self.rng.random(rows) < 0.5)
        coords[mutate, self.rng.integers(0, dims, size=len(mutate))] = self.rng.random(len(mutate))
        return np.asarray(np.clip(coords, 1e-9, 1.0), dtype=np.float64)

    def local_coordinates(self, centres: NDArray[np.float64]) -> NDArray[np.float64]:
        """Unit coordinates near ``centres`` (one row per incumbent): sweeps and perturbations."""
        dims = centres.shape[1]
        sweeps = self.sweeps(centres)
        # Trust-region perturbations of a few coordinates at a time.
        base = np.repeat(centres, self.perturbations, axis=0)
        moved = self.rng.random(base.shape) < min(1.0, 3.0 / dims)
        lone = ~moved.any(axis=1)
        moved[lone, self.rng.integers(0, dims, size=int(lone.sum()))] = True
        steps = self.rng.normal(0.0, self.step, size=base.shape)
        perturbed = np.where(moved, base + steps, base)
        coords = np.concatenate([sweeps, perturbed])
        return np.asarray(np.clip(coords, 1e-9, 1.0), dtype=np.float64)

    def maximise(
        self,
        score: ScoreFn,
        incumbents: Points,
        evaluated: Set[Hashable],
        *,
        local: bool = False,
        extra: Points | None = None,
    ) -> Proposal | None:
        """Best unevaluated configuration found, or None when the pool is empty.

        ``local``: search only the incumbents' region (trust-region step); ``extra``: more
        candidates to score.
        """
        pool = self.pool(incumbents, evaluated, local=local, extra=extra)
        if len(pool) == 0:
            return None
        values = score(pool)
        order = np.argsort(-values, kind="stable")
        best_row = int(order[0])
        best = Proposal(pool[best_row], float(values[best_row]))
        if self.local_starts == 0 or not np.isfinite(best.score):
            return best
        cache: dict[Hashable, float] = dict(zip(pool.keys(), values.tolist(), strict=True))
        starts = [pool[int(i)] for i in order[: self.local_starts] if np.isfinite(values[int(i)])]
        start_scores = [float(values[int(i)]) for i in order[: len(starts)]]
        for i in range(len(incumbents)):
            starts.append(incumbents[i])
            start_scores.append(-np.inf)  # evaluated: any finite neighbour is an improvement
        return self._local_search(score, starts, start_scores, evaluated, cache, best)

    def _local_search(
        self,
        score: ScoreFn,
        walkers: list[Points],
        walker_scores: list[float],
        evaluated: Set[Hashable],
        cache: dict[Hashable, float],
        best: Proposal,
    ) -> Proposal:
        budget_end = self.expansions + self.max_expansions
        for _ in range(self.max_steps):
            if not walkers or self.expansions >= budget_end:
                break
            neighbourhoods = [self.neighbours(w) for w in walkers]
            fresh_parts: list[Points] = []
            fresh_keys: set[Hashable] = set()
            for hood in neighbourhoods:
                rows: list[int] = []
                for i, key in enumerate(hood.keys()):
                    if key not in evaluated and key not in cache and key not in fresh_keys:
                        fresh_keys.add(key)
                        rows.append(i)
                if rows:
                    fresh_parts.append(hood[np.asarray(rows, dtype=np.int64)])
            if fresh_parts:
                fresh = Points.concat(fresh_parts)
                cache.update(zip(fresh.keys(), score(fresh).tolist(), strict=True))
            next_walkers: list[Points] = []
            next_scores: list[float] = []
            for hood, current in zip(neighbourhoods, walker_scores, strict=True):
                keys = hood.keys()
                candidates = [(cache[k], i) for i, k in enumerate(keys) if k not in evaluated]
                if not candidates:
                    continue
                top_score, top_row = max(candidates)
                if top_score > current and np.isfinite(top_score):
                    next_walkers.append(hood[top_row])
                    next_scores.append(top_score)
                    if top_score > best.score:
                        best = Proposal(hood[top_row], top_score)
            walkers, walker_scores = _deduplicate(next_walkers, next_scores)
        return best


def _deduplicate(walkers: list[Points], scores: list[float]) -> tuple[list[Points], list[float]]:
    """Walkers that reached the same configuration continue as one."""
    seen: set[Hashable] = set()
    kept: list[Points] = []
    kept_scores: list[float] = []
    for walker, value in zip(walkers, scores, strict=True):
        key = walker.keys()[0]
        if key not in seen:
            seen.add(key)
            kept.append(walker)
            kept_scores.append(value)
    return kept, kept_scores
