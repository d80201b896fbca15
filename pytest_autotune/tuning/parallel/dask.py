"""One tuning run's trials on devices of several hosts, over Dask distributed.

:class:`DaskExecutor` is a :class:`~pytest_autotune.tuning.parallel.executor.TrialExecutor` whose slots are
the devices of a Dask cluster: each Dask worker advertises one device as a resource
(``dask worker tcp://scheduler:8786 --nthreads 1 --resources autotune-device=1``, started with
the device chosen in its environment, e.g. ``PYOPENCL_CTX=0:1``, and with
``DASK_DISTRIBUTED__WORKER__DAEMON=False``: a nanny's worker process is daemonic by default, and a
daemonic process may not start the trial worker with ``multiprocessing``) and keeps one persistent trial
worker alive for the run: the first trial a Dask worker gets calls the run's ``runner_factory``
there (an :class:`~pytest_autotune.tuning.parallel.executor.ObjectiveRunner` over an
:class:`~pytest_autotune.tuning.process.isolated.IsolatedObjective`, say), and later trials of the run on
that Dask worker reuse it, until :meth:`DaskExecutor.close` stops it. A crash or hang inside a
trial is the runner's business (its worker process turns it into a failed result and restarts),
exactly as on the local executor.

Dask's defaults are wrong for this job, and are changed:

* A task whose worker dies is retried on another worker, up to ``allowed-failures`` (3) times
  before it errs with ``KilledWorker``. A trial that takes its whole Dask worker down would then
  take down three more, and our isolation already labels a trial. The executor sets the
  scheduler's ``allowed_failures`` to 0 (it is a scheduler setting: a cluster used for tuning
  should be started with ``DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES=0`` too), and a trial
  whose Dask worker was lost comes back as ``lost(config, detail)``, a failed result, not an
  error.
* A worker that restarts recomputes the results it held for futures still referenced. Each
  future is released as soon as its result is read, so no finished trial is ever run again.
* Tasks with equal arguments share a key and run once (``pure=True``); trials are submitted with
  ``pure=False``.

Slots are not tied to a worker: ``slots`` is the number of workers that advertise the resource,
and the scheduler places each trial on a worker with its resource free, so a worker that the
nanny replaced simply serves the next trial. :meth:`DaskExecutor.restart` replaces the persistent
worker of the Dask worker that served the slot's last trial.

Why Dask and not Ray (Kernel Tuner's choice for its parallel runner): both pin one task per device
through custom resources, keep state on a worker, and by default run again a task whose process
died (so both need the setting above). Dask is pure Python on PyPI and installs next to the pinned
torch without touching it; its scheduler and workers are ordinary processes that a CI job or
``ssh`` starts with one command each. Ray is a large binary wheel whose head node is a set of
daemons; on this job it took longer to start and held more memory while idle. The measurements, and
the benchmark that made them (``python -m benchmarks cluster-costs``), are in the notes of issue 37.

Connecting is bounded (:func:`connect`): an address is checked when options are read
(:func:`check_address`); an unreachable scheduler costs one attempt of :data:`CONNECT_TIMEOUT`
seconds, not Dask's minute of retries; and before Dask's client speaks to a ``tcp://`` address, a
plain socket listens for the greeting a Dask scheduler sends at once (its handshake frame): a
service that stays silent, or answers with something that is not such a frame, is refused by name,
instead of Dask reading its bytes as a frame length and asking for exbibytes of memory.

Dask is an optional extra (``pip install "pytest-autotune[dask]"``): ``distributed`` is imported
only when an executor is made, never by a plain ``pytest`` run.
"""

from __future__ import annotations

import contextlib
import re
import socket
import struct
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any, Final, Generic, TypeVar

from pytest_autotune.tuning.parallel.executor import Finished, SlotRunner

__all__ = [
    "CONNECT_TIMEOUT",
    "RESOURCE",
    "ClusterUnreachable",
    "DaskExecutor",
    "check_address",
    "cluster_slots",
    "connect",
]

