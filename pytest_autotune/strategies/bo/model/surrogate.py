"""Gaussian-process surrogate of the objective (gpytorch modules, float64).

* Targets: the logarithm of the objective's magnitude (optional), then
  standardised (:class:`TargetTransform`).
* Model: constant mean, ``ScaleKernel(MixedMaternKernel)`` over the encoded
  parameters, optionally plus ``ScaleKernel(EqualityKernel)`` over the
  parameters with finitely many values (one random effect per parameter
  value; its output scale, fitted with the rest, decides how much of the
  objective is a sum of per-value effects) and optionally a second-order
  ``EqualityKernel`` (one effect per pair of values), Gaussian noise
  bounded below by a jitter; gpytorch provides the modules, parameter
  constraints and hyperparameter priors.
* Hyperparameters: maximum a posteriori (exact marginal likelihood plus the
  registered priors) by L-BFGS, warm-started from the previous fit, with
  random restarts on every fit while data is scarce and periodically after.
* Likelihood and prediction use a dense Cholesky factor. This is the algebra
  of gpytorch's ``ExactGP``/``ExactMarginalLogLikelihood``, written out
  because at the sizes met here (n <= a few hundred) gpytorch's per-call
  machinery (lazy operators, distribution objects, cache checks) costs more
  than the linear algebra, inside L-BFGS and in the dozens of small
  prediction batches of every suggestion.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from numpy.typing import NDArray

from pytest_autotune.strategies.bo.model._gpytorch import gpytorch
from pytest_autotune.strategies.bo.model.encoding import Encoding
from pytest_autotune.strategies.bo.model.kernels import EqualityKernel, MixedMaternKernel
from pytest_autotune.strategies.bo.options import PriorKind

__all__ = ["GPSurrogate", "TargetTransform"]

DTYPE = torch.float64
#: Smallest noise variance (standardised units): a jitter that keeps the Cholesky stable.
MIN_NOISE = 1e-6
#: Bounds of every lengthscale (unit-scaled inputs); grid parameters get a larger lower bound.
MIN_LENGTHSCALE = 1e-3
MAX_LENGTHSCALE = 1e3


@dataclass(frozen=True)
class TargetTransform:
    """Objective values -> standardised model targets (log of the magnitude first, if asked).

    Values all positive are modelled as ``log(y)``; all negative (a negated
    maximised objective) as ``-log(-y)``; otherwise (mixed signs) unchanged.
    Both maps are increasing, so minimising the target minimises the value.
    """

    log: bool
    sign: int
    mean: float
    std: float

    @classmethod
    def fit(cls, values: NDArray[np.float64], *, log: bool) -> TargetTransform:
        """Choose the transform for ``values`` (finite, at least one)."""
        sign = 0
        if log and bool(np.all(values > 0)):
            sign = 1
        elif log and bool(np.all(values < 0)):
            sign = -1
        warped = cls._warp(values, sign)
        std = float(np.std(warped))
        return cls(log, sign, float(np.mean(warped)), std if std > 1e-12 else 1.0)

    @staticmethod
    def _warp(values: NDArray[np.float64], sign: int) -> NDArray[np.float64]:
        if sign > 0:
            return np.log(values)
        if sign < 0:
            return -np.log(-values)
        return np.asarray(values, dtype=np.float64)

    def __call__(self, values: NDArray[np.float64]) -> NDArray[np.float64]:
        """Standardised targets of ``values``."""
        return (self._warp(np.asarray(values, dtype=np.float64), self.sign) - self.mean) / self.std


class _GPModel(gpytorch.Module):  # type: ignore[misc]
    """Exact GP hyperparameters: constant mean, scaled mixed-kind Matern kernel, Gaussian noise."""

    def __init__(
        self,
        likelihood: gpytorch.likelihoods.GaussianLikelihood,
        kernel: MixedMaternKernel,
        outputscale_prior: gpytorch.priors.Prior | None,
        additive: EqualityKernel | None = None,
        additive_prior: gpytorch.priors.Prior | None = None,
        interaction: EqualityKernel | None = None,
        interaction_prior: gpytorch.priors.Prior | None = None,
    ) -> None:
        super().__init__()
        self.likelihood = likelihood
        self.mean_module = gpytorch.means.ConstantMean()
        self.covar_module = gpytorch.kernels.ScaleKernel(kernel, outputscale_prior=outputscale_prior)
        self.additive_module = None
        if additive is not None:
            self.additive_module = gpytorch.kernels.ScaleKernel(additive, outputscale_prior=additive_prior)
        self.interaction_module = None
        if interaction is not None:
            self.interaction_module = gpytorch.kernels.ScaleKernel(
                interaction, outputscale_prior=interaction_prior
            )

    def covariance(self, x1: torch.Tensor, x2: torch.Tensor) -> torch.Tensor:
        """Prior covariance matrix between rows of ``x1`` and ``x2`` (dense)."""
        covariance: torch.Tensor = self.covar_module.forward(x1, x2)
        modules = self.equality_modules()
        if modules:
            # Both equality kernels run over the same blocks: count the agreements once.
            agreements = modules[0].base_kernel.agreements(x1, x2)
            for module in modules:
                covariance = covariance + module.base_kernel.share(agreements).mul(module.outputscale)
        return covariance

    def equality_modules(self) -> list[gpytorch.kernels.ScaleKernel]:
        """The scaled equality kernels (per-value effects, then per-pair effects) that the model has."""
        return [m for m in (self.additive_module, self.interaction_module) if m is not None]

    @property
    def prior_variance(self) -> float:
        """``k(x, x)``, the same for every ``x`` (correlation kernels times their output scales)."""
        variance = float(self.covar_module.outputscale.detach())
        for module in self.equality_modules():
            variance += float(module.outputscale.detach())
        return variance

    def negative_log_posterior(self, x: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        """``-(log p(z | x, theta) + log p(theta)) / n``: the exact marginal likelihood plus priors.

        The same objective as gpytorch's ``ExactMarginalLogLikelihood`` on a
        dense Cholesky factor, without the lazy-operator machinery (several
        times faster at the sizes met here, which matters inside L-BFGS).
        """
        n = z.shape[-1]
        covariance = self.covariance(x, x)
        covariance = covariance + self.likelihood.noise * torch.eye(n, dtype=x.dtype)
        chol = torch.linalg.cholesky(covariance)
        residual = (z - self.mean_module.constant).unsqueeze(-1)
        alpha = torch.cholesky_solve(residual, chol)
        nll: torch.Tensor = (
            0.5 * (residual * alpha).sum() + chol.diagonal().log().sum() + 0.5 * n * math.log(2 * math.pi)
        )
        for module, prior, closure in self._prior_terms():
            nll = nll - prior.log_prob(closure(module)).sum()
        return nll / n

    def _prior_terms(self) -> list[tuple[torch.nn.Module, gpytorch.priors.Prior, Any]]:
        """The registered hyperparameter priors (gpytorch walks the module tree per call: cache it)."""
        cached: list[tuple[torch.nn.Module, gpytorch.priors.Prior, Any]] | None = self.__dict__.get(
            "_prior_list"
        )
        if cached is None:
            cached = [(module, prior, closure) for _, module, prior, closure, _ in self.named_priors()]
            self.__dict__["_prior_list"] = cached
        return cached


def _lengthscale_prior(kind: PriorKind, dimension: int) -> gpytorch.priors.Prior | None:
    if kind == "gamma":
        # BaCO's default lengthscale prior (concentration 1.3, rate 0.1) on unit-scaled inputs.
        return gpytorch.priors.GammaPrior(1.3, 0.1)
    if kind == "dim":
        # Dimension-scaled log-normal prior (Hvarfner, Hellsten, Nardi, ICML 2024): the
        # median lengthscale grows like sqrt(d), so the prior stays sane in high dimension.
        return gpytorch.priors.LogNormalPrior(math.sqrt(2.0) + 0.5 * math.log(dimension), math.sqrt(3.0))
    return None


class GPSurrogate:
    """Fit-and-predict wrapper around the exact GP; one instance per strategy run.

    ``fit`` keeps the hyperparameters of the previous call as the first start
    of the next one (warm start).
    """

    def __init__(
        self,
        encoding: Encoding,
        *,
        priors: PriorKind,
        log_transform: bool,
        rng: np.random.Generator,
        fit_restarts: int = 1,
        lengthscale_floor: float = 1.0,
        warm_iterations: int = 8,
        cold_iterations: int = 25,
        restart_every: int = 10,
        always_restart_below: int = 20,
        additive_kernel: bool = False,
        additive_scale: float = 1.5,
        interaction_scale: float = 0.0,
    ) -> None:
        self.encoding = encoding
        self.priors = priors
        self.log_transform = log_transform
        self.rng = rng
        self.fit_restarts = fit_restarts
        self.warm_iterations = warm_iterations
        self.cold_iterations = cold_iterations
        self.restart_every = restart_every
        self.always_restart_below = always_restart_below
        self._additive_blocks = encoding.discrete_blocks() if additive_kernel else []
        self.additive_scale = additive_scale
        self.interaction_scale = interaction_scale
        self._fits = 0
        self._lengthscale_prior = _lengthscale_prior(priors, encoding.dimension)
        # Smallest lengthscale per block: ``lengthscale_floor`` grid steps (at least MIN_LENGTHSCALE).
        self._min_lengthscale = torch.as_tensor(
            np.maximum(lengthscale_floor * encoding.grid_spacing(), MIN_LENGTHSCALE), dtype=DTYPE
        )
        self._state: dict[str, torch.Tensor] | None = None
        self._model: _GPModel | None = None
        self.transform: TargetTransform | None = None
        self._cache: _PosteriorCache | None = None

    # -- model construction ----------------------------------------------------------
    def _build(self) -> _GPModel:
        with_priors = self.priors != "off"
        likelihood = gpytorch.likelihoods.GaussianLikelihood(
            noise_prior=gpytorch.priors.GammaPrior(1.1, 0.05) if with_priors else None,
            noise_constraint=gpytorch.constraints.GreaterThan(MIN_NOISE),
        )
        kernel = MixedMaternKernel(
            self.encoding.make_block_distances(),
            lengthscale_prior=self._lengthscale_prior,
            lengthscale_constraint=gpytorch.constraints.Interval(
                self._min_lengthscale, torch.full_like(self._min_lengthscale, MAX_LENGTHSCALE)
            ),
        )
        outputscale_prior = gpytorch.priors.GammaPrior(2.0, 0.15) if with_priors else None
        additive = EqualityKernel(self._additive_blocks) if self._additive_blocks else None
        interaction = (
            EqualityKernel(self._additive_blocks, order=2)
            if self._additive_blocks and self.interaction_scale > 0
            else None
        )

        def effect_prior(kernel: EqualityKernel | None, mean: float) -> gpytorch.priors.Prior | None:
            """Gamma prior (shape 1.5) of an equality kernel's output scale, with the given mean."""
            return gpytorch.priors.GammaPrior(1.5, 1.5 / mean) if with_priors and kernel else None

        additive_prior = effect_prior(additive, self.additive_scale)
        interaction_prior = effect_prior(interaction, self.interaction_scale)
        model: _GPModel = _GPModel(
            likelihood, kernel, outputscale_prior, additive, additive_prior, interaction, interaction_prior
        ).to(DTYPE)
        return model

    def _random_start(self, model: _GPModel) -> None:
        """A spread-out starting point (log-uniform lengthscales), drawn from ``rng`` for seeding."""
        blocks = self.encoding.dimension
        kernel = model.covar_module.base_kernel
        lengthscale = np.exp(self.rng.uniform(np.log(0.05), np.log(5.0), size=(1, blocks)))
        kernel.lengthscale = torch.maximum(
            torch.as_tensor(lengthscale, dtype=DTYPE), 1.01 * self._min_lengthscale
        ).clamp(max=0.5 * MAX_LENGTHSCALE)
        model.covar_module.outputscale = torch.tensor(float(np.exp(self.rng.uniform(-1.0, 1.0))), dtype=DTYPE)
        for module in model.equality_modules():
            module.outputscale = torch.tensor(float(np.exp(self.rng.uniform(-2.0, 0.0))), dtype=DTYPE)
        model.likelihood.noise = torch.tensor(float(np.exp(self.rng.uniform(-9.0, -3.0))), dtype=DTYPE)
        model.mean_module.constant.data.fill_(float(self.rng.normal(0.0, 0.5)))

    # -- fitting -----------------------------------------------------------------------
    def fit(self, features: NDArray[np.float64], values: NDArray[np.float64]) -> None:
        """Fit hyperparameters to feasible observations (``features`` rows, ``values``)."""
        if len(values) < 1:
            raise ValueError("GPSurrogate.fit needs at least one observation")
        self.transform = TargetTransform.fit(values, log=self.log_transform)
        x = torch.as_tensor(features, dtype=DTYPE)
        z = torch.as_tensor(self.transform(values), dtype=DTYPE)
        model = self._build()
        starts: list[dict[str, torch.Tensor] | None] = []
        if self._state is None:
            restarts = max(1, self.fit_restarts)
        else:
            starts.append(self._state)
            # Random restarts on every fit while data is scarce (the likelihood surface still
            # changes quickly), then every ``restart_every`` fits.
            due = len(values) < self.always_restart_below or self._fits % self.restart_every == 0
            restarts = self.fit_restarts if due else 0
        starts.extend([None] * restarts)
        self._fits += 1
        best_loss = math.inf
        best_state: dict[str, torch.Tensor] | None = None
        for start in starts:
            if start is None:
                self._random_start(model)
                iterations = self.cold_iterations
            else:
                model.load_state_dict(start, strict=False)
                iterations = self.warm_iterations
            loss = self._optimise(model, x, z, iterations)
            if loss < best_loss:
                best_loss = loss
                best_state = {k: v.detach().clone() for k, v in model.state_dict().items() if "raw_" in k}
        if best_state is None:  # every start diverged: keep the last, it is still a valid model
            best_state = {k: v.detach().clone() for k, v in model.state_dict().items() if "raw_" in k}
        model.load_state_dict(best_state, strict=False)
        self._state = best_state
        self._model = model
        self._cache = _PosteriorCache.of(model, x, z)

    @staticmethod
    def _optimise(model: _GPModel, x: torch.Tensor, z: torch.Tensor, iterations: int) -> float:
        """Run L-BFGS on the negative log posterior; return its final value (inf on failure)."""
        params = [p for p in model.parameters() if p.requires_grad]
        optimiser = torch.optim.LBFGS(
            params, lr=1.0, max_iter=iterations, line_search_fn="strong_wolfe", tolerance_grad=1e-4
        )

        def closure() -> torch.Tensor:
            optimiser.zero_grad()
            loss = model.negative_log_posterior(x, z)
            loss.backward()  # type: ignore[no-untyped-call]
            return loss

        try:
            optimiser.step(closure)  # type: ignore[no-untyped-call]
            with torch.no_grad():
                loss = float(model.negative_log_posterior(x, z))
        except (RuntimeError, ValueError):  # Cholesky failure or NaN: this start is lost
            return math.inf
        return loss if math.isfinite(loss) else math.inf

    # -- prediction -------------------------------------------------------------------
    @property
    def best_target(self) -> float:
        """Smallest standardised target seen (the incumbent, for improvement-based acquisitions)."""
        if self._cache is None:
            raise RuntimeError("GPSurrogate.predict before fit")
        return self._cache.best

    def predict(self, features: NDArray[np.float64]) -> tuple[torch.Tensor, torch.Tensor]:
        """Noise-free posterior mean and standard deviation (standardised targets)."""
        if self._cache is None:
            raise RuntimeError("GPSurrogate.predict before fit")
        return self._cache.predict(torch.as_tensor(features, dtype=DTYPE))

    def targets(self) -> NDArray[np.float64]:
        """The standardised targets the model was fitted to (in ``fit``'s order)."""
        if self._cache is None:
            raise RuntimeError("GPSurrogate.targets before fit")
        return self._cache.z.numpy()

    def loo_mean(self) -> NDArray[np.float64]:
        """Leave-one-out posterior means at the training points (standardised targets).

        The closed form ``z_i - [K^-1 (z - m)]_i / [K^-1]_ii`` (Rasmussen and Williams, 5.12),
        with the fitted hyperparameters: what the model predicts for each trial without it.
        """
        if self._cache is None:
            raise RuntimeError("GPSurrogate.loo_mean before fit")
        cache = self._cache
        with torch.no_grad():
            inverse_diagonal = torch.cholesky_inverse(cache.chol).diagonal()
            loo = cache.z - cache.alpha.squeeze(-1) / inverse_diagonal
        return loo.numpy()

    def condition_with_mean(self, mean: float) -> None:
        """Keep the hyperparameters, make the prior mean ``mean`` (standardised) and condition again.

        A transfer source's history keeps only its best trials, so the mean fitted to them is
        optimistic about everything the history does not cover; a pessimistic prior mean is not.
        """
        if self._cache is None or self._model is None:
            raise RuntimeError("GPSurrogate.condition_with_mean before fit")
        self._model.mean_module.constant.data.fill_(float(mean))
        self._cache = _PosteriorCache.of(self._model, self._cache.x, self._cache.z)

    def believe(self, features: NDArray[np.float64]) -> None:
        """Kriging believer (for trials under way): condition also on ``features`` at the posterior
        mean there, keeping the hyperparameters and the incumbent; the next fit undoes it."""
        cache, x = self._cache, torch.as_tensor(features, dtype=DTYPE)
        if cache is None or self._model is None:
            raise RuntimeError("GPSurrogate.believe before fit")
        z = torch.cat([cache.z, cache.predict(x)[0]])
        self._cache = _PosteriorCache.of(self._model, torch.cat([cache.x, x]), z, cache.best)

    def hyperparameters(self) -> dict[str, Any]:
        """Current hyperparameters in natural units (for logs and tests)."""
        if self._model is None:
            return {}
        m = self._model
        return {
            "lengthscale": m.covar_module.base_kernel.lengthscale.detach().reshape(-1).tolist(),
            "outputscale": float(m.covar_module.outputscale.detach()),
            "noise": float(m.likelihood.noise.detach()),
            "mean": float(m.mean_module.constant.detach()),
            "additive_outputscale": (
                0.0 if m.additive_module is None else float(m.additive_module.outputscale.detach())
            ),
            "interaction_outputscale": (
                0.0 if m.interaction_module is None else float(m.interaction_module.outputscale.detach())
            ),
        }


