"""A pytest plugin that ``benchmarks/gate/bench.py`` loads (``-p gate_recorder``) in its absolute-mode runs.

It never changes what the plugin measures or decides; it writes down what happened, one JSON line
per event, to the file ``GATE_RECORD`` names, so that the benchmark can judge the same runs by
other rules afterwards (today's rule, other multiples of the noise, a machine-speed probe):

* every measurement (one ``autotune.measure`` call) of a check, of a baseline worker and of the
  tuning process, with its median, quartiles and wall-clock start and end (trial workers' are
  skipped: they only search);
* in a check, after the plugin has judged the test: more measurements, after the same pauses,
  while one of the rules that ``GATE_TODAY`` lists per test would still be measuring: *today's
  rule* (the rule before noise-derived tolerances: the committed tolerance, against the baseline
  the tuning process measured) and the noise rule on probe-normalised times; so that their
  verdicts on these very runs are known; ``GATE_RECORD_ALL=1`` measures all six;
* after tuning, in the tuning process: the baseline today's rule used, measured as it was (the
  winner's call and four more in this process after growing pauses);
* in a check and in a baseline worker, before the test measures: a machine-speed probe on the
  test's device (an OpenCL copy and a multiply-add kernel, or numpy's copy and ``exp`` on the host).

Measurements are recorded on the clock ``GATE_CLOCK`` names (``wall`` or ``cpu``: the process's
CPU time, :mod:`pytest_autotune.timing.clock`), the one the plugin judges in that run, so that the
benchmark's other rules judge the same values; the other clock's median is recorded beside them.
"""

from __future__ import annotations

import json
import os
import statistics
import time
from dataclasses import dataclass
from typing import Any

import pytest

LOG = os.environ.get("GATE_RECORD", "")
TODAY = os.environ.get("GATE_TODAY", "")
RECORD_ALL = os.environ.get("GATE_RECORD_ALL") == "1"
MEASUREMENTS = 6  # what a check takes at most (CONFIRMATIONS + 1)
CLOCK = os.environ.get("GATE_CLOCK", "wall")

_state: dict[str, Any] = {"role": "?", "phase": "", "measured": {}, "probe": {}}

PROBE_SOURCE = """
__kernel void probe_copy(__global const float4* a, __global float4* b) {
    b[get_global_id(0)] = a[get_global_id(0)];
}
__kernel void probe_mad(__global float* out, const float a) {
    float v = (float)get_global_id(0), w = v * 0.5f;
    for (int r = 0; r < 256; ++r) { v = mad(v, a, 0.5f); w = mad(w, a, 0.25f); }
    out[get_global_id(0)] = v + w;
}
"""
PROBE_FLOATS = 1 << 23
_probes: dict[int, Any] = {}


def _write(record: dict[str, Any]) -> None:
    if LOG:
        record = {"pid": os.getpid(), "role": _state["role"], "phase": _state["phase"], **record}
        with open(LOG, "a", encoding="utf-8") as out:
            out.write(json.dumps(record) + "\n")


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    """Find this process's role and start recording measurements."""
    from pytest_autotune.fixture import Autotune
    from pytest_autotune.plugin import SESSION

    session = config.stash.get(SESSION, None)
    if session is None:
        return
    worker = session.worker_spec
    if worker is not None:
        _state["role"] = worker.role  # trial, baseline or compare
    else:
        _state["role"] = "tune" if session.settings.tuning else "check"
    original = Autotune.measure

    def measure(self: Any, fn: Any, **kwargs: Any) -> Any:
        started = time.time()
        result = original(self, fn, **kwargs)
        if _state["role"] != "trial" and self.timing is not None:
            stats = self.timing.on(CLOCK) or self.timing  # the clock the plugin judges on
            other = self.timing.on("wall" if CLOCK == "cpu" else "cpu")
            _state["measured"].setdefault(self.nodeid, []).append(stats)
            _write(
                {"kind": "measure", "nodeid": self.nodeid, "median": stats.median, "q1": stats.q1}
                | {"q3": stats.q3, "t0": started, "t1": time.time(), "clock": CLOCK}
                | {"other_median": None if other is None else other.median}
            )
        return result

    Autotune.measure = measure  # type: ignore[method-assign]


def _median_time(run: Any, repeat: int = 5) -> float:
    run()
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        seconds = run()
        times.append(seconds if seconds is not None else time.perf_counter() - started)
    return statistics.median(times)


