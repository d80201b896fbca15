"""The OpenCL backend as a :class:`~pytest_autotune.backends.base.Backend`.

A thin adapter: each method calls the function that does the work in the module that defines it
(:func:`~pytest_autotune.backends.opencl.device.select_device`,
:func:`~pytest_autotune.backends.opencl.device.device_key`,
:func:`~pytest_autotune.backends.opencl.build.build_program`, ...), looked up on that module at call
time, so code that replaces one of them (tests faking devices) changes the backend too. Importing
this module does not import pyopencl: the modules that import it (``device``, ``build``) load when a
method needs them, and the methods the plugin calls for every test
(:meth:`OpenCLBackend.result_seconds`, :meth:`OpenCLBackend.classify`, :meth:`OpenCLBackend.owns`)
only look pyopencl up in ``sys.modules``: an event, context or error of pyopencl exists only once
pyopencl is loaded.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from pytest_autotune.backends.base import Backend, DeviceLimits
from pytest_autotune.backends.opencl import limits as opencl_limits
from pytest_autotune.backends.opencl.errors import classify_error
from pytest_autotune.outcome import Label

if TYPE_CHECKING:
    from pytest_autotune.backends.opencl.defines import DefineStyle

__all__ = ["OpenCLBackend", "events_in"]


def events_in(result: Any) -> list[Any] | None:
    """The pyopencl events in ``result`` (an event or a non-empty list/tuple of events), else None.

    Never imports pyopencl: a result can only hold events when pyopencl is already loaded.
    """
    cl = sys.modules.get("pyopencl")
    if cl is None:
        return None
    if isinstance(result, cl.Event):
        return [result]
    if isinstance(result, (list, tuple)) and result and all(isinstance(e, cl.Event) for e in result):
        return list(result)
    return None


class OpenCLBackend(Backend):
    """OpenCL devices through pyopencl: tests that use ``cl_context`` or ``cl_queue`` run here."""

    name = "opencl"
    fixtures = frozenset({"cl_context", "cl_queue"})

    # -- devices ----------------------------------------------------------------------------------------
    def devices(self) -> list[Any]:
        """Every device of every platform, in ``P:D`` order."""
        from pytest_autotune.backends.opencl import device as opencl_device

        return [entry.device for entry in opencl_device.list_devices()]

    def usable_devices(self) -> list[Any]:
        """The devices whose compiler builds a trivial kernel (:func:`probe_device`)."""
        from pytest_autotune.backends.opencl import device as opencl_device

        return [
            entry.device
            for entry in opencl_device.list_devices()
            if opencl_device.probe_device(entry.device) is None
        ]

    def select(self, spec: str | None) -> Any:
        """:func:`select_device`: a spec, else ``$PYOPENCL_CTX``, else the first usable device."""
        from pytest_autotune.backends.opencl import device as opencl_device

        return opencl_device.select_device(spec)

    def environment_spec(self, env: Mapping[str, str] | None = None) -> str | None:
        """``$PYOPENCL_CTX`` of ``env`` (default: this process's environment) when set."""
        return (os.environ if env is None else env).get("PYOPENCL_CTX") or None

    def key(self, device: Any) -> str:
        """:func:`device_key`: ``"<platform name> / <device name>"``."""
        from pytest_autotune.backends.opencl import device as opencl_device

        return opencl_device.device_key(device)

    def info(self, device: Any) -> dict[str, Any]:
        """:func:`device_info`: names, versions, compute units, memory sizes and limits."""
        from pytest_autotune.backends.opencl import device as opencl_device

        return opencl_device.device_info(device)

    def spec_of(self, device: Any) -> str | None:
        """The ``"P:D"`` spec of ``device`` (its key when it is not listed)."""
        from pytest_autotune.backends.opencl import device as opencl_device

        for entry in opencl_device.list_devices():
            if entry.device == device:
                return str(entry.spec)
        return self.key(device)

    def is_cpu(self, device: Any) -> bool:
        """Whether the device's type is ``CPU`` (PoCL's ``pthread``, Intel's and AMD's CPU drivers:
        they run kernels in threads of this process)."""
        import pyopencl as cl

        return bool(int(device.type) & int(cl.device_type.CPU))

    def identity(self, device: Any) -> str:
        """The device's PCI address when the driver reports one (:func:`pci_address`), else its
        ``"P:D"`` spec: stable across processes on one host, different for identical devices."""
        from pytest_autotune.backends.opencl import device as opencl_device

        return opencl_device.pci_address(device) or str(self.spec_of(device))

    def limits(self, device: Any) -> DeviceLimits:
        """Maximum work-group size, work-items per dimension and local memory of ``device``."""
        return opencl_limits.device_limits(device)

    # -- fixtures and timing ----------------------------------------------------------------------------
    def synchronizer(
        self, fixturenames: Collection[str], fixture: Callable[[str], Any]
    ) -> Callable[[], Any] | None:
        """``cl_queue.finish`` when the test uses ``cl_queue``."""
        return fixture("cl_queue").finish if "cl_queue" in fixturenames else None

    def result_seconds(self, result: Any) -> float | None:
        """The profiling time of the event(s) ``result`` holds (:func:`event_seconds`), else None."""
        events = events_in(result)
        if events is None:
            return None
        from pytest_autotune.backends.opencl import device as opencl_device

        return float(opencl_device.event_seconds(events))

    # -- builds and errors -----------------------------------------------------------------------------
    def owns(self, obj: Any) -> bool:
        """Whether ``obj`` is a ``pyopencl.Context``."""
        cl = sys.modules.get("pyopencl")
        return cl is not None and isinstance(obj, cl.Context)

    def build(
        self,
        context: Any,
        source: str,
        defines: Mapping[str, Any] | None = None,
        options: Sequence[str] = (),
        *,
        define_style: str | None = None,
        source_name: str | None = None,
        **backend_options: Any,
    ) -> Any:
        """:func:`build_program`: ``#define`` lines (``define_style="options"``: ``-D`` options),
        a ``#line`` directive naming ``source_name``, cached per context, launches checked against limits."""
        if backend_options:
            raise TypeError(f"the opencl backend's build takes no {', '.join(sorted(backend_options))}")
        style = cast("DefineStyle", "source" if define_style is None else define_style)
        from pytest_autotune.backends.opencl import build as opencl_build

        return opencl_build.build_program(
            context, source, defines, options, define_style=style, source_name=source_name
        )

    def clear_build_cache(self) -> None:
        """:func:`clear_build_cache`."""
        from pytest_autotune.backends.opencl import build as opencl_build

        opencl_build.clear_build_cache()

    def classify(self, exc: BaseException) -> tuple[Label, str] | None:
        """:func:`classify_error`: build failures are ``compile``, launch failures ``runtime``."""
        return classify_error(exc)
