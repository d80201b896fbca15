"""OpenCL devices: discovery, selection, keys and information; contexts, queues and event times.

* :func:`select_device` picks the device from ``--autotune-device``, else
  ``$PYOPENCL_CTX``, else the first device that can build a kernel. A spec is
  ``"P"`` or ``"P:D"`` where each part is an index or a case-insensitive name
  substring (as in pyopencl's ``PYOPENCL_CTX``), a bare name substring
  matching a platform or a device, or a :func:`device_key` verbatim. Nothing
  matching raises :class:`DeviceNotFoundError` listing every platform and
  device; a device whose compiler cannot build even a trivial kernel raises
  :class:`DeviceUnusableError` with its build log (:func:`probe_device`), so
  that a broken driver is reported once, not learnt as every configuration
  being infeasible.
* :func:`pci_address` tells identical devices apart (two GPUs of one model have one key, and
  are two devices that workers may time on at once).
* :func:`device_key` names a device in ``autotune.json``: platform and device
  name only (driver and versions change with updates and are kept as
  information by :func:`device_info`).
* :func:`create_context` and :func:`create_queue` make what the ``cl_context`` and ``cl_queue``
  fixtures hold (profiling enabled); :func:`event_seconds` reads the profiling time of events.

This module imports pyopencl; the package's ``__init__`` re-exports its names lazily.
"""

from __future__ import annotations

import os
import re
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import pyopencl as cl

from pytest_autotune.backends.opencl.build import build_log
from pytest_autotune.backends.opencl.errors import DeviceNotFoundError, DeviceUnusableError, status_name
from pytest_autotune.warning_types import AutotuneWarning

__all__ = [
    "DeviceEntry",
    "create_context",
    "create_queue",
    "device_info",
    "device_key",
    "event_seconds",
    "list_devices",
    "pci_address",
    "probe_device",
    "select_device",
]

_SPACES = re.compile(r"\s+")


def _clean(name: str) -> str:
    """A driver-reported name without NULs and with runs of whitespace collapsed."""
    return _SPACES.sub(" ", name.replace("\x00", " ")).strip()


def _device_kind(device: cl.Device) -> str:
    """``GPU``, ``CPU``, ``ACCELERATOR``, ``CUSTOM`` or ``OTHER`` (the type bit field, simplified)."""
    kinds = ("GPU", "CPU", "ACCELERATOR", "CUSTOM")
    return next((kind for kind in kinds if int(device.type) & int(getattr(cl.device_type, kind))), "OTHER")


@dataclass(frozen=True)
class DeviceEntry:
    """One OpenCL device with its platform and device indices (as in ``PYOPENCL_CTX``)."""

    platform_index: int
    device_index: int
    device: cl.Device

    @property
    def spec(self) -> str:
        """The ``"P:D"`` spec that selects this device."""
        return f"{self.platform_index}:{self.device_index}"

    def describe(self) -> str:
        """One line: spec, key and type of the device."""
        kind = _device_kind(self.device)
        return f"{self.spec}  {device_key(self.device)}  ({kind}, {_clean(self.device.version)})"


def list_devices() -> list[DeviceEntry]:
    """Every OpenCL device of every platform, in platform then device order."""
    try:
        platforms = cl.get_platforms()
    except cl.Error as exc:  # no ICD at all reports PLATFORM_NOT_FOUND_KHR
        raise DeviceNotFoundError(
            "no OpenCL platform found; install a driver, e.g. PoCL for the CPU: pip install 'pyopencl[pocl]'"
        ) from exc
    entries: list[DeviceEntry] = []
    for p_index, platform in enumerate(platforms):
        try:
            devices = platform.get_devices()
        except cl.Error:  # a platform without devices reports DEVICE_NOT_FOUND
            continue
        entries.extend(DeviceEntry(p_index, d_index, device) for d_index, device in enumerate(devices))
    return entries


def _not_found(spec: str, origin: str, entries: Sequence[DeviceEntry], why: str) -> DeviceNotFoundError:
    listing = "\n".join(f"  {entry.describe()}" for entry in entries) or "  (none)"
    return DeviceNotFoundError(
        f"{origin} {spec!r}: {why}. Available OpenCL devices (select with 'P', 'P:D', "
        f"a name substring or a device key):\n{listing}"
    )