@dataclass(frozen=True)
class _PosteriorCache:
    """Everything the posterior needs, computed once per fit."""

    model: _GPModel
    x: torch.Tensor
    z: torch.Tensor
    chol: torch.Tensor
    alpha: torch.Tensor
    mean: float
    prior_var: float
    best: float

    @classmethod
    def of(
        cls, model: _GPModel, x: torch.Tensor, z: torch.Tensor, best: float | None = None
    ) -> _PosteriorCache:
        """The posterior of ``model`` given standardised targets ``z`` at ``x`` (incumbent: ``best``
        or the smallest of ``z``)."""
        with torch.no_grad():
            k = model.covariance(x, x)
            noise = float(model.likelihood.noise.detach())
            mean = float(model.mean_module.constant.detach())
            eye = torch.eye(len(x), dtype=DTYPE)
            chol: torch.Tensor | None = None
            jitter = noise
            for _ in range(6):
                chol, info = torch.linalg.cholesky_ex(k + jitter * eye)
                if int(info) == 0:
                    break
                jitter *= 10.0
            assert chol is not None
            alpha = torch.cholesky_solve((z - mean).unsqueeze(-1), chol)
            best = float(z.min()) if best is None else best
            return cls(model, x, z, chol, alpha, mean, model.prior_variance, best)

    def predict(self, xs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        with torch.no_grad():
            cross = self.model.covariance(xs, self.x)
            mean = self.mean + (cross @ self.alpha).squeeze(-1)
            v = torch.linalg.solve_triangular(self.chol, cross.transpose(-1, -2), upper=False)
            var = (self.prior_var - (v * v).sum(-2)).clamp_min(1e-12)
            return mean, var.sqrt()