#: The resource each Dask worker advertises, one unit per device it holds.
RESOURCE: Final = "autotune-device"

R = TypeVar("R")

#: Seconds one attempt to reach the scheduler may take (the socket's connect, its greeting, Dask's).
CONNECT_TIMEOUT: Final = 10.0
#: The schemes an address may carry (none means ``tcp://``).
_SCHEMES: Final = ("tcp", "tls", "ucx", "inproc")
_HOST_PORT: Final = re.compile(
    r"(?:\[(?P<ip6>[0-9A-Fa-f:.]+)\]|(?P<host>[A-Za-z0-9_.-]+))(?::(?P<port>[0-9]{1,5}))?"
)
#: The largest first frame header a Dask greeting has (its total length, little-endian): a few dozen bytes.
_GREETING_MAX: Final = 1 << 16


class ClusterUnreachable(ConnectionError):
    """The scheduler at an address could not be reached, or what answered there is no Dask scheduler."""


def check_address(text: str) -> str:
    """``text`` (a scheduler address: ``tcp://host:port``, ``host:port``, ``[::1]:8786``, ...) stripped;
    raises ``ValueError`` saying what is wrong with it. Nothing is contacted."""
    address = text.strip()
    if not address:
        raise ValueError("an empty value names no scheduler; give its address, e.g. tcp://10.0.0.10:8786")
    scheme, sep, rest = address.rpartition("://")
    if sep and scheme not in _SCHEMES:
        raise ValueError(f"{text!r}: unknown scheme {scheme!r}://; expected one of {', '.join(_SCHEMES)}")
    if scheme == "inproc":
        return address
    match = _HOST_PORT.fullmatch(rest)
    if match is None:
        raise ValueError(
            f"{text!r} is not a scheduler address; expected tcp://HOST:PORT, e.g. tcp://10.0.0.10:8786"
        )
    port = match.group("port")
    if port is not None and not 0 < int(port) < 65536:
        raise ValueError(f"{text!r}: port {port} is outside 1..65535")
    return address


def _host_port(address: str) -> tuple[str, int] | None:
    """(host, port) of a plain TCP address (None for another scheme); Dask's default port 8786."""
    scheme, sep, rest = address.rpartition("://")
    if sep and scheme != "tcp":
        return None
    match = _HOST_PORT.fullmatch(rest)
    assert match is not None  # checked by check_address
    return match.group("ip6") or match.group("host"), int(match.group("port") or 8786)


def _read_greeting(address: str, host: str, port: int, timeout: float) -> None:
    """Connect a plain socket to ``host:port`` and read the first frame header a Dask scheduler sends
    on its own; raises :class:`ClusterUnreachable` when nothing, or no such header, comes in ``timeout``."""
    deadline = time.monotonic() + timeout
    try:
        sock = socket.create_connection((host, port), timeout=timeout)
    except OSError as exc:
        why = "no answer" if isinstance(exc, TimeoutError) else (exc.strerror or str(exc))
        raise ClusterUnreachable(
            f"cannot reach the Dask scheduler at {address}: {why} (tried once, for at most {timeout:g} s)"
        ) from None
    header, closed = b"", False
    with sock:
        try:
            while len(header) < 8:
                sock.settimeout(max(deadline - time.monotonic(), 0.001))
                chunk = sock.recv(8 - len(header))
                closed = not chunk
                if closed:
                    break
                header += chunk
        except OSError:  # the deadline passed (or the peer reset the connection)
            closed = time.monotonic() < deadline
    if len(header) < 8:
        said = "closed the connection" if closed else f"sent no greeting in {timeout:g} s"
        raise ClusterUnreachable(
            f"{address}: the service there {said}; it is not a Dask scheduler "
            "(a scheduler greets a client at once)"
        )
    (length,) = struct.unpack("<Q", header)
    if not 0 < length < _GREETING_MAX:
        raise ClusterUnreachable(
            f"{address}: the service there is not a Dask scheduler "
            f"(its first bytes {header!r} are no Dask frame)"
        )


