"""Iterated local search over the Hamming neighbourhood (change any one parameter to any valid value).

The replayed GPU spaces have many local minima for the space's own
neighbour steps (nearest value up or down: 40-115 per space) but few for
the Hamming neighbourhood (3-50), whose basins are much larger; a descent
over it is the backbone of this strategy. It starts from the best of
``initial`` uniformly drawn configurations, then descends by first
improvement: the unseen Hamming neighbours of the current configuration are
proposed in random order and the first better one becomes current. When
every neighbour has been seen the current configuration is a local minimum;
the search then kicks the best configuration found with ``kick`` random
Hamming moves (or, with probability ``restart``, draws a fresh one) and
descends again; a kick is preferably a crossover of the best configuration
with another local minimum found (probability ``relink``, path relinking).
With ``repair`` (default) a one-parameter change that breaks a constraint
on its own is completed by changing one more parameter, so coupled
parameters (a tile size and its stride) can move together. ``patience``
> 0 declares a local minimum after that many non-improving neighbours in a
row instead of scanning them all. With ``order="model"`` the neighbours
are not tried in random order (the default) but best predicted first, by
the effects of parameter values fitted to every evaluation so far
(:mod:`.additive`, a ridge first-order model of log-fitness); with
probability ``explore`` a random one is tried instead, so a misleading model
cannot hide a move for ever, and the same model screens kicks and restarts
(``screen`` candidates are drawn, the one predicted best is evaluated). On
the replayed GPU spaces it lowers the share of failing evaluations but does
not raise the mean fraction of the optimum, so it is opt-in.
Neighbours whose outcome is already known
(told by the tuner, another strategy, or a resumed journal) are judged
without an evaluation. Parameters with more than ``max_values`` values are
sampled rather than listed in full.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Hashable
from typing import Any, ClassVar

import numpy as np

from pytest_autotune.outcome import Outcome
from pytest_autotune.space.base import Config, Points, Space
from pytest_autotune.space.params.base import to_python
from pytest_autotune.strategies.archive import ArchiveStrategy
from pytest_autotune.strategies.classic.additive import AdditiveModel
from pytest_autotune.strategies.classic.moves import mix, redraw_one
from pytest_autotune.strategies.options import check_int, check_real
from pytest_autotune.strategies.unseen import key_of

__all__ = ["LocalSearch", "hamming_neighbours"]


def _domain_sample(space: Space, name: str, rng: np.random.Generator, max_values: int) -> list[Any]:
    """The values of parameter ``name`` (a random sample of ``max_values`` for large or real domains)."""
    param = space.params[name]
    if param.is_continuous:
        return [float(v) for v in param.values_from_unit(rng.random(max_values))]
    if param.size <= max_values:
        return [to_python(v) for v in param.values()]
    picks = rng.choice(param.size, size=max_values, replace=False)
    return [to_python(param.values(int(i), int(i) + 1)[0]) for i in picks]


def hamming_neighbours(
    space: Space, point: Points, rng: np.random.Generator, max_values: int, *, repair: bool = False
) -> Points | None:
    """Every valid configuration that differs from ``point`` in exactly one parameter (shuffled).

    A parameter with more than ``max_values`` values contributes a random
    sample of ``max_values`` of them; a continuous one ``max_values`` draws.
    With ``repair``, a change that breaks a constraint on its own is
    completed by changing one more parameter (one valid completion drawn at
    random per change), so coupled parameters can move together. None when
    there is no neighbour.
    """
    config = space.configs(point)[0]
    domains = {name: _domain_sample(space, name, rng, max_values) for name in space.names}
    candidates = [
        {**config, name: v} for name, values in domains.items() for v in values if v != config[name]
    ]
    if not candidates:
        return None
    ok = space.contains(candidates)
    valid = [c for c, good in zip(candidates, ok, strict=True) if good]
    if repair:
        broken = [c for c, good in zip(candidates, ok, strict=True) if not good]
        valid.extend(_repairs(space, config, broken, domains, rng))
    if not valid:
        return None
    points = space.to_points(valid)
    return points[rng.permutation(len(points))]


def _repairs(
    space: Space,
    base: dict[str, Any],
    broken: list[dict[str, Any]],
    domains: dict[str, list[Any]],
    rng: np.random.Generator,
) -> list[dict[str, Any]]:
    """For each single change in ``broken``, one random valid completion changing one more parameter."""
    completions: list[dict[str, Any]] = []
    owners: list[int] = []
    for index, change in enumerate(broken):
        changed = next(n for n in change if change[n] != base[n])
        for name, values in domains.items():
            if name == changed:
                continue
            completions.extend({**change, name: v} for v in values if v != base[name])
            owners.extend([index] * sum(v != base[name] for v in values))
    if not completions:
        return []
    ok = space.contains(completions)
    by_change: dict[int, list[dict[str, Any]]] = {}
    for owner, completion, good in zip(owners, completions, ok, strict=True):
        if good:
            by_change.setdefault(owner, []).append(completion)
    return [found[int(rng.integers(len(found)))] for found in by_change.values()]


class LocalSearch(ArchiveStrategy):
    """Iterated first-improvement descent over Hamming neighbours (see the module docstring)."""

    name: ClassVar[str] = "local"

    def __init__(
        self,
        space: Space,
        *,
        rng: np.random.Generator,
        initial: int = 8,
        kick: int = 2,
        restart: float = 0.2,
        max_values: int = 64,
        relink: float = 1.0,
        patience: int = 0,
        repair: bool = True,
        order: str = "random",
        explore: float = 0.1,
        screen: int = 16,
    ) -> None:
        super().__init__(space, rng=rng)
        self.initial = check_int(self.name, "initial", initial, lo=1)
        self.kick = check_int(self.name, "kick", kick, lo=1)
        self.restart = check_real(self.name, "restart", restart, lo=0.0, hi=1.0)
        self.max_values = check_int(self.name, "max_values", max_values, lo=2)
        self.relink = check_real(self.name, "relink", relink, lo=0.0, hi=1.0)
        self._minima: dict[Hashable, Points] = {}
        self.patience = check_int(self.name, "patience", patience, lo=0)
        self._misses = 0
        self.repair = bool(repair)
        if order not in ("model", "random"):
            raise ValueError(f"strategy 'local': option order={order!r} must be 'model' or 'random'")
        self.order = order
        self.explore = check_real(self.name, "explore", explore, lo=0.0, hi=1.0)
        self.screen = check_int(self.name, "screen", screen, lo=1)
        self._model = AdditiveModel()
        self._current_config: Config = {}
        self._current: Points | None = None
        self._current_value = math.inf
        self._candidates: deque[tuple[Points, Config]] = deque()
        self._pending: set[Hashable] = set()
        self._restarting = False

    def _move_to(self, point: Points, value: float) -> None:
        self._current, self._current_value = point, value
        self._misses = 0
        found = hamming_neighbours(self.space, point, self.rng, self.max_values, repair=self.repair)
        if found is None:
            self._candidates = deque()
            return
        self._current_config = self.space.configs(point)[0]
        self._candidates = deque(zip(found, self.space.configs(found), strict=True))

    def _next_candidate(self) -> Points:
        """Pop the neighbour to try next: the best predicted one, or (``explore``) the next random one."""
        if self.order == "random" or len(self._model) == 0 or self.rng.random() < self.explore:
            return self._candidates.popleft()[0]
        base = self._current_config
        gains = [self._model.gain(base, config) for _, config in self._candidates]
        pick = min(range(len(gains)), key=gains.__getitem__)
        point = self._candidates[pick][0]
        del self._candidates[pick]
        return point

    def _kick(self) -> Points:
        best = self.archive.best_point
        if best is None:
            return self.unseen()
        width = self.screen if self.order == "model" else 1
        if self.rng.random() < self.restart:
            return self._screened(best, [self.unseen() for _ in range(width)])
        others = [p for key, p in self._minima.items() if key != key_of(best)]
        if others and self.rng.random() < self.relink:
            partner = others[int(self.rng.integers(len(others)))]
            child = mix(self.space, self.rng, [best, partner])
            if child is not None and not self.seen(child):
                return child
        kicks: list[Points] = []
        for _ in range(max(8, width)):
            point = best
            for _ in range(self.kick):
                moved = redraw_one(self.space, point, self.rng)
                point = moved if moved is not None else point
            if not self.seen(point):
                kicks.append(point)
                if len(kicks) >= width:
                    break
        return self._screened(best, kicks) if kicks else self.unseen()

    def _screened(self, best: Points, candidates: list[Points]) -> Points:
        """The candidate predicted best by the additive model (the first one without a model)."""
        if self.order == "random" or len(self._model) == 0 or self.rng.random() < self.explore:
            return candidates[0]
        base = self.space.configs(best)[0]
        configs = self.space.configs(Points.concat(candidates))
        gains = [self._model.gain(base, config) for config in configs]
        return candidates[min(range(len(gains)), key=gains.__getitem__)]

    def ask(self) -> Points:
        if len(self.archive) + len(self._pending) < self.initial:
            return self._propose(self.unseen())
        if self._current is None:
            best = self.archive.best_point
            if best is None:
                return self._propose(self.unseen())
            self._move_to(best, self.archive.best_value)
        while self._candidates and not (self.patience and self._misses >= self.patience):
            candidate = self._next_candidate()
            known = self.archive.values.get(key_of(candidate))
            if known is not None:
                if known < self._current_value:
                    self._move_to(candidate, known)
                continue
            if not self.seen(candidate):
                return self._propose(candidate)
        # A local minimum: every neighbour has been seen. Kick the best and descend from there.
        if self._current is not None and math.isfinite(self._current_value):
            self._minima[key_of(self._current)] = self._current
        self._restarting = True
        return self._propose(self._kick())

    def _propose(self, point: Points) -> Points:
        self._pending.add(key_of(point))
        return self.archive.propose(point)

    def tell(self, point: Points, outcome: Outcome) -> None:
        value = self.archive.record(point, outcome)
        if self.order == "model":
            self._model.add(self.space.configs(point)[0], value)
        self.learn(point, value)

    def learn(self, point: Points, value: float) -> None:
        key = key_of(point)
        if key not in self._pending:
            return
        self._pending.discard(key)
        if self._restarting:
            self._restarting = False
            self._move_to(point, value)
        elif self._current is not None and value < self._current_value:
            self._move_to(point, value)
        else:
            self._misses += 1
