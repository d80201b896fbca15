"""What a two-device cluster of Dask distributed or Ray costs on this machine (issue 37's choice).

    python -m benchmarks cluster-costs dask                    # Dask comes with the test extra
    /path/to/ray-venv/bin/python -m benchmarks cluster-costs ray    # Ray is no dependency

Run it with an interpreter whose environment holds the engine and psutil (Ray's own virtual
environment for Ray, from the repository's root). It starts a cluster of two one-device workers
on 127.0.0.1 (Dask: a scheduler and two ``dask worker`` processes, ``--resources
autotune-device=1`` each; Ray: a local head with ``autotune-device: 2``), and prints one JSON line:

* ``start_s``: from the first process started until the client sees both devices;
* ``first_task_s``: one trivial task on a device, round trip;
* ``idle_rss_mb`` and ``processes``: resident memory of every process the cluster runs (not the
  client), summed after 10 s idle;
* ``killer_task`` and ``killer_runs``: what a task that kills the process running it comes back as,
  and how often it ran with the engine's defaults (once would mean no retry).

Every process it starts runs in its own session and is stopped at the end.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil

NAME = "cluster-costs"  # python -m benchmarks cluster-costs dask|ray
QUESTION = "What does a two-device Dask or Ray cluster cost to start and keep, and how does it treat a crash?"

TMP = Path(tempfile.mkdtemp(prefix="cluster-costs-"))
CALLS = TMP / "calls.log"


def tree_rss(pids: list[int]) -> tuple[int, int]:
    """Resident bytes and number of the processes ``pids`` and all their descendants."""
    seen: set[int] = set()
    total = 0
    for pid in pids:
        try:
            root = psutil.Process(pid)
            processes = [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            continue
        for process in processes:
            if process.pid not in seen:
                seen.add(process.pid)
                with contextlib.suppress(psutil.NoSuchProcess):
                    total += process.memory_info().rss
    return total, len(seen)


def killer(x: int) -> int:
    """A task that logs each run and kills the process running it when ``x`` is 1."""
    with open(CALLS, "a") as out:
        out.write(f"{os.getpid()} {x}\n")
    if x == 1:
        os.kill(os.getpid(), signal.SIGKILL)
    return x


def identity(x: int) -> int:
    """A trivial task."""
    return x


def _calls() -> int:
    return len(CALLS.read_text().splitlines()) if CALLS.exists() else 0


def dask_run() -> dict[str, Any]:
    """The Dask measurements."""
    from distributed import Client

    env = {**os.environ, "DASK_DISTRIBUTED__WORKER__DAEMON": "False"}
    scheduler_file = TMP / "scheduler.json"
    quiet: dict[str, Any] = {"env": env, "stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    start = time.perf_counter()
    scheduler = [sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port", "0"]
    scheduler += ["--no-dashboard", "--scheduler-file", str(scheduler_file)]
    processes = [subprocess.Popen(scheduler, start_new_session=True, **quiet)]
    try:
        while not scheduler_file.exists():
            time.sleep(0.05)
        address = json.loads(scheduler_file.read_text())["address"]
        for name in "ab":
            worker = [sys.executable, "-m", "distributed.cli.dask_worker", address, "--host", "127.0.0.1"]
            worker += [
                "--nthreads",
                "1",
                "--resources",
                "autotune-device=1",
                "--no-dashboard",
                "--name",
                name,
            ]
            processes.append(subprocess.Popen(worker, start_new_session=True, **quiet))
        client = Client(address)
        client.wait_for_workers(2)
        up = time.perf_counter() - start
        start = time.perf_counter()
        client.submit(identity, 1, resources={"autotune-device": 1}, pure=False).result()
        first = time.perf_counter() - start
        time.sleep(10)
        rss, count = tree_rss([process.pid for process in processes])
        try:
            client.submit(killer, 1, resources={"autotune-device": 1}, pure=False).result(timeout=120)
            fault = "returned"
        except Exception as exc:
            fault = type(exc).__name__
        client.close()
    finally:
        for process in processes:
            try:
                os.killpg(process.pid, signal.SIGTERM)
                process.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    return {"start_s": up, "first_task_s": first, "idle_rss_mb": rss / 2**20, "processes": count,
            "killer_task": fault, "killer_runs": _calls()}  # fmt: skip


def ray_run() -> dict[str, Any]:
    """The Ray measurements."""
    import ray

    start = time.perf_counter()
    ray.init(
        num_cpus=2, resources={"autotune-device": 2}, include_dashboard=False, _temp_dir=str(TMP / "ray")
    )
    up = time.perf_counter() - start
    one = ray.remote(resources={"autotune-device": 1})(identity)
    kill = ray.remote(resources={"autotune-device": 1})(killer)
    start = time.perf_counter()
    ray.get(one.remote(1))
    first = time.perf_counter() - start
    time.sleep(10)
    rss, count = tree_rss([child.pid for child in psutil.Process().children()])  # not the client
    try:
        ray.get(kill.remote(1), timeout=120)
        fault = "returned"
    except Exception as exc:
        fault = type(exc).__name__
    ray.shutdown()
    return {"start_s": up, "first_task_s": first, "idle_rss_mb": rss / 2**20, "processes": count,
            "killer_task": fault, "killer_runs": _calls()}  # fmt: skip


def main() -> None:
    """Measure the engine named on the command line and print one JSON line."""
    engine = sys.argv[1] if len(sys.argv) > 1 else "dask"
    result = dask_run() if engine == "dask" else ray_run()
    rounded = {key: round(value, 2) if isinstance(value, float) else value for key, value in result.items()}
    print(json.dumps({"engine": engine, "load": round(os.getloadavg()[0], 1), **rounded}))


if __name__ == "__main__":
    main()
