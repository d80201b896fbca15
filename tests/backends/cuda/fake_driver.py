"""A fake CUDA driver (the handful of ``cuda.bindings.driver`` calls the backend makes), so launch
checks, argument passing, copies, errors and event timing are tested without a GPU."""

from __future__ import annotations

import ctypes
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import numpy as np

from pytest_autotune.backends.cuda.device import CudaDeviceInfo

H100_LIKE = CudaDeviceInfo(
    ordinal=0,
    name="Fake H100",
    capability=(9, 0),
    multiprocessors=132,
    l2_bytes=50 << 20,
    total_memory=80 << 30,
    max_threads_per_block=1024,
    max_block_dims=(1024, 1024, 64),
    max_grid_dims=(2**31 - 1, 65535, 65535),
    shared_per_block=48 << 10,
    shared_per_block_opt_in=227 << 10,
)


class FakeStatus(int):
    """A failed status: a non-zero int with the error's name (as ``CUresult`` members are)."""

    def __new__(cls, name: str) -> FakeStatus:
        status = super().__new__(cls, 1)
        status.error = name
        return status

    def __str__(self) -> str:
        return self.error


@dataclass
class FakeDriver:
    """Device memory as byte arrays by address; each call is logged in ``calls``.

    ``kernel_max_threads``/``kernel_registers``/``kernel_static_shared`` are what
    ``cuFuncGetAttribute`` answers; ``fail_launch_with`` makes the next launch fail with that
    error name; a launch doubles the float32 array its first argument points to.
    """

    kernel_max_threads: int = 1024
    kernel_registers: int = 32
    kernel_static_shared: int = 0
    fail_launch_with: str | None = None
    elapsed_ms: float = 1.5
    calls: list[tuple[str, tuple[Any, ...]]] = field(default_factory=list)
    memory: dict[int, bytearray] = field(default_factory=dict)
    _next: int = 0x1000

    CUfunction_attribute = SimpleNamespace(
        CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK="max_threads",
        CU_FUNC_ATTRIBUTE_NUM_REGS="registers",
        CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES="static_shared",
        CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES="max_dynamic_shared",
    )

    def __getattr__(self, name: str) -> Any:
        if not name.startswith("cu"):
            raise AttributeError(name)

        def ok(*args: Any) -> tuple[int]:
            self.calls.append((name, args))
            return (0,)

        return ok

    def _log(self, name: str, *args: Any) -> None:
        self.calls.append((name, args))

    def names(self) -> list[str]:
        return [name for name, _ in self.calls]

    def cuGetErrorName(self, status: Any) -> tuple[int, bytes]:
        return 0, str(status).encode()

    def cuModuleLoadData(self, image: bytes) -> tuple[int, str]:
        self._log("cuModuleLoadData", len(image))
        return 0, "module"

    def cuModuleGetFunction(self, module: Any, name: bytes) -> tuple[int, str]:
        self._log("cuModuleGetFunction", name)
        return 0, f"function {name.decode()}"

    def cuFuncGetAttribute(self, attribute: str, function: Any) -> tuple[int, int]:
        value = {
            "max_threads": self.kernel_max_threads,
            "registers": self.kernel_registers,
            "static_shared": self.kernel_static_shared,
        }[attribute]
        return 0, value

    def cuMemAlloc(self, size: int) -> tuple[int, int]:
        address, self._next = self._next, self._next + size + 256
        self.memory[address] = bytearray(size)
        self._log("cuMemAlloc", size)
        return 0, address

    def cuMemFree(self, address: int) -> tuple[int]:
        self.memory.pop(address, None)
        self._log("cuMemFree", address)
        return (0,)

    def cuMemcpyHtoD(self, device: int, host: int, size: int) -> tuple[int]:
        self.memory[device][:size] = ctypes.string_at(host, size)
        self._log("cuMemcpyHtoD", size)
        return (0,)

    def cuMemcpyDtoH(self, host: int, device: int, size: int) -> tuple[int]:
        ctypes.memmove(host, bytes(self.memory[device][:size]), size)
        self._log("cuMemcpyDtoH", size)
        return (0,)

    def cuLaunchKernel(self, function: Any, *rest: Any) -> tuple[Any]:
        grid, block, shared, stream, params, _extra = rest[0:3], rest[3:6], rest[6], rest[7], rest[8], rest[9]
        self._log("cuLaunchKernel", grid, block, shared, stream)
        if self.fail_launch_with is not None:
            failure, self.fail_launch_with = self.fail_launch_with, None
            return (FakeStatus(failure),)
        if params:
            first_value = ctypes.c_uint64.from_address(params).value  # address of argument 0's value
            pointer = ctypes.c_uint64.from_address(first_value).value
            if pointer in self.memory:
                data = np.frombuffer(self.memory[pointer], dtype=np.float32).copy() * 2
                self.memory[pointer][:] = data.tobytes()
        return (0,)

    def cuEventCreate(self, flags: int) -> tuple[int, str]:
        self._log("cuEventCreate", flags)
        return 0, f"event {len(self.calls)}"

    def cuEventElapsedTime(self, start: Any, end: Any) -> tuple[int, float]:
        self._log("cuEventElapsedTime", start, end)
        return 0, self.elapsed_ms
