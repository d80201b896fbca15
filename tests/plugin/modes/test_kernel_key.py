"""``@tunable(kernel=..., key=...)``: one entry per problem size, found by the application by name.

End to end: a parametrized test is tuned over three sizes (a fake timer whose best ``A`` grows with
``M``), then an application script run for a fourth size launches the entry of the nearest size.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_autotune import Interval, tunable
from pytest_autotune.entry import DamagedEntryError, StoreEntry
from pytest_autotune.policy import PolicyError

SIZED_TIMER = """
import math
import re

import pytest

from pytest_autotune.testing import FakeTimer


class SizedTimer(FakeTimer):
    '''The best A is round(log2(M) / 2): 4 for M=256, 5 for 1024, 6 for 4096.'''

    def seconds(self, autotune):
        m = int(re.search(r"\\[(\\d+)\\]", autotune.nodeid).group(1))
        return 1e-4 * (1 + (autotune.config["A"] - round(math.log2(m) / 2)) ** 2)


@pytest.fixture
def autotune_timer():
    return SizedTimer(lambda config: 0.0)
"""

SIZED_TESTS = """
import pytest

from pytest_autotune import Interval, tunable


@pytest.mark.parametrize("M", [256, 1024, 4096])
@tunable(A=Interval(1, 8, default=1), kernel="scale", key=("M",), strategy="exhaustive")
def test_scale(autotune, M):
    autotune.measure(lambda: None)
"""

APPLICATION = """
import logging
import sys

from pytest_autotune import runtime

logging.basicConfig(level=logging.INFO, format="%(message)s")
tuned = runtime.load("autotune.json")
(device,) = tuned.devices()
for _ in range(3):  # the fallback is logged once
    choice = tuned.choose("scale", device=device, key={"M": int(sys.argv[1])}, default={"A": 1})
print("A =", choice.config["A"], "from", choice.entry, choice.size_match)
"""


def test_tuning_writes_one_entry_per_key_and_the_application_picks_the_nearest(
    project: pytest.Pytester, stored_entries: Callable[[], dict[str, dict[str, Any]]]
) -> None:
    project.makeconftest(SIZED_TIMER)
    project.makepyfile(test_sized=SIZED_TESTS)
    project.runpytest("--autotune", "-p", "no:cacheprovider").assert_outcomes(passed=3)
    entries = stored_entries()
    assert {nodeid: (e["kernel"], e["key"], e["config"]) for nodeid, e in entries.items()} == {
        "test_sized.py::test_scale[256]": ("scale", {"M": 256}, {"A": 4}),
        "test_sized.py::test_scale[1024]": ("scale", {"M": 1024}, {"A": 5}),
        "test_sized.py::test_scale[4096]": ("scale", {"M": 4096}, {"A": 6}),
    }
    # a plain run still finds each entry by its test id
    project.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=3)
    # the application, for a fourth size: 2000 is 0.97 doublings from 1024, 1.03 from 4096
    script = Path(project.path) / "app.py"
    script.write_text(APPLICATION)
    done = subprocess.run(
        [sys.executable, str(script), "2000"], cwd=project.path, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "A = 5 from test_sized.py::test_scale[1024] nearest"
    logged = done.stderr.strip().splitlines()
    assert len(logged) == 1, logged
    assert "the nearest key {'M': 1024}" in logged[0]
    exact = subprocess.run(
        [sys.executable, str(script), "4096"], cwd=project.path, capture_output=True, text=True, check=True
    )
    assert exact.stdout.strip() == "A = 6 from test_sized.py::test_scale[4096] exact"
    assert exact.stderr == ""


def test_a_key_that_is_not_parametrized_fails_the_test_by_name(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_unkeyed="""
        from pytest_autotune import Interval, tunable


        @tunable(A=Interval(1, 4), kernel="scale", key=("M",))
        def test_scale(autotune):
            autotune.measure(lambda: None)
        """
    )
    result = project.runpytest("--autotune", "-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*test_scale: key 'M' of kernel 'scale' is not an argument of the test's*"])


@pytest.mark.parametrize(
    ("declaration", "message"),
    [
        ({"key": ("M",)}, "key= needs kernel="),
        ({"kernel": "k", "key": ("A",)}, "key name 'A' is a tuned parameter"),
        ({"kernel": "", "key": ()}, "kernel='' is not a kernel name"),
        ({"kernel": "k", "key": [1]}, "key=[1] is not a list of names"),
        ({"kernel": "k", "key": ("M", "M")}, "names an argument twice"),
    ],
)
def test_bad_kernel_or_key_declarations_name_the_test(declaration: dict[str, Any], message: str) -> None:
    with pytest.raises(PolicyError, match=re.escape(message)) as info:

        @tunable(A=Interval(1, 4), **declaration)
        def test_k(autotune: Any) -> None: ...

    assert "test_k" in str(info.value)


def test_a_key_string_is_one_name() -> None:
    @tunable(A=Interval(1, 4), kernel="k", key="M")
    def test_k(autotune: Any, M: int) -> None: ...

    spec = test_k.__pytest_autotune__  # type: ignore[attr-defined]
    assert (spec.kernel, spec.key) == ("k", ("M",))
    assert spec.key_values({"M": 3, "other": "x"}) == {"M": 3}


def test_entry_kernel_and_key_round_trip_and_are_checked() -> None:
    data = {
        "config": {"A": 1},
        "space_hash": "h",
        "kernel": "scale",
        "key": {"M": 256, "dtype": "f32", "T": True},
    }
    entry = StoreEntry.from_json(json.loads(json.dumps(data)), where="W")
    assert (entry.kernel, dict(entry.key or {})) == ("scale", {"M": 256, "dtype": "f32", "T": True})
    assert entry.to_json() == data
    for field, value, message in [
        ("kernel", "", "field 'kernel' must be a non-empty string"),
        ("key", [256], "field 'key' must be an object"),
        ("key", {"M": {"x": 1}}, "field 'key.M' must be a scalar or a list of scalars"),
        ("key", {"M": float("nan")}, "field 'key.M' must hold finite numbers"),
    ]:
        with pytest.raises(DamagedEntryError, match=message):
            StoreEntry.from_json({**data, field: value}, where="W")
