"""Parameter values that autotune.json cannot store are refused when declared, not after tuning;
values that round-trip keep working and come back equal from the store."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from pytest_autotune.space import Categorical, Interval, Permutation, Set, SpaceError, build_space
from pytest_autotune.store import config_from_json, dumps


class Opaque:
    def __repr__(self) -> str:
        return "Opaque()"


BAD: list[tuple[str, Callable[[], Any], str]] = [
    ("object", lambda: Categorical("a", Opaque()), "value Opaque() cannot be stored in autotune.json"),
    ("bytes", lambda: Categorical(b"x"), "value b'x' cannot be stored"),
    ("set", lambda: Categorical("a", frozenset({1})), "value frozenset({1}) cannot be stored"),
    ("unhashable-set", lambda: Categorical({1}), "value {1} cannot be stored"),
    (
        "nan",
        lambda: Categorical(1.0, float("nan")),
        "value nan cannot be stored in autotune.json (JSON has no NaN",
    ),
    ("inf-in-set", lambda: Set(1.0, float("inf")), "Set: value inf cannot be stored"),
    ("numpy-nan", lambda: Set(np.float64("nan")), "value nan cannot be stored"),
    ("object-in-tuple", lambda: Categorical((1, Opaque())), "its item Opaque()"),
    (
        "nested-tuple",
        lambda: Categorical((1, (2, 3))),
        "a tuple inside a tuple comes back from JSON as a list",
    ),
    ("lone-surrogate", lambda: Categorical("a", "\ud800"), "lone surrogate"),
    ("complex", lambda: Categorical(1j), "'complex' values"),
    ("permutation-item", lambda: Permutation([1, Opaque()]), "Permutation item: value Opaque()"),
    ("default-object", lambda: Categorical("a", default=Opaque()), "default Opaque() is not in its domain"),
]


@pytest.mark.parametrize(("make", "message"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_values_json_cannot_store_are_refused_at_declaration(make: Callable[[], Any], message: str) -> None:
    with pytest.raises(SpaceError) as info:
        make()
    assert message in str(info.value)


def test_at_tunable_the_error_names_the_test_and_the_value() -> None:
    from pytest_autotune import tunable

    with pytest.raises(SpaceError, match=r"Categorical: value b'x' cannot be stored in autotune\.json"):

        @tunable(MODE=Categorical("a", b"x"))
        def test_k() -> None: ...


GOOD = ("fast", "", "naïve", 3, -2, 2.5, -0.0, True, None, (1, "x", 2.5, None, False), ())


def test_storable_values_come_back_equal_from_the_store() -> None:
    space = build_space(
        {
            "MODE": Categorical(*GOOD[:7], *GOOD[8:], np.int64(7), default=(1, "x", 2.5, None, False)),
            "ORDER": Permutation(["i", "j", 3]),
            "N": Interval(1, 2),
        }
    )
    configs = space.configs(space.at_index(list(range(space.size))))
    assert {c["MODE"] for c in configs} == {*GOOD[:7], *GOOD[8:], 7}
    for config in configs:
        back = config_from_json(json.loads(dumps({"config": config}))["config"])
        assert back == config
        assert space.contains([back]).all()
    assert space.declaration.declared_defaults()["MODE"] == (1, "x", 2.5, None, False)
