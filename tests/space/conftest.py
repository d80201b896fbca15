"""Small search spaces shared by the space tests, each built by both implementations.

``SMALL_SPACES`` maps an id to a factory returning ``(params, constraints)``; a fresh parameter
set is made per call because a parameter object belongs to one space.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from pytest_autotune.space import (
    Bool,
    Categorical,
    Interval,
    Permutation,
    Pow2,
    Real,
    Set,
)
from pytest_autotune.space.chain import ChainSpace
from pytest_autotune.space.declaration import Declaration
from pytest_autotune.testing import BruteForceSpace

Factory = Callable[[], tuple[dict[str, Any], list[Any]]]


def _saxpy() -> tuple[dict[str, Any], list[Any]]:
    n = 64
    return {
        "WPT": Interval(1, n, where=lambda WPT: n % WPT == 0),
        "LS": Interval(1, n, where=lambda WPT, LS: (n // WPT) % LS == 0),
    }, []


def _mixed() -> tuple[dict[str, Any], list[Any]]:
    return {
        "A": Interval(1, 12),
        "B": Interval(1, 12),
        "C": Set(1, 2, 3, 4),
        "D": Bool(),
        "E": Categorical("x", "y", "z"),
    }, ["A % B == 0", lambda C, D: C > 2 or D, lambda E, A: E != "x" or A < 5, "A * C <= 24 and B <= 8"]


def _permutations() -> tuple[dict[str, Any], list[Any]]:
    return {
        "P": Permutation(["i", "j", "k"]),
        "U": Set(1, 2, 4),
        "Q": Permutation("abcd"),
    }, [lambda P, U: P[0] != "k" or U > 1]


def _reals() -> tuple[dict[str, Any], list[Any]]:
    return {
        "X": Interval(0, 20, 2, where=lambda X: X % 3 != 0),
        "Y": Pow2(1, 64),
        "R": Real(0.5, 4.0),
    }, [lambda X, R: R < X + 1]


def _ternary_chain() -> tuple[dict[str, Any], list[Any]]:
    return {"a": Interval(1, 6), "b": Interval(1, 6), "c": Interval(1, 6)}, [
        lambda a, b, c: a < b < c and (a + c) % 2 == 0 if a > 1 else b == c
    ]


def _kernel_tuner_style() -> tuple[dict[str, Any], list[Any]]:
    return {
        "block_size_x": Set(16, 32, 48, 64, 128),
        "block_size_y": Set(1, 2, 4, 8),
        "tile_size_x": Set(1, 2, 3, 4),
        "use_padding": Set(0, 1),
        "read_only": Set(0, 1),
    }, [
        "use_padding==0 or block_size_x % 32 != 0",
        "32 <= block_size_x * block_size_y <= 256",
        "tile_size_x > 1 or read_only == 0",
    ]


def _generator_and_defaults() -> tuple[dict[str, Any], list[Any]]:
    return {
        "E": Interval(0, 5, generator=lambda i: 2**i, default=8),
        "F": Interval(1, 30, where=lambda E, F: F * E <= 64 and F % 3 != 1),
        "G": Categorical("lo", "hi", where=lambda F, G: G == "lo" or F > 4),
    }, []


def _order_differs() -> tuple[dict[str, Any], list[Any]]:
    return {
        "big": Interval(1, 40),
        "small": Set(1, 2, 3),
        "flag": Bool(),
    }, [lambda big, small: big % small == 0 and big <= 10 * small, lambda small, flag: flag or small != 2]


SMALL_SPACES: dict[str, Factory] = {
    "saxpy": _saxpy,
    "mixed": _mixed,
    "permutations": _permutations,
    "reals": _reals,
    "ternary_chain": _ternary_chain,
    "kernel_tuner_style": _kernel_tuner_style,
    "generator_and_defaults": _generator_and_defaults,
    "order_differs": _order_differs,
}


def build_both(factory: Factory) -> tuple[ChainSpace, BruteForceSpace]:
    """The chain space and the brute-force oracle of one declaration."""
    params, constraints = factory()
    chain = ChainSpace(Declaration(params, constraints))
    params, constraints = factory()
    return chain, BruteForceSpace(Declaration(params, constraints))


@pytest.fixture(params=sorted(SMALL_SPACES))
def both(request: pytest.FixtureRequest) -> tuple[ChainSpace, BruteForceSpace]:
    """Every small space, built by the chain of trees and by brute force."""
    return build_both(SMALL_SPACES[request.param])
