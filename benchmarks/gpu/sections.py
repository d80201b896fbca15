"""The sections of ``scripts/gpu-check``: device tests, the Triton matmul, the CUDA examples (the
gate is :mod:`benchmarks.gpu.gate`).

Each section is a function ``(report, seconds) -> None`` that adds its rows to the
:class:`~benchmarks.gpu.table.Report` as it measures them and stops on its own within ``seconds``
(its time guard: tuning runs get a :class:`~pytest_autotune.Duration` abort, loops check the
clock). ``dry_run`` runs the same code where no GPU is: Triton in its interpreter on tiny
problems with wall-clock times, CUDA builds for ``sm_90`` without launching (a made-up time), and
one compare of the gate (whose examples then skip); its numbers mean nothing, its purpose is to
prove the check runs end to end.
"""

from __future__ import annotations

import importlib.util
import math
import os
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

from benchmarks.gpu.harness import BodyObjective, where_caught
from benchmarks.gpu.table import CudaRow, DeviceTestsRow, Report, TritonRow

__all__ = [
    "EXAMPLES",
    "ROOT",
    "cuda_section",
    "device_tests_section",
    "load_example",
    "pytest_env",
    "triton_section",
]

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "example_kernels"
_SUMMARY = re.compile(r"(\d+) (passed|failed|skipped|error|errors)")


def load_example(path: Path) -> ModuleType:
    """Import an example test module by path (Triton needs its functions in a real file)."""
    spec = importlib.util.spec_from_file_location(f"gpu_check_{path.parent.name}_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def pytest_env() -> dict[str, str]:
    """The environment of a pytest subprocess: this checkout importable, the plugin loaded."""
    from importlib.metadata import entry_points

    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_AUTOTUNE", "PYTEST_ADDOPTS"))}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH", "")]))
    if not any(entry.value == "pytest_autotune.plugin" for entry in entry_points(group="pytest11")):
        env["PYTEST_PLUGINS"] = "pytest_autotune.plugin"  # not installed: load it from the checkout
    return env


def _counts(output: str) -> dict[str, int]:
    found: dict[str, int] = {}
    for number, word in _SUMMARY.findall(output.strip().splitlines()[-1] if output.strip() else ""):
        found["error" if word.startswith("error") else word] = int(number)
    return found