def connect(address: str, timeout: float = CONNECT_TIMEOUT) -> Any:
    """A ``distributed.Client`` of the scheduler at ``address`` (checked by :func:`check_address`),
    after at most one bounded attempt (module docstring); raises :class:`ClusterUnreachable`."""
    endpoint = _host_port(address)
    if endpoint is not None:
        _read_greeting(address, *endpoint, timeout)
    from distributed import Client

    try:
        return Client(address, timeout=timeout)  # type: ignore[no-untyped-call]
    except Exception as exc:  # Dask's own failures: OSError, TimeoutError, a MemoryError on garbage
        raise ClusterUnreachable(
            f"cannot connect to the Dask scheduler at {address} ({type(exc).__name__}: {str(exc)[:200]})"
        ) from exc


# -- the Dask worker's side ------------------------------------------------------------------------
#: The persistent runners of this Dask worker process, by tuning run (job id).
_RUNNERS: dict[str, SlotRunner[Any]] = {}
_RUNNERS_LOCK = threading.Lock()


def _runner(job: str, factory: Callable[[], SlotRunner[Any]]) -> SlotRunner[Any]:
    with _RUNNERS_LOCK:
        runner = _RUNNERS.get(job)
        if runner is None:
            runner = _RUNNERS[job] = factory()
        return runner


def _run_trial(job: str, factory: Callable[[], SlotRunner[Any]], config: dict[str, Any]) -> tuple[str, Any]:
    """On a Dask worker: this run's persistent runner evaluates ``config``; returns (worker, result)."""
    from distributed import get_worker

    return get_worker().address, _runner(job, factory)(config)


def _end_job(job: str, *, restart: bool = False, kill: bool = False) -> bool:
    """On a Dask worker: stop run ``job``'s runner (``kill``: at once, a trial may be running), or
    with ``restart`` keep it: its next call starts a fresh worker."""
    with _RUNNERS_LOCK:
        runner = _RUNNERS.get(job) if restart else _RUNNERS.pop(job, None)
    if runner is None:
        return False
    if restart:
        runner.restart()
    else:
        runner.close(kill=kill)
    return True


def _no_retries(dask_scheduler: Any) -> int:
    """On the scheduler: a task whose worker dies errs at once (``KilledWorker``), never retried."""
    before = int(dask_scheduler.allowed_failures)
    dask_scheduler.allowed_failures = 0
    return before


# -- the tuning run's side -------------------------------------------------------------------------
def cluster_slots(client: Any, resource: str = RESOURCE) -> list[str]:
    """The addresses of the Dask workers that advertise ``resource`` (one device each)."""
    workers = client.scheduler_info(n_workers=-1)["workers"]
    return sorted(address for address, info in workers.items() if info.get("resources", {}).get(resource))


