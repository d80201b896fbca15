"""Capture (issue 46, item 5): one launch's inputs per key saved by the application, loaded by a test."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import numpy as np
import pytest

from pytest_autotune import runtime
from pytest_autotune.runtime import captures as capture_module
from pytest_autotune.runtime.captures import CAPTURE_ENV, capture_path
from tests.runtime.test_triton_tuned import GPU, FakeJit, store


@pytest.fixture(autouse=True)
def fresh_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts as a new process would: nothing captured yet, capture off."""
    monkeypatch.setattr(capture_module, "_done", set())
    monkeypatch.delenv(CAPTURE_ENV, raising=False)


def test_off_without_the_variable(tmp_path: Path) -> None:
    assert runtime.capture("saxpy", {"N": 8}, {"x": np.ones(8)}) is None
    assert list(tmp_path.iterdir()) == []


def test_one_file_per_key_written_once_and_read_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CAPTURE_ENV, str(tmp_path))
    x = np.arange(8, dtype=np.float32)
    written = runtime.capture("saxpy", {"N": 8}, {"x": x, "a": np.float32(2.5), "n": 8, "buffer": object()})
    assert written == tmp_path / "saxpy" / "N=8.npz"
    # the second launch of the key saves nothing, even with other values
    assert runtime.capture("saxpy", {"N": 8}, {"x": x + 1, "a": np.float32(0), "n": 8}) is None
    assert runtime.capture("saxpy", {"N": 262144}, {"x": x[:4], "a": np.float32(1), "n": 4}) is not None
    loaded = runtime.load_capture(tmp_path, "saxpy", {"N": 8})
    assert set(loaded) == {"x", "a", "n"}  # the buffer is no plain data: left out
    np.testing.assert_array_equal(loaded["x"], x)
    assert (loaded["a"], loaded["a"].dtype, int(loaded["n"])) == (2.5, np.float32, 8)
    with np.load(written) as data:
        assert list(data["__skipped__"]) == ["buffer"]
    assert runtime.captured_keys(tmp_path, "saxpy") == [{"N": 8}, {"N": 262144}]
    assert runtime.captured_keys(tmp_path, "other") == []


def test_an_existing_file_is_never_overwritten(tmp_path: Path) -> None:
    path = capture_path(tmp_path, "saxpy", {"N": 8})
    path.parent.mkdir(parents=True)
    path.write_bytes(b"kept")
    assert runtime.capture("saxpy", {"N": 8}, {"x": np.ones(8)}, directory=tmp_path) is None
    assert path.read_bytes() == b"kept"


def test_load_names_the_file_and_the_keys_captured(tmp_path: Path) -> None:
    runtime.capture("saxpy", {"N": 8}, {"x": np.ones(8)}, directory=tmp_path)
    with pytest.raises(
        FileNotFoundError, match=r"N=16\.npz: no capture of kernel 'saxpy' .*captured keys: \[\{'N': 8\}\]"
    ):
        runtime.load_capture(tmp_path, "saxpy", {"N": 16})
    # a file renamed by hand holds another key: refused, not silently used
    capture_path(tmp_path, "saxpy", {"N": 8}).rename(capture_path(tmp_path, "saxpy", {"N": 16}))
    with pytest.raises(ValueError, match=r"holds kernel 'saxpy' key \{'N': 8\}, not 'saxpy' key \{'N': 16\}"):
        runtime.load_capture(tmp_path, "saxpy", {"N": 16})


def test_reserved_names_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="input name '__key__' is reserved"):
        runtime.capture("saxpy", None, {"__key__": 1}, directory=tmp_path)


def test_the_triton_decorator_captures_each_keys_first_launch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CAPTURE_ENV, str(tmp_path / "captures"))
    fn = FakeJit("x_ptr", "N", "BLOCK")
    kernel = runtime.tuned(kernel="add", key=["N"], store=store(tmp_path, {1024: {"BLOCK": 64}}), device=GPU)(
        fn
    )
    kernel[(1,)](np.full(4, 7.0), 1024)
    kernel[(1,)](np.zeros(4), 1024)  # the same key: not captured again
    kernel[(1,)](np.ones(2), N=2048)
    assert runtime.captured_keys(tmp_path / "captures", "add") == [{"N": 1024}, {"N": 2048}]
    first = runtime.load_capture(tmp_path / "captures", "add", {"N": 1024})
    np.testing.assert_array_equal(first["x_ptr"], np.full(4, 7.0))
    assert int(first["N"]) == 1024
    assert int(runtime.load_capture(tmp_path / "captures", "add", {"N": 2048})["N"]) == 2048
    assert [launch[2] for launch in fn.launches] == [{"BLOCK": 64}, {"BLOCK": 64}, {"N": 2048, "BLOCK": 64}]


def test_a_tunable_test_tunes_on_the_captured_inputs(pytester: pytest.Pytester, tmp_path: Path) -> None:
    """What the docs show: the application captured two keys; the test is parametrized by them."""
    captures = tmp_path / "captures"
    for n in (6, 12):
        runtime.capture("scale", {"N": n}, {"x": np.arange(n, dtype=np.float64)}, directory=captures)
    pytester.makeconftest(
        """
        import pytest
        from pytest_autotune.testing import ConstantTimer

        @pytest.fixture
        def autotune_timer():
            return ConstantTimer(1e-4)
        """
    )
    pytester.makepyfile(
        test_captured=textwrap.dedent(
            f"""
            import pytest
            from pytest_autotune import Interval, runtime, tunable

            CAPTURES = {str(captures)!r}

            @pytest.mark.parametrize("N", [key["N"] for key in runtime.captured_keys(CAPTURES, "scale")])
            @tunable(A=Interval(1, 3), kernel="scale", key=("N",), budget=2)
            def test_scale(autotune, N):
                x = runtime.load_capture(CAPTURES, "scale", {{"N": N}})["x"]
                assert x.shape == (N,) and x[-1] == N - 1
                autotune.measure(lambda: x * autotune.config["A"])
            """
        )
    )
    pytester.runpytest_subprocess(
        "--autotune", "--autotune-isolate=none", "-p", "no:cacheprovider"
    ).assert_outcomes(passed=2)
    (device,) = json.loads((pytester.path / "autotune.json").read_text())["devices"].values()
    assert sorted(entry["key"]["N"] for entry in device["tests"].values()) == [6, 12]
