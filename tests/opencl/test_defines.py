"""Configuration -> -D build options (pure Python, no OpenCL needed)."""

import numpy as np
import pytest

from pytest_autotune.backends.opencl.defines import define_options


def test_scalars_are_encoded_as_c_literals() -> None:
    options = define_options({"WPT": 4, "LOCAL": True, "PAD": False, "ALPHA": 0.5, "T": "float4"})
    assert options == ("-DWPT=4", "-DLOCAL=1", "-DPAD=0", "-DALPHA=0.5f", "-DT=float4")


def test_numpy_scalars_behave_like_python_ones() -> None:
    options = define_options({"A": np.int64(8), "B": np.bool_(True), "C": np.float32(0.25)})
    assert options == ("-DA=8", "-DB=1", "-DC=0.25f")


def test_permutations_become_one_macro_per_position() -> None:
    assert define_options({"ORDER": ("k", "i", "j")}) == (
        "-DORDER_0=k",
        "-DORDER_1=i",
        "-DORDER_2=j",
        "-DORDER_LEN=3",
    )


@pytest.mark.parametrize(
    ("defines", "message"),
    [
        ({"1BAD": 1}, "'1BAD': not a valid C macro name"),
        ({"A B": 1}, "not a valid C macro name"),
        ({"T": "float 4"}, "'T': the string 'float 4' cannot be passed verbatim"),
        ({"X": None}, "'X': cannot encode a value of type NoneType"),
        ({"X": float("nan")}, "'X': cannot encode the non-finite value nan"),
        ({"ORDER": (1, 2), "ORDER_0": 5}, "macro 'ORDER_0' is also defined by 'ORDER'"),
    ],
)
def test_bad_defines_are_rejected_naming_the_define(defines: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        define_options(defines)
