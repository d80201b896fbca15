"""Triton kernels compiled for a named GPU target, with or without a GPU, and their resources.

:func:`compile_for_target` compiles a ``@triton.jit`` function for ``GPUTarget("cuda", 90, 32)``
(or any target) with its constexprs, ``num_warps`` and ``num_stages``, and needs no GPU: Triton
ships its own ptxas. :func:`resources_of` reads what the compiled kernel uses: shared memory from
its metadata, registers and spills from the cubin (Triton's bundled ``cuobjdump``; no driver).
:func:`check_fits` compares that with a device's limits and raises a ``resources``
:class:`~pytest_autotune.backends.cuda.errors.CudaLaunchError` before any launch, which is how a
configuration beyond the device is pruned where compiling is cheaper than finding out at launch.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from pytest_autotune.backends.base import DeviceLimits
from pytest_autotune.backends.cuda.errors import CudaLaunchError

__all__ = ["REGISTERS_PER_BLOCK", "TritonResources", "check_fits", "compile_for_target", "resources_of"]

#: Registers one block may use on every architecture since sm_50 (64 K).
REGISTERS_PER_BLOCK: Final = 65536
_REG = re.compile(r"REG:(\d+)")
_STACK = re.compile(r"STACK:(\d+)")
_LOCAL = re.compile(r"LOCAL:(\d+)")


@dataclass(frozen=True)
class TritonResources:
    """What one compiled configuration uses: shared memory per block (bytes), registers per thread
    (None when unknown), local memory per thread (spills, bytes), and its warps."""

    shared_bytes: int
    registers: int | None
    local_bytes: int
    num_warps: int

    @property
    def threads(self) -> int:
        """Threads per block."""
        return 32 * self.num_warps

    def to_dict(self) -> dict[str, int | None]:
        """A JSON-able dict."""
        return {
            "shared_bytes": self.shared_bytes,
            "registers": self.registers,
            "local_bytes": self.local_bytes,
            "num_warps": self.num_warps,
        }


def compile_for_target(
    fn: Any,
    signature: Mapping[str, str],
    constexprs: Mapping[str, Any] | None = None,
    *,
    target: Any = (90, 32),
    num_warps: int = 4,
    num_stages: int = 3,
) -> Any:
    """``triton.compile`` of ``fn`` for ``target`` (a ``GPUTarget`` or ``(arch, warp_size)``).

    ``signature`` maps every argument to its Triton type (``"*fp16"``, ``"i32"``; constexprs
    ``"constexpr"``), ``constexprs`` gives the constexpr values by name. Raises Triton's own
    errors (``CompilationError``, ``PTXASError``, ...), which the backend labels.
    """
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    if not isinstance(target, GPUTarget):
        arch, warp_size = target
        target = GPUTarget("cuda", int(arch), int(warp_size))
    source = ASTSource(fn=fn, signature=dict(signature), constexprs=dict(constexprs or {}))
    options = {"num_warps": int(num_warps), "num_stages": int(num_stages)}
    return triton.compile(source, target=target, options=options)


def _cuobjdump() -> str | None:
    try:
        import triton
    except ImportError:
        return None
    path = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "cuobjdump")
    return path if os.access(path, os.X_OK) else None


def _cubin_usage(cubin: bytes) -> tuple[int | None, int]:
    """Registers per thread and local bytes per thread of the one kernel in ``cubin``."""
    tool = _cuobjdump()
    if tool is None:
        return None, 0
    with tempfile.NamedTemporaryFile(suffix=".cubin", delete=False) as handle:
        handle.write(cubin)
    try:
        text = subprocess.run(
            [tool, "--dump-resource-usage", handle.name],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        ).stdout
    finally:
        os.unlink(handle.name)
    registers = _REG.search(text)
    local = _LOCAL.search(text)
    return (int(registers.group(1)) if registers else None), (int(local.group(1)) if local else 0)


def resources_of(compiled: Any) -> TritonResources:
    """Shared memory, registers, spills and warps of a compiled Triton kernel (no GPU needed)."""
    metadata = compiled.metadata
    registers = getattr(compiled, "n_regs", None)
    local = int(getattr(compiled, "n_spills", 0) or 0)
    if registers is None and "cubin" in compiled.asm:
        registers, local = _cubin_usage(compiled.asm["cubin"])
    return TritonResources(int(metadata.shared), registers, local, int(metadata.num_warps))


def check_fits(resources: TritonResources, limits: DeviceLimits, *, what: str = "kernel") -> None:
    """Raise a ``resources`` :class:`CudaLaunchError` when the device cannot run ``resources``."""
    shared_limit = limits.local_memory_limit
    if shared_limit is not None and resources.shared_bytes > shared_limit:
        raise CudaLaunchError(
            "OutOfResources",
            f"{what}: {resources.shared_bytes} bytes of shared memory, the device has {shared_limit} "
            "(found by compiling; refused before launch)",
            kind="resources",
        )
    if limits.max_work_group_size is not None and resources.threads > limits.max_work_group_size:
        raise CudaLaunchError(
            "OutOfResources",
            f"{what}: {resources.threads} threads per block, the device allows {limits.max_work_group_size} "
            "(refused before launch)",
            kind="resources",
        )
    if resources.registers is not None and resources.registers * resources.threads > REGISTERS_PER_BLOCK:
        raise CudaLaunchError(
            "OutOfResources",
            f"{what}: {resources.registers} registers x {resources.threads} threads exceed the "
            f"{REGISTERS_PER_BLOCK} registers of a block (found by compiling; refused before launch)",
            kind="resources",
        )
