"""The search spaces of the space benchmark (issue 2), declared once for both engines.

Each case is a list of :class:`ParamSpec` (name, domain, ``where=`` callable). The same lambda
objects are given to pytest-autotune (``where=``) and to pyATF (``TP(name, range, constraint)``),
so both engines evaluate exactly the same Python constraints. Sizes are closure variables of the
case functions, as users write them (closures must work: Kernel Tuner issue 348).
"""

from __future__ import annotations

import itertools
import linecache
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["CASES", "EXPECTED_SIZES", "ParamSpec", "build_ours", "build_pyatf"]


@dataclass(frozen=True)
class ParamSpec:
    """One parameter: ``kind`` is "interval" (``args = (lo, hi)``), "set" (values) or "bool"."""

    name: str
    kind: str
    args: tuple[Any, ...]
    where: Callable[..., bool] | None = None


def saxpy(n: int) -> list[ParamSpec]:
    """WPT in 1..N dividing N; LS in 1..N dividing N // WPT."""
    return [
        ParamSpec("WPT", "interval", (1, n), lambda WPT: n % WPT == 0),
        ParamSpec("LS", "interval", (1, n), lambda WPT, LS: (n // WPT) % LS == 0),
    ]


def gemm(m: int = 1024, n: int = 1024, k: int = 1024) -> list[ParamSpec]:
    """CLBlast-style GEMM (5,580,832 valid configurations for M=N=K=1024)."""
    vector = (1, 2, 4, 8)
    return [
        ParamSpec("MWG", "interval", (1, m), lambda MWG: m % MWG == 0),
        ParamSpec("NWG", "interval", (1, n), lambda NWG: n % NWG == 0),
        ParamSpec("KWG", "interval", (1, k), lambda KWG: k % KWG == 0),
        ParamSpec("MDIMC", "interval", (1, m), lambda MWG, MDIMC: MWG % MDIMC == 0),
        ParamSpec(
            "NDIMC",
            "interval",
            (1, n),
            lambda NWG, MDIMC, NDIMC: NWG % NDIMC == 0 and MDIMC * NDIMC <= 1024,
        ),
        ParamSpec("VWM", "set", vector, lambda MWG, MDIMC, VWM: (MWG // MDIMC) % VWM == 0),
        ParamSpec("VWN", "set", vector, lambda NWG, NDIMC, VWN: (NWG // NDIMC) % VWN == 0),
        ParamSpec("KWI", "set", vector, lambda KWG, KWI: KWG % KWI == 0),
        ParamSpec("SA", "bool", ()),
        ParamSpec("SB", "bool", ()),
    ]


def conv(w: int) -> list[ParamSpec]:
    """2D convolution tiling per dimension, coupled by the work-group size and local memory."""
    return [
        ParamSpec("B_X", "interval", (1, w), lambda B_X: w % B_X == 0),
        ParamSpec("T_X", "interval", (1, w), lambda B_X, T_X: B_X % T_X == 0),
        ParamSpec("L_X", "interval", (1, w), lambda B_X, T_X, L_X: (B_X // T_X) % L_X == 0 and L_X <= 1024),
        ParamSpec("B_Y", "interval", (1, w), lambda B_Y: w % B_Y == 0),
        ParamSpec("T_Y", "interval", (1, w), lambda B_Y, T_Y: B_Y % T_Y == 0),
        ParamSpec(
            "L_Y",
            "interval",
            (1, w),
            lambda B_Y, T_Y, L_Y, L_X: (B_Y // T_Y) % L_Y == 0 and L_Y <= 1024 and L_X * L_Y <= 1024,
        ),
        ParamSpec("LMEM", "bool", (), lambda B_X, B_Y, LMEM: not LMEM or (B_X + 4) * (B_Y + 4) * 4 <= 49152),
        ParamSpec("UNROLL", "bool", ()),
    ]


def _lambda(args: str, body: str, scope: dict[str, Any]) -> Callable[..., bool]:
    """``lambda <args>: <body>`` compiled with ``scope`` as globals; its source is registered in
    ``linecache`` (as IPython does for notebook cells) so that it can be read back like a lambda
    written in a file."""
    source = f"lambda {args}: {body}\n"
    filename = f"<space_cases: {source.strip()}>"
    linecache.cache[filename] = (len(source), None, [source], filename)
    fn: Callable[..., bool] = eval(compile(source, filename, "eval"), dict(scope))
    return fn


def deep() -> list[ParamSpec]:
    """39 parameters like ATF's CCSD(T) study: 7 divisor chains of 5 plus 4 free booleans.

    Dimension ``d`` of size ``S``: ``G_d`` divides ``S``, ``L_d`` divides ``G_d``, ``P_d`` divides
    ``L_d``, ``U_d`` divides ``P_d``, ``V_d`` divides ``U_d``; all range over ``1..S``.
    """
    specs: list[ParamSpec] = []
    for dim, size in zip("abcdefg", (24, 16, 16, 24, 16, 16, 24), strict=True):
        chain = [f"{level}_{dim}" for level in "GLPUV"]
        specs.append(
            ParamSpec(chain[0], "interval", (1, size), _lambda(chain[0], f"S % {chain[0]} == 0", {"S": size}))
        )
        for outer, inner in itertools.pairwise(chain):
            where = _lambda(f"{outer}, {inner}", f"{outer} % {inner} == 0", {})
            specs.append(ParamSpec(inner, "interval", (1, size), where))
    specs += [ParamSpec(f"FLAG_{i}", "bool", ()) for i in range(4)]
    return specs


CASES: dict[str, Callable[[], list[ParamSpec]]] = {
    "saxpy-2^20": lambda: saxpy(2**20),
    "saxpy-2^24": lambda: saxpy(2**24),
    "gemm-1024": gemm,
    "conv-1024": lambda: conv(1024),
    "conv-4096": lambda: conv(4096),
    "deep-39": deep,
}

#: Valid-configuration counts given by issue 2 (checked in the benchmark output).
EXPECTED_SIZES: dict[str, int] = {"gemm-1024": 5_580_832, "conv-1024": 199_920, "conv-4096": 406_852}


def build_ours(specs: list[ParamSpec]) -> Any:
    """Build the pytest-autotune space (``build_space``) of a case."""
    from pytest_autotune.space import Bool, Interval, Set, build_space

    params: dict[str, Any] = {}
    for spec in specs:
        if spec.kind == "interval":
            params[spec.name] = Interval(*spec.args, where=spec.where)
        elif spec.kind == "set":
            params[spec.name] = Set(*spec.args, where=spec.where)
        else:
            params[spec.name] = Bool(where=spec.where)
    return build_space(params)


def build_pyatf(specs: list[ParamSpec]) -> Any:
    """Build pyATF's ``SearchSpace`` of a case (no tuning, no progress output)."""
    from pyatf import TP
    from pyatf import Interval as AtfInterval
    from pyatf import Set as AtfSet
    from pyatf.search_space import SearchSpace

    tps = []
    for spec in specs:
        if spec.kind == "interval":
            tps.append(TP(spec.name, AtfInterval(*spec.args), spec.where))
        elif spec.kind == "set":
            tps.append(TP(spec.name, AtfSet(*spec.args), spec.where))
        else:
            tps.append(TP(spec.name, AtfSet(False, True), spec.where))
    return SearchSpace(*tps, enable_1d_access=False, verbosity=0)
