"""The interface every device backend implements, and the device limits it reports.

A *backend* is everything the plugin needs to know about one kind of device (OpenCL devices, CUDA
GPUs, torch devices for Triton kernels, the host CPU): which devices exist and which one a process
uses, the key a device has in ``autotune.json``, how programs are built for it, how the time of a
launch is read back, and which of its errors are build or launch failures. The plugin, the timer
and the ``autotune`` fixture talk to devices only through this interface, so they stay
device-neutral and a new kind of device is one new folder under ``backends/`` plus one line in the
registry (:mod:`pytest_autotune.backends.registry`).

A device is whatever object the backend's library uses (a ``pyopencl.Device``, a host
description); code outside the backend passes it back without looking inside.

This module imports nothing beyond the standard library and the outcome labels: the registry and
the plugin load it for every run, including plain Python tests that never touch a device library.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

from pytest_autotune.outcome import Label

__all__ = ["Backend", "BackendError", "DeviceLimits", "DeviceSource"]


class BackendError(RuntimeError):
    """A backend was asked for something it cannot do (e.g. build a program on the host)."""


@dataclass(frozen=True)
class DeviceLimits:
    """Hard limits of a device that make a launch impossible, None where the backend cannot tell.

    ``max_work_group_size`` is the most work-items (threads) in one work-group (block),
    ``max_work_item_sizes`` that maximum per dimension, ``local_memory`` the bytes of local
    (shared) memory one work-group may use by default, ``local_memory_opt_in`` the most it may
    use after opting in (CUDA's ``cudaFuncAttributeMaxDynamicSharedMemorySize``; None where a
    device has no such thing). Launch checks use them; they are also the facts from which known
    constraints of a search space are derived.
    """

    max_work_group_size: int | None = None
    max_work_item_sizes: tuple[int, ...] | None = None
    local_memory: int | None = None
    local_memory_opt_in: int | None = None

    @property
    def local_memory_limit(self) -> int | None:
        """The most local memory any launch can get: the opt-in amount where there is one."""
        return self.local_memory_opt_in if self.local_memory_opt_in is not None else self.local_memory

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able dict (the per-dimension sizes as a list)."""
        sizes = None if self.max_work_item_sizes is None else list(self.max_work_item_sizes)
        return {
            "max_work_group_size": self.max_work_group_size,
            "max_work_item_sizes": sizes,
            "local_memory": self.local_memory,
            "local_memory_opt_in": self.local_memory_opt_in,
        }


class DeviceSource(Protocol):
    """Who hands a backend's fixtures this process's device (the plugin's device resolver)."""

    def device(self, backend: str) -> Any:
        """The device this process uses for the backend named ``backend``."""
        ...


