"""Configuration -> #define lines or -D build options (pure Python, no OpenCL needed)."""

import numpy as np
import pytest

from pytest_autotune.backends.opencl.defines import define_options, define_source


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


def test_define_lines_go_above_the_source_sorted_then_line_one() -> None:
    defines = {"WPT": 4, "LOCAL": True, "ALPHA": 0.5, "read_only": 0, "ORDER": ("k", "i")}
    text = define_source(defines, "body\n")
    assert text == (
        "#define ALPHA 0.5f\n#define LOCAL 1\n#define ORDER_0 k\n#define ORDER_1 i\n#define ORDER_LEN 2\n"
        "#define WPT 4\n#define read_only 0\n#line 1\nbody\n"
    )
    assert define_source({}, "body") == "body"


def test_define_lines_take_text_an_option_cannot() -> None:
    assert define_source({"T": "unsigned int"}, "") == "#define T unsigned int\n#line 1\n"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("a\nb", "cannot be a #define value"),
        ("x \\", "does not end in a backslash"),
        ("  ", "non-empty text"),
    ],
)
def test_bad_define_line_values_are_rejected_naming_the_define(value: str, message: str) -> None:
    with pytest.raises(ValueError, match=f"define 'T': .*{message}"):
        define_source({"T": value}, "")
