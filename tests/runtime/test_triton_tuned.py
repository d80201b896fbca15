"""``runtime.tuned``: launches take the stored configuration of their key, chosen once per key.

A fake ``@triton.jit`` function records each launch (its grid, arguments and keywords), so these
tests need no GPU and no interpreter; ``test_a_real_triton_kernel_under_the_interpreter`` runs one
real kernel with ``TRITON_INTERPRET=1``.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_autotune.runtime import TunedConfigError, tuned

GPU = "NVIDIA H100 80GB HBM3 / sm_90"
CONFIGS = [
    {"BLOCK": 32, "num_warps": 2},
    {"BLOCK": 64, "num_warps": 4},
    {"BLOCK": 128, "num_warps": 8},
]


class FakeJit:
    """Stands in for a ``triton.JITFunction``: ``arg_names`` and ``fn[grid](*args, **kwargs)``."""

    def __init__(self, *names: str) -> None:
        self.arg_names = list(names)
        self.__name__ = "fake_kernel"
        self.launches: list[tuple[Any, tuple[Any, ...], dict[str, Any]]] = []

    def __getitem__(self, grid: Any) -> Any:
        def launch(*args: Any, **kwargs: Any) -> str:
            self.launches.append((grid, args, kwargs))
            return "launched"

        return launch


def store(tmp_path: Path, sizes: dict[int, dict[str, Any]]) -> Path:
    tests = {
        f"t.py::test_add[{n}]": {"config": config, "space_hash": "h", "kernel": "add", "key": {"N": n}}
        for n, config in sizes.items()
    }
    path = tmp_path / "autotune.json"
    path.write_text(json.dumps({"schema_version": 1, "devices": {GPU: {"info": {}, "tests": tests}}}))
    return path


def test_each_launch_takes_its_keys_configuration(tmp_path: Path) -> None:
    path = store(tmp_path, {1024: CONFIGS[0], 65536: CONFIGS[2]})
    fake = FakeJit("x_ptr", "y_ptr", "N", "BLOCK")
    kernel = tuned(kernel="add", key=["N"], store=path, configs=CONFIGS, device=GPU)(fake)
    assert kernel[(4,)]("x", "y", 1024) == "launched"
    kernel[(9,)]("x", "y", N=65536)
    kernel[(1,)]("x", "y", 60000)  # nearest: 65536
    assert fake.launches == [
        ((4,), ("x", "y", 1024), {"BLOCK": 32, "num_warps": 2}),
        ((9,), ("x", "y"), {"N": 65536, "BLOCK": 128, "num_warps": 8}),
        ((1,), ("x", "y", 60000), {"BLOCK": 128, "num_warps": 8}),
    ]
    assert set(kernel.chosen) == {(1024,), (65536,), (60000,)}


def test_the_store_is_asked_once_per_key(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = store(tmp_path, {1024: CONFIGS[1]})
    fake = FakeJit("x_ptr", "N")
    kernel = tuned(kernel="add", key="N", store=path, configs=CONFIGS, device="NVIDIA H200 / sm_90")(fake)
    with caplog.at_level(logging.INFO, logger="pytest_autotune.runtime"):
        for _ in range(20):
            kernel[(1,)]("x", 4096)
    assert len(caplog.records) == 1
    assert "same architecture" in caplog.records[0].getMessage()
    assert {tuple(sorted(kw.items())) for _, _, kw in fake.launches} == {(("BLOCK", 64), ("num_warps", 4))}


def test_no_entry_for_the_device_launches_the_first_config(tmp_path: Path) -> None:
    path = store(tmp_path, {1024: CONFIGS[1]})
    fake = FakeJit("x_ptr", "N")
    tuned(kernel="add", key=["N"], store=path, configs=CONFIGS, device="host:cpu")(fake)[(1,)]("x", 8)
    assert fake.launches[0][2] == CONFIGS[0]


def test_tune_on_miss_times_every_config_once_per_key(tmp_path: Path) -> None:
    path = store(tmp_path, {1024: CONFIGS[0]})
    fake = FakeJit("x_ptr", "N")
    timed: list[dict[str, Any]] = []

    def bench(fn: Any) -> float:
        fn()
        config = fake.launches[-1][2]
        timed.append(config)
        return abs(config["BLOCK"] - 64)  # 64 is fastest

    kernel = tuned(
        kernel="add", key=["N"], store=path, configs=CONFIGS, device=GPU, tune_on_miss=True, bench=bench
    )(fake)
    kernel[(1,)]("x", 1024)  # the exact entry: nothing timed
    assert timed == []
    kernel[(1,)]("x", 3000)
    kernel[(1,)]("x", 3000)
    assert timed == CONFIGS
    assert fake.launches[-1][2] == CONFIGS[1]


def test_a_stored_configuration_outside_the_declared_list_is_an_error(tmp_path: Path) -> None:
    path = store(tmp_path, {1024: {"BLOCK": 256, "num_warps": 4}})
    kernel = tuned(kernel="add", key=["N"], store=path, configs=CONFIGS, device=GPU)(FakeJit("x", "N"))
    with pytest.raises(TunedConfigError, match=r"entry 't.py::test_add\[1024\]'.*no longer fits"):
        kernel[(1,)]("x", 1024)


def test_a_key_that_is_no_argument_is_refused_at_decoration() -> None:
    with pytest.raises(TypeError, match="key 'M' is not an argument of 'fake_kernel'"):
        tuned(kernel="add", key=["M"], configs=CONFIGS)(FakeJit("x", "N"))


REAL = """
import json, sys
import torch
import triton
import triton.language as tl
from pytest_autotune import runtime

@runtime.tuned(kernel="add", key=["N"], store=sys.argv[1], configs=[{"BLOCK": 16}, {"BLOCK": 64}])
@triton.jit
def add(x_ptr, y_ptr, out_ptr, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < N
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)

x = torch.arange(100, dtype=torch.float32); y = torch.ones(100); out = torch.empty(100)
add[lambda meta: (triton.cdiv(100, meta["BLOCK"]),)](x, y, out, 100)
assert torch.equal(out, x + 1)
print(json.dumps(add.chosen[(100,)]))
"""


def test_a_real_triton_kernel_under_the_interpreter(tmp_path: Path) -> None:
    pytest.importorskip("triton")
    pytest.importorskip("torch")
    host = subprocess.run(
        [sys.executable, "-c", "from pytest_autotune.backends.host import host_key; print(host_key())"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    device = f"Triton interpreter / {host}"
    tests = {
        "t.py::test_add[96]": {"config": {"BLOCK": 64}, "space_hash": "h", "kernel": "add", "key": {"N": 96}}
    }
    path = tmp_path / "autotune.json"
    path.write_text(json.dumps({"schema_version": 1, "devices": {device: {"info": {}, "tests": tests}}}))
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    done = subprocess.run(
        [sys.executable, "-c", REAL, str(path)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout) == {"BLOCK": 64}  # the nearest stored key (96), not the first config