def _opencl_probe(queue: Any) -> dict[str, float]:
    import numpy as np
    import pyopencl as cl

    ctx = queue.context
    if id(ctx) not in _probes:
        program = cl.Program(ctx, PROBE_SOURCE).build()
        flags = cl.mem_flags
        a = cl.Buffer(ctx, flags.READ_WRITE, PROBE_FLOATS * 4)
        b = cl.Buffer(ctx, flags.READ_WRITE, PROBE_FLOATS * 4)
        cl.enqueue_fill_buffer(queue, a, np.float32(1), 0, PROBE_FLOATS * 4)
        copy_kernel, mad_kernel = cl.Kernel(program, "probe_copy"), cl.Kernel(program, "probe_mad")
        copy_kernel.set_args(a, b)
        mad_kernel.set_args(b, np.float32(0.5))
        _probes[id(ctx)] = (copy_kernel, mad_kernel, a, b)  # the buffers live as long as the kernels
    copy_kernel, mad_kernel, _, _ = _probes[id(ctx)]

    def seconds(event: Any) -> float:
        event.wait()
        return (event.profile.end - event.profile.start) * 1e-9

    enqueue = cl.enqueue_nd_range_kernel
    copy = _median_time(lambda: seconds(enqueue(queue, copy_kernel, (PROBE_FLOATS // 4,), None)))
    mad = _median_time(lambda: seconds(enqueue(queue, mad_kernel, (1 << 14,), None)))
    return {"mem": copy, "compute": mad}


def _host_probe() -> dict[str, float]:
    import numpy as np

    src = np.ones(PROBE_FLOATS, dtype=np.float32)
    dst = np.empty_like(src)
    small = np.linspace(0, 1, 1 << 14)
    small_out = np.empty_like(small)

    def compute() -> None:
        for _ in range(40):
            np.exp(small, out=small_out)

    return {"mem": _median_time(lambda: np.copyto(dst, src)), "compute": _median_time(compute)}


def _probe(item: pytest.Function) -> None:
    started = time.time()
    queue = item.funcargs.get("cl_queue")
    values = _opencl_probe(queue) if queue is not None else _host_probe()
    _state["probe"][item.nodeid] = values
    _write({"kind": "probe", "nodeid": item.nodeid, **values, "t0": started, "t1": time.time()})


def _complete_for_today(item: pytest.Function, plan: Any) -> None:
    """Measure on while one of the other rules would (see the module docstring)."""
    from pytest_autotune.entry import Baseline
    from pytest_autotune.plugin.modes.baseline import measure_again
    from pytest_autotune.timing.measure import least_disturbed
    from pytest_autotune.timing.regression import Rule

    measured = _state["measured"].get(item.nodeid, [])
    if not measured or not TODAY:
        return
    with open(TODAY, encoding="utf-8") as source:
        rules = json.load(source).get(item.nodeid, [])
    policy, probe = plan.policy, _state["probe"].get(item.nodeid, {})
    judged = []
    for spec in rules:  # today's rule, and the noise rule on probe-normalised times
        rule = Rule(
            spec["tolerance"], policy.noise_k, policy.effective_floor, noise_scale=spec["noise_scale"]
        )
        scale = 1.0
        if spec["probe"]:
            kind, reference = spec["probe"]
            if not probe.get(kind):
                continue
            scale = reference / probe[kind]
        judged.append((rule, Baseline.from_json(spec["baseline"], where="GATE_TODAY"), scale))

    def settled(rule: Any, baseline: Any, scale: float) -> bool:
        scaled = [_Scaled(m.median * scale, m.q1 * scale, m.q3 * scale) for m in measured]
        return bool(rule.judge(least_disturbed(scaled), baseline).settled)  # type: ignore[arg-type]

    autotune = item.funcargs["autotune"]
    _state["phase"] = "extra"
    while len(measured) < MEASUREMENTS:
        if not RECORD_ALL and all(settled(*each) for each in judged):
            break
        measure_again(item, autotune, dict(autotune.config), len(measured))


@dataclass(frozen=True)
class _Scaled:
    median: float
    q1: float
    q3: float


def _today_baseline(item: pytest.Function) -> None:
    """Today's baseline, measured as it was: a call and four more after pauses, in this process."""
    from pytest_autotune.plugin.modes.baseline import measure_again
    from pytest_autotune.plugin.workers.runner import run_final

    autotune = item.funcargs["autotune"]
    config = dict(autotune.config)
    _state["phase"] = "today-baseline"
    run_final(item, autotune, config, repeat=10, benchmark=False)
    for attempt in range(1, 5):
        measure_again(item, autotune, config, attempt)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> Any:
    """Note when the test's setup starts (a check's time counts from here)."""
    if _state["role"] == "check":
        _write({"kind": "setup", "nodeid": item.nodeid, "t0": time.time()})
    return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> Any:
    """Probe before the plugin runs the test; record today's measurements after it."""
    from pytest_autotune.plugin import PLAN

    plan = pyfuncitem.stash.get(PLAN, None)
    role = _state["role"]
    if plan is not None and role in ("check", "baseline"):
        _probe(pyfuncitem)
    _state["phase"] = ""
    try:
        return (yield)
    finally:
        if plan is not None and role in ("check", "tune"):
            policy = plan.policy
            explicit = "tolerance" in policy.explicit
            record = {"kind": "judged", "nodeid": pyfuncitem.nodeid, "t1": time.time()}
            _write(record | {"tolerance": policy.tolerance, "explicit": explicit})
            try:
                if role == "check":
                    _complete_for_today(pyfuncitem, plan)
                else:
                    _today_baseline(pyfuncitem)
            except Exception as exc:  # the body failed again: nothing more to record
                _write({"kind": "error", "nodeid": pyfuncitem.nodeid, "error": repr(exc)})
            _state["phase"] = ""
