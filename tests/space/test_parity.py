"""The chain of trees agrees with the brute-force oracle on every operation of small spaces."""

from __future__ import annotations

from typing import Any

import numpy as np

from pytest_autotune.space.chain import ChainSpace
from pytest_autotune.space.params import Permutation, Real
from pytest_autotune.space.trees.groups import TreeGroup
from pytest_autotune.testing import BruteForceSpace

Pair = tuple[ChainSpace, BruteForceSpace]


def _key(config: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((name, repr(value)) for name, value in config.items()))


def _all_configs(space: ChainSpace | BruteForceSpace) -> list[dict[str, Any]]:
    if space.is_continuous:
        return space.configs(space.sample(300, np.random.default_rng(5)))
    return space.configs(space.at_index(range(space.size)))


def _random_product(space: ChainSpace, n: int, seed: int) -> list[dict[str, Any]]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        config: dict[str, Any] = {}
        for name, param in space.params.items():
            if isinstance(param, Real):
                config[name] = float(rng.uniform(param.lo, param.hi))
            else:
                value = param.values_at(np.array([rng.integers(param.size)]))[0]
                config[name] = value if isinstance(param, Permutation) else value.item()
        out.append(config)
    return out


def test_same_size_and_same_configurations(both: Pair) -> None:
    chain, brute = both
    assert chain.size == brute.size
    if not chain.is_continuous:
        assert sorted(map(_key, _all_configs(chain))) == sorted(map(_key, _all_configs(brute)))


def test_membership_matches_the_oracle_on_random_product_configurations(both: Pair) -> None:
    chain, brute = both
    configs = _random_product(chain, 400, seed=1)
    expected = np.array([brute.declaration.is_valid(c) for c in configs])
    assert expected.any()
    assert not expected.all()
    assert (chain.contains(configs) == expected).all()


def test_every_enumerated_configuration_is_a_member_with_its_own_index(both: Pair) -> None:
    chain, _ = both
    if chain.is_continuous:
        return
    configs = _all_configs(chain)
    assert chain.contains(configs).all()
    assert chain.index_of(chain.to_points(configs)) == list(range(chain.size))


def test_features_match_the_oracle(both: Pair) -> None:
    chain, brute = both
    configs = _all_configs(brute)
    assert np.allclose(chain.features(chain.to_points(configs)), brute.features(brute.to_points(configs)))
    assert chain.feature_blocks == brute.feature_blocks


def test_neighbour_sets_match_the_oracle(both: Pair) -> None:
    chain, brute = both
    configs = _all_configs(brute)
    for config in configs[:: max(1, len(configs) // 40)]:
        ours = {_key(c) for c in chain.configs(chain.neighbours(chain.to_points([config])))}
        theirs = {_key(c) for c in brute.configs(brute.neighbours(brute.to_points([config])))}
        assert ours == theirs, config


def test_default_configuration_matches_the_oracle(both: Pair) -> None:
    chain, brute = both
    assert chain.default_config() == brute.default_config()
    assert chain.contains([chain.default_config()]).all()


def test_samples_are_valid(both: Pair) -> None:
    chain, brute = both
    points = chain.sample(500, np.random.default_rng(2))
    assert brute.contains(chain.configs(points)).all()


def test_unit_coordinates_round_trip(both: Pair) -> None:
    chain, _ = both
    points = chain.sample(300, np.random.default_rng(3))
    again = chain.from_unit(chain.to_unit(points))
    assert np.array_equal(again.codes, points.codes)
    assert np.allclose(again.reals, points.reals)


def test_unit_coordinates_match_the_oracle_when_level_order_is_declaration_order(both: Pair) -> None:
    chain, brute = both
    same_order = all(g.names == g.declaration_order for g in chain.groups if isinstance(g, TreeGroup))
    coords = np.random.default_rng(4).random((300, chain.n_dims))
    ours = chain.configs(chain.from_unit(coords))
    assert brute.contains(ours).all()
    if same_order:
        assert [_key(c) for c in ours] == [_key(c) for c in brute.configs(brute.from_unit(coords))]


def test_space_hash_is_stable_and_matches_the_oracle(both: Pair) -> None:
    chain, brute = both
    assert chain.space_hash == brute.space_hash
