"""A Dask cluster on 127.0.0.1 for tests: a scheduler and one-device workers, bounded and stopped."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from pytest_autotune.tuning.parallel.dask import RESOURCE


def _start(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with open(log, "wb") as out:
        return subprocess.Popen(
            ["timeout", "300", *args],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own group: stopped with what it started
        )


def _stop(process: subprocess.Popen[bytes]) -> None:
    for sig, wait in ((signal.SIGTERM, 15), (signal.SIGKILL, 5)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(wait)
            return
        except subprocess.TimeoutExpired:
            continue


@contextlib.contextmanager
def dask_cluster(folder: Path, env: dict[str, str], devices: tuple[str, ...] = ("a", "b")) -> Iterator[str]:
    """A scheduler and one worker per device name (``DEVICE`` in its environment, one unit of the
    executor's resource, one thread) on 127.0.0.1; yields the scheduler's address.

    Dask's retry default is left as it is (the executor must set it); the workers may start
    processes of their own (``DASK_DISTRIBUTED__WORKER__DAEMON=False``, as the executor's docs ask).
    """
    env = {k: v for k, v in env.items() if k != "DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES"}
    env["DASK_DISTRIBUTED__WORKER__DAEMON"] = "False"
    scheduler_file = folder / "scheduler.json"
    python_m = [sys.executable, "-m"]
    scheduler = [*python_m, "distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port", "0"]
    scheduler += ["--no-dashboard", "--scheduler-file", str(scheduler_file)]
    processes = [_start(scheduler, env, folder / "scheduler.log")]
    try:
        deadline = time.monotonic() + 60
        while not scheduler_file.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        address = str(json.loads(scheduler_file.read_text())["address"])
        for device in devices:
            worker = [*python_m, "distributed.cli.dask_worker", address, "--host", "127.0.0.1"]
            worker += ["--nthreads", "1", "--resources", f"{RESOURCE}=1", "--no-dashboard", "--name", device]
            processes.append(_start(worker, {**env, "DEVICE": device}, folder / f"worker-{device}.log"))
        yield address
    finally:
        for process in reversed(processes):
            _stop(process)
