"""Transfer candidate ``transfer="icm"``: one GP over the target's and the sources' trials.

The intrinsic coregionalization model (ICM; as in GPTune's LCM with one latent process, or
BoTorch's ``MultiTaskGP``): ``k((x, s), (x', t)) = B[s, t] k(x, x')`` with ``k`` the engine's
mixed-kind Matern-5/2 kernel (shared lengthscales) and ``B = w w^T + diag(v)`` gpytorch's
``IndexKernel`` of rank one, whose off-diagonal entries are the learnt inter-task covariances.
Each task's values are log-transformed and standardised on their own; every task has its own
constant mean; hyperparameters are fitted by maximum a posteriori (L-BFGS, warm-started) on the
dense Cholesky factor, as the engine's own GP. A source the target's trials contradict gets a
small correlation with the target and stops informing its predictions.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch
from numpy.typing import NDArray

from pytest_autotune.strategies.bo.model._gpytorch import gpytorch
from pytest_autotune.strategies.bo.model.encoding import Encoding
from pytest_autotune.strategies.bo.model.kernels import MixedMaternKernel
from pytest_autotune.strategies.bo.model.surrogate import DTYPE, MAX_LENGTHSCALE, MIN_NOISE, TargetTransform

__all__ = ["MultiTaskGP"]

#: Most measured trials per source in the joint model (the best ones).
ICM_SOURCE_TRIALS = 48


class _ICM(gpytorch.Module):  # type: ignore[misc]
    def __init__(self, kernel: MixedMaternKernel, tasks: int) -> None:
        super().__init__()
        self.kernel = kernel
        self.task = gpytorch.kernels.IndexKernel(num_tasks=tasks, rank=1)
        self.means = torch.nn.Parameter(torch.zeros(tasks, dtype=DTYPE))
        self.likelihood = gpytorch.likelihoods.GaussianLikelihood(
            noise_prior=gpytorch.priors.GammaPrior(1.1, 0.05),
            noise_constraint=gpytorch.constraints.GreaterThan(MIN_NOISE),
        )

    def coregionalization(self) -> torch.Tensor:
        factor = self.task.covar_factor
        b: torch.Tensor = factor @ factor.T + torch.diag(self.task.var)
        return b

    def covariance(
        self, x1: torch.Tensor, t1: torch.Tensor, x2: torch.Tensor, t2: torch.Tensor
    ) -> torch.Tensor:
        b = self.coregionalization()
        k: torch.Tensor = self.kernel.forward(x1, x2) * b[t1][:, t2]
        return k

    def negative_log_posterior(self, x: torch.Tensor, t: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        n = len(z)
        covariance = self.covariance(x, t, x, t) + self.likelihood.noise * torch.eye(n, dtype=DTYPE)
        chol = torch.linalg.cholesky(covariance)
        residual = (z - self.means[t]).unsqueeze(-1)
        alpha = torch.cholesky_solve(residual, chol)
        nll: torch.Tensor = (
            0.5 * (residual * alpha).sum() + chol.diagonal().log().sum() + 0.5 * n * math.log(2 * math.pi)
        )
        for _, module, prior, closure, _ in self.named_priors():
            nll = nll - prior.log_prob(closure(module)).sum()
        return nll / n


class MultiTaskGP:
    """The ICM over the sources' trials (fixed) and the target's (refitted every suggestion)."""

    def __init__(
        self,
        encoding: Encoding,
        sources: Sequence[tuple[NDArray[np.float64], NDArray[np.float64]]],
        rng: np.random.Generator,
        lengthscale_floor: float = 1.0,
    ) -> None:
        self.encoding = encoding
        self.rng = rng
        xs, ts, zs = [], [], []
        for task, (features, values) in enumerate(sources):
            order = np.argsort(values, kind="stable")[:ICM_SOURCE_TRIALS]
            xs.append(features[order])
            ts.append(np.full(len(order), task))
            zs.append(TargetTransform.fit(values[order], log=True)(values[order]))
        self.target_task = len(sources)
        self._x = np.concatenate(xs) if xs else np.zeros((0, 0))
        self._t = np.concatenate(ts) if ts else np.zeros(0, dtype=np.int64)
        self._z = np.concatenate(zs) if zs else np.zeros(0)
        self._floor = torch.as_tensor(
            np.maximum(lengthscale_floor * encoding.grid_spacing(), 1e-3), dtype=DTYPE
        )
        self._state: dict[str, torch.Tensor] | None = None
        self._model: _ICM | None = None
        self._cache: tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor] | None = None
        self.best = 0.0

    def _build(self) -> _ICM:
        kernel = MixedMaternKernel(
            self.encoding.make_block_distances(),
            lengthscale_prior=gpytorch.priors.GammaPrior(1.3, 0.1),
            lengthscale_constraint=gpytorch.constraints.Interval(
                self._floor, torch.full_like(self._floor, MAX_LENGTHSCALE)
            ),
        )
        model: _ICM = _ICM(kernel, self.target_task + 1).to(DTYPE)
        return model

    def fit(self, features: NDArray[np.float64], values: NDArray[np.float64]) -> None:
        """Fit to the target's feasible trials (``features`` rows, ``values``) and the sources'."""
        z_target = TargetTransform.fit(values, log=True)(values)
        x = torch.as_tensor(np.concatenate([self._x, features]) if len(self._x) else features, dtype=DTYPE)
        t = torch.as_tensor(
            np.concatenate([self._t, np.full(len(values), self.target_task)]), dtype=torch.long
        )
        z = torch.as_tensor(np.concatenate([self._z, z_target]), dtype=DTYPE)
        model = self._build()
        if self._state is not None:
            model.load_state_dict(self._state, strict=False)
        else:
            length = np.exp(self.rng.uniform(np.log(0.1), np.log(2.0), size=(1, self.encoding.dimension)))
            model.kernel.lengthscale = torch.maximum(torch.as_tensor(length, dtype=DTYPE), 1.01 * self._floor)
            model.task.covar_factor.data.fill_(0.7)
            model.likelihood.noise = torch.tensor(1e-3, dtype=DTYPE)
        params = [p for p in model.parameters() if p.requires_grad]
        optimiser = torch.optim.LBFGS(
            params, lr=1.0, max_iter=25, line_search_fn="strong_wolfe", tolerance_grad=1e-4
        )

        def closure() -> torch.Tensor:
            optimiser.zero_grad()
            loss = model.negative_log_posterior(x, t, z)
            loss.backward()  # type: ignore[no-untyped-call]
            return loss

        try:
            optimiser.step(closure)  # type: ignore[no-untyped-call]
        except (RuntimeError, ValueError):
            if self._state is not None:
                model.load_state_dict(self._state, strict=False)
        self._state = {
            k: v.detach().clone() for k, v in model.state_dict().items() if "raw_" in k or k == "means"
        }
        with torch.no_grad():
            k = model.covariance(x, t, x, t) + model.likelihood.noise * torch.eye(len(z), dtype=DTYPE)
            chol, _ = torch.linalg.cholesky_ex(k + 1e-8 * torch.eye(len(z), dtype=DTYPE))
            alpha = torch.cholesky_solve((z - model.means[t]).unsqueeze(-1), chol)
        self._model = model
        self._cache = (x, t, chol, alpha)
        self.best = float(z_target.min())

    def correlations(self) -> NDArray[np.float64]:
        """The learnt correlation of each source with the target."""
        assert self._model is not None
        with torch.no_grad():
            b = self._model.coregionalization()
            d = b.diagonal().sqrt()
            return (b[-1, :-1] / (d[-1] * d[:-1])).numpy()

    def predict(self, features: NDArray[np.float64]) -> tuple[torch.Tensor, torch.Tensor]:
        """Posterior mean and standard deviation of the target task (its standardised units)."""
        assert self._model is not None
        assert self._cache is not None
        x, t, chol, alpha = self._cache
        model = self._model
        with torch.no_grad():
            xs = torch.as_tensor(features, dtype=DTYPE)
            ts = torch.full((len(xs),), self.target_task, dtype=torch.long)
            cross = model.covariance(xs, ts, x, t)
            mean = model.means[self.target_task] + (cross @ alpha).squeeze(-1)
            v = torch.linalg.solve_triangular(chol, cross.T, upper=False)
            prior = model.coregionalization()[self.target_task, self.target_task]
            var = (prior - (v * v).sum(0)).clamp_min(1e-12)
        return mean, var.sqrt()
