"""Build OpenCL programs per configuration, cache them, and launch their kernels safely.

:func:`build_program` compiles ``source`` with the defines as ``#define`` lines at its top (the
default, as Kernel Tuner does) or as ``-D`` options (``define_style="options"``; encoding and the
difference in :mod:`pytest_autotune.backends.opencl.defines`) and keeps the result in a bounded
per-context cache keyed by the source compiled (defines included) and the options: re-running a
configuration (finalist re-measurement, check mode) costs no compile.

It returns a :class:`BuiltProgram`, which behaves like a ``pyopencl.Program``
(``prg.kernel_name(queue, global_size, local_size, *args)``) and is itself
callable when the program holds a single kernel, as in DESIGN section 1. Its
kernels (:class:`CheckedKernel`) check each launch against the device limits
before enqueueing it: a work-group above the device's maximum or more local
memory than the device has raises :class:`LaunchError` (a ``runtime`` trial)
instead of reaching the driver, where PoCL, for instance, segfaults on
oversized local memory and would kill the whole test session.
"""

from __future__ import annotations

import hashlib
import math
import threading
import warnings
import weakref
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

import pyopencl as cl

from pytest_autotune.backends.base import DeviceLimits
from pytest_autotune.backends.build_cache import BuildCacheInfo
from pytest_autotune.backends.opencl.defines import (
    DEFINE_STYLES,
    DefineStyle,
    define_macros,
    define_options,
    define_source,
    line_directive,
    redefined_defines,
)
from pytest_autotune.backends.opencl.errors import (
    COMPILE_STATUS_CODES,
    KernelBuildError,
    LaunchError,
    status_name,
)
from pytest_autotune.backends.opencl.limits import device_limits
from pytest_autotune.warning_types import AutotuneDefineWarning

__all__ = [
    "BuildCacheInfo",
    "BuiltProgram",
    "CheckedKernel",
    "build_cache_info",
    "build_program",
    "clear_build_cache",
]

#: Programs kept per context. Few on purpose: PoCL keeps tens of MiB alive per program that has run
#: (measured: +45 MiB per cached SAXPY variant, 1.9 GiB after 40 trials with room for 128), and
#: tuning visits each configuration about once. Re-measuring the finalists or a committed
#: configuration hits this cache or, beyond it, the driver's own on-disk cache (PoCL: ~0.05 s).
CACHE_CAPACITY = 8

_CacheKey = tuple[str, tuple[str, ...], tuple[str, ...]]


