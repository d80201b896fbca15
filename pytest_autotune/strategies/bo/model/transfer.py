"""Transfer from other tuning tasks: what the sources measured, weighted by how well it ranks here.

The ``bo`` strategy uses its transfer sources (see :mod:`pytest_autotune.strategies.sources`)
in four places, each discounted by the target's own trials:

* **Design.** The run opens with each source's ``transfer_design`` best configurations (the
  sources' best first, then their second best), before the usual Latin hypercube. A good source
  puts the optimum's region on the table in the first evaluations; a misleading one costs those.
* **Model** (``transfer="rgpe"``, the default): a ranking-weighted ensemble of Gaussian
  processes (RGPE, Feurer, Letham, Hutter and Bakshy, "Practical transfer learning for Bayesian
  optimization", 2018). Each source gets a GP fitted once to its own trials; the target's GP is
  refitted every suggestion as without sources. A model's weight is the share of bootstrap
  resamples of the target's trials on which it misorders the fewest pairs of them (the target's
  GP judged by its leave-one-out predictions, so that it cannot win by memorising). Only pairs
  that involve one of the better half of the target's trials count: a source that merely tells
  good regions from bad ones, and misorders the good configurations, loses its weight sooner. A
  source whose median loss exceeds the 95th percentile of the target's is dropped (no weight
  dilution). Each source's predictions are mapped to the target's units by matching their mean
  and spread at the target's trials. The ensemble's mean is the weighted mean, its variance the
  weighted sum of variances with squared weights; expected improvement and the feasibility gate
  then work as without sources.
* **Candidates.** The best configurations of each source not yet measured join the acquisition
  optimiser's pool, :data:`SOURCE_CANDIDATES` times the source's current weight (none once it
  has lost its weight: they would only crowd the pool into its region).
* **Feasibility** (``transfer_feasibility``): the trials of a source that saw failures join the
  feasibility forests' training data at half weight, while a forest of that source alone
  predicts the target's trials at least as well as the target's majority label does. Failures
  such as resource limits are often shared across devices; where they are not, the target's own
  trials soon contradict the source and it is left out.

A source whose measured trials all lie within :data:`FLAT_SPREAD` (5 %) of its best (a flat
landscape: the dedispersion kernel on the A100 keeps 64 trials within 1.2 %) orders them by
measurement noise: it gets neither a GP nor design picks, only its failures count.

A source's history keeps only its best trials (what the store holds), so a GP fitted to them
would revert to the mean of good configurations away from them: an optimistic prior about
everything the source did not keep. Its GP is conditioned with the prior mean at the worst kept
value instead.

The other candidates (``transfer="prior"``: the sources' posterior means as the prior mean of
the target GP, with fitted non-negative weights; ``"icm"``: one multi-task GP,
:mod:`pytest_autotune.strategies.bo.model.transfer_icm`; ``"design"``: the design and feasibility only)
are kept for the benchmark (``benchmarks/transfer/bench.py``); ``docs/architecture.md`` records
what each measured.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence, Set
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Protocol

import numpy as np
import torch
from numpy.typing import NDArray

from pytest_autotune.outcome import Label
from pytest_autotune.space.base import Points
from pytest_autotune.strategies.bo.model.encoding import Encoding
from pytest_autotune.strategies.bo.model.feasibility import FeasibilityModel
from pytest_autotune.strategies.bo.model.surrogate import DTYPE, GPSurrogate
from pytest_autotune.strategies.bo.options import BOOptions
from pytest_autotune.strategies.sources import MappedSource

if TYPE_CHECKING:
    from pytest_autotune.strategies.bo.model.transfer_icm import MultiTaskGP

__all__ = ["Predictor", "SourceModel", "TransferModel", "build_surrogate", "ranking_weights"]

#: Most measured trials of one source that its GP is fitted to (the best ones).
SOURCE_TRIALS = 128
#: Bootstrap resamples of the target's trials for the ranking weights.
BOOTSTRAP = 256
#: Source configurations (best first, per source) offered to the acquisition optimiser each time.
SOURCE_CANDIDATES = 16
#: Weight of one source trial in the feasibility forests (a target trial weighs 1).
SOURCE_FEASIBILITY_WEIGHT = 0.5
#: Relative spread of a source's measured values below which it ranks nothing (see ``_orders``).
FLAT_SPREAD = 0.05
#: Count only the pairs that involve one of the better half of the target's trials.
TOP_PAIRS = True
#: Bounds of the scale that maps a source's standardised predictions to the target's.
MIN_SCALE, MAX_SCALE = 0.2, 5.0


class Predictor(Protocol):
    """What the acquisition needs of a model: mean and standard deviation at feature rows."""

    def predict(self, features: NDArray[np.float64]) -> tuple[torch.Tensor, torch.Tensor]:
        """Posterior mean and standard deviation (the target's standardised units)."""
        ...


def build_surrogate(encoding: Encoding, options: BOOptions, rng: np.random.Generator) -> GPSurrogate:
    """The objective GP that ``options`` describe, over ``encoding``'s blocks."""
    return GPSurrogate(
        encoding,
        priors=options.priors,
        log_transform=options.log_transform,
        rng=rng,
        fit_restarts=options.fit_restarts,
        lengthscale_floor=options.lengthscale_floor,
        additive_kernel=options.kernel == "matern+additive",
        additive_scale=options.additive_scale,
        interaction_scale=options.interaction_scale,
    )


def ranking_weights(
    predictions: NDArray[np.float64], observed: NDArray[np.float64], rng: np.random.Generator
) -> NDArray[np.float64]:
    """RGPE weights of models (rows of ``predictions`` at the target's trials; the last row is the
    target model's, leave-one-out) from bootstrap resamples of ``observed``.

    A model's loss on a resample is the number of ordered pairs of resampled trials whose order it
    gets wrong; its weight is the share of resamples on which its loss is the smallest (ties
    split at random). A source (any row but the last) whose median loss exceeds the 95th
    percentile of the target model's gets no weight.
    """
    models, n = predictions.shape
    wrong = (predictions[:, :, None] < predictions[:, None, :]) != (observed[:, None] < observed[None, :])
    if TOP_PAIRS:
        better = observed <= np.median(observed)
        wrong &= better[:, None] | better[None, :]
    counts = rng.multinomial(n, np.full(n, 1.0 / n), size=BOOTSTRAP).astype(np.float64)
    losses = np.einsum("sj,mjk,sk->sm", counts, wrong.astype(np.float64), counts)
    diluting = np.median(losses[:, :-1], axis=0) > np.percentile(losses[:, -1], 95)
    losses[:, :-1][:, diluting] = np.inf
    jittered = losses + rng.random(losses.shape) * 0.5  # losses are integers: break ties at random
    winners = np.argmin(jittered, axis=1)
    return np.bincount(winners, minlength=models).astype(np.float64) / BOOTSTRAP


@dataclass
class SourceModel:
    """One mapped source and the GP fitted to its measured trials (None: too few to fit)."""

    mapped: MappedSource
    features: NDArray[np.float64]
    surrogate: GPSurrogate | None
    feasibility: FeasibilityModel | None


class TransferModel:
    """The transfer sources of one ``bo`` run: design picks, the ensemble, feasibility rows."""

    def __init__(
        self,
        sources: Sequence[MappedSource],
        encoding: Encoding,
        options: BOOptions,
        rng: np.random.Generator,
    ) -> None:
        self.encoding = encoding
        self.options = options
        self.rng = rng
        self.models = [self._fit_source(mapped) for mapped in sources]
        # A source whose measured trials are all alike ranks nothing: no design picks from it.
        self._ranked = [
            m.mapped.best(len(m.mapped.labels) if _orders(m.mapped.values[m.mapped.ok]) else 0)
            for m in self.models
        ]
        self._icm: MultiTaskGP | None = None
        if options.transfer == "icm":
            from pytest_autotune.strategies.bo.model.transfer_icm import MultiTaskGP

            measured = [(m.features[m.mapped.ok], m.mapped.values[m.mapped.ok]) for m in self.models]
            self._icm = MultiTaskGP(encoding, measured, rng, options.lengthscale_floor)
        #: The last ensemble weights, per source then the target (for logs and tests).
        self.weights: NDArray[np.float64] = np.zeros(len(self.models) + 1)
        self._residual: GPSurrogate | None = None  # the residual GP of ``transfer="prior"``

    def _fit_source(self, mapped: MappedSource) -> SourceModel:
        features = self.encoding.features(mapped.points)
        ok = np.flatnonzero(mapped.ok)
        ok = ok[np.argsort(mapped.values[ok], kind="stable")][:SOURCE_TRIALS]
        surrogate = None
        if _orders(mapped.values[ok]) and self.options.transfer in ("rgpe", "prior"):
            surrogate = build_surrogate(self.encoding.restricted(mapped.shared), self.options, self.rng)
            surrogate.fit(features[ok], mapped.values[ok])
            surrogate.condition_with_mean(float(np.max(surrogate.targets())))
        feasibility = None
        if self.options.transfer_feasibility and not all(label == "ok" for label in mapped.labels):
            feasibility = FeasibilityModel(rng=self.rng)
            feasibility.fit(features[:, self.encoding.active_columns()], mapped.labels)
        return SourceModel(mapped, features, surrogate, feasibility)

    # -- design --------------------------------------------------------------------------
    def design(self, count: int, exclude: Set[Hashable]) -> list[Points]:
        """Up to ``count`` distinct configurations: each source's best in turn, then the next best."""
        chosen: list[Points] = []
        seen = set(exclude)
        for rank in range(max((len(r) for r in self._ranked), default=0)):
            for points in self._ranked:
                if len(chosen) >= count:
                    return chosen
                if rank < len(points) and (key := points.keys()[rank]) not in seen:
                    seen.add(key)
                    chosen.append(points[rank])
        return chosen

    def candidates(self, exclude: Set[Hashable]) -> Points | None:
        """The best configurations not yet evaluated of the sources that the model currently
        trusts, for the acquisition optimiser: up to :data:`SOURCE_CANDIDATES` times a source's
        weight (a source without weight offers none; it would only crowd the pool into its region)."""
        picks: list[Points] = []
        for points, weight in zip(self._ranked, self.weights[:-1], strict=True):
            wanted = int(np.ceil(SOURCE_CANDIDATES * min(1.0, float(weight))))
            rows = [i for i, key in enumerate(points.keys()) if key not in exclude][:wanted]
            if rows:
                picks.append(points[np.asarray(rows, dtype=np.int64)])
        return Points.concat(picks) if picks else None

    # -- model -----------------------------------------------------------------------------
    def predictor(
        self, target: GPSurrogate, features: NDArray[np.float64], values: NDArray[np.float64]
    ) -> Predictor | None:
        """The model the acquisition uses, given the target GP fitted to ``features`` and ``values``:
        the RGPE ensemble, the prior-mean model or the multi-task GP (None: the target GP)."""
        if self._icm is not None:
            self._icm.fit(features, values)
            self.weights = np.append(np.clip(self._icm.correlations(), 0.0, 1.0), 1.0)
            return self._icm
        fitted = [m for m in self.models if m.surrogate is not None]
        if not fitted:
            return None
        if self.options.transfer == "prior":
            return self._prior_mean(fitted, target, features)
        observed = target.targets()
        at_trials = [m.surrogate.predict(features)[0].numpy() for m in fitted if m.surrogate]
        predictions = np.stack([*at_trials, target.loo_mean()])
        weights = ranking_weights(predictions, observed, self.rng)
        self._record_weights(fitted, weights)
        members: list[tuple[float, GPSurrogate, float, float]] = []
        for model, mean, weight in zip(fitted, at_trials, weights[:-1], strict=True):
            if weight > 0 and model.surrogate is not None:
                scale, offset = _calibration(mean, observed)
                members.append((float(weight), model.surrogate, scale, offset))
        return _Ensemble(target, float(weights[-1]), members)

    def _prior_mean(
        self, fitted: list[SourceModel], target: GPSurrogate, features: NDArray[np.float64]
    ) -> _PriorMean:
        """Transfer through the prior mean: ``z(x) = c + sum_i b_i mu_i(x) + g(x)``.

        ``mu_i`` is source ``i``'s posterior mean; ``c`` and ``b_i >= 0`` are a ridge regression
        of the target's standardised values on them (prior ``b_i ~ N(0, 1)``), and ``g`` is a GP
        fitted to what the regression leaves.
        """
        observed = target.targets()
        design = np.stack([m.surrogate.predict(features)[0].numpy() for m in fitted if m.surrogate], 1)
        centred = design - design.mean(0)
        gram = centred.T @ centred + np.eye(design.shape[1])
        slopes = np.clip(np.linalg.solve(gram, centred.T @ (observed - observed.mean())), 0.0, None)
        offset = float(observed.mean() - design.mean(0) @ slopes)
        residual = observed - offset - design @ slopes
        self._record_weights(fitted, np.append(slopes, 1.0))
        if self._residual is None:
            self._residual = build_surrogate(
                self.encoding, replace(self.options, log_transform=False), self.rng
            )
        self._residual.fit(features, residual)
        sources = [(float(b), m.surrogate) for b, m in zip(slopes, fitted, strict=True) if m.surrogate]
        return _PriorMean(self._residual, offset, sources)

    def _record_weights(self, fitted: list[SourceModel], weights: NDArray[np.float64]) -> None:
        """Keep ``weights`` (per fitted source, then the target) as :attr:`weights` (every source)."""
        full = np.zeros(len(self.models) + 1)
        full[[self.models.index(m) for m in fitted]] = weights[:-1]
        full[-1] = weights[-1]
        self.weights = full

    # -- feasibility -------------------------------------------------------------------------
    def feasibility_rows(
        self, features: NDArray[np.float64], labels: Sequence[Label]
    ) -> tuple[NDArray[np.float64], list[Label], NDArray[np.float64]] | None:
        """The target's trials (``features`` of the active columns, ``labels``) plus the rows of
        every source that agrees with them, with sample weights; None when no source joins."""
        active = self.encoding.active_columns()
        observed = np.array([label == "ok" for label in labels])
        majority = max(observed.mean(), 1.0 - observed.mean())
        parts, all_labels, weights = [features], list(labels), [np.ones(len(labels))]
        for model in self.models:
            if not self.options.transfer_feasibility:
                break
            if model.feasibility is None:
                continue  # a source without failures tells nothing about the target's
            predicted = model.feasibility.probability(features) >= 0.5
            if np.mean(predicted == observed) < majority:
                continue  # the target's trials contradict this source
            parts.append(model.features[:, active])
            all_labels.extend(model.mapped.labels)
            weights.append(np.full(len(model.mapped.labels), SOURCE_FEASIBILITY_WEIGHT))
        if len(parts) == 1:
            return None
        return np.concatenate(parts), all_labels, np.concatenate(weights)


def _orders(values: NDArray[np.float64]) -> bool:
    """Whether a source's measured values can rank configurations: at least two, and (for positive
    values, such as times) the worst more than :data:`FLAT_SPREAD` above the best. A history whose
    kept trials all lie within a few per cent of each other (a flat landscape) orders them by
    measurement noise, and its GP would read "not kept" as "worse" where it is not."""
    if len(values) < 2:
        return False
    if bool(np.all(values > 0)):
        return float(values.max() / values.min()) > 1.0 + FLAT_SPREAD
    return bool(values.max() > values.min())


def _calibration(source: NDArray[np.float64], target: NDArray[np.float64]) -> tuple[float, float]:
    """Scale and offset mapping a source's predictions at the target's trials onto their targets
    (same mean and spread; the scale bounded)."""
    spread = float(np.std(source))
    scale = float(np.std(target)) / spread if spread > 1e-9 else 1.0
    scale = min(max(scale, MIN_SCALE), MAX_SCALE)
    return scale, float(np.mean(target) - scale * np.mean(source))


@dataclass(frozen=True)
class _Ensemble:
    """RGPE's weighted mixture: the target GP and calibrated source GPs (standardised targets)."""

    target: GPSurrogate
    target_weight: float
    members: list[tuple[float, GPSurrogate, float, float]]  # weight, model, scale, offset

    def predict(self, features: NDArray[np.float64]) -> tuple[torch.Tensor, torch.Tensor]:
        """Mixture mean and standard deviation at ``features`` (the target's standardised units)."""
        mean = torch.zeros(len(features), dtype=DTYPE)
        variance = torch.zeros(len(features), dtype=DTYPE)
        if self.target_weight > 0:
            m, s = self.target.predict(features)
            mean += self.target_weight * m
            variance += self.target_weight**2 * s * s
        for weight, model, scale, offset in self.members:
            m, s = model.predict(features)
            mean += weight * (scale * m + offset)
            variance += (weight * scale) ** 2 * s * s
        return mean, variance.clamp_min(1e-24).sqrt()


@dataclass(frozen=True)
class _PriorMean:
    """The prior-mean transfer model: weighted source means plus the residual GP."""

    residual: GPSurrogate
    offset: float
    sources: list[tuple[float, GPSurrogate]]  # slope, source GP

    def predict(self, features: NDArray[np.float64]) -> tuple[torch.Tensor, torch.Tensor]:
        """Mean and standard deviation at ``features`` (the target's standardised units)."""
        transform = self.residual.transform
        assert transform is not None
        m, s = self.residual.predict(features)
        mean = self.offset + transform.mean + transform.std * m
        for slope, model in self.sources:
            if slope > 0:
                mean = mean + slope * model.predict(features)[0]
        return mean, transform.std * s
