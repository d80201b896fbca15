"""A compiled program loaded on a GPU, and its kernels launched with checked limits and arguments.

:func:`load_module` loads a :class:`~pytest_autotune.backends.cuda.nvrtc.CompiledCuda` into the
current context. :class:`CudaModule` gives its kernels by name (``module.saxpy`` for an
``extern "C"`` kernel, ``module.kernel("gemm<float, 64>")`` for a name expression, ``module(...)``
when it holds one kernel). A :class:`CudaKernel` is called with the grid and block, or with
``autotune.launch`` (a :class:`~pytest_autotune.backends.geometry.LaunchSizes`, whose ``grid`` and
``local_size`` are used), then the kernel's arguments:

* numpy arrays are copied to the device before the launch and back after it (convenient for a
  correctness check; time device arrays, which cost no copies);
* device arrays are passed by address: this backend's ``DeviceArray``, CuPy arrays and anything
  with ``__cuda_array_interface__``, torch tensors (``data_ptr()``);
* numpy scalars (``np.int32(n)``, ``np.float32(a)``) are passed by value; a Python int or float
  is refused, because its C type would be a guess.

Before the driver sees a launch, the block is checked against the device (per dimension and in
total) and against the kernel itself (its maximum threads per block, which its registers set),
and static plus dynamic shared memory against the opt-in maximum; the kernel opts in when it
needs more than the default. A failed check raises a ``resources``
:class:`~pytest_autotune.backends.cuda.errors.CudaLaunchError` instead of a driver error.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any, NoReturn

from pytest_autotune.backends.cuda import driver
from pytest_autotune.backends.cuda.device import CudaDeviceInfo, DeviceArray
from pytest_autotune.backends.cuda.errors import CudaLaunchError
from pytest_autotune.backends.cuda.nvrtc import CompiledCuda
from pytest_autotune.backends.geometry import LaunchSizes

__all__ = ["CudaKernel", "CudaModule", "kernel_arguments", "load_module"]


def _dims(value: Sequence[int] | int, what: str) -> tuple[int, int, int]:
    sizes = (int(value),) if isinstance(value, int) else tuple(int(v) for v in value)
    if not 1 <= len(sizes) <= 3 or any(size < 1 for size in sizes):
        raise ValueError(f"{what} {value!r}: expected one to three positive sizes")
    return (*sizes, 1, 1)[:3]  # type: ignore[return-value]


def _refuse(status: str, message: str) -> NoReturn:
    """Raise the ``resources`` error of a launch that a check refused before the driver saw it."""
    raise CudaLaunchError(status, f"{message} (refused before launch)", kind="resources")


def _device_address(arg: Any) -> int | None:
    """The device address of a device array argument, None for anything else."""
    if isinstance(arg, DeviceArray):
        return arg.ptr
    interface = getattr(arg, "__cuda_array_interface__", None)
    if isinstance(interface, dict) and "data" in interface:
        return int(interface["data"][0])
    data_ptr = getattr(arg, "data_ptr", None)
    if callable(data_ptr) and getattr(getattr(arg, "device", None), "type", None) == "cuda":
        return int(data_ptr())
    return None


def kernel_arguments(args: Sequence[Any]) -> tuple[list[Any], list[tuple[Any, DeviceArray]]]:
    """The launch's argument values (one-element numpy arrays, in order) and the numpy arrays
    copied to the device with their copies (to copy back after the launch)."""
    import numpy as np

    values: list[Any] = []
    copies: list[tuple[Any, DeviceArray]] = []
    for position, arg in enumerate(args):
        if isinstance(arg, np.ndarray):
            copy = DeviceArray.from_host(arg)
            copies.append((arg, copy))
            values.append(np.array([copy.ptr], dtype=np.uint64))
            continue
        address = _device_address(arg)
        if address is not None:
            values.append(np.array([address], dtype=np.uint64))
        elif isinstance(arg, np.generic) and arg.dtype.kind in "biuf":
            values.append(np.array([arg], dtype=arg.dtype))
        else:
            raise TypeError(
                f"kernel argument {position}: a {type(arg).__name__} ({arg!r:.60}); pass numpy arrays, "
                "device arrays (cuda_device.to_device, CuPy, torch) or numpy scalars such as np.int32(n)"
            )
    return values, copies


class CudaKernel:
    """One kernel of a loaded module; call it as ``kernel(grid, block, *args, shared_memory=0)``
    or ``kernel(autotune.launch, *args)`` (module docstring)."""

    def __init__(self, module: CudaModule, name: str, symbol: str) -> None:
        self.module = module
        self.name = name
        self.symbol = symbol
        self.handle = driver.call("cuModuleGetFunction", module.handle, symbol.encode(), what=repr(name))
        attr = driver.api().CUfunction_attribute

        def get(what: str) -> int:
            return int(
                driver.call("cuFuncGetAttribute", getattr(attr, f"CU_FUNC_ATTRIBUTE_{what}"), self.handle)
            )

        self.max_threads = get("MAX_THREADS_PER_BLOCK")
        self.registers = get("NUM_REGS")
        self.static_shared = get("SHARED_SIZE_BYTES")
        self._opted_in = 0
        self._lock = threading.Lock()

    def check_launch(self, grid: tuple[int, int, int], block: tuple[int, int, int], shared: int) -> None:
        """Raise a ``resources`` :class:`CudaLaunchError` when the device cannot run this launch."""
        info = self.module.device
        for axis, size, limit in zip("xyz", block, info.max_block_dims, strict=True):
            if size > limit:
                _refuse(
                    "CUDA_ERROR_INVALID_VALUE",
                    f"kernel {self.name!r}: block size {size} in {axis} exceeds the device's {limit}",
                )
        for axis, size, limit in zip("xyz", grid, info.max_grid_dims, strict=True):
            if size > limit:
                _refuse(
                    "CUDA_ERROR_INVALID_VALUE",
                    f"kernel {self.name!r}: grid size {size} in {axis} exceeds the device's {limit}",
                )
        threads = block[0] * block[1] * block[2]
        allowed = min(info.max_threads_per_block, self.max_threads)
        if threads > allowed:
            why = (
                ""
                if allowed == info.max_threads_per_block
                else f" (its {self.registers} registers per thread)"
            )
            _refuse(
                "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
                f"kernel {self.name!r}: a block of {threads} threads exceeds the {allowed} this kernel "
                f"can run{why}",
            )
        used = self.static_shared + shared
        if used > info.shared_per_block_opt_in:
            _refuse(
                "CUDA_ERROR_INVALID_VALUE",
                f"kernel {self.name!r}: {self.static_shared} bytes of static and {shared} of dynamic shared "
                f"memory exceed the device's {info.shared_per_block_opt_in} per block",
            )

    def _opt_in(self, shared: int) -> None:
        """Let the kernel use ``shared`` bytes of dynamic shared memory beyond the default."""
        if self.static_shared + shared <= self.module.device.shared_per_block or shared <= self._opted_in:
            return
        with self._lock:
            attr = driver.api().CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
            driver.call("cuFuncSetAttribute", self.handle, attr, int(shared), what="(shared memory opt-in)")
            self._opted_in = shared

    def __call__(
        self,
        grid: LaunchSizes | Sequence[int] | int,
        *args: Any,
        shared_memory: int = 0,
        stream: Any = None,
    ) -> None:
        """Launch on ``stream`` (default: the module's device stream). With ``autotune.launch`` as
        ``grid`` the block comes from it; otherwise the block is the next argument."""
        import numpy as np

        if isinstance(grid, LaunchSizes):
            grid_dims, block = _dims(grid.grid, "grid"), _dims(grid.local_size, "block")
        else:
            if not args:
                raise TypeError(f"kernel {self.name!r}: give the block after the grid, or autotune.launch")
            grid_dims, block, args = _dims(grid, "grid"), _dims(args[0], "block"), args[1:]
        shared = int(shared_memory)
        self.check_launch(grid_dims, block, shared)
        self._opt_in(shared)
        values, copies = kernel_arguments(args)
        pointers = np.array([value.ctypes.data for value in values], dtype=np.uint64)
        target = self.module.stream if stream is None else stream
        driver.call(
            "cuLaunchKernel",
            self.handle,
            *grid_dims,
            *block,
            shared,
            target,
            pointers.ctypes.data if values else 0,
            0,
            what=f"of {self.name!r} grid {grid_dims} block {block}",
        )
        if copies:
            driver.call("cuStreamSynchronize", target, what=f"after {self.name!r}")
            for host, copy in copies:
                if host.flags.c_contiguous:
                    copy.get(out=host)
                else:
                    host[...] = copy.get()
                copy.free()

    def __repr__(self) -> str:
        return f"CudaKernel({self.name!r}, registers={self.registers}, static_shared={self.static_shared})"


class CudaModule:
    """A compiled program loaded on a device (module docstring); ``compiled`` is what NVRTC built."""

    def __init__(self, compiled: CompiledCuda, device: CudaDeviceInfo, stream: Any = 0) -> None:
        self.compiled = compiled
        self.device = device
        self.stream = stream
        self.handle = driver.call("cuModuleLoadData", compiled.cubin, what=f"({compiled.arch})")
        self._kernels: dict[str, CudaKernel] = {}

    def kernel(self, name: str | None = None) -> CudaKernel:
        """The kernel ``name`` (a name expression or an ``extern "C"`` name; None: the only one)."""
        if name is None:
            symbols = sorted(self.compiled.resources) or list(self.compiled.names.values())
            if len(symbols) != 1:
                raise TypeError(
                    f"this module has {len(symbols)} kernels; name one, e.g. module.kernel('name')"
                )
            name = next((n for n, s in self.compiled.names.items() if s == symbols[0]), symbols[0])
        if name not in self._kernels:
            self._kernels[name] = CudaKernel(self, name, self.compiled.lowered(name))
        return self._kernels[name]

    def __call__(self, grid: LaunchSizes | Sequence[int] | int, *args: Any, **kwargs: Any) -> None:
        """Launch the module's only kernel."""
        self.kernel()(grid, *args, **kwargs)

    def __getattr__(self, name: str) -> CudaKernel:
        if name.startswith("_") or "compiled" not in self.__dict__:
            raise AttributeError(name)
        return self.kernel(name)

    def __repr__(self) -> str:
        return f"CudaModule({self.compiled.arch}, kernels={sorted(self.compiled.resources)})"


def load_module(compiled: CompiledCuda, device: CudaDeviceInfo, stream: Any = 0) -> CudaModule:
    """Load ``compiled`` into the current context of ``device``."""
    return CudaModule(compiled, device, stream)