def _pick(choice: str, candidates: Iterable[tuple[int, str]]) -> int | None:
    """Index chosen by ``choice``: an index, else the first name containing it (case-insensitive)."""
    pairs = list(candidates)
    if choice.isdigit():
        wanted = int(choice)
        return wanted if any(index == wanted for index, _ in pairs) else None
    needle = choice.lower()
    return next((index for index, name in pairs if needle in name.lower()), None)


_PROBE_SOURCE = "__kernel void autotune_probe(__global float* x) { x[get_global_id(0)] += 1.0f; }"
_UPGRADE_HINT = (
    "If the log says 'unknown target CPU', the OpenCL compiler is older than this CPU: PoCL 3.0 from "
    "pip (pocl-binary-distribution) is built on LLVM 14, which does not know e.g. AMD Zen 5. Install a "
    "newer PoCL (Debian/Ubuntu: apt-get install pocl-opencl-icd) or choose another device with "
    "--autotune-device or PYOPENCL_CTX."
)


def probe_device(device: cl.Device) -> str | None:
    """Why ``device`` cannot be used (its build log for a trivial kernel), or None when it builds.

    Checked once per device and process: a device whose compiler fails here would fail every
    configuration of every test, which says nothing about the configurations.
    """
    if device.int_ptr not in _PROBED:
        program = cl.Program(create_context(device), _PROBE_SOURCE)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # pyopencl warns about any compiler output
                program.build()
        except cl.Error as exc:
            log = build_log(program, [device], fallback=str(exc))
            _PROBED[device.int_ptr] = f"{status_name(exc)}: {' '.join(log.split())}"[:2000]
        else:
            _PROBED[device.int_ptr] = None
    return _PROBED[device.int_ptr]


_PROBED: dict[int, str | None] = {}


def select_device(spec: str | None = None) -> cl.Device:
    """The OpenCL device named by ``spec``, else by ``$PYOPENCL_CTX``, else the first usable one.

    Raises :class:`DeviceNotFoundError` when the spec matches no device and
    :class:`DeviceUnusableError` when the chosen device (or, with no spec, every device) cannot
    build a trivial kernel (:func:`probe_device`).
    """
    origin = "device spec"
    if spec is None:
        spec = os.environ.get("PYOPENCL_CTX")
        origin = "PYOPENCL_CTX"
    entries = list_devices()
    if not entries:
        raise _not_found(spec or "", origin, entries, "no OpenCL device is available")
    text = (spec or "").strip()
    if text:
        device = _match_device(text, origin, entries)
        problem = probe_device(device)
        if problem is not None:
            raise DeviceUnusableError(
                f"{origin} {text!r} selects {device_key(device)}, which cannot build a trivial kernel:\n"
                f"  {problem}\n{_UPGRADE_HINT}"
            )
        return device
    problems: list[str] = []
    for entry in entries:
        problem = probe_device(entry.device)
        if problem is None:
            if problems:
                warnings.warn(
                    f"skipped OpenCL devices that cannot build a trivial kernel: {'; '.join(problems)}; "
                    f"using {entry.spec} {device_key(entry.device)}",
                    AutotuneWarning,
                    stacklevel=2,
                )
            return entry.device
        problems.append(f"{entry.spec} {device_key(entry.device)}: {problem}")
    listing = "\n".join(f"  {line}" for line in problems)
    raise DeviceUnusableError(f"no OpenCL device can build a trivial kernel:\n{listing}\n{_UPGRADE_HINT}")


def _match_device(text: str, origin: str, entries: Sequence[DeviceEntry]) -> cl.Device:
    """The device that ``text`` (not empty) names, else :class:`DeviceNotFoundError`."""
    for entry in entries:  # a device key, as written in autotune.json
        if device_key(entry.device).lower() == text.lower():
            return entry.device
    parts = text.split(":")
    if len(parts) > 2 or "," in text:
        raise _not_found(text, origin, entries, "expected one device as 'P', 'P:D' or a name")
    platforms = {  # matched on name and vendor: "pocl" finds "Portable Computing Language"
        entry.platform_index: f"{_clean(entry.device.platform.name)} {_clean(entry.device.platform.vendor)}"
        for entry in entries
    }
    platform = _pick(parts[0], platforms.items()) if parts[0] else min(platforms)
    if platform is None and len(parts) == 1:  # a bare name may be a device's
        names = [(i, _clean(entry.device.name)) for i, entry in enumerate(entries)]
        found = _pick(text, names) if not text.isdigit() else None
        if found is not None:
            return entries[found].device
    if platform is None:
        raise _not_found(text, origin, entries, "matches no platform or device")
    on_platform = [entry for entry in entries if entry.platform_index == platform]
    if len(parts) == 1 or not parts[1]:
        return on_platform[0].device
    chosen = _pick(parts[1], ((e.device_index, _clean(e.device.name)) for e in on_platform))
    if chosen is None:
        raise _not_found(text, origin, entries, f"platform {platform} has no device {parts[1]!r}")
    return next(entry.device for entry in on_platform if entry.device_index == chosen)


