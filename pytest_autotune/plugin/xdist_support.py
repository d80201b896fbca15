"""xdist: tell each worker who shares its host, and bring what each worker collected to the controller.

Before a worker starts, :meth:`XdistController.pytest_configure_node` puts into its
``workerinput`` which workers run on its host (:mod:`pytest_autotune.plugin.xdist_hosts`), so that
device assignment counts workers per host. Results need no help: they ride on the test reports
(user properties), which xdist forwards to the controller, local or remote alike. What a worker
collected (tunable node ids, files, deselections) is sent at the end through ``workeroutput`` and
merged here. This plugin object is registered only when xdist is installed, since
``pytest_configure_node`` and ``pytest_testnodedown`` are xdist hooks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pytest_autotune.plugin.session import CollectionInfo
from pytest_autotune.plugin.xdist_hosts import WORKERINPUT_KEY, slot_input

if TYPE_CHECKING:
    from pytest_autotune.plugin.controller import Controller

__all__ = ["XdistController"]


class XdistController:
    """Controller-side xdist hooks."""

    def __init__(self, controller: Controller) -> None:
        self.controller = controller

    def pytest_configure_node(self, node: Any) -> None:
        """Tell the worker about to start which workers run on its host (none known: nothing)."""
        manager = getattr(node, "nodemanager", None)
        gateway = getattr(node, "gateway", None)
        if manager is None or gateway is None:
            return
        gateways = {gw.id: gw.spec for gw in getattr(manager, "group", ())}
        data = slot_input(manager.specs, gateway.id, gateways)
        if data is not None:
            node.workerinput[WORKERINPUT_KEY] = data

    def pytest_testnodedown(self, node: Any, error: object) -> None:
        """Merge the collection of a finished worker."""
        output = getattr(node, "workeroutput", None) or {}
        data = output.get("autotune")
        if isinstance(data, dict):
            self.controller.add_collection(CollectionInfo.from_dict(data))