def device_tests_section(report: Report, seconds: float, *, dry_run: bool = False) -> None:
    """The device-marked tests, then the CUDA and Triton examples once each (plain pytest: the
    declared defaults, correctness asserted)."""
    runs = [
        ("tests marked gpu", ["tests/gpu", "-m", "gpu"]),
        ("examples", ["example_kernels/cuda", "example_kernels/triton"]),
    ]
    deadline = time.monotonic() + seconds
    for what, args in runs:
        left = deadline - time.monotonic()
        if left < 5:
            raise TimeoutError(f"no time left for {what}")
        started = time.monotonic()
        try:
            done = subprocess.run(
                [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", *args],
                cwd=ROOT,
                env=pytest_env(),
                capture_output=True,
                text=True,
                timeout=left,
                check=False,
            )
            output = done.stdout + done.stderr
        except subprocess.TimeoutExpired as exc:
            raise TimeoutError(f"{what} ran past the section's time") from exc
        counts = _counts(output)
        report.device_tests.append(
            DeviceTestsRow(
                what,
                counts.get("passed", 0),
                counts.get("failed", 0) + counts.get("error", 0),
                counts.get("skipped", 0),
                time.monotonic() - started,
            )
        )
        if counts.get("failed") or counts.get("error"):
            report.notes.append(
                f"{what}: failures; the end of pytest's output:\n\n```\n{output[-2500:]}\n```"
            )


# -- Triton ---------------------------------------------------------------------------------------------
def _running_best_within(values: list[float | None], target: float, slack: float = 0.02) -> int | None:
    """The evaluations after which the best value was within ``slack`` of ``target`` (None: never)."""
    best = math.inf
    for count, value in enumerate(values, start=1):
        if value is not None:
            best = min(best, value)
        if best <= target * (1 + slack):
            return count
    return None


def _describe(config: Mapping[str, Any]) -> str:
    short = {
        "BLOCK_SIZE_M": "M",
        "BLOCK_SIZE_N": "N",
        "BLOCK_SIZE_K": "K",
        "GROUP_SIZE_M": "G",
        "num_warps": "w",
        "num_stages": "s",
    }
    return " ".join(f"{short.get(k, k)}{v}" for k, v in config.items())


def triton_section(report: Report, seconds: float, *, dry_run: bool = False, evaluations: int = 24) -> None:
    """``triton.autotune`` over the tutorial's list against ``bo`` over the larger space (and over
    the list with half its evaluations), all timed with the same CUDA events and L2 flush."""
    from pytest_autotune import Duration, Evaluations, Tuner, build_space

    deadline = time.monotonic() + seconds
    module = load_example(EXAMPLES / "triton" / "test_matmul.py")
    report.matmul_size = module.SIZE
    import torch

    device = torch.device("cpu" if dry_run else "cuda")
    timer = _wall_timer() if dry_run else _event_timer(device)
    listed_fn, larger_fn = module.test_matmul_listed, module.test_matmul
    key = _torch_key(device)

    def objective(test_function: Callable[..., Any]) -> BodyObjective:
        repeat = 1 if dry_run else 10
        return BodyObjective(
            test_function,
            backend="torch",
            device_key=key,
            fixtures={"torch_device": device},
            timer=timer,
            repeat=repeat,
            warmup=0 if dry_run else 2,
        )

    listed = objective(listed_fn)
    if dry_run:
        started = time.monotonic()  # no triton.autotune in the interpreter (its do_bench needs CUDA)
        times = [listed(config).value for config in module.TUTORIAL_CONFIGS]
        list_wall = time.monotonic() - started
        valid = [(t, c) for t, c in zip(times, module.TUTORIAL_CONFIGS, strict=True) if t is not None]
        list_best, list_config = min(valid, key=lambda pair: pair[0])
        method = "every listed config, our timer (dry run: no triton.autotune)"
    else:
        list_best, list_config, list_wall = _triton_autotune(module, device, listed)
        method = "triton.autotune over the tutorial's list"
    report.triton.append(
        TritonRow(
            method, list_best * 1e3, len(module.TUTORIAL_CONFIGS), None, list_wall, _describe(list_config)
        )
    )
    half = max(1, len(module.TUTORIAL_CONFIGS) // 2)
    for name, test_function, budget in (
        (f"bo over the listed configs ({half} evaluations)", listed_fn, half),
        (f"bo over the larger space ({larger_fn.__name__}, contains the list)", larger_fn, evaluations),
    ):
        left = deadline - time.monotonic()
        if left < 10:
            raise TimeoutError(f"no time left for {name}")
        run = objective(test_function)
        spec = run.spec
        started = time.monotonic()
        space = build_space(spec.params, spec.constraints)
        result = Tuner(space, "bo", abort=Evaluations(budget) | Duration(left - 5), seed=0).run(run)
        values = [record.outcome.value for record in result.history]
        report.details.setdefault("triton", []).append(
            {
                "method": name,
                "trials": [
                    {
                        "config": dict(r.config),
                        "ms": None if r.outcome.value is None else r.outcome.value * 1e3,
                        "label": r.outcome.label,
                    }
                    for r in result.history
                ],
            }
        )
        best = result.best_value if result.best_value is not None else math.nan
        report.triton.append(
            TritonRow(
                f"pytest-autotune {name}",
                best * 1e3,
                result.evaluations,
                _running_best_within(values, list_best),
                time.monotonic() - started,
                _describe(result.best_config or {}),
            )
        )


def _triton_autotune(
    module: ModuleType, device: Any, listed: BodyObjective
) -> tuple[float, dict[str, Any], float]:
    """``triton.autotune`` over the list: its choice re-measured with our timer, and its wall time."""
    import torch
    import triton

    configs = [
        triton.Config(
            {k: v for k, v in c.items() if k.isupper()}, num_warps=c["num_warps"], num_stages=c["num_stages"]
        )
        for c in module.TUTORIAL_CONFIGS
    ]
    tuned = triton.autotune(configs=configs, key=["M", "N", "K"])(module.matmul_kernel)
    a, b, _ = module.problem(device)
    c = torch.empty_like(a)
    size = module.SIZE
    strides = (a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1))

    def grid(meta: dict[str, Any]) -> tuple[int]:
        return (triton.cdiv(size, meta["BLOCK_SIZE_M"]) * triton.cdiv(size, meta["BLOCK_SIZE_N"]),)

    torch.cuda.synchronize()
    started = time.monotonic()
    tuned[grid](a, b, c, size, size, size, *strides)
    torch.cuda.synchronize()
    wall = time.monotonic() - started
    chosen = tuned.best_config
    config = {**chosen.kwargs, "num_warps": chosen.num_warps, "num_stages": chosen.num_stages}
    config = {k: config[k] for k in module.TUTORIAL_CONFIGS[0]}
    outcome = listed(config)
    if outcome.value is None:
        raise RuntimeError(f"triton.autotune's choice {config} failed with our timer: {outcome.detail}")
    return outcome.value, config, wall


def _event_timer(device: Any) -> Any:
    from pytest_autotune.backends.event_timer import EventTimer
    from pytest_autotune.backends.torch.events import TorchEvents

    return EventTimer(TorchEvents(device))


def _wall_timer() -> Any:
    from pytest_autotune.timing.measure import DefaultTimer

    return DefaultTimer()


def _torch_key(device: Any) -> str:
    from pytest_autotune.backends import get_backend

    return get_backend("torch").key(device)


# -- CUDA -----------------------------------------------------------------------------------------------
def cuda_section(report: Report, seconds: float, *, dry_run: bool = False, evaluations: int = 40) -> None:
    """Tune the CUDA gemm and reduction with ``bo`` within the device's limits; the default and the
    best are re-measured; failures are counted by where they were caught."""
    from pytest_autotune import Duration, Evaluations, Tuner
    from pytest_autotune.backends import get_backend
    from pytest_autotune.backends.launch_limits import prune_space

    deadline = time.monotonic() + seconds
    device = None if dry_run else _cuda_device()
    for name in ("gemm", "reduction"):
        left = deadline - time.monotonic()
        if left < 15:
            raise TimeoutError(f"no time left for {name}")
        module = load_example(EXAMPLES / "cuda" / f"test_{name}.py")
        test_function = getattr(module, f"test_{name}")
        if device is None:
            run: Any = _BuildOnly(test_function, (EXAMPLES / "cuda" / f"{name}.cu").read_text())
            limits = _H100_LIMITS
        else:
            run = BodyObjective(
                test_function,
                backend="cuda",
                device_key=device.key,
                fixtures={"cuda_device": device},
                timer=_cuda_timer(device),
            )
            limits = get_backend("cuda").limits(device.info)
        spec = run.spec
        assert spec.geometry is not None
        limited, pruned = prune_space(spec.params, spec.constraints, spec.space, spec.geometry, limits)
        started = time.monotonic()
        result = Tuner(
            limited, "bo", abort=Evaluations(evaluations) | Duration(max(left - 20, 5)), seed=0
        ).run(run)
        caught = [where_caught(trial.outcome) for trial in run.trials]
        default = spec.space.default_config()
        best = result.best_config or default
        default_times, best_times = [], []
        for _ in range(3):  # interleaved re-measurements of the two
            default_times.append(run(default).value)
            best_times.append(run(best).value)
        report.cuda.append(
            CudaRow(
                name,
                _median_ms(default_times),
                _median_ms(best_times),
                result.evaluations,
                0 if pruned is None else pruned.count,
                caught.count("build"),
                caught.count("before launch"),
                caught.count("launch"),
                time.monotonic() - started,
            )
        )


def _h100_limits() -> Any:
    from pytest_autotune.backends.base import DeviceLimits

    return DeviceLimits(1024, (1024, 1024, 64), 48 << 10, 227 << 10)


_H100_LIMITS = _h100_limits()


class _BuildOnly:
    """A dry run's objective: builds the configuration for sm_90 (no GPU); the time is made up
    from the build's registers, so that the loop, the limits and the failure counts run."""

    def __init__(self, test_function: Callable[..., Any], source: str) -> None:
        from pytest_autotune.api import get_spec

        spec = get_spec(test_function)
        assert spec is not None
        self.spec = spec
        self.source = source
        self.trials: list[Any] = []

    def __call__(self, config: Mapping[str, Any]) -> Any:
        from benchmarks.gpu.harness import Trial
        from pytest_autotune.backends.cuda.errors import CudaBuildError, classify_cuda_error
        from pytest_autotune.backends.cuda.nvrtc import compile_cuda
        from pytest_autotune.outcome import Outcome

        started = time.perf_counter()
        try:
            compiled = compile_cuda(self.source, arch="sm_90", defines=config)
        except CudaBuildError as exc:
            label, detail = classify_cuda_error(exc) or ("compile", str(exc))
            outcome = Outcome.failed(label, detail)
        else:
            registers = sum(used.registers for used in compiled.resources.values())
            outcome = Outcome.ok(1e-3 * (1 + registers / 64))
        self.trials.append(Trial(dict(config), outcome, time.perf_counter() - started))
        return outcome


def _median_ms(values: list[float | None]) -> float:
    kept = [v for v in values if v is not None]
    return statistics.median(kept) * 1e3 if kept else math.nan


def _cuda_device() -> Any:
    from pytest_autotune.backends.cuda.device import CudaDevice, select_device

    return CudaDevice(select_device(None))


def _cuda_timer(device: Any) -> Any:
    from pytest_autotune.backends.cuda.timing import DriverEvents
    from pytest_autotune.backends.event_timer import EventTimer

    return EventTimer(DriverEvents(device))
