"""Options of the Bayesian optimization strategy, validated and coerced.

Options arrive as keyword arguments from Python code, or as strings from the
command line and the benchmark (``bo:feasibility=off,initial=8``), so every
option accepts its natural type or a string spelling of it (booleans, integers
and numbers as :mod:`pytest_autotune.values` parses them). A bad value raises
``ValueError`` naming the option.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from typing import Any, Final, Literal, get_args

from pytest_autotune.values import parse_bool, parse_float, parse_int

__all__ = ["MODELLED_FAILURES", "BOOptions", "PermutationDistance", "PriorKind", "ProductKind"]

PriorKind = Literal["gamma", "dim", "off"]
PermutationDistance = Literal["spearman", "kendall", "hamming", "categorical"]
FeasibilityKind = Literal["rf", "off"]
FailureHandling = Literal["model", "single_model", "worst", "penalty", "skip"]
#: The failure handlings that train a feasibility model (the others feed the GP or drop failures).
MODELLED_FAILURES: Final = ("model", "single_model")
KernelKind = Literal["matern", "matern+additive"]
TransferKind = Literal["rgpe", "prior", "icm", "design"]
ProductKind = Literal["off", "pairs", "all", "both"]


def _as_bool(name: str, value: object) -> bool:
    return parse_bool(value, f"bo option {name}")


def _as_int(name: str, value: object, *, minimum: int) -> int:
    return parse_int(value, f"bo option {name}", minimum=minimum)


def _as_float(name: str, value: object, *, lo: float, hi: float) -> float:
    return parse_float(value, f"bo option {name}", minimum=lo, maximum=hi)


def _as_choice(name: str, value: object, choices: tuple[str, ...]) -> str:
    text = str(value).strip().lower() if isinstance(value, (str, bool)) else None
    if isinstance(value, bool):
        text = "on" if value else "off"
    if text not in choices:
        raise ValueError(f"bo option {name}={value!r}: expected one of {', '.join(choices)}")
    return text


@dataclass(frozen=True)
class BOOptions:
    """Knobs of :class:`~pytest_autotune.strategies.bo.BayesianOptimization`.

    * ``feasibility``: ``"rf"`` learns hidden constraints with random forests;
      ``"off"`` gives failures the worst observed value instead (ablation;
      the same as ``failures="worst"``).
    * ``failures``: what failed trials teach (the ablation of
      ``benchmarks/ablations/failures.py``): ``"model"`` (default) a feasibility forest
      per failure label with enough examples, combined by the minimum
      (tuning-knob search), times EI; ``"single_model"`` one forest for all
      failures (BaCO); ``"worst"`` no feasibility model, failures join the
      GP's data at the worst value seen so far; ``"penalty"`` the same at
      Kernel Tuner's fixed penalty, the largest float (a "very bad" value,
      as the tuning-knob paper's baseline); ``"skip"`` no feasibility
      model and failures never reach the GP: nothing is learnt from them
      (they are still never proposed again).
    * ``label_examples``: with ``failures="model"``, the examples a failure label
      needs before it gets its own forest (while another label exists); below
      that, the labels share one forest. ``1`` splits from the first failure.
    * ``feasibility_threshold``: largest minimum probability of feasibility
      drawn per suggestion (BaCO's random threshold; 0 is always possible).
    * ``kernel``: ``"matern"`` (Matern-5/2 over BaCO's mixed distance) or
      ``"matern+additive"`` (plus a fitted share of an equality kernel: one
      random effect per parameter value, see
      :class:`~pytest_autotune.strategies.bo.model.kernels.EqualityKernel`).
    * ``additive_scale``: prior mean of the additive kernel's output scale
      (standardised target units; a gamma prior of shape 1.5).
    * ``interaction_scale``: prior mean of the output scale of a
      second-order equality kernel (one random effect per pair of parameter
      values) added to ``matern+additive``; ``0`` (default): none. On the
      ten replayed spaces ``1.0`` changed the fraction of the optimum at
      20 / 50 / 100 evaluations by -0.023 / +0.001 / +0.010 (seeds 0-19)
      and -0.017 / +0.008 / +0.007 (seeds 20-39; paired standard errors
      about 0.013 / 0.008 / 0.006): later gains bought with an early loss,
      so it is off by default. Joining only after 20 trials kept the early
      quality and lost the later gain. It shares the agreement counts of
      the per-value kernel, so it adds little time per suggestion.
    * ``log_transform``: model the logarithm of the objective's magnitude.
    * ``priors``: lengthscale prior, ``"gamma"`` (BaCO-style), ``"dim"``
      (scaled with the dimension) or ``"off"``.
    * ``permutation_distance``: how permutations are compared.
    * ``ordinal``: model numbers given as explicit lists by their position in the list.
    * ``power_of_two``: give explicit integer lists that mix powers of two
      with other values a derived power-of-two flag (see the encoding module).
    * ``products``: derived blocks for products of sized parameters (``"pairs"``, ``"all"``,
      ``"both"``; ``"off"``: none; see the encoding module). Off by default: on the three
      convolution spaces (A100, MI250X, W6600; seeds 0-9, paired) ``"pairs"`` changed the
      fraction of the optimum at 20 / 50 / 100 evaluations by -0.015 / +0.005 / +0.035
      (standard errors 0.046 / 0.032 / 0.022; 0.705 / 0.840 / 0.975 against 0.720 / 0.835 /
      0.940): a later gain (MI250X 0.957 to 0.995 at 100, A100 0.896 to 0.962) with an early
      loss on MI250X (-0.142 at 20), the pattern of ``interaction_scale``. The lowest run at 50
      rose from 0.111 to 0.385 (MI250X). On the other seven replayed spaces (seeds 0-5 only)
      +0.003 / +0.006 / +0.001 on average, worst gemm RTX 2080 Ti -0.021 (0.013) at 100. With
      ``design_tries=16`` as well: -0.047 / -0.007 / +0.019 on the convolution spaces.
    * ``initial``: size of the initial design (``None``: a function of the dimension).
    * ``design_tries``: Latin hypercubes drawn for the initial design; above ``1``, the one whose
      closest two configurations are farthest apart in model features (maximin) is kept. Off
      (``1``) by default: on the three convolution spaces (seeds 0-9, paired) ``16`` changed the
      fraction at 20 / 50 / 100 by -0.013 / +0.049 / -0.011 (standard errors 0.054 / 0.039 /
      0.024): MI250X at 50 rose from 0.843 to 0.961 and its lowest run from 0.111 to 0.675, W6600
      gained at 20 (+0.097) and A100 lost a little everywhere; not measured elsewhere.
    * ``candidates``: uniform samples scored per suggestion.
    * ``local_starts``: starting points of the local search.
    * ``local_pool``: also score one-parameter sweeps and trust-region
      perturbations around the incumbents (see the optimizer module).
    * ``local_every``: every that many model-based suggestions, search only
      the incumbents' region (a trust-region step; ``0``: never), once as
      many global model-based suggestions as design points were made.
    * ``escape_after``: after that many trials without a gain of
      ``escape_gain`` (relative) over the best value, each global model-based
      suggestion is an escape step: the best acquisition among configurations
      differing from every incumbent in at least ``escape_radius`` parameters
      (see the escape module; ``0``: never). On the ten replayed spaces
      ``escape_after=10`` changed the fraction of the optimum at 20 / 50 / 100
      evaluations by +0.002 / +0.004 / +0.001 (seeds 0-19) and +0.009 /
      +0.001 / +0.005 (seeds 20-39; paired standard errors about 0.005 /
      0.004 / 0.005): small, but never negative on average. It lifts runs stuck
      on a plateau (MI250X convolution at 100 evaluations: 0.900 to 0.959 over
      seeds 0-19); the A100 convolution's needle moved both ways (0.911 to 0.884
      at 100 over seeds 0-19, 0.867 to 0.903 over seeds 20-39). On the example
      kernels' replays (20 seeds, 50 evaluations) it changed the fraction by
      -0.016 to +0.030, +0.004 on average. ``escape_after=15`` changed nothing
      measurable; ``escape_radius=3`` gained at 50 (+0.009) and lost at 20 and
      100.
    * ``plateau``: the incumbents (centres of the local pool and starts of the local search)
      are the configurations within ``plateau`` (relative) of the best, at least the three
      best and at most eight (``0``, default: the three best). On the three convolution
      spaces of issue 39 (seeds 0-4) ``0.05`` changed the fraction of the optimum at 20 / 50 /
      100 evaluations by +0.000 / -0.004 / +0.003 (paired standard errors 0.000 / 0.014 /
      0.029): their near-optimal plateaus are a handful of configurations, reached late.
    * ``incumbent_radius``: the incumbents after the best are the next best configurations
      that differ from every incumbent chosen before in at least that many parameters, so
      the local pool and the local search keep refining a second and third basin instead of
      the neighbours of the best (``0``, default: the three best, wherever they are). On the
      three convolution spaces (seeds 0-4) ``3`` changed the fraction at 20 / 50 / 100 by
      -0.027 / +0.015 / -0.038 (standard errors 0.020 / 0.038 / 0.034).
    * ``recombine``: the pool also scores that many recombinations of the incumbents
      (grey-wolf-like: each parameter's value taken from a randomly chosen incumbent, half of
      them with one parameter redrawn; see the optimizer module; ``0``, default: none). On
      the three convolution spaces (seeds 0-4) ``256`` changed the fraction at 20 / 50 / 100
      by -0.085 / +0.075 / -0.021 (standard errors 0.040 / 0.057 / 0.022): it freed the stuck
      MI250X runs at 50 (worst seed 0.11 to 0.98) but lost early and on A100 and W6600 at 100.
    * ``tabu_every``: every that many model-based suggestions (after as many as the design had
      points), a tabu neighbourhood move instead: the best acquisition among the unevaluated
      one-parameter moves of the best measured configuration that was not the centre of one of
      the last ``tabu_tenure`` such moves (``0``, default: never). It refines the last
      percent inside a good basin (MI250X convolution at 100: every seed at the optimum) but
      does not leave a wrong basin. Measurements: see ``docs/claims.md`` (issue 39).
    * ``tabu_tenure``: how many recent centres of tabu moves are tabu.
    * ``converge``: the run stops (converged) once the expected improvement of the model's
      best proposal, relative to the best value and summed over the budget left, is below this
      fraction (``0.01``, default: 1 %; ``0``: never; see :func:`~pytest_autotune.tuning.abort.converged`).
      Only global model-based suggestions (not the design, trust-region, escape or tabu steps) are
      judged, and the proposals until the stop are those of a run without it.
    * ``xi``: expected improvement counts only improvements beyond ``xi`` standard deviations
      of the modelled target below the best (more exploration; ``0``, default: plain EI). On
      the three convolution spaces (seeds 0-4) ``0.1`` changed the fraction at 20 / 50 / 100
      by -0.046 / +0.065 / +0.009 (standard errors 0.042 / 0.048 / 0.037); the stuck MI250X
      runs moved (worst seed at 50: 0.11 to 0.88), the A100 needle was found less often.
    * ``lengthscale_floor``: smallest lengthscale of a parameter with a
      grid of values, in grid steps (``0``: only a tiny absolute bound).
    * ``fit_restarts``: extra random starts of the hyperparameter fit.
    * ``threads``: torch threads while suggesting (``0``: leave torch's setting).
    * ``transfer``: how transfer sources (``Tuner(..., sources=...)``) inform the model:
      ``"rgpe"`` (a ranking-weighted ensemble of one GP per source and the target's GP),
      ``"prior"`` (the sources' predictions as the target GP's prior mean, scaled by fitted
      weights), ``"icm"`` (one GP over all tasks with a learnt inter-task correlation) or
      ``"design"`` (only the initial design); see the transfer module. Without sources
      nothing changes.
    * ``transfer_design``: how many of each source's best configurations open the run (the
      sources' best first, then their second best, ...), before the Latin hypercube.
    * ``transfer_feasibility``: also train the feasibility forests on the sources' trials,
      while they agree with the target's (see the transfer module).
    * ``start_at_default``: when the test declares a default for at least one parameter, the
      declared default configuration is the first trial, before the Latin hypercube (Optuna's
      ``enqueue_trial`` habit): the model starts from the configuration the author runs today,
      and a run never reports less than it. A space with no declared default (the replayed
      benchmark spaces) is unaffected. On the H200, the Triton tutorial's matmul found the
      list's best (its first config, the declared default) at evaluation 1 instead of not at all
      in 24 evaluations (``scripts/gpu-check``).
    """

    feasibility: FeasibilityKind = "rf"
    failures: FailureHandling = "model"
    label_examples: int = 5
    feasibility_threshold: float = 0.9
    kernel: KernelKind = "matern+additive"
    additive_scale: float = 1.5
    interaction_scale: float = 0.0
    log_transform: bool = True
    priors: PriorKind = "gamma"
    permutation_distance: PermutationDistance = "spearman"
    ordinal: bool = True
    power_of_two: bool = True
    products: ProductKind = "off"
    initial: int | None = None
    design_tries: int = 1
    candidates: int = 2048
    local_starts: int = 8
    local_pool: bool = True
    local_every: int = 2
    escape_after: int = 10
    escape_radius: int = 2
    escape_gain: float = 0.05
    plateau: float = 0.0
    incumbent_radius: int = 0
    recombine: int = 0
    tabu_every: int = 0
    tabu_tenure: int = 2
    xi: float = 0.0
    converge: float = 0.01
    lengthscale_floor: float = 1.0
    fit_restarts: int = 1
    threads: int = 1
    transfer: TransferKind = "rgpe"
    transfer_design: int = 2
    transfer_feasibility: bool = True
    start_at_default: bool = True

    def __post_init__(self) -> None:
        if self.feasibility == "off" and self.failures not in ("model", "worst"):
            raise ValueError(
                f"bo options feasibility='off' and failures={self.failures!r} contradict each other "
                "(feasibility='off' means failures='worst')"
            )

    @property
    def failure_handling(self) -> FailureHandling:
        """``failures``, with the older spelling ``feasibility="off"`` read as ``"worst"``."""
        return "worst" if self.feasibility == "off" else self.failures

    @classmethod
    def parse(cls, options: Mapping[str, Any]) -> BOOptions:
        """Validate and coerce ``options`` (values may be strings); unknown names raise ``TypeError``."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(options) - known)
        if unknown:
            raise TypeError(f"BayesianOptimization: unknown options {unknown}; known: {sorted(known)}")
        parsers: dict[str, Callable[[object], object]] = {
            "feasibility": lambda v: _as_choice("feasibility", v, ("rf", "off")),
            "failures": lambda v: _as_choice("failures", v, get_args(FailureHandling)),
            "label_examples": lambda v: _as_int("label_examples", v, minimum=1),
            "feasibility_threshold": lambda v: _as_float("feasibility_threshold", v, lo=0.0, hi=1.0),
            "kernel": lambda v: _as_choice("kernel", v, ("matern", "matern+additive")),
            "additive_scale": lambda v: _as_float("additive_scale", v, lo=1e-3, hi=100.0),
            "interaction_scale": lambda v: _as_float("interaction_scale", v, lo=0.0, hi=100.0),
            "log_transform": lambda v: _as_bool("log_transform", v),
            "priors": lambda v: _as_choice("priors", v, ("gamma", "dim", "off")),
            "permutation_distance": lambda v: _as_choice(
                "permutation_distance", v, ("spearman", "kendall", "hamming", "categorical")
            ),
            "ordinal": lambda v: _as_bool("ordinal", v),
            "power_of_two": lambda v: _as_bool("power_of_two", v),
            "products": lambda v: _as_choice("products", v, get_args(ProductKind)),
            "initial": lambda v: (
                None if v is None or str(v).lower() in {"none", "auto"} else _as_int("initial", v, minimum=1)
            ),
            "design_tries": lambda v: _as_int("design_tries", v, minimum=1),
            "candidates": lambda v: _as_int("candidates", v, minimum=1),
            "local_starts": lambda v: _as_int("local_starts", v, minimum=0),
            "local_pool": lambda v: _as_bool("local_pool", v),
            "local_every": lambda v: _as_int("local_every", v, minimum=0),
            "escape_after": lambda v: _as_int("escape_after", v, minimum=0),
            "escape_radius": lambda v: _as_int("escape_radius", v, minimum=1),
            "escape_gain": lambda v: _as_float("escape_gain", v, lo=0.0, hi=1.0),
            "plateau": lambda v: _as_float("plateau", v, lo=0.0, hi=1.0),
            "incumbent_radius": lambda v: _as_int("incumbent_radius", v, minimum=0),
            "recombine": lambda v: _as_int("recombine", v, minimum=0),
            "tabu_every": lambda v: _as_int("tabu_every", v, minimum=0),
            "tabu_tenure": lambda v: _as_int("tabu_tenure", v, minimum=0),
            "xi": lambda v: _as_float("xi", v, lo=0.0, hi=10.0),
            "converge": lambda v: _as_float("converge", v, lo=0.0, hi=1.0),
            "lengthscale_floor": lambda v: _as_float("lengthscale_floor", v, lo=0.0, hi=100.0),
            "fit_restarts": lambda v: _as_int("fit_restarts", v, minimum=0),
            "threads": lambda v: _as_int("threads", v, minimum=0),
            "transfer": lambda v: _as_choice("transfer", v, ("rgpe", "prior", "icm", "design")),
            "transfer_design": lambda v: _as_int("transfer_design", v, minimum=0),
            "transfer_feasibility": lambda v: _as_bool("transfer_feasibility", v),
            "start_at_default": lambda v: _as_bool("start_at_default", v),
        }
        parsed = {name: parsers[name](value) for name, value in options.items()}
        if parsed.get("feasibility") == "off" and parsed.get("failures", "worst") != "worst":
            raise ValueError(
                f"bo options feasibility='off' and failures={parsed['failures']!r} contradict each other "
                "(feasibility='off' means failures='worst')"
            )
        if parsed.get("feasibility") == "rf" and parsed.get("failures", "model") not in MODELLED_FAILURES:
            raise ValueError(
                f"bo options feasibility='rf' and failures={parsed['failures']!r} contradict each other "
                "(no feasibility model learns from failures handled that way)"
            )
        return cls(**parsed)  # type: ignore[arg-type]