class _ProgramCache:
    """Per-context LRU of built programs; entries die with their context."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.hits = 0
        self.misses = 0
        self._lock = threading.Lock()
        self._per_context: weakref.WeakKeyDictionary[cl.Context, OrderedDict[_CacheKey, BuiltProgram]] = (
            weakref.WeakKeyDictionary()
        )

    def get(self, context: cl.Context, key: _CacheKey) -> BuiltProgram | None:
        with self._lock:
            entries = self._per_context.get(context)
            program = None if entries is None else entries.get(key)
            if program is None:
                self.misses += 1
                return None
            entries.move_to_end(key)  # type: ignore[union-attr]
            self.hits += 1
            return program

    def put(self, context: cl.Context, key: _CacheKey, program: BuiltProgram) -> None:
        with self._lock:
            entries = self._per_context.setdefault(context, OrderedDict())
            entries[key] = program
            while len(entries) > self.capacity:
                entries.popitem(last=False)

    def info(self) -> BuildCacheInfo:
        with self._lock:
            size = sum(len(entries) for entries in self._per_context.values())
            return BuildCacheInfo(self.hits, self.misses, size, self.capacity)

    def clear(self) -> None:
        with self._lock:
            self._per_context.clear()
            self.hits = self.misses = 0


_CACHE = _ProgramCache(CACHE_CAPACITY)


def build_cache_info() -> BuildCacheInfo:
    """Hits, misses and size of the program cache."""
    return _CACHE.info()


def clear_build_cache() -> None:
    """Forget every cached program and reset the counters."""
    _CACHE.clear()


def build_log(program: cl.Program, devices: Sequence[cl.Device], fallback: str) -> str:
    """The build logs of ``program`` on ``devices`` (empty ones left out), else ``fallback``."""
    logs: list[str] = []
    for device in devices:
        try:
            logs.append(str(program.get_build_info(device, cl.program_build_info.LOG)).strip())  # type: ignore[no-untyped-call]
        except cl.Error:
            continue
    text = "\n".join(log for log in logs if log)
    return text or fallback


def build_program(
    context: cl.Context,
    source: str,
    defines: Mapping[str, object] | None = None,
    options: Sequence[str] = (),
    *,
    define_style: DefineStyle = "source",
    source_name: str | None = None,
) -> BuiltProgram:
    """Build ``source`` for every device of ``context`` with ``defines``, cached.

    ``define_style="source"`` (the default) writes one ``#define`` line per define at the top of
    the source (then ``#line 1``), so any identifier may name a define, OpenCL keywords such as
    ``read_only`` included; ``"options"`` passes them as ``-D`` build options instead. With
    ``source_name`` (the kernel file's path) the ``#line`` directive names it, so the compiler's
    messages say ``gemm.cl:20:5`` instead of the driver's temporary file. A tuned define that the
    source ``#define``s itself (unguarded) gives an :class:`AutotuneDefineWarning`, once per source.
    Raises :class:`KernelBuildError` (carrying the build log) when the compiler rejects the program,
    and ``ValueError`` for a define that cannot be encoded (naming it) or an unknown style.
    """
    if not isinstance(source, str) or not source.strip():
        raise ValueError("build_program: source must be a non-empty string of OpenCL C")
    if isinstance(options, str):
        raise TypeError("build_program: options must be a sequence of strings, e.g. ['-cl-mad-enable']")
    if define_style not in DEFINE_STYLES:
        expected = ", ".join(map(repr, DEFINE_STYLES))
        raise ValueError(f"build_program: define_style={define_style!r}; expected one of {expected}")
    defines = defines or {}
    _warn_redefined(defines, source, source_name)
    if define_style == "options":
        named = source if source_name is None else f"{line_directive(source_name)}{source}"
        define_opts, compiled = define_options(defines), named
    else:
        compiled, define_opts = define_source(defines, source, source_name), ()
    extra = tuple(str(option) for option in options)
    key: _CacheKey = (hashlib.sha256(compiled.encode()).hexdigest(), tuple(sorted(define_opts)), extra)
    cached = _CACHE.get(context, key)
    if cached is not None:
        return cached
    all_options = [*define_opts, *extra]
    raw = cl.Program(context, compiled)
    try:
        with warnings.catch_warnings():
            # pyopencl warns on any compiler output; a tuning run builds hundreds of variants.
            warnings.simplefilter("ignore", cl.CompilerWarning)
            raw.build(options=all_options)
    except cl.Error as exc:
        status = status_name(exc)
        if status not in COMPILE_STATUS_CODES:
            raise
        log = build_log(raw, context.devices, fallback=str(exc))
        # The defines written into the source, for the message (only a failed build needs them).
        shown = () if define_style == "options" else tuple(f"{m}={t}" for m, t in define_macros(defines))
        raise KernelBuildError(log, all_options, status, defines=shown) from exc
    program = BuiltProgram(raw, all_options, compiled)
    _CACHE.put(context, key, program)
    return program


#: (source digest, macro) pairs already warned about: tuning builds one source hundreds of times.
_WARNED_REDEFINED: set[tuple[str, str]] = set()


def _warn_redefined(defines: Mapping[str, object], source: str, source_name: str | None) -> None:
    """Warn once per source and macro when ``source`` ``#define``s a tuned define itself."""
    found = redefined_defines(defines, source)
    if not found:
        return
    digest = hashlib.sha256(source.encode()).hexdigest()
    for macro, line in found:
        if (digest, macro) in _WARNED_REDEFINED:
            continue
        _WARNED_REDEFINED.add((digest, macro))
        where = f"{source_name or 'the kernel source'}:{line}"
        warnings.warn(
            f"{where}: the source #defines {macro}, which is also a tuned define; the source's value "
            f"overrides the configured one, so every configuration builds the same {macro}. Remove the "
            f"#define, or guard it as a fallback (#ifndef {macro} ... #endif)",
            AutotuneDefineWarning,
            stacklevel=4,
        )


class CheckedKernel:
    """A ``pyopencl.Kernel`` whose launches are checked against the device limits first.

    Call it like a pyopencl kernel: ``kernel(queue, global_size, local_size,
    *args)`` returns the launch's ``pyopencl.Event``. Other attributes are
    those of the wrapped kernel (``raw``).
    """

    def __init__(self, kernel: cl.Kernel) -> None:
        self.raw = kernel
        self.name: str = kernel.function_name
        self._static_local: dict[int, int] = {}
        self._group_limit: dict[int, int] = {}
        self._limits: dict[int, DeviceLimits] = {}
        self._lock = threading.Lock()

    def _device_facts(self, device: cl.Device) -> tuple[DeviceLimits, int, int]:
        """Device limits, the kernel's static local memory and its work-group limit on ``device``."""
        handle = int(device.int_ptr)
        with self._lock:
            if handle not in self._limits:
                info = cl.kernel_work_group_info
                # Read before any launch sets __local arguments (they would be counted too).
                self._static_local[handle] = int(self.raw.get_work_group_info(info.LOCAL_MEM_SIZE, device))
                self._group_limit[handle] = int(self.raw.get_work_group_info(info.WORK_GROUP_SIZE, device))
                self._limits[handle] = device_limits(device)
            return self._limits[handle], self._static_local[handle], self._group_limit[handle]

    def check_launch(self, device: cl.Device, local_size: Sequence[int] | None, args: Sequence[Any]) -> None:
        """Raise :class:`LaunchError` when ``device`` cannot run this launch."""
        limits, static_local, group_limit = self._device_facts(device)
        if local_size is not None:
            sizes = [int(s) for s in local_size]
            for dim, (size, limit) in enumerate(zip(sizes, limits.max_work_item_sizes or (), strict=False)):
                if size > limit:
                    raise LaunchError(
                        "INVALID_WORK_ITEM_SIZE",
                        f"kernel {self.name!r}: local size {size} in dimension {dim} exceeds the "
                        f"device maximum {limit}",
                    )
            group = math.prod(sizes)
            allowed = min(limits.max_work_group_size or group_limit, group_limit)
            if group > allowed:
                raise LaunchError(
                    "INVALID_WORK_GROUP_SIZE",
                    f"kernel {self.name!r}: work-group of {group} work-items exceeds the maximum "
                    f"{allowed} for this kernel on this device",
                )
        dynamic_local = sum(int(arg.size) for arg in args if isinstance(arg, cl.LocalMemory))
        used = static_local + dynamic_local
        if limits.local_memory is not None and used > limits.local_memory:
            raise LaunchError(
                "OUT_OF_RESOURCES",
                f"kernel {self.name!r}: uses {used} bytes of local memory, the device has "
                f"{limits.local_memory}",
            )

    def __call__(
        self,
        queue: cl.CommandQueue,
        global_size: Sequence[int],
        local_size: Sequence[int] | None,
        *args: Any,
        **kwargs: Any,
    ) -> cl.Event:
        self.check_launch(queue.device, local_size, args)
        local = None if local_size is None else tuple(local_size)
        return self.raw(queue, tuple(global_size), local, *args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        raw = self.__dict__.get("raw")
        if raw is None or name.startswith("_"):
            raise AttributeError(name)
        return getattr(raw, name)

    def __repr__(self) -> str:
        return f"CheckedKernel({self.name!r})"


class BuiltProgram:
    """A built ``pyopencl.Program`` whose kernels are :class:`CheckedKernel` objects.

    ``prg.name`` gives the kernel called ``name`` (created once, then reused);
    ``prg(queue, global_size, local_size, *args)`` launches the program's
    only kernel. ``raw`` is the ``pyopencl.Program``, ``options`` the build
    options used, ``source`` the source compiled (with its ``#define`` lines).
    """

    def __init__(self, program: cl.Program, options: Sequence[str], source: str = "") -> None:
        self.raw = program
        self.options = tuple(options)
        self.source = source
        self.kernel_names: tuple[str, ...] = tuple(
            name for name in str(program.get_info(cl.program_info.KERNEL_NAMES)).split(";") if name
        )
        self._kernels: dict[str, CheckedKernel] = {}
        self._lock = threading.Lock()

    def kernel(self, name: str | None = None) -> CheckedKernel:
        """The kernel called ``name`` (the only kernel when ``name`` is None)."""
        if name is None:
            if len(self.kernel_names) != 1:
                raise TypeError(
                    f"this program has {len(self.kernel_names)} kernels ({', '.join(self.kernel_names)}); "
                    "name the one to launch, e.g. prg.kernel('name') or prg.name(...)"
                )
            name = self.kernel_names[0]
        if name not in self.kernel_names:
            raise AttributeError(f"the program has no kernel {name!r}; it has {', '.join(self.kernel_names)}")
        with self._lock:
            if name not in self._kernels:
                self._kernels[name] = CheckedKernel(cl.Kernel(self.raw, name))
            return self._kernels[name]

    def __call__(
        self,
        queue: cl.CommandQueue,
        global_size: Sequence[int],
        local_size: Sequence[int] | None,
        *args: Any,
        **kwargs: Any,
    ) -> cl.Event:
        return self.kernel()(queue, global_size, local_size, *args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        names = self.__dict__.get("kernel_names")
        if names is None or name.startswith("_"):
            raise AttributeError(name)
        if name in names:
            return self.kernel(name)
        return getattr(self.raw, name)

    def __repr__(self) -> str:
        return f"BuiltProgram(kernels={list(self.kernel_names)}, options={list(self.options)})"
