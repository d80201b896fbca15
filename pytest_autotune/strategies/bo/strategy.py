"""The ``bo`` strategy: BaCO-style Bayesian optimization with learnt hidden constraints.

Each suggestion:

1. while the initial design lasts, its next configuration: the transfer sources' best (if any),
   the declared default (option ``start_at_default``, when the test declares one), then a Latin
   hypercube;
2. otherwise fit the GP to the feasible trials (warm-started) and the
   feasibility forests to all trials, draw a minimum feasibility, and
   maximise ``log EI + log P(feasible)`` over a pool of uniform samples and
   the incumbents' region (neighbours, one-parameter sweeps, trust-region
   perturbations), refined by local search; every ``local_every``-th
   model-based suggestion (after as many global ones as the design had
   points) searches the incumbents' region only, which keeps
   improving the best configurations on rugged spaces where global EI keeps
   chasing uncertainty elsewhere; after ``escape_after`` trials without a
   real gain, each global suggestion is an escape step instead, the best
   configuration away from the incumbents (see the escape module);
3. never a configuration already told, nor one under way on another device: those pending
   configurations (:meth:`~pytest_autotune.strategies.base.Strategy.pending`) join the GP's
   posterior at its own mean there (the kriging believer, no refit), so the uncertainty there
   collapses and the acquisition spreads a batch over distinct promising regions; the feasibility
   model and the incumbents see only told trials.

torch, gpytorch and scikit-learn are imported when the strategy is created,
not when this module is imported, so the strategy registry stays light.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Hashable, Iterator, Sequence, Set
from typing import TYPE_CHECKING, Any, ClassVar, Final

import numpy as np
from numpy.typing import NDArray

from pytest_autotune.outcome import Label, Outcome
from pytest_autotune.space.base import Points, Space
from pytest_autotune.space.params.base import NO_DEFAULT
from pytest_autotune.strategies.base import SpaceExhausted, Strategy
from pytest_autotune.strategies.bo.design import default_design_size, latin_hypercube_design
from pytest_autotune.strategies.bo.escape import changed_parameters, trials_since_gain
from pytest_autotune.strategies.bo.model.encoding import Encoding
from pytest_autotune.strategies.bo.optimizer import AcquisitionOptimizer, ScoreFn
from pytest_autotune.strategies.bo.options import MODELLED_FAILURES, BOOptions
from pytest_autotune.strategies.sources import TransferSource, map_sources

if TYPE_CHECKING:
    from pytest_autotune.strategies.bo.model.feasibility import FeasibilityModel
    from pytest_autotune.strategies.bo.model.surrogate import GPSurrogate
    from pytest_autotune.strategies.bo.model.transfer import Predictor, TransferModel

__all__ = ["FAILURE_PENALTY", "BayesianOptimization"]

#: Scores a model-feature matrix (the acquisition before it is tied to configurations).
FeatureScore = Callable[[NDArray[np.float64]], NDArray[np.float64]]

#: Number of best measured configurations used as incumbents (pool and local-search starts).
INCUMBENTS = 3
#: Most incumbents when option ``plateau`` widens them to the configurations near the best.
PLATEAU_INCUMBENTS = 8
#: The value a failure joins the GP's data at under ``failures="penalty"``: Kernel Tuner's fixed
#: penalty (``sys.float_info.max``); its logarithm, about 710, is finite, so the log-transformed GP
#: takes it, and it dwarfs every measured time.
FAILURE_PENALTY: Final = sys.float_info.max


class BayesianOptimization(Strategy):
    """Bayesian optimization over a constrained space (the default strategy).

    Options (keyword-only, strings accepted): see :class:`BOOptions`. ``sources``: what tuning
    the same kernel elsewhere measured (see the transfer module); those that do not overlap the
    space are skipped with a warning naming them.
    """

    name: ClassVar[str] = "bo"

    def __init__(
        self,
        space: Space,
        *,
        rng: np.random.Generator,
        sources: Sequence[TransferSource] = (),
        **options: Any,
    ) -> None:
        super().__init__(space, rng=rng)
        self.options = BOOptions.parse(options)
        self.encoding = Encoding.of(
            space,
            self.options.permutation_distance,
            ordinal=self.options.ordinal,
            power_of_two=self.options.power_of_two,
            products=self.options.products,
        )
        # Heavy imports happen here, on first use of the strategy.
        from pytest_autotune.strategies.bo.model.feasibility import FeasibilityModel
        from pytest_autotune.strategies.bo.model.surrogate import GPSurrogate

        self.surrogate: GPSurrogate = GPSurrogate(
            self.encoding,
            priors=self.options.priors,
            log_transform=self.options.log_transform,
            rng=rng,
            fit_restarts=self.options.fit_restarts,
            lengthscale_floor=self.options.lengthscale_floor,
            additive_kernel=self.options.kernel == "matern+additive",
            additive_scale=self.options.additive_scale,
            interaction_scale=self.options.interaction_scale,
        )
        handling = self.options.failure_handling
        self.feasibility: FeasibilityModel | None = None
        if handling in MODELLED_FAILURES:
            self.feasibility = FeasibilityModel(
                rng=rng, min_per_label=self.options.label_examples if handling == "model" else None
            )
        self.optimizer = AcquisitionOptimizer(
            space,
            rng,
            candidates=self.options.candidates,
            local_starts=self.options.local_starts,
            local_pool=self.options.local_pool,
            recombine=self.options.recombine,
        )
        design_size = self.options.initial
        self.design_size = (
            default_design_size(self.encoding.parameter_count) if design_size is None else design_size
        )
        self.transfer: TransferModel | None = None
        mapped = map_sources(sources, space)
        if mapped:
            from pytest_autotune.strategies.bo.model.transfer import TransferModel

            self.transfer = TransferModel(mapped, self.encoding, self.options, rng)
        self._model_suggestions = 0
        self._design: Points | None = None
        self._design_next = 0
        # Trials told so far, in order.
        self._index: dict[Hashable, int] = {}
        self._points: list[Points] = []
        self._features: list[NDArray[np.float64]] = []
        self._labels: list[Label] = []
        self._values: list[float | None] = []
        self._pending: list[Points] = []
        self._tabu: list[Hashable] = []  # centres of the latest tabu moves, newest last
        self.converge = self.options.converge

    # -- bookkeeping ---------------------------------------------------------------------
    @property
    def evaluated(self) -> int:
        """Number of distinct configurations told."""
        return len(self._points)

    def tell(self, point: Points, outcome: Outcome) -> None:
        """Record a trial (a repeated configuration replaces its earlier outcome)."""
        if len(point) != 1:
            raise ValueError(f"BayesianOptimization.tell expects one configuration, got {len(point)}")
        key = point.keys()[0]
        row = self._index.get(key)
        if row is None:
            self._index[key] = len(self._points)
            self._points.append(point)
            self._features.append(self.encoding.features(point)[0])
            self._labels.append(outcome.label)
            self._values.append(outcome.value)
        else:
            self._labels[row] = outcome.label
            self._values[row] = outcome.value

    def pending(self, points: Sequence[Points]) -> None:
        """Remember the configurations under way (left out of proposals, believed by the GP)."""
        super().pending(points)
        self._pending = [point for point in points if point.keys()[0] not in self._index]

    def _taken(self) -> Set[Hashable]:
        """Keys never to propose: the told configurations and those under way."""
        return self._index.keys() | self.under_way if self.under_way else self._index.keys()

    # -- suggestion ----------------------------------------------------------------------
    def ask(self) -> Points:
        """Next configuration to evaluate (never one already told)."""
        with _torch_threads(self.options.threads):
            point = self._next_design_point()
            if point is None and self._feasible_count() >= 2:
                point = self._model_based()
            if point is None:
                point = self._random_unevaluated()
        return point

    def _feasible_count(self) -> int:
        return sum(label == "ok" for label in self._labels)

    def _next_design_point(self) -> Points | None:
        if self._design is None:
            picks = [*self._transfer_design(), *self._declared_default()]
            exclude = {*self._taken(), *(p.keys()[0] for p in picks)}
            active = self.encoding.active_columns()
            design = latin_hypercube_design(
                self.space,
                self.design_size,
                self.rng,
                exclude=exclude,
                tries=self.options.design_tries,
                features=lambda points: self.encoding.features(points)[:, active],
            )
            self._design = Points.concat([*picks, design])
        while self._design_next < len(self._design):
            candidate = self._design[self._design_next]
            self._design_next += 1
            if candidate.keys()[0] not in self._taken():
                return candidate
        return None

    def _declared_default(self) -> list[Points]:
        """The declared default configuration, when the space declares one and it is valid
        (option ``start_at_default``); none for a space without declared defaults."""
        if not self.options.start_at_default or self.space.is_continuous:
            return []
        if all(param.default is NO_DEFAULT for param in self.space.params.values()):
            return []
        try:
            default = self.space.to_points([self.space.default_config()])
        except ValueError:  # SpaceError: the declared defaults are not jointly valid
            return []
        return [default] if len(default) == 1 else []

    def _transfer_design(self) -> list[Points]:
        """The sources' best configurations that open the design (none without sources)."""
        if self.transfer is None:
            return []
        count = self.options.transfer_design * len(self.transfer.models)
        return self.transfer.design(count, self._taken())

    def _random_unevaluated(self) -> Points:
        taken = self._taken()
        for size in (64, 1024, 16384):
            pool = self.space.sample(size, self.rng)
            for i, key in enumerate(pool.keys()):
                if key not in taken:
                    return pool[i]
        if not self.space.is_continuous and len(taken) >= self.space.size:
            raise SpaceExhausted(f"all {self.space.size} configurations were evaluated or are under way")
        # Nearly exhausted space: walk the index order for the remaining configurations.
        for index in range(self.space.size):
            candidate = self.space.at_index([index])
            if candidate.keys()[0] not in taken:
                return candidate
        raise SpaceExhausted(f"all {self.space.size} configurations were evaluated")

    def _training_data(self) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Features and values the GP sees: feasible trials, or all with failures at the worst value
        seen or at :data:`FAILURE_PENALTY`."""
        features = np.asarray(self._features)
        feasible = np.array([label == "ok" for label in self._labels])
        values = np.array([v if v is not None else np.nan for v in self._values], dtype=np.float64)
        if self.options.failure_handling == "worst":
            worst = float(np.max(values[feasible]))
            return features, np.where(feasible, values, worst)
        if self.options.failure_handling == "penalty":
            return features, np.where(feasible, values, FAILURE_PENALTY)
        return features[feasible], values[feasible]

    def _incumbents(self) -> Points:
        values = np.array([np.inf if v is None else v for v in self._values], dtype=np.float64)
        order = np.argsort(values, kind="stable")
        count = INCUMBENTS
        if self.options.plateau > 0 and np.isfinite(values[order[0]]):
            near = values <= values[order[0]] + self.options.plateau * abs(values[order[0]])
            count = min(PLATEAU_INCUMBENTS, max(INCUMBENTS, int(near.sum())))
        if self.options.incumbent_radius > 0:
            return self._distinct_incumbents([int(i) for i in order if np.isfinite(values[int(i)])], count)
        rows = [int(i) for i in order[:count] if np.isfinite(values[int(i)])]
        return Points.concat([self._points[i] for i in rows])

    def _distinct_incumbents(self, ranked: list[int], count: int) -> Points:
        """Up to ``count`` of the ``ranked`` trials (best first), each differing from those chosen
        before it in at least ``incumbent_radius`` parameters (compared on the model features)."""
        features = np.asarray(self._features)[ranked]
        chosen = [0]
        for row in range(1, len(ranked)):
            if len(chosen) == count:
                break
            changed = changed_parameters(self.space.feature_blocks, features[row : row + 1], features[chosen])
            if int(changed.min()) >= self.options.incumbent_radius:
                chosen.append(row)
        return Points.concat([self._points[ranked[i]] for i in chosen])

    def _stalled(self) -> bool:
        """Whether the last ``escape_after`` trials brought no gain of ``escape_gain`` (escape steps on)."""
        after = self.options.escape_after
        return after > 0 and trials_since_gain(self._values, self.options.escape_gain) >= after

    def _away_from(self, incumbents: Points, score: FeatureScore) -> ScoreFn:
        """``score`` where a configuration is ``escape_radius`` parameters or more from every incumbent.

        Parameters are compared on the model features the score needs anyway: the space's
        blocks lead them, with ordinal positions that are equal exactly when the values are.
        """
        radius = self.options.escape_radius
        blocks = self.space.feature_blocks
        references = self.encoding.features(incumbents)

        def away(points: Points) -> NDArray[np.float64]:
            feats = self.encoding.features(points)
            near = (changed_parameters(blocks, feats, references) < radius).any(axis=1)
            return np.where(near, -np.inf, score(feats))

        return away

    def _model_based(self) -> Points | None:
        from pytest_autotune.strategies.bo.acquisition import draw_feasibility_threshold, feasible_acquisition

        self.expected_gain = None
        features, values = self._training_data()
        self.surrogate.fit(features, values)
        ensemble = (
            None if self.transfer is None else self.transfer.predictor(self.surrogate, features, values)
        )
        model: Predictor = self.surrogate if ensemble is None else ensemble
        if self._pending:  # after the ensemble's weights, which read the real trials only
            self.surrogate.believe(self.encoding.features(Points.concat(self._pending)))
        feasibility = self.feasibility
        active = self.encoding.active_columns()
        if feasibility is not None:
            own = np.asarray(self._features)[:, active]
            rows = None if self.transfer is None else self.transfer.feasibility_rows(own, self._labels)
            if rows is None:
                feasibility.fit(own, self._labels)
            else:
                feasibility.fit(*rows)
        threshold = draw_feasibility_threshold(self.rng, maximum=self.options.feasibility_threshold)
        best = self.surrogate.best_target - self.options.xi

        def score_features(feats: NDArray[np.float64]) -> NDArray[np.float64]:
            mean, std = model.predict(feats)
            p_feasible = None
            if feasibility is not None and feasibility.active:
                p_feasible = feasibility.probability(feats[:, active])
            return feasible_acquisition(mean, std, best, p_feasible, threshold)

        def score(points: Points) -> NDArray[np.float64]:
            return score_features(self.encoding.features(points))

        # Trust-region steps start once as many global suggestions as design points were made.
        every = self.options.local_every
        local = (
            every > 0
            and self._model_suggestions >= self.design_size
            and self._model_suggestions % every == every - 1
        )
        tabu = (
            self.options.tabu_every > 0
            and self._model_suggestions >= self.design_size
            and self._model_suggestions % self.options.tabu_every == self.options.tabu_every - 1
        )
        self._model_suggestions += 1
        if tabu:
            moved = self._tabu_move(score)
            if moved is not None:
                return moved
            local = False
        incumbents = self._incumbents()
        escape = not local and self._stalled()
        acquisition = self._away_from(incumbents, score_features) if escape else score
        extra = None if self.transfer is None else self.transfer.candidates(self._index.keys())
        evaluated = self._taken()
        proposal = self.optimizer.maximise(acquisition, incumbents, evaluated, local=local, extra=extra)
        if (proposal is None or not np.isfinite(proposal.score)) and (local or escape):
            # the incumbents' region is exhausted, or nothing far from it was found: search everywhere
            proposal = self.optimizer.maximise(score, incumbents, evaluated, extra=extra)
        if proposal is None or not np.isfinite(proposal.score):
            return None
        if not (local or escape):
            self.expected_gain = self._gain(model, proposal.point)
        return proposal.point

    def _gain(self, model: Predictor, point: Points) -> float | None:
        """The model's expected improvement at ``point`` over the best value, relative to it.

        The GP models the logarithm of the values (standardised), so an improvement in its units
        times the transform's scale is a relative one; an unwarped target is divided by the best.
        """
        from pytest_autotune.strategies.bo.acquisition import expected_improvement

        transform = self.surrogate.transform
        if transform is None:
            return None
        mean, std = model.predict(self.encoding.features(point))
        gain = float(expected_improvement(mean, std, self.surrogate.best_target)[0]) * transform.std
        if transform.sign != 0:
            return gain
        incumbent = min((v for v in self._values if v is not None), default=0.0)
        return gain / abs(incumbent) if incumbent else None

    def _tabu_move(self, score: ScoreFn) -> Points | None:
        """Best-scoring unevaluated one-parameter move of the best configuration that is not tabu
        (a centre of the last ``tabu_tenure`` moves); None when no centre has a finite-scoring move."""
        values = np.array([np.inf if v is None else v for v in self._values], dtype=np.float64)
        taken = self._taken()
        for row in np.argsort(values, kind="stable")[:PLATEAU_INCUMBENTS]:
            if not np.isfinite(values[int(row)]):
                break
            centre = self._points[int(row)]
            key = centre.keys()[0]
            if key in self._tabu[len(self._tabu) - self.options.tabu_tenure :]:
                continue
            moves = self.optimizer.one_parameter_moves(centre, taken)
            if len(moves) == 0:
                continue
            scores = score(moves)
            best = int(np.argmax(scores))
            if not np.isfinite(scores[best]):
                continue
            self._tabu.append(key)
            del self._tabu[: -max(1, self.options.tabu_tenure)]
            return moves[best]
        return None


@contextlib.contextmanager
def _torch_threads(threads: int) -> Iterator[None]:
    """Run with ``threads`` torch threads (0: unchanged), restoring the previous count."""
    if threads <= 0:
        yield
        return
    import torch

    previous = torch.get_num_threads()
    if previous != threads:
        torch.set_num_threads(threads)
    try:
        yield
    finally:
        if previous != threads:
            torch.set_num_threads(previous)
