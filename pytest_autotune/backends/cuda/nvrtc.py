"""Compile CUDA C to a cubin for a named architecture with NVRTC, cached; no GPU or driver needed.

:func:`compile_cuda` writes the configuration as ``#define`` lines at the top of the source (the
same encoding as OpenCL: :mod:`pytest_autotune.backends.opencl.defines`), compiles for the *real*
architecture (``--gpu-architecture=sm_90``, not ``compute_90``), so ptxas runs at build time:
a configuration that needs more shared memory or registers than the architecture has fails here
as a :class:`~pytest_autotune.backends.cuda.errors.CudaResourceError`, before any launch, and a
mistake in the source as a :class:`~pytest_autotune.backends.cuda.errors.CudaBuildError`. ptxas
runs verbose, so every kernel's registers, static shared memory, stack and spills are read from
its log (:class:`KernelResources`), also where no driver exists (CI).

Templated kernels are named by *name expressions* (``"gemm<float, 64>"``): NVRTC instantiates
them and reports each one's lowered (mangled) name, which the loaded module looks up. Programs are
kept in a bounded LRU keyed by the text compiled, the options, the architecture and the names.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from pytest_autotune.backends.build_cache import BuildCacheInfo, CountingLRU
from pytest_autotune.backends.cuda.errors import CudaBuildError, CudaResourceError, is_resource_log
from pytest_autotune.backends.opencl.defines import define_macros, define_options, define_source

__all__ = [
    "CACHE_CAPACITY",
    "CompiledCuda",
    "CudaTarget",
    "KernelResources",
    "build_cache_info",
    "clear_build_cache",
    "compile_cuda",
    "normalize_arch",
    "parse_ptxas_log",
]

#: Compiled programs kept per process (a cubin is small; tuning visits each configuration once).
CACHE_CAPACITY: Final = 64
_ARCH = re.compile(r"(?:sm_|compute_)?(\d{2,3})([a-z]?)\Z")
_ENTRY = re.compile(r"Compiling entry function '([^']+)' for '(sm_\w+)'")
_USED = re.compile(r"Used (\d+) registers(?:.*?(\d+) bytes smem)?")
_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")


@dataclass(frozen=True)
class KernelResources:
    """What ptxas reported for one kernel: registers per thread, static shared memory per block
    (bytes), stack frame and spills (bytes)."""

    registers: int
    shared_bytes: int = 0
    stack_bytes: int = 0
    spill_stores: int = 0
    spill_loads: int = 0

    def to_dict(self) -> dict[str, int]:
        """A JSON-able dict."""
        return {
            "registers": self.registers,
            "shared_bytes": self.shared_bytes,
            "stack_bytes": self.stack_bytes,
            "spill_stores": self.spill_stores,
            "spill_loads": self.spill_loads,
        }


@dataclass(frozen=True)
class CompiledCuda:
    """A compiled program: the ``cubin``, its ``arch``, the ``source`` compiled (with its
    ``#define`` lines), the ``options``, the lowered name of each name expression (``names``)
    and each kernel's resources by lowered name (``resources``), and the compiler's ``log``."""

    cubin: bytes
    arch: str
    source: str
    options: tuple[str, ...]
    names: Mapping[str, str] = field(default_factory=dict)
    resources: Mapping[str, KernelResources] = field(default_factory=dict)
    log: str = ""

    def lowered(self, name: str) -> str:
        """The symbol of kernel ``name``: a name expression's lowered name, else ``name`` itself
        (``extern "C"`` kernels)."""
        return self.names.get(name, name)

    def kernel_resources(self, name: str) -> KernelResources | None:
        """The resources ptxas reported for kernel ``name`` (a name expression or symbol)."""
        return self.resources.get(self.lowered(name))


def normalize_arch(arch: str | int | tuple[int, int]) -> str:
    """``"sm_90"`` from ``"sm_90"``, ``"90"``, ``90``, ``(9, 0)`` or ``"sm_90a"``; ValueError else.

    ``compute_XY`` is turned into ``sm_XY`` on purpose: only a real architecture runs ptxas at
    build time, which is what makes resource failures visible before a launch.
    """
    if isinstance(arch, tuple):
        major, minor = arch
        return f"sm_{int(major)}{int(minor)}"
    match = _ARCH.match(str(arch).strip())
    if match is None:
        raise ValueError(f"CUDA architecture {arch!r}: expected e.g. 'sm_90', '90' or (9, 0)")
    return f"sm_{match.group(1)}{match.group(2)}"


def parse_ptxas_log(log: str) -> dict[str, KernelResources]:
    """Each kernel's resources from a verbose ptxas log (``--ptxas-options=-v``), by symbol."""
    found: dict[str, KernelResources] = {}
    current: str | None = None
    frame = (0, 0, 0)
    for line in log.splitlines():
        entry = _ENTRY.search(line)
        if entry is not None:
            current, frame = entry.group(1), (0, 0, 0)
            continue
        if current is None:
            continue
        stack = _FRAME.search(line)
        if stack is not None:
            frame = (int(stack.group(1)), int(stack.group(2)), int(stack.group(3)))
            continue
        used = _USED.search(line)
        if used is not None:
            shared = int(used.group(2) or 0)
            found[current] = KernelResources(int(used.group(1)), shared, *frame)
            current = None
    return found


_CACHE: CountingLRU[CompiledCuda] = CountingLRU(CACHE_CAPACITY)


def build_cache_info() -> BuildCacheInfo:
    """Hits, misses and size of the compile cache."""
    return _CACHE.info()


def clear_build_cache() -> None:
    """Forget every compiled program and reset the counters."""
    _CACHE.clear()


def _check(result: Any, what: str) -> Any:
    """The values of an NVRTC call's ``(status, *values)`` tuple; RuntimeError on a bad status."""
    status, *values = result if isinstance(result, tuple) else (result,)
    if int(status) != 0:
        from cuda.bindings import nvrtc

        _, text = nvrtc.nvrtcGetErrorString(status)
        raise RuntimeError(f"NVRTC {what} failed: {text.decode(errors='replace')}")
    return values[0] if len(values) == 1 else values


def _program_log(nvrtc: Any, program: Any) -> str:
    size = _check(nvrtc.nvrtcGetProgramLogSize(program), "log size")
    buffer = b" " * int(size)
    _check(nvrtc.nvrtcGetProgramLog(program, buffer), "log")
    return buffer.decode(errors="replace").rstrip("\x00 \n")


def compile_cuda(
    source: str,
    *,
    arch: str | int | tuple[int, int],
    defines: Mapping[str, object] | None = None,
    options: Sequence[str] = (),
    name_expressions: Sequence[str] = (),
    define_style: str = "source",
    source_name: str | None = None,
) -> CompiledCuda:
    """Compile ``source`` for ``arch`` with ``defines`` (``#define`` lines, or ``-D`` options with
    ``define_style="options"``) and NVRTC ``options``; cached.

    Raises :class:`CudaResourceError` when ptxas finds the configuration beyond the architecture's
    shared memory or registers, :class:`CudaBuildError` for other build failures, ``ValueError``
    for a define that cannot be encoded. ``source_name`` (the kernel file's path) names the
    source in compiler messages (a ``#line`` directive).
    """
    if not isinstance(source, str) or not source.strip():
        raise ValueError("compile_cuda: source must be a non-empty string of CUDA C")
    if isinstance(options, str) or isinstance(name_expressions, str):
        raise TypeError("compile_cuda: options and name_expressions are sequences of strings")
    target = normalize_arch(arch)
    defines = defines or {}
    if define_style == "options":
        define_opts = define_options(defines)
        compiled = define_source({}, source, source_name)
    elif define_style == "source":
        compiled, define_opts = define_source(defines, source, source_name), ()
    else:
        raise ValueError(f"compile_cuda: define_style={define_style!r}; expected 'source' or 'options'")
    all_options = (f"--gpu-architecture={target}", "--ptxas-options=-v", *define_opts, *map(str, options))
    names = tuple(str(name) for name in name_expressions)
    key = (hashlib.sha256(compiled.encode()).hexdigest(), all_options, names)
    cached = _CACHE.get(key)
    if cached is not None:
        return cached
    from cuda.bindings import nvrtc

    program = _check(
        nvrtc.nvrtcCreateProgram(compiled.encode(), (source_name or "kernel.cu").encode(), 0, [], []),
        "create",
    )
    try:
        for name in names:
            _check(nvrtc.nvrtcAddNameExpression(program, name.encode()), f"name expression {name!r}")
        status, *_ = nvrtc.nvrtcCompileProgram(program, len(all_options), [o.encode() for o in all_options])
        log = _program_log(nvrtc, program)
        if int(status) != 0:
            shown = () if define_style == "options" else tuple(f"{m}={t}" for m, t in define_macros(defines))
            error = CudaResourceError if is_resource_log(log) else CudaBuildError
            raise error(log or str(status), all_options, arch=target, defines=shown)
        size = _check(nvrtc.nvrtcGetCUBINSize(program), "cubin size")
        cubin = b" " * int(size)
        _check(nvrtc.nvrtcGetCUBIN(program, cubin), "cubin")
        lowered = {
            name: _check(
                nvrtc.nvrtcGetLoweredName(program, name.encode()), f"lowered name of {name!r}"
            ).decode()
            for name in names
        }
    finally:
        nvrtc.nvrtcDestroyProgram(program)
    result = CompiledCuda(cubin, target, compiled, all_options, lowered, parse_ptxas_log(log), log)
    _CACHE.put(key, result)
    return result


@dataclass(frozen=True)
class CudaTarget:
    """An architecture to build for without a device: ``autotune.build(CudaTarget("sm_90"), src)``
    compiles and returns the :class:`CompiledCuda` (resources included) instead of a loaded module.
    Used where there is no GPU (CI) to check builds, defines and resource failures."""

    arch: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "arch", normalize_arch(self.arch))