class Backend(ABC):
    """One kind of device: discovery, selection, keys, builds, timing and error labels.

    Subclasses set :attr:`name` and :attr:`fixtures` and implement the abstract methods; the others
    have defaults that suit a backend without programs, events or device errors (the host). A
    backend object holds no per-session state (selection results live in the plugin's resolver):
    the registry keeps one instance per backend for the whole process.

    Implementations must keep their module light: import the device library (pyopencl, ...)
    inside the methods that need it, because the plugin loads the backend class to decide which
    backend a test uses before any device work happens.
    """

    #: Registry name, also the prefix users see in messages (``"opencl"``, ``"host"``).
    name: ClassVar[str]
    #: Fixtures whose use (anywhere in a test's fixture closure) puts the test on this backend.
    fixtures: ClassVar[frozenset[str]] = frozenset()

    # -- devices ----------------------------------------------------------------------------------------
    @abstractmethod
    def devices(self) -> list[Any]:
        """Every device of this kind on the machine, in a stable order (may be empty)."""

    def usable_devices(self) -> list[Any]:
        """The devices that can run a program (the default: all of them).

        The plugin spreads xdist workers over these; a backend that can detect a broken driver
        (OpenCL probes a trivial build) leaves such devices out.
        """
        return self.devices()

    @abstractmethod
    def select(self, spec: str | None) -> Any:
        """The device named by ``spec`` (a user's ``--autotune-device``), else the default one.

        ``None`` means no choice was made: use :meth:`environment_spec` if set, else the first
        usable device. Raise ``LookupError`` (listing what exists) when nothing matches, and
        another error saying why when the device exists but cannot be used.
        """

    def environment_spec(self, env: Mapping[str, str] | None = None) -> str | None:
        """The device choice an environment makes (``$PYOPENCL_CTX``), or None.

        ``env`` is the environment of some worker process (None: this process's). When set, the
        worker uses that device instead of taking one device of its own.
        """
        return None

    @abstractmethod
    def key(self, device: Any) -> str:
        """The stable name of ``device`` in ``autotune.json`` (no driver versions: they change)."""

    @abstractmethod
    def info(self, device: Any) -> dict[str, Any]:
        """Descriptive, JSON-able facts about ``device`` (stored as information, never compared)."""

    def spec_of(self, device: Any) -> str | None:
        """A spec with which :meth:`select` in another process picks ``device``; None when any will do."""
        return self.key(device)

    def identity(self, device: Any) -> str:
        """Which physical device ``device`` is, among those of its host (the default: its key).

        Two workers on one host whose devices have the same identity time on the same silicon;
        devices of the same type (the same key) have different identities. A backend with
        several devices overrides this with what tells them apart (a PCI address, an index).
        """
        return self.key(device)

    def limits(self, device: Any) -> DeviceLimits:
        """The hard launch limits of ``device`` (the default: nothing known)."""
        return DeviceLimits()

    def is_cpu(self, device: Any) -> bool:
        """Whether ``device`` computes on the host's CPU, in threads of the measuring process (the
        default: no). On such a device a regression check may judge the CPU time the process
        consumed instead of the wall time (:mod:`pytest_autotune.timing.clock`)."""
        return False

    def unavailable(self) -> str | None:
        """Why no device of this kind can be used here (a tunable test on it is then skipped with
        that reason), None when one can. The default, None, lets device selection raise instead
        (OpenCL: a usage error naming what exists)."""
        return None

    # -- fixtures and timing ----------------------------------------------------------------------------
    def synchronizer(
        self, fixturenames: Collection[str], fixture: Callable[[str], Any]
    ) -> Callable[[], Any] | None:
        """What waits for a test's enqueued work (timed inside the wall-clock interval), or None.

        ``fixturenames`` is the test's fixture closure, ``fixture(name)`` returns a fixture's value.
        The default timer calls the result after the timed function when it measures wall-clock
        time, so asynchronous launches are counted.
        """
        return None

    def timer(self, fixturenames: Collection[str], fixture: Callable[[str], Any]) -> Any:
        """The backend's own timer for a test (e.g. GPU events around each call), or None.

        When the test keeps the default ``autotune_timer``, a timer returned here replaces it
        (the default timer with :meth:`synchronizer` is used otherwise). ``fixture("autotune_l2_flush")``
        says whether a device timer should flush the L2 cache before each timed call.
        """
        return None

    def result_seconds(self, result: Any) -> float | None:
        """Device time of what a timed function returned (e.g. profiling events), None if not ours.

        Called for every timed call of every test while this backend's library is loaded, so it
        must answer None quickly for foreign objects and never import anything.
        """
        return None

    # -- builds and errors -----------------------------------------------------------------------------
    def owns(self, obj: Any) -> bool:
        """Whether ``obj`` (a context handed to ``autotune.build``) belongs to this backend."""
        return False

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
        """Build ``source`` for ``context`` with ``defines`` and compiler ``options``, cached.

        ``define_style`` says where the defines go (``"source"``: ``#define`` lines at the top of
        the source; ``"options"``: compiler options such as ``-D``), None for the backend's default
        (OpenCL: ``"source"``). ``autotune.build`` passes it only when the test chose a style, so a
        backend written before the keyword existed keeps working. ``source_name`` is the path of
        the kernel file when the test gave one (``autotune.build(ctx, Path("k.cl"))``): compiler
        messages should name it (C-like languages: a ``#line 1 "k.cl"`` directive); passed only
        when known.
        ``backend_options`` are the backend's own keywords (CUDA: ``name_expressions``), passed
        only when the test gives them. Build failures raise an error that :meth:`classify` labels
        ``compile``.
        """
        raise BackendError(f"the {self.name!r} backend does not build programs")

    def clear_build_cache(self) -> None:  # noqa: B027 - a default, not an abstract method
        """Forget cached programs (the default: there are none)."""

    def classify(self, exc: BaseException) -> tuple[Label, str] | None:
        """The trial label and detail of a failure of this backend, None for other exceptions.

        Like :meth:`result_seconds`, called while the library is loaded, for every failed trial:
        recognise the backend's own exception types without importing anything.
        """
        return None

    def needs_restart(self) -> str | None:
        """Why this process can no longer run trials on this backend (a GPU context lost to an
        illegal address), None while it can. An isolated trial worker that says so after a trial
        is replaced before the next one; that trial keeps its failure and tuning goes on."""
        return None

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"
