"""Which xdist workers share a host: worked out by the controller from the ``--tx`` specs.

pytest-xdist numbers its workers over the whole run (``gw0`` ... ``gwN``), whatever host each one
runs on. Device assignment must count per host: eight workers on each of two 8-GPU hosts are eight
workers per host, one per GPU, not sixteen workers sharing eight devices. The controller knows
every worker's execnet spec (``popen``, ``ssh=host``, ``socket=host:port``, ``popen//via=ID``), so
it tells each worker, in its ``workerinput``, its index among the workers of its host, their
number and the environment variables each one's spec sets (``//env:NAME=VALUE``);
:func:`slot_from_workerinput` reads that back on the worker.

What counts as one host is what one address names: ``popen`` workers run where the controller
runs, ``ssh=user@host`` workers on that host, ``socket=host:port`` workers on that socket server
(one server per machine: two servers on one machine count as two hosts), ``via=ID`` workers where
gateway ``ID`` runs. Without this information (xdist older than the hook, a replaced worker) a
worker counts every worker as being on its host, the safe side: it may refuse to tune on a device
it does not share, never tune on one it does.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any, Final

from pytest_autotune.plugin.devices import WorkerSlot

__all__ = ["WORKERINPUT_KEY", "host_label", "slot_from_workerinput", "slot_input"]

#: The key of the controller's answer in a worker's ``workerinput``.
WORKERINPUT_KEY: Final = "autotune_host"


def host_label(spec: Any, gateways: Mapping[str, Any] | None = None) -> str:
    """The host an execnet spec's worker runs on: ``local``, ``ssh:<host>``, ``socket:<host:port>``.

    ``gateways`` maps gateway ids to their specs, to follow ``via=ID``.
    """
    via = getattr(spec, "via", None)
    if via and gateways is not None and via in gateways:
        return host_label(gateways[via], None)
    if via:
        return f"via:{via}"
    for kind in ("ssh", "socket", "vagrant_ssh"):
        value = getattr(spec, kind, None)
        if value:
            return f"{kind}:{value}"
    return "local"


def slot_input(
    specs: Iterable[Any], worker_id: str, gateways: Mapping[str, Any] | None = None
) -> dict[str, Any] | None:
    """The ``workerinput`` entry for worker ``worker_id`` (JSON-able), None when it is not in ``specs``.

    Holds its host's label, its index among the workers of that host, each of those workers'
    ``env:`` settings, and, for a worker on the controller's own host, the controller's values of
    the variables that worker's spec overrides (what the others inherit).
    """
    specs = list(specs)
    mine = next((spec for spec in specs if getattr(spec, "id", None) == worker_id), None)
    if mine is None:
        return None
    host = host_label(mine, gateways)
    peers = [spec for spec in specs if host_label(spec, gateways) == host]
    index = next(number for number, spec in enumerate(peers) if spec is mine)  # specs may be equal
    overrides = [dict(getattr(spec, "env", None) or {}) for spec in peers]
    base = {}
    if host == "local":
        base = {k: os.environ[k] for k in overrides[index] if k in os.environ}
    return {"host": host, "index": index, "overrides": overrides, "base": base}


def slot_from_workerinput(workerinput: Mapping[str, Any] | None) -> WorkerSlot:
    """This process's :class:`WorkerSlot` from xdist's ``workerinput`` (None: not an xdist worker)."""
    if workerinput is None:
        return WorkerSlot()
    data = workerinput.get(WORKERINPUT_KEY)
    if not isinstance(data, dict):  # no controller's answer: every worker counts as a peer
        index = int("".join(c for c in str(workerinput.get("workerid", "gw0")) if c.isdigit()) or 0)
        return WorkerSlot(index, int(workerinput.get("workercount", 1)))
    overrides = tuple(dict(env) for env in data["overrides"])
    if not any(overrides):
        overrides = ()
    return WorkerSlot(
        int(data["index"]), len(data["overrides"]), str(data["host"]), overrides, dict(data["base"])
    )
