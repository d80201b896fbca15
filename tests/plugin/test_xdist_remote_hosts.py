"""A suite over two hosts with pytest-xdist's remote execution, as ``docs/scale-out.md`` shows it.

Two execnet socket servers on 127.0.0.1 stand in for two hosts: each serves one connection and
exits, started in the project's folder (the same checkout on every host) with its own environment
(the host's devices: PoCL's CPU twice on host A, once on host B). The controller reaches each host
through a proxy gateway (``--px socket=...//id=A``) and starts the workers there
(``--tx 2*popen//via=A``): nothing is rsynced. Each worker takes its device from its host, the
workers are counted per host (three workers over three devices share none: the old count over the
whole run said two of them shared), and the controller writes every result into one autotune.json.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("pyopencl")
pytestmark = pytest.mark.opencl

SERVE_ONCE = """
import sys
from execnet.gateway_base import get_execmodel
from execnet.script import socketserver as server

server.execmodel = get_execmodel("thread")
sock = server.bind_and_listen(("127.0.0.1", 0), server.execmodel)  # loopback only, a free port
print(sock.getsockname()[1], flush=True)
server.startserver(sock, loop=False)  # one connection (the controller's proxy), then exit
"""

TESTS = """
import os

import pyopencl as cl
from pytest_autotune import Interval, tunable


def log(autotune, cl_queue, name):
    index = cl.get_platforms()[0].get_devices().index(cl_queue.device)
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    with open(os.environ["TRIAL_LOG"], "a") as out:
        out.write(f"{os.environ['HOST']} {worker} {name} {index} {autotune.tuning}\\n")


@tunable(A=Interval(1, 3, default=1), strategy="exhaustive")
def test_a(autotune, cl_queue):
    log(autotune, cl_queue, "a")
    autotune.measure(lambda: None)


@tunable(A=Interval(1, 3, default=1), strategy="exhaustive")
def test_b(autotune, cl_queue):
    log(autotune, cl_queue, "b")
    autotune.measure(lambda: None)


@tunable(A=Interval(1, 3, default=1), strategy="exhaustive")
def test_c(autotune, cl_queue):
    log(autotune, cl_queue, "c")
    autotune.measure(lambda: None)
"""

HOSTS = {"A": "pthread pthread", "B": "pthread"}


@pytest.fixture
def socket_servers(project: pytest.Pytester) -> Iterator[dict[str, int]]:
    """Two self-stopping socket servers on 127.0.0.1, one per stand-in host: name -> port."""
    script = project.path / "serve_once.py"
    script.write_text(SERVE_ONCE)
    servers: dict[str, subprocess.Popen[str]] = {}
    try:
        for host, devices in HOSTS.items():
            env = {
                **os.environ,
                "HOST": host,
                "POCL_DEVICES": devices,
                "TRIAL_LOG": str(project.path / "trials.log"),
            }
            env["TMPDIR"] = str(project.mkdir(f"tmp-{host}"))  # a host has its own temporary folder
            servers[host] = subprocess.Popen(
                ["timeout", "300", sys.executable, str(script)],
                cwd=project.path,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
            )
        ports = {}
        for host, server in servers.items():
            assert server.stdout is not None
            ports[host] = int(server.stdout.readline())
        yield ports
    finally:
        for server in servers.values():
            server.kill()
            server.wait(10)


def test_a_suite_over_two_hosts_writes_one_store(
    project: pytest.Pytester, socket_servers: dict[str, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hosts' environments (device lists, the log) are theirs, not the controller's."""
    log = Path(project.path) / "trials.log"  # the hosts' environment names it, not the controller's
    monkeypatch.delenv("POCL_DEVICES", raising=False)
    project.makepyfile(test_k=TESTS)
    proxies = [f"--px=socket=127.0.0.1:{port}//id={host}" for host, port in socket_servers.items()]
    result = project.runpytest_subprocess(
        *proxies,
        "--tx=2*popen//via=A",
        "--tx=popen//via=B",
        "--dist=load",
        "-p",
        "no:hypothesispytest",
        "-p",
        "no:benchmark",
        "--autotune",
    )
    result.assert_outcomes(passed=3)  # was: errors, "2 xdist workers share it" on host A
    tuners: dict[str, set[tuple[str, str, str]]] = defaultdict(set)
    hosts: dict[str, set[tuple[str, str]]] = defaultdict(set)
    for line in log.read_text().splitlines():
        host, worker, test, device, tuning = line.split()
        hosts[host].add((worker, device))
        if tuning == "True":
            tuners[test].add((host, worker, device))
    assert hosts == {"A": {("gw0", "0"), ("gw1", "1")}, "B": {("gw2", "0")}}  # a device each
    assert sorted(tuners) == ["a", "b", "c"]
    assert all(len(found) == 1 for found in tuners.values())  # each test tuned once
    store = json.loads((project.path / "autotune.json").read_text())
    (device,) = store["devices"].values()  # one device type over both hosts: one key
    assert sorted(device["tests"]) == [f"test_k.py::test_{name}" for name in "abc"]
    result.stdout.fnmatch_lines(["*autotune.json: 3 entries written"])