class DaskExecutor(Generic[R]):
    """A :class:`~pytest_autotune.tuning.parallel.executor.TrialExecutor` over a Dask cluster's devices.

    ``cluster`` is the scheduler's address (``tcp://host:8786``) or a ``distributed.Client``;
    ``runner_factory`` (picklable: it travels to the workers) makes one Dask worker's persistent
    runner; ``lost(config, detail)`` is the failed result of a trial whose Dask worker died;
    ``slots`` defaults to the number of workers advertising ``resource`` (at least one is needed;
    ``timeout`` seconds are given to them to appear).
    """

    def __init__(
        self,
        cluster: Any,
        runner_factory: Callable[[], SlotRunner[R]],
        lost: Callable[[dict[str, Any], str], R],
        *,
        resource: str = RESOURCE,
        slots: int | None = None,
        timeout: float = 60.0,
    ) -> None:
        from distributed import Client

        self._own_client = not isinstance(cluster, Client)
        self.client: Any = Client(cluster, timeout=timeout) if self._own_client else cluster  # type: ignore[no-untyped-call]
        try:
            self.allowed_failures_before = self.client.run_on_scheduler(_no_retries)
            if slots is None:
                self.client.wait_for_workers(1, timeout=timeout)
                slots = len(cluster_slots(self.client, resource))
            if slots < 1:
                raise ValueError(f"DaskExecutor: no Dask worker advertises the resource {resource!r}")
        except BaseException:
            if self._own_client:
                self.client.close()
            raise
        self._slots = slots
        self._factory = runner_factory
        self._lost = lost
        self._resource = resource
        self.job = f"autotune-{uuid.uuid4().hex}"
        self._running: dict[Any, tuple[int, int, dict[str, Any]]] = {}  # future -> slot, ticket, config
        self._served_by: dict[int, str] = {}  # slot -> the Dask worker of its last trial
        self._closed = False

    @property
    def slots(self) -> int:
        """How many trials can run at once: one per device of the cluster."""
        return self._slots

    def free(self) -> list[int]:
        """The slots with no trial running, lowest first."""
        busy = {slot for slot, _, _ in self._running.values()}
        return [slot for slot in range(self._slots) if slot not in busy]

    def submit(self, slot: int, ticket: int, config: Mapping[str, Any]) -> None:
        """Send ``config`` to a Dask worker with a free device; returns at once."""
        if self._closed:
            raise RuntimeError("DaskExecutor: submit after close")
        if slot not in self.free():
            raise ValueError(
                f"DaskExecutor: slot {slot} is busy or does not exist (slots 0..{self._slots - 1})"
            )
        config = dict(config)
        future = self.client.submit(
            _run_trial,
            self.job,
            self._factory,
            config,
            resources={self._resource: 1},
            pure=False,
            retries=0,
            key=f"{self.job}-trial-{ticket}",
        )
        self._running[future] = (slot, ticket, config)

    def wait(self, timeout: float | None = None) -> list[Finished[R]]:
        """The trials finished since the last call (blocks until one finished or ``timeout``);
        each future is released once its result is read."""
        from distributed import wait as dask_wait

        if not self._running:
            return []
        with contextlib.suppress(TimeoutError):
            dask_wait(list(self._running), timeout=timeout, return_when="FIRST_COMPLETED")  # type: ignore[no-untyped-call]
        finished: list[Finished[R]] = []
        for future in [f for f in self._running if f.done()]:
            slot, ticket, config = self._running.pop(future)
            finished.append(self._read(future, slot, ticket, config))
            future.release()  # a restarted worker must not run this trial again
        return finished

    def _read(self, future: Any, slot: int, ticket: int, config: dict[str, Any]) -> Finished[R]:
        from distributed import KilledWorker

        if future.status == "finished":
            worker, result = future.result()
            self._served_by[slot] = worker
            return Finished(slot, ticket, result=result)
        error = future.exception()
        if isinstance(error, KilledWorker):
            self._served_by.pop(slot, None)
            detail = f"the Dask worker running the trial was lost ({error}); the trial is not retried"
            return Finished(slot, ticket, result=self._lost(config, detail))
        return Finished(slot, ticket, error=error)

    def restart(self, slot: int) -> None:
        """Restart the persistent runner of the Dask worker that served ``slot``'s last trial."""
        if slot not in self.free():
            raise ValueError(f"DaskExecutor: slot {slot} is busy; restart it when its trial finished")
        worker = self._served_by.get(slot)
        if worker is not None:
            with contextlib.suppress(Exception):  # a worker that is gone has nothing to restart
                self.client.run(_end_job, self.job, restart=True, workers=[worker])

    def close(self) -> None:
        """Cancel the trials still running and stop this run's runner on every Dask worker."""
        if self._closed:
            return
        self._closed = True
        kill = bool(self._running)
        try:
            if self._running:
                self.client.cancel(list(self._running), force=True)
                self._running.clear()
            with contextlib.suppress(Exception):
                self.client.run(_end_job, self.job, kill=kill)
        finally:
            if self._own_client:
                self.client.close()

    def __enter__(self) -> DaskExecutor[R]:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