def device_key(device: cl.Device) -> str:
    """Stable name of ``device``: ``"<platform name> / <device name>"`` (no driver or version)."""
    return f"{_clean(device.platform.name)} / {_clean(device.name)}"


def _vendor_info(device: cl.Device, name: str) -> Any:
    """``device.<name>`` (a vendor extension's query), None when the driver does not answer it."""
    try:
        return getattr(device, name)
    except (AttributeError, cl.Error):
        return None


def pci_address(device: cl.Device) -> str | None:
    """``"pci:<domain>:<bus>:<slot>"`` (hex) of ``device`` when its driver reports where it sits, else None.

    Read from NVIDIA's (``cl_nv_device_attribute_query``) or AMD's
    (``cl_amd_device_attribute_query``) extension; CPU devices (PoCL) have none.
    """
    bus = _vendor_info(device, "pci_bus_id_nv")
    if bus is not None:
        domain = _vendor_info(device, "pci_domain_id_nv") or 0
        slot = _vendor_info(device, "pci_slot_id_nv") or 0
        return f"pci:{int(domain):04x}:{int(bus):02x}:{int(slot):02x}"
    topology = _vendor_info(device, "topology_amd")
    if topology is not None and hasattr(topology, "bus"):
        return f"pci:0000:{int(topology.bus):02x}:{int(topology.device):02x}.{int(topology.function)}"
    return None


def device_info(device: cl.Device) -> dict[str, Any]:
    """Descriptive facts about ``device`` (JSON-serialisable; information only, not part of the key)."""
    return {
        "key": device_key(device),
        "name": _clean(device.name),
        "platform": _clean(device.platform.name),
        "vendor": _clean(device.vendor),
        "type": _device_kind(device),
        "version": _clean(device.version),
        "driver_version": _clean(device.driver_version),
        "platform_version": _clean(device.platform.version),
        "opencl_c_version": _clean(device.opencl_c_version),
        "max_compute_units": int(device.max_compute_units),
        "max_clock_frequency_mhz": int(device.max_clock_frequency),
        "max_work_group_size": int(device.max_work_group_size),
        "max_work_item_sizes": [int(s) for s in device.max_work_item_sizes],
        "local_mem_size": int(device.local_mem_size),
        "global_mem_size": int(device.global_mem_size),
        "max_constant_buffer_size": int(device.max_constant_buffer_size),
        "preferred_vector_width_float": int(device.preferred_vector_width_float),
    }


def create_context(device: cl.Device) -> cl.Context:
    """A context holding ``device`` alone."""
    return cl.Context(devices=[device])


def create_queue(context: cl.Context, device: cl.Device | None = None) -> cl.CommandQueue:
    """An in-order command queue with profiling enabled (the timing source)."""
    return cl.CommandQueue(context, device, properties=cl.command_queue_properties.PROFILING_ENABLE)


def event_seconds(event: cl.Event | Sequence[cl.Event]) -> float:
    """Device time of ``event`` in seconds (profiling end minus start), after waiting for it.

    A sequence of events (several launches measured together) spans from the
    earliest start to the latest end.
    """
    events = [event] if isinstance(event, cl.Event) else list(event)
    if not events:
        raise ValueError("event_seconds: no event given")
    cl.wait_for_events(events)
    try:
        start = min(int(e.profile.start) for e in events)
        end = max(int(e.profile.end) for e in events)
    except cl.Error as exc:
        raise ValueError(
            "event_seconds: the event has no profiling information; enqueue on a queue made "
            "with create_queue (profiling enabled)"
        ) from exc
    return (end - start) * 1e-9
