"""Strategy options accept strings (bench specs) and name the option at fault."""

from __future__ import annotations

import pytest

from pytest_autotune.strategies.bo.options import BOOptions


def test_defaults() -> None:
    options = BOOptions.parse({})
    assert options.feasibility == "rf"
    assert options.log_transform is True
    assert options.permutation_distance == "spearman"
    assert options.initial is None
    assert options.kernel == "matern+additive"
    assert options.power_of_two is True
    assert options.interaction_scale == 0.0


def test_strings_are_coerced() -> None:
    options = BOOptions.parse(
        {"feasibility": "off", "log_transform": "false", "priors": "DIM", "initial": "7", "candidates": 300}
    )
    assert options == BOOptions(
        feasibility="off", log_transform=False, priors="dim", initial=7, candidates=300
    )
    assert BOOptions.parse({"log_transform": False, "feasibility": False}).feasibility == "off"
    assert BOOptions.parse({"initial": "auto"}).initial is None
    parsed = BOOptions.parse({"kernel": "Matern", "additive_scale": "0.5"})
    assert (parsed.kernel, parsed.additive_scale) == ("matern", 0.5)
    assert BOOptions.parse({"power_of_two": "off"}).power_of_two is False
    assert BOOptions.parse({"interaction_scale": "1"}).interaction_scale == 1.0


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"feasibility": "svm"}, "feasibility='svm'"),
        ({"log_transform": "maybe"}, "log_transform='maybe'"),
        ({"initial": 0}, "initial=0"),
        ({"candidates": "many"}, "candidates='many'"),
        ({"permutation_distance": "euclid"}, "permutation_distance='euclid'"),
        ({"initial": 2.5}, "initial=2.5"),
        ({"kernel": "rbf"}, "kernel='rbf'"),
        ({"additive_scale": 0}, "additive_scale=0"),
        ({"power_of_two": "sometimes"}, "power_of_two='sometimes'"),
        ({"interaction_scale": -1}, "interaction_scale=-1"),
        ({"interaction_scale": "strong"}, "interaction_scale='strong'"),
    ],
)
def test_bad_values_name_the_option(options: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        BOOptions.parse(options)


def test_unknown_option_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="unknown options \\['acq'\\]"):
        BOOptions.parse({"acq": "ucb"})
