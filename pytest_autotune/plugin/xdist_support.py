"""xdist: bring what each worker collected to the controller.

Results need no help: they ride on the test reports (user properties), which xdist forwards to the
controller. What a worker collected (tunable node ids, files, deselections) is sent at the end
through ``workeroutput`` and merged here. This plugin object is registered only when xdist is
installed, since ``pytest_testnodedown`` is an xdist hook.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pytest_autotune.plugin.session import CollectionInfo

if TYPE_CHECKING:
    from pytest_autotune.plugin.controller import Controller

__all__ = ["XdistController"]


class XdistController:
    """Controller-side xdist hooks."""

    def __init__(self, controller: Controller) -> None:
        self.controller = controller

    def pytest_testnodedown(self, node: Any, error: object) -> None:
        """Merge the collection of a finished worker."""
        output = getattr(node, "workeroutput", None) or {}
        data = output.get("autotune")
        if isinstance(data, dict):
            self.controller.add_collection(CollectionInfo.from_dict(data))
